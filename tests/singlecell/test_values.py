"""Value encodings (normalize / rank by median / bins): kernels vs NumPy oracles, and
tokenize_anndata in memory = backed = corpus, CSR and CSC."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from genotok import (
    AnnDataOptions,
    Bins,
    CellSpec,
    Normalize,
    RankByMedian,
    Tokenizer,
    TokenizerSettings,
)
from genotok.errors import AnnDataError
from genotok.kernels import values as VK
from genotok.singlecell import tokenize_anndata
from genotok.singlecell.values import ValueEncoding, feature_medians, value_encoding
from tests._cellspec import spec_of


def _nans(like) -> np.ndarray:
    """An output for a kernel that must write every entry: NaN where it writes none."""
    return np.full(len(like), np.nan)


anndata = pytest.importorskip("anndata")
sp = pytest.importorskip("scipy.sparse")


# ------------------------------------------------------------------------------------ oracles
def oracle_normalize(X, target_sum, log1p):
    X = np.asarray(X, dtype=np.float64)
    tot = X.sum(axis=1, keepdims=True)
    scale = np.divide(target_sum, tot, out=np.zeros_like(tot), where=tot > 0)
    out = X * scale  # the kernel's arithmetic (value * (target / total)): ties stay ties
    return np.log1p(out) if log1p else out


def oracle_medians(X):
    X = np.asarray(X, dtype=np.float64)
    med = np.full(X.shape[1], np.nan)
    for j in range(X.shape[1]):
        col = X[:, j][X[:, j] > 0]
        if col.size:
            med[j] = np.median(col)
    return med


def quantised(X, B):
    """Each positive value replaced by the geometric midpoint of its log2 bin."""
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros_like(X)
    pos = X > 0
    out[pos] = 2.0 ** ((np.floor(np.log2(X[pos]) * B) + 0.5) / B)
    return out


def oracle_feature_medians(X, B=128):
    """What feature_medians states: exact while every value is an integer, else the medians
    of the values rounded to their log2 bins."""
    X = np.asarray(X, dtype=np.float64)
    exact = np.all(X == np.floor(X))
    return oracle_medians(X if exact else quantised(X, B))


def oracle_bins(X, n_bins):
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros_like(X)
    for i, row in enumerate(X):
        pos = np.sort(row[row > 0])
        for j, v in enumerate(row):
            if v > 0:
                r = int(np.sum(pos < v))
                out[i, j] = 1 + (r * (n_bins - 1)) // pos.size
    return out


def oracle_encode(X, normalize=None, target_sum=1e4, log1p=False, medians=None, bins=None):
    X = np.asarray(X, dtype=np.float64)
    if normalize == "total":
        X = oracle_normalize(X, target_sum, log1p)
    elif log1p:
        X = np.log1p(X)
    if medians is not None:
        ok = medians > 0
        X = np.where(ok[None, :] & (X > 0), X / np.where(ok, medians, 1.0)[None, :], 0.0)
    if bins is not None:
        X = oracle_bins(X, bins)
    return X


counts = hnp.arrays(np.int64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12),
                    elements=st.integers(0, 6).map(lambda v: 0 if v < 3 else v - 2))
reals = hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12),
                   elements=st.one_of(st.just(0.0), st.floats(0.001, 1000.0)))
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def _csr_parts(X):
    m = sp.csr_matrix(X)
    return m.indptr.astype(np.int64), m.indices, m.data.astype(np.float64)


def _dense_from(indptr, indices, data, shape):
    return sp.csr_matrix((data, indices, indptr), shape=shape).toarray()


# ------------------------------------------------------------------------------------ kernels
@settings(max_examples=80, **SETTINGS)
@given(X=st.one_of(counts, reals), target=st.sampled_from([1.0, 1e4]), log1p=st.booleans(),
       n_bins=st.integers(2, 9))
def test_kernels_match_oracles(X, target, log1p, n_bins):
    p, i, d = _csr_parts(X)
    got = VK.normalize_rows(p, d, target, log1p, _nans(d))
    np.testing.assert_allclose(_dense_from(p, i, got, X.shape),
                               oracle_normalize(X, target, log1p), rtol=1e-12)
    got = VK.row_bins(p, d, n_bins, d, _nans(d))
    np.testing.assert_array_equal(_dense_from(p, i, got, X.shape), oracle_bins(X, n_bins))
    # counting on the raw integers = sorting the normalised values
    norm = VK.normalize_rows(p, d, target, log1p, _nans(d))
    got = VK.row_bins(p, norm, n_bins, d, _nans(d))
    np.testing.assert_array_equal(_dense_from(p, i, got, X.shape),
                                  oracle_bins(_dense_from(p, i, norm, X.shape), n_bins))


@settings(max_examples=80, **SETTINGS)
@given(X=counts)
def test_medians_exact_for_counts(X):
    med, method = feature_medians(anndata.AnnData(sp.csr_matrix(X.astype(np.float32))),
                                  memory_mb=1e-4)  # many tiny chunks
    assert method == "exact"
    np.testing.assert_array_equal(med, oracle_medians(X))


@settings(max_examples=80, **SETTINGS)
@given(X=reals, B=st.sampled_from([1, 16, 128]), log1p=st.booleans())
def test_medians_of_real_values(X, B, log1p):
    med, method = feature_medians(anndata.AnnData(sp.csr_matrix(X)), normalize="total",
                                  log1p=log1p, bins_per_octave=B, memory_mb=1e-4)
    Xn = oracle_normalize(X, 1e4, log1p)
    if method == "exact":  # every normalised value happened to be an integer
        np.testing.assert_array_equal(med, oracle_medians(Xn))
        return
    assert method == f"log-histogram({B}/octave)"
    np.testing.assert_allclose(med, oracle_medians(quantised(Xn, B)), rtol=1e-9)
    true = oracle_medians(Xn)  # the stated bound against the unrounded median
    ok = ~np.isnan(true)
    assert np.all(np.abs(med[ok] / true[ok] - 1) <= 2 ** (1 / B) - 1 + 1e-12)


@settings(max_examples=40, **SETTINGS)
@given(seed=st.integers(0, 2**32 - 1), n_features=st.integers(129, 900),
       normalize=st.sampled_from([None, "total"]))
def test_medians_shared_out_to_threads_equal_one_thread(seed, n_features, normalize):
    from genotok.singlecell import values as values_module

    rng = np.random.default_rng(seed)
    X = sp.random(int(rng.integers(1, 40)), n_features, density=rng.uniform(0.01, 0.5),
                  random_state=rng, data_rvs=lambda n: rng.integers(1, 9, n)).astype(np.float32)
    X = X.tocsr()
    want = feature_medians(anndata.AnnData(X), normalize=normalize)[0]  # one range
    with pytest.MonkeyPatch.context() as mp:  # every chunk on three threads, whatever the box
        mp.setattr(values_module, "_PARALLEL_FROM", 0)
        mp.setattr(values_module, "_threads", lambda: 3)
        for memory_mb in (1e-3, 256):  # tiny chunks (block ranges), one chunk (row parts too)
            got = feature_medians(anndata.AnnData(X), normalize=normalize,
                                  memory_mb=memory_mb)[0]
            np.testing.assert_array_equal(got, want)
    if normalize is None:
        np.testing.assert_array_equal(got, oracle_medians(X.toarray()))


def test_histogram_switches_from_exact_to_log_codes():
    X = sp.csr_matrix(np.array([[1.0, 2], [3, 0], [2.5, 0]]))  # a real value in the last chunk
    med, method = feature_medians(anndata.AnnData(X), bins_per_octave=128, memory_mb=1e-5)
    assert method == "log-histogram(128/octave)"
    np.testing.assert_allclose(med, oracle_medians(quantised(X.toarray(), 128)), rtol=1e-12)


# ---------------------------------------------------------------------- tokenize_anndata paths
def _adata(X):
    n = X.shape[1]
    var = [f"chr1:{100 * j}-{100 * j + 50}" for j in range(n)]
    import pandas as pd

    a = anndata.AnnData(sp.csr_matrix(X.astype(np.float32)),
                        obs=pd.DataFrame(index=[f"c{i}" for i in range(X.shape[0])]),
                        var=pd.DataFrame(index=var))
    return a, Tokenizer(var, settings=TokenizerSettings(unknown="drop"))


def _expected(E):
    """Tokens by encoded value (float64) descending, ties by id; values float32."""
    ids, vals = [], []
    for row in E:
        nz = np.flatnonzero(row > 0)
        order = nz[np.lexsort((nz, -row[nz]))]
        ids.append(order.tolist())
        vals.append(row[order].astype(np.float32).tolist())
    return ids, vals


def _in_memory_equals_the_oracle(X, kw):
    """``X`` tokenized in memory with the encoding ``kw`` (tokens by value, values returned):
    the oracle's ids and values. Returns the AnnData, the tokenizer, the spec's options, the
    in-memory result and the oracle's medians, for the other ways of reading the matrix."""
    a, tok = _adata(X)
    med = None
    if "rank" in kw:
        med = oracle_feature_medians(oracle_encode(X, kw.get("normalize"),
                                                   kw.get("target_sum", 1e4),
                                                   kw.get("log1p", False)))
    E = oracle_encode(X, kw.get("normalize"), kw.get("target_sum", 1e4), kw.get("log1p", False),
                      med, kw.get("bins"))
    want_ids, want_vals = _expected(E)
    opts = dict(values=True, order="value", **kw)
    got = tokenize_anndata(a, tok, spec_of(**opts))
    assert got.to_list() == want_ids
    np.testing.assert_allclose(got.values, np.asarray([v for row in want_vals for v in row],
                                                      np.float32), rtol=1e-6)
    return a, tok, opts, got, med


ENCODINGS = [{"normalize": "total"}, {"normalize": "total", "log1p": True, "target_sum": 100.0},
             {"rank": "median"}, {"normalize": "total", "rank": "median"},
             {"bins": 5}, {"normalize": "total", "log1p": True, "bins": 51}]


@pytest.mark.parametrize("kw", ENCODINGS)
def test_tokenize_anndata_memory_backed_csc_corpus_equal(kw, tmp_path):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, (30, 9)) * (rng.random((30, 9)) < 0.5)
    X[4] = 0  # an empty cell
    a, tok, opts, got, med = _in_memory_equals_the_oracle(X, kw)
    # CSC in memory, the .h5ad path (row chunks), a backed AnnData, a corpus
    csc = a.copy()
    csc.X = sp.csc_matrix(csc.X)
    path = tmp_path / "x.h5ad"
    a.write_h5ad(path)
    for other in (tokenize_anndata(csc, tok, spec_of(**opts)),
                  tokenize_anndata(path, tok, spec_of(**opts), read=AnnDataOptions(chunk_rows=7)),
                  tokenize_anndata(anndata.read_h5ad(path, backed="r"), tok, spec_of(**opts))):
        assert other == got
        np.testing.assert_array_equal(other.values, got.values)
    c = tokenize_anndata(path, tok, spec_of(**opts), read=AnnDataOptions(chunk_rows=4),
                         out=tmp_path / "c.gtokc")
    assert c.to_ragged(values=True) == got
    np.testing.assert_array_equal(c.to_ragged(values=True).values, got.values)
    stored = c.header["extra"]["anndata"]["values_encoding"]
    assert stored["bins"] == kw.get("bins")
    if med is not None:  # inference with the training medians: same tokens
        back = ValueEncoding.from_json(stored)
        np.testing.assert_array_equal(back.medians, med)
        again = tokenize_anndata(a, tok, spec_of(**{**opts, "rank": c}))
        assert again == got


def test_inference_uses_training_medians(tmp_path):
    X = np.array([[2, 0, 4], [4, 1, 0], [6, 0, 8]])
    a, tok = _adata(X)
    c = tokenize_anndata(a, tok, CellSpec(order="value", values=True, encoding=RankByMedian()),
                         out=tmp_path / "t.gtokc")
    new, _ = _adata(np.array([[4, 1, 4]]))
    got = tokenize_anndata(new, tok, CellSpec(order="value", values=True, encoding=RankByMedian(c)))
    # training medians 4, 1, 6: ratios 1, 1, 0.667 -> ids 0 and 1 tie, id order
    assert got.to_list() == [[0, 1, 2]]
    np.testing.assert_allclose(got.values, [1.0, 1.0, 4 / 6], rtol=1e-6)
    with pytest.raises(ValueError, match="normalize"):
        tokenize_anndata(new, tok, CellSpec(encoding=(Normalize(), RankByMedian(c))))


def test_feature_without_median_is_dropped():
    enc = value_encoding(rank=np.array([2.0, np.nan, 0.0]))
    out = enc.encode(np.array([0, 3]), np.array([0, 1, 2]), np.array([4.0, 1, 1]), 3)
    assert out.tolist() == [2.0, 0.0, 0.0]


def test_errors():
    with pytest.raises(ValueError, match="normalize"):
        ValueEncoding(normalize="median")
    with pytest.raises(ValueError, match="bins"):
        ValueEncoding(bins=1)
    with pytest.raises(ValueError, match="exclude"):
        value_encoding(rank=np.ones(3), bins=4)
    with pytest.raises(ValueError, match="rank"):
        value_encoding(rank="mean")
    with pytest.raises(ValueError, match="target_sum"):
        ValueEncoding(target_sum=0)
    enc = value_encoding(normalize="total")
    with pytest.raises(AnnDataError, match=">= 0"):
        enc.encode(np.array([0, 1]), np.array([0]), np.array([-1.0]), 1)
    with pytest.raises(AnnDataError, match="medians"):
        value_encoding(rank=np.ones(2)).encode(np.array([0, 1]), np.array([0]),
                                               np.array([1.0]), 3)
    with pytest.raises(AnnDataError, match="out of range"):
        value_encoding(rank=np.ones(3)).encode(np.array([0, 1]), np.array([5]),
                                               np.array([1.0]), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert value_encoding() is None


@settings(max_examples=25, **SETTINGS)
@given(X=counts, kw=st.sampled_from(ENCODINGS), chunk_rows=st.integers(1, 5))
def test_random_matrices_oracle_memory_backed_csr_csc(X, kw, chunk_rows):
    import tempfile
    from pathlib import Path

    a, tok, opts, got, _ = _in_memory_equals_the_oracle(X, kw)
    d = Path(tempfile.mkdtemp())
    csc = a.copy()
    csc.X = sp.csc_matrix(csc.X)
    csc.write_h5ad(d / "csc.h5ad")  # a backed CSC file (loaded: it fits memory_mb)
    a.write_h5ad(d / "csr.h5ad")
    for other in (tokenize_anndata(csc, tok, spec_of(**opts)),
                  tokenize_anndata(d / "csc.h5ad", tok, spec_of(**opts)),
                  tokenize_anndata(d / "csr.h5ad", tok, spec_of(**opts),
                                   read=AnnDataOptions(chunk_rows=chunk_rows))):
        assert other == got
        np.testing.assert_array_equal(other.values, got.values)


@settings(max_examples=60, **SETTINGS)
@given(a=st.dictionaries(st.integers(-50, 50), st.integers(1, 9)),
       b=st.dictionaries(st.integers(-50, 50), st.integers(1, 9)))
def test_merge_counts_matches_dict_oracle(a, b):
    def arrays(d):
        k = np.array(sorted(d), np.int64)
        return k, np.array([d[x] for x in k.tolist()], np.int64)

    keys, counts = VK.merge_counts(*arrays(a), *arrays(b))
    want = {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}
    assert keys.tolist() == sorted(want)
    assert counts.tolist() == [want[k] for k in sorted(want)]


def test_medians_over_several_files(tmp_path):
    rng = np.random.default_rng(11)
    X1 = rng.integers(0, 5, (12, 6)) * (rng.random((12, 6)) < 0.6)
    X2 = rng.integers(0, 9, (7, 6)) * (rng.random((7, 6)) < 0.6)
    a1, _ = _adata(X1)
    a2, _ = _adata(X2)
    a1.write_h5ad(tmp_path / "one.h5ad")
    med, method = feature_medians([tmp_path / "one.h5ad", a2], memory_mb=1e-4)
    assert method == "exact"
    np.testing.assert_array_equal(med, oracle_medians(np.vstack([X1, X2])))
    bad, _ = _adata(X1[:, :4])
    with pytest.raises(AnnDataError, match="same features"):
        feature_medians([a1, bad])
    with pytest.raises(ValueError, match="at least one"):
        feature_medians([])


VAR = ["chr1:0-100", "chr1:100-200", "chr1:200-300"]


# ------------------------------------------------------------------- normalisation overflow
def _adata_and_tok(X, dtype=np.float64):
    import pandas as pd

    X = np.asarray(X, dtype=np.float64)
    var = [f"chr1:{100 * j}-{100 * j + 50}" for j in range(X.shape[1])]
    a = anndata.AnnData(sp.csr_matrix(X.astype(dtype)),
                        obs=pd.DataFrame(index=[f"c{i}" for i in range(X.shape[0])]),
                        var=pd.DataFrame(index=var))
    return a, Tokenizer(var, settings=TokenizerSettings(unknown="drop"))


@pytest.mark.parametrize("row", [[1e-310, 1e-310, 0.0], [5e-324, 0.0, 0.0],
                                 [1e308, 1e308, 1.0]])
@pytest.mark.parametrize("kw", [{}, {"rank": "median"}, {"bins": 5}, {"log1p": True},
                                {"rank": np.ones(3)}])
def test_a_total_that_does_not_normalise_is_refused(row, kw, tmp_path):
    """A subnormal row total made target_sum / total infinite (infinite values, garbage
    medians, or an error blaming an 'inf' the matrix does not hold); a total past float64's
    largest zeroed the row's values (a silently empty cell)."""
    from genotok.errors import AnnDataError

    a, tok = _adata_and_tok([[1.0, 2.0, 0.0], row, [3.0, 0.0, 1.0]])
    a.write_h5ad(tmp_path / "x.h5ad")
    for obj, extra in ((a, {}), (tmp_path / "x.h5ad", {"chunk_rows": 1})):
        with pytest.raises(AnnDataError, match="row 1: its total .* cannot be normalised"):
            tokenize_anndata(obj, tok, spec_of(normalize="total", order="value", **kw),
                             read=AnnDataOptions(**extra))
    with pytest.raises(AnnDataError, match="row 1: its total"):
        feature_medians(tmp_path / "x.h5ad", normalize="total", memory_mb=1e-6)
    assert feature_medians(a)[1] == "log-histogram(128/octave)"  # without normalize: values
    # a float32 subnormal total is fine (target_sum / total is finite in float64)
    b, _ = _adata_and_tok([[1e-45, 0.0, 0.0], [1.0, 2.0, 0.0]], np.float32)
    got = tokenize_anndata(b, tok, CellSpec(values=True, encoding=Normalize()))
    np.testing.assert_allclose(got.values, [1e4, 1e4 / 3, 2e4 / 3], rtol=1e-6)
    with pytest.raises(AnnDataError, match="row 0: its total"):  # unless target_sum is huge
        tokenize_anndata(b, tok, CellSpec(encoding=Normalize(1e300)))


def test_medians_check_the_rows_against_obs(tmp_path):
    """A file whose shape attribute claims 10**12 rows: feature_medians (and so the medians
    pass of pretokenize) allocated by it (a MemoryError, not a GenotokError)."""
    import tests.singlecell.test_reading as crafted
    from genotok.errors import AnnDataError

    for base in ("csc", "csr"):
        path = crafted.make_file(crafted.Case("shape_rows_huge", base, "error"), tmp_path)
        with pytest.raises(AnnDataError, match="shape_rows_huge"):
            feature_medians(path)
        with pytest.raises(AnnDataError, match="shape_rows_huge"):
            feature_medians(iter([path]))


# ------------------------------------------------------------------------------------- bins=
@pytest.mark.parametrize("bins", [0, 1, -3, 2.5, np.nan, np.inf, True, "3",
                                  2**24 + 2, 2**40, 2**63, 2**70])
def test_bins_out_of_range_are_refused(bins):
    """Bins past 2**24 + 1 were silently rounded in the float32 value channel (2**40 bins:
    1 + 1 * (2**40 - 1) // 3 stored as 366503887000-ish), and 2**63 was an OverflowError."""
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    with pytest.raises(ValueError, match="Bins: n must be an integer in \\[2, 16777217\\]"):
        tokenize_anndata(a, tok, CellSpec(values=True, encoding=Bins(bins)))


@pytest.mark.parametrize("log1p", ["no", "false", 2, -1, 0.5, None])
def test_log1p_must_be_a_boolean(log1p):
    """``log1p="no"`` was true (any non-empty string is): the values got log(1 + x)."""
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    with pytest.raises(ValueError, match="log1p must be True or False"):
        tokenize_anndata(a, tok, CellSpec(values=True, encoding=Normalize(log1p=log1p)))


@pytest.mark.parametrize("log1p", [True, False, 1, 0, np.bool_(True)])
def test_log1p_booleans_and_zero_one_are_taken(log1p):
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    got = tokenize_anndata(a, tok, CellSpec(values=True, encoding=Normalize(log1p=log1p)))
    want = tokenize_anndata(a, tok, CellSpec(values=True, encoding=Normalize(log1p=bool(log1p))))
    np.testing.assert_array_equal(got.values, want.values)


@pytest.mark.parametrize("bins", [2, 2.0, np.int64(51), 2**24 + 1])
def test_bins_in_range_match_the_oracle(bins):
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    got = tokenize_anndata(a, tok, CellSpec(values=True, encoding=Bins(bins)))
    n = int(bins) - 1  # 1 + r * (n_bins - 1) // m
    want = [1, 1 + n // 3, 1 + 2 * n // 3, 1, 1 + n // 2]
    assert got.to_list() == [[0, 1, 2], [0, 2]]
    assert got.values.astype(np.int64).tolist() == want


# ------------------------------------------------------------------------------- given medians
@pytest.mark.parametrize("bad", [-1.0, np.inf, -np.inf, -0.5])
def test_negative_or_infinite_medians_are_refused(bad):
    """A negative or infinite median (log-scale medians, a sentinel) silently dropped its
    feature from every cell; it is refused when the encoding is made (issue 43 #14)."""
    med = np.array([1.0, bad, 2.0])
    with pytest.raises(ValueError, match="median 1 is"):
        RankByMedian(med)
    with pytest.raises(ValueError, match="median 1 is"):
        RankByMedian((med, "exact"))


def test_nan_and_zero_medians_drop_their_feature_and_others_divide():
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    got = tokenize_anndata(a, tok,
                           CellSpec(order="value", values=True, encoding=RankByMedian(np.array([2.0, np.nan, 0.0]))))
    assert got.to_list() == [[0], [0]]
    assert got.values.tolist() == [0.5, 2.0]
    with pytest.raises(AnnDataError, match="3 features but 2 medians"):
        tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian(np.ones(2))))
    with pytest.raises(ValueError, match="one-dimensional"):
        tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian(np.ones((1, 3)))))



@pytest.mark.parametrize("kw", [{}, {"normalize": "total"}, {"log1p": True}])
def test_a_ratio_that_overflows_is_refused_naming_its_cell(kw):
    """A value over a tiny median overflowed to inf, which the cells' kernels refused as 'a
    NaN or infinite value ... value inf', an inf the matrix does not hold."""
    a, tok = _adata_and_tok([[1.0, 0.0, 2.0], [0.0, 1e308, 3.0]])
    med = np.array([1.0, 1e-300, 1.0])
    if kw:
        med[1] = 1e-310
    with pytest.raises(AnnDataError, match="row 1, column 1: its value divided by the column's "
                                           "median .* overflows"):
        tokenize_anndata(a, tok, spec_of(rank=med, **kw))


# ------------------------------------------------------------------- repeated column indices
DUP = (np.array([1.0, 2.0, 3.0, 4.0, 5.0, 1.0]), np.array([2, 0, 2, 1, 1, 0]),
       np.array([0, 3, 3, 6]))  # row 0 stores column 2 twice, row 2 column 1 twice


@pytest.mark.parametrize("kw", [{"rank": "median"}, {"bins": 5}, {"log1p": True},
                                {"normalize": "total", "log1p": True, "rank": "median"},
                                {"normalize": "total", "bins": 3}])
def test_repeated_columns_are_summed_before_encoding(kw, tmp_path):
    """scipy reads two entries of one column in a row as their sum, and so does the plain
    tokenization; the encodings encoded each entry alone (log1p(1) + log1p(3) for log1p(4),
    two values in the medians and in the bins), unlike the canonical matrix's answer."""
    import h5py
    import pandas as pd

    data, indices, indptr = DUP
    X = sp.csr_matrix((data, indices, indptr), shape=(3, 3))
    a = anndata.AnnData(X, obs=pd.DataFrame(index=["a", "b", "c"]),
                        var=pd.DataFrame(index=VAR))
    canon = anndata.AnnData(sp.csr_matrix(X.toarray()), obs=a.obs, var=a.var)
    tok = Tokenizer(VAR, settings=TokenizerSettings(unknown="drop"))
    opts = dict(values=True, order="value", **kw)
    want = tokenize_anndata(canon, tok, spec_of(**opts))
    path = tmp_path / "dup.h5ad"
    canon.write_h5ad(path)
    with h5py.File(path, "r+") as f:  # the file's arrays, as a careless writer left them
        for name, v in (("data", data), ("indices", indices), ("indptr", indptr)):
            del f["X"][name]
            f["X"][name] = v
    for obj, extra in ((a, {}), (path, {"chunk_rows": 2})):
        got = tokenize_anndata(obj, tok, spec_of(**opts), read=AnnDataOptions(**extra))
        assert got == want
        np.testing.assert_array_equal(got.values, want.values)
    norm = {k: v for k, v in kw.items() if k in ("normalize", "log1p")}
    for obj in (a, path):
        np.testing.assert_array_equal(feature_medians(obj, **norm)[0],
                                      feature_medians(canon, **norm)[0])



def test_repeated_columns_whose_sum_overflows_are_refused():
    import pandas as pd

    X = sp.csr_matrix((np.array([1e308, 1e308]), np.array([0, 0]), np.array([0, 2])),
                      shape=(1, 3))
    a = anndata.AnnData(X, obs=pd.DataFrame(index=["a"]), var=pd.DataFrame(index=VAR))
    with pytest.raises(AnnDataError, match="found inf"):
        tokenize_anndata(a, Tokenizer(VAR), CellSpec(encoding=Normalize()))



@pytest.mark.parametrize("B", [1, 128, 2**20])
def test_medians_of_values_near_the_float64_max_are_finite(B):
    """The mean of a feature's two middle bin values, 0.5 * (lo + hi), overflowed for values
    near float64's largest: an infinite median, then refused as one by rank=."""
    a, tok = _adata_and_tok([[1e308, 1.0, 0.0], [1.7e308, 1.0, 2.0]])
    med, method = feature_medians(a, bins_per_octave=B)
    assert np.isfinite(med[[0, 1, 2]]).all() and method.startswith("log-histogram")
    assert 1e308 * 2 ** (-1 / B) <= med[0] <= 1.7e308 * 2 ** (1 / B)
    got = tokenize_anndata(a, tok, CellSpec(order="value", values=True, encoding=RankByMedian()))
    assert got.to_list()[0] == [1, 0]  # 1 / 1, then 1e308 / ~1.35e308


# ------------------------------------------------------------------------- random adversaries
SPECIAL = [0.0, -0.0, 1.0, 2.0, 3.0, 0.5, 7.25, 1e-45, 1e-310, 5e-324, 1e38, 3.4e38, 1e308,
           np.nan, np.inf, -np.inf, -1.0]
ADVERSARIAL_ENCODINGS = [{"normalize": "total"}, {"normalize": "total", "log1p": True},
             {"log1p": True}, {"rank": "median"}, {"normalize": "total", "rank": "median"},
             {"rank": "given"}, {"bins": 2}, {"bins": 7},
             {"normalize": "total", "log1p": True, "bins": 51}]


@st.composite
def stored(draw):
    """A small CSR (in storage order: unsorted and repeated columns, explicit zeros) of
    adversarial values, its dtype and an encoding."""
    n_rows, n_cols = draw(st.integers(0, 4)), draw(st.integers(1, 4))
    lens = draw(st.lists(st.integers(0, 5), min_size=n_rows, max_size=n_rows))
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    n = int(indptr[-1])
    indices = np.array(draw(st.lists(st.integers(0, n_cols - 1), min_size=n, max_size=n)),
                       np.int32)
    tame = draw(st.booleans())  # half the draws without NaN/inf/negatives, to reach the oracle
    pool = [x for x in SPECIAL if not tame or (np.isfinite(x) and x >= 0)]
    data = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), np.float64)
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    if dtype is np.int64:
        data = np.where(np.isfinite(data) & (np.abs(data) < 1e6), np.trunc(data), 3.0)
    with np.errstate(over="ignore"):
        data = data.astype(dtype)
    return indptr, indices, data, n_cols, draw(st.sampled_from(ADVERSARIAL_ENCODINGS))


def _in_order_total(row: np.ndarray) -> float:
    total = np.float64(0.0)
    with np.errstate(over="ignore"):
        for x in row:
            total += np.float64(x)
    return float(total)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=stored())
def test_random_adversarial_matrices_give_the_oracle_or_a_clear_error(case):
    """Tokens by encoded value (the float32 channel) descending, ties by id, as the oracle of
    tests/singlecell/test_values.py encodes the canonical matrix (repeated columns summed);
    or an AnnDataError for a NaN, infinite or negative value, or a row that does not
    normalise in float64."""
    import pandas as pd

    indptr, indices, data, n_cols, kw = case
    n_rows = indptr.size - 1
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
    var = [f"chr1:{100 * j}-{100 * j + 50}" for j in range(n_cols)]
    a = anndata.AnnData(X, obs=pd.DataFrame(index=[f"c{i}" for i in range(n_rows)]),
                        var=pd.DataFrame(index=var))
    tok = Tokenizer(var, settings=TokenizerSettings(unknown="drop"))
    with np.errstate(over="ignore"):
        dense = X.toarray().astype(np.float64)  # scipy sums repeated entries (in their dtype)
    rank = kw.get("rank")
    norm = {k: v for k, v in kw.items() if k in ("normalize", "log1p")}
    bad = data.size and not (np.all(np.isfinite(data.astype(np.float64)))
                             and np.all(data >= 0) and np.all(np.isfinite(dense)))
    if not bad and kw.get("normalize"):
        canon = sp.csr_matrix(dense)
        canon.sort_indices()
        for r in range(n_rows):
            t = _in_order_total(canon.data[canon.indptr[r]:canon.indptr[r + 1]])
            with np.errstate(over="ignore", divide="ignore"):
                bad = bad or not (t == 0 or (np.isfinite(t) and np.isfinite(1e4 / t)))
    med = None
    opts = dict(values=True, order="value", **kw)
    if rank is not None:
        try:
            med = feature_medians(a, **norm)[0]
        except AnnDataError:
            assert bad
            return
        if rank == "given":
            med = np.where(np.isnan(med), 2.0, med)
            opts["rank"] = med
    if not bad:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            E = oracle_encode(dense, kw.get("normalize"), 1e4, kw.get("log1p", False), med,
                              kw.get("bins"))
            E32 = E.astype(np.float32)
        bad = not np.isfinite(E).all()  # a value / median past float64's largest
    if bad:
        with pytest.raises(AnnDataError):
            tokenize_anndata(a, tok, spec_of(**opts))
        return
    got = tokenize_anndata(a, tok, spec_of(**opts))
    want_ids, want_vals = [], []
    for row, row32 in zip(E, E32):
        nz = np.flatnonzero(row > 0)
        order = nz[np.lexsort((nz, -row32[nz].astype(np.float64)))]
        want_ids.append(order.tolist())
        want_vals.append(row32[order])
    assert got.to_list() == want_ids
    want = np.concatenate(want_vals) if want_vals else np.zeros(0, np.float32)
    np.testing.assert_allclose(got.values, want, rtol=2e-6)


@pytest.mark.parametrize("enc", [ValueEncoding("total", medians=np.ones(3)),
                                 ValueEncoding("total", bins=5)], ids=["medians", "bins"])
@pytest.mark.parametrize("short", ["indices", "data"])
def test_a_chunk_holding_less_than_its_indptr_is_refused(enc, short):
    """A plugin source's chunk whose arrays hold fewer entries than its indptr points to: the
    one-pass kernels would index past them (a crash at scale), the encoder refuses it."""
    from genotok.singlecell.chunks import Chunk

    idx = np.array([0] if short == "indices" else [0, 1, 2], np.int32)
    data = np.array([1.0] if short == "data" else [1.0, 2.0, 3.0], np.float32)
    chunk = Chunk(0, np.array([0, 3], np.int64), idx, data, 3)
    with pytest.raises(AnnDataError, match="indptr ends at 3, but there are"):
        enc.chunk_encoder(3, "X")(chunk)
