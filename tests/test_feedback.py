"""What a user sees while genotok works: compile notice, progress, run summaries, warnings,
install hints (issue 20, "The first hour without surprises")."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import genotok
from genotok import _progress
from genotok._optional import MissingDependencyError, require
from genotok.pipeline.run import RunOptions, pretokenize

from ._shared import PBMC, needs_shared

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tok():
    return genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


# --------------------------------------------------------------------------- run summaries
def test_summary_gives_hit_rate_and_unk_share(tok, tmp_path):
    run = pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "c", progress=False)
    corpus = genotok.Corpus.open(run.out)
    flat = corpus.to_ragged().data
    assert run.n_unk_tokens == int((flat == tok.unk_token_id).sum())
    assert run.n_unk_records == 0 and run.hit_rate == 1.0
    assert 0 <= run.unk_share < 0.5
    text = str(run)
    assert f"{run.unk_share:.1%} <unk>" in text and "100.0% of records hit the universe" in text
    html = run._repr_html_()  # a notebook shows a table, not the dataclass' one long line
    assert "genotok.RunSummary" in html and "&lt;unk&gt; share" in html
    assert corpus.manifest["genotok_run"]["n_unk_tokens"] == run.n_unk_tokens
    info = corpus.info()  # what `genotok info` prints
    assert info["unk_share"] == f"{run.unk_share:.1%} of tokens are <unk>"
    assert info["hit_rate"] == "100.0% of records hit the universe"


def test_wrong_universe_warns_and_names_the_cause(tmp_path):
    # as if from another genome build: the same chromosomes, coordinates far off
    rows = [line.split("\t") for line in
            (genotok.examples_dir() / "universe.bed").read_text().splitlines()]
    (tmp_path / "u.bed").write_text("".join(f"{c}\t{int(s) + 10**8}\t{int(e) + 10**8}\n"
                                            for c, s, e in rows))
    wrong = genotok.Tokenizer.from_bed(tmp_path / "u.bed")
    with pytest.warns(UserWarning, match=r"5 of 5 records hit no region of the universe .*"
                                         r"genome build.*chromosome names"):
        run = pretokenize(genotok.examples_dir() / "peaks", wrong, tmp_path / "c", progress=False)
    assert run.hit_rate == 0.0 and run.unk_share == 1.0
    assert "0.0% of records hit the universe" in str(run)


@needs_shared
def test_pbmc_with_the_example_universe_is_not_silent(tok, tmp_path):
    # the reproducer: 19 of 20 cells came out [<unk>] and the run said nothing
    with pytest.warns(UserWarning, match=r"1\d of 20 records hit no region"):
        run = pretokenize(PBMC, tok, tmp_path / "x", progress=False)
    assert run.n_unk_records >= 17  # a few cells touch chr1:0-2M of the example
    info = genotok.Corpus.open(run.out).info()
    assert info["hit_rate"] == f"{run.hit_rate:.1%} of records hit the universe"


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


# --------------------------------------------------------------------------- install hints
@pytest.mark.parametrize("module, extra", [("torch", "torch"), ("pyarrow", "parquet"),
                                           ("dask.distributed", "dask"),
                                           ("matplotlib.pyplot", "plot")])
def test_every_optional_extra_has_an_install_hint(monkeypatch, module, extra):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError, match=rf"pip install 'genotok\[{extra}\]'") as e:
        require(module, "this feature")
    assert isinstance(e.value, genotok.GenotokError) and isinstance(e.value, ImportError)


def test_parquet_and_dask_without_their_packages(monkeypatch, tok, tmp_path):
    run = pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "c", progress=False)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[parquet\]'"):
        genotok.export_parquet(genotok.Corpus.open(run.out), tmp_path / "t.parquet")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[dask\]'"):
        pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "d", progress=False,
                    options=RunOptions(client=object()))


def test_return_tensors_pt_without_torch(monkeypatch, tok):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[torch\]'"):
        tok([["chr1:100-200"]], return_tensors="pt")


# --------------------------------------------------------------------------- compile notice
def _run(code: str, cache: Path, **extra: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter whose per-user cache folder is ``cache``
    (``$XDG_CACHE_HOME``: genotok's kernels go to ``cache/genotok/numba``)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(cache), **extra)
    for name in ("GENOTOK_QUIET_COMPILE", "GENOTOK_NO_CACHE", "NUMBA_CACHE_DIR",
                 "GENOTOK_KERNEL_CACHE"):
        if name not in extra:
            env.pop(name, None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)


_GATHER = ("import numpy as np\n"
           "from genotok.kernels import gather\n"
           "for dt in (np.int64, np.uint16):\n"
           "    out = np.zeros(2, dt)\n"
           "    gather.gather(np.arange(2, dtype=dt), np.array([0, 1, 2]), np.array([1, 0]),\n"
           "                  np.array([0, 1, 2]), out)\n"
           "print(out.tolist())")


def test_compile_notice_once_per_group_when_the_cache_is_cold(tmp_path):
    # two compilations (one kernel, two signatures) in a process with an empty cache: one line
    cold = _run(_GATHER, tmp_path / "cache")
    assert cold.returncode == 0 and cold.stdout.strip() == "[1, 0]", cold.stderr[-2000:]
    assert cold.stderr.count("genotok: compiling gather kernels (") == 1, cold.stderr[-2000:]
    assert "first use only)…" in cold.stderr
    warm = _run(_GATHER, tmp_path / "cache")  # the cache now holds both: silent
    assert warm.returncode == 0 and "compiling" not in warm.stderr, warm.stderr[-2000:]


def test_compile_notice_for_every_group_that_compiles(tmp_path):
    """Once per process hid the later groups: the tutorial's tokenize_anndata cell compiled for
    29 s in silence after an earlier cell had shown the one line."""
    code = _GATHER + ("\nfrom genotok.kernels import sweep\n"
                      "print(sweep._is_sorted(np.array([0, 0]), np.array([1, 2]), "
                      "np.array([3, 4])))")
    cold = _run(code, tmp_path / "cache")
    assert cold.returncode == 0, cold.stderr[-2000:]
    lines = [ln for ln in cold.stderr.splitlines() if ln.startswith("genotok: compiling")]
    assert [ln.split()[2] for ln in lines] == ["gather", "sweep"], cold.stderr[-2000:]


def test_compile_notice_gives_an_estimate_for_known_groups():
    from genotok import _config

    assert _config.compile_notice("overlap").startswith("genotok: compiling overlap kernels (~")
    assert all(v > 0 for v in _config.COMPILE_SECONDS.values())


def test_kernels_are_cached_per_user_never_beside_the_package(tmp_path):
    """numba's default cache is the package's __pycache__: a read-only install could not cache,
    and after ``pip uninstall`` the files left a site-packages/genotok/ folder that shadowed a
    later editable install (issue 36)."""
    pkg = ROOT / "genotok"
    before = {p: p.stat().st_mtime_ns for p in pkg.rglob("*.nbi")}
    cold = _run(_GATHER, tmp_path / "xdg")
    assert cold.returncode == 0, cold.stderr[-2000:]
    cached = list((tmp_path / "xdg" / "genotok" / "numba").rglob("gather.gather-*.nbi"))
    assert len(cached) == 1, cold.stderr[-2000:]
    assert {p: p.stat().st_mtime_ns for p in pkg.rglob("*.nbi")} == before
    # GENOTOK_KERNEL_CACHE overrides the folder
    own = _run(_GATHER, tmp_path / "xdg2", GENOTOK_KERNEL_CACHE=str(tmp_path / "mine"))
    assert own.returncode == 0, own.stderr[-2000:]
    assert list((tmp_path / "mine").rglob("gather.gather-*.nbi"))
    assert not (tmp_path / "xdg2" / "genotok").exists()


def test_other_libraries_keep_numba_s_cache_location(tmp_path):
    """The locator serves genotok's kernels only: a user's own cached function is cached where
    numba puts it (beside its source)."""
    mod = tmp_path / "src" / "mine.py"
    mod.parent.mkdir()
    mod.write_text("from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    code = f"import sys; sys.path.insert(0, {str(mod.parent)!r}); import genotok, mine; " \
           "print(mine.f(1))"
    res = _run(code, tmp_path / "xdg")
    assert res.returncode == 0 and res.stdout.strip() == "2", res.stderr[-2000:]
    assert list((mod.parent / "__pycache__").glob("mine.f-*.nbi"))
    assert not list((tmp_path / "xdg").rglob("mine.f-*"))


def test_an_unwritable_cache_folder_compiles_in_memory(tmp_path):
    blocker = tmp_path / "a-file"  # a folder cannot be made under a file, even by root
    blocker.write_text("")
    res = _run(_GATHER, tmp_path / "xdg", GENOTOK_KERNEL_CACHE=str(blocker / "cache"))
    assert res.returncode == 0 and res.stdout.strip() == "[1, 0]", res.stderr[-2000:]
    assert "is not writable: every new process compiles" in res.stderr


_COUNT_COMPILES = ("from numba.core import event as _ev\n"
                   "n = []\n"
                   "class _L(_ev.Listener):\n"
                   "    def on_start(self, ev):\n"
                   "        f = getattr((ev.data or {}).get('dispatcher'), 'py_func', None)\n"
                   "        if f is not None and f.__module__.startswith('genotok'):\n"
                   "            n.append(f.__module__ + '.' + f.__qualname__)\n"
                   "    def on_end(self, ev):\n"
                   "        pass\n"
                   "_ev.register('numba:compile', _L())\n")


@pytest.mark.slow
def test_after_warmup_the_readme_compiles_nothing(tmp_path):
    """warmup() missed kernels the README's tok.encode(file) then compiled (issue 36): after it,
    the README's Quick start and single-cell blocks compile nothing (minutes of CPU: slow)."""
    import re

    for needed in ("anndata", "h5py", "torch"):  # what the README's single-cell block imports
        pytest.importorskip(needed)
    warm = _run("import genotok; genotok.warmup()", tmp_path / "cache")
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert "genotok: warmup compiled" in warm.stderr and "warmup 1/4" in warm.stderr
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    quick, cells = blocks[0], next(b for b in blocks if "tokenize_anndata" in b)
    cells = cells.replace('out="pbmc.gtokc"', f'out={str(tmp_path / "pbmc.gtokc")!r}')
    code = _COUNT_COMPILES + quick + cells + "\nprint('compiled:', n)"
    res = _run(code, tmp_path / "cache")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "compiled: []" in res.stdout, res.stdout + res.stderr[-2000:]
