"""Row chunks of a cells x features matrix, wherever it lives: in memory (any scipy sparse
format, or dense), in a ``.h5ad`` file read with h5py, or a backed AnnData view. A chunk
(:class:`Chunk`: ``indptr``/``indices``/``data`` of whole rows) holds at most a memory budget's
stored entries; the cell sources (:mod:`.sources`) hand them to the one driver
(:mod:`.cells`).

Memory (out of core)
--------------------
For a ``.h5ad`` path or a backed AnnData, ``X`` is read with h5py in row chunks of at most
``memory_mb`` (default 256 MiB) of working memory: per chunk the stored entries
(indices + data), the per-cell token slots (16 bytes per raw token) and the chunk's output.
Besides the chunks, only ``indptr`` (8 bytes per cell), the variable → token map, per-thread
scratch (about 8.2 bytes × universe regions with ``unique=True`` when the peaks are not sorted
like the universe; 8.2 bytes × peaks with ``unique=False``) and the result are held; with a
corpus ``out`` the result goes to disk chunk by chunk, so peak memory is
flat in the number of cells. A dense ``X`` is read in row blocks. A backed **CSC** matrix cannot
be read by rows: it is loaded and converted when it fits in ``memory_mb``, otherwise an
:class:`AnnDataError` says how to rewrite the file as CSR.

Untrusted input
---------------
Every integer read from a file or taken from a caller's matrix that will index memory is
checked in one vectorised pass (:mod:`genotok._validate`) before scipy or a kernel sees it:
``indptr`` (length, start at 0, never decreasing, ends at the number of stored entries) and
every index (in range), for CSR, CSC (before scipy's ``tocsr()``, which trusts them), COO, BSR
and dense, in memory, backed and by path; a file's shape attribute, datasets, dtypes and
lengths are checked before they are read, and the matrix must have one row per ``obs`` cell.
Values are checked by the kernels (finite, ``>= 0``). Anything wrong is an
:class:`AnnDataError` naming the file (or ``X``/the layer) and the key; what h5py raises on a
damaged file becomes one too. The cost is about 1-2% of a call (``benchmarks/bench_anndata.py``).
What is *not* caught: a damaged file whose arrays stay valid (an ``.h5ad`` has no checksums,
so changed counts give other tokens), and the HDF5 library's own parsing of a hostile file (a
C library; read untrusted files in a separate process). A backed view
(``read_h5ad(p, backed="r")[10:20]``) is read through the same checks, not through anndata's
slicing.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .. import _inflate
from .. import _validate as V
from ..errors import AnnDataError, GenotokError
from ..kernels import cells as K

_CSR_MESSAGES = {
    K.CSR_INDPTR: "indptr is not non-decreasing within the stored entries",
    K.CSR_INDEX: "a column index is outside [0, n_vars)",
    K.CSR_NEGATIVE: "a negative value (counts must be >= 0)",
    K.CSR_NOT_FINITE: "a NaN or infinite value",
}


@dataclass(frozen=True)
class Chunk:
    """Whole rows of a cells x features matrix, as CSR: what a
    :class:`~genotok.CellSource` yields (:meth:`~genotok.CellSource.chunks`) and what a value
    encoding's ``encode(chunk)`` takes.

    ``row0`` is the first row's number in the source; ``indptr`` (``n_rows + 1`` int64
    positions into ``indices``/``data``; a source may hand over views of larger arrays, so
    ``indptr[0]`` need not be 0: :meth:`rebased` gives the chunk's own entries); ``indices``
    the column of each stored entry (in ``[0, n_cols)``), ``data`` its value; ``n_cols`` the
    matrix' number of columns. A chunk is read, never written: an encoding returns new values.

    Examples
    --------
    >>> import numpy as np
    >>> ch = Chunk(5, np.array([2, 3, 5]), np.arange(5), np.arange(5.0), 9)
    >>> ch.n_rows, ch.nnz, ch.rebased().indptr.tolist(), ch.rebased().data.tolist()
    (2, 3, [0, 1, 3], [2.0, 3.0, 4.0])
    """

    row0: int
    indptr: np.ndarray   # absolute positions into indices/data (n_rows + 1)
    indices: np.ndarray
    data: np.ndarray
    n_cols: int

    @property
    def n_rows(self) -> int:
        return int(self.indptr.size) - 1

    @property
    def nnz(self) -> int:
        """The chunk's stored entries (``indptr[-1] - indptr[0]``)."""
        return int(self.indptr[-1]) - int(self.indptr[0]) if self.indptr.size else 0

    def rebased(self) -> Chunk:
        """The same rows with ``indptr[0] == 0`` and only their own entries (views, no copy
        when already so)."""
        a = int(self.indptr[0]) if self.indptr.size else 0
        b = a + self.nnz
        if a == 0 and self.indices.size == b and self.data.size == b:
            return self
        return Chunk(self.row0, np.asarray(self.indptr, np.int64) - a, self.indices[a:b],
                     self.data[a:b], self.n_cols)


def _clean_dtypes(indices: np.ndarray, data: np.ndarray, where: str, checked: int | None = None):
    """Values as float32 or float64, indices as :func:`kernel_ints` (``checked``: the caller
    has checked them within ``[0, checked)``)."""
    if data.dtype.kind not in "biuf":
        raise AnnDataError(f"{where}: matrix values must be numeric, got dtype {data.dtype}")
    if data.dtype not in (np.float32, np.float64):  # two kernel specialisations, not eight
        data = data.astype(np.float64 if data.dtype.itemsize > 4 else np.float32)
    if indices.dtype.kind not in "iu":
        raise AnnDataError(f"{where}: column indices must be integers, got dtype {indices.dtype}")
    return kernel_ints(indices, checked), np.ascontiguousarray(data)


_INT32 = np.iinfo(np.int32)


def kernel_ints(a, checked: int | None = None) -> np.ndarray:
    """Column indices as the cell and value kernels take them: contiguous int32, their one
    compiled variant (a second, int64, would double what ``genotok.warmup()`` compiles:
    ~15 CPU s). Exact: indices beyond int32 (never valid columns) stay int64, so that the
    checks report them as they are; only such bad input compiles the int64 variant.
    ``checked``: the caller has checked every index within ``[0, checked)`` (no second look).

    >>> kernel_ints(np.array([0, 5], np.int64)).dtype, kernel_ints(np.array([2**40])).dtype
    (dtype('int32'), dtype('int64'))
    """
    a = np.asarray(a)
    if a.dtype == np.int32:
        return np.ascontiguousarray(a)
    if (a.size == 0 or (checked is not None and checked <= _INT32.max + 1)
            or (int(a.min()) >= _INT32.min and int(a.max()) <= _INT32.max)):
        return np.ascontiguousarray(a, dtype=np.int32)
    return np.ascontiguousarray(a, dtype=np.int64)


def _row_bounds(indptr: np.ndarray, nnz_budget: int, chunk_rows: int | None) -> np.ndarray:
    """Chunk boundaries (row numbers): fixed ``chunk_rows`` or at most ``nnz_budget`` entries."""
    n = indptr.size - 1
    if n == 0:
        return np.array([0, 0], dtype=np.int64)
    if chunk_rows is not None:
        return np.unique(np.append(np.arange(0, n, int(chunk_rows), dtype=np.int64), n))
    bounds = [0]
    while bounds[-1] < n:
        lo = bounds[-1]
        hi = int(np.searchsorted(indptr, indptr[lo] + nnz_budget, side="right")) - 1
        bounds.append(min(n, max(hi, lo + 1)))
    return np.asarray(bounds, dtype=np.int64)


def _dense_rows(n_vars: int, itemsize: int, budget: int, chunk_rows: int | None) -> int:
    if chunk_rows is not None:
        return max(1, int(chunk_rows))
    return max(1, budget // max(1, 3 * n_vars * itemsize))


def _dense_chunk(block: np.ndarray, row0: int, where: str) -> Chunk:
    if block.dtype.kind not in "biuf":
        raise AnnDataError(f"{where}: matrix values must be numeric, got dtype {block.dtype}")
    rows, cols = np.nonzero(block)
    indptr = np.zeros(block.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=block.shape[0]), out=indptr[1:])
    indices, data = _clean_dtypes(cols.astype(np.int32 if block.shape[1] < 2**31 else np.int64),
                                  block[rows, cols], where)
    return Chunk(row0, indptr, indices, data, int(block.shape[1]))


class _Source(abc.ABC):
    """Row chunks of a matrix, wherever it lives. ``n_rows``, ``n_cols``, ``chunks()``."""

    n_rows: int
    n_cols: int
    where: str

    @abc.abstractmethod
    def chunks(self, budget: int, per_nnz: int, chunk_rows: int | None) -> Iterator[Chunk]:
        """Chunks of whole rows, each within ``budget`` bytes (``per_nnz`` a stored entry)."""


def _check_columns(indices, indptr: np.ndarray, n_cols: int, where: str, row0: int = 0):
    """Every column index of a CSR chunk in ``[0, n_cols)`` (one vectorised pass), else an
    AnnDataError naming the row and the stored entry. ``indptr`` holds absolute positions
    (``indptr[0]`` is the position of ``indices[0]``)."""
    try:
        return V.indices(indices, n_cols, where, what="column index", error=AnnDataError)
    except AnnDataError:
        a = np.asarray(indices)
        if a.dtype.kind not in "iu" or a.ndim != 1:
            raise
        bad = int(np.flatnonzero((a < 0) | (a >= n_cols))[0])
        pos = int(indptr[0]) + bad
        r = row0 + int(np.searchsorted(indptr, pos, side="right")) - 1
        raise AnnDataError(f"{where}: {_CSR_MESSAGES[K.CSR_INDEX]} at row {r}, stored entry "
                           f"{pos} (column {int(a[bad])}); n_vars = {n_cols}") from None


def _checked_csr(X, where: str):
    """A scipy sparse matrix or array of any format as CSR, after checking every integer that
    scipy's conversion or our kernels will use to index memory (:mod:`genotok._validate`).

    scipy's ``tocsr()`` trusts ``indptr``/``indices`` (CSC, BSR) and ``row``/``col`` (COO):
    a row index past the end writes outside its buffers. So those are checked first (one
    vectorised pass); the CSR that scipy makes of checked arrays is valid, and the one it makes
    of other formats (LIL, DIA, DOK: structure checked first) is checked again.
    """
    import scipy.sparse as sp

    err = AnnDataError
    fmt = X.format
    n_rows, n_cols = V.shape(X.shape, where, error=err)
    dtype = np.dtype(X.dtype)  # (LIL keeps lists in an object array: its data is not it)
    if dtype.kind not in "biuf":  # before scipy converts them
        raise err(f"{where}: matrix values must be numeric, got dtype {dtype}")
    if fmt in ("csr", "csc", "bsr"):
        br, bc = (1, 1) if fmt != "bsr" else V.shape(X.blocksize, where, what="blocksize",
                                                      error=err)
        if br < 1 or bc < 1 or n_rows % br or n_cols % bc:
            raise err(f"{where}: BSR blocksize {(br, bc)} does not divide the shape "
                      f"{(n_rows, n_cols)}")
        major, minor = (n_rows // br, n_cols // bc) if fmt != "csc" else (n_cols, n_rows)
        if fmt == "csr":
            indptr = V.offsets(X.indptr, np.size(X.indices), where, n_rows=n_rows,
                               what="indptr (CSR, per row)", error=err)
            indices = _check_columns(X.indices, indptr, n_cols, where)
        else:
            indptr, indices = V.compressed(X.indptr, X.indices, major, minor, where,
                                           fmt=fmt if fmt != "bsr" else "csr", error=err)
        expected = (indices.size,) + ((br, bc) if fmt == "bsr" else ())
        if np.shape(X.data) != expected:
            raise err(f"{where}: data has shape {np.shape(X.data)}, expected {expected} (one "
                      f"value per stored index)")
        if fmt == "csr":
            return indptr, indices, X.data
    elif fmt == "coo":
        row, col = V.indices(X.row, n_rows, where, what="row index", error=err), X.col
        V.indices(col, n_cols, where, what="column index", error=err)
        V.same_length(col, row.size, where, what="column indices", error=err)
        V.same_length(X.data, row.size, where, what="data", error=err)
    elif fmt == "lil":
        V.same_length(X.rows, n_rows, where, what="lil rows", why="one per row", error=err)
        V.same_length(X.data, n_rows, where, what="lil data", why="one per row", error=err)
    elif fmt == "dia" and (np.ndim(X.data) != 2 or np.shape(X.data)[0] != np.size(X.offsets)):
        raise err(f"{where}: DIA data of shape {np.shape(X.data)} does not match its "
                  f"{np.size(X.offsets)} offsets")
    X = sp.csr_matrix(X.tocsr())
    if fmt in ("csc", "bsr", "coo"):  # scipy's conversion of checked arrays: a valid CSR
        return np.asarray(X.indptr, dtype=np.int64), X.indices, X.data
    indptr = V.offsets(X.indptr, np.size(X.indices), where, n_rows=n_rows, error=err)
    indices = _check_columns(X.indices, indptr, n_cols, where)
    V.same_length(X.data, indices.size, where, what="data", error=err)
    return indptr, indices, X.data


class _MemorySource(_Source):
    def __init__(self, X, where: str, n_obs: int | None = None):
        import scipy.sparse as sp

        self.where = where
        if sp.issparse(X):
            self.n_rows, self.n_cols = V.shape(X.shape, where, error=AnnDataError)
            if n_obs is not None and self.n_rows != n_obs:  # before a conversion sized by it
                raise AnnDataError(f"{where}: {self.n_rows} matrix rows but {n_obs} cells in obs")
            self.kind = "csr"
            self.indptr, indices, data = _checked_csr(X, where)
            self.indices, self.data = _clean_dtypes(indices, data, where, self.n_cols)
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise AnnDataError(f"{where}: expected a 2-D matrix, got shape {X.shape}")
            if X.dtype.kind not in "biuf":
                raise AnnDataError(f"{where}: matrix values must be numeric, got dtype "
                                   f"{X.dtype}")
            self.kind = "dense"
            self.X = X
            self.n_rows, self.n_cols = int(X.shape[0]), int(X.shape[1])

    def chunks(self, budget, per_nnz, chunk_rows, rows=None):
        lo0, hi0 = (0, self.n_rows) if rows is None else rows
        if self.kind == "csr":
            bounds = lo0 + _row_bounds(self.indptr[lo0:hi0 + 1], max(1, budget // per_nnz),
                                       chunk_rows)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                yield Chunk(int(lo), self.indptr[lo:hi + 1], self.indices, self.data,
                            self.n_cols)
        else:
            step = _dense_rows(self.n_cols, self.X.dtype.itemsize, budget, chunk_rows)
            for lo in range(lo0, hi0, step):
                yield _dense_chunk(self.X[lo:min(lo + step, hi0)], lo, self.where)


@contextlib.contextmanager
def read_errors(where: str, what: str = "it", catch: tuple = (Exception,), hint: str = ""):
    """What a reader's libraries (h5py, zarr, fsspec, tiledbsoma, gzip) raise on a damaged or
    missing input → an :class:`AnnDataError` naming it (``pretokenize --on-error skip`` catches
    GenotokError, not OSError/KeyError); a :class:`GenotokError` passes as it is.

    ``what`` says what could not be read, ``catch`` which exceptions are the library's (all of
    them where they share no base), ``hint`` what to try.

    >>> with read_errors("cells.zarr", "the AnnData Zarr store"):
    ...     raise KeyError("X")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.AnnDataError: cells.zarr: cannot read the AnnData Zarr store (KeyError: 'X')
    """
    try:
        yield
    except GenotokError:
        raise
    except catch as exc:
        raise AnnDataError(f"{where}: cannot read {what} ({type(exc).__name__}: {exc}){hint}") \
            from None


def _h5_errors(where: str):
    """:func:`read_errors` of an ``.h5ad`` file: what h5py and numpy raise."""
    return read_errors(where, "the file as h5ad", (OSError, KeyError, ValueError, TypeError,
                                                   RuntimeError, IndexError),
                       "; is it a complete .h5ad written by anndata?")


def _check_row_lengths(indptr: np.ndarray, n_cols: int, where: str) -> None:
    """No row of a file's CSR matrix stores more entries than there are columns.

    A chunk holds whole rows, so one row's entries are read at once whatever ``memory_mb``
    says; a crafted file can declare a row of 10**11 entries in an unallocated (tiny) HDF5
    dataset. anndata writes canonical CSR (no duplicate entries), where this cannot happen.
    """
    if indptr.size > 1 and n_cols >= 0:
        lengths = np.diff(indptr)
        r = int(np.argmax(lengths))
        if lengths[r] > max(n_cols, 1):
            raise AnnDataError(f"{where}: row {r} stores {int(lengths[r]):,} entries but there "
                               f"are only {n_cols:,} columns; the file is damaged or crafted "
                               "(re-write it with anndata)")


class _StoredSource(_Source):
    """A matrix in a file of groups and arrays (``X``, a layer or ``raw/X``: CSR, CSC or
    dense), read by row chunks; a subclass says how the file opens (h5py: :class:`_H5Source`;
    zarr: ``anndata_zarr``).

    Nothing read is trusted: the shape attribute, the arrays' presence, dtypes and lengths
    are checked on open (:meth:`_check_layout`); ``indptr`` (whole, 8 bytes per row) and
    every chunk's indices are checked (:mod:`genotok._validate`) before a kernel or scipy
    sees them.
    """

    key: str
    array_word = "dataset"       # what the format calls an array, in messages
    file_word = "file"
    csc_hint = "rewrite it as CSR once"

    @abc.abstractmethod
    def _node(self):
        """A context manager giving the matrix's node (errors converted)."""

    @staticmethod
    @abc.abstractmethod
    def _is_array(node) -> bool:
        """Whether ``node`` is an array (else a group)."""

    @staticmethod
    def _ranged(node):
        """The node, sliced by ranges (the HDF5 source inflates them on threads)."""
        return node

    def _check_chunk(self, indices: np.ndarray, ptr: np.ndarray, row0: int) -> None:
        """A format's own check of a CSR chunk read (zarr: chunks lost from the store)."""

    def _array(self, group, name: str, kinds: str, what: str):
        """``group[name]``, required to be a one-dimensional array of a dtype kind in
        ``kinds``."""
        node = group.get(name)
        if node is None or not self._is_array(node):
            raise AnnDataError(f"{self.where}: the sparse matrix has no {name!r} "
                               f"{self.array_word} ({'missing' if node is None else 'a group'}"
                               f"); the {self.file_word} is damaged or not written by anndata")
        if node.ndim != 1:
            raise AnnDataError(f"{self.where}: {name} must be one-dimensional, got shape "
                               f"{node.shape}")
        if np.dtype(node.dtype).kind not in kinds:
            raise AnnDataError(f"{self.where}: {name} must hold {what}, got dtype {node.dtype}")
        return node

    def _check_sparse(self, node, n_major: int, expected: str) -> None:
        """``indices``, ``data`` and ``indptr`` of a sparse group: present, typed, of one
        length, ``indptr`` of ``n_major + 1`` entries (checked before it is read: a huge shape
        is a lie)."""
        ind = self._array(node, "indices", "iu", "integers")
        dat = self._array(node, "data", "biuf", "numbers")
        ptr = self._array(node, "indptr", "iu", "integers")
        self.nnz = int(ind.shape[0])
        V.same_length(dat, self.nnz, self.where, what="data", error=AnnDataError)
        if ptr.shape[0] != n_major + 1:
            raise AnnDataError(f"{self.where}: indptr has {ptr.shape[0]} entries, expected "
                               f"{n_major + 1} {expected}")
        self.itemsize = np.dtype(ind.dtype).itemsize + np.dtype(dat.dtype).itemsize

    def _check_layout(self, node) -> None:
        """``kind`` (csr, csc, dense), the shape, ``nnz`` and ``itemsize`` of the matrix."""
        self.nnz = None
        if not self._is_array(node):
            enc = node.attrs.get("encoding-type", node.attrs.get("h5sparse_format", ""))
            enc = enc.decode(errors="replace") if isinstance(enc, bytes) else str(enc)
            if enc not in ("csr_matrix", "csc_matrix", "csr", "csc"):
                raise AnnDataError(f"{self.where}: unknown matrix encoding {enc!r}")
            self.kind = "csr" if enc.startswith("csr") else "csc"
            shape = node.attrs.get("shape", node.attrs.get("h5sparse_shape"))
            if shape is None:
                raise AnnDataError(f"{self.where}: the sparse matrix has no shape attribute")
            self.n_rows, self.n_cols = V.shape(shape, self.where, what="the shape attribute",
                                               error=AnnDataError)
            self._check_sparse(node, self.n_rows if self.kind == "csr" else self.n_cols,
                               f"for a {self.kind.upper()} matrix of shape "
                               f"{(self.n_rows, self.n_cols)}")
        else:
            self.kind = "dense"
            if node.ndim != 2:
                raise AnnDataError(f"{self.where}: expected a 2-D matrix, got {node.shape}")
            if np.dtype(node.dtype).kind not in "biuf":
                raise AnnDataError(f"{self.where}: matrix values must be numeric, got "
                                   f"dtype {node.dtype}")
            self.n_rows, self.n_cols = map(int, node.shape)
            self.itemsize = np.dtype(node.dtype).itemsize

    def chunks(self, budget, per_nnz, chunk_rows, rows=None):
        """Row chunks (only of rows ``lo:hi`` when ``rows=(lo, hi)``)."""
        err, where = AnnDataError, self.where
        lo0, hi0 = (0, self.n_rows) if rows is None else rows
        with self._node() as node:
            if self.kind == "csr":
                indptr = V.offsets(node["indptr"][:], self.nnz, where, n_rows=self.n_rows,
                                   what="indptr (CSR, per row)", error=err)
                _check_row_lengths(indptr, self.n_cols, where)
                bounds = lo0 + _row_bounds(indptr[lo0:hi0 + 1], max(1, budget // per_nnz),
                                           chunk_rows)
                ind, dat = self._ranged(node["indices"]), self._ranged(node["data"])
                for lo, hi in zip(bounds[:-1], bounds[1:]):
                    a, b = int(indptr[lo]), int(indptr[hi])
                    indices = _check_columns(ind[a:b], indptr[lo:hi + 1], self.n_cols, where,
                                             int(lo))
                    indices, data = _clean_dtypes(indices, np.asarray(dat[a:b]), where)
                    self._check_chunk(indices, indptr[lo:hi + 1] - a, int(lo))
                    yield Chunk(int(lo), indptr[lo:hi + 1] - a, indices, data, self.n_cols)
            elif self.kind == "dense":
                step = _dense_rows(self.n_cols, self.itemsize, budget, chunk_rows)
                for lo in range(lo0, hi0, step):
                    yield _dense_chunk(np.asarray(node[lo:min(lo + step, hi0)]), lo, where)
            else:
                if self.nnz * (self.itemsize + 16) > budget:
                    raise AnnDataError(
                        f"{where}: X is stored column-major (CSC, {self.nnz:,} entries), "
                        f"which cannot be read by cells without loading it, and it needs more "
                        f"than memory_mb allows: {self.csc_hint}")
                import scipy.sparse as sp

                # checked by _MemorySource (via _checked_csr) before scipy converts it
                m = sp.csc_matrix((self.n_rows, self.n_cols), dtype=node["data"].dtype)
                m.data, m.indices = node["data"][:], node["indices"][:]
                m.indptr = node["indptr"][:]
                yield from _MemorySource(m, where).chunks(budget, per_nnz, chunk_rows, rows)


class _H5Source(_StoredSource):
    """``X`` (or a layer) of a ``.h5ad`` file, read by row chunks with h5py (the file opened
    for each pass, HDF5 gzip chunks inflated on threads)."""

    csc_hint = ("load it (anndata.read_h5ad(path)) and pass the AnnData, raise memory_mb, or "
                "rewrite the file as CSR once: a = anndata.read_h5ad(path); a.X = a.X.tocsr(); "
                "a.write_h5ad(new_path)")

    def __init__(self, path: str, key: str):
        import h5py

        self.path, self.key, self.where = path, key, f"{path}:{key}"
        with _h5_errors(path), h5py.File(path, "r") as f:
            if key not in f:
                have = list(f["layers"].keys()) if isinstance(f.get("layers"), h5py.Group) else []
                raise AnnDataError(f"{path}: no matrix {key!r} (layers: {have})")
            self._check_layout(f[key])

    @contextlib.contextmanager
    def _node(self):
        import h5py

        with _h5_errors(self.path), h5py.File(self.path, "r") as f:
            yield f[self.key]

    @staticmethod
    def _is_array(node) -> bool:
        import h5py

        return isinstance(node, h5py.Dataset)

    @staticmethod
    def _ranged(node):
        return _inflate.Ranged(node)


class _ViewSource(_Source):
    """The rows and columns of a backed view (``adata[10:20]`` of ``read_h5ad(p, backed="r")``).

    Only the file's rows from the view's first to its last are read, by the file source (so
    checked like any read, within ``memory_mb`` for CSC); scipy then selects the view's rows
    and columns from those checked arrays. anndata's own backed slicing is not used: it hands
    the file's arrays to scipy unchecked.
    """

    def __init__(self, src: _H5Source, view):
        oidx, vidx = getattr(view, "_oidx", None), getattr(view, "_vidx", None)
        if oidx is None or vidx is None:  # pragma: no cover - a future anndata without them
            raise AnnDataError(f"{src.where}: cannot tell which rows this backed view selects; "
                               "pass adata.to_memory() or the parent AnnData")
        self.src, self.where = src, src.where
        self.rows = np.arange(src.n_rows)[oidx].reshape(-1)
        self.cols = np.arange(src.n_cols)[vidx].reshape(-1)
        self.n_rows, self.n_cols = int(self.rows.size), int(self.cols.size)

    def chunks(self, budget, per_nnz, chunk_rows):
        import scipy.sparse as sp

        sel = self.rows
        lo, hi = (int(sel.min()), int(sel.max()) + 1) if sel.size else (0, 0)
        parts = []
        for ch in self.src.chunks(budget, per_nnz, None, rows=(lo, hi)):
            a, b = int(ch.indptr[0]), int(ch.indptr[-1])
            parts.append(sp.csr_matrix((ch.data[a:b], ch.indices[a:b], ch.indptr - a),
                                       shape=(ch.indptr.size - 1, self.src.n_cols)))
        X = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, self.src.n_cols))
        yield from _MemorySource(X[sel - lo][:, self.cols], self.where).chunks(
            budget, per_nnz, chunk_rows)


def _h5_n_obs(path: str, key: str = "obs") -> int:
    """The number of cells (``key="var"``: variables) of a ``.h5ad`` file: the length of its
    obs (var) index, not read."""
    import h5py

    with _h5_errors(path), h5py.File(path, "r") as f:
        g = f.get(key)
        index = g.attrs.get("_index", "_index") if isinstance(g, h5py.Group) else None
        index = index.decode(errors="replace") if isinstance(index, bytes) else index
        node = g.get(str(index)) if index is not None else None
        if not isinstance(node, h5py.Dataset) or node.ndim != 1:
            raise AnnDataError(f"{path}: no {key} index ({key}/{index}); the file is damaged "
                               "or not written by anndata")
        return int(node.shape[0])
