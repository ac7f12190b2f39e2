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
        genotok.export_parquet(genotok.Corpus.open(run.out), tmp_path / "t.parquet")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[dask\]'"):
        pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "d", progress=False,
                    options=RunOptions(executor="dask"))


def test_return_tensors_pt_without_torch(monkeypatch, tok):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'genotok\[torch\]'"):
        tok([["chr1:100-200"]], return_tensors="pt")
