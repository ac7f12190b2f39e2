"""The first hour (issue 42): the common mistakes get a message that says what to do, warnings
point at the caller's line, notebooks stay quiet, the small print is right."""

from __future__ import annotations

import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import genotok
from genotok import _config, _progress
from genotok.cli import main
from genotok.errors import KeywordError

EX = genotok.examples_dir()
U = EX / "universe.bed"


def test_a_keyword_typo_names_the_keyword_meant():
    with pytest.raises(KeywordError, match=r"Tokenizer.from_bed\(\) got an unexpected keyword "
                                           r"argument 'overlapp': did you mean overlap="):
        genotok.Tokenizer.from_bed(U, overlapp="best")
    with pytest.raises(TypeError):  # still a TypeError, as Python's own
        genotok.Tokenizer.from_bed(U, min_overlapp=3)


def test_a_list_of_files_given_to_encode_points_at_encode_batch():
    tok = genotok.Tokenizer.from_bed(U)
    files = sorted((EX / "peaks").iterdir())
    with pytest.raises(genotok.RegionParseError, match=r"encode_batch\(paths\)"):
        tok.encode(files)


def test_a_folder_given_to_encode_batch_is_named_whole_with_advice_that_works(tmp_path):
    tok = genotok.Tokenizer.from_bed(U)
    folder = tmp_path / ("a-long-folder-name-" * 6)
    folder.mkdir()
    with pytest.raises(genotok.RegionParseError) as e:
        tok.encode_batch(folder)
    msg = str(e.value)
    assert repr(str(folder)) in msg and "glob(" in msg and "encode(" not in msg


def test_write_gtok_in_gtars_order_says_the_order(tmp_path):
    with pytest.raises(genotok.GenotokError, match=r"write_gtok takes \(ids, path\)"):
        genotok.write_gtok(tmp_path / "x.gtok", [1, 2])
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv, says", [
    (["pretokenize", "--universe", str(U), "--output", "o", str(EX / "peaks")],
     "unrecognized option --output: did you mean --out?"),
    (["pretokenize", "--universe", str(U), "--out", "o", "--threds", "2", str(EX / "peaks")],
     "unrecognized option --threds: did you mean --threads? (see 'genotok pretokenize --help')"),
])
def test_an_unknown_option_is_named_before_a_missing_one(argv, says, capsys, tmp_path,
                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_warnings_point_at_the_callers_line(tmp_path):
    bed = tmp_path / "q.bed"
    bed.write_text("chr1\t100\t200\nchr1\t500\t400\n")
    tok = genotok.Tokenizer.from_bed(U)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tok.encode(bed)
    assert seen and all(w.filename == __file__ for w in seen), [(w.filename, w.lineno) for w in seen]


def test_top_k_says_the_candidates_are_too_few_not_that_all_are_hit(tmp_path):
    peaks = EX / "peaks" / "sample0.narrowPeak"
    with pytest.warns(UserWarning) as seen:  # every candidate is hit: too few candidates
        genotok.top_k(peaks, [peaks], max_regions=10**6)
    text = str(seen[0].message)
    assert "candidates hold" in text and " of " not in text.split(":")[0], text


def test_info_shows_one_version_and_counts_in_words(tmp_path, capsys):
    run = genotok.pretokenize(EX / "peaks", genotok.Tokenizer.from_bed(U), tmp_path / "c",
                              progress=False)
    assert main(["info", str(run.out)]) == 0
    out = capsys.readouterr().out
    assert "format_version" in out and "\nversion " not in out
    assert "1 entries" not in out


def test_the_run_summary_counts_the_whole_command(tmp_path, capsys, monkeypatch):
    import genotok.cli.commands as commands

    # loading the tokenizer (compiling, on a cold cache) before the run starts
    monkeypatch.setattr(commands, "_tokenizer", lambda args, _t=commands._tokenizer: (
        __import__("time").sleep(1.0), _t(args))[1])
    assert main(["pretokenize", "--universe", str(U), "--out", str(tmp_path / "c"),
                 str(EX / "peaks")]) == 0
    err = capsys.readouterr().err
    seconds = float(err.split(" in ")[-1].split(" s")[0])
    assert seconds >= 1.0, err


# --------------------------------------------------------------------------- notebooks
def test_import_genotok_never_warns():
    code = ("import warnings; warnings.simplefilter('error'); import genotok; "
            "import genotok._progress as p; p.progress(3, 'x', enabled=False).close(); print('ok')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok" and not run.stderr, run.stderr


def _fake_kernel(monkeypatch, widgets: bool):
    shell = types.SimpleNamespace(config={"IPKernelApp": {}})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    if not widgets:
        monkeypatch.setitem(sys.modules, "ipywidgets", None)


def test_a_notebook_without_ipywidgets_gets_text_bars_and_no_warning(monkeypatch):
    _fake_kernel(monkeypatch, widgets=False)
    assert _config.in_notebook()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar = _progress.progress(3, "cells")
        bar.close()
    assert type(bar).__module__ == "tqdm.std"


def test_a_notebook_gets_one_compile_line_in_all(monkeypatch, capsys):
    _fake_kernel(monkeypatch, widgets=False)
    notice = _config._CompileNotice()
    for module in ("genotok.kernels.parse", "genotok.kernels.overlap", "genotok.kernels.cells"):
        disp = types.SimpleNamespace(py_func=types.SimpleNamespace(__module__=module))
        notice.on_start(types.SimpleNamespace(data={"dispatcher": disp}))
        notice.on_end(None)
    out, err = capsys.readouterr()
    assert err == "" and out.count("\n") == 1 and "compiling kernels" in out


def test_a_terminal_gets_one_line_per_group(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "IPython", None)
    notice = _config._CompileNotice()
    for module in ("genotok.kernels.parse", "genotok.kernels.overlap"):
        disp = types.SimpleNamespace(py_func=types.SimpleNamespace(__module__=module))
        notice.on_start(types.SimpleNamespace(data={"dispatcher": disp}))
        notice.on_end(None)
    assert capsys.readouterr().err.count("genotok: compiling") == 2


@pytest.mark.parametrize("call", ["tokenize_anndata", "tokenize_cells"])
def test_a_cellspec_field_given_to_an_entry_point_names_cellspec(call):
    tok = genotok.Tokenizer.from_bed(U)
    with pytest.raises(KeywordError, match=rf"max_length is a CellSpec field: {call}\(x, "
                                           r"tokenizer, CellSpec\(max_length=\.\.\.\)\)"):
        getattr(genotok, call)(EX / "pbmc.h5ad", tok, max_length=2048)
    with pytest.raises(KeywordError, match=r"did you mean order\?"):
        getattr(genotok, call)(EX / "pbmc.h5ad", tok, ordr="value")


def test_pretokenize_and_fragments_name_cellspec_too(tmp_path):
    tok = genotok.Tokenizer.from_bed(U)
    with pytest.raises(KeywordError, match=r"cells=CellSpec\(max_length=\.\.\.\)"):
        genotok.pretokenize(EX / "peaks", tok, tmp_path / "c", max_length=5)
    assert not (tmp_path / "c").exists()
    with pytest.raises(KeywordError, match=r"CellSpec\(unique=\.\.\.\)"):
        genotok.tokenize_fragments(EX / "fragments.tsv.gz", tok, unique=True)


@pytest.mark.parametrize("peaks", ["sample0.narrowPeak", "sample4.narrowPeak.gz"])
def test_a_peak_file_given_for_fragments_is_refused_by_file_and_line(peaks):
    tok = genotok.Tokenizer.from_bed(U)
    with pytest.raises(genotok.BedParseError, match=r":1: 10 columns, the 6th a strand: a "
                                                    r"peak file .*Tokenizer\.encode"):
        genotok.tokenize_fragments(EX / "peaks" / peaks, tok)
    with pytest.raises(genotok.BedParseError, match="10 columns"):
        genotok.fragment_counts(EX / "peaks" / peaks, tok)
