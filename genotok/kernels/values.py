"""numba kernels of the single-cell value encodings (:mod:`genotok.singlecell.values`).

Arrays in, arrays out; no kernel indexes memory with a column index, so the only integers
that index are row pointers, checked by the caller (``_validate.offsets``). Oracles:
``tests/singlecell/test_cellvalues.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL
from .cells import _LOW, _U8, _U32, RADIX_FROM, _by_value, rng_below, rng_seed


@njit(**NJIT_PARALLEL)
def normalize_rows(indptr, data, target_sum, log1p, out):
    """``data / row total * target_sum`` (float64), then ``log1p`` when asked, into ``out``
    (float64, as long as ``data``; returned); a row whose total is 0 stays 0. ``indptr`` is
    rebased (``indptr[0] == 0``)."""
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
def row_bins(indptr, data, n_bins, raw, out):
    """Per-row quantile bin of each entry: ``0`` for values ``<= 0``; a positive value ``v``
    of a row with ``m`` positive values gets ``1 + r * (n_bins - 1) // m`` where ``r`` is the
    number of the row's positive values strictly below ``v`` (ties share a bin).

    ``raw`` holds the values before a per-row increasing map (normalisation, log1p) made
    ``data`` (or ``data`` itself). A row whose raw positive values are integers up to 4096 is
    ranked by counting them (its ranks are the same: the map keeps order and ties, and distinct
    integers that small stay distinct in float64); other rows sort ``data``. Into ``out``
    (float64, as long as ``data``; returned)."""
    for r in prange(indptr.size - 1):  # cells are independent
        out[indptr[r]:indptr[r + 1]] = 0.0
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


_ROW_CLEAN, _ROW_UNSORTED, _ROW_BAD = 0, 1, 2


@njit(**NJIT)
def _checked_total(indices, data, a, b, n_cols):
    """The row ``a:b``'s float64 total (:func:`_row_scale`'s sum, in order) and its state:
    ``_ROW_CLEAN``; ``_ROW_UNSORTED``, a column not above the one before it (a repeat);
    ``_ROW_BAD``, a value not finite or negative, or a column outside ``[0, n_cols)`` (not to
    be indexed with)."""
    total = 0.0
    last = -1
    state = _ROW_CLEAN
    for k in range(a, b):
        x = np.float64(data[k])
        c = indices[k]
        if not (x >= 0 and x < np.inf) or c < 0 or c >= n_cols:
            state = _ROW_BAD
        elif c <= last and state == _ROW_CLEAN:
            state = _ROW_UNSORTED
        last = c
        total += x
    return total, state


@njit(**NJIT_PARALLEL)
def normalize_divide(indptr, indices, data, target_sum, log1p, med, out):
    """:func:`normalize_rows` then :func:`divide_by_median` in one pass (the same arithmetic,
    no normalised array): ``v = data * (target_sum / row total)``, ``log1p(v)`` when asked,
    then ``v / med[indices]``, 0 where the median is not > 0, into ``out`` (float64, as long
    as ``data``). ``indptr`` is rebased and checked by the caller.

    Returns whether every row was clean: its values finite and ``>= 0``, its columns strictly
    increasing within ``[0, med.size)``, its total normalising (:func:`bounded_scale`) and
    every ratio finite; the caller's checks need not run again. A row with a bad value or
    column is not written (its columns index ``med``); a row whose columns repeat, or whose
    total or ratios do not stay finite, is written (the caller's checks say what is wrong)."""
    n_rows = indptr.size - 1
    clean = np.ones(n_rows, np.bool_)
    for r in prange(n_rows):  # cells are independent
        a, b = indptr[r], indptr[r + 1]
        total, state = _checked_total(indices, data, a, b, med.size)
        if state == _ROW_BAD:
            clean[r] = False
            continue
        scale = target_sum / total if total > 0 else 0.0
        finite = True  # a local flag: one in memory, written in this loop, made it 2x slower
        for k in range(a, b):
            m = med[indices[k]]
            v = np.float64(data[k]) * scale
            y = (np.log1p(v) if log1p else v) / m if m > 0 else 0.0
            finite = finite & (y < np.inf)  # (NaN too)
            out[k] = y
        clean[r] = state == _ROW_CLEAN and bounded_scale(total, target_sum) and finite
    return bool(clean.all())


@njit(**NJIT_PARALLEL)
def normalize_bins(indptr, indices, data, n_cols, target_sum, log1p, n_bins, out):
    """:func:`normalize_rows` then :func:`row_bins` in one pass, no normalised array: a row
    whose positive values are integers up to 4096 is ranked by counting its raw values (the
    normalisation keeps their order and ties); another row has its normalised (``log1p``)
    values computed and sorted. Into ``out`` (float64, as long as ``data``). ``indptr`` is
    rebased and checked by the caller.

    Returns whether every row was clean (:func:`normalize_divide`'s rule, columns within
    ``[0, n_cols)``); every row is written (the columns index nothing here)."""
    n_rows = indptr.size - 1
    clean = np.ones(n_rows, np.bool_)
    for r in prange(n_rows):  # cells are independent
        a, b = indptr[r], indptr[r + 1]
        total, state = _checked_total(indices, data, a, b, n_cols)
        clean[r] = state == _ROW_CLEAN and bounded_scale(total, target_sum)
        out[a:b] = 0.0
        _bin_row(out, a, b, data, data, target_sum / total if total > 0 else 0.0, log1p,
                 n_bins)
    return bool(clean.all())


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
def divide_by_median(values, indices, med, out):
    """``values / med[indices]`` into ``out`` (float64, as long as ``values``; returned); 0
    where the median is not > 0 (NaN: no median). The caller has checked ``0 <= indices <
    med.size``."""
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


#: a row's quantile bins are counted, not sorted, when its positive values are integers up to
#: this and its largest is at most ``8 * m + 256`` (``m`` its positive values)
_COUNTED = 4096
_TWO_M53 = 1.0 / 9007199254740992.0


@njit(**NJIT)
def _edge(grid_q, m, lo, hi):
    """``numpy.quantile``'s linear interpolation between the sorted values ``lo = s[p]`` and
    ``hi = s[p + 1]`` at ``q``, with ``p = floor((m - 1) * q)`` (NumPy's arithmetic)."""
    virtual = (m - 1) * grid_q
    t = virtual - np.floor(virtual)
    d = hi - lo
    return hi - d * (1 - t) if t >= 0.5 else lo + d * t


@njit(**NJIT)
def _scaled(x, scale, log1p):
    """An entry's value: ``x * scale`` (float64), then ``log1p`` when asked."""
    y = np.float64(x) * scale
    return np.log1p(y) if log1p else y


@njit(**NJIT)
def _row_bins(out, x, scale, log1p, grid, state, both, s, edges, cum, left, right):
    """:func:`quantile_bins` of one row: the bins of the values ``x`` (``x * scale``, then
    ``log1p`` when asked) into ``out`` (zeros stay where a value is not positive); ``state``
    starts the row's random stream. ``s``, ``edges``, ``cum``, ``left``, ``right``: scratch
    (``s`` as long as the row, ``cum``/``left``/``right`` of ``_COUNTED + 1``)."""
    m = 0
    top = 0
    counted = True
    for k in range(x.size):
        if np.float64(x[k]) * scale > 0:  # log1p keeps the sign
            m += 1
            v = np.float64(x[k])
            if v != np.floor(v) or v > _COUNTED:
                counted = False
            elif v > top:
                top = int(v)
    if m == 0:
        return
    if counted and top <= 8 * m + 256:
        cum[:top + 1] = 0
        for k in range(x.size):
            if np.float64(x[k]) * scale > 0:
                cum[int(x[k])] += 1
        for v in range(1, top + 1):
            cum[v] += cum[v - 1]  # cum[v]: positive counts <= v
        at = 1  # the count at rank p: the least v with cum[v] > p
        for i in range(grid.size):
            virtual = (m - 1) * grid[i]
            p = m - 1 if virtual >= m - 1 else int(np.floor(virtual))
            while cum[at] <= p:
                at += 1
            lo = _scaled(at, scale, log1p)
            if virtual >= m - 1:
                edges[i] = lo
                continue
            nxt = at
            while cum[nxt] <= p + 1:
                nxt += 1
            edges[i] = _edge(grid[i], m, lo, _scaled(nxt, scale, log1p))
        for v in range(1, top + 1):
            if cum[v] != cum[v - 1]:
                y = _scaled(v, scale, log1p)
                left[v] = np.searchsorted(edges, y, side="right")
                right[v] = np.searchsorted(edges, y, side="left")
        for k in range(x.size):
            if np.float64(x[k]) * scale > 0:
                v = int(x[k])
                out[k] = left[v]
                if both:
                    state, w = rng_below(state, 9007199254740992)
                    if right[v] != left[v]:
                        out[k] = np.ceil(w * _TWO_M53 * (right[v] - left[v]) + left[v])
        return
    j = 0
    for k in range(x.size):
        if np.float64(x[k]) * scale > 0:
            s[j] = _scaled(x[k], scale, log1p)
            j += 1
    s[:m].sort()
    for i in range(grid.size):
        virtual = (m - 1) * grid[i]
        if virtual >= m - 1:
            edges[i] = s[m - 1]
            continue
        p = int(np.floor(virtual))
        edges[i] = _edge(grid[i], m, s[p], s[p + 1])
    for k in range(x.size):
        if np.float64(x[k]) * scale > 0:
            y = _scaled(x[k], scale, log1p)
            lft = np.searchsorted(edges, y, side="right")
            rgt = np.searchsorted(edges, y, side="left")
            out[k] = lft
            if both:
                state, w = rng_below(state, 9007199254740992)
                if rgt != lft:
                    out[k] = np.ceil(w * _TWO_M53 * (rgt - lft) + lft)


@njit(**NJIT)
def _longest(indptr, lo, hi):
    """The most entries of one of the rows ``lo:hi``: a block's scratch size."""
    longest = 0
    for r in range(lo, hi):
        longest = max(longest, indptr[r + 1] - indptr[r])
    return longest


@njit(**NJIT)
def _bin_scratch(longest, grid):
    """:func:`_row_bins`' scratch for rows of up to ``longest`` entries: ``(s, edges, cum,
    left, right)``."""
    return (np.empty(longest, np.float64), np.empty(grid.size, np.float64),
            np.zeros(_COUNTED + 1, np.int64), np.zeros(_COUNTED + 1, np.int64),
            np.zeros(_COUNTED + 1, np.int64))


@njit(**NJIT_PARALLEL)
def quantile_bins(indptr, data, normalize, target_sum, log1p, grid, seed, row0, both, out):
    """scGPT's per-cell bins (:class:`genotok.singlecell.spec.QuantileBins`), the draw included.

    Each entry's value is ``data`` itself, or with ``normalize`` ``data * (target_sum / row
    total)`` (:func:`normalize_rows`' arithmetic, ``log1p`` when asked). For each row's
    positive values ``v`` (float64), the edges are ``numpy.quantile(v, grid)`` (method
    ``linear``, NumPy's arithmetic: index ``(m - 1) * q``, ``a + (b - a) * t``, or ``b - (b -
    a) * (1 - t)`` from ``t >= 0.5``), a value gets ``left = searchsorted(edges, v, "right")``
    (``numpy.digitize``) and ``right = searchsorted(edges, v, "left")`` (``right=True``); with
    ``both``, where they differ, ``ceil(u * (right - left) + left)`` for a uniform ``u`` of the
    row's own stream (SplitMix64 seeded by ``(seed, row0 + r)``, one draw per positive value in
    storage order: :func:`genotok.kernels.cells.rng_below` at ``2**53``, times ``2**-53``);
    zeros elsewhere. The bins (float64) go into ``out`` (as long as ``data``; returned).

    A row whose positive values are integers up to 4,096 (raw counts) is counted, not sorted:
    the map from a count to its value keeps order and ties, so the sorted values at the edges'
    ranks and each distinct count's bins are those of the values (computed once per distinct
    count). The caller has checked that ``indptr`` increases within ``data``."""
    n_rows = indptr.size - 1
    n_blocks = min(n_rows, 64)
    for g in prange(n_blocks):
        lo_r, hi_r = g * n_rows // n_blocks, (g + 1) * n_rows // n_blocks
        s, edges, cum, left, right = _bin_scratch(_longest(indptr, lo_r, hi_r), grid)
        for r in range(lo_r, hi_r):
            a, b = indptr[r], indptr[r + 1]
            scale = _row_scale(data, a, b, target_sum) if normalize else 1.0
            out[a:b] = 0.0
            _row_bins(out[a:b], data[a:b], scale, log1p, grid, rng_seed(seed, row0 + r), both,
                      s, edges, cum, left, right)
    return out


@njit(**NJIT_PARALLEL)
def bin_rows(indptr, cols, data, col_new, target_sum, log1p, grid, seed, row0, both, col_ids,
             keep_from, blocks, cap_off, ids, vals):
    """scGPT's rows in one pass, straight from the matrix's CSR rows: the columns in the
    vocabulary kept (``col_new[col] >= 0``, the others dropped first), normalised to
    ``target_sum`` by the kept entries' float64 total (``log1p``), :func:`quantile_bins` (the
    draw included; ``row0``: the first row's number), each entry whose bin is ``>= keep_from``
    and whose column has a token (``col_ids[c] >= 0``) written in column order at
    ``cap_off[r]``: its token id in ``ids``, its bin in ``vals`` (empty: not written; one signature
    either way).
    Returns ``(lengths, general)``: each row's tokens, and whether some row needs the general
    path (a repeated or unsorted kept column, a value negative or not finite, a total that does
    not normalise: :func:`remap_rows`, the encoding's checks and the cell kernels then run,
    with their messages). The same bins as those for every row it accepts. The caller has
    checked ``0 <= cols < col_new.size``, ``col_new < col_ids.size`` and that each row's slot
    holds its entries."""
    n_rows = indptr.size - 1
    lengths = np.zeros(n_rows, np.int64)
    general = np.zeros(blocks.size, np.bool_)
    for g in prange(blocks.size - 1):
        longest = _longest(indptr, blocks[g], blocks[g + 1])
        x = np.empty(longest, data.dtype)
        c_of = np.empty(longest, np.int64)
        bins = np.zeros(longest, np.float64)
        s, edges, cum, left, right = _bin_scratch(longest, grid)
        for r in range(blocks[g], blocks[g + 1]):
            a, b = indptr[r], indptr[r + 1]
            n = 0
            last = -1
            total = 0.0
            for k in range(a, b):
                c = col_new[cols[k]]
                if c < 0:
                    continue
                if c <= last or not _clean(data[k]):
                    general[g] = True
                    break
                last = c
                x[n] = data[k]
                c_of[n] = c
                total += np.float64(data[k])
                n += 1
            if general[g] or not bounded_scale(total, target_sum):
                general[g] = True
                break
            bins[:n] = 0.0
            _row_bins(bins[:n], x[:n], target_sum / total if total > 0 else 0.0, log1p, grid,
                      rng_seed(seed, row0 + r), both, s, edges, cum, left, right)
            o = cap_off[r]
            j = 0
            for i in range(n):
                t = col_ids[c_of[i]]
                if bins[i] >= keep_from and t >= 0:
                    ids[o + j] = t
                    if vals.size:
                        vals[o + j] = bins[i]
                    j += 1
            lengths[r] = j
    return lengths, general.any()


#: :func:`_rank_order`'s coarse key has this many bits more than a row's length needs (about
#: one pair of entries in 2**(this - 1) shares a coarse key, for the insertion pass to order)
_COARSE_SPARE = 6


@njit(**NJIT)
def _rank_order(keys, spare, hist, n, v, lo, hi):
    """:func:`genotok.kernels.cells._by_value`'s order (``v`` descending, ties by position) of
    ``keys[:n]`` (``(~float32 bits of v[p]) << 32 | p``; ``lo``, ``hi``: the least and the
    greatest high half), in fewer passes: a stable radix sort of a coarse key, the high half
    minus ``lo`` cut to its top ``bit_length(n) + 6`` bits (two 8-bit passes for rows up to
    1,024 entries where the full key takes four), then one insertion pass ordering each run of
    equal coarse keys by the high half, then by ``v`` (stable: float64 values float32 makes
    equal keep their order, exact ties their positions). A row whose coarse keys crowd (a few
    far outliers stretching the range) would make the insertion pass quadratic: past ``8 n``
    moves the partly sorted keys go to ``_by_value`` (every step so far was stable, so the
    result is the same). Rows under ``RADIX_FROM`` entries go to ``_by_value`` directly.
    Returns ``keys`` or ``spare``, whichever holds the result."""
    if n < RADIX_FROM:
        return _by_value(keys, spare, hist, n, v, 0)
    span = hi - lo
    sig = 0  # the bits in which the high halves differ
    while sig < 32 and (span >> np.uint64(sig)) != 0:
        sig += 1
    need = _COARSE_SPARE
    while need < 32 and (np.int64(1) << (need - _COARSE_SPARE)) < n:
        need += 1
    shift = np.uint64(sig - need if sig > need else 0)
    passes = (sig - np.int64(shift) + 7) // 8
    hist[:] = 0
    for i in range(n):
        c = ((keys[i] >> _U32) - lo) >> shift
        for d in range(passes):
            hist[d, np.int64((c >> (_U8 * np.uint64(d))) & np.uint64(255))] += 1
    src, dst = keys, spare
    for d in range(passes):
        total = 0
        for x in range(256):
            c = hist[d, x]
            hist[d, x] = total
            total += c
        at = np.uint64(8 * d)
        for i in range(n):
            key = src[i]
            x = np.int64(((((key >> _U32) - lo) >> shift) >> at) & np.uint64(255))
            dst[hist[d, x]] = key
            hist[d, x] += 1
        src, dst = dst, src
    budget = 8 * n
    for x in range(1, n):  # insertion by (high half, then v descending), stable
        key = src[x]
        kh = key >> _U32
        if (src[x - 1] >> _U32) < kh:
            continue
        kv = v[np.int64(key & _LOW)]
        y = x - 1
        while y >= 0:
            o = src[y]
            oh = o >> _U32
            if oh < kh or (oh == kh and v[np.int64(o & _LOW)] >= kv):
                break
            src[y + 1] = o
            y -= 1
        src[y + 1] = key
        budget -= x - 1 - y
        if budget < 0:
            return _by_value(src, dst, hist, n, v, 0)
    return src


#: :func:`rank_rows`' row status: the row ran fused; it needs the general path (a repeated or
#: unsorted new column, a value that is negative or not finite: nothing is summed or refused
#: here); its obs total is below its kept counts, its total does not normalise, or a ratio
#: overflows (the general path refuses these with its messages)
RANK_OK, RANK_GENERAL = 0, 1


@njit(**NJIT_PARALLEL)
def rank_rows(indptr, cols, data, col_new, sink, totals, has_totals, target_sum, log1p, med,
              col_ids, keep_from, max_tokens, blocks, cap_off, ids, vals):
    """A gene vocabulary's value-ordered rows in one pass, straight from the matrix's CSR rows:
    :func:`remap_rows` (new columns, the ``n_counts`` sink), :func:`normalize_divide` (the
    row's total, ``target_sum``, ``log1p``, the medians) and the value order of
    ``cells.value_rows`` (ties in new-column order, float64 values compared as such), cut to
    ``max_tokens`` (``0``: no cut), the ids looked up in ``col_ids`` (new column -> token id,
    ``-1``: none) and written at ``cap_off[r]`` (``vals``, empty: not written: the values
    as float32). Returns ``(lengths, general)``: each row's tokens, and whether any row needs
    the general path (:data:`RANK_GENERAL`; then nothing written is meaningful).

    The same arithmetic as those kernels for every row whose new columns strictly increase
    after the drops (the sink's aside) and whose values are finite and ``>= 0``: the row's
    total is the float64 sum of its kept values in storage order, plus ``totals[r]`` minus
    that when it is positive (``has_totals``: the sink's entries dropped first); without
    totals, the sink's entries count in it (where several, summed in ``data``'s dtype first
    and added last, as :func:`remap_rows` merges them); the sink never has a token;
    ``scale = target_sum / total`` (0 for a total of 0); entry value ``v = x * scale`` (``log1p``), divided by ``med[c]``, 0
    where that is not ``> 0``; kept when ``keep_from <= v < inf`` and ``col_ids[c] >= 0``. The
    caller has checked ``0 <= cols < col_new.size``, ``col_new < med.size == col_ids.size``,
    ``totals.size == indptr.size - 1`` (``has_totals``), ``cap_off[r + 1] - cap_off[r] >=``
    the row's tokens (its entries, cut to ``max_tokens``)."""
    n_rows = indptr.size - 1
    lengths = np.zeros(n_rows, np.int64)
    general = np.zeros(blocks.size, np.bool_)
    for g in prange(blocks.size - 1):
        longest = _longest(indptr, blocks[g], blocks[g + 1])
        keys = np.empty(longest, np.uint64)
        spare = np.empty(longest, np.uint64)
        hist = np.empty((4, 256), np.int64)
        v = np.empty(longest, np.float64)
        c_of = np.empty(longest, np.int64)
        sunk = np.zeros(1, data.dtype)  # the sink's entries summed as remap_rows sums them
        for r in range(blocks[g], blocks[g + 1]):
            if general[g]:
                break
            a, b = indptr[r], indptr[r + 1]
            known = 0.0  # the kept entries but the sink's, in storage order
            stored = 0.0  # every kept entry, in storage order
            n_sink = 0
            n_row = 0
            last = -1
            for k in range(a, b):
                c = col_new[cols[k]]
                if c < 0 or (has_totals and c == sink):
                    continue
                x = data[k]
                if not _clean(x):
                    general[g] = True
                    break
                stored += np.float64(x)
                if c == sink:  # no totals: the sink is a column, summed where it repeats
                    sunk[0] = x if n_sink == 0 else sunk[0] + x
                    n_sink += 1
                    continue
                if c <= last:
                    general[g] = True
                    break
                last = c
                known += np.float64(x)
                c_of[n_row] = c  # the row's entries with a token to be, for pass 2
                v[n_row] = x
                n_row += 1
            if general[g]:
                break
            # remap_rows' row: the sink's entries merged into one, last, where they repeat;
            # the row in storage order otherwise
            total = known + np.float64(sunk[0]) if n_sink > 1 else stored
            if has_totals:
                rest = totals[r] - known
                if not rest >= 0:
                    general[g] = True
                    break
                if rest > 0:
                    total = known + rest
            if not bounded_scale(total, target_sum):
                general[g] = True
                break
            scale = target_sum / total if total > 0 else 0.0
            n = 0
            lo, hi = _LOW, np.uint64(0)  # the keys' high halves' range
            for i in range(n_row):  # in place: entry n <= i is written
                c = c_of[i]
                m = med[c]
                y = 0.0
                if m > 0:
                    y = v[i] * scale
                    y = (np.log1p(y) if log1p else y) / m
                if y == np.inf:
                    general[g] = True
                    break
                if y >= keep_from and col_ids[c] >= 0:
                    h = _LOW - np.uint64(np.float32(y).view(np.uint32))
                    lo, hi = min(lo, h), max(hi, h)
                    keys[n] = (h << _U32) | np.uint64(n)
                    v[n] = y
                    c_of[n] = c
                    n += 1
            if general[g]:
                break
            srt = _rank_order(keys, spare, hist, n, v, lo, hi)
            k = n if max_tokens == 0 or n <= max_tokens else max_tokens
            o = cap_off[r]
            for i in range(k):
                p = np.int64(srt[i] & _LOW)
                ids[o + i] = col_ids[c_of[p]]
                if vals.size:
                    vals[o + i] = v[p]
            lengths[r] = k
    return lengths, general.any()
