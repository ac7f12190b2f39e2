"""Round 4 campaign, surface S7: CellSpec files (to_toml / from_toml / to_json / from_json, and
the CLI's ``--cells FILE``): unicode in every string, wrong types in every field, unknown keys,
huge and deep arrays, tables where scalars are expected, round trips of random valid specs
(hypothesis), key-order independence. Oracle: tests/campaigns/_oracle.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import Bins, CellSpec, Log1p, Normalize, QuantileBins, RankByMedian
from genotok.errors import GenotokError
from genotok._examples import examples_dir


def example_path(name):
    return examples_dir() / name
from tests.campaigns._oracle import cli, cli_refused, refused

pytestmark = pytest.mark.slow

NASTY = ["\U0001F600", "a\"b", "back\\slash", "tab\there", "nl\nx", "\x00nul", "\x7fdel",
         "\x1b[31m", "\u2028", "'single'", "=[]{}#", "\ud7ff\ue000", "é"]
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


# ------------------------------------------------------------------ round trips
def _same_json(a: CellSpec, b: CellSpec):
    assert a == b
    assert a.to_json() == b.to_json()


@pytest.mark.parametrize("s", NASTY, ids=[repr(s)[1:-1][:12] for s in NASTY])
@pytest.mark.parametrize("where", ["prepend", "cell_filter", "total", "medians_key", "method"])
def test_unicode_in_every_string(where, s):
    enc = (Normalize(total=s if where == "total" else None),
           RankByMedian({s if where == "medians_key" else "G": 1.5},
                        method=s if where == "method" else None))
    spec = CellSpec(prepend=(s,) if where == "prepend" else (),
                    cell_filter=s if where == "cell_filter" else None, encoding=enc)
    _same_json(CellSpec.from_json(spec.to_json()), spec)
    _same_json(CellSpec.from_toml(spec.to_toml()), spec)


def _steps():
    med_map = st.dictionaries(TEXT, st.one_of(st.floats(0, 1e30), st.just(math.nan)),
                              max_size=5)
    med_arr = st.lists(st.one_of(st.floats(0, 1e30), st.just(math.nan)), max_size=5)
    norm = st.builds(Normalize, st.floats(1e-300, 1e308, exclude_min=False), st.booleans())
    rank = st.builds(RankByMedian, st.one_of(st.none(), med_map, med_arr.map(np.array)),
                     st.one_of(st.none(), TEXT))
    bins = st.builds(Bins, st.integers(2, 2**24 + 1))
    head = st.one_of(st.just(()), norm.map(lambda n: (n,)), st.just((Log1p(),)))
    tail = st.one_of(st.just(()), rank.map(lambda r: (r,)), bins.map(lambda b: (b,)))
    extra = st.one_of(st.just(()), st.builds(QuantileBins, st.integers(3, 99),
                                             st.sampled_from(["one", "both"]),
                                             st.integers(0, 2**63 - 1)).map(lambda q: (q,)))
    return st.tuples(head, tail, extra).map(lambda t: t[0] + t[1] + t[2])


SPECS = st.builds(
    CellSpec, min_count=st.one_of(st.none(), st.floats(-1e300, 1e300)),
    unknown=st.sampled_from([None, "set", "region", "drop"]),
    order=st.sampled_from([None, "genomic", "value", "shuffle"]), seed=st.integers(0, 2**63 - 1),
    max_length=st.one_of(st.none(), st.integers(1, 2**63 - 1)),
    truncation=st.sampled_from(["top", "sample"]), encoding=_steps(),
    prepend=st.lists(TEXT.filter(bool), max_size=3, unique=True).map(tuple),
    condition_unknown=st.sampled_from(["unk", "error"]), add_cls=st.booleans(),
    add_eos=st.booleans(), values=st.booleans(), use_count=st.booleans(),
    cell_filter=st.one_of(st.none(), TEXT))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=SPECS)
def test_random_specs_round_trip(spec):
    _same_json(CellSpec.from_json(spec.to_json()), spec)
    _same_json(CellSpec.from_toml(spec.to_toml()), spec)
    _same_json(CellSpec.from_json(json.loads(spec.to_json())), spec)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=SPECS, seed=st.integers(0, 1000))
def test_key_order_independence(spec, seed):
    rng = np.random.default_rng(seed)
    d = json.loads(spec.to_json())
    keys = list(d)
    rng.shuffle(keys)
    shuffled = {k: d[k] for k in keys}
    for step in shuffled["encoding"]:
        if isinstance(step.get("medians"), dict):
            ks = list(step["medians"])
            rng.shuffle(ks)
            step["medians"] = {k: step["medians"][k] for k in ks}
    back = CellSpec.from_json(json.dumps(shuffled))
    _same_json(back, spec)
    lines = spec.to_toml().split("\n\n")
    head = lines[0].split("\n")
    rng.shuffle(head)
    _same_json(CellSpec.from_toml("\n".join(head) + "\n\n" + "\n\n".join(lines[1:])), spec)


# ------------------------------------------------------------------ wrong types in every field
FIELDS = ["min_count", "unique", "unknown", "order", "seed", "max_length", "truncation",
          "encoding", "prepend", "condition_unknown", "add_cls", "add_eos", "values",
          "use_count", "cell_filter"]
WRONG = {"string": '"x"', "float": "1.5", "array": "[1, 2]", "table": "{ a = 1 }",
         "bool": "true", "huge": "9223372036854775807", "negative": "-1", "nan": "nan",
         "inf": "inf", "date": "1979-05-27"}
VALID = {  # (field, wrong) pairs that are valid values of the field
    ("min_count", "float"), ("min_count", "huge"), ("min_count", "negative"),
    ("unique", "bool"), ("seed", "huge"), ("max_length", "huge"),
    ("add_cls", "bool"), ("add_eos", "bool"), ("values", "bool"), ("use_count", "bool"),
    ("prepend", "string"), ("cell_filter", "string"), ("prepend", "array_str"),
}


@pytest.mark.parametrize("wrong", WRONG)
@pytest.mark.parametrize("field", FIELDS)
def test_wrong_type_in_every_field(tmp_path, field, wrong):
    path = tmp_path / "cells.toml"
    path.write_text(f"{field} = {WRONG[wrong]}\n")
    if (field, wrong) in VALID:
        spec = CellSpec.from_toml(path)
        assert spec == CellSpec.from_json({field: json.loads(json.dumps(
            __import__("tomllib").loads(path.read_text())[field]))})
        return
    refused(lambda: CellSpec.from_toml(path), "cells.toml", field)
    # and as JSON (a run file's [dataset.cells] table goes this way)
    import tomllib
    d = tomllib.loads(path.read_text())
    refused(lambda: CellSpec.from_json(d), field)


ENC_WRONG = {
    "encoding_table": ("[encoding]\nname = \"bins\"\n", ["encoding"]),
    "encoding_number": ("encoding = 3\n", ["encoding"]),
    "encoding_false": ("encoding = false\n", ["encoding"]),
    "encoding_empty_table": ("encoding = {}\n", ["encoding"]),
    "encoding_empty_string": ('encoding = ""\n', ["encoding"]),
    "entry_number": ("encoding = [1]\n", ["encoding"]),
    "entry_string": ('encoding = ["bins"]\n', ["bins"]),
    "entry_no_name": ("[[encoding]]\nn = 5\n", ["encoding"]),
    "name_array": ("[[encoding]]\nname = [\"bins\"]\n", ["encoding"]),
    "name_table": ("[[encoding]]\nname = {a = 1}\n", ["encoding"]),
    "name_unknown": ("[[encoding]]\nname = \"binz\"\n", ["binz"]),
    "bins_str": ("[[encoding]]\nname = \"bins\"\nn = \"5\"\n", ["n"]),
    "bins_huge": ("[[encoding]]\nname = \"bins\"\nn = 9223372036854775807\n", ["n"]),
    "bins_unknown_key": ("[[encoding]]\nname = \"bins\"\nbinz = 5\n", ["binz"]),
    "normalize_nan": ("[[encoding]]\nname = \"normalize\"\ntarget_sum = nan\n", ["target_sum"]),
    "normalize_inf": ("[[encoding]]\nname = \"normalize\"\ntarget_sum = inf\n", ["target_sum"]),
    "normalize_zero": ("[[encoding]]\nname = \"normalize\"\ntarget_sum = 0\n", ["target_sum"]),
    "normalize_total_int": ("[[encoding]]\nname = \"normalize\"\ntotal = 3\n", ["total"]),
    "log1p_field": ("[[encoding]]\nname = \"log1p\"\nbase = 2\n", ["base"]),
    "rank_medians_str": ("[[encoding]]\nname = \"rank_by_median\"\nmedians = \"x\"\n",
                         ["medians"]),
    "rank_medians_strs": ("[[encoding]]\nname = \"rank_by_median\"\nmedians = [\"x\"]\n",
                          ["median"]),
    "rank_medians_neg": ("[[encoding]]\nname = \"rank_by_median\"\nmedians = [-1.0]\n",
                         ["median"]),
    "rank_medians_inf": ("[[encoding]]\nname = \"rank_by_median\"\nmedians = [inf]\n",
                         ["median"]),
    "rank_medians_nested": ("[[encoding]]\nname = \"rank_by_median\"\nmedians = [[1.0]]\n",
                            ["median"]),
    "rank_medians_map_neg": ("[[encoding]]\nname = \"rank_by_median\"\nmedians = {G = -1.0}\n",
                             ["G"]),
    "rank_medians_map_table": ("[[encoding]]\nname = \"rank_by_median\"\n"
                               "medians = {G = {x = 1}}\n", ["G"]),
    "rank_fitted_one": ("[[encoding]]\nname = \"rank_by_median\"\nfitted_on = [\"a\"]\n",
                        ["fitted_on"]),
    "rank_fitted_bad": ("[[encoding]]\nname = \"rank_by_median\"\n"
                        "fitted_on = [\"total\", -5.0, false]\n", ["fitted_on"]),
    "rank_fitted_table": ("[[encoding]]\nname = \"rank_by_median\"\nfitted_on = {a = 1}\n",
                          ["fitted_on"]),
    "rank_method_int": ("[[encoding]]\nname = \"rank_by_median\"\nmethod = 3\n", ["method"]),
    "qbins_side": ("[[encoding]]\nname = \"quantile_bins\"\nside = \"left\"\n", ["side"]),
    "qbins_seed_neg": ("[[encoding]]\nname = \"quantile_bins\"\nseed = -1\n", ["seed"]),
    "rank_after_bins": ("[[encoding]]\nname = \"bins\"\n[[encoding]]\n"
                        "name = \"rank_by_median\"\n", ["RankByMedian"]),
    "prepend_numbers": ("prepend = [1, 2]\n", ["prepend"]),
    "prepend_tables": ("prepend = [{a = 1}]\n", ["prepend"]),
    "prepend_empty": ("prepend = [\"\"]\n", ["prepend"]),
    "prepend_nested": ("prepend = [[\"a\"]]\n", ["prepend"]),
    "var_unique": ('order = "var"\nunique = true\n', ["var"]),
}


@pytest.mark.parametrize("case", ENC_WRONG)
def test_encoding_and_nested_wrong(tmp_path, case):
    text, names = ENC_WRONG[case]
    path = tmp_path / "cells.toml"
    path.write_text(text)
    refused(lambda: CellSpec.from_toml(path), "cells.toml", *names)


@pytest.mark.parametrize("key,close", [("max_lenght", "max_length"), ("prepnd", "prepend"),
                                       ("encodings", "encoding"), ("ordre", "order"),
                                       ("zzz", None)])
def test_unknown_keys_did_you_mean(tmp_path, key, close):
    path = tmp_path / "cells.toml"
    path.write_text(f"{key} = 1\n")
    msg = refused(lambda: CellSpec.from_toml(path), "cells.toml", key)
    if close:
        assert f"did you mean {close!r}" in msg
    msg = refused(lambda: CellSpec.from_json({key: 1}), key)
    if close:
        assert f"did you mean {close!r}" in msg


@pytest.mark.parametrize("key,close", [("target_summ", "target_sum"), ("log1", "log1p")])
def test_unknown_step_keys_did_you_mean(key, close):
    msg = refused(lambda: CellSpec.from_json({"encoding": [{"name": "normalize", key: 1}]}), key)
    assert f"did you mean {close!r}" in msg


JSON_TEXTS = {"not_json": "not json", "truncated": '{"max_length": 5', "list": "[1, 2]",
              "number": "5", "null": "null", "bytes_bad_utf8": b"\xff\xfe{}",
              "nan_literal": '{"min_count": NaN}', "dup_keys": '{"seed": 1, "seed": -1}',
              "deep": "[" * 100000 + "]" * 100000, "empty": ""}


@pytest.mark.parametrize("case", JSON_TEXTS)
def test_from_json_odd_text(case):
    text = JSON_TEXTS[case]
    if case == "dup_keys":  # JSON's last key wins: -1, refused naming seed
        refused(lambda: CellSpec.from_json(text), "seed")
        return
    refused(lambda: CellSpec.from_json(text), "CellSpec")


@pytest.mark.parametrize("case", ["deep_array", "deep_table", "huge_medians", "huge_prepend",
                                  "bad_utf8", "nul_bytes", "bom", "missing", "directory",
                                  "dup_key", "too_big_line"])
def test_toml_odd_files(tmp_path, case):
    path = tmp_path / "cells.toml"
    if case == "deep_array":
        path.write_text("prepend = " + "[" * 5000 + "]" * 5000 + "\n")
    elif case == "deep_table":
        path.write_text("prepend = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n")
    elif case == "huge_medians":
        n = 200_000
        path.write_text("[[encoding]]\nname = \"rank_by_median\"\nmedians = ["
                        + ", ".join(["1.5"] * n) + "]\n")
        spec = CellSpec.from_toml(path)
        assert spec.encoding[0].medians.shape == (n,)
        return
    elif case == "huge_prepend":
        path.write_text("prepend = [" + ", ".join(f'"c{i}"' for i in range(20000)) + "]\n")
        assert len(CellSpec.from_toml(path).prepend) == 20000
        return
    elif case == "bad_utf8":
        path.write_bytes(b"order = \"\xff\"\n")
    elif case == "nul_bytes":
        path.write_bytes(b"order = \"gen\x00omic\"\n")
    elif case == "bom":
        path.write_bytes(b"\xef\xbb\xbfmax_length = 5\n")
    elif case == "missing":
        path = tmp_path / "nope.toml"
    elif case == "directory":
        path = tmp_path / "dir.toml"
        path.mkdir()
    elif case == "dup_key":
        path.write_text("seed = 1\nseed = 2\n")
    else:
        path.write_text("max_length = " + "9" * 5000 + "\n")
    refused(lambda: CellSpec.from_toml(path), path.name)


# ------------------------------------------------------------------ the CLI's --cells FILE
CLI_FILES = {
    "fitted_on_short": '[[encoding]]\nname = "rank_by_median"\nfitted_on = ["a"]\n',
    "medians_strs": '[[encoding]]\nname = "rank_by_median"\nmedians = ["x"]\n',
    "unknown_key": "max_lenght = 5\n",
    "not_toml": "max_length = = 5\n",
    "wrong_type": 'max_length = "5"\n',
    "encoding_name_array": '[[encoding]]\nname = ["bins"]\n',
    "negative_medians": '[[encoding]]\nname = "rank_by_median"\nmedians = [-1.0]\n',
    "emoji_prepend": 'prepend = ["\U0001F600"]\n',
}


@pytest.mark.parametrize("case", CLI_FILES)
def test_cli_cells_file(tmp_path, case):
    path = tmp_path / "cells.toml"
    path.write_text(CLI_FILES[case], encoding="utf-8")
    ex = example_path("pbmc.h5ad")
    u = example_path("universe.bed")
    if case == "emoji_prepend":  # a valid spec: the column is missing from obs
        cli_refused("pretokenize", "--universe", u, "--cells", path, "--out", tmp_path / "o",
                    ex, names=["\U0001F600"])
        return
    cli_refused("pretokenize", "--universe", u, "--cells", path, "--out", tmp_path / "o", ex,
                names=["cells.toml"])
    assert not (tmp_path / "o").exists()


def test_cli_cells_round_trip_of_own_output(tmp_path):
    spec = CellSpec(prepend=(), max_length=7, cell_filter="x\U0001F600\"\\",
                    encoding=(Normalize(), Bins(5)))
    path = tmp_path / "cells.toml"
    path.write_text(spec.to_toml(), encoding="utf-8")
    rc, out, err = cli("pretokenize", "--universe", example_path("universe.bed"), "--cells",
                       path, "--out", tmp_path / "o", "-q", example_path("pbmc.h5ad"))
    assert rc == 0, err
    from genotok import Corpus
    assert len(Corpus.open(tmp_path / "o")) > 0


def test_spec_is_not_a_genotok_error_when_valid():
    assert not isinstance(CellSpec(), GenotokError)
