"""genotok.presets on the real raw-count PBMC RNA files with Geneformer's real V1 dictionaries:
every cell's input_ids equal, in memory, backed, by path and through a corpus (pretokenize),
against the plain oracle of tests/naive_genes.py always, and against Geneformer's own
TranscriptomeTokenizer (as vendored in geniml 0.8.4) where it imports (a slow test: ``pip install
geniml==0.8.4 loompy scanpy``, then ``pytest -m slow tests/test_presets.py``)."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import warnings

import anndata
import numpy as np
import pytest

import genotok

from . import naive_genes as naive
from ._shared import SHARED, shared

REAL = SHARED / "data" / "real"
FILES = {"muon": REAL / "muon" / "test_rna.h5ad",
         "simba": REAL / "simba" / "10xpbmc_rna_subset.h5ad"}
GF = REAL / "geneformer"


@pytest.fixture(scope="module")
def dictionaries():
    tokens = json.loads(shared(GF / "token_dictionary.json").read_text())
    medians = json.loads(shared(GF / "gene_median_dictionary.json").read_text())
    v2 = {**tokens, "<cls>": len(tokens), "<eos>": len(tokens) + 1}  # ids the model chose
    return tokens, medians, v2


def _read(path, **kw):
    """The real files were written by old anndata versions (no encoding metadata)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", anndata.OldFormatWarning)
        return anndata.read_h5ad(path, **kw)


def _oracle(path, vocab, medians, **kw):
    a = _read(path)
    return naive.geneformer(a.X.toarray(), a.var["gene_ids"].astype(str).tolist(), vocab,
                            medians, **kw)


def _lists(r):
    return [list(map(int, x)) for x in (r.to_list() if hasattr(r, "to_list") else r)]


@pytest.mark.parametrize("name", sorted(FILES))
def test_geneformer_v1_every_cell_every_way(name, dictionaries, tmp_path):
    tokens, medians, _ = dictionaries
    path = shared(FILES[name])
    tok, spec = genotok.presets.geneformer(GF / "token_dictionary.json",
                                           GF / "gene_median_dictionary.json")
    want = _oracle(path, tokens, medians)
    assert sum(map(len, want)) > 0
    assert _lists(genotok.tokenize_anndata(path, tok, spec)) == want
    assert _lists(genotok.tokenize_anndata(_read(path), tok, spec)) == want
    backed = _read(path, backed="r")
    try:
        assert _lists(genotok.tokenize_anndata(backed, tok, spec)) == want
    finally:
        backed.file.close()
    corpus = genotok.tokenize_anndata(path, tok, spec, out=tmp_path / "c")
    assert [list(map(int, corpus[i])) for i in range(len(corpus))] == want
    genotok.pretokenize([path], tok, tmp_path / "p", cells=spec, progress=False)
    pre = genotok.Corpus.open(tmp_path / "p", expect=tok)
    assert [list(map(int, pre[i])) for i in range(len(pre))] == want


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("size", [4096, 12])
def test_geneformer_v2_framing_and_truncation(name, size, dictionaries):
    tokens, medians, v2 = dictionaries
    path = shared(FILES[name])
    tok, spec = genotok.presets.geneformer(v2, medians, version=2, input_size=size)
    want = _oracle(path, v2, medians, input_size=size, framed=True)
    assert _lists(genotok.tokenize_anndata(path, tok, spec)) == want
    tok1, spec1 = genotok.presets.geneformer(tokens, medians, input_size=size)
    want1 = _oracle(path, tokens, medians, input_size=size)
    assert _lists(genotok.tokenize_anndata(path, tok1, spec1)) == want1


# ------------------------------------------------------------------ Geneformer's own tokenizer
def _transcriptome_tokenizer():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from geniml.geneformer import TranscriptomeTokenizer
        except Exception as exc:  # noqa: BLE001 - any import failure: the reference is absent
            pytest.skip(f"geniml 0.8.4's Geneformer tokenizer does not import here ({exc!r}); "
                        "pip install geniml==0.8.4 loompy scanpy")
    return TranscriptomeTokenizer


def _geneformer_reference(tmp_path, path, vocab, medians, version, size):
    """input_ids from Geneformer's TranscriptomeTokenizer on a copy of ``path`` with the
    ``ensembl_id`` and ``n_counts`` it requires."""
    TranscriptomeTokenizer = _transcriptome_tokenizer()
    a = _read(path)
    a.var["ensembl_id"] = a.var["gene_ids"].astype(str)
    a.obs["n_counts"] = np.asarray(a.X.sum(axis=1)).ravel()
    d = tmp_path / "in"
    d.mkdir()
    a.write_h5ad(d / "cells.h5ad")
    (tmp_path / "tok.pkl").write_bytes(pickle.dumps(vocab))
    (tmp_path / "med.pkl").write_bytes(pickle.dumps(medians))
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        tk = TranscriptomeTokenizer(special_token=version == 2, model_input_size=size,
                                    gene_median_file=tmp_path / "med.pkl",
                                    token_dictionary_file=tmp_path / "tok.pkl")
        cells, _ = tk.tokenize_files(d, "h5ad")
        ds = tk.create_dataset(cells, None)
        ids = [list(map(int, x)) for x in ds["input_ids"]]
    return ids, d / "cells.h5ad"


@pytest.mark.slow  # importing transformers and Geneformer's Python loop: about a minute
@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("version, size", [(1, 2048), (2, 4096), (2, 10)])
def test_against_geneformers_own_tokenizer(name, version, size, dictionaries, tmp_path):
    tokens, medians, v2 = dictionaries
    vocab = tokens if version == 1 else v2
    want, with_n_counts = _geneformer_reference(tmp_path, shared(FILES[name]), vocab, medians,
                                                version, size)
    tok, spec = genotok.presets.geneformer(vocab, medians, version=version, input_size=size)
    assert _lists(genotok.tokenize_anndata(FILES[name], tok, spec)) == want
    assert _lists(genotok.tokenize_anndata(with_n_counts, tok, spec)) == want  # obs n_counts


# ------------------------------------------------------------------ scGPT
def _scgpt_vocab(path):
    """A scGPT-style vocabulary (gene symbols, specials after the genes) holding every other
    gene of the file: the rest are not in the vocabulary and are removed first."""
    symbols = _read(path).var_names.tolist()
    genes = symbols[::2]
    return {**{g: i for i, g in enumerate(genes)}, "<pad>": len(genes),
            "<cls>": len(genes) + 1, "<eoc>": len(genes) + 2}


@pytest.mark.parametrize("name", sorted(FILES))
def test_scgpt_every_cell_against_the_oracle(name, tmp_path):
    path = shared(FILES[name])
    vocab = _scgpt_vocab(path)
    tok, spec = genotok.presets.scgpt(vocab, n_bins=51, side="one")
    a = _read(path)
    want = naive.scgpt(a.X.toarray(), a.var_names.tolist(), vocab, n_bins=51)
    for got in (genotok.tokenize_anndata(path, tok, spec),
                genotok.tokenize_anndata(a, tok, spec),
                genotok.tokenize_anndata(path, tok, spec, out=tmp_path / "c").to_ragged(values=True)):
        rows = [(got.data[got.offsets[i]:got.offsets[i + 1]].tolist(),
                 got.values[got.offsets[i]:got.offsets[i + 1]].astype(int).tolist())
                for i in range(len(want))]
        assert rows == want


@pytest.mark.parametrize("name", sorted(FILES))
def test_scgpt_bins_against_scgpts_own_binning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from scgpt.preprocess import binning
        except Exception as exc:  # noqa: BLE001 - any import failure: the reference is absent
            pytest.skip(f"scgpt does not import here ({exc!r}; scgpt 0.2.4 needs torchtext)")
    path = shared(FILES[name])
    vocab = _scgpt_vocab(path)
    tok, spec = genotok.presets.scgpt(vocab, n_bins=51, side="one")
    a = _read(path)
    keep = [j for j, g in enumerate(a.var_names) if g in vocab]
    X = a.X.toarray()[:, keep].astype(np.float64)
    got = genotok.tokenize_anndata(path, tok, spec)
    for i in range(X.shape[0]):
        tot = X[i].sum()
        if tot == 0:
            continue
        row = np.log1p(X[i] * (1e4 / tot))
        np.random.seed(0)
        theirs = binning(row, 51)  # side="both": equal wherever a value sits on one edge
        mine = got.values[got.offsets[i]:got.offsets[i + 1]]
        pos = theirs[row > 0]
        left = np.digitize(row[row > 0], np.quantile(row[row > 0], np.linspace(0, 1, 50)))
        fixed = pos == left
        assert np.array_equal(mine[fixed], pos[fixed])
