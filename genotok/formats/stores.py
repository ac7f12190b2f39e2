"""Stores: where token batches go, and how they read back. One class per backend, found by
name in :data:`STORES` (and plugins: the entry point group ``genotok.stores``).

The protocol and the rules every store shares are in :mod:`genotok.formats.store`; each store
registers its reader beside its writer (:meth:`Store.read_file`), so :meth:`genotok.Corpus.open`
opens any store's output by its manifest's format and gives the one reader API.

Built in: ``"memory"`` (a :class:`~genotok.ragged.Ragged`), ``"corpus"`` (the indexed corpus,
:class:`~genotok.formats.corpus.CorpusWriter`), ``"gtok-dir"`` (one gtars ``.gtok`` file per
record), ``"parquet"`` and ``"arrow"`` (:mod:`genotok.formats.tables`), ``"jsonl"``
(:mod:`genotok.formats.jsonl`). A new backend is one class and one registry line (here, or an
entry point of its own package: see ``docs/architecture.md``); ``genotok.testing.check_store``
says whether it keeps the contract.

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

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from .. import _plugins
from .._names import from_file_stem, to_file_stem
from ..errors import GtokFormatError
from ..params import InstanceOf, Options, validate, validated
from ..ragged import Ragged
from . import gtok
from .corpus import MANIFEST, Corpus, write_manifest
from .corpus.manifest import _set_store_opener
from .corpus.writer import CorpusWriter
from .jsonl import JsonlStore
from .store import EMPTY, ArrayShard, Store, _open_output
from .tables import ArrowStore, ParquetStore


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
    writes_files: ClassVar[bool] = False

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

    @classmethod
    def read_file(cls, path: Path, header: dict | None = None):
        """Nothing: a memory store writes no files (its records are :attr:`ragged`)."""
        raise GtokFormatError(f"{path}: the memory store writes no files; its records are the "
                              "committed store's .ragged")


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
    supports: ClassVar[frozenset] = frozenset({"values", "names", "metadata", "sources", "extra"})
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
        self.check_files(directory, files, tokenizer, extra)  # every shard opened, counted
        write_manifest([Path(directory) / f for f in files], directory, extra=extra)
        Corpus.open(directory, expect=tokenizer)  # the cheap checks, before saying it is done

    @classmethod
    def read_file(cls, path: Path, header: dict | None = None):
        """A corpus file: read by :class:`~genotok.formats.corpus.Corpus` itself."""
        return Corpus.open(path)._shards[0]

    def count_files(self, directory: Path, files: list[str], header: dict):
        """Each shard opened (its header, digest, layout and counts checked). Not verified
        again byte by byte: its bytes are those its batch committed (the run's journal stamp,
        a digest of the whole file, is re-checked before ``finish``:
        :func:`genotok.pipeline.journal.check_stamps`), or those just written by this call;
        ``Corpus.verify`` here was a fourth pass over every shard (13 of a Geneformer
        ``pretokenize``'s ~230 CPU ms)."""
        for f in files:
            c = Corpus.open(Path(directory) / f, expect=header["fingerprint"])
            yield f, len(c), c.n_tokens


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

    @classmethod
    def read_file(cls, path: Path, header: dict | None = None) -> ArrayShard:
        """One record's file (its name: the file's stem)."""
        return cls.read_output(Path(path).parent, [Path(path)], header or {})[0]

    @classmethod
    def read_output(cls, directory: Path, files: list[Path], header: dict) -> list[ArrayShard]:
        """Every record's file joined into one shard (record name: the file's stem)."""
        ids, names = [], []
        for f in files:
            ids.append(gtok.read_gtok(f, mmap=False))
            try:
                names.append(from_file_stem(f.name[:-len(cls.suffix)]))
            except (UnicodeError, ValueError):  # not a stem genotok wrote: keep it as is
                names.append(f.name[:-len(cls.suffix)])
        offsets = np.zeros(len(ids) + 1, np.int64)
        np.cumsum([x.size for x in ids], out=offsets[1:])
        data = np.concatenate(ids) if ids else np.zeros(0, np.uint32)
        return [ArrayShard(directory, data, offsets, None, header, names, {})]

    def count_files(self, directory: Path, files: list[str], header: dict):
        """One record per file, its ids counted from the file (checked, memory-mapped)."""
        for f in files:
            yield f, 1, int(gtok.read_gtok(Path(directory) / f).size)


#: the stores by name: ``format="parquet"`` finds :class:`ParquetStore` here; plugins (the
#: entry point group ``genotok.stores``) are added on the first lookup (:func:`stores`)
STORES: dict[str, type[Store]] = {c.name: c for c in (MemoryStore, CorpusStore, GtokDirStore,
                                                       ParquetStore, ArrowStore, JsonlStore)}


def register_store(cls: type[Store]) -> type[Store]:
    """Add a store class to :data:`STORES` under its ``name`` (a class decorator, too): what
    ``format=``, ``--format`` and :meth:`genotok.Corpus.open` then find. The entry point group
    ``genotok.stores`` registers a plugin's class through it. A class that is no
    :class:`~genotok.formats.store.Store` subclass, or has no ``name``, is refused; so is a
    name another class holds (:func:`genotok._plugins.claim`, every registry's rule).

    Examples
    --------
    >>> class Mine(MemoryStore):
    ...     name = "mine-example"
    >>> register_store(Mine) is Mine, "mine-example" in stores()
    (True, True)
    >>> del STORES["mine-example"]
    >>> register_store(dict)
    Traceback (most recent call last):
    ...
    TypeError: a store class derives from Store, got <class 'dict'>
    """
    return _plugins.claim(STORES, cls, Store, "name", "store")


def stores() -> dict[str, type[Store]]:
    """:data:`STORES` with the plugins of the entry point group ``genotok.stores`` loaded
    (once per process): what ``format=`` and the CLI's ``--format`` accept.

    Examples
    --------
    >>> sorted(stores())[:3]
    ['arrow', 'corpus', 'gtok-dir']
    """
    _plugins.load("genotok.stores", register_store)
    return STORES


@validated({"format": [InstanceOf(str, Store)]})  # the names: the registry, at the call
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
    validate({"format": format}, {"format": [Options(*stores()), InstanceOf(Store)]}, "")
    return format if isinstance(format, Store) else STORES[format]()


def _open_store_output(directory: Path, manifest: dict, trusted: bool = False) -> list:
    """The shards of the output in ``directory`` whose ``manifest`` names a store
    (``format: genotok-<name>``): what :meth:`genotok.Corpus.open` calls for any store's
    output but the corpus'.

    Examples
    --------
    >>> _open_store_output(Path("out"), {"format": "genotok-csv"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.GtokFormatError: out/manifest.json: the manifest's format 'genotok-csv' is no store's ...
    """
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    name = fmt[len("genotok-"):] if isinstance(fmt, str) and fmt.startswith("genotok-") else None
    known = stores()
    if name not in known or not known[name].writes_files or name == "corpus":
        raise GtokFormatError(f"{Path(directory) / MANIFEST}: the manifest's format "
                              f"{str(fmt)[:40]!r} is no store's this install knows (stores: "
                              f"{', '.join(sorted(known))}); a plugin store's output needs its "
                              "package installed")
    return _open_output(known[name], Path(directory), manifest, trusted=trusted)


_set_store_opener(_open_store_output)  # Corpus.open(dir) comes here for a store's manifest


__all__ = ["EMPTY", "STORES", "ArrowStore", "CorpusStore", "GtokDirStore", "JsonlStore",
           "MANIFEST", "MemoryStore", "ParquetStore", "Store", "get_store",
           "register_store", "stores"]
