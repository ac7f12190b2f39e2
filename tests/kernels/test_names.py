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
