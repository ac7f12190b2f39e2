"""The fragment line readers eight bytes at a time (``fragscan._word_line``, SWAR) and a
whole line at a time (``fragscan._window_line``, through ``fragscan._fast_line``, the
scan's reader) against the byte loop (``fragscan._byte_line``) and the plain-Python line oracle
(``tests/naive_fragments.parse_line``): numbers of every length (leading zeros, 16 digits and
more), barcodes of every length around the word size with spaces, control bytes, DEL and
non-ASCII bytes, lines that end close to the buffer's end; and the word-wise name compare."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from genotok.kernels import fragscan as FS
from genotok.kernels.names import _hash

from ..naive_fragments import parse_line

KEY = np.uint64(0x9E3779B97F4A7C15)


@njit
def _read(buf, pos, words):
    fs = np.zeros(5, np.int64)
    fe = np.zeros(5, np.int64)
    if words == 2:
        ok, s, x, cnt, nxt, h = FS._fast_line(buf, pos, buf.size, fs, fe, KEY)
    elif words:
        ok, s, x, cnt, nxt, h = FS._word_line(buf, pos, buf.size, fs, fe, KEY)
    else:
        ok, s, x, cnt, nxt, h = FS._byte_line(buf, pos, buf.size, fs, fe, KEY)
    if not ok:
        return False, 0, 0, 0, 0, np.uint64(0), 0, 0, 0, 0
    return ok, s, x, cnt, nxt, h, fs[0], fe[0], fs[3], fe[3]


@njit
def _equal(x, i, y, j, n):
    return FS._equal(x, i, y, j, n)


@njit
def _hash_of(buf, a, b):
    return _hash(buf, a, b, KEY)


#: mostly what the fast reader takes (so most examples reach the comparison), with odd ones
digits = st.one_of(st.text("0123456789", min_size=1, max_size=9),
                   st.text("0123456789", min_size=1, max_size=21),
                   st.text("0123456789 -x", max_size=21))
name = st.one_of(st.sampled_from([b"chr1", b"chrUn_KI270742v1", b"1", b"chr\x80\x7f"]),
                 st.binary(min_size=0, max_size=20))
barcode = st.one_of(st.text("ACGT", min_size=1, max_size=26).map(lambda t: t.encode() + b"-1"),
                    st.text("ACGT-1", min_size=0, max_size=26).map(str.encode),
                    st.binary(min_size=0, max_size=26))
sep = st.one_of(st.just(b"\t"), st.just(b"\t"), st.sampled_from([b" ", b"\r", b""]))
end = st.one_of(st.sampled_from([b"\n", b"\t1\n", b"\t12\n"]),
                st.sampled_from([b"\r\n", b"\t.\n", b"\t12\t.\n", b" \n", b""]))


@settings(max_examples=400, deadline=None)
@given(chrom=name,
       start=digits, stop=digits, bc=barcode, count=st.one_of(st.none(), digits),
       seps=st.lists(sep, min_size=4, max_size=4), tail=end,
       pad=st.one_of(st.just(b""), st.binary(max_size=40), st.just(b"x" * 64),
                     st.just(b"x" * 100), st.binary(min_size=96, max_size=110)),
       lead=st.binary(max_size=9), clean=st.booleans(),
       good=st.tuples(st.text("0123456789", min_size=1, max_size=19),
                      st.text("0123456789", min_size=1, max_size=19),
                      st.text("ACGT", min_size=1, max_size=24),
                      st.sampled_from([b"\n", b"\t1\n", b"\t12\n"])))
def test_word_line_is_the_byte_line(chrom, start, stop, bc, count, seps, tail, pad, lead,
                                    clean, good):
    if clean:  # a line the fast reader takes (but for end < start, or over 18 digits)
        start, stop, bc, tail = good[0], good[1], good[2].encode() + b"-1", good[3]
        chrom, seps, count = b"chr1", [b"\t"] * 4, None
    line = chrom + seps[0] + start.encode() + seps[1] + stop.encode() + seps[2] + bc
    if count is not None:
        line += seps[3] + count.encode()
    line += tail
    buf = np.frombuffer(lead + line + pad, np.uint8)
    pos = len(lead)
    by_word, by_byte = _read(buf, pos, 1), _read(buf, pos, 0)
    if by_word[0] or len(pad) >= 64:  # near the end the word path hands the line on
        assert by_word == by_byte
    by_fast = _read(buf, pos, 2)  # the window where the line fits it, else the word path
    if by_fast[0] or len(pad) >= 64:
        assert by_fast == by_byte
    if by_byte[0]:  # what the fast reader accepts, the oracle reads the same way
        ok, s, x, cnt, nxt, h, c0, c1, b0, b1 = by_byte
        text = buf[pos:nxt - 1].tobytes()
        assert parse_line(text) == (buf[c0:c1].tobytes(), s, x, buf[b0:b1].tobytes(), cnt)
        assert h == _hash_of(buf, b0, b1)  # the table's hash of the barcode


def test_word_line_reads_the_common_line():
    line = b"chr1\t123456789\t123457000\tACGTACGTACGTACGT-1\t3\n"
    buf = np.frombuffer(line * 4, np.uint8)
    got = _read(buf, 0, 1)
    assert got[:5] == (True, 123456789, 123457000, 3, len(line))
    assert got[1:] == _read(buf, 0, 0)[1:]
    assert _read(buf, 0, 2) == got


@njit
def _window(buf, pos):
    ok, s, x, cnt, nxt, h, ce, bs, be = FS._window_line(buf, pos, KEY)
    return ok, s, x, cnt, nxt, h, pos, ce, bs, be


def test_window_line_takes_the_common_lines_and_leaves_the_rest():
    pad = b"x" * 100
    for line, cnt in [(b"chr1\t123456789\t123457000\tACGTACGTACGTACGT-1\t3\n", 3),
                      (b"chr1\t5\t20\tACGTACGTACGTACGT-1\n", 1),  # no count column
                      (b"chrUn_KI270742v1\t1234567890123456\t1234567890123457\tAC-1\t12\n", 12),
                      (b"1\t0\t0\tA\t0\n", 0)]:
        buf = np.frombuffer(line + pad, np.uint8)
        got = _window(buf, 0)
        assert got[0] and got[3] == cnt and got[4] == len(line)
        assert got == _read(buf, 0, 0)
    for line in [b"#chr1\t5\t20\tA\t1\n",  # a header
                 b"chr1\t5\t20\tA B\t1\n", b"chr1 5 20 A 1\n",  # spaces
                 b"chr1\t5\t20\tA\t1\r\n", b"chr1\t5\t20\tA\x7f\t1\n",
                 b"chr1\t20\t5\tA\t1\n",  # end before start
                 b"chr1\t12345678901234567\t12345678901234568\tA\t1\n",  # 17 digits
                 b"chr1\t5\t20\tA\t1\t9\n", b"chr1\t5\t20\t\t1\n", b"\t5\t20\tA\t1\n",
                 b"chr1\t5\t2x\tA\t1\n", b"chr1\t5\t20\tA\tx\n",
                 b"chr1\t5\t20\t" + b"A" * 60 + b"\t1\n"]:  # past the window
        assert not _window(np.frombuffer(line + pad, np.uint8), 0)[0], line


@settings(max_examples=200, deadline=None)
@given(a=st.binary(max_size=30), b=st.binary(max_size=30), i=st.integers(0, 5),
       j=st.integers(0, 5))
def test_equal_is_bytes_equality(a, b, i, j):
    x = np.frombuffer(b"\0" * i + a, np.uint8)
    y = np.frombuffer(b"\1" * j + a + b, np.uint8)
    assert _equal(x, i, y, j, len(a))
    n = min(len(a), len(b))
    z = np.frombuffer(b"\2" * j + b, np.uint8)
    assert _equal(x, i, z, j, n) == (a[:n] == b[:n])
