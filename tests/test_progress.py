"""genotok._progress: a tqdm bar with its summary on stderr, shown in a notebook, off without a
terminal (issue 20, what a user sees while genotok works)."""

from __future__ import annotations

import io
import sys

import pytest

import genotok
from genotok import _progress


@pytest.fixture(scope="module")
def tok():
    return genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


# --------------------------------------------------------------------------- progress
def test_progress_is_a_tqdm_bar_with_its_summary_on_stderr(monkeypatch):
    from tqdm.std import tqdm

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = _progress.progress(4, "pretokenize", "file")
    assert isinstance(bar, tqdm) and not bar.disable
    bar.update(4)
    bar.set_postfix_str("1,234 regions")
    bar.refresh()
    bar.close()
    assert "pretokenize: 100%" in err.getvalue() and "4/4" in err.getvalue()
    assert "1,234 regions" in err.getvalue()


def test_progress_in_a_notebook_is_shown_without_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # notebooks are not TTYs
    monkeypatch.setattr(_progress, "_notebook_bar", lambda: True)
    from tqdm.std import tqdm  # the widget itself needs a live kernel

    monkeypatch.setattr(_progress, "_tqdm", lambda: tqdm)
    bar = _progress.progress(3, "cells", "cell", tty_only=True)
    try:
        assert not bar.disable
    finally:
        bar.close()


def test_progress_off_and_off_without_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _progress.progress(3, "x", enabled=False).disable
    assert _progress.progress(3, "x", tty_only=True).disable
    assert sys.stderr.getvalue() == ""


def test_anndata_progress_shows_the_cells(tok, capsys):
    h5ad = genotok.examples_dir() / "pbmc.h5ad"
    if not h5ad.is_file():
        pytest.skip("no bundled pbmc.h5ad")
    cells = genotok.tokenize_anndata(h5ad, tok, progress=True)
    assert len(cells) == 20
    err = capsys.readouterr().err  # the bar's first frame at least (tqdm draws every 0.1 s)
    assert "/20" in err and "cell" in err
