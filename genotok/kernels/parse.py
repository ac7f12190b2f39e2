"""Numba byte parser for BED text (BED3, BED6, narrowPeak, anything with >= 3 columns).

One pass over the bytes. Per data line it reads the chromosome name and the two coordinates and
skips the rest of the line (checking it for binary bytes); columns after the third are never
parsed, so a BED5 score of ``.`` is fine.

Dialect rules:
- lines end with ``\\n`` or ``\\r\\n``; the last line may lack its newline;
- blank lines, ``#`` comments and ``track`` / ``browser`` lines are skipped;
- a line whose first separator is a tab is tab-separated; one whose first separator is a space
  is space-separated (runs of spaces count as one). A tab and a space between the first three
  fields of one line is an error (mixed separators);
- the first line that is not blank, a comment or a track/browser line may be a header: it is
  skipped when its 2nd and 3rd fields are both not integers (``chrom start end``); any later
  such line, or a first line with only one bad coordinate, is an error;
- coordinates are decimal integers (an optional ``+``), 0 <= x <= 2^62, and end >= start;
- any byte below 0x20 other than tab, CR and LF makes the line binary (an error).

Separators are decided by a line's first separator rather than by "any tab in the line", so a
space-separated line with a tab in a later column still parses, and a line that mixes them in
its first three fields gets a "mixed separators" message instead of a misleading "not an integer".

Chromosome names are coded in order of first appearance, by an open-addressing table of hashes
inside the kernel with a same-as-the-previous-line check first: no Python work per line, and
sorted and shuffled files parse at the same speed (marking runs in the kernel and mapping run
heads through a Python dict was measured much slower on shuffled files). The hash xors the
name's bytes into a word and multiplies once (FNV-1a's multiply per byte measured slower).
Figures: see benchmarks/RESULTS.md, "Design measurements".

Speed: a first pass counts the lines that may hold a record and looks for any binary byte, eight
bytes at a time (:mod:`genotok.kernels.bits`); then the parse finds newlines a block of 4096 at a time
into a small scratch array, and the common line, ``name<TAB>start<TAB>end`` followed by a tab or
its newline, is read in one pass with no bounds tests (its newline stops every scan) and its
tail is never looked at. Every other line (comments, headers, spaces, anything malformed, the
whole file when it holds a binary byte) takes the full rules below, which report errors
(measured: see benchmarks/RESULTS.md, "Design measurements").

Memory: the outputs are sized by the lines that may hold a record (:func:`bound`), and the
newline index is a 32 KiB block refilled as the parse moves on, so blank and comment lines cost
no memory beyond their text: the parse adds nothing to the text and runs of empty lines are
skipped eight bytes at a time (before issue 19, an index of every newline cost 8 bytes each; a
file of blank lines could fill the memory). Speed was unchanged by it (see
benchmarks/RESULTS.md, "Design measurements").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .._config import NJIT
from .bits import LITTLE_ENDIAN, digits_value, load_word, lowest_byte, non_digits
from .lines import (  # noqa: F401  (bound, scan, count_lines: importable from here as before)
    _CR,
    _HASH,
    _LF,
    _SPACE,
    _TAB,
    BLOCK,
    _fill_newlines,
    _skip_newlines,
    bound,
    count_lines,
    scan,
)
from .names import (  # noqa: F401  (the name table, and the region-name parser as before)
    _MAX_DIV10,
    MAX_COORD,
    NAME_OK,
    NAME_SYNTAX,
    NAME_TOO_LARGE,
    _add,
    _find,
    _hash,
    _name_table,
    _same,
    intern_spans,
    parse_region_names,
)

# error codes returned by the kernel
OK = 0
TOO_FEW_COLUMNS = 1
BAD_START = 2
BAD_END = 3
NEGATIVE = 4
OVERFLOW = 5
END_BEFORE_START = 6
BINARY = 7
EMPTY_NAME = 8
MIXED_SEPARATORS = 9
NO_ROOM = 10  # the outputs are full: a caller's sizing error, never the file's




@njit(**NJIT)
def _is_sep(b):
    return b == _TAB or b == _SPACE


@njit(**NJIT)
def _starts_with(buf, pos, end, word):
    n = word.size
    if end - pos < n:
        return False
    for k in range(n):
        if buf[pos + k] != word[k]:
            return False
    return end - pos == n or _is_sep(buf[pos + n])


@njit(**NJIT)
def _next_field(buf, p, le, sep):
    """(start, end) of the field after the separator at ``p`` (a run of spaces is one)."""
    if sep == _SPACE:
        while p < le and buf[p] == _SPACE:
            p += 1
    else:
        p += 1
    fs = p
    while p < le and not _is_sep(buf[p]):
        p += 1
    return fs, p


@njit(**NJIT)
def _line_end(buf, pos, n):
    """Index of the newline ending the line at ``pos`` (or n), and the first binary byte (or -1)."""
    bad = -1
    while pos < n:
        b = buf[pos]
        if b < _SPACE:  # rare: one comparison per byte on the common path
            if b == _LF:
                return pos, bad
            if b != _TAB and b != _CR and bad < 0:
                bad = pos
        pos += 1
    return n, bad


@njit(**NJIT)
def _parse_int(buf, pos, end):
    """Parse a non-negative decimal in buf[pos:end]. Returns (value, status)."""
    if pos >= end:
        return 0, BAD_START
    if buf[pos] == 45:  # '-'
        if pos + 1 < end and 48 <= buf[pos + 1] <= 57:
            return 0, NEGATIVE
        return 0, BAD_START
    if buf[pos] == 43:  # '+'
        pos += 1
        if pos >= end:
            return 0, BAD_START
    if end - pos > 18:  # 18 digits cannot wrap int64; longer fields take the careful path
        return _parse_long_int(buf, pos, end)
    v = 0
    while pos < end:
        d = buf[pos] - 48
        if d < 0 or d > 9:
            return 0, BAD_START
        v = v * 10 + d
        pos += 1
    if v > MAX_COORD:
        return 0, OVERFLOW
    return v, OK


@njit(**NJIT)
def _parse_long_int(buf, pos, end):
    """``_parse_int`` for fields of more than 18 bytes: checks for overflow before each step."""
    v = 0
    too_large = False
    while pos < end:
        d = buf[pos] - 48
        if d < 0 or d > 9:
            return 0, BAD_START
        if v > _MAX_DIV10:
            too_large = True  # keep scanning: a later non-digit makes it BAD_START instead
        else:
            v = v * 10 + d
            if v > MAX_COORD:
                too_large = True
        pos += 1
    if too_large:
        return 0, OVERFLOW
    return v, OK


@njit(inline="always", **NJIT)
def _digits(buf, p):
    """The decimal number starting at ``p``: (value, index of the first non-digit). The buffer
    must hold a non-digit after ``p`` (the caller's newline)."""
    v = 0
    while True:
        d = np.int64(buf[p]) - 48
        if d < 0 or d > 9:
            return v, p
        v = v * 10 + d
        p += 1


_POW10 = np.array([10 ** k for k in range(9)], np.int64)


@njit(inline="always", **NJIT)
def _number(buf, p):
    """:func:`_digits` eight bytes at a time: up to 15 digits in two word loads, with no branch
    per digit (a byte loop mispredicts its exit at every number of a new length). Longer
    numbers, and numbers within 16 bytes of the buffer's end, take the byte loop (measured:
    see benchmarks/RESULTS.md, "Design measurements")."""
    if LITTLE_ENDIAN and p + 16 <= buf.size:
        x = load_word(buf, p)
        t = non_digits(x)
        if t:
            k = lowest_byte(t)
            if k == 0:
                return 0, p
            return digits_value(x, k), p + k
        y = load_word(buf, p + 8)
        t = non_digits(y)
        if t:
            k = lowest_byte(t)
            v = digits_value(x, 8)
            if k:
                v = v * _POW10[k] + digits_value(y, k)
            return v, p + 8 + k
    return _digits(buf, p)


@njit(inline="always", **NJIT)
def _fast_line(buf, ls, le, track, browser):
    """The common line, ``name<TAB>start<TAB>end`` then a tab or the newline at ``le``, in one
    pass: ``(end of the name, start, end, ok)``. Not ok for any other line; ``parse_bed``'s full
    rules then decide what it is.

    It accepts only lines the full rules read the same way: a name of bytes above the space
    that does not start a comment, track or browser line, 1-18 plain digits per coordinate (no
    sign, so no overflow), end >= start. The caller has checked the buffer for binary bytes and
    guarantees ``buf[le]`` is a newline: every scan stops there without a bounds test.
    """
    b = buf[ls]
    if b <= _SPACE or b == _HASH or ((b == 116 or b == 98) and (
            _starts_with(buf, ls, le, track) or _starts_with(buf, ls, le, browser))):
        return 0, 0, 0, False
    p = ls + 1
    while buf[p] > _SPACE:
        p += 1
    if buf[p] != _TAB:
        return 0, 0, 0, False
    s, q = _number(buf, p + 1)
    if q - p - 1 < 1 or q - p - 1 > 18 or buf[q] != _TAB:
        return 0, 0, 0, False
    e, r = _number(buf, q + 1)
    if r - q - 1 < 1 or r - q - 1 > 18 or e < s:
        return 0, 0, 0, False
    b = buf[r]
    if b == _TAB or r == le or (b == _CR and r + 1 == le):
        return p, s, e, True
    return 0, 0, 0, False


@njit(**NJIT)
def parse_bed(buf, binary, codes, starts, ends, track, browser, allow_header=True, block=4096,
              allow_reversed=False):
    """Parse BED bytes into ``codes``, ``starts``, ``ends`` (call it through :func:`parse_into`,
    which checks their dtypes; :func:`bound` gives the room they need). ``binary`` is
    :func:`bound`'s: whether any byte is a control byte.

    Returns ``(codes, starts, ends, name_start, name_end, status, err_line, err_pos, header_line)``:
    per data line its chromosome code/start/end (views of the first records of the outputs); per
    code the byte span of its name; an error status with the 1-based line and byte offset of the
    first problem; the line number of a skipped header (0 if none). ``NO_ROOM`` when the outputs
    are full before the data is (a record is never written past their end). ``allow_reversed``
    keeps a line whose end is before its start as a record (gtars accepts such universe lines).

    The newlines are found ``block`` at a time into a small scratch array (32 KiB by default,
    warm in the cache), so memory does not grow with the lines: a file of blank lines needs
    none beyond its text.
    """
    n = buf.size
    cap = codes.size
    table, name_start, name_end, name_hash, key = _name_table()  # chromosome names
    nnames = 0
    prev_code = -1
    m = 0
    line = 0
    pos = 0
    header_line = 0
    seen_data = False
    lf = np.empty(max(block, 1), np.int64)  # the next newlines, from the line at ``pos`` on
    nlf = 0
    j = 0
    while pos < n:
        line += 1
        ls = pos
        ok = False
        # binary bytes, and a last line without a newline, take the full rules
        if not binary:
            if j == nlf:
                nlf = _fill_newlines(buf, pos, lf)
                j = 0
            if j < nlf:
                le = lf[j]
                j += 1
                ce, s, e, ok = _fast_line(buf, ls, le, track, browser)
                pos = le + 1
        if not ok:  # anything unusual: blank, comment, header, spaces, errors
            if buf[ls] == _LF:  # a run of empty lines, skipped eight at a time
                q = _skip_newlines(buf, ls + 1)
                line += q - ls - 1
                j = min(j + q - ls - 1, nlf)  # their newlines in the block; all used: refill
                pos = q
                continue
            le, bad = _line_end(buf, ls, n)
            pos = le + 1
            if bad >= 0:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    BINARY, line, bad, header_line
            if le > ls and buf[le - 1] == _CR:
                le -= 1
            # blank (only separators) lines
            p = ls
            while p < le and _is_sep(buf[p]):
                p += 1
            if p == le:
                continue
            if buf[ls] == _HASH or _starts_with(buf, ls, le, track) or _starts_with(buf, ls, le, browser):
                continue
            # field 1: chromosome
            p = ls
            while p < le and not _is_sep(buf[p]):
                p += 1
            ce = p
            if p >= le:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    TOO_FEW_COLUMNS, line, ls, header_line
            if ce == ls:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    EMPTY_NAME, line, ls, header_line
            sep = buf[p]
            f2s, f2e = _next_field(buf, p, le, sep)
            p = f2e
            if p >= le:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    TOO_FEW_COLUMNS, line, ls, header_line
            if buf[p] != sep:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    MIXED_SEPARATORS, line, p, header_line
            f3s, f3e = _next_field(buf, p, le, sep)
            p = f3e
            if p < le and buf[p] != sep:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    MIXED_SEPARATORS, line, p, header_line
            if f3s == f3e:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    TOO_FEW_COLUMNS, line, ls, header_line
            s, st = _parse_int(buf, f2s, f2e)
            e, st3 = _parse_int(buf, f3s, f3e)
            if st != OK or st3 != OK:
                if allow_header and not seen_data and st == BAD_START and st3 == BAD_START:
                    header_line = line  # a header line before the data
                    seen_data = True
                    continue
                if st != OK:
                    return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                        st, line, f2s, header_line
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    (BAD_END if st3 == BAD_START else st3), line, f3s, header_line
            if e < s and not allow_reversed:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    END_BEFORE_START, line, f3s, header_line
        seen_data = True
        if m == cap:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                NO_ROOM, line, ls, header_line
        # chromosome code: same as the previous line (sorted files), else the hash table
        if prev_code >= 0 and _same(buf, ls, ce, name_start[prev_code], name_end[prev_code]):
            code = prev_code
        else:
            h = _hash(buf, ls, ce, key)
            code, slot = _find(buf, ls, ce, h, table, name_start, name_end, name_hash)
            if code < 0:
                code, table, name_start, name_end, name_hash, nnames = _add(
                    ls, ce, h, slot, table, name_start, name_end, name_hash, nnames)
            prev_code = code
        codes[m] = code
        starts[m] = s
        ends[m] = e
        m += 1
    return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
        OK, line, -1, header_line


TRACK = np.frombuffer(b"track", dtype=np.uint8)
BROWSER = np.frombuffer(b"browser", dtype=np.uint8)

MESSAGES = {
    TOO_FEW_COLUMNS: "too few columns (BED needs at least chrom, start and end, tab-separated)",
    BAD_START: "start is not a non-negative integer (a header line may only come first)",
    BAD_END: "end is not a non-negative integer",
    NEGATIVE: "negative coordinate (BED coordinates are 0-based, >= 0)",
    OVERFLOW: f"coordinate larger than 2^62 ({MAX_COORD})",
    END_BEFORE_START: "end is before start (are the columns swapped?)",
    BINARY: "binary data (a control or NUL byte): is this really a text BED file?",
    EMPTY_NAME: "empty chromosome name (the line starts with a separator)",
    MIXED_SEPARATORS: "mixed tab and space separators between the first three columns "
                      "(use one kind per line)",
    NO_ROOM: "more records than the parse outputs have room for",
}


class BedParse(NamedTuple):
    """What :func:`parse_into` and :func:`run` return (the fields of :func:`parse_bed`'s tuple)."""

    codes: np.ndarray  #: int32: chromosome code of each record
    starts: np.ndarray  #: int64
    ends: np.ndarray  #: int64
    name_start: np.ndarray  #: int64: per code, the byte span of its name in the buffer
    name_end: np.ndarray
    status: int  #: OK or an error code (MESSAGES)
    err_line: int  #: 1-based line of the first problem
    err_pos: int  #: its byte offset
    header_line: int  #: line of a skipped header, 0 if none


def parse_into(buf: np.ndarray, binary: bool, codes: np.ndarray, starts: np.ndarray,
               ends: np.ndarray, allow_header: bool = True, allow_reversed: bool = False):
    """:func:`parse_bed` into caller-owned outputs (e.g. slices of one array shared by the
    chunks of a parallel parse), after checking what numba would not: dtypes and layout. The
    kernel itself refuses to write past the outputs' end: too little room is a ``ValueError``."""
    for a, dt in ((codes, np.int32), (starts, np.int64), (ends, np.int64)):
        if a.dtype != dt or a.ndim != 1 or not a.flags.c_contiguous:
            raise ValueError(f"parse output must be a contiguous 1-d {np.dtype(dt).name} array, "
                             f"got {a.dtype} {a.shape}")
    if not (starts.size == ends.size == codes.size):
        raise ValueError(f"parse output arrays differ in size: {codes.size}, {starts.size}, "
                         f"{ends.size}")
    r = parse_bed(buf, binary, codes, starts, ends, TRACK, BROWSER, allow_header, BLOCK,
                  allow_reversed)
    r = BedParse(*r)
    if r.status == NO_ROOM:
        raise ValueError(f"parse output has room for {codes.size} records: too few for the "
                         "buffer (size it with bound())")
    return r


def run(buf: np.ndarray, allow_header: bool = True, allow_reversed: bool = False):
    """Parse a whole uint8 buffer (outputs allocated by NumPy, which gives large arrays huge
    pages; numba's allocations fault in 4 KiB at a time)."""
    need, binary = bound(buf)
    return parse_into(buf, binary, np.empty(need, np.int32), np.empty(need, np.int64),
                      np.empty(need, np.int64), allow_header, allow_reversed)


def warmup() -> None:
    """Compile the parser kernels on a tiny input."""
    buf = np.frombuffer(b"chr1\t1\t2\n", dtype=np.uint8)
    run(buf)
    count_lines(buf)
    parse_region_names(np.frombuffer(b"chr1:1-2\n", dtype=np.uint8), -1, -1)
