"""A stable argsort of non-negative integer keys: a parallel LSD radix sort in numba.

The tokenizer's gtars order sorts each file's queries by (chromosome rank, start): one packed
int64 key per query. NumPy's stable argsort (radix for 16-bit types, timsort for int64) is
slow on millions of shuffled int64 keys; the keys here rarely need more than ~35 bits, so a
radix sort of a few 11-bit digits moves far less data (see benchmarks/RESULTS.md, "Design
measurements").

Method: when ``bits(max key) + bits(n - 1) <= 64``, each key is packed with its index
(``key << ib | i``) into one uint64, so every packed value is unique and the sort needs no
stability bookkeeping and moves one array; the permutation is the low ``ib`` bits at the end.
Each pass counts one digit, turns the counts into write positions and scatters in input order
(stable); a pass whose digit is the same for every key is skipped. Wider keys fall back to
NumPy's stable argsort. Serial on purpose: a 2-thread version measured slower on the shared
box, and the pipeline already runs one set per thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL

#: digit width of one pass (2,048 buckets: the per-block counts stay in L1/L2)
DIGIT_BITS = 11
#: below this many keys NumPy's stable argsort is as fast (measured: benchmarks/bench_kernels.py)
MIN_RADIX = 1 << 16


@njit(**NJIT)
def _radix(keys, ib, kb, out):
    """LSD radix sort of ``keys[i] << ib | i``; the low ``ib`` bits of the result into ``out``."""
    n = keys.size
    src = np.empty(n, np.uint64)
    for i in range(n):
        src[i] = (np.uint64(keys[i]) << np.uint64(ib)) | np.uint64(i)
    dst = np.empty_like(src)
    nd = 1 << DIGIT_BITS
    mask = np.uint64(nd - 1)
    counts = np.empty(nd, np.int64)
    for shift in range(ib, ib + kb, DIGIT_BITS):
        sh = np.uint64(shift)
        counts[:] = 0
        for i in range(n):
            counts[(src[i] >> sh) & mask] += 1
        used = 0
        total = 0
        for d in range(nd):
            c = counts[d]
            counts[d] = total
            total += c
            used += c > 0
        if used <= 1:
            continue  # every key has this digit: the pass would copy
        for i in range(n):
            v = src[i]
            d = (v >> sh) & mask
            dst[counts[d]] = v
            counts[d] += 1
        src, dst = dst, src
    low = np.uint64((1 << ib) - 1)
    for i in range(n):
        out[i] = np.int64(src[i] & low)


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``keys`` (non-negative integers), equal keys in input order.

    Same result as ``np.argsort(keys, kind="stable")`` (int64). Serial, so it is safe to call
    from several Python threads at once (the pipeline prepares sets in parse workers).

    Examples
    --------
    >>> stable_argsort(np.array([3, 1, 3, 0, 1] * 20000)).tolist()[:4]
    [3, 8, 13, 18]
    """
    keys = np.asarray(keys)
    n = keys.size
    if n < MIN_RADIX or keys.dtype.kind not in "iu":
        return np.argsort(keys, kind="stable")
    if keys.dtype.kind == "i" and keys.min() < 0:
        raise ValueError("stable_argsort: keys must be non-negative")
    kb, ib = int(keys.max()).bit_length(), (n - 1).bit_length()
    if kb + ib > 64:
        return np.argsort(keys, kind="stable")
    out = np.empty(n, np.int64)
    _radix(np.ascontiguousarray(keys), ib, max(kb, 1), out)
    return out


# ------------------------------------------------------------------ regions by (rank, start)
#
# The gtars order of a shuffled file sorts its regions by (chromosome rank, start), stably. The
# kernels then read each region's start and end at its sorted position: with an argsort that is
# three random gathers (measured at 10M regions: more than the sort, see benchmarks/RESULTS.md),
# and so are the overlap sweep's reads through the permutation. So the regions
# are sorted with their ends as payload and come out as contiguous sorted arrays:
#   1. per block of the input (one per thread): a histogram of the top digit of the key;
#   2. per block, in parallel: a stable scatter of (key << ib | i, end) into the top-digit
#      buckets (2,048 write streams, each sequential);
#   3. per group of buckets, in parallel: an LSD radix sort of each bucket on the remaining key
#      bits (a bucket is ~n / 2,048 records: it sorts in cache), whose last pass writes the
#      decoded outputs (code, start, end, input index).
# Stable throughout (every pass keeps input order among equal digits), so equal keys keep input
# order, as np.argsort(kind="stable") does.

#: below this many regions the NumPy path (stable argsort, then gathers: the arrays are still
#: cached) is faster (measured: benchmarks/RESULTS.md, "Design measurements")
MIN_BUCKET = 1 << 19
#: buckets of at most this many records are sorted by insertion
SMALL_BUCKET = 32


@njit(**NJIT)
def _key(codes, starts, rank, wb, i):
    return (np.uint64(rank[codes[i]]) << np.uint64(wb)) | np.uint64(starts[i])


@njit(**NJIT_PARALLEL)
def _top_counts(codes, starts, rank, wb, top, blocks, hist):
    """hist[t, d]: keys of block t whose top digit (key >> top) is d."""
    sh = np.uint64(top)
    for t in prange(blocks.size - 1):
        for i in range(blocks[t], blocks[t + 1]):
            hist[t, _key(codes, starts, rank, wb, i) >> sh] += 1


@njit(**NJIT_PARALLEL)
def _top_scatter(codes, starts, ends, rank, wb, ib, top, blocks, at, rec_v, rec_e):
    """Stable scatter of (key << ib | i, end) into the top-digit buckets; at[t, d]: where block
    t writes its first record of digit d."""
    sh = np.uint64(top)
    ibu = np.uint64(ib)
    for t in prange(blocks.size - 1):
        w = at[t].copy()
        for i in range(blocks[t], blocks[t + 1]):
            key = _key(codes, starts, rank, wb, i)
            d = key >> sh
            j = w[d]
            w[d] = j + 1
            rec_v[j] = (key << ibu) | np.uint64(i)
            rec_e[j] = ends[i]


@njit(**NJIT_PARALLEL)
def _sort_buckets(rec_v, rec_e, bucket_ptr, groups, low, ib, wb, code_of,
                  out_codes, out_starts, out_ends, out_perm):
    """Sort each bucket on key bits ``[0, low)`` (LSD, stable; insertion for tiny buckets) and
    write it decoded; groups of buckets of about equal total size in parallel."""
    nd = 1 << DIGIT_BITS
    ibu, wbu = np.uint64(ib), np.uint64(wb)
    imask, wmask = np.uint64((1 << ib) - 1), np.uint64((1 << wb) - 1)
    with_perm = out_perm.size > 0
    for g in prange(groups.size - 1):
        b0, b1 = groups[g], groups[g + 1]
        big = 0
        for b in range(b0, b1):
            big = max(big, bucket_ptr[b + 1] - bucket_ptr[b])
        tv = np.empty(big, np.uint64)  # scratch, at most one bucket: stays in cache
        te = np.empty(big, np.int64)
        counts = np.empty(nd, np.int64)
        for b in range(b0, b1):
            lo, hi = bucket_ptr[b], bucket_ptr[b + 1]
            m = hi - lo
            if m == 0:
                continue
            sv, se = rec_v[lo:hi], rec_e[lo:hi]
            if m <= SMALL_BUCKET or low == 0:
                for x in range(1, m):  # insertion sort on the whole packed value (unique)
                    v, e = sv[x], se[x]
                    y = x - 1
                    while y >= 0 and sv[y] > v:
                        sv[y + 1] = sv[y]
                        se[y + 1] = se[y]
                        y -= 1
                    sv[y + 1] = v
                    se[y + 1] = e
            else:
                # digits of about log2(m) bits: a bucket of ~100 does not pay for 2,048 counts
                db = 4
                while db < DIGIT_BITS and (2 << db) < m:
                    db += 1
                mask = np.uint64((1 << db) - 1)
                dv, de = tv[:m], te[:m]
                for shift in range(ib, ib + low, db):
                    sh = np.uint64(shift)
                    counts[:1 << db] = 0
                    for x in range(m):
                        counts[(sv[x] >> sh) & mask] += 1
                    total = 0
                    used = 0
                    for d in range(1 << db):
                        c = counts[d]
                        counts[d] = total
                        total += c
                        used += c > 0
                    if used <= 1:
                        continue
                    for x in range(m):
                        v = sv[x]
                        d = (v >> sh) & mask
                        dv[counts[d]] = v
                        de[counts[d]] = se[x]
                        counts[d] += 1
                    sv, dv = dv, sv
                    se, de = de, se
            for x in range(m):  # decode (written out here: as a call it took 3/4 of the time)
                v = sv[x]
                key = v >> ibu
                if with_perm:
                    out_perm[lo + x] = np.int64(v & imask)
                out_ends[lo + x] = se[x]
                out_starts[lo + x] = np.int64(key & wmask)
                out_codes[lo + x] = code_of[np.int64(key >> wbu)]


def _balanced(sizes: np.ndarray, parts: int) -> np.ndarray:
    """Bounds of <= ``parts`` runs of consecutive items with about equal total size."""
    cum = np.concatenate(([0], np.cumsum(sizes)))
    targets = np.linspace(0, cum[-1], parts + 1)[1:-1]
    cuts = np.searchsorted(cum, targets, side="left")
    return np.unique(np.concatenate(([0], cuts, [sizes.size]))).astype(np.int64)


def sort_regions(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, rank: np.ndarray,
                 code_of: np.ndarray, perm: bool = True):
    """Regions sorted by (``rank[code]``, start), stably, as contiguous arrays.

    Same result as ``perm = np.lexsort((starts, rank[codes]))`` followed by
    ``code_of[rank[codes]][perm], starts[perm], ends[perm]`` (``code_of`` maps a rank to the
    code written out, e.g. the universe's code of that chromosome), without a random gather:
    the ends travel through the sort (see the comment above). Parallel over numba's threads.

    Parameters
    ----------
    codes : int32 (n,)
        Chromosome codes, ``0 .. rank.size - 1``.
    starts : int64 (n,)
        Non-negative.
    ends : int64 (n,)
        Carried along (any values).
    rank : int64 (n_chroms,)
        Sort rank of each code, ``0 .. code_of.size - 1``.
    code_of : int32 (n_ranks,)
        The code written out for each rank.
    perm : bool
        ``False``: the permutation is not returned (``None``), 8 bytes of memory less a region.

    Returns
    -------
    perm, codes, starts, ends : int64, int32, int64, int64 (n,)
        ``perm[k]`` is the input index of sorted row ``k``.

    Examples
    --------
    >>> perm, c, s, e = sort_regions(np.array([1, 0, 1], np.int32), np.array([5, 9, 2]),
    ...                              np.array([6, 10, 3]), np.array([1, 0]),
    ...                              np.array([7, 8], np.int32))
    >>> perm.tolist(), c.tolist(), s.tolist(), e.tolist()
    ([2, 0, 1], [7, 7, 8], [2, 5, 9], [3, 6, 10])
    """
    import numba

    codes = np.ascontiguousarray(codes, dtype=np.int32)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    rank = np.ascontiguousarray(rank, dtype=np.int64)
    code_of = np.ascontiguousarray(code_of, dtype=np.int32)
    n = codes.size
    if not (starts.size == ends.size == n):
        raise ValueError(f"sort_regions: codes, starts and ends differ in length "
                         f"({n}, {starts.size}, {ends.size})")
    if n and (codes.min() < 0 or codes.max() >= rank.size):
        raise ValueError(f"sort_regions: codes must lie in 0..{rank.size - 1}")
    if rank.size and (rank.min() < 0 or rank.max() >= code_of.size):
        raise ValueError(f"sort_regions: ranks must lie in 0..{code_of.size - 1}")
    if n and starts.min() < 0:
        raise ValueError("sort_regions: starts must be non-negative")
    wb = int(starts.max(initial=0)).bit_length()
    kb = int(rank.max(initial=0)).bit_length() + wb
    ib = max(n - 1, 0).bit_length()
    if n < MIN_BUCKET or kb + ib > 64:
        r = rank[codes]
        if kb <= 62:
            o = stable_argsort((r << wb) | starts)
        else:
            o = np.lexsort((starts, r))
        o = o.astype(np.int64, copy=False)
        return o if perm else None, code_of[r[o]], starts[o], ends[o]
    top = max(kb - DIGIT_BITS, 0)
    n_top = ((1 << kb) - 1 >> top) + 1
    blocks = np.linspace(0, n, numba.get_num_threads() + 1).astype(np.int64)
    hist = np.zeros((blocks.size - 1, n_top), np.int64)
    _top_counts(codes, starts, rank, wb, top, blocks, hist)
    sizes = hist.sum(axis=0)
    bucket_ptr = np.zeros(n_top + 1, np.int64)
    np.cumsum(sizes, out=bucket_ptr[1:])
    at = bucket_ptr[:-1] + np.cumsum(hist, axis=0) - hist  # block t's first slot per bucket
    # the buckets are filled in the output arrays themselves (the packed value in the starts'
    # memory) and decoded in place: no fresh memory beyond the outputs (page faults on fresh
    # memory are costly: benchmarks/RESULTS.md, "Design measurements")
    out_starts = np.empty(n, np.int64)
    out_ends = np.empty(n, np.int64)
    _top_scatter(codes, starts, ends, rank, wb, ib, top, blocks, np.ascontiguousarray(at),
                 out_starts.view(np.uint64), out_ends)
    out_codes = np.empty(n, np.int32)
    o = np.empty(n if perm else 0, np.int64)
    groups = _balanced(sizes, 4 * numba.get_num_threads())
    _sort_buckets(out_starts.view(np.uint64), out_ends, bucket_ptr, groups, top, ib, wb, code_of,
                  out_codes, out_starts, out_ends, o)
    return o if perm else None, out_codes, out_starts, out_ends


@njit(**NJIT)
def _runs(codes, starts, bounds):
    """Number of runs of equal codes, or -1 when a run's starts decrease; with ``bounds`` big
    enough (``n + 1``), also where each run starts (and ``n`` after the last)."""
    n = codes.size
    k = 0
    for i in range(n):
        if i == 0 or codes[i] != codes[i - 1]:
            if k < bounds.size:
                bounds[k] = i
            k += 1
        elif starts[i] < starts[i - 1]:
            return -1
    if k < bounds.size:
        bounds[k] = n
    return k


def sorted_runs(codes: np.ndarray, starts: np.ndarray):
    """``(bounds, run codes)`` when ``starts`` never decrease within each run of equal codes,
    else ``None``: one serial pass, no temporary arrays (the NumPy version took a diff of the
    starts and a mask of code changes, 90 MB at 10M regions).

    Examples
    --------
    >>> b, c = sorted_runs(np.array([2, 2, 0, 0], np.int32), np.array([1, 5, 0, 3]))
    >>> b.tolist(), c.tolist()
    ([0, 2, 4], [2, 0])
    >>> sorted_runs(np.array([0, 0], np.int32), np.array([5, 1])) is None
    True
    """
    codes = np.ascontiguousarray(codes)
    starts = np.ascontiguousarray(starts)
    if codes.size != starts.size:
        raise ValueError(f"sorted_runs: {codes.size} codes but {starts.size} starts")
    bounds = np.empty(min(codes.size, 255) + 1, np.int64)  # one pass when it is enough
    k = _runs(codes, starts, bounds)
    if k < 0:
        return None
    if k >= bounds.size:
        bounds = np.empty(k + 1, np.int64)
        _runs(codes, starts, bounds)
    bounds = bounds[:k + 1]
    return bounds, codes[bounds[:-1]]


@njit(**NJIT_PARALLEL)
def _fill_runs(bounds, pieces, at, out):
    for k in prange(pieces.size):
        a = bounds[pieces[k]]
        o = at[k]
        for i in range(bounds[pieces[k] + 1] - a):
            out[o + i] = a + i


def runs_order(bounds: np.ndarray, pieces: np.ndarray) -> np.ndarray:
    """The order that takes whole runs, ``bounds[r]:bounds[r + 1]``, in the order ``pieces``
    lists them (``pieces``: a permutation of the runs): how a sorted file's chromosome runs are
    put in the gtars order without a sort. One parallel pass; the NumPy version (a
    concatenation of one ``arange`` per run) wrote the 80 MB of a 10M-row order twice.

    Examples
    --------
    >>> runs_order(np.array([0, 2, 3, 6]), np.array([2, 0, 1])).tolist()
    [3, 4, 5, 0, 1, 2]
    """
    bounds = np.ascontiguousarray(bounds, np.int64)
    pieces = np.ascontiguousarray(pieces, np.int64)
    sizes = np.diff(bounds)
    if (bounds.size != pieces.size + 1 or (bounds.size and bounds[0] != 0) or np.any(sizes < 0)
            or np.any(np.bincount(pieces, minlength=pieces.size) != 1)):  # indexes memory
        raise ValueError("runs_order: bounds must rise from 0 and pieces permute the runs")
    at = np.zeros(pieces.size, np.int64)
    np.cumsum(sizes[pieces][:-1], out=at[1:])
    out = np.empty(int(bounds[-1]) if bounds.size else 0, np.int64)
    _fill_runs(bounds, pieces, at, out)
    return out


def warmup() -> None:
    """Compile the radix kernels on tiny inputs."""
    runs_order(np.array([0, 2, 3]), np.array([1, 0]))
    _radix(np.array([3, 1, 2, 1], np.int64), 2, 2, np.empty(4, np.int64))
    saved = globals()["MIN_BUCKET"]
    globals()["MIN_BUCKET"] = 1
    try:
        sort_regions(np.array([1, 0, 1, 0], np.int32), np.array([5, 9, 2, 3]),
                     np.array([6, 10, 3, 4]), np.array([1, 0]), np.array([0, 1], np.int32))
    finally:
        globals()["MIN_BUCKET"] = saved
    sorted_runs(np.array([1, 1, 0], np.int32), np.array([2, 5, 1]))
