"""Lines in a byte buffer, eight bytes at a time: where newlines are, how many lines may hold a
BED record (the room a parse needs), whether any byte is binary. The BED parser
(:mod:`genotok.kernels.parse`) finds its newlines with :func:`_fill_newlines`, a block at a time.

Examples
--------
>>> count_lines(np.frombuffer(b"a\\nb\\n", np.uint8))
2
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT
from .bits import (
    LITTLE_ENDIAN,
    ONES,
    SPACES,
    below_space,
    count_high,
    eq_bytes,
    load_word,
    lowest_byte,
    newlines64,
    trailing_zeros,
    word_view,
)

_TAB, _SPACE, _LF, _CR, _HASH = 9, 32, 10, 13, 35
_LFS, _TABS, _CRS = ONES * np.uint64(_LF), ONES * np.uint64(_TAB), ONES * np.uint64(_CR)
_HASHES = ONES * np.uint64(_HASH)


@njit(**NJIT)
def _fill_newlines(buf, pos, lf):
    """The positions of the next ``lf.size`` newlines from ``pos`` on (fewer at the end of the
    buffer) into ``lf``; returns how many. 64 bytes at a time (one vector compare,
    :func:`~genotok.kernels.bits.newlines64`) while a whole mask fits, then eight (unaligned
    loads), then bytes."""
    n = buf.size
    cap = lf.size
    k = 0
    p = pos
    if LITTLE_ENDIAN:
        while p + 64 <= n and k + 64 <= cap:  # room for a mask's 64: no room check per newline
            t = newlines64(buf, p)
            while t:
                lf[k] = p + np.int64(trailing_zeros(t))
                k += 1
                t &= t - np.uint64(1)
            p += 64
        while p + 8 <= n:
            if k + 8 > cap:  # a word may hold eight: stop at a word's edge, all found so far
                if k:
                    return k
                break  # a block of fewer than eight (the tests'): bytes below
            t = eq_bytes(load_word(buf, p), _LFS)
            while t:  # no room check per newline: the test above made room for a word's
                lf[k] = p + lowest_byte(t)
                k += 1
                t &= t - np.uint64(1)
            p += 8
    while p < n:  # the last bytes; the words may have filled ``lf`` already
        if buf[p] == _LF:
            if k == cap:
                return k
            lf[k] = p
            k += 1
        p += 1
    return k


@njit(**NJIT)
def _skip_newlines(buf, p):
    """The first index at or after ``p`` that is not a newline (or the buffer's size)."""
    n = buf.size
    while p + 8 <= n and load_word(buf, p) == _LFS:
        p += 8
    while p < n and buf[p] == _LF:
        p += 1
    return p


@njit(**NJIT)
def _line_ends(buf, words, off):
    """``(ends, binary)``: the index of every newline in ``buf`` and whether any byte is binary
    (below 0x20, not tab, LF or CR). ``words, off`` is ``buf``'s :func:`~genotok.kernels.bits.word_view`:
    eight bytes per step, a count pass then a fill pass."""
    wend = off + 8 * words.size
    count_head, binary_head = _count_bytes(buf, 0, off)
    count_tail, binary_tail = _count_bytes(buf, wend, buf.size)
    count = count_head + count_tail
    controls = np.uint64(0)
    for i in range(words.size):
        x = words[i]
        lf = eq_bytes(x, _LFS)
        controls |= below_space(x) & ~(lf | eq_bytes(x, _TABS) | eq_bytes(x, _CRS))
        count += count_high(lf)
    ends = np.empty(count, np.int64)
    m = _fill_bytes(buf, 0, off, ends, 0)
    for i in range(words.size):
        t = eq_bytes(words[i], _LFS)
        while t:
            ends[m] = off + 8 * i + lowest_byte(t)
            m += 1
            t &= t - np.uint64(1)
    _fill_bytes(buf, wend, buf.size, ends, m)
    return ends, binary_head or binary_tail or controls != 0


@njit(**NJIT)
def _count_bytes(buf, lo, hi):
    """``_line_ends``' count pass over the bytes ``lo:hi`` one at a time: (newlines, binary)."""
    count = 0
    binary = False
    for k in range(lo, hi):
        b = buf[k]
        count += b == _LF
        binary |= b < _SPACE and b != _TAB and b != _LF and b != _CR
    return count, binary


@njit(**NJIT)
def _fill_bytes(buf, lo, hi, ends, m):
    """``_line_ends``' fill pass over the bytes ``lo:hi``: newline positions from ``ends[m]``;
    returns the next free slot."""
    for k in range(lo, hi):
        if buf[k] == _LF:
            ends[m] = k
            m += 1
    return m


@njit(**NJIT)
def _bound_bytes(buf, lo, hi):
    """:func:`_bound_words`' rule over the bytes ``lo:hi`` one at a time: (lines that may hold a
    record, any binary byte)."""
    n = buf.size
    count = 0
    binary = False
    for k in range(lo, hi):
        b = buf[k]
        binary |= b < _SPACE and b != _TAB and b != _LF and b != _CR
        if k == 0 or buf[k - 1] == _LF:
            if b == _CR:
                count += k + 1 < n and buf[k + 1] != _LF
            else:
                count += b != _LF and b != _TAB and b != _SPACE and b != _HASH
    return count, binary


@njit(**NJIT)
def _bound_words(buf, words, off):
    """``(most records, binary)``: how many lines may hold a record, and whether any byte is a
    control byte (below 0x20, not tab, LF or CR). ``words, off`` is ``buf``'s
    :func:`~genotok.kernels.bits.word_view`.

    A record needs a line whose first byte is not a newline, a separator or ``#`` (those are
    blank, comments or errors), nor a CR ending the line (``\\r\\n`` is blank). Counting only such
    lines, not every newline, sizes the outputs by the data: a file of blank or comment lines
    asks for none. Eight bytes per step: the high bit of each byte that starts a line is the
    newline mask shifted up one byte, carried across words.
    """
    wend = off + 8 * words.size
    count, binary = _bound_bytes(buf, 0, off)
    tail, binary_tail = _bound_bytes(buf, wend, buf.size)
    count += tail
    binary |= binary_tail
    controls = np.uint64(0)
    carry_lf = np.uint64(0x80) if off == 0 or buf[off - 1] == _LF else np.uint64(0)
    carry_cr = np.uint64(0)
    for i in range(words.size):
        x = words[i]
        lf = eq_bytes(x, _LFS)
        tab = eq_bytes(x, _TABS)
        cr = eq_bytes(x, _CRS)
        controls |= below_space(x) & ~(lf | tab | cr)
        first = (lf << np.uint64(8)) | carry_lf  # bytes that start a line
        carry_lf = lf >> np.uint64(56)
        count += count_high(first & ~(lf | tab | cr | eq_bytes(x, SPACES) | eq_bytes(x, _HASHES)))
        first_cr = first & cr
        # a line-starting CR counts unless a newline follows it (in this word or the next)
        count += count_high(first_cr) - count_high(((first_cr << np.uint64(8)) | carry_cr) & lf)
        carry_cr = first_cr >> np.uint64(56)
    if carry_cr and (wend == buf.size or buf[wend] == _LF):
        count -= 1  # the last word's final byte starts a line with a CR, then the line ends
    return count, binary or controls != 0


@njit(**NJIT)
def count_lines(buf):
    """The parse limit: a loop that only counts newlines (for benchmarks)."""
    k = 0
    for i in range(buf.size):
        if buf[i] == _LF:
            k += 1
    return k


def scan(buf: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(newline positions, any binary byte)`` of a contiguous uint8 buffer, eight bytes at a
    time. The parser no longer needs every newline at once (it finds them a block at a time);
    this stays as the floor a parse is measured against (``benchmarks/_common.py``)."""
    words, off = word_view(buf)
    return _line_ends(buf, words, off)


#: newlines the parser finds per step: 32 KiB of scratch, whatever the file
BLOCK = 4096


def bound(buf: np.ndarray) -> tuple[int, bool]:
    """``(most records, any binary byte)`` of a contiguous uint8 buffer: the room a parse needs.

    The most records is the number of lines that may hold one (not blank, not a comment), so
    the outputs grow with the data, never with blank or comment lines.

    Examples
    --------
    >>> bound(np.frombuffer(b"chr1\\t1\\t2\\n\\n\\n# note\\n\\r\\nchr1\\t3\\t4", np.uint8))
    (2, False)
    """
    words, off = word_view(buf)
    count, binary = _bound_words(buf, words, off)
    return int(count), bool(binary)
