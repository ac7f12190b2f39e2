"""Test-suite configuration shared by tests/ and the doctests in genotok/.

The README's test command installs the lean ``[test]`` extra: tests needing a package of
``[test-all]`` (torch, lightning, pyarrow, dask, s3fs…) skip without it, saying which. CI then
installs ``[test-all]`` and runs exactly the tests that skipped for a missing package:

- ``GENOTOK_RECORD_SKIPS=FILE``: write the node ids of the tests (and modules) that skipped for
  a missing package to FILE, one a line;
- ``GENOTOK_RUN_SKIPPED=FILE``: run only the tests whose node id (or module's) is in FILE.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

collect_ignore = ["genotok/__main__.py", "benchmarks"]
#: the fuzz campaigns' drivers run as scripts (their arguments are sys.argv): never imported by
#: the doctest collector
collect_ignore_glob = ["tests/_*_driver.py"]

#: modules of genotok that import an optional package when imported: their doctests are not
#: collected without it (the header of the run says so)
_NEEDS = {"genotok/torch_data.py": "torch", "genotok/lightning.py": "lightning"}
_MISSING = {path: pkg for path, pkg in _NEEDS.items() if importlib.util.find_spec(pkg) is None}
collect_ignore += list(_MISSING)

#: a skip for a missing package, as pytest.importorskip and the tests' own skips word it
_MISSING_PACKAGE = re.compile(r"could not import|No module named|not installed|pip install")


_TEMP: list = []  # (this process' temporary folder, tempfile.tempdir and TMPDIR before it)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """Every temporary file of the run goes into one folder that the run removes at its end.

    Doctests and tests call ``tempfile.mkdtemp()`` (a public example shows a path, not a
    clean-up) and children of the run (CLI calls, doc blocks) make temporary files of their own:
    they all land in the run's folder, ``TMPDIR`` telling the children (pytest-xdist's workers
    too: they use their controller's folder, which it removes once they are done; a folder of
    their own inside it would make Ray's socket paths longer than the 107 bytes a socket path
    may have). pytest's own ``tmp_path`` folders stay where pytest keeps them (its base folder is
    fixed first).
    """
    if hasattr(config, "workerinput"):
        return
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        factory.getbasetemp()  # pytest's base folder, from the system's temporary folder
    folder = tempfile.mkdtemp(prefix="gt-tests-")
    _TEMP.append((folder, tempfile.tempdir, os.environ.get("TMPDIR")))
    tempfile.tempdir = os.environ["TMPDIR"] = folder
    _warm_kernels(config)


def _warm_kernels(config) -> None:
    """Under pytest-xdist (the README's ``-n 2``), compile every kernel into the cache once,
    before the workers start.

    On an empty cache each worker, and each Python a test starts (doc blocks, CLI calls),
    compiled the kernels it needed itself, often the same ones at the same time; the run compiles
    them all anyway (``genotok.warmup``'s doctest). Here ``warmup()`` does it once, on both
    cores (its helper process); on a warm cache it loads them (a second or two). Not without
    the on-disk cache (``GENOTOK_NO_CACHE``), nor in a worker or a run without workers.
    """
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None) \
            or os.environ.get("GENOTOK_NO_CACHE", "") not in ("", "0"):
        return
    try:
        run = subprocess.run([sys.executable, "-c", "import genotok; genotok.warmup()"],
                             capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        print("genotok.warmup() before the tests took over 20 minutes: stopped", file=sys.stderr)
        return
    if run.returncode:  # the tests that compile will say what fails; the run goes on
        print(f"genotok.warmup() failed before the tests:\n{run.stderr[-2000:]}", file=sys.stderr)


def pytest_unconfigure(config):
    if not _TEMP:
        return
    folder, tempdir, env = _TEMP.pop()
    tempfile.tempdir = tempdir
    if env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = env
    shutil.rmtree(folder, ignore_errors=True)


def pytest_report_header(config):
    return [f"doctests of {path} skipped: {pkg} is not installed (pip install -e '.[test-all]')"
            for path, pkg in _MISSING.items()]


_recording = False  # in this process (with pytest-xdist, the controller's only)


def _record(nodeid: str) -> None:
    out = os.environ.get("GENOTOK_RECORD_SKIPS")
    if out and _recording:
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(nodeid + "\n")


def pytest_sessionstart(session):
    global _recording
    out = os.environ.get("GENOTOK_RECORD_SKIPS")
    if out and not hasattr(session.config, "workerinput"):
        _recording = True
        open(out, "w").close()
        for path in _MISSING:
            _record(path)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def pytest_collectreport(report):
    if report.skipped and _MISSING_PACKAGE.search(_skip_reason(report)):
        _record(report.nodeid)


def pytest_runtest_logreport(report):
    if report.skipped and report.when in ("setup", "call") and not hasattr(report, "wasxfail") \
            and _MISSING_PACKAGE.search(_skip_reason(report)):
        _record(report.nodeid)


def _missing_package(exc: BaseException) -> str | None:
    """The message of ``exc`` if it says an optional package is not installed, else None."""
    if isinstance(exc, ModuleNotFoundError) and exc.name \
            and importlib.util.find_spec(exc.name.split(".")[0]) is None:
        return str(exc)
    if isinstance(exc, ImportError) and "pip install 'genotok[" in str(exc):
        return str(exc)  # genotok's own word for an optional package missing
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A doctest of an optional feature skips, saying which package, where it is not installed."""
    report = (yield).get_result()
    inner = getattr(call.excinfo.value, "exc_info", None) if call.excinfo else None
    if report.failed and report.when == "call" and type(item).__name__ == "DoctestItem" \
            and inner is not None and (missing := _missing_package(inner[1])):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.reportinfo()[1] or 0, f"needs {missing}")


def pytest_collection_modifyitems(config, items):
    chosen = os.environ.get("GENOTOK_RUN_SKIPPED")
    if not chosen:
        return
    with open(chosen, encoding="utf-8") as fh:
        ids = {line.strip() for line in fh if line.strip()}
    modules = tuple(i + "::" for i in ids)
    keep = [it.nodeid in ids or it.nodeid.startswith(modules) for it in items]
    config.hook.pytest_deselected(items=[it for it, k in zip(items, keep) if not k])
    items[:] = [it for it, k in zip(items, keep) if k]
