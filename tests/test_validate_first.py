"""Validate before converting (docs/security.md): the reproducers of issue 43 whose class of
defect is a value converted (``int()``, ``float()``, ``str()``, ``np.asarray(..., dtype)``, a
JSON escape) before it was checked. Each failed before its fix; packing's are in
tests/test_packing.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import genotok
from genotok import CellSpec, GeneTokenizer, RankByMedian, Tokenizer
from genotok.cli.main import main
from genotok.errors import AnnDataError, UniverseError
from genotok.params import ParameterError


# ------------------------------------------------------------------- #7 CellSpec files round-trip
def test_cell_spec_toml_keeps_characters_outside_the_bmp(tmp_path):
    """An emoji in a condition column was written as a JSON surrogate pair, which TOML
    forbids: ``from_toml`` and ``--cells`` refused genotok's own output."""
    for text in ("donor \U0001F600", "tab\there", "del\x7f", 'quote" and \\ back', "é ü"):
        spec = CellSpec(prepend=(text,), cell_filter=text)
        path = tmp_path / "c.toml"
        path.write_text(spec.to_toml(), encoding="utf-8")
        assert CellSpec.from_toml(path) == spec
        assert CellSpec.from_toml(spec.to_toml()) == spec


def test_medians_mapping_in_any_key_order_survives_a_round_trip():
    """JSON is written with sorted keys: a medians mapping not in key order no longer
    compared equal after a JSON or TOML round trip."""
    spec = CellSpec(encoding=RankByMedian({"ENSG2": 1.0, "ENSG1": 2.0, "ENSG3": math.nan}))
    assert CellSpec.from_json(spec.to_json()) == spec
    assert CellSpec.from_toml(spec.to_toml()) == spec
    assert RankByMedian({"a": 1.0, "b": 2.0}) == RankByMedian({"b": 2.0, "a": 1.0})
    assert RankByMedian({"a": 1.0, "b": 2.0}) != RankByMedian({"a": 2.0, "b": 1.0})


# ------------------------------------------------------------- #13 wrong types, named clearly
@pytest.mark.parametrize("table,match", [
    ('medians = [1.0]\nfitted_on = ["a"]', r"fitted_on is \(normalize, target_sum, log1p\)"),
    ('medians = ["x"]', "median 0 is 'x', not a number"),
    ('medians = 5', "medians are a list or a table"),
    ('medians = [1.0]\nfitted_on = ["total", "x", false]', r"fitted_on\[1\] must be a number"),
    ('medians = [1.0]\nfitted_on = 3', "fitted_on must be a tuple or a list or None"),
    ('medians = [1.0]\nbogus = 1', r"unknown field\(s\) \['bogus'\]"),
])
def test_cells_toml_of_wrong_types_is_refused_naming_the_file(tmp_path, capsys, table, match):
    """``fitted_on = ["a"]`` gave an IndexError, ``medians = ["x"]`` a ValueError: the CLI
    printed "an unexpected error" without naming the file."""
    path = tmp_path / "cells.toml"
    path.write_text(f'[[encoding]]\nname = "rank_by_median"\n{table}\n')
    with pytest.raises(ParameterError, match=match) as info:
        CellSpec.from_toml(path)
    assert str(path) in str(info.value)
    code = main(["pretokenize", "-q", "--universe", str(genotok.examples_dir() / "universe.bed"),
                 "--cells", str(path), "--out", str(tmp_path / "out"),
                 str(genotok.examples_dir() / "pbmc.h5ad")])
    err = capsys.readouterr().err
    assert code != 0 and str(path) in err and "unexpected" not in err, err


@pytest.mark.parametrize("d", [
    [1], "[1]", {"encoding": 5}, {"encoding": [{"name": "bins", "n": 5, "zz": 1}]},
    {"encoding": [{"name": "rank_by_median", "medians": 5}]},
    {"encoding": [{"name": "rank_by_median", "medians": {"G": "x"}}]},
    {"encoding": [{"name": "rank_by_median", "medians": [1.0], "fitted_on": ["a"]}]},
    {"prepend": 5}, {"seed": "1"},
])
def test_cell_spec_from_json_raises_parameter_errors_only(d):
    """``CellSpec.from_json`` raised raw TypeErrors (and an IndexError) on wrong types."""
    with pytest.raises(ParameterError):
        CellSpec.from_json(d)


# ------------------------------------------------------ #14 negative array medians, at once
@pytest.mark.parametrize("medians", [np.array([1.0, -2.0]), [1.0, -2.0], [1.0, math.inf],
                                     np.array([1.0, np.inf]), ["1.0"], [True]])
def test_array_medians_are_checked_when_the_spec_is_made(medians):
    """Negative array medians were accepted and failed only at tokenize time, with a plain
    ValueError (as a mapping they were refused at once)."""
    with pytest.raises(ParameterError, match="median 1 is|median 0 is"):
        RankByMedian(medians)
    with pytest.raises(ParameterError):
        CellSpec.from_toml('[[encoding]]\nname = "rank_by_median"\nmedians = [1.0, -2.0]\n')
    assert RankByMedian([1.0, None, 0.0]) == RankByMedian(np.array([1.0, np.nan, 0.0]))


# --------------------------------------------------------------- #8 a float feature-id column
def test_a_float_feature_id_column_is_refused_not_silently_empty():
    """``[1.0, 2.0, 3.0]`` became "1.0", "2.0", "3.0": no feature matched the vocabulary's
    "1", "2", "3" and every cell was empty, without a warning."""
    anndata = pytest.importorskip("anndata")
    import pandas as pd

    tok = GeneTokenizer({"<pad>": 0, "1": 1, "2": 2, "3": 3})
    a = anndata.AnnData(np.ones((2, 3), np.float32),
                        var=pd.DataFrame({"gene_ids": [1.0, 2.0, 3.0]}, index=["a", "b", "c"]))
    with pytest.raises(AnnDataError, match=r"feature ids \(gene_ids\) are float64 values"):
        genotok.tokenize_anndata(a, tok)
    a.var["gene_ids"] = [1, 2, 3]  # the same ids as integers match
    assert genotok.tokenize_anndata(a, tok).to_list() == [[1, 2, 3]] * 2


# ------------------------------------------------------------------ #15 presets.geneformer
@pytest.mark.parametrize("size", ["abc", math.nan, 2.7, True, 2, 2**64])
def test_geneformer_input_size_is_validated_by_its_name(size):
    """``input_size="abc"`` or NaN gave a ValueError from int(); 2.7 or True errors about a
    ``max_length`` the caller never set."""
    vocab = {"<pad>": 0, "<mask>": 1, "<cls>": 2, "<eos>": 3, "ENSG1": 4}
    with pytest.raises(ParameterError, match="geneformer: input_size"):
        genotok.presets.geneformer(vocab, {"ENSG1": 2.0}, version=2, input_size=size)
    assert genotok.presets.geneformer(vocab, {"ENSG1": 2.0}, version=2,
                                      input_size=100.0)[1].max_length == 98


# ---------------------------------------------------- #16 min_overlap = 1e300 in a tokenizer.toml
@pytest.mark.parametrize("value", ["1e300", "18446744073709551616", "-1", "1.5", "true"])
def test_tokenizer_toml_settings_beyond_64_bits_are_refused_naming_the_file(tmp_path, value):
    """``min_overlap = 1e300`` (an integral float) passed the constraint, then numba raised a
    TypingError; 2**64 would overflow int64."""
    (tmp_path / "u.bed").write_text("chr1\t0\t100\n")
    cfg = tmp_path / "tokenizer.toml"
    cfg.write_text(f'universe = "u.bed"\n[genotok]\nmin_overlap = {value}\n')
    for load in (Tokenizer, Tokenizer.from_config):
        with pytest.raises(UniverseError, match=r"tokenizer.toml \[genotok\]: min_overlap must be"):
            load(cfg)
    cfg.write_text('universe = "u.bed"\n[genotok]\nmin_overlap = 5.0\n')
    tok = Tokenizer(cfg)
    assert type(tok.settings.min_overlap) is int and tok.encode(["chr1:0-10"]).tolist() == [0]
