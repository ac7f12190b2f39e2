"""The oracle of the round-4 campaigns (issue 43): an attack ends in the correct result, or in
a :class:`~genotok.GenotokError` whose message names the file (and line) or the argument; never
a raw exception, never silent wrong data, no memory blow-up (memory-risky attacks run in a
subprocess under ``RLIMIT_AS``), no hang (a timeout)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from genotok.errors import GenotokError

ROOT = Path(__file__).resolve().parents[2]
#: the address space of a memory-risky attack's subprocess
LIMIT_AS = 2 << 30


def refused(fn, *names, exc=GenotokError):
    """``fn()`` raises ``exc`` (a GenotokError) whose message holds every one of ``names``
    (a raw exception propagates: the attack fails)."""
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for n in names:
        assert str(n) in msg, f"the message does not name {n!r}: {msg}"
    return msg


def _names_one(msg: str, names) -> None:
    assert not names or any(str(n) in msg for n in names), f"names none of {names}: {msg}"


def refused_any(fn, *names):
    """``fn()`` raises a GenotokError naming one of ``names`` (a raw exception fails)."""
    with pytest.raises(GenotokError) as info:
        fn()
    _names_one(str(info.value), names)
    return str(info.value)


def right_or_refused(fn, expected, *names):
    """``fn()`` returns ``expected`` or raises a GenotokError naming one of ``names``."""
    try:
        got = fn()
    except GenotokError as exc:
        _names_one(str(exc), names)
        return "refused"
    assert got == expected, f"silently wrong: {str(got)[:300]} != {str(expected)[:300]}"
    return "right"


def _python(prog: str, timeout: float, limit: int) -> subprocess.CompletedProcess:
    """``prog`` in a fresh interpreter of this checkout, its address space capped at ``limit``
    (a hang fails the attack)."""
    cap = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               NUMBA_NUM_THREADS="2", OMP_NUM_THREADS="1")
    try:
        return subprocess.run([sys.executable, "-c", cap + prog], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        pytest.fail(f"hang: no answer in {timeout} s")


def isolated(code: str, *, timeout: float = 120, limit: int = LIMIT_AS) -> dict:
    """Run ``code`` in a capped subprocess; the code sets ``result`` (JSON); an exception
    leaves ``{"error": class name, "genotok": bool, "msg"}``."""
    prog = textwrap.dedent("""
        import json
        from genotok.errors import GenotokError
        result = None
        try:
        {body}
        except MemoryError:
            result = {{"error": "MemoryError", "genotok": False, "msg": ""}}
        except BaseException as exc:
            result = {{"error": type(exc).__name__, "genotok": isinstance(exc, GenotokError),
                      "msg": str(exc)[:2000]}}
        print("RESULT=" + json.dumps(result, default=str))
        """).format(body=textwrap.indent(textwrap.dedent(code), "    "))
    p = _python(prog, timeout, limit)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT=")]
    assert line, f"the subprocess died (rc {p.returncode}): {p.stderr[-2000:]}"
    return json.loads(line[-1][len("RESULT="):])


def isolated_refused(code: str, *names, **kw) -> dict:
    r = isolated(code, **kw)
    assert isinstance(r, dict) and r.get("error"), f"accepted: {r}"
    assert r["genotok"], f"raw {r['error']}: {r['msg']}"
    for n in names:
        assert str(n) in r["msg"], f"the message does not name {n!r}: {r['msg']}"
    return r


def in_subprocess(code: str, *, limit_gib: float = 2.0, timeout: float = 120) -> str:
    """Run ``code`` in a capped subprocess; its last line of output, which must be ``OK`` or
    ``REFUSED …`` (what the ``_attack(fn)`` helper defined for it prints)."""
    prelude = textwrap.dedent("""
        from genotok import GenotokError
        def _attack(fn):
            try:
                fn()
            except GenotokError as exc:
                print("REFUSED", str(exc)[:300].replace("\\n", " "))
            else:
                print("OK")
    """)
    r = _python(prelude + textwrap.dedent(code), timeout, int(limit_gib * 2**30))
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    last = r.stdout.strip().splitlines()[-1]
    assert last.split()[0] in ("OK", "REFUSED"), r.stdout
    return last


def cli(*args, timeout: float = 180, cwd=None, env=None):
    """``python -m genotok ARGS`` (this checkout): (returncode, stdout, stderr)."""
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    e.update(env or {})
    try:
        p = subprocess.run([sys.executable, "-m", "genotok", *map(str, args)], capture_output=True,
                           text=True, timeout=timeout, cwd=cwd, env=e)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hang: genotok {' '.join(map(str, args))}")
    return p.returncode, p.stdout, p.stderr


def cli_refused(*args, names=(), **kw) -> str:
    """The CLI exits 2 (a clear error), not 1 with "an unexpected error", naming ``names``."""
    rc, out, err = cli(*args, **kw)
    assert rc != 0, f"accepted: {out[-500:]}"
    assert "unexpected error" not in err and "Traceback" not in err, err[-3000:]
    for n in names:
        assert str(n) in err, f"the message does not name {n!r}: {err[-2000:]}"
    return err


def known_defects(request, known: dict) -> None:
    """Mark an attack that hits a defect not fixed yet as a strict xfail naming the defect
    (``known``: a regular expression over the test id -> the defect)."""
    for pattern, defect in known.items():
        if re.search(pattern, request.node.name):
            request.applymarker(pytest.mark.xfail(strict=True, reason=defect))
            return
