"""Adversarial inputs of the value encodings and condition tokens: each call gives the oracle's
answer or a clear error (a GenotokError, or the documented ValueError), never garbage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import (AnnDataOptions, Bins, CellSpec, Normalize, RankByMedian, Tokenizer,
                     TokenizerSettings, condition_tokens,
                     feature_medians, tokenize_anndata)
from genotok.errors import AnnDataError, UniverseError
from tests._cellspec import spec_of
from tests.singlecell.test_values import oracle_encode

anndata = pytest.importorskip("anndata")
sp = pytest.importorskip("scipy.sparse")

VAR = ["chr1:0-100", "chr1:100-200", "chr1:200-300"]


# ------------------------------------------------------------------------- condition tokens
def test_control_characters_in_condition_tokens_round_trip(tmp_path):
    """A category with a newline (or another control character) made a tokenizer.toml that
    could not be read back."""
    toks = ["<c=new\nline>", "<c=tab\there>", "<c=cr\r>", "<c=del\x7f>", '<c=q"\\>', "<c=ünï 😀>"]
    tok = Tokenizer(VAR, extra_tokens=toks)
    tok.save_pretrained(tmp_path / "t")
    back = Tokenizer.from_pretrained(tmp_path / "t")
    assert back.universe.extra_tokens == tuple(toks)
    assert back.universe.fingerprint == tok.universe.fingerprint
    ids = list(range(len(VAR) + 7, len(VAR) + 7 + len(toks)))
    assert back.decode(ids) == toks


def test_nul_in_an_extra_token_is_refused():
    """NUL joins the extra tokens in the fingerprint: ["a\\0b", "c"] and ["a", "b\\0c"] had the
    same fingerprint (and vocabulary size) with other ids."""
    with pytest.raises(UniverseError, match="NUL"):
        Tokenizer(VAR, extra_tokens=["<c=a>\0<c=b>", "<c=c>"])
    assert Tokenizer(VAR, extra_tokens=["<c=a>"]).vocab_size == len(VAR) + 8


# ------------------------------------------------------------------- normalisation overflow
def _adata(X, dtype=np.float64):
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

    a, tok = _adata([[1.0, 2.0, 0.0], row, [3.0, 0.0, 1.0]])
    a.write_h5ad(tmp_path / "x.h5ad")
    for obj, extra in ((a, {}), (tmp_path / "x.h5ad", {"chunk_rows": 1})):
        with pytest.raises(AnnDataError, match="row 1: its total .* cannot be normalised"):
            tokenize_anndata(obj, tok, spec_of(normalize="total", order="value", **kw),
                             read=AnnDataOptions(**extra))
    with pytest.raises(AnnDataError, match="row 1: its total"):
        feature_medians(tmp_path / "x.h5ad", normalize="total", memory_mb=1e-6)
    assert feature_medians(a)[1] == "log-histogram(128/octave)"  # without normalize: values
    # a float32 subnormal total is fine (target_sum / total is finite in float64)
    b, _ = _adata([[1e-45, 0.0, 0.0], [1.0, 2.0, 0.0]], np.float32)
    got = tokenize_anndata(b, tok, CellSpec(values=True, encoding=Normalize()))
    np.testing.assert_allclose(got.values, [1e4, 1e4 / 3, 2e4 / 3], rtol=1e-6)
    with pytest.raises(AnnDataError, match="row 0: its total"):  # unless target_sum is huge
        tokenize_anndata(b, tok, CellSpec(encoding=Normalize(1e300)))


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
    a, tok = _adata([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    with pytest.raises(ValueError, match="Bins: n must be an integer in \\[2, 16777217\\]"):
        tokenize_anndata(a, tok, CellSpec(values=True, encoding=Bins(bins)))


@pytest.mark.parametrize("log1p", ["no", "false", 2, -1, 0.5, None])
def test_log1p_must_be_a_boolean(log1p):
    """``log1p="no"`` was true (any non-empty string is): the values got log(1 + x)."""
    a, tok = _adata([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    with pytest.raises(ValueError, match="log1p must be True or False"):
        tokenize_anndata(a, tok, CellSpec(values=True, encoding=Normalize(log1p=log1p)))


@pytest.mark.parametrize("log1p", [True, False, 1, 0, np.bool_(True)])
def test_log1p_booleans_and_zero_one_are_taken(log1p):
    a, tok = _adata([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    got = tokenize_anndata(a, tok, CellSpec(values=True, encoding=Normalize(log1p=log1p)))
    want = tokenize_anndata(a, tok, CellSpec(values=True, encoding=Normalize(log1p=bool(log1p))))
    np.testing.assert_array_equal(got.values, want.values)


@pytest.mark.parametrize("bins", [2, 2.0, np.int64(51), 2**24 + 1])
def test_bins_in_range_match_the_oracle(bins):
    a, tok = _adata([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    got = tokenize_anndata(a, tok, CellSpec(values=True, encoding=Bins(bins)))
    n = int(bins) - 1  # 1 + r * (n_bins - 1) // m
    want = [1, 1 + n // 3, 1 + 2 * n // 3, 1, 1 + n // 2]
    assert got.to_list() == [[0, 1, 2], [0, 2]]
    assert got.values.astype(np.int64).tolist() == want


# ------------------------------------------------------------------------------- given medians
@pytest.mark.parametrize("bad", [-1.0, np.inf, -np.inf, -0.5])
def test_negative_or_infinite_medians_are_refused(bad):
    """A negative or infinite median (log-scale medians, a sentinel) silently dropped its
    feature from every cell."""
    a, tok = _adata([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    med = np.array([1.0, bad, 2.0])
    with pytest.raises(ValueError, match="feature 1 has"):
        tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian(med)))
    with pytest.raises(ValueError, match="feature 1 has"):
        tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian((med, "exact"))))


def test_nan_and_zero_medians_drop_their_feature_and_others_divide():
    a, tok = _adata([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
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
    a, tok = _adata([[1.0, 0.0, 2.0], [0.0, 1e308, 3.0]])
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
    a, tok = _adata([[1e308, 1.0, 0.0], [1.7e308, 1.0, 2.0]])
    med, method = feature_medians(a, bins_per_octave=B)
    assert np.isfinite(med[[0, 1, 2]]).all() and method.startswith("log-histogram")
    assert 1e308 * 2 ** (-1 / B) <= med[0] <= 1.7e308 * 2 ** (1 / B)
    got = tokenize_anndata(a, tok, CellSpec(order="value", values=True, encoding=RankByMedian()))
    assert got.to_list()[0] == [1, 0]  # 1 / 1, then 1e308 / ~1.35e308


# ------------------------------------------------------------------------- random adversaries
SPECIAL = [0.0, -0.0, 1.0, 2.0, 3.0, 0.5, 7.25, 1e-45, 1e-310, 5e-324, 1e38, 3.4e38, 1e308,
           np.nan, np.inf, -np.inf, -1.0]
ENCODINGS = [{"normalize": "total"}, {"normalize": "total", "log1p": True},
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
    return indptr, indices, data, n_cols, draw(st.sampled_from(ENCODINGS))


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


# ------------------------------------------------------------------------ numeric arguments
@pytest.mark.parametrize("B", [0, 1.5, np.nan, np.inf, True, "8", 2**20 + 1])
def test_bins_per_octave_must_be_an_integer_in_range(B):
    """1.5 was taken as 1 (int(1.5)) and NaN failed inside int() with another message."""
    a, _ = _adata([[1.0, 2.0, 0.0]])
    with pytest.raises(ValueError, match="bins_per_octave must be an integer in 1..2\\*\\*20"):
        feature_medians(a, bins_per_octave=B)


def test_memory_mb_nan_is_refused_as_such():
    a, tok = _adata([[1.0, 2.0, 0.0]])
    with pytest.raises(ValueError, match="memory_mb must be > 0, got nan"):
        feature_medians(a, memory_mb=np.nan)
    with pytest.raises(ValueError, match="memory_mb must be > 0, got nan"):
        tokenize_anndata(a, tok, memory_mb=np.nan)


def test_max_length_true_is_refused():
    """max_length=True (meant: truncation=True) was taken as 1: one token per cell."""
    a, tok = _adata([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="max_length must be an integer in \\[1, inf\\)"):
        tokenize_anndata(a, tok, CellSpec(max_length=True))
    assert tokenize_anndata(a, tok, CellSpec(order="value", max_length=2)).to_list() == [[2, 1]]


@pytest.mark.parametrize("seed", [-1, 1.5, np.nan, True, "1", 2**63, 2**64])
def test_seed_must_be_an_int64(seed):
    """2**63 was an OverflowError from the kernel call; 1.5 was silently taken as 1."""
    a, tok = _adata([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="seed must be an integer in \\[0, 9223372036854775807\\]"):
        tokenize_anndata(a, tok, CellSpec(order="shuffle", seed=seed))
    assert len(tokenize_anndata(a, tok, CellSpec(order="shuffle", seed=2**63 - 1)).to_list()[0]) == 3


@pytest.mark.parametrize("kw", [{"seed": 2**63}, {"seed": 1.5}, {"max_length": True}])
def test_pretokenize_checks_the_per_cell_settings_like_tokenize_anndata(kw, tmp_path):
    """pretokenize's plan accepted them, and each input then failed (or took 1.5 as 1): its
    cells= spec checks them, as tokenize_anndata's does."""
    from genotok import pretokenize

    a, tok = _adata([[1.0, 2.0, 3.0]])
    a.write_h5ad(tmp_path / "a.h5ad")
    with pytest.raises(ValueError, match="seed must be|max_length must be"):
        pretokenize([tmp_path / "a.h5ad"], tok, tmp_path / "out", progress=False,
                    cells=CellSpec(**kw))
    assert not (tmp_path / "out").exists()


def test_extra_tokens_given_as_one_string_are_refused(tmp_path):
    """extra_tokens="<batch=a>" (or the same in a hand-written tokenizer.toml) became five
    one-character tokens '<', 'b', ... silently."""
    with pytest.raises(UniverseError, match="a list of strings"):
        Tokenizer(VAR, extra_tokens="<batch=a>")
    tok = Tokenizer(VAR, extra_tokens=["<batch=a>"])
    p = tok.save_config(tmp_path / "t.toml")
    text = p.read_text()
    assert 'extra_tokens = [\n    "<batch=a>",\n]' in text  # as tomli-w writes it
    p.write_text(text.replace('extra_tokens = [\n    "<batch=a>",\n]', 'extra_tokens = "<batch=a>"'))
    with pytest.raises(UniverseError, match="extra_tokens must be an array, got str"):
        Tokenizer.from_config(p)


def test_prepend_as_one_string_is_one_column(tmp_path):
    """prepend="batch" was read as the columns 'b', 'a', 't', 'c', 'h' (condition_tokens
    takes a string as one column); condition_unknown was checked only at the first cell."""
    import pandas as pd

    a = anndata.AnnData(sp.csr_matrix(np.ones((2, 3))),
                        obs=pd.DataFrame({"batch": ["x", "y"]}, index=["c0", "c1"]),
                        var=pd.DataFrame(index=VAR))
    tok = Tokenizer(VAR, extra_tokens=condition_tokens(a, "batch"))
    want = tokenize_anndata(a, tok, CellSpec(prepend=["batch"]))
    assert [r[0] for r in want.to_list()] == [10, 11]
    assert tokenize_anndata(a, tok, CellSpec(prepend="batch")) == want
    c = tokenize_anndata(a, tok, CellSpec(prepend="batch"), out=tmp_path / "c.gtokc")
    assert c.to_ragged() == want
    assert c.header["extra"]["anndata"]["prepend"] == ["batch"]
    with pytest.raises(ValueError, match="condition_unknown must be one of"):
        tokenize_anndata(a[:0], tok, CellSpec(prepend="batch", condition_unknown="skip"))
    with pytest.raises(ValueError, match="condition columns repeat"):
        tokenize_anndata(a, tok, CellSpec(prepend=["batch", "batch"]), out=tmp_path / "d.gtokc")
    assert not (tmp_path / "d.gtokc").exists()


def test_an_extra_token_named_like_a_region_is_refused():
    """An extra token 'chr1:0-100' took the region's string in the vocabulary: the region's
    name then converted to the extra id (convert_tokens_to_ids(convert_ids_to_tokens([0])))."""
    with pytest.raises(UniverseError, match="'chr1:0-100' is the name of a region"):
        Tokenizer(VAR, extra_tokens=["<b=x>", "chr1:0-100"])
    tok = Tokenizer(VAR, extra_tokens=["chr1:0-101", "<b=chr1:0-100>"])  # not region names
    assert tok.convert_tokens_to_ids(tok.convert_ids_to_tokens([0, 10, 11])) == [0, 10, 11]
