"""Gather rows of a ragged array (flat ``tokens`` + ``offsets``) into a new flat buffer.

The corpus reader's random access (``Corpus.get_batch``): row ``idx[k]`` of the source is
copied to ``out[out_offsets[k]:out_offsets[k + 1]]``. One row copy serves a serial kernel and
a ``prange`` kernel; the caller chooses (threads pay off only for large batches) and validates
every index and offset first: numba checks no bounds.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT, NJIT_PARALLEL


@njit(inline="always")
def _copy_row(tokens, offsets, idx, out_offsets, out, k):
    a, b = offsets[idx[k]], offsets[idx[k] + 1]
    o = out_offsets[k]
    out[o:o + b - a] = tokens[a:b]


@njit(**NJIT)
def gather(tokens, offsets, idx, out_offsets, out):
    """Copy rows ``idx`` of ``(tokens, offsets)`` into ``out`` at ``out_offsets`` (one thread).

    ``idx`` must lie within ``0..offsets.size - 2``, each row's offsets within ``tokens``, and
    ``out_offsets`` be the running sum of the rows' lengths (``out`` that long): unchecked.
    """
    for k in range(idx.size):
        _copy_row(tokens, offsets, idx, out_offsets, out, k)


@njit(**NJIT_PARALLEL)
def gather_parallel(tokens, offsets, idx, out_offsets, out):
    """:func:`gather` with the rows split across numba's threads (for large batches)."""
    for k in prange(idx.size):
        _copy_row(tokens, offsets, idx, out_offsets, out, k)


def warmup() -> None:
    """Compile both gather kernels on a tiny input."""
    tokens, offsets = np.arange(3, dtype=np.uint16), np.array([0, 1, 3], np.int64)
    idx, out_offsets = np.array([1, 0], np.int64), np.array([0, 2, 3], np.int64)
    for kernel in (gather, gather_parallel):
        kernel(tokens, offsets, idx, out_offsets, np.empty(3, np.uint16))
