"""Stores: where token batches go. One class per backend, found by name in :data:`STORES`.

A store is configured once (``ParquetStore(rows_per_shard=50_000)``) and then opened for each
part of an output: ``open(directory, part, tokenizer, ...)`` gives a writing copy that takes
``write(batch, meta)`` calls (``batch``: a :class:`~genotok.ragged.Ragged` of consecutive
records, with its value channel; ``meta``: ``{"names": [...], column: [...]}`` for those
records) and ends with ``commit()`` (the files are durably in place, their names returned) or
``abort()`` (nothing of the part is left). ``finish(directory, files, extra)`` joins the parts
of a run (the pipeline calls it last: the manifest). What a store keeps is in ``supports``
(``"values"``, ``"names"``, ``"metadata"``): a caller asks before it writes.

Built in: ``"memory"`` (a :class:`~genotok.ragged.Ragged`), ``"corpus"`` (the indexed corpus,
:class:`~genotok.formats.corpus.CorpusWriter`), ``"gtok-dir"`` (one gtars ``.gtok`` file per
record), ``"parquet"`` and ``"arrow"`` (shards of a chosen size, one row per record, the
tokenizer's fingerprint, vocabulary size and the run's spec in the schema metadata under the
key ``genotok``: what ``datasets.load_dataset("parquet", …)``, polars and DuckDB read as they
are). A new backend is one class and one line ``STORES[MyStore.name] = MyStore`` (see
``docs/architecture.md``).

Examples
--------
>>> from genotok import Tokenizer
>>> from genotok.ragged import Ragged
>>> s = get_store("memory").open(None, "part", Tokenizer(["chr1:0-10"]))
>>> s.write(Ragged.from_list([[0], [1, 2]]), {"names": ["a", "b"]})
>>> s.commit(), s.ragged.to_list(), s.names
([], [[0], [1, 2]], ['a', 'b'])
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._io import atomic_write, local_path, make_temp
from .._names import to_file_stem
from .._optional import require
from ..errors import GenotokError
from ..params import Integral, Interval, InstanceOf, Options, validate, validate_fields
from ..ragged import Ragged
from . import gtok
from .corpus import MANIFEST, Corpus, write_manifest
from .corpus.writer import CorpusWriter


#: the part a run whose every input failed writes (an empty, valid output)
EMPTY = "shard-empty"


@dataclass
class Store:
    """The protocol (and the bookkeeping every store shares). Subclasses set ``name``,
    ``supports`` and ``suffix``, and implement :meth:`_begin`, :meth:`write`, :meth:`commit`
    and :meth:`abort` (``docs/architecture.md`` adds one).

    Examples
    --------
    >>> sorted(STORES["corpus"].supports), STORES["gtok-dir"].per_record_files
    (['metadata', 'names', 'values'], True)
    """

    name: ClassVar[str] = ""
    supports: ClassVar[frozenset] = frozenset()
    suffix: ClassVar[str] = ""
    #: one file per record, named by the record (a name that cannot be a file is an error)
    per_record_files: ClassVar[bool] = False
    CONSTRAINTS: ClassVar[dict] = {}

    directory: Path | None = field(default=None, init=False, repr=False, compare=False)
    part: str = field(default="", init=False, repr=False, compare=False)
    tokenizer: object = field(default=None, init=False, repr=False, compare=False)
    values: bool = field(default=False, init=False, repr=False, compare=False)
    columns: tuple = field(default=(), init=False, repr=False, compare=False)
    extra: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    sources: list = field(default_factory=list, init=False, repr=False, compare=False)
    overwrite: bool = field(default=True, init=False, repr=False, compare=False)

    def __post_init__(self):
        validate_fields(self)

    def config(self) -> dict:
        """What the store was configured with (part of a run's plan: a resumed run with
        another store is refused)."""
        return {"name": self.name, **{k: getattr(self, k) for k in self.CONSTRAINTS}}

    def open(self, directory, part: str, tokenizer, *, values: bool = False, columns=(),
             extra: dict | None = None, sources=(), overwrite: bool = True) -> Store:
        """A writing copy of this store for ``part`` of ``directory``: ``values`` keeps the
        value channel, ``columns`` the metadata columns, ``extra`` goes to the header (or
        schema metadata), ``sources`` are ``(name, keywords)`` pairs of the inputs;
        ``overwrite=False`` refuses a part that exists."""
        if values and "values" not in self.supports:
            raise GenotokError(f"format={self.name!r} stores token ids only, not the values "
                               "(values=True); use format='corpus', 'parquet' or 'arrow'")
        s = copy.copy(self)
        s.directory = None if directory is None else local_path(directory, "a store's part")
        s.part, s.tokenizer, s.values = part, tokenizer, bool(values)
        s.columns = tuple(columns) if "metadata" in self.supports else ()
        s.extra, s.sources = dict(extra or {}), list(sources)
        s.overwrite = bool(overwrite)
        s._begin()
        return s

    def _begin(self) -> None:
        """Prepare the part (called by :meth:`open` on the copy)."""

    def write(self, batch: Ragged, meta: dict) -> None:  # pragma: no cover - the protocol
        raise NotImplementedError

    def commit(self) -> list[str]:  # pragma: no cover - the protocol
        raise NotImplementedError

    def abort(self) -> None:
        """Leave nothing of the part behind."""

    def finish(self, directory: Path, files: list[str], tokenizer, extra: dict) -> None:
        """Join a run's parts: ``manifest.json`` naming the files (written last; a run whose
        every input failed gets one empty part, so it is an empty, valid output)."""
        if not files and not self.per_record_files:
            files = self.open(directory, EMPTY, tokenizer).commit()
        with atomic_write(Path(directory) / MANIFEST, "w") as fh:
            json.dump({"format": f"genotok-{self.name}", "store": self.config(),
                       "files": files, **extra}, fh, indent=1)

    def _header(self) -> dict:
        """The tokenizer's identity and the part's extra, for a file's own metadata."""
        t = self.tokenizer
        return {"fingerprint": t.fingerprint, "vocab_size": t.vocab_size,
                "special_tokens": t.universe.special_token_ids,
                "settings": t.settings.as_dict(), "extra": self.extra,
                "sources": [{"name": n, **kw} for n, kw in self.sources]}


@dataclass
class MemoryStore(Store):
    """The records in memory: :attr:`ragged` (and :attr:`names`) once committed.

    Examples
    --------
    >>> from genotok import Tokenizer
    >>> s = MemoryStore().open(None, "part", Tokenizer(["chr1:0-10"]))
    >>> s.write(Ragged.from_list([[0, 1]]), {"names": ["a"]})
    >>> s.commit(), s.ragged.to_list()
    ([], [[0, 1]])
    """

    name: ClassVar[str] = "memory"
    supports: ClassVar[frozenset] = frozenset({"values", "names"})

    def _begin(self) -> None:
        self._parts: list[Ragged] = []
        self.names: list = []
        self.ragged: Ragged | None = None

    def write(self, batch: Ragged, meta: dict) -> None:
        self._parts.append(batch if self.values else Ragged(batch.data, batch.offsets))
        self.names += list(meta.get("names") or [None] * len(batch))

    def commit(self) -> list[str]:
        parts, self._parts = self._parts, []
        data = np.concatenate([p.data for p in parts]) if parts else np.zeros(0, np.int64)
        offsets = np.zeros(sum(len(p) for p in parts) + 1, np.int64)
        np.cumsum(np.concatenate([np.diff(p.offsets) for p in parts]) if parts else [],
                  out=offsets[1:])
        values = (np.concatenate([p.values for p in parts])
                  if parts and self.values and parts[0].values is not None else None)
        self.ragged = Ragged(data, offsets, values)
        return []


@dataclass
class CorpusStore(Store):
    """The indexed corpus: one ``.gtokc`` file per part (``part`` is its file name), joined by
    :func:`~genotok.formats.corpus.write_manifest`.

    Examples
    --------
    >>> import tempfile
    >>> from genotok import Corpus, Tokenizer
    >>> d = tempfile.mkdtemp()
    >>> s = CorpusStore().open(d, "part", Tokenizer(["chr1:0-10"]))
    >>> s.write(Ragged.from_list([[0, 1]]), {"names": ["a"]})
    >>> s.commit(), Corpus.open(f"{d}/part.gtokc").names
    (['part.gtokc'], ['a'])
    """

    name: ClassVar[str] = "corpus"
    supports: ClassVar[frozenset] = frozenset({"values", "names", "metadata"})
    suffix: ClassVar[str] = ".gtokc"

    def _begin(self) -> None:
        # a shard's own name, or a staging name for it (``_io.staging_name``), is written as given
        name = self.part if self.part.endswith((self.suffix, ".tmp")) else self.part + self.suffix
        self._w = CorpusWriter.for_tokenizer(
            self.directory / name, self.tokenizer, values_dtype="float32" if self.values else None,
            metadata_columns=list(self.columns), extra=self.extra, overwrite=self.overwrite)
        for n, kw in self.sources:
            self._w.add_source(n, **kw)

    def write(self, batch: Ragged, meta: dict) -> None:
        self._w.append_batch(batch if self.values else Ragged(batch.data, batch.offsets),
                             names=meta.get("names"),
                             meta={c: meta[c] for c in self.columns if c in meta})

    def commit(self) -> list[str]:
        return [self._w.close().name]

    def abort(self) -> None:
        self._w.abort()

    def finish(self, directory: Path, files: list[str], tokenizer, extra: dict) -> None:
        if not files:  # every input failed and was skipped: an empty, valid corpus
            files = self.open(directory, EMPTY, tokenizer).commit()
        write_manifest([Path(directory) / f for f in files], directory, extra=extra)
        Corpus.open(directory, expect=tokenizer)  # the cheap checks, before saying it is done


@dataclass
class GtokDirStore(Store):
    """One gtars ``.gtok`` file per record, named by the record's name made safe
    (:func:`genotok._names.to_file_stem`); ``meta["files"]``, when given, names the files
    (stems the caller made safe) instead. Ids only.

    Examples
    --------
    >>> import tempfile
    >>> from genotok import Tokenizer
    >>> s = GtokDirStore().open(tempfile.mkdtemp(), "part", Tokenizer(["chr1:0-10"]))
    >>> s.write(Ragged.from_list([[0], [1]]), {"names": ["a/b", "c"]})
    >>> s.commit()
    ['a%2Fb.gtok', 'c.gtok']
    """

    name: ClassVar[str] = "gtok-dir"
    supports: ClassVar[frozenset] = frozenset({"names"})
    suffix: ClassVar[str] = ".gtok"
    per_record_files: ClassVar[bool] = True

    def _begin(self) -> None:
        self._files: list[str] = []

    def write(self, batch: Ragged, meta: dict) -> None:
        files = meta.get("files") or [f"{to_file_stem(n)}{self.suffix}" for n in meta["names"]]
        for file, ids in zip(files, batch):
            gtok.write_gtok(ids, self.directory / file)
            self._files.append(file)

    def commit(self) -> list[str]:
        return self._files

    def abort(self) -> None:
        for f in self._files:
            (self.directory / f).unlink(missing_ok=True)


@dataclass
class _TableStore(Store):
    """Parquet and Arrow IPC: a part is one or more files ``PART-000.SUFFIX`` … of at most
    ``rows_per_shard`` records and about ``bytes_per_shard`` bytes of tokens (and values);
    columns ``input_ids`` (list<int32>), ``values`` (list<float32>, when kept), ``name`` and
    the metadata columns. Each file is written under a temporary name and renamed into place
    when full or committed."""

    rows_per_shard: int = 100_000
    bytes_per_shard: int = 256 << 20
    compression: str | None = None

    supports: ClassVar[frozenset] = frozenset({"values", "names", "metadata"})
    CONSTRAINTS: ClassVar[dict] = {"rows_per_shard": [Interval(Integral, 1, None)],
                                   "bytes_per_shard": [Interval(Integral, 1, None)],
                                   "compression": [Options("zstd", "lz4", "snappy", "gzip"),
                                                   None]}

    def _begin(self) -> None:
        self._pa = require("pyarrow", f"format={self.name!r}")
        if self.tokenizer.vocab_size > 2**31:
            raise GenotokError(f"vocab_size {self.tokenizer.vocab_size} does not fit the "
                               "list<int32> input_ids column")
        stem, dot, ext = self.part.rpartition(".")
        stem = stem if dot and f".{ext}" in (self.suffix, CorpusStore.suffix) else self.part
        self._stem = stem
        for old in self.directory.glob(f"{stem}-[0-9][0-9][0-9]{self.suffix}"):
            if not self.overwrite:
                raise FileExistsError(f"{old} exists; pass overwrite=True to replace it")
            old.unlink()  # a part of a killed run that never reached the journal
        self._files: list[str] = []
        self._writer = self._tmp = None
        self._schema = None
        self._rows = self._bytes = 0

    def _schema_for(self, meta: dict):
        pa = self._pa
        fields = [pa.field("input_ids", pa.list_(pa.int32()))]
        if self.values:
            fields.append(pa.field("values", pa.list_(pa.float32())))
        fields.append(pa.field("name", pa.string()))
        for c in self.columns:
            t = pa.array(meta.get(c, [])).type
            fields.append(pa.field(c, pa.string() if pa.types.is_null(t) else t))
        header = json.dumps(self._header()).encode()
        return pa.schema(fields, metadata={b"genotok": header})

    def write(self, batch: Ragged, meta: dict) -> None:
        pa = self._pa
        if self._schema is None:
            self._schema = self._schema_for(meta)
        n, offsets = len(batch), np.asarray(batch.offsets, np.int64)
        per_row = np.diff(offsets) * (8 if self.values else 4)
        a = 0
        while a < n:
            if self._writer is None:
                self._new_file()
            room = self.rows_per_shard - self._rows
            cum = np.cumsum(per_row[a:a + room])
            fit = int(np.searchsorted(cum, self.bytes_per_shard - self._bytes, side="right"))
            b = a + max(fit, 1 if self._rows == 0 else 0)
            b = min(b, a + room, n)
            if b > a:
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
                for f in list(self._schema)[len(cols):]:
                    col = meta.get(f.name)
                    cols.append(pa.array(list(col[a:b]) if col is not None else [None] * (b - a),
                                         type=f.type))
                self._writer.write_table(pa.Table.from_arrays(cols, schema=self._schema))
                self._rows += b - a
                self._bytes += int(per_row[a:b].sum())
                a = b
            if a < n:
                self._close_file()

    def _new_file(self) -> None:
        final = self.directory / f"{self._stem}-{len(self._files):03d}{self.suffix}"
        fd, self._tmp = make_temp(final)
        self._final = final
        self._fh = os.fdopen(fd, "wb")
        self._writer = self._open_writer(self._fh, self._schema)
        self._rows = self._bytes = 0

    def _close_file(self) -> None:
        self._writer.close()
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self._final)
        self._files.append(self._final.name)
        self._writer = self._tmp = None

    def commit(self) -> list[str]:
        if self._writer is None and not self._files:  # no records: one empty file
            if self._schema is None:
                self._schema = self._schema_for({})
            self._new_file()
        if self._writer is not None:
            self._close_file()
        return self._files

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._fh.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._tmp)
            self._writer = None
        for f in self._files:
            (self.directory / f).unlink(missing_ok=True)


@dataclass
class ParquetStore(_TableStore):
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

    def _open_writer(self, fh, schema):
        pq = require("pyarrow.parquet", "format='parquet'")
        return pq.ParquetWriter(fh, schema, compression=self.compression or "none")


@dataclass
class ArrowStore(_TableStore):
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
    CONSTRAINTS: ClassVar[dict] = {**_TableStore.CONSTRAINTS,
                                   "compression": [Options("zstd", "lz4"), None]}

    def _open_writer(self, fh, schema):
        pa = self._pa
        opts = pa.ipc.IpcWriteOptions(compression=self.compression)
        return pa.ipc.new_file(fh, schema, options=opts)


#: the stores by name: ``format="parquet"`` finds :class:`ParquetStore` here
STORES: dict[str, type[Store]] = {c.name: c for c in (MemoryStore, CorpusStore, GtokDirStore,
                                                       ParquetStore, ArrowStore)}


def get_store(format: str | Store) -> Store:
    """A store instance: ``format`` itself, or a registered name with its defaults.

    Examples
    --------
    >>> get_store("parquet")
    ParquetStore(rows_per_shard=100000, bytes_per_shard=268435456, compression='zstd')
    >>> get_store("csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: format must be one of 'memory', 'corpus', ... or a Store, got 'csv'
    """
    validate({"format": format}, {"format": [Options(*STORES), InstanceOf(Store)]}, "")
    return format if isinstance(format, Store) else STORES[format]()


__all__ = ["ArrowStore", "CorpusStore", "GtokDirStore", "MANIFEST", "MemoryStore",
           "ParquetStore", "STORES", "Store", "get_store"]
