"""Overlap kernels: arrays in, arrays out. No I/O, no Python objects.

The universe is searched through its sweep index (``docs/architecture.md``): regions sorted by
(chromosome code, start, end, id) with ``maxend``, the running maximum of ends within each
chromosome. For a query ``[qs, qe)`` on chromosome ``c`` the candidate rows are ``[lo, hi)``,
``hi`` the first row with ``start >= qe`` and ``lo`` the first row with ``maxend > qs`` (maxend
never decreases): no row before ``lo`` ends after ``qs``, none from ``hi`` on starts before
``qe``. Every candidate with ``end > qs`` (and passing the thresholds) is a hit, emitted in
sorted order, i.e. by ascending universe (start, end, id).

Algorithm (chosen by ``benchmarks/bench_kernels.py``; figures in benchmarks/RESULTS.md,
"Design measurements"): pass 1 visits the queries grouped by chromosome with starts ascending
and moves both window ends forward from the previous query's (a merge sweep: a short linear
walk, galloping for long jumps), storing each query's window and hit count; pass 2 fills the
exactly-sized outputs in emission order from the stored windows, with no search at all.
Per-query binary searches in emission order (the alternative, kept in the benchmark) are on a
par in file order and slower on shuffled input, even though the sweep must argsort the queries
first (random probes into the universe miss the cache; the sorted sweep streams). So the sweep
is never much worse and often much better.
File order needs no sort: a sorted file, the gtars order (chromosome name, start) and batches
of such files only step back at set or chromosome boundaries, where the gallop recovers in
O(log d).

Parallelism: pass 1 runs the sweep order in chunks of equal query count (so one big set uses
every thread and a batch is balanced by total size, not by number of sets); pass 2 runs the
emission order in the same chunks. Results do not depend on the thread count.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL, serial_twin
from .modes import Overlap as OverlapMode
from .modes import Unknown
from .setorder import sort_within_sets  # noqa: F401  (importable from here as before)
from .sweep import build_sweep_sorted, sort_order

UNK_SET, UNK_REGION = int(Unknown.SET), int(Unknown.REGION)


class Overlap(NamedTuple):
    """What :func:`overlap` returns (see its Returns section)."""

    ids: np.ndarray
    qidx: np.ndarray | None
    overlap_bp: np.ndarray | None
    offsets: np.ndarray


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


@njit(inline="always", **NJIT)
def _advance(a, lo, hi, x, at):
    """First index in [lo, hi) with a[i] >= x (a sorted there), starting the search at ``at``.

    The sweep moves forward by a few rows per query: up to 8 rows are walked linearly (a merge
    step, no branches mispredicted on long jumps), farther targets and backward moves gallop.
    Inlined into the sweep (numba IR inlining; LLVM left it a call). Counting eight rows at
    once without a branch instead of the walk measured the same (figures: benchmarks/RESULTS.md).
    """
    if at < hi and a[at] < x:
        stop = min(hi, at + 9)
        at += 1
        while at < stop and a[at] < x:
            at += 1
        if at == stop and at < hi:
            return _gallop_left(a, lo, hi, x, at)
        return at
    if at > lo and a[at - 1] >= x:
        return _gallop_left(a, lo, hi, x, at)
    return at


@njit(**NJIT)
def _set_at(set_offsets, p):
    """The set whose slice holds position ``p`` (``0 <= p < n``; empty sets are skipped)."""
    return _bisect_right(set_offsets, 0, set_offsets.size, p) - 1


# The sweep arrays and the thresholds stay separate arguments of these kernels: as named tuples
# (numba takes them) they cost at every call, and the sweep also in the loops (measured:
# benchmarks/RESULTS.md, "Design measurements").
@njit(**NJIT_PARALLEL)
def _windows(q_codes, q_starts, q_ends, qsorted, bounds, set_offsets, slotted, chrom_ptr,
             starts, ends, maxend, ids, min_overlap, frac_q, frac_r, best, keep, unk_mode,
             unk_id, wa, wb, counts):
    """Pass 1. For the query at sweep position ``k``: its number of outputs and what pass 2
    needs to write them, ``(wa[k], wb[k])``: its candidate window ``[lo, hi)`` or, with
    ``keep`` and at most two outputs, the output ids themselves (a hit, or ``unk_id`` for a
    query without hits under ``unk_mode`` 2).

    Queries are visited in ``qsorted`` order (empty: ``0 .. n-1``), grouped by chromosome with
    starts ascending for the merge to be fast (any order is correct), in ``bounds.size - 1``
    chunks of equal query count run in parallel; within a chunk both window ends move from the
    previous query's. The outputs count goes to ``counts[k + set + 2]``, the query's output
    slot (see :func:`overlap`), when ``slotted`` (the sweep order is the emission order), else
    to ``counts[k]``. Everything is written at ``k``: sequential stores, where stores through
    the permutation missed the cache for every query of a shuffled set. Keeping the first two
    hits lets pass 2 write most queries without touching the universe again: with sparse
    queries (a 50k-peak file on a 1M-region universe) every query reads fresh cache lines, and
    reading them twice was half the kernels' time.
    """
    ident = qsorted.size == 0
    for t in prange(bounds.size - 1):
        prev_c = -2
        c_lo = 0
        c_hi = 0
        lo = 0
        hi = 0
        s = 0
        if slotted and bounds[t] < bounds[t + 1]:
            s = _set_at(set_offsets, bounds[t])
        for k in range(bounds[t], bounds[t + 1]):
            q = k if ident else qsorted[k]
            c = q_codes[q]
            qs = q_starts[q]
            qe = q_ends[q]
            k_hits = 0
            h1 = np.uint32(0)
            h2 = np.uint32(0)
            w_lo = 0
            w_hi = 0
            if c >= 0 and c + 1 < chrom_ptr.size:
                if c != prev_c:
                    c_lo = chrom_ptr[c]
                    c_hi = chrom_ptr[c + 1]
                    lo = c_lo
                    hi = c_lo
                    prev_c = c
                hi = _advance(starts, c_lo, c_hi, qe, hi)          # first row with start >= qe
                lo = _advance(maxend, c_lo, hi, qs + 1, min(lo, hi))  # first row with maxend > qs
                w_lo = lo
                w_hi = hi
                for j in range(lo, hi):
                    if _passes(qs, qe, starts[j], ends[j], min_overlap, frac_q, frac_r) >= 0:
                        k_hits += 1
                        if best:
                            break
                        if k_hits == 1:
                            h1 = np.uint32(ids[j])
                        elif k_hits == 2:
                            h2 = np.uint32(ids[j])
            if k_hits == 0 and unk_mode == UNK_REGION:
                k_hits = 1
                h1 = np.uint32(unk_id)
            if keep and k_hits <= 2:
                wa[k] = h1
                wb[k] = h2
            else:
                wa[k] = np.uint32(w_lo)
                wb[k] = np.uint32(w_hi)
            if slotted:
                while k >= set_offsets[s + 1]:
                    s += 1
                counts[k + s + 2] = k_hits
            else:
                counts[k] = k_hits


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
def _slots(kpos, bounds, set_offsets, per_k, counts):
    """counts[p + set + 2] = per_k[kpos[p]]: outputs of the query at emission position ``p``."""
    for t in prange(bounds.size - 1):
        if bounds[t] == bounds[t + 1]:
            continue
        s = _set_at(set_offsets, bounds[t])
        for p in range(bounds[t], bounds[t + 1]):
            while p >= set_offsets[s + 1]:
                s += 1
            counts[p + s + 2] = per_k[kpos[p]]


@njit(**NJIT_PARALLEL)
def _fill(q_starts, q_ends, order, kpos, bounds, set_offsets, wa, wb, pos, starts, ends, ids,
          min_overlap, frac_q, frac_r, best, keep, unk_mode, unk_id, out_ids, out_q, out_bp,
          details):
    """Pass 2, in emission order: write each query's outputs from pass 1's ``(wa, wb)`` at the
    sweep position ``kpos[p]`` (empty ``kpos``: ``p`` itself). ``pos[p + set + 1]`` is where
    the query's outputs start, ``pos[p + set + 2]`` where they end. ``out_q``/``out_bp`` only
    when ``details``; ``order`` empty means ``0 .. n-1``."""
    ident_k = kpos.size == 0
    ident_q = order.size == 0
    for t in prange(bounds.size - 1):
        if bounds[t] == bounds[t + 1]:
            continue
        s = _set_at(set_offsets, bounds[t])
        for p in range(bounds[t], bounds[t + 1]):
            while p >= set_offsets[s + 1]:
                s += 1
            at = pos[p + s + 1]
            n_out = pos[p + s + 2] - at
            if n_out == 0:
                continue
            k = p if ident_k else kpos[p]
            if keep and n_out <= 2:  # the ids themselves (details is off with keep)
                out_ids[at] = wa[k]
                if n_out == 2:
                    out_ids[at + 1] = wb[k]
                continue
            q = p if ident_q else order[p]
            m = _fill_one(np.int64(wa[k]), np.int64(wb[k]), q_starts[q], q_ends[q], starts,
                          ends, ids, min_overlap, frac_q, frac_r, best, out_ids, out_bp, at,
                          details)
            if m == 0:  # Unknown.REGION (n_out counts it)
                out_ids[at] = unk_id
                if details:
                    out_bp[at] = 0
                m = 1
            if details:
                for x in range(m):
                    out_q[at + x] = q


_SERIAL = {k: serial_twin(k) for k in (_windows, _slots, _fill)}
#: sets of fewer queries than this (one chunk: :func:`_chunks`) run the kernels' serial twins
SERIAL_BELOW = 4096


@njit(**NJIT)
def _descents(q_codes, q_starts, order):
    """How often a query in ``order`` (empty: ``0 .. n-1``) starts before the previous one on
    the same chromosome."""
    k = 0
    if order.size == 0:
        for i in range(1, q_codes.size):
            k += q_codes[i] == q_codes[i - 1] and q_starts[i] < q_starts[i - 1]
        return k
    for i in range(1, order.size):
        a = order[i - 1]
        b = order[i]
        k += q_codes[b] == q_codes[a] and q_starts[b] < q_starts[a]
    return k


def _sweep_order(q_codes, q_starts, order, known: bool = False):
    """The order in which pass 1 visits queries: grouped by chromosome, starts ascending.

    The emission order ``order`` (empty: the identity) is used as it is, and returned itself,
    when it (nearly) has that shape: sorted files, the gtars order of a file (by chromosome
    name, then start), batches of such sets, where only set boundaries step back; ``known``:
    the caller knows it has (the check, a pass through the order, is skipped). Otherwise the
    queries are sorted by (code, start). Correctness does not depend on it, only the gallop
    distances do (merging a batch of sorted sets into one sweep was measured: the stable sort
    costs more than the cache misses it saves).
    """
    n = q_codes.size
    if n < 2 or known:
        return order
    if _descents(q_codes, q_starts, order) * 64 <= n:  # sorted runs (e.g. a batch of sorted files)
        return order
    if (q_starts.min(initial=0) >= 0 and q_starts.max(initial=0) < (1 << 40)
            and q_codes.max(initial=0) < (1 << 22)):
        key = (q_codes.astype(np.int64) << 40) | q_starts  # unknown chromosomes (-1) sort first
        return np.argsort(key, kind="stable")
    return np.lexsort((q_starts, q_codes))



def _chunks(n: int, parts: int) -> np.ndarray:
    parts = max(1, min(parts, n // 4096 + 1))
    return np.arange(parts + 1, dtype=np.int64) * n // parts


def overlap(q_codes: np.ndarray, q_starts: np.ndarray, q_ends: np.ndarray,
            set_offsets: np.ndarray, order: np.ndarray, chrom_ptr: np.ndarray,
            starts: np.ndarray, ends: np.ndarray, maxend: np.ndarray, ids: np.ndarray,
            min_overlap: int, frac_q: float, frac_r: float, mode: int, unk_mode: int,
            unk_id: int, details: bool = True, ids_dtype=np.uint32, sweep_order: bool = False):
    """Tokenize S concatenated query sets against a sweep index.

    Arrays must be contiguous and of the documented dtypes; nothing is checked here: the
    caller builds them (the Tokenizer, from validated RegionSets and its own sweep index).

    Parameters
    ----------
    q_codes : int32 (n_q,)
        Chromosome code of each query in the universe's code space, ``-1`` when absent.
    q_starts, q_ends : int64 (n_q,)
        Half-open query intervals, ``q_ends >= q_starts``.
    set_offsets : int64 (S+1,)
        Set ``s`` is queries ``set_offsets[s]:set_offsets[s+1]``.
    order : int64 (n_q,) or None
        Within each set's slice, a permutation of that set's global query indices: the
        emission order. ``None``: the queries in the order given (a presorted set needs no
        index array).
    chrom_ptr, starts, ends, maxend, ids
        The sweep index (:func:`genotok.kernels.sweep.build_sweep_sorted`).
    min_overlap : int
        A hit needs at least this many bp of overlap (0 = off).
    frac_q, frac_r : float
        A hit needs ``bp >= frac_q * (qe - qs)`` and ``bp >= frac_r * (e - s)`` (0 = off).
    mode : int
        An :class:`~genotok.kernels.modes.Overlap`: ``ALL`` (0) keeps every hit, ``BEST`` (1)
        only the hit with the most bp per query (ties: lowest id), after the thresholds.
    unk_mode : int
        A :class:`~genotok.kernels.modes.Unknown` (pass ``int(mode)``): ``DROP`` (0) drops
        queries without hits; ``SET`` (1) emits one ``unk_id`` for a set without any hit;
        ``REGION`` (2) emits one ``unk_id`` in place of every query without a hit.
    unk_id : int
        The id emitted for unknowns.
    details : bool
        With ``False`` only ids and offsets are computed (``qidx`` and ``overlap_bp`` are
        ``None``), which saves 16 bytes of fresh memory per output.
    ids_dtype : numpy dtype
        ``np.uint32`` (default) or ``np.int64``: written directly, no copy afterwards.
    sweep_order : bool
        ``True`` when the emission order already visits each chromosome's queries with starts
        ascending (a sorted file's runs, sorted arrays): the check for it is skipped. Only
        speed depends on it; a wrong ``True`` gives the same outputs, slower.

    Returns
    -------
    Overlap, a named tuple of:
    ids : uint32 (n_out,), or ``ids_dtype``
    qidx : int64 (n_out,)
        Global query index of each output, ``-1`` for a set-level unk (``unk_mode=1``).
    overlap_bp : int64 (n_out,)
        Overlap in bp, 0 for unks.
    out_offsets : int64 (S+1,)
        Outputs of set ``s`` are ``out_offsets[s]:out_offsets[s+1]``.

    Examples
    --------
    >>> import numpy as np
    >>> sw = build_sweep_sorted(np.zeros(2, np.int32), np.array([100, 400]), np.array([200, 500]),
    ...                         None, 1)
    >>> ids, qidx, bp, offs = overlap(np.zeros(1, np.int32), np.array([150]), np.array([450]),
    ...                               np.array([0, 1]), np.array([0]), *sw,
    ...                               0, 0.0, 0.0, False, 0, 2)
    >>> ids.tolist(), bp.tolist(), offs.tolist()
    ([0, 1], [50, 50], [0, 2])
    """
    import numba

    best = mode == OverlapMode.BEST
    n_q = q_codes.size
    n_sets = set_offsets.size - 1
    if np.dtype(ids_dtype) not in (np.dtype(np.uint32), np.dtype(np.int64)):
        raise ValueError(f"overlap: ids_dtype must be uint32 or int64, got {np.dtype(ids_dtype)}")
    if starts.size >= 1 << 32:
        raise ValueError(f"overlap: {starts.size:,} universe rows; pass 1 stores row numbers "
                         "as uint32, so at most 2^32 - 1")
    if order is None:
        order = np.zeros(0, np.int64)  # the identity: read as such by every kernel
    bounds = _chunks(n_q, 4 * numba.get_num_threads())
    windows, slots, fill = ((_SERIAL[k] for k in (_windows, _slots, _fill)) if n_q < SERIAL_BELOW
                            else (_windows, _slots, _fill))
    # pass 1, in (chrom, start) order: per query its outputs count and (window | ids)
    qsorted = _sweep_order(q_codes, q_starts, order, sweep_order)
    slotted = qsorted is order  # the sweep order is the emission order
    keep = not best and not details  # hits kept from pass 1 (details would need their bp too)
    wa = np.empty(n_q, dtype=np.uint32)
    wb = np.empty(n_q, dtype=np.uint32)
    # output slots: for set s one header slot (its set-level unk), then its queries in order;
    # slot i's count goes to counts[i + 1], so that after an in-place cumsum counts[i] is
    # where slot i's outputs start (query p of set s: slot p + s + 1)
    counts = np.empty(n_q + n_sets + 1, dtype=np.int64)
    headers = set_offsets[:-1] + np.arange(n_sets)
    counts[0] = 0
    counts[headers + 1] = 0
    kpos = np.zeros(0, np.int64)
    if slotted:
        windows(q_codes, q_starts, q_ends, qsorted, bounds, set_offsets, True, chrom_ptr,
                 starts, ends, maxend, ids, min_overlap, frac_q, frac_r, best, keep, unk_mode,
                 unk_id, wa, wb, counts)
    else:
        per_k = np.empty(n_q, dtype=np.int64)
        windows(q_codes, q_starts, q_ends, qsorted, bounds, set_offsets, False, chrom_ptr,
                 starts, ends, maxend, ids, min_overlap, frac_q, frac_r, best, keep, unk_mode,
                 unk_id, wa, wb, per_k)
        kpos = np.empty(n_q, dtype=np.int64)  # emission position -> sweep position
        kpos[qsorted] = np.arange(n_q, dtype=np.int64)
        if order.size:
            kpos = kpos[order]
        slots(kpos, bounds, set_offsets, per_k, counts)
        del per_k
    unk_sets = np.zeros(0, np.int64)
    if unk_mode == UNK_SET and n_sets:
        # reduceat over [header_s, header_{s+1}) of the slot counts: the set's query counts
        # (its header is still 0)
        empty = np.add.reduceat(counts[1:], headers) == 0
        counts[headers + 1] = empty
        unk_sets = headers[empty]
    np.cumsum(counts, out=counts)
    pos = counts
    total = int(pos[-1])
    out_ids = np.empty(total, dtype=ids_dtype)
    out_q = np.empty(total if details else 0, dtype=np.int64)
    out_bp = np.empty(total if details else 0, dtype=np.int64)
    # pass 2, in emission order: fill from pass 1's windows or ids (no searching)
    fill(q_starts, q_ends, order, kpos, bounds, set_offsets, wa, wb, pos, starts, ends, ids,
          min_overlap, frac_q, frac_r, best, keep, unk_mode, unk_id, out_ids, out_q, out_bp,
          details)
    out_offsets = np.empty(n_sets + 1, dtype=np.int64)
    out_offsets[:-1] = pos[headers]
    out_offsets[-1] = total
    if unk_sets.size:
        out_ids[pos[unk_sets]] = unk_id
        if details:
            out_q[pos[unk_sets]] = -1
            out_bp[pos[unk_sets]] = 0
    if not details:
        return Overlap(out_ids, None, None, out_offsets)
    return Overlap(out_ids, out_q, out_bp, out_offsets)


def warmup() -> None:
    """Compile every kernel on tiny inputs (``genotok.warmup()`` calls this).

    Examples
    --------
    >>> warmup()
    """
    codes = np.zeros(2, np.int32)
    starts = np.array([5, 0], np.int64)
    ends = np.array([8, 10], np.int64)
    order = np.array([0, 1], np.int64)
    sw = build_sweep_sorted(codes, starts, ends, sort_order(codes, starts, ends), 1)
    rank = np.array([1, 0], np.int64)
    global SERIAL_BELOW
    saved = SERIAL_BELOW
    try:
        for SERIAL_BELOW in (saved, 0):  # the serial twins, then the parallel kernels
            for best, details in ((False, False), (False, True), (True, False), (True, True)):
                ids, _, _, offs = overlap(codes, starts, ends, np.array([0, 2], np.int64),
                                          order, *sw, 0, 0.0, 0.0, best, UNK_SET, 2, details)
    finally:
        SERIAL_BELOW = saved
    for unique in (False, True):
        sort_within_sets(ids, offs, rank, unique)
        sort_within_sets(ids.astype(np.int64), offs, rank, unique)
