"""pretokenize on Ray: a local Ray bound to 127.0.0.1 (checked: no connection of Ray's goes
anywhere but the loopback interface), the serial run's records, a killed worker, kernels
compiled once per node."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile

import pytest

if importlib.util.find_spec("ray") is None:
    pytest.skip("ray is not installed (pip install 'genotok[ray]')", allow_module_level=True)
psutil = pytest.importorskip("psutil")

import genotok  # noqa: E402
from genotok import Corpus, Tokenizer  # noqa: E402
from genotok.pipeline import RayExecutor, RunOptions, pretokenize  # noqa: E402
from genotok.testing import check_executor  # noqa: E402

from .test_pipeline import _many_files  # noqa: E402

ray = None  # imported by the fixture, once the environment keeps Ray on the loopback

LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


@pytest.fixture(scope="module")
def local_ray():
    """One Ray for the module, on 127.0.0.1, no dashboard, two CPUs; shut down after."""
    global ray
    env = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # a loopback node address stays loopback
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # read when ray is imported: imported here, not at collection
    import ray

    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")
    from genotok._config import kernel_cache_dir

    cache = kernel_cache_dir()  # this process's: warm, so the workers load, not compile
    # Ray's socket paths (its folder + session_<date>/sockets/...) must stay under 107 bytes:
    # a short folder in /tmp, whatever TMPDIR or pytest's base folder is
    temp = tempfile.mkdtemp(prefix="gtr", dir="/tmp" if os.path.isdir("/tmp") else None)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, _temp_dir=temp,
             runtime_env={"env_vars": {"GENOTOK_KERNEL_CACHE": cache,
                                       "PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    try:
        yield cache
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _ray_processes():
    me = psutil.Process()
    procs = [me, *me.children(recursive=True)]
    seen = {p.pid for p in procs}
    for p in psutil.process_iter(["cmdline"]):  # the raylet's workers are its children
        cmd = " ".join(p.info["cmdline"] or [])
        if p.pid not in seen and ("ray::" in cmd or "/ray/" in cmd):
            procs.append(p)
    return procs


def _not_loopback():
    bad = []
    for p in _ray_processes():
        try:
            conns = p.net_connections(kind="inet")
        except psutil.Error:
            continue
        for c in conns:
            for a in (c.laddr, c.raddr):
                if a and a.ip not in LOOPBACK:
                    bad.append((p.pid, c))
    return bad


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_ray_equals_serial_on_loopback_only(local_ray, tok, tmp_path):
    d = _many_files(tmp_path, n=6)
    ref = Corpus.open(pretokenize(d, tok, tmp_path / "ref", progress=False,
                                  options=RunOptions(files_per_shard=2)).out)
    run = pretokenize(d, tok, tmp_path / "ray", progress=False,
                      options=RunOptions(files_per_shard=2, executor=RayExecutor(num_workers=2)))
    got = Corpus.open(run.out, expect=tok, verify=True)
    assert got.names == ref.names and got.to_ragged() == ref.to_ragged()
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    assert len(_ray_processes()) > 3
    assert _not_loopback() == []
    # the kernels are compiled once per node, into the node's shared kernel cache: a second
    # run on the same workers compiles nothing (the cache does not grow)
    files = _cache_files(local_ray)
    assert files, "the Ray workers did not use the node's kernel cache"
    pretokenize(d, tok, tmp_path / "ray2", progress=False,
                options=RunOptions(files_per_shard=1, executor=RayExecutor(num_workers=2)))
    assert _cache_files(local_ray) == files


def _cache_files(folder):
    from pathlib import Path

    return sorted((str(p), p.stat().st_mtime_ns) for p in Path(folder).rglob("*.nbi"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_ray_passes_the_suite_a_worker_killed(local_ray):
    report = check_executor(RayExecutor(num_workers=2), n_files=4, kill_driver=False)
    assert report["worker_killed"]
    assert _not_loopback() == []


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_ray_resumes_after_its_driver_is_killed(local_ray):
    address = ray.get_runtime_context().gcs_address
    report = check_executor(RayExecutor(num_workers=2), n_files=4,
                            driver_options={"address": address, "num_workers": 2})
    assert report == {"worker_killed": True, "driver_killed": True}


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_a_run_file_on_ray_gives_the_serial_records(local_ray, tok, tmp_path):
    from genotok.runfile import Pipeline

    d = _many_files(tmp_path, n=5)
    text = (f'[run]\nout = "{{}}"\nfiles_per_shard = 2\n{{}}\n[[dataset]]\nname = "p"\n'
            f'inputs = ["{d}"]\ntokenizer = "{genotok.examples_dir() / "universe.bed"}"\n')
    (tmp_path / "serial.toml").write_text(text.format("serial", ""))
    (tmp_path / "ray.toml").write_text(text.format(
        "ray", 'executor = "ray"\n[run.ray]\naddress = "local"\nnum_workers = 2'))
    Pipeline.from_toml(tmp_path / "serial.toml").run(progress=False)
    Pipeline.from_toml(tmp_path / "ray.toml").run(progress=False)
    assert Corpus.open(tmp_path / "ray" / "p", verify=True).to_ragged() == \
        Corpus.open(tmp_path / "serial" / "p").to_ragged()
    assert ray.is_initialized()  # the module's Ray: used, not stopped, by the run
