"""The two kernels of the tiny-input path (:mod:`genotok._small`): a call on a few regions
pays two numba dispatches of few arguments (well under a microsecond each) instead of a dozen
NumPy calls and Python work per region.

- :func:`scan` reads the bytes of a short plain BED file (``kind=0``) or of region strings
  joined by newlines (``kind=1``) into starts, ends and the runs of equal chromosome names,
  taking only what :func:`genotok._small.read_plain` and the region-string pattern take (a
  status other than 0: the caller takes another path; it may refuse more, never less);
- :func:`hits` finds each query's hits in the sweep index as global keys
  (``code << 40 | coordinate``: :func:`genotok._small._keys`) by two binary searches, in
  index order, with ``<unk>`` as the ``unknown`` mode asks.

Their oracle is the plain-Python form of the same path (``genotok._small``, used while these
are not compiled) and ``tests/naive_tokenizer.py``: ``tests/test_small.py`` compares all three.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT
from .modes import Unknown

_SHIFT = 40
_DIGITS = 15
_LIMIT = 1 << _SHIFT  # a coordinate from here on does not fit a key: not for this path
#: scan's status: 0 taken; anything else: not for this path
OK, REFUSED = 0, 1
UNK_SET, UNK_REGION = int(Unknown.SET), int(Unknown.REGION)


@njit(inline="always", **NJIT)
def _digits(buf, p, n, stop):
    """(value, position after the digits) of 1 to 15 ASCII digits at ``p`` followed by the byte
    ``stop`` (or, for ``stop == 10``, the end of the buffer or a tab); (-1, p) otherwise."""
    v = 0
    q = p
    while q < n and 48 <= buf[q] <= 57:
        v = v * 10 + (buf[q] - 48)
        q += 1
    if q == p or q - p > _DIGITS or v >= _LIMIT:
        return -1, p
    if q < n and buf[q] != stop and not (stop == 10 and buf[q] == 9):
        return -1, p
    if q == n and stop != 10:
        return -1, p
    return v, q


@njit(**NJIT)
def scan(buf, kind):
    """``(status, rows, runs, r, in_order)`` of ``buf``: ``rows`` (2, n) int64 starts and
    ends; ``runs[:, :r]`` (int64): the first line of each run of equal names and its name's
    byte span; ``in_order``: the lines are sorted by (name bytes, start) (gtars' order for a
    file)."""
    n = buf.size
    lines = 0
    for i in range(n):
        c = buf[i]
        if c == 10:
            lines += 1
        elif c >= 128 or (c < 32 and c != 9):  # a CR, or a control byte the parser refuses
            return REFUSED, np.empty((2, 0), np.int64), np.empty((3, 0), np.int64), 0, False
    if n and buf[n - 1] != 10:
        lines += 1
    rows = np.empty((2, lines), np.int64)
    runs = np.empty((3, lines), np.int64)
    bad = (REFUSED, rows, runs, 0, False)
    if n == 0:
        return bad
    r = 0
    k = 0
    p = 0
    pa = -1
    pb = -1
    in_order = True
    while p < n:
        a = p
        if kind == 0:  # a BED line: name<TAB>start<TAB>end[<TAB>...]
            while p < n and 33 <= buf[p] <= 126:
                p += 1
            if p == a or p >= n or buf[p] != 9:
                return bad
            b = p
            c0 = buf[a]
            if c0 == 35:  # '#'
                return bad
            if (b - a >= 5 and c0 == 116 and buf[a + 1] == 114 and buf[a + 2] == 97
                    and buf[a + 3] == 99 and buf[a + 4] == 107):  # track
                return bad
            if (b - a >= 7 and c0 == 98 and buf[a + 1] == 114 and buf[a + 2] == 111
                    and buf[a + 3] == 119 and buf[a + 4] == 115 and buf[a + 5] == 101
                    and buf[a + 6] == 114):  # browser
                return bad
            s, p = _digits(buf, p + 1, n, 9)
            if s < 0:
                return bad
            e, p = _digits(buf, p + 1, n, 10)
            if e < 0:
                return bad
            while p < n and buf[p] != 10:  # the rest of the line (ASCII, checked above)
                p += 1
        else:  # a region string: name:start-end, the name without '-', ':', '_'
            while p < n and 33 <= buf[p] <= 126 and buf[p] != 45 and buf[p] != 58 \
                    and buf[p] != 95:
                p += 1
            if p == a or p >= n or buf[p] != 58:
                return bad
            b = p
            s, p = _digits(buf, p + 1, n, 45)
            if s < 0:
                return bad
            e, p = _digits(buf, p + 1, n, 10)
            if e < 0 or (p < n and buf[p] != 10) or p == n - 1:
                return bad  # (a string of its own holding a newline, or ending with one)
        if s > e:
            return bad
        rows[0, k] = s
        rows[1, k] = e
        same = pa >= 0 and b - a == pb - pa
        if same:
            for j in range(b - a):
                if buf[a + j] != buf[pa + j]:
                    same = False
                    break
        if same:
            if s < rows[0, k - 1]:
                in_order = False
        else:
            if pa >= 0 and in_order:  # a new name: after the previous one, byte by byte?
                m = min(b - a, pb - pa)
                j = 0
                while j < m and buf[a + j] == buf[pa + j]:
                    j += 1
                if (buf[a + j] < buf[pa + j]) if j < m else (b - a < pb - pa):
                    in_order = False
            runs[0, r] = k
            runs[1, r] = a
            runs[2, r] = b
            r += 1
            pa = a
            pb = b
        k += 1
        p += 1  # past the newline
    return OK, rows, runs, r, in_order


@njit(**NJIT)
def hits(rows, heads, codes, keys, unk, mode):
    """The ids of the queries ``rows`` (starts, ends) whose chromosome codes are ``codes[j]``
    from line ``heads[j]`` to the next head (or the last line), in the sweep index ``keys`` (4, N): global start
    keys, global running-max end keys, ends, ids. ``mode``: an :class:`~.modes.Unknown` (no
    ``<unk>``, one ``<unk>`` for each query with no hit, one for a set with no hit). ``(status, ids)``: a
    status other than 0 when a start is negative or after its end, or an end does not fit a
    key (from arrays: :func:`scan` refuses them itself)."""
    gstart = keys[0]
    gmax = keys[1]
    ends = keys[2]
    ids = keys[3]
    n = rows.shape[1]
    for q in range(n):
        if rows[0, q] < 0 or rows[0, q] > rows[1, q] or rows[1, q] >= _LIMIT:
            return REFUSED, np.empty(0, np.int64)
    lo = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    total = 0
    for j in range(codes.size):
        base = codes[j] << _SHIFT
        stop = heads[j + 1] if j + 1 < codes.size else n
        for q in range(heads[j], stop):
            qs = rows[0, q]
            a = np.searchsorted(gmax, base + qs, side="right")
            b = np.searchsorted(gstart, base + rows[1, q], side="left")
            lo[q] = a
            hi[q] = b
            c = 0
            for x in range(a, b):
                if ends[x] > qs:
                    c += 1
            total += c if (c or mode != UNK_REGION) else 1
    if total == 0 and mode == UNK_SET:
        out = np.empty(1, np.int64)
        out[0] = unk
        return OK, out
    out = np.empty(total, np.int64)
    k = 0
    for q in range(n):
        qs = rows[0, q]
        k0 = k
        for x in range(lo[q], hi[q]):
            if ends[x] > qs:
                out[k] = ids[x]
                k += 1
        if k == k0 and mode == UNK_REGION:
            out[k] = unk
            k += 1
    return OK, out


def warmup() -> None:
    """Compile both kernels on tiny inputs (the dtypes :mod:`genotok._small` passes)."""
    buf = np.frombuffer(b"chr1\t1\t5\n", np.uint8)
    scan(buf, 0)
    status, rows, runs, r, _ = scan(np.frombuffer(b"chr1:1-5", np.uint8), 1)
    keys = np.zeros((4, 1), np.int64)
    hits(rows, runs[0, :r], np.zeros(1, np.int64), keys, 0, UNK_REGION)
