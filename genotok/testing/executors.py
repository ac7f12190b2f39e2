"""``check_executor``: the conformance suite of the executor seam (:mod:`genotok.pipeline.job`).

Every executor, built in or plugged in, must give a run the records the serial executor gives,
keep the journal's exactly-once rule when a worker dies mid-batch, and leave a directory that
resumes when the driver itself is killed. :func:`check_executor` runs the three on small inputs
(a few BED files, one shard each, one of them corrupt and skipped) and raises ``AssertionError``
naming the rule broken.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import ClassVar
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..formats.corpus import Corpus
from ..formats.stores import CorpusStore
from ..params import InstanceOf, Integral, Real
from ..pipeline import Executor, RunOptions, pretokenize
from ..tokenizer import Tokenizer

__all__ = ["check_executor"]


@dataclass
class _Probe(CorpusStore):
    """The corpus store (the same plan: its config is the corpus store's), with two probes run
    where a part is written, on the worker: ``kill_once``, a file whose creation (once) comes
    with a SIGKILL of the worker writing (never of ``driver``, the process that runs the
    check); ``delay``, seconds to wait before each part (a run slow enough to be killed)."""

    CONSTRAINTS: ClassVar[dict] = {"kill_once": [InstanceOf(str)], "driver": [Integral],
                                   "delay": [Real]}

    kill_once: str = field(default="", repr=False, compare=False)
    driver: int = field(default=0, repr=False, compare=False)
    delay: float = field(default=0.0, repr=False, compare=False)

    def config(self) -> dict:
        return CorpusStore().config()  # the probes are not part of the run's plan

    def write(self, batch, meta) -> None:
        if self.delay:
            time.sleep(self.delay)
        if self.kill_once and os.getpid() != self.driver:
            try:
                fd = os.open(self.kill_once, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)  # mid-part: its staging file stays
        super().write(batch, meta)


def _inputs(folder: Path, n: int) -> list[Path]:
    """``n`` small BED files cut from the bundled peaks (and one corrupt gzip)."""
    from .._examples import examples_dir

    lines = [ln for p in sorted((examples_dir() / "peaks").iterdir())
             for ln in _text(p).splitlines() if ln and not ln.startswith(("#", "track"))]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = folder / f"f{i:02d}.bed"
        p.write_text("\n".join(lines[i * 37:(i * 37) + 60 + 13 * i]) + "\n")
        paths.append(p)
    bad = folder / "zz.bed.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\0" * 20)
    return [*paths, bad]


def _text(p: Path) -> str:
    import gzip

    raw = p.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def _records(out) -> tuple:
    c = Corpus.open(out)
    assert c.verify() == [], f"{out}: the corpus does not verify: {c.verify()}"
    return c.names, c.to_ragged().to_list()


def _run(inputs, tok, out, executor, store=None) -> object:
    return pretokenize(inputs, tok, out, format=store or "corpus", progress=False,
                       on_error="skip", options=RunOptions(files_per_shard=1, hash="sha256",
                                                           executor=executor))


def check_executor(executor: Executor | type[Executor], *, driver_options: dict | None = None,
                   n_files: int = 6, kill_driver: bool = True) -> dict:
    """Check ``executor`` (an instance, or a class made with no arguments) against the rules
    of the executor seam; ``AssertionError`` if one fails (a class missing :meth:`Executor.run`
    fails at once).

    1. the same records, names, order and skipped inputs as the serial executor;
    2. a worker killed mid-batch (a SIGKILL while it writes its part): the run still ends with
       every batch recorded exactly once, and the same records (an executor that runs batches
       in the driver's own process has no worker to kill: the run is checked as in 1);
    3. the driver killed mid-run (a SIGKILL of a process running ``pretokenize`` with
       ``type(executor)(**(driver_options or executor.options()))``): a resumed run with
       ``executor`` completes it, equal to the serial run (skipped with ``kill_driver=False``).

    Returns what was exercised: ``{"worker_killed": bool, "driver_killed": bool}``.

    Examples
    --------
    >>> from genotok.pipeline import SerialExecutor
    >>> check_executor(SerialExecutor(), n_files=3, kill_driver=False)
    {'worker_killed': False, 'driver_killed': False}
    """
    from .._examples import examples_dir

    if isinstance(executor, type):
        if inspect.isabstract(executor):
            raise AssertionError(f"check_executor({executor.__name__}): implements every "
                                 "abstract method of Executor: "
                                 f"{', '.join(sorted(executor.__abstractmethods__))} missing")
        executor = executor()
    tok = Tokenizer.from_bed(examples_dir() / "universe.bed")
    with tempfile.TemporaryDirectory(prefix="genotok-check-executor-") as tmp:
        tmp = Path(tmp)
        inputs = _inputs(tmp / "in", n_files)
        ref = _run(inputs, tok, tmp / "serial", None)
        want = _records(ref.out)

        got = _run(inputs, tok, tmp / "same", executor)
        assert _records(got.out) == want, f"{executor!r}: not the serial run's records"
        assert got.failed == ref.failed, f"{executor!r}: not the serial run's skipped inputs"

        marker = tmp / "killed"
        probe = _Probe(kill_once=str(marker), driver=os.getpid())
        got = _run(inputs, tok, tmp / "worker", executor, probe)
        journal = json.loads((got.out / "journal.json").read_text())
        assert sorted(map(int, journal["done"])) == list(range(len(inputs))), \
            f"{executor!r}: a batch lost after a worker was killed"
        assert _records(got.out) == want, \
            f"{executor!r}: a killed worker's batch duplicated or lost records"

        if kill_driver:
            _check_driver_killed(executor, driver_options, inputs, tok, tmp, want)
        return {"worker_killed": marker.exists(), "driver_killed": kill_driver}


def _check_driver_killed(executor, driver_options, inputs, tok, tmp: Path, want) -> None:
    out = tmp / "driver"
    spec = tmp / "driver.pickle"
    spec.write_bytes(pickle.dumps((type(executor), driver_options or executor.options(),
                                   [str(p) for p in inputs], tok, str(out))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                         *filter(None, [env.get("PYTHONPATH")])])
    code = ("import pickle, sys; from genotok.testing.executors import _driver; "
            "_driver(sys.argv[1])")
    proc = subprocess.Popen([sys.executable, "-c", code, str(spec)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                if json.loads((out / "journal.json").read_text())["done"]:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, ("the driver ended before it could be killed: "
                                     f"{proc.stderr.read().decode()[-2000:]}")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert not (out / "manifest.json").exists(), "killed before its end, yet a manifest"
    got = _run(inputs, tok, out, executor)
    assert _records(got.out) == want, f"{executor!r}: a run resumed after the driver was " \
        "killed lost or doubled records"
    shutil.rmtree(out, ignore_errors=True)


def _driver(spec: str) -> None:
    """The killed driver's process: the run, slowed by a delay per part."""
    cls, options, inputs, tok, out = pickle.loads(Path(spec).read_bytes())
    executor = cls(**options)
    try:
        _run([Path(p) for p in inputs], tok, out, executor, _Probe(delay=1.0))
    finally:
        executor.close()
