"""numba kernels of the medians pass: ``(feature, code) → count`` hash tables, one per block
of ``2**BLOCK`` features, filled from CSR row chunks
(:func:`genotok.singlecell.values.feature_medians`).

Per chunk, :func:`chunk_keys` normalises each stored entry (``value * (target_sum / row
total)``, ``log1p`` when asked: the arithmetic of :func:`.values.normalize_rows`), codes it (the
value itself while the histogram is exact, else ``floor(log2(v) * B)``, computed once per row
for small integer counts) and writes its key ``feature << 32 | (code + 2**31)`` grouped by block;
no normalised array, no sort. :func:`count_blocks` then counts each block's keys in the block's
table, which stays in cache while it is filled (a single table over all features missed the
cache on nearly every key: benchmarks/RESULTS.md, "Design measurements"). A slot is one int64,
``(local feature << 32 | code + 2**31) << 24 | count`` (0: empty), linear probing from the
key's hash scaled to the table's size; a table is sized for 1/8 of a chunk's keys being new,
then doubled when more than half its slots are used, so it holds 2-4 slots per distinct pair
(16-32 bytes). A count past ``2**24 - 1`` leaves the slot (which keeps the key) for the caller's
spills. :func:`medians` groups each block's pairs by feature (a counting sort) and finds the
codes at a feature's median positions by quickselect, no sort.

Every column index is checked here against the feature count before it makes a key, and every
value is checked finite and ``>= 0``; a failed check stops the kernel and returns its status and
position for the caller's error message. Table slots are indexed only by the hash scaled to the
table's size; the medians check each key's feature against the feature count.

Oracle: ``tests/naive_histogram.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT
from .values import bounded_scale, midpoint

OK = 0
INEXACT = 1  #: a value that is not an integer below 2**31 - 1 met an exact histogram
BAD_VALUE = 2  #: a value that is NaN, infinite or negative
BAD_INDEX = 3  #: a column index outside ``[0, n_features)``
BAD_TOTAL = 4  #: a row whose total, or ``target_sum / total``, overflows float64 (pos: the row)

BLOCK = 7  #: a block holds ``2**BLOCK`` features, and has its own table
_OFF = np.int64(1) << np.int64(31)
_LOW = (np.int64(1) << np.int64(32)) - 1
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the high bits of key * 2**64 / phi
_CACHE = 256  # integer values below this get their code once per row
_BITS = 24  # a slot: (local feature << 32 | code + 2**31) << 24 | count
COUNT_MAX = (1 << _BITS) - 1  #: a slot's count above this spills to the caller


@njit(**NJIT)
def new_table(capacity):
    """An empty table of ``capacity`` slots (``capacity < 2**32``; 0 is an empty slot; a
    table of no slots gets slots before its first key)."""
    return np.zeros(capacity, np.int64)


@njit(**NJIT)
def _add(table, key, count):
    """Add ``count`` to the slot of ``key`` (a block-local key, ``> 0``). Returns ``(new,
    spill)``: whether the key took a new slot, and the count moved out of the slot (the whole
    sum, when it passed :data:`COUNT_MAX`; the slot then holds 0). The first slot tried is
    the key's hash scaled to the table's size (any size below 2**32), then the next ones."""
    n = table.size
    s = np.int64((((np.uint64(key) * _MIX) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
    while True:
        v = table[s]
        if v == 0 or (v >> _BITS) == key:
            total = count + (v & COUNT_MAX if v != 0 else 0)
            spill = 0
            if total > COUNT_MAX:
                spill = total
                total = 0
            table[s] = (key << _BITS) | total
            return (1 if v == 0 else 0), spill
        s += 1
        if s == n:
            s = 0


@njit(**NJIT)
def grow(table, capacity):
    """The pairs of ``table`` rehashed into a table of ``capacity`` slots (more than it holds;
    counts stay within :data:`COUNT_MAX`, so nothing spills)."""
    out = new_table(capacity)
    for s in range(table.size):
        v = table[s]
        if v != 0:
            _add(out, v >> _BITS, v & COUNT_MAX)
    return out


@njit(**NJIT)
def chunk_keys(indptr, indices, data, n_features, normalize, target_sum, log1p, exact,
               bins_per_octave):
    """The keys ``feature << 32 | (code + 2**31)`` of the positive (normalised) values of CSR
    rows (``indptr`` rebased, checked by the caller), grouped by feature block (``feature >>
    BLOCK``; within a block in row order), with each block's start. Returns ``(keys, starts,
    status, pos)``: ``status`` :data:`OK`, else the first problem and its stored entry (its
    row for :data:`BAD_TOTAL`, checked once every value is)."""
    n_blocks = ((n_features - 1) >> BLOCK) + 1 if n_features > 0 else 1
    starts = np.zeros(n_blocks + 1, np.int64)
    totals = np.empty(indptr.size - 1, np.float64)
    for r in range(indptr.size - 1):  # checks, row totals and the keys of each block
        a, b = indptr[r], indptr[r + 1]
        total = 0.0
        for k in range(a, b):
            x = np.float64(data[k])
            if not (x >= 0 and x < np.inf):
                return starts[:0], starts, BAD_VALUE, k
            f = np.int64(indices[k])
            if f < 0 or f >= n_features:
                return starts[:0], starts, BAD_INDEX, k
            total += x
        totals[r] = total
    for r in range(indptr.size - 1):  # once every value is checked (the oracle's order)
        a, b = indptr[r], indptr[r + 1]
        total = totals[r]
        scale = 1.0
        if normalize:  # normalize_rows' arithmetic: value * (target_sum / total)
            if not bounded_scale(total, target_sum):
                return starts[:0], starts, BAD_TOTAL, r
            scale = target_sum / total if total > 0 else 0.0
        for k in range(a, b):
            if np.float64(data[k]) * scale > 0:  # log1p keeps the sign
                starts[(np.int64(indices[k]) >> BLOCK) + 1] += 1
    for j in range(n_blocks):
        starts[j + 1] += starts[j]
    keys = np.empty(starts[n_blocks], np.int64)
    fill = starts[:-1].copy()
    stamp = np.full(_CACHE, -1, np.int64)  # the row whose code each small integer holds
    cached = np.zeros(_CACHE, np.int64)
    for r in range(indptr.size - 1):  # the codes, written block by block
        a, b = indptr[r], indptr[r + 1]
        scale = 1.0
        if normalize:
            scale = target_sum / totals[r] if totals[r] > 0 else 0.0
        for k in range(a, b):
            x = np.float64(data[k])
            v = x * scale
            if not v > 0:
                continue
            if log1p:
                v = np.log1p(v)
            if exact:
                if v != np.floor(v) or v >= 2147483647.0:
                    return keys[:0], starts, INEXACT, k
                c = np.int64(v)
            elif x < _CACHE and x == np.floor(x):  # its code depends on the row's scale
                i = np.int64(x)
                tag = r if normalize else 0
                if stamp[i] != tag:
                    stamp[i] = tag
                    cached[i] = np.int64(np.floor(np.log2(v) * bins_per_octave))
                c = cached[i]
            else:
                c = np.int64(np.floor(np.log2(v) * bins_per_octave))
            f = np.int64(indices[k])
            q = f >> BLOCK
            keys[fill[q]] = (f << 32) | (c + _OFF)
            fill[q] += 1
    return keys, starts, OK, 0


@njit(**NJIT)
def _spill(buf, n, key, count):
    """Append ``(key, count)`` to the spill buffer ``buf`` (pairs; doubled when full)."""
    if 2 * n + 2 > buf.size:
        more = np.empty(2 * buf.size + 2, np.int64)
        more[:2 * n] = buf[:2 * n]
        buf = more
    buf[2 * n] = key
    buf[2 * n + 1] = count
    return buf, n + 1


@njit(**NJIT)
def _run(table, base, keys, counts, a, b, spills, n_spill):
    """Add ``keys[a:b]`` to ``table`` (room for them all); returns the new slots taken."""
    taken = 0
    for j in range(a, b):
        new, spill = _add(table, keys[j] - base, 1 if counts is None else counts[j])
        taken += new
        if spill:
            spills, n_spill = _spill(spills, n_spill, keys[j], spill)
    return taken, spills, n_spill


@njit(**NJIT)
def _insert(table, n_used, base, keys, counts, a, b, spills, n_spill):
    """Add ``keys[a:b]`` (``counts[a:b]``, or 1 each when ``counts`` is None) to ``table``,
    doubled whenever more than half its slots are used: in runs of as many keys as there are
    free slots below half load (each key takes at most one), with no check inside a run."""
    j = a
    while j < b:
        room = table.size // 2 - n_used
        if room <= 0:
            table = grow(table, 2 * table.size)
            continue
        stop = min(b, j + room)
        taken, spills, n_spill = _run(table, base, keys, counts, j, stop, spills, n_spill)
        n_used += taken
        j = stop
    return table, n_used, spills, n_spill


@njit(**NJIT)
def add_block(table, n_used, q, keys, counts, a, b):
    """Add ``counts[a:b]`` (``None``: 1 each) to the keys ``keys[a:b]`` of block ``q`` (global
    keys ``feature << 32 | code + 2**31`` of the block's features: :func:`chunk_keys` groups
    them so). Returns ``(table, n_used, spills)``: the table (first sized for 1/8 of the keys
    being new, then doubled whenever more than half its slots are used) and the ``(global key, count)`` pairs, flat, that left a slot at
    :data:`COUNT_MAX`."""
    base = np.int64(q) << (BLOCK + 32)
    want = max(16, 2 * (n_used + (b - a) // 8))  # room for 1/8 of the keys being new
    if want > table.size:  # (fewer doublings; an empty table of no slots gets its first)
        table = grow(table, want)
    table, n_used, spills, n_spill = _insert(table, n_used, base, keys, counts, a, b,
                                             np.empty(0, np.int64), 0)
    return table, n_used, spills[:2 * n_spill]


@njit(**NJIT)
def count_blocks(tables, used, keys, starts, q_lo, q_hi):
    """Count the keys of blocks ``q_lo:q_hi`` (``starts``: :func:`chunk_keys`), each block's in
    its own table: one small table at a time stays in cache. Threads may count disjoint block
    ranges of the same ``tables`` at once (``nogil``; each writes only its blocks' entries).
    Returns the spilled ``(global key, count)`` pairs, flat."""
    spills = np.empty(0, np.int64)
    for q in range(q_lo, q_hi):
        a, b = starts[q], starts[q + 1]
        if a == b:
            continue
        table, used[q], more = add_block(tables[q], used[q], q, keys, None, a, b)
        tables[q] = table
        if more.size:
            spills = np.concatenate((spills, more))
    return spills


@njit(**NJIT)
def pairs(table, q):
    """The global keys and counts (not their spills) of block ``q``'s table, table order."""
    n = 0
    for s in range(table.size):
        if table[s] != 0:
            n += 1
    keys = np.empty(n, np.int64)
    counts = np.empty(n, np.int64)
    base = np.int64(q) << (BLOCK + 32)
    j = 0
    for s in range(table.size):
        v = table[s]
        if v != 0:
            keys[j] = base + (v >> _BITS)
            counts[j] = v & COUNT_MAX
            j += 1
    return keys, counts


@njit(**NJIT)
def _kth(code, count, a, b, pos):
    """The code at sorted position ``pos`` (counting each code ``count`` times) of the distinct
    codes ``code[a:b]``: a quickselect that reorders both arrays in place, no sort."""
    lo, hi = a, b
    while hi - lo > 1:
        m = (lo + hi) // 2
        x, y, z = code[lo], code[m], code[hi - 1]  # median of three
        pivot = y if (x <= y <= z or z <= y <= x) else (x if (y <= x <= z or z <= x <= y) else z)
        i, j = lo, hi - 1  # [lo, i) < pivot, (j, hi) > pivot
        k = lo
        below = 0
        at = 0
        while k <= j:
            c = code[k]
            if c < pivot:
                below += count[k]
                code[k], code[i] = code[i], c
                count[k], count[i] = count[i], count[k]
                i += 1
                k += 1
            elif c > pivot:
                code[k], code[j] = code[j], c
                count[k], count[j] = count[j], count[k]
                j -= 1
            else:
                at = count[k]
                k += 1
        if pos < below:
            hi = i
        elif pos < below + at:
            return pivot
        else:
            pos -= below + at
            lo = j + 1
    return code[lo]


@njit(**NJIT)
def _value(c, exact, bins_per_octave):
    return float(c) if exact else 2.0 ** ((c + 0.5) / bins_per_octave)


@njit(**NJIT)
def medians(tables, spill_keys, spill_counts, n_features, exact, bins_per_octave, q_lo, q_hi,
            med):
    """Median of every feature of blocks ``q_lo:q_hi`` into ``med`` (float64, ``n_features``;
    NaN stays where a feature has no value) from the blocks' tables and the spilled counts of
    these blocks (global keys, sorted and distinct): the mean of the values at sorted positions ``(n-1)//2`` and ``n//2``
    of a feature's ``n`` values (a code stands for the value ``code`` when ``exact``, else
    ``2 ** ((code + 0.5) / bins_per_octave)``). Per block a counting sort over its features
    (each key's feature checked against ``n_features``; a bad key, or a spill outside the
    blocks or without its slot, returns ``ok=False``), then a quickselect per feature, no sort.
    Threads may take disjoint block ranges of the same ``tables`` at once (``nogil``).
    Returns ``(med, ok)``."""
    width = np.int64(1) << BLOCK
    top = 0
    for q in range(q_lo, q_hi):
        top = max(top, tables[q].size)
    code = np.empty(top, np.int64)  # one block's pairs at a time
    count = np.empty(top, np.int64)
    start = np.zeros(width + 1, np.int64)
    fill = np.zeros(width, np.int64)
    sp = 0
    for q in range(q_lo, q_hi):
        t = tables[q]
        f0 = np.int64(q) << BLOCK
        start[:] = 0
        for s in range(t.size):
            if t[s] != 0:
                j = (t[s] >> _BITS) >> 32
                if f0 + j >= n_features:
                    return med, False
                start[j + 1] += 1
        for j in range(width):
            start[j + 1] += start[j]
        fill[:] = start[:-1]
        for s in range(t.size):
            v = t[s]
            if v != 0:
                j = (v >> _BITS) >> 32
                code[fill[j]] = ((v >> _BITS) & _LOW) - _OFF
                count[fill[j]] = v & COUNT_MAX
                fill[j] += 1
        while sp < spill_keys.size and (spill_keys[sp] >> 32) < f0 + width:
            j = (spill_keys[sp] >> 32) - f0
            if j < 0:
                return med, False
            c = (spill_keys[sp] & _LOW) - _OFF
            i = start[j]
            while i < start[j + 1] and code[i] != c:
                i += 1
            if i == start[j + 1]:  # a spill keeps its slot: it must be there
                return med, False
            count[i] += spill_counts[sp]
            sp += 1
        for j in range(width):
            a, b = start[j], start[j + 1]
            if a == b:
                continue
            total = 0
            for i in range(a, b):
                total += count[i]
            if total == 0:
                continue
            lo = _kth(code, count, a, b, (total - 1) // 2)
            hi = lo
            if total // 2 != (total - 1) // 2:  # an even count: is the next value another code?
                upto = 0
                nxt = lo
                for i in range(a, b):
                    if code[i] <= lo:
                        upto += count[i]
                    elif nxt == lo or code[i] < nxt:
                        nxt = code[i]
                if total // 2 >= upto:
                    hi = nxt
            med[f0 + j] = midpoint(_value(lo, exact, bins_per_octave),
                                   _value(hi, exact, bins_per_octave))
    if sp != spill_keys.size:
        return med, False
    return med, True
