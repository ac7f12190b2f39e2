"""The gather kernels (genotok.kernels.gather) against a NumPy oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.kernels import gather as _gather


def naive_gather(rows: list[list[int]], idx) -> list[list[int]]:
    """Oracle for the gather kernels: pick rows one by one."""
    return [list(rows[i]) for i in idx]


def numpy_gather(tokens: np.ndarray, offsets: np.ndarray, idx: np.ndarray):
    """Oracle: the rows ``idx`` of a flat (tokens, offsets) pair, concatenated with NumPy."""
    parts = [tokens[offsets[i]:offsets[i + 1]] for i in idx]
    out_offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=out_offsets[1:])
    return (np.concatenate(parts) if parts else tokens[:0].copy()), out_offsets


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=6), max_size=10), st.data(),
       st.sampled_from([np.uint16, np.uint32, np.float32]))
def test_gather_kernels_match_oracle(rows, data, dtype):
    # empty rows, empty batches, repeated and reversed indices; ids above 65535 as uint32
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    rows = [[x % (info.max + 1) if info else float(x % 1000) for x in r] for r in rows]
    tokens = np.array([x for r in rows for x in r], dtype=dtype)
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    idx = np.array(data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)),
                                      max_size=12 if rows else 0)), dtype=np.int64)
    want, want_offsets = numpy_gather(tokens, offsets, idx)
    for kernel in (_gather.gather, _gather.gather_parallel):  # the serial and the prange kernel
        out = np.full(int(want_offsets[-1]), 7, dtype)
        kernel(tokens, offsets, idx, want_offsets, out)
        np.testing.assert_array_equal(out, want)
        got = [out[want_offsets[k]:want_offsets[k + 1]].tolist() for k in range(idx.size)]
        assert got == naive_gather(rows, idx)


def test_warmup_compiles_both_kernels():
    _gather.warmup()
    assert _gather.gather.signatures and _gather.gather_parallel.signatures
