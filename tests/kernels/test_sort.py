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
