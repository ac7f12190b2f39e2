"""Kernels for building universes: arrays in, arrays out. No I/O, no Python objects, no validation.

Every kernel takes arrays already sorted by ``(code, position)`` (the callers in
:mod:`genotok.build` sort and validate) and writes into caller-allocated outputs of the input's
length (a merge or a compaction never grows), returning how many rows it wrote.

- :func:`is_sorted`: whether rows are already in (code, position) order (skips a sort).
- :func:`merge_sorted`: the ``bedtools merge -d min_gap`` rule on regions sorted by
  (code, start): a region joins the running one when it is on the same chromosome and
  ``start - running_end <= min_gap`` (so touching regions merge when ``min_gap >= 0``).
- :func:`compact_events`: sum the coverage deltas of events at the same (code, position) and
  drop positions whose deltas cancel, so every kept position changes the coverage.
- :func:`runs_at_least`: sweep compacted events, emitting maximal runs of positions whose
  coverage is ``>= k`` (and at least ``min_width`` bp wide).
- :func:`bed_line_lengths` / :func:`fill_bed`: BED3 text in two passes (count, then fill).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT


@njit(**NJIT)
def is_sorted(codes, pos):
    """True when rows are in (code, pos) order."""
    for i in range(1, codes.size):
        if codes[i] < codes[i - 1] or (codes[i] == codes[i - 1] and pos[i] < pos[i - 1]):
            return False
    return True


@njit(**NJIT)
def merge_sorted(codes, starts, ends, min_gap, out_codes, out_starts, out_ends):
    """Merge regions sorted by (code, start); return the number of merged regions written."""
    n = codes.size
    if n == 0:
        return 0
    k = 0
    c = codes[0]
    s = starts[0]
    e = ends[0]
    for i in range(1, n):
        ci = codes[i]
        si = starts[i]
        if ci == c and si - e <= min_gap:
            if ends[i] > e:
                e = ends[i]
        else:
            out_codes[k] = c
            out_starts[k] = s
            out_ends[k] = e
            k += 1
            c = ci
            s = si
            e = ends[i]
    out_codes[k] = c
    out_starts[k] = s
    out_ends[k] = e
    return k + 1


@njit(**NJIT)
def compact_events(codes, pos, delta, out_codes, out_pos, out_delta):
    """Sum deltas of equal (code, pos) events (sorted); drop zero sums; return rows written."""
    n = codes.size
    k = 0
    i = 0
    while i < n:
        c = codes[i]
        p = pos[i]
        d = delta[i]
        j = i + 1
        while j < n and codes[j] == c and pos[j] == p:
            d += delta[j]
            j += 1
        if d != 0:
            out_codes[k] = c
            out_pos[k] = p
            out_delta[k] = d
            k += 1
        i = j
    return k


@njit(**NJIT)
def runs_at_least(codes, pos, delta, k, min_width, out_codes, out_starts, out_ends):
    """Maximal runs with coverage >= k from compacted events; return rows written.

    Coverage restarts at 0 on every chromosome (the events of complete intervals sum to 0
    there anyway). A run is kept when ``end - start >= min_width``.
    """
    m = 0
    cov = 0
    cur = -1
    run_start = 0
    for i in range(codes.size):
        c = codes[i]
        if c != cur:
            cov = 0
            cur = c
        before = cov >= k
        cov += delta[i]
        after = cov >= k
        if after and not before:
            run_start = pos[i]
        elif before and not after:
            if pos[i] - run_start >= min_width:
                out_codes[m] = c
                out_starts[m] = run_start
                out_ends[m] = pos[i]
                m += 1
    return m


@njit(**NJIT)
def _ndigits(x):
    d = 1
    while x >= 10:
        x //= 10
        d += 1
    return d


@njit(**NJIT)
def bed_line_lengths(codes, starts, ends, name_len, out):
    """out[i] = bytes of BED3 line i (``name TAB start TAB end NEWLINE``)."""
    for i in range(codes.size):
        out[i] = name_len[codes[i]] + _ndigits(starts[i]) + _ndigits(ends[i]) + 3


@njit(**NJIT)
def _put_int(buf, at, x, width):
    for j in range(width - 1, -1, -1):
        buf[at + j] = 48 + x % 10
        x //= 10


@njit(**NJIT)
def fill_bed(codes, starts, ends, names, name_off, line_off, buf):
    """Write BED3 line i at ``buf[line_off[i]:line_off[i + 1]]``."""
    for i in range(codes.size):
        at = line_off[i]
        c = codes[i]
        for j in range(name_off[c], name_off[c + 1]):
            buf[at] = names[j]
            at += 1
        buf[at] = 9
        at += 1
        w = _ndigits(starts[i])
        _put_int(buf, at, starts[i], w)
        at += w
        buf[at] = 9
        at += 1
        w = _ndigits(ends[i])
        _put_int(buf, at, ends[i], w)
        at += w
        buf[at] = 10


def warmup() -> None:
    """Compile every kernel on tiny inputs."""
    codes = np.array([0, 0, 1], np.int32)
    starts = np.array([0, 5, 2], np.int64)
    ends = np.array([5, 9, 4], np.int64)
    oc, os_, oe = np.empty(3, np.int32), np.empty(3, np.int64), np.empty(3, np.int64)
    is_sorted(codes, starts)
    merge_sorted(codes, starts, ends, 0, oc, os_, oe)
    delta = np.array([1, -1, 1], np.int64)
    od = np.empty(3, np.int64)
    compact_events(codes, starts, delta, oc, os_, od)
    runs_at_least(codes, starts, delta, 1, 0, oc, os_, oe)
    name_len = np.array([1, 1], np.int64)
    lens = np.empty(3, np.int64)
    bed_line_lengths(codes, starts, ends, name_len, lens)
    off = np.zeros(4, np.int64)
    np.cumsum(lens, out=off[1:])
    fill_bed(codes, starts, ends, np.frombuffer(b"ab", np.uint8), np.array([0, 1, 2], np.int64),
             off, np.empty(int(off[-1]), np.uint8))
