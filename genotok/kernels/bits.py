"""Bit tricks shared by kernels: the index of a set bit, and bytes eight at a time (SWAR).

SWAR ("SIMD within a register") tests the eight bytes of a little-endian ``uint64`` word at
once: :func:`eq_bytes` and :func:`below_space` set the high bit of each byte that matches and
no other bit. Both are exact per byte (no borrow or carry crosses a byte), so the positions of
the set bits can be trusted, not only whether there is one. :func:`non_digits` is exact up to
its first set byte, which is all a number reader needs.
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from .._config import NJIT

#: whether byte ``k`` of a ``uint64`` word is its bits ``8k..8k+7`` (what the tricks assume)
LITTLE_ENDIAN = sys.byteorder == "little"

ONES = np.uint64(0x0101010101010101)
HIGH = np.uint64(0x8080808080808080)
LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
SPACES = ONES * np.uint64(32)
_LOW_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)
_HIGH_NIBBLES = np.uint64(0xF0F0F0F0F0F0F0F0)
_ZEROS = ONES * np.uint64(48)  # b"00000000"
_SIXES = ONES * np.uint64(6)


@njit(**NJIT)
def bit_index(low):
    """``k`` for ``low == 1 << k`` (``low`` a uint64 power of two): one count-trailing-zeros
    instruction (a de Bruijn multiply and table lookup before; the instruction read 7% faster
    in the parser)."""
    return np.int64(trailing_zeros(low))


@njit(**NJIT)
def lowest_byte(t):
    """Index (0-7) of the lowest byte whose high bit is set in ``t`` (``t != 0``)."""
    return np.int64(trailing_zeros(t)) >> 3


def _item_pointer(context, builder, signature, args):
    """LLVM pointer to ``arr[pos]`` for an intrinsic called as ``f(arr, pos)``."""
    aty = signature.args[0]
    ary = context.make_array(aty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aty, ary, [args[1]], wraparound=False)


@intrinsic
def load_word(typingctx, buf, pos):
    """The eight bytes ``buf[pos:pos + 8]`` as one ``uint64`` (native byte order), one unaligned
    load. ``buf`` must be a C-contiguous uint8 array and ``pos + 8 <= buf.size``: nothing is
    checked, as with any numba index."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"
            and buf.dtype == types.uint8 and isinstance(pos, types.Integer)):
        raise TypingError(f"load_word takes a C-contiguous 1-d uint8 array and an integer, "
                          f"got {buf} and {pos}")

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return types.uint64(buf, pos), codegen


@intrinsic
def prefetch(typingctx, arr, pos):
    """Ask the CPU to bring ``arr[pos]`` into the cache (a hint: no value, no fault). For loops
    that look items up at random in a table a little too large for L2: the lookup ``d``
    iterations ahead is started now, so it is in flight while this one is used. ``pos`` must
    be a valid index (nothing is checked)."""
    if not (isinstance(arr, types.Array) and isinstance(pos, types.Integer)):
        raise TypingError(f"prefetch takes an array and an integer, got {arr} and {pos}")

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, pos), codegen


def _bytes_mask(name: str, doc: str, compare):
    """An intrinsic ``f(buf, pos)``: bit ``k`` of its ``uint64`` set when ``compare`` holds
    for byte ``buf[pos + k]``, for the 64 bytes from ``pos`` (one vector load, one or two
    vector compares gathered into a mask: a few instructions on AVX-512 or AVX2, a few more
    on SSE2 or NEON, where the SWAR tricks take ~25 per word). Bit ``k`` is byte ``k`` on a
    little-endian machine (:data:`LITTLE_ENDIAN`; the callers check it)."""

    @intrinsic
    def mask(typingctx, buf, pos):
        if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"
                and buf.dtype == types.uint8 and isinstance(pos, types.Integer)):
            raise TypingError(f"{name} takes a C-contiguous 1-d uint8 array and an integer, "
                              f"got {buf} and {pos}")

        def codegen(context, builder, signature, args):
            vty = ir.VectorType(ir.IntType(8), 64)
            ptr = _item_pointer(context, builder, signature, args)
            v = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=1)
            bits = compare(builder, v, lambda b: ir.Constant(vty, [ir.IntType(8)(b)] * 64))
            return builder.bitcast(bits, ir.IntType(64))

        return types.uint64(buf, pos), codegen

    mask.__name__ = mask.__qualname__ = name
    mask.__doc__ = doc + (" ``buf`` must be a C-contiguous uint8 array and ``pos + 64 <= "
                          "buf.size``: nothing is checked, as with any numba index.")
    return mask


#: bit ``k`` set when ``buf[pos + k]`` ends a field or marks a line for the general parser: a
#: byte ``<= 0x20`` (tab, line end, space, CR, control bytes) or 0x7f (DEL)
specials64 = _bytes_mask(
    "specials64", "The bytes ``<= 0x20`` or 0x7f of the 64 bytes from ``pos``, bit ``k`` for "
    "byte ``k``.", lambda b, v, c: b.or_(b.icmp_unsigned("<=", v, c(32)),
                                         b.icmp_unsigned("==", v, c(127))))
#: bit ``k`` set when ``buf[pos + k]`` is a line end (``\n``)
newlines64 = _bytes_mask(
    "newlines64", "The line ends (``\\n``) of the 64 bytes from ``pos``, bit ``k`` for byte "
    "``k``.", lambda b, v, c: b.icmp_unsigned("==", v, c(10)))


@njit(**NJIT)
def non_digits(x):
    """High bit of each byte of ``x`` that is not an ASCII digit, exact up to the first such
    byte (a byte after it may be marked wrongly: adding 6 may carry out of a non-digit)."""
    c = ((x & _HIGH_NIBBLES) ^ _ZEROS) | (((x + _SIXES) & _HIGH_NIBBLES) ^ _ZEROS)
    return (((c & LOW7) + LOW7) | c) & HIGH  # bytes of c that are not zero


@njit(**NJIT)
def digits_value(x, n):
    """The number written by the first ``n`` (1-8) bytes of ``x``, ASCII digits: the bytes are
    shifted to the top of the word (leading zeros below them), then pairs, quads and the two
    halves are combined with three multiplies."""
    v = (x & _LOW_NIBBLES) << np.uint64(8 * (8 - n))
    v = (v * np.uint64(10 * 256 + 1)) >> np.uint64(8)
    v = ((v & np.uint64(0x00FF00FF00FF00FF)) * np.uint64(100 * 65536 + 1)) >> np.uint64(16)
    return np.int64(((v & np.uint64(0x0000FFFF0000FFFF)) * np.uint64(10000 * (1 << 32) + 1))
                    >> np.uint64(32))


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
