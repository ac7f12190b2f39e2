"""The indexed corpus: millions of token lists in one memory-mappable file (or many shards).

Byte layout (little-endian; every section starts on a 64-byte boundary; docs/formats.md has
the full description):

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
72     8        byte offset of the records JSON (names, metadata columns)
80     8        byte length of the records JSON
88     8        checksum of the JSON header bytes (raw digest; checked on open)
96     32       reserved (0)
====== ======== ===========================================================

The JSON header is small and read on open: format, genotok version, creation time, universe
fingerprint, vocabulary size, special token ids, tokenizer settings, metadata column names,
sources (name, size, hash) and the checksums of the data sections. Record names and metadata
columns (one value per record: megabytes for millions of cells) live in the records JSON, read
only when :attr:`Corpus.names` or :attr:`Corpus.meta` is first used.

A corpus may also be a directory holding ``manifest.json`` and shard files: shards written by
separate processes or machines are joined by writing a manifest, never by copying token data.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import math
import os
import shutil
import socket
import struct
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from numba import njit, prange

from ... import _validate
from ..._config import NJIT, NJIT_PARALLEL
from ..._io import atomic_write
from ...errors import GtokFormatError, UniverseMismatchError
from ...ragged import Ragged

MAGIC = b"GTOKCORP"
MAJOR, MINOR = 1, 0
PREAMBLE = struct.Struct("<8sHHBBH9Q8s32x")
assert PREAMBLE.size == 128
ALIGN = 64
VALUE_DTYPES = {0: None, 1: np.dtype("<f4"), 2: np.dtype("<u2")}
_VALUE_CODES = {np.dtype("float32"): 1, np.dtype("uint16"): 2}
MANIFEST = "manifest.json"
#: below this many tokens a batch is gathered on one thread (thread start-up costs more)
PARALLEL_GATHER_MIN = 1 << 21
_COPY_BLOCK = 1 << 24
#: the writer stages appended records and writes them once this many are pending
_FLUSH_TOKENS, _FLUSH_RECORDS = 1 << 20, 4096

#: checksum of new corpora: BLAKE2b with an 8-byte digest, from the standard library, so that
#: every install can verify every new corpus (``xxh3_64`` corpora, written by genotok 0.x when
#: xxhash was installed, still open; verifying them needs xxhash)
CHECKSUM = "blake2b_64"
CHECKSUMS = ("blake2b_64", "xxh3_64")
_XXHASH_HINT = "pip install xxhash"


def _xxhash():
    """The xxhash module, or None when it is not installed (looked up at each call)."""
    try:
        import xxhash
    except ImportError:
        return None
    return xxhash


def _can_check(name: str) -> bool:
    """Whether this install can compute checksum ``name`` (xxh3_64 needs xxhash)."""
    return name != "xxh3_64" or _xxhash() is not None


def _new_hasher(name: str):
    """A streaming hasher for the section checksums (``blake2b_64`` or ``xxh3_64``)."""
    if name == "blake2b_64":
        return hashlib.blake2b(digest_size=8)
    if name == "xxh3_64":
        xx = _xxhash()
        if xx is None:
            raise GtokFormatError(f"this corpus was checksummed with xxh3_64, which needs the xxhash "
                                  f"package to be checked: {_XXHASH_HINT}")
        return xx.xxh3_64()
    raise GtokFormatError(f"unknown checksum algorithm {str(name)[:40]!r} (expected one of "
                          f"{', '.join(CHECKSUMS)})")


def _digest(data, name: str) -> bytes:
    h = _new_hasher(name)
    mv = memoryview(data).cast("B")
    for i in range(0, len(mv), _COPY_BLOCK):
        h.update(mv[i:i + _COPY_BLOCK])
    return h.digest()


#: temporary names: ``.<target name>.writing-<host>-<pid>-<random>.tmp`` for a CorpusWriter,
#: ``.<directory name>.exporting-<host>-<pid>-<random>.tmp`` for export_gtok_dir. A writer
#: killed with SIGKILL leaves one behind; the next writer of the same target removes those
#: whose process is gone (same host, pid no longer running). Other hosts' files are left alone.
_WRITING, _EXPORTING = ".writing-", ".exporting-"


def _host() -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in socket.gethostname())[:64] or "host"


def _make_temp(parent: Path, prefix: str) -> tuple[int, str]:
    """A temporary file ``<prefix><host>-<pid>-<random>.tmp`` with a plain open's permissions."""
    fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{_host()}-{os.getpid()}-", suffix=".tmp",
                               dir=parent)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    return fd, tmp


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _clean_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove temporary files/directories ``<prefix><host>-<pid>-*.tmp`` of dead local processes."""
    removed = []
    host = _host()
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        fields = name[len(prefix):-4].rsplit("-", 2)
        if len(fields) != 3 or fields[0] != host or not fields[1].isdigit():
            continue
        pid = int(fields[1])
        if pid == os.getpid() or _alive(pid):
            continue
        p = parent / name
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
    return removed


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _pad(n: int) -> int:
    return (-n) % ALIGN


def _token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65536), else uint32."""
    return np.dtype("<u2") if vocab_size <= 65536 else np.dtype("<u4")


def _genotok_version() -> str:
    from ..._version import __version__

    return __version__


def _json_scalar(x, column: str, record: int):
    """``x`` as a JSON scalar (numpy scalars unwrapped, NaN -> None), else a clear error."""
    if isinstance(x, np.generic):
        x = x.item()
    if x is None or isinstance(x, (str, bool, int)):
        return x
    if isinstance(x, float):
        return None if math.isnan(x) else x
    raise GtokFormatError(f"metadata column {column!r}, record {record}: {type(x).__name__} "
                          f"{x!r} is not a JSON scalar (str, int, float, bool or None); convert it")


def _json_column(col, column: str, first_record: int) -> list:
    if isinstance(col, np.ndarray) and col.dtype.kind in "biuU":  # tolist gives plain scalars
        return col.tolist()
    items = col.tolist() if isinstance(col, np.ndarray) else list(col)
    return [_json_scalar(x, column, first_record + k) for k, x in enumerate(items)]


def _blocks(fh) -> Iterator[bytes]:
    """The content of a file just written (from 0 to the current position), in blocks.

    Each read asks for no more than what is left: ``read(n)`` allocates ``n`` bytes first.
    """
    left = fh.tell()
    fh.seek(0)
    while left > 0:
        block = fh.read(min(_COPY_BLOCK, left))
        if not block:
            return
        left -= len(block)
        yield block


class _JsonListSpool:
    """A JSON list written piece by piece to an anonymous temporary file (bounded memory)."""

    def __init__(self, directory: Path):
        self.fh = tempfile.TemporaryFile(dir=directory)  # vanishes with the process
        self.empty = True

    def extend(self, items: list) -> None:
        if not items:
            return
        text = json.dumps(items, separators=(",", ":"), allow_nan=False)[1:-1]
        self.fh.write((text if self.empty else "," + text).encode())
        self.empty = False

    def copy_to(self, out, hasher) -> None:
        for block in _blocks(self.fh):
            out.write(block)
            hasher.update(block)

    def close(self) -> None:
        self.fh.close()


# ---------------------------------------------------------------------------------- writing
class CorpusWriter:
    """Stream records into a corpus file without holding the corpus in memory.

    Tokens go straight into a temporary file beside ``path``; values, names and metadata go
    to anonymous temporary files; only the record lengths (8 bytes each) stay in memory. The
    file is renamed into place by :meth:`close`. An exception inside a ``with`` block (or
    :meth:`abort`) removes it, so an interrupted write leaves nothing that looks valid.

    Parameters
    ----------
    path
        The corpus file to create.
    vocab_size, fingerprint
        Of the tokenizer; ids >= vocab_size are refused. Take both (and the special tokens and
        settings) from a Tokenizer with :meth:`for_tokenizer`.
    special_tokens, settings
        Stored as metadata (special token ids; tokenizer settings).
    values_dtype
        ``None`` (no value channel), ``"float32"`` or ``"uint16"``.
    metadata_columns
        Names of per-record metadata columns (JSON scalars) given to ``append(meta=...)``.
    overwrite
        Replace an existing file (only when :meth:`close` succeeds).
    extra
        Any other JSON metadata to keep in the header.

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
                 values_dtype=None, metadata_columns: Sequence[str] | None = None,
                 overwrite: bool = False, extra: dict | None = None):
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path} is a directory; give a corpus file path")
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} exists; pass overwrite=True to replace it")
        if int(vocab_size) < 1 or int(vocab_size) > 2**32:
            raise ValueError(f"vocab_size must be within 1..2**32, got {vocab_size}")
        self.vocab_size = int(vocab_size)
        self.dtype = _token_dtype(self.vocab_size)
        self.values_dtype = None if values_dtype is None else np.dtype(values_dtype)
        if self.values_dtype is not None and self.values_dtype not in _VALUE_CODES:
            raise ValueError(f"values_dtype must be float32 or uint16, got {values_dtype!r}")
        self.meta_columns = [str(k) for k in (metadata_columns or ())]
        if len(set(self.meta_columns)) != len(self.meta_columns):
            raise ValueError(f"metadata_columns has duplicates: {self.meta_columns}")
        self.header = {
            "format": "genotok-corpus", "version": [MAJOR, MINOR],
            "genotok_version": _genotok_version(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "fingerprint": str(fingerprint), "vocab_size": self.vocab_size,
            "special_tokens": dict(special_tokens or {}), "settings": dict(settings or {}),
            "checksum": CHECKSUM, "meta_columns": self.meta_columns, "sources": [],
            "extra": dict(extra or {}),
        }
        json.dumps(self.header, allow_nan=False)  # refuse unserialisable metadata now, not at close
        bad = {k: v for k, v in self.header["special_tokens"].items()
               if not (_is_int(v) and 0 <= v < self.vocab_size)}
        if bad:  # a reader refuses such a header: refuse it before writing anything
            raise ValueError(f"special_tokens must map names to ids below vocab_size "
                             f"{self.vocab_size}, got {bad}")
        self._lengths = np.zeros(1024, dtype=np.int64)
        self._n = 0
        self._n_tokens = 0
        self._any_named = False
        self._pending: list = []
        self._pending_tokens = 0
        self._closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._spools: list = []
        _clean_stale(self.path.parent, f".{self.path.name}{_WRITING}")
        fd, self._tmp = _make_temp(self.path.parent, f".{self.path.name}{_WRITING}")
        try:
            self._fh = os.fdopen(fd, "w+b")
            self._fh.write(b"\0" * PREAMBLE.size)  # a zero preamble: not a corpus until close()
            self._tok_hash = _new_hasher(self.header["checksum"])
            self._val_hash = _new_hasher(self.header["checksum"])
            self._vfh = None
            if self.values_dtype is not None:
                self._vfh = tempfile.TemporaryFile(dir=self.path.parent)
                self._spools.append(self._vfh)
            self._names = _JsonListSpool(self.path.parent)
            self._meta = {k: _JsonListSpool(self.path.parent) for k in self.meta_columns}
            self._spools += [self._names, *self._meta.values()]
        except BaseException:
            self.abort()
            raise

    @classmethod
    def for_tokenizer(cls, path, tokenizer, **kwargs) -> "CorpusWriter":
        """A writer carrying a Tokenizer's fingerprint, vocabulary size, specials and settings.

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok import Tokenizer
        >>> tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
        >>> with CorpusWriter.for_tokenizer(os.path.join(tempfile.mkdtemp(), "c"), tok) as w:
        ...     w.append(tok.encode(["chr1:50-150"]))
        >>> w.vocab_size
        9
        """
        u = tokenizer.universe
        return cls(path, vocab_size=tokenizer.vocab_size, fingerprint=tokenizer.fingerprint,
                   special_tokens=u.special_token_ids, settings=tokenizer.settings.as_dict(),
                   **kwargs)

    @property
    def n_records(self) -> int:
        """Records appended so far."""
        return self._n

    # -- appending
    def append(self, ids, name: str | None = None, values=None, meta: dict | None = None) -> None:
        """Append one record: token ids (and its name, values aligned with the ids, metadata).

        Examples
        --------
        >>> import tempfile, os
        >>> with CorpusWriter(os.path.join(tempfile.mkdtemp(), "c"), vocab_size=5,
        ...                   fingerprint="fp") as w:
        ...     w.append([1, 2], name="cell1")
        >>> w.n_records
        1
        """
        a = np.asarray(ids)
        if a.ndim != 1:
            raise ValueError(f"record {self._n}: ids must be 1-D, got shape {a.shape}")
        self._append(a, np.array([0, a.size], dtype=np.int64),
                     None if name is None else [name],
                     None if values is None else np.asarray(values).ravel(),
                     None if meta is None else {k: [v] for k, v in meta.items()})

    def append_batch(self, rows, names: Sequence[str | None] | None = None, values=None,
                     meta: dict | None = None) -> None:
        """Append many records: a :class:`Ragged` (its ``values`` used unless given) or a list.

        ``values`` is a flat array aligned with all the ids, or one sequence per record;
        ``meta`` maps each metadata column to one value per record.

        Examples
        --------
        >>> import tempfile, os
        >>> with CorpusWriter(os.path.join(tempfile.mkdtemp(), "c"), vocab_size=5,
        ...                   fingerprint="fp", metadata_columns=["kind"]) as w:
        ...     w.append_batch([[1, 2], [], [4]], names=["a", "b", "c"],
        ...                    meta={"kind": ["x", "y", "x"]})
        >>> w.n_records
        3
        """
        if isinstance(rows, Ragged):
            data, offsets = rows.data, rows.offsets
            if values is None:
                values = rows.values
        else:
            data, offsets = self._flatten(rows)
        if values is not None and not isinstance(values, np.ndarray):  # one sequence per record
            parts = [np.asarray(v).ravel() for v in values]
            values = np.concatenate(parts) if parts else np.zeros(0)
        self._append(np.asarray(data), np.asarray(offsets, dtype=np.int64), names, values, meta)

    def _flatten(self, rows) -> tuple[np.ndarray, np.ndarray]:
        parts = []
        for k, r in enumerate(rows):
            a = np.asarray(r)
            if a.ndim != 1:
                raise ValueError(f"record {self._n + k}: ids must be 1-D, got shape {a.shape}")
            if a.size and a.dtype.kind not in "iu":
                raise GtokFormatError(f"{self.path}: record {self._n + k}: token ids must be "
                                      f"integers, got dtype {a.dtype}")
            parts.append(a.astype(np.int64, copy=False) if a.size else np.zeros(0, np.int64))
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), offsets

    def _check_ids(self, data: np.ndarray, offsets: np.ndarray) -> None:
        if not data.size:
            return
        if data.dtype.kind not in "iu":
            rec = self._n + int(np.searchsorted(offsets, 0, side="right")) - 1
            raise GtokFormatError(f"{self.path}: record {rec}: token ids must be integers, got "
                                  f"dtype {data.dtype}")
        lo, hi = data.min(), data.max()
        if lo < 0 or hi >= self.vocab_size:
            bad = int(np.flatnonzero((data < 0) | (data >= self.vocab_size))[0])
            rec = self._n + int(np.searchsorted(offsets, bad, side="right")) - 1
            raise GtokFormatError(f"{self.path}: record {rec} has id {int(data[bad])}, outside the "
                                  f"vocabulary (0..{self.vocab_size - 1}); was it tokenized with "
                                  "another universe?")

    def _check_values(self, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        v = np.asarray(values)
        if v.size and (v.dtype.kind not in "biuf"):
            raise GtokFormatError(f"{self.path}: values must be numbers, got dtype {v.dtype}")
        where = None
        if self.values_dtype == np.uint16 and v.size:
            ok = (v >= 0) & (v <= 65535)
            if v.dtype.kind == "f":
                ok &= v == np.floor(v)
            if not ok.all():
                where = int(np.flatnonzero(~ok)[0])
                why = "is not a whole number within 0..65535 (use values_dtype='float32')"
        elif v.size and v.dtype.kind == "f" and v.dtype.itemsize > 4:
            big = np.isfinite(v) & (np.abs(v) > np.finfo(np.float32).max)
            if big.any():
                where = int(np.flatnonzero(big)[0])
                why = "overflows float32"
        if where is not None:
            rec = self._n + int(np.searchsorted(offsets, where, side="right")) - 1
            raise GtokFormatError(f"{self.path}: record {rec} has value {v[where]!r}, which {why}")
        return np.ascontiguousarray(v, dtype=self.values_dtype)

    def _append(self, data, offsets, names, values, meta) -> None:
        if self._closed:
            raise ValueError(f"{self.path}: this writer is closed")
        n = offsets.size - 1
        if offsets.size < 1 or offsets[0] != 0 or offsets[-1] != data.shape[0]:
            raise ValueError("offsets must start at 0 and end at the number of ids")
        self._check_ids(data, offsets)
        if (values is None) != (self.values_dtype is None):
            raise ValueError("values must be given exactly when the writer has values_dtype "
                             f"(it is {self.values_dtype})")
        if values is not None:
            if np.asarray(values).size != data.size:
                raise ValueError(f"values must be aligned with the token ids ({np.asarray(values).size} "
                                 f"values for {data.size} ids)")
            values = self._check_values(values, offsets)
        if names is not None:
            names = names.tolist() if isinstance(names, np.ndarray) else list(names)
            if len(names) != n:
                raise ValueError(f"{len(names)} names for {n} records")
            names = [None if x is None else str(x) for x in names]
        meta = dict(meta or {})
        unknown = set(meta) - set(self.meta_columns)
        if unknown:
            raise ValueError(f"unknown metadata column(s) {sorted(unknown)}; declare them in "
                             f"metadata_columns (have {self.meta_columns})")
        cols = {}
        for k in self.meta_columns:
            col = meta.get(k)
            cols[k] = [None] * n if col is None else _json_column(col, k, self._n)
            if len(cols[k]) != n:
                raise ValueError(f"metadata column {k!r}: {len(cols[k])} values for {n} records")
        # everything is valid: stage, and write in blocks (cheap one-record appends)
        if self._n + n > self._lengths.size:
            grown = np.zeros(max(2 * self._lengths.size, self._n + n), dtype=np.int64)
            grown[:self._n] = self._lengths[:self._n]
            self._lengths = grown
        np.subtract(offsets[1:], offsets[:-1], out=self._lengths[self._n:self._n + n])
        # copies: the caller may reuse its buffers before the block is written
        self._pending.append((np.array(data, dtype=self.dtype), None if values is None else values.copy(),
                              [None] * n if names is None else names, cols))
        self._pending_tokens += int(data.shape[0])
        self._n += n
        self._n_tokens += int(data.shape[0])
        if self._pending_tokens >= _FLUSH_TOKENS or len(self._pending) >= _FLUSH_RECORDS:
            self._flush()

    def _flush(self) -> None:
        """Write the staged records to the temporary files."""
        if not self._pending:
            return
        pending, self._pending, self._pending_tokens = self._pending, [], 0
        data = pending[0][0] if len(pending) == 1 else np.concatenate([p[0] for p in pending])
        buf = memoryview(data).cast("B")
        self._fh.write(buf)
        self._tok_hash.update(buf)
        if self._vfh is not None:
            vals = pending[0][1] if len(pending) == 1 else np.concatenate([p[1] for p in pending])
            vb = memoryview(vals).cast("B")
            self._vfh.write(vb)
            self._val_hash.update(vb)
        names = [x for p in pending for x in p[2]]
        self._names.extend(names)
        self._any_named = self._any_named or any(x is not None for x in names)
        for k, spool in self._meta.items():
            spool.extend([x for p in pending for x in p[3][k]])

    def add_source(self, name: str | os.PathLike, size: int | None = None,
                   sha256: str | None = None, **info) -> None:
        """Record an input this corpus was made from (for audits and reproduction).

        When ``name`` is an existing file and ``size`` is not given, its size is filled in.

        Examples
        --------
        >>> import tempfile, os
        >>> with CorpusWriter(os.path.join(tempfile.mkdtemp(), "c"), vocab_size=5,
        ...                   fingerprint="fp") as w:
        ...     w.add_source("peaks.bed", size=1234, sha256="ab" * 32)
        >>> w.header["sources"][0]["size"]
        1234
        """
        if size is None and os.path.isfile(name):
            size = os.path.getsize(name)
        entry = {"name": os.fspath(name), "size": size, "sha256": sha256, **info}
        json.dumps(entry, allow_nan=False)
        self.header["sources"].append(entry)

    # -- finishing
    def close(self) -> Path:
        """Write the index and metadata, then rename the file into place; return the path."""
        if self._closed:
            return self.path
        try:
            self._finish()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._release()
        self._closed = True
        return self.path

    def _finish(self) -> None:
        self._flush()
        fh = self._fh
        tokens_off = PREAMBLE.size
        fh.write(b"\0" * _pad(fh.tell()))
        values_off = 0
        if self._vfh is not None:
            values_off = fh.tell()
            for block in _blocks(self._vfh):
                fh.write(block)
            fh.write(b"\0" * _pad(fh.tell()))
        offsets = np.zeros(self._n + 1, dtype="<i8")
        np.cumsum(self._lengths[:self._n], out=offsets[1:])
        offsets_off = fh.tell()
        ob = memoryview(offsets).cast("B")
        fh.write(ob)
        fh.write(b"\0" * _pad(fh.tell()))
        algo = self.header["checksum"]
        off_hash = _new_hasher(algo)
        off_hash.update(ob)
        # records JSON: {"names": [...] | null, "meta": {column: [...]}}
        rec_off = fh.tell()
        rec_hash = _new_hasher(algo)

        def put(b: bytes) -> None:
            fh.write(b)
            rec_hash.update(b)

        put(b'{"names":')
        if self._any_named:
            put(b"[")
            self._names.copy_to(fh, rec_hash)
            put(b"]")
        else:
            put(b"null")
        put(b',"meta":{')
        for j, (k, spool) in enumerate(self._meta.items()):
            put((b"," if j else b"") + json.dumps(k).encode() + b":[")
            spool.copy_to(fh, rec_hash)
            put(b"]")
        put(b"}}")
        rec_len = fh.tell() - rec_off
        fh.write(b"\0" * _pad(fh.tell()))
        header = dict(self.header)
        header.update(n_records=self._n, n_tokens=self._n_tokens, checksums={
            "tokens": self._tok_hash.hexdigest(), "offsets": off_hash.hexdigest(),
            "values": self._val_hash.hexdigest() if self._vfh is not None else None,
            "records": rec_hash.hexdigest()})
        jb = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
        json_off = fh.tell()
        fh.write(jb)
        fh.seek(0)
        fh.write(PREAMBLE.pack(MAGIC, MAJOR, MINOR, self.dtype.itemsize,
                               _VALUE_CODES[self.values_dtype] if self.values_dtype else 0, 0,
                               self._n, self._n_tokens, tokens_off, values_off, offsets_off,
                               json_off, len(jb), rec_off, rec_len, _digest(jb, algo)))
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()

    def _release(self) -> None:
        for s in self._spools:
            with contextlib.suppress(OSError, ValueError):
                s.close()
        self._spools = []

    def abort(self) -> None:
        """Discard everything written so far (no file is left behind); never raises.

        On a full disk, closing the temporary file cannot write its buffered bytes: that
        error is dropped with the file (:meth:`close` has already raised the first one).
        """
        if self._closed:
            return
        self._closed = True
        fh = getattr(self, "_fh", None)
        if fh is not None:
            with contextlib.suppress(OSError, ValueError):
                fh.close()
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._release()

    def __enter__(self) -> "CorpusWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (f"CorpusWriter({str(self.path)!r}, {self._n:,} records, {self._n_tokens:,} tokens, "
                f"{state})")


# ---------------------------------------------------------------------------------- reading
@njit(**NJIT)
def _gather(tokens, offsets, idx, out_offsets, out):
    for k in range(idx.size):
        a = offsets[idx[k]]
        o = out_offsets[k]
        out[o:o + offsets[idx[k] + 1] - a] = tokens[a:offsets[idx[k] + 1]]


@njit(**NJIT_PARALLEL)
def _gather_parallel(tokens, offsets, idx, out_offsets, out):
    for k in prange(idx.size):
        a = offsets[idx[k]]
        o = out_offsets[k]
        out[o:o + offsets[idx[k] + 1] - a] = tokens[a:offsets[idx[k] + 1]]


def _gather_rows(tokens: np.ndarray, offsets: np.ndarray, idx: np.ndarray, where: str = "corpus",
                 check: bool = True):
    """Rows ``idx`` of a (tokens, offsets) ragged pair as a new flat array + offsets.

    ``idx`` must already be within ``0..len(offsets) - 2`` (the caller validates). With
    ``check`` the rows' offsets are checked here (one vectorised pass over the batch) before
    the kernel copies: a corpus opened with ``trusted=True`` may hold any offsets, and numba
    checks no bounds. Offsets validated on open need no second look (``check=False``).
    """
    starts, ends = offsets[idx], offsets[idx + 1]
    lengths = ends - starts
    if check and idx.size and (starts.min() < 0 or lengths.min() < 0
                               or ends.max() > tokens.shape[0]):
        bad = int(np.flatnonzero((starts < 0) | (lengths < 0) | (ends > tokens.shape[0]))[0])
        raise GtokFormatError(f"{where}: corrupt record offsets at record {int(idx[bad])} "
                              f"([{int(starts[bad])}, {int(ends[bad])}) for {tokens.shape[0]} "
                              "tokens): the file is corrupt; run verify()")
    out_offsets = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=tokens.dtype)
    if out.size:
        kernel = _gather_parallel if out.size >= PARALLEL_GATHER_MIN else _gather
        kernel(np.asarray(tokens), np.asarray(offsets), idx, out_offsets, out)
    return out, out_offsets


_HEX16 = frozenset("0123456789abcdef")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_hex_digest(x) -> bool:
    return isinstance(x, str) and len(x) == 16 and set(x) <= _HEX16


def _header_problems(h: dict, n: int, t: int, version: tuple[int, int], values: bool,
                     records: bool) -> list[str]:
    """Every header field type-checked against the preamble; a list of problems (empty: fine)."""
    out = []
    if "format" in h and h["format"] != "genotok-corpus":
        out.append(f"format is {str(h['format'])[:40]!r}, expected 'genotok-corpus'")
    if "version" in h and (not isinstance(h["version"], list) or len(h["version"]) != 2
                           or tuple(h["version"]) != version):
        out.append(f"version {str(h['version'])[:40]} disagrees with the preamble's {list(version)}")
    if not isinstance(h.get("fingerprint"), str):
        out.append("fingerprint is missing or not a string")
    vs = h.get("vocab_size")
    if not _is_int(vs) or not 1 <= vs <= 2**32:
        out.append(f"vocab_size {str(vs)[:40]} is not a whole number within 1..2**32")
    if h.get("n_records") != n or h.get("n_tokens") != t or not _is_int(h.get("n_records")) \
            or not _is_int(h.get("n_tokens")):
        out.append(f"the header counts ({str(h.get('n_records'))[:20]} records, "
                   f"{str(h.get('n_tokens'))[:20]} tokens) disagree with the preamble ({n}, {t})")
    if h.get("checksum") not in CHECKSUMS:
        out.append(f"checksum algorithm {str(h.get('checksum'))[:40]!r} is missing or unknown "
                   f"(expected one of {', '.join(CHECKSUMS)})")
    sums = h.get("checksums")
    if not isinstance(sums, dict):
        out.append("the integrity section (checksums) is missing or not an object")
    else:
        need = ["tokens", "offsets"] + (["values"] if values else []) + (["records"] if records else [])
        for k in need:
            if not _is_hex_digest(sums.get(k)):
                out.append(f"checksums.{k} is missing or not a 16-digit hex digest")
    for key, kind in (("special_tokens", dict), ("settings", dict), ("meta_columns", list),
                      ("sources", list), ("extra", dict)):
        if key in h and not isinstance(h[key], kind):
            out.append(f"{key} is not a JSON {'object' if kind is dict else 'list'}")
    if isinstance(h.get("special_tokens"), dict) and _is_int(vs) and \
            not all(_is_int(v) and 0 <= v < vs for v in h["special_tokens"].values()):
        out.append("special_tokens holds an id that is not a whole number below vocab_size")
    for key in ("created", "genotok_version"):
        if key in h and not isinstance(h[key], str):
            out.append(f"{key} is not a string")
    if isinstance(h.get("sources"), list) and not all(isinstance(x, dict) for x in h["sources"]):
        out.append("sources holds an entry that is not a JSON object")
    if isinstance(h.get("meta_columns"), list) and not all(isinstance(k, str) for k in h["meta_columns"]):
        out.append("meta_columns holds a name that is not a string")
    return out


def _json_load(raw, what: str, p) -> object:
    """Parse JSON read from a file; a clear error that never quotes the file's bytes."""
    try:
        return json.loads(bytes(raw))
    except UnicodeDecodeError:
        raise GtokFormatError(f"{p}: corrupt {what}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise GtokFormatError(f"{p}: corrupt {what}: not valid JSON ({exc.msg} at line "
                              f"{exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise GtokFormatError(f"{p}: corrupt {what}: not valid JSON ({type(exc).__name__})") from None


class _Shard:
    """One corpus file, memory-mapped once; checked on open (see :meth:`Corpus.open`)."""

    def __init__(self, path: Path, *, trusted: bool = False, nofollow: bool = False):
        from ..gtok import open_regular

        self.path = path
        p = str(path)
        if os.path.isdir(p) and not nofollow:
            raise GtokFormatError(f"{p}: is a directory without {MANIFEST}")
        fd, st = open_regular(p, "corpus file", nofollow=nofollow)
        with os.fdopen(fd, "rb") as fh:  # every byte is read through this checked descriptor
            self._open(fh, p, st, trusted)

    def _open(self, fh, p: str, st: os.stat_result, trusted: bool) -> None:
        size = st.st_size
        self.ident = (st.st_dev, st.st_ino)
        pre = os.pread(fh.fileno(), PREAMBLE.size, 0)
        if len(pre) < PREAMBLE.size or pre[:8] != MAGIC:  # never quote the bytes of the file
            raise GtokFormatError(f"{p}: not a genotok corpus (bad magic: it does not start "
                                  f"with {MAGIC!r}; an interrupted write or another file type)")
        (_, major, minor, width, vcode, _, n, t, tok_off, val_off, off_off, json_off,
         json_len, rec_off, rec_len, head_sum) = PREAMBLE.unpack(pre)
        if major > MAJOR:
            raise GtokFormatError(f"{p}: corpus format {major}.{minor} is newer than this genotok "
                                  f"reads ({MAJOR}.{MINOR}); upgrade genotok")
        if width not in (2, 4) or vcode not in VALUE_DTYPES:
            raise GtokFormatError(f"{p}: corrupt preamble (token width {width}, value code {vcode})")
        if major < 1:
            raise GtokFormatError(f"{p}: corrupt preamble (format version {major}.{minor})")
        self.version = (major, minor)
        self.dtype = np.dtype("<u2") if width == 2 else np.dtype("<u4")
        self.values_dtype = VALUE_DTYPES[vcode]
        sections = [(tok_off, t * width, "tokens"), (off_off, (n + 1) * 8, "offsets"),
                    (json_off, json_len, "header")]
        if self.values_dtype is not None:
            sections.append((val_off, t * self.values_dtype.itemsize, "values"))
        if rec_off:
            sections.append((rec_off, rec_len, "records"))
        for off, length, what in sections:  # the size check: a truncated file fails here
            if off < PREAMBLE.size or off + length > size:
                raise GtokFormatError(f"{p}: truncated or corrupt: the {what} section "
                                      f"[{off}, {off + length}) lies outside the file ({size} bytes)")
        self.head_sum = head_sum
        raw_header = os.pread(fh.fileno(), json_len, json_off)
        self.header = _json_load(raw_header, "metadata header", p)
        if not isinstance(self.header, dict):
            raise GtokFormatError(f"{p}: corrupt metadata header (not a JSON object)")
        algo = self.header.get("checksum")
        self.algo = algo
        if head_sum != bytes(8):
            if algo not in CHECKSUMS:
                raise GtokFormatError(f"{p}: corrupt metadata header (checksum algorithm "
                                      f"{str(algo)[:40]!r} is missing or unknown)")
            if _can_check(algo) and head_sum != _digest(raw_header, algo):
                raise GtokFormatError(f"{p}: metadata header checksum mismatch: the file is corrupt")
        if not rec_off and "records" in (self.header.get("checksums") or {}):
            raise GtokFormatError(f"{p}: corrupt preamble: the records section (names, metadata) "
                                  "is missing")
        problems = _header_problems(self.header, n, t, self.version, self.values_dtype is not None,
                                    bool(rec_off))
        if problems:
            raise GtokFormatError(f"{p}: corrupt metadata header: " + "; ".join(problems))
        self.n, self.t = n, t
        self.size = size
        self.trusted = trusted
        self._layout = sorted((off, length) for off, length, _ in sections)
        self._rec = (rec_off, rec_len)
        self._records: dict | None = None
        # one read-only mapping of the whole file; every section is a view into it
        self._raw = np.memmap(fh, dtype=np.uint8, mode="r", shape=(size,))
        self.tokens = self._raw[tok_off:tok_off + t * width].view(self.dtype)
        self.offsets = np.asarray(self._raw[off_off:off_off + (n + 1) * 8].view("<i8"))
        self.values = None
        if self.values_dtype is not None:
            self.values = self._raw[val_off:val_off + t * self.values_dtype.itemsize].view(
                self.values_dtype)
        if trusted:  # the cheap open: the index agrees with the payload size
            if self.offsets[0] != 0 or self.offsets[-1] != t:
                raise GtokFormatError(f"{p}: corrupt record offsets (first {int(self.offsets[0])}, "
                                      f"last {int(self.offsets[-1])}, expected 0 and {t}); run verify()")
            return
        # the safe open: every offset in bounds and non-decreasing, and the section's checksum
        try:
            _validate.offsets(self.offsets, t, f"{p}: corrupt record offsets", n_rows=n,
                              what="the offsets section", error=GtokFormatError)
        except GtokFormatError as exc:
            raise GtokFormatError(f"{exc}; the file is corrupt: re-create it (verify() lists every "
                                  "problem of a file opened with trusted=True)") from None
        want = self.header["checksums"]["offsets"]
        if _can_check(algo) and _digest(self.offsets, algo).hex() != want:
            raise GtokFormatError(f"{p}: offsets checksum mismatch (stored {want}): record "
                                  "boundaries are corrupt; re-create the file")

    def bounds(self, j: int) -> tuple[int, int]:
        """Token range of local record ``j``, checked (cheap) even for a trusted open."""
        a, b = int(self.offsets[j]), int(self.offsets[j + 1])
        if not 0 <= a <= b <= self.t:
            raise GtokFormatError(f"{self.path}: corrupt record offsets at record {j} ([{a}, {b}) "
                                  f"for {self.t} tokens): the file is corrupt; run verify()")
        return a, b

    def check_offsets(self, ja: int, jb: int) -> None:
        """For a trusted open: offsets ``ja..jb`` non-decreasing within ``[0, t]`` (one pass)."""
        if not self.trusted or jb <= ja:
            return
        o = self.offsets[ja:jb + 1]
        if o[0] < 0 or o[-1] > self.t or np.any(o[1:] < o[:-1]):
            raise GtokFormatError(f"{self.path}: corrupt record offsets in records {ja}..{jb}: the "
                                  "file is corrupt; run verify()")

    @property
    def meta_columns(self) -> list[str]:
        if "meta_columns" in self.header:
            return list(self.header["meta_columns"])
        meta = self.header.get("meta")  # format 1.0 development files: in the header
        return list(meta) if isinstance(meta, dict) else []

    def _section(self, off: int, length: int) -> np.ndarray:
        return self._raw[off:off + length]

    @property
    def records(self) -> dict:
        """Names and metadata columns (read on first use), type-checked."""
        if self._records is None:
            rec_off, rec_len = self._rec
            if not rec_off:  # files written before the records section kept them in the header
                rec = {"names": self.header.get("names"), "meta": self.header.get("meta") or {}}
            else:
                rec = _json_load(self._section(rec_off, rec_len), "records section (names, "
                                 "metadata)", self.path)
            problem = _records_problem(rec, self.n)
            if problem:
                raise GtokFormatError(f"{self.path}: corrupt records section: {problem}; run verify()")
            self._records = {"names": rec.get("names"), "meta": rec.get("meta") or {}}
        return self._records

    def verify(self) -> list[str]:
        problems = []
        h, p, offs = self.header, self.path, self.offsets
        if self.head_sum == bytes(8):
            problems.append(f"{p}: the metadata header has no digest (erased, or written by an "
                            "early development version): its integrity cannot be checked; "
                            "re-create the corpus")
        if not _can_check(self.algo):
            problems.append(f"{p}: checksummed with {self.algo}, which this install cannot compute: "
                            f"{_XXHASH_HINT} to verify it (opening and reading work without it)")
        if offs[0] != 0 or offs[-1] != self.t or np.any(offs[1:] < offs[:-1]):
            steps = np.flatnonzero(offs[1:] < offs[:-1])
            where = f" at record {int(steps[0])}" if steps.size else ""
            problems.append(f"{p}: record offsets decrease{where} or leave [0, {self.t}]")
        vs = h["vocab_size"]
        top = int(self.tokens.max()) if self.t else -1
        if top >= vs:
            problems.append(f"{p}: token id {top} >= vocab_size {vs}")
        if self.dtype.itemsize != _token_dtype(vs).itemsize:
            problems.append(f"{p}: token width {self.dtype.itemsize} does not match vocab_size {vs}")
        sums = h["checksums"]
        sections = [("tokens", self.tokens), ("offsets", offs), ("values", self.values)]
        if self._rec[0]:
            sections.append(("records", self._section(*self._rec)))
        if _can_check(self.algo):
            for what, arr in sections:
                if arr is None:
                    continue
                got = _digest(np.ascontiguousarray(arr), self.algo).hex()
                if got != sums[what]:
                    problems.append(f"{p}: {what} checksum mismatch (stored {sums[what]}, computed "
                                    f"{got}): the file is corrupt")
        problems += self._verify_layout()
        if not any("records checksum" in x for x in problems):
            try:
                self.records  # noqa: B018 - parsed and type-checked on first use
            except GtokFormatError as exc:
                problems.append(str(exc))
        return problems

    def _verify_layout(self) -> list[str]:
        """Sections do not overlap; padding and reserved bytes are zero; nothing trails."""
        raw = self._raw
        pre = bytes(raw[:PREAMBLE.size])
        if pre[14:16] != bytes(2) or pre[96:128] != bytes(32):
            return [f"{self.path}: reserved preamble bytes are not zero: the file is corrupt"]
        end = PREAMBLE.size
        for off, length in self._layout:
            if off < end:
                return [f"{self.path}: sections overlap at byte {off}: the file is corrupt"]
            if off - end >= ALIGN or raw[end:off].any():
                return [f"{self.path}: bytes {end}..{off} between sections are not zero padding: "
                        "the file is corrupt"]
            end = off + length
        if end != self.size:
            return [f"{self.path}: {self.size - end} unexpected bytes after the last section"]
        return []


def _records_problem(rec, n: int) -> str | None:
    """What is wrong with a parsed records section (names, metadata), or None."""
    if not isinstance(rec, dict) or set(rec) - {"names", "meta"}:
        return "not a JSON object with names and meta"
    names, meta = rec.get("names"), rec.get("meta")
    if names is not None:
        if not isinstance(names, list) or len(names) != n:
            return f"names is not a list of {n} entries"
        if not all(x is None or isinstance(x, str) for x in names):
            return "a record name is neither a string nor null"
    if meta is not None and not isinstance(meta, dict):
        return "meta is not a JSON object"
    for k, col in (meta or {}).items():
        if not isinstance(col, list) or len(col) != n:
            return f"metadata column {k[:40]!r} is not a list of {n} entries"
        if not all(x is None or isinstance(x, (str, int, float)) for x in col):
            return f"metadata column {k[:40]!r} holds a value that is not a JSON scalar"
    return None


# ---------------------------------------------------------------------------------- manifests
#: the largest manifest read (a manifest is ~100 bytes per shard plus a run description)
MANIFEST_MAX_BYTES = 256 << 20
MANIFEST_FORMAT = "genotok-corpus-manifest"
#: manifest 1.1 adds per-shard index and header digest, totals and a digest of the manifest
MANIFEST_VERSION = (1, 1)
_MANIFEST_CORE = ("format", "version", "fingerprint", "checksum", "n_shards", "n_records",
                  "n_tokens", "shards", "digest")


def _manifest_digest(manifest: dict, algo: str) -> str:
    """Digest of the whole manifest but its ``digest`` key (canonical JSON: sorted keys, ASCII)."""
    body = {k: v for k, v in manifest.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _digest(text.encode(), algo).hex()


def _read_manifest(mpath: Path) -> dict:
    """Read and parse ``manifest.json``: a regular file (no symlink), at most the size cap."""
    from ..gtok import open_regular

    fd, st = open_regular(mpath, "manifest", nofollow=True)
    try:
        if st.st_size > MANIFEST_MAX_BYTES:
            raise GtokFormatError(f"{mpath}: {st.st_size:,} bytes is larger than a manifest may be "
                                  f"({MANIFEST_MAX_BYTES:,}; genotok.formats.corpus.reader.MANIFEST_MAX_BYTES)")
        chunks, total = [], 0
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
            total += len(block)
            if total > MANIFEST_MAX_BYTES:  # grew while read
                raise GtokFormatError(f"{mpath}: larger than a manifest may be "
                                      f"({MANIFEST_MAX_BYTES:,} bytes)")
    finally:
        os.close(fd)
    return _json_load(b"".join(chunks), "manifest", mpath)


def _shard_path(directory: Path, rel, mpath: Path, k: int) -> Path:
    """The file of manifest entry ``k``: relative, inside ``directory``, no ``..``, no symlink."""
    def bad(why: str) -> GtokFormatError:
        return GtokFormatError(f"{mpath}: shard {k}: path {str(rel)[:200]!r} {why}; a manifest "
                               "names files inside its directory (re-run write_manifest)")

    if not isinstance(rel, str) or not rel:
        raise bad("is not a non-empty string")
    if "\0" in rel or "\\" in rel:
        raise bad("holds a NUL byte or a backslash")
    if rel.startswith("/") or os.path.isabs(rel):
        raise bad("is absolute")
    parts = [x for x in rel.split("/") if x not in ("", ".")]
    if not parts or ".." in parts:
        raise bad("leaves the directory (..)")
    full = directory.joinpath(*parts)
    if full.is_symlink():
        raise bad("is a symbolic link")
    root = os.path.realpath(directory)
    real = os.path.realpath(full)
    if os.path.commonpath([root, real]) != root:
        raise bad("resolves outside the corpus directory")
    return full


def _open_manifest(directory: Path, trusted: bool) -> tuple[list, dict, list[str]]:
    """Shards of a directory corpus, its manifest, and what :meth:`Corpus.verify` must report."""
    mpath = directory / MANIFEST
    if not os.path.lexists(mpath):
        raise GtokFormatError(f"{directory}: a directory corpus needs {MANIFEST} "
                              "(write one with write_manifest)")
    m = _read_manifest(mpath)

    def corrupt(why: str) -> GtokFormatError:
        return GtokFormatError(f"{mpath}: corrupt manifest ({why})")

    if not isinstance(m, dict):
        raise corrupt("not a JSON object")
    if m.get("format") != MANIFEST_FORMAT:
        raise corrupt(f"format {str(m.get('format'))[:40]!r}, expected {MANIFEST_FORMAT!r}")
    v = m.get("version")
    if not (isinstance(v, list) and len(v) == 2 and all(_is_int(x) for x in v)):
        raise corrupt(f"version {str(v)[:40]} is not [major, minor]")
    if v[0] > MANIFEST_VERSION[0]:
        raise GtokFormatError(f"{mpath}: manifest format {v[0]}.{v[1]} is newer than this genotok "
                              f"reads ({MANIFEST_VERSION[0]}.{MANIFEST_VERSION[1]}); upgrade genotok")
    if v[0] < 1:
        raise corrupt(f"version {v[0]}.{v[1]}")
    if not isinstance(m.get("fingerprint"), str):
        raise corrupt("fingerprint is missing or not a string")
    entries = m.get("shards")
    if not isinstance(entries, list) or not entries:
        raise corrupt("shards is not a non-empty list")
    later = []  # what verify() reports: the manifest opens, but its integrity is not proven
    digest = m.get("digest")
    if digest is None:
        later.append(f"{mpath}: the manifest has no digest (manifest format 1.0, or the digest "
                     "was erased): its entries cannot be proven; re-run write_manifest")
    else:
        algo = m.get("checksum")
        if algo not in CHECKSUMS or not _is_hex_digest(digest):
            raise corrupt("digest or checksum algorithm is malformed")
        if not _can_check(algo):
            later.append(f"{mpath}: manifest digest uses {algo}: {_XXHASH_HINT} to verify it")
        elif _manifest_digest(m, algo) != digest:
            raise GtokFormatError(f"{mpath}: manifest digest mismatch: the manifest was edited after "
                                  "it was written (entries added, dropped, reordered or changed); "
                                  "re-run write_manifest")
    for key in ("n_records", "n_tokens", "n_shards"):
        if key in m and (not _is_int(m[key]) or m[key] < 0):
            raise corrupt(f"{key} is not a whole number")
    if not _is_int(m.get("n_records")):
        raise corrupt("n_records (the total) is missing")
    if "n_shards" in m and m["n_shards"] != len(entries):
        raise corrupt(f"n_shards is {m['n_shards']} but {len(entries)} shards are listed: an entry "
                      "was added or dropped")
    paths, seen = [], {}
    for k, e in enumerate(entries):
        if not isinstance(e, dict):
            raise corrupt(f"shard {k} is not a JSON object")
        for key in ("n_records", "n_tokens"):
            if not _is_int(e.get(key)) or e[key] < 0:
                raise corrupt(f"shard {k}: {key} is missing or not a whole number")
        if "index" in e and e["index"] != k:
            raise corrupt(f"shard {k} carries index {str(e['index'])[:20]}: entries were reordered")
        if "header_digest" in e and not _is_hex_digest(e["header_digest"]):
            raise corrupt(f"shard {k}: header_digest is not a 16-digit hex digest")
        full = _shard_path(directory, e.get("path"), mpath, k)
        key = os.path.normcase(str(full))
        if key in seen:
            raise corrupt(f"shards {seen[key]} and {k} are the same file {e['path'][:200]!r}")
        seen[key] = k
        paths.append(full)
    shards, files = [], {}
    for k, (e, full) in enumerate(zip(entries, paths)):
        s = _Shard(full, trusted=trusted, nofollow=True)
        if s.ident in files:
            raise corrupt(f"shards {files[s.ident]} and {k} are the same file (a hard link)")
        files[s.ident] = k
        if e["n_records"] != s.n or e["n_tokens"] != s.t or \
                e.get("header_digest", s.head_sum.hex()) != s.head_sum.hex():
            raise GtokFormatError(
                f"{mpath}: shard {e['path'][:200]!r} has {s.n} records and {s.t} tokens (header "
                f"digest {s.head_sum.hex()}), the manifest says {e['n_records']} and {e['n_tokens']} "
                f"({e.get('header_digest', '-')}): the shard was replaced after the manifest was "
                "written; re-run write_manifest")
        shards.append(s)
    n, t = sum(s.n for s in shards), sum(s.t for s in shards)
    if m["n_records"] != n or m.get("n_tokens", t) != t:
        raise corrupt(f"totals {m['n_records']} records, {m.get('n_tokens')} tokens disagree with "
                      f"the shards' {n} and {t}: an entry was added or dropped")
    if m["fingerprint"] != shards[0].header["fingerprint"]:
        raise UniverseMismatchError(f"{mpath}: the manifest's universe differs from its "
                                    "shards'; re-run write_manifest")
    return shards, m, later


def check_expected(fingerprint: str, expect, where) -> None:
    """Refuse a corpus whose universe ``fingerprint`` is not ``expect``'s (a fingerprint string,
    or a Tokenizer / Universe); ``None`` checks nothing. Shared by local and remote corpora.

    Examples
    --------
    >>> check_expected("ab12", "ab12", "corpus/")  # the same universe: nothing to say
    >>> check_expected("ab12", "cd34", "corpus/")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.UniverseMismatchError: corpus/: tokenized with universe ab12…, but ...
    """
    if expect is None:
        return
    want = expect if isinstance(expect, str) else getattr(expect, "fingerprint", None)
    if not isinstance(want, str):
        raise TypeError("expect must be a fingerprint string or an object with a "
                        f".fingerprint (a Tokenizer or Universe), got {type(expect).__name__}")
    if fingerprint != want:
        raise UniverseMismatchError(
            f"{where}: tokenized with universe {fingerprint[:12]}…, but the given "
            f"tokenizer/universe is {want[:12]}…; token ids are specific to their universe")


class Corpus(Sequence):
    """A read-only, memory-mapped corpus of token lists (one file or a sharded directory).

    ``corpus[i]`` is an O(1) zero-copy view of record ``i``; ``corpus[a:b]`` and
    ``corpus[[i, j, ...]]`` (or :meth:`get_batch`) give many records as a :class:`Ragged`.

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

    def __init__(self, shards: list[_Shard], path: Path, manifest: dict | None = None,
                 manifest_problems: Sequence[str] = ()):
        self.manifest = manifest
        self._manifest_problems = list(manifest_problems)
        if not shards:
            raise GtokFormatError(f"{path}: a corpus needs at least one shard")
        self.path = path
        self._shards = shards
        first = shards[0]
        for s in shards[1:]:
            if s.header.get("fingerprint") != first.header.get("fingerprint"):
                raise UniverseMismatchError(f"{s.path}: shard was tokenized with another universe "
                                            f"than {first.path}; shards of one corpus must share it")
            if s.dtype != first.dtype or s.values_dtype != first.values_dtype:
                raise GtokFormatError(f"{s.path}: shard layout (tokens {s.dtype}, values "
                                      f"{s.values_dtype}) differs from {first.path} (tokens "
                                      f"{first.dtype}, values {first.values_dtype})")
            if s.header["vocab_size"] != first.header["vocab_size"]:
                raise GtokFormatError(f"{s.path}: vocab_size {s.header['vocab_size']} differs from "
                                      f"{first.path}'s {first.header['vocab_size']}")
        counts = np.array([s.n for s in shards], dtype=np.int64)
        self._starts = np.zeros(len(shards) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._starts[1:])
        self.header = first.header
        self._offsets = first.offsets if len(shards) == 1 else None
        self._names: list | None = None
        self._meta: dict | None = None
        self._lengths: np.ndarray | None = None

    # -- opening
    @classmethod
    def open(cls, path: str | os.PathLike, *, expect=None, verify: bool = False,
             trusted: bool = False, **remote) -> "Corpus":
        """Open a corpus file or a sharded corpus directory (with ``manifest.json``).

        Opening is safe by default: the files must be regular files, each section must lie
        inside its file (a truncated file is refused here, not with SIGBUS later), the header
        is type-checked against its digest, and *every* record offset is checked (in bounds,
        non-decreasing, matching its checksum), so no read returns another record's data.
        A manifest may only name files inside its directory. docs/formats.md lists exactly
        what is checked.

        Parameters
        ----------
        path
            A ``.gtokc`` file or a directory with ``manifest.json``.
        expect
            A fingerprint string or an object with ``.fingerprint`` (a Tokenizer or Universe):
            a corpus tokenized with a different universe raises
            :class:`~genotok.UniverseMismatchError`.
        verify
            Run the full :meth:`verify` (checksums, every id) before returning.
        trusted
            Skip the pass over the record offsets (the cheap open, for files you wrote
            yourself): reads stay memory-safe, but a corrupt offset may give wrong records.
        **remote
            For a URL (``s3://``, ``gs://``, ``https://``…): ``cache_dir``, ``cache_limit``,
            ``prefetch``, ``storage_options`` of :func:`genotok.formats.corpus.remote.open_corpus`.

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append([4, 5])
        >>> Corpus.open(p, expect="fp", verify=True)[0].tolist()
        [4, 5]
        """
        if isinstance(path, str) and "://" in path and not path.startswith("file://"):
            from .remote import open_corpus  # an object store, through a local shard cache

            return open_corpus(path, expect=expect, verify=verify, **remote)
        if remote:
            raise TypeError(f"{', '.join(sorted(remote))}: options of remote corpora (s3://, "
                            "gs://, https://…) only")
        path = Path(path)
        if path.is_dir():
            shards, manifest, later = _open_manifest(path, bool(trusted))
        else:
            shards, manifest, later = [_Shard(path, trusted=bool(trusted))], None, []
        corpus = cls(shards, path, manifest, later)
        corpus._trusted = bool(trusted)
        check_expected(corpus.fingerprint, expect, path)
        if verify:
            corpus.verify(raise_on_error=True)
        return corpus

    def __reduce__(self):
        # pickled by path (e.g. into DataLoader workers): re-mapped there, never copied
        return (_reopen, (self.path, getattr(self, "_trusted", False)))

    # -- metadata
    @property
    def fingerprint(self) -> str:
        """The universe fingerprint the tokens were written with."""
        return self.header["fingerprint"]

    @property
    def vocab_size(self) -> int:
        """Vocabulary size of that universe (every id is below it)."""
        return int(self.header["vocab_size"])

    @property
    def special_tokens(self) -> dict:
        """Special token ids (``{"unk": id, "pad": id, ...}``)."""
        return dict(self.header.get("special_tokens", {}))

    @property
    def settings(self) -> dict:
        """The tokenizer settings the corpus was written with."""
        return dict(self.header.get("settings", {}))

    @property
    def names(self) -> list:
        """Record names (file names, cell barcodes), ``None`` where unnamed (read once)."""
        if self._names is None:
            out: list = []
            for s in self._shards:
                out.extend(s.records["names"] or [None] * s.n)
            self._names = out
        return self._names

    @property
    def meta(self) -> dict[str, list]:
        """Per-record metadata columns (``None`` where a shard lacks a column; read once)."""
        if self._meta is None:
            cols = list(dict.fromkeys(k for s in self._shards for k in s.meta_columns))
            self._meta = {k: [] for k in cols}
            for s in self._shards:
                m = s.records["meta"]
                for k in cols:
                    self._meta[k].extend(m.get(k) or [None] * s.n)
        return self._meta

    @property
    def sources(self) -> list[dict]:
        """The inputs the corpus was made from (name, size, hash)."""
        return [src for s in self._shards for src in s.header.get("sources", [])]

    @property
    def has_values(self) -> bool:
        """Whether the corpus has a value channel (one value per token)."""
        return self._shards[0].values_dtype is not None

    @property
    def n_tokens(self) -> int:
        """Total number of tokens."""
        return sum(s.t for s in self._shards)

    @property
    def lengths(self) -> np.ndarray:
        """Number of tokens of every record (int64)."""
        if self._lengths is None:
            for s in self._shards:
                s.check_offsets(0, s.n)
            self._lengths = np.concatenate([np.diff(s.offsets) for s in self._shards])
        return self._lengths

    def info(self) -> dict:
        """Header, counts and length statistics (what ``genotok info`` prints).

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1, 2], [3]])
        >>> Corpus.open(p).info()["length_max"]
        2
        """
        lens = self.lengths
        h = {k: v for k, v in self.header.items() if k not in ("names", "meta")}
        h.update(path=str(self.path), shards=len(self._shards), n_records=len(self),
                 n_tokens=self.n_tokens, token_dtype=str(self._shards[0].dtype),
                 values_dtype=None if not self.has_values else str(self._shards[0].values_dtype),
                 meta_columns=list(dict.fromkeys(k for s in self._shards for k in s.meta_columns)),
                 format_version=".".join(map(str, self._shards[0].version)),
                 length_min=int(lens.min()) if lens.size else 0,
                 length_mean=float(lens.mean()) if lens.size else 0.0,
                 length_max=int(lens.max()) if lens.size else 0)
        run = (self.manifest or {}).get("genotok_run")
        if isinstance(run, dict):  # a run description written by pretokenize (shape checked)
            inputs, failed = run.get("inputs"), run.get("failed")
            if isinstance(inputs, list):
                h.update(inputs=len(inputs))
            if isinstance(failed, list):
                h.update(failed_inputs=[f.get("path") for f in failed if isinstance(f, dict)])
            unk_t, unk_r = run.get("n_unk_tokens"), run.get("n_unk_records")
            if _is_count(unk_t) and _is_count(unk_r) and len(self) and self.n_tokens:
                h.update(unk_share=f"{unk_t / self.n_tokens:.1%} of tokens are <unk>",
                         hit_rate=f"{1 - unk_r / len(self):.1%} of records hit the universe")
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
            start, stop, step = i.indices(len(self))
            if step == 1:
                return self._range(start, max(start, stop))
            return self.get_batch(np.arange(start, stop, step))
        if isinstance(i, (list, tuple, np.ndarray)):
            a = np.asarray(i)
            if a.dtype == bool:
                if a.shape != (len(self),):
                    raise IndexError(f"boolean mask of shape {a.shape} for {len(self)} records")
                a = np.flatnonzero(a)
            return self.get_batch(a)
        s, j = self._locate(int(i))
        a, b = s.bounds(j)
        return s.tokens[a:b]

    def values(self, i: int) -> np.ndarray:
        """The value channel of record ``i`` (a zero-copy view).

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp", values_dtype="uint16") as w:
        ...     w.append([1, 2], values=[5, 1])
        >>> Corpus.open(p).values(0).tolist()
        [5, 1]
        """
        s, j = self._locate(int(i))
        if s.values is None:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        a, b = s.bounds(j)
        return s.values[a:b]

    def _range(self, a: int, b: int, *, values: bool = False) -> Ragged:
        """Records ``a:b``: zero-copy views when they lie in one shard."""
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        k = int(np.searchsorted(self._starts, a, side="right")) - 1
        if a == b or (k < len(self._shards) and b <= self._starts[k + 1]):
            if a == b:
                return Ragged(np.zeros(0, self._shards[0].dtype), np.zeros(1, np.int64),
                              np.zeros(0, self._shards[0].values_dtype) if values else None)
            s = self._shards[k]
            ja, jb = a - int(self._starts[k]), b - int(self._starts[k])
            s.check_offsets(ja, jb)
            lo, hi = int(s.offsets[ja]), int(s.offsets[jb])
            return Ragged(s.tokens[lo:hi], s.offsets[ja:jb + 1] - lo,
                          s.values[lo:hi] if values else None)
        return self.get_batch(np.arange(a, b), values=values)

    def get_batch(self, indices, *, values: bool = False) -> Ragged:
        """Many records at once, in the order asked (a vectorised gather into one buffer).

        This is the fast path for random access: millions of records per second.

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1, 2], [3], [4, 5, 6]])
        >>> Corpus.open(p).get_batch([2, 0, 2]).to_list()
        [[4, 5, 6], [1, 2], [4, 5, 6]]
        """
        idx = np.asarray(indices)
        if idx.size and idx.dtype.kind not in "iu":
            raise IndexError(f"record indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64, copy=False).ravel()
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"record {int(bad)} out of range for a corpus of {n} records")
        if idx.size and idx.min() < 0:
            idx = np.where(idx < 0, idx + n, idx)
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        if len(self._shards) == 1:
            s = self._shards[0]
            data, offs = _gather_rows(s.tokens, s.offsets, idx, str(s.path), s.trusted)
            vals = _gather_rows(s.values, s.offsets, idx, str(s.path), s.trusted)[0] if values else None
            return Ragged(data, offs, vals)
        # several shards: gather per shard (in shard order), then put rows back in asked order
        shard_of = np.searchsorted(self._starts, idx, side="right") - 1
        perm = np.argsort(shard_of, kind="stable")
        sorted_shard = shard_of[perm]
        bounds = np.searchsorted(sorted_shard, np.arange(len(self._shards) + 1))
        datas, valss, lens = [], [], []
        for k in range(len(self._shards)):
            if bounds[k] == bounds[k + 1]:
                continue
            s = self._shards[k]
            local = idx[perm[bounds[k]:bounds[k + 1]]] - self._starts[k]
            d, o = _gather_rows(s.tokens, s.offsets, local, str(s.path), s.trusted)
            datas.append(d)
            lens.append(np.diff(o))
            if values:
                valss.append(_gather_rows(s.values, s.offsets, local, str(s.path), s.trusted)[0])
        coffs = np.zeros(idx.size + 1, np.int64)
        if lens:
            np.cumsum(np.concatenate(lens), out=coffs[1:])
        inv = np.empty(idx.size, np.int64)
        inv[perm] = np.arange(idx.size)
        dtype = self._shards[0].dtype
        data, offs = _gather_rows(np.concatenate(datas) if datas else np.zeros(0, dtype), coffs, inv,
                                  check=False)
        vals = None
        if values:
            vdt = self._shards[0].values_dtype
            vals = _gather_rows(np.concatenate(valss) if valss else np.zeros(0, vdt), coffs, inv,
                                check=False)[0]
        return Ragged(data, offs, vals)

    def __iter__(self) -> Iterator[np.ndarray]:
        for s in self._shards:
            toks = s.tokens
            for j in range(s.n):
                a, b = s.bounds(j)
                yield toks[a:b]

    def iter_batches(self, batch_size: int = 1024, *, values: bool = False) -> Iterator[Ragged]:
        """Consecutive records in batches of up to ``batch_size``: zero-copy views.

        A batch never spans two shards (the last batch of a shard may be shorter).

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1], [2, 3], [4]])
        >>> [b.to_list() for b in Corpus.open(p).iter_batches(2)]
        [[[1], [2, 3]], [[4]]]
        """
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        for k in range(len(self._shards)):
            lo, hi = int(self._starts[k]), int(self._starts[k + 1])
            for a in range(lo, hi, int(batch_size)):
                yield self._range(a, min(a + int(batch_size), hi), values=values)

    def to_ragged(self, *, values: bool = False) -> Ragged:
        """The whole corpus as one :class:`Ragged` (views for a single file, else a copy).

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1], [2, 3]])
        >>> Corpus.open(p).to_ragged().to_list()
        [[1], [2, 3]]
        """
        return self._range(0, len(self), values=values)

    def to_hf_dataset(self, **kwargs):
        """A Hugging Face ``datasets.Dataset`` over the tokens, not copied (:mod:`genotok.formats.hf`)."""
        from ..hf import to_hf_dataset

        return to_hf_dataset(self, **kwargs)

    # -- integrity
    def verify(self, raise_on_error: bool = False) -> list[str]:
        """Check offsets, ids < vocab_size, names/metadata and every checksum; list the problems.

        A missing integrity record is itself a problem: a header without its digest, a
        manifest without its digest, or checksums this install cannot compute (``xxh3_64``
        without xxhash). An empty list means every byte was checked.

        Examples
        --------
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append([1, 2])
        >>> Corpus.open(p).verify()
        []
        """
        problems = list(self._manifest_problems)
        problems += [p for s in self._shards for p in s.verify()]
        if problems and raise_on_error:
            raise GtokFormatError("; ".join(problems))
        return problems

    def _repr_html_(self) -> str:
        from ..._html import card, preview

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
        return (f"Corpus({len(self):,} records, {self.n_tokens:,} tokens, "
                f"vocab_size={self.vocab_size:,}, shards={len(self._shards)}, "
                f"fingerprint={self.fingerprint[:12]}, path={str(self.path)!r})")


def _reopen(path, trusted):
    return Corpus.open(path, trusted=trusted)


# ---------------------------------------------------------------------------------- shards
def write_manifest(directory: str | os.PathLike, shards: Sequence[str | os.PathLike],
                   extra: dict | None = None) -> Path:
    """Join shard files into one corpus by writing ``directory/manifest.json`` (no data copied).

    Every shard must lie inside ``directory`` (its path is stored relative to it); all shards
    must share one universe and layout (checked here). Each entry records the shard's record
    and token counts and its header digest (which covers its section checksums), and the
    manifest carries a digest of itself, so :meth:`Corpus.open` detects a replaced shard and
    an added, dropped, reordered or edited entry. Shards written by separate processes or
    machines are merged this way.

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
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(_MANIFEST_CORE))
    if clash:
        raise ValueError(f"extra may not set the manifest's own keys {clash}")
    root = os.path.realpath(directory)
    rels = []
    for sh in shards:
        real = os.path.realpath(sh)
        if os.path.commonpath([root, real]) != root or real == root:
            raise GtokFormatError(f"{sh}: is not inside {directory}; a manifest only names files "
                                  "in its directory (write or move the shards there)")
        rels.append(Path(os.path.relpath(real, root)).as_posix())
    if len(set(rels)) != len(rels):
        raise GtokFormatError(f"{directory}: a shard is listed twice ({rels})")
    opened = [_Shard(Path(real)) for real in (os.path.join(root, r) for r in rels)]
    Corpus(opened, directory)  # validates: same universe, same layout
    entries = [{"index": k, "path": rel, "n_records": sh.n, "n_tokens": sh.t,
                "header_digest": sh.head_sum.hex()} for k, (rel, sh) in enumerate(zip(rels, opened))]
    manifest = {"format": MANIFEST_FORMAT, "version": list(MANIFEST_VERSION),
                "fingerprint": opened[0].header["fingerprint"], "checksum": CHECKSUM,
                "n_shards": len(entries), "n_records": sum(e["n_records"] for e in entries),
                "n_tokens": sum(e["n_tokens"] for e in entries), "shards": entries, **extra}
    json.dumps(manifest, allow_nan=False)  # refuse what another JSON reader could not parse
    manifest["digest"] = _manifest_digest(manifest, CHECKSUM)
    with atomic_write(directory / MANIFEST, "w") as fh:
        json.dump(manifest, fh, indent=1)
    return directory / MANIFEST


# ---------------------------------------------------------------------------------- interop
def export_gtok_dir(corpus: Corpus, directory: str | os.PathLike) -> list[Path]:
    """Write every record as a gtars ``.gtok`` file (named by record name, else its index).

    A record name becomes a file name through :func:`genotok._names.to_file_stem` (a safe,
    reversible spelling: never a path separator, never ``..``, no control bytes), so every
    file lands inside ``directory``; two records that would share a file name are an error.
    Unnamed records are ``record_00000042.gtok``. The width is chosen per file as gtars does.

    The files are written into a hidden temporary directory beside ``directory``, renamed
    into place once all are written: an interrupted export leaves no directory that
    :func:`import_gtok_dir` accepts. ``directory`` must not exist, or be empty.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    ...     w.append([3], name="a/b")
    >>> [f.name for f in export_gtok_dir(Corpus.open(p), os.path.join(os.path.dirname(p), "g"))]
    ['s1.gtok', 'a%2Fb.gtok']
    """
    from ..._names import to_file_stem
    from ..gtok import write_gtok

    directory = Path(directory)
    if directory.is_symlink() or (directory.exists() and (not directory.is_dir()
                                                          or any(directory.iterdir()))):
        raise FileExistsError(f"{directory} exists and is not an empty directory; export into a "
                              "new directory")
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{directory.name}{_EXPORTING}"
    _clean_stale(parent, prefix)
    tmp = Path(tempfile.mkdtemp(prefix=f"{prefix}{_host()}-{os.getpid()}-", suffix=".tmp",
                                dir=parent))
    try:
        names = corpus.names
        used: dict[str, int] = {}
        stems = []
        for i, name in enumerate(names):
            stem = (f"record_{i:08d}" if name is None
                    else to_file_stem(name, where=f"{corpus.path}: record {i}"))
            if stem in used:
                raise GtokFormatError(f"{corpus.path}: records {used[stem]} and {i} would both be "
                                      f"written to {stem}.gtok (the same record name); give the "
                                      "records unique names before exporting")
            used[stem] = i
            stems.append(stem)
        for stem, rec in zip(stems, corpus):
            write_gtok(tmp / f"{stem}.gtok", rec, atomic=False)
        _fsync_path(tmp)
        os.rename(tmp, directory)  # replaces an empty directory; atomic on POSIX
        _fsync_path(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [directory / f"{stem}.gtok" for stem in stems]


def _fsync_path(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def import_gtok_dir(directory: str | os.PathLike, out: str | os.PathLike, *, vocab_size: int,
                    fingerprint: str, pattern: str = "*.gtok", **kwargs) -> Path:
    """Pack a directory of gtars ``.gtok`` files into one corpus (record name = file stem).

    Files are taken in sorted name order; a stem written by :func:`export_gtok_dir` is
    decoded back to the record name (``a%2Fb`` -> ``a/b``). Each file is memory-mapped and
    streamed into the writer (never held twice in memory); its size and sha256 are kept as a
    source. Only regular files are read (a FIFO or device is refused, never waited on). A
    truncated or damaged file raises :class:`~genotok.GtokFormatError` naming it, and an id
    outside the vocabulary names the record. A hidden ``.<name>.exporting-….tmp`` directory
    (an interrupted export) is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.gtok import write_gtok
    >>> d = tempfile.mkdtemp()
    >>> write_gtok(os.path.join(d, "a.gtok"), [1, 2])
    >>> c = Corpus.open(import_gtok_dir(d, os.path.join(d, "c.gtokc"), vocab_size=9, fingerprint="fp"))
    >>> c.names, c[0].tolist()
    (['a'], [1, 2])
    """
    from ..._names import from_file_stem
    from ..gtok import HEADER_SIZE, _check, open_regular

    directory = Path(directory)
    if not directory.is_dir():
        raise GtokFormatError(f"{directory}: not a directory of .gtok files")
    if directory.name.startswith(".") and _EXPORTING in directory.name \
            and directory.name.endswith(".tmp"):
        raise GtokFormatError(f"{directory}: is the temporary directory of an interrupted export; "
                              "export again (it is removed by the next export to the same place)")
    files = sorted(f for f in directory.glob(pattern) if f.is_file())
    if not files:
        raise GtokFormatError(f"{directory}: no files match {pattern!r}")
    with CorpusWriter(out, vocab_size=vocab_size, fingerprint=fingerprint, **kwargs) as w:
        for f in files:
            fd, st = open_regular(f, ".gtok file")
            with os.fdopen(fd, "rb") as fh:
                dtype, n = _check(os.pread(fd, HEADER_SIZE, 0), st.st_size, str(f))
                raw = np.memmap(fh, dtype=np.uint8, mode="r", shape=(st.st_size,))
                sha = hashlib.sha256()
                for i in range(0, raw.size, _COPY_BLOCK):
                    sha.update(raw[i:i + _COPY_BLOCK])
                ids = raw[HEADER_SIZE:HEADER_SIZE + n * dtype.itemsize].view(dtype)
                if ids.size and int(ids.max()) >= w.vocab_size:
                    raise GtokFormatError(f"{f}: id {int(ids.max())} is outside the vocabulary "
                                          f"(0..{w.vocab_size - 1}); was it tokenized with another "
                                          "universe?")
                try:
                    name = from_file_stem(f.stem)
                except (UnicodeError, ValueError):  # not a stem genotok wrote: keep it as is
                    name = f.stem
                w.append(ids, name=name)  # copied into the writer's block
                del ids, raw
            w.add_source(f.name, size=st.st_size, sha256=sha.hexdigest())
    return Path(out)


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("Parquet export/import needs pyarrow: pip install 'genotok[parquet]'") from None
    return pa, pq


def _row_groups(lengths: np.ndarray, max_rows: int, max_tokens: int) -> list[tuple[int, int]]:
    """Split records into consecutive groups of <= max_rows records and <= max_tokens tokens."""
    out, a, n = [], 0, lengths.size
    cum = np.concatenate([[0], np.cumsum(lengths)])
    while a < n:
        b = min(n, a + max_rows)
        b = max(a + 1, min(b, int(np.searchsorted(cum, cum[a] + max_tokens, side="right")) - 1))
        out.append((a, b))
        a = b
    return out


def export_parquet(corpus: Corpus, path: str | os.PathLike, *, row_group_size: int = 65536) -> Path:
    """One row per record: ``tokens`` (list<int32>), ``name`` and the metadata columns.

    That is what geniml's ``Region2VecDataset`` reads, and what pandas, DuckDB and Hugging Face
    datasets open. Streamed in row groups of up to ``row_group_size`` records (and under 2**31
    tokens, the limit of a list<int32> column's offsets); written atomically. The universe
    fingerprint, vocabulary size, special tokens and settings ride along in the schema metadata
    (key ``genotok``), so :func:`import_parquet` restores them.

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
    if corpus.vocab_size > 2**31:
        raise GtokFormatError(f"{corpus.path}: vocab_size {corpus.vocab_size} does not fit the "
                              "list<int32> tokens column")
    names, meta = corpus.names, corpus.meta
    info = json.dumps({k: corpus.header.get(k) for k in
                       ("fingerprint", "vocab_size", "special_tokens", "settings")}).encode()
    # one type per column for the whole file (a column may start with nulls)
    fields = [pa.field("tokens", pa.list_(pa.int32())), pa.field("name", pa.string())]
    for k, v in meta.items():
        t = pa.array(v).type
        fields.append(pa.field(k, pa.string() if pa.types.is_null(t) else t))
    schema = pa.schema(fields, metadata={b"genotok": info})
    with atomic_write(path, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
        for a, b in _row_groups(corpus.lengths, max(1, int(row_group_size)), 2**31 - 1):
            batch = corpus[a:b]
            tokens = pa.ListArray.from_arrays(pa.array(batch.offsets.astype(np.int32)),
                                              pa.array(np.asarray(batch.data).astype(np.int32)))
            cols = [tokens, pa.array(names[a:b], type=pa.string())]
            cols += [pa.array(meta[f.name][a:b], type=f.type) for f in fields[2:]]
            writer.write_table(pa.Table.from_arrays(cols, schema=schema))
    return Path(path)


def import_parquet(path: str | os.PathLike, out: str | os.PathLike, *, vocab_size: int | None = None,
                   fingerprint: str | None = None, tokens_column: str = "tokens",
                   name_column: str | None = "name", **kwargs) -> Path:
    """Pack a Parquet file with a ``list<int>`` tokens column into a corpus (streamed).

    Every other column becomes a metadata column (``name_column`` gives the record names). The
    universe fingerprint and vocabulary size come from the file's genotok metadata when it has
    some (an exported corpus), else they must be given; giving a fingerprint that differs from
    the stored one raises :class:`~genotok.UniverseMismatchError`.

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
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise GtokFormatError(f"{path}: not a readable Parquet file ({exc})") from None
    schema = pf.schema_arrow
    stored = (schema.metadata or {}).get(b"genotok")
    info = json.loads(stored) if stored else {}
    if fingerprint is not None and info.get("fingerprint") not in (None, fingerprint):
        raise UniverseMismatchError(f"{path}: tokenized with universe {info['fingerprint'][:12]}…, "
                                    f"but fingerprint {fingerprint[:12]}… was given; token ids are "
                                    "specific to their universe")
    vocab_size = vocab_size or info.get("vocab_size")
    fingerprint = fingerprint or info.get("fingerprint")
    if vocab_size is None or fingerprint is None:
        raise GtokFormatError(f"{path}: no genotok metadata in the file: give vocab_size= and "
                              "fingerprint= (e.g. from the Tokenizer that made the tokens)")
    if tokens_column not in schema.names:
        raise GtokFormatError(f"{path}: no {tokens_column!r} column (have {schema.names})")
    ttype = schema.field(tokens_column).type
    if not ((pa.types.is_list(ttype) or pa.types.is_large_list(ttype))
            and pa.types.is_integer(ttype.value_type)):
        raise GtokFormatError(f"{path}: column {tokens_column!r} is {ttype}, expected a list of "
                              "integers (list<int32>)")
    cols = [c for c in schema.names if c not in (tokens_column, name_column)]
    kwargs.setdefault("special_tokens", info.get("special_tokens"))
    kwargs.setdefault("settings", info.get("settings"))
    with CorpusWriter(out, vocab_size=vocab_size, fingerprint=fingerprint,
                      metadata_columns=cols, **kwargs) as w:
        for rb in pf.iter_batches():
            lst = rb.column(tokens_column)
            if lst.null_count or lst.values.null_count:
                raise GtokFormatError(f"{path}: column {tokens_column!r} has nulls near record "
                                      f"{w.n_records}; every row needs a list of ids")
            offs = np.asarray(lst.offsets, dtype=np.int64)
            data = np.asarray(lst.values)[offs[0]:offs[-1]]
            names = (rb.column(name_column).to_pylist()
                     if name_column and name_column in rb.schema.names else None)
            w.append_batch(Ragged(data, offs - offs[0]), names=names,
                           meta={c: rb.column(c).to_pylist() for c in cols})
        w.add_source(Path(path).name, size=os.path.getsize(path))
    return Path(out)


def warmup() -> None:
    """Compile the corpus gather kernel on a tiny input (part of :func:`genotok.warmup`).

    Examples
    --------
    >>> warmup()
    """
    _gather_rows(np.zeros(1, np.uint16), np.array([0, 1], np.int64), np.zeros(1, np.int64))
