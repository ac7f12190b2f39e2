"""Numba parser of fragment files (``chrom start end barcode [count]``), one
byte block at a time: arrays of byte spans and integers out, a status code for the first bad line;
and the fold of (cell, region) pair counts into a CSR matrix (:func:`add_pairs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT


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
FRAG_MIXED = 7  # a tab and a space among the first five columns of one line


@njit(**NJIT)
def _parse_line(buf, pos, n, fs, fe):
    """Any line, as :func:`parse_fragments` reads it: ``(start, end,
    count, next, status)`` with the spans in ``fs``/``fe``; ``next`` is ``-(next line)`` for a
    blank or ``#`` line; ``status`` a ``FRAG_*`` code."""
    e = pos
    while e < n and buf[e] != 10:
        e += 1
    nxt = e + 1
    if e > pos and buf[e - 1] == 13:
        e -= 1
    if e == pos or buf[pos] == 35:
        return 0, 0, 0, -nxt, FRAG_OK
    sep = 9  # the line's first tab or space decides its separator (a line with neither: tab)
    for i in range(pos, e):
        if buf[i] == 9 or buf[i] == 32:
            sep = buf[i]
            break
    nf = 0
    if sep == 32:  # runs of spaces count as one, leading and trailing ones too (gtars' rule)
        a = -1
        i = pos
        while i <= e and nf < 5:
            if i == e or buf[i] == 32:
                if a >= 0:
                    fs[nf] = a
                    fe[nf] = i
                    nf += 1
                    a = -1
            elif buf[i] == 9:
                return 0, 0, 0, 0, FRAG_MIXED
            elif a < 0:
                a = i
            i += 1
    else:  # one tab between two columns, an empty column is an error
        a = pos
        for i in range(pos, e + 1):
            if i == e or buf[i] == 9:
                fs[nf] = a
                fe[nf] = i
                nf += 1
                a = i + 1
                if nf >= 5:
                    break
            elif buf[i] == 32:
                return 0, 0, 0, 0, FRAG_MIXED
    if nf < 4:
        return 0, 0, 0, 0, FRAG_COLUMNS
    s = _int_field(buf, fs[1], fe[1])
    if s < 0:
        return 0, 0, 0, 0, FRAG_START
    x = _int_field(buf, fs[2], fe[2])
    if x < 0:
        return 0, 0, 0, 0, FRAG_END
    if x < s:
        return 0, 0, 0, 0, FRAG_END_BEFORE_START
    cnt = _int_field(buf, fs[4], fe[4]) if nf >= 5 else 1
    if cnt < 0:
        return 0, 0, 0, 0, FRAG_COUNT
    if fe[0] == fs[0] or fe[3] == fs[3]:
        return 0, 0, 0, 0, FRAG_COLUMNS
    ctrl = False
    for i in range(fs[3], fe[3]):
        ctrl |= (buf[i] < 32) | (buf[i] == 127)
    if ctrl:
        return 0, 0, 0, 0, FRAG_BARCODE
    return s, x, cnt, nxt, FRAG_OK


@njit(**NJIT)
def parse_fragments(buf):
    """Parse ``chrom start end barcode [count ...]`` lines of a byte block.

    A line's first tab or space decides its separator, as in BED (:mod:`genotok.kernels.parse`):
    one tab between columns, or runs of spaces (gtars splits fragment lines on any whitespace;
    its own test files use spaces). A space among the first five tab-separated columns, or a
    tab among the first five space-separated ones, is an error (``FRAG_MIXED``): gtars would
    cut such a line (a barcode ``AAAC 1``, say) where the tabs do not, so the two would count
    different cells; refused rather than guessed. Skips blank and ``#`` lines; a missing count column counts 1; a barcode with a control
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
        s, x, c, nxt, status = _parse_line(buf, pos, n, fs, fe)
        if status != FRAG_OK:
            break
        if nxt < 0:  # a blank or '#' line
            pos = -nxt
            continue
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
def add_pairs(indptr, indices, data, keys, weights, n_rows, n_cols):
    """Fold weighted ``(row, column)`` pairs into a canonical CSR matrix (sorted, distinct
    columns per row; equal pairs summed; a summed 0 is kept).

    ``indptr``/``indices``/``data`` is the canonical matrix so far (``indptr.size - 1 <=
    n_rows`` rows, the missing ones empty); ``keys[k] = row * n_cols + column`` with
    ``weights[k]``. The caller has checked ``0 <= keys < n_rows * n_cols``, ``indices`` in
    ``[0, n_cols)`` and ``indptr`` (it made them). The pairs are bucketed by row (a counting
    sort), each row's new columns sorted (small arrays, in cache; a fragment file's come
    nearly sorted) and merged with the row's old ones, equal columns summed: no dense
    accumulator over the columns, whose random access missed the cache at 1M columns (at
    50M fragments x 1M peaks the fold took 7.6 s with one). Returns ``(indptr, indices, data,
    nnz)`` whose ``indices``/``data`` may be longer than ``nnz`` (the caller trims them).
    Oracle: ``np.unique`` of the keys and ``np.bincount``
    (``tests/singlecell/test_fragmatrix.py``).
    """
    n_old = indptr.size - 1
    start = np.zeros(n_rows + 1, np.int64)
    for k in range(keys.size):
        start[keys[k] // n_cols + 1] += 1
    for r in range(n_rows):
        start[r + 1] += start[r]
    cols = np.empty(keys.size, np.int64)
    wts = np.empty(keys.size, np.float64)
    fill = start[:-1].copy()
    for k in range(keys.size):
        r = keys[k] // n_cols
        cols[fill[r]] = keys[k] - r * n_cols
        wts[fill[r]] = weights[k]
        fill[r] += 1
    cap = indices.size + keys.size
    out_ptr = np.zeros(n_rows + 1, np.int64)
    out_idx = np.empty(cap, indices.dtype)  # int32 columns halve the matrix's index memory
    out_dat = np.empty(cap, np.float64)
    o = 0
    for r in range(n_rows):
        a, b = start[r], start[r + 1]
        seg = cols[a:b]
        sorted_ = True
        for q in range(1, b - a):
            if seg[q] < seg[q - 1]:
                sorted_ = False
                break
        perm = np.arange(b - a) if sorted_ else np.argsort(seg)
        i = indptr[r] if r < n_old else 0
        i_end = indptr[r + 1] if r < n_old else 0
        q = 0
        while i < i_end or q < b - a:
            if q >= b - a or (i < i_end and indices[i] < seg[perm[q]]):
                c = np.int64(indices[i])
                v = data[i]
                i += 1
            else:
                c = seg[perm[q]]
                v = wts[a + perm[q]]
                q += 1
                if i < i_end and indices[i] == c:
                    v = data[i] + v
                    i += 1
            while q < b - a and seg[perm[q]] == c:
                v += wts[a + perm[q]]
                q += 1
            out_idx[o] = c
            out_dat[o] = v
            o += 1
        out_ptr[r + 1] = o
    return out_ptr, out_idx, out_dat, o
