"""Bit tricks shared by kernels: the index of a set bit, and bytes eight at a time (SWAR).

SWAR ("SIMD within a register") tests the eight bytes of a little-endian ``uint64`` word at
once: :func:`eq_bytes` and :func:`below_space` set the high bit of each byte that matches and
no other bit. Both are exact per byte (no borrow or carry crosses a byte), so the positions of
the set bits can be trusted, not only whether there is one.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ._config import NJIT

# bit index of a power of two by a de Bruijn multiply (no float log2 per set bit)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_BIT_INDEX = np.zeros(64, np.int64)
for _i in range(64):
    _BIT_INDEX[((1 << _i) * 0x03F79D71B4CB0A89 % (1 << 64)) >> 58] = _i

ONES = np.uint64(0x0101010101010101)
HIGH = np.uint64(0x8080808080808080)
LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
SPACES = ONES * np.uint64(32)


@njit(**NJIT)
def bit_index(low):
    """``k`` for ``low == 1 << k`` (``low`` a uint64 power of two)."""
    return _BIT_INDEX[np.int64((low * _DEBRUIJN) >> np.uint64(58))]


@njit(**NJIT)
def lowest_byte(t):
    """Index (0-7) of the lowest byte whose high bit is set in ``t`` (``t != 0``)."""
    return bit_index(t & (~t + np.uint64(1))) >> 3


@njit(**NJIT)
def eq_bytes(x, pattern):
    """High bit of each byte of ``x`` equal to that byte of ``pattern`` (``ONES * value``)."""
    y = x ^ pattern
    return ~(((y & LOW7) + LOW7) | y) & HIGH


@njit(**NJIT)
def below_space(x):
    """High bit of each byte of ``x`` below 0x20 (a control byte)."""
    return ~(((x | HIGH) - SPACES) | x) & HIGH


@njit(**NJIT)
def count_high(t):
    """How many bytes of ``t`` have their high bit set (``t`` has no other bits)."""
    return np.int64(((t >> np.uint64(7)) * ONES) >> np.uint64(56))


def word_view(buf: np.ndarray) -> tuple[np.ndarray, int]:
    """``(words, off)``: the 8-byte-aligned middle of a contiguous uint8 array as uint64 words,
    ``words[i]`` holding ``buf[off + 8 * i:off + 8 * i + 8]``. No copy; the bytes before
    ``off`` and after the last word are left to byte loops. On a big-endian machine there are
    no words (the tricks assume byte ``k`` of a word is bits ``8k..8k+7``): byte loops only."""
    if sys.byteorder != "little":
        return np.zeros(0, np.uint64), buf.size
    off = min((-buf.ctypes.data) % 8, buf.size)
    nw = (buf.size - off) // 8
    return buf[off:off + 8 * nw].view(np.uint64), off
