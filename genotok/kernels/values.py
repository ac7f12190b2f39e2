"""numba kernels of the single-cell value encodings (:mod:`genotok.singlecell.values`).

Arrays in, arrays out; no kernel indexes memory with a column index, so the only integers
that index are row pointers, checked by the caller (``_validate.offsets``). Oracles:
``tests/singlecell/test_cellvalues.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL


@njit(**NJIT_PARALLEL)
def normalize_rows(indptr, data, target_sum, log1p):
    """``data / row total * target_sum`` (float64), then ``log1p`` when asked; a row whose
    total is 0 stays 0. ``indptr`` is rebased (``indptr[0] == 0``)."""
    out = np.empty(data.size, np.float64)
    for r in prange(indptr.size - 1):  # cells are independent
        a, b = indptr[r], indptr[r + 1]
        scale = _row_scale(data, a, b, target_sum)
        for k in range(a, b):
            v = data[k] * scale
            out[k] = np.log1p(v) if log1p else v
    return out


_SMALL = 4096  # a row of integers up to this is ranked by counting, not sorting


@njit(**NJIT)
def _bin_row(out, a, b, data, raw, scale, log1p, n_bins):
    """The bins of entries ``a:b`` (one row) into ``out``; entry ``k``'s value is ``data[k] *
    scale``, then ``log1p`` when asked (a map that keeps the sign, the order and ties).
    ``raw`` holds the values the row's counting is done on (see :func:`row_bins`)."""
    m = 0
    small = True
    top = 0.0
    for k in range(a, b):
        if np.float64(data[k]) * scale > 0:
            m += 1
            x = np.float64(raw[k])
            if x != np.floor(x) or x > _SMALL:
                small = False
            elif x > top:
                top = x
    if m == 0:
        return
    if small:
        below = np.zeros(int(top) + 2, np.int64)
        for k in range(a, b):
            if np.float64(data[k]) * scale > 0:
                below[int(raw[k]) + 1] += 1
        for j in range(1, below.size):
            below[j] += below[j - 1]  # below[v] = values < v
        for k in range(a, b):
            if np.float64(data[k]) * scale > 0:
                out[k] = 1 + (below[int(raw[k])] * (n_bins - 1)) // m
        return
    vals = np.empty(b - a, np.float64)
    pos = np.empty(m, np.float64)
    j = 0
    for k in range(a, b):
        v = np.float64(data[k]) * scale
        v = np.log1p(v) if log1p else v
        vals[k - a] = v
        if v > 0:
            pos[j] = v
            j += 1
    pos.sort()
    for k in range(a, b):
        v = vals[k - a]
        if v > 0:
            rank = np.searchsorted(pos, v)  # side="left": values strictly below
            out[k] = 1 + (rank * (n_bins - 1)) // m


@njit(**NJIT_PARALLEL)
def row_bins(indptr, data, n_bins, raw):
    """Per-row quantile bin of each entry: ``0`` for values ``<= 0``; a positive value ``v``
    of a row with ``m`` positive values gets ``1 + r * (n_bins - 1) // m`` where ``r`` is the
    number of the row's positive values strictly below ``v`` (ties share a bin).

    ``raw`` holds the values before a per-row increasing map (normalisation, log1p) made
    ``data`` (or ``data`` itself). A row whose raw positive values are integers up to 4096 is
    ranked by counting them (its ranks are the same: the map keeps order and ties, and distinct
    integers that small stay distinct in float64); other rows sort ``data``."""
    out = np.zeros(data.size, np.float64)
    for r in prange(indptr.size - 1):  # cells are independent
        _bin_row(out, indptr[r], indptr[r + 1], data, raw, 1.0, False, n_bins)
    return out


@njit(**NJIT)
def _row_scale(data, a, b, target_sum):
    """``target_sum / total`` of the row ``data[a:b]`` (float64 sum in order), 0 when the
    total is not > 0: :func:`normalize_rows`' factor."""
    total = 0.0
    for k in range(a, b):
        total += np.float64(data[k])
    return target_sum / total if total > 0 else 0.0


@njit(**NJIT)
def bounded_scale(total, target_sum):
    """Whether a row of ``total`` normalises in float64: ``total`` finite and ``target_sum /
    total`` finite (a total of 0 scales by 0). A total that overflows would zero the row's
    values, and a subnormal one would make them infinite."""
    return total == 0 or (total < np.inf and target_sum / total < np.inf)


@njit(**NJIT)
def unbounded_row(indptr, data, target_sum):
    """The first row whose total (:func:`_row_scale`'s float64 sum in order) does not
    normalise in float64 (:func:`bounded_scale`), else -1: the normalising kernels' check."""
    for r in range(indptr.size - 1):
        total = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            total += np.float64(data[k])
        if not bounded_scale(total, target_sum):
            return r
    return -1


@njit(**NJIT_PARALLEL)
def normalize_divide(indptr, indices, data, target_sum, log1p, med):
    """:func:`normalize_rows` then :func:`divide_by_median` in one pass (the same arithmetic,
    no normalised array): ``v = data * (target_sum / row total)``, ``log1p(v)`` when asked,
    then ``v / med[indices]``, 0 where the median is not > 0. The caller has checked ``0 <=
    indices < med.size``; ``indptr`` is rebased."""
    out = np.empty(data.size, np.float64)
    for r in prange(indptr.size - 1):  # cells are independent
        a, b = indptr[r], indptr[r + 1]
        scale = _row_scale(data, a, b, target_sum)
        for k in range(a, b):
            m = med[indices[k]]
            if m > 0:
                v = np.float64(data[k]) * scale
                out[k] = (np.log1p(v) if log1p else v) / m
            else:
                out[k] = 0.0
    return out


@njit(**NJIT_PARALLEL)
def normalize_bins(indptr, data, target_sum, log1p, n_bins):
    """:func:`normalize_rows` then :func:`row_bins` in one pass, no normalised array: a row
    whose positive values are integers up to 4096 is ranked by counting its raw values (the
    normalisation keeps their order and ties); another row has its normalised (``log1p``)
    values computed and sorted. ``indptr`` is rebased."""
    out = np.zeros(data.size, np.float64)
    for r in prange(indptr.size - 1):  # cells are independent
        a, b = indptr[r], indptr[r + 1]
        _bin_row(out, a, b, data, data, _row_scale(data, a, b, target_sum), log1p, n_bins)
    return out


@njit(**NJIT)
def rows_increasing(indptr, indices):
    """Whether every row's column indices strictly increase (no repeated column): one pass
    over ``indices``; ``indptr`` is checked by the caller."""
    for r in range(indptr.size - 1):
        for k in range(indptr[r] + 1, indptr[r + 1]):
            if indices[k] <= indices[k - 1]:
                return False
    return True


@njit(**NJIT)
def merge_counts(k1, n1, k2, n2):
    """Two sorted, distinct key arrays with counts merged into one (equal keys summed):
    a linear pass, no sort and no inverse index."""
    keys = np.empty(k1.size + k2.size, np.int64)
    counts = np.empty(k1.size + k2.size, np.int64)
    i = j = o = 0
    while i < k1.size or j < k2.size:
        if j >= k2.size or (i < k1.size and k1[i] < k2[j]):
            keys[o] = k1[i]
            counts[o] = n1[i]
            i += 1
        elif i >= k1.size or k2[j] < k1[i]:
            keys[o] = k2[j]
            counts[o] = n2[j]
            j += 1
        else:
            keys[o] = k1[i]
            counts[o] = n1[i] + n2[j]
            i += 1
            j += 1
        o += 1
    return keys[:o].copy(), counts[:o].copy()


@njit(**NJIT)
def divide_by_median(values, indices, med):
    """``values / med[indices]``; 0 where the median is not > 0 (NaN: no median). The caller
    has checked ``0 <= indices < med.size``."""
    out = np.empty(values.size, np.float64)
    for k in range(values.size):
        m = med[indices[k]]
        out[k] = values[k] / m if m > 0 else 0.0
    return out


@njit(**NJIT)
def midpoint(lo, hi):
    """``(lo + hi) / 2`` of two non-negative values, finite when they are (their sum may
    overflow near float64's largest value: then ``lo / 2 + hi / 2``)."""
    m = 0.5 * (lo + hi)
    return m if m < np.inf else 0.5 * lo + 0.5 * hi


@njit(**NJIT)
def _clean(v):
    """Whether a value may be summed with another: ``>= 0`` and finite (a bad value stays
    where it is, for the encodings' checks to refuse)."""
    return v >= 0 and v < np.inf


@njit(**NJIT)
def _merge_row(new, val, a, b):
    """Entries ``a:b`` (a row, not increasing by column) sorted by column with a column's
    values summed in storage order; kept in storage order when no column repeats (as
    :func:`remap_rows` documents). Returns the row's new end."""
    seg = new[a:b]
    order = np.argsort(seg, kind="mergesort")  # stable: a column's values in storage order
    dup = False
    for i in range(1, order.size):
        if seg[order[i]] == seg[order[i - 1]]:
            dup = True
            break
    if not dup:
        return b
    cols = seg[order]
    vals = val[a:b][order]
    w = a
    for i in range(order.size):
        if i > 0 and cols[i] == cols[i - 1]:
            val[w - 1] += vals[i]
        else:
            new[w] = cols[i]
            val[w] = vals[i]
            w += 1
    return w


@njit(**NJIT_PARALLEL)
def remap_rows(indptr, cols, data, col_new, sink, totals, has_totals, out_proto, new_proto):
    """CSR rows (``indptr`` rebased) in new columns: column ``c`` becomes ``col_new[c]``
    (``< 0``: the entry is dropped), entries of one new column in a row summed (each row then
    sorted by new column; a row where no new column repeats keeps its storage order, and so
    does a row holding a negative or non-finite value: nothing is summed there).

    ``has_totals``: each row's entries of column ``sink`` are dropped and the row gets one
    entry ``sink`` (its last) of ``totals[r]`` minus the float64 sum of its kept values (in
    storage order), when that is ``> 0``; a row where it is not ``>= 0`` is returned as the
    first bad row. Values come out in ``out_proto.dtype``. Returns ``(indptr, columns,
    values, first bad row or -1)``, the columns in ``new_proto.dtype`` (int32 halves the
    fresh memory the chunk's output touches); the caller has checked ``0 <= cols < col_new.size``,
    ``totals.size == indptr.size - 1`` when ``has_totals``, and that ``sink`` (a new column
    above every kept one) is ``>= 0`` then."""
    n_rows = indptr.size - 1
    lens = np.zeros(n_rows, np.int64)
    rests = np.zeros(n_rows, np.float64)
    merged = np.zeros(n_rows, np.bool_)
    bad = np.zeros(n_rows, np.bool_)
    for r in prange(n_rows):  # pass 1: each row's length (cells are independent)
        a, b = indptr[r], indptr[r + 1]
        count = 0
        increasing = True
        clean = True
        last = -1
        known = 0.0
        for k in range(a, b):
            c = col_new[cols[k]]
            if c < 0 or (has_totals and c == sink):
                continue
            count += 1
            known += np.float64(data[k])
            if c <= last:
                increasing = False
            if not _clean(data[k]):
                clean = False
            last = c
        if not increasing and clean:  # a repeated column? (sorted copy of the row's columns)
            seg = np.empty(count, np.int64)
            j = 0
            for k in range(a, b):
                c = col_new[cols[k]]
                if c >= 0 and not (has_totals and c == sink):
                    seg[j] = c
                    j += 1
            seg.sort()
            distinct = min(count, 1)
            for i in range(1, count):
                if seg[i] != seg[i - 1]:
                    distinct += 1
            if distinct < count:
                merged[r] = True
                count = distinct
        if has_totals:
            rest = totals[r] - known
            if not rest >= 0:
                bad[r] = True
            elif rest > 0:
                rests[r] = rest
                count += 1
        lens[r] = count
    first_bad = -1
    ptr = np.zeros(n_rows + 1, np.int64)
    for r in range(n_rows):
        if bad[r] and first_bad < 0:
            first_bad = r
        ptr[r + 1] = ptr[r] + lens[r]
    out_new = np.empty(ptr[n_rows], new_proto.dtype)
    out_val = np.empty(ptr[n_rows], out_proto.dtype)
    for r in prange(n_rows):  # pass 2: the rows written in place
        a, b = indptr[r], indptr[r + 1]
        o = ptr[r]
        if merged[r]:
            m = lens[r] + (b - a)  # room for every kept entry before the merge
            new = np.empty(m, new_proto.dtype)
            val = np.empty(m, out_proto.dtype)
        else:
            new, val = out_new, out_val
        j = 0 if merged[r] else o
        for k in range(a, b):
            c = col_new[cols[k]]
            if c < 0 or (has_totals and c == sink):
                continue
            new[j] = c
            val[j] = data[k]
            j += 1
        if merged[r]:
            w = _merge_row(new, val, 0, j)
            for i in range(w):
                out_new[o + i] = new[i]
                out_val[o + i] = val[i]
            j = o + w
        if rests[r] > 0:
            out_new[j] = sink
            out_val[j] = rests[r]
    return ptr, out_new, out_val, first_bad


@njit(**NJIT_PARALLEL)
def quantile_bins(indptr, data, grid):
    """scGPT's per-cell bins (:class:`genotok.singlecell.spec.QuantileBins`) without the draw:
    for each row's positive values ``v`` (float64), the edges are ``numpy.quantile(v, grid)``
    (method ``linear``, NumPy's arithmetic: index ``(m - 1) * q``, ``a + (b - a) * t``, or
    ``b - (b - a) * (1 - t)`` from ``t >= 0.5``) and a value gets ``left =
    searchsorted(edges, v, "right")`` (``numpy.digitize``) and ``right = searchsorted(edges,
    v, "left")`` (``right=True``); zeros elsewhere. Returns ``(left, right, rows where some
    right != left)``. The caller has checked that ``indptr`` increases within ``data``."""
    n_rows = indptr.size - 1
    left = np.zeros(data.size, np.float64)
    right = np.zeros(data.size, np.float64)
    ties = np.zeros(n_rows, np.bool_)
    for r in prange(n_rows):  # cells are independent
        a, b = indptr[r], indptr[r + 1]
        m = 0
        for k in range(a, b):
            if data[k] > 0:
                m += 1
        if m == 0:
            continue
        s = np.empty(m, np.float64)
        j = 0
        for k in range(a, b):
            if data[k] > 0:
                s[j] = data[k]
                j += 1
        s.sort()
        edges = np.empty(grid.size, np.float64)
        for i in range(grid.size):
            virtual = (m - 1) * grid[i]
            if virtual >= m - 1:
                edges[i] = s[m - 1]
                continue
            p = int(np.floor(virtual))
            t = virtual - p
            lo, hi = s[p], s[p + 1]
            d = hi - lo
            edges[i] = hi - d * (1 - t) if t >= 0.5 else lo + d * t
        for k in range(a, b):
            x = np.float64(data[k])
            if x > 0:
                lft = np.searchsorted(edges, x, side="right")
                rgt = np.searchsorted(edges, x, side="left")
                left[k] = lft
                right[k] = rgt
                if rgt != lft:
                    ties[r] = True
    return left, right, ties
