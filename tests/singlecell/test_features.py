"""Gene vocabularies through the cell path (genotok.singlecell.features), against the plain
oracles of tests/naive_genes.py: ties, duplicate ids, unknown genes, n_counts, framing."""

from __future__ import annotations

import anndata
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import genotok
from genotok import CellSpec, GeneSettings, GeneTokenizer, Normalize, RankByMedian, Tokenizer
from genotok.errors import AnnDataError

from .. import naive_genes as naive


def _adata(X, ids, obs=None, column="ensembl_id"):
    var = pd.DataFrame({column: ids}, index=[f"g{i}" for i in range(len(ids))])
    return anndata.AnnData(sp.csr_matrix(np.asarray(X, np.float32)), var=var, obs=obs)


def _geneformer(vocab, medians, **kw):
    return genotok.presets.geneformer(vocab, medians, **kw)


def test_ties_keep_column_order_not_token_order():
    # two genes with equal normalised values: Geneformer's stable sort keeps their column order,
    # whatever their token ids (the region kind ordered ties by token id)
    vocab = {"<pad>": 0, "<mask>": 1, "B": 2, "A": 3, "C": 4}
    med = {"A": 1.0, "B": 1.0, "C": 1.0}
    tok, spec = _geneformer(vocab, med)
    a = _adata([[5, 5, 1], [1, 5, 5]], ["A", "B", "C"])
    assert genotok.tokenize_anndata(a, tok, spec).to_list() == [[3, 2, 4], [2, 4, 3]]
    assert naive.geneformer(a.X.toarray(), ["A", "B", "C"], vocab, med) == [[3, 2, 4],
                                                                           [2, 4, 3]]


def test_values_float32_would_tie_keep_their_float64_order():
    # Geneformer ranks float64 values: A's value is above B's by less than float32 resolves;
    # a float32 key would tie them and keep column order (B first)
    vocab = {"<pad>": 0, "A": 1, "B": 2}
    med = {"A": 1.0, "B": 1.0 + 1e-9}
    tok, spec = _geneformer(vocab, med)
    a = _adata([[3, 3]], ["B", "A"])
    assert genotok.tokenize_anndata(a, tok, spec).to_list() == [[1, 2]]
    assert naive.geneformer(a.X.toarray(), ["B", "A"], vocab, med) == [[1, 2]]


def test_duplicate_ids_are_summed_before_normalising():
    vocab = {"<pad>": 0, "A": 1, "B": 2}
    med = {"A": 1.0, "B": 4.0}
    tok, spec = _geneformer(vocab, med)
    # A appears twice: 2 + 2 = 4 counts; B has 12 counts / median 4 = 3 < 4
    a = _adata([[2, 12, 2]], ["A", "B", "A"])
    assert genotok.tokenize_anndata(a, tok, spec).to_list() == [[1, 2]]
    spec_v = spec.replace(values=True)
    r = genotok.tokenize_anndata(a, tok, spec_v)
    np.testing.assert_allclose(r.values, [4 / 16 * 1e4, 12 / 16 * 1e4 / 4], rtol=1e-6)


def test_unknown_genes_count_in_the_total_or_are_dropped():
    vocab = {"A": 0, "B": 1}
    a = _adata([[1, 1, 2]], ["A", "B", "Z"])
    spec = CellSpec(encoding=Normalize(4.0), values=True)
    counted = GeneTokenizer(vocab, settings=GeneSettings(unknown_features="count"))
    dropped = GeneTokenizer(vocab, settings=GeneSettings(unknown_features="drop"))
    assert genotok.tokenize_anndata(a, counted, spec).values.tolist() == [1.0, 1.0]
    assert genotok.tokenize_anndata(a, dropped, spec).values.tolist() == [2.0, 2.0]


def test_n_counts_from_obs_when_present():
    vocab = {"A": 0, "B": 1}
    tok, spec = _geneformer(vocab, {"A": 1.0, "B": 1.0})
    spec = spec.replace(values=True)
    obs = pd.DataFrame({"n_counts": [10.0, 4.0]}, index=["c0", "c1"])
    a = _adata([[1, 3], [2, 2]], ["A", "B"], obs=obs)
    r = genotok.tokenize_anndata(a, tok, spec)
    np.testing.assert_allclose(r.values, [3000, 1000, 5000, 5000])
    b = _adata([[1, 3], [2, 2]], ["A", "B"])  # no n_counts: the row sums
    np.testing.assert_allclose(genotok.tokenize_anndata(b, tok, spec).values,
                               [7500, 2500, 5000, 5000])
    obs_low = pd.DataFrame({"n_counts": [3.0, 4.0]}, index=["c0", "c1"])
    with pytest.raises(AnnDataError, match=r"cell 0: obs\['n_counts'\] 3.0 is below"):
        genotok.tokenize_anndata(_adata([[1, 3], [2, 2]], ["A", "B"], obs=obs_low), tok, spec)


def test_v2_framing_and_truncation():
    vocab = {"<pad>": 0, "<mask>": 1, "<cls>": 2, "<eos>": 3, "A": 4, "B": 5, "C": 6}
    med = {"A": 1.0, "B": 1.0, "C": 1.0}
    tok, spec = _geneformer(vocab, med, version=2, input_size=4)
    a = _adata([[1, 3, 2], [0, 0, 0]], ["A", "B", "C"])
    got = genotok.tokenize_anndata(a, tok, spec).to_list()
    assert got == [[2, 5, 6, 3], [2, 3]]
    assert got == naive.geneformer(a.X.toarray(), ["A", "B", "C"], vocab, med, input_size=4,
                                   framed=True)
    with pytest.raises(ValueError, match="no '<cls>'"):
        _geneformer({"<pad>": 0, "A": 1}, med, version=2)


def test_id_column_chosen_or_found():
    vocab = {"A": 0, "B": 1}
    a = _adata([[1, 2]], ["A", "B"], column="gene_ids")
    assert genotok.tokenize_anndata(a, GeneTokenizer(vocab)).to_list() == [[0, 1]]
    named = anndata.AnnData(sp.csr_matrix(np.array([[1.0, 2.0]])),
                            var=pd.DataFrame(index=["B", "A"]))
    assert genotok.tokenize_anndata(named, GeneTokenizer(vocab)).to_list() == [[1, 0]]
    tok = GeneTokenizer(vocab, settings=GeneSettings(id_column="symbol"))
    with pytest.raises(AnnDataError, match="no column 'symbol'"):
        genotok.tokenize_anndata(a, tok)


def test_medians_must_be_keyed_by_gene_with_a_gene_vocabulary():
    a = _adata([[1, 2]], ["A", "B"])
    tok = GeneTokenizer({"A": 0, "B": 1})
    with pytest.raises(ValueError, match="keyed by feature id"):
        genotok.tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian()))
    with pytest.raises(ValueError, match="keyed by feature id"):
        genotok.tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian(np.ones(2))))
    region = Tokenizer(["chr1:0-10", "chr1:10-20"])
    peaks = anndata.AnnData(sp.csr_matrix(np.array([[1.0, 2.0]])),
                            var=pd.DataFrame(index=["chr1:0-10", "chr1:10-20"]))
    with pytest.raises(ValueError, match="needs a GeneTokenizer"):
        genotok.tokenize_anndata(peaks, region, CellSpec(encoding=RankByMedian({"x": 1.0})))
    with pytest.raises(ValueError, match="GeneTokenizer only"):
        genotok.tokenize_anndata(peaks, region, CellSpec(encoding=Normalize(total="n")))


def test_spec_with_gene_medians_round_trips():
    spec = CellSpec(encoding=(Normalize(1e4, total="n_counts"), RankByMedian({"A": 2.0})),
                    add_cls=True, add_eos=True, max_length=10)
    assert CellSpec.from_json(spec.to_json()) == spec


def test_scgpt_bins_against_the_oracle():
    vocab = {"<pad>": 5, "<cls>": 6, "<eoc>": 7, "A": 0, "B": 1, "C": 2}
    tok, spec = genotok.presets.scgpt(vocab, n_bins=5, side="one", append_cls=False)
    X = np.array([[3, 0, 1, 9], [1, 1, 1, 0], [0, 0, 0, 4]], np.float32)
    ids = ["C", "Z", "A", "B"]
    a = anndata.AnnData(sp.csr_matrix(X), var=pd.DataFrame(index=ids))
    r = genotok.tokenize_anndata(a, tok, spec)
    got = [(r.data[r.offsets[i]:r.offsets[i + 1]].tolist(),
            r.values[r.offsets[i]:r.offsets[i + 1]].astype(int).tolist()) for i in range(3)]
    assert got == naive.scgpt(X, ids, vocab, n_bins=5)
    tok, spec = genotok.presets.scgpt(vocab, n_bins=5, side="one")  # <cls> first, value 0
    r = genotok.tokenize_anndata(a, tok, spec)
    assert [(r[i].tolist(), r.row_values(i).astype(int).tolist()) for i in range(3)] == \
        [([6, *t], [0, *b]) for t, b in got]
    with pytest.raises(ValueError, match="no '<cls>'"):
        genotok.presets.scgpt({"A": 0}, append_cls=True)


def test_scgpt_random_side_spreads_only_over_repeated_edges():
    # scGPT's side="both": a value on several equal edges gets a bin between its right and
    # left digit, drawn per cell from a generator seeded by (seed, row): chunking changes nothing
    vocab = {f"G{i}": i for i in range(12)}
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(40, 12)).astype(np.float32)
    a = anndata.AnnData(sp.csr_matrix(X), var=pd.DataFrame(index=list(vocab)))
    tok, one = genotok.presets.scgpt(vocab, n_bins=7, side="one", append_cls=False)
    _, both = genotok.presets.scgpt(vocab, n_bins=7, append_cls=False)
    r1 = genotok.tokenize_anndata(a, tok, one)
    r2 = genotok.tokenize_anndata(a, tok, both)
    r3 = genotok.tokenize_anndata(a, tok, both, read=genotok.AnnDataOptions(chunk_rows=7))
    assert np.array_equal(r1.data, r2.data) and np.array_equal(r2.values, r3.values)
    for i in range(40):
        v = np.log1p(X[i] * (1e4 / X[i].sum()))
        pos = v[v > 0]
        edges = np.quantile(pos, np.linspace(0, 1, 6))
        left, right = np.digitize(pos, edges), np.digitize(pos, edges, right=True)
        got = r2.values[r2.offsets[i]:r2.offsets[i + 1]]
        assert np.all((got >= np.minimum(right + 1, left)) & (got <= left))
        assert np.array_equal(r1.values[r1.offsets[i]:r1.offsets[i + 1]], left)
    assert not np.array_equal(r1.values, r2.values)  # some values did sit on repeated edges


_IDS = ["A", "B", "C", "D", "Z"]  # Z: not in the vocabulary


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_geneformer_matches_the_oracle(data):
    n_rows = data.draw(st.integers(0, 6))
    n_cols = data.draw(st.integers(1, 7))
    ids = data.draw(st.lists(st.sampled_from(_IDS), min_size=n_cols, max_size=n_cols))
    X = np.array(data.draw(st.lists(st.lists(st.integers(0, 6), min_size=n_cols,
                                             max_size=n_cols),
                                    min_size=n_rows, max_size=n_rows)),
                 dtype=np.float32).reshape(n_rows, n_cols)
    token_ids = data.draw(st.permutations(range(2, 6)))  # dictionary order != column order
    vocab = {"<pad>": 0, "<mask>": 1, **dict(zip("ABCD", token_ids))}
    med = {g: data.draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])) for g in "ABC"}  # D: none
    size = data.draw(st.integers(1, 5))
    use_n = data.draw(st.booleans()) and n_rows > 0
    n_counts = X.sum(axis=1) + np.arange(n_rows) if use_n else None
    obs = pd.DataFrame({"n_counts": n_counts}, index=[f"c{i}" for i in range(n_rows)]) \
        if use_n else None
    a = _adata(X, ids, obs=obs)
    tok, spec = _geneformer(vocab, med, input_size=size)
    want = naive.geneformer(X, ids, vocab, med, n_counts=n_counts, input_size=size)
    assert genotok.tokenize_anndata(a, tok, spec).to_list() == want


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_geneformer_fused_kernel_equals_the_general_path(data):
    # features.ranker's one kernel against the remap + encoding + cell kernels it replaces:
    # real values (rounding), repeated ids (the general path), unknown ids, with and without
    # n_counts, cut or not, values or not
    import genotok.singlecell.cells as C

    n_rows, n_cols = data.draw(st.integers(0, 8)), data.draw(st.integers(1, 8))
    ids = data.draw(st.lists(st.sampled_from(_IDS), min_size=n_cols, max_size=n_cols))
    dense = data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.3, 1e-3, 7.25]),
                                        min_size=n_cols, max_size=n_cols),
                               min_size=n_rows, max_size=n_rows))
    X = np.array(dense, np.float32).reshape(n_rows, n_cols)
    vocab = {"<pad>": 0, "<mask>": 1, "A": 5, "B": 3, "C": 4, "D": 2}
    med = {g: data.draw(st.sampled_from([0.5, 1.0, 3.0, 0.7])) for g in "ABC"}
    obs = None
    if data.draw(st.booleans()) and n_rows:
        obs = pd.DataFrame({"n_counts": X.sum(axis=1, dtype=np.float64) + 0.5},
                           index=[f"c{i}" for i in range(n_rows)])
    a = anndata.AnnData(sp.csr_matrix(X), obs=obs, var=pd.DataFrame(index=[f"v{i}" for i in
                                                                          range(n_cols)]))
    a.var["gene_ids"] = ids
    tok, spec = genotok.presets.geneformer(vocab, med, input_size=data.draw(st.integers(1, 6)))
    spec = spec.replace(values=data.draw(st.booleans()))
    fused = genotok.tokenize_anndata(a, tok, spec)
    keep = C._rank_fused
    C._rank_fused = lambda *args: False
    try:
        general = genotok.tokenize_anndata(a, tok, spec)
    finally:
        C._rank_fused = keep
    assert fused.to_list() == general.to_list()
    if spec.values:
        assert np.array_equal(fused.values, general.values)


def test_a_chunk_the_fused_kernel_hands_back_runs_in_pieces():
    # a repeated gene id: the fused kernel hands its chunk (sized to its own memory per entry)
    # back, and the general path runs it in pieces sized to the general path's; same cells
    import genotok.singlecell.cells as C

    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(60, 6)).astype(np.float32)
    ids = ["A", "B", "A", "C", "Z", "D"]
    a = anndata.AnnData(sp.csr_matrix(X), var=pd.DataFrame(index=[f"v{i}" for i in range(6)]))
    a.var["gene_ids"] = ids
    vocab = {"<pad>": 0, "<mask>": 1, "A": 5, "B": 3, "C": 4, "D": 2}
    tok, spec = genotok.presets.geneformer(vocab, {"A": 1.0, "B": 2.0, "C": 0.5, "D": 3.0})
    calls = []
    general = C._general
    C._general = lambda ch, *args: calls.append(ch.n_rows) or general(ch, *args)
    try:  # one chunk of 60 rows for the fused kernel; pieces of ~74 entries after
        small = genotok.tokenize_anndata(a, tok, spec, memory_mb=0.004,
                                         read=genotok.AnnDataOptions(chunk_rows=60))
    finally:
        C._general = general
    assert len(calls) > 1 and sum(calls) == 60
    assert small.to_list() == genotok.tokenize_anndata(a, tok, spec).to_list()
    pieces = list(C._pieces(genotok.singlecell.Chunk(7, np.array([2, 4, 4, 9, 10]),
                                                     np.arange(12), np.ones(12), 3), 3))
    assert [(p.row0, p.indptr.tolist()) for p in pieces] == [(7, [2, 4, 4]), (9, [4, 9]),
                                                             (10, [9, 10])]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scgpt_fused_kernel_equals_the_general_path(data):
    # features.ranker's bins kernel against the encoding + QuantileBins + cell kernels it
    # replaces: counts (counted) and real values (sorted), ids outside the vocabulary (dropped),
    # repeated ids (the general path), both sides, chunked or not
    import genotok.singlecell.cells as C

    n_rows, n_cols = data.draw(st.integers(0, 8)), data.draw(st.integers(1, 8))
    ids = data.draw(st.lists(st.sampled_from(_IDS), min_size=n_cols, max_size=n_cols))
    dense = data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0, 0.3, 7.25]),
                                        min_size=n_cols, max_size=n_cols),
                               min_size=n_rows, max_size=n_rows))
    X = np.array(dense, np.float32).reshape(n_rows, n_cols)
    a = anndata.AnnData(sp.csr_matrix(X), var=pd.DataFrame(index=[f"v{i}" for i in
                                                                  range(n_cols)]))
    a.var["gene_ids"] = ids  # repeated ids: not as var names (anndata warns)
    vocab = {"<pad>": 0, "<cls>": 1, "A": 5, "B": 3, "C": 4, "D": 2}
    tok, spec = genotok.presets.scgpt(vocab, n_bins=data.draw(st.integers(3, 9)),
                                      id_column="gene_ids",
                                      side=data.draw(st.sampled_from(["one", "both"])),
                                      append_cls=data.draw(st.booleans()))
    read = genotok.AnnDataOptions(chunk_rows=data.draw(st.sampled_from([None, 3])))
    fused = genotok.tokenize_anndata(a, tok, spec, read=read)
    keep = C._rank_fused
    C._rank_fused = lambda *args: False
    try:
        general = genotok.tokenize_anndata(a, tok, spec, read=read)
    finally:
        C._rank_fused = keep
    assert fused.to_list() == general.to_list()
    assert np.array_equal(fused.values, general.values)
