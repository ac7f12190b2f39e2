"""The output directory's lock: exclusive across processes, never stale, clear when refused."""

from __future__ import annotations

import errno
import itertools
import json
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import genotok
from genotok import Corpus, Tokenizer
from genotok.pipeline import PipelineError, RunOptions, pretokenize
from genotok.pipeline import journal as P
from genotok.pipeline.journal import LOCK

EX = genotok.examples_dir()
ROOT = Path(__file__).resolve().parents[2]

HOLD = """
import sys, time
from pathlib import Path
from genotok.pipeline.journal import lock
with lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(60)
"""


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _holder(directory: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], env=_env(),
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_is_told_who_holds_the_lock(tmp_path):
    tok = Tokenizer.from_bed(EX / "universe.bed")
    out = tmp_path / "out"
    out.mkdir()
    holder = _holder(out)
    try:
        info = json.loads((out / LOCK).read_text())
        assert info["pid"] == holder.pid and info["host"] == socket.gethostname()
        pattern = rf"locked by {socket.gethostname()}:{holder.pid} since {info['since'][:10]}"
        with pytest.raises(PipelineError, match=pattern):
            pretokenize(EX / "peaks", tok, out, progress=False)
        assert not (out / "journal.json").exists()  # refused before touching anything
    finally:
        holder.kill()  # SIGKILL: no clean-up runs in the holder
        holder.wait()
        holder.stdout.close()
    # the kernel released the dead holder's lock; its file (and record) is left: not stale
    assert (out / LOCK).exists()
    assert pretokenize(EX / "peaks", tok, out, progress=False).n_records == 5
    assert not (out / LOCK).exists()  # removed on release


def test_a_lock_file_from_an_old_version_or_another_host_is_not_a_lock(tmp_path):
    tok = Tokenizer.from_bed(EX / "universe.bed")
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text("12345")  # a pid file of the old lock; only a held flock counts
    assert pretokenize(EX / "peaks", tok, out, progress=False).n_records == 5


def test_threads_of_one_process_exclude_each_other(tmp_path):
    refused = pytest.raises(PipelineError, match=f"locked by .*:{os.getpid()} since")
    with P.lock(tmp_path), refused, P.lock(tmp_path):
        pass
    with P.lock(tmp_path):  # released: taken again
        pass


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS])
def test_file_systems_without_locks_get_a_clear_error(tmp_path, monkeypatch, code):
    import fcntl

    def no_locks(fd, op):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(PipelineError, match="the file system cannot lock files .*local directory"), \
            P.lock(tmp_path):
        pass
    assert not any(p.name != LOCK for p in tmp_path.iterdir())


def _hammer(directory: str, n: int, seed: int, q) -> None:
    """Take the lock ``n`` times; inside, bump a counter file (read, then write: updates would
    be lost if two holders overlapped) and record the monotonic enter/exit times."""
    rng = random.Random(seed)
    d = Path(directory)
    spans, refused = [], 0
    done = 0
    while done < n:
        try:
            with P.lock(d):
                t0 = time.monotonic_ns()
                counter = d / "counter"
                value = int(counter.read_text()) if counter.exists() else 0
                if rng.random() < 0.3:
                    time.sleep(rng.random() * 1e-4)
                counter.write_text(str(value + 1))
                spans.append((t0, time.monotonic_ns()))
            done += 1
        except PipelineError:
            refused += 1
            time.sleep(rng.random() * 2e-4)
    q.put((spans, refused))


def _run_hammer(tmp_path: Path, procs: int, n: int):
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    workers = [ctx.Process(target=_hammer, args=(str(tmp_path), n, seed, q)) for seed in range(procs)]
    for w in workers:
        w.start()
    results = [q.get(timeout=600) for _ in workers]
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    spans = sorted(s for r, _ in results for s in r)
    assert len(spans) == procs * n
    overlaps = sum(b[0] < a[1] for a, b in itertools.pairwise(spans))
    assert overlaps == 0
    assert int((tmp_path / "counter").read_text()) == procs * n  # no update lost
    assert sum(r for _, r in results) > 0 or procs == 1  # they did contend
    return spans


def test_lock_hammered_by_four_processes_never_overlaps(tmp_path):
    _run_hammer(tmp_path, 4, 150)


@pytest.mark.slow
def test_lock_hammered_long(tmp_path):
    _run_hammer(tmp_path, 4, 5000)


def test_runs_hammering_one_directory_give_one_corpus(tmp_path):
    """Three whole runs started at once on one directory: each either finishes or is refused;
    the corpus at the end is the uninterrupted one."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "genotok", "pretokenize", "--universe", str(EX / "universe.bed"),
           "--out", str(out), str(EX / "peaks"), "--files-per-shard", "1", "--quiet"]
    procs = [subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    results = [(p.wait(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stderr.close()
    assert any(code == 0 for code, _ in results)
    for code, err in results:
        assert code == 0 or "locked by" in err, err
    tok = Tokenizer.from_bed(EX / "universe.bed")
    ref = Corpus.open(pretokenize(EX / "peaks", tok, tmp_path / "ref", progress=False,
                                  options=RunOptions(files_per_shard=1)).out)
    got = Corpus.open(pretokenize(EX / "peaks", tok, out, progress=False,
                                  options=RunOptions(files_per_shard=1)).out,
                      verify=True)
    assert got.names == ref.names and got.to_ragged() == ref.to_ragged()
