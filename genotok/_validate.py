"""The one place where integers that will index memory are checked.

numba kernels and scipy's sparse constructors do no bounds checking: a row pointer that
goes backwards, an index past the end or a negative id is silent memory corruption there.
Every such array, whether it comes from a file (``.h5ad``, corpus, ``.gtok``) or from a
caller, passes through one of these vectorised checks before a kernel or scipy sees it.
Each check costs one or two passes over the array (``np.diff``, ``min``/``max``) and raises
the caller's error class with a message that says where, what and how to fix it.
"""

from __future__ import annotations

import numpy as np

from .errors import GenotokError


def _int_array(a, where: str, what: str, error: type[GenotokError]) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise error(f"{where}: {what} must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        if a.size == 0:
            return np.zeros(0, np.int64)
        raise error(f"{where}: {what} must hold integers, got dtype {a.dtype}")
    return a


def offsets(ptr, n_data: int, where: str, *, n_rows: int | None = None, what: str = "indptr",
            error: type[GenotokError] = GenotokError) -> np.ndarray:
    """Check a row-pointer array and return it as contiguous int64.

    ``ptr`` must have ``n_rows + 1`` entries (when ``n_rows`` is given), start at 0, never
    decrease, and end at ``n_data`` (the length of the array it points into).

    Examples
    --------
    >>> offsets([0, 2, 2, 5], 5, "x").tolist()
    [0, 2, 2, 5]
    >>> offsets([0, 3, 2], 2, "x")
    Traceback (most recent call last):
    ...
    genotok.errors.GenotokError: x: indptr decreases at entry 2 (3 -> 2); a row pointer must never decrease
    """
    p = _int_array(ptr, where, what, error)
    if n_rows is not None and p.size != n_rows + 1:
        raise error(f"{where}: {what} has {p.size} entries, expected {n_rows + 1} "
                    f"(one more than the {n_rows} rows)")
    if p.size == 0:
        raise error(f"{where}: {what} is empty; it needs at least one entry (0)")
    if p.dtype.kind == "u" and p.dtype.itemsize == 8 and int(p.max()) > np.iinfo(np.int64).max:
        raise error(f"{where}: {what} holds a value above 2**63")
    p = np.ascontiguousarray(p, dtype=np.int64)
    if p[0] != 0:
        raise error(f"{where}: {what} starts at {int(p[0])}, expected 0")
    if p.size > 1:
        step = np.diff(p)
        bad = np.flatnonzero(step < 0)
        if bad.size:
            i = int(bad[0]) + 1
            raise error(f"{where}: {what} decreases at entry {i} ({int(p[i - 1])} -> {int(p[i])}); "
                        f"a row pointer must never decrease")
    if p[-1] != n_data:
        raise error(f"{where}: {what} ends at {int(p[-1])}, but there are {n_data} entries "
                    f"to point into")
    return p


def indices(idx, n: int, where: str, *, what: str = "index",
            error: type[GenotokError] = GenotokError) -> np.ndarray:
    """Check that every value of ``idx`` lies in ``[0, n)``; return ``idx`` unchanged.

    Examples
    --------
    >>> indices(np.array([0, 3]), 4, "x").tolist()
    [0, 3]
    >>> indices(np.array([0, 4]), 4, "x", what="column index")
    Traceback (most recent call last):
    ...
    genotok.errors.GenotokError: x: column index 4 at position 1 is out of range [0, 4)
    """
    a = _int_array(idx, where, what, error)
    if a.size == 0:
        return a
    lo, hi = a.min(), a.max()
    if (a.dtype.kind == "i" and lo < 0) or hi >= n:
        bad = int(np.flatnonzero((a < 0) | (a >= n))[0])
        raise error(f"{where}: {what} {int(a[bad])} at position {bad} is out of range [0, {n})")
    return a


def compressed(indptr, idx, n_major: int, n_minor: int, where: str, *, fmt: str = "csr",
               error: type[GenotokError] = GenotokError) -> tuple[np.ndarray, np.ndarray]:
    """Check a CSR (``fmt="csr"``) or CSC matrix's ``indptr`` and ``indices`` together.

    ``n_major`` is the number of rows for CSR (columns for CSC), ``n_minor`` the other
    dimension. Returns ``(indptr as int64, indices)``. Call it before ``scipy.sparse``
    sees the arrays (``tocsr()`` writes wherever a bad index points).
    """
    major, minor = ("row", "column") if fmt == "csr" else ("column", "row")
    idx = _int_array(idx, where, f"{minor} indices", error)
    p = offsets(indptr, idx.size, where, n_rows=n_major, what=f"indptr ({fmt.upper()}, per {major})",
                error=error)
    indices(idx, n_minor, where, what=f"{minor} index", error=error)
    return p, idx


def shape(value, where: str, *, ndim: int = 2, what: str = "shape",
          error: type[GenotokError] = GenotokError) -> tuple[int, ...]:
    """Check a matrix shape read from a file or taken from a caller: ``ndim`` non-negative
    integers (numpy or Python, not floats, not bools). Returns a tuple of Python ints.

    Examples
    --------
    >>> shape(np.array([4, 3]), "x")
    (4, 3)
    >>> shape([4.0, 3.0], "x")
    Traceback (most recent call last):
    ...
    genotok.errors.GenotokError: x: shape must be 2 non-negative integers, got [4.0, 3.0]
    """
    items = None
    try:
        a = np.asarray(value)
        if a.ndim == 1 and a.size == ndim and a.dtype.kind in "iu":
            items = tuple(int(x) for x in a.tolist())
        elif a.dtype == object and a.ndim == 1 and a.size == ndim and all(
                isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in a):
            items = tuple(int(x) for x in a)
    except (TypeError, ValueError):
        items = None
    if items is None or any(x < 0 for x in items):
        shown = repr(value.tolist() if isinstance(value, np.ndarray) else value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise error(f"{where}: {what} must be {ndim} non-negative integers, got {shown}")
    return items


def same_length(a, n: int, where: str, *, what: str, why: str = "one per stored index",
                error: type[GenotokError] = GenotokError) -> None:
    """Check that a one-dimensional array has ``n`` entries (values beside their indices).

    >>> same_length(np.zeros(3), 3, "x", what="data")
    >>> same_length(np.zeros(2), 3, "x", what="data")
    Traceback (most recent call last):
    ...
    genotok.errors.GenotokError: x: data has 2 entries, expected 3 (one per stored index)
    """
    a_shape = np.shape(a)
    if len(a_shape) != 1:
        raise error(f"{where}: {what} must be one-dimensional, got shape {a_shape}")
    if a_shape[0] != n:
        raise error(f"{where}: {what} has {a_shape[0]} entries, expected {n} ({why})")


def rows(indices, n: int, what: str = "record", of: str = "{n} records") -> np.ndarray:
    """``indices`` as int64 row numbers in ``[0, n)`` (negative ones count from the end), checked
    before they index memory: a float, a bool or an index out of range is an ``IndexError``
    naming the first bad one (``what``), never a truncated or wrapped row.

    Examples
    --------
    >>> rows([0, -1], 3).tolist()
    [0, 2]
    >>> rows([0.5], 3)
    Traceback (most recent call last):
    ...
    IndexError: record indices must be integers, got dtype float64
    >>> rows([3], 3, "draw", "a mixture of {n} draws per epoch")
    Traceback (most recent call last):
    ...
    IndexError: draw 3 out of range for a mixture of 3 draws per epoch
    """
    idx = np.asarray(indices)
    if idx.size and idx.dtype.kind not in "iu":
        raise IndexError(f"{what} indices must be integers, got dtype {idx.dtype}")
    idx = idx.astype(np.int64, copy=False).ravel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)][0]
        raise IndexError(f"{what} {int(bad)} out of range for {of.format(n=n)}")
    return np.where(idx < 0, idx + n, idx) if idx.size and idx.min() < 0 else idx
