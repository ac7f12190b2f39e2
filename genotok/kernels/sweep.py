"""The sweep index of a universe (``docs/architecture.md``): its regions sorted by (chromosome
code, start, end, id), with ``maxend``, the running maximum of ends within each chromosome, which
the overlap kernels (:mod:`genotok.kernels.overlap`) search. Built once per universe
(:attr:`genotok.universe.Universe.sweep`): :func:`sort_order` sorts, :func:`build_sweep_sorted`
lays out the arrays.

Examples
--------
>>> codes = np.zeros(3, np.int32)
>>> starts, ends = np.array([500, 100, 150]), np.array([600, 300, 200])
>>> order = sort_order(codes, starts, ends)
>>> build_sweep_sorted(codes, starts, ends, order, 1).ids.tolist()
[1, 2, 0]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .._config import NJIT


class Sweep(NamedTuple):
    """The arrays the overlap kernels search (:func:`build_sweep_sorted`).

    Examples
    --------
    >>> Sweep._fields
    ('chrom_ptr', 'starts', 'ends', 'maxend', 'ids')
    """

    chrom_ptr: np.ndarray  #: int64 (n_chroms + 1,): rows of code c are chrom_ptr[c]:chrom_ptr[c+1]
    starts: np.ndarray  #: int32 or int64 (m,)
    ends: np.ndarray  #: same dtype (m,)
    maxend: np.ndarray  #: same dtype (m,): running max of ends within a chromosome (may be ends)
    ids: np.ndarray  #: int32 (m,): token id of each sorted row


@njit(**NJIT)
def _running_max(ends, chrom_ptr, out):
    """``out``: the running maximum of ``ends`` within each chromosome. True when it equals
    ``ends`` (no region ends before an earlier one of its chromosome)."""
    same = True
    for c in range(chrom_ptr.size - 1):
        m = np.int64(-1)
        for j in range(chrom_ptr[c], chrom_ptr[c + 1]):
            if ends[j] > m:
                m = ends[j]
            else:
                same = same and ends[j] == m
            out[j] = m
    return same


def build_sweep_sorted(codes, starts, ends, order, n_chroms):
    """Sweep arrays from ``order``: the kept region ids sorted by (code, start, end, id).

    ``order=None`` means the regions are already sorted with no duplicates. Returns a
    :class:`Sweep` (``chrom_ptr, starts, ends, maxend, ids``, as documented on the universe's
    sweep index).

    Coordinates are stored as int32 when every one fits (any real genome: chromosomes are
    shorter than 2^31 bp), else int64. Measured on eight 50k-line narrowPeak files against a
    1M-region universe (one thread): pass 1 of the overlap takes 90 ns per query with int32
    arrays against 150 with int64; the sparse queries read fresh cache lines of the universe,
    and narrower rows halve them. When no region ends before an earlier one of its chromosome
    (tiles, non-overlapping peaks) ``maxend`` is ``ends`` itself: one array fewer.

    Examples
    --------
    >>> sw = build_sweep_sorted(np.zeros(2, np.int32), np.array([100, 400]), np.array([500, 450]),
    ...                         None, 1)
    >>> sw.chrom_ptr.tolist(), sw.maxend.tolist(), sw.ids.tolist(), sw.starts.dtype.name
    ([0, 2], [500, 500], [0, 1], 'int32')
    """
    if order is None:
        s_codes, s_starts, s_ends = codes, starts, ends
        ids = np.arange(codes.size, dtype=np.int32)
    else:
        order = np.asarray(order, dtype=np.int64)
        s_codes = codes[order]
        s_starts = starts[order]
        s_ends = ends[order]
        ids = order.astype(np.int32)
    if s_starts.size and s_starts.min() >= 0 and s_ends.max() < (1 << 31):
        s_starts = s_starts.astype(np.int32)
        s_ends = s_ends.astype(np.int32)
    else:
        s_starts = np.ascontiguousarray(s_starts, dtype=np.int64)
        s_ends = np.ascontiguousarray(s_ends, dtype=np.int64)
    chrom_ptr = np.searchsorted(s_codes, np.arange(n_chroms + 1), side="left").astype(np.int64)
    maxend = np.empty_like(s_ends)
    if _running_max(s_ends, chrom_ptr, maxend):
        maxend = s_ends
    return Sweep(chrom_ptr, s_starts, s_ends, maxend, ids)


@njit(**NJIT)
def _is_sorted(codes, starts, ends):
    """True when rows are ascending by (code, start, end) (ids break ties: always ascending)."""
    for i in range(1, codes.size):
        if codes[i] != codes[i - 1]:
            if codes[i] < codes[i - 1]:
                return False
        elif starts[i] < starts[i - 1] or (starts[i] == starts[i - 1] and ends[i] < ends[i - 1]):
            return False
    return True


@njit(**NJIT)
def _sort_ties(key, ends, o):
    """Within runs of equal ``key[o]`` (stably sorted), order ``o`` by end, stably (then id)."""
    n = o.size
    i = 0
    while i < n:
        j = i + 1
        while j < n and key[o[j]] == key[o[i]]:
            j += 1
        if j - i > 1:
            sub = o[i:j].copy()
            e = np.empty(j - i, np.int64)
            for k in range(j - i):
                e[k] = ends[sub[k]]
            p = np.argsort(e, kind="mergesort")
            for k in range(j - i):
                o[i + k] = sub[p[k]]
        i = j


def sort_order(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """Row order by (code, start, end, id); ``None`` when the rows are in that order already.

    A sorted file costs one O(n) check; otherwise a stable argsort of one packed (code, start)
    key, then a pass ordering its rare ties by end, beats ``np.lexsort`` (kept as the fallback
    when coordinates do not fit the packed key). Figures: benchmarks/RESULTS.md, "Design
    measurements".

    Examples
    --------
    >>> sort_order(np.zeros(3, np.int32), np.array([7, 2, 7]), np.array([9, 3, 8])).tolist()
    [1, 2, 0]
    >>> sort_order(np.zeros(2, np.int32), np.array([1, 2]), np.array([5, 3])) is None
    True
    """
    if _is_sorted(codes, starts, ends):
        return None
    if (codes.size and starts.min() >= 0 and starts.max() < (1 << 40)
            and codes.max() < (1 << 22)):
        key = (codes.astype(np.int64) << 40) | starts
        o = np.argsort(key, kind="stable")
        _sort_ties(key, ends, o)
        return o
    return np.lexsort((np.arange(codes.size), ends, starts, codes))
