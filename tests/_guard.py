"""Buffers against a guard page: a read past a buffer's end (or before its start) crashes.

NUMBA_BOUNDSCHECK does not see the parsers' word and vector loads (``load_word``,
``newlines64``: intrinsics that load 8 or 64 bytes unchecked), nor a read past a view's end
into bytes that happen to be there; text that ends (or starts) just at a page no access is
allowed to shows both. Used by the fuzz drivers (tests/_bed_fuzz_driver.py,
tests/_bed_big_fuzz_driver.py); Linux and macOS (mprotect through ctypes).
"""

from __future__ import annotations

import ctypes
import mmap

import numpy as np

_LIBC = ctypes.CDLL(None, use_errno=True)


def guarded(data: bytes, at_end: bool = True) -> np.ndarray:
    """``data`` as a uint8 array that ends (``at_end``) or starts just at a page no access is
    allowed to: a read past the end (or before the start) crashes. NUMBA_BOUNDSCHECK does not
    see the parser's word and vector loads (``load_word``, ``newlines64``: intrinsics), this
    does."""
    page = mmap.PAGESIZE
    n = len(data)
    pages = -(-n // page) + 1
    mm = mmap.mmap(-1, pages * page)
    handle = ctypes.c_char.from_buffer(mm)
    base = ctypes.addressof(handle)
    del handle
    guard = base + (pages - 1) * page if at_end else base
    if _LIBC.mprotect(ctypes.c_void_p(guard), ctypes.c_size_t(page), 0) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    start = (pages - 1) * page - n if at_end else page
    mm[start:start + n] = data
    return np.frombuffer(mm, np.uint8, count=n, offset=start)
