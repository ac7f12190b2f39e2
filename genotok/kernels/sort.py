"""A stable argsort of non-negative integer keys: a parallel LSD radix sort in numba.

The tokenizer's gtars order sorts each file's queries by (chromosome rank, start): one packed
int64 key per query. NumPy's stable argsort (radix for 16-bit types, timsort for int64) spends
about 1.4 s on 10M shuffled keys; the keys here rarely need more than ~35 bits, so a radix
sort of a few 11-bit digits moves far less data.

Method: when ``bits(max key) + bits(n - 1) <= 64``, each key is packed with its index
(``key << ib | i``) into one uint64, so every packed value is unique and the sort needs no
stability bookkeeping and moves one array; the permutation is the low ``ib`` bits at the end.
Each pass counts one digit, turns the counts into write positions and scatters in input order
(stable); a pass whose digit is the same for every key is skipped. Wider keys fall back to
NumPy's stable argsort. Serial on purpose: a 2-thread version measured slower on the shared
box, and the pipeline already runs one set per thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT

#: digit width of one pass (2,048 buckets: the per-block counts stay in L1/L2)
DIGIT_BITS = 11
#: below this many keys NumPy's stable argsort is as fast (measured: benchmarks/bench_kernels.py)
MIN_RADIX = 1 << 16


@njit(**NJIT)
def _radix(keys, ib, kb, out):
    """LSD radix sort of ``keys[i] << ib | i``; the low ``ib`` bits of the result into ``out``."""
    n = keys.size
    src = np.empty(n, np.uint64)
    for i in range(n):
        src[i] = (np.uint64(keys[i]) << np.uint64(ib)) | np.uint64(i)
    dst = np.empty_like(src)
    nd = 1 << DIGIT_BITS
    mask = np.uint64(nd - 1)
    counts = np.empty(nd, np.int64)
    for shift in range(ib, ib + kb, DIGIT_BITS):
        sh = np.uint64(shift)
        counts[:] = 0
        for i in range(n):
            counts[(src[i] >> sh) & mask] += 1
        used = 0
        total = 0
        for d in range(nd):
            c = counts[d]
            counts[d] = total
            total += c
            used += c > 0
        if used <= 1:
            continue  # every key has this digit: the pass would copy
        for i in range(n):
            v = src[i]
            d = (v >> sh) & mask
            dst[counts[d]] = v
            counts[d] += 1
        src, dst = dst, src
    low = np.uint64((1 << ib) - 1)
    for i in range(n):
        out[i] = np.int64(src[i] & low)


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``keys`` (non-negative integers), equal keys in input order.

    Same result as ``np.argsort(keys, kind="stable")`` (int64). Serial, so it is safe to call
    from several Python threads at once (the pipeline prepares sets in parse workers).

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
    kb, ib = int(keys.max()).bit_length(), (n - 1).bit_length()
    if kb + ib > 64:
        return np.argsort(keys, kind="stable")
    out = np.empty(n, np.int64)
    _radix(np.ascontiguousarray(keys), ib, max(kb, 1), out)
    return out


def warmup() -> None:
    """Compile the radix kernel on a tiny input."""
    _radix(np.array([3, 1, 2, 1], np.int64), 2, 2, np.empty(4, np.int64))
