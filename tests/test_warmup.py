"""genotok._warmup and _config's kernel cache: a compile notice once per group when the cache is
cold, kernels cached per user (never beside the package), and after warmup() the README
compiles nothing (issue 20, issue 36)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- compile notice
def _run(code: str, cache: Path, root: Path = ROOT, **extra: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter whose per-user cache folder is ``cache``
    (``$XDG_CACHE_HOME``: genotok's kernels go to ``cache/genotok/numba``), importing the
    genotok of ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root), XDG_CACHE_HOME=str(cache), **extra)
    for name in ("GENOTOK_QUIET_COMPILE", "GENOTOK_NO_CACHE", "NUMBA_CACHE_DIR",
                 "GENOTOK_KERNEL_CACHE"):
        if name not in extra:
            env.pop(name, None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300, cwd=root)  # (-c puts the working folder first)


_GATHER = ("import numpy as np\n"
           "from genotok.kernels import gather\n"
           "for dt in (np.int64, np.uint16):\n"
           "    out = np.zeros(2, dt)\n"
           "    gather.gather(np.arange(2, dtype=dt), np.array([0, 1, 2]), np.array([1, 0]),\n"
           "                  np.array([0, 1, 2]), out)\n"
           "print(out.tolist())")


def test_compile_notice_once_per_group_when_the_cache_is_cold(tmp_path):
    # two compilations (one kernel, two signatures) in a process with an empty cache: one line
    cold = _run(_GATHER, tmp_path / "cache")
    assert cold.returncode == 0 and cold.stdout.strip() == "[1, 0]", cold.stderr[-2000:]
    assert cold.stderr.count("genotok: compiling gather kernels (") == 1, cold.stderr[-2000:]
    assert "first use only)…" in cold.stderr
    warm = _run(_GATHER, tmp_path / "cache")  # the cache now holds both: silent
    assert warm.returncode == 0 and "compiling" not in warm.stderr, warm.stderr[-2000:]


def test_compile_notice_for_every_group_that_compiles(tmp_path):
    """Once per process hid the later groups: the tutorial's tokenize_anndata cell compiled for
    29 s in silence after an earlier cell had shown the one line."""
    code = _GATHER + ("\nfrom genotok.kernels import sweep\n"
                      "print(sweep._is_sorted(np.array([0, 0]), np.array([1, 2]), "
                      "np.array([3, 4])))")
    cold = _run(code, tmp_path / "cache")
    assert cold.returncode == 0, cold.stderr[-2000:]
    lines = [ln for ln in cold.stderr.splitlines() if ln.startswith("genotok: compiling")]
    assert [ln.split()[2] for ln in lines] == ["gather", "sweep"], cold.stderr[-2000:]


def test_compile_notice_gives_an_estimate_for_known_groups():
    from genotok import _config

    assert _config.compile_notice("overlap").startswith("genotok: compiling overlap kernels (~")
    assert all(v > 0 for v in _config.COMPILE_SECONDS.values())


def test_kernels_are_cached_per_user_never_beside_the_package(tmp_path):
    """numba's default cache is the package's __pycache__: a read-only install could not cache,
    and after ``pip uninstall`` the files left a site-packages/genotok/ folder that shadowed a
    later editable install (issue 36)."""
    pkg = ROOT / "genotok"
    before = {p: p.stat().st_mtime_ns for p in pkg.rglob("*.nbi")}
    cold = _run(_GATHER, tmp_path / "xdg")
    assert cold.returncode == 0, cold.stderr[-2000:]
    cached = list((tmp_path / "xdg" / "genotok" / "numba").rglob("gather.gather-*.nbi"))
    assert len(cached) == 1, cold.stderr[-2000:]
    assert {p: p.stat().st_mtime_ns for p in pkg.rglob("*.nbi")} == before
    # GENOTOK_KERNEL_CACHE overrides the folder
    own = _run(_GATHER, tmp_path / "xdg2", GENOTOK_KERNEL_CACHE=str(tmp_path / "mine"))
    assert own.returncode == 0, own.stderr[-2000:]
    assert list((tmp_path / "mine").rglob("gather.gather-*.nbi"))
    assert not (tmp_path / "xdg2" / "genotok").exists()


def test_an_edit_to_a_module_a_kernel_imports_recompiles_it(tmp_path):
    """numba stamps a cached kernel with its own file's modification time and size: a helper
    it inlined from another file (``bits.py`` into ``fragscan.py``) could change alone and the
    old machine code stayed in use, silently. The stamp is now the content of the file and of
    every genotok module it imports; an edit elsewhere keeps the cache."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(ROOT / "genotok", copy / "genotok",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    runs = []
    for edit in (None, None, "ragged.py", "_config.py"):  # gather.py imports _config only
        if edit:
            with open(copy / "genotok" / edit, "a") as fh:
                fh.write("\n# an edit\n")
        done = _run(_GATHER, tmp_path / "cache", root=copy)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append("compiling" in done.stderr)
    assert runs == [True, False, False, True]


def test_other_libraries_keep_numba_s_cache_location(tmp_path):
    """The locator serves genotok's kernels only: a user's own cached function is cached where
    numba puts it (beside its source)."""
    mod = tmp_path / "src" / "mine.py"
    mod.parent.mkdir()
    mod.write_text("from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    code = f"import sys; sys.path.insert(0, {str(mod.parent)!r}); import genotok, mine; " \
           "print(mine.f(1))"
    res = _run(code, tmp_path / "xdg")
    assert res.returncode == 0 and res.stdout.strip() == "2", res.stderr[-2000:]
    assert list((mod.parent / "__pycache__").glob("mine.f-*.nbi"))
    assert not list((tmp_path / "xdg").rglob("mine.f-*"))


def test_an_unwritable_cache_folder_compiles_in_memory(tmp_path):
    blocker = tmp_path / "a-file"  # a folder cannot be made under a file, even by root
    blocker.write_text("")
    res = _run(_GATHER, tmp_path / "xdg", GENOTOK_KERNEL_CACHE=str(blocker / "cache"))
    assert res.returncode == 0 and res.stdout.strip() == "[1, 0]", res.stderr[-2000:]
    assert "is not writable: every new process compiles" in res.stderr


_COUNT_COMPILES = ("from numba.core import event as _ev\n"
                   "n = []\n"
                   "class _L(_ev.Listener):\n"
                   "    def on_start(self, ev):\n"
                   "        f = getattr((ev.data or {}).get('dispatcher'), 'py_func', None)\n"
                   "        if f is not None and f.__module__.startswith('genotok'):\n"
                   "            n.append(f.__module__ + '.' + f.__qualname__)\n"
                   "    def on_end(self, ev):\n"
                   "        pass\n"
                   "_ev.register('numba:compile', _L())\n")


@pytest.mark.slow
def test_after_warmup_the_readme_compiles_nothing(tmp_path):
    """warmup() missed kernels the README's tok.encode(file) then compiled (issue 36): after it,
    the README's Quick start and single-cell blocks compile nothing (minutes of CPU: slow)."""
    import re

    for needed in ("anndata", "h5py", "torch"):  # what the README's single-cell block imports
        pytest.importorskip(needed)
    warm = _run("import genotok; genotok.warmup()", tmp_path / "cache")
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert "genotok: warmup compiled" in warm.stderr and "warmup 1/" in warm.stderr
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    quick, cells = blocks[0], next(b for b in blocks if "tokenize_anndata" in b)
    cells = cells.replace('out="pbmc.gtokc"', f'out={str(tmp_path / "pbmc.gtokc")!r}')
    code = _COUNT_COMPILES + quick + cells + "\nprint('compiled:', n)"
    res = _run(code, tmp_path / "cache")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "compiled: []" in res.stdout, res.stdout + res.stderr[-2000:]


# --------------------------------------------------------------------------- lazy names
def test_import_genotok_loads_no_kernel_and_every_name_resolves():
    """``import genotok`` imports neither numba nor a room (first_call: issue 44); each public
    name imports its module when first asked for, and ``dir`` lists them all."""
    code = ("import sys, genotok\n"
            "print(sorted(m for m in ('numba', 'scipy', 'genotok.tokenizer', 'genotok.singlecell')"
            " if m in sys.modules))\n"
            "missing = [n for n in genotok.__all__ if getattr(genotok, n, None) is None]\n"
            "print(missing, set(genotok.__all__) <= set(dir(genotok)))\n"
            "print(genotok.Tokenizer.__module__, genotok.presets.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == ["[]", "[] True", "genotok.tokenizer genotok.presets"]
    import genotok

    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        genotok.nonesuch  # noqa: B018


# --------------------------------------------------------------------------- parallel warmup
def test_the_steps_of_a_parallel_warmup_are_every_step(monkeypatch, tmp_path):
    """The warmup's steps are every room's own warmup and each README call, and the two
    processes share them out with each step run in exactly one of them: this process from the
    front, the helper from the back; no helper where it would not pay."""
    from genotok import _warmup

    units = [f.__name__ for f in _warmup.UNITS]
    assert sorted(units) == sorted([f"_room_{n.rsplit('.', 1)[-1]}" for n in _warmup._ROOMS]
                                   + ["_quick_start", "_corpus", "_fragments"]
                                   + [f"_anndata_{k}" for k in range(4)])
    ran = []
    monkeypatch.setattr(_warmup, "UNITS", tuple(
        (lambda i=i: ran.append(("front" if len(ran) < 3 else "back", i))) for i in range(7)))
    _warmup._take(str(tmp_path), range(3))  # this process stops after three (a stand-in)
    _warmup._take(str(tmp_path), reversed(range(7)))  # the helper takes the rest, then stops
    assert sorted(i for _, i in ran) == list(range(7))
    assert [i for side, i in ran if side == "back"] == [6, 5, 4, 3]
    monkeypatch.setenv("GENOTOK_WARMUP_SERIAL", "1")
    assert not _warmup._helped()  # one process on request
    monkeypatch.delenv("GENOTOK_WARMUP_SERIAL")
    monkeypatch.setattr(_warmup, "_cores", lambda: 1)
    assert not _warmup._helped()  # one core: no helper
    monkeypatch.setattr(_warmup, "_cores", lambda: 2)
    from genotok import _config

    monkeypatch.setattr(_config, "_CACHE", False)
    assert not _warmup._helped()  # no cache: its kernels would be lost


def test_two_processes_saving_one_kernel_keep_its_signatures_apart(tmp_path, monkeypatch):
    # numba's cache index read by two saves at once (two workers compiling two signatures of
    # one kernel on an empty cache): unlocked, both took data file 1 and the index could name
    # one signature's machine code for the other (garbage read back); under genotok's lock
    # the second save re-reads the index and takes a free number
    import threading
    import time

    from numba.core import caching

    from genotok import _config

    monkeypatch.setattr(_config, "_CACHE_DIR", str(tmp_path))
    read = caching.IndexDataCacheFile._load_index

    def slow_read(self):
        index = read(self)
        time.sleep(0.3)  # the other save reads the same index meanwhile
        return index

    monkeypatch.setattr(caching.IndexDataCacheFile, "_load_index", slow_read)
    files = [caching.IndexDataCacheFile(str(tmp_path), "values.kernel-1.py311", ("stamp", 1))
             for _ in range(2)]
    saves = [threading.Thread(target=f.save, args=(key, data))
             for f, key, data in zip(files, ["int32", "int64"], [b"code32", b"code64"])]
    for t in saves:
        t.start()
    for t in saves:
        t.join()
    monkeypatch.setattr(caching.IndexDataCacheFile, "_load_index", read)
    assert files[0].load("int32") == b"code32" and files[0].load("int64") == b"code64"
