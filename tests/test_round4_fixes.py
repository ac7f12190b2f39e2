"""Fast regressions of the defects the round 4 campaign on gene presets, CellSpec files, run
files and cell sources found (tests/campaigns/test_round4_*.py, ``pytest -m slow``); each
failed before its fix. docs/security.md lists them."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import genotok
from genotok import AnnDataOptions, CellSpec, FragmentOptions
from genotok.errors import AnnDataError, GenotokError, UniverseError
from genotok.params import ParameterError

VOCAB = {"<pad>": 0, "<mask>": 1, "<cls>": 2, "<eos>": 3, "G1": 4, "G2": 5}


# ------------------------------------------------------------------ S6 gene presets
def test_dictionary_file_content_errors_name_the_file(tmp_path):
    p = tmp_path / "vocab.json"
    p.write_text(json.dumps({"<pad>": 0, "G1": 1.5}))
    with pytest.raises(GenotokError, match="vocab.json"):
        genotok.presets.geneformer(p, {"G1": 1.0})
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps({"<pad>": 0, "<mask>": 1, "G1": 2}))
    with pytest.raises(GenotokError, match="v1.json.*<cls>"):  # was a raw ValueError
        genotok.presets.geneformer(v1, {"G1": 1.0}, version=2)
    with pytest.raises(GenotokError, match="<cls>"):
        genotok.presets.scgpt({"<pad>": 0, "G1": 1})


@pytest.mark.parametrize("col", [np.array(["a", "b"], dtype=object), np.array([np.nan, 3.0]),
                                 np.array([-3.0, 3.0]), np.array([np.inf, 3.0])],
                         ids=["text", "nan", "negative", "inf"])
def test_n_counts_checked_before_it_is_converted(col):
    anndata = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    a = anndata.AnnData(np.array([[1, 2], [3, 0]], np.float32),
                        obs=pd.DataFrame({"n_counts": col}, index=["c0", "c1"]),
                        var=pd.DataFrame(index=["G1", "G2"]))
    tok, spec = genotok.presets.geneformer(VOCAB, {"G1": 1.0, "G2": 1.0})
    with pytest.raises(AnnDataError, match="n_counts"):
        genotok.tokenize_anndata(a, tok, spec)


# ------------------------------------------------------------------ S7 CellSpec files
@pytest.mark.parametrize("text", ["not json", b"\xff{}", "[" * 100000 + "]" * 100000, ""],
                         ids=["text", "utf8", "deep", "empty"])
def test_from_json_refuses_what_is_not_json(text):
    with pytest.raises(ParameterError, match="CellSpec"):
        CellSpec.from_json(text)


@pytest.mark.parametrize("toml", ["encoding = false", "encoding = {}", 'encoding = ""',
                                  "encoding = [1]", '[[encoding]]\nname = ["bins"]',
                                  "prepend = [1, 2]", "prepend = [{a = 1}]", 'prepend = [""]',
                                  "prepend = " + "[" * 5000 + "]" * 5000,
                                  "max_length = " + "9" * 5000])
def test_from_toml_refuses_wrong_shapes(toml):
    with pytest.raises(ParameterError):
        CellSpec.from_toml(toml + "\n")


def test_unknown_fields_did_you_mean():
    with pytest.raises(ParameterError, match="did you mean 'max_length'"):
        CellSpec.from_toml("max_lenght = 5\n")
    with pytest.raises(ParameterError, match="did you mean 'target_sum'"):
        CellSpec.from_json({"encoding": [{"name": "normalize", "target_summ": 1}]})


def test_spec_tokenizer_mismatches_are_parameter_errors():
    with pytest.raises(ParameterError, match="repeat"):
        CellSpec(prepend=("a", "a"))


# ------------------------------------------------------------------ S8 run files
def _run(tmp_path, text):
    p = tmp_path / "run.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text", ["x = " + "[" * 5000 + "]" * 5000 + "\n",
                                  "[run]\nthreads = " + "9" * 5000 + "\n"], ids=["deep", "int"])
def test_run_file_parser_limits(tmp_path, text):
    from genotok.runfile import Pipeline, RunFileError
    with pytest.raises(RunFileError, match="run.toml"):
        Pipeline.from_toml(_run(tmp_path, text))


def test_run_file_empty_input_is_not_the_folder(tmp_path):
    from genotok.runfile import Pipeline, RunFileError
    p = _run(tmp_path, '[run]\nout = "o"\n[[dataset]]\nname = "d"\ninputs = [""]\n'
                       'tokenizer = "u.bed"\n')
    with pytest.raises(RunFileError, match="inputs"):
        Pipeline.from_toml(p)


def test_run_options_hash_is_declared():
    from genotok.pipeline import RunOptions
    with pytest.raises(ParameterError, match="hash"):
        RunOptions(hash="md5000")
    assert RunOptions(hash="sha256").hash == "sha256"


def test_executor_checks_its_engine_when_made(monkeypatch):
    from genotok import _optional
    from genotok._optional import MissingDependencyError
    monkeypatch.setattr(_optional.importlib.util, "find_spec", lambda name: None)
    monkeypatch.delitem(__import__("sys").modules, "ray", raising=False)
    from genotok.pipeline.executors import get_executor
    with pytest.raises(MissingDependencyError, match="ray"):
        get_executor("ray")


@pytest.mark.parametrize("body", ["min_overlap = 10\n", "x = " + "[" * 5000 + "]" * 5000 + "\n"],
                         ids=["top_level_setting", "deep"])
def test_tokenizer_toml_unknown_top_level_key(tmp_path, body):
    (tmp_path / "u.bed").write_text("chr1\t0\t10\n")
    (tmp_path / "t.toml").write_text('universe = "u.bed"\n' + body)
    with pytest.raises(UniverseError, match="t.toml"):
        genotok.Tokenizer.from_config(tmp_path / "t.toml")


# ------------------------------------------------------------------ S9 cell sources
@pytest.mark.parametrize("make", [lambda: AnnDataOptions(region_columns=("chrom", "start")),
                                  lambda: AnnDataOptions(region_columns=(1, 2, 3)),
                                  lambda: AnnDataOptions(var_names_sep=""),
                                  lambda: FragmentOptions(shift=(1, 2, 3)),
                                  lambda: FragmentOptions(shift=(2**63, 0)),
                                  lambda: FragmentOptions(shift=(1.7, 0)),
                                  lambda: FragmentOptions(fragment_size=(100, 10))],
                         ids=["cols_two", "cols_ints", "sep_empty", "shift_three", "shift_huge",
                              "shift_float", "size_reversed"])
def test_read_options_checked_when_made(make):
    with pytest.raises(ParameterError):
        make()


def test_read_options_json_name_not_a_string():
    from genotok.singlecell.sources import read_options_from_json
    with pytest.raises(ParameterError):
        read_options_from_json({"name": ["zarr"]})


def test_cell_ranger_folder_with_two_matrices(tmp_path):
    import gzip
    f = tmp_path / "m"
    f.mkdir()
    body = "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1\n"
    (f / "matrix.mtx").write_text(body)
    with gzip.open(f / "matrix.mtx.gz", "wt") as fh:
        fh.write(body.replace("1 1 1\n1 1 1", "1 1 0"))
    (f / "barcodes.tsv").write_text("A\n")
    (f / "peaks.bed").write_text("chr1\t0\t10\n")
    with pytest.raises(AnnDataError, match="matrix.mtx.gz and matrix.mtx"):
        genotok.tokenize_cells(str(f), genotok.Tokenizer(["chr1:0-10"]))



def _small_adata():
    from tests.singlecell._cells import adata, counts
    return adata(counts(6, 5, 0.6, 11))


def test_zarr_missing_indices_chunk_is_refused(tmp_path):
    pytest.importorskip("zarr")
    import os
    from tests.singlecell.test_zarr import _write
    from tests.singlecell._cells import UNIVERSE
    path = _write(_small_adata(), tmp_path / "c.zarr", 2)
    for f in os.listdir(os.path.join(path, "X", "indices")):
        if not f.startswith("."):
            os.remove(os.path.join(path, "X", "indices", f))
    if os.path.exists(os.path.join(path, ".zmetadata")):
        os.remove(os.path.join(path, ".zmetadata"))
    with pytest.raises(AnnDataError, match="chunks are missing"):
        genotok.tokenize_anndata(path, genotok.Tokenizer(UNIVERSE))


def test_h5ad_frame_index_and_columns_of_one_length(tmp_path):
    h5py = pytest.importorskip("h5py")
    from tests.singlecell._cells import UNIVERSE
    p = tmp_path / "c.h5ad"
    _small_adata().write_h5ad(p)
    with h5py.File(p, "r+") as f:
        short = f["var/_index"][()][:2]
        del f["var/_index"]
        f.create_dataset("var/_index", data=short)
    with pytest.raises(AnnDataError, match="index has 2"):
        genotok.tokenize_anndata(str(p), genotok.Tokenizer(UNIVERSE))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("what", ["run file", "cell spec", "dictionary", "tokenizer"])
def test_a_named_pipe_as_a_settings_file_is_refused_at_once(tmp_path, what):
    """A run file, cell spec or gene dictionary given as a named pipe nothing writes to hung
    the call in open() (it waits for a writer); one bounded reader (_io.read_small) opens
    without waiting and refuses it, naming the file. An anonymous pipe (<(cmd)) still reads."""
    import threading

    from genotok.genes import read_mapping
    from genotok.runfile import Pipeline

    from genotok import GeneTokenizer

    read = {"run file": Pipeline.from_toml, "cell spec": CellSpec.from_toml,
            "dictionary": read_mapping,
            "tokenizer": lambda f: GeneTokenizer.from_pretrained(f.parent)}[what]  # a folder's
    name = "tokenizer.toml" if what == "tokenizer" else "settings.toml"
    fifo = tmp_path / name
    os.mkfifo(fifo)
    out = []

    def call():
        try:
            read(fifo)
        except GenotokError as exc:
            out.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader before failing, so the test run does not hang
        with open(fifo, "wb"):
            pass
        pytest.fail(f"reading a named pipe as a {what} waits for a writer")
    assert out and f"{name}: a pipe that nothing wrote to, not a {what}" in str(out[0])
    r, w = os.pipe()
    os.write(w, b"max_length = 64\n")
    os.close(w)
    try:
        assert CellSpec.from_toml(f"/dev/fd/{r}").max_length == 64
    finally:
        os.close(r)


def test_a_tokenizer_configuration_over_its_bound_is_refused_not_cut(tmp_path):
    """tokenizer.toml was read as its first MiB (a longer file parsed as a prefix); like every
    settings file it is now refused whole when over its bound, naming the file."""
    from genotok import Tokenizer

    (tmp_path / "tokenizer.toml").write_text('universe = "u.bed"\n' + "#" * (1 << 20) + "\n")
    with pytest.raises(UniverseError, match="tokenizer.toml: more than 1 MiB: not a tokenizer "
                                            "configuration"):
        Tokenizer.from_pretrained(tmp_path)
