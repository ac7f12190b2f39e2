"""The single-cell fast path (:mod:`genotok.kernels.cells` holds the general one).

For a *strictly monotone* map (tokens of each variable by ascending rank, every token of an
earlier variable ranking <= every token of a later one), genomic order and no truncation,
a row in increasing column order already lists its tokens in genomic order: no bitmap, no
sort. Per variable the map is summarised as ``lut_n`` (0, 1 or 2 tokens, or -1: take the
general loop, for more than two tokens or a first token shared with another variable, which
``unique`` may merge with the previous one; never for a variable without tokens, which
:func:`mono_count` counts as a miss only through ``lut_n == 0``), ``lut_last`` (its last
token) and ``lut_word`` (the fill's one load per entry: :func:`pack_lut_word`). Counting
first gives exact row offsets, so rows are written in place with no compaction.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT_PARALLEL
from .bits import prefetch as _prefetch
from .modes import Unknown

UNK_SET, UNK_REGION = int(Unknown.SET), int(Unknown.REGION)

MONO_OK, MONO_UNSORTED, MONO_INVALID = 0, 1, 2

#: how many stored entries ahead :func:`mono_fill` prefetches its lookup word
_AHEAD = 32

#: token ids below this fit a field of :func:`pack_lut_word`
LUT_WORD_IDS = 1 << 31


def pack_lut_word(n, first, second):
    """The fill's per-variable word: ``first | second << 31 | (n + 1) << 62`` (int64).

    ``n`` is the variable's fast-path token count (``-1``: the general loop), ``first`` and
    ``second`` its first two tokens (ids below :data:`LUT_WORD_IDS`). One 8-byte load per
    stored entry instead of three arrays: a row's columns are far apart, so each array costs
    a cache miss, and the three did not fit in L2 at 100k variables (~17% of the fill's time).
    The word ``0`` means "the general loop".

    >>> w = pack_lut_word(np.array([2, -1]), np.array([7, 0]), np.array([2**31 - 1, 0]))
    >>> (w & 0x7FFFFFFF).tolist(), ((w >> 31) & 0x7FFFFFFF).tolist(), (((w >> 62) & 3) - 1).tolist()
    ([7, 0], [2147483647, 0], [2, -1])
    """
    n = np.asarray(n, np.int64)
    return (np.asarray(first, np.int64) | np.asarray(second, np.int64) << 31
            | (n + 1) << 62).astype(np.int64)


#: ``keep_threshold`` of "no min_count": every positive value is kept
KEEP_POSITIVE = float(np.nextafter(0.0, 1.0))


def keep_threshold(min_value: float) -> float:
    """One comparison for "``v > 0 and v >= min_value``": ``v >= keep_threshold(min_value)``.

    The smallest positive float64 lies below every positive float32 or float64 value, so a
    kept value need not be compared twice (NaN fails either way).

    >>> keep_threshold(float("-inf")) == KEEP_POSITIVE, keep_threshold(2.0)
    (True, 2.0)
    """
    return max(float(min_value), KEEP_POSITIVE)


@njit(**NJIT_PARALLEL)
def mono_count(indptr, indices, data, lut_n, lut_last, var_ptr, var_ids, keep_from, use_data,
               unk_mode, unique, blocks):
    """``(counts, status)``: the token count of every row for :func:`mono_fill`.

    With ``use_data`` the entries with ``value >= keep_from`` are kept (:func:`keep_threshold`)
    and the values are validated; without it ``data`` is not read at all (every stored entry
    counts as kept: half the memory traffic when the only filter is "drop zeros"), and
    :func:`mono_fill` checks the values instead. ``status`` is ``MONO_INVALID`` for anything
    :func:`check_csr` rejects that this pass reads (call it for the details), ``MONO_UNSORTED``
    when a row's columns are not strictly increasing (non-canonical CSR: take the general
    path), else ``MONO_OK``.
    """
    n_rows = indptr.size - 1
    n_vars = lut_n.size
    n_nz = indices.size
    cnt = np.zeros(n_rows, np.int64)
    bad = np.zeros(blocks.size - 1, np.int64)
    for b in prange(blocks.size - 1):
        for r in range(blocks[b], blocks[b + 1]):
            lo, hi = indptr[r], indptr[r + 1]
            if lo < 0 or hi < lo or hi > n_nz:
                bad[b] = MONO_INVALID
                break
            n = 0
            miss = 0
            pc = -1  # the last kept column with tokens
            last_c = -1
            bad_v = False
            for j in range(lo, hi):
                c = indices[j]
                if c < 0 or c >= n_vars:
                    bad[b] = MONO_INVALID
                    break
                if c <= last_c:
                    bad[b] = max(bad[b], MONO_UNSORTED)
                last_c = c
                if use_data:
                    v = data[j]
                    bad_v |= (v < 0) | (v != v) | (v == np.inf)  # no branch: checked per row
                    if not v >= keep_from:
                        continue
                k = lut_n[c]
                if k > 0:
                    n += k
                    pc = c
                elif k == 0:
                    miss += 1
                else:
                    t0 = var_ptr[c]
                    n += var_ptr[c + 1] - t0
                    if unique and pc >= 0 and var_ids[t0] == lut_last[pc]:
                        n -= 1
                    pc = c
            if unk_mode == UNK_REGION:
                n += miss
            elif unk_mode == UNK_SET and n == 0:
                n = 1
            cnt[r] = n
            if bad_v:
                bad[b] = MONO_INVALID
            if bad[b] == MONO_INVALID:
                break
    status = MONO_OK
    for b in range(bad.size):
        status = max(status, bad[b])
    return cnt, status


@njit(**NJIT_PARALLEL)
def mono_fill(indptr, indices, data, lut_word, var_ptr, var_ids, unk_id, keep_from, strict,
              unk_mode, unique, blocks, offsets, ids, vals):
    """Write every row's tokens into ``ids`` at ``offsets[r]`` (and their values into ``vals``
    unless it is ``None``: numba then compiles the fill without the value stores and their
    tests; see benchmarks/RESULTS.md, "Design measurements"). Returns False when ``strict``
    and a row has an entry that is not kept or not a valid value: the counts (made without
    reading the values) do not hold, and the caller counts again with the values; such a row
    stops before writing that entry, so no store leaves its slot.

    The caller allocates ``ids``/``vals`` with NumPy, which asks the kernel for transparent huge
    pages on large arrays; an array allocated inside the kernel would take a page fault every
    4 KiB on first write, several times the cost of the fill itself.

    The lookup word of the entry :data:`_AHEAD` places on is prefetched: the 800 KB of words
    (100k peaks) do not stay in L2 beside the streamed matrix, and a lookup that waits for L3
    stalls the stores behind it (measured, with how far ahead: benchmarks/RESULTS.md).
    :func:`mono_count` has validated every column index, so
    the prefetched index is one too.

    Variables with one or two tokens are written as a pair of stores and the position moves
    by their count (no branch on the count); the second store may land past the row, in a
    later row of the same block that overwrites it. Rows within two slots of their block's end
    use the plain loop, so no store ever crosses into another thread's block.
    """
    if vals is not None and vals.size != ids.size:
        raise ValueError("mono_fill: vals must be None or as long as ids")
    ok = np.ones(blocks.size - 1, np.bool_)
    for b in prange(blocks.size - 1):
        end = offsets[blocks[b + 1]]
        ahead = indptr[blocks[b + 1]] - _AHEAD  # entries whose lookup _AHEAD on is prefetched
        for r in range(blocks[b], blocks[b + 1]):
            a = offsets[r]
            pos = a
            paired = offsets[r + 1] + 2 <= end
            miss = 0
            for j in range(indptr[r], indptr[r + 1]):
                if j < ahead:
                    _prefetch(lut_word, indices[j + _AHEAD])
                v = data[j]
                if not (v >= keep_from and v < np.inf):  # NaN fails too
                    if strict:
                        ok[b] = False
                        break
                    continue
                c = indices[j]
                w = lut_word[c]
                k = ((w >> 62) & 3) - 1
                if k >= 0 and paired:
                    ids[pos] = w & 0x7FFFFFFF
                    ids[pos + 1] = (w >> 31) & 0x7FFFFFFF
                    if vals is not None:
                        vals[pos] = v
                        vals[pos + 1] = v
                    pos += k
                    miss += k == 0
                else:
                    t0, t1 = var_ptr[c], var_ptr[c + 1]
                    if t0 == t1:
                        miss += 1
                    for t in range(t0, t1):
                        tid = var_ids[t]
                        if unique and t == t0 and pos > a and ids[pos - 1] == tid:
                            if vals is not None:
                                vals[pos - 1] += v
                            continue
                        ids[pos] = tid
                        if vals is not None:
                            vals[pos] = v
                        pos += 1
            if not ok[b]:
                break
            if unk_mode == UNK_REGION and miss > 0:  # after the region tokens, storage order
                for j in range(indptr[r], indptr[r + 1]):
                    v = data[j]
                    c = indices[j]
                    if v >= keep_from and var_ptr[c] == var_ptr[c + 1]:
                        ids[pos] = unk_id
                        if vals is not None:
                            vals[pos] = v
                        pos += 1
            elif unk_mode == UNK_SET and pos == a:  # valued with the row's kept total
                ids[pos] = unk_id
                if vals is not None:
                    kept = 0.0
                    for j in range(indptr[r], indptr[r + 1]):
                        v = data[j]
                        if v >= keep_from:
                            kept += v
                    vals[pos] = kept
    for b in range(ok.size):
        if not ok[b]:
            return False
    return True
