"""Kernels of ``genotok.kernels.cells`` against their plain-Python oracles (``naive_cells``);
the per-row kernels are compared end to end in ``tests/singlecell``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.kernels import cells as K
from tests import naive_cells as naive


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=8), st.data())
def test_compact_matches_oracle(rows, data):
    """Slots of random capacity (rows longer than their slot never happen: length <= room)."""
    rooms = [max(a, b) for a, b in rows]
    lengths = np.array([min(a, b) for a, b in rows], np.int64)
    cap_offsets = np.r_[0, np.cumsum(rooms)].astype(np.int64)
    size = int(cap_offsets[-1])
    ids = np.array(data.draw(st.lists(st.integers(0, 2**31), min_size=size, max_size=size)),
                   np.int64)
    vals = np.arange(size, dtype=np.float32) + 0.5
    want = naive.compact(ids.tolist(), vals.tolist(), cap_offsets.tolist(), lengths.tolist())
    n = K.compact(ids, vals, cap_offsets, lengths)
    assert n == len(want[0])
    assert ids[:n].tolist() == want[0] and vals[:n].tolist() == want[1]


# ----------------------------------------------------------- value order of a genomic fill
def _value_order_oracle(offsets, ids, vals, max_tokens):
    """``naive.value_order`` (the float32 and float64 kernels' oracle) as arrays."""
    want_ids, want_vals, lengths = naive.value_order([int(x) for x in offsets], ids.tolist(),
                                                     vals.tolist(), max_tokens)
    return ([np.array(x, ids.dtype) for x in want_ids],
            [np.array(x, vals.dtype) for x in want_vals], lengths)


def _value_order_case(rows, dtype, max_tokens, n_blocks):
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    vals = np.array([v for r in rows for v in r], dtype)
    ids = np.arange(vals.size, dtype=np.int64) * 3 + 1  # genomic order: increasing ids
    want_ids, want_vals, want_len = _value_order_oracle(offsets, ids.copy(), vals.copy(),
                                                        max_tokens)
    blocks = np.unique(np.linspace(0, len(rows), n_blocks + 1).astype(np.int64))
    if blocks[0] != 0:
        blocks = np.r_[0, blocks]
    lengths = K.value_order_rows(offsets, ids, vals, max_tokens, blocks)
    assert lengths.tolist() == want_len
    for r, (a, k) in enumerate(zip(offsets[:-1], lengths)):
        assert ids[a:a + k].tolist() == want_ids[r].tolist()
        assert vals[a:a + k].tolist() == want_vals[r].tolist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.25]), max_size=9), max_size=12),
       st.integers(0, 5), st.integers(1, 4))
def test_value_order_rows_matches_a_stable_sort(rows, max_tokens, n_blocks):
    _value_order_case(rows, np.float32, max_tokens, n_blocks)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.5, 1.0, 2.0, 1.0 + 2**-40, 1.0 - 2**-41, 7.25]),
                         max_size=20), max_size=12),
       st.integers(0, 5), st.integers(1, 4))
def test_value_order_rows_float64_matches_a_float64_stable_sort(rows, max_tokens, n_blocks):
    # values float32 would make equal (1 + 2**-40, 1, 1 - 2**-41) keep their float64 order
    _value_order_case(rows, np.float64, max_tokens, n_blocks)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3 * K.RADIX_FROM), max_size=6), st.sampled_from(
    [np.float32, np.float64]), st.integers(0, 2 * K.RADIX_FROM), st.integers(1, 3),
    st.integers(0, 2**32 - 1), st.sampled_from([3, 40, 10**6]))
def test_value_order_rows_radix_matches_a_stable_sort(sizes, dtype, max_tokens, n_blocks, seed,
                                                      spread):
    """Rows from RADIX_FROM tokens on take the radix sort: many ties (a few distinct counts),
    values over many exponents (every byte of the keys moves), float64 near-ties."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        v = rng.integers(1, spread + 1, n) / rng.choice([1.0, 3.0, 7.0])
        if dtype is np.float64:  # neighbours float32 cannot tell apart
            v = np.where(rng.random(n) < 0.3, 1.0 + rng.integers(-2, 3, n) * 2.0**-40, v)
        rows.append(v.tolist())
    _value_order_case(rows, dtype, max_tokens, n_blocks)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3 * K.RADIX_FROM), max_size=6), st.sampled_from(
    [np.float32, np.float64]), st.integers(0, 2 * K.RADIX_FROM), st.integers(1, 3),
    st.integers(0, 2**32 - 1), st.booleans())
def test_value_rows_matches_the_kept_entries_sorted_by_value(sizes, dtype, max_tokens,
                                                             n_blocks, seed, with_values):
    """CSR rows with zeros, infinite values, columns without a token, ties and float64
    near-ties; the counts are the kept entries with a token, cut to max_tokens."""
    rng = np.random.default_rng(seed)
    n_cols = 50
    col_ids = np.where(rng.random(n_cols) < 0.8, rng.permutation(n_cols) + 5, -1)
    indptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    indices = np.concatenate([np.sort(rng.integers(0, n_cols, n)) for n in sizes] +
                             [np.zeros(0, np.int64)]).astype(np.int64)
    data = (rng.integers(0, 6, indices.size) / 3.0).astype(np.float64)
    data[rng.random(data.size) < 0.05] = np.inf
    if dtype is np.float64:
        data = np.where(rng.random(data.size) < 0.3,
                        1.0 + rng.integers(-2, 3, data.size) * 2.0**-40, data)
    data = data.astype(dtype)
    keep_from = K.KEEP_POSITIVE
    want_ids, want_vals = naive.value_rows(indptr.tolist(), indices.tolist(), data.tolist(),
                                           col_ids.tolist(), keep_from, max_tokens)
    offsets = np.r_[0, np.cumsum([len(x) for x in want_ids])].astype(np.int64)
    ids = np.full(offsets[-1], 99, np.uint32)
    vals = np.full(offsets[-1], -1.0, np.float32) if with_values else None
    blocks = np.unique(np.linspace(0, len(sizes), n_blocks + 1).astype(np.int64))
    if blocks[0] != 0:
        blocks = np.r_[0, blocks]
    K.value_rows(indptr, indices, data, col_ids, keep_from, blocks, offsets, ids, vals)
    for r, (a, z) in enumerate(zip(offsets[:-1], offsets[1:])):
        assert ids[a:z].tolist() == want_ids[r]
        if with_values:
            assert vals[a:z].tolist() == np.array(want_vals[r], np.float32).tolist()
