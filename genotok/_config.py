"""The one place that holds numba options and thread control.

Kernels use ``@njit(**NJIT)`` (or ``NJIT_PARALLEL`` for ``prange`` kernels).
Set ``GENOTOK_NO_CACHE=1`` to turn numba's on-disk cache off (useful when a
cache directory is read-only or while debugging kernels).

When a kernel is compiled rather than loaded from that cache (the first use on a machine, or
after an upgrade), one line says so on stderr, once per process, so that the few seconds it
takes are not mistaken for a hang; ``GENOTOK_QUIET_COMPILE=1`` silences it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator

import numba
from numba.core import event as _event

_CACHE = os.environ.get("GENOTOK_NO_CACHE", "") in ("", "0")

#: options for serial kernels
NJIT = dict(cache=_CACHE, nogil=True)
#: options for kernels with a ``prange`` outer loop
NJIT_PARALLEL = dict(cache=_CACHE, nogil=True, parallel=True)


def serial_twin(kernel):
    """A ``prange`` kernel compiled without ``parallel`` (``prange`` is then ``range``): for
    inputs of one chunk, where a parallel region only wakes numba's worker threads, which a
    busy box makes cost up to milliseconds (a 2-line file, median / p99 of 2,000 calls under
    load: 79 / 261-4,053 us parallel, 68 / 132-146 us serial). The same bytecode under its own
    name, so that numba's cache keeps the two apart (its files are named by qualname)."""
    f = kernel.py_func
    twin = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__,
                              f.__closure__)
    twin.__qualname__, twin.__doc__ = twin.__name__, f.__doc__
    return numba.njit(**NJIT)(twin)


COMPILE_NOTICE = "genotok: compiling kernels (first use only)…" if _CACHE else \
    "genotok: compiling kernels (GENOTOK_NO_CACHE is set: every new process compiles)…"


class _CompileNotice(_event.Listener):
    """Prints :data:`COMPILE_NOTICE` when numba starts compiling one of genotok's kernels.

    numba raises its ``numba:compile`` event only for a real compilation, not for a load from
    the on-disk cache, so a warm cache stays silent.
    """

    def __init__(self) -> None:
        self.shown = False

    def on_start(self, ev) -> None:
        if self.shown:
            return
        disp = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
        if not module.startswith("genotok"):
            return
        self.shown = True
        if os.environ.get("GENOTOK_QUIET_COMPILE", "") in ("", "0") and sys.stderr is not None:
            try:
                print(COMPILE_NOTICE, file=sys.stderr, flush=True)
            except (OSError, ValueError):  # a closed or broken stderr
                pass

    def on_end(self, ev) -> None:
        pass


_NOTICE = _CompileNotice()
_event.register("numba:compile", _NOTICE)


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
