"""Round 4 of "trust nothing" (issue 43), surface S2: ``s3://`` output and input on a live S3
server (moto, on 127.0.0.1): every store to a bucket and read back, a missing bucket, a prefix
holding another tool's objects or another run (``overwrite`` both ways), a glob read after an
overwrite, a crash mid-upload resumed, objects damaged or a manifest tampered in the bucket, glob
inputs. The oracle (:mod:`tests.campaigns._oracle`): the records written (what a local output
holds), or a ``GenotokError`` naming the URL / object; a remote output behaves as a local one.
Run with ``python -m pytest -m slow -p no:xdist tests/campaigns``."""

from __future__ import annotations

import io
import json

import pytest

pytest.importorskip("s3fs", reason="remote runs are tested through s3fs")
pytest.importorskip("moto.server", reason="the S3 server of these tests is moto's")
pytest.importorskip("boto3")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import genotok  # noqa: E402
from genotok import Corpus, RunOptions, Tokenizer, pretokenize  # noqa: E402
from genotok.pipeline import remote as remote_run  # noqa: E402
from tests._s3 import server, so  # noqa: E402,F401 (the moto fixtures)

from ._oracle import known_defects, refused_any, right_or_refused  # noqa: E402

pytestmark = pytest.mark.slow
PEAKS = genotok.examples_dir() / "peaks"
STORES = ["corpus", "gtok-dir", "parquet", "arrow", "jsonl"]
KNOWN: dict = {}


@pytest.fixture(autouse=True)
def _known(request):
    known_defects(request, KNOWN)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


@pytest.fixture(scope="module")
def truth(tok, tmp_path_factory):
    out = tmp_path_factory.mktemp("truth")
    pretokenize(PEAKS, tok, out, progress=False)
    c = Corpus.open(out)
    return sorted((n, c[i].tolist()) for i, n in enumerate(c.names))


def keys(client, prefix: str) -> list[str]:
    got = client.list_objects_v2(Bucket="bkt", Prefix=prefix).get("Contents", [])
    return sorted(o["Key"][len(prefix):] for o in got)


def read(url: str, so, tmp_path, sub: str = "") -> list:
    got = []
    for u in ([url, url + "/validation"] if not sub else [url + sub]):
        try:
            c = Corpus.open(u, storage_options=so, cache_dir=str(tmp_path / "rc"))
        except genotok.GenotokError:
            if u.endswith("/validation"):
                continue
            raise
        assert c.verify() == []
        got += [(n, c[i].tolist()) for i, n in enumerate(c.names)]
    return sorted(got)


def run(tok, url, so, store="corpus", overwrite=False, split=0.0, fps=2, inputs=PEAKS):
    return pretokenize(inputs, tok, url, format=store, progress=False, overwrite=overwrite,
                       options=RunOptions(storage_options=so, files_per_shard=fps,
                                          validation=split))


_n = iter(range(10**6))


def fresh() -> str:
    return f"s3://bkt/c{next(_n)}"


@pytest.mark.parametrize("store,split", [(s, 0.0) for s in STORES] +
                         [("parquet", 0.4), ("corpus", 0.4)])
def test_every_store_to_a_bucket_reads_back(store, split, tok, so, truth, tmp_path):
    url = fresh()
    run(tok, url, so, store, split=split)
    assert read(url, so, tmp_path) == truth


@pytest.mark.parametrize("store", ["corpus", "parquet"])
def test_a_missing_bucket_is_refused_before_any_work(store, tok, so, monkeypatch):
    from genotok.pipeline import batch
    monkeypatch.setattr(batch, "run_batch", lambda *a, **k: pytest.fail("tokenized"))
    refused_any(lambda: run(tok, "s3://no-such-bucket/x", so, store), "no-such-bucket")


@pytest.mark.parametrize("store", ["corpus", "parquet"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_prefix_holding_another_tools_objects(store, overwrite, tok, so, server):
    url = fresh()
    key = url[len("s3://bkt/"):]
    server[1].put_object(Bucket="bkt", Key=f"{key}/data/part-0.parquet", Body=b"theirs")
    server[1].put_object(Bucket="bkt", Key=f"{key}/README", Body=b"theirs")
    refused_any(lambda: run(tok, url, so, store, overwrite=overwrite), url)
    assert keys(server[1], key + "/") == ["README", "data/part-0.parquet"]


@pytest.mark.parametrize("first,second", [("corpus", "corpus"), ("parquet", "parquet"),
                                          ("corpus", "parquet"), ("parquet", "jsonl"),
                                          ("gtok-dir", "arrow")])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_prefix_holding_another_run(first, second, overwrite, tok, so, server, truth,
                                      tmp_path):
    url = fresh()
    key = url[len("s3://bkt/"):]
    run(tok, url, so, first, fps=1)
    before = keys(server[1], key + "/")
    if not overwrite:
        refused_any(lambda: run(tok, url, so, second, fps=3), url)
        assert keys(server[1], key + "/") == before
        return
    run(tok, url, so, second, overwrite=True, fps=3)
    assert read(url, so, tmp_path) == truth
    m = json.loads(server[1].get_object(Bucket="bkt", Key=f"{key}/manifest.json")["Body"].read())
    listed = set(m.get("files") or [e["path"] for e in m["shards"]])
    assert set(keys(server[1], key + "/")) - {"manifest.json", "journal.json"} == listed


@pytest.mark.parametrize("store", ["parquet", "arrow"])
def test_a_glob_read_after_overwrite_holds_the_new_run_only(store, tok, so, server, truth):
    url = fresh()
    key = url[len("s3://bkt/"):]
    run(tok, url, so, store, fps=1)
    run(tok, url, so, store, overwrite=True, fps=5)
    names = []
    for k in keys(server[1], key + "/"):
        if k.endswith("." + store):
            body = server[1].get_object(Bucket="bkt", Key=f"{key}/{k}")["Body"].read()
            t = pq.read_table(io.BytesIO(body)) if store == "parquet" else \
                pa.ipc.open_file(pa.BufferReader(body)).read_all()
            names += t.column("name").to_pylist()
    assert sorted(names) == [n for n, _ in truth]


@pytest.mark.parametrize("store", ["corpus", "parquet", "gtok-dir"])
@pytest.mark.parametrize("when", [1, 3])
def test_a_crash_mid_upload_resumes(store, when, tok, so, truth, tmp_path, monkeypatch):
    url = fresh()
    real, sent = remote_run._put, []

    def dying(fs, local, u):
        if len(sent) == when:
            raise ConnectionError("network down")
        sent.append(u)
        real(fs, local, u)

    monkeypatch.setattr(remote_run, "_put", dying)
    with pytest.raises(ConnectionError):
        run(tok, url, so, store, fps=1)
    monkeypatch.setattr(remote_run, "_put", real)
    run(tok, url, so, store, fps=1)
    assert read(url, so, tmp_path) == truth


@pytest.mark.parametrize("store", ["corpus", "parquet", "jsonl"])
@pytest.mark.parametrize("how", ["truncate", "flip", "delete", "manifest-edited"])
def test_objects_damaged_in_the_bucket(store, how, tok, so, server, truth, tmp_path):
    url = fresh()
    key = url[len("s3://bkt/"):]
    run(tok, url, so, store)
    part = [k for k in keys(server[1], key + "/") if k.startswith("shard-")][0]
    obj = f"{key}/{part}" if how != "manifest-edited" else f"{key}/manifest.json"
    body = server[1].get_object(Bucket="bkt", Key=obj)["Body"].read()
    if how == "truncate":
        server[1].put_object(Bucket="bkt", Key=obj, Body=body[: len(body) // 2])
    elif how == "flip":
        b = bytearray(body)
        b[len(b) // 2] ^= 0x55
        server[1].put_object(Bucket="bkt", Key=obj, Body=bytes(b))
    elif how == "delete":
        server[1].delete_object(Bucket="bkt", Key=obj)
    else:
        m = json.loads(body)
        m["n_records"] = m["n_records"] + 1
        server[1].put_object(Bucket="bkt", Key=obj, Body=json.dumps(m).encode())
    right_or_refused(lambda: read(url, so, tmp_path, sub="/"), truth,
                     part if how != "manifest-edited" else "manifest")


@pytest.mark.parametrize("how", ["glob", "glob-none", "prefix-dir"])
def test_s3_inputs(how, tok, so, server, truth, tmp_path):
    url = fresh()
    key = url[len("s3://bkt/"):]
    for p in sorted(PEAKS.iterdir()):
        server[1].put_object(Bucket="bkt", Key=f"{key}-in/{p.name}", Body=p.read_bytes())
    inputs = {"glob": f"s3://bkt/{key}-in/*", "glob-none": f"s3://bkt/{key}-in/*.bed",
              "prefix-dir": f"s3://bkt/{key}-in/sample0.narrowPeak"}[how]
    if how == "glob-none":
        refused_any(lambda: run(tok, url, so, inputs=inputs), "bed", key)
        return
    run(tok, url, so, inputs=inputs)
    got = read(url, so, tmp_path)
    assert got == (truth if how == "glob" else [t for t in truth if t[0] == "sample0"])
