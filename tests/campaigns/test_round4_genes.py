"""Round 4 campaign, surface S6: the gene presets (genotok.presets.geneformer / scgpt and the
CLI's --preset): odd parameter values, odd vocabularies and medians, odd matrices. Each attack
ends in the result of the plain oracle (tests/naive_genes.py) or a GenotokError naming the
argument / file; see tests/campaigns/_oracle.py."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

anndata = pytest.importorskip("anndata")
sp = pytest.importorskip("scipy.sparse")
pd = pytest.importorskip("pandas")

from genotok import presets, tokenize_anndata  # noqa: E402
from genotok.errors import GenotokError  # noqa: E402
from tests import naive_genes as naive  # noqa: E402
from tests.campaigns._oracle import cli, cli_refused, isolated, refused  # noqa: E402

pytestmark = pytest.mark.slow

GENES = ["ENSG1", "ENSG2", "ENSG3", "ENSG4"]
VOCAB = {"<pad>": 0, "<mask>": 1, "<cls>": 2, "<eos>": 3,
         **{g: i + 4 for i, g in enumerate(GENES)}}
MEDIANS = {"ENSG1": 1.0, "ENSG2": 2.0, "ENSG3": 0.5, "ENSG4": 4.0}
SC_VOCAB = {"<pad>": 0, "<cls>": 1, "<eoc>": 2, **{g: i + 3 for i, g in enumerate(GENES)}}
X = np.array([[3, 0, 1, 2], [0, 0, 0, 0], [1, 5, 0, 0], [0, 2, 2, 7]], dtype=np.float32)


def _adata(X=X, ids=GENES, column="ensembl_id", obs=None, index=None):
    var = pd.DataFrame({column: ids} if column else {},
                       index=index or [f"v{j}" for j in range(len(ids))])
    return anndata.AnnData(X, var=var, obs=obs)


def _lists(r):
    return [list(map(int, x)) for x in (r.to_list() if hasattr(r, "to_list") else r)]


def _gf(a, **kw):
    tok, spec = presets.geneformer(VOCAB, MEDIANS, **kw)
    return _lists(tokenize_anndata(a, tok, spec))


def _gf_oracle(Xd, ids=GENES, medians=MEDIANS, **kw):
    return naive.geneformer(np.asarray(Xd), ids, VOCAB, medians, **kw)


# ------------------------------------------------------------------ parameters (valid: oracle)
ODD = {"str": "2", "nan": math.nan, "inf": math.inf, "bool": True, "float": 2.7, "zero": 0,
       "neg": -1, "2**63": 2**63, "huge": 10**30, "list": [2], "none_str": "None",
       "bytes": b"2", "complex": 2j}
GF_PARAMS = {  # param -> which odd values are valid (then: the oracle's result)
    "version": set(), "input_size": set(), "n_threads": set(), "id_column": {"str", "none_str"},
}


@pytest.mark.parametrize("odd", ODD, ids=list(ODD))
@pytest.mark.parametrize("param", GF_PARAMS)
def test_geneformer_parameter(param, odd):
    v = ODD[odd]
    if odd in GF_PARAMS[param]:  # a column name that is not there: refused naming it
        refused(lambda: _gf(_adata(), **{param: v}), repr(v) if param != "id_column" else v)
        return
    refused(lambda: presets.geneformer(VOCAB, MEDIANS, **{param: v}), param)


SC_PARAMS = {"n_bins": set(), "side": set(), "seed": set(), "max_length": set(),
             "append_cls": set(), "n_threads": set()}
SC_ODD = {k: ODD[k] for k in ("str", "nan", "inf", "bool", "float", "zero", "neg", "2**63",
                              "huge", "list")}


@pytest.mark.parametrize("odd", SC_ODD, ids=list(SC_ODD))
@pytest.mark.parametrize("param", SC_PARAMS)
def test_scgpt_parameter(param, odd):
    v = SC_ODD[odd]
    if param == "append_cls" and odd in ("bool", "zero"):  # Flag: 0 and 1 are answers
        presets.scgpt(SC_VOCAB, append_cls=v)
        return
    if param == "seed" and odd == "zero":
        presets.scgpt(SC_VOCAB, seed=0)
        return
    refused(lambda: presets.scgpt(SC_VOCAB, **{param: v}), param)


def test_scgpt_huge_n_bins_memory():
    """n_bins = 2**31: the bins are per-cell quantiles; no array of n_bins is made."""
    r = isolated("""
        import numpy as np, anndata, genotok
        v = {"<pad>": 0, "<cls>": 1, "A": 2, "B": 3}
        tok, spec = genotok.presets.scgpt(v, n_bins=2**31 - 1)
        a = anndata.AnnData(np.array([[1., 2.]], np.float32))
        a.var_names = ["A", "B"]
        r = genotok.tokenize_anndata(a, tok, spec)
        result = {"ok": [list(map(int, x)) for x in r.to_list()]}
        """)
    assert r.get("ok") == [[1, 2, 3]] or r.get("genotok"), r


def test_geneformer_huge_input_size_is_cheap():
    r = isolated("""
        import numpy as np, anndata, pandas as pd, genotok
        v = {"<pad>": 0, "<mask>": 1, "A": 2, "B": 3}
        tok, spec = genotok.presets.geneformer(v, {"A": 1.0, "B": 1.0}, input_size=2**62)
        a = anndata.AnnData(np.array([[1., 2.]], np.float32))
        a.var_names = ["A", "B"]
        result = {"ok": [list(map(int, x)) for x in genotok.tokenize_anndata(a, tok, spec).to_list()]}
        """)
    assert r == {"ok": [[3, 2]]}, r


def test_input_size_float_integral_is_the_integer():
    assert _gf(_adata(), input_size=2.0) == _gf_oracle(X, input_size=2)


# ------------------------------------------------------------------ dictionaries
def _write(tmp_path, name, obj):
    p = tmp_path / name
    if name.endswith(".json"):
        p.write_text(json.dumps(obj))
    elif name.endswith(".pkl"):
        p.write_bytes(pickle.dumps(obj))
    else:
        p.write_text(obj)
    return p


BAD_VOCABS = {
    "float_ids": {"<pad>": 0.0, "ENSG1": 1.5},
    "str_ids": {"<pad>": "0", "ENSG1": "1"},
    "neg_id": {"<pad>": 0, "ENSG1": -1},
    "id_2**31": {"<pad>": 0, "ENSG1": 2**31},
    "id_2**63": {"<pad>": 0, "ENSG1": 2**63},
    "bool_id": {"<pad>": 0, "ENSG1": True},
    "nan_id": {"<pad>": 0, "ENSG1": math.nan},
    "dup_id": {"<pad>": 0, "ENSG1": 4, "ENSG2": 4},
    "nested": {"<pad>": 0, "ENSG1": {"id": 4}},
    "list_id": {"<pad>": 0, "ENSG1": [4]},
    "empty": {},
    "none_id": {"<pad>": 0, "ENSG1": None},
}


@pytest.mark.parametrize("how", ["mapping", "json"])
@pytest.mark.parametrize("case", BAD_VOCABS)
def test_bad_token_dictionary(tmp_path, case, how):
    vocab = BAD_VOCABS[case]
    if how == "json":
        if case == "nan_id":
            vocab = {"<pad>": 0, "ENSG1": "NaN"}
        path = _write(tmp_path, "vocab.json", vocab)
        refused(lambda: presets.geneformer(path, MEDIANS), "vocab.json")
    else:
        refused(lambda: presets.geneformer(vocab, MEDIANS))


BAD_MEDIANS = {"negative": {"ENSG1": -1.0}, "inf": {"ENSG1": math.inf}, "str": {"ENSG1": "1"},
               "bool": {"ENSG1": True}, "list": {"ENSG1": [1.0]}, "none_text": {"ENSG1": "nan"},
               "nested": {"ENSG1": {"m": 1}}, "dup_text": {1: 1.0, "1": 2.0}}


@pytest.mark.parametrize("how", ["mapping", "json"])
@pytest.mark.parametrize("case", BAD_MEDIANS)
def test_bad_median_dictionary(tmp_path, case, how):
    med = BAD_MEDIANS[case]
    if how == "json":
        if case == "dup_text":
            pytest.skip("JSON keys are text")
        path = _write(tmp_path, "medians.json", med)
        refused(lambda: presets.geneformer(VOCAB, path), "medians.json")
    else:
        refused(lambda: presets.geneformer(VOCAB, med), "ENSG1" if case != "dup_text" else "1")


DICT_FILES = {"missing": None, "directory": "DIR", "garbage": "not json {",
              "json_list": "[1, 2]", "json_number": "7", "empty": "", "binary": "\x00\x01\x02",
              "toml": 'ENSG1 = 4\n"<pad>" = 0\n'}


@pytest.mark.parametrize("which", ["token_dictionary", "gene_median_dictionary"])
@pytest.mark.parametrize("case", DICT_FILES)
def test_dictionary_files(tmp_path, case, which):
    text = DICT_FILES[case]
    p = tmp_path / ("d.toml" if case == "toml" else "d.json")
    if text == "DIR":
        p.mkdir()
    elif text is not None:
        p.write_text(text)
    args = {"token_dictionary": VOCAB, "gene_median_dictionary": MEDIANS, which: p}
    if case == "toml":
        if which == "token_dictionary":
            tok, _ = presets.geneformer(**args)
            assert tok.convert_tokens_to_ids(["ENSG1"]) == [4]
        else:  # a median of 4 (an integer): fine; <pad> = 0: a gene without a median
            presets.geneformer(**args)
        return
    refused(lambda: presets.geneformer(**args), "d.json")


def test_pickle_with_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    p = tmp_path / "d.pkl"
    p.write_bytes(pickle.dumps({"<pad>": 0, "ENSG1": Evil()}))
    refused(lambda: presets.geneformer(p, MEDIANS), "d.pkl")


@pytest.mark.parametrize("how", ["mapping", "json"])
def test_v2_with_a_v1_dictionary(tmp_path, how):
    v1 = {k: i for k, i in VOCAB.items() if k not in ("<cls>", "<eos>")}
    src = v1 if how == "mapping" else _write(tmp_path, "v1.json", v1)
    refused(lambda: presets.geneformer(src, MEDIANS, version=2), "<cls>",
            *(["v1.json"] if how == "json" else []))


@pytest.mark.parametrize("how", ["mapping", "json"])
def test_scgpt_without_cls(tmp_path, how):
    v = {k: i for k, i in SC_VOCAB.items() if k != "<cls>"}
    src = v if how == "mapping" else _write(tmp_path, "sv.json", v)
    refused(lambda: presets.scgpt(src), "<cls>", *(["sv.json"] if how == "json" else []))
    presets.scgpt(src, append_cls=False)


def test_pickle_numpy_ids(tmp_path):
    p = tmp_path / "d.pkl"
    p.write_bytes(pickle.dumps({k: np.int64(v) for k, v in VOCAB.items()}))
    tok, spec = presets.geneformer(p, MEDIANS)
    assert _lists(tokenize_anndata(_adata(), tok, spec)) == _gf_oracle(X)


# ------------------------------------------------------------------ matrices and var columns
@pytest.mark.parametrize("ids", [[1.0, 2.0], [1.5, 2.0], [np.nan, 2.0]], ids=str)
def test_float_id_column_is_refused_naming_it(ids):
    """issue 43 #8: float ids ("1.0") never match silently: refused naming the column."""
    vocab = {"<pad>": 0, "<mask>": 1, "1": 2, "2": 3}
    a = anndata.AnnData(np.array([[1, 2]], np.float32),
                        var=pd.DataFrame({"ensembl_id": ids}, index=["a", "b"]))
    tok, spec = presets.geneformer(vocab, {"1": 1.0, "2": 1.0})
    refused(lambda: tokenize_anndata(a, tok, spec), "ensembl_id")


@pytest.mark.parametrize("case", ["nan_ids", "none_ids", "int_ids", "bool_ids", "padded_ids",
                                  "categorical_ids", "bytes_ids"])
def test_odd_id_columns(case):
    ids = {"nan_ids": [math.nan, "ENSG2", "ENSG3", "ENSG4"],
           "none_ids": [None, "ENSG2", "ENSG3", "ENSG4"],
           "int_ids": [1, 2, 3, 4], "bool_ids": [True, False, True, False],
           "padded_ids": [" ENSG1", "ENSG2 ", "ENSG3", "ENSG4"],
           "categorical_ids": pd.Categorical(GENES), "bytes_ids": [g.encode() for g in GENES]}[case]
    a = _adata(ids=ids)
    try:
        got = _gf(a)
    except GenotokError as exc:
        assert "ensembl_id" in str(exc)
        return
    want_ids = [str(x) if not isinstance(x, bytes) else x.decode() for x in ids]
    if case in ("nan_ids", "none_ids"):
        want_ids[0] = "<no id>"
    assert got == _gf_oracle(X, ids=want_ids)


def test_duplicate_ids_are_summed():
    ids = ["ENSG1", "ENSG1", "ENSG2", "ENSG3"]
    assert _gf(_adata(ids=ids)) == _gf_oracle(X, ids=ids)


@pytest.mark.filterwarnings("ignore:Variable names are not unique")
def test_duplicate_var_names():
    assert _gf(_adata(index=["v", "v", "w", "w"])) == _gf_oracle(X)


def test_missing_id_column_falls_back_to_var_names():
    a = _adata(column=None, index=GENES)
    assert _gf(a) == _gf_oracle(X)


def test_named_id_column_missing():
    refused(lambda: _gf(_adata(), id_column="gene_symbols"), "gene_symbols")


@pytest.mark.parametrize("case", ["missing", "zero", "nan"])
def test_medians_without_a_value(case):
    med = dict(MEDIANS)
    if case == "missing":
        del med["ENSG2"]
    else:
        med["ENSG2"] = 0.0 if case == "zero" else math.nan
    tok, spec = presets.geneformer(VOCAB, med)
    want = naive.geneformer(X, GENES, VOCAB, {k: (0.0 if v != v else v) for k, v in med.items()})
    assert _lists(tokenize_anndata(_adata(), tok, spec)) == want


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (0, 0)])
def test_empty_matrices(shape):
    ids = GENES[:shape[1]]
    a = _adata(X=np.zeros(shape, np.float32), ids=ids)
    assert _gf(a) == [[] for _ in range(shape[0])]


def test_cells_with_no_counts():
    assert _gf(_adata(X=np.zeros((3, 4), np.float32))) == [[], [], []]


@pytest.mark.parametrize("n_counts", ["zero", "nan", "negative", "inf", "below_known", "str"])
def test_odd_n_counts(n_counts):
    total = X.sum(axis=1).astype(np.float64)
    col = {"zero": np.zeros(4), "nan": np.full(4, np.nan), "negative": -total,
           "inf": np.full(4, np.inf), "below_known": total / 2,
           "str": np.array(["a"] * 4, dtype=object)}[n_counts]
    a = _adata(obs=pd.DataFrame({"n_counts": col}, index=[f"c{i}" for i in range(4)]))
    refused(lambda: _gf(a), "n_counts")


@pytest.mark.parametrize("case", ["fractional", "negative", "nan", "inf", "huge"])
def test_odd_counts(case):
    Xo = X.copy()
    Xo[0, 0] = {"fractional": 0.5, "negative": -3, "nan": np.nan, "inf": np.inf,
                "huge": 3e38}[case]
    a = _adata(X=Xo)
    if case == "fractional":  # normalised counts are a valid input: the oracle
        assert _gf(a) == _gf_oracle(Xo)
        return
    if case == "huge":
        try:
            got = _gf(a)
        except GenotokError:
            return
        assert got == _gf_oracle(Xo)
        return
    refused(lambda: _gf(a))


@pytest.mark.parametrize("fmt", ["dense", "csc", "csr_unsorted", "csr_int64", "dense_int",
                                 "dense_f64", "csr_duplicates"])
def test_matrix_formats(fmt):
    unsorted = sp.csr_matrix(X)
    for i in range(4):  # each row's entries reversed: not canonical, the same matrix
        a, b = unsorted.indptr[i], unsorted.indptr[i + 1]
        unsorted.indices[a:b] = unsorted.indices[a:b][::-1].copy()
        unsorted.data[a:b] = unsorted.data[a:b][::-1].copy()
    unsorted.has_sorted_indices = False
    dups = sp.csr_matrix((np.array([1, 2, 1, 5, 7, 2, 2], np.float32),
                          np.array([0, 3, 0, 0, 1, 3, 3]), np.array([0, 3, 3, 5, 7])),
                         shape=(4, 4))  # row 0 holds column 0 twice: summed (scipy's sum)
    if fmt == "csr_duplicates":
        assert _gf(_adata(X=dups)) == _gf_oracle(dups.toarray())
        return
    M = {"dense": X, "csc": sp.csc_matrix(X), "csr_unsorted": unsorted,
         "csr_int64": sp.csr_matrix(X.astype(np.int64)), "dense_int": X.astype(np.int32),
         "dense_f64": X.astype(np.float64)}[fmt]
    assert _gf(_adata(X=M)) == _gf_oracle(X)


@pytest.mark.parametrize("case", ["index_beyond", "index_negative", "uint64_beyond",
                                  "indptr_beyond", "indptr_decreasing"])
def test_csr_indices_beyond_the_shape(case):
    M = sp.csr_matrix(X)
    ind, ptr = M.indices.astype(np.int64), M.indptr.astype(np.int64)
    if case == "index_beyond":
        ind[0] = 10**6
    elif case == "index_negative":
        ind[0] = -1
    elif case == "uint64_beyond":
        ind = ind.astype(np.uint64)
        ind[0] = 2**63 + 5
    elif case == "indptr_beyond":
        ptr[-1] = ptr[-1] + 100
    else:
        ptr[1], ptr[2] = 5, 3
    bad = sp.csr_matrix(X)
    bad.indices, bad.indptr = ind, ptr
    a = anndata.AnnData(sp.csr_matrix(X.shape, dtype=np.float32),
                        var=pd.DataFrame({"ensembl_id": GENES}, index=GENES))
    a.X = bad if case != "indptr_beyond" else bad
    refused(lambda: _gf(a))


@pytest.mark.parametrize("value", ["one", "nan", "str_one", "two", "bool"])
def test_filter_pass_values(value):
    col = {"one": [1, 0, 1, 0], "nan": [1, np.nan, 1, 0], "str_one": ["1", "0", "1", "1"],
           "two": [2, 1, 1, 1], "bool": [True, False, True, False]}[value]
    a = _adata(obs=pd.DataFrame({"filter_pass": col}, index=[f"c{i}" for i in range(4)]))
    keep = [i for i, v in enumerate(col) if v == 1]
    try:
        got = _gf(a)
    except GenotokError as exc:
        assert "filter_pass" in str(exc)
        return
    assert got == [_gf_oracle(X)[i] for i in keep]


def test_v2_framing_matches_oracle():
    tok, spec = presets.geneformer(VOCAB, MEDIANS, version=2, input_size=4)
    assert _lists(tokenize_anndata(_adata(), tok, spec)) == _gf_oracle(X, input_size=4,
                                                                       framed=True)


def test_scgpt_matches_oracle():
    a = _adata(column=None, index=GENES)
    tok, spec = presets.scgpt(SC_VOCAB, n_bins=5)
    got = tokenize_anndata(a, tok, spec)
    want = naive.scgpt(X, GENES, SC_VOCAB, n_bins=5)
    assert [list(map(int, x)) for x in got.to_list()] == [[1] + list(w[0]) for w in want]


# ------------------------------------------------------------------ the CLI's preset options
@pytest.fixture
def files(tmp_path):
    v = _write(tmp_path, "vocab.json", VOCAB)
    m = _write(tmp_path, "medians.json", MEDIANS)
    h = tmp_path / "rna.h5ad"
    _adata().write_h5ad(h)
    return tmp_path, v, m, h


CLI_CASES = {
    "unknown_preset": (["--preset", "geneformer-v3"], ["geneformer-v3"]),
    "medians_without_preset": (["--medians", "{m}"], ["--medians"]),
    "scgpt_with_medians": (["--preset", "scgpt", "--medians", "{m}"], ["--medians"]),
    "geneformer_without_medians": (["--preset", "geneformer"], ["--medians"]),
    "medians_missing_file": (["--preset", "geneformer", "--medians", "{d}/nope.json"],
                             ["nope.json"]),
    "medians_directory": (["--preset", "geneformer", "--medians", "{d}"], [""]),
    "preset_and_cells": (["--preset", "geneformer", "--medians", "{m}", "--cells", "{d}/c.toml"],
                         ["--cells"]),
    "threads_zero": (["--preset", "geneformer", "--medians", "{m}", "--threads", "0"],
                     ["threads"]),
    "threads_huge": (["--preset", "geneformer", "--medians", "{m}", "--threads", str(2**63)],
                     ["threads"]),
    "max_length_nan": (["--preset", "geneformer", "--medians", "{m}", "--max-length", "nan"],
                       ["max-length"]),
    "vocab_garbage": (["--preset", "geneformer", "--medians", "{d}/rna.h5ad"], ["rna.h5ad"]),
}


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_preset_options(files, case):
    d, v, m, h = files
    (d / "c.toml").write_text("max_length = 3\n")
    flags, names = CLI_CASES[case]
    flags = [f.format(d=d, m=m) for f in flags]
    cli_refused("pretokenize", "--vocab", v, *flags, "--out", d / "out", h, names=names)
    assert not (d / "out").exists() or not any((d / "out").iterdir())


def test_cli_preset_runs(files):
    d, v, m, h = files
    rc, out, err = cli("pretokenize", "--vocab", v, "--preset", "geneformer", "--medians", m,
                       "--out", d / "out", "-q", h)
    assert rc == 0, err
    from genotok import Corpus
    c = Corpus.open(d / "out")
    assert [list(map(int, c[i])) for i in range(len(c))] == _gf_oracle(X)
