"""Kernel-level checks: the galloping search, thread-count invariance, concurrent calls."""

from __future__ import annotations

import bisect
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import RegionSet, Tokenizer
from genotok._kernels import _gallop_left, _gallop_right, sort_within_sets

from . import naive_tokenizer as naive


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=40), st.integers(-2, 32), st.data())
def test_gallop_equals_bisect_from_any_guess(values, x, data):
    a = np.array(sorted(values), dtype=np.int64)
    lo = data.draw(st.integers(0, a.size))
    hi = data.draw(st.integers(lo, a.size))
    guess = data.draw(st.integers(-3, a.size + 3))
    assert _gallop_left(a, lo, hi, x, guess) == bisect.bisect_left(a.tolist(), x, lo, hi)
    assert _gallop_right(a, lo, hi, x, guess) == bisect.bisect_right(a.tolist(), x, lo, hi)


def _random_case(seed, n_u=3000, n_q=5000):
    rng = np.random.default_rng(seed)
    chroms = np.array(["chr1", "chr2", "chr3"])
    u = RegionSet.from_arrays(chroms[rng.integers(0, 3, n_u)], s := rng.integers(0, 200_000, n_u),
                              s + rng.integers(0, 5_000, n_u))  # nested and overlapping
    q = RegionSet.from_arrays(np.append(chroms, "chrZ")[rng.integers(0, 4, n_q)],
                              t := rng.integers(0, 200_000, n_q), t + rng.integers(0, 2_000, n_q))
    return u, q


def test_threads_do_not_change_results():
    u, q = _random_case(0)
    tok = Tokenizer(u, unknown="region")
    one = tok.encode(q, n_threads=1)
    assert np.array_equal(one, tok.encode(q, n_threads=2))
    sets = [q.take(np.arange(k, q.codes.size, 7)) for k in range(7)]
    a = tok.encode_batch(sets, n_threads=1, ragged=True)
    assert a == tok.encode_batch(sets, n_threads=2, ragged=True)


def test_against_model_on_a_nested_universe():
    u, q = _random_case(1, n_u=400, n_q=300)
    ureg = list(zip([u.chrom_of(i) for i in range(len(u))], u.starts.tolist(), u.ends.tolist()))
    qreg = list(zip([q.chrom_of(i) for i in range(len(q))], q.starts.tolist(), q.ends.tolist()))
    for opts in ({}, {"overlap": "best"}, {"order": "unique"}, {"min_fraction": 0.5}):
        tok = Tokenizer(RegionSet.from_tuples(ureg), **opts)
        assert tok.encode(q).tolist() == naive.tokenize(ureg, qreg, **opts)


def test_concurrent_calls_from_threads():
    u, q = _random_case(2)
    tok = Tokenizer(u)
    expected = tok.encode(q)
    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(lambda _: tok.encode(q), range(8)):
            assert np.array_equal(got, expected)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 10), max_size=8), max_size=6), st.booleans())
def test_sort_within_sets(rows, unique):
    # ids 0..9 are regions; 10 is <unk>, the only special id a tokenization emits
    rank = np.array([5, 3, 9, 0, 1, 2, 4, 6, 7, 8], dtype=np.int64)
    flat = np.array([x for r in rows for x in r], dtype=np.uint32)
    offs = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    ids, new = sort_within_sets(flat, offs, rank, unique)
    for k, r in enumerate(rows):
        want = sorted(r, key=lambda i: rank[i] if i < 10 else 99)  # specials last
        if unique:
            want = list(dict.fromkeys(want))
        assert ids[new[k]:new[k + 1]].tolist() == want
