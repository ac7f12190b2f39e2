"""Overlap kernels: arrays in, arrays out. No I/O, no Python objects, no validation.

The universe is searched through its :class:`~genotok.universe._SweepIndex`: regions sorted by
(chromosome code, start, end, id) with ``maxend``, the running maximum of ends within each
chromosome. For a query ``[qs, qe)`` on chromosome ``c`` the candidate rows are
``[lo, hi)`` where ``hi`` is the first row with ``start >= qe`` (binary search on starts) and ``lo``
the first row with ``maxend > qs`` (binary search on maxend, which never decreases): no row before
``lo`` can end after ``qs``, and none from ``hi`` on starts before ``qe``. Every candidate with
``end > qs`` is a hit, emitted in sorted order, i.e. by ascending universe (start, end, id).

Why per-query binary searches rather than a merge sweep over sorted queries: queries need no
sorting (the sort of 200k queries costs more than all their searches), each query is
independent (so a single big set parallelises over queries with ``prange``), and both searches
run over one chromosome's rows, which stay in cache for clustered queries. Nested universes
(a long region early on a chromosome) widen ``[lo, hi)``; each candidate is still checked.

Work is split per query position, so one big file and many small sets both use every thread.
Two passes, count then fill, write into exactly-sized outputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._config import NJIT, NJIT_PARALLEL


@njit(**NJIT)
def _bisect_left(a, lo, hi, x):
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**NJIT)
def _bisect_right(a, lo, hi, x):
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**NJIT)
def _passes(qs, qe, s, e, min_overlap, frac_q, frac_r):
    """Overlap in bp if region [s, e) is a hit of query [qs, qe) under the thresholds, else -1."""
    if not (s < qe and e > qs):
        return -1
    bp = min(qe, e) - max(qs, s)
    if min_overlap > 0 and bp < min_overlap:
        return -1
    if frac_q > 0.0 and bp < frac_q * (qe - qs):
        return -1
    if frac_r > 0.0 and bp < frac_r * (e - s):
        return -1
    return bp


@njit(**NJIT)
def _gallop_left(a, lo, hi, x, guess):
    """First index in [lo, hi) with a[i] >= x (a sorted there), searching out from ``guess``.

    O(log d) for a guess d rows away: consecutive sorted queries move little, so the sweep
    over sorted queries costs O(1) amortised per query instead of a full binary search.
    """
    if guess < lo:
        guess = lo
    if guess > hi:
        guess = hi
    if guess < hi and a[guess] < x:  # answer lies after guess
        step = 1
        left = guess + 1
        right = guess + 1
        while right < hi and a[right] < x:
            left = right + 1
            right = guess + 1 + 2 * step
            step *= 2
        if right > hi:
            right = hi
        return _bisect_left(a, left, right, x)
    # answer lies at or before guess
    step = 1
    right = guess
    left = guess - 1
    while left >= lo and a[left] >= x:
        right = left
        left = guess - 1 - 2 * step
        step *= 2
    if left < lo:
        left = lo
    return _bisect_left(a, left, right, x)


@njit(**NJIT)
def _gallop_right(a, lo, hi, x, guess):
    """First index in [lo, hi) with a[i] > x, searching out from ``guess``."""
    return _gallop_left(a, lo, hi, x + 1, guess)


@njit(**NJIT_PARALLEL)
def _windows(q_codes, q_starts, q_ends, qsorted, bounds, chrom_ptr, starts, ends, maxend, ids,
             min_overlap, frac_q, frac_r, best, win_lo, win_hi, counts):
    """Per query: its candidate window [lo, hi) and its number of hits.

    Queries are visited in (chrom, start) order, in ``bounds.size - 1`` chunks run in parallel;
    within a chunk each search gallops from the previous query's answer.
    """
    for t in prange(bounds.size - 1):
        prev_c = -2
        g_lo = 0
        g_hi = 0
        for k in range(bounds[t], bounds[t + 1]):
            q = qsorted[k]
            c = q_codes[q]
            qs = q_starts[q]
            qe = q_ends[q]
            if c < 0 or c + 1 >= chrom_ptr.size:
                win_lo[q] = 0
                win_hi[q] = 0
                counts[q] = 0
                continue
            c_lo = chrom_ptr[c]
            c_hi = chrom_ptr[c + 1]
            if c != prev_c:
                g_lo = c_lo
                g_hi = c_lo
                prev_c = c
            hi = _gallop_left(starts, c_lo, c_hi, qe, g_hi)
            lo = _gallop_right(maxend, c_lo, hi, qs, min(g_lo, hi))
            g_lo = lo
            g_hi = hi
            win_lo[q] = lo
            win_hi[q] = hi
            k_hits = 0
            for j in range(lo, hi):
                if _passes(qs, qe, starts[j], ends[j], min_overlap, frac_q, frac_r) >= 0:
                    k_hits += 1
                    if best:
                        break
            counts[q] = k_hits


@njit(**NJIT)
def _fill_one(lo, hi, qs, qe, starts, ends, ids, min_overlap, frac_q, frac_r, best,
              out_ids, out_bp, at, details):
    if best:
        best_bp = -1
        best_id = 0
        for j in range(lo, hi):
            bp = _passes(qs, qe, starts[j], ends[j], min_overlap, frac_q, frac_r)
            if bp > best_bp or (bp == best_bp and bp >= 0 and ids[j] < best_id):
                best_bp = bp
                best_id = ids[j]
        if best_bp >= 0:
            out_ids[at] = best_id
            if details:
                out_bp[at] = best_bp
            return 1
        return 0
    k = 0
    for j in range(lo, hi):
        bp = _passes(qs, qe, starts[j], ends[j], min_overlap, frac_q, frac_r)
        if bp >= 0:
            out_ids[at + k] = ids[j]
            if details:
                out_bp[at + k] = bp
            k += 1
    return k


@njit(**NJIT_PARALLEL)
def _slots(order, set_of, per_query, unk_mode, slot_counts):
    """slot_counts[p + set_of[p] + 1] = outputs of the query at emission position p."""
    for p in prange(order.size):
        k = per_query[order[p]]
        if k == 0 and unk_mode == 2:
            k = 1
        slot_counts[p + set_of[p] + 1] = k


@njit(**NJIT_PARALLEL)
def _fill(q_starts, q_ends, order, set_of, win_lo, win_hi, starts, ends, ids,
          min_overlap, frac_q, frac_r, best, unk_mode, unk_id, pos, out_ids, out_q, out_bp,
          details):
    """Write each query's hits; ``out_q``/``out_bp`` only when ``details`` (else scratch)."""
    for p in prange(order.size):
        q = order[p]
        at = pos[p + set_of[p] + 1]
        k = _fill_one(win_lo[q], win_hi[q], q_starts[q], q_ends[q], starts, ends, ids,
                      min_overlap, frac_q, frac_r, best, out_ids, out_bp, at, details)
        if k == 0 and unk_mode == 2:
            out_ids[at] = unk_id
            if details:
                out_bp[at] = 0
            k = 1
        if details:
            for t in range(k):
                out_q[at + t] = q


def _sweep_order(q_codes, q_starts, order):
    """The order in which pass 1 visits queries: grouped by chromosome, starts ascending.

    The emission order is used as it is when it (nearly) has that shape: sorted files, the
    gtars order of a file (by chromosome name, then start), batches of such sets, where only set
    boundaries step back. Otherwise the queries are sorted by (code, start). Correctness does not
    depend on it, only the gallop distances do.
    """
    n = order.size
    if n < 2:
        return order
    c = q_codes[order]
    s = q_starts[order]
    descents = int(np.count_nonzero((np.diff(c) == 0) & (np.diff(s) < 0)))
    if descents * 64 <= n:  # sorted runs (e.g. a batch of sorted files): galloping is cheap
        return order
    if q_starts.max(initial=0) < (1 << 40) and q_codes.max(initial=0) < (1 << 22):
        key = (q_codes.astype(np.int64) << 40) | q_starts  # unknown chromosomes (-1) sort first
        return np.argsort(key, kind="stable")
    return np.lexsort((q_starts, q_codes))


def _chunks(n: int, parts: int) -> np.ndarray:
    parts = max(1, min(parts, n // 4096 + 1))
    return np.linspace(0, n, parts + 1).astype(np.int64)


def overlap(q_codes, q_starts, q_ends, set_offsets, order, chrom_ptr, starts, ends, maxend, ids,
            min_overlap, frac_q, frac_r, best, unk_mode, unk_id, details=True):
    """Tokenize S concatenated query sets against a sweep index.

    Parameters are contiguous arrays of fixed dtypes (int32 ``q_codes`` with -1 for chromosomes
    absent from the universe; int64 coordinates, ``set_offsets`` (S+1) and ``order``, a
    permutation within each set of the global query indices giving emission order).
    ``unk_mode``: 0 drop, 1 one unk per set without any hit, 2 one unk per query without a hit.

    Returns ``(ids uint32, qidx int64, overlap_bp int64, out_offsets int64 (S+1))``; ``qidx`` is
    the global query index of each output, ``-1`` for a set-level unk. With ``details=False``
    only ids and offsets are computed (``qidx`` and ``overlap_bp`` are None), which saves 16
    bytes of fresh memory per output.
    """
    import numba

    n_q = q_codes.size
    n_sets = set_offsets.size - 1
    sizes = np.diff(set_offsets)
    set_of = np.repeat(np.arange(n_sets, dtype=np.int64), sizes)
    # pass 1, in (chrom, start) order: candidate windows and hit counts per query
    qsorted = _sweep_order(q_codes, q_starts, order)
    win_lo = np.empty(n_q, dtype=np.int64)
    win_hi = np.empty(n_q, dtype=np.int64)
    per_query = np.empty(n_q, dtype=np.int64)
    _windows(q_codes, q_starts, q_ends, qsorted, _chunks(n_q, 4 * numba.get_num_threads()),
             chrom_ptr, starts, ends, maxend, ids, min_overlap, frac_q, frac_r, best,
             win_lo, win_hi, per_query)
    # output slots: for set s one header slot (its set-level unk), then its queries in order
    counts = np.zeros(n_q + n_sets + 1, dtype=np.int64)
    _slots(order, set_of, per_query, unk_mode, counts)
    headers = set_offsets[:-1] + np.arange(n_sets)
    if unk_mode == 1 and n_sets:
        totals = np.add.reduceat(counts, headers)
        # reduceat over [header_s, header_{s+1}): the set's query counts (its header is still 0)
        counts[headers] = (totals == 0).astype(np.int64)
    pos = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=pos[1:])
    total = int(pos[-1] + counts[-1])
    out_ids = np.empty(total, dtype=np.uint32)
    out_q = np.empty(total if details else 0, dtype=np.int64)
    out_bp = np.empty(total if details else 0, dtype=np.int64)
    # pass 2, in emission order: fill from the stored windows (no searching)
    _fill(q_starts, q_ends, order, set_of, win_lo, win_hi, starts, ends, ids,
          min_overlap, frac_q, frac_r, best, unk_mode, unk_id, pos, out_ids, out_q, out_bp,
          details)
    out_offsets = np.empty(n_sets + 1, dtype=np.int64)
    out_offsets[:-1] = pos[headers]
    out_offsets[-1] = total
    if unk_mode == 1:
        h = headers[counts[headers] == 1]
        out_ids[pos[h]] = unk_id
        if details:
            out_q[pos[h]] = -1
            out_bp[pos[h]] = 0
    if not details:
        return out_ids, None, None, out_offsets
    return out_ids, out_q, out_bp, out_offsets


@njit(**NJIT_PARALLEL)
def _sort_sets(ids, offsets, rank, keep, unique):
    n_reg = rank.size
    for s in prange(offsets.size - 1):
        a, b = offsets[s], offsets[s + 1]
        if b - a == 0:
            continue
        key = np.empty(b - a, np.int64)
        for k in range(b - a):
            i = ids[a + k]
            key[k] = rank[i] if i < n_reg else n_reg + k
        o = np.argsort(key, kind="mergesort")
        tmp = ids[a:b].copy()
        for k in range(b - a):
            ids[a + k] = tmp[o[k]]
        keep[a] = True
        for k in range(a + 1, b):
            keep[k] = not unique or ids[k] != ids[k - 1]


def sort_within_sets(ids, out_offsets, rank, unique):
    """Reorder each set's ids by genomic rank (specials last, in order); drop repeats if unique."""
    ids = np.array(ids, copy=True)
    keep = np.ones(ids.size, dtype=np.bool_)
    _sort_sets(ids, out_offsets, rank, keep, bool(unique))
    if not unique:
        return ids, out_offsets
    csum = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(keep, out=csum[1:])
    return ids[keep], csum[out_offsets]


@njit(**NJIT)
def _running_max(ends, chrom_ptr, out):
    for c in range(chrom_ptr.size - 1):
        m = np.int64(-1)
        for j in range(chrom_ptr[c], chrom_ptr[c + 1]):
            if ends[j] > m:
                m = ends[j]
            out[j] = m


def build_sweep_sorted(codes, starts, ends, order, n_chroms):
    """Sweep arrays from ``order``: the kept region ids sorted by (code, start, end, id).

    ``order=None`` means the regions are already sorted with no duplicates: the region arrays
    are used as they are (no copies). Returns ``(chrom_ptr, starts, ends, maxend, ids)`` as
    documented on SweepIndex.
    """
    if order is None:
        s_codes, s_starts, s_ends = codes, starts, ends
        ids = np.arange(codes.size, dtype=np.int32)
    else:
        order = np.asarray(order, dtype=np.int64)
        s_codes = codes[order]
        s_starts = np.ascontiguousarray(starts[order])
        s_ends = np.ascontiguousarray(ends[order])
        ids = order.astype(np.int32)
    chrom_ptr = np.searchsorted(s_codes, np.arange(n_chroms + 1), side="left").astype(np.int64)
    maxend = np.empty_like(s_ends)
    _running_max(s_ends, chrom_ptr, maxend)
    return chrom_ptr, s_starts, s_ends, maxend, ids


def warmup() -> None:
    """Compile every kernel on tiny inputs."""
    codes = np.zeros(2, np.int32)
    starts = np.array([0, 5], np.int64)
    ends = np.array([10, 8], np.int64)
    order = np.array([0, 1], np.int64)
    sw = build_sweep_sorted(codes, starts, ends, order, 1)
    rank = np.arange(2, dtype=np.int64)
    for best in (False, True):
        ids, _, _, offs = overlap(codes, starts, ends, np.array([0, 2], np.int64), order,
                                  *sw[:5], 0, 0.0, 0.0, best, 1, 2)
    for unique in (False, True):
        sort_within_sets(ids, offs, rank, unique)
