"""The parallel fragment scan fuzzed in a fresh interpreter (tests/_frag_fuzz_driver.py):
files cut into a piece per thread (the thresholds lowered: ``PIECE_BYTES``, ``SYNC_BYTES``,
``bgzf.MAX_BLOCK``), BGZF with tiny, uneven, empty and damaged blocks, gzip members, plain
text; CRLF, comments, long lines, barcodes repeating across pieces, damaged lines and names.
Every result equals the oracle's (tests/naive_fragments.py) and the same on 1, 2 and 4
threads; a bad line is a BedParseError at the oracle's line naming the file; each kernel
call's buffer ends before a page that cannot be read (a read past a piece faults). Run with
bounds-checked kernels (``NUMBA_BOUNDSCHECK=1``, no cache) and with the kernels users run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(n: int, boundscheck: bool, seed: int = 0) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_BOUNDSCHECK", None)
    if boundscheck:
        env.update(NUMBA_BOUNDSCHECK="1", GENOTOK_NO_CACHE="1")
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "_frag_fuzz_driver.py"), str(n),
                          str(seed)], env=env, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-4000:]  # a crash (SIGSEGV: -11) fails here too
    return res.stdout


@pytest.mark.slow
@pytest.mark.parametrize("boundscheck", [True, False], ids=["boundscheck", "plain"])
def test_fuzz_parallel_fragment_scan(boundscheck):
    out = _run(240, boundscheck)
    assert "fuzzed 304 inputs" in out  # 240 scans, 4 files of 5 MB and 60 public calls
    assert ("bounds-checked" in out) == boundscheck
