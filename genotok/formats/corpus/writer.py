"""Writing a corpus file: :class:`CorpusWriter` streams records to disk in bounded memory."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..._io import local_path
from ..._version import __version__
from ...errors import GtokFormatError
from ...params import DType, Flag, InstanceOf, Integral, Interval, Options, Unchecked, validate, validated
from ...ragged import Ragged
from . import layout
from .layout import (
    _COPY_BLOCK,
    _VALUE_CODES,
    _WRITING,
    MAGIC,
    MAJOR,
    MINOR,
    PREAMBLE,
    _clean_stale,
    _digest,
    _is_int,
    _make_temp,
    _new_hasher,
    _pad,
    _token_dtype,
)

#: the writer stages appended records and writes them once this many are pending
_FLUSH_TOKENS, _FLUSH_RECORDS = 1 << 20, 4096


@validated({"values": [Unchecked("a column of per-record values, converted one by one")],
            "column": [InstanceOf(str)], "first_record": [Interval(Integral, 0, None)],
            "other": [Options("raise", "str")]})
def json_scalars(values, column: str = "", first_record: int = 0, *, other: str = "raise") -> list:
    """Per-record metadata values as JSON scalars (the one conversion of the package).

    NumPy scalars are unwrapped and NaN becomes ``None``; str, int, float, bool and None are
    kept. Any other value raises :class:`~genotok.GtokFormatError` naming ``column`` and its
    record (``first_record`` + position), or with ``other="str"`` becomes its ``str``.

    Examples
    --------
    >>> import numpy as np
    >>> json_scalars(np.array([1.5, np.nan])), json_scalars([np.int64(3), "a", None])
    ([1.5, None], [3, 'a', None])
    >>> json_scalars([(1, 2)], other="str")
    ['(1, 2)']
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuU":  # plain scalars already
        return values.tolist()
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    out = []
    for k, x in enumerate(items):
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and math.isnan(x):
            x = None
        elif isinstance(x, float) and math.isinf(x):  # JSON has no infinity: refused now
            raise GtokFormatError(f"metadata column {column!r}, record {first_record + k}: {x} "
                                  "is not a JSON number (JSON has no infinity); replace it")
        elif not (x is None or isinstance(x, (str, bool, int, float))):
            if other == "str":
                x = str(x)
            else:
                raise GtokFormatError(f"metadata column {column!r}, record {first_record + k}: "
                                      f"{type(x).__name__} {x!r} is not a JSON scalar (str, int, "
                                      "float, bool or None); convert it")
        out.append(x)
    return out


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
    special_token_ids, settings
        Stored as metadata (special token ids, names to ids; tokenizer settings).
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
    >>> from genotok.formats.corpus import Corpus
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=10, fingerprint="abc") as w:
    ...     w.append([1, 2, 3], name="a")
    ...     w.append([], name="b")
    >>> c = Corpus.open(p)
    >>> len(c), c[0].tolist(), c.names
    (2, [1, 2, 3], ['a', 'b'])
    """

    #: what the constructor accepts (:mod:`genotok.params`), checked before anything is made
    CONSTRAINTS: ClassVar[dict] = {
        "path": [InstanceOf(str, os.PathLike)],
        "vocab_size": [Interval(Integral, 1, 2**32)],
        "fingerprint": [InstanceOf(str)],
        "special_token_ids": [InstanceOf(dict), None],
        "settings": [InstanceOf(dict), None],
        "values_dtype": [DType(np.float32, np.uint16), None],
        "metadata_columns": [InstanceOf(list, tuple), None],
        "overwrite": [Flag()],
        "extra": [InstanceOf(dict), None]}

    def __init__(self, path: str | os.PathLike, *, vocab_size: int, fingerprint: str,
                 special_token_ids: dict | None = None, settings: dict | None = None,
                 values_dtype=None, metadata_columns: Sequence[str] | None = None,
                 overwrite: bool = False, extra: dict | None = None):
        validate({"path": path, "vocab_size": vocab_size, "fingerprint": fingerprint,
                  "special_token_ids": special_token_ids, "settings": settings,
                  "values_dtype": values_dtype, "metadata_columns": metadata_columns,
                  "overwrite": overwrite, "extra": extra}, self.CONSTRAINTS, "CorpusWriter")
        self.path = local_path(path, "a corpus file")
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path} is a directory; give a corpus file path")
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} exists; pass overwrite=True to replace it")
        self.vocab_size = int(vocab_size)
        self.dtype = _token_dtype(self.vocab_size)
        self.values_dtype = None if values_dtype is None else np.dtype(values_dtype)
        self.meta_columns = [str(k) for k in (metadata_columns or ())]
        if len(set(self.meta_columns)) != len(self.meta_columns):
            raise ValueError(f"metadata_columns has duplicates: {self.meta_columns}")
        self.header = {
            "format": "genotok-corpus", "version": [MAJOR, MINOR],
            "genotok_version": __version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "fingerprint": str(fingerprint), "vocab_size": self.vocab_size,
            "special_tokens": dict(special_token_ids or {}), "settings": dict(settings or {}),
            "checksum": layout.CHECKSUM, "meta_columns": self.meta_columns, "sources": [],
            "extra": dict(extra or {}),
        }
        json.dumps(self.header, allow_nan=False)  # refuse unserialisable metadata now, not at close
        bad = {k: v for k, v in self.header["special_tokens"].items()
               if not (_is_int(v) and 0 <= v < self.vocab_size)}
        if bad:  # a reader refuses such a header: refuse it before writing anything
            raise ValueError(f"special_token_ids must map names to ids below vocab_size "
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
    def for_tokenizer(cls, path, tokenizer, **kwargs) -> CorpusWriter:
        """A writer carrying a tokenizer's (a Tokenizer's or a GeneTokenizer's) fingerprint, vocabulary size, specials and settings.

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
        return cls(path, vocab_size=tokenizer.vocab_size, fingerprint=tokenizer.fingerprint,
                   special_token_ids=tokenizer.special_token_ids, settings=tokenizer.settings.as_dict(),
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
            cols[k] = [None] * n if col is None else json_scalars(col, k, self._n)
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

    def __enter__(self) -> CorpusWriter:
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

