"""The fragment line reader eight bytes at a time (``fragscan._word_line``, SWAR) against
the byte loop it replaces (``fragscan._byte_line``) and the plain-Python line oracle
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
    if words:
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
       pad=st.one_of(st.just(b""), st.binary(max_size=40), st.just(b"x" * 64)),
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
    by_word, by_byte = _read(buf, pos, True), _read(buf, pos, False)
    if by_word[0] or len(pad) >= 64:  # near the end the word path hands the line on
        assert by_word == by_byte
    if by_byte[0]:  # what the fast reader accepts, the oracle reads the same way
        ok, s, x, cnt, nxt, h, c0, c1, b0, b1 = by_byte
        text = buf[pos:nxt - 1].tobytes()
        assert parse_line(text) == (buf[c0:c1].tobytes(), s, x, buf[b0:b1].tobytes(), cnt)
        assert h == _hash_of(buf, b0, b1)  # the table's hash of the barcode


def test_word_line_reads_the_common_line():
    line = b"chr1\t123456789\t123457000\tACGTACGTACGTACGT-1\t3\n"
    buf = np.frombuffer(line * 4, np.uint8)
    got = _read(buf, 0, True)
    assert got[:5] == (True, 123456789, 123457000, 3, len(line))
    assert got[1:] == _read(buf, 0, False)[1:]


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
