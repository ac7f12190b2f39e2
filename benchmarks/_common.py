"""Shared helpers for the benchmark scripts: data generation, timing, memory, tables.

Benchmarks print ratios against anchors measured in the same run; data is generated with
``../shared/tools/gendata.py`` into ``benchmarks/_data/`` (git-ignored), or the folder a
script's ``--data`` (:func:`data_option`) or ``GENOTOK_BENCH_DATA`` names, and reused across runs.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

from _mem import peak_rss_mib, rss_mib  # noqa: F401 (the benchmarks import them from here)

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("GENOTOK_BENCH_DATA") or HERE / "_data")
GENDATA = Path(os.environ.get("GENOTOK_GENDATA", HERE.parent.parent / "shared" / "tools" / "gendata.py"))


def data_option(ap) -> None:
    """Add ``--data DIR`` to a script's parser: the folder of its generated data (default
    ``GENOTOK_BENCH_DATA``, else ``benchmarks/_data/``), for this script and its children."""
    ap.add_argument("--data", type=_use_data, default=DATA, metavar="DIR",
                    help="where the generated data goes (default: $GENOTOK_BENCH_DATA, else "
                         "benchmarks/_data)")


def _use_data(path: str) -> Path:
    global DATA
    DATA = Path(path).resolve()
    os.environ["GENOTOK_BENCH_DATA"] = str(DATA)  # the children this script starts
    return DATA


def gendata(kind: str, out: str, *args: str, inputs: tuple = ()) -> Path:
    """Run ``gendata.py KIND [INPUTS] OUT ARGS`` once; later calls reuse the file."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / out
    if not path.exists():
        if not GENDATA.exists():
            sys.exit(f"gendata.py not found at {GENDATA}; set GENOTOK_GENDATA")
        tmp = path.with_name(path.name + ".part" + "".join(path.suffixes[-1:]))
        subprocess.run([sys.executable, str(GENDATA), kind, *map(str, inputs), str(tmp),
                        *map(str, args)],
                       check=True, stdout=subprocess.DEVNULL)
        tmp.rename(path)
    return path


def universe_file(n: int = 1_000_000, overlapping: bool = False, seed: int = 1) -> Path:
    extra = ["--overlapping"] if overlapping else []
    name = f"universe_{n}{'_ovl' if overlapping else ''}_s{seed}.bed"
    return gendata("universe", name, "--n", str(n), "--seed", str(seed), *extra)


def query_file(universe: Path, n: int = 200_000, seed: int = 2, gz: bool = False,
               shuffle: bool = False) -> Path:
    """A narrowPeak of ``n`` queries over ``universe`` (``shuffle``: in random order, as
    ENCODE-style files sorted by signal are, not by position)."""
    name = (f"query_{universe.stem}_{n}_s{seed}" + ("_shuffled" if shuffle else "")
            + ".narrowPeak" + (".gz" if gz else ""))
    return gendata("query", name, "--n", str(n), "--seed", str(seed),
                   *(["--shuffle"] if shuffle else []), inputs=(universe,))


def best_of(fn, repeat: int = 5) -> float:
    """Minimum wall time of ``repeat`` calls (seconds): the least noisy estimate on a shared box."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_of_each(fns: dict, repeat: int = 5, inner: int = 2) -> dict:
    """``{name: minimum wall time}`` of the callables in ``fns``: ``repeat`` rounds, each calling
    every callable ``inner`` times in a row.

    Rounds make a ratio of two of them compare calls made seconds apart: this box's speed drifts
    by up to 1.7x over minutes, and one block per tool can land on either side of a drift. The
    calls in a row keep what back-to-back best-of measures: a second call reuses the memory the
    first one freed, where a call right after another tool's pays for fresh pages (a 134 MB
    ``np.take`` took 0.43 s after other calls, 0.07 s after itself).
    """
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            for _ in range(inner):
                t0 = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - t0)
    return best


def once(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def in_subprocess(code: str, env: dict | None = None) -> str:
    """Run python ``code`` in a fresh interpreter (cold start, separate RSS); return its stdout."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(HERE.parent) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)
    if res.returncode:
        raise RuntimeError(f"subprocess failed:\n{res.stderr}")
    return res.stdout


# ------------------------------------------------------------------ cold / warm in a fresh process
COLD_WARM_HEADER = ["workload", "size", "threads", "cold s", "warm s", "RSS after setup MiB",
                    "peak RSS MiB"]


def _cold_warm_child(setup: str, call: str, repeat: int) -> None:
    """Runs in the fresh interpreter of `cold_warm`: prints one JSON line."""
    ns: dict = {}
    exec(setup, ns)
    rss_setup = rss_mib()
    code = compile(call, "<call>", "exec")
    cold, _ = once(lambda: exec(code, ns))
    warm = best_of(lambda: exec(code, ns), repeat)
    print(json.dumps(dict(cold=cold, warm=warm, rss_setup_mib=rss_setup,
                          rss_peak_mib=peak_rss_mib())))


def cold_warm(setup: str, call: str, *, threads=(1, 2), repeat: int = 3,
              env: dict | None = None) -> list[dict]:
    """For each thread count, in a fresh interpreter: run `setup` (untimed: imports, data), time
    `call` once (cold), then best of `repeat` (warm); return dicts with keys threads, cold, warm,
    rss_setup_mib, rss_peak_mib.

    `call` is executed with ``exec`` in the namespace `setup` filled. Cold includes numba's
    compile-cache load (or compilation, with ``env={"GENOTOK_NO_CACHE": "1"}``) of every kernel
    `setup` did not already run. The thread count is numba's pool: ``NUMBA_NUM_THREADS=<n>``.
    """
    child = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import _common; "
             f"_common._cold_warm_child({setup!r}, {call!r}, {int(repeat)})")
    out = []
    for n in threads:
        stdout = in_subprocess(child, {**(env or {}), "NUMBA_NUM_THREADS": str(n)})
        out.append(dict(threads=n, **json.loads(stdout.splitlines()[-1])))
    return out


def cold_warm_table(label: str, results: list[dict], size: str = "") -> list[list[str]]:
    """Rows of `cold_warm` results for ``table(rows, COLD_WARM_HEADER)``."""
    return [[label, size, str(r["threads"]), f"{r['cold']:.3g}", f"{r['warm']:.3g}",
             f"{r['rss_setup_mib']:.0f}", f"{r['rss_peak_mib']:.0f}"] for r in results]


def cold_warm_section(label: str, setup: str, call: str, size: str = "", **kw) -> str:
    """`cold_warm` of a script's main workload as a markdown section (heading and table)."""
    results = cold_warm(setup, call, **kw)
    threads = ", ".join(str(r["threads"]) for r in results)
    return (f"## cold / warm (threads: {threads}; a fresh process per row)\n\n"
            + table(cold_warm_table(label, results, size), COLD_WARM_HEADER) + "\n")


def per_item(seconds: float) -> str:
    """A time per item with a unit that keeps it readable (ns, µs, ms, s)."""
    for unit, scale in (("ns", 1e9), ("µs", 1e6), ("ms", 1e3)):
        if seconds * scale < 1000:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def sweep_section(label: str, setups: dict[int, str], call: str, unit: str, *,
                  threads: int = 1, repeat: int = 3, env: dict | None = None) -> str:
    """A size sweep as a markdown section: `cold_warm` at each size (``setups`` maps the number
    of items to the setup code that prepares that many), with the warm cost per item."""
    rows = []
    for n, setup in setups.items():
        res = cold_warm(setup, call, threads=(threads,), repeat=repeat, env=env)
        rows.append(cold_warm_table(label, res, f"{n:,}")[0] + [per_item(res[0]["warm"] / n)])
    return (f"## size sweep (threads: {threads}; a fresh process per size)\n\n"
            + table(rows, [*COLD_WARM_HEADER, f"warm per {unit}"]) + "\n")


@njit(nogil=True, cache=True)
def scan_limit(buf):
    """Every byte through a small state machine (which field am I in?), summing the length of
    the first field of each line: the carried state keeps LLVM from vectorising it, as in a
    real parser."""
    field = 0
    total = 0
    for i in range(buf.size):
        b = buf[i]
        if b == 10:
            field = 0
        elif b == 9:
            field += 1
        elif field == 0:
            total += 1
    return total


@njit(nogil=True, cache=True, inline="always")
def _two_numbers(buf, p, starts, ends, i):
    """Skip the field at ``p``, read the next two as numbers into ``starts[i]``, ``ends[i]``;
    return the position after them."""
    while buf[p] != 9:
        p += 1
    p += 1
    v = 0
    while buf[p] != 9:
        v = v * 10 + (buf[p] - 48)
        p += 1
    starts[i] = v
    p += 1
    v = 0
    while buf[p] != 9 and buf[p] != 10:
        v = v * 10 + (buf[p] - 48)
        p += 1
    ends[i] = v
    return p


@njit(nogil=True, cache=True)
def bare_fields(buf, lf, starts, ends):
    """The floor of a BED parse that is handed the newline positions ``lf``: per line, skip the
    first field, read the second and third as numbers, jump to the next line. No validation,
    no chromosome names, nothing a real parser must do beyond reading two numbers a line (the
    buffer must be clean ``name<TAB>start<TAB>end...`` lines)."""
    p = 0
    for i in range(lf.size):
        _two_numbers(buf, p, starts, ends, i)
        p = lf[i] + 1
    return p


@njit(nogil=True, cache=True)
def bare_fields_skip(buf, starts, ends):
    """:func:`bare_fields` without the newline positions: the rest of each line is skipped
    byte by byte (the other way a parser finds its next line)."""
    p = 0
    i = 0
    while p < buf.size:
        p = _two_numbers(buf, p, starts, ends, i)
        while buf[p] != 10:
            p += 1
        p += 1
        i += 1
    return i


@njit(nogil=True, cache=True, parallel=True)
def _take_into(lut, idx, out):
    for i in prange(idx.size):
        out[i] = lut[idx[i]]


def parallel_take(lut, idx):
    """``lut[idx]`` on every numba thread (``np.take`` uses one): the memory-bound floor of
    writing ``idx.size`` items. The output is allocated by NumPy, which asks for huge pages, as
    genotok's kernels do (an array made inside numba takes a page fault every 4 KiB)."""
    out = np.empty(idx.size, lut.dtype)
    _take_into(lut, idx, out)
    return out


def parse_floor(buf, repeat: int = 5) -> dict:
    """Seconds of the floors a BED parse cannot go below, on ``buf`` (clean narrowPeak/BED
    bytes ending in a newline): ``newlines`` (``np.flatnonzero(buf == 10)``, vectorised, and
    genotok's eight-bytes-at-a-time scan: the faster), ``fields`` (:func:`bare_fields` given
    them) and ``skip`` (:func:`bare_fields_skip`). A parse costs at least
    ``min(newlines + fields, skip)``."""
    from genotok.kernels import parse as _parse

    lf = np.flatnonzero(buf == 10)
    starts, ends = np.empty(lf.size, np.int64), np.empty(lf.size, np.int64)
    bare_fields(buf, lf, starts, ends)
    bare_fields_skip(buf, starts, ends)
    t = best_of_each({"flatnonzero": lambda: np.flatnonzero(buf == 10),
                      "scan": lambda: _parse.scan(buf),
                      "fields": lambda: bare_fields(buf, lf, starts, ends),
                      "skip": lambda: bare_fields_skip(buf, starts, ends)}, repeat)
    t["newlines"] = min(t.pop("flatnonzero"), t.pop("scan"))
    t["parse"] = min(t["newlines"] + t["fields"], t["skip"])
    return t


def goal(workload: str, target: str, measured: str, met: bool | None) -> None:
    """Print one goal of the issue with what this run measured (``met=None``: its anchor is
    missing). ``run_all.py`` gathers these lines into the "goals at a glance" table at the top
    of RESULTS.md; run alone, a script prints them as they are."""
    status = "n/a (anchor not installed)" if met is None else ("met" if met else "NOT met")
    print(f"GOAL\t{workload}\t{target}\t{measured}\t{status}")


def machine() -> str:
    import numba

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, numba {numba.__version__}, "
            f"threading layer {numba.config.THREADING_LAYER}")


def table(rows: list[list], header: list[str]) -> str:
    """A GitHub-markdown table."""
    cells = [[str(c) for c in r] for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([fmt(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *map(fmt, cells[1:])])


def ratio(anchor: float, ours: float) -> str:
    return f"{anchor / ours:.1f}x" if ours > 0 else "n/a"
