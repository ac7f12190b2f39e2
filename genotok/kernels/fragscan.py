"""One pass over a block of a fragment file: parse, name, search, count (numba, ``nogil``).

:func:`scan_fragments` reads the ``chrom start end barcode [count]`` lines of one byte block
(the checks and status codes of :func:`genotok.kernels.fragments.parse_fragments`), numbers
barcodes and chromosome names in two name tables that live across blocks (:func:`name_table`:
an open-addressing table of hashes over an arena of the names' bytes, so no block's buffer
is kept and no name is decoded per line; each table hashes with a random key of its own, so
a file cannot be crafted whose names all collide: the unkeyed hash, xor-ed bytes and a
rotation, was linear, and 16-byte printable barcodes with one hash came by the thousand,
each new one probing all the others), searches each fragment (or each of its two cut
sites) in the universe's sweep index and emits the ``(cell, column)`` pairs with their
weights, in one loop with no per-line array between the steps.

The search follows the overlap kernels' rule (:mod:`genotok.kernels.overlap`): for a query
``[qs, qe)`` the candidates are the sweep rows before the first start ``>= qe`` whose running
``maxend`` exceeds ``qs``; a candidate with ``end > qs`` passing the thresholds is a hit. A
cut site at ``p`` is the query ``[p, p + 1)``. The first start ``>= qe`` is galloped from the
previous query's answer on that chromosome (one cursor per chromosome and per site): fragment
files are sorted by position, so a query moves a few rows; an unsorted file gives the same
result, each query then costing O(log d) for a jump of d rows.

The chromosome table is filled with the universe's names first (name ``i`` is universe code
``i``), the barcode table with the allow-list (barcode ``i`` is cell ``i``): a name beyond
them is an unknown chromosome (no hit) or, with an allow-list, a dropped barcode. The caller
decodes each new name once (refusing non-UTF-8 at the line the table records).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .._config import NJIT

from .bits import (HIGH, LITTLE_ENDIAN, ONES, SPACES, below_space, digits_value, eq_bytes,
                   load_word, lowest_byte, newlines64, non_digits, specials64)
from .fragments import FRAG_OK, _parse_line
from .names import _final, _hash, _mix, _new_key, _round
from .modes import Counting, Overlap
from .overlap import _passes

MODE_INSERTION, MODE_PAIRED = int(Counting.INSERTION), int(Counting.PAIRED_INSERTION)
MODE_FRAGMENT = int(Counting.FRAGMENT)
OVERLAP_BEST = int(Overlap.BEST)


@njit(inline="always", **NJIT)
def _key(slots):
    """A table's hash key: the last element of its ``slots`` (past the probed ones)."""
    return np.uint64(slots[slots.size - 1])


@njit(inline="always", **NJIT)
def _digits(buf, p, n, stop):
    """The decimal number from ``p`` up to the byte ``stop``: ``(value, end)``; ``end`` -1
    when anything else comes first, nothing or more than 18 digits (the general parser then
    reads the line and says what is wrong)."""
    x = 0
    q = p
    while q < n and q - p <= 18:
        d = np.int64(buf[q]) - 48
        if d < 0 or d > 9:
            break
        x = x * 10 + d
        q += 1
    if q == p or q - p > 18 or q >= n or buf[q] != stop:
        return 0, -1
    return x, q


@njit(inline="always", **NJIT)
def _word_digits(buf, p, n, stop):
    """:func:`_digits` eight bytes at a time (two word loads and no branch per digit for up
    to 15 digits; a longer number, or one within 16 bytes of ``n``, takes the byte loop).
    The caller checked :data:`~genotok.kernels.bits.LITTLE_ENDIAN`."""
    if p + 16 > n:
        return _digits(buf, p, n, stop)
    x = load_word(buf, p)
    t = non_digits(x)
    if t:
        k = lowest_byte(t)
        if k == 0:
            return 0, -1
        v = digits_value(x, k)
        q = p + k
    else:
        y = load_word(buf, p + 8)
        t = non_digits(y)
        if not t:
            return _digits(buf, p, n, stop)
        k = lowest_byte(t)
        v = digits_value(x, 8)
        if k:
            v = v * _POW10[k] + digits_value(y, k)
        q = p + 8 + k
    if buf[q] != stop:
        return 0, -1
    return v, q


_POW10 = np.array([10 ** k for k in range(9)], np.int64)
_DELS = ONES * np.uint64(127)
_TABS = ONES * np.uint64(9)


@njit(**NJIT)
def _fast_line(buf, pos, n, fs, fe, key):
    """The common line, ``chrom\tstart\tend\tbarcode[\tcount]\n`` with nothing unusual,
    in one pass: ``(ok, start, end, count, next line, barcode hash)`` with the chromosome and
    barcode spans in ``fs[0]:fe[0]`` and ``fs[3]:fe[3]``, the barcode hashed with ``key``
    (the barcode table's). ``ok`` False sends the line to the
    general parser (headers, blank lines, CR, extra columns, space-separated lines, errors).
    On a little-endian machine a line ending at least 96 bytes before ``n`` is read in one
    window (:func:`_window_line`), else eight bytes at a time (:func:`_word_line`); the byte
    loop (:func:`_byte_line`) is the reference both are tested against.

    :func:`_run` writes these steps out in its loop rather than calling this: numba inlines
    one level of ``inline="always"`` but left the window reader a call when it sat inside
    an inlined reader (3/4 slower per line)."""
    ok = False
    s = x = cnt = nxt = 0
    h = np.uint64(0)
    if LITTLE_ENDIAN and pos + _WINDOW + 32 <= n:
        ok, s, x, cnt, nxt, h, ce, bs, be = _window_line(buf, pos, key)
        fs[0], fe[0], fs[3], fe[3] = pos, ce, bs, be
    if not ok:
        ok, s, x, cnt, nxt, h = _field_line(buf, pos, n, fs, fe, key)
    return ok, s, x, cnt, nxt, h


@njit(**NJIT)
def _field_line(buf, pos, n, fs, fe, key):
    """The readers a field at a time, for the lines :func:`_window_line` leaves: a call, not
    inlined (inlined beside it, their code slowed the common line by half)."""
    if LITTLE_ENDIAN and pos + 64 <= n:
        return _word_line(buf, pos, n, fs, fe, key)
    return _byte_line(buf, pos, n, fs, fe, key)


#: the bytes :func:`_window_line` looks at from a line's start (a longer line takes
#: :func:`_word_line`)
_WINDOW = 64


@njit(inline="always", **NJIT)
def _field_number(buf, a, b):
    """The decimal number ``buf[a:b]`` if it is 1 to 16 ASCII digits: ``(ok, value)`` from two
    word loads, with no branch (``ok`` False otherwise: the slower readers then say what it
    is). Reads ``buf[a:a + 16]``."""
    k = b - a
    ok = (k >= 1) & (k <= 16)
    k1 = min(max(k, 1), 8)  # the digits in the first word, the second's below
    k2 = min(max(k - 8, 1), 8)
    x = load_word(buf, a)
    y = load_word(buf, a + 8)
    ok &= (non_digits(x) & (HIGH >> np.uint64(8 * (8 - k1)))) == 0
    two = k > 8
    ok &= (not two) | ((non_digits(y) & (HIGH >> np.uint64(8 * (8 - k2)))) == 0)
    v = digits_value(x, k1)
    if two:
        v = v * _POW10[k2] + digits_value(y, k2)
    return ok, v


@njit(inline="always", **NJIT)
def _window_line(buf, pos, key):
    """:func:`_word_line` for a line of at most :data:`_WINDOW` bytes with no byte of note
    but its four (or three) tabs and its line end, found all at once: the eight words from
    ``pos`` are loaded at once (no load waits for the previous field's end, as in the
    field-by-field readers), their field-ending bytes gathered into one 64-bit mask by two
    vector compares (:func:`~genotok.kernels.bits.specials64`: bytes ``<= 0x20`` or 0x7f),
    the separators read off it lowest bit first, and every check folded
    into one flag (few branches); numbers of at most 16 digits (:func:`_field_number`).
    ``ok`` False for anything else (the caller then asks :func:`_word_line`). The caller
    checked ``pos + _WINDOW + 32 <= buf.size``. Returns :func:`_fast_line`'s values and
    the spans (chromosome end, barcode start and end) as values, not through ``fs``/``fe``:
    a store and reload per line on the way to the look-ups (0.01 CPU s on 5M lines)."""
    m = specials64(buf, pos)
    nl = newlines64(buf, pos)
    t0 = np.int64(trailing_zeros(m))  # 64 when none (cttz of 0 is defined: 64)
    m &= m - np.uint64(1)
    t1 = np.int64(trailing_zeros(m))
    m &= m - np.uint64(1)
    t2 = np.int64(trailing_zeros(m))
    m &= m - np.uint64(1)
    t3 = np.int64(trailing_zeros(m))
    m &= m - np.uint64(1)
    t4 = np.int64(trailing_zeros(m))
    stop = np.int64(trailing_zeros(nl))
    counted = stop != t3  # else the line ends after the barcode
    ok, s = _field_number(buf, pos + t0 + 1, pos + t1)
    ok2, x = _field_number(buf, pos + t1 + 1, pos + t2)
    ok3, cnt = _field_number(buf, pos + t3 + 1, pos + t4)
    a = pos + t2 + 1
    n = t3 - t2 - 1
    h = np.uint64(0)
    k = 0
    while k + 8 <= n:
        h = _round(h ^ load_word(buf, a + k), key)
        k += 8
    if k < n:
        h ^= load_word(buf, a + k) & ((np.uint64(1) << np.uint64(8 * (n - k))) - np.uint64(1))
    ok = ok & ok2 & (buf[pos] != 35) & (t0 > 0) & (buf[pos + t0] == 9) & \
        (buf[pos + t1] == 9) & (buf[pos + t2] == 9) & (buf[pos + stop] == 10)
    ok &= (x >= s) & ((not counted) | ok3)
    ok &= (stop < 64) & (n > 0) & ((not counted) | ((buf[pos + t3] == 9) & (t4 == stop)))
    cnt = cnt if counted else 1
    return ok, s, x, cnt, pos + stop + 1, _final(h, n, key), pos + t0, a, a + n


@njit(inline="always", **NJIT)
def _byte_line(buf, pos, n, fs, fe, key):
    """:func:`_fast_line` a byte at a time."""
    if buf[pos] == 35 or buf[pos] == 10 or buf[pos] == 9:
        return False, 0, 0, 0, 0, np.uint64(0)
    q = pos
    while q < n and buf[q] > 32:  # a space (or control byte) sends the line to the parser
        q += 1
    if q >= n or buf[q] != 9:
        return False, 0, 0, 0, 0, np.uint64(0)
    fs[0] = pos
    fe[0] = q
    s, q = _digits(buf, q + 1, n, 9)
    if q < 0:
        return False, 0, 0, 0, 0, np.uint64(0)
    x, q = _digits(buf, q + 1, n, 9)
    if q < 0 or x < s:
        return False, 0, 0, 0, 0, np.uint64(0)
    a = q + 1
    q = a
    h = np.uint64(0)
    ctrl = False
    while q < n:
        c = buf[q]
        if c == 9 or c == 10:
            break
        ctrl |= (c <= 32) | (c == 127)  # a space too: the parser says "mixed"
        h = _mix(h, q - a, c, key)
        q += 1
    if q == a or ctrl or q >= n:
        return False, 0, 0, 0, 0, np.uint64(0)
    fs[3] = a
    fe[3] = q
    cnt = 1
    if buf[q] == 9:
        cnt, q = _digits(buf, q + 1, n, 10)
        if q < 0:
            return False, 0, 0, 0, 0, np.uint64(0)
    return True, s, x, cnt, q + 1, _final(h, fe[3] - a, key)


@njit(inline="always", **NJIT)
def _word_line(buf, pos, n, fs, fe, key):
    """:func:`_byte_line` eight bytes at a time (SWAR, :mod:`genotok.kernels.bits`): the
    chromosome name and the barcode end at their first byte ``<= 0x20`` (or 0x7f in a
    barcode), found a word at a time; the barcode is hashed a word at a time, which is what
    :func:`~genotok.kernels.names._mix` does a byte at a time (byte ``k`` of a name xor-ed at
    bits ``8 * (k % 8)``, a round after every eighth byte), so the hash is the table's;
    the numbers as :func:`_word_digits`. Every load stays below ``n`` (a line too close to
    it goes to the general parser)."""
    b0 = buf[pos]
    if b0 == 35 or b0 == 10 or b0 == 9:
        return False, 0, 0, 0, 0, np.uint64(0)
    q = pos
    while True:  # the chromosome: up to the first byte <= 0x20
        if q + 8 > n:
            return False, 0, 0, 0, 0, np.uint64(0)
        w = load_word(buf, q)
        t = below_space(w) | eq_bytes(w, SPACES)
        if t:
            q += lowest_byte(t)
            break
        q += 8
    if buf[q] != 9:
        return False, 0, 0, 0, 0, np.uint64(0)
    fs[0] = pos
    fe[0] = q
    s, q = _word_digits(buf, q + 1, n, 9)
    if q < 0:
        return False, 0, 0, 0, 0, np.uint64(0)
    x, q = _word_digits(buf, q + 1, n, 9)
    if q < 0 or x < s:
        return False, 0, 0, 0, 0, np.uint64(0)
    a = q + 1
    q = a
    h = np.uint64(0)
    while True:  # the barcode: up to its tab or line end; any other byte <= 0x20 or 0x7f
        if q + 8 > n:  # sends the line to the parser
            return False, 0, 0, 0, 0, np.uint64(0)
        w = load_word(buf, q)
        t = below_space(w) | eq_bytes(w, SPACES) | eq_bytes(w, _DELS)
        if t:
            k = lowest_byte(t)
            if k:
                h ^= w & ((np.uint64(1) << np.uint64(8 * k)) - np.uint64(1))
            q += k
            break
        h = _round(h ^ w, key)
        q += 8
    c = buf[q]
    if q == a or (c != 9 and c != 10):
        return False, 0, 0, 0, 0, np.uint64(0)
    fs[3] = a
    fe[3] = q
    cnt = 1
    if c == 9:
        cnt, q = _word_digits(buf, q + 1, n, 10)
        if q < 0:
            return False, 0, 0, 0, 0, np.uint64(0)
    return True, s, x, cnt, q + 1, _final(h, fe[3] - a, key)


@njit(inline="always", **NJIT)
def _seek(a, lo, hi, x, at):
    """First index in ``[lo, hi)`` with ``a[i] >= x`` (``a`` sorted there), searched out from
    ``at``, the previous answer: a gallop forward or back, then a bisection. Inlined, no call:
    a call per cut site passing an array cost a reference count each."""
    if at < lo:
        at = lo
    if at > hi:
        at = hi
    if at < hi and a[at] < x:  # the answer is after at
        left = at + 1
        right = hi
        step = 1
        while True:
            probe = left + step - 1
            if probe >= hi:
                break
            if a[probe] >= x:
                right = probe
                break
            left = probe + 1
            step *= 2
    else:  # the answer is at or before at
        right = at
        left = lo
        step = 1
        while True:
            probe = right - step
            if probe < lo:
                break
            if a[probe] < x:
                left = probe + 1
                break
            right = probe
            step *= 2
    while left < right:
        mid = (left + right) >> 1
        if a[mid] < x:
            left = mid + 1
        else:
            right = mid
    return left


@njit(**NJIT)
def name_table():
    """An empty name table ``(slots, offsets, heads, arena, lines, n)``: name ``i`` is
    ``arena[offsets[i]:offsets[i + 1]]``, first seen at line ``lines[i]``, ``heads[i]`` its
    hash and its first :data:`HEAD` bytes as three words (zero past its end: a look-up
    compares a name of up to 24 bytes, a 10x barcode's 18, in the one 32-byte row the slot
    points to, with no load of the offsets or the arena waiting on it); the last element
    of ``slots`` is the table's random hash key (numba's generator, seeded from the system's
    entropy), the others a power of two of open-addressing slots.

    Examples
    --------
    >>> t = name_table()
    >>> t = add_names(np.frombuffer(b"chr1chr2", np.uint8), np.array([0, 4, 8]), *t)
    >>> t[-1], bytes(t[3][:t[1][t[-1]]])
    (2, b'chr1chr2')
    """
    slots = np.full(1024 + 1, -1, np.int64)
    slots[1024] = np.int64(_new_key())
    return (slots, np.zeros(65, np.int64), np.zeros((64, 4), np.uint64),
            np.empty(1024, np.uint8), np.zeros(64, np.int64), 0)


#: the bytes of a name kept beside its hash in the table's ``heads`` (three words)
HEAD = 24
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(inline="always", **NJIT)
def _low_bytes(k):
    """A mask of the low ``k`` bytes of a word (``k`` clipped to 0..8)."""
    k = min(max(k, 0), 8)
    return (_ALL >> np.uint64((64 - 8 * k) & 63)) if k > 0 else np.uint64(0)


@njit(inline="always", **NJIT)
def _head(buf, a, n):
    """The first :data:`HEAD` bytes of ``buf[a:a + n]`` as three little-endian words, zero
    past ``n``: three word loads when they stay inside ``buf``, else byte by byte."""
    if LITTLE_ENDIAN and a + HEAD <= buf.size:
        return (load_word(buf, a) & _low_bytes(n), load_word(buf, a + 8) & _low_bytes(n - 8),
                load_word(buf, a + 16) & _low_bytes(n - 16))
    w0 = w1 = w2 = np.uint64(0)
    for k in range(min(n, HEAD)):
        v = np.uint64(buf[a + k]) << np.uint64(8 * (k & 7))
        if k < 8:
            w0 |= v
        elif k < 16:
            w1 |= v
        else:
            w2 |= v
    return w0, w1, w2


@njit(inline="always", **NJIT)
def _lookup(buf, a, b, h, w0, w1, w2, slots, off, heads, arena):
    """``(name, slot)`` of ``buf[a:b]`` (hash ``h``, :func:`_head` ``w0, w1, w2``: the caller
    reads them, a call nested in an inlined function is not inlined); name -1 and the empty
    slot to fill when absent. A probe reads the slot, then the name's row of ``heads`` (its
    hash and first bytes) and its two offsets at once; the arena only for the bytes of a
    name past :data:`HEAD`."""
    mask = slots.size - 2  # the last element is the key
    slot = np.int64(h & np.uint64(mask))
    n = b - a
    while slots[slot] >= 0:
        c = slots[slot]
        if (heads[c, 0] == h) & (heads[c, 1] == w0) & (heads[c, 2] == w1) & \
                (heads[c, 3] == w2) & (off[c + 1] - off[c] == n):
            if n <= HEAD or _equal(arena, off[c] + HEAD, buf, a + HEAD, n - HEAD):
                return c, slot
        slot = (slot + 1) & mask
    return -1, slot


@njit(inline="always", **NJIT)
def _equal(x, i, y, j, n):
    """Whether ``x[i:i + n] == y[j:j + n]``: eight bytes at a time while eight remain (the
    loads stay inside both spans), then byte by byte."""
    k = 0
    if LITTLE_ENDIAN:
        while k + 8 <= n:
            if load_word(x, i + k) != load_word(y, j + k):
                return False
            k += 8
    while k < n:
        if x[i + k] != y[j + k]:
            return False
        k += 1
    return True


@njit(inline="always", **NJIT)
def _fits(slots, off, heads, arena, n, length):
    """Whether one more name of ``length`` bytes fits the table without growing it."""
    return n + 1 < heads.shape[0] and off[n] + length <= arena.size and \
        2 * (n + 1) <= slots.size - 1


@njit(inline="always", **NJIT)
def _put(buf, a, b, h, w0, w1, w2, slot, line, slots, off, heads, arena, lines, n):
    """Add ``buf[a:b]`` (hash ``h``, first seen at ``line``) as name ``n`` in ``slot``; the
    caller checked :func:`_fits`."""
    used = off[n]
    for k in range(b - a):
        arena[used + k] = buf[a + k]
    off[n + 1] = used + (b - a)
    heads[n, 0] = h
    heads[n, 1] = w0
    heads[n, 2] = w1
    heads[n, 3] = w2
    lines[n] = line
    slots[slot] = n


@njit(**NJIT)
def _grown(slots, off, heads, arena, lines, n, length):
    """The table's arrays with room for one more name of ``length`` bytes (new arrays where
    they had to grow; the slots rehashed at four times the size to keep the load below 1/2)."""
    if n + 1 >= heads.shape[0]:
        cap = 2 * heads.shape[0]
        o2 = np.zeros(cap + 1, np.int64)
        o2[:n + 1] = off[:n + 1]
        h2 = np.zeros((cap, 4), np.uint64)
        h2[:n] = heads[:n]
        l2 = np.zeros(cap, np.int64)
        l2[:n] = lines[:n]
        off, heads, lines = o2, h2, l2
    if off[n] + length > arena.size:
        a2 = np.empty(max(2 * arena.size, off[n] + length), np.uint8)
        a2[:off[n]] = arena[:off[n]]
        arena = a2
    if 2 * (n + 1) > slots.size - 1:
        mask = 4 * (slots.size - 1) - 1
        key = slots[slots.size - 1]
        slots = np.full(mask + 2, -1, np.int64)
        slots[mask + 1] = key
        for c in range(n):
            t = np.int64(heads[c, 0] & np.uint64(mask))
            while slots[t] >= 0:
                t = (t + 1) & mask
            slots[t] = c
    return slots, off, heads, arena, lines


@njit(**NJIT)
def add_names(buf, bounds, slots, off, heads, arena, lines, n):
    """Add the names ``buf[bounds[i]:bounds[i + 1]]`` (a repeated one once) to a table
    (:func:`name_table`); returns the table. Fills the tables with known names first.

    Examples
    --------
    >>> t = add_names(np.frombuffer(b"AAC", np.uint8), np.array([0, 1, 2, 3]), *name_table())
    >>> t[-1]
    2
    """
    for i in range(bounds.size - 1):
        _, slots, off, heads, arena, lines, n = _intern(buf, bounds[i], bounds[i + 1], 0, slots,
                                                        off, heads, arena, lines, n)
    return slots, off, heads, arena, lines, n


@njit(**NJIT)
def _intern(buf, a, b, line, slots, off, heads, arena, lines, n):
    """``(id, table…)`` of the name ``buf[a:b]`` in a table (:func:`name_table`'s arrays and
    ``n``), added as first seen at ``line`` when the table lacks it (grown if it must)."""
    h = _hash(buf, a, b, _key(slots))
    w0, w1, w2 = _head(buf, a, b - a)
    c, slot = _lookup(buf, a, b, h, w0, w1, w2, slots, off, heads, arena)
    if c >= 0:
        return c, slots, off, heads, arena, lines, n
    if not _fits(slots, off, heads, arena, n, b - a):
        slots, off, heads, arena, lines = _grown(slots, off, heads, arena, lines, n, b - a)
        c, slot = _lookup(buf, a, b, h, w0, w1, w2, slots, off, heads, arena)
    _put(buf, a, b, h, w0, w1, w2, slot, line, slots, off, heads, arena, lines, n)
    return n, slots, off, heads, arena, lines, n + 1


@njit(inline="always", **NJIT)
def _hits(qs, qe, lo, hi, chrom_lo, starts, ends, maxend, ids, min_overlap, frac_q, frac_r,
          overlap, out, k):
    """Ids of the rows ``< hi`` hit by ``[qs, qe)`` into ``out[k:]`` (by descending row; one,
    the largest overlap's, with ``overlap`` :data:`~.modes.Overlap.BEST`);
    returns the new ``k``, counting on past the end of ``out`` (the caller grows it and asks
    again). ``hi`` is the first row of the chromosome with ``start >= qe``."""
    best_bp = -1
    best_id = 0
    j = hi - 1
    while j >= chrom_lo and maxend[j] > qs:
        if ends[j] > qs:
            bp = _passes(qs, qe, starts[j], ends[j], min_overlap, frac_q, frac_r)
            if bp >= 0:
                if overlap == OVERLAP_BEST:
                    if bp > best_bp or (bp == best_bp and ids[j] < best_id):
                        best_bp = bp
                        best_id = ids[j]
                else:
                    if k < out.size:
                        out[k] = ids[j]
                    k += 1
        j -= 1
    if overlap == OVERLAP_BEST and best_bp >= 0:
        if k < out.size:
            out[k] = best_id
        k += 1
    return k


# statuses of _run beyond the FRAG_* codes (>= 0): an array must grow before the line is read
_GROW_CHROMS, _GROW_CELLS, _GROW_FOUND, _GROW_OUT = -1, -2, -3, -4


@njit(**NJIT)
def _run(buf, pos, line, max_lines, cslots, coff, chash, carena, cline, nc, bslots, boff,
         bhash, barena, bline, nb, n_known_chroms, n_allow, nfrag, missed, cursors, chrom_ptr,
         starts, ends, maxend, ids, min_overlap, frac_q, frac_r, overlap, mode, left, right, use_count,
         miss_col, n_cols, keys, weights, m, found, fs, fe):
    """The line loop of :func:`scan_fragments`. No array is replaced in it (numba would count
    references on every line): when a table, ``found`` or the pair arrays are full it stops
    before the line with a ``_GROW_*`` status and the size it needs, and is called again.
    Returns ``(pos, line, m, nc, nb, status, need)``; ``line`` is the line at ``pos``, or the
    bad line."""
    n = buf.size
    prev_c = -1
    pcs = 0
    pce = 0
    done = 0
    bkey = _key(bslots)
    ckey = _key(cslots)
    while pos < n and done < max_lines:
        win = False  # _fast_line, written out (see there)
        cb = ba = bb = 0
        if LITTLE_ENDIAN and pos + _WINDOW + 32 <= n:
            win, s, x, cnt, nxt, bh, cb, ba, bb = _window_line(buf, pos, bkey)
        ok = win
        if not ok:
            ok, s, x, cnt, nxt, bh = _field_line(buf, pos, n, fs, fe, bkey)
        if not ok:
            s, x, cnt, nxt, status = _parse_line(buf, pos, n, fs, fe)
            if status != FRAG_OK:
                return pos, line, m, nc, nb, status, 0
            if nxt < 0:  # a blank or '#' line
                pos = -nxt
                line += 1
                done += 1
                continue
            bh = _hash(buf, fs[3], fe[3], bkey)
        if win:
            ca = pos
        else:  # the spans of the slower readers
            ca, cb, ba, bb = fs[0], fe[0], fs[3], fe[3]
        # the chromosome: the previous line's, else the table's
        a, b = ca, cb
        same = prev_c >= 0 and b - a == pce - pcs and _equal(buf, a, buf, pcs, b - a)
        if not same:
            h = _hash(buf, a, b, ckey)
            w0, w1, w2 = _head(buf, a, b - a)
            c, slot = _lookup(buf, a, b, h, w0, w1, w2, cslots, coff, chash, carena)
            if c < 0:
                if not _fits(cslots, coff, chash, carena, nc, b - a):
                    return pos, line, m, nc, nb, _GROW_CHROMS, b - a
                _put(buf, a, b, h, w0, w1, w2, slot, line, cslots, coff, chash, carena, cline,
                     nc)
                c = nc
                nc += 1
            elif cline[c] < 0:  # a known name's first line (the caller set -1)
                cline[c] = line
            prev_c, pcs, pce = c, a, b
        a, b = ba, bb
        w0, w1, w2 = _head(buf, a, b - a)
        cell, slot = _lookup(buf, a, b, bh, w0, w1, w2, bslots, boff, bhash, barena)
        if cell < 0:
            if not _fits(bslots, boff, bhash, barena, nb, b - a):
                return pos, line, m, nc, nb, _GROW_CELLS, b - a
            _put(buf, a, b, bh, w0, w1, w2, slot, line, bslots, boff, bhash, barena, bline, nb)
            cell = nb
            nb += 1
        if n_allow >= 0 and cell >= n_allow:  # not on the allow-list
            pos = nxt
            line += 1
            done += 1
            continue
        code = prev_c if prev_c < n_known_chroms else -1
        k = 0
        if code >= 0:
            lo = chrom_ptr[code]
            hi_c = chrom_ptr[code + 1]
            if mode == MODE_FRAGMENT:
                at = cursors[0, code]
                # the common fragment of a sorted file: the cursor stays the first row
                # starting at or after x, and no row before it reaches past s (maxend is
                # their running maximum): no hit, and _seek and _hits are skipped (three
                # loads, one branch; written out: inlined, a helper taking the arrays cost
                # 0.04 CPU s on 5M fragments where this saves 0.03)
                if not (lo < at < hi_c and starts[at - 1] < x <= starts[at]
                        and maxend[at - 1] <= s):
                    hi = _seek(starts, lo, hi_c, x, at)
                    cursors[0, code] = hi
                    k = _hits(s, x, lo, hi, lo, starts, ends, maxend, ids, min_overlap,
                              frac_q, frac_r, overlap, found, 0)
            else:
                for side in range(2):
                    p = s + left if side == 0 else x - 1 + right
                    at = cursors[side, code]
                    if p < 0 or (lo < at < hi_c and starts[at - 1] <= p < starts[at]
                                 and maxend[at - 1] <= p):  # as above, for [p, p + 1)
                        continue
                    hi = _seek(starts, lo, hi_c, p + 1, at)
                    cursors[side, code] = hi
                    k0 = k
                    k = _hits(p, p + 1, lo, hi, lo, starts, ends, maxend, ids, min_overlap,
                              frac_q, frac_r, overlap, found, k0)
                    if mode == MODE_PAIRED and side == 1 and k <= found.size:
                        kk = k0  # once per (fragment, region)
                        for q in range(k0, k):
                            dup = False
                            for r in range(k0):
                                dup |= found[r] == found[q]
                            if not dup:
                                found[kk] = found[q]
                                kk += 1
                        k = kk
            if k > found.size:
                return pos, line, m, nc, nb, _GROW_FOUND, k
        if m + k > keys.size:
            return pos, line, m, nc, nb, _GROW_OUT, k
        nfrag[cell] += 1
        w = float(cnt) if use_count else 1.0
        row = cell * n_cols
        if k == 0:
            if miss_col >= 0:  # summed per cell here, not one pair per fragment
                missed[0, cell] += 1
                missed[1, cell] += w
        else:
            for q in range(k):
                keys[m] = row + found[q]
                weights[m] = w
                m += 1
        pos = nxt
        line += 1
        done += 1
    return pos, line, m, nc, nb, FRAG_OK, 0


@njit(**NJIT)
def scan_fragments(buf, pos, line0, max_lines, keys, weights, m, ctab, btab, n_known_chroms,
                   n_allow, nfrag, missed, cursors, chrom_ptr, starts, ends, maxend, ids,
                   min_overlap, frac_q, frac_r, overlap, mode, left, right, use_count, miss_col,
                   n_cols):
    """Parse, name, search and count up to ``max_lines`` lines of a block from byte ``pos``
    (file line ``line0``); see the module documentation.

    The pairs go to ``keys[m:]``/``weights[m:]`` (the caller's buffers, grown here when
    full). ``ctab`` / ``btab`` are the chromosome and barcode tables (:func:`name_table`), the first
    ``n_known_chroms`` chromosome names being the universe's codes; ``n_allow`` (-1: none) the
    allow-listed barcodes at the head of ``btab``; ``nfrag`` fragment lines per cell so far
    (grown here); ``missed`` (2, cells) float64, per cell the count and the summed weight of
    its fragments without a hit (with ``miss_col``; grown here); ``cursors`` (2, n chroms) the search's per-chromosome rows; the sweep arrays
    and thresholds as :func:`genotok.kernels.overlap.overlap` takes them; ``miss_col`` the
    column of fragments without a hit (-1: none; they are summed in ``missed``). Each pair is
    ``cell * n_cols + column`` with its weight (a repeated universe line counts as its first
    occurrence: the sweep's ids are the tokenizer's). Returns ``(keys, weights, m, ctab, btab, nfrag, missed, pos, line,
    status)``: ``pos`` and ``line`` where the next call goes on; on a bad line (``status`` a
    ``FRAG_*`` code) ``line`` is its number and the pairs of the lines before it are in.
    """
    n = buf.size
    cslots, coff, chash, carena, cline, nc = ctab
    bslots, boff, bhash, barena, bline, nb = btab
    found = np.empty(64, np.int64)
    fs = np.empty(5, np.int64)
    fe = np.empty(5, np.int64)
    line = line0
    while True:
        if nfrag.size < bhash.shape[0]:  # a cell's row exists for every barcode the table holds
            grown = np.zeros(bhash.shape[0], np.int64)
            grown[:nfrag.size] = nfrag
            nfrag = grown
        if missed.shape[1] < bhash.shape[0]:
            more = np.zeros((2, bhash.shape[0]), np.float64)
            more[:, :missed.shape[1]] = missed
            missed = more
        pos, line, m, nc, nb, status, need = _run(
            buf, pos, line, max_lines - (line - line0), cslots, coff, chash, carena, cline, nc,
            bslots, boff, bhash, barena, bline, nb, n_known_chroms, n_allow, nfrag, missed,
            cursors, chrom_ptr, starts, ends, maxend, ids, min_overlap, frac_q, frac_r, overlap, mode, left,
            right, use_count, miss_col, n_cols, keys, weights, m, found, fs, fe)
        if status == _GROW_CHROMS:
            cslots, coff, chash, carena, cline = _grown(cslots, coff, chash, carena, cline, nc,
                                                        need)
        elif status == _GROW_CELLS:
            bslots, boff, bhash, barena, bline = _grown(bslots, boff, bhash, barena, bline, nb,
                                                        need)
        elif status == _GROW_FOUND:
            found = np.empty(2 * need, np.int64)
        elif status == _GROW_OUT:
            k2 = np.empty(max(2 * keys.size, m + need), np.int64)
            k2[:m] = keys[:m]
            w2 = np.empty(k2.size, np.float64)
            w2[:m] = weights[:m]
            keys, weights = k2, w2
        else:
            break
    return (keys, weights, m, (cslots, coff, chash, carena, cline, nc),
            (bslots, boff, bhash, barena, bline, nb), nfrag, missed, min(pos, n), line, status)


@njit(**NJIT)
def merge_names(arena, off, lines, lo, hi, base, slots, doff, dhash, darena, dlines, n):
    """Names ``lo .. hi - 1`` of one table (its ``arena``, ``offsets`` and first ``lines``)
    looked up in another (:func:`name_table`'s tuple, unpacked), each one it lacks added in
    that order as first seen at line ``base + lines[i]``: how the tables of the pieces a
    block was cut into join the file's (in the pieces' order, so a name's id is its first
    appearance in the file). Returns ``(table, ids)``: ``ids[i - lo]`` the name's id there.

    Examples
    --------
    >>> a = add_names(np.frombuffer(b"AC", np.uint8), np.array([0, 1, 2]), *name_table())
    >>> b = add_names(np.frombuffer(b"C", np.uint8), np.array([0, 1]), *name_table())
    >>> t, ids = merge_names(a[3], a[1], a[4], 0, 2, 10, *b)
    >>> ids.tolist(), t[-1], t[4][:2].tolist()
    ([1, 0], 2, [0, 10])
    """
    ids = np.empty(max(hi - lo, 0), np.int64)
    for i in range(lo, hi):
        ids[i - lo], slots, doff, dhash, darena, dlines, n = _intern(
            arena, off[i], off[i + 1], base + lines[i], slots, doff, dhash, darena, dlines, n)
    return (slots, doff, dhash, darena, dlines, n), ids
