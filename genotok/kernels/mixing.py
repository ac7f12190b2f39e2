"""The deterministic interleave of a weighted mixture (:mod:`genotok.mixture`).

Draw ``i`` goes to the source with the largest deficit ``a[k] * (i + 1) - count[k] * total``
(``a`` the integer weights, ``total`` their sum; ties to the lowest ``k``): a smooth weighted
round robin. Every prefix then holds each source's share to within one draw, so a window of
``total`` draws (or a multiple) holds exactly ``a[k]`` draws of source ``k`` per ``total``.
Integers only: no rounding decides a draw. Oracle: ``tests/naive_mixing.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT


@njit(**NJIT)
def interleave(a, total, out):  # pragma: no cover - compiled
    """Fill ``out`` (int32) with the source of each draw; ``a`` int64 > 0 summing to ``total``."""
    k_n = a.size
    count = np.zeros(k_n, np.int64)
    for i in range(out.size):
        best, best_d = 0, -(2 ** 62)
        for k in range(k_n):
            d = a[k] * (i + 1) - count[k] * total
            if d > best_d:
                best, best_d = k, d
        out[i] = best
        count[best] += 1


def warmup() -> None:
    """Compile the interleave on a tiny input."""
    interleave(np.array([1, 2], np.int64), 3, np.empty(3, np.int32))
