"""The value kernels' long rows against their oracles: ``rank_rows`` on rows from
``RADIX_FROM`` entries on (its coarse radix + insertion order, ``values._rank_order``), and the
order itself against a stable NumPy sort. The registry's comparisons (``kernel_registry``) draw
rows of at most 20 entries, which take the short-row sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.kernels import values as VK
from genotok.kernels.cells import RADIX_FROM
from tests import naive_genes
from tests.kernel_registry import _rank_call

_LOW = 0xFFFFFFFF


def _values(n: int, rng: np.random.Generator, kind: str) -> np.ndarray:
    """Positive float64 values of one row: spread over many exponents, a few distinct ones
    (exact ties), float64 neighbours float32 cannot tell apart, a tight cluster with far
    outliers (the coarse keys crowd: the insertion pass gives up), or a cluster in reverse."""
    if kind == "spread":
        return rng.lognormal(0, 3, n)
    if kind == "ties":
        return rng.integers(1, 4, n) / 3.0
    if kind == "near":
        return 1.0 + rng.integers(-3, 4, n) * 2.0**-40
    cluster = 1.0 + np.arange(n) * 2.0**-20  # distinct float32 keys in one coarse key
    if kind == "outliers":
        cluster = rng.permutation(cluster)
        cluster[rng.integers(0, n, 2)] = [1e30, 1e-30]
        return cluster
    return cluster  # "increasing": the insertion pass moves each entry to the front


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 900), st.sampled_from(["spread", "ties", "near", "outliers",
                                             "increasing"]), st.integers(0, 2**32 - 1))
def test_rank_order_is_a_stable_sort_by_value_descending(n, kind, seed):
    rng = np.random.default_rng(seed)
    v = _values(n, rng, kind) if n else np.zeros(0)
    high = _LOW - v.astype(np.float32).view(np.uint32).astype(np.uint64)
    keys = (high << np.uint64(32)) | np.arange(n, dtype=np.uint64)
    lo = high.min() if n else np.uint64(_LOW)
    hi = high.max() if n else np.uint64(0)
    srt = VK._rank_order(keys, np.empty(n, np.uint64), np.empty((4, 256), np.int64), n, v,
                         np.uint64(lo), np.uint64(hi))
    got = (srt[:n] & np.uint64(_LOW)).astype(np.int64)
    assert got.tolist() == np.argsort(-v, kind="stable").tolist()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 4 * RADIX_FROM), min_size=1, max_size=5),
       st.sampled_from([np.float32, np.float64]), st.booleans(), st.booleans(),
       st.integers(0, 3 * RADIX_FROM), st.integers(0, 2**32 - 1))
def test_rank_rows_long_rows_match_the_oracle(sizes, dtype, has_totals, log1p, max_tokens,
                                              seed):
    """Rows of up to 256 entries over 400 columns: raw counts (ties), medians spread over
    decades, near-equal medians, a median 0 now and then, columns without a token."""
    rng = np.random.default_rng(seed)
    n_cols = 400
    indptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    cols = np.concatenate([np.sort(rng.choice(n_cols, k, replace=False)) for k in sizes]
                          ).astype(np.int32)
    data = rng.integers(1, 5, cols.size).astype(dtype)
    k = n_cols  # the sink: a column past every gene
    col_new = np.arange(n_cols, dtype=np.int64)
    med = np.where(rng.random(k + 1) < 0.5, rng.lognormal(0, 2, k + 1),
                   1.0 + rng.integers(-2, 3, k + 1) * 2.0**-40)
    med[rng.random(k + 1) < 0.05] = 0.0
    col_ids = np.where(rng.random(k + 1) < 0.1, -1, rng.permutation(k + 1) + 3)
    col_ids[k] = -1
    sums = np.add.reduceat(np.r_[data.astype(np.float64), 0], indptr[:-1])
    totals = np.where(np.diff(indptr) > 0, sums, 0) + rng.integers(0, 50, len(sizes))
    args = (indptr, cols, data, col_new, k, totals.astype(np.float64), has_totals, 1e4, log1p,
            med, col_ids.astype(np.int64), 1e-300, max_tokens)
    assert _rank_call(VK.rank_rows, *args) == naive_genes.rank_rows(*args)
