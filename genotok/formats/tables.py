"""Parquet and Arrow IPC stores: shards of a chosen size, one row per record, and their reader.

Columns ``input_ids`` (list<int32>), ``values`` (list<float32>, when kept), ``name`` and the
metadata columns (a metadata column named like one of these is stored as ``meta.<name>``:
:func:`_stored_key`; read back under its own name); the tokenizer's fingerprint, vocabulary
size, special tokens, settings, the run's extra (its cell spec) and the part's inputs (in its
first file) in the schema metadata under the key ``genotok``: what
``datasets.load_dataset("parquet", …)``, polars and DuckDB read as they are, and what
:meth:`genotok.Corpus.open` reads back (:meth:`TableStore.read_file`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._optional import require
from ..errors import GenotokError, GtokFormatError
from ..params import Integral, Interval, Options
from ..ragged import Ragged
from .store import ArrayShard, ShardedStore, _check_header

#: the column of token ids, in every store and every import
IDS = "input_ids"
#: the column of the value channel
VALUES = "values"
#: the column of record names
NAME = "name"
#: what a metadata column whose name is one of the store's own (or starts with it) is
#: stored under, in a flat table or record: ``meta.name`` for a column ``name``
META_PREFIX = "meta."


def _stored_key(column: str) -> str:
    """The key a metadata column is stored under in a flat record (a Parquet/Arrow column, a
    JSON Lines key): its own name, unless that is one of the store's own columns (``name``,
    ``input_ids``, ``values``) or starts with :data:`META_PREFIX`; then ``meta.`` + its name,
    so it neither takes the place of the record's own column nor vanishes
    (:func:`_column_of` reads it back under its own name, as the corpus store keeps it).

    Examples
    --------
    >>> _stored_key("cell_type"), _stored_key("name"), _stored_key("meta.x")
    ('cell_type', 'meta.name', 'meta.meta.x')
    >>> [_column_of(_stored_key(c)) for c in ("cell_type", "name", "meta.x")]
    ['cell_type', 'name', 'meta.x']
    """
    return META_PREFIX + column if column in (IDS, VALUES, NAME) or column.startswith(
        META_PREFIX) else column


def _column_of(key: str) -> str:
    """The metadata column a stored key holds (the inverse of :func:`_stored_key`)."""
    return key[len(META_PREFIX):] if key.startswith(META_PREFIX) else key


@dataclass
class TableStore(ShardedStore):
    """Parquet and Arrow IPC: see the module documentation. Each file is written under a
    temporary name and renamed into place when full or committed.

    Examples
    --------
    >>> sorted(TableStore.supports)
    ['extra', 'metadata', 'names', 'sources', 'values']
    """

    rows_per_shard: int = 100_000
    bytes_per_shard: int = 256 << 20
    compression: str | None = None

    supports: ClassVar[frozenset] = frozenset({"values", "names", "metadata", "sources", "extra"})
    CONSTRAINTS: ClassVar[dict] = {"rows_per_shard": [Interval(Integral, 1, None)],
                                   "bytes_per_shard": [Interval(Integral, 1, None)],
                                   "compression": [Options("zstd", "lz4", "snappy", "gzip"),
                                                   None]}

    def _begin(self) -> None:
        self._pa = require("pyarrow", f"format={self.name!r}")
        if self.tokenizer.vocab_size > 2**31:
            raise GenotokError(f"vocab_size {self.tokenizer.vocab_size} does not fit the "
                               f"list<int32> {IDS} column")
        self._types = None
        super()._begin()

    def _schema(self, meta: dict, first: bool):
        pa = self._pa
        if self._types is None:  # one type per column for the whole part (a column may be null)
            self._types = {}
            for c in self.columns:
                t = pa.array(meta.get(c, [])).type
                self._types[c] = pa.string() if pa.types.is_null(t) else t
        fields = [pa.field(IDS, pa.list_(pa.int32()))]
        if self.values:
            fields.append(pa.field(VALUES, pa.list_(pa.float32())))
        fields.append(pa.field(NAME, pa.string()))
        fields += [pa.field(_stored_key(c), t) for c, t in self._types.items()]
        header = self._header()
        if not first:  # the part's inputs are listed once, in its first file
            header["sources"] = []
        return pa.schema(fields, metadata={b"genotok": json.dumps(header).encode()})

    def _open_writer(self, fh, meta: dict, first: bool):
        self._file_schema = self._schema(meta, first)
        return self._new_writer(fh, self._file_schema)

    def _write_rows(self, batch: Ragged, meta: dict, a: int, b: int) -> None:
        pa = self._pa
        offsets = np.asarray(batch.offsets, np.int64)
        lo, hi = int(offsets[a]), int(offsets[b])
        offs = pa.array((offsets[a:b + 1] - lo).astype(np.int32))
        cols = [pa.ListArray.from_arrays(offs, pa.array(
            np.asarray(batch.data[lo:hi]).astype(np.int32)))]
        if self.values:
            cols.append(pa.ListArray.from_arrays(offs, pa.array(
                np.asarray(batch.values[lo:hi], np.float32))))
        names = meta.get("names")
        cols.append(pa.array(list(names[a:b]) if names is not None else [None] * (b - a),
                             type=pa.string()))
        for c, f in zip(self._types, list(self._file_schema)[len(cols):]):
            col = meta.get(c)
            cols.append(pa.array(list(col[a:b]) if col is not None else [None] * (b - a),
                                 type=f.type))
        self._writer.write_table(pa.Table.from_arrays(cols, schema=self._file_schema))

    def _close_writer(self) -> None:
        self._writer.close()

    @classmethod
    def read_file(cls, path: Path, header: dict | None = None) -> ArrayShard:
        """One Parquet or Arrow file written by this store (or any with a ``list<int>``
        ``input_ids`` column and genotok metadata) as an :class:`ArrayShard`."""
        pa = require("pyarrow", f"reading {path}")
        try:
            table = cls._read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise GtokFormatError(f"{path}: not a readable {cls.name} file (truncated or "
                                  f"damaged: {str(exc)[:200]})") from None
        return _shard_of_table(table, path, header)


def _shard_of_table(table, path, header: dict | None = None) -> ArrayShard:
    """A pyarrow table with an ``input_ids`` column as an :class:`ArrayShard` (its schema's
    ``genotok`` metadata is its header; else ``header``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"input_ids": [[1, 2], [3]], "name": ["a", "b"]})
    >>> s = _shard_of_table(t, "t.parquet", {"fingerprint": "fp", "vocab_size": 9})
    >>> s.n, s.tokens.tolist(), s.records["names"]
    (2, [1, 2, 3], ['a', 'b'])
    """
    pa = require("pyarrow", f"reading {path}")
    stored = (table.schema.metadata or {}).get(b"genotok")
    if stored is not None:
        header = _check_header(stored, path)
    elif header is None:
        raise GtokFormatError(f"{path}: no genotok metadata in the file: give vocab_size= and "
                              "fingerprint= (e.g. from the Tokenizer that made the tokens)")
    if IDS not in table.column_names:
        raise GtokFormatError(f"{path}: no {IDS!r} column (have {table.column_names})")
    ids, offsets = _flat(table.column(IDS), path, IDS, integer=True)
    values = None
    if VALUES in table.column_names:
        values, voffs = _flat(table.column(VALUES), path, VALUES, integer=False)
        if not np.array_equal(voffs, offsets):
            raise GtokFormatError(f"{path}: the {VALUES!r} column does not hold one value per "
                                  "token of its record")
    names = table.column(NAME).to_pylist() if NAME in table.column_names else None
    if names is not None and not all(x is None or isinstance(x, str) for x in names):
        raise GtokFormatError(f"{path}: the {NAME!r} column is not text")
    meta = {_column_of(c): table.column(c).to_pylist() for c in table.column_names
            if c not in (IDS, VALUES, NAME)}
    del pa
    return ArrayShard(path, ids, offsets, values, header, names, meta)


def _flat(col, path, what: str, *, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """A list column (chunked) as flat values and int64 offsets (no copy for one chunk)."""
    pa = require("pyarrow", f"reading {path}")
    t = col.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not (
            pa.types.is_integer(t.value_type) if integer else
            pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)):
        raise GtokFormatError(f"{path}: column {what!r} is {t}, expected a list of "
                              f"{'integers (list<int32>)' if integer else 'numbers'}")
    if col.null_count:
        raise GtokFormatError(f"{path}: column {what!r} has a null row; every row needs a list")
    chunks = [c for c in col.chunks if len(c)] or col.chunks[:1]
    datas, lens = [], []
    for c in chunks:
        offs = np.asarray(c.offsets, np.int64)
        vals = c.values
        if vals.null_count:
            raise GtokFormatError(f"{path}: column {what!r} holds a null value")
        datas.append(np.asarray(vals)[offs[0]:offs[-1]] if len(vals) else
                     np.zeros(0, np.int64 if integer else np.float32))
        lens.append(np.diff(offs))
    n = sum(x.size for x in lens)
    offsets = np.zeros(n + 1, np.int64)
    if n:
        np.cumsum(np.concatenate(lens), out=offsets[1:])
    data = datas[0] if len(datas) == 1 else (np.concatenate(datas) if datas else np.zeros(0))
    if offsets[-1] != data.size or (n and np.any(np.diff(offsets) < 0)):
        raise GtokFormatError(f"{path}: column {what!r} has corrupt list offsets")
    return data, offsets


@dataclass
class ParquetStore(TableStore):
    """Parquet shards, zstd-compressed by default.

    Examples
    --------
    >>> import tempfile
    >>> import pyarrow.parquet as pq
    >>> from genotok import Tokenizer
    >>> d = tempfile.mkdtemp()
    >>> s = ParquetStore(rows_per_shard=2).open(d, "part", Tokenizer(["chr1:0-10"]))
    >>> s.write(Ragged.from_list([[0], [1], [0, 1]]), {"names": ["a", "b", "c"]})
    >>> s.commit()
    ['part-000.parquet', 'part-001.parquet']
    >>> pq.read_table(f"{d}/part-001.parquet").to_pydict()
    {'input_ids': [[0, 1]], 'name': ['c']}
    """

    compression: str | None = "zstd"
    name: ClassVar[str] = "parquet"
    suffix: ClassVar[str] = ".parquet"

    def _new_writer(self, fh, schema):
        pq = require("pyarrow.parquet", "format='parquet'")
        return pq.ParquetWriter(fh, schema, compression=self.compression or "none")

    @classmethod
    def _read_table(cls, path):
        pq = require("pyarrow.parquet", f"reading {path}")
        return pq.read_table(path)


@dataclass
class ArrowStore(TableStore):
    """Arrow IPC files (the random-access file format; uncompressed by default, so readers
    can memory-map them).

    Examples
    --------
    >>> import tempfile
    >>> import pyarrow as pa
    >>> from genotok import Tokenizer
    >>> d = tempfile.mkdtemp()
    >>> s = ArrowStore().open(d, "part", Tokenizer(["chr1:0-10"]))
    >>> s.write(Ragged.from_list([[0], [1]]), {"names": ["a", "b"]})
    >>> s.commit()
    ['part-000.arrow']
    >>> pa.ipc.open_file(f"{d}/part-000.arrow").read_all().column("input_ids").to_pylist()
    [[0], [1]]
    """

    name: ClassVar[str] = "arrow"
    suffix: ClassVar[str] = ".arrow"
    CONSTRAINTS: ClassVar[dict] = {**TableStore.CONSTRAINTS,
                                   "compression": [Options("zstd", "lz4"), None]}

    def _new_writer(self, fh, schema):
        pa = self._pa
        opts = pa.ipc.IpcWriteOptions(compression=self.compression)
        return pa.ipc.new_file(fh, schema, options=opts)

    @classmethod
    def _read_table(cls, path):
        pa = require("pyarrow", f"reading {path}")
        # uncompressed: the columns stay mapped (the buffers keep the mapping alive)
        return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def _read_any_table(path):
    """A Parquet or Arrow IPC file (told apart by its first bytes) as a pyarrow table; a
    file that is neither, or damaged, is a :class:`~genotok.GtokFormatError` naming it.

    Examples
    --------
    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> p = os.path.join(tempfile.mkdtemp(), "t.bin")  # an Arrow IPC file, whatever its name
    >>> with pa.ipc.new_file(p, pa.schema([("input_ids", pa.list_(pa.int32()))])) as w:
    ...     w.write_table(pa.table({"input_ids": pa.array([[1, 2]], pa.list_(pa.int32()))}))
    >>> _read_any_table(p).column("input_ids").to_pylist()
    [[1, 2]]
    """
    pa = require("pyarrow", f"reading {path}")
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except IsADirectoryError:
        raise GtokFormatError(f"{path}: is a directory, not a Parquet or Arrow file") from None
    store = ArrowStore if magic == b"ARROW1" else ParquetStore
    try:
        return store._read_table(path)
    except (OSError, pa.ArrowException) as exc:
        kind = "Arrow" if store is ArrowStore else "Parquet"
        raise GtokFormatError(f"{path}: not a readable {kind} file ({str(exc)[:200]})") from None


__all__ = ["IDS", "META_PREFIX", "NAME", "VALUES", "ArrowStore", "ParquetStore", "TableStore"]
