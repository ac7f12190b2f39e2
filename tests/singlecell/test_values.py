"""Value encodings (normalize / rank by median / bins): kernels vs NumPy oracles, and
tokenize_anndata in memory = backed = corpus, CSR and CSC."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from genotok import AnnDataOptions, CellSpec, Normalize, RankByMedian, Tokenizer, TokenizerSettings
from genotok.errors import AnnDataError
from genotok.kernels import values as VK
from genotok.singlecell import tokenize_anndata
from genotok.singlecell.values import ValueEncoding, feature_medians, value_encoding
from tests._cellspec import spec_of

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
    got = VK.normalize_rows(p, d, target, log1p)
    np.testing.assert_allclose(_dense_from(p, i, got, X.shape),
                               oracle_normalize(X, target, log1p), rtol=1e-12)
    got = VK.row_bins(p, d, n_bins, d)
    np.testing.assert_array_equal(_dense_from(p, i, got, X.shape), oracle_bins(X, n_bins))
    # counting on the raw integers = sorting the normalised values
    norm = VK.normalize_rows(p, d, target, log1p)
    got = VK.row_bins(p, norm, n_bins, d)
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


ENCODINGS = [{"normalize": "total"}, {"normalize": "total", "log1p": True, "target_sum": 100.0},
             {"rank": "median"}, {"normalize": "total", "rank": "median"},
             {"bins": 5}, {"normalize": "total", "log1p": True, "bins": 51}]


@pytest.mark.parametrize("kw", ENCODINGS)
def test_tokenize_anndata_memory_backed_csc_corpus_equal(kw, tmp_path):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, (30, 9)) * (rng.random((30, 9)) < 0.5)
    X[4] = 0  # an empty cell
    a, tok = _adata(X)
    med = None
    if "rank" in kw:
        med = oracle_feature_medians(oracle_encode(X, kw.get("normalize"), kw.get("target_sum", 1e4),
                                           kw.get("log1p", False)))
    E = oracle_encode(X, kw.get("normalize"), kw.get("target_sum", 1e4), kw.get("log1p", False),
                      med, kw.get("bins"))
    want_ids, want_vals = _expected(E)
    opts = dict(values=True, order="value", **kw)
    got = tokenize_anndata(a, tok, spec_of(**opts))
    assert got.to_list() == want_ids
    np.testing.assert_allclose(got.values, np.concatenate([np.asarray(v, np.float32)
                                                           for v in want_vals]), rtol=1e-6)
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
    np.testing.assert_allclose(got.values, np.asarray([v for row in want_vals for v in row], np.float32),
                               rtol=1e-6)
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
