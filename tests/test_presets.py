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


def _every_way(path, tok, spec, want, read=None):
    """``path`` tokenized by path, in memory and backed (and with ``read``): ``want`` each time."""
    assert _lists(genotok.tokenize_anndata(path, tok, spec)) == want
    assert _lists(genotok.tokenize_anndata(_read(path), tok, spec)) == want
    backed = _read(path, backed="r")
    try:
        assert _lists(genotok.tokenize_anndata(backed, tok, spec)) == want
    finally:
        backed.file.close()
    if read is not None:
        assert _lists(genotok.tokenize_anndata(path, tok, spec, read=read)) == want


@pytest.mark.parametrize("name", sorted(FILES))
def test_geneformer_v1_every_cell_every_way(name, dictionaries, tmp_path):
    tokens, medians, _ = dictionaries
    path = shared(FILES[name])
    tok, spec = genotok.presets.geneformer(GF / "token_dictionary.json",
                                           GF / "gene_median_dictionary.json")
    want = _oracle(path, tokens, medians)
    assert sum(map(len, want)) > 0
    _every_way(path, tok, spec, want)
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


def _with_filter_pass(path, dest):
    """A copy of ``path`` with an ``obs["filter_pass"]`` column (1, 0, True, 1.0, 2 in turn:
    Geneformer keeps ``== 1``) and the cells it keeps."""
    a = _read(path)
    pattern = np.array([1, 0, True, 1.0, 2], dtype=object)
    a.obs["filter_pass"] = np.resize(pattern, a.n_obs).astype(np.float64)
    a.write_h5ad(dest)
    return dest, [i for i in range(a.n_obs) if i % 5 in (0, 2, 3)]


@pytest.mark.parametrize("name", sorted(FILES))
def test_geneformer_keeps_the_cells_filter_pass_keeps_every_way(name, dictionaries, tmp_path):
    tokens, medians, _ = dictionaries
    path, kept = _with_filter_pass(shared(FILES[name]), tmp_path / "f.h5ad")
    tok, spec = genotok.presets.geneformer(tokens, medians)
    assert spec.cell_filter == "filter_pass"
    everything = _oracle(path, tokens, medians)
    want = [everything[i] for i in kept]
    names = [_read(path).obs_names[i] for i in kept]
    _every_way(path, tok, spec, want, genotok.AnnDataOptions(chunk_rows=7))  # many chunks
    corpus = genotok.tokenize_anndata(path, tok, spec, out=tmp_path / "c",
                                      obs_columns=["filter_pass"])
    assert [list(map(int, corpus[i])) for i in range(len(corpus))] == want
    assert corpus.names == names
    genotok.pretokenize([path], tok, tmp_path / "p", cells=spec, progress=False)
    pre = genotok.Corpus.open(tmp_path / "p", expect=tok)
    assert [list(map(int, pre[i])) for i in range(len(pre))] == want
    spec_all = spec.replace(cell_filter=None)  # no filter: every cell
    assert _lists(genotok.tokenize_anndata(path, tok, spec_all)) == everything


def test_a_filter_that_keeps_no_cell_gives_an_empty_result(dictionaries, tmp_path):
    tokens, medians, _ = dictionaries
    a = _read(shared(FILES["simba"]))
    a.obs["filter_pass"] = 0
    a.write_h5ad(tmp_path / "none.h5ad")
    tok, spec = genotok.presets.geneformer(tokens, medians)
    assert len(genotok.tokenize_anndata(tmp_path / "none.h5ad", tok, spec)) == 0
    assert len(genotok.tokenize_anndata(tmp_path / "none.h5ad", tok, spec,
                                        out=tmp_path / "c")) == 0


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
    ``ensembl_id`` and ``n_counts`` it requires (and ``path``'s other obs columns)."""
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


@pytest.mark.slow  # as above
@pytest.mark.parametrize("name", sorted(FILES))
def test_filter_pass_against_geneformers_own_tokenizer(name, dictionaries, tmp_path):
    tokens, medians, _ = dictionaries
    path, kept = _with_filter_pass(shared(FILES[name]), tmp_path / "f.h5ad")
    want, with_n_counts = _geneformer_reference(tmp_path, path, tokens, medians, 1, 2048)
    assert len(want) == len(kept)  # Geneformer kept these cells only
    tok, spec = genotok.presets.geneformer(tokens, medians)
    assert _lists(genotok.tokenize_anndata(path, tok, spec)) == want
    assert _lists(genotok.tokenize_anndata(with_n_counts, tok, spec)) == want


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
    want = [([vocab["<cls>"], *t], [0, *b])  # <cls> first, value 0 (tokenize_batch)
            for t, b in naive.scgpt(a.X.toarray(), a.var_names.tolist(), vocab, n_bins=51)]
    for got in (genotok.tokenize_anndata(path, tok, spec),
                genotok.tokenize_anndata(a, tok, spec),
                genotok.tokenize_anndata(path, tok, spec, out=tmp_path / "c").to_ragged(values=True)):
        rows = [(got.data[got.offsets[i]:got.offsets[i + 1]].tolist(),
                 got.values[got.offsets[i]:got.offsets[i + 1]].astype(int).tolist())
                for i in range(len(want))]
        assert rows == want


def _scgpt_functions():
    """scGPT 0.2.4's own ``scgpt/preprocess.py`` and ``scgpt/tokenizer/gene_tokenizer.py``,
    loaded by file path: the package's ``__init__`` imports its model (and torchtext, which
    does not install beside torch 2.x), so it is skipped for a stand-in holding only its
    ``logger``; ``gene_tokenizer.py`` imports ``torchtext.vocab.Vocab`` as the base of its
    ``GeneVocab`` class alone (``tokenize_batch`` and ``pad_batch`` do not use it): a stand-in
    class takes its place. Everything compared is scGPT's code (needs torch and scanpy)."""
    import importlib.util
    import logging
    import sys
    import types

    for package in ("torch", "scanpy"):
        pytest.importorskip(package)
    found = importlib.util.find_spec("scgpt")
    if found is None or not found.submodule_search_locations:
        pytest.skip("scgpt is not installed: pip install --no-deps scgpt==0.2.4")
    root = found.submodule_search_locations[0]
    stand_ins = {"scgpt": types.ModuleType("scgpt"), "torchtext": types.ModuleType("torchtext"),
                 "torchtext.vocab": types.ModuleType("torchtext.vocab")}
    stand_ins["scgpt"].__path__ = [root]
    stand_ins["scgpt"].logger = logging.getLogger("scGPT")
    stand_ins["torchtext.vocab"].Vocab = type("Vocab", (), {})
    stand_ins["torchtext"].vocab = stand_ins["torchtext.vocab"]
    saved = {k: sys.modules.get(k) for k in stand_ins}
    sys.modules.update(stand_ins)
    loaded = []
    try:
        for name, rel in (("scgpt.preprocess", "preprocess.py"),
                          ("scgpt.tokenizer.gene_tokenizer", "tokenizer/gene_tokenizer.py")):
            spec = importlib.util.spec_from_file_location(name, f"{root}/{rel}")
            module = importlib.util.module_from_spec(spec)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spec.loader.exec_module(module)
            loaded.append(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return loaded


@pytest.mark.parametrize("name", sorted(FILES))
def test_scgpt_against_scgpts_own_functions(name):
    """scGPT's pipeline as its tutorials run it (genes of the vocabulary kept, then
    ``Preprocessor(normalize_total=1e4, log1p=True, binning=51)``, ``tokenize_batch`` with
    ``<cls>``, ``pad_batch``) against the preset, every cell: the input_ids and padding equal;
    the bins equal wherever scGPT's are deterministic (a value on one quantile edge, or none:
    ``_digitize``'s left and right digits agree), and between its right and left digits where
    it draws at random (``np.random.rand``, its global generator: not reproducible by anyone);
    with ``side="one"`` every bin equals scGPT's own ``_digitize(..., side="one")``."""
    pre, gt = _scgpt_functions()
    import torch

    path = shared(FILES[name])
    vocab = _scgpt_vocab(path)
    a = _read(path)
    a = a[:, [g in vocab for g in a.var_names]].copy()  # scGPT keeps the vocabulary's genes
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        np.random.seed(0)
        pre.Preprocessor(use_key="X", normalize_total=1e4, result_normed_key="X_normed",
                         log1p=True, result_log1p_key="X_log1p", binning=51,
                         result_binned_key="X_binned")(a)
    binned, edges = np.asarray(a.layers["X_binned"]), np.asarray(a.obsm["bin_edges"])
    genes = np.array([vocab[g] for g in a.var_names], dtype=np.int64)
    theirs = gt.tokenize_batch(binned, genes, return_pt=True, append_cls=True,
                               include_zero_gene=False, cls_id=vocab["<cls>"])
    width = max(len(t[0]) for t in theirs)
    padded = gt.pad_batch(theirs, width, vocab, pad_token="<pad>", pad_value=0,
                          cls_appended=True)
    tok, spec = genotok.presets.scgpt(vocab, n_bins=51)
    mine = tok.pad(genotok.tokenize_anndata(path, tok, spec), padding=True, return_tensors="pt")
    assert torch.equal(mine["input_ids"], padded["genes"])  # every cell, <cls> and padding
    one = genotok.tokenize_anndata(path, tok, spec.replace(
        encoding=(spec.encoding[0], genotok.QuantileBins(51, side="one"))))
    log1p = np.asarray(a.layers["X_log1p"].toarray() if hasattr(a.layers["X_log1p"], "toarray")
                       else a.layers["X_log1p"], dtype=np.float64)
    got = mine["values"].numpy()
    n_random = 0
    for i in range(a.n_obs):
        nz = np.flatnonzero(binned[i])
        if nz.size == 0:
            continue
        row, cuts = log1p[i, nz], edges[i, 1:]
        left = pre._digitize(row, cuts, side="one")       # scGPT's own, deterministic
        right = np.digitize(row, cuts, right=True)
        mine_i = got[i, 1:1 + nz.size]
        fixed = left == right
        n_random += int((~fixed).sum())
        assert np.array_equal(mine_i[fixed], binned[i, nz][fixed])
        assert ((mine_i >= right) & (mine_i <= left)).all()  # its draw: ceil in (right, left]
        assert one.row_values(i)[1:].astype(np.int64).tolist() == left.tolist()
    assert n_random > 0  # the random spreading was exercised


@pytest.mark.parametrize("median, match", [
    ("2.5", "is '2.5', not a number"),   # was read as 2.5
    (True, "is True, not a number"),     # was read as 1.0
    ("abc", "is 'abc', not a number"),   # was a bare ValueError of float()
    ([1], r"is \[1\], not a number"),     # was a bare TypeError of float()
    (float("inf"), "is inf; medians are finite"),  # was a ValueError at tokenize time, 'feature 0'
    (-1.0, "is -1.0; medians are finite"),
])
def test_geneformer_refuses_medians_that_are_no_medians(tmp_path, median, match):
    vocab = {"<pad>": 0, "<mask>": 1, "G1": 2, "G2": 3}
    with pytest.raises(genotok.params.ParameterError, match=f"median of 'G1' {match}"):
        genotok.presets.geneformer(vocab, {"G1": median, "G2": 1.0})
    p = tmp_path / "med.json"
    p.write_text(json.dumps({"G1": median, "G2": 1.0}, allow_nan=True))
    with pytest.raises(genotok.params.ParameterError, match=f"med.json: .*median of 'G1' {match}"):
        genotok.presets.geneformer(vocab, p)
    _, spec = genotok.presets.geneformer(vocab, {"G1": float("nan"), "G2": 0})  # no median
    assert np.isnan(spec.encoding[1].medians["G1"]) and spec.encoding[1].medians["G2"] == 0.0
