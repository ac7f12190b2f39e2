"""Numba kernels of the single-cell adapter: sparse rows (cells) in, token lists out.

Arrays in, arrays out; no I/O and no validation here (the callers in :mod:`genotok.singlecell.cells`
validate with :func:`check_csr` first, numba does not check bounds).

The variable (peak) -> token map is a small CSR: the tokens of variable ``v`` are
``var_ids[var_ptr[v]:var_ptr[v + 1]]`` by ascending genomic rank (``rank[id]``; ``rank_ids`` is
the inverse). Per row (cell) the kernel:

1. keeps the stored entries with ``value > 0`` and ``value >= min_value`` (one comparison:
   ``value >= keep_from``, see :func:`keep_threshold`);
2. collects every token of every kept variable, carrying the entry's value, in genomic order.
   Paths, all giving the same result: when the map is *monotone* (every token of an earlier
   column ranks <= every token of a later one, e.g. peaks sorted like the universe) one pass in
   storage order; else with ``unique`` a bitmap over genomic ranks with summed values (no
   sort); else the columns visited in ``vpos`` order (variables sorted by first-token rank;
   a bitmap over variables or sorted keys), then a stable sort when variables interleave.
   Ties (``unique=False``: one token from several peaks) are in (first-token rank, column,
   storage) order;
3. merges equal region tokens when ``unique`` (values summed);
4. applies the unknown policy: ``drop`` — no ``<unk>``; ``set`` — a row without region tokens
   gets one ``<unk>`` valued with the row's kept total; ``region`` — one ``<unk>`` per kept
   entry whose variable has no token, in storage order, after the region tokens (never merged);
5. truncates to ``max_tokens`` (``top``: largest values, ties by position; ``sample``: a seeded
   uniform sample), keeping the order of step 4;
6. reorders (``genomic``: as is; ``value``: by value descending, ties by position;
   ``shuffle``: a seeded permutation).

Random draws use a SplitMix64 stream seeded from ``(seed, global row index)``, so results do
not depend on chunking or on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL
from .bits import bit_index as _bit_index
from .bits import prefetch as _prefetch

UNK_DROP, UNK_SET, UNK_REGION = 0, 1, 2
ORDER_GENOMIC, ORDER_VALUE, ORDER_SHUFFLE = 0, 1, 2
TRUNC_TOP, TRUNC_SAMPLE = 0, 1
#: how a row whose columns are not in genomic order is visited (auto picks per row)
PATH_AUTO, PATH_KEYSORT, PATH_BITMAP = 0, 1, 2

# check_csr status codes
CSR_OK, CSR_INDPTR, CSR_INDEX, CSR_NEGATIVE, CSR_NOT_FINITE = 0, 1, 2, 3, 4

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO53 = 1.0 / 9007199254740992.0


@njit(**NJIT)
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(**NJIT)
def rng_seed(seed, row):
    """Start state of the random stream of global row ``row``."""
    return _mix(np.uint64(seed) * _GOLDEN + np.uint64(row))


@njit(**NJIT)
def rng_below(state, n):
    """(new state, uniform integer in [0, n))."""
    state = np.uint64(state) + _GOLDEN
    x = _mix(state)
    return state, np.int64(np.float64(x >> np.uint64(11)) * _TWO53 * n)


# ---------------------------------------------------------------------------------- validation
@njit(**NJIT_PARALLEL)
def check_csr(indptr, indices, data, n_cols, blocks):
    """First problem of a CSR chunk: ``(code, position)``; ``(CSR_OK, -1)`` when valid.

    ``indptr`` must be non-decreasing and within ``[0, len(indices)]``; every index in
    ``[0, n_cols)``; every value finite and ``>= 0``. ``blocks`` are row boundaries.
    """
    nb = blocks.size - 1
    codes = np.zeros(nb, np.int64)
    where = np.full(nb, -1, np.int64)
    n = indices.size
    for b in prange(nb):
        for r in range(blocks[b], blocks[b + 1]):
            lo, hi = indptr[r], indptr[r + 1]
            if lo < 0 or hi < lo or hi > n:
                codes[b] = CSR_INDPTR
                where[b] = r
                break
            bad = False
            for j in range(lo, hi):
                c = indices[j]
                if c < 0 or c >= n_cols:
                    codes[b] = CSR_INDEX
                    where[b] = j
                    bad = True
                    break
                v = data[j]
                if not np.isfinite(v):
                    codes[b] = CSR_NOT_FINITE
                    where[b] = j
                    bad = True
                    break
                if v < 0:
                    codes[b] = CSR_NEGATIVE
                    where[b] = j
                    bad = True
                    break
            if bad:
                break
    for b in range(nb):
        if codes[b] != CSR_OK:
            return codes[b], where[b]
    return CSR_OK, -1


# ---------------------------------------------------------------------------------- per row
@njit(**NJIT)
def _emit(ids, vals, pos, t0, t1, var_ids, v, rank, last):
    """Append the tokens ``var_ids[t0:t1]`` valued ``v`` at ``pos``.

    Returns ``(pos, last rank, still sorted)``.
    """
    ok = True
    for t in range(t0, t1):
        tid = var_ids[t]
        rk = rank[tid]
        if rk < last:
            ok = False
        last = rk
        ids[pos] = tid
        vals[pos] = v
        pos += 1
    return pos, last, ok


@njit(**NJIT)
def _row(r, g, indptr, indices, data, var_ptr, var_ids, vpos, rank, rank_ids, monotone, unk_id,
         keep_from, unk_mode, unique, order, max_tokens, truncate, seed, path, ids, vals,
         bitmap, jbuf, rbits, rval):
    """Tokens of row ``r`` (global index ``g``) written into ``ids``/``vals``; returns the count.

    ``ids``/``vals`` are the row's slot (its capacity from :func:`row_capacity`). Paths:

    * ``monotone`` variables (every row in column order emits tokens in genomic order): one
      pass in storage order, abandoned at the first out-of-order token;
    * otherwise with ``unique``: a bitmap over genomic ranks (``rbits``) with summed values
      (``rval``), scanned between the lowest and highest word touched;
    * otherwise: columns visited in ``vpos`` order (a bitmap over variables or sorted keys),
      then a stable sort by rank when variables interleave.
    """
    lo, hi = indptr[r], indptr[r + 1]
    pos = 0
    done = False
    merged = False
    if monotone:
        last = -1
        last_c = -1
        good = True
        for j in range(lo, hi):
            v = data[j]
            if v >= keep_from:
                c = indices[j]
                if c < last_c:  # unsorted columns (non-canonical CSR)
                    good = False
                    break
                last_c = c
                t0, t1 = var_ptr[c], var_ptr[c + 1]
                if t0 != t1:
                    pos, last, o = _emit(ids, vals, pos, t0, t1, var_ids, v, rank, last)
                    if not o:
                        good = False
                        break
        done = good
    if not done and unique and rbits.size > 0:
        pos = 0
        wlo = rbits.size
        whi = -1
        for j in range(lo, hi):
            v = data[j]
            if v >= keep_from:
                c = indices[j]
                for t in range(var_ptr[c], var_ptr[c + 1]):
                    rk = rank[var_ids[t]]
                    w = rk >> 6
                    bit = np.uint64(1) << np.uint64(rk & 63)
                    if rbits[w] & bit:
                        rval[rk] += v
                    else:
                        rbits[w] |= bit
                        rval[rk] = v
                        if w < wlo:
                            wlo = w
                        if w > whi:
                            whi = w
        for w in range(wlo, whi + 1):
            word = rbits[w]
            if word == 0:
                continue
            rbits[w] = 0
            while word != 0:
                low = word & (~word + np.uint64(1))  # lowest set bit
                word ^= low
                rk = (w << 6) + _bit_index(low)
                ids[pos] = rank_ids[rk]
                vals[pos] = rval[rk]
                pos += 1
        done = True
        merged = True
    if not done:  # unique=False (or an abandoned monotone pass): columns in vpos order
        pos = 0
        ok = True
        last = -1
        m = 0
        for j in range(lo, hi):
            v = data[j]
            if v >= keep_from:
                m += 1
        use_bitmap = bitmap.size > 0 and (path == PATH_BITMAP
                                          or (path == PATH_AUTO and m * 8 >= bitmap.size))
        if use_bitmap:
            dup = False
            for j in range(lo, hi):
                v = data[j]
                if v >= keep_from:
                    p = vpos[indices[j]]
                    bit = np.uint64(1) << np.uint64(p & 63)
                    if bitmap[p >> 6] & bit:
                        dup = True  # a repeated column (non-canonical CSR): sort keys instead
                    bitmap[p >> 6] |= bit
                    jbuf[p] = j
            if dup:
                bitmap[:] = 0
                use_bitmap = False
        if use_bitmap:
            for w in range(bitmap.size):
                word = bitmap[w]
                if word == 0:
                    continue
                bitmap[w] = 0
                while word != 0:
                    low = word & (~word + np.uint64(1))
                    word ^= low
                    j = jbuf[(w << 6) + _bit_index(low)]
                    c = indices[j]
                    pos, last, o = _emit(ids, vals, pos, var_ptr[c], var_ptr[c + 1], var_ids,
                                         data[j], rank, last)
                    ok = ok and o
        else:
            keys = np.empty(m, np.int64)
            k = 0
            for j in range(lo, hi):
                v = data[j]
                if v >= keep_from:
                    keys[k] = (np.int64(vpos[indices[j]]) << 32) | np.int64(j - lo)
                    k += 1
            keys.sort()
            for k in range(m):
                j = lo + (keys[k] & 0xFFFFFFFF)
                c = indices[j]
                pos, last, o = _emit(ids, vals, pos, var_ptr[c], var_ptr[c + 1], var_ids,
                                     data[j], rank, last)
                ok = ok and o
        if not ok:  # variables with interleaved tokens: stable sort by genomic rank
            keys = np.empty(pos, np.int64)
            for i in range(pos):
                keys[i] = rank[ids[i]]
            o = np.argsort(keys, kind="mergesort")
            tid = ids[:pos][o]
            tv = vals[:pos][o]
            ids[:pos] = tid
            vals[:pos] = tv
    nr = pos
    if unique and not merged and nr > 1:
        w = 0
        for i in range(1, nr):
            if ids[i] == ids[w]:
                vals[w] += vals[i]
            else:
                w += 1
                ids[w] = ids[i]
                vals[w] = vals[i]
        nr = w + 1
    n = nr
    if unk_mode == UNK_REGION:  # one <unk> per kept variable without a token, storage order
        for j in range(lo, hi):
            v = data[j]
            if v >= keep_from and var_ptr[indices[j]] == var_ptr[indices[j] + 1]:
                ids[n] = unk_id
                vals[n] = v
                n += 1
    elif unk_mode == UNK_SET and nr == 0:
        total = 0.0
        for j in range(lo, hi):
            v = data[j]
            if v >= keep_from:
                total += v
        ids[0] = unk_id
        vals[0] = total
        n = 1
    if n == 0:
        return 0
    state = rng_seed(seed, g)
    if max_tokens > 0 and n > max_tokens:
        if truncate == TRUNC_TOP:
            sel = np.argsort(-vals[:n], kind="mergesort")[:max_tokens].copy()
        else:
            perm = np.arange(n)
            for i in range(max_tokens):
                state, d = rng_below(state, n - i)
                j = i + d
                x = perm[i]
                perm[i] = perm[j]
                perm[j] = x
            sel = perm[:max_tokens].copy()
        sel.sort()
        tid = ids[:n][sel]
        tv = vals[:n][sel]
        n = max_tokens
        ids[:n] = tid
        vals[:n] = tv
    if order == ORDER_VALUE and n > 1:
        o = np.argsort(-vals[:n], kind="mergesort")
        tid = ids[:n][o]
        tv = vals[:n][o]
        ids[:n] = tid
        vals[:n] = tv
    elif order == ORDER_SHUFFLE and n > 1:
        for i in range(n - 1, 0, -1):
            state, j = rng_below(state, i + 1)
            t = ids[i]
            ids[i] = ids[j]
            ids[j] = t
            x = vals[i]
            vals[i] = vals[j]
            vals[j] = x
    return n


@njit(**NJIT_PARALLEL)
def row_capacity(indptr, indices, data, var_ptr, keep_from, unk_mode, blocks):
    """Upper bound of every row's token count (before merging and truncation)."""
    n_rows = indptr.size - 1
    cap = np.zeros(n_rows, np.int64)
    for b in prange(blocks.size - 1):
        for r in range(blocks[b], blocks[b + 1]):
            c = 0
            miss = 0
            for j in range(indptr[r], indptr[r + 1]):
                v = data[j]
                if v >= keep_from:
                    k = var_ptr[indices[j] + 1] - var_ptr[indices[j]]
                    c += k
                    if k == 0:
                        miss += 1
            if unk_mode == UNK_REGION:  # room for the <unk> values (kept at the slot's end)
                c += miss
            if c == 0 and unk_mode == UNK_SET:
                c = 1
            cap[r] = c
    return cap


@njit(**NJIT_PARALLEL)
def cell_tokens(indptr, indices, data, var_ptr, var_ids, vpos, rank, rank_ids, monotone, unk_id,
                keep_from, unk_mode, unique, order, max_tokens, truncate, seed, row0, path,
                blocks, cap_offsets, ids, vals):
    """Fill pass: every row's tokens into ``ids``/``vals`` at ``cap_offsets[r]``; returns the
    row lengths.

    ``cap_offsets`` is the prefix sum of :func:`row_capacity`; ``ids`` (int64) and ``vals``
    (float32) hold ``cap_offsets[-1]`` items, allocated by the caller with NumPy (see
    :func:`mono_fill`). Rows keep their slot; the caller compacts when any row came out shorter
    than its capacity. ``rank_ids[k]`` is the token id of genomic rank ``k``.
    """
    n_rows = indptr.size - 1
    lengths = np.zeros(n_rows, np.int64)
    n_vars = vpos.size
    by_var = not unique and path != PATH_KEYSORT
    for b in prange(blocks.size - 1):
        bitmap = np.zeros(((n_vars + 63) >> 6) if by_var else 0, np.uint64)
        jbuf = np.empty(n_vars if by_var else 0, np.int64)
        by_rank = unique and not monotone
        rbits = np.zeros(((rank_ids.size + 63) >> 6) if by_rank else 0, np.uint64)
        rval = np.empty(rank_ids.size if by_rank else 0, np.float64)
        for r in range(blocks[b], blocks[b + 1]):
            a, z = cap_offsets[r], cap_offsets[r + 1]
            lengths[r] = _row(r, row0 + r, indptr, indices, data, var_ptr, var_ids, vpos, rank,
                              rank_ids, monotone, unk_id, keep_from, unk_mode, unique, order,
                              max_tokens, truncate, seed, path, ids[a:z], vals[a:z], bitmap,
                              jbuf, rbits, rval)
    return lengths


# ---------------------------------------------------------------------------------- fast path
# For a *strictly monotone* map (tokens of each variable by ascending rank, every token of an
# earlier variable ranking <= every token of a later one), genomic order and no truncation,
# a row in increasing column order already lists its tokens in genomic order: no bitmap, no
# sort. Per variable the map is summarised as ``lut_n`` (0, 1 or 2 tokens, or -1: take the
# general loop, for more than two tokens or a first token shared with another variable, which
# ``unique`` may merge with the previous one; never for a variable without tokens, which
# :func:`mono_count` counts as a miss only through ``lut_n == 0``), ``lut_last`` (its last
# token) and ``lut_word`` (the fill's one load per entry: :func:`pack_lut_word`). Counting
# first gives exact row offsets, so rows are written in place with no compaction.


MONO_OK, MONO_UNSORTED, MONO_INVALID = 0, 1, 2

#: how many stored entries ahead :func:`mono_fill` prefetches its lookup word
_AHEAD = 32

#: token ids below this fit a field of :func:`pack_lut_word`
LUT_WORD_IDS = 1 << 31


def pack_lut_word(n, first, second):
    """The fill's per-variable word: ``first | second << 31 | (n + 1) << 62`` (int64).

    ``n`` is the variable's fast-path token count (``-1``: the general loop), ``first`` and
    ``second`` its first two tokens (ids below :data:`LUT_WORD_IDS`). One 8-byte load per
    stored entry instead of three arrays: a row's columns are far apart, so each array costs
    a cache miss, and the three did not fit in L2 at 100k variables (~17% of the fill's time).
    The word ``0`` means "the general loop".

    >>> w = pack_lut_word(np.array([2, -1]), np.array([7, 0]), np.array([2**31 - 1, 0]))
    >>> (w & 0x7FFFFFFF).tolist(), ((w >> 31) & 0x7FFFFFFF).tolist(), (((w >> 62) & 3) - 1).tolist()
    ([7, 0], [2147483647, 0], [2, -1])
    """
    n = np.asarray(n, np.int64)
    return (np.asarray(first, np.int64) | np.asarray(second, np.int64) << 31
            | (n + 1) << 62).astype(np.int64)


#: ``keep_threshold`` of "no min_count": every positive value is kept
KEEP_POSITIVE = float(np.nextafter(0.0, 1.0))


def keep_threshold(min_value: float) -> float:
    """One comparison for "``v > 0 and v >= min_value``": ``v >= keep_threshold(min_value)``.

    The smallest positive float64 lies below every positive float32 or float64 value, so a
    kept value need not be compared twice (NaN fails either way).

    >>> keep_threshold(float("-inf")) == KEEP_POSITIVE, keep_threshold(2.0)
    (True, 2.0)
    """
    return max(float(min_value), KEEP_POSITIVE)


@njit(**NJIT_PARALLEL)
def mono_count(indptr, indices, data, lut_n, lut_last, var_ptr, var_ids, keep_from, use_data,
               unk_mode, unique, blocks):
    """``(counts, status)``: the token count of every row for :func:`mono_fill`.

    With ``use_data`` the entries with ``value >= keep_from`` are kept (:func:`keep_threshold`)
    and the values are validated; without it ``data`` is not read at all (every stored entry
    counts as kept: half the memory traffic when the only filter is "drop zeros"), and
    :func:`mono_fill` checks the values instead. ``status`` is ``MONO_INVALID`` for anything
    :func:`check_csr` rejects that this pass reads (call it for the details), ``MONO_UNSORTED``
    when a row's columns are not strictly increasing (non-canonical CSR: take the general
    path), else ``MONO_OK``.
    """
    n_rows = indptr.size - 1
    n_vars = lut_n.size
    n_nz = indices.size
    cnt = np.zeros(n_rows, np.int64)
    bad = np.zeros(blocks.size - 1, np.int64)
    for b in prange(blocks.size - 1):
        for r in range(blocks[b], blocks[b + 1]):
            lo, hi = indptr[r], indptr[r + 1]
            if lo < 0 or hi < lo or hi > n_nz:
                bad[b] = MONO_INVALID
                break
            n = 0
            miss = 0
            pc = -1  # the last kept column with tokens
            last_c = -1
            bad_v = False
            for j in range(lo, hi):
                c = indices[j]
                if c < 0 or c >= n_vars:
                    bad[b] = MONO_INVALID
                    break
                if c <= last_c:
                    bad[b] = max(bad[b], MONO_UNSORTED)
                last_c = c
                if use_data:
                    v = data[j]
                    bad_v |= (v < 0) | (v != v) | (v == np.inf)  # no branch: checked per row
                    if not v >= keep_from:
                        continue
                k = lut_n[c]
                if k > 0:
                    n += k
                    pc = c
                elif k == 0:
                    miss += 1
                else:
                    t0 = var_ptr[c]
                    n += var_ptr[c + 1] - t0
                    if unique and pc >= 0 and var_ids[t0] == lut_last[pc]:
                        n -= 1
                    pc = c
            if unk_mode == UNK_REGION:
                n += miss
            elif unk_mode == UNK_SET and n == 0:
                n = 1
            cnt[r] = n
            if bad_v:
                bad[b] = MONO_INVALID
            if bad[b] == MONO_INVALID:
                break
    status = MONO_OK
    for b in range(bad.size):
        status = max(status, bad[b])
    return cnt, status


@njit(**NJIT_PARALLEL)
def mono_fill(indptr, indices, data, lut_word, var_ptr, var_ids, unk_id, keep_from, strict,
              unk_mode, unique, blocks, offsets, ids, vals):
    """Write every row's tokens into ``ids`` at ``offsets[r]`` (and their values into ``vals``
    unless it is ``None``: numba then compiles the fill without the value stores and their
    tests, 43.0 -> 40.9 ms for the 10k-cell matrix). Returns False when ``strict`` and a row
    has an entry that is not kept or not a valid value: the counts (made without reading the
    values) do not hold, and the caller counts again with the values; such a row stops before
    writing that entry, so no store leaves its slot.

    The caller allocates ``ids``/``vals`` with NumPy, which asks the kernel for transparent huge
    pages on large arrays; an array allocated inside the kernel would take a page fault every
    4 KiB on first write, several times the cost of the fill itself.

    The lookup word of the entry :data:`_AHEAD` places on is prefetched: the 800 KB of words
    (100k peaks) do not stay in L2 beside the streamed matrix, and a lookup that waits for L3
    stalls the stores behind it (48.5 -> 41.8 ms for the 10k-cell matrix, same process; 8 to
    64 places ahead measured alike). :func:`mono_count` has validated every column index, so
    the prefetched index is one too.

    Variables with one or two tokens are written as a pair of stores and the position moves
    by their count (no branch on the count); the second store may land past the row, in a
    later row of the same block that overwrites it. Rows within two slots of their block's end
    use the plain loop, so no store ever crosses into another thread's block.
    """
    if vals is not None and vals.size != ids.size:
        raise ValueError("mono_fill: vals must be None or as long as ids")
    ok = np.ones(blocks.size - 1, np.bool_)
    for b in prange(blocks.size - 1):
        end = offsets[blocks[b + 1]]
        ahead = indptr[blocks[b + 1]] - _AHEAD  # entries whose lookup _AHEAD on is prefetched
        for r in range(blocks[b], blocks[b + 1]):
            a = offsets[r]
            pos = a
            paired = offsets[r + 1] + 2 <= end
            miss = 0
            for j in range(indptr[r], indptr[r + 1]):
                if j < ahead:
                    _prefetch(lut_word, indices[j + _AHEAD])
                v = data[j]
                if not (v >= keep_from and v < np.inf):  # NaN fails too
                    if strict:
                        ok[b] = False
                        break
                    continue
                c = indices[j]
                w = lut_word[c]
                k = ((w >> 62) & 3) - 1
                if k >= 0 and paired:
                    ids[pos] = w & 0x7FFFFFFF
                    ids[pos + 1] = (w >> 31) & 0x7FFFFFFF
                    if vals is not None:
                        vals[pos] = v
                        vals[pos + 1] = v
                    pos += k
                    miss += k == 0
                else:
                    t0, t1 = var_ptr[c], var_ptr[c + 1]
                    if t0 == t1:
                        miss += 1
                    for t in range(t0, t1):
                        tid = var_ids[t]
                        if unique and t == t0 and pos > a and ids[pos - 1] == tid:
                            if vals is not None:
                                vals[pos - 1] += v
                            continue
                        ids[pos] = tid
                        if vals is not None:
                            vals[pos] = v
                        pos += 1
            if not ok[b]:
                break
            if unk_mode == UNK_REGION and miss > 0:  # after the region tokens, storage order
                for j in range(indptr[r], indptr[r + 1]):
                    v = data[j]
                    c = indices[j]
                    if v >= keep_from and var_ptr[c] == var_ptr[c + 1]:
                        ids[pos] = unk_id
                        if vals is not None:
                            vals[pos] = v
                        pos += 1
            elif unk_mode == UNK_SET and pos == a:  # valued with the row's kept total
                ids[pos] = unk_id
                if vals is not None:
                    kept = 0.0
                    for j in range(indptr[r], indptr[r + 1]):
                        v = data[j]
                        if v >= keep_from:
                            kept += v
                    vals[pos] = kept
    for b in range(ok.size):
        if not ok[b]:
            return False
    return True


@njit(**NJIT)
def compact(ids, vals, cap_offsets, lengths):
    """Move each row's first ``lengths[r]`` items from its slot down to the packed position.

    In place and serial: a row's packed position is never after its slot, so copying rows in
    order never overwrites data still to be read. Returns the packed size.
    """
    o = 0
    for r in range(lengths.size):
        a = cap_offsets[r]
        if a != o:
            for i in range(lengths[r]):
                ids[o + i] = ids[a + i]
                vals[o + i] = vals[a + i]
        o += lengths[r]
    return o


# ---------------------------------------------------------------------------------- fragments
@njit(**NJIT)
def _int_field(buf, a, b):
    """Non-negative decimal integer in ``buf[a:b]``; -1 when empty/not a number/too long."""
    if b <= a or b - a > 18:
        return -1
    x = 0
    for k in range(a, b):
        d = buf[k] - 48
        if d < 0 or d > 9:
            return -1
        x = x * 10 + d
    return x


# parse_fragments status codes
FRAG_OK, FRAG_COLUMNS, FRAG_START, FRAG_END, FRAG_COUNT, FRAG_END_BEFORE_START = 0, 1, 2, 3, 4, 5
FRAG_BARCODE = 6  # a control byte (< 0x20 or 0x7f) in the barcode


@njit(**NJIT)
def parse_fragments(buf):
    """Parse tab-separated ``chrom start end barcode [count ...]`` lines of a byte block.

    Skips blank and ``#`` lines; a missing count column counts 1; a barcode with a control
    byte (< 0x20 or 0x7f) is an error (``FRAG_BARCODE``). Returns
    ``(chrom_s, chrom_e, starts, ends, bc_s, bc_e, counts, status, bad_line, n_newlines)``
    where ``bad_line`` is the 0-based line (within the block) of the first problem.
    """
    n = buf.size
    nl = 1
    for i in range(n):
        if buf[i] == 10:
            nl += 1
    newlines = nl - 1
    cs = np.empty(nl, np.int64)
    ce = np.empty(nl, np.int64)
    st = np.empty(nl, np.int64)
    en = np.empty(nl, np.int64)
    bs = np.empty(nl, np.int64)
    be = np.empty(nl, np.int64)
    cnt = np.empty(nl, np.int64)
    fs = np.empty(5, np.int64)  # the line's field bounds, reused line after line
    fe = np.empty(5, np.int64)
    k = 0
    line = -1
    pos = 0
    status = FRAG_OK
    while pos < n:
        line += 1
        e = pos
        while e < n and buf[e] != 10:
            e += 1
        nxt = e + 1
        if e > pos and buf[e - 1] == 13:
            e -= 1
        if e == pos or buf[pos] == 35:
            pos = nxt
            continue
        # split on tabs: up to five fields
        nf = 0
        a = pos
        for i in range(pos, e + 1):
            if i == e or buf[i] == 9:
                if nf < 5:
                    fs[nf] = a
                    fe[nf] = i
                nf += 1
                a = i + 1
                if nf >= 5:
                    break
        if nf < 4:
            status = FRAG_COLUMNS
            break
        s = _int_field(buf, fs[1], fe[1])
        if s < 0:
            status = FRAG_START
            break
        x = _int_field(buf, fs[2], fe[2])
        if x < 0:
            status = FRAG_END
            break
        if x < s:
            status = FRAG_END_BEFORE_START
            break
        c = _int_field(buf, fs[4], fe[4]) if nf >= 5 else 1
        if c < 0:
            status = FRAG_COUNT
            break
        if fe[0] == fs[0] or fe[3] == fs[3]:
            status = FRAG_COLUMNS
            break
        ctrl = False
        for i in range(fs[3], fe[3]):
            ctrl |= (buf[i] < 32) | (buf[i] == 127)
        if ctrl:
            status = FRAG_BARCODE
            break
        cs[k] = fs[0]
        ce[k] = fe[0]
        st[k] = s
        en[k] = x
        bs[k] = fs[3]
        be[k] = fe[3]
        cnt[k] = c
        k += 1
        pos = nxt
    bad = -1 if status == FRAG_OK else line
    return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], status, bad, newlines


@njit(**NJIT)
def _digits_left(buf, lo, e):
    """Start of the run of ASCII digits ending at ``e`` (exclusive), not before ``lo``."""
    k = e
    while k > lo and 48 <= buf[k - 1] <= 57:
        k -= 1
    return k


@njit(**NJIT)
def parse_names(buf, sep1, sep2):
    """Region names ``chrom<sep1>start<sep2>end``, one per ``\\n``-terminated line, from the right.

    ``sep1``/``sep2`` are byte values, or -1 for any of ``:_-`` / ``_-``. Returns
    ``(chrom_s, chrom_e, starts, ends, bad)``; ``bad`` is the first line that does not parse
    (-1 when all do). Numbers of more than 18 digits count as not parsing.
    """
    n = 0
    for i in range(buf.size):
        if buf[i] == 10:
            n += 1
    cs = np.empty(n, np.int64)
    ce = np.empty(n, np.int64)
    st = np.empty(n, np.int64)
    en = np.empty(n, np.int64)
    pos = 0
    for i in range(n):
        e = pos
        while buf[e] != 10:
            e += 1
        nxt = e + 1
        k2 = _digits_left(buf, pos, e)
        if k2 == e or e - k2 > 18 or k2 - 1 <= pos:
            return cs, ce, st, en, i
        s2 = buf[k2 - 1]
        if not ((sep2 < 0 and (s2 == 45 or s2 == 95)) or s2 == sep2):
            return cs, ce, st, en, i
        k1 = _digits_left(buf, pos, k2 - 1)
        if k1 == k2 - 1 or k2 - 1 - k1 > 18 or k1 - 1 <= pos:
            return cs, ce, st, en, i
        s1 = buf[k1 - 1]
        if not ((sep1 < 0 and (s1 == 58 or s1 == 45 or s1 == 95)) or s1 == sep1):
            return cs, ce, st, en, i
        a = 0
        for k in range(k1, k2 - 1):
            a = a * 10 + (buf[k] - 48)
        z = 0
        for k in range(k2, e):
            z = z * 10 + (buf[k] - 48)
        cs[i] = pos
        ce[i] = k1 - 1
        st[i] = a
        en[i] = z
        pos = nxt
    return cs, ce, st, en, -1
