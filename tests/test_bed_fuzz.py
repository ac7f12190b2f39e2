"""Fuzzing in a fresh interpreter: only genotok errors come out, and the BED parser agrees with
its oracle. Each campaign runs twice: with bounds-checked kernels (``NUMBA_BOUNDSCHECK=1``, no
cache: a wild index raises) and with the kernels users run (a wild index crashes the driver or
shows as a wrong result). A fast sample in the default run; the full campaign under ``slow``.

Parsers, readers and the single-cell kernels (arbitrary, often invalid CSR chunks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = 7  # fuzz_* functions the driver runs, N inputs each


def _run(n: int, boundscheck: bool, seed: int = 0) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_BOUNDSCHECK", None)
    if boundscheck:
        env.update(NUMBA_BOUNDSCHECK="1", GENOTOK_NO_CACHE="1")
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "_bed_fuzz_driver.py"), str(n), str(seed)],
                         env=env, capture_output=True, text=True, timeout=3000)
    assert res.returncode == 0, res.stderr[-3000:]  # a crash (SIGSEGV: -11) fails here too
    return res.stdout


# the bounds-checked run compiles every kernel again in its subprocess (about a minute): a
# campaign for the slow step (`pytest -m slow`, run by .ci/run), beside its long version
@pytest.mark.parametrize("boundscheck", [pytest.param(True, marks=pytest.mark.slow), False],
                         ids=["boundscheck", "plain"])
def test_fuzz_parsers_and_readers(boundscheck):
    out = _run(100, boundscheck)
    assert f"fuzzed {100 * CAMPAIGNS} inputs" in out
    assert ("bounds-checked" in out) == boundscheck


@pytest.mark.slow
@pytest.mark.parametrize("boundscheck", [True, False], ids=["boundscheck", "plain"])
def test_fuzz_parsers_and_readers_long(boundscheck):
    assert f"fuzzed {2000 * CAMPAIGNS} inputs" in _run(2000, boundscheck, seed=1)
