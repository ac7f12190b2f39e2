"""SOMA experiments (genotok.singlecell.soma): an experiment written by
``tiledbsoma.io.from_anndata`` gives the tokens of the same cells in memory, in soma_joinid
order, through ``SomaOptions(measurement=, layer=, obs_filter=)``; its obs columns are
metadata and condition tokens; the Geneformer and scGPT presets straight from an experiment
equal the presets on the same cells exported to ``.h5ad``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tiledbsoma")
ad = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")
sp = pytest.importorskip("scipy.sparse")

import genotok
from genotok import CellSpec, Corpus, RunOptions, SomaOptions, Tokenizer, pretokenize
from genotok.errors import AnnDataError
from genotok.singlecell import (SomaSource, condition_tokens, open_source, tokenize_anndata,
                                tokenize_cells)
from tests.singlecell._cells import UNIVERSE, adata, counts, rows

SPEC = CellSpec(values=True)
B_CELLS = "cell_type == 'B cell'"


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(UNIVERSE)


def write(a, uri, measurement="RNA", layer="raw"):
    import tiledbsoma.io

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiledbsoma.io.from_anndata(str(uri), a, measurement_name=measurement,
                                   X_layer_name=layer)
    return str(uri)


def _same(got, want):
    assert rows(got) == rows(want)
    if want.values is not None:
        np.testing.assert_array_equal(got.values, want.values)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 9), m=st.integers(1, 8), density=st.sampled_from([0.0, 0.3, 0.8]),
       dense=st.booleans(), filtered=st.booleans(), seed=st.integers(0, 99))
def test_round_trip_equals_memory(tmp_path_factory, tok, n, m, density, dense, filtered, seed):
    a = adata(counts(n, m, density, seed, dense=dense), seed=seed)
    uri = write(a, tmp_path_factory.mktemp("s") / "exp", "ATAC", "counts")
    read = SomaOptions(measurement="ATAC", obs_filter=B_CELLS if filtered else None,
                       chunk_rows=2)
    keep = (a.obs["cell_type"] == "B cell").to_numpy() if filtered else np.ones(n, bool)
    want = tokenize_anndata(a[keep].copy(), tok, SPEC)
    _same(tokenize_anndata(uri, tok, SPEC, read=read), want)
    with open_source(uri, read) as src:
        assert isinstance(src, SomaSource) and src.names() == list(a.obs_names[keep])
        _same(tokenize_cells(src, tok, SPEC, memory_mb=0.0005), want)


def test_obs_metadata_condition_tokens_and_pipeline(tmp_path, tok):
    a = adata(counts(15, 7, 0.4, 3), seed=3)
    uri = write(a, tmp_path / "exp")
    read = SomaOptions(layer="raw", obs_filter="cell_type == 'B cell' and batch > 0")
    keep = ((a.obs["cell_type"] == "B cell") & (a.obs["batch"] > 0)).to_numpy()
    sub = a[keep].copy()
    c = tokenize_anndata(uri, tok, read=read, out=tmp_path / "c.gtokc",
                         obs_columns=["cell_type", "batch"])
    assert list(c.names) == list(sub.obs_names)
    assert list(c.meta["cell_type"]) == list(sub.obs["cell_type"])
    assert list(c.meta["batch"]) == list(sub.obs["batch"])
    ctok = Tokenizer(UNIVERSE, extra_tokens=condition_tokens(a, ["cell_type", "batch"]))
    spec = CellSpec(prepend=("cell_type", "batch"))
    assert rows(tokenize_anndata(uri, ctok, spec, read=read)) == \
        rows(tokenize_anndata(sub, ctok, spec))
    pretokenize([uri], tok, tmp_path / "run", progress=False, options=RunOptions(read=read))
    run = Corpus.open(tmp_path / "run")
    assert [list(run[i]) for i in range(len(run))] == rows(tokenize_anndata(sub, tok))
    (tmp_path / "u.bed").write_text("".join(
        f"{r.split(':')[0]}\t{r.split(':')[1].replace('-', chr(9))}\n" for r in UNIVERSE))
    done = subprocess.run([sys.executable, "-m", "genotok", "pretokenize", "--universe",
                           str(tmp_path / "u.bed"), "--out", str(tmp_path / "cli"), "--quiet",
                           "--read", json.dumps(read.to_json()), uri],
                          capture_output=True, text=True, env=dict(os.environ,
                                                                   PYTHONPATH=os.getcwd()))
    assert done.returncode == 0, done.stderr
    cli = Corpus.open(tmp_path / "cli")
    assert [list(cli[i]) for i in range(len(cli))] == [list(run[i]) for i in range(len(run))]


def test_errors_name_the_experiment(tmp_path, tok):
    uri = write(adata(counts(4, 7, 0.5, 1)), tmp_path / "exp")
    with pytest.raises(AnnDataError, match=r"no measurement 'ATAC'; the measurements are"):
        open_source(uri, SomaOptions(measurement="ATAC"))
    with pytest.raises(AnnDataError, match=r"no X layer 'norm'; its layers are \['raw'\]"):
        open_source(uri, SomaOptions(layer="norm"))
    with pytest.raises(AnnDataError, match="exp.*cannot read"):
        open_source(uri, SomaOptions(obs_filter="no_such_column == 3"))
    with pytest.raises(AnnDataError, match=r"obs has no column\(s\) \['absent'\]"):
        tokenize_anndata(uri, tok, read=SomaOptions(), out=tmp_path / "x.gtokc",
                         obs_columns=["absent"])
    with pytest.raises(genotok.params.ParameterError, match="measurement"):
        SomaOptions(measurement=3)


def _rna(n=24, seed=5):
    """Raw RNA counts, Ensembl ids as var names, Geneformer's obs columns."""
    rng = np.random.default_rng(seed)
    genes = [f"ENSG{i:011d}" for i in range(12)]
    X = sp.csr_matrix((rng.random((n, 12)) < 0.5) * rng.integers(1, 30, (n, 12)),
                      dtype=np.float32)
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["B cell", "T cell"], n)),
                        "n_counts": np.asarray(X.sum(1)).ravel() + 5.0,
                        "filter_pass": rng.integers(0, 2, n)},
                       index=[f"c{i}" for i in range(n)])
    return ad.AnnData(X, obs=obs, var=pd.DataFrame(index=genes))


def test_presets_equal_h5ad_export(tmp_path):
    a = _rna()
    uri = write(a, tmp_path / "rna")
    keep = (a.obs["cell_type"] == "B cell").to_numpy()
    a[keep].copy().write_h5ad(tmp_path / "b.h5ad")
    read = SomaOptions(measurement="RNA", layer="raw", obs_filter=B_CELLS)
    genes = list(a.var_names)
    tokens = {"<pad>": 0, "<mask>": 1, **{g: i + 2 for i, g in enumerate(genes[:10])}}
    medians = {g: 1.0 + i for i, g in enumerate(genes[:9])}
    for version in (1, 2):
        vocab = tokens if version == 1 else {**tokens, "<cls>": 90, "<eos>": 91}
        tok, spec = genotok.presets.geneformer(vocab, medians, version=version)
        _same(tokenize_anndata(uri, tok, spec, read=read),
              tokenize_anndata(tmp_path / "b.h5ad", tok, spec))
    vocab = {**{g: i for i, g in enumerate(genes[2:])}, "<pad>": 40, "<cls>": 41, "<eoc>": 42}
    tok, spec = genotok.presets.scgpt(vocab, n_bins=11)
    _same(tokenize_anndata(uri, tok, spec, read=read),
          tokenize_anndata(tmp_path / "b.h5ad", tok, spec))


def test_check_source(tmp_path):
    from genotok.testing import check_source

    a = adata(counts(7, 6, 0.5, 3))
    check_source(SomaSource, write(a, tmp_path / "exp"), obs=a.obs)
