"""Numba kernels of the single-cell adapter: sparse rows (cells) in, token lists out.

Arrays in, arrays out; no I/O and no validation here (the callers in :mod:`genotok.anndata`
validate with :func:`check_csr` first, numba does not check bounds).

The variable (peak) -> token map is a small CSR: the tokens of variable ``v`` are
``var_ids[var_ptr[v]:var_ptr[v + 1]]`` by ascending genomic rank. ``vpos[v]`` is the position of
``v`` when the variables are sorted by the rank of their first token (variables without a token
last), so a row whose columns are visited in ``vpos`` order emits tokens in genomic order
(except when variables overlap several interleaved tokens: that is detected and sorted).

Per row (cell) the kernel:

1. keeps the stored entries with ``value > 0`` and ``value >= min_value``;
2. emits every token of every kept variable, carrying the entry's value, in genomic order
   (``<unk>`` entries, one per kept variable without a token, after the region tokens);
3. merges equal region tokens when ``unique`` (values summed; ``<unk>`` is never merged);
4. applies the unknown policy: ``drop`` removes ``<unk>``; ``set`` keeps no per-variable
   ``<unk>`` and gives a row without region tokens one ``<unk>`` valued with the row's total;
   ``region`` keeps one ``<unk>`` per kept variable without a token;
5. truncates to ``max_tokens`` (``top``: largest values, ties by genomic order; ``sample``:
   a seeded uniform sample), keeping genomic order;
6. reorders (``genomic``: as is; ``value``: by value descending, ties genomic; ``shuffle``: a
   seeded permutation).

Random draws use a SplitMix64 stream seeded from ``(seed, global row index)``, so results do
not depend on chunking or on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._config import NJIT, NJIT_PARALLEL

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
    state = state + _GOLDEN
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
def _emit(ids, vals, pos, tok_lo, tok_hi, var_ids, v, unk_ids, unk_vals, nu, rank, last):
    """Append the tokens of one variable at ``pos``; returns (pos, nu, last, sorted_flag)."""
    ok = True
    for t in range(tok_lo, tok_hi):
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
def _row(r, g, indptr, indices, data, var_ptr, var_ids, vpos, vorder, rank, unk_id, min_value,
         unk_mode, unique, order, max_tokens, truncate, seed, path, ids, vals, bitmap, jbuf):
    """Tokens of row ``r`` (global index ``g``) written from ``ids[0]``; returns the count."""
    lo, hi = indptr[r], indptr[r + 1]
    n_vars = vpos.size
    # -- which visiting path: already sorted by vpos?
    in_order = True
    last_p = -1
    m = 0
    for j in range(lo, hi):
        v = data[j]
        if v > 0 and v >= min_value:
            p = vpos[indices[j]]
            if p < last_p:
                in_order = False
            last_p = p
            m += 1
    pos = 0
    n_miss = 0
    total = 0.0
    ok = True
    last = -1
    # unknown entries are collected at the end of the buffer, growing downwards
    cap = ids.size
    if in_order:
        for j in range(lo, hi):
            v = data[j]
            if v > 0 and v >= min_value:
                c = indices[j]
                total += v
                t0, t1 = var_ptr[c], var_ptr[c + 1]
                if t0 == t1:
                    n_miss += 1
                    vals[cap - n_miss] = v
                else:
                    pos, last, o = _emit(ids, vals, pos, t0, t1, var_ids, v, ids, vals, 0, rank, last)
                    ok = ok and o
    else:
        use_bitmap = path == PATH_BITMAP or (path == PATH_AUTO and m * 8 >= bitmap.size)
        if use_bitmap:
            for j in range(lo, hi):
                v = data[j]
                if v > 0 and v >= min_value:
                    p = vpos[indices[j]]
                    bitmap[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
                    jbuf[p] = j
            for w in range(bitmap.size):
                word = bitmap[w]
                if word == 0:
                    continue
                bitmap[w] = 0
                for bit in range(64):
                    if (word >> np.uint64(bit)) & np.uint64(1):
                        p = (w << 6) + bit
                        j = jbuf[p]
                        v = data[j]
                        c = indices[j]
                        total += v
                        t0, t1 = var_ptr[c], var_ptr[c + 1]
                        if t0 == t1:
                            n_miss += 1
                            vals[cap - n_miss] = v
                        else:
                            pos, last, o = _emit(ids, vals, pos, t0, t1, var_ids, v, ids, vals,
                                                 0, rank, last)
                            ok = ok and o
        else:
            keys = np.empty(m, np.int64)
            k = 0
            for j in range(lo, hi):
                v = data[j]
                if v > 0 and v >= min_value:
                    keys[k] = (np.int64(vpos[indices[j]]) << 32) | np.int64(j - lo)
                    k += 1
            keys.sort()
            for k in range(m):
                j = lo + (keys[k] & 0xFFFFFFFF)
                v = data[j]
                c = indices[j]
                total += v
                t0, t1 = var_ptr[c], var_ptr[c + 1]
                if t0 == t1:
                    n_miss += 1
                    vals[cap - n_miss] = v
                else:
                    pos, last, o = _emit(ids, vals, pos, t0, t1, var_ids, v, ids, vals, 0, rank,
                                         last)
                    ok = ok and o
    nr = pos
    if not ok:  # interleaved multi-token variables: stable sort by genomic rank
        keys = np.empty(nr, np.int64)
        for i in range(nr):
            keys[i] = rank[ids[i]]
        o = np.argsort(keys, kind="mergesort")
        tid = ids[:nr][o]
        tv = vals[:nr][o]
        ids[:nr] = tid
        vals[:nr] = tv
    if unique and nr > 1:
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
    if unk_mode == UNK_REGION:
        for i in range(n_miss):  # in visiting order
            ids[n] = unk_id
            vals[n] = vals[cap - 1 - i]
            n += 1
    elif unk_mode == UNK_SET and nr == 0:
        ids[0] = unk_id
        vals[0] = total
        n = 1
    if n == 0:
        return 0
    state = rng_seed(seed, g)
    if max_tokens > 0 and n > max_tokens:
        if truncate == TRUNC_TOP:
            sel = np.argsort(-vals[:n], kind="mergesort")[:max_tokens]
        else:
            perm = np.arange(n)
            for i in range(max_tokens):
                state, d = rng_below(state, n - i)
                j = i + d
                tmp = perm[i]
                perm[i] = perm[j]
                perm[j] = tmp
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
def row_capacity(indptr, indices, data, var_ptr, min_value, unk_mode, blocks):
    """Upper bound of every row's token count (before merging and truncation)."""
    n_rows = indptr.size - 1
    cap = np.zeros(n_rows, np.int64)
    for b in prange(blocks.size - 1):
        for r in range(blocks[b], blocks[b + 1]):
            c = 0
            miss = 0
            for j in range(indptr[r], indptr[r + 1]):
                v = data[j]
                if v > 0 and v >= min_value:
                    k = var_ptr[indices[j] + 1] - var_ptr[indices[j]]
                    c += k
                    if k == 0:
                        miss += 1
            # room for the <unk> entries while a row is built (kept at the buffer end)
            c += miss
            if c == 0 and unk_mode == UNK_SET:
                c = 1
            cap[r] = c
    return cap


@njit(**NJIT_PARALLEL)
def cell_tokens(indptr, indices, data, var_ptr, var_ids, vpos, vorder, rank, unk_id, min_value,
                unk_mode, unique, order, max_tokens, truncate, seed, row0, path, blocks,
                cap_offsets):
    """Fill pass: every row's tokens at ``cap_offsets[r]``; returns (ids, vals, lengths).

    ``cap_offsets`` is the prefix sum of :func:`row_capacity`. Rows keep their slot; the caller
    compacts when any row came out shorter than its capacity.
    """
    n_rows = indptr.size - 1
    total = cap_offsets[n_rows]
    ids = np.empty(total, np.int64)
    vals = np.empty(total, np.float64)
    lengths = np.zeros(n_rows, np.int64)
    n_vars = vpos.size
    nwords = (n_vars + 63) >> 6
    for b in prange(blocks.size - 1):
        bitmap = np.zeros(nwords, np.uint64)
        jbuf = np.empty(n_vars if path != PATH_KEYSORT else 0, np.int64)
        for r in range(blocks[b], blocks[b + 1]):
            a, z = cap_offsets[r], cap_offsets[r + 1]
            lengths[r] = _row(r, row0 + r, indptr, indices, data, var_ptr, var_ids, vpos, vorder,
                              rank, unk_id, min_value, unk_mode, unique, order, max_tokens,
                              truncate, seed, path, ids[a:z], vals[a:z], bitmap, jbuf)
    return ids, vals, lengths


@njit(**NJIT_PARALLEL)
def compact(ids, vals, cap_offsets, lengths, out_offsets, blocks, out_ids, out_vals):
    """Copy each row's first ``lengths[r]`` items from its capacity slot to ``out_offsets[r]``."""
    for b in prange(blocks.size - 1):
        for r in range(blocks[b], blocks[b + 1]):
            a = cap_offsets[r]
            o = out_offsets[r]
            for i in range(lengths[r]):
                out_ids[o + i] = ids[a + i]
                out_vals[o + i] = vals[a + i]


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


@njit(**NJIT)
def parse_fragments(buf):
    """Parse tab-separated ``chrom start end barcode [count ...]`` lines of a byte block.

    Skips blank and ``#`` lines; a missing count column counts 1. Returns
    ``(chrom_s, chrom_e, starts, ends, bc_s, bc_e, counts, status, bad_line)`` where
    ``bad_line`` is the 0-based line (within the block) of the first problem.
    """
    n = buf.size
    nl = 1
    for i in range(n):
        if buf[i] == 10:
            nl += 1
    cs = np.empty(nl, np.int64)
    ce = np.empty(nl, np.int64)
    st = np.empty(nl, np.int64)
    en = np.empty(nl, np.int64)
    bs = np.empty(nl, np.int64)
    be = np.empty(nl, np.int64)
    cnt = np.empty(nl, np.int64)
    k = 0
    line = -1
    pos = 0
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
        fs = np.empty(5, np.int64)
        fe = np.empty(5, np.int64)
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
            return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], FRAG_COLUMNS, line
        s = _int_field(buf, fs[1], fe[1])
        if s < 0:
            return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], FRAG_START, line
        x = _int_field(buf, fs[2], fe[2])
        if x < 0:
            return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], FRAG_END, line
        if x < s:
            return (cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k],
                    FRAG_END_BEFORE_START, line)
        c = 1
        if nf >= 5:
            c = _int_field(buf, fs[4], fe[4])
            if c < 0:
                return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], FRAG_COUNT, line
        if fe[0] == fs[0] or fe[3] == fs[3]:
            return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], FRAG_COLUMNS, line
        cs[k] = fs[0]
        ce[k] = fe[0]
        st[k] = s
        en[k] = x
        bs[k] = fs[3]
        be[k] = fe[3]
        cnt[k] = c
        k += 1
        pos = nxt
    return cs[:k], ce[:k], st[:k], en[:k], bs[:k], be[:k], cnt[:k], FRAG_OK, -1


@njit(**NJIT)
def spans_to_matrix(buf, s, e, width):
    """Byte spans as rows of a zero-padded ``(n, width)`` uint8 matrix (view it as ``S{width}``)."""
    out = np.zeros((s.size, width), np.uint8)
    for i in range(s.size):
        for k in range(e[i] - s[i]):
            out[i, k] = buf[s[i] + k]
    return out
