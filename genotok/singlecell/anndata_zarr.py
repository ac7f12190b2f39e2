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
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from .. import _validate as V
from .._io import is_url
from .._optional import require
from ..errors import AnnDataError, GenotokError
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


@contextlib.contextmanager
def _errors(where: str):
    """What zarr, fsspec and numpy raise on a damaged or missing store → an AnnDataError naming
    it (``pretokenize --on-error skip`` catches GenotokError)."""
    try:
        yield
    except GenotokError:
        raise
    except Exception as exc:  # zarr's and fsspec's errors have no common base
        raise AnnDataError(f"{where}: cannot read the AnnData Zarr store ({type(exc).__name__}: "
                           f"{exc}); is it a complete store written by anndata's "
                           "write_zarr?") from None


def _kind(node) -> str:
    return "group" if hasattr(node, "members") else "array"


def _array(group, name: str, where: str, kinds: str, what: str):
    """``group[name]``, a one-dimensional array of a dtype kind in ``kinds``."""
    node = group.get(name)
    if node is None or _kind(node) != "array":
        raise AnnDataError(f"{where}: the sparse matrix has no {name!r} array "
                           f"({'missing' if node is None else 'a group'}); the store is damaged "
                           "or not written by anndata")
    if node.ndim != 1:
        raise AnnDataError(f"{where}: {name} must be one-dimensional, got shape {node.shape}")
    if np.dtype(node.dtype).kind not in kinds:
        raise AnnDataError(f"{where}: {name} must hold {what}, got dtype {node.dtype}")
    return node


class _ZarrMatrix(C._Source):
    """A matrix of the store (``X``, a layer, ``raw/X``), read by row chunks; checked as
    :class:`~genotok.singlecell.chunks._H5Source` checks a ``.h5ad`` one."""

    def __init__(self, group, key: str, where: str):
        err = AnnDataError
        self.where = f"{where}:{key}"
        with _errors(self.where):
            node = group.get(key)
            if node is None:
                have = list(group["layers"].keys()) if "layers" in group else []
                raise err(f"{where}: no matrix {key!r} (layers: {have})")
            self.node = node
            if _kind(node) == "group":
                enc = str(node.attrs.get("encoding-type", ""))
                if enc not in ("csr_matrix", "csc_matrix"):
                    raise err(f"{self.where}: unknown matrix encoding {enc!r}")
                self.kind = enc[:3]
                shape = node.attrs.get("shape")
                if shape is None:
                    raise err(f"{self.where}: the sparse matrix has no shape attribute")
                self.n_rows, self.n_cols = V.shape(shape, self.where, what="the shape attribute",
                                                   error=err)
                ind = _array(node, "indices", self.where, "iu", "integers")
                dat = _array(node, "data", self.where, "biuf", "numbers")
                ptr = _array(node, "indptr", self.where, "iu", "integers")
                self.nnz = int(ind.shape[0])
                # a chunk not in the store reads as the fill value 0: zarr leaves out a chunk
                # of 0s, but a deleted one reads the same; chunks() then refuses a row that
                # holds column 0 twice (what a lost chunk of several entries of a row gives)
                have = getattr(ind, "nchunks_initialized", None)
                self._gaps = have is not None and bool(self.nnz) and have < ind.nchunks
                V.same_length(dat, self.nnz, self.where, what="data", error=err)
                n_major = self.n_rows if self.kind == "csr" else self.n_cols
                if ptr.shape[0] != n_major + 1:
                    raise err(f"{self.where}: indptr has {ptr.shape[0]} entries, expected "
                              f"{n_major + 1} for a {self.kind.upper()} matrix of shape "
                              f"{(self.n_rows, self.n_cols)}")
                self.itemsize = np.dtype(ind.dtype).itemsize + np.dtype(dat.dtype).itemsize
            else:
                self.kind = "dense"
                if node.ndim != 2:
                    raise err(f"{self.where}: expected a 2-D matrix, got {node.shape}")
                if np.dtype(node.dtype).kind not in "biuf":
                    raise err(f"{self.where}: matrix values must be numeric, got dtype "
                              f"{node.dtype}")
                self.n_rows, self.n_cols = map(int, node.shape)
                self.itemsize = np.dtype(node.dtype).itemsize
                self.nnz = None

    def chunks(self, budget, per_nnz, chunk_rows, rows=None) -> Iterator[C.Chunk]:
        err, where, node = AnnDataError, self.where, self.node
        lo0, hi0 = (0, self.n_rows) if rows is None else rows
        with _errors(where):
            if self.kind == "csr":
                indptr = V.offsets(node["indptr"][:], self.nnz, where, n_rows=self.n_rows,
                                   what="indptr (CSR, per row)", error=err)
                C._check_row_lengths(indptr, self.n_cols, where)
                bounds = lo0 + C._row_bounds(indptr[lo0:hi0 + 1], max(1, budget // per_nnz),
                                             chunk_rows)
                ind, dat = node["indices"], node["data"]
                for lo, hi in zip(bounds[:-1], bounds[1:]):
                    a, b = int(indptr[lo]), int(indptr[hi])
                    indices = C._check_columns(ind[a:b], indptr[lo:hi + 1], self.n_cols, where,
                                               int(lo))
                    indices, data = C._clean_dtypes(indices, np.asarray(dat[a:b]), where)
                    if self._gaps:
                        _no_lost_chunk(indices, indptr[lo:hi + 1] - a, where, int(lo))
                    yield C.Chunk(int(lo), indptr[lo:hi + 1] - a, indices, data, self.n_cols)
            elif self.kind == "dense":
                step = C._dense_rows(self.n_cols, self.itemsize, budget, chunk_rows)
                for lo in range(lo0, hi0, step):
                    yield C._dense_chunk(np.asarray(node[lo:min(lo + step, hi0)]), lo, where)
            else:
                if self.nnz * (self.itemsize + 16) > budget:
                    raise err(f"{where}: X is stored column-major (CSC, {self.nnz:,} entries), "
                              "which cannot be read by cells without loading it, and it needs "
                              "more than memory_mb allows: raise memory_mb, or rewrite the "
                              "store as CSR once (a = anndata.read_zarr(path); a.X = "
                              "a.X.tocsr(); a.write_zarr(new_path))")
                import scipy.sparse as sp

                # checked by _MemorySource (through _checked_csr) before scipy converts it
                m = sp.csc_matrix((self.n_rows, self.n_cols), dtype=node["data"].dtype)
                m.data, m.indices = node["data"][:], node["indices"][:]
                m.indptr = node["indptr"][:]
                yield from C._MemorySource(m, where).chunks(budget, per_nnz, chunk_rows, rows)


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


def as_options(read, kind: type):
    """A plain :class:`~genotok.AnnDataOptions` as the ``kind`` (its subclass) of the same
    fields; anything else as it is (checked by the source's ``read_options``).

    >>> as_options(AnnDataOptions(layer="x"), ZarrOptions)
    ZarrOptions(layer='x', region_columns=None, var_names_sep=None, one_based=False, chunk_rows=None, dtype=<class 'numpy.int64'>, modality=None, raw=False, storage_options=None)
    """
    if type(read) is AnnDataOptions and kind is not AnnDataOptions:
        return kind(**{f.name: getattr(read, f.name) for f in fields(read)})
    return read


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
    def read_options(cls, read) -> ZarrOptions:
        """:class:`ZarrOptions`; a plain :class:`~genotok.AnnDataOptions` reads a store too."""
        return super().read_options(as_options(read, ZarrOptions))

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
        columns = list(columns)
        with _errors(f"{self.where}:obs"):
            have = [c for c in self._group("obs").keys()
                    if c not in (str(self._group("obs").attrs.get("_index", "_index")),
                                 "__categories")]
        missing = [c for c in columns if c not in have]
        if missing:
            raise AnnDataError(f"{self.where}: obs has no column(s) {missing}; it has {have}")
        index = str(self._group("obs").attrs.get("_index", "_index"))
        names = [str(x) for x in self._column("obs", index)]
        meta = {c: self._column("obs", c) for c in columns}
        return lambda lo, hi: (names[lo:hi], {c: v[lo:hi] for c, v in meta.items()})

    def settings(self) -> dict:
        return {"layer": self.read.layer, "store": "zarr",
                **({"raw": True} if self.read.raw else {})}


S.register_source(ZarrSource)

__all__ = ["ZarrOptions", "ZarrSource", "is_anndata_zarr", "open_zarr"]
