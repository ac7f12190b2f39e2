"""Cell sources: where the rows (cells) of the single-cell room come from, and their registry.

:class:`CellSource` is the protocol every input of the single-cell entry points and of
``pretokenize`` follows (rows, features, ``obs`` columns, row chunks under a memory budget);
:func:`open_source` finds the class for an input in one table (:data:`SOURCES`): by the
object's type, then the file's suffix, then its first bytes. :func:`register_source` adds a
class (a new format is one class and one registry line: ``docs/architecture.md``). This module
reads AnnData objects (:class:`AnnDataSource`); files are ``H5adSource`` and its ``.h5mu`` and
10x ``.h5`` subclasses (:mod:`.containers`, whose ``container`` says where a file keeps its
matrix, cells and features) and :class:`~genotok.singlecell.fragments.FragmentSource`.

Below them, a matrix reader (in memory, h5py, or a backed AnnData view: :mod:`.chunks`, with
its memory budget and its checks of untrusted input) yields row chunks (``_Chunk``:
``indptr``/``indices``/``data`` of whole rows) for :mod:`.cells`; a file's ``obs``/``var``
frames are read with h5py here (:func:`obs_names`, :func:`var_names`, obs readers), under the
same checks: anything wrong is an :class:`AnnDataError` naming the file and the key. Fragment
files: a damaged ``.gz``, a control byte in a barcode or a barcode or chromosome name that is
not UTF-8 is a :class:`~genotok.errors.BedParseError` naming the file (and line).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import AnnDataError, SourceError
from .chunks import _Chunk, _h5_errors, _h5_n_obs, _H5Source, _MemorySource, _Source, _ViewSource
from .reading import AnnDataOptions, _checked


# ---------------------------------------------------------------------------------- var → regions
@dataclass
class _Frame:
    """The little of a data frame we need: column names, a column getter, the index."""

    columns: list
    get: object      # name -> np.ndarray
    index: object    # () -> np.ndarray of names
    where: str


def _h5_column(group, name: str, sl=slice(None)) -> np.ndarray:
    """One column of an anndata-encoded data frame group, as anndata reads it: strings (vlen,
    with or without encoding attributes, or fixed-length bytes), numbers, categoricals (the
    ``codes``/``categories`` group, or anndata 0.7's integer codes whose ``categories``
    attribute is an HDF5 object reference to ``__categories/<column>``) and nullables.

    Anything else is an :class:`AnnDataError` naming the file and the key, never a column of
    codes taken for values.
    """
    import h5py

    node = group[name]
    where = f"{group.file.filename}: {group.name.rstrip('/')}/{name}"
    if isinstance(node, h5py.Group):
        enc = _attr_str(node.attrs.get("encoding-type", ""))
        if enc == "categorical":
            return _categorical(_h5_column(node, "categories"), node["codes"], sl, where)
        if enc.startswith("nullable"):
            vals = np.asarray(node["values"][sl]).astype(object)
            vals[np.asarray(node["mask"][sl], dtype=bool)] = None
            return vals
        raise AnnDataError(f"{where} has encoding {enc!r}, which genotok cannot read as a "
                           "column")
    ref = node.attrs.get("categories")
    if ref is not None:  # anndata 0.7: codes, and a reference to the categories
        if not isinstance(ref, h5py.Reference) or not ref:
            raise AnnDataError(f"{where}: its 'categories' attribute is not an HDF5 object "
                               f"reference (got {type(ref).__name__}); cannot read the "
                               "categorical column")
        try:
            cats = node.file[ref]
        except (KeyError, ValueError, TypeError):
            raise AnnDataError(f"{where}: its 'categories' reference points nowhere in the "
                               "file; cannot read the categorical column") from None
        if not isinstance(cats, h5py.Dataset) or cats.ndim != 1:
            raise AnnDataError(f"{where}: its 'categories' reference is not a one-dimensional "
                               f"dataset ({cats.name}); cannot read the categorical column")
        return _categorical(_h5_values(cats, slice(None), f"{where} (categories)"), node, sl,
                            where)
    return _h5_values(node, sl, where)


def _h5_values(node, sl, where: str) -> np.ndarray:
    """The values of a dataset column: strings (vlen or fixed-length bytes) or numbers."""
    import h5py

    if h5py.check_string_dtype(node.dtype) is not None:
        return np.asarray(node.asstr()[sl], dtype=object)
    out = node[sl]
    if out.dtype.kind == "S":
        return np.array([x.decode() for x in out], dtype=object)
    if out.dtype.kind not in "biuf":
        raise AnnDataError(f"{where}: a column of dtype {node.dtype} (not strings or "
                           "numbers); cannot read it")
    return np.asarray(out)


def _categorical(cats: np.ndarray, codes_node, sl, where: str) -> np.ndarray:
    """The values of a categorical column: ``cats[codes]``, ``None`` where a code is -1; a code
    outside ``[-1, n_categories)`` is an AnnDataError (the file is damaged)."""
    cats = np.asarray(cats, dtype=object)
    if codes_node.dtype.kind not in "iu":
        raise AnnDataError(f"{where}: categorical codes must be integers, got dtype "
                           f"{codes_node.dtype}")
    codes = np.asarray(codes_node[sl], dtype=np.int64)
    bad = (codes < -1) | (codes >= cats.size)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AnnDataError(f"{where}: categorical code {int(codes[i])} at row {i} is outside "
                           f"[-1, {cats.size}) ({cats.size} categories); the file is damaged")
    out = np.asarray(cats[np.maximum(codes, 0)] if cats.size else
                     np.full(codes.size, None, object), dtype=object)
    out[codes < 0] = None
    return out


def _attr_str(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _h5_frame(path: str, key: str) -> _Frame:
    import h5py

    with _h5_errors(path), h5py.File(path, "r") as f:
        if key not in f or not isinstance(f[key], h5py.Group):
            raise AnnDataError(f"{path}: no {key!r} data frame group; this does not look like an "
                               "h5ad file written by anndata >= 0.7 (re-save it with a current "
                               "anndata: anndata.read_h5ad(path).write_h5ad(path))")
        g = f[key]
        index = _attr_str(g.attrs.get("_index", "_index"))
        cols = [k for k in g.keys() if k not in (index, "__categories")]

    def get(name):
        with _h5_errors(path), h5py.File(path, "r") as f:
            return _h5_column(f[key], name)

    def idx():
        with _h5_errors(path), h5py.File(path, "r") as f:
            return _h5_column(f[key], index)

    return _Frame(cols, get, idx, path)


def obs_names(adata) -> list[str]:
    """The cell names of an AnnData or an ``.h5ad`` path, as strings.

    A path is read with h5py under the same checks as its matrix: a damaged file is an
    :class:`AnnDataError` naming it, never anndata's own errors, and no file stays open.

    Examples
    --------
    >>> import genotok
    >>> obs_names(genotok.examples_dir() / "pbmc.h5ad")[:2]
    ['GCATACGTGTACGCCC-1', 'AAGCTATCAACATTTC-1']
    """
    return _frame_names(adata, "obs")


def var_names(adata) -> list[str]:
    """The feature (peak) names of an AnnData or an ``.h5ad`` path, as strings, in order.

    A path is read with h5py under the same checks as :func:`obs_names`.

    Examples
    --------
    >>> import genotok
    >>> var_names(genotok.examples_dir() / "pbmc.h5ad")[:2]
    ['chr1:61447-61708', 'chr1:80162-80770']
    """
    return _frame_names(adata, "var")


def _frame_names(adata, key: str) -> list[str]:
    if _is_path(adata):
        return [str(x) for x in _container(adata).frame(key).index()]
    return [str(x) for x in getattr(adata, f"{key}_names")]


def _is_path(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def _is_frame(obj) -> bool:
    """A data frame (a ``var`` frame given as a source's features), not an AnnData."""
    return hasattr(obj, "columns") and hasattr(obj, "index") and not hasattr(obj, "obs")


def _container(path, options=None):
    """Where a file keeps its matrix, cells and features (a :mod:`.containers` ``Container``, as
    it is), asked of the registered class that reads it (else the ``.h5ad`` one's errors)."""
    if hasattr(path, "matrix_key"):  # already a container
        return path
    cls = source_class(path)
    return (cls if hasattr(cls, "container") else _suffix_class(".h5ad")).container(path, options)


def _check_rows(source: _Source, adata, path: str | None) -> None:
    """The matrix has one row per cell of ``obs`` (a file's shape attribute may lie)."""
    n_obs = (_container(path).n_obs() if path is not None and not hasattr(adata, "obs")
             else adata.n_obs)
    if int(n_obs) != source.n_rows:
        raise AnnDataError(f"{source.where}: {source.n_rows} matrix rows but {n_obs} cells in "
                           "obs")


def _source(adata, layer: str | None) -> tuple[_Source, str | None]:
    """The matrix source and the file path (``None`` for in-memory matrices)."""
    if _is_path(adata):
        c = _container(adata)
        return c.source(layer), c
    if not hasattr(adata, "obs_names"):
        raise AnnDataError(f"expected an AnnData object or a .h5ad path, got "
                           f"{type(adata).__name__}")
    if getattr(adata, "isbacked", False):
        path = os.fspath(adata.filename)
        if layer is None or layer not in adata.layers:
            src = _H5Source(path, "X" if layer is None else f"layers/{layer}")
            if getattr(adata, "is_view", False):  # the file holds more than the view shows
                n_obs, n_vars = _h5_n_obs(path), _h5_n_obs(path, "var")
                if (src.n_rows, src.n_cols) != (n_obs, n_vars):  # before sizing anything by it
                    raise AnnDataError(f"{src.where}: the matrix has shape "
                                       f"{(src.n_rows, src.n_cols)} but obs and var have "
                                       f"{n_obs} and {n_vars} entries")
                return _ViewSource(src, adata), path
            return src, path
    if layer is not None:
        if layer not in adata.layers:
            raise AnnDataError(f"no layer {layer!r}; the layers are {list(adata.layers.keys())}")
        X = adata.layers[layer]
    else:
        X = adata.X
    if X is None:
        raise AnnDataError("the AnnData has no X matrix; name a layer with layer=")
    if hasattr(X, "to_memory"):  # a backed sparse dataset
        X = X.to_memory()
    return _MemorySource(X, "X" if layer is None else f"layers[{layer!r}]",
                         n_obs=int(adata.n_obs)), None


# ---------------------------------------------------------------------------------- outputs
def _obs_reader(adata, path: str | None, obs_columns: Sequence[str]):
    """``f(lo, hi) -> (names, {column: values})`` for a range of cells."""
    obs_columns = list(obs_columns)
    if path is not None and not hasattr(adata, "obs"):
        box = _container(path)
        fr = box.frame("obs")
        missing = [c for c in obs_columns if c not in fr.columns]
        if missing:
            raise AnnDataError(f"{box}: obs has no column(s) {missing}; it has {fr.columns}")
        return lambda lo, hi: box.obs_rows(lo, hi, obs_columns)
    missing = [c for c in obs_columns if c not in adata.obs.columns]
    if missing:
        raise AnnDataError(f"obs has no column(s) {missing}; it has {list(adata.obs.columns)}")

    def read_mem(lo, hi):
        names = [str(x) for x in adata.obs_names[lo:hi]]
        return names, {c: adata.obs[c].iloc[lo:hi].to_numpy() for c in obs_columns}
    return read_mem


# ---------------------------------------------------------------------------------- cell sources
class CellSource:
    """The protocol of a cell source: the rows (cells) of one input, read in chunks.

    A subclass declares what it reads (class attributes, used by :func:`open_source` and by
    ``pretokenize``) and implements :meth:`open` and the few members below; the driver
    (:func:`~genotok.singlecell.cells.tokenize_cells`) does the rest: features → token ids,
    the :class:`~genotok.CellSpec`, the output.

    Class attributes
    ----------------
    kind
        The input's name in manifests and messages (``"h5ad"``, ``"fragments"``).
    suffixes, magic, by_content
        File name endings (lower case) and leading bytes this class reads; ``by_content``: the
        suffix does not decide for an existing file (``.h5``: any HDF5), its contents do.
    options
        The class of its ``read=`` options (:class:`~genotok.AnnDataOptions` …).
    features_are
        ``"var"``: the columns are named features (var names or region columns → regions);
        ``"universe"``: column ``i`` is the universe's region ``i`` (counted fragments).
        ``pretokenize`` fits one set of medians only over inputs of one feature space.
    has_obs
        The rows have ``obs`` columns (metadata, condition tokens).
    header
        The key of the corpus header's ``extra`` that records how the input was read.

    Instance members
    ----------------
    ``n_rows``, ``n_cols``, ``where`` (the file, or ``"X"``, for messages), ``path`` (the file
    or ``None``), ``read`` (the options), ``chunks(budget, per_nnz, chunk_rows)`` (CSR row
    chunks of whole rows, at most ``budget`` bytes at ``per_nnz`` bytes per stored entry),
    :meth:`features`, :meth:`names`, :meth:`obs`, :meth:`settings`, :meth:`close`.

    Examples
    --------
    >>> import genotok
    >>> src = open_source(genotok.examples_dir() / "pbmc.h5ad")
    >>> type(src).__name__, src.kind, src.n_rows > 0, src.features_are
    ('H5adSource', 'h5ad', True, 'var')
    """

    kind: ClassVar[str] = ""
    suffixes: ClassVar[tuple[str, ...]] = ()
    magic: ClassVar[tuple[bytes, ...]] = ()
    by_content: ClassVar[bool] = False
    options: ClassVar[type] = AnnDataOptions
    features_are: ClassVar[str] = "var"
    has_obs: ClassVar[bool] = True
    header: ClassVar[str] = "cells"

    n_rows: int
    n_cols: int
    where: str
    path: str | None = None
    read: object = None
    #: the stored entries when known (an upper bound of the tokens of an in-memory result)
    nnz: int | None = None
    #: an in-memory matrix: the driver may run it as one chunk
    in_memory: bool = False

    # ----- what the registry asks
    @classmethod
    def accepts(cls, obj) -> bool:
        """Whether this class reads the in-memory object ``obj`` (default: no object)."""
        return False

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        """Whether the file ``path``, starting with ``head`` (up to 512 bytes), is this
        class's input (default: it starts with one of :attr:`magic`)."""
        return any(head.startswith(m) for m in cls.magic)

    @classmethod
    def open(cls, obj, read=None, **context) -> CellSource:
        """The source of ``obj`` read as ``read`` says. ``context``: ``tokenizer``,
        ``n_threads``, ``memory_mb``, ``spec`` and ``out`` of the call, for sources that need
        them to read (a fragment file is counted over the tokenizer's universe)."""
        raise NotImplementedError(f"{cls.__name__}.open")  # pragma: no cover

    # ----- what the driver asks
    def chunks(self, budget: int, per_nnz: int, chunk_rows: int | None) -> Iterator[_Chunk]:
        """Row chunks (``_Chunk``: ``row0``, ``indptr`` of absolute positions, ``indices``,
        ``data``), in row order (default: those of ``self.matrix``, a matrix reader)."""
        return self.matrix.chunks(budget, per_nnz, chunk_rows)

    def features(self):
        """What the tokenizer maps to token ids, one per column: an AnnData-like object with
        ``var`` (var names or region columns), a ``.h5ad`` path, a pandas data frame (the
        ``var`` frame itself), or ``None`` when column ``i`` is the universe's region ``i``."""
        raise NotImplementedError(f"{type(self).__name__}.features")  # pragma: no cover

    def feature_names(self) -> list[str] | None:
        """The columns' names (var names), or ``None`` when the columns are the universe's
        regions."""
        feats = self.features()
        if feats is None:
            return None
        if _is_path(feats):
            return var_names(feats)
        return [str(x) for x in (feats if _is_frame(feats) else feats.var).index]

    def names(self) -> list[str]:
        """The rows' names (cell barcodes), as strings."""
        return self.obs(())(0, self.n_rows)[0]

    def obs(self, columns: Sequence[str]) -> Callable[[int, int], tuple[list, dict]]:
        """``read(lo, hi) -> (names, {column: values})`` of rows ``lo:hi``; an unknown column
        is an error now, naming the input."""
        raise NotImplementedError(f"{type(self).__name__}.obs")  # pragma: no cover

    def settings(self) -> dict:
        """How the input was read, for the corpus header (``extra[header]``)."""
        return {}

    @classmethod
    def check(cls, spec, func: str) -> None:
        """Refuse a :class:`~genotok.CellSpec` this input cannot honour (default: any)."""

    def value_input(self):
        """``(matrix, layer)`` for the medians pass of ``RankByMedian()``
        (:func:`~genotok.feature_medians`): an AnnData or ``.h5ad`` path and its layer, or the
        source itself (default; its :meth:`chunks` are read once more)."""
        return self, None

    def close(self) -> None:
        """Free what reading held (temporary files); the source is not read after."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.where}: {self.n_rows} x {self.n_cols}>"


def memory_matrix(X, where: str = "X"):
    """The row chunks of an in-memory matrix (any scipy sparse format, or a dense array), every
    index checked first: what a :class:`CellSource` over arrays sets as its ``matrix``.

    Examples
    --------
    >>> import numpy as np
    >>> m = memory_matrix(np.array([[1, 0], [0, 2]]))
    >>> m.n_rows, m.n_cols, [c.row0 for c in m.chunks(1 << 20, 16, 1)]
    (2, 2, [0, 1])
    """
    return _MemorySource(X, where)


#: the cell sources, tried in order (:func:`open_source`); :func:`register_source` adds one
SOURCES: list[type[CellSource]] = []


def register_source(source: type[CellSource]) -> type[CellSource]:
    """Add a :class:`CellSource` class to the registry (a class decorator, too). A class of
    the same name replaces the one registered before; a class with a suffix is tried before
    those of a shorter suffix of it.

    Examples
    --------
    >>> class Toy(CellSource):
    ...     kind, suffixes = "toy", (".toy",)
    >>> _ = register_source(Toy)
    >>> source_class("cells.TOY").kind
    'toy'
    >>> unregister_source(Toy)
    """
    if not (isinstance(source, type) and issubclass(source, CellSource)):
        raise TypeError(f"register_source takes a CellSource subclass, got {source!r}")
    if not source.kind:
        raise TypeError(f"{source.__name__}: a cell source names its kind (kind = '...')")
    SOURCES[:] = [c for c in SOURCES if c.__name__ != source.__name__] + [source]
    return source


def unregister_source(source: type[CellSource]) -> None:
    """Remove a class from the registry (tests, examples): see :func:`register_source`.
    >>> unregister_source(type("Gone", (CellSource,), {"kind": "gone"}))
    """
    SOURCES[:] = [c for c in SOURCES if c is not source]


def _suffix_class(name: str) -> type[CellSource] | None:
    low = name.lower()
    best, length = None, 0
    for cls in SOURCES:
        for suf in cls.suffixes:
            if low.endswith(suf) and len(suf) > length:
                best, length = cls, len(suf)
    return best


def suffixes() -> tuple[str, ...]:
    """Every file suffix of the registered cell sources.
    >>> ".h5ad" in suffixes() and ".tsv.gz" in suffixes()
    True
    """
    return tuple(s for cls in SOURCES for s in cls.suffixes)


def source_class(obj, *, sniff: bool = True) -> type[CellSource] | None:
    """The registered class that reads ``obj``, or ``None``: by the object's type (an
    in-memory object), then the file's suffix (the longest that fits), then (``sniff=True``,
    an existing regular file) its first 512 bytes. Types and first bytes are asked of the
    latest registered class first, so a more specific class registered later (a MuData, an
    HDF5 container that is not an ``.h5ad``) wins over a general one.

    Examples
    --------
    >>> source_class("pbmc.h5ad").__name__, source_class("a.tsv.gz").__name__
    ('H5adSource', 'FragmentSource')
    >>> source_class("peaks.narrowPeak") is None
    True
    """
    if not _is_path(obj):  # the latest registered first: a MuData is an AnnData-like too
        return next((cls for cls in reversed(SOURCES) if cls.accepts(obj)), None)
    path = os.fspath(obj)
    cls = _suffix_class(os.path.basename(path))
    if (cls is not None and not cls.by_content) or not sniff:
        return cls
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode) and cls is None:  # a store or a folder (Zarr, SOMA, Cell Ranger)
            return next((c for c in reversed(SOURCES) if c.sniff(b"", path)), None)
        if not stat.S_ISREG(mode):
            return cls
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return cls  # not there (yet): the suffix's class says so when it opens it
    return next((c for c in reversed(SOURCES) if c.sniff(head, path)), None)


def open_source(obj, read=None, **context) -> CellSource:
    """The :class:`CellSource` of ``obj`` (an AnnData, a ``.h5ad`` or fragment file, or
    whatever a registered class reads), found by :func:`source_class` and opened with the
    ``read=`` options and the call's ``context`` (see :meth:`CellSource.open`).

    Raises
    ------
    SourceError
        No registered class reads ``obj``; the message names the file and the formats known.

    Examples
    --------
    >>> import genotok
    >>> open_source(genotok.examples_dir() / "pbmc.h5ad").n_cols > 0
    True
    >>> try:
    ...     open_source(genotok.examples_dir() / "universe.bed")
    ... except genotok.SourceError as e:
    ...     print(str(e).split(";")[0].endswith("universe.bed: not a cell input"))
    True
    """
    cls = source_class(obj)
    if cls is None:
        known = ", ".join(f"{c.kind} ({', '.join(c.suffixes) or 'objects'})" for c in SOURCES)
        if _is_path(obj):
            path = os.fspath(obj)
            why = "no such file" if not os.path.exists(path) else "not a cell input"
            raise SourceError(f"{path}: {why}; the cell sources read {known}")
        raise SourceError(f"a {type(obj).__name__} is not a cell input; the cell sources read "
                          f"{known} (an AnnData, or a file path)")
    return cls.open(obj, read, **context)


class _AnnDataBase(CellSource):
    """An AnnData's rows, in memory, backed or by path (the matrix reader is chosen by
    :func:`_source`: memory, h5py, or a backed view)."""

    options = AnnDataOptions
    header = "anndata"

    def __init__(self, adata, read: AnnDataOptions | None = None):
        self.read = _checked(read, AnnDataOptions, type(self).__name__)
        self.adata = adata
        self.matrix, box = _source(adata, self.read.layer)
        _check_rows(self.matrix, adata, box)
        #: where a file keeps its matrix, cells and features (a Container), or the backed file
        self.box = box
        self.path = None if box is None else os.fspath(box)
        self.n_rows, self.n_cols = self.matrix.n_rows, self.matrix.n_cols
        self.where = self.matrix.where
        self.nnz = getattr(self.matrix, "nnz", None)
        self.in_memory = self.path is None

    @classmethod
    def open(cls, obj, read=None, **context) -> CellSource:
        return cls(obj, read)

    @property
    def _by_file(self) -> bool:
        return self.box is not None and not hasattr(self.adata, "var")

    def features(self):
        return self.box if self._by_file else self.adata

    def obs(self, columns):
        return _obs_reader(self.adata, self.box, columns)

    def names(self) -> list[str]:
        return obs_names(self.box if self._by_file else self.adata)

    def settings(self) -> dict:
        root = getattr(self.box, "root", "") if self._by_file else ""
        return {"layer": self.read.layer, **({"modality": root[4:]} if root else {}),
                **({"raw": True} if self.read.raw else {})}

    def value_input(self):  # the medians pass reads the AnnData or file, with the layer
        return (self.box if self._by_file else self.adata), self.read.layer


class AnnDataSource(_AnnDataBase):
    """An ``anndata.AnnData``: in memory (any scipy sparse format or dense, checked), backed
    (``backed="r"``: read by row chunks with h5py) or a backed view (only its rows read).

    >>> import anndata, numpy as np
    >>> AnnDataSource.open(anndata.AnnData(np.eye(2, dtype=np.float32))).n_rows
    2
    """

    kind = "anndata"

    @classmethod
    def accepts(cls, obj) -> bool:
        return hasattr(obj, "obs_names") and hasattr(obj, "obs")


register_source(AnnDataSource)  # H5adSource and the HDF5 containers: .containers


__all__ = ["AnnDataSource", "CellSource", "SOURCES", "memory_matrix", "obs_names",
           "open_source", "register_source", "source_class", "suffixes", "unregister_source",
           "var_names"]
