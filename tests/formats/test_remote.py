"""Remote corpora against a live S3 server (moto) on 127.0.0.1: cache, checksums, LRU, locks."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import time

import numpy as np
import pytest

pytest.importorskip("s3fs", reason="remote corpora are tested through s3fs: pip install s3fs")
moto_server = pytest.importorskip("moto.server", reason="the S3 server of these tests is moto's: "
                                  "pip install 'moto[server]'")
boto3 = pytest.importorskip("boto3")

from tests._s3 import moto_s3  # noqa: E402

from genotok import Corpus, CorpusWriter, GtokFormatError
from genotok.formats.corpus import write_manifest
from genotok.formats.corpus.remote import RemoteCorpus, ShardCache

N_SHARDS, PER_SHARD = 5, 40
CREDS = {"key": "testing", "secret": "testing"}


@pytest.fixture(scope="module")
def server():
    with moto_s3("bucket") as s:
        yield s


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    paths = []
    for k in range(N_SHARDS):
        p = d / f"part-{k}.gtokc"
        with CorpusWriter(p, vocab_size=3000, fingerprint="fp") as w:
            for i in range(PER_SHARD):
                w.append(rng.integers(0, 2990, int(rng.integers(1, 300))), name=f"s{k}r{i}")
        paths.append(p)
    write_manifest(paths, d)
    return d


def _upload(client, local, prefix):
    for p in sorted(local.iterdir()):
        client.put_object(Bucket="bucket", Key=f"{prefix}/{p.name}", Body=p.read_bytes())
    return f"s3://bucket/{prefix}"


@pytest.fixture(scope="module")
def url(server, local):
    return _upload(server[1], local, "corpus")


def _opts(server, tmp_path, **kw):
    return dict(cache_dir=str(tmp_path / "cache"),
                storage_options={**CREDS, "client_kwargs": {"endpoint_url": server[0],
                                                            "region_name": "us-east-1"}}, **kw)


def _records(c):
    return [c[i].tolist() for i in range(len(c))]


def test_remote_corpus_reads_like_the_local_one(server, local, url, tmp_path):
    c = Corpus.open(url, expect="fp", **_opts(server, tmp_path))
    ref = Corpus.open(local)
    assert isinstance(c, RemoteCorpus) and len(c) == len(ref) == N_SHARDS * PER_SHARD
    assert c.cache.cached() == []  # only headers were read: shards come when records are read
    idx = np.random.default_rng(1).integers(0, len(c), 300)
    assert c.get_batch(idx).to_list() == ref.get_batch(idx).to_list()
    assert _records(c) == _records(ref) and c.names == ref.names
    assert c.lengths.tolist() == ref.lengths.tolist() and c.verify() == []
    assert c.cache.downloads == N_SHARDS and len(c.cache.cached()) == N_SHARDS
    again = pickle.loads(pickle.dumps(c))  # a DataLoader worker: reopened by URL, same cache
    assert _records(again) == _records(ref) and again.cache.downloads == 0
    assert "s3://bucket/corpus" in repr(c)
    with pytest.raises(TypeError, match="remote corpora"):
        Corpus.open(local, cache_limit=10)


def test_cache_limit_evicts_the_least_recently_used(server, url, tmp_path):
    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    c[0]
    one = c.cache.size()
    c2 = Corpus.open(url, **_opts(server, tmp_path, prefetch=0, cache_limit=int(2.5 * one)))
    for k in (0, 1, 0, 2):  # shard 1 is now the least recently used
        c2[k * PER_SHARD]
        time.sleep(0.01)  # distinct modification times
    names = [p.name[:6] for p in c2.cache.cached()]
    assert names == ["000000", "000002"] and c2.cache.size() <= 2.5 * one
    assert c2[PER_SHARD + 1].tolist() == Corpus.open(url, **_opts(server, tmp_path))[PER_SHARD + 1]\
        .tolist()  # fetched again


def _flip_one_token_byte(data: bytes) -> bytes:
    raw = bytearray(data)
    raw[128 + 64] ^= 0x01  # the tokens section starts after the 128-byte preamble (aligned)
    return bytes(raw)


def test_a_shard_corrupt_on_the_server_is_refused_after_one_more_try(server, local, tmp_path,
                                                                     monkeypatch):
    client = server[1]
    u = _upload(client, local, "corrupt")
    good = (local / "part-2.gtokc").read_bytes()
    client.put_object(Bucket="bucket", Key="corrupt/part-2.gtokc", Body=_flip_one_token_byte(good))
    calls = []
    real = ShardCache._download
    monkeypatch.setattr(ShardCache, "_download", lambda self, k: calls.append(k) or real(self, k))
    c = Corpus.open(u, **_opts(server, tmp_path, prefetch=0))
    assert c[0].tolist() == Corpus.open(local)[0].tolist()  # the other shards are fine
    with pytest.raises(GtokFormatError, match="downloaded twice, refused twice .*tokens checksum"):
        c[2 * PER_SHARD]
    assert calls == [0, 2, 2] and not any(p.name.startswith("000002") for p in c.cache.cached())
    assert not list(c.cache.root.glob("*.tmp"))  # no refused bytes left behind


def test_a_download_corrupted_in_transit_is_fetched_again(server, local, url, tmp_path,
                                                          monkeypatch):
    real = ShardCache._download
    calls = []

    def flaky(self, k):
        tmp = real(self, k)
        calls.append(k)
        if len(calls) == 1:
            with open(tmp, "r+b") as fh:
                fh.write(_flip_one_token_byte(fh.read()))
        return tmp

    monkeypatch.setattr(ShardCache, "_download", flaky)
    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    assert c[3].tolist() == Corpus.open(local)[3].tolist()
    assert calls == [0, 0]


def test_a_tampered_manifest_is_refused(server, local, tmp_path):
    client = server[1]
    m = json.loads((local / "manifest.json").read_text())
    m["shards"][0]["n_records"] += 1
    client.put_object(Bucket="bucket", Key="tampered/manifest.json", Body=json.dumps(m).encode())
    with pytest.raises(GtokFormatError, match="manifest digest mismatch"):
        Corpus.open("s3://bucket/tampered", **_opts(server, tmp_path))
    with pytest.raises(GtokFormatError, match="not found"):
        Corpus.open("s3://bucket/nothing-here", **_opts(server, tmp_path))


def test_prefetch_fetches_the_next_shards_in_epoch_order(server, url, tmp_path):
    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=2))
    order = np.concatenate([np.arange(k * PER_SHARD, (k + 1) * PER_SHARD) for k in (3, 1, 4, 0, 2)])
    c.prefetch(order)

    def wait_for(n):  # a wait for the thread, not a speed assertion
        deadline = time.monotonic() + 60
        while len(c.cache.cached()) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # would it fetch more than it may?
        return sorted(p.name[:6] for p in c.cache.cached())

    # two shards ahead of a reader that has not started, in the epoch's order of shards
    assert wait_for(2) == ["000001", "000003"]
    c[order[0]]  # the reader enters shard 3: one more
    assert wait_for(3) == ["000001", "000003", "000004"]
    c[order[2 * PER_SHARD]]  # the reader enters shard 4: the rest
    assert wait_for(5) == ["000000", "000001", "000002", "000003", "000004"]


def _read_all(args):
    url, opts = args
    c = Corpus.open(url, **opts)
    out = [c[i].tolist() for i in range(len(c))]
    return c.cache.downloads, out


def test_processes_sharing_a_cache_download_each_shard_once(server, local, url, tmp_path):
    opts = _opts(server, tmp_path, prefetch=1)
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        results = pool.map(_read_all, [(url, opts)] * 3)
    assert sum(r[0] for r in results) == N_SHARDS
    ref = _records(Corpus.open(local))
    assert all(r[1] == ref for r in results)


def test_training_batches_from_a_remote_corpus(server, local, url, tmp_path):
    torch_data = pytest.importorskip("genotok.torch_data")
    opts = _opts(server, tmp_path, cache_limit=None)

    def seen(corpus, workers):
        plan = torch_data.BatchPlan(batch_size=16, seed=3, shuffle="block", window=2)
        ds = torch_data.CorpusIterableDataset(corpus, plan, torch_data.Collator(pad_token_id=2999))
        return [i for b in torch_data.ResumableLoader(ds, num_workers=workers)
                for i in b["index"].tolist()]

    remote = seen(Corpus.open(url, **opts), 2)
    assert remote == seen(Corpus.open(local), 0)
    assert sorted(remote) == list(range(N_SHARDS * PER_SHARD))


def test_headers_are_kept_in_the_cache_and_a_damaged_copy_is_fetched_again(server, local, url,
                                                                             tmp_path):
    c = Corpus.open(url, **_opts(server, tmp_path))
    kept = sorted(c.cache.root.glob("*.header"))
    assert len(kept) == N_SHARDS and c.cache.cached() == []
    kept[1].write_bytes(b"GTOKCORP" + bytes(200))  # damaged on the local disk
    again = Corpus.open(url, **_opts(server, tmp_path))
    assert again.sources == Corpus.open(local).sources and kept[1].read_bytes()[:8] == b"GTOKCORP"
    assert Corpus.open(local)._shards[1].header == again._shards[1].header


def test_the_cache_serves_nothing_the_manifest_did_not_promise(server, local, url, tmp_path):
    """A stale, truncated, planted or tampered cache entry is fetched again, never served."""
    ref = Corpus.open(local)
    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    entry = c.cache.file(0)
    # a truncated entry (an interrupted copy, a full disk) is fetched again, not refused forever
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_bytes((local / "part-0.gtokc").read_bytes()[:500])
    assert c[0].tolist() == ref[0].tolist() and c.cache.downloads == 1
    # a planted entry with the right header but other tokens: refetched in a new process
    c.cache.file(1).write_bytes(_flip_one_token_byte((local / "part-1.gtokc").read_bytes()))
    c.cache.file(2).write_bytes((local / "part-3.gtokc").read_bytes())  # a foreign shard
    again = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    assert _records(again) == _records(ref) and again.cache.downloads == 4  # 1, 2, 3, 4
    assert again.verify() == []
    # verify() measures the cached copies against the manifest, not against their own headers
    with open(again.cache.file(4), "r+b") as fh:
        fh.seek(128 + 64)
        b = fh.read(1)
        fh.seek(128 + 64)
        fh.write(bytes([b[0] ^ 1]))
    problems = again.verify()
    assert len(problems) == 1 and "tokens checksum" in problems[0]


def test_an_entry_evicted_between_fetch_and_open_is_fetched_again(server, local, url, tmp_path,
                                                                  monkeypatch):
    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    real = ShardCache.fetch
    evicted = []

    def fetch_then_evict(self, k):
        path = real(self, k)
        if not evicted:  # another process evicts it before this one opens it
            evicted.append(k)
            path.unlink()
        return path

    monkeypatch.setattr(ShardCache, "fetch", fetch_then_evict)
    assert c[0].tolist() == Corpus.open(local)[0].tolist() and c.cache.downloads == 2


@pytest.mark.parametrize("path", ["%2e%2e/other/part-0.gtokc", "%2E%2E%2Fother%2Fpart-0.gtokc",
                                  "a/%252e%252e/part-0.gtokc", "part-0.gtokc?x=../y",
                                  "part-0.gtokc#frag"])
def test_an_encoded_escape_in_a_remote_manifest_is_refused(server, local, tmp_path, path):
    """Issue 32: only a literal .. was refused; an HTTP client normalises %2e%2e into one."""
    from genotok.formats.corpus.manifest import _manifest_digest

    m = json.loads((local / "manifest.json").read_text())
    m["shards"][0]["path"] = path
    m["digest"] = _manifest_digest(m, m["checksum"])  # a consistent, malicious manifest
    prefix = f"encoded{abs(hash(path))}"
    server[1].put_object(Bucket="bucket", Key=f"{prefix}/manifest.json", Body=json.dumps(m).encode())
    with pytest.raises(GtokFormatError, match="holds %, \\? or #"):
        Corpus.open(f"s3://bucket/{prefix}", **_opts(server, tmp_path))


def test_a_pickle_refuses_a_corpus_re_uploaded_since(server, local, tmp_path):
    """Issue 32: a worker unpickling after a re-upload read the new version."""
    client = server[1]
    u = _upload(client, local, "reuploaded")
    c = Corpus.open(u, **_opts(server, tmp_path, prefetch=0))
    blob = pickle.dumps(c)
    other = tmp_path / "other"
    other.mkdir()
    with CorpusWriter(other / "part-0.gtokc", vocab_size=3000, fingerprint="fp") as w:
        w.append([1, 2])
    write_manifest([other / "part-0.gtokc"], other)
    for p in other.iterdir():
        client.put_object(Bucket="bucket", Key=f"reuploaded/{p.name}", Body=p.read_bytes())
    with pytest.raises(GtokFormatError, match="changed since it was opened"):
        pickle.loads(blob)


@pytest.mark.parametrize("edit", ["twice", "totals"])
def test_a_remote_manifest_is_checked_as_a_local_one(server, local, tmp_path, edit):
    """Issue 32: remote manifests accepted a shard listed twice and totals that disagree."""
    from genotok.formats.corpus.manifest import _manifest_digest

    m = json.loads((local / "manifest.json").read_text())
    if edit == "twice":
        m["shards"][1] = {**m["shards"][0], "index": 1, "path": "./" + m["shards"][0]["path"]}
        m["n_records"] = sum(e["n_records"] for e in m["shards"])
        m["n_tokens"] = sum(e["n_tokens"] for e in m["shards"])
    else:
        m["n_records"] += 7
    m["digest"] = _manifest_digest(m, m["checksum"])
    prefix = f"manifest-{edit}"
    server[1].put_object(Bucket="bucket", Key=f"{prefix}/manifest.json", Body=json.dumps(m).encode())
    with pytest.raises(GtokFormatError, match="the same file" if edit == "twice" else "totals"):
        Corpus.open(f"s3://bucket/{prefix}", **_opts(server, tmp_path))
    (tmp_path / "loc").mkdir()  # the local reader says the same
    (tmp_path / "loc" / "manifest.json").write_text(json.dumps(m))
    for p in local.glob("*.gtokc"):
        (tmp_path / "loc" / p.name).write_bytes(p.read_bytes())
    with pytest.raises(GtokFormatError, match="the same file" if edit == "twice" else "totals"):
        Corpus.open(tmp_path / "loc")


def test_a_static_server_without_range_support_and_a_missing_shard(local, tmp_path):
    """Issue 32: a plain static server (no Range) gave a raw struct.error; a missing shard
    object a raw FileNotFoundError."""
    pytest.importorskip("aiohttp", reason="fsspec's http filesystem needs aiohttp")
    import functools
    import http.server
    import shutil
    import threading

    root = tmp_path / "site"
    shutil.copytree(local, root / "corpus")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/corpus"
        c = Corpus.open(url, cache_dir=str(tmp_path / "cache"), prefetch=0)
        assert _records(c) == _records(Corpus.open(local))
        (root / "corpus" / "part-3.gtokc").unlink()
        with pytest.raises(GtokFormatError, match="part-3.gtokc: the manifest lists this shard"):
            Corpus.open(url, cache_dir=str(tmp_path / "cache2"), prefetch=0)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_a_cached_header_must_be_a_regular_file_and_downloads_are_bounded(server, url, tmp_path):
    """Issue 32: a cached .header was read without a regular-file check (a FIFO blocked the
    open); a download was bounded neither by the manifest nor by the cache limit."""
    import os

    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    kept = sorted(c.cache.root.glob("*.header"))[0]
    kept.unlink()
    os.mkfifo(kept)  # would block a plain read forever
    again = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    assert again[0].tolist() == c[0].tolist()
    tiny = Corpus.open(url, **_opts(server, tmp_path / "t", prefetch=0, cache_limit=1000))
    with pytest.raises(GtokFormatError, match="larger than cache_limit"):
        tiny[0]
    assert not list(tiny.cache.root.glob("*.tmp"))


def _tamper(entry, how: str, rng, local, k: int) -> None:
    """Damage the cache entry of shard ``k`` (or the header kept beside it) one way."""
    import os

    good = (local / f"part-{k}.gtokc").read_bytes()
    other = (local / f"part-{(k + 1) % N_SHARDS}.gtokc").read_bytes()
    entry.parent.mkdir(parents=True, exist_ok=True)
    if entry.is_dir() and not entry.is_symlink():
        entry.rmdir()
    elif entry.is_symlink() or entry.exists():  # (a FIFO too: writing to it would block)
        entry.unlink()
    if how == "truncated":
        entry.write_bytes(good[:int(rng.integers(0, len(good)))])
    elif how == "flipped":
        raw = bytearray(good)
        raw[int(rng.integers(0, len(raw)))] ^= 1 << int(rng.integers(0, 8))
        entry.write_bytes(bytes(raw))
    elif how == "foreign":
        entry.write_bytes(other)
    elif how == "grown":
        entry.write_bytes(good + bytes(int(rng.integers(1, 64))))
    elif how == "empty":
        entry.write_bytes(b"")
    elif how == "link":
        target = entry.parent / f"planted-{k}"
        target.write_bytes(good)
        os.symlink(target, entry)
    elif how == "folder":
        entry.mkdir()
    elif how == "fifo":
        os.mkfifo(entry)


TAMPERINGS = ["truncated", "flipped", "foreign", "grown", "empty", "link", "folder", "fifo"]


@pytest.mark.slow
def test_campaign_a_tampered_cache_never_serves_a_byte_the_manifest_did_not_promise(
        server, local, url, tmp_path):
    """Issue 32's campaign, as a test: round after round, random cache entries (and kept
    headers) of a shared cache are truncated, flipped, swapped for another shard, grown,
    emptied, planted as links, folders or FIFOs; every read still gives the reference records
    (the entry fetched again) or a GtokFormatError, never other bytes, a hang or another
    exception; verify() then finds nothing."""
    ref = _records(Corpus.open(local))
    rng = np.random.default_rng(32)
    cache = tmp_path / "shared"
    for rnd in range(30):
        c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0) | {"cache_dir": str(cache)})
        if rnd:  # damage what the earlier rounds left
            for k in rng.choice(N_SHARDS, int(rng.integers(1, N_SHARDS + 1)), replace=False):
                how = TAMPERINGS[int(rng.integers(len(TAMPERINGS)))]
                _tamper(c.cache.file(int(k)), how, rng, local, int(k))
            for h in c.cache.root.glob("*.header"):
                if rng.random() < 0.3:
                    raw = bytearray(h.read_bytes())
                    raw[int(rng.integers(0, len(raw)))] ^= 0xFF
                    h.write_bytes(bytes(raw))
            c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0) | {"cache_dir": str(cache)})
        order = rng.permutation(len(ref))
        try:
            got = {int(i): c[int(i)].tolist() for i in order}
        except GtokFormatError as exc:  # refused, never served: say which entry
            assert "cache" in str(exc) or ".gtokc" in str(exc), exc
            continue
        assert [got[i] for i in range(len(ref))] == ref, f"round {rnd}"
        assert c.verify() == []


def test_token_budget_batches_read_only_the_offsets(server, local, url, tmp_path):
    """Issue 32 item 15: max_tokens= (which needs every record's length) downloaded every shard
    up front; the lengths come from ranged reads of the offsets sections, checked against the
    header checksums the manifest covers. A tampered offsets section is not trusted: that
    shard is read whole (and checked) instead."""
    from genotok.sampling import plan_for

    ref = Corpus.open(local)
    c = Corpus.open(url, **_opts(server, tmp_path, prefetch=0))
    plan_for(c, max_tokens=400)
    assert c.cache.downloads == 0 and c.lengths.tolist() == ref.lengths.tolist()
    raw = bytearray((local / "part-2.gtokc").read_bytes())
    import struct
    off = struct.unpack_from("<Q", raw, 48)[0]
    raw[off + 8] ^= 1  # the end of record 0 (a checksum mismatch against the header)
    client = server[1]
    for p in sorted(local.iterdir()):
        body = bytes(raw) if p.name == "part-2.gtokc" else p.read_bytes()
        client.put_object(Bucket="bucket", Key=f"offs/{p.name}", Body=body)
    bad = Corpus.open("s3://bucket/offs", **_opts(server, tmp_path / "b", prefetch=0))
    with pytest.raises(GtokFormatError, match="part-2.gtokc"):
        bad.lengths
