"""Names in bytes, for every parser: the chromosome-name table and the one region-name parser.

- The name table numbers distinct byte strings in order of first appearance (an open-addressing
  table of hashes, no Python work per name): the BED parser (:mod:`genotok.kernels.parse`)
  codes chromosome names with it, :func:`intern_spans` numbers any spans.
- :func:`parse_region_names` reads region strings (``chr1:100-200``, ``chr1-100-200``,
  ``chr1_100_200``; thousands separators allowed) from the right, for
  :func:`genotok.regions.parse_region_strings` and the single-cell var names
  (:func:`parse_names`, its per-line form); :data:`SEPARATORS` maps the user's ``sep`` to the
  kernel's two separator bytes.

Examples
--------
>>> buf = np.frombuffer(b"chr1:100-200\\nchr2_5_9\\n", np.uint8)
>>> codes, starts, ends, name_s, name_e, bad, why = parse_region_names(buf, *SEPARATORS[None])
>>> codes.tolist(), starts.tolist(), ends.tolist(), bad
([0, 1], [100, 5], [200, 9], -1)
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL

#: the largest coordinate any parser accepts (BED, region strings)
MAX_COORD = 1 << 62
_MAX_DIV10 = MAX_COORD // 10

#: ``sep`` of :func:`genotok.regions.parse_region_strings` -> the kernel's ``(sep1, sep2)`` bytes
#: (-1: any of ``:-_`` before the start, any of ``-_`` before the end)
SEPARATORS = {None: (-1, -1), ":": (58, 45), "-": (45, 45), "_": (95, 95)}

_LF = 10


@njit(inline="always", **NJIT)
def _round(h, key):
    """A word into the state: the table's key xor-ed in, a multiply, the halves swapped, a
    multiply. Not linear (a linear one lets a file cancel one word's bits with the next
    word's, whatever the key), and the top bit a multiply passes on unchanged is moved to the
    middle of the second one, where its carries depend on the key."""
    h = (h ^ np.uint64(key)) * np.uint64(0x9E3779B97F4A7C15)
    h = (h << np.uint64(32)) | (h >> np.uint64(32))
    return h * np.uint64(0xD6E8FEB86659FD93)


@njit(inline="always", **NJIT)
def _mix(h, k, byte, key):
    """Byte ``k`` of a name into the running hash: eight bytes xor-ed into a word, then a
    :func:`_round` (a parser can hash a name while it finds its end)."""
    h ^= np.uint64(byte) << np.uint64(8 * (k & 7))
    if k & 7 == 7:
        h = _round(h, key)
    return h


@njit(inline="always", **NJIT)
def _final(h, length, key):
    h = _round(_round(h, key) ^ np.uint64(length), key)
    return h ^ (h >> np.uint64(32))


@njit(**NJIT)
def _hash(buf, a, b, key):
    """Hash of the name ``buf[a:b]`` under a table's random ``key`` (:func:`_mix` byte by
    byte, :func:`_final`). Keyed and not linear, so no file can be crafted whose names all
    collide: with the unkeyed hash (bytes xor-ed into a word, a rotation) crafted chromosome
    names made the parse grow with the square of their number (benchmarks/RESULTS.md)."""
    h = np.uint64(0)
    for k in range(a, b):
        h = _mix(h, k - a, buf[k], key)
    return _final(h, b - a, key)


@njit(**NJIT)
def _new_key():
    """A random 64-bit hash key (numba's generator, seeded from the system's entropy)."""
    return np.uint64(np.random.randint(0, 1 << 62)) * np.uint64(4) + \
        np.uint64(np.random.randint(0, 4))


@njit(**NJIT)
def _same(buf, s1, e1, s2, e2):
    if e1 - s1 != e2 - s2:
        return False
    for k in range(e1 - s1):
        if buf[s1 + k] != buf[s2 + k]:
            return False
    return True


@njit(**NJIT)
def _find(buf, s, e, h, table, name_start, name_end, name_hash):
    """(code, slot) of the name buf[s:e] in the open-addressing table; code -1 (and the empty
    slot to fill) when absent. ``table.size`` is a power of two."""
    mask = table.size - 1
    slot = np.int64(h & np.uint64(mask))
    while table[slot] >= 0:
        c = table[slot]
        if name_hash[c] == h and _same(buf, s, e, name_start[c], name_end[c]):
            return c, slot
        slot = (slot + 1) & mask
    return -1, slot


@njit(**NJIT)
def _grow(name_start, name_end, name_hash, n):
    """The three per-name arrays with twice the room (the first ``n`` entries kept)."""
    cap = 2 * name_start.size
    a = np.empty(cap, np.int64)
    a[:n] = name_start[:n]
    b = np.empty(cap, np.int64)
    b[:n] = name_end[:n]
    c = np.empty(cap, np.uint64)
    c[:n] = name_hash[:n]
    return a, b, c


@njit(**NJIT)
def _name_table():
    """An empty name table: (slots, name_start, name_end, name_hash, key), grown by
    :func:`_add`; ``key``: its random hash key (:func:`_hash`)."""
    return (np.full(1024, -1, np.int32), np.empty(64, np.int64), np.empty(64, np.int64),
            np.empty(64, np.uint64), _new_key())


@njit(**NJIT)
def _add(s, e, h, slot, table, name_start, name_end, name_hash, nnames):
    """Add the name at ``s:e`` (hash ``h``) that :func:`_find` did not find, in its ``slot``.

    Returns ``(code, table, name_start, name_end, name_hash, nnames)``: the arrays are new
    ones when they had to grow. Called once per distinct name, so out of line: the per-line
    path stays :func:`_hash` + :func:`_find`."""
    if nnames == name_start.size:
        name_start, name_end, name_hash = _grow(name_start, name_end, name_hash, nnames)
    code = nnames
    name_start[code] = s
    name_end[code] = e
    name_hash[code] = h
    nnames += 1
    table[slot] = code
    if 2 * nnames > table.size:  # keep the load factor below 1/2
        table = _rehash(name_hash, nnames, table.size * 4)
    return code, table, name_start, name_end, name_hash, nnames


@njit(**NJIT)
def intern_spans(buf, s, e, hash_mask=np.uint64(0xFFFFFFFFFFFFFFFF)):
    """Number the distinct byte strings ``buf[s[i]:e[i]]`` in order of first appearance.

    Returns ``(index, start, end)``: ``index[i]`` is span ``i``'s number and
    ``buf[start[j]:end[j]]`` the string numbered ``j`` (its first span). One pass over the bytes
    with the parser's name table, where sorting the strings cost O(n log n) comparisons; a span
    equal to the one before it (a chromosome's run of lines) skips the table. ``hash_mask``
    only serves the tests: 0 makes every hash collide, so every probe compares bytes.
    """
    index = np.empty(s.size, np.int64)
    table, name_start, name_end, name_hash, key = _name_table()
    nnames = 0
    prev = -1
    for i in range(s.size):
        a, b = s[i], e[i]
        if not (prev >= 0 and _same(buf, a, b, name_start[prev], name_end[prev])):
            h = _hash(buf, a, b, key) & hash_mask
            prev, slot = _find(buf, a, b, h, table, name_start, name_end, name_hash)
            if prev < 0:
                prev, table, name_start, name_end, name_hash, nnames = _add(
                    a, b, h, slot, table, name_start, name_end, name_hash, nnames)
        index[i] = prev
    return index, name_start[:nnames].copy(), name_end[:nnames].copy()


@njit(**NJIT)
def _rehash(name_hash, n, tsize):
    """A new table of ``tsize`` slots (a power of two) holding names 0..n-1."""
    table = np.full(tsize, -1, np.int32)
    mask = tsize - 1
    for c in range(n):
        slot = np.int64(name_hash[c] & np.uint64(mask))
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = c
    return table


# region strings (``chr1:100-200``): why a kernel's outcome is "bad"
NAME_OK = 0


NAME_SYNTAX = 1


NAME_TOO_LARGE = 2


@njit(**NJIT)
def _number_left(buf, lo, e):
    """The number ending just before ``e``: (first byte, value, status).

    The number is the longest run of digits and commas ending at ``e`` (at least one byte after
    ``lo``, which is kept for the name); with commas it must be ``1,000`` style: 1-3 digits
    then groups of exactly three.
    """
    k = e
    while k > lo + 1 and (48 <= buf[k - 1] <= 57 or buf[k - 1] == 44):
        k -= 1
    if k == e or buf[k] == 44 or buf[e - 1] == 44:
        return k, 0, NAME_SYNTAX
    v = 0
    group = 0  # digits since the last comma
    commas = 0
    too_large = False
    for i in range(k, e):
        b = buf[i]
        if b == 44:
            if (commas == 0 and group > 3) or (commas > 0 and group != 3):
                return k, 0, NAME_SYNTAX
            commas += 1
            group = 0
            continue
        group += 1
        if v > _MAX_DIV10:
            too_large = True
        else:
            v = v * 10 + (np.int64(b) - 48)
            if v > MAX_COORD:
                too_large = True
    if commas > 0 and group != 3:
        return k, 0, NAME_SYNTAX
    if too_large:
        return k, 0, NAME_TOO_LARGE
    return k, v, NAME_OK


@njit(**NJIT)
def parse_region_names(buf, sep1, sep2):
    """Region strings ``chrom<sep1>start<sep2>end``, each ended by ``\\n``, parsed from the right.

    ``sep1``/``sep2`` are byte values, or -1 for any of ``:-_`` / ``-_``. The chromosome (at least
    one byte) is everything before ``sep1``. Returns ``(codes, starts, ends, name_start,
    name_end, bad, why)``: codes in order of first appearance, the byte span of each code's name,
    and the index of the first string that does not parse (-1 when all do) with its reason.
    """
    n = 0
    for i in range(buf.size):
        if buf[i] == _LF:
            n += 1
    codes = np.empty(n, np.int32)
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    table, name_start, name_end, name_hash, key = _name_table()
    nnames = 0
    prev_code = -1
    pos = 0
    for i in range(n):
        e = pos
        while buf[e] != _LF:
            e += 1
        nxt = e + 1
        k2, z, why = _number_left(buf, pos, e)
        if why != NAME_OK and why != NAME_TOO_LARGE:
            return codes[:i], starts[:i], ends[:i], name_start[:nnames], name_end[:nnames], i, why
        s2 = buf[k2 - 1] if k2 - 1 > pos else 0
        if not ((sep2 < 0 and (s2 == 45 or s2 == 95)) or (sep2 >= 0 and s2 == sep2)):
            return codes[:i], starts[:i], ends[:i], name_start[:nnames], name_end[:nnames], i, \
                NAME_SYNTAX
        k1, a, why1 = _number_left(buf, pos, k2 - 1)
        if why1 != NAME_OK and why1 != NAME_TOO_LARGE:
            return codes[:i], starts[:i], ends[:i], name_start[:nnames], name_end[:nnames], i, why1
        s1 = buf[k1 - 1] if k1 - 1 > pos else 0
        if not ((sep1 < 0 and (s1 == 58 or s1 == 45 or s1 == 95)) or (sep1 >= 0 and s1 == sep1)):
            return codes[:i], starts[:i], ends[:i], name_start[:nnames], name_end[:nnames], i, \
                NAME_SYNTAX
        if why != NAME_OK or why1 != NAME_OK:
            return codes[:i], starts[:i], ends[:i], name_start[:nnames], name_end[:nnames], i, \
                NAME_TOO_LARGE
        cs, ce = pos, k1 - 1
        if prev_code >= 0 and _same(buf, cs, ce, name_start[prev_code], name_end[prev_code]):
            code = prev_code
        else:
            h = _hash(buf, cs, ce, key)
            code, slot = _find(buf, cs, ce, h, table, name_start, name_end, name_hash)
            if code < 0:
                code, table, name_start, name_end, name_hash, nnames = _add(
                    cs, ce, h, slot, table, name_start, name_end, name_hash, nnames)
            prev_code = code
        codes[i] = code
        starts[i] = a
        ends[i] = z
        pos = nxt
    return codes, starts, ends, name_start[:nnames], name_end[:nnames], -1, NAME_OK


@njit(**NJIT)
def parse_names(buf, sep1, sep2):
    """:func:`parse_region_names` per line, for the single-cell var names: ``(chrom_s, chrom_e,
    starts, ends, bad)``, ``buf[chrom_s[i]:chrom_e[i]]`` the chromosome of line ``i`` (the bytes
    of its first occurrence) and ``bad`` the first line that does not parse (-1 when all do).

    Examples
    --------
    >>> cs, ce, st, en, bad = parse_names(np.frombuffer(b"c:1-2\\nc-3-4\\n", np.uint8), -1, -1)
    >>> cs.tolist(), ce.tolist(), st.tolist(), en.tolist(), bad
    ([0, 0], [1, 1], [1, 3], [2, 4], -1)
    """
    codes, starts, ends, name_start, name_end, bad, _ = parse_region_names(buf, sep1, sep2)
    return name_start[codes], name_end[codes], starts, ends, bad


@njit(**NJIT_PARALLEL)
def _translate(table, codes, out):
    bad = 0
    for i in prange(codes.size):
        c = codes[i]
        if c < 0 or c >= table.size:
            bad += 1
            out[i] = -1
        else:
            out[i] = table[c]
    return bad


def translate_codes(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` (int32) in one parallel pass, each code checked against the table:
    the chromosome codes of a set in another code space (a universe's); NumPy's gather
    converts the int32 codes to intp first (slower: benchmarks/RESULTS.md). A code outside the table
    raises ``IndexError`` naming the first one.

    Examples
    --------
    >>> translate_codes(np.array([7, -1, 3], np.int32), np.array([2, 0, 1, 2], np.int32)).tolist()
    [3, 7, -1, 3]
    """
    table = np.ascontiguousarray(table, np.int32)
    codes = np.ascontiguousarray(codes, np.int32)
    out = np.empty(codes.size, np.int32)
    if _translate(table, codes, out):
        i = int(np.flatnonzero((codes < 0) | (codes >= table.size))[0])
        raise IndexError(f"chromosome code {codes[i]} at row {i} is outside the table of "
                         f"{table.size} names")
    return out
