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
- the first data line may be a header (its coordinates are not integers); any later such line
  is an error.

Chromosome names are coded in order of first appearance with an open-addressing hash table of
FNV-1a hashes inside the kernel (plus a same-as-previous-line fast path), so shuffled files with
many chromosome changes cost no Python work per line.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._config import NJIT

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

MAX_COORD = 1 << 62

_TAB, _SPACE, _LF, _CR, _HASH = 9, 32, 10, 13, 35


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
    v = 0
    while pos < end:
        d = buf[pos] - 48
        if d < 0 or d > 9:
            return 0, BAD_START
        v = v * 10 + d
        if v > MAX_COORD:
            return 0, OVERFLOW
        pos += 1
    return v, OK


@njit(**NJIT)
def _hash(buf, s, e):
    h = np.uint64(14695981039346656037)
    for k in range(s, e):
        h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
    return h


@njit(**NJIT)
def _same(buf, s1, e1, s2, e2):
    if e1 - s1 != e2 - s2:
        return False
    for k in range(e1 - s1):
        if buf[s1 + k] != buf[s2 + k]:
            return False
    return True


@njit(**NJIT)
def parse_bed(buf, track, browser, allow_header=True):
    """Parse BED bytes.

    Returns ``(codes, starts, ends, name_start, name_end, status, err_line, err_pos, header_line)``:
    per data line its chromosome code/start/end; per code the byte span of its name; an error
    status with the 1-based line and byte offset of the first problem; the line number of a
    skipped header (0 if none).
    """
    n = buf.size
    cap = 1
    for k in range(n):
        if buf[k] == _LF:
            cap += 1
    codes = np.empty(cap, np.int32)
    starts = np.empty(cap, np.int64)
    ends = np.empty(cap, np.int64)
    # chromosome table
    tsize = 1024
    table = np.full(tsize, -1, np.int32)
    ncap = 64
    name_start = np.empty(ncap, np.int64)
    name_end = np.empty(ncap, np.int64)
    name_hash = np.empty(ncap, np.uint64)
    nnames = 0
    prev_code = -1
    m = 0
    line = 0
    pos = 0
    header_line = 0
    seen_data = False
    while pos < n:
        line += 1
        ls = pos
        le, bad = _line_end(buf, pos, n)
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
        cs, ce = ls, p
        if p >= le:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                TOO_FEW_COLUMNS, line, ls, header_line
        if cs == ce:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                EMPTY_NAME, line, ls, header_line
        sep = buf[p]
        # field 2
        if sep == _SPACE:
            while p < le and buf[p] == _SPACE:
                p += 1
        else:
            p += 1
        f2s = p
        while p < le and not _is_sep(buf[p]):
            p += 1
        f2e = p
        if p >= le:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                TOO_FEW_COLUMNS, line, ls, header_line
        if buf[p] != sep:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                MIXED_SEPARATORS, line, p, header_line
        if sep == _SPACE:
            while p < le and buf[p] == _SPACE:
                p += 1
        else:
            p += 1
        f3s = p
        while p < le and not _is_sep(buf[p]):
            p += 1
        f3e = p
        if p < le and buf[p] != sep:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                MIXED_SEPARATORS, line, p, header_line
        if f3s == f3e:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                TOO_FEW_COLUMNS, line, ls, header_line
        s, st = _parse_int(buf, f2s, f2e)
        e, st3 = _parse_int(buf, f3s, f3e)
        if st != OK or st3 != OK:
            if allow_header and not seen_data and header_line == 0 and (st == BAD_START or st3 == BAD_START):
                header_line = line  # a header line before the data
                seen_data = True
                continue
            if st != OK:
                return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                    st, line, f2s, header_line
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                (BAD_END if st3 == BAD_START else st3), line, f3s, header_line
        if e < s:
            return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
                END_BEFORE_START, line, f3s, header_line
        seen_data = True
        # chromosome code
        if prev_code >= 0 and _same(buf, cs, ce, name_start[prev_code], name_end[prev_code]):
            code = prev_code
        else:
            h = _hash(buf, cs, ce)
            mask = tsize - 1
            slot = np.int64(h & np.uint64(mask))
            code = -1
            while table[slot] >= 0:
                c = table[slot]
                if name_hash[c] == h and _same(buf, cs, ce, name_start[c], name_end[c]):
                    code = c
                    break
                slot = (slot + 1) & mask
            if code < 0:
                if nnames == ncap:
                    ncap *= 2
                    a = np.empty(ncap, np.int64)
                    a[:nnames] = name_start[:nnames]
                    name_start = a
                    a = np.empty(ncap, np.int64)
                    a[:nnames] = name_end[:nnames]
                    name_end = a
                    b = np.empty(ncap, np.uint64)
                    b[:nnames] = name_hash[:nnames]
                    name_hash = b
                code = nnames
                name_start[code] = cs
                name_end[code] = ce
                name_hash[code] = h
                nnames += 1
                table[slot] = code
                if 2 * nnames > tsize:  # keep the load factor below 1/2
                    tsize *= 4
                    table = np.full(tsize, -1, np.int32)
                    mask = tsize - 1
                    for c in range(nnames):
                        sl = np.int64(name_hash[c] & np.uint64(mask))
                        while table[sl] >= 0:
                            sl = (sl + 1) & mask
                        table[sl] = c
            prev_code = code
        codes[m] = code
        starts[m] = s
        ends[m] = e
        m += 1
    return codes[:m], starts[:m], ends[:m], name_start[:nnames], name_end[:nnames], \
        OK, line, -1, header_line


@njit(**NJIT)
def count_lines(buf):
    """The parse limit: a loop that only counts newlines (for benchmarks)."""
    k = 0
    for i in range(buf.size):
        if buf[i] == _LF:
            k += 1
    return k


TRACK = np.frombuffer(b"track", dtype=np.uint8)
BROWSER = np.frombuffer(b"browser", dtype=np.uint8)

MESSAGES = {
    TOO_FEW_COLUMNS: "too few columns (BED needs at least chrom, start and end)",
    BAD_START: "start is not a non-negative integer",
    BAD_END: "end is not a non-negative integer",
    NEGATIVE: "negative coordinate",
    OVERFLOW: f"coordinate larger than {MAX_COORD}",
    END_BEFORE_START: "end is before start",
    BINARY: "binary data (a control or NUL byte): is this really a text BED file?",
    EMPTY_NAME: "empty chromosome name (the line starts with a separator)",
    MIXED_SEPARATORS: "mixed tab and space separators between the first three columns",
}


def run(buf: np.ndarray, allow_header: bool = True):
    """Run the kernel on a uint8 buffer."""
    return parse_bed(buf, TRACK, BROWSER, allow_header)


def warmup() -> None:
    """Compile the parser kernels on a tiny input."""
    buf = np.frombuffer(b"chr1\t1\t2\n", dtype=np.uint8)
    run(buf)
    count_lines(buf)
