"""pretokenize to and from an object store: a live S3 server (moto) on 127.0.0.1.

Shards are staged locally, uploaded, the manifest last; a crash mid-upload resumes; s3://
inputs and universes are read; no URL is ever taken as a local directory."""

from __future__ import annotations

import json


import pytest

pytest.importorskip("s3fs", reason="remote runs are tested through s3fs: pip install s3fs")
moto_server = pytest.importorskip("moto.server", reason="the S3 server of these tests is moto's: "
                                  "pip install 'moto[server]'")
boto3 = pytest.importorskip("boto3")

from tests._s3 import server, so  # noqa: E402,F401 (the moto fixtures)

import genotok
from genotok import Corpus, Tokenizer
from genotok.pipeline import RunOptions, pretokenize
from genotok.pipeline import remote as remote_run


def _keys(client, prefix):
    got = client.list_objects_v2(Bucket="bkt", Prefix=prefix).get("Contents", [])
    return sorted(o["Key"][len(prefix):] for o in got)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


def test_s3_out_writes_the_bucket_not_a_local_directory(server, so, tok, tmp_path):
    peaks = genotok.examples_dir() / "peaks"
    run = pretokenize(peaks, tok, "s3://bkt/run1/", progress=False,
                      options=RunOptions(storage_options=so, files_per_shard=2))
    assert not (tmp_path / "s3:").exists()
    assert str(run.out) == "s3://bkt/run1"
    keys = _keys(server[1], "run1/")
    assert "manifest.json" in keys and sum(k.endswith(".gtokc") for k in keys) == 3
    remote = Corpus.open("s3://bkt/run1", storage_options=so, cache_dir=str(tmp_path / "c"))
    local = Corpus.open(pretokenize(peaks, tok, tmp_path / "local", progress=False,
                                    options=RunOptions(files_per_shard=2)).out)
    assert remote.to_ragged().to_list() == local.to_ragged().to_list()
    assert remote.names == local.names


def test_a_crash_mid_upload_resumes_and_the_manifest_goes_last(server, so, tok, tmp_path,
                                                                monkeypatch):
    peaks = genotok.examples_dir() / "peaks"
    real, sent = remote_run._put, []

    def dying(fs, local, url):
        if len(sent) == 2:
            raise ConnectionError("network down")
        sent.append(url)
        real(fs, local, url)

    monkeypatch.setattr(remote_run, "_put", dying)
    with pytest.raises(ConnectionError):
        pretokenize(peaks, tok, "s3://bkt/run2", progress=False,
                    options=RunOptions(storage_options=so, files_per_shard=2))
    keys = _keys(server[1], "run2/")
    assert "manifest.json" not in keys  # never before every shard
    assert len(keys) == 2  # each batch's shard went up once journaled, before the run ended
    monkeypatch.setattr(remote_run, "_put", real)
    run = pretokenize(peaks, tok, "s3://bkt/run2", progress=False,
                      options=RunOptions(storage_options=so, files_per_shard=2))
    assert run.skipped_done == 5  # the staged batches were not tokenized again
    c = Corpus.open("s3://bkt/run2", storage_options=so, cache_dir=str(tmp_path / "c"),
                    verify=True)
    assert len(c) == 5


def test_s3_inputs_and_universe_are_read(server, so, tok, tmp_path):
    ex = genotok.examples_dir()
    client = server[1]
    client.put_object(Bucket="bkt", Key="in/universe.bed", Body=(ex / "universe.bed").read_bytes())
    peaks = sorted((ex / "peaks").iterdir())[:2]
    for p in peaks:
        client.put_object(Bucket="bkt", Key=f"in/{p.name}", Body=p.read_bytes())
    remote_tok = Tokenizer.from_bed("s3://bkt/in/universe.bed", storage_options=so)
    assert remote_tok.fingerprint == tok.fingerprint
    run = pretokenize([f"s3://bkt/in/{p.name}" for p in peaks], tok, tmp_path / "o",
                      progress=False, options=RunOptions(storage_options=so))
    local = pretokenize(peaks, tok, tmp_path / "l", progress=False)
    a, b = Corpus.open(run.out), Corpus.open(local.out)
    assert a.to_ragged().to_list() == b.to_ragged().to_list() and a.names == b.names
    assert not (tmp_path / "s3:").exists()


def test_parquet_shards_and_a_validation_split_go_to_the_bucket(server, so, tok, tmp_path):
    pytest.importorskip("pyarrow")
    run = pretokenize(genotok.examples_dir() / "peaks", tok, "s3://bkt/pq", format="parquet",
                      progress=False,
                      options=RunOptions(storage_options=so, validation=0.4))
    keys = _keys(server[1], "pq/")
    assert "manifest.json" in keys and "validation/manifest.json" in keys
    assert any(k.endswith(".parquet") for k in keys)
    assert not remote_run.staging_dir(run.out).exists()  # removed once uploaded


def test_a_read_only_or_unknown_scheme_is_refused_before_any_work(tok, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for url, why in (("https://example.org/run", "read-only"),
                     ("nosuch://bkt/run", "cannot open this URL")):
        with pytest.raises(genotok.GenotokError, match=why):
            pretokenize(tmp_path / "missing.bed", tok, url, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_overwrite_false_refuses_a_prefix_holding_a_run_as_a_local_output(server, so, tok):
    """Issue 43 item 2: an s3:// run over a finished one is refused, not silently replaced."""
    peaks = genotok.examples_dir() / "peaks"
    pretokenize(peaks, tok, "s3://bkt/keep", progress=False,
                options=RunOptions(storage_options=so))
    before = _keys(server[1], "keep/")
    with pytest.raises(genotok.pipeline.PipelineError, match="holds a finished genotok run"):
        pretokenize(sorted(peaks.iterdir())[:2], tok, "s3://bkt/keep", progress=False,
                    options=RunOptions(storage_options=so))
    assert _keys(server[1], "keep/") == before
    server[1].put_object(Bucket="bkt", Key="other/notes.txt", Body=b"mine")
    with pytest.raises(genotok.pipeline.PipelineError, match="holds no genotok run"):
        pretokenize(peaks, tok, "s3://bkt/other", progress=False,
                    options=RunOptions(storage_options=so))
    with pytest.raises(genotok.pipeline.PipelineError, match="no run wrote"):
        pretokenize(peaks, tok, "s3://bkt/other", progress=False, overwrite=True,
                    options=RunOptions(storage_options=so))
    assert _keys(server[1], "other/") == ["notes.txt"]


@pytest.mark.parametrize("fmt", ["corpus", "parquet"])
def test_overwrite_true_leaves_no_object_of_the_old_run(server, so, tok, tmp_path, fmt):
    """Issue 43 item 3: a glob read after overwrite=True returns the new run's rows only."""
    pytest.importorskip("pyarrow")
    peaks = sorted((genotok.examples_dir() / "peaks").iterdir())
    pretokenize(peaks, tok, f"s3://bkt/ow-{fmt}", format=fmt, progress=False,
                options=RunOptions(storage_options=so, files_per_shard=1))
    pretokenize(peaks[:2], tok, f"s3://bkt/ow-{fmt}", format=fmt, progress=False,
                overwrite=True, options=RunOptions(storage_options=so, files_per_shard=1))
    keys = _keys(server[1], f"ow-{fmt}/")
    manifest = json.loads(server[1].get_object(Bucket="bkt", Key=f"ow-{fmt}/manifest.json")
                          ["Body"].read())
    parts = manifest["files"] if fmt != "corpus" else [e["path"] for e in manifest["shards"]]
    assert sorted(keys) == sorted(parts + ["journal.json", "manifest.json"])
    c = Corpus.open(f"s3://bkt/ow-{fmt}", storage_options=so, cache_dir=str(tmp_path / "c"))
    assert len(c) == 2


def test_a_missing_bucket_is_refused_before_any_work(server, so, tok, monkeypatch):
    """Issue 43 item 12: no batch is tokenized for an output that cannot be written."""
    def never(*a, **k):
        raise AssertionError("a batch was tokenized")

    monkeypatch.setattr(genotok.pipeline.writer.SerialExecutor, "run", lambda self, job: never())
    with pytest.raises(genotok.pipeline.PipelineError, match="bucket 'nosuchbucket' does not"):
        pretokenize(genotok.examples_dir() / "peaks", tok, "s3://nosuchbucket/run",
                    progress=False, options=RunOptions(storage_options=so))
    assert not remote_run.staging_dir("s3://nosuchbucket/run").exists()


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "jsonl"])
def test_every_store_reads_back_from_the_bucket(server, so, tok, tmp_path, fmt):
    pytest.importorskip("pyarrow")
    peaks = genotok.examples_dir() / "peaks"
    pretokenize(peaks, tok, f"s3://bkt/rb-{fmt}", format=fmt, progress=False,
                options=RunOptions(storage_options=so, files_per_shard=2))
    c = Corpus.open(f"s3://bkt/rb-{fmt}", storage_options=so, cache_dir=str(tmp_path / "c"))
    ref = Corpus.open(pretokenize(peaks, tok, tmp_path / "l", progress=False).out)
    assert c.to_ragged().to_list() == ref.to_ragged().to_list() and c.names == ref.names


def test_a_damaged_cached_copy_of_a_remote_store_output_is_fetched_again(server, so, tok,
                                                                         tmp_path):
    pytest.importorskip("pyarrow")
    pretokenize(genotok.examples_dir() / "peaks", tok, "s3://bkt/cached", format="jsonl",
                progress=False, options=RunOptions(storage_options=so))
    cache = tmp_path / "c"
    first = Corpus.open("s3://bkt/cached", storage_options=so, cache_dir=str(cache))
    copy = sorted(cache.rglob("*.jsonl"))[0]
    raw = bytearray(copy.read_bytes())
    raw[0:1] = b"#"  # same size, planted
    copy.write_bytes(bytes(raw))
    again = Corpus.open("s3://bkt/cached", storage_options=so, cache_dir=str(cache))
    assert again.to_ragged().to_list() == first.to_ragged().to_list()


def test_a_shard_truncated_in_the_bucket_is_named(server, so, tok, tmp_path):
    """Issue 43 round-4 campaign: a ranged read past a truncated object's end is a
    GtokFormatError naming the shard, not the client's raw OSError."""
    peaks = genotok.examples_dir() / "peaks"
    pretokenize(peaks, tok, "s3://bkt/trunc", progress=False,
                options=RunOptions(storage_options=so))
    key = [k for k in _keys(server[1], "trunc/") if k.endswith(".gtokc")][0]
    body = server[1].get_object(Bucket="bkt", Key=f"trunc/{key}")["Body"].read()
    server[1].put_object(Bucket="bkt", Key=f"trunc/{key}", Body=body[: len(body) // 2])
    with pytest.raises(genotok.GtokFormatError, match=key):
        Corpus.open("s3://bkt/trunc", storage_options=so, cache_dir=str(tmp_path / "c"))
