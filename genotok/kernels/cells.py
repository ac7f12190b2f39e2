"""Numba kernels of the single-cell adapter: sparse rows (cells) in, token lists out.

The monotone fast path is in :mod:`genotok.kernels.monotone`, the fragment-file parser in
:mod:`genotok.kernels.fragments` and the var-name parser in :mod:`genotok.kernels.names`; their
names are importable from here too. Arrays in, arrays out; no I/O and no validation here
(the callers in :mod:`genotok.singlecell.cells` validate with :func:`check_csr` first, numba
does not check bounds).

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
from .fragments import (  # noqa: F401  (the single-cell room's kernels, importable from here)
    FRAG_BARCODE,
    FRAG_COLUMNS,
    FRAG_COUNT,
    FRAG_END,
    FRAG_END_BEFORE_START,
    FRAG_MIXED,
    FRAG_OK,
    FRAG_START,
    parse_fragments,
)
from .modes import Order, Path, Truncate, Unknown
from .monotone import (  # noqa: F401
    KEEP_POSITIVE,
    LUT_WORD_IDS,
    MONO_INVALID,
    MONO_OK,
    MONO_UNSORTED,
    keep_threshold,
    mono_count,
    mono_fill,
    pack_lut_word,
)
from .names import parse_names  # noqa: F401

# the modes (kernels/modes.py) as plain ints, under the names the callers know (an IntEnum
# member passed as an argument would compile a second specialization of every kernel)
UNK_DROP, UNK_SET, UNK_REGION = (int(m) for m in Unknown)
ORDER_GENOMIC, ORDER_VALUE, ORDER_SHUFFLE = (int(m) for m in Order)
TRUNC_TOP, TRUNC_SAMPLE = (int(m) for m in Truncate)
#: how a row whose columns are not in genomic order is visited (auto picks per row)
PATH_AUTO, PATH_KEYSORT, PATH_BITMAP = (int(m) for m in Path)

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


#: rows at least this long are ordered by a radix sort of their float32 keys (shorter ones by a
#: comparison sort of packed keys, cheaper below it)
RADIX_FROM = 64

_U8, _U32, _LOW = np.uint64(8), np.uint64(32), np.uint64(0xFFFFFFFF)


@njit(**NJIT)
def _radix_by_high32(keys, tmp, n, hist):
    """``keys[:n]`` sorted stably by their high 32 bits (least significant byte first, a pass
    skipped where every key has the same byte): returns ``keys`` or ``tmp``, whichever holds the
    result. Keys whose low 32 bits increase keep that order within equal high bits."""
    hist[:] = 0
    for i in range(n):
        h = keys[i] >> _U32
        for d in range(4):
            hist[d, np.int64((h >> (_U8 * np.uint64(d))) & np.uint64(255))] += 1
    src, dst = keys, tmp
    for d in range(4):
        shift = _U32 + _U8 * np.uint64(d)
        if hist[d, np.int64((src[0] >> shift) & np.uint64(255))] == n:
            continue  # one byte value: this pass would not move anything
        total = 0
        for x in range(256):
            c = hist[d, x]
            hist[d, x] = total
            total += c
        for i in range(n):
            key = src[i]
            x = np.int64((key >> shift) & np.uint64(255))
            dst[hist[d, x]] = key
            hist[d, x] += 1
        src, dst = dst, src
    return src


@njit(**NJIT)
def _by_value(keys, spare, hist, n, v, a):
    """``keys[:n]`` (``(~float32 bits of v[a + p]) << 32 | p``, distinct ``p``) sorted: by value
    descending, ties by ``p``. A radix sort of the high half from :data:`RADIX_FROM` keys on
    (else a sort of the distinct keys), then each run of equal float32 keys (a few; none for
    float32 values) ordered by ``v`` itself, stably, so that float64 values float32 would make
    equal keep their order. Returns ``keys`` or ``spare``, whichever holds the result."""
    if n < RADIX_FROM:
        keys[:n].sort()
        srt = keys
    else:
        srt = _radix_by_high32(keys, spare, n, hist)
    s = 0
    while s < n:
        e = s + 1
        while e < n and (srt[e] >> _U32) == (srt[s] >> _U32):
            e += 1
        for x in range(s + 1, e):  # insertion sort of the run, stable
            key = srt[x]
            val = v[a + np.int64(key & _LOW)]
            y = x - 1
            while y >= s and v[a + np.int64(srt[y] & _LOW)] < val:
                srt[y + 1] = srt[y]
                y -= 1
            srt[y + 1] = key
        s = e
    return srt


@njit(**NJIT_PARALLEL)
def value_order_rows(offsets, ids, vals, max_tokens, blocks):
    """Each row ``offsets[r]:offsets[r + 1]`` of a genomic-order fill reordered by value,
    descending (a stable sort: ties keep their fill order), cut to its first ``max_tokens``
    (``0``: no cut); returns the new row lengths (rows keep their slot, the caller compacts).
    The same tokens as :func:`cell_tokens` with ``order=ORDER_VALUE`` and ``truncate=TRUNC_TOP``
    (its top-k by value, back in genomic order, then sorted by value is the stable sort's first
    k). Oracle: ``np.argsort(-v, kind="stable")[:k]`` per row, in ``vals``' own dtype.

    ``vals`` are positive, float32 or float64 (a gene vocabulary: Geneformer's float64 rank).
    For positive floats the float32 bit patterns order as the values do, so each row sorts one
    uint64 key per token, ``(~float32 bits << 32) | position`` (:func:`_by_value`).
    """
    n_rows = offsets.size - 1
    lengths = np.zeros(n_rows, np.int64)
    for b in prange(blocks.size - 1):
        longest = 0
        for r in range(blocks[b], blocks[b + 1]):
            longest = max(longest, offsets[r + 1] - offsets[r])
        keys = np.empty(longest, np.uint64)
        spare = np.empty(longest, np.uint64)
        hist = np.empty((4, 256), np.int64)
        tid = np.empty(longest, ids.dtype)
        tv = np.empty(longest, vals.dtype)
        for r in range(blocks[b], blocks[b + 1]):
            a, z = offsets[r], offsets[r + 1]
            n = z - a
            k = n if max_tokens == 0 or n <= max_tokens else max_tokens
            if n > 1:
                for i in range(n):
                    bits = np.float32(vals[a + i]).view(np.uint32)
                    keys[i] = ((_LOW - np.uint64(bits)) << _U32) | np.uint64(i)
                srt = _by_value(keys, spare, hist, n, vals, a)
                for i in range(k):
                    j = a + np.int64(srt[i] & _LOW)
                    tid[i] = ids[j]
                    tv[i] = vals[j]
                for i in range(k):
                    ids[a + i] = tid[i]
                    vals[a + i] = tv[i]
            lengths[r] = k
    return lengths


@njit(**NJIT_PARALLEL)
def value_rows(indptr, indices, data, col_ids, keep_from, blocks, offsets, ids, vals):
    """The value-ordered rows of a matrix whose columns have at most one token each (a gene
    vocabulary's columns: ``col_ids[c]`` is column ``c``'s token id, ``-1`` for none), straight
    from the CSR rows: each row's kept entries (``keep_from <= value < inf``) with a token, by
    value descending (ties in column order, float64 values compared as such:
    :func:`_by_value`), its first ``offsets[r + 1] - offsets[r]`` written at ``offsets[r]``
    (the caller's counts, cut to ``max_length``): ``ids`` get the token ids, ``vals``
    (``None``: not written) the values. One pass instead of a fill, a sort of the fill, a
    compaction and a lookup of the ids, with no value array as long as the tokens:
    :func:`mono_fill` + :func:`value_order_rows` + :func:`compact` give the same rows. The
    caller has validated the rows (:func:`mono_count` with the values: sorted columns within
    ``col_ids``)."""
    for b in prange(blocks.size - 1):
        longest = 0
        for r in range(blocks[b], blocks[b + 1]):
            longest = max(longest, indptr[r + 1] - indptr[r])
        keys = np.empty(longest, np.uint64)
        spare = np.empty(longest, np.uint64)
        hist = np.empty((4, 256), np.int64)
        for r in range(blocks[b], blocks[b + 1]):
            lo = indptr[r]
            n = 0
            for j in range(lo, indptr[r + 1]):
                v = data[j]
                if v >= keep_from and v < np.inf and col_ids[indices[j]] >= 0:
                    bits = np.float32(v).view(np.uint32)
                    keys[n] = ((_LOW - np.uint64(bits)) << _U32) | np.uint64(j - lo)
                    n += 1
            srt = _by_value(keys, spare, hist, n, data, lo)
            a = offsets[r]
            for i in range(offsets[r + 1] - a):
                j = lo + np.int64(srt[i] & _LOW)
                ids[a + i] = col_ids[indices[j]]
                if vals is not None:
                    vals[a + i] = data[j]


@njit(**NJIT)
def compact(ids, vals, cap_offsets, lengths):
    """Move each row's first ``lengths[r]`` items from its slot down to the packed position
    (``vals``: moved alike, or empty: no value channel).

    In place and serial: a row's packed position is never after its slot, so copying rows in
    order never overwrites data still to be read. Returns the packed size.
    """
    o = 0
    for r in range(lengths.size):
        a = cap_offsets[r]
        if a != o:
            for i in range(lengths[r]):
                ids[o + i] = ids[a + i]
                if vals.size:
                    vals[o + i] = vals[a + i]
        o += lengths[r]
    return o
