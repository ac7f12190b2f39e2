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
