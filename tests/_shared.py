"""Where the tests find ``../shared`` (real data, gtars' test files, the data generator).

``../shared`` sits beside the repository in CI and on the team's machines, never in a fresh clone:
every test reading it asks :func:`shared` for the path (or carries :data:`needs_shared`), so it
skips, saying why, where the folder is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
#: gtars' own tokenizer test files (gtars ``tests/data/tokenizers/``, BSD-2-Clause), unchanged
GTARS_TESTS = SHARED / "data" / "gtars_tests" / "data" / "tokenizers"
GTARS_COMPAT = SHARED / "data" / "gtars_compat"
PBMC = SHARED / "data" / "pbmc_hg38.h5ad"
GENDATA = SHARED / "tools" / "gendata.py"

REASON = f"../shared is not beside the repository ({SHARED} is absent)"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=REASON)


def shared(path: Path) -> Path:
    """``path`` (inside ``../shared``), or skip the calling test saying ``../shared`` is absent.

    A ``../shared`` lacking ``path`` fails the test: that copy is incomplete, not absent.
    """
    if not SHARED.is_dir():
        pytest.skip(f"{REASON}: needs {path.relative_to(SHARED)}")
    if not path.exists():
        pytest.fail(f"{path} is absent from ../shared (an incomplete copy?)")
    return path
