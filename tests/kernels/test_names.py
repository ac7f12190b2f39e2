"""The one region-name parser (``genotok.kernels.names``) against the plain-Python oracle
``naive_regions.parse_region_string``, in both of its forms: per distinct name (the regions'
``parse_region_strings``) and per line (the single-cell var names, ``parse_names``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.kernels import names as N
from tests import naive_regions as naive

# digits, separators, commas, letters and long numbers: every branch of the right-to-left read
NAME = st.one_of(st.text("c1_-:,09x", max_size=14),
                 st.builds(lambda c, s1, a, s2, b: f"{c}{s1}{a}{s2}{b}",
                           st.text("chrUn_:-1", min_size=0, max_size=6), st.sampled_from(":-_"),
                           st.integers(0, 2**63), st.sampled_from("-_"),
                           st.integers(0, 2**63)))


def _buf(names):
    return np.frombuffer(("\n".join(names) + "\n").encode(), np.uint8)


@settings(max_examples=400, deadline=None)
@given(st.lists(NAME, min_size=1, max_size=6), st.sampled_from([None, ":", "-", "_"]))
def test_parse_names_matches_oracle(names, sep):
    names = [x for x in names if "\n" not in x] or ["chr1:1-2"]
    buf = _buf(names)
    want = [naive.parse_region_string(x, sep) for x in names]
    cs, ce, st_, en, bad = N.parse_names(buf, *N.SEPARATORS[sep])
    first_bad = next((i for i, w in enumerate(want) if w is None), -1)
    assert bad == first_bad
    n_ok = len(names) if bad < 0 else bad
    got = [(buf[cs[i]:ce[i]].tobytes().decode(), int(st_[i]), int(en[i])) for i in range(n_ok)]
    assert got == want[:n_ok]


@settings(max_examples=200, deadline=None)
@given(st.lists(NAME, min_size=1, max_size=6), st.sampled_from([None, ":", "-", "_"]))
def test_parse_region_names_codes_in_order_of_first_appearance(names, sep):
    names = [x for x in names if "\n" not in x] or ["chr1:1-2"]
    buf = _buf(names)
    want = [naive.parse_region_string(x, sep) for x in names]
    codes, starts, ends, ns, ne, bad, why = N.parse_region_names(buf, *N.SEPARATORS[sep])
    if any(w is None for w in want):
        assert bad == next(i for i, w in enumerate(want) if w is None) and why != N.NAME_OK
        return
    seen = list(dict.fromkeys(c for c, _, _ in want))
    assert [buf[a:b].tobytes().decode() for a, b in zip(ns.tolist(), ne.tolist())] == seen
    assert [(seen[c], s, e) for c, s, e in zip(codes.tolist(), starts.tolist(),
                                               ends.tolist())] == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-1, 50), min_size=1, max_size=8), st.lists(st.integers(0, 7),
                                                                        max_size=300))
def test_translate_codes_equals_numpy_gather(table, codes):
    table = np.array(table, np.int32)
    codes = np.array(codes, np.int32) % table.size
    got = N.translate_codes(table, codes)
    assert got.dtype == np.int32 and got.tolist() == table[codes].tolist()


def test_translate_codes_refuses_codes_outside_the_table():
    import pytest

    for bad in (3, -1, 2**31 - 1):
        with pytest.raises(IndexError, match=f"code {bad} at row 1"):
            N.translate_codes(np.arange(3, dtype=np.int32), np.array([0, bad, 1], np.int32))


def _colliding_names(n, start=16):
    """``n`` printable 16-byte names that all had one hash under the unkeyed, linear hashes
    (their state after two words was ``rot(start ^ w0) ^ w1``: ``w1 = rot(start ^ w0) ^ C``;
    ``start`` 16, the length, in the parser's, 0 in the fragment scanner's)."""
    import itertools

    def rot(x):
        return ((x << 29) | (x >> 35)) & (2 ** 64 - 1)

    c = int.from_bytes(b"@" * 8, "little")
    out = []
    for combo in itertools.islice(itertools.product([0x40, 0x48, 0x50, 0x58], repeat=8), n):
        w0 = int.from_bytes(bytes(combo), "little")
        out.append(w0.to_bytes(8, "little") + (rot(start ^ w0) ^ c).to_bytes(8, "little"))
    assert all(32 < b < 127 for name in out for b in name)
    return out


def test_crafted_chromosome_names_do_not_collide(tmp_path):
    """A BED file of crafted chromosome names used to put every name on one hash, so each new
    name probed all the others (16,384 of them: 0.78 s to parse against 0.024 s, growing with
    the square). The hash is keyed per table and not linear: they spread; the parse is right."""
    import genotok

    names = _colliding_names(4096)
    buf = np.frombuffer(b"".join(names), np.uint8)
    s = np.arange(len(names), dtype=np.int64) * 16
    key = N._new_key()
    hashes = np.array([N._hash(buf, a, a + 16, key) for a in s])
    assert np.unique(hashes).size == len(names)
    assert N._new_key() != key  # another table, another key
    index, _, _ = N.intern_spans(buf, s, s + 16)
    assert index.tolist() == list(range(len(names)))
    p = tmp_path / "crafted.bed"
    p.write_bytes(b"".join(n + b"\t5\t9\n" for n in names) * 2)
    rs = genotok.RegionSet.from_bed(p)
    assert rs.chrom_names == tuple(n.decode() for n in names)
    assert rs.codes.tolist() == list(range(len(names))) * 2
