"""The oracle of the round-4 campaigns (issue 43): every attack ends in the correct result or
in a :class:`~genotok.GenotokError` whose message names the file or the argument; never a raw
exception, never silent wrong data, never a memory blow-up, never a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from genotok import GenotokError

ROOT = Path(__file__).resolve().parents[2]


def refused(fn, *names):
    """``fn()`` raises a GenotokError naming one of ``names`` (a raw exception fails the test)."""
    with pytest.raises(GenotokError) as ei:
        fn()
    msg = str(ei.value)
    assert not names or any(str(n) in msg for n in names), f"names none of {names}: {msg}"
    return msg


def right_or_refused(fn, expected, *names):
    """``fn()`` returns ``expected`` or raises a GenotokError naming one of ``names``."""
    try:
        got = fn()
    except GenotokError as exc:
        assert not names or any(str(n) in str(exc) for n in names), \
            f"names none of {names}: {exc}"
        return "refused"
    assert got == expected, f"silently wrong: {str(got)[:300]} != {str(expected)[:300]}"
    return "right"


def in_subprocess(code: str, *, limit_gib: float = 2.0, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter under an address-space limit; its stdout. It must
    print ``OK`` or ``REFUSED`` on its last line (the helpers ``_attack`` defines)."""
    prelude = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({int(limit_gib * 2**30)}, {int(limit_gib * 2**30)}))
        from genotok import GenotokError
        def _attack(fn):
            try:
                fn()
            except GenotokError as exc:
                print("REFUSED", str(exc)[:300].replace("\\n", " "))
            else:
                print("OK")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    last = r.stdout.strip().splitlines()[-1]
    assert last.split()[0] in ("OK", "REFUSED"), r.stdout
    return last


def known_defects(request, known: dict) -> None:
    """Mark an attack that hits a defect not fixed yet as a strict xfail naming the defect
    (``known``: a regular expression over the test id -> the defect)."""
    import re

    for pattern, defect in known.items():
        if re.search(pattern, request.node.name):
            request.applymarker(pytest.mark.xfail(strict=True, reason=defect))
            return
