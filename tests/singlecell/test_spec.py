"""genotok.CellSpec: validation, JSON round trip, the presets' specs, and the divergences between the
entry points that one spec removed (issue 31), each checked through the entry points."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import ClassVar

import anndata
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import genotok
from genotok import (
    AnnDataOptions,
    Bins,
    CellSpec,
    FragmentOptions,
    Log1p,
    Normalize,
    RankByMedian,
    Tokenizer,
    feature_medians,
    fragment_matrix,
    tokenize_anndata,
    tokenize_fragments,
)
from genotok.params import ParameterError
from genotok.singlecell import spec as S
from tests.singlecell.test_values import _adata_and_tok

VARS = ["chr1:0-100", "chr1:100-200", "chr1:200-300", "chr2:0-100"]
#: a rank-value spec over peaks (medians computed from the matrix), a binned one, a preset's
RANKED = CellSpec(encoding=(Normalize(1e4), RankByMedian()), max_length=2048)
BINNED = CellSpec(encoding=(Normalize(1e4, log1p=True), Bins(51)), values=True)
PRESET = genotok.presets.geneformer({"<pad>": 0, "G": 1, 'a"b': 2},  # a quote, no median
                                    {"G": 2.0, 'a"b': float("nan")})[1]


def _adata(X):
    X = np.asarray(X, dtype=np.float64)
    obs = pd.DataFrame({"cell_type": ["t", "b", "t"][:X.shape[0]]},
                       index=[f"c{i}" for i in range(X.shape[0])])
    return anndata.AnnData(sp.csr_matrix(X), obs=obs, var=pd.DataFrame(index=VARS))


def test_round_trip_is_exact():
    specs = [CellSpec(), RANKED, BINNED, PRESET, PRESET.replace(cell_filter="qc"),
             CellSpec(min_count=2, unknown="drop", order="shuffle", seed=7, max_length=3,
                      truncation="sample", prepend="batch", condition_unknown="error",
                      add_cls=True, values=True, use_count=True, encoding=Log1p()),
             CellSpec(encoding=(Normalize(100.0, log1p=True),
                                RankByMedian(np.array([1.5, np.nan, 0.0, 2e-300]))))]
    assert PRESET.cell_filter == "filter_pass" and RANKED.cell_filter is None
    for spec in specs:
        text = spec.to_json()
        assert CellSpec.from_json(text) == spec
        assert CellSpec.from_json(json.loads(text)) == spec
        assert CellSpec.from_json(text).to_json() == text
    assert CellSpec(encoding=RankByMedian(np.array([1.0]))) != \
        CellSpec(encoding=RankByMedian(np.array([2.0])))


def test_bad_specs_say_what_is_wrong():
    with pytest.raises(ParameterError, match="cell_filter"):
        CellSpec(cell_filter=1)
    with pytest.raises(ParameterError, match="order='var' .* cannot be unique=True"):
        CellSpec(order="var", unique=True)
    with pytest.raises(ParameterError, match="needs its medians given as an array"):
        CellSpec(encoding=(Bins(5), RankByMedian()))
    with pytest.raises(ParameterError, match="Normalize.total=.... reads each cell's total"):
        CellSpec(encoding=(Log1p(), Normalize(total="n_counts")))
    with pytest.raises(ParameterError, match="unknown field"):
        CellSpec.from_json('{"rank": "median"}')
    with pytest.raises(ParameterError, match="unknown value encoding 'clip'"):
        CellSpec.from_json('{"encoding": [{"name": "clip"}]}')
    with pytest.raises(ParameterError, match="add_cls must be True or False, got 'no'"):
        CellSpec(add_cls="no")


# ------------------------------------------------------------------- divergences (issue 31)
def test_rank_by_median_orders_by_value_unless_an_order_is_given():
    """``rank="median"`` kept genomic order (the ranks only reached the value channel)."""
    a = _adata([[1, 4, 9, 0], [5, 0, 1, 2]])
    tok = Tokenizer(VARS)
    med = np.ones(4)
    got = tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian(med), values=True))
    assert got.to_list() == [[2, 1, 0], [0, 3, 2]]
    for a_, b in zip(got.offsets[:-1], got.offsets[1:]):
        assert np.all(np.diff(got.values[a_:b]) <= 0)
    kept = tokenize_anndata(a, tok, CellSpec(encoding=RankByMedian(med), order="genomic"))
    assert kept.to_list() == [[0, 1, 2], [0, 2, 3]]


def test_one_values_default_for_every_entry_point(tmp_path):
    """``values`` defaulted to False in tokenize_anndata and True in tokenize_fragments."""
    defaults = {inspect.signature(f).parameters["spec"].default
                for f in (tokenize_anndata, tokenize_fragments)}
    assert defaults == {None} and CellSpec().values is False
    p = tmp_path / "f.tsv"
    p.write_text("chr1\t5\t20\tA\t3\n")
    _, rows = tokenize_fragments(p, Tokenizer(VARS))
    assert rows.values is None
    assert tokenize_anndata(_adata([[1, 0, 0, 0]]), Tokenizer(VARS)).values is None


def test_fragments_count_each_line_once_as_the_matrix_does(tmp_path):
    """tokenize_fragments weighted each fragment by column 5; fragment_matrix (and gtars)
    count each line once: the same cells differed between the two."""
    p = tmp_path / "f.tsv"
    p.write_text("chr1\t5\t20\tA\t3\nchr1\t150\t160\tA\t1\nchr1\t10\t30\tB\t2\n")
    tok = Tokenizer(VARS)
    names, rows = tokenize_fragments(p, tok, CellSpec(values=True))
    m = fragment_matrix(p, tok, read=FragmentOptions(mode="fragment"))
    dense = m.X.toarray()
    assert names == m.obs_names.tolist()
    for i, (ids, lo, hi) in enumerate(zip(rows, rows.offsets[:-1], rows.offsets[1:])):
        assert rows.values[lo:hi].tolist() == dense[i, ids].tolist()
    assert rows.values.tolist() == [1.0, 1.0, 1.0]
    weighted = tokenize_fragments(p, tok, CellSpec(values=True, use_count=True))[1]
    assert weighted.values.tolist() == [3.0, 1.0, 2.0]
    mw = fragment_matrix(p, tok, read=FragmentOptions(mode="fragment"), use_count=True)
    assert mw.X.toarray()[0, :2].tolist() == [3.0, 1.0]


def test_order_var_implies_unique_false():
    """``order="var"`` refused to run unless ``unique=False`` was passed too."""
    spec = CellSpec(order="var")
    assert spec.unique is False
    a = _adata([[0, 2, 1, 0]])
    tok = Tokenizer(VARS)
    assert tokenize_anndata(a, tok, spec).to_list() == [[1, 2]]


def test_a_string_prepend_is_one_column():
    assert CellSpec(prepend="cell_type").prepend == ("cell_type",)
    tok = Tokenizer(VARS, extra_tokens=genotok.condition_tokens(_adata([[1, 0, 0, 0]] * 3),
                                                                "cell_type"))
    a = _adata([[1, 0, 0, 0]] * 3)
    one = tokenize_anndata(a, tok, CellSpec(prepend="cell_type"))
    assert one == tokenize_anndata(a, tok, CellSpec(prepend=["cell_type"]))
    assert tok.decode(one.to_list()[0][:1])[0] == "<cell_type=t>"


# -------------------------------------------------------------------------- entry points
@pytest.mark.parametrize("func", [tokenize_anndata, tokenize_fragments, fragment_matrix,
                                  genotok.singlecell.FragmentMatrix.from_fragments,
                                  genotok.pretokenize, genotok.Tokenizer,
                                  genotok.Tokenizer.from_bed, genotok.Tokenizer.from_config,
                                  genotok.Tokenizer.from_pretrained, genotok.tile_matrix,
                                  genotok.singlecell.tokenize_cells,
                                  genotok.presets.geneformer, genotok.presets.scgpt],
                         ids=lambda f: getattr(f, "__qualname__", str(f)))
def test_entry_points_take_at_most_ten_parameters(func):
    """Issue 31: every public entry point takes at most 10 parameters (pretokenize had 24,
    the Tokenizer 12); what a cell becomes is one CellSpec, the tokenizer's settings one
    TokenizerSettings. (``Tokenizer``'s signature is its constructor's, ``_setup``.)"""
    assert len(inspect.signature(func).parameters) <= 10


def test_tokenizer_takes_its_settings_as_one_object():
    tok = genotok.Tokenizer(VARS, settings=genotok.TokenizerSettings(overlap="best"))
    assert tok.settings.overlap == "best"
    with pytest.raises(TypeError, match=r"overlap are TokenizerSettings fields: pass "
                                        r"settings=TokenizerSettings\(overlap=\.\.\.\)"):
        genotok.Tokenizer(VARS, overlap="best")
    with pytest.raises(TypeError, match="settings must be a TokenizerSettings or None, got {"):
        genotok.Tokenizer(VARS, settings={"overlap": "best"})


def test_swapped_or_wrong_arguments_are_named(tmp_path):
    tok = Tokenizer(VARS)
    a = _adata([[1, 0, 0, 0]])
    with pytest.raises(TypeError, match=r"tokenizer must be a Tokenizer or a GeneTokenizer, got "
                       r"AnnData.*the order is tokenize_anndata\(adata, tokenizer, spec\)"):
        tokenize_anndata(tok, a)
    with pytest.raises(TypeError, match=r"tokenizer must be a Tokenizer or a GeneTokenizer, got "
                       r"PosixPath.*the order is tokenize_fragments\(path, tokenizer, spec\)"):
        tokenize_fragments(tok, tmp_path / "f.tsv")
    with pytest.raises(TypeError, match=r"got CellSpec\(.*the order is tokenize_anndata\(adata, "
                       r"tokenizer, spec\)"):
        tokenize_anndata(a, CellSpec())
    with pytest.raises(TypeError, match=r"spec must be a CellSpec or None, got \{'order': 'value'\}"
                       r".*spec=CellSpec\(...\)"):
        tokenize_anndata(a, tok, {"order": "value"})
    with pytest.raises(TypeError, match="read must be a AnnDataOptions"):
        tokenize_anndata(a, tok, read=FragmentOptions())


def test_a_new_encoding_is_one_class_and_one_registry_line(monkeypatch):
    @dataclass(frozen=True)
    class Clip(S.Encoding):
        top: float = 2.0
        name: ClassVar[str] = "clip"

        def encode(self, chunk):
            return np.minimum(chunk.data, self.top)

    monkeypatch.setitem(S.ENCODINGS, Clip.name, Clip)
    spec = CellSpec(encoding=(Normalize(10.0), Clip(3.0)), values=True)
    assert CellSpec.from_json(spec.to_json()) == spec
    got = tokenize_anndata(_adata([[1, 4, 0, 5]]), Tokenizer(VARS), spec)
    assert got.values.tolist() == [1.0, 3.0, 3.0]


def test_the_corpus_header_holds_the_spec_with_its_medians(tmp_path):
    a = _adata([[1, 4, 9, 0], [5, 0, 1, 2]])
    tok = Tokenizer(VARS)
    spec = RANKED.replace(max_length=3)
    c = tokenize_anndata(a, tok, spec, out=tmp_path / "c.gtokc")
    stored = CellSpec.from_json(c.header["extra"]["anndata"]["cells"])
    assert stored.encoding[1].medians is not None
    assert stored.replace(encoding=spec.encoding) == spec
    again = tokenize_anndata(a, tok, RANKED.replace(encoding=(Normalize(1e4), RankByMedian(c)),
                                                  max_length=3))
    assert again.to_list() == c.to_ragged().to_list()
    with pytest.raises(ParameterError, match="the medians are of normalize='total'"):
        CellSpec(encoding=RankByMedian(c))
    assert AnnDataOptions().layer is None


# -------------------------------------------------------------------------- TOML
@pytest.mark.parametrize("spec", [
    CellSpec(), RANKED, BINNED.replace(values=False), PRESET,
    CellSpec(encoding=RankByMedian(np.array([1.5, np.nan])), prepend=['a"b', "c"],
             min_count=2.0, order="shuffle", seed=2**63 - 1, unknown="drop"),
], ids=["default", "ranked", "binned", "preset", "medians-and-quotes"])
def test_toml_round_trips(tmp_path, spec):
    (tmp_path / "s.toml").write_text(spec.to_toml())
    assert CellSpec.from_toml(tmp_path / "s.toml") == spec
    assert CellSpec.from_toml(spec.to_toml()) == spec


def test_toml_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("max_length = \n")
    with pytest.raises(ParameterError, match=r"bad.toml: not a valid TOML cell spec.*line 1"):
        CellSpec.from_toml(bad)
    bad.write_text("[[encoding]]\nname = 'zscore'\n")
    with pytest.raises(ParameterError, match=r"bad.toml: CellSpec: unknown value encoding 'zscore'"):
        CellSpec.from_toml(bad)
    bad.write_text("max_length = 0\n")
    with pytest.raises(ParameterError, match=r"bad.toml: CellSpec: max_length must be"):
        CellSpec.from_toml(bad)
    with pytest.raises(ParameterError, match="missing.toml: cannot read"):
        CellSpec.from_toml(tmp_path / "missing.toml")


# ------------------------------------------------------------------------ numeric arguments
@pytest.mark.parametrize("B", [0, 1.5, np.nan, np.inf, True, "8", 2**20 + 1])
def test_bins_per_octave_must_be_an_integer_in_range(B):
    """1.5 was taken as 1 (int(1.5)) and NaN failed inside int() with another message."""
    a, _ = _adata_and_tok([[1.0, 2.0, 0.0]])
    with pytest.raises(ValueError, match="bins_per_octave must be an integer in \\[1, 1048576\\]"):
        feature_medians(a, bins_per_octave=B)


def test_memory_mb_nan_is_refused_as_such():
    a, tok = _adata_and_tok([[1.0, 2.0, 0.0]])
    with pytest.raises(ValueError, match="memory_mb must be a number in \\(0, inf\\), got nan"):
        feature_medians(a, memory_mb=np.nan)
    with pytest.raises(ValueError, match="memory_mb must be a number in \\(0, inf\\), got nan"):
        tokenize_anndata(a, tok, memory_mb=np.nan)


def test_max_length_true_is_refused():
    """max_length=True (meant: truncation=True) was taken as 1: one token per cell."""
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="max_length must be an integer in \\[1, inf\\)"):
        tokenize_anndata(a, tok, CellSpec(max_length=True))
    assert tokenize_anndata(a, tok, CellSpec(order="value", max_length=2)).to_list() == [[2, 1]]


@pytest.mark.parametrize("seed", [-1, 1.5, np.nan, True, "1", 2**63, 2**64])
def test_seed_must_be_an_int64(seed):
    """2**63 was an OverflowError from the kernel call; 1.5 was silently taken as 1."""
    a, tok = _adata_and_tok([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="seed must be an integer in \\[0, 9223372036854775807\\]"):
        tokenize_anndata(a, tok, CellSpec(order="shuffle", seed=seed))
    assert len(tokenize_anndata(a, tok, CellSpec(order="shuffle", seed=2**63 - 1)).to_list()[0]) == 3


@pytest.mark.parametrize("kw", [{"seed": 2**63}, {"seed": 1.5}, {"max_length": True}])
def test_pretokenize_checks_the_per_cell_settings_like_tokenize_anndata(kw, tmp_path):
    """pretokenize's plan accepted them, and each input then failed (or took 1.5 as 1): its
    cells= spec checks them, as tokenize_anndata's does."""
    from genotok import pretokenize

    a, tok = _adata_and_tok([[1.0, 2.0, 3.0]])
    a.write_h5ad(tmp_path / "a.h5ad")
    with pytest.raises(ValueError, match="seed must be|max_length must be"):
        pretokenize([tmp_path / "a.h5ad"], tok, tmp_path / "out", progress=False,
                    cells=CellSpec(**kw))
    assert not (tmp_path / "out").exists()
def test_rank_by_median_refuses_two_medians_of_one_feature():
    with pytest.raises(ParameterError, match="feature '1' has two medians"):  # was: one lost
        RankByMedian({1: 2.0, "1": 3.0})


def test_a_cell_spec_toml_that_never_ends_is_refused(monkeypatch):
    from genotok.singlecell import spec as spec_module

    monkeypatch.setattr(spec_module, "MAX_TOML_BYTES", 1 << 16)
    with pytest.raises(ParameterError, match="/dev/zero: more than"):  # was: read forever
        CellSpec.from_toml("/dev/zero")


@dataclass(frozen=True)
class _Same(S.Encoding):
    """The values as they are: a step that is not built in, so every step after it runs
    through its own ``encode(chunk)`` instead of the fused kernels."""

    name: ClassVar[str] = "same"

    def encode(self, chunk):
        return np.array(chunk.data, np.float64)


@pytest.mark.parametrize("steps", [
    (Normalize(100.0),), (Normalize(100.0, log1p=True), Bins(5)), (Log1p(), Bins(3)),
    (Normalize(10.0), RankByMedian(np.array([1.0, 2.0, np.nan, 0.5]))), (Log1p(),)])
def test_built_in_steps_after_a_custom_one_equal_the_fused_chain(monkeypatch, steps):
    """A custom step first moves every built-in after it out of the fused kernels: each then
    runs alone through its encode(chunk), in order, and gives the fused chain's values."""
    monkeypatch.setitem(S.ENCODINGS, _Same.name, _Same)
    a = _adata([[1, 4, 9, 0], [5, 0, 1, 2], [0, 0, 0, 0]])
    tok = Tokenizer(VARS)
    fused = tokenize_anndata(a, tok, CellSpec(encoding=steps, values=True, order="genomic"))
    alone = CellSpec(encoding=(_Same(),) + steps, values=True, order="genomic")
    assert alone.extra_steps() == (_Same(),) + steps
    got = tokenize_anndata(a, tok, alone, read=genotok.AnnDataOptions(chunk_rows=1))
    assert got.to_list() == fused.to_list()
    np.testing.assert_allclose(got.values, fused.values, rtol=1e-6)


def test_custom_steps_run_in_any_order_after_the_fused_head(monkeypatch):
    @dataclass(frozen=True)
    class Plus(S.Encoding):
        k: float = 1.0
        name: ClassVar[str] = "plus"

        def encode(self, chunk):
            return chunk.data + self.k

    monkeypatch.setitem(S.ENCODINGS, Plus.name, Plus)
    a = _adata([[1, 4, 0, 5]])
    tok = Tokenizer(VARS)
    spec = CellSpec(encoding=(Normalize(10.0), Plus(1.0), Log1p(), Plus(2.0)), values=True)
    assert CellSpec.from_json(spec.to_json()) == spec
    got = tokenize_anndata(a, tok, spec).values
    np.testing.assert_allclose(got, np.log1p(np.array([1, 4, 5]) + 1.0) + 2.0, rtol=1e-6)
