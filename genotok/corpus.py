"""The indexed corpus: millions of token lists in one memory-mappable file (or many shards).

Byte layout (little-endian; every section starts on a 64-byte boundary; see docs/formats.md):

====== ======== ===========================================================
offset size     field
====== ======== ===========================================================
0      8        magic ``b"GTOKCORP"``
8      2        format major version (a reader refuses a newer major)
10     2        format minor version
12     1        token width in bytes (2: uint16, 4: uint32)
13     1        value channel: 0 none, 1 float32, 2 uint16
14     2        reserved (0)
16     8        number of records ``n``
24     8        number of tokens ``t``
32     8        byte offset of the tokens section (``t`` ids)
40     8        byte offset of the values section (``t`` values; 0 when none)
48     8        byte offset of the record offsets (``n + 1`` int64, from 0 to ``t``)
56     8        byte offset of the JSON header
64     8        byte length of the JSON header
72     56       reserved (0)
====== ======== ===========================================================

The JSON header holds the metadata: format, genotok version, creation time, universe
fingerprint, vocabulary size, special token ids, tokenizer settings, record names, per-record
metadata columns, sources (name, size, sha256) and the checksums of the three data sections.

A corpus may also be a directory holding ``manifest.json`` and shard files: shards written by
separate processes or machines are joined by writing a manifest, never by copying token data.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from numba import njit, prange

from ._config import NJIT_PARALLEL
from ._io import make_temp
from .errors import GtokFormatError, UniverseMismatchError
from .ragged import Ragged

MAGIC = b"GTOKCORP"
MAJOR, MINOR = 1, 0
PREAMBLE = struct.Struct("<8sHHBBH7Q56x")
assert PREAMBLE.size == 128
ALIGN = 64
VALUE_DTYPES = {0: None, 1: np.dtype("<f4"), 2: np.dtype("<u2")}
_VALUE_CODES = {np.dtype("float32"): 1, np.dtype("uint16"): 2}
MANIFEST = "manifest.json"

try:
    import xxhash

    CHECKSUM = "xxh3_64"

    def _hasher():
        return xxhash.xxh3_64()
except ImportError:  # pragma: no cover - depends on the environment
    import hashlib

    CHECKSUM = "blake2b_64"

    def _hasher():
        return hashlib.blake2b(digest_size=8)


def _new_hasher(name: str):
    if name == CHECKSUM:
        return _hasher()
    if name == "blake2b_64":
        import hashlib

        return hashlib.blake2b(digest_size=8)
    if name == "xxh3_64":
        import xxhash

        return xxhash.xxh3_64()
    raise GtokFormatError(f"unknown checksum algorithm {name!r}")


def _pad(n: int) -> int:
    return (-n) % ALIGN


def _token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65536), else uint32."""
    return np.dtype("<u2") if vocab_size <= 65536 else np.dtype("<u4")


def _genotok_version() -> str:
    from . import __version__

    return __version__


# ---------------------------------------------------------------------------------- writing
class CorpusWriter:
    """Stream records into a corpus file without holding the corpus in memory.

    Written under a temporary name in the target folder and renamed on :meth:`close`; an
    exception inside a ``with`` block (or :meth:`abort`) removes it, so an interrupted write
    leaves nothing that looks valid.

    Parameters
    ----------
    path
        The corpus file to create.
    vocab_size, fingerprint
        Of the tokenizer; ids >= vocab_size are refused. Take both from a Tokenizer with
        :meth:`for_tokenizer`.
    special_tokens, settings
        Stored as metadata (special token ids; tokenizer settings).
    values_dtype
        ``None`` (no value channel), ``"float32"`` or ``"uint16"``.
    metadata_columns
        Names of per-record metadata columns (JSON scalars) given to ``append(meta=...)``.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=10, fingerprint="abc") as w:
    ...     w.append([1, 2, 3], name="a")
    ...     w.append([], name="b")
    >>> c = Corpus.open(p)
    >>> len(c), c[0].tolist(), c.names
    (2, [1, 2, 3], ['a', 'b'])
    """

    def __init__(self, path: str | os.PathLike, *, vocab_size: int, fingerprint: str,
                 special_tokens: dict | None = None, settings: dict | None = None,
                 values_dtype=None, metadata_columns: Sequence[str] = (),
                 overwrite: bool = False, extra: dict | None = None):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} exists; pass overwrite=True to replace it")
        if int(vocab_size) < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
        self.vocab_size = int(vocab_size)
        self.dtype = _token_dtype(self.vocab_size)
        self.values_dtype = None if values_dtype is None else np.dtype(values_dtype)
        if self.values_dtype is not None and self.values_dtype not in _VALUE_CODES:
            raise ValueError(f"values_dtype must be float32 or uint16, got {values_dtype!r}")
        self.header = {
            "format": "genotok-corpus", "version": [MAJOR, MINOR],
            "genotok_version": _genotok_version(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "fingerprint": str(fingerprint), "vocab_size": self.vocab_size,
            "special_tokens": dict(special_tokens or {}), "settings": dict(settings or {}),
            "checksum": CHECKSUM, "sources": [], "extra": dict(extra or {}),
        }
        self.meta_columns = list(metadata_columns)
        self._meta: dict[str, list] = {k: [] for k in self.meta_columns}
        self._names: list[str | None] = []
        self._lengths: list[np.ndarray] = []
        self._n_tokens = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = make_temp(self.path)
        self._fh = os.fdopen(fd, "w+b")
        self._fh.write(b"\0" * PREAMBLE.size)
        self._tok_hash = _hasher()
        self._vfh = None
        self._val_hash = _hasher()
        if self.values_dtype is not None:
            vfd, self._vtmp = make_temp(self.path, ".values.tmp")
            self._vfh = os.fdopen(vfd, "w+b")
        self._closed = False

    @classmethod
    def for_tokenizer(cls, path, tokenizer, **kwargs) -> "CorpusWriter":
        """A writer carrying a Tokenizer's fingerprint, vocabulary size, specials and settings."""
        u = tokenizer.universe
        return cls(path, vocab_size=tokenizer.vocab_size, fingerprint=tokenizer.fingerprint,
                   special_tokens=u.special_token_ids, settings=tokenizer.settings.as_dict(),
                   **kwargs)

    # -- appending
    def append(self, ids, name: str | None = None, values=None, meta: dict | None = None) -> None:
        """Append one record."""
        self.append_batch(Ragged(np.asarray(ids).ravel(), np.array([0, np.size(ids)])),
                          names=None if name is None else [name],
                          values=None if values is None else np.asarray(values).ravel(),
                          meta=None if meta is None else {k: [v] for k, v in meta.items()})

    def append_batch(self, rows, names: Sequence[str] | None = None, values=None,
                     meta: dict | None = None) -> None:
        """Append many records: a :class:`Ragged` (its ``values`` used unless given) or a list."""
        if self._closed:
            raise ValueError("this writer is closed")
        if not isinstance(rows, Ragged):
            rows = Ragged.from_list(rows, dtype=np.int64)
        if values is None:
            values = rows.values
        elif not isinstance(values, np.ndarray):  # one sequence of values per record
            values = (np.concatenate([np.asarray(v).ravel() for v in values]) if len(values)
                      else np.zeros(0))
        n = len(rows)
        data = rows.data
        if data.size and not np.issubdtype(data.dtype, np.integer):
            raise GtokFormatError(f"{self.path}: token ids must be integers, got {data.dtype}")
        if data.size and (data.min() < 0 or data.max() >= self.vocab_size):
            bad = int(np.flatnonzero((data < 0) | (data >= self.vocab_size))[0])
            rec = len(self._names) + int(np.searchsorted(rows.offsets, bad, side="right")) - 1
            raise GtokFormatError(f"{self.path}: record {rec} has id {int(data[bad])}, outside the "
                                  f"vocabulary (0..{self.vocab_size - 1})")
        if (values is None) != (self.values_dtype is None):
            raise ValueError("values must be given exactly when the writer has values_dtype")
        if values is not None and np.asarray(values).size != data.size:
            raise ValueError("values must be aligned with the token ids")
        if names is not None and len(names) != n:
            raise ValueError(f"{len(names)} names for {n} records")
        meta = meta or {}
        unknown = set(meta) - set(self.meta_columns)
        if unknown:
            raise ValueError(f"unknown metadata column(s) {sorted(unknown)}; declare them in "
                             f"metadata_columns (have {self.meta_columns})")
        for k in self.meta_columns:
            col = meta.get(k)
            if col is None:
                self._meta[k].extend([None] * n)
            else:
                col = list(np.asarray(col, dtype=object).tolist()) if not isinstance(col, list) else col
                if len(col) != n:
                    raise ValueError(f"metadata column {k!r}: {len(col)} values for {n} records")
                self._meta[k].extend(col)
        buf = np.ascontiguousarray(data, dtype=self.dtype).tobytes()
        self._fh.write(buf)
        self._tok_hash.update(buf)
        if values is not None:
            vb = np.ascontiguousarray(values, dtype=self.values_dtype).tobytes()
            self._vfh.write(vb)
            self._val_hash.update(vb)
        self._lengths.append(np.diff(rows.offsets))
        self._n_tokens += int(data.size)
        self._names.extend([None] * n if names is None else [str(x) for x in names])

    def add_source(self, name: str, size: int | None = None, sha256: str | None = None,
                   **info) -> None:
        """Record an input this corpus was made from (for audits and reproduction)."""
        self.header["sources"].append({"name": str(name), "size": size, "sha256": sha256, **info})

    @property
    def n_records(self) -> int:
        return len(self._names)

    # -- finishing
    def close(self) -> Path:
        """Write the index and metadata, then rename the file into place."""
        if self._closed:
            return self.path
        try:
            fh = self._fh
            tokens_off = PREAMBLE.size
            fh.write(b"\0" * _pad(fh.tell()))
            values_off = 0
            if self._vfh is not None:
                values_off = fh.tell()
                self._vfh.seek(0)
                while block := self._vfh.read(1 << 24):
                    fh.write(block)
                fh.write(b"\0" * _pad(fh.tell()))
            offsets = np.zeros(self.n_records + 1, dtype="<i8")
            if self._lengths:
                np.cumsum(np.concatenate(self._lengths), out=offsets[1:])
            offsets_off = fh.tell()
            ob = offsets.tobytes()
            fh.write(ob)
            fh.write(b"\0" * _pad(fh.tell()))
            off_hash = _hasher()
            off_hash.update(ob)
            header = dict(self.header)
            header["n_records"] = self.n_records
            header["n_tokens"] = self._n_tokens
            header["names"] = self._names if any(n is not None for n in self._names) else None
            header["meta"] = self._meta
            header["checksums"] = {"tokens": self._tok_hash.hexdigest(),
                                   "values": self._val_hash.hexdigest() if self._vfh else None,
                                   "offsets": off_hash.hexdigest()}
            jb = json.dumps(header, separators=(",", ":")).encode()
            json_off = fh.tell()
            fh.write(jb)
            fh.seek(0)
            fh.write(PREAMBLE.pack(MAGIC, MAJOR, MINOR, self.dtype.itemsize,
                                   _VALUE_CODES[self.values_dtype] if self.values_dtype else 0, 0,
                                   self.n_records, self._n_tokens, tokens_off, values_off,
                                   offsets_off, json_off, len(jb)))
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._cleanup_values()
        self._closed = True
        return self.path

    def _cleanup_values(self) -> None:
        if self._vfh is not None:
            self._vfh.close()
            if os.path.exists(self._vtmp):
                os.unlink(self._vtmp)

    def abort(self) -> None:
        """Discard everything written so far (no file is left behind)."""
        if self._closed:
            return
        self._closed = True
        self._fh.close()
        if os.path.exists(self._tmp):
            os.unlink(self._tmp)
        self._cleanup_values()

    def __enter__(self) -> "CorpusWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


# ---------------------------------------------------------------------------------- reading
@njit(**NJIT_PARALLEL)
def _gather(tokens, offsets, idx, out_offsets, out):
    for k in prange(idx.size):
        a = offsets[idx[k]]
        b = offsets[idx[k] + 1]
        o = out_offsets[k]
        for j in range(b - a):
            out[o + j] = tokens[a + j]


def _gather_rows(tokens: np.ndarray, offsets: np.ndarray, idx: np.ndarray):
    """Rows ``idx`` of a (tokens, offsets) ragged pair as a new flat array + offsets."""
    lengths = offsets[idx + 1] - offsets[idx]
    out_offsets = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=tokens.dtype)
    if idx.size:
        _gather(tokens, offsets, idx, out_offsets, out)
    return out, out_offsets


class _Shard:
    """One corpus file, memory-mapped."""

    def __init__(self, path: Path):
        self.path = path
        p = str(path)
        try:
            size = os.path.getsize(p)
            with open(p, "rb") as fh:
                pre = fh.read(PREAMBLE.size)
        except FileNotFoundError:
            raise GtokFormatError(f"{p}: no such corpus file") from None
        if len(pre) < PREAMBLE.size or pre[:8] != MAGIC:
            raise GtokFormatError(f"{p}: not a genotok corpus (bad magic {pre[:8]!r})")
        (_, major, minor, width, vcode, _, n, t, tok_off, val_off, off_off, json_off,
         json_len) = PREAMBLE.unpack(pre)
        if major > MAJOR:
            raise GtokFormatError(f"{p}: corpus format {major}.{minor} is newer than this genotok "
                                  f"reads ({MAJOR}.{MINOR}); upgrade genotok")
        if width not in (2, 4) or vcode not in VALUE_DTYPES:
            raise GtokFormatError(f"{p}: corrupt preamble (token width {width}, value code {vcode})")
        self.dtype = np.dtype("<u2") if width == 2 else np.dtype("<u4")
        self.values_dtype = VALUE_DTYPES[vcode]
        sections = [(tok_off, t * width, "tokens"), (off_off, (n + 1) * 8, "offsets"),
                    (json_off, json_len, "header")]
        if self.values_dtype is not None:
            sections.append((val_off, t * self.values_dtype.itemsize, "values"))
        for off, length, what in sections:
            if off < PREAMBLE.size or off + length > size:
                raise GtokFormatError(f"{p}: truncated or corrupt: the {what} section "
                                      f"[{off}, {off + length}) lies outside the file ({size} bytes)")
        with open(p, "rb") as fh:
            fh.seek(json_off)
            try:
                self.header = json.loads(fh.read(json_len))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise GtokFormatError(f"{p}: corrupt metadata header ({exc})") from None
        self.n, self.t = n, t
        self.tokens = (np.memmap(p, dtype=self.dtype, mode="r", offset=tok_off, shape=(t,))
                       if t else np.zeros(0, self.dtype))
        self.offsets = np.memmap(p, dtype="<i8", mode="r", offset=off_off, shape=(n + 1,))
        self.values = None
        if self.values_dtype is not None:
            self.values = (np.memmap(p, dtype=self.values_dtype, mode="r", offset=val_off, shape=(t,))
                           if t else np.zeros(0, self.values_dtype))
        # the cheap check on open: the index agrees with the payload size
        if self.offsets[0] != 0 or self.offsets[-1] != t:
            raise GtokFormatError(f"{p}: corrupt record offsets (first {int(self.offsets[0])}, last "
                                  f"{int(self.offsets[-1])}, expected 0 and {t}); run verify()")

    def verify(self) -> list[str]:
        problems = []
        h = self.header
        p = self.path
        offs = np.asarray(self.offsets)
        if np.any(np.diff(offs) < 0):
            problems.append(f"{p}: record offsets decrease at record "
                            f"{int(np.flatnonzero(np.diff(offs) < 0)[0])}")
        vs = int(h.get("vocab_size", 0))
        if self.t and int(np.asarray(self.tokens).max()) >= vs:
            problems.append(f"{p}: token id {int(np.asarray(self.tokens).max())} >= vocab_size {vs}")
        sums = h.get("checksums", {})
        algo = h.get("checksum", CHECKSUM)
        for what, arr in (("tokens", self.tokens), ("offsets", self.offsets), ("values", self.values)):
            want = sums.get(what)
            if arr is None or want is None:
                continue
            hasher = _new_hasher(algo)
            mv = memoryview(np.ascontiguousarray(arr)).cast("B")
            for i in range(0, len(mv), 1 << 26):
                hasher.update(mv[i:i + (1 << 26)])
            if hasher.hexdigest() != want:
                problems.append(f"{p}: {what} checksum mismatch (stored {want}, computed "
                                f"{hasher.hexdigest()}): the file is corrupt")
        if h.get("n_records") != self.n or h.get("n_tokens") != self.t:
            problems.append(f"{p}: header counts disagree with the preamble")
        return problems


class Corpus(Sequence):
    """A read-only, memory-mapped corpus of token lists (one file or a sharded directory).

    ``corpus[i]`` is an O(1) zero-copy view of record ``i``; ``corpus[a:b]`` and
    ``corpus[[i, j, ...]]`` (or :meth:`get_batch`) gather many records into a :class:`Ragged`.

    Open with :meth:`open`.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3]], names=["a", "b"])
    >>> c = Corpus.open(p, expect="fp")
    >>> c[1].tolist(), c.get_batch([1, 0]).to_list(), c.lengths.tolist()
    ([3], [[3], [1, 2]], [2, 1])
    """

    def __init__(self, shards: list[_Shard], path: Path, manifest: dict | None = None):
        self.manifest = manifest
        if not shards:
            raise GtokFormatError(f"{path}: a corpus needs at least one shard")
        self.path = path
        self._shards = shards
        first = shards[0].header
        for s in shards[1:]:
            if s.header.get("fingerprint") != first.get("fingerprint"):
                raise UniverseMismatchError(f"{s.path}: shard was tokenized with another universe "
                                            f"than {shards[0].path}")
            if s.dtype != shards[0].dtype or (s.values_dtype != shards[0].values_dtype):
                raise GtokFormatError(f"{s.path}: shard layout differs from {shards[0].path}")
        counts = np.array([s.n for s in shards], dtype=np.int64)
        self._starts = np.zeros(len(shards) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._starts[1:])
        self.header = first
        if len(shards) == 1:
            self._tokens, self._offsets = shards[0].tokens, np.asarray(shards[0].offsets)
        else:
            self._tokens = None
            self._offsets = None

    # -- opening
    @classmethod
    def open(cls, path: str | os.PathLike, *, expect=None, verify: bool = False) -> "Corpus":
        """Open a corpus file or a sharded corpus directory (with ``manifest.json``).

        ``expect`` is a fingerprint string or an object with ``.fingerprint`` (a Tokenizer or
        Universe): a different universe raises :class:`UniverseMismatchError`. ``verify=True``
        runs the full :meth:`verify` (checksums) before returning.
        """
        path = Path(path)
        if path.is_dir():
            mpath = path / MANIFEST
            if not mpath.exists():
                raise GtokFormatError(f"{path}: a directory corpus needs {MANIFEST}")
            try:
                manifest = json.loads(mpath.read_text())
                shard_paths = [path / s["path"] for s in manifest["shards"]]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise GtokFormatError(f"{mpath}: corrupt manifest ({exc})") from None
        else:
            shard_paths, manifest = [path], None
        corpus = cls([_Shard(p) for p in shard_paths], path, manifest)
        if expect is not None:
            want = expect if isinstance(expect, str) else expect.fingerprint
            if corpus.fingerprint != want:
                raise UniverseMismatchError(
                    f"{path}: tokenized with universe {corpus.fingerprint[:12]}…, but the given "
                    f"tokenizer/universe is {want[:12]}…; token ids are specific to their universe")
        if verify:
            corpus.verify(raise_on_error=True)
        return corpus

    def __reduce__(self):
        # pickled by path (e.g. into DataLoader workers): re-mapped there, never copied
        return (Corpus.open, (self.path,))

    # -- metadata
    @property
    def fingerprint(self) -> str:
        return self.header["fingerprint"]

    @property
    def vocab_size(self) -> int:
        return int(self.header["vocab_size"])

    @property
    def special_tokens(self) -> dict:
        return dict(self.header.get("special_tokens", {}))

    @property
    def settings(self) -> dict:
        return dict(self.header.get("settings", {}))

    @property
    def names(self) -> list:
        """Record names (file names, cell barcodes), ``None`` where unnamed."""
        out = []
        for s in self._shards:
            out.extend(s.header.get("names") or [None] * s.n)
        return out

    @property
    def meta(self) -> dict[str, list]:
        """Per-record metadata columns."""
        cols = list(self._shards[0].header.get("meta", {}))
        return {k: sum((s.header.get("meta", {}).get(k, [None] * s.n) for s in self._shards), [])
                for k in cols}

    @property
    def sources(self) -> list[dict]:
        return [src for s in self._shards for src in s.header.get("sources", [])]

    @property
    def has_values(self) -> bool:
        return self._shards[0].values is not None

    @property
    def n_tokens(self) -> int:
        return sum(s.t for s in self._shards)

    @property
    def lengths(self) -> np.ndarray:
        """Number of tokens of every record (int64)."""
        return np.concatenate([np.diff(np.asarray(s.offsets)) for s in self._shards])

    def info(self) -> dict:
        """Header, counts and length statistics (what ``genotok info`` prints)."""
        lens = self.lengths
        h = {k: v for k, v in self.header.items() if k not in ("names", "meta")}
        h.update(path=str(self.path), shards=len(self._shards), n_records=len(self),
                 n_tokens=self.n_tokens, token_dtype=str(self._shards[0].dtype),
                 values_dtype=None if not self.has_values else str(self._shards[0].values_dtype),
                 meta_columns=list(self.meta),
                 length_min=int(lens.min()) if lens.size else 0,
                 length_mean=float(lens.mean()) if lens.size else 0.0,
                 length_max=int(lens.max()) if lens.size else 0)
        run = (self.manifest or {}).get("genotok_run")
        if run:
            h.update(inputs=len(run["inputs"]), failed_inputs=[f["path"] for f in run["failed"]])
        return h

    # -- access
    def __len__(self) -> int:
        return int(self._starts[-1])

    def _locate(self, i: int) -> tuple[_Shard, int]:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"record {i} out of range for a corpus of {n} records")
        k = int(np.searchsorted(self._starts, i, side="right")) - 1
        return self._shards[k], i - int(self._starts[k])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.get_batch(np.arange(len(self))[i])
        if isinstance(i, (list, np.ndarray)):
            return self.get_batch(np.asarray(i))
        s, j = self._locate(int(i))
        return s.tokens[s.offsets[j]:s.offsets[j + 1]]

    def values(self, i: int) -> np.ndarray:
        """The value channel of record ``i`` (a view)."""
        s, j = self._locate(int(i))
        if s.values is None:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        return s.values[s.offsets[j]:s.offsets[j + 1]]

    def get_batch(self, indices, *, values: bool = False) -> Ragged:
        """Many records at once (vectorised gather; ~millions of records per second)."""
        idx = np.asarray(indices, dtype=np.int64).ravel()
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"record index out of range for a corpus of {n} records")
        idx = np.where(idx < 0, idx + n, idx)
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        if len(self._shards) == 1:
            s = self._shards[0]
            data, offs = _gather_rows(s.tokens, self._offsets, idx)
            vals = _gather_rows(s.values, self._offsets, idx)[0] if values else None
            return Ragged(data, offs, vals)
        # several shards: gather per shard, then put the rows back in the asked order
        shard_of = np.searchsorted(self._starts, idx, side="right") - 1
        perm = np.argsort(shard_of, kind="stable")
        datas, valss, lens = [], [], []
        for k in np.unique(shard_of):
            s = self._shards[k]
            local = idx[perm[shard_of[perm] == k]] - self._starts[k]
            d, o = _gather_rows(s.tokens, np.asarray(s.offsets), local)
            datas.append(d)
            lens.append(np.diff(o))
            if values:
                valss.append(_gather_rows(s.values, np.asarray(s.offsets), local)[0])
        coffs = np.zeros(idx.size + 1, np.int64)
        np.cumsum(np.concatenate(lens) if lens else np.zeros(0, np.int64), out=coffs[1:])
        inv = np.empty(idx.size, np.int64)
        inv[perm] = np.arange(idx.size)
        cdata = np.concatenate(datas) if datas else np.zeros(0, self._shards[0].dtype)
        data, offs = _gather_rows(cdata, coffs, inv)
        vals = _gather_rows(np.concatenate(valss), coffs, inv)[0] if values else None
        return Ragged(data, offs, vals)

    def __iter__(self) -> Iterator[np.ndarray]:
        for s in self._shards:
            toks, offs = s.tokens, np.asarray(s.offsets)
            for j in range(s.n):
                yield toks[offs[j]:offs[j + 1]]

    def iter_batches(self, batch_size: int = 1024, *, values: bool = False) -> Iterator[Ragged]:
        """Consecutive records in batches: zero-copy :class:`Ragged` views of the memory map.

        A batch never spans two shards (the last batch of a shard may be shorter).
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        for s in self._shards:
            offs = np.asarray(s.offsets)
            for a in range(0, s.n, batch_size):
                b = min(a + batch_size, s.n)
                lo, hi = int(offs[a]), int(offs[b])
                yield Ragged(s.tokens[lo:hi], offs[a:b + 1] - lo,
                             s.values[lo:hi] if values else None)

    def to_ragged(self, *, values: bool = False) -> Ragged:
        """The whole corpus in memory."""
        return self.get_batch(np.arange(len(self)), values=values)

    # -- integrity
    def verify(self, raise_on_error: bool = False) -> list[str]:
        """Check offsets, ids < vocab_size and checksums of every shard; return the problems."""
        problems = [p for s in self._shards for p in s.verify()]
        if problems and raise_on_error:
            raise GtokFormatError("; ".join(problems))
        return problems

    def _repr_html_(self) -> str:
        from ._html import card, preview

        lens = self.lengths
        names = self.names
        fields = {"records": f"{len(self):,}", "tokens": f"{self.n_tokens:,}",
                  "length min / mean / max": (f"{lens.min()} / {lens.mean():.1f} / {lens.max()}"
                                              if lens.size else "-"),
                  "vocab_size": f"{self.vocab_size:,}", "shards": len(self._shards),
                  "values": str(self._shards[0].values_dtype) if self.has_values else "none",
                  "fingerprint": self.fingerprint[:16] + "…", "path": str(self.path)}
        fields.update({f"setting: {k}": v for k, v in self.settings.items()})
        samples = [(str(names[i] if names[i] is not None else i),
                    preview([str(x) for x in self[i].tolist()])) for i in range(min(3, len(self)))]
        return card("genotok.Corpus", fields, samples)

    def __repr__(self) -> str:
        return (f"Corpus({len(self):,} records, {self.n_tokens:,} tokens, vocab_size={self.vocab_size:,}, "
                f"shards={len(self._shards)}, fingerprint={self.fingerprint[:12]}, path={str(self.path)!r})")


# ---------------------------------------------------------------------------------- shards
def write_manifest(directory: str | os.PathLike, shards: Sequence[str | os.PathLike],
                   extra: dict | None = None) -> Path:
    """Join shard files into one corpus by writing ``directory/manifest.json`` (no data copied).

    Shard paths are stored relative to ``directory``; all shards must share one universe.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for k in range(2):
    ...     with CorpusWriter(os.path.join(d, f"s{k}.gtokc"), vocab_size=9, fingerprint="fp") as w:
    ...         w.append([k])
    >>> _ = write_manifest(d, [os.path.join(d, "s0.gtokc"), os.path.join(d, "s1.gtokc")])
    >>> Corpus.open(d).to_ragged().to_list()
    [[0], [1]]
    """
    from ._io import atomic_write

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    opened = [_Shard(Path(s)) for s in shards]
    Corpus(opened, directory)  # validates: same universe, same layout
    entries = [{"path": os.path.relpath(Path(s).resolve(), directory.resolve()), "n_records": sh.n,
                "n_tokens": sh.t} for s, sh in zip(shards, opened)]
    manifest = {"format": "genotok-corpus-manifest", "version": [MAJOR, MINOR],
                "fingerprint": opened[0].header["fingerprint"], "shards": entries,
                "n_records": sum(e["n_records"] for e in entries), **(extra or {})}
    with atomic_write(directory / MANIFEST, "w") as fh:
        json.dump(manifest, fh, indent=1)
    return directory / MANIFEST


# ---------------------------------------------------------------------------------- interop
def export_gtok_dir(corpus: Corpus, directory: str | os.PathLike) -> list[Path]:
    """Write every record as a gtars ``.gtok`` file (named by record name, else its index).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    >>> [f.name for f in export_gtok_dir(Corpus.open(p), os.path.join(os.path.dirname(p), "g"))]
    ['s1.gtok']
    """
    from .gtok import write_gtok

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    names = corpus.names
    used: set[str] = set()
    out = []
    for i, rec in enumerate(corpus):
        stem = _safe(names[i]) if names[i] is not None else f"record_{i:08d}"
        if stem in used:  # two records with one name must not overwrite each other
            stem = f"{stem}.{i}"
        used.add(stem)
        p = directory / f"{stem}.gtok"
        write_gtok(p, rec)  # width chosen per file, as gtars does
        out.append(p)
    return out


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name) or "_"


def import_gtok_dir(directory: str | os.PathLike, out: str | os.PathLike, *, vocab_size: int,
                    fingerprint: str, **kwargs) -> Path:
    """Pack a directory of gtars ``.gtok`` files into one corpus (record name = file stem).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.gtok import write_gtok
    >>> d = tempfile.mkdtemp()
    >>> write_gtok(os.path.join(d, "a.gtok"), [1, 2])
    >>> c = Corpus.open(import_gtok_dir(d, os.path.join(d, "c.gtokc"), vocab_size=9, fingerprint="fp"))
    >>> c.names, c[0].tolist()
    (['a'], [1, 2])
    """
    from .gtok import read_gtok

    files = sorted(Path(directory).glob("*.gtok"))
    with CorpusWriter(out, vocab_size=vocab_size, fingerprint=fingerprint, **kwargs) as w:
        for f in files:
            w.append(read_gtok(f, mmap=False), name=f.stem)
            w.add_source(f.name, size=f.stat().st_size)
    return Path(out)


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("Parquet export/import needs pyarrow: pip install 'genotok[parquet]'") from None
    return pa, pq


def export_parquet(corpus: Corpus, path: str | os.PathLike, *, row_group_size: int = 65536) -> Path:
    """One row per record: ``tokens`` (list<int32>), ``name`` and the metadata columns.

    That is what geniml's ``Region2VecDataset`` reads, and what pandas, DuckDB and Hugging Face
    datasets open. Streamed in row groups.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    >>> import pyarrow.parquet as pq
    >>> pq.read_table(export_parquet(Corpus.open(p), p + ".parquet")).column("tokens").to_pylist()
    [[1, 2]]
    """
    pa, pq = _pyarrow()
    from ._io import atomic_write

    names, meta = corpus.names, corpus.meta
    info = json.dumps({k: corpus.header.get(k) for k in
                       ("fingerprint", "vocab_size", "special_tokens", "settings")}).encode()
    with atomic_write(path, "wb") as fh:
        writer = None
        for a in range(0, len(corpus), row_group_size):
            b = min(a + row_group_size, len(corpus))
            batch = corpus.get_batch(np.arange(a, b))
            tokens = pa.ListArray.from_arrays(pa.array(batch.offsets.astype(np.int32)),
                                              pa.array(batch.data.astype(np.int32)))
            cols = {"tokens": tokens, "name": pa.array(names[a:b], type=pa.string())}
            for k, v in meta.items():
                cols[k] = pa.array(v[a:b])
            table = pa.table(cols)
            if writer is None:
                writer = pq.ParquetWriter(fh, table.schema.with_metadata({b"genotok": info}))
            writer.write_table(table)
        if writer is None:  # empty corpus: still a valid file with the schema
            schema = pa.schema([("tokens", pa.list_(pa.int32())), ("name", pa.string())])
            writer = pq.ParquetWriter(fh, schema.with_metadata({b"genotok": info}))
        writer.close()
    return Path(path)


def import_parquet(path: str | os.PathLike, out: str | os.PathLike, *, vocab_size: int | None = None,
                   fingerprint: str | None = None, tokens_column: str = "tokens",
                   name_column: str | None = "name", **kwargs) -> Path:
    """Pack a Parquet file with a ``list<int>`` tokens column into a corpus (streamed).

    The universe fingerprint and vocabulary size come from the file's genotok metadata when it
    has some (an exported corpus), else they must be given.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    >>> q = export_parquet(Corpus.open(p), p + ".parquet")
    >>> Corpus.open(import_parquet(q, p + ".back")).to_ragged().to_list()
    [[1, 2]]
    """
    pa, pq = _pyarrow()
    pf = pq.ParquetFile(path)
    stored = (pf.schema_arrow.metadata or {}).get(b"genotok")
    info = json.loads(stored) if stored else {}
    vocab_size = vocab_size or info.get("vocab_size")
    fingerprint = fingerprint or info.get("fingerprint")
    if vocab_size is None or fingerprint is None:
        raise GtokFormatError(f"{path}: no genotok metadata: give vocab_size= and fingerprint=")
    cols = [c for c in pf.schema_arrow.names if c not in (tokens_column, name_column)]
    if tokens_column not in pf.schema_arrow.names:
        raise GtokFormatError(f"{path}: no {tokens_column!r} column (have {pf.schema_arrow.names})")
    kwargs.setdefault("special_tokens", info.get("special_tokens"))
    kwargs.setdefault("settings", info.get("settings"))
    with CorpusWriter(out, vocab_size=vocab_size, fingerprint=fingerprint,
                      metadata_columns=cols, **kwargs) as w:
        for rb in pf.iter_batches():
            lst = rb.column(tokens_column)
            offs = np.asarray(lst.offsets, dtype=np.int64)
            data = np.asarray(lst.values, dtype=np.int64)
            ragged = Ragged(data[offs[0]:offs[-1]], offs - offs[0])
            names = (rb.column(name_column).to_pylist()
                     if name_column and name_column in rb.schema.names else None)
            w.append_batch(ragged, names=names, meta={c: rb.column(c).to_pylist() for c in cols})
        w.add_source(Path(path).name, size=os.path.getsize(path))
    return Path(out)
