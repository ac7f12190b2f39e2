"""pretokenize on a Dask LocalCluster equals the single-machine run, record for record."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("dask.distributed")

import genotok  # noqa: E402
from genotok import Corpus, Tokenizer  # noqa: E402
from genotok.pipeline import DaskExecutor, RunOptions, pretokenize  # noqa: E402

from .test_pipeline import _many_files  # noqa: E402


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning")
def test_local_cluster_equals_single_machine(tmp_path):
    tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    d = _many_files(tmp_path, n=9)
    (d / "f99.bed.gz").write_bytes(b"\x1f\x8b" + b"\0" * 20)  # a corrupt input, skipped on workers too
    refrun = pretokenize(d, tok, tmp_path / "ref", progress=False, on_error="skip",
                         options=RunOptions(files_per_shard=2))
    ref = Corpus.open(refrun.out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        run = pretokenize(d, tok, tmp_path / "dask", progress=False,
                          on_error="skip",
                          options=RunOptions(files_per_shard=2, executor=DaskExecutor(client)))
    got = Corpus.open(run.out, expect=tok, verify=True)
    assert got.names == ref.names and got.to_ragged() == ref.to_ragged() and len(got) == 9
    assert run.failed == refrun.failed and run.failed[0]["path"].endswith("f99.bed.gz")
    assert len(list(run.out.glob("shard-*.gtokc"))) == 5


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning")
def test_local_cluster_value_encodings(tmp_path):
    """The encoding (and the medians of all inputs, computed once by the client) reach the
    workers: the corpus equals the single-machine run's, values too."""
    import shutil

    tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    files = [tmp_path / "a.h5ad", tmp_path / "b.h5ad"]
    for f in files:
        shutil.copy(genotok.examples_dir() / "pbmc.h5ad", f)
    kw = {"cells": genotok.CellSpec(encoding=(genotok.Normalize(), genotok.RankByMedian()),
                                    values=True)}
    ref = Corpus.open(pretokenize(files, tok, tmp_path / "ref", progress=False, **kw).out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        run = pretokenize(files, tok, tmp_path / "dask", progress=False, **kw,
                          options=RunOptions(executor=DaskExecutor(client)))
    got = Corpus.open(run.out, expect=tok, verify=True)
    assert got.to_ragged(values=True) == ref.to_ragged(values=True)
    assert got.header["extra"] == ref.header["extra"]
