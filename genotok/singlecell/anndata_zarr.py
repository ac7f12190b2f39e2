"""AnnData in Zarr (``adata.write_zarr``), local or remote (``s3://`` through fsspec), read by
row chunks like a ``.h5ad``: :class:`ZarrSource`.

The store is opened with ``zarr`` (``pip install 'genotok[zarr]'``; zarr format 2 and 3 alike)
and read lazily: ``X`` (CSR, CSC within the memory budget, dense), ``layers/<name>`` or
``raw/X`` with ``raw/var``, as :class:`~genotok.AnnDataOptions` says (``layer``, ``raw``, the
region columns); a remote store's ``storage_options`` go in :class:`ZarrOptions`. Nothing read
is trusted: the shape attribute, the arrays' presence, dtypes and lengths are checked on open,
``indptr`` and every chunk's column indices before a kernel or scipy sees them, and anything
wrong, or anything zarr or fsspec raise on a damaged store, is an :class:`AnnDataError` naming
the store and the key. The ``obs``/``var`` columns are read by anndata's own element reader
(categoricals, nullables, strings as anndata reads them), only the columns asked for.

Examples
--------
>>> from genotok.singlecell.sources import source_class
>>> source_class("cells.zarr").kind, source_class("s3://bucket/atlas.zarr").kind
('zarr', 'zarr')
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._io import is_url
from .._optional import require
from ..errors import AnnDataError
from ..params import InstanceOf
from . import chunks as C
from . import sources as S
from .reading import AnnDataOptions


@dataclass(frozen=True)
class ZarrOptions(AnnDataOptions):
    """:class:`~genotok.AnnDataOptions` for an AnnData Zarr store, and the ``storage_options``
    of a remote one (fsspec's, e.g. ``{"anon": True}`` or an S3 ``endpoint_url`` in
    ``client_kwargs``). A plain ``AnnDataOptions`` reads a store too.

    Examples
    --------
    >>> ZarrOptions(layer="counts", storage_options={"anon": True}).storage_options
    {'anon': True}
    """

    storage_options: dict | None = None

    name: ClassVar[str] = "zarr"
    CONSTRAINTS: ClassVar[dict] = {**AnnDataOptions.CONSTRAINTS,
                                   "storage_options": [InstanceOf(dict), None]}


def _errors(where: str):
    """What zarr, fsspec and numpy raise on a damaged or missing store → an AnnDataError naming
    it (zarr's and fsspec's errors have no common base)."""
    return C.read_errors(where, "the AnnData Zarr store",
                         hint="; is it a complete store written by anndata's write_zarr?")


def _kind(node) -> str:
    return "group" if hasattr(node, "members") else "array"


class _ZarrMatrix(C._StoredSource):
    """A matrix of the store (``X``, a layer, ``raw/X``), read by row chunks and checked as a
    ``.h5ad`` one is (:class:`~genotok.singlecell.chunks._StoredSource`)."""

    array_word, file_word = "array", "store"
    csc_hint = ("raise memory_mb, or rewrite the store as CSR once (a = anndata.read_zarr(path); "
                "a.X = a.X.tocsr(); a.write_zarr(new_path))")

    def __init__(self, group, key: str, where: str):
        self.key, self.where = key, f"{where}:{key}"
        with _errors(self.where):
            node = group.get(key)
            if node is None:
                have = list(group["layers"].keys()) if "layers" in group else []
                raise AnnDataError(f"{where}: no matrix {key!r} (layers: {have})")
            self.node = node
            self._check_layout(node)
            # a chunk not in the store reads as the fill value 0: zarr leaves out a chunk of 0s,
            # but a deleted one reads the same; _check_chunk then refuses a row that holds
            # column 0 twice (what a lost chunk of several entries of a row gives)
            ind = node.get("indices") if self.kind != "dense" else None
            have = getattr(ind, "nchunks_initialized", None)
            self._gaps = have is not None and bool(self.nnz) and have < ind.nchunks

    def _check_chunk(self, indices: np.ndarray, ptr: np.ndarray, row0: int) -> None:
        if self._gaps:
            _no_lost_chunk(indices, ptr, self.where, row0)

    @contextlib.contextmanager
    def _node(self):
        with _errors(self.where):
            yield self.node

    @staticmethod
    def _is_array(node) -> bool:
        return _kind(node) == "array"


def _no_lost_chunk(indices: np.ndarray, ptr: np.ndarray, where: str, row0: int) -> None:
    """Refuse rows holding column 0 twice in a store missing chunks of ``indices``."""
    zero = np.asarray(indices) == 0
    row = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    twice = np.flatnonzero(zero[1:] & zero[:-1] & (row[1:] == row[:-1]))
    if twice.size:
        raise AnnDataError(f"{where}: indices: chunks are missing from the store and row "
                           f"{row0 + int(row[twice[0]])} holds column 0 twice: a damaged or "
                           "partial copy")


def open_zarr(path, storage_options: dict | None = None):
    """The root group of an AnnData Zarr store (local or a URL), checked to be one.

    >>> open_zarr("no/such/cells.zarr")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.AnnDataError: no/such/cells.zarr: no such directory (an AnnData Zarr store is one)
    """
    where = os.fspath(path)
    if not is_url(where) and not os.path.isdir(where):
        raise AnnDataError(f"{where}: no such directory (an AnnData Zarr store is one)")
    zarr = require("zarr", "reading an AnnData Zarr store")
    with _errors(where):
        root = zarr.open_group(where, mode="r",
                               **({"storage_options": storage_options} if is_url(where) and
                                  storage_options else {}))
        if str(root.attrs.get("encoding-type", "")) != "anndata" and "X" not in root:
            raise AnnDataError(f"{where}: a Zarr group that is not an AnnData (no "
                               "encoding-type 'anndata' and no X)")
    return root


def _read_elem():
    """anndata's element reader (``anndata.io`` since 0.11, ``anndata.experimental`` before)."""
    try:
        from anndata.io import read_elem
    except ImportError:  # pragma: no cover - anndata < 0.11
        from anndata.experimental import read_elem
    return read_elem


def is_anndata_zarr(path: str) -> bool:
    """Whether the local directory ``path`` is an AnnData Zarr store (format 2 or 3), told by
    its metadata files, without zarr.

    >>> is_anndata_zarr(".")
    False
    """
    import json

    for name in ("zarr.json", ".zattrs"):
        meta = os.path.join(path, name)
        if os.path.isfile(meta):
            try:
                with open(meta, "rb") as fh:
                    doc = json.loads(fh.read(1 << 20))
            except (OSError, ValueError):
                return False
            attrs = doc.get("attributes", doc) if name == "zarr.json" else doc
            return isinstance(attrs, dict) and attrs.get("encoding-type") == "anndata"
    return False


class ZarrSource(S.CellSource):
    """An AnnData Zarr store by path or URL (``cells.zarr``, ``s3://bucket/cells.zarr``), read
    by row chunks: the same read options as a ``.h5ad`` (:class:`~genotok.AnnDataOptions`:
    ``layer``, ``raw``, region columns; :class:`ZarrOptions` adds a remote store's
    ``storage_options``), tokens equal to the same AnnData's in memory.

    Examples
    --------
    >>> from genotok.singlecell.sources import source_class
    >>> source_class("s3://bkt/cells.zarr") is ZarrSource, ZarrSource.kind
    (True, 'zarr')
    """

    kind = "zarr"
    suffixes = (".zarr",)
    options = ZarrOptions
    has_obs = True
    header = "anndata"

    def __init__(self, path, read: ZarrOptions | None = None):
        read = type(self).read_options(read)
        if read.modality is not None:
            raise AnnDataError(f"{os.fspath(path)}: modality={read.modality!r} asked, but an "
                               "AnnData Zarr store has one matrix, no modalities")
        self.read = read
        self.path = self.where = os.fspath(path).rstrip("/")
        self.root = open_zarr(self.path, getattr(read, "storage_options", None))
        with _errors(self.where):
            if read.raw:
                if "raw" not in self.root or "X" not in self.root["raw"]:
                    raise AnnDataError(f"{self.where}: raw=True, but raw (with X and var) is "
                                       "not in the store")
                if read.layer is not None:
                    raise AnnDataError(f"{self.where}: raw has no layers; read raw=True or "
                                       f"layer={read.layer!r}, not both")
            key = "raw/X" if read.raw else ("X" if read.layer is None else
                                            f"layers/{read.layer}")
            self.matrix = _ZarrMatrix(self.root, key, self.where)
        self.n_rows, self.n_cols, self.nnz = (self.matrix.n_rows, self.matrix.n_cols,
                                              self.matrix.nnz)
        n_obs = self._index_length("obs")
        if n_obs != self.n_rows:
            raise AnnDataError(f"{self.matrix.where}: {self.n_rows} matrix rows but {n_obs} "
                               "cells in obs")
        self._var = None

    @classmethod
    def open(cls, obj, read=None, **context) -> S.CellSource:
        return cls(obj, read)

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        return os.path.isdir(path) and is_anndata_zarr(path)

    def names(self) -> list[str]:
        return self.obs(())(0, self.n_rows)[0]

    def _frame_key(self, key: str) -> str:
        return "raw/var" if key == "var" and self.read.raw else key

    def _group(self, key: str):
        g = self.root.get(self._frame_key(key))
        if g is None or _kind(g) != "group":
            raise AnnDataError(f"{self.where}: no {self._frame_key(key)!r} data frame group; "
                               "not an AnnData Zarr store written by anndata")
        return g

    def _index_length(self, key: str) -> int:
        with _errors(f"{self.where}:{key}"):
            g = self._group(key)
            node = g.get(str(g.attrs.get("_index", "_index")))
            if node is None or _kind(node) != "array" or node.ndim != 1:
                raise AnnDataError(f"{self.where}: no {key} index; the store is damaged")
            return int(node.shape[0])

    def _column(self, key: str, name: str) -> np.ndarray:
        import pandas as pd

        read_elem = _read_elem()
        where = f"{self.where}:{self._frame_key(key)}/{name}"
        with _errors(where):
            values = read_elem(self._group(key)[name])
            if isinstance(values, np.ndarray) and values.dtype.kind in "UT":
                values = values.astype(object)
            values = pd.Series(values).to_numpy()  # as the AnnData in memory gives its columns
        if values.ndim != 1 or values.shape[0] != (self.n_rows if key == "obs" else
                                                   self.n_cols):
            raise AnnDataError(f"{where}: {values.shape} entries, expected one per "
                               f"{'cell' if key == 'obs' else 'feature'}")
        return values

    def features(self):
        if self._var is None:
            import pandas as pd

            read_elem = _read_elem()
            with _errors(f"{self.where}:{self._frame_key('var')}"):
                var = read_elem(self._group("var"))
            if not isinstance(var, pd.DataFrame) or len(var) != self.n_cols:
                raise AnnDataError(f"{self.where}:{self._frame_key('var')}: "
                                   f"{getattr(var, 'shape', '?')} rows, but the matrix has "
                                   f"{self.n_cols} columns")
            self._var = var
        return self._var

    def obs(self, columns):
        with _errors(f"{self.where}:obs"):
            index = str(self._group("obs").attrs.get("_index", "_index"))
            have = [c for c in self._group("obs").keys() if c not in (index, "__categories")]
        columns = S.obs_columns_in(columns, have, self.where)
        return S.rows_of([str(x) for x in self._column("obs", index)],
                         {c: self._column("obs", c) for c in columns})

    def settings(self) -> dict:
        return {"layer": self.read.layer, "store": "zarr",
                **({"raw": True} if self.read.raw else {})}


S.register_source(ZarrSource)

__all__ = ["ZarrOptions", "ZarrSource", "is_anndata_zarr", "open_zarr"]
