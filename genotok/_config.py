"""The one place that holds numba options and thread control.

Kernels use ``@njit(**NJIT)`` (or ``NJIT_PARALLEL`` for ``prange`` kernels).
Set ``GENOTOK_NO_CACHE=1`` to turn numba's on-disk cache off (useful when a
cache directory is read-only or while debugging kernels).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numba

_CACHE = os.environ.get("GENOTOK_NO_CACHE", "") in ("", "0")

#: options for serial kernels
NJIT = dict(cache=_CACHE, nogil=True)
#: options for kernels with a ``prange`` outer loop
NJIT_PARALLEL = dict(cache=_CACHE, nogil=True, parallel=True)


def max_threads() -> int:
    """The number of threads numba was started with (``NUMBA_NUM_THREADS``)."""
    return int(numba.config.NUMBA_NUM_THREADS)


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[int]:
    """Run the body with ``n`` numba threads, restoring the previous count afterwards.

    ``None`` keeps the current setting. ``n`` larger than numba's pool is clipped
    (numba cannot grow its pool after start-up); ``n < 1`` is an error.
    """
    if n is None:
        yield numba.get_num_threads()
        return
    n = int(n)
    if n < 1:
        raise ValueError(f"n_threads must be >= 1, got {n}")
    previous = numba.get_num_threads()
    numba.set_num_threads(min(n, max_threads()))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(previous)
