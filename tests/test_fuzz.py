"""Fuzzing with bounds-checked kernels (in a fresh interpreter): only genotok errors come out.

Parsers, readers and the single-cell kernels (arbitrary, often invalid CSR chunks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(n: int) -> str:
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", GENOTOK_NO_CACHE="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "_fuzz_driver.py"), str(n)],
                         env=env, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_fuzz_parsers_and_readers():
    out = _run(150)
    assert "fuzzed 750 inputs" in out


@pytest.mark.slow
def test_fuzz_parsers_and_readers_long():
    assert "fuzzed 10000 inputs" in _run(2000)
