"""The executor seam: every executor passes ``check_executor``; broken ones fail it; the
registry takes plugins; ``RunOptions`` never shows credentials (issue 43, item 19)."""

from __future__ import annotations

import importlib.util

import pytest

import genotok
from genotok.pipeline import (EXECUTORS, DaskExecutor, Executor, PipelineError, RayExecutor,
                              RunOptions, SerialExecutor, get_executor, pretokenize,
                              register_executor)
from genotok.testing import check_executor


def test_serial_executor_passes_the_suite():
    assert check_executor(SerialExecutor(), n_files=4) == {"worker_killed": False,
                                                          "driver_killed": True}


class _LosesOne(Executor):
    name = "loses-one"

    def run(self, job):
        for b in job.pending()[:-1]:  # the last batch never runs
            job.record(b, job.task(b)(job.tokenizer))


class _RecordsTwice(Executor):
    name = "records-twice"

    def run(self, job):
        for b in job.pending():
            entry = job.task(b)(job.tokenizer)
            job.record(b, entry)
            job.record(b, entry)


class _Duplicates(Executor):
    """Journals a batch's entry under the next batch too: a record written twice."""
    name = "duplicates"

    def run(self, job):
        todo = job.pending()
        entries = [job.task(b)(job.tokenizer) for b in todo]
        for b, e in zip(todo, entries):
            job.record(b, entries[0] if b == todo[-1] else e)


@pytest.mark.parametrize("broken", [_LosesOne, _RecordsTwice, _Duplicates])
def test_broken_executors_fail_the_suite(broken):
    with pytest.raises((AssertionError, PipelineError)):
        check_executor(broken(), n_files=3, kill_driver=False)


class _RunsTwice(Executor):
    """Runs every task twice (a retried or speculative task, as Dask and Ray may run one),
    records the second result once."""
    name = "runs-twice"

    def run(self, job):
        for b in job.pending():
            job.task(b)(job.tokenizer)
            job.record(b, job.task(b)(job.tokenizer))


def test_an_executor_that_runs_a_task_twice_keeps_the_records():
    """At-least-once execution is allowed: a batch run again keeps its part in place
    (_io.place_once), and the suite's serial records (none doubled) hold."""
    check_executor(_RunsTwice(), n_files=3, kill_driver=False)


def test_the_registry_takes_a_name_its_keywords_and_plugins(monkeypatch):
    assert set(EXECUTORS) >= {"serial", "dask", "ray"}
    if importlib.util.find_spec("ray") is not None:  # an engine's executor needs its package
        assert get_executor("ray", num_workers=3).options()["num_workers"] == 3
    with pytest.raises(PipelineError, match="did you mean 'dask'"):
        get_executor("dsak")
    with pytest.raises(PipelineError, match="executor 'serial'"):
        get_executor("serial", workers=2)

    class Mine(SerialExecutor):
        name = "mine-test"

    from genotok import _plugins

    monkeypatch.setattr(_plugins, "entry_points",
                        lambda group: [_EP("mine-test", Mine)] if group ==
                        "genotok.executors" else [])
    monkeypatch.setattr(_plugins, "_loaded", set())
    try:
        assert isinstance(get_executor("mine-test"), Mine)
        with pytest.raises(ValueError, match="taken by"):
            register_executor(type("Other", (SerialExecutor,), {"name": "mine-test"}))
        # a class of a built-in's class name, from another module, takes no name either
        with pytest.raises(ValueError, match="'serial' is taken by genotok"):
            register_executor(type("SerialExecutor", (SerialExecutor,),
                                   {"name": "serial", "__module__": "myplugin"}))
        assert EXECUTORS["serial"] is SerialExecutor
        # the same class again, or re-created under its module-qualified name (a reload): kept
        assert register_executor(Mine) is Mine
        again = type("Mine", (SerialExecutor,), {"name": "mine-test",
                                                  "__module__": Mine.__module__,
                                                  "__qualname__": Mine.__qualname__})
        assert register_executor(again) is again and EXECUTORS["mine-test"] is again
    finally:
        EXECUTORS.pop("mine-test", None)


class _EP:
    def __init__(self, name, obj):
        self.name, self.value, self.obj, self.dist = name, f"x:{name}", obj, None

    def load(self):
        return self.obj


def test_an_executor_by_name_runs_and_is_closed(tmp_path, monkeypatch):
    closed = []
    monkeypatch.setattr(SerialExecutor, "close", lambda self: closed.append(self))
    tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    run = pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "o", progress=False,
                      options=RunOptions(executor="serial"))
    assert run.n_records == 5 and len(closed) == 1


def test_run_options_never_show_credentials():
    opts = RunOptions(storage_options={"key": "AKIAEXAMPLE", "secret": "s3cr3t-value",
                                       "client_kwargs": {"endpoint_url": "http://x"}})
    text = repr(opts)
    assert "s3cr3t" not in text and "AKIAEXAMPLE" not in text and "'secret': ***" in text
    assert opts.storage_options["secret"] == "s3cr3t-value"


def test_executor_options_make_an_equal_executor():
    made = [SerialExecutor()]
    if importlib.util.find_spec("dask") is not None:
        made.append(DaskExecutor(address="local", n_workers=3))
    if importlib.util.find_spec("ray") is not None:
        made.append(RayExecutor(address="auto", num_workers=5))
    for ex in made:
        again = type(ex)(**ex.options())
        assert again.options() == ex.options() and repr(again) == repr(ex)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning",
                            "ignore::pytest.PytestUnraisableExceptionWarning",
                            "ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_dask_local_cluster_passes_the_suite():
    pytest.importorskip("dask.distributed")
    with DaskExecutor(address="local", n_workers=2) as ex:
        assert check_executor(ex, n_files=4, kill_driver=False)["worker_killed"]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning",
                            "ignore::pytest.PytestUnraisableExceptionWarning",
                            "ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_dask_resumes_after_its_driver_is_killed():
    pytest.importorskip("dask.distributed")
    with DaskExecutor(address="local", n_workers=2) as ex:
        assert check_executor(ex, n_files=4) == {"worker_killed": True, "driver_killed": True}


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning")
def test_an_s3_output_is_the_same_on_every_executor(tmp_path, monkeypatch):
    """The journal and the upload stay in the driver: an s3:// output written through Dask
    workers is the serial run's, object for object."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    distributed = pytest.importorskip("dask.distributed")
    from tests._s3 import moto_s3

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GENOTOK_CACHE", str(tmp_path / "cache"))
    tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    with moto_s3("bkt") as server:
        so = {"key": "testing", "secret": "testing",
              "client_kwargs": {"endpoint_url": server[0], "region_name": "us-east-1"}}
        peaks = genotok.examples_dir() / "peaks"
        pretokenize(peaks, tok, "s3://bkt/serial", progress=False,
                    options=RunOptions(files_per_shard=2, storage_options=so, hash="sha256"))
        with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                                dashboard_address=None) as client:
            pretokenize(peaks, tok, "s3://bkt/dask", progress=False,
                        options=RunOptions(files_per_shard=2, storage_options=so,
                                           hash="sha256", executor=DaskExecutor(client)))
        a = genotok.Corpus.open("s3://bkt/serial", storage_options=so)
        b = genotok.Corpus.open("s3://bkt/dask", storage_options=so)
        assert a.names == b.names and a.to_ragged() == b.to_ragged() and len(b) == 5


def test_an_executor_without_run_cannot_be_made_and_fails_the_suite():
    """``Executor.run`` is abstract (was a NotImplementedError stub met only mid-run)."""
    class Forgets(Executor):
        name = "forgets"

    with pytest.raises(TypeError, match="run"):
        Forgets()
    with pytest.raises(AssertionError, match=r"check_executor\(Forgets\).*run missing"):
        check_executor(Forgets, kill_driver=False)
