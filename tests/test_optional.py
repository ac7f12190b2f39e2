"""genotok._optional: every optional extra has an install hint, and each feature without its
package says which extra to install (issue 20)."""

from __future__ import annotations

import sys

import pytest

import genotok
from genotok._optional import MissingDependencyError, require
from genotok.pipeline.run import RunOptions, pretokenize


@pytest.fixture(scope="module")
def tok():
    return genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


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
        genotok.export_store(genotok.Corpus.open(run.out), tmp_path / "t.parquet", "parquet")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[dask\]'"):
        pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "d", progress=False,
                    options=RunOptions(executor="dask"))


def test_return_tensors_pt_without_torch(monkeypatch, tok):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[torch\]'"):
        tok([["chr1:100-200"]], return_tensors="pt")


# --------------------------------------------------------------------------- each feature, its package hidden
#: (the package hidden, what a user runs, the extra the message must name); each runs in a
#: fresh interpreter where the package cannot be imported (tests/_docs_env/sitecustomize.py)
FEATURES = [
    ("torch", "import genotok.torch_data", "torch"),
    ("lightning", "import genotok.lightning", "lightning"),
    ("fsspec", "genotok.Corpus.open('s3://bucket/corpus')", "remote"),
    ("matplotlib", "import genotok.plot as p; p.record_lengths([[1, 2]])", "plot"),
    ("pyarrow", "import tempfile, os; d = tempfile.mkdtemp(); "
                "r = genotok.pretokenize(genotok.examples_dir() / 'peaks', genotok.Tokenizer.from_bed("
                "genotok.examples_dir() / 'universe.bed'), os.path.join(d, 'c'), progress=False, "
                "format='parquet')", "parquet"),
    ("huggingface_hub", "genotok.Tokenizer.from_pretrained('databio/no-such-model')", "hub"),
    ("xxhash", "import genotok._io as io; io.file_digest(genotok.examples_dir() / 'universe.bed', "
               "'xxh3_128')", "fast"),
]


@pytest.mark.parametrize("hidden, code, extra", FEATURES, ids=[f[0] for f in FEATURES])
def test_each_optional_feature_names_its_extra(hidden, code, extra):
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if hidden == "lightning":
        pytest.importorskip("torch")
    env = dict(os.environ, GENOTOK_DOCS_HIDE=hidden, PYTHONPATH=os.pathsep.join(
        [str(root / "tests" / "_docs_env"), str(root), os.environ.get("PYTHONPATH", "")]))
    script = (f"import genotok\ntry:\n    {code}\nexcept genotok.GenotokError as e:\n"
              f"    print(type(e).__name__, e)\nelse:\n    print('no error')\n")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("MissingDependencyError"), run.stdout + run.stderr[-2000:]
    assert f"pip install 'genotok[{extra}]'" in run.stdout, run.stdout
