"""Shared helpers for the benchmark scripts: data generation, timing, memory, tables.

Benchmarks print ratios against anchors measured in the same run; data is generated with
``../shared/tools/gendata.py`` into ``benchmarks/_data/`` (git-ignored) and reused across runs.
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
GENDATA = Path(os.environ.get("GENOTOK_GENDATA", HERE.parent.parent / "shared" / "tools" / "gendata.py"))


def gendata(kind: str, out: str, *args: str, inputs: tuple = ()) -> Path:
    """Run ``gendata.py KIND [INPUTS] OUT ARGS`` once; later calls reuse the file."""
    DATA.mkdir(exist_ok=True)
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


def query_file(universe: Path, n: int = 200_000, seed: int = 2, gz: bool = False) -> Path:
    name = f"query_{universe.stem}_{n}_s{seed}.narrowPeak" + (".gz" if gz else "")
    return gendata("query", name, "--n", str(n), "--seed", str(seed), inputs=(universe,))


def best_of(fn, repeat: int = 5) -> float:
    """Minimum wall time of ``repeat`` calls (seconds): the least noisy estimate on a shared box."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def once(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_subprocess(code: str, env: dict | None = None) -> str:
    """Run python ``code`` in a fresh interpreter (cold start, separate RSS); return its stdout."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(HERE.parent) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)
    if res.returncode:
        raise RuntimeError(f"subprocess failed:\n{res.stderr}")
    return res.stdout


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
