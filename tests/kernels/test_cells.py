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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.25]), max_size=9), max_size=12),
       st.integers(0, 5), st.integers(1, 4))
def test_value_order_rows_matches_a_stable_sort(rows, max_tokens, n_blocks):
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    vals = np.array([v for r in rows for v in r], np.float32)
    ids = np.arange(vals.size, dtype=np.int64) * 3 + 1  # genomic order: increasing ids
    want_ids, want_vals, want_len = _value_order_oracle(offsets, ids.copy(), vals.copy(),
                                                        max_tokens)
    blocks = np.unique(np.linspace(0, len(rows), n_blocks + 1).astype(np.int64))
    if blocks[0] != 0:
        blocks = np.r_[0, blocks]
    lengths = K.value_order_rows(offsets, ids, vals, vals.view(np.uint32), max_tokens, blocks)
    assert lengths.tolist() == want_len
    for r, (a, k) in enumerate(zip(offsets[:-1], lengths)):
        assert ids[a:a + k].tolist() == want_ids[r].tolist()
        assert vals[a:a + k].tolist() == want_vals[r].tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.5, 1.0, 2.0, 1.0 + 2**-40, 1.0 - 2**-41, 7.25]),
                         max_size=20), max_size=12),
       st.integers(0, 5), st.integers(1, 4))
def test_value_order_rows64_matches_a_float64_stable_sort(rows, max_tokens, n_blocks):
    # values float32 would make equal (1 + 2**-40, 1, 1 - 2**-41) keep their float64 order
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    vals = np.array([v for r in rows for v in r], np.float64)
    ids = np.arange(vals.size, dtype=np.int64) * 3 + 1
    want_ids, want_vals, want_len = _value_order_oracle(offsets, ids.copy(), vals.copy(),
                                                        max_tokens)
    blocks = np.unique(np.linspace(0, len(rows), n_blocks + 1).astype(np.int64))
    if blocks[0] != 0:
        blocks = np.r_[0, blocks]
    lengths = K.value_order_rows64(offsets, ids, vals, max_tokens, blocks)
    assert lengths.tolist() == want_len
    for r, (a, k) in enumerate(zip(offsets[:-1], lengths)):
        assert ids[a:a + k].tolist() == want_ids[r].tolist()
        assert vals[a:a + k].tolist() == want_vals[r].tolist()
