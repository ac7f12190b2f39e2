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
its memory budget and its checks of untrusted input) yields row chunks (:class:`Chunk`:
``indptr``/``indices``/``data`` of whole rows) for :mod:`.cells`; a file's ``obs``/``var``
frames are read with h5py here (:func:`obs_names`, :func:`var_names`, obs readers), under the
same checks: anything wrong is an :class:`AnnDataError` naming the file and the key. Fragment
files: a damaged ``.gz``, a control byte in a barcode or a barcode or chromosome name that is
not UTF-8 is a :class:`~genotok.errors.BedParseError` naming the file (and line).
"""

from __future__ import annotations

import abc
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import AnnDataError, SourceError
from .. import _plugins
from .chunks import Chunk, _h5_errors, _h5_n_obs, _H5Source, _MemorySource, _Source, _ViewSource
from ..params import PATH, Flag, HasAttr, InstanceOf, ParameterError, Unchecked, validated
from .reading import (READ_OPTIONS, AnnDataOptions, ReadOptions, _checked,
                      register_read_options)


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
        node = g.get(index)
        n = node.shape[0] if isinstance(node, h5py.Dataset) and node.ndim == 1 else None

    def get(name):
        with _h5_errors(path), h5py.File(path, "r") as f:
            col = _h5_column(f[key], name)
        if n is not None and len(col) != n:  # a frame's columns and index have one length
            raise AnnDataError(f"{path}: {key}/{name} has {len(col)} values, but {key}'s "
                               f"index has {n}")
        return col

    def idx():
        with _h5_errors(path), h5py.File(path, "r") as f:
            return _h5_column(f[key], index)

    return _Frame(cols, get, idx, path)


@validated({"adata": [*PATH, HasAttr("obs_names")]})
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


@validated({"adata": [*PATH, HasAttr("var_names")]})
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
def obs_columns_in(columns: Sequence[str], have: Sequence[str], where: str | None) -> list:
    """``columns`` as a list, every one among the ``obs`` columns ``have`` of the input
    ``where`` (else an :class:`AnnDataError` naming it and what it has).

    >>> obs_columns_in(["batch"], ["batch", "donor"], "cells.zarr")
    ['batch']
    >>> obs_columns_in(["age"], ["batch"], "cells.zarr")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.AnnDataError: cells.zarr: obs has no column(s) ['age']; it has ['batch']
    """
    columns = list(columns)
    missing = [c for c in columns if c not in have]
    if missing:
        raise AnnDataError(f"{where + ': ' if where else ''}obs has no column(s) {missing}; it "
                           f"has {list(have)}")
    return columns


def rows_of(names: Sequence[str], meta: dict) -> Callable[[int, int], tuple[list, dict]]:
    """``f(lo, hi) -> (names, {column: values})`` of rows ``lo:hi`` from whole columns read
    once (a source's :meth:`CellSource.obs`).

    >>> rows_of(["a", "b", "c"], {"x": [1, 2, 3]})(1, 3)
    (['b', 'c'], {'x': [2, 3]})
    """
    return lambda lo, hi: (names[lo:hi], {c: v[lo:hi] for c, v in meta.items()})


def _obs_reader(adata, path: str | None, obs_columns: Sequence[str], names: bool = True):
    """``f(lo, hi) -> (names, {column: values})`` for a range of cells (a file's names
    ``None`` unless ``names``)."""
    if path is not None and not hasattr(adata, "obs"):
        box = _container(path)
        obs_columns = obs_columns_in(obs_columns, box.frame("obs").columns, str(box))
        return lambda lo, hi: box.obs_rows(lo, hi, obs_columns, names)
    obs_columns = obs_columns_in(obs_columns, list(adata.obs.columns), None)

    def read_mem(lo, hi):
        rows = [str(x) for x in adata.obs_names[lo:hi]] if names else None
        return rows, {c: adata.obs[c].iloc[lo:hi].to_numpy() for c in obs_columns}
    return read_mem


# ---------------------------------------------------------------------------------- cell sources
class CellSource(abc.ABC):
    """A cell source: the rows (cells) of one input, read in chunks (an abstract base class).

    A subclass declares what it reads (class attributes, used by :func:`open_source` and by
    ``pretokenize``) and implements :meth:`open`, :meth:`features` and :meth:`names` (and
    :meth:`obs` when it has ``obs`` columns); its rows come from :meth:`chunks` (by default
    those of ``self.matrix``, a matrix reader such as :func:`memory_matrix`'s). The driver
    (:func:`~genotok.singlecell.cells.tokenize_cells`) does the rest: features → token ids,
    the :class:`~genotok.CellSpec`, the output. :func:`genotok.testing.check_source` holds the
    contract every source must keep.

    Class attributes
    ----------------
    kind
        The input's name in manifests and messages (``"h5ad"``, ``"fragments"``).
    suffixes, magic, by_content
        File name endings (lower case) and leading bytes this class reads; ``by_content``: the
        suffix does not decide for an existing file (``.h5``: any HDF5), its contents do.
    options
        The class of its ``read=`` options, a :class:`~genotok.ReadOptions` subclass
        (:class:`~genotok.AnnDataOptions` …; ``ReadOptions``: none).
    features_are
        ``"var"``: the columns are named features (var names or region columns → regions);
        ``"universe"``: column ``i`` is the universe's region ``i`` (counted fragments).
        ``pretokenize`` fits one set of medians only over inputs of one feature space.
    has_obs
        The rows have ``obs`` columns (metadata, condition tokens); default ``False``: asking
        a source without them for ``obs_columns`` or condition tokens is an error at once.
    header
        The key of the corpus header's ``extra`` that records how the input was read.

    Instance members
    ----------------
    ``n_rows``, ``n_cols``, ``where`` (the file, or ``"X"``, for messages), ``path`` (the file
    or ``None``), ``read`` (the options), :meth:`chunks` (:class:`Chunk` s of whole rows, in
    order, within a memory budget), :meth:`features`, :meth:`names`, :meth:`obs`,
    :meth:`settings`, :meth:`close`.

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
    options: ClassVar[type[ReadOptions]] = ReadOptions
    features_are: ClassVar[str] = "var"
    has_obs: ClassVar[bool] = False
    header: ClassVar[str] = "cells"

    n_rows: int
    n_cols: int
    where: str
    path: str | None = None
    read: ReadOptions | None = None
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
    @abc.abstractmethod
    def open(cls, obj, read: ReadOptions | None = None, **context) -> CellSource:
        """The source of ``obj`` read as ``read`` says (``None``: the defaults of
        :attr:`options`). ``context``: ``tokenizer``, ``n_threads``, ``memory_mb``, ``spec``
        and ``out`` of the call, for sources that need them to read (a fragment file is
        counted over the tokenizer's universe); a source ignores what it does not need."""

    @classmethod
    def read_options(cls, read) -> ReadOptions:
        """``read`` checked to be this class's :attr:`options` (``None``: their defaults)."""
        if cls.options is ReadOptions and read is not None and type(read) is not ReadOptions:
            raise TypeError(f"{cls.__name__} ({cls.kind} inputs) takes no read options; got "
                            f"read={type(read).__name__}(...)")
        return _checked(read, cls.options, cls.__name__)

    # ----- what the driver asks
    def chunks(self, budget: int, per_nnz: int, chunk_rows: int | None) -> Iterator[Chunk]:
        """The rows as :class:`Chunk` s, every row once, in order: each of ``chunk_rows``
        rows when given, else of at most ``budget`` bytes at ``per_nnz`` bytes per stored
        entry (a row larger than that alone). Default: those of ``self.matrix``, a matrix
        reader (:func:`memory_matrix`)."""
        matrix = getattr(self, "matrix", None)
        if matrix is None:
            raise SourceError(f"{type(self).__name__}: a cell source sets `matrix` "
                              "(memory_matrix(X)) or implements chunks()")
        return matrix.chunks(budget, per_nnz, chunk_rows)

    @abc.abstractmethod
    def features(self):
        """What the tokenizer maps to token ids, one per column: an AnnData-like object with
        ``var`` (var names or region columns), a ``.h5ad`` path, a pandas data frame (the
        ``var`` frame itself), or ``None`` when column ``i`` is the universe's region ``i``."""

    def feature_names(self) -> list[str] | None:
        """The columns' names (var names), or ``None`` when the columns are the universe's
        regions."""
        feats = self.features()
        if feats is None:
            return None
        if _is_path(feats):
            return var_names(feats)
        return [str(x) for x in (feats if _is_frame(feats) else feats.var).index]

    @abc.abstractmethod
    def names(self) -> list[str]:
        """The rows' names (cell barcodes), as strings, one per row, unique."""

    def obs(self, columns: Sequence[str]) -> Callable[[int, int], tuple[list, dict]]:
        """``read(lo, hi) -> (names, {column: values})`` of rows ``lo:hi``; an unknown column
        is an error now, naming the input. Default (no ``obs``): the names, and any column
        asked is a :class:`~genotok.SourceError`."""
        columns = list(columns)
        if columns:
            raise SourceError(f"{self.where}: a {self.kind or type(self).__name__} input has "
                              f"no obs columns ({columns} asked); only its row names")
        names = self.names()
        return lambda lo, hi: (names[lo:hi], {})

    def obs_values(self, columns: Sequence[str]) -> Callable[[int, int], dict]:
        """``read(lo, hi) -> {column: values}`` of rows ``lo:hi``: :meth:`obs` without the
        row names (a file's reader leaves them unread: a cell's total needs no barcode, and
        decoding 20,000 of them took longer than the totals)."""
        read = self.obs(columns)
        return lambda lo, hi: read(lo, hi)[1]

    def settings(self) -> dict:
        """How the input was read, for the corpus header (``extra[header]``)."""
        return {}

    @classmethod
    def check(cls, spec, func: str) -> None:
        """Refuse a :class:`~genotok.CellSpec` this input cannot honour (default: condition
        tokens without ``obs`` columns)."""
        if spec.prepend and not cls.has_obs:
            raise SourceError(f"{func}: prepend={list(spec.prepend)} takes obs columns, which "
                              f"a {cls.kind or cls.__name__} input has not")

    def value_input(self):
        """``(matrix, layer)`` for the medians pass of ``RankByMedian()``
        (:func:`~genotok.feature_medians`): an AnnData or ``.h5ad`` path and its layer, or the
        source itself (default; its :meth:`chunks` are read once more)."""
        return self, None

    def close(self) -> None:
        """Free what reading held (temporary files); the source is not read after. Closing
        twice is harmless."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.where}: {self.n_rows} x {self.n_cols}>"


@validated({"X": [Unchecked("a matrix: its shape and every index checked by the chunks")],
            "where": [InstanceOf(str)]})
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


#: the cell sources, tried in order (:func:`open_source`); :func:`register_source` adds one,
#: and the distributions' ``genotok.sources`` entry points are added when it is first read
#: (:func:`registry`)
SOURCES: list[type[CellSource]] = []


def registry() -> list[type[CellSource]]:
    """:data:`SOURCES`, after loading the plugins of the ``genotok.sources`` entry point group
    once (:mod:`genotok._plugins`): what every lookup by path or object reads.

    >>> [c.kind for c in registry()][:2]
    ['anndata', 'h5ad']
    """
    _plugins.load("genotok.sources", register_source)
    return SOURCES


@validated({"source": [Unchecked("a CellSource subclass, checked by _plugins.registrable")]})
def register_source(source: type[CellSource]) -> type[CellSource]:
    """Add a :class:`CellSource` class to the registry (a class decorator, too), and its
    read options class to :data:`~genotok.singlecell.reading.READ_OPTIONS`. The same class
    registered again (or re-created under its module-qualified name: a reload) replaces the
    one registered before; a class with a suffix is tried before those
    of a shorter suffix of it. A class that names no ``kind`` or leaves an abstract method
    unimplemented is refused.

    Examples
    --------
    >>> class Toy(CellSource):
    ...     kind, suffixes = "toy", (".toy",)
    ...     open = classmethod(lambda cls, obj, read=None, **context: cls())
    ...     features = lambda self: None
    ...     names = lambda self: []
    >>> _ = register_source(Toy)
    >>> source_class("cells.TOY").kind
    'toy'
    >>> unregister_source(Toy)
    """
    _plugins.registrable(source, CellSource, "kind", "cell source")
    register_read_options(source.options)
    SOURCES[:] = [c for c in SOURCES if not _plugins.same_class(c, source)] + [source]
    return source


def read_options_from_json(d: dict) -> ReadOptions:
    """The options of a :meth:`ReadOptions.to_json` dict, by its ``name``.

    >>> read_options_from_json({"name": "fragments", "min_fragments": 3}).min_fragments
    3
    """
    registry()  # the plugins' sources, and so their options classes
    name = d.get("name") if isinstance(d, dict) else None
    if not isinstance(name, str) or name not in READ_OPTIONS:
        raise ParameterError(f"unknown read options {name!r}; known: {sorted(READ_OPTIONS)}")
    return READ_OPTIONS[name].from_json(d)


@validated({"source": [Unchecked("a registered class; another is a no-op")]})
def unregister_source(source: type[CellSource]) -> None:
    """Remove a class from the registry (tests, examples): see :func:`register_source`.
    >>> unregister_source(type("Gone", (CellSource,), {"kind": "gone"}))
    """
    SOURCES[:] = [c for c in SOURCES if c is not source]


def _suffix_class(name: str) -> type[CellSource] | None:
    low = name.lower()
    best, length = None, 0
    for cls in registry():
        for suf in cls.suffixes:
            if low.endswith(suf) and len(suf) > length:
                best, length = cls, len(suf)
    return best


def suffixes() -> tuple[str, ...]:
    """Every file suffix of the registered cell sources.
    >>> ".h5ad" in suffixes() and ".tsv.gz" in suffixes()
    True
    """
    return tuple(s for cls in registry() for s in cls.suffixes)


@validated({"obj": [Unchecked("any input: None when no registered source reads it")],
            "sniff": [Flag()]})
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
        return next((cls for cls in reversed(registry()) if cls.accepts(obj)), None)
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
    return next((c for c in reversed(registry()) if c.sniff(head, path)), None)


@validated({"obj": [Unchecked("an input, read by the class that sniffs it")],
            "read": [Unchecked("read options, checked by the source class"), None]})
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
        known = ", ".join(f"{c.kind} ({', '.join(c.suffixes) or 'objects'})"
                          for c in registry())
        if _is_path(obj):
            path = os.fspath(obj)
            why = "no such file" if not os.path.exists(path) else "not a cell input"
            raise SourceError(f"{path}: {why}; the cell sources read {known}")
        raise SourceError(f"a {type(obj).__name__} is not a cell input; the cell sources read "
                          f"{known} (an AnnData, or a file path)")
    return cls.open(obj, cls.read_options(read), **context)


class _AnnDataBase(CellSource):
    """An AnnData's rows, in memory, backed or by path (the matrix reader is chosen by
    :func:`_source`: memory, h5py, or a backed view)."""

    options = AnnDataOptions
    header = "anndata"
    has_obs = True

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

    def obs_values(self, columns):
        read = _obs_reader(self.adata, self.box, columns, names=False)
        return lambda lo, hi: read(lo, hi)[1]

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


__all__ = ["AnnDataSource", "CellSource", "Chunk", "SOURCES", "memory_matrix", "obs_columns_in",
           "obs_names", "open_source", "rows_of", "read_options_from_json", "register_source", "registry",
           "source_class", "suffixes",
           "unregister_source", "var_names"]
