"""Corpora in object stores (``s3://``, ``gs://``, ``https://``: anything fsspec speaks).

``Corpus.open("s3://bucket/corpus/")`` reads the manifest and every shard's small JSON header
(ranged reads, checked against the manifest's header digests) and returns a
:class:`RemoteCorpus`: a :class:`~genotok.Corpus` whose shards are fetched into a local
:class:`ShardCache` when first read (record lengths, for ``max_tokens=``: by ranged reads of
the offsets sections, checked against the headers' checksums).

The cache, one directory per corpus under ``cache_dir``:

- whole shards are downloaded into a temporary file and renamed into place (atomic);
- a download is checked before it is used: its header against the manifest's digest, every
  section against its checksum, every id against the vocabulary; a corrupt download is fetched
  once more, then refused with :class:`~genotok.GtokFormatError`;
- nothing already in the cache is trusted: an entry is checked the same way, against the
  manifest, once per process before it is served; a truncated, stale or planted entry is
  fetched again (the cache may be shared with other processes and users);
- ``cache_limit`` bytes at most: the least recently used shards are removed first;
- the next shards of the epoch order are fetched ahead by a thread (:meth:`RemoteCorpus.prefetch`,
  called by :class:`~genotok.torch_data.CorpusIterableDataset`);
- worker processes of one node share it: one lock file per shard, so a shard is downloaded once.

Needs ``fsspec`` and the filesystem's package (``pip install 'genotok[remote]'``: fsspec, s3fs).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import threading
from pathlib import Path

import filelock
import numpy as np

from ..._io import atomic_write
from ..._optional import require
from ...errors import GtokFormatError, UniverseMismatchError
from ...params import EXPECT, PATH, Flag, InstanceOf, Integral, Interval, validated
from .layout import (
    CHECKSUMS,
    MAGIC,
    MANIFEST,
    PREAMBLE,
    VALUE_DTYPES,
    _clean_stale,
    _digest,
    _is_count,
    _json_load,
    _make_temp,
    _width_dtype,
)
from .manifest import MANIFEST_FORMAT, MANIFEST_MAX_BYTES, _check_manifest, rel_problem
from .reader import Corpus, _set_url_opener, check_expected, check_identity, is_url  # noqa: F401 - is_url: here too
from ..gtok import open_regular
from .shard import _Shard

#: bytes copied per read of a download
_BLOCK = 8 << 20
#: default cache directory (``GENOTOK_CACHE`` overrides it)
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "genotok", "shards")


def _fsspec():
    return require("fsspec", "a remote corpus (s3:// also needs s3fs, gs:// gcsfs)")


def _flock(path: Path) -> filelock.FileLock:
    """An exclusive lock on ``path`` (a lock file, created if needed and kept) that processes
    and threads share: a fresh filelock ``flock`` per use, waited for without a time limit."""
    return filelock.FileLock(path, thread_local=False, fallback_to_soft=False)


class ShardCache:
    """Verified copies of one remote corpus's shards on local disk (see the module docstring).

    Files are ``<cache_dir>/<corpus key>/<index>-<header digest>.gtokc``: a shard replaced on
    the server has a new digest, hence a new name.

    Examples
    --------
    >>> c = _example()  # a two-shard corpus at memory://genotok-example/corpus
    >>> c.cache.cached(), c[3].tolist(), [p.name[:6] for p in c.cache.cached()]
    ([], [4], ['000001'])
    """

    def __init__(self, url: str, storage_options: dict | None, manifest: dict, cache_dir,
                 cache_limit: int | None, prefetch: int = 2):
        self.url, self.manifest = url.rstrip("/"), manifest
        self._storage_options = dict(storage_options or {})
        key = hashlib.blake2b(self.url.encode(), digest_size=8).hexdigest()
        root = cache_dir or os.environ.get("GENOTOK_CACHE") or DEFAULT_CACHE
        self.root = Path(root) / key
        self.root.mkdir(parents=True, exist_ok=True)
        self.limit = cache_limit
        self.ahead = int(prefetch)
        self.entries = manifest["shards"]
        self.downloads = 0  # shards this process downloaded (tests, benchmarks)
        self._open: dict[int, object] = {}
        self._verified: dict[int, tuple] = {}  # shard -> (device, inode, size) checked here
        self._last = -1
        self._init_threads()
        for name in os.listdir(self.root):  # downloads of processes that died (SIGKILL)
            if ".fetching-" in name and name.endswith(".tmp"):
                _clean_stale(self.root, name[:name.index(".fetching-") + 10])

    def _init_threads(self) -> None:
        """Filesystem, locks and prefetch state of this process (again after a fork: an async
        filesystem such as s3fs and a thread do not survive one)."""
        self.fs = _fsspec().core.url_to_fs(self.url, skip_instance_cache=True,
                                           **self._storage_options)[0]
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._plan: list[int] = []
        self._where: dict[int, int] = {}
        self._cursor = -1
        self._generation = 0
        self._thread: threading.Thread | None = None

    def __getstate__(self):
        raise TypeError("a ShardCache is not pickled; a RemoteCorpus pickles as its URL")

    def file(self, k: int) -> Path:
        return self.root / f"{k:06d}-{self.entries[k]['header_digest']}.gtokc"

    def shard_url(self, k: int) -> str:
        return f"{self.url}/{self.entries[k]['path']}"

    def cached(self) -> list[Path]:
        """The verified shard files present now."""
        return sorted(p for p in self.root.glob("*.gtokc"))

    def size(self) -> int:
        """Bytes held by verified shards."""
        total = 0
        for p in self.cached():
            with contextlib.suppress(OSError):
                total += p.stat().st_size
        return total

    def fetch(self, k: int) -> Path:
        """The local file of shard ``k``, checked against the manifest (downloaded if it is not
        cached, or if the cached entry is truncated, foreign or corrupt)."""
        final = self.file(k)
        if self._usable(final, k):
            with contextlib.suppress(OSError):
                os.utime(final)  # recency for the LRU eviction
            return final
        with _flock(self.root / f"{k:06d}.lock"):
            if self._usable(final, k):  # another process fetched it while we waited
                return final
            self._discard(final)  # a stale, truncated or planted entry: fetched again
            problem = None
            for _ in range(2):  # a corrupt copy is fetched once more, then refused
                tmp = self._download(k)
                problem = self._check(tmp, k)
                if problem is None:
                    break
                os.unlink(tmp)
                problem = problem.replace(tmp, "the download")  # the temporary file is gone
            else:
                raise GtokFormatError(
                    f"{self.shard_url(k)}: downloaded twice, refused twice ({problem}): the copy on "
                    "the server is corrupt or was replaced without a new manifest; re-upload the "
                    "shard and its manifest")
            st = os.stat(tmp)
            with _flock(self.root / ".evict.lock"):
                self._evict(st.st_size)
                os.replace(tmp, final)
            self._verified[k] = (st.st_dev, st.st_ino, st.st_size)
            self.downloads += 1
        return final

    def _usable(self, final: Path, k: int) -> bool:
        """Whether the cached ``final`` is shard ``k`` as the manifest describes it: every cached
        entry is checked in full (header, counts, every checksum and id) once per process before
        it is served; nothing already in the cache directory is trusted (it may be stale,
        truncated, restored from a backup, or written by another user of a shared cache)."""
        try:
            st = os.lstat(final)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        ident = (st.st_dev, st.st_ino, st.st_size)
        if self._verified.get(k) == ident:
            return True
        try:
            if self._check(str(final), k) is not None:
                return False
        except OSError:  # evicted meanwhile
            return False
        self._verified[k] = ident
        return True

    def _discard(self, final: Path) -> None:
        """Remove a cache entry that may not be served (a directory there is not ours to remove)."""
        self._verified.pop(int(final.name[:6]), None)
        try:
            os.unlink(final)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise GtokFormatError(f"{final}: this cache entry is not a shard file and cannot be "
                                  f"replaced ({exc.strerror}); remove it") from None

    def _download(self, k: int) -> str:
        fd, tmp = _make_temp(self.root, f".{k:06d}.fetching-")
        try:
            got = 0
            with os.fdopen(fd, "wb") as out, self.fs.open(self.shard_url(k), "rb") as src:
                while block := src.read(_BLOCK):
                    got += len(block)
                    if self.limit is not None and got > self.limit:  # bounded, not the disk
                        raise GtokFormatError(
                            f"{self.shard_url(k)}: larger than cache_limit ({self.limit:,} "
                            "bytes); raise cache_limit (it must hold the shards read at once)")
                    out.write(block)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise _missing(self.shard_url(k)) from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return tmp

    def _check(self, tmp: str, k: int) -> str | None:
        """Why the download ``tmp`` of shard ``k`` may not be used, or None."""
        e = self.entries[k]
        try:
            s = _Shard(Path(tmp), nofollow=True)
        except GtokFormatError as exc:
            return str(exc)
        if (s.n, s.t, s.head_sum.hex()) != (e["n_records"], e["n_tokens"], e["header_digest"]):
            return (f"{s.n} records, {s.t} tokens, header digest {s.head_sum.hex()}; the manifest "
                    f"says {e['n_records']}, {e['n_tokens']}, {e['header_digest']}")
        problems = s.verify()
        return "; ".join(problems) if problems else None

    def _evict(self, incoming: int) -> None:
        """Remove least recently used shards until ``incoming`` more bytes fit the limit."""
        if self.limit is None:
            return
        files = []
        for p in self.cached():
            with contextlib.suppress(OSError):
                st = p.stat()
                files.append((st.st_mtime_ns, st.st_size, p))
        total = sum(f[1] for f in files) + incoming
        for _, size, p in sorted(files):
            if total <= self.limit:
                break
            with contextlib.suppress(OSError):
                p.unlink()  # a process that maps it keeps reading it (POSIX)
                total -= size

    def shard(self, k: int):
        """Shard ``k`` opened (memory-mapped) from the cache; fetched first if needed."""
        s = self._open.get(k)
        if k == self._last and s is not None:  # the common case: no system call at all
            return s
        if os.getpid() != self._pid:  # a forked worker: fresh locks, no prefetch thread yet
            self._init_threads()
        if s is not None:
            try:
                os.utime(s.path)  # recency for the LRU, once per change of shard
            except FileNotFoundError:  # evicted by another process: fetch it again
                s = None
        if s is None:
            s = self._open_checked(k)
            self._open = {j: o for j, o in self._open.items() if os.path.exists(o.path)}
            self._open[k] = s
        self._last = k
        with self._lock:
            pos = self._where.get(k)
            if pos is not None and pos > self._cursor:
                self._cursor = pos
                self._wake.notify_all()
        return s

    def _open_checked(self, k: int):
        """Shard ``k`` mapped from the very file that was checked: an entry evicted or replaced by
        another process between the check and the open is fetched (and checked) again."""
        for _ in range(3):
            path = self.fetch(k)
            try:
                s = _Shard(path, trusted=True, nofollow=True)  # checked in full by fetch()
            except (FileNotFoundError, GtokFormatError):
                self._verified.pop(k, None)
                continue
            if self._verified.get(k) == (*s.ident, s.size):
                return s
            self._verified.pop(k, None)
        raise GtokFormatError(f"{self.file(k)}: the cached copy of {self.shard_url(k)} kept "
                              "changing while it was opened (another process evicting or "
                              "replacing it); raise cache_limit or give this process its own "
                              "cache_dir")

    def prefetch(self, shards) -> None:
        """Fetch ``shards`` (in this order) in a thread, up to ``prefetch`` ahead of the reader."""
        if os.getpid() != self._pid:
            self._init_threads()
        if self.ahead <= 0:
            return
        with self._lock:
            self._generation += 1
            self._plan = [int(k) for k in shards]
            self._where = {k: i for i, k in reversed(list(enumerate(self._plan)))}
            self._cursor = -1
            self._wake.notify_all()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="genotok-prefetch",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        i, gen = 0, None
        while True:
            with self._lock:
                if gen != self._generation:
                    i, gen = 0, self._generation
                while i >= len(self._plan) or i > self._cursor + self.ahead:
                    if not self._wake.wait(timeout=30) and i >= len(self._plan):
                        return  # nothing asked for a while: the thread ends
                    if gen != self._generation:
                        i, gen = 0, self._generation
                k = self._plan[i]
            with contextlib.suppress(Exception):  # the reader's own fetch reports errors
                self.fetch(k)
            i += 1


class _RemoteShard:
    """A shard known from its header (fetched at open) whose data comes from the cache."""

    def __init__(self, cache: ShardCache, k: int, header: dict, pre: tuple):
        width, vcode, version = pre
        self._cache, self._k = cache, k
        self.header = header
        self.n, self.t = cache.entries[k]["n_records"], cache.entries[k]["n_tokens"]
        self.dtype = _width_dtype(width)
        self.values_dtype = VALUE_DTYPES[vcode]
        self.version = version
        self.path = cache.shard_url(k)

    def verify(self) -> list[str]:
        """Problems of the cached copy measured against the manifest (not only its own header)."""
        path = self._cache.fetch(self._k)
        problem = self._cache._check(str(path), self._k)
        return [f"{self.path} (cached as {path}): {problem}"] if problem else []

    def __getattr__(self, name):  # tokens, offsets, values, bounds, records, ...
        if name.startswith("__") or name in ("_cache", "_k"):
            raise AttributeError(name)
        return getattr(self._cache.shard(self._k), name)


def _fetch_raw_headers(fs, cache: ShardCache, ks: list[int]) -> dict[int, bytes]:
    """Preamble + JSON header of shards ``ks``: two rounds of ranged reads, run concurrently
    by async filesystems (``cat_ranges``: s3fs, gcsfs, http)."""
    if not ks:
        return {}
    urls = [cache.shard_url(k) for k in ks]
    size = PREAMBLE.size
    pres = fs.cat_ranges(urls, [0] * len(ks), [size] * len(ks), on_error="return")
    spans = []
    for i, (url, pre) in enumerate(zip(urls, pres)):
        if isinstance(pre, FileNotFoundError):
            raise _missing(url)
        if isinstance(pre, BaseException):
            raise _range_error(url, pre)
        pre = pres[i] = pre[:size]  # a server that ignores Range sends the whole object
        if len(pre) < size or pre[:8] != MAGIC:
            raise GtokFormatError(f"{url}: not a genotok corpus shard (bad magic)")
        f = PREAMBLE.unpack(pre)
        if f[12] > MANIFEST_MAX_BYTES:
            raise GtokFormatError(f"{url}: corrupt preamble (a {f[12]}-byte header)")
        spans.append((f[11], f[11] + f[12]))
    bodies = fs.cat_ranges(urls, [x for x, _ in spans], [y for _, y in spans], on_error="return")
    for i, (url, body, (a, b)) in enumerate(zip(urls, bodies, spans)):
        if isinstance(body, FileNotFoundError):
            raise _missing(url)
        if isinstance(body, BaseException):
            raise _range_error(url, body)
        if len(body) > b - a:  # no Range support: the whole object came
            bodies[i] = body = body[a:b]
        if len(body) != b - a:
            raise GtokFormatError(f"{url}: truncated (its header ends past the object's end)")
    return {k: pre + body for k, pre, body in zip(ks, pres, bodies)}


def _range_error(url: str, exc: BaseException) -> BaseException:
    """A failed ranged read: a range past the object's end (S3's ``InvalidRange``, fsspec's
    ``EINVAL``) is a truncated shard, named; anything else (the network) is raised as it is."""
    if isinstance(exc, OSError) and (exc.errno == errno.EINVAL or "range" in str(exc).lower()):
        return GtokFormatError(f"{url}: truncated (a section the manifest's shard needs lies "
                               "past the object's end); re-upload the corpus")
    return exc


def _missing(url: str) -> GtokFormatError:
    return GtokFormatError(f"{url}: the manifest lists this shard but the store has no such "
                           "object (deleted, or uploaded without it); re-upload the corpus")


def _parse_header(cache: ShardCache, k: int, raw: bytes) -> tuple[dict, tuple]:
    """Shard ``k``'s header and layout from its raw bytes, checked against the manifest."""
    e, url = cache.entries[k], cache.shard_url(k)
    pre, body = raw[:PREAMBLE.size], raw[PREAMBLE.size:]
    if len(pre) < PREAMBLE.size:
        raise GtokFormatError(f"{url}: truncated preamble")
    (_, major, minor, width, vcode, _, n, t, *_rest, head_sum) = PREAMBLE.unpack(pre)
    if head_sum.hex() != e["header_digest"] or width not in (2, 4) or vcode not in VALUE_DTYPES \
            or (n, t) != (e["n_records"], e["n_tokens"]):
        raise GtokFormatError(f"{url}: its preamble disagrees with the manifest (replaced after "
                              "the manifest was written); re-run write_manifest")
    header = _json_load(body, "metadata header", url)
    algo = header.get("checksum") if isinstance(header, dict) else None
    if algo not in CHECKSUMS or _digest(body, algo).hex() != e["header_digest"]:
        raise GtokFormatError(f"{url}: metadata header checksum mismatch")
    return header, (width, vcode, (major, minor))


def _headers(fs, cache: ShardCache) -> list[tuple[dict, tuple]]:
    """Every shard's header: from the cache directory (checked again), else fetched and kept."""
    raw: dict[int, bytes] = {}
    for k, e in enumerate(cache.entries):
        kept = cache.root / f"{k:06d}-{e['header_digest']}.header"
        with contextlib.suppress(OSError, GtokFormatError):  # a regular file, a header at most
            fd, _ = open_regular(kept, "cached header", nofollow=True)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(PREAMBLE.size + MANIFEST_MAX_BYTES + 1)
            if len(data) <= PREAMBLE.size + MANIFEST_MAX_BYTES:
                raw[k] = data
    out = {}
    for k in list(raw):
        try:
            out[k] = _parse_header(cache, k, raw[k])
        except GtokFormatError:  # a damaged local copy: fetched again below
            del raw[k]
    fetched = _fetch_raw_headers(fs, cache, [k for k in range(len(cache.entries)) if k not in raw])
    for k, r in fetched.items():
        out[k] = _parse_header(cache, k, r)
        saved = cache.root / f"{k:06d}-{cache.entries[k]['header_digest']}.header"
        with contextlib.suppress(OSError), atomic_write(saved, "wb") as fh:
            fh.write(r)
    return [out[k] for k in range(len(cache.entries))]


class RemoteCorpus(Corpus):
    """A :class:`~genotok.Corpus` in an object store, read through a local :class:`ShardCache`.

    Open it with ``Corpus.open(url, ...)`` or :func:`open_corpus`. It pickles as its URL,
    options and manifest digest (DataLoader workers reopen it, share the cache, and refuse
    a corpus re-uploaded meanwhile).

    Examples
    --------
    >>> c = _example()
    >>> c.prefetch([3, 2, 0]); c.get_batch([3, 0]).to_list()
    [[4], [1, 2]]
    """

    def __init__(self, url: str, cache: ShardCache, shards: list, options: dict):
        super().__init__(shards, url, cache.manifest)
        self.cache, self._options = cache, options
        self._trusted = True

    def __reduce__(self):
        return (_reopen, (str(self.path), self._options, self.identity))

    def prefetch(self, records) -> None:
        """Fetch, in a thread, the shards that ``records`` (in reading order) will need."""
        rec = np.asarray(records, dtype=np.int64)
        shards = np.searchsorted(self._starts, rec, side="right") - 1
        if shards.size:
            keep = np.concatenate([[True], shards[1:] != shards[:-1]])
            shards = shards[keep]
            _, first = np.unique(shards, return_index=True)
            self.cache.prefetch(shards[np.sort(first)].tolist())

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", cache={str(self.cache.root)!r})"

    @property
    def lengths(self) -> np.ndarray:
        """Tokens of every record (see the module docstring), without fetching every shard."""
        if self._lengths is None:
            self._lengths = np.concatenate(_remote_lengths(self.cache, self._shards))
        return self._lengths


def _remote_lengths(cache: ShardCache, shards: list) -> list[np.ndarray]:
    """Record lengths: offsets sections alone, else (cached, failed) from the checked shard."""
    if os.getpid() != cache._pid:  # a forked worker: its own filesystem
        cache._init_threads()
    ks = [k for k in range(len(shards)) if not cache.file(k).exists()]  # (cached: read whole)
    urls, got, size = [cache.shard_url(k) for k in ks], {}, PREAMBLE.size
    pres = [p[:size] if isinstance(p, bytes) and len(p) >= size else bytes(size) for p in
            cache.fs.cat_ranges(urls, [0] * len(ks), [size] * len(ks), on_error="return")]
    spans = [(a, a + (shards[k].n + 1) * 8) for k, a in
             zip(ks, (PREAMBLE.unpack(p)[10] for p in pres))]
    bodies = cache.fs.cat_ranges(urls, [a for a, _ in spans], [b for _, b in spans],
                                 on_error="return")
    for k, body, (a, b) in zip(ks, bodies, spans):
        body, h = body if isinstance(body, bytes) else b"", shards[k].header
        body = body[a:b] if len(body) > b - a else body  # no Range support: the whole object
        if len(body) == b - a and h.get("checksum") in CHECKSUMS and _digest(
                body, h["checksum"]).hex() == h.get("checksums", {}).get("offsets"):
            o = np.frombuffer(body, "<i8")
            if o[0] == 0 and o[-1] == shards[k].t and not np.any(o[1:] < o[:-1]):
                got[k] = np.diff(o)
    return [got[k] if k in got else np.diff(sh.offsets) for k, sh in enumerate(shards)
            if k in got or sh.check_offsets(0, sh.n) is None]


def _copy_store_output(fs, url: str, raw: bytes, manifest: dict, cache_dir,
                       cache_limit: int | None = None) -> Path:
    """A local copy of a store's output at ``url`` (not a corpus: a Parquet, Arrow, JSONL…
    output), one directory per URL and manifest under the cache's ``stores/``; files of the
    right size and digest already there are kept, others fetched into a temporary name and
    renamed; the manifest last. The local reader then checks every file against the manifest.

    Such an output is read whole (its reader has no ranged reads), so it is copied whole:
    ``prefetch`` has nothing to do, and ``cache_limit`` bounds ``stores/`` as a whole: the
    copies least recently opened are removed until this one fits, and an output larger than
    the limit is refused before anything is fetched. Call under :func:`_stores_lock`."""
    entries = manifest.get("shards")
    if not isinstance(entries, list):
        raise GtokFormatError(f"{url}/{MANIFEST}: the manifest's format "
                              f"{str(manifest.get('format'))[:40]!r} is no store's this install "
                              "reads from a URL (no shards)")
    key = hashlib.blake2b(url.encode() + raw, digest_size=8).hexdigest()
    root = _stores_dir(cache_dir) / key
    if cache_limit is not None:
        need = sum(e["bytes"] for e in entries
                   if isinstance(e, dict) and _is_count(e.get("bytes")))
        _make_room(root, need + len(raw), cache_limit, url)
    root.mkdir(parents=True, exist_ok=True)
    for k, e in enumerate(entries):
        rel = e.get("path") if isinstance(e, dict) else None
        why = rel_problem(rel, remote=True)
        if why:
            raise GtokFormatError(f"{url}/{MANIFEST}: corrupt manifest (entry {k}: path "
                                  f"{str(rel)[:200]!r} {why})")
        local = root.joinpath(*rel.split("/"))
        if local.is_file() and not local.is_symlink() and local.stat().st_size == e.get("bytes") \
                and _digest(np.memmap(local, mode="r") if e["bytes"] else b"",
                            "blake2b_64").hex() == e.get("digest"):
            continue  # a checked copy (a damaged or planted one is fetched again)
        local.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _make_temp(local.parent, f".{local.name}.fetching-")
        os.close(fd)
        try:
            fs.get_file(f"{url}/{rel}", tmp)
        except FileNotFoundError:
            os.unlink(tmp)
            raise GtokFormatError(f"{url}/{rel}: listed by the manifest but missing: the output "
                                  "is incomplete; re-create it") from None
        os.replace(tmp, local)
    with atomic_write(root / MANIFEST, "wb") as fh:  # (its time: when the copy was last opened)
        fh.write(raw)
    return root


def _stores_dir(cache_dir) -> Path:
    """Where the copies of stores' outputs are kept: ``stores/`` of the cache."""
    return Path(cache_dir or os.environ.get("GENOTOK_CACHE") or DEFAULT_CACHE) / "stores"


def _stores_lock(cache_dir) -> filelock.FileLock:
    """The lock of ``stores/`` (held while a copy is made room for, fetched and opened, so no
    process removes a copy another is opening)."""
    d = _stores_dir(cache_dir)
    d.mkdir(parents=True, exist_ok=True)
    return _flock(d / ".lock")


def _make_room(root: Path, need: int, limit: int, url: str) -> None:
    """Remove the copies in ``root``'s folder least recently opened (their manifest's time)
    until ``need`` more bytes (``root``'s own files counted as its) fit ``limit``."""
    if need > limit:
        raise GtokFormatError(f"{url}: a store's output is read whole, so copied whole into the "
                              f"cache: its {need:,} bytes exceed cache_limit={limit:,}; raise "
                              "cache_limit, or write it as a corpus (format='corpus'), which "
                              "is read shard by shard")
    copies = []
    for d in root.parent.iterdir():
        if d.is_dir() and not d.is_symlink() and d != root:
            m = d / MANIFEST
            when = (m if m.is_file() else d).stat().st_mtime
            copies.append((when, d, sum(f.stat().st_size for f in d.rglob("*") if f.is_file())))
    used = sum(c[2] for c in copies)
    for _, d, size in sorted(copies, key=lambda c: c[0]):
        if used + need <= limit:
            break
        shutil.rmtree(d, ignore_errors=True)
        used -= size


def _reopen(url, options, identity=None):
    return check_identity(open_corpus(url, **options), identity)


@validated({"url": [InstanceOf(str)], "expect": EXPECT, "verify": [Flag()],
            "cache_dir": [*PATH, None], "cache_limit": [Interval(Integral, 1, None), None],
            "prefetch": [Interval(Integral, 0, None)], "storage_options": [InstanceOf(dict), None]})
def open_corpus(url: str, *, expect=None, verify: bool = False, cache_dir=None,
                cache_limit: int | None = None, prefetch: int = 2,
                storage_options: dict | None = None) -> RemoteCorpus:
    """Open the sharded corpus at ``url`` (a directory with ``manifest.json``) through a cache.

    Parameters
    ----------
    url
        ``s3://bucket/corpus``, ``gs://…``, ``https://host/corpus``: any fsspec URL.
    expect, verify
        As for :meth:`Corpus.open <genotok.Corpus.open>` (``verify`` downloads every shard).
    cache_dir
        Where shards are kept (default ``$GENOTOK_CACHE`` or ``~/.cache/genotok/shards``); put
        it on the node's local disk and share it between the processes of a node.
    cache_limit
        Bytes the cache may hold (least recently used shards go first); ``None``: no limit.
        It must hold the shards read at once: a block shuffle's window, plus ``prefetch``.
        Another store's output (Parquet, Arrow, JSON Lines…) is read whole, so copied whole
        into ``stores/`` of the cache: the limit bounds those copies (the least recently
        opened go first), and one larger than it is refused.
    prefetch
        Shards fetched ahead of the reader, in epoch order (a corpus' only: another store's
        output is copied whole).
    storage_options
        Passed to fsspec (e.g. ``{"endpoint_url": …, "key": …, "secret": …}`` for s3fs).

    Examples
    --------
    >>> import tempfile
    >>> _ = _example()  # uploads a corpus to fsspec's in-memory filesystem
    >>> c = open_corpus("memory://genotok-example/corpus", cache_dir=tempfile.mkdtemp())
    >>> len(c), c[0].tolist(), c.cache.downloads
    (4, [1, 2], 1)
    """
    fsspec = _fsspec()
    url = url.rstrip("/")
    options = {"cache_dir": cache_dir, "cache_limit": cache_limit, "prefetch": prefetch,
               "storage_options": storage_options}
    fs, _ = fsspec.core.url_to_fs(url, **(storage_options or {}))
    murl = f"{url}/{MANIFEST}"
    try:
        raw = fs.cat_file(murl)
    except FileNotFoundError:
        raise GtokFormatError(f"{murl}: not found; a remote corpus is a directory with "
                              f"{MANIFEST} (write one with write_manifest, then upload)") from None
    if len(raw) > MANIFEST_MAX_BYTES:
        raise GtokFormatError(f"{murl}: larger than a manifest may be")
    manifest = _json_load(raw, "manifest", murl)
    if isinstance(manifest, dict) and manifest.get("format") != MANIFEST_FORMAT:
        # another store's output (Parquet, Arrow…): copied whole, then read as a local one
        with _stores_lock(cache_dir):  # (no other process removes it before it is open)
            local = _copy_store_output(fs, url, raw, manifest, cache_dir, cache_limit)
            return Corpus.open(local, expect=expect, verify=verify)
    _check_manifest(manifest, murl, remote=True)  # the local checks, every digest required
    cache = ShardCache(url, storage_options, manifest, cache_dir, cache_limit, prefetch)
    shards = [_RemoteShard(cache, k, header, pre)
              for k, (header, pre) in enumerate(_headers(fs, cache))]
    if manifest["fingerprint"] != shards[0].header.get("fingerprint"):
        raise UniverseMismatchError(f"{murl}: the manifest's universe differs from its shards'")
    corpus = RemoteCorpus(url, cache, shards, options)
    check_expected(corpus.fingerprint, expect, url)
    if verify:
        corpus.verify(raise_on_error=True)
    return corpus



_set_url_opener(open_corpus)  # Corpus.open("s3://…") comes here (the reader never imports remote)

def _example() -> RemoteCorpus:
    """A two-shard corpus uploaded to ``memory://genotok-example/corpus``, opened (docstrings)."""
    import tempfile

    from .manifest import write_manifest
    from .writer import CorpusWriter

    d = Path(tempfile.mkdtemp())
    for k, rows in enumerate(([[1, 2], [3]], [[5], [4]])):
        with CorpusWriter(d / f"s{k}.gtokc", vocab_size=9, fingerprint="fp") as w:
            w.append_batch(rows)
    write_manifest([d / "s0.gtokc", d / "s1.gtokc"], d)
    fs = _fsspec().filesystem("memory")
    for p in d.iterdir():
        fs.pipe(f"memory://genotok-example/corpus/{p.name}", p.read_bytes())
    return open_corpus("memory://genotok-example/corpus", cache_dir=tempfile.mkdtemp())
