"""Containers people have, read by path: ``.h5ad`` (every encoding anndata still reads, ``raw``),
MuData ``.h5mu`` and Cell Ranger's 10x ``.h5``.

:func:`open_container` looks inside an HDF5 file and says where its cells x features matrix,
its cells (``obs``) and its features (``var``) are; the result (a :class:`Container`, a path
to :func:`os.fspath`) is what the single-cell readers take wherever a path is accepted, so a
file tokenizes exactly as the same data read into memory by anndata, muon or scanpy:

- **.h5ad**: ``X`` (CSR, CSC or dense), ``layers/<name>``, or ``raw/X`` with ``raw/var``
  (``AnnDataOptions(raw=True)``); data frame columns as anndata reads them (see
  :func:`~genotok.singlecell.sources._h5_column`: anndata 0.7's categoricals and string
  encodings too).
- **.h5mu** (MuData, muon): one modality, ``mod/<name>``, which is an anndata group read out
  of core like a ``.h5ad`` (the same h5py source with a group root, never a copy). Chosen by
  ``AnnDataOptions(modality=...)``, else the one named ``atac``, else the only one whose
  features are regions (``var`` chrom/start/end columns or region-like ``var_names``).
- **10x .h5** (Cell Ranger ``filtered_peak_bc_matrix.h5``, ARC's ``filtered_feature_bc_matrix
  .h5``): the ``matrix/`` group stores features x barcodes as CSC, which is barcodes x features
  as CSR: rows are read by chunks without a transpose. Only features with ``feature_type ==
  "Peaks"`` are columns (the others, e.g. ``Gene Expression``, are dropped as scanpy's
  ``read_10x_h5(...)[:, var.feature_types == "Peaks"]`` drops them); their regions come from
  ``features/interval`` (``chr1:100-200``), else from their names; barcodes are the cell
  names. Every integer (``shape``, ``indptr``, ``indices``) is checked as for ``.h5ad``.

:class:`H5muSource` and :class:`TenxH5Source` are the cell sources of ``.h5mu`` and 10x ``.h5``
files: subclasses of :class:`H5adSource` (the ``.h5ad`` source: the same h5py readers,
another place in the file), each added to the registry by one :func:`register_source` line, so
:func:`~genotok.singlecell.sources.open_source` and ``pretokenize`` find them by suffix, else by
a look inside an HDF5 file (:meth:`~genotok.CellSource.sniff`).

Examples
--------
>>> import genotok
>>> c = open_container(genotok.examples_dir() / "pbmc.h5ad")
>>> c.kind, c.matrix_key()
('h5ad', 'X')
>>> from genotok.singlecell.sources import source_class
>>> source_class("cells.h5mu").__name__, source_class("filtered_peak_bc_matrix.h5").kind
('H5muSource', '10x')
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from ..errors import AnnDataError, SourceError
from ..params import PATH, HasAttr, validated
from . import chunks as C
from . import sources as S

KINDS = ("h5ad", "h5mu", "10x")
PEAKS = "Peaks"


@dataclass(frozen=True)
class Container(os.PathLike):
    """Where the cells x features matrix, the cells and the features are in one HDF5 file.

    ``kind`` is ``"h5ad"``, ``"h5mu"`` or ``"10x"``; ``root`` the anndata group (``""``, or
    ``"mod/atac"`` in a ``.h5mu``); ``raw`` reads ``raw/X`` and ``raw/var``. Made by
    :func:`open_container`; ``os.fspath`` gives the file's path.

    Examples
    --------
    >>> c = Container("cells.h5mu", kind="h5mu", root="mod/atac")
    >>> c.matrix_key(), c.matrix_key("counts"), str(c)
    ('mod/atac/X', 'mod/atac/layers/counts', 'cells.h5mu:mod/atac')
    """

    path: str
    kind: str = "h5ad"
    root: str = ""
    raw: bool = False

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path if not self.root else f"{self.path}:{self.root}"

    def _key(self, key: str) -> str:
        return f"{self.root}/{key}" if self.root else key

    def matrix_key(self, layer: str | None = None) -> str:
        """The HDF5 key of the matrix (``X``, ``layers/<layer>``, ``raw/X``; ``matrix`` in a
        10x file)."""
        if self.kind == "10x":
            if layer is not None:
                raise AnnDataError(f"{self.path}: a 10x .h5 file has one matrix, no layer "
                                   f"{layer!r}")
            return "matrix"
        if self.raw:
            if layer is not None:
                raise AnnDataError(f"{self}: raw has no layers; read raw=True or "
                                   f"layer={layer!r}, not both")
            return self._key("raw/X")
        return self._key("X" if layer is None else f"layers/{layer}")

    def source(self, layer: str | None = None) -> C._Source:
        """The matrix, read by row chunks with h5py."""
        if self.kind == "10x":
            return _tenx_source(self.path)
        key = self.matrix_key(layer)
        with C._h5_errors(self.path), _file(self.path) as f:
            if key not in f:
                have = list(f[self._key("layers")].keys()) if self._key("layers") in f else []
                what = "raw matrix" if self.raw else "matrix"
                raise AnnDataError(f"{self.path}: no {what} {key!r}"
                                   + ("" if self.raw else f" (layers: {have})"))
        return C._H5Source(self.path, key)

    def frame(self, key: str) -> S._Frame:
        """The ``obs`` or ``var`` data frame (only what is read is loaded)."""
        if self.kind == "10x":
            return _tenx_frame(self.path, key)
        at = self._key("raw/var" if key == "var" and self.raw else key)
        fr = S._h5_frame(self.path, at)
        return fr if at == key else dataclasses.replace(fr, where=f"{self.path}:{at}")

    def n_obs(self) -> int:
        """The number of cells (the length of the obs index, not read)."""
        if self.kind == "10x":  # the barcodes, checked against the matrix by the readers
            return _tenx_barcodes(self.path, lambda node: int(node.shape[0]))
        return C._h5_n_obs(self.path, self._key("obs"))

    def obs_rows(self, lo: int, hi: int, columns,
                 names: bool = True) -> tuple[list[str] | None, dict]:
        """Cell names (``None`` unless ``names``) and ``obs`` columns of cells ``lo:hi``."""
        if self.kind == "10x":
            fr = _tenx_frame(self.path, "obs")
            if columns:
                raise AnnDataError(f"{self.path}: a 10x .h5 file has no obs columns "
                                   f"({list(columns)} asked)")
            return [str(x) for x in fr.index()[lo:hi]] if names else None, {}
        with C._h5_errors(self.path), _file(self.path) as f:
            g = f[self._key("obs")]
            index = S._attr_str(g.attrs.get("_index", "_index"))
            rows = S._h5_column(g, index, slice(lo, hi)) if names else None
            meta = {c: S._h5_column(g, c, slice(lo, hi)) for c in columns}
        return None if rows is None else [str(x) for x in rows], meta


def _file(path: str):
    import h5py

    return h5py.File(path, "r")


@validated({"path": PATH, "options": [HasAttr("modality", "raw"), None]})
def open_container(path, options=None) -> Container:
    """The :class:`Container` of a file path: what kind of file it is and where its matrix is.

    Parameters
    ----------
    path
        A ``.h5ad``, ``.h5mu`` or 10x ``.h5`` file (told apart by their contents, not their
        names), or a :class:`Container` (returned as it is).
    options
        :class:`~genotok.AnnDataOptions`: ``modality`` (a ``.h5mu``'s ``mod/<name>``; default:
        ``atac``, else the only modality whose features are regions) and ``raw``.

    Raises
    ------
    AnnDataError
        Not a file, not HDF5, a modality that is not there (the message lists them), several
        region modalities and none named, ``raw=True`` without a ``raw`` group, a modality
        asked of a file that has none.
    SourceError
        An HDF5 file that is none of the three (:func:`hdf5_kind`).

    Examples
    --------
    >>> import genotok
    >>> from genotok import AnnDataOptions
    >>> open_container(genotok.examples_dir() / "pbmc.h5ad", AnnDataOptions(modality="atac"))
    Traceback (most recent call last):
    ...
    genotok.errors.AnnDataError: ...pbmc.h5ad: modality='atac' asked, but this is a .h5ad file (one matrix, no modalities); leave modality unset
    """
    if isinstance(path, Container):
        return path
    import h5py

    path = os.fspath(path)
    modality = getattr(options, "modality", None)
    raw = bool(getattr(options, "raw", False))
    if not os.path.isfile(path):
        raise AnnDataError(f"{path}: no such file")
    with C._h5_errors(path), _file(path) as f:
        kind = _kind_of(f)
        if kind is None:
            raise SourceError(f"{path}: an HDF5 file that is none of the cell inputs: not an "
                              ".h5ad (anndata's encoding-type, X, obs and var), a .h5mu (mod/) "
                              "nor a 10x .h5 (matrix/features/feature_type)")
        root = "mod/" + _modality(f, path, modality) if kind == "h5mu" else ""
        if modality is not None and kind != "h5mu":
            raise AnnDataError(f"{path}: modality={modality!r} asked, but this is a "
                               f"{'.h5ad' if kind == 'h5ad' else '10x .h5'} file (one matrix, "
                               "no modalities); leave modality unset")
        if raw:
            if kind == "10x":
                raise AnnDataError(f"{path}: a 10x .h5 file has no raw matrix; leave raw unset")
            have = f.get(f"{root}/raw" if root else "raw")
            if not isinstance(have, h5py.Group) or "X" not in have or "var" not in have:
                raise AnnDataError(f"{path}: raw=True, but {root + '/' if root else ''}raw "
                                   "(with X and var) is not in the file")
    return Container(path, kind, root, raw)


def _modality(f, path: str, asked: str | None) -> str:
    """The ``mod/<name>`` of a ``.h5mu`` to read (see :func:`open_container`)."""
    import h5py

    mods = [k for k in f["mod"] if isinstance(f["mod"][k], h5py.Group)]
    if asked is not None:
        if asked not in mods:
            raise AnnDataError(f"{path}: no modality {asked!r}; the modalities are {mods}")
        return asked
    if "atac" in mods:
        return "atac"
    regional = [m for m in mods if _has_regions(path, f"mod/{m}/var")]
    if len(regional) == 1:
        return regional[0]
    which = "none has" if not regional else f"{regional} have"
    raise AnnDataError(f"{path}: cannot tell which modality to read: none is named 'atac' and "
                       f"{which} regions as features (modalities: {mods}); name one with "
                       "AnnDataOptions(modality=...)")


def _has_regions(path: str, key: str) -> bool:
    """``var`` of the group ``key`` has chrom/start/end columns or region-like names."""
    from ..errors import RegionParseError
    from ..regions import parse_region_strings
    from .varnames import _region_columns

    fr = S._h5_frame(path, key)
    if _region_columns(fr.columns) is not None:
        return True
    names = [str(x) for x in fr.index()[:50]]
    try:
        return bool(names) and len(parse_region_strings(names)) == len(names)
    except RegionParseError:
        return False


# ---------------------------------------------------------------------------------- 10x .h5
class _TenxSource(C._H5Source):
    """``matrix/`` of a 10x ``.h5``: CSC of features x barcodes, read as the CSR of barcodes x
    features it is (``indptr`` per barcode). Checked on open like an ``.h5ad`` matrix: the
    ``shape`` dataset, the datasets' presence, dtypes and lengths."""

    def __init__(self, path: str):
        import h5py

        self.path, self.key, self.where = path, "matrix", f"{path}:matrix"
        err = AnnDataError
        with C._h5_errors(path), _file(path) as f:
            node = f["matrix"]
            shape = node.get("shape")
            if not isinstance(shape, h5py.Dataset) or shape.shape != (2,):
                raise err(f"{self.where}: no shape dataset of two integers (features, "
                          "barcodes); the file is damaged or not written by Cell Ranger")
            n_features, n_barcodes = V.shape(shape[()], self.where, what="matrix/shape",
                                             error=err)
            self.kind = "csr"
            self.n_rows, self.n_cols = n_barcodes, n_features
            self._check_sparse(node, n_barcodes, f"(one per barcode, plus one) for shape "
                                                 f"{(n_features, n_barcodes)}")


class _Columns(C._Source):
    """The columns of ``src`` where ``keep`` holds, renumbered ``0..keep.sum()``; the entries
    of the other columns are dropped from each chunk (one vectorised pass)."""

    def __init__(self, src: C._Source, keep: np.ndarray):
        self.src, self.where, self.n_rows = src, src.where, src.n_rows
        keep = np.asarray(keep, dtype=bool)
        self.n_cols = int(keep.sum())
        self.nnz = getattr(src, "nnz", None)  # an upper bound
        self.new = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)

    def chunks(self, budget, per_nnz, chunk_rows, rows=None):
        for ch in self.src.chunks(budget, per_nnz, chunk_rows, rows):
            a, b = int(ch.indptr[0]), int(ch.indptr[-1])
            cols = self.new[ch.indices[a:b]]  # checked in range by the source
            kept = cols >= 0
            n = ch.indptr.size - 1
            row = np.repeat(np.arange(n), np.diff(ch.indptr))
            indptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(row[kept], minlength=n), out=indptr[1:])
            indices = cols[kept].astype(ch.indices.dtype)
            yield C.Chunk(ch.row0, indptr, indices, np.ascontiguousarray(ch.data[a:b][kept]),
                          self.n_cols)


def _tenx_features(path: str) -> dict:
    """``features/`` columns of a 10x file (strings), each one per feature; an AnnDataError
    unless there is one entry per matrix row."""
    import h5py

    where = f"{path}:matrix/features"
    with C._h5_errors(path), _file(path) as f:
        g = f["matrix"].get("features")
        if not isinstance(g, h5py.Group):
            raise AnnDataError(f"{where}: missing; a Cell Ranger file of version 3 or later "
                               "has matrix/features (older files, with genes/, hold no peaks)")
        n = _TenxSource(path).n_cols  # the shape, checked
        cols = {}
        for k in ("id", "name", "feature_type", "genome", "interval"):
            node = g.get(k)
            if node is None:
                continue
            if not isinstance(node, h5py.Dataset) or node.ndim != 1:
                raise AnnDataError(f"{where}/{k}: expected a one-dimensional dataset")
            if node.shape[0] != n:
                raise AnnDataError(f"{where}/{k}: {node.shape[0]} entries, but the matrix "
                                   f"has {n} features")
            cols[k] = S._h5_column(g, k)
    for k in ("id", "feature_type"):
        if k not in cols:
            raise AnnDataError(f"{where}: no {k!r} dataset; the file is damaged or not "
                               "written by Cell Ranger")
    return cols


def _peaks(path: str) -> np.ndarray:
    feats = _tenx_features(path)
    keep = np.asarray(feats["feature_type"] == PEAKS, dtype=bool)
    if not keep.any():
        types = sorted(set(map(str, feats["feature_type"])))
        raise AnnDataError(f"{path}:matrix/features: no feature has feature_type 'Peaks' "
                           f"(the types are {types}); genotok reads the peaks of a 10x file")
    return keep


def _tenx_source(path: str) -> C._Source:
    src = _TenxSource(path)
    keep = _peaks(path)
    return src if keep.all() else _Columns(src, keep)


def _tenx_barcodes(path: str, read):
    """``read(dataset)`` of ``matrix/barcodes``, required to be a one-dimensional dataset."""
    import h5py

    with C._h5_errors(path), _file(path) as f:
        node = f["matrix"].get("barcodes")
        if not isinstance(node, h5py.Dataset) or node.ndim != 1:
            raise AnnDataError(f"{path}:matrix/barcodes: missing or not a one-dimensional "
                               "dataset; the file is damaged or not written by Cell Ranger")
        return read(node)


def _tenx_frame(path: str, key: str) -> S._Frame:
    """``obs`` (barcodes, no columns) or ``var`` (the peaks: ``id``, ``name``, ``genome``,
    ``interval`` columns; named by their interval, else their name, else their id)."""
    if key == "obs":
        return S._Frame([], lambda c: None,
                        lambda: _tenx_barcodes(path, lambda node: S._h5_column(node.parent,
                                                                                 "barcodes")),
                        f"{path}:matrix/barcodes")
    feats = _tenx_features(path)
    keep = feats["feature_type"] == PEAKS
    cols = {k: v[keep] for k, v in feats.items() if k != "feature_type"}
    index = cols.get("interval", cols.get("name", cols["id"]))
    return S._Frame(list(cols), cols.__getitem__, lambda: index, f"{path}:matrix/features")


# ---------------------------------------------------------------------------------- cell sources
class H5adSource(S._AnnDataBase):
    """A ``.h5ad`` file by path, read by row chunks with h5py (CSR, CSC within the memory
    budget, dense; ``raw``; the data frame encodings of every anndata since 0.7), every
    integer that indexes memory checked first. The HDF5 containers of
    :mod:`~genotok.singlecell.containers` (``.h5mu``, 10x ``.h5``) are its subclasses: the
    same readers, another place in the file (:meth:`container`).

    Examples
    --------
    >>> import genotok
    >>> src = H5adSource.open(genotok.examples_dir() / "pbmc.h5ad")
    >>> src.kind, src.n_rows == len(src.names()), src.box.kind
    ('h5ad', True, 'h5ad')
    """

    kind = "h5ad"
    suffixes = (".h5ad",)
    magic = (b"\x89HDF\r\n\x1a\n",)

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        return head.startswith(cls.magic) and hdf5_kind(path) == "h5ad"

    @classmethod
    def container(cls, path, options=None):
        """Where the file keeps its matrix, cells and features:
        :func:`~genotok.singlecell.containers.open_container` (``options``: the
        :class:`~genotok.AnnDataOptions`' ``modality`` and ``raw``)."""
        return open_container(path, options)

    @classmethod
    def open(cls, obj, read=None, **context) -> S.CellSource:
        read = cls.read_options(read)
        return cls(cls.container(obj, read) if S._is_path(obj) else obj, read)


def hdf5_kind(path) -> str | None:
    """What an HDF5 file holds, told by its contents (never by its name): ``"h5mu"`` (a ``mod``
    group), ``"10x"`` (Cell Ranger's ``matrix`` group with ``features/feature_type``, no
    ``X``), ``"h5ad"`` (anndata's ``encoding-type`` on the root, or an ``X``, or ``obs`` and
    ``var``), else ``None`` (also for a file h5py cannot open).

    Examples
    --------
    >>> import genotok
    >>> hdf5_kind(genotok.examples_dir() / "pbmc.h5ad"), hdf5_kind(genotok.examples_dir())
    ('h5ad', None)
    """
    try:
        with _file(os.fspath(path)) as f:
            return _kind_of(f)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _kind_of(f) -> str | None:
    """:func:`hdf5_kind` of an open ``h5py.File``."""
    import h5py

    mod = f.get("mod")
    if isinstance(mod, h5py.Group) and (len(mod) or "X" not in f):  # an empty mod beside an
        return "h5mu"                                               # X: a .h5ad's stray group
    if "X" not in f and isinstance(f.get("matrix"), h5py.Group) and \
            isinstance(f.get("matrix/features"), h5py.Group) and \
            "feature_type" in f["matrix/features"]:
        return "10x"
    enc = f.attrs.get("encoding-type")
    if isinstance(enc, bytes):
        enc = enc.decode("utf-8", "replace")
    if enc == "anndata" or "X" in f or ("obs" in f and "var" in f):
        return "h5ad"
    return None


class H5muSource(H5adSource):
    """A MuData ``.h5mu`` file by path: one modality (``AnnDataOptions(modality=...)``, else
    ``atac``, else the only one whose features are regions), read out of core like a
    ``.h5ad`` (:func:`open_container`).

    Examples
    --------
    >>> from genotok.singlecell.sources import source_class
    >>> source_class("pbmc.H5MU") is H5muSource, H5muSource.kind, H5muSource.suffixes
    (True, 'h5mu', ('.h5mu',))
    """

    kind = "h5mu"
    suffixes = (".h5mu",)

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        return head.startswith(H5adSource.magic) and hdf5_kind(path) == "h5mu"


class TenxH5Source(H5adSource):
    """A Cell Ranger 10x ``.h5`` (``filtered_peak_bc_matrix.h5``, ARC's
    ``filtered_feature_bc_matrix.h5``) by path: the barcodes are the cells, the ``Peaks``
    features the columns (:func:`open_container`).

    Examples
    --------
    >>> from genotok.singlecell.sources import source_class
    >>> source_class("filtered_peak_bc_matrix.h5") is TenxH5Source, TenxH5Source.kind
    (True, '10x')
    """

    kind = "10x"
    suffixes = (".h5",)
    by_content = True  # an AnnData saved as .h5 is an .h5ad (hdf5_kind)

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        return head.startswith(H5adSource.magic) and hdf5_kind(path) == "10x"


S.register_source(H5adSource)
S.register_source(H5muSource)
S.register_source(TenxH5Source)

__all__ = ["Container", "H5adSource", "H5muSource", "TenxH5Source", "hdf5_kind", "open_container"]
