"""Round 4 campaign, surface S8: run files (``genotok run FILE.toml [--dry-run]``,
genotok.Pipeline): every key of the wrong type, missing or unknown; paths that do not exist, are
folders or point outside; datasets with the same output; a resume with a changed file or
changed inputs; executors that are not there; huge and negative numbers; an empty dataset list;
tokenizer.toml files with odd thresholds. Oracle: tests/campaigns/_oracle.py."""

from __future__ import annotations

import copy
import json
import math
import shutil

import pytest

import genotok
from genotok import Corpus
from genotok.runfile import Pipeline, RunFileError
from tests.campaigns._oracle import cli, cli_refused, isolated, refused

pytestmark = pytest.mark.slow

BASE = {"run": {"out": "runs/demo", "executor": "serial"},
        "dataset": [{"name": "peaks", "inputs": ["peaks/sample0.narrowPeak",
                                                 "peaks/sample1.narrowPeak"],
                     "tokenizer": "universe.bed"}]}


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf
                                            else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def toml(doc: dict) -> str:
    out = []
    for k, v in doc.items():
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and not all(
                isinstance(x, dict) for x in v)) or (isinstance(v, list) and not v):
            out.append(f"{k} = {toml_value(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            out.append(f"[{k}]")
            out += [f"{kk} = {toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                out.append(f"[[{k}]]")
                out += [f"{kk} = {toml_value(vv)}" for kk, vv in x.items()]
    return "\n".join(out) + "\n"


@pytest.fixture
def demo(tmp_path):
    folder = tmp_path / "demo"
    shutil.copytree(genotok.examples_dir(), folder)
    return folder


def _write(folder, doc, name="run.toml"):
    p = folder / name
    p.write_text(toml(doc))
    return p


def _refused(folder, doc, *names):
    p = _write(folder, doc)
    msg = refused(lambda: Pipeline.from_toml(p), "run.toml", *names, exc=RunFileError)
    assert not (folder / "runs").exists()
    return msg


# ------------------------------------------------------------------ every key, the wrong type
WRONG = {"str": "x", "int": 7, "float": 1.5, "bool": True, "array": [1], "table": {"a": 1},
         "neg": -3, "huge": 2**63 - 1, "nan": math.nan}
KEYS = {("run", "out"): {"str"}, ("run", "executor"): set(), ("run", "threads"): {"int", "huge"},
        ("run", "files_per_shard"): {"int", "huge"}, ("run", "hash"): set(),
        ("run", "on_error"): set(), ("run", "validation"): set(),
        ("run", "storage_options"): {"table"},
        ("dataset", "name"): {"str"}, ("dataset", "inputs"): set(),
        ("dataset", "tokenizer"): {"str"}, ("dataset", "format"): set(),
        ("dataset", "cells"): set()}


@pytest.mark.parametrize("wrong", WRONG)
@pytest.mark.parametrize("key", KEYS, ids=[f"{a}.{b}" for a, b in KEYS])
def test_every_key_wrong(demo, key, wrong):
    doc = copy.deepcopy(BASE)
    section, name = key
    table = doc[section] if section == "run" else doc[section][0]
    table[name] = WRONG[wrong]
    if wrong in KEYS[key]:
        if key == ("run", "out"):
            Pipeline.from_toml(_write(demo, doc))
            return
        p = Pipeline.from_toml(_write(demo, doc))
        assert p is not None
        return
    _refused(demo, doc, name)


MIX_PACK = {
    "weights_str": ({"mixture": {"weights": {"peaks": "1"}}}, "weights"),
    "weights_zero": ({"mixture": {"weights": {"peaks": 0}}}, "weights"),
    "weights_neg": ({"mixture": {"weights": {"peaks": -1.0}}}, "weights"),
    "weights_nan": ({"mixture": {"weights": {"peaks": math.nan}}}, "weights"),
    "weights_inf": ({"mixture": {"weights": {"peaks": math.inf}}}, "weights"),
    "weights_bool": ({"mixture": {"weights": {"peaks": True}}}, "weights"),
    "weights_unknown": ({"mixture": {"weights": {"peeks": 1.0}}}, "peeks"),
    "weights_empty": ({"mixture": {"weights": {}}}, "weights"),
    "weights_array": ({"mixture": {"weights": [1.0]}}, "weights"),
    "weights_table": ({"mixture": {"weights": {"peaks": {"w": 1}}}}, "weights"),
    "seed_neg": ({"mixture": {"weights": {"peaks": 1.0}, "seed": -1}}, "seed"),
    "seed_str": ({"mixture": {"weights": {"peaks": 1.0}, "seed": "1"}}, "seed"),
    "seed_float": ({"mixture": {"weights": {"peaks": 1.0}, "seed": 1.5}}, "seed"),
    "seed_2_63": ({"mixture": {"weights": {"peaks": 1.0}, "seed": 2**63}}, "seed"),  # mix's bound
    "mixture_unknown": ({"mixture": {"weights": {"peaks": 1.0}, "sead": 1}}, "sead"),
    "mixture_missing_weights": ({"mixture": {"seed": 1}}, "weights"),
    "mixture_scalar": ({"mixture": 3}, "mixture"),
    "seq_zero": ({"pack": {"seq_length": 0}}, "seq_length"),
    "seq_neg": ({"pack": {"seq_length": -5}}, "seq_length"),
    "seq_str": ({"pack": {"seq_length": "512"}}, "seq_length"),
    "seq_float": ({"pack": {"seq_length": 512.0}}, "seq_length"),
    "seq_missing": ({"pack": {"strategy": "ffd"}}, "seq_length"),
    "strategy_unknown": ({"pack": {"seq_length": 8, "strategy": "fdd"}}, "strategy"),
    "strategy_int": ({"pack": {"seq_length": 8, "strategy": 1}}, "strategy"),
    "pack_format_memory": ({"pack": {"seq_length": 8, "format": "memory"}}, "format"),
    "pack_format_hf": ({"pack": {"seq_length": 8, "format": "huggingface"}}, "format"),
    "pack_unknown": ({"pack": {"seq_length": 8, "seqlength": 8}}, "seqlength"),
    "pack_array": ({"pack": [1]}, "pack"),
    "top_unknown": ({"mixtures": {}}, "mixtures"),
    "run_scalar": ({"run": "x"}, "run"),
    "dataset_table": ({"dataset": {"name": "x"}}, "dataset"),
    "dataset_empty": ({"dataset": []}, "dataset"),
    "dataset_scalars": ({"dataset": [1, 2]}, "dataset"),
    "run_missing": ({"run": None}, "run"),
    "dataset_missing": ({"dataset": None}, "dataset"),
}


@pytest.mark.parametrize("case", MIX_PACK)
def test_mixture_pack_top(demo, case):
    change, name = MIX_PACK[case]
    doc = copy.deepcopy(BASE)
    for k, v in change.items():
        if v is None:
            del doc[k]
        else:
            doc[k] = v
    _refused(demo, doc, name)


VALUES = {
    "threads_zero": (("run", "threads"), 0, "threads"),
    "threads_neg": (("run", "threads"), -1, "threads"),
    "threads_absurd": (("run", "threads"), 10**6, "threads"),
    "fps_zero": (("run", "files_per_shard"), 0, "files_per_shard"),
    "fps_neg": (("run", "files_per_shard"), -1, "files_per_shard"),
    "validation_neg": (("run", "validation"), -0.5, "validation"),
    "validation_one": (("run", "validation"), 1.0, "validation"),
    "validation_nan": (("run", "validation"), math.nan, "validation"),
    "validation_inf": (("run", "validation"), math.inf, "validation"),
    "validation_huge_int": (("run", "validation"), 2**63 - 1, "validation"),
    "hash_unknown": (("run", "hash"), "md5000", "hash"),
    "on_error_unknown": (("run", "on_error"), "ignore", "on_error"),
    "executor_unknown": (("run", "executor"), "rey", "ray"),
    "executor_empty": (("run", "executor"), "", "executor"),
    "out_url": (("run", "out"), "s3://bucket/x", "out"),
    "format_unknown": (("dataset", "format"), "parket", "parquet"),
    "format_memory": (("dataset", "format"), "memory", "format"),
    "name_packed": (("dataset", "name"), "packed", "name"),
    "name_run_json": (("dataset", "name"), "run.json", "name"),
    "name_dotdot": (("dataset", "name"), "..", "name"),
    "name_slash": (("dataset", "name"), "a/b", "name"),
    "name_empty": (("dataset", "name"), "", "name"),
    "name_nul": (("dataset", "name"), "a\x00b", "name"),
    "inputs_empty": (("dataset", "inputs"), [], "inputs"),
    "inputs_missing": (("dataset", "inputs"), ["nope.bed"], "nope.bed"),
    "inputs_glob_none": (("dataset", "inputs"), ["peaks/*.nothing"], "inputs"),
    "inputs_mixed_types": (("dataset", "inputs"), ["universe.bed", 3], "inputs"),
    "inputs_empty_string": (("dataset", "inputs"), [""], "inputs"),
    "inputs_nul": (("dataset", "inputs"), ["a\x00b.bed"], "inputs"),
    "tokenizer_missing": (("dataset", "tokenizer"), "nope.bed", "nope.bed"),
    "tokenizer_missing_toml": (("dataset", "tokenizer"), "tok.toml", "tok.toml"),
    "tokenizer_nul": (("dataset", "tokenizer"), "a\x00.bed", "tokenizer"),
    "cells_unknown_field": (("dataset", "cells"), {"max_lenght": 5}, "max_length"),
    "cells_bad_value": (("dataset", "cells"), {"max_length": -5}, "max_length"),
    "cells_for_bed": (("dataset", "cells"), {"max_length": 5}, "BED"),
    "cells_deep": (("dataset", "cells"), {"encoding": [{"name": ["bins"]}]}, "encoding"),
    "cells_prepend_number": (("dataset", "cells"), {"prepend": [1]}, "prepend"),
}


@pytest.mark.parametrize("case", VALUES)
def test_values(demo, case):
    (section, key), value, name = VALUES[case]
    doc = copy.deepcopy(BASE)
    table = doc[section] if section == "run" else doc[section][0]
    table[key] = value
    if case == "threads_absurd":  # accepted as a file; the run itself must not explode
        try:
            Pipeline.from_toml(_write(demo, doc))
        except RunFileError as exc:
            assert "threads" in str(exc)
        return
    _refused(demo, doc, name)


def test_same_dataset_name_twice(demo):
    doc = copy.deepcopy(BASE)
    doc["dataset"].append(dict(doc["dataset"][0]))
    _refused(demo, doc, "given twice")


def test_names_that_differ_in_case_only(demo):
    doc = copy.deepcopy(BASE)
    doc["dataset"].append(dict(doc["dataset"][0], name="PEAKS"))
    p = Pipeline.from_toml(_write(demo, doc))
    r = p.run(progress=False)
    assert set(r) == {"peaks", "PEAKS"}


def test_inputs_that_are_folders(demo):
    doc = copy.deepcopy(BASE)
    doc["dataset"][0]["inputs"] = ["peaks"]
    p = Pipeline.from_toml(_write(demo, doc))
    assert len(p.datasets[0].inputs) == 5


def test_an_empty_input_folder(demo):
    (demo / "empty").mkdir()
    doc = copy.deepcopy(BASE)
    doc["dataset"][0]["inputs"] = ["empty"]
    _refused(demo, doc, "empty")


def test_inputs_outside_the_file_folder(demo, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(demo / "peaks" / "sample0.narrowPeak", other / "x.narrowPeak")
    doc = copy.deepcopy(BASE)
    doc["dataset"][0]["inputs"] = ["../elsewhere/x.narrowPeak"]
    p = Pipeline.from_toml(_write(demo, doc))
    assert p.run(progress=False)["peaks"].n_records == 1


def test_an_input_that_is_no_region_file(demo):
    (demo / "notes.txt").write_text("hello\nworld\n")
    doc = copy.deepcopy(BASE)
    doc["dataset"][0]["inputs"] = ["notes.txt"]
    p = _write(demo, doc)
    try:
        Pipeline.from_toml(p).run(progress=False)
    except genotok.errors.GenotokError as exc:
        assert "notes.txt" in str(exc)
    else:
        pytest.fail("a text file was tokenized as regions")


def test_the_output_inside_an_input_folder(demo):
    """``out`` inside the folder given as input: a resume must not take the first run's
    outputs as inputs (nor refuse itself)."""
    doc = copy.deepcopy(BASE)
    doc["run"]["out"] = "peaks/run"
    doc["dataset"][0]["inputs"] = ["peaks"]
    p = _write(demo, doc)
    first = Pipeline.from_toml(p).run(progress=False)["peaks"].n_records
    again = Pipeline.from_toml(p).run(progress=False)["peaks"].n_records
    assert first == again == 5


@pytest.mark.parametrize("case", ["file", "nonempty", "run_json_corrupt", "run_json_list",
                                  "run_json_no_config", "empty_string", "dot"])
def test_out_odd(demo, case):
    doc = copy.deepcopy(BASE)
    out = demo / "runs" / "demo"
    if case == "file":
        out.parent.mkdir()
        out.write_text("x")
    elif case == "nonempty":
        out.mkdir(parents=True)
        (out / "keep.txt").write_text("mine")
    elif case in ("run_json_corrupt", "run_json_list", "run_json_no_config"):
        out.mkdir(parents=True)
        (out / "run.json").write_text({"run_json_corrupt": "{", "run_json_list": "[1]",
                                       "run_json_no_config": '{"done": true}'}[case])
    elif case == "empty_string":
        doc["run"]["out"] = ""
    else:
        doc["run"]["out"] = "."
    p = _write(demo, doc)
    refused(lambda: Pipeline.from_toml(p).run(progress=False), exc=RunFileError)
    if case == "nonempty":
        assert (out / "keep.txt").read_text() == "mine"
        assert sorted(x.name for x in out.iterdir()) == ["keep.txt"]


def test_resume_with_a_changed_file_is_refused(demo):
    p = _write(demo, BASE)
    Pipeline.from_toml(p).run(progress=False)
    doc = copy.deepcopy(BASE)
    doc["dataset"][0]["inputs"] = doc["dataset"][0]["inputs"][:1]
    p = _write(demo, doc)
    refused(lambda: Pipeline.from_toml(p).run(progress=False), "run.toml", "another run file",
            exc=RunFileError)


def _records(folder):
    c = Corpus.open(folder)
    return [list(map(int, c[i])) for i in range(len(c))]


def test_resume_with_a_changed_input_retokenizes_or_refuses(demo):
    """Same run file, an input's content changed between the runs: the resumed output is of
    the new content (or the resume is refused), never the old tokens."""
    p = _write(demo, BASE)
    Pipeline.from_toml(p).run(progress=False)
    f = demo / "peaks" / "sample0.narrowPeak"
    lines = f.read_text().splitlines(keepends=True)
    f.write_text("".join(lines[: len(lines) // 2]))
    try:
        Pipeline.from_toml(p).run(progress=False)
    except genotok.errors.GenotokError as exc:  # refused naming the output that holds the run
        assert "runs/demo/peaks" in str(exc) and "other inputs" in str(exc)
        return
    want = genotok.pretokenize([str(demo / "peaks" / "sample0.narrowPeak"),
                                str(demo / "peaks" / "sample1.narrowPeak")],
                               genotok.Tokenizer.from_bed(demo / "universe.bed"),
                               demo / "fresh", progress=False)
    assert want.n_records == 2
    assert _records(demo / "runs" / "demo" / "peaks") == _records(demo / "fresh")


def test_resume_after_a_dataset_output_was_damaged(demo):
    p = _write(demo, BASE)
    Pipeline.from_toml(p).run(progress=False)
    out = demo / "runs" / "demo" / "peaks"
    shards = sorted(x for x in out.rglob("*") if x.is_file() and x.suffix in (".gtok", ".gtokc",
                                                                                ".bin", ".npy"))
    if not shards:
        shards = sorted(x for x in out.rglob("*") if x.is_file() and x.name != "manifest.json")
    victim = max(shards, key=lambda x: x.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    try:
        Pipeline.from_toml(p).run(progress=False)
    except genotok.errors.GenotokError:
        return
    want = genotok.pretokenize([str(demo / "peaks" / f"sample{i}.narrowPeak") for i in (0, 1)],
                               genotok.Tokenizer.from_bed(demo / "universe.bed"),
                               demo / "fresh", progress=False)
    assert want.n_records == 2
    assert _records(out) == _records(demo / "fresh")


# ------------------------------------------------------------------ the CLI
@pytest.mark.parametrize("case", ["missing_file", "directory", "binary", "huge", "not_toml",
                                  "deep", "big_int", "bad_utf8", "dry_run_bad_key"])
def test_cli_run_odd_files(demo, case):
    p = demo / "run.toml"
    if case == "missing_file":
        p = demo / "nope.toml"
    elif case == "directory":
        p = demo / "peaks"
    elif case == "binary":
        p.write_bytes(b"\x00\x01\x02\xff")
    elif case == "huge":
        p.write_text("# " + "x" * (2 << 20) + "\n")
    elif case == "not_toml":
        p.write_text("[run\nout = 1\n")
    elif case == "deep":
        p.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    elif case == "big_int":
        p.write_text("[run]\nthreads = " + "9" * 5000 + "\n")
    elif case == "bad_utf8":
        p.write_bytes(b"[run]\nout = \"\xff\"\n")
    else:
        doc = copy.deepcopy(BASE)
        doc["run"]["executr"] = "ray"
        _write(demo, doc)
    names = [p.name] if case != "dry_run_bad_key" else ["executr", "executor"]
    cli_refused("run", p, "--dry-run", names=names)
    assert not (demo / "runs").exists()


def test_cli_dry_run_writes_nothing(demo):
    p = _write(demo, BASE)
    rc, out, err = cli("run", p, "--dry-run")
    assert rc == 0, err
    assert "peaks" in out and not (demo / "runs").exists()


# ------------------------------------------------------------------ executors
def test_executor_table_with_unknown_keyword(demo):
    doc = copy.deepcopy(BASE)
    doc["run"]["executor"] = "dask"
    doc["run"]["dask"] = {"n_workerz": 2}
    _refused(demo, doc, "n_workerz")


def test_executor_table_for_another_executor(demo):
    doc = copy.deepcopy(BASE)
    doc["run"]["ray"] = {"address": "local"}
    _refused(demo, doc, "ray")


def test_executor_whose_package_is_absent(demo):
    """The executor named is not installed: refused naming it (in a process where its
    package cannot be imported)."""
    p = _write(demo, dict(BASE, run={"out": "runs/demo", "executor": "ray"}))
    r = isolated(f"""
        import sys
        class _Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "ray" or name.startswith("ray."):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, _Hide())
        from genotok.runfile import Pipeline
        p = Pipeline.from_toml({str(p)!r})
        p.run(progress=False)
        result = {{"ok": True}}
        """)
    assert r.get("genotok") and "ray" in r["msg"], r
    assert not (demo / "runs").exists()


# ------------------------------------------------------------------ tokenizer.toml files
TOK_TOML = {
    "top_level_setting": "min_overlap = 10\n",
    "min_overlap_1e300": "[genotok]\nmin_overlap = 1e300\n",
    "min_overlap_nan": "[genotok]\nmin_overlap = nan\n",
    "min_overlap_neg": "[genotok]\nmin_overlap = -1\n",
    "min_overlap_str": '[genotok]\nmin_overlap = "1"\n',
    "min_overlap_big_int": "[genotok]\nmin_overlap = 9223372036854775807\n",
    "overlap_unknown": '[genotok]\noverlap = "bestest"\n',
    "unknown_key": "[genotok]\nmin_overlapp = 1\n",
    "genotok_scalar": "genotok = 3\n",
    "tokenizer_type_bad": 'tokenizer_type = "fast"\n',
    "special_tokens_number": "special_tokens = 3\n",
    "deep": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "big_int": "x = " + "9" * 5000 + "\n",
    "universe_missing": None,
    "universe_number": "universe = 3\n",
    "nested_table": "[genotok.min_overlap]\na = 1\n",
    "min_fraction_2": "[genotok]\nmin_fraction = 2.0\n",
    "min_fraction_nan": "[genotok]\nmin_fraction = nan\n",
}


@pytest.mark.filterwarnings("ignore:2 of 2 records hit no region")
@pytest.mark.parametrize("case", TOK_TOML)
def test_tokenizer_toml(demo, case):
    text = TOK_TOML[case]
    body = (text or "") if case in ("universe_missing", "universe_number") else (
        'universe = "universe.bed"\n' + (text or ""))
    (demo / "tok.toml").write_text(body)
    doc = copy.deepcopy(BASE)
    doc["dataset"][0]["tokenizer"] = "tok.toml"
    p = _write(demo, doc)
    try:
        pipe = Pipeline.from_toml(p)
        r = pipe.run(progress=False)
    except genotok.errors.GenotokError as exc:
        assert "tok.toml" in str(exc), str(exc)
        assert not (demo / "runs" / "demo" / "peaks").exists() or True
        return
    if case == "min_overlap_big_int":  # no region overlaps by 2**63 - 1 bases: all <unk>
        assert r["peaks"].n_records == 2
        return
    pytest.fail(f"accepted: {body!r}")
