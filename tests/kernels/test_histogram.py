"""The medians pass' kernels (genotok.kernels.histogram) and the fused encode kernels of
genotok.kernels.values against their oracles (tests/naive_histogram.py, the unfused kernels,
and test_values' NumPy oracles) on random CSR chunks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok.errors import AnnDataError
from genotok.kernels import histogram as HK
from genotok.kernels import values as VK
from genotok.singlecell.values import ValueEncoding, _Histogram
from tests.singlecell.test_values import _nans, oracle_bins, oracle_normalize

from .. import naive_histogram as naive

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

value = st.one_of(st.just(0.0), st.integers(1, 5).map(float), st.integers(4000, 5000).map(float),
                  st.floats(1e-6, 1e6), st.just(1e300), st.just(3e9))


@st.composite
def chunks(draw, bad=False):
    """A rebased CSR chunk: rows (some empty), columns over up to three feature blocks."""
    n_features = draw(st.integers(1, 3 * (1 << HK.BLOCK)))
    lengths = draw(st.lists(st.integers(0, 6), max_size=6))
    indptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    n = int(indptr[-1])
    cols = st.integers(0, n_features - 1)
    vals = value
    if bad:
        cols = st.one_of(cols, st.just(n_features), st.just(-1))
        vals = st.one_of(value, st.just(np.nan), st.just(np.inf), st.just(-1.0))
    indices = np.array(draw(st.lists(cols, min_size=n, max_size=n)), np.int64)
    data = np.array(draw(st.lists(vals, min_size=n, max_size=n)), np.float64)
    if draw(st.booleans()) and not np.any(np.abs(data) > 1e30):
        data = data.astype(np.float32)
    if draw(st.booleans()) and (indices.size == 0 or indices.max() < 2**31):
        indices = indices.astype(np.int32)
    return indptr, indices, data, n_features


@settings(max_examples=300, **SETTINGS)
@given(ch=st.one_of(chunks(), chunks(bad=True)), normalize=st.booleans(), log1p=st.booleans(),
       exact=st.booleans(), B=st.sampled_from([1.0, 128.0]))
def test_chunk_keys_matches_oracle(ch, normalize, log1p, exact, B):
    indptr, indices, data, n_features = ch
    keys, starts, status, pos = HK.chunk_keys(indptr, indices, data, n_features, normalize, 1e4,
                                              log1p, exact, B)
    want, want_status, want_pos = naive.chunk_keys(indptr, indices, data, n_features, normalize,
                                                   1e4, log1p, exact, B)
    assert (status, pos) == (want_status, want_pos)
    if status != HK.OK:
        return
    blocks = [k >> 32 >> HK.BLOCK for k in want]  # grouped by block, row order within one
    order = sorted(range(len(want)), key=lambda i: blocks[i])
    assert keys.tolist() == [want[i] for i in order]
    assert starts[-1] == len(want)
    for q in range(starts.size - 1):
        assert all(k >> 32 >> HK.BLOCK == q for k in keys[starts[q]:starts[q + 1]].tolist())


def _table_of(block_keys: dict, counts: dict | None = None):
    """Tables of the blocks' keys (``add_block``), their pairs and the spills."""
    got, spills = Counter(), Counter()
    tables = []
    for q in range(max(block_keys, default=-1) + 1):
        keys = np.array(block_keys.get(q, []), np.int64)
        c = None if counts is None else np.array(counts.get(q, []), np.int64)
        table, n_used, flat = HK.add_block(HK.new_table(q % 3), 0, q, keys, c, 0, keys.size)
        k, n = HK.pairs(table, q)
        assert n_used == k.size == len(set(keys.tolist()))
        got.update(dict(zip(k.tolist(), n.tolist())))
        for key, m in flat.reshape(-1, 2).tolist():
            spills[key] += m
        tables.append(table)
    return tables, got, spills


pair = st.tuples(st.integers(0, 3 * (1 << HK.BLOCK) - 1), st.integers(-2000, 2000))


@settings(max_examples=200, **SETTINGS)
@given(pairs=st.lists(st.tuples(pair, st.one_of(st.integers(1, 3),
                                                st.just(HK.COUNT_MAX), st.just(2**40))),
                      max_size=80))
def test_tables_count_like_a_counter_and_spill_big_counts(pairs):
    by_block, counts, want = {}, {}, Counter()
    for (f, c), n in pairs:
        key = f << 32 | (c + naive.OFF)
        by_block.setdefault(f >> HK.BLOCK, []).append(key)
        counts.setdefault(f >> HK.BLOCK, []).append(n)
        want[key] += n
    _, got, spills = _table_of(by_block, counts)
    assert all(0 <= n <= HK.COUNT_MAX for n in got.values())
    total = Counter(got)
    total.update(spills)
    assert {k: v for k, v in total.items() if v} == dict(want)
    assert set(spills) <= set(got)  # a spilled count keeps its slot


@settings(max_examples=200, **SETTINGS)
@given(pairs=st.lists(st.tuples(pair, st.one_of(st.integers(1, 4), st.just(2**30))),
                      max_size=80), exact=st.booleans(), extra=st.integers(0, 2),
       cut=st.floats(0, 1))
def test_medians_match_oracle(pairs, exact, extra, cut):
    hist, by_block, counts = Counter(), {}, {}
    for (f, c), n in pairs:
        c = abs(c) + 1 if exact else c
        hist[(f, c)] += n
        by_block.setdefault(f >> HK.BLOCK, []).append(f << 32 | (c + naive.OFF))
        counts.setdefault(f >> HK.BLOCK, []).append(n)
    n_features = max((f for f, _ in hist), default=0) + 1 + extra
    tables, _, spills = _table_of(by_block, counts)
    n_blocks = max(1, -(-n_features // (1 << HK.BLOCK)))
    while len(tables) < n_blocks:
        tables.append(HK.new_table(2))
    from numba.typed import List

    keys = np.array(sorted(spills), np.int64)
    counts = np.array([spills[k] for k in keys.tolist()], np.int64)
    want = naive.medians(hist, n_features, exact, 16.0)
    med, ok = HK.medians(List(tables), keys, counts, n_features, exact, 16.0, 0, len(tables),
                         np.full(n_features, np.nan))
    assert ok
    np.testing.assert_array_equal(med, want)
    # two threads' ranges of blocks (each with its blocks' spills) into one array: the same
    q = int(cut * len(tables))
    s = int(np.searchsorted(keys, np.int64(q) << (HK.BLOCK + 32)))
    med = np.full(n_features, np.nan)
    assert HK.medians(List(tables), keys[:s], counts[:s], n_features, exact, 16.0, 0, q, med)[1]
    assert HK.medians(List(tables), keys[s:], counts[s:], n_features, exact, 16.0, q,
                      len(tables), med)[1]
    np.testing.assert_array_equal(med, want)


def test_medians_refuse_a_key_outside_the_features():
    from numba.typed import List

    table, _, _ = HK.add_block(HK.new_table(2), 0, 0, np.array([5 << 32 | naive.OFF + 1]),
                               None, 0, 1)
    none = np.zeros(0, np.int64)

    def ok(spill_keys, spill_counts, n):
        return HK.medians(List([table]), spill_keys, spill_counts, n, True, 1.0, 0, 1,
                          np.full(n, np.nan))[1]

    assert not ok(none, none, 3)
    assert ok(none, none, 6)
    lost = np.array([4 << 32 | naive.OFF + 1])  # a spill without its slot
    assert not ok(lost, np.array([1]), 6)


def test_exact_histogram_with_spills_becomes_a_log_histogram():
    hist = _Histogram(16, 3)
    key = 1 << 32 | (7 + naive.OFF)  # feature 1, value 7: one spill of COUNT_MAX + 2
    table, n_used, flat = HK.add_block(hist.tables[0], 0, 0, np.array([key, key]),
                                       np.array([HK.COUNT_MAX, 2]), 0, 2)
    hist.tables[0], hist.used[0] = table, n_used
    hist._spilled(flat)
    assert hist.spills == {key: HK.COUNT_MAX + 2}
    p = np.array([0, 2, 3], np.int64)
    hist.add_rows(p, np.array([1, 2, 1]), np.array([1.0, 2.0, 1.5]), ValueEncoding(), "x")
    assert not hist.exact
    want = naive.medians({(1, int(np.floor(np.log2(7.0) * 16))): HK.COUNT_MAX + 2,
                          (1, 0): 1, (1, int(np.floor(np.log2(1.5) * 16))): 1,
                          (2, 16): 1}, 3, False, 16.0)
    np.testing.assert_array_equal(hist.medians(), want)


def test_histogram_errors_name_the_file():
    hist = _Histogram(16, 3)
    p = np.array([0, 2], np.int64)
    with pytest.raises(AnnDataError, match=r"f\.h5ad: value encodings need .* found nan"):
        hist.add_rows(p, np.array([0, 1]), np.array([1.0, np.nan]), ValueEncoding(), "f.h5ad")
    with pytest.raises(AnnDataError, match=r"f\.h5ad: column index 3 at position 1"):
        hist.add_rows(p, np.array([0, 3]), np.array([1.0, 1.0]), ValueEncoding(), "f.h5ad")


# ------------------------------------------------------------------ fused encode kernels
@settings(max_examples=80, **SETTINGS)
@given(ch=chunks(), target=st.sampled_from([1.0, 1e4]), log1p=st.booleans(),
       n_bins=st.integers(2, 51), seed=st.integers(0, 3))
def test_fused_kernels_equal_the_unfused_ones(ch, target, log1p, n_bins, seed):
    indptr, indices, data, n_features = ch
    d64 = data.astype(np.float64)
    norm = VK.normalize_rows(indptr, d64, target, log1p, _nans(d64))
    rng = np.random.default_rng(seed)
    med = np.where(rng.random(n_features) < 0.2, np.nan, rng.random(n_features) * 3)
    med[rng.random(n_features) < 0.1] = 0.0
    ratios = VK.divide_by_median(norm, indices, med, _nans(norm))
    got = _nans(data)
    clean = VK.normalize_divide(indptr, indices, data, target, log1p, med, got)
    np.testing.assert_array_equal(got, ratios)
    assert clean == _clean_oracle(indptr, indices, data, n_features, target, ratios)
    got = _nans(data)
    clean = VK.normalize_bins(indptr, indices, data, n_features, target, log1p, n_bins, got)
    np.testing.assert_array_equal(got, VK.row_bins(indptr, norm, n_bins, d64, _nans(d64)))
    assert clean == _clean_oracle(indptr, indices, data, n_features, target)
    X = np.zeros((indptr.size - 1, n_features))
    for r in range(indptr.size - 1):  # duplicate columns in a row: the oracles need none
        cols = indices[indptr[r]:indptr[r + 1]]
        if len(set(cols.tolist())) != cols.size or not np.all(np.isfinite(norm)):
            return
        X[r, cols] = d64[indptr[r]:indptr[r + 1]]
    got = _nans(data)
    VK.normalize_bins(indptr, indices, data, n_features, target, log1p, n_bins, got)
    dense = np.zeros_like(X)
    for r in range(X.shape[0]):
        dense[r, indices[indptr[r]:indptr[r + 1]]] = got[indptr[r]:indptr[r + 1]]
    np.testing.assert_array_equal(dense, oracle_bins(oracle_normalize(X, target, log1p), n_bins))


def _clean_oracle(indptr, indices, data, n_cols, target, ratios=None) -> bool:
    """Whether the one-pass encode kernels may be trusted with a chunk: every row's values
    finite and >= 0, its columns strictly increasing within [0, n_cols), its float64 total
    (summed in order) normalising, and (given) every ratio finite."""
    for r in range(indptr.size - 1):
        vals = [float(x) for x in data[indptr[r]:indptr[r + 1]]]
        cols = [int(c) for c in indices[indptr[r]:indptr[r + 1]]]
        if any(not (0 <= x < np.inf) for x in vals) or any(not 0 <= c < n_cols for c in cols):
            return False
        if any(b <= a for a, b in zip(cols, cols[1:])):
            return False
        total = np.float64(0.0)
        for x in vals:
            total += np.float64(x)
        if not (total == 0 or (total < np.inf and target / total < np.inf)):
            return False
    return ratios is None or bool(np.all(np.isfinite(ratios)))


@settings(max_examples=150, **SETTINGS)
@given(ch=chunks(bad=True), target=st.sampled_from([1.0, 1e4, 1e300]), log1p=st.booleans())
def test_one_pass_kernels_say_whether_the_chunk_is_clean(ch, target, log1p):
    indptr, indices, data, n_features = ch
    med = np.linspace(1e-300, 3.0, n_features)  # a tiny median: ratios that overflow
    ok = _clean_oracle(indptr, indices, data, n_features, target)
    got = _nans(data)
    bins_clean = VK.normalize_bins(indptr, indices, data, n_features, target, log1p, 5, got)
    assert bins_clean == ok
    clean = VK.normalize_divide(indptr, indices, data, target, log1p, med, got)
    if not ok:
        assert not clean
    else:  # the rows are sound: the ratios decide
        d64 = data.astype(np.float64)
        norm = VK.normalize_rows(indptr, d64, target, log1p, _nans(d64))
        ratios = VK.divide_by_median(norm, indices, med, _nans(norm))
        assert clean == bool(np.all(np.isfinite(ratios)))
        np.testing.assert_array_equal(got, ratios)


@settings(max_examples=150, **SETTINGS)
@given(ch=chunks(bad=True),
       which=st.sampled_from(["medians", "bins", "medians-log1p"]), row0=st.integers(0, 9),
       offset=st.integers(0, 3))
def test_one_pass_encoder_equals_the_general_path(ch, which, row0, offset):
    """The chunk encoder's one-pass kernels (taken when every row is clean) give what the
    general path gives (repeated columns summed, the checks, the kernels), error or values."""
    from genotok.singlecell.chunks import Chunk
    from genotok.singlecell.values import _summed_duplicates

    indptr, indices, data, n_features = ch
    med = np.linspace(0.0, 3.0, n_features)  # a median of 0: its feature encodes to 0
    enc = (ValueEncoding("total", medians=med, log1p=which == "medians-log1p")
           if which != "bins" else ValueEncoding("total", bins=7))
    # the chunk's rows start `offset` entries into its arrays (a stream's chunk)
    pad = np.zeros(offset, indices.dtype)
    chunk = Chunk(row0, indptr + offset, np.r_[pad, indices], np.r_[np.zeros(offset,
                  data.dtype), data], n_features)

    def general():
        ptr, idx, d = _summed_duplicates(indptr, indices, data, n_features)
        return ptr, idx, enc.encode(ptr, idx, d, n_features, "X", row0)

    try:
        want = general()
    except AnnDataError as exc:
        with pytest.raises(AnnDataError) as got:
            enc.chunk_encoder(n_features, "X")(chunk)
        assert str(got.value) == str(exc)
        return
    got = enc.chunk_encoder(n_features, "X")(chunk)
    np.testing.assert_array_equal(got.indptr, want[0])
    np.testing.assert_array_equal(got.indices, want[1])
    np.testing.assert_array_equal(got.data, want[2])


def test_chunk_keys_reports_the_row_like_its_oracle():
    import tests.naive_histogram as naive
    from genotok.kernels import histogram as HK

    indptr = np.array([0, 1, 3, 4], np.int64)
    indices = np.array([0, 1, 2, 0], np.int64)
    for data in (np.array([1.0, 1e-320, 1e-320, 2.0]), np.array([1.0, 1e308, 1e308, 2.0]),
                 np.array([1.0, 1e308, 1e308, np.nan])):  # a bad value first
        got = HK.chunk_keys(indptr, indices, data, 3, True, 1e4, False, False, 128.0)
        want = naive.chunk_keys(indptr, indices, data, 3, True, 1e4, False, False, 128.0)
        assert (got[2], got[3]) == (want[1], want[2])
        assert got[2] == (HK.BAD_VALUE if np.isnan(data[-1]) else HK.BAD_TOTAL)
        # without normalize, nothing overflows: the values are counted
        assert HK.chunk_keys(indptr, indices, data, 3, False, 1e4, False, False,
                             128.0)[2] == (HK.BAD_VALUE if np.isnan(data[-1]) else HK.OK)
