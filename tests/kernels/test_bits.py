"""The bit tricks of ``genotok.kernels.bits`` in the parser's newline scan and number reader,
against NumPy byte by byte."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numba import njit

from genotok.kernels import bits as _bits
from genotok.kernels import lines as _lines
from genotok.kernels import parse as _parse


# The per-word tricks (eq_bytes, below_space, count_high, lowest_byte, bit_index,
# digits_value) are compared byte by byte in tests/kernel_registry.py.


TEXT = st.lists(st.sampled_from([b"\n", b"\t", b"\r", b"chr1", b"\x00", b"\x1f", b"\xc3\xa9", b"12"]),
                max_size=60).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(0, 15), st.integers(0, 15))
def test_line_ends_at_every_alignment(text, head, tail):
    backing = np.zeros(len(text) + 32, np.uint8)
    buf = backing[head:head + len(text)]
    buf[:] = np.frombuffer(text, np.uint8)
    words, off = _bits.word_view(buf)
    assert 0 <= off <= buf.size and off + 8 * words.size <= buf.size
    ends, binary = _lines._line_ends(buf, words, off)
    np.testing.assert_array_equal(ends, np.flatnonzero(buf == 10))
    controls = (buf < 32) & ~np.isin(buf, [9, 10, 13])
    assert binary == bool(controls.any())


def test_no_words_on_a_big_endian_machine(monkeypatch):
    buf = np.frombuffer(b"chr1\t1\t2\n" * 5, np.uint8)
    monkeypatch.setattr(_bits.sys, "byteorder", "big")
    words, off = _bits.word_view(buf)
    assert words.size == 0 and off == buf.size
    ends, binary = _lines._line_ends(buf, words, off)  # byte loops alone find every newline
    np.testing.assert_array_equal(ends, np.flatnonzero(buf == 10))
    assert not binary


DIGITS_TEXT = st.lists(st.sampled_from([b"0", b"7", b"9", b"12345678", b"\t", b"\n", b"/", b":",
                                        b"+", b"-", b"a", b" ", b"\xff", b"\x00"]),
                       max_size=40).map(b"".join)


@njit
def _numbers(buf):
    """``_parse._number`` and the byte loop ``_parse._digits`` at every position of ``buf``."""
    out = np.empty((buf.size, 4), np.int64)
    for p in range(buf.size):
        out[p, 0], out[p, 1] = _parse._number(buf, p)
        out[p, 2], out[p, 3] = _parse._digits(buf, p)
    return out


@settings(max_examples=300, deadline=None)
@given(DIGITS_TEXT, st.integers(0, 15))
def test_word_number_reader_equals_the_byte_loop_everywhere(text, head):
    # a trailing newline, as the parser guarantees; numbers of 1-24 digits at every alignment,
    # within and beyond 16 bytes of the buffer's end (where the byte loop takes over)
    backing = np.zeros(len(text) + 32, np.uint8)
    buf = backing[head:head + len(text) + 1]
    buf[:-1] = np.frombuffer(text, np.uint8)
    buf[-1] = 10
    out = _numbers(buf)
    long_run = np.zeros(buf.size, bool)  # 19+ digits: the byte loop's int64 wraps; so does ours
    for p in range(buf.size):
        q = p
        while 48 <= buf[q] <= 57:
            q += 1
        long_run[p] = q - p > 18
        want = int(buf[p:q].tobytes()) if q > p else 0
        assert out[p, 1] == out[p, 3] == q
        if not long_run[p]:
            assert out[p, 0] == out[p, 2] == want
    np.testing.assert_array_equal(out[:, 0], out[:, 2])


@given(st.integers(0, 10 ** 8 - 1), st.integers(1, 8))
def test_digits_value_of_every_length(value, n):
    text = str(value).zfill(n)[-n:].encode() + b"\t" * (8 - n)
    x = np.uint64(int.from_bytes(text, "little"))
    assert _bits.digits_value(x, n) == int(text[:n])
    t = np.uint64(_bits.non_digits(x))
    assert (t == 0) if n == 8 else (_bits.lowest_byte(t) == n)


@njit
def _masks(buf, pos):
    return _bits.specials64(buf, pos), _bits.newlines64(buf, pos)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=64, max_size=80), st.integers(0, 16))
def test_64_byte_masks_are_numpys(raw, pos):
    """specials64 / newlines64: bit k for byte k of the 64 from pos, at every alignment."""
    buf = np.frombuffer(raw, np.uint8)
    pos = min(pos, buf.size - 64)
    window = buf[pos:pos + 64]
    want = [int(sum(1 << k for k in np.flatnonzero(hit).tolist()))
            for hit in ((window <= 32) | (window == 127), window == 10)]
    got = [int(x) for x in _masks(buf, pos)]
    assert got == want



@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"\n\n", b"chr1\t10\t20", b"x" * 70, b"\r"]),
                max_size=80).map(b"".join),
       st.integers(0, 70), st.sampled_from([1, 7, 8, 9, 63, 64, 65, 130, 4096]))
@example(b"\n" * 9, 0, 8)  # the words fill the block exactly; a newline in the last bytes
@example(b"\n" * 71, 0, 64)
def test_fill_newlines_is_numpys(text, pos, cap):
    """The parser's newline block (64 bytes a step, then 8, then bytes): the next newlines
    from ``pos`` in order, all of them or stopped with fewer than eight slots left, and never a
    write past the block (numba does not check: the block is a view with guard slots after it)."""
    buf = np.frombuffer(text, np.uint8)
    pos = min(pos, buf.size)
    want = np.flatnonzero(buf == 10)
    want = want[want >= pos]
    guarded = np.full(cap + 16, -1, np.int64)
    lf = guarded[:cap]
    k = _lines._fill_newlines(buf, pos, lf)
    assert k <= cap and (guarded[cap:] == -1).all()
    assert lf[:k].tolist() == want[:k].tolist()
    assert k == min(cap, want.size) or (want.size > k > cap - 8)
