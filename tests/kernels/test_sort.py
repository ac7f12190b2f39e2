"""The radix argsort (genotok.kernels.sort) against NumPy's stable argsort, its oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.kernels import sort as _sort


@pytest.fixture
def radix_always(monkeypatch):
    """Take the radix path for every size (it normally starts at 65,536 keys)."""
    monkeypatch.setattr(_sort, "MIN_RADIX", 1)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(0, 2**40), max_size=300),
       dup=st.integers(1, 4))
def test_radix_equals_numpy_stable_argsort(keys, dup):
    _sort.MIN_RADIX, saved = 1, _sort.MIN_RADIX
    try:
        k = np.array(keys * dup, dtype=np.int64)  # repeats: ties must keep input order
        got = _sort.stable_argsort(k)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.argsort(k, kind="stable"))
    finally:
        _sort.MIN_RADIX = saved


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32, np.uint32, np.uint16])
def test_dtypes_and_the_gtars_key(radix_always, dtype):
    rng = np.random.default_rng(1)
    n = 5000
    ranks = rng.integers(0, 30, n)
    starts = rng.integers(0, {2: 1000, 4: 1_000_000}.get(np.dtype(dtype).itemsize, 250_000_000), n)
    key = (ranks * (int(starts.max()) + 1) + starts) if dtype != np.uint16 else starts
    key = key.astype(dtype)
    np.testing.assert_array_equal(_sort.stable_argsort(key), np.argsort(key, kind="stable"))


def test_edge_cases(radix_always):
    for k in ([], [0], [5, 5, 5, 5], [2**40, 0, 2**40, 1]):
        k = np.array(k, dtype=np.int64)
        np.testing.assert_array_equal(_sort.stable_argsort(k), np.argsort(k, kind="stable"))


def test_keys_too_wide_to_pack_fall_back_to_numpy(radix_always):
    k = np.array([2**62, 3, 2**62, 1], dtype=np.int64)  # 63 key bits + 2 index bits > 64
    np.testing.assert_array_equal(_sort.stable_argsort(k), [3, 1, 0, 2])


def test_negative_keys_are_refused(radix_always):
    with pytest.raises(ValueError, match="non-negative"):
        _sort.stable_argsort(np.array([1, -1], np.int64))


def test_large_input_takes_the_radix_path():
    rng = np.random.default_rng(2)
    k = rng.integers(0, 2**33, _sort.MIN_RADIX * 3)
    k[::7] = k[0]  # many ties
    np.testing.assert_array_equal(_sort.stable_argsort(k), np.argsort(k, kind="stable"))


# ------------------------------------------------------------------ sort_regions

def _regions_oracle(codes, starts, ends, rank, code_of):
    """NumPy: a stable lexsort by (rank, start), then gathers."""
    r = rank[codes]
    perm = np.lexsort((starts, r))
    return perm, code_of[r[perm]], starts[perm], ends[perm]


@pytest.fixture
def buckets_always(monkeypatch):
    """Take the bucket path for every size (it normally starts at 524,288 regions)."""
    monkeypatch.setattr(_sort, "MIN_BUCKET", 1)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2**33), st.integers(0, 50)),
                     max_size=300),
       dup=st.integers(1, 3), small=st.booleans(), perm=st.booleans(), data=st.data())
def test_sort_regions_equals_lexsort_and_gathers(rows, dup, small, perm, data):
    saved, _sort.MIN_BUCKET = _sort.MIN_BUCKET, 1
    try:
        rows = rows * dup  # duplicates: ties must keep input order
        codes = np.array([c for c, _, _ in rows], np.int32)
        starts = np.array([s % 40 if small else s for _, s, _ in rows], np.int64)  # many ties
        ends = starts + np.array([n for _, _, n in rows], np.int64)
        rank = np.array(data.draw(st.permutations(range(4))), np.int64)
        code_of = np.array([7, -1, 0, 70_000], np.int32)  # e.g. a universe's codes, -1 unknown
        got = _sort.sort_regions(codes, starts, ends, rank, code_of, perm=perm)
        want = _regions_oracle(codes, starts, ends, rank, code_of)
        assert (got[0] is None) == (not perm)
        for name, g, w in zip(("perm", "codes", "starts", "ends"), got, want):
            if g is None:
                continue
            assert g.dtype == w.dtype or (name == "perm" and g.dtype == np.int64), name
            np.testing.assert_array_equal(g, w, err_msg=name)
    finally:
        _sort.MIN_BUCKET = saved


def test_sort_regions_paths(buckets_always):
    rng = np.random.default_rng(3)
    n = 20_000
    codes = rng.integers(0, 5, n).astype(np.int32)
    rank = np.array([4, 0, 3, 1, 2], np.int64)
    code_of = np.arange(5, dtype=np.int32)[::-1].copy()
    for starts in (rng.integers(0, 250_000_000, n),   # buckets of ~10, sorted by insertion
                   rng.integers(0, 3, n),             # few distinct keys: large buckets
                   np.zeros(n, np.int64),             # one key per chromosome
                   np.sort(rng.integers(0, 10**6, n))):
        ends = starts + rng.integers(0, 9, n)
        for single in (False, True):
            c = np.zeros(n, np.int32) if single else codes  # one bucket holds everything
            got = _sort.sort_regions(c, starts, ends, rank, code_of)
            for g, w in zip(got, _regions_oracle(c, starts, ends, rank, code_of)):
                np.testing.assert_array_equal(g, w)
    # empty, and keys + index bits over 64: the NumPy fallback
    e = np.zeros(0, np.int64)
    assert all(a.size == 0 for a in _sort.sort_regions(np.zeros(0, np.int32), e, e, rank, code_of))
    big = np.array([2**62, 5, 2**62, 0], np.int64)
    got = _sort.sort_regions(np.array([1, 1, 0, 1], np.int32), big, big + 1, rank, code_of)
    assert got[0].tolist() == [3, 1, 0, 2]


@pytest.mark.parametrize("args, match", [
    ((np.array([0, 5], np.int32), np.array([1, 2]), np.array([3, 4])), "codes must lie in 0..4"),
    ((np.array([0, -1], np.int32), np.array([1, 2]), np.array([3, 4])), "codes must lie"),
    ((np.array([0, 1], np.int32), np.array([1, -2]), np.array([3, 4])), "non-negative"),
    ((np.array([0, 1], np.int32), np.array([1, 2]), np.array([3])), "differ in length"),
])
def test_sort_regions_refuses_what_would_index_out_of_bounds(buckets_always, args, match):
    with pytest.raises(ValueError, match=match):
        _sort.sort_regions(*args, np.arange(5), np.arange(5, dtype=np.int32))
    with pytest.raises(ValueError, match="ranks must lie in 0..4"):
        _sort.sort_regions(np.array([0], np.int32), np.array([1]), np.array([2]),
                           np.array([0, 5]), np.arange(5, dtype=np.int32))


# ------------------------------------------------------------------ sorted_runs

def _runs_oracle(codes, starts):
    """The NumPy version it replaced: code changes, then a diff of the starts within runs."""
    change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    bounds = np.concatenate(([0], change, [codes.size])).astype(np.int64)
    ds = np.diff(starts)
    ds[change - 1] = 0  # a step between runs may go down
    return None if (ds < 0).any() else (bounds, codes[bounds[:-1]])


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), min_size=1, max_size=60),
       presort=st.booleans())
def test_sorted_runs_equals_numpy(rows, presort):
    if presort:  # sorted within chromosomes, chromosomes in any order, repeated runs allowed
        rows = sorted(rows, key=lambda r: (r[0] % 2, r[0], r[1]))
    codes = np.array([c for c, _ in rows], np.int32)
    starts = np.array([s for _, s in rows], np.int64)
    got, want = _sort.sorted_runs(codes, starts), _runs_oracle(codes, starts)
    assert (got is None) == (want is None)
    if got is not None:
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_sorted_runs_with_more_runs_than_one_pass_holds():
    """More runs than the first pass' bounds hold (255): a second pass fills them."""
    for n in (255, 256, 257, 1000):
        codes = (np.arange(n) % 2).astype(np.int32)  # a run per row
        got = _sort.sorted_runs(codes, np.zeros(n, np.int64))
        np.testing.assert_array_equal(got[0], np.arange(n + 1))
        np.testing.assert_array_equal(got[1], codes)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 20), max_size=12), data=st.data())
def test_runs_order_equals_concatenated_ranges(sizes, data):
    bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    pieces = np.array(data.draw(st.permutations(range(len(sizes)))), np.int64)
    want = np.concatenate([np.arange(bounds[k], bounds[k + 1]) for k in pieces] + [
        np.zeros(0, np.int64)])
    got = _sort.runs_order(bounds, pieces)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


@pytest.mark.parametrize("bounds, pieces", [
    ([0, 2, 1], [0, 1]),      # bounds decrease
    ([1, 2, 3], [0, 1]),      # do not start at 0
    ([0, 2, 3], [0, 0]),      # not a permutation
    ([0, 2, 3], [0, 2]),      # a run that does not exist
    ([0, 2, 3], [0]),         # too few pieces
])
def test_runs_order_refuses_what_would_index_out_of_bounds(bounds, pieces):
    with pytest.raises(ValueError):
        _sort.runs_order(np.array(bounds), np.array(pieces))
