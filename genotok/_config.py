"""The one place that holds numba options, the kernel cache and thread control.

Kernels use ``@njit(**NJIT)`` (or ``NJIT_PARALLEL`` for ``prange`` kernels).

numba's on-disk cache of genotok's kernels lives in a per-user directory, never beside the
package files (where it would need a writable install and, after ``pip uninstall``, leave a
``genotok/`` folder in site-packages that shadows a later editable install):
``$GENOTOK_KERNEL_CACHE`` if set, else ``$NUMBA_CACHE_DIR`` if set (numba's own setting), else
``$XDG_CACHE_HOME/genotok/numba`` (``~/.cache/genotok/numba``). Other libraries' numba caches
are left where numba puts them. Entries are keyed by the source file's folder (two checkouts
never share them), its content and that of every genotok module it imports (an edit to a
helper another file inlines recompiles that file's kernels too), the numba and Python
versions. Set
``GENOTOK_NO_CACHE=1`` to turn the cache off (every process compiles in memory).

When a group of kernels is compiled rather than loaded from that cache (the first use on a
machine, or after an upgrade), one line on stderr names the group and the time it takes, so
that the seconds it takes are not mistaken for a hang; ``GENOTOK_QUIET_COMPILE=1`` silences it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sys
import tempfile
import types
from collections.abc import Iterator

import numba
import numpy as np
from numba.core import caching as _caching
from numba.core import event as _event

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def kernel_cache_dir() -> str | None:
    """The directory numba caches genotok's kernels in (``None``: numba's own
    ``NUMBA_CACHE_DIR`` is set and used as it is)."""
    env = os.environ.get("GENOTOK_KERNEL_CACHE", "")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    if numba.config.CACHE_DIR:
        return None
    base = os.environ.get("XDG_CACHE_HOME", "") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "genotok", "numba")


def _usable(path: str) -> bool:
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


_CACHE_DIR = kernel_cache_dir()
_CACHE = os.environ.get("GENOTOK_NO_CACHE", "") in ("", "0")
#: why the cache is off ("" when it is on)
_NO_CACHE_WHY = "" if _CACHE else "GENOTOK_NO_CACHE is set"
if _CACHE and _CACHE_DIR is not None and not _usable(_CACHE_DIR):
    _CACHE, _NO_CACHE_WHY = False, f"the kernel cache {_CACHE_DIR} is not writable"


class _KernelCacheLocator(_caching._SourceFileBackedLocatorMixin, _caching._CacheLocator):
    """numba cache locator for genotok's own kernels: the per-user directory above, one
    sub-folder per source folder (numba's naming: folder name + hash of its path)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(_CACHE_DIR, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        """The kernel file's content and that of every genotok module it imports, where numba
        stamps the file's own modification time and size: a helper that numba inlined from
        another file (``kernels/bits.py`` into ``fragscan.py``) changing alone left the
        cached machine code of its callers in use, silently, after an edit or a
        ``git pull``."""
        return source_digest(self._py_file)

    @classmethod
    def from_function(cls, py_func, py_file):
        if _CACHE_DIR is None or not os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep):
            return None  # not one of genotok's kernels, or NUMBA_CACHE_DIR rules
        return super().from_function(py_func, py_file)


_RELATIVE_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)",
                              re.M)


def _imported_files(path: str) -> list[str]:
    """The package's modules that ``path`` imports relatively (``from .x import``,
    ``from .. import x``), as file paths."""
    with open(path, "rb") as fh:
        text = fh.read()
    found = []
    for dots, module, names in _RELATIVE_IMPORT.findall(text):
        base = os.path.dirname(path)
        for _ in range(len(dots) - 1):
            base = os.path.dirname(base)
        parts = [p for p in module.decode().split(".") if p]
        listed = names.decode().strip("()").replace("\\", "").split(",")
        candidates = [parts] if parts else [[n.split()[0]] for n in listed if n.strip()]
        for c in candidates:
            stem = os.path.join(base, *c)
            for f in (stem + ".py", os.path.join(stem, "__init__.py")):
                if os.path.isfile(f):
                    found.append(f)
                    break
    return found


@functools.cache
def source_digest(path: str) -> str:
    """A digest of ``path``'s bytes and of every module of the package it imports, directly or
    not (numba's cache stamp of a genotok kernel file).

    Examples
    --------
    >>> len(source_digest(__file__)) == 32 and source_digest(__file__) == source_digest(__file__)
    True
    """
    seen, todo, h = set(), [os.path.abspath(path)], hashlib.blake2b(digest_size=16)
    while todo:
        f = todo.pop()
        if f in seen or not f.startswith(_PACKAGE_DIR + os.sep):
            continue
        seen.add(f)
        todo.extend(_imported_files(f))
    for f in sorted(seen):
        with open(f, "rb") as fh:
            h.update(os.path.relpath(f, _PACKAGE_DIR).encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()


# numba asks each class of this list in turn (its own come first: NUMBA_CACHE_DIR, then the
# package's __pycache__); the class is public as CacheImpl since numba 0.61
_IMPL = getattr(_caching, "CacheImpl", None) or _caching._CacheImpl
if _KernelCacheLocator not in _IMPL._locator_classes:
    _IMPL._locator_classes.insert(0, _KernelCacheLocator)


def _locked(save):
    """numba's ``IndexDataCacheFile.save`` under a lock on the kernel's index file, in the
    kernel cache: unlocked, two processes compiling two signatures of one kernel at once both
    read the index, both take data file 1, and the index can end up naming one signature's
    machine code for the other (a kernel then reads int32 indices as float64 values: garbage,
    seen with two pytest workers on an empty cache). Under the lock each save re-reads the
    index and takes a free number."""
    @functools.wraps(save)
    def locked_save(self, key, data):
        if _CACHE_DIR is None or not self._cache_path.startswith(_CACHE_DIR):
            return save(self, key, data)  # not genotok's cache: numba's own behaviour
        import filelock

        with filelock.FileLock(self._index_path + ".lock"):
            return save(self, key, data)

    locked_save.genotok_locked = True
    return locked_save


if not getattr(_caching.IndexDataCacheFile.save, "genotok_locked", False):
    _caching.IndexDataCacheFile.save = _locked(_caching.IndexDataCacheFile.save)

#: options for serial kernels
NJIT = dict(cache=_CACHE, nogil=True)
#: options for kernels with a ``prange`` outer loop
NJIT_PARALLEL = dict(cache=_CACHE, nogil=True, parallel=True)


def serial_twin(kernel):
    """A ``prange`` kernel compiled without ``parallel`` (``prange`` is then ``range``): for
    inputs of one chunk, where a parallel region only wakes numba's worker threads, which a
    busy box makes cost up to milliseconds (benchmarks/RESULTS.md, "Design measurements").
    The same bytecode under its own name, so that numba's cache keeps the two apart (its files
    are named by qualname)."""
    f = kernel.py_func
    twin = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__,
                              f.__closure__)
    twin.__qualname__, twin.__doc__ = twin.__name__, f.__doc__
    return numba.njit(**NJIT)(twin)


#: compile time of each group of kernels as the README's calls compile it (CPU seconds of
#: ``benchmarks/bench_first_use.py`` on a 2-core x86_64 box, numba 0.68; the wall time of an
#: idle machine), shown in the notice; a group not listed shows none
COMPILE_SECONDS = {"parse": 12, "cells": 18, "fragscan": 17, "values": 16, "histogram": 10,
                   "monotone": 10, "overlap": 3, "names": 3, "setorder": 6, "sort": 1,
                   "fragments": 4, "sweep": 1, "lines": 1, "build": 2, "gather": 1}


def compile_notice(group: str) -> str:
    """The line printed when numba starts compiling the kernels of ``group``."""
    est = COMPILE_SECONDS.get(group)
    when = "first use only" if _CACHE else f"{_NO_CACHE_WHY}: every new process compiles"
    step = f"; {NOTICE.context}" if NOTICE.context else ""
    return f"genotok: compiling {group} kernels ({f'~{est:g} s, ' if est else ''}{when}{step})…"


def cache_note() -> str:
    """Where compiled kernels go: ``"cached in FOLDER"``, or why they are not cached."""
    if not _CACHE:
        return "not cached: " + _NO_CACHE_WHY
    return f"cached in {_CACHE_DIR or 'NUMBA_CACHE_DIR'}"


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython loaded, running an ``IPKernelApp``).

    >>> in_notebook()
    False
    """
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def notices_on() -> bool:
    """False when ``GENOTOK_QUIET_COMPILE`` silences the compile notices."""
    return os.environ.get("GENOTOK_QUIET_COMPILE", "") in ("", "0")


def _group(disp) -> str:
    """The group a kernel belongs to: its module's name (``overlap``, ``singlecell.cells``)."""
    module = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
    if not module.startswith("genotok."):
        return ""
    name = module[len("genotok."):]
    return name[len("kernels."):] if name.startswith("kernels.") else name


class _CompileNotice(_event.Listener):
    """Prints :func:`compile_notice` when numba starts compiling one of genotok's kernels, once
    per group and process, for top-level compilations only (a kernel's callees compile
    inside it).

    numba raises its ``numba:compile`` event only for a real compilation, not for a load from
    the on-disk cache, so a warm cache stays silent.
    """

    def __init__(self) -> None:
        self.shown: set[str] = set()
        self.depth = 0
        #: top-level compilations of genotok's kernels so far, and their groups
        self.compiled = 0
        self.groups: set[str] = set()
        #: said after the estimate (``warmup 5/16``), "" for none
        self.context = ""

    def on_start(self, ev) -> None:
        self.depth += 1
        if self.depth > 1:
            return
        group = _group((ev.data or {}).get("dispatcher"))
        if not group:
            return
        self.compiled += 1
        self.groups.add(group)
        if group in self.shown:
            return
        first = not self.shown
        self.shown.add(group)
        if not notices_on() or sys.stderr is None:
            return
        notebook = in_notebook()
        if notebook and not first:
            return  # a notebook gets one tidy line, not one per group in every cell
        try:
            if notebook:
                print("genotok: compiling kernels on first use (seconds; cached for later "
                      "sessions)…", file=sys.stdout, flush=True)
            else:
                print(compile_notice(group), file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a closed or broken stream
            pass

    def on_end(self, ev) -> None:
        self.depth = max(0, self.depth - 1)


NOTICE = _CompileNotice()
_event.register("numba:compile", NOTICE)


def max_threads() -> int:
    """The number of threads numba was started with (``NUMBA_NUM_THREADS``)."""
    return int(numba.config.NUMBA_NUM_THREADS)


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[int]:
    """Run the body with ``n`` numba threads, restoring the previous count afterwards.

    ``None`` keeps the current setting. ``n`` larger than numba's pool is clipped
    (numba cannot grow its pool after start-up); ``n < 1`` is an error.
    """
    from .params import N_THREADS, check

    if check("n_threads", n, N_THREADS) is None:
        yield numba.get_num_threads()
        return
    n = int(n)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(n, max_threads()))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(previous)


_READY: set = set()


def kernel_ready(disp) -> bool:
    """Whether the numba kernel ``disp`` runs without compiling: compiled or loaded in this
    process, or in the on-disk cache (its index file is there). False on a new install's first
    calls, when the tiny-input paths (:mod:`genotok._small`) serve small inputs in plain Python
    instead of compiling for seconds. Once true, it is remembered (no more ``stat``)."""
    if disp in _READY:
        return True
    ok = bool(disp.signatures)
    if not ok and _CACHE:
        index = getattr(getattr(getattr(disp, "_cache", None), "_cache_file", None),
                        "_index_path", None)
        ok = index is not None and os.path.exists(index)
    if ok:
        _READY.add(disp)
    return ok


def valid_threads(n) -> bool:
    """Whether ``n`` is a thread count :func:`threads` takes as it is (``None`` or an integer
    >= 1): the tiny-input paths, which run no kernel, skip the check only then."""
    return n is None or (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1)


def group_ready(group: str) -> bool:
    """Whether the kernels of ``group`` (a module of ``genotok.kernels``: ``"overlap"``) run
    without compiling, as far as a cheap look tells: one of them compiled in this process, or
    an index file of the group in the kernel cache. Remembered once true."""
    if group in _READY:
        return True
    ok = group in NOTICE.groups
    if not ok and _CACHE and _CACHE_DIR is not None:
        src = os.path.join(_PACKAGE_DIR, "kernels", group + ".py")
        folder = os.path.join(_CACHE_DIR, _KernelCacheLocator.get_suitable_cache_subpath(src))
        try:
            ok = any(n.startswith(group + ".") and n.endswith(".nbi") for n in os.listdir(folder))
        except OSError:  # no cache folder yet
            ok = False
    if ok:
        _READY.add(group)
    return ok
