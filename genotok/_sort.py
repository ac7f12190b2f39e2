"""A stable argsort of non-negative integer keys: a parallel LSD radix sort in numba.

The tokenizer's gtars order sorts each file's queries by (chromosome rank, start): one packed
int64 key per query. NumPy's stable argsort (radix for 16-bit types, timsort for int64) spends
about 1.4 s on 10M shuffled keys; the keys here rarely need more than ~35 bits, so a radix
sort of a few 11-bit digits moves far less data.

Method: when ``bits(max key) + bits(n - 1) <= 64``, each key is packed with its index
(``key << ib | i``) into one uint64, so every packed value is unique and the sort needs no
stability bookkeeping and moves one array; the permutation is the low ``ib`` bits at the end.
Each pass counts the digit per block of the input (``prange`` over blocks), turns the counts
into per-(digit, block) write positions (digit-major, then block order: stable), and scatters
each block in input order. A pass whose digit is the same for every key is skipped. Wider keys
fall back to NumPy's stable argsort.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._config import NJIT, NJIT_PARALLEL

#: digit width of one pass (2,048 buckets: the per-block counts stay in L1/L2)
DIGIT_BITS = 11
#: below this many keys NumPy's stable argsort is as fast (measured: benchmarks/bench_kernels.py)
MIN_RADIX = 1 << 16


@njit(**NJIT_PARALLEL)
def _pack(keys, ib, out):
    for i in prange(keys.size):
        out[i] = (np.uint64(keys[i]) << np.uint64(ib)) | np.uint64(i)


@njit(**NJIT_PARALLEL)
def _counts(src, shift, bounds, counts):
    nb = bounds.size - 1
    mask = np.uint64((1 << DIGIT_BITS) - 1)
    sh = np.uint64(shift)
    for b in prange(nb):
        for i in range(bounds[b], bounds[b + 1]):
            counts[b, (src[i] >> sh) & mask] += 1


@njit(**NJIT_PARALLEL)
def _scatter(src, dst, shift, bounds, pos):
    nb = bounds.size - 1
    mask = np.uint64((1 << DIGIT_BITS) - 1)
    sh = np.uint64(shift)
    for b in prange(nb):
        p = pos[b]
        for i in range(bounds[b], bounds[b + 1]):
            v = src[i]
            d = (v >> sh) & mask
            dst[p[d]] = v
            p[d] += 1


@njit(**NJIT)
def _positions(counts):
    """Write positions: digit-major, block order within a digit (the stable layout).
    Returns (positions, number of non-empty digits)."""
    nb, nd = counts.shape
    pos = np.empty_like(counts)
    total = 0
    used = 0
    for d in range(nd):
        col = 0
        for b in range(nb):
            pos[b, d] = total
            total += counts[b, d]
            col += counts[b, d]
        if col:
            used += 1
    return pos, used


@njit(**NJIT_PARALLEL)
def _unpack(src, mask, out):
    for i in prange(src.size):
        out[i] = np.int64(src[i] & mask)


def _bit_length(x: int) -> int:
    return int(x).bit_length()


def stable_argsort(keys: np.ndarray, *, n_blocks: int | None = None) -> np.ndarray:
    """The permutation that sorts ``keys`` (non-negative integers), equal keys in input order.

    Same result as ``np.argsort(keys, kind="stable")`` (int64).

    Examples
    --------
    >>> stable_argsort(np.array([3, 1, 3, 0, 1] * 20000)).tolist()[:4]
    [3, 8, 13, 18]
    """
    keys = np.asarray(keys)
    n = keys.size
    if n < MIN_RADIX or keys.dtype.kind not in "iu":
        return np.argsort(keys, kind="stable")
    if keys.dtype.kind == "i" and keys.min() < 0:
        raise ValueError("stable_argsort: keys must be non-negative")
    kb, ib = _bit_length(int(keys.max())), _bit_length(n - 1)
    if kb + ib > 64:
        return np.argsort(keys, kind="stable")
    import numba

    blocks = n_blocks or max(1, min(4 * numba.get_num_threads(), n // MIN_RADIX))
    bounds = np.linspace(0, n, blocks + 1).astype(np.int64)
    src = np.empty(n, np.uint64)
    _pack(np.ascontiguousarray(keys), ib, src)
    dst = np.empty_like(src)
    for shift in range(ib, ib + kb, DIGIT_BITS):
        counts = np.zeros((blocks, 1 << DIGIT_BITS), np.int64)
        _counts(src, shift, bounds, counts)
        pos, used = _positions(counts)
        if used <= 1:
            continue  # every key has this digit: the pass would copy
        _scatter(src, dst, shift, bounds, pos)
        src, dst = dst, src
    out = np.empty(n, np.int64)
    _unpack(src, np.uint64((1 << ib) - 1), out)
    return out


def warmup() -> None:
    """Compile the radix kernels on a tiny input."""
    keys = np.array([3, 1, 2, 1], np.int64)
    src = np.empty(4, np.uint64)
    _pack(keys, 2, src)
    bounds = np.array([0, 2, 4], np.int64)
    counts = np.zeros((2, 1 << DIGIT_BITS), np.int64)
    _counts(src, 2, bounds, counts)
    pos, _ = _positions(counts)
    dst = np.empty_like(src)
    _scatter(src, dst, 2, bounds, pos)
    _unpack(dst, np.uint64(3), np.empty(4, np.int64))
