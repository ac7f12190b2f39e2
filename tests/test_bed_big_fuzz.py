"""The BED read paths at sizes the byte fuzz (tests/test_bed_fuzz.py, inputs of at most 200
bytes) never reaches, against the oracles (tests/naive_regions.py, tests/naive_tokenizer.py):
files of thousands to hundreds of thousands of bytes, plain, gzip, gzip members and BGZF, read
in blocks of a few KiB parsed in chunks on four numba threads, through pipes, as universes, by
the small-input path and by ``pretokenize``; text ending or starting at a guard page (the word
and vector loads are intrinsics: NUMBA_BOUNDSCHECK does not see them); damaged files and damaged
gzip streams. What it covers: tests/_bed_big_fuzz_driver.py.

Run twice in a fresh interpreter, with bounds-checked kernels (``NUMBA_BOUNDSCHECK=1``, no
cache) and with the kernels users run; a crash (SIGSEGV) fails the run. Slow: ``pytest -m slow``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(n: int, boundscheck: bool, seed: int) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NUMBA_NUM_THREADS="4")  # chunks on four threads, whatever the machine
    env.pop("NUMBA_BOUNDSCHECK", None)
    if boundscheck:
        env.update(NUMBA_BOUNDSCHECK="1", GENOTOK_NO_CACHE="1")
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "_bed_big_fuzz_driver.py"),
                          str(n), str(seed)], env=env, capture_output=True, text=True,
                         timeout=1800)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-4000:])
    return res.stdout


@pytest.mark.slow
@pytest.mark.parametrize("boundscheck", [True, False], ids=["boundscheck", "plain"])
def test_fuzz_big_bed_files(boundscheck):
    out = _run(200, boundscheck, seed=20 + boundscheck)
    assert "fuzzed 200 big and 200 small files" in out
    assert ("bounds-checked" in out) == boundscheck
