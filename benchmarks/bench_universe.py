"""Universe load: genotok vs gtars on a generated 1M-region universe, cold and warm.

Cold = a fresh interpreter (import + parse + index + first tokenization compile excluded/included
as labelled); warm = best of several loads in one process. Also peak RSS of a fresh process that
loads the universe and tokenizes one 200k-line narrowPeak file. Then the load alone, cold and
warm, with 1 and 2 threads in fresh processes, and a size sweep (1/4, 1/2 and all of ``--n``).

    python benchmarks/bench_universe.py [--n 1000000] [--repeat 5] [--floor]

``--floor``: only where genotok's peak RSS goes, step by step in fresh processes (VmHWM, and
the private ``RssAnon`` / file-backed ``RssFile`` split): Python, NumPy, numba's import, numba's
target context (what loading the first kernel from the cache costs in any process), this
path's kernels, the universe, the file; and gtars' steps beside them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import (best_of, cold_warm_section, data_option, goal, in_subprocess, machine,
                     query_file, ratio, sweep_section, table, universe_file)

LOAD_OURS = """
import time, json
t0 = time.perf_counter()
import genotok
t1 = time.perf_counter()
tok = genotok.Tokenizer.from_bed({path!r})
tok.universe.sweep; tok.fingerprint
t2 = time.perf_counter()
ids = tok.encode({query!r})
t3 = time.perf_counter()
print(json.dumps(dict(imp=t1 - t0, load=t2 - t1, first=t3 - t2, n=int(ids.size), rss={peak})))
"""

LOAD_GTARS = """
import time, json
t0 = time.perf_counter()
from gtars.tokenizers import Tokenizer
t1 = time.perf_counter()
tok = Tokenizer.from_bed({path!r})
t2 = time.perf_counter()
ids = tok({query!r})["input_ids"]
t3 = time.perf_counter()
print(json.dumps(dict(imp=t1 - t0, load=t2 - t1, first=t3 - t2, n=len(ids), rss={peak})))
"""

#: the child's peak RSS (MiB), read in place: VmHWM, as ``_common.peak_rss_mib`` reads it, but
#: without importing ``_common``, whose numba (+74 MiB) counted in gtars' peak until 2026-11-29
#: (402 MiB, 328 without); ``ru_maxrss`` would keep the parent's peak
PEAK = ('[int(x.split()[1]) / 1024 for x in open("/proc/self/status") '
        'if x.startswith("VmHWM:")][0]')

_STEPS = """
import json
rows = []
def mark(label):
    d = dict.fromkeys(("VmHWM", "VmRSS", "RssAnon", "RssFile"), 0.0)
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in d:
            d[key] = int(value.split()[0]) / 1024
    rows.append((label, d))
mark("python")
"""

FLOOR_OURS = _STEPS + """
import numpy
mark("import numpy")
import numba
mark("import numba (llvmlite: LLVM's library mapped)")
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()  # what the first kernel, compiled or cached, sets up
mark("numba's target context (NRT compiled by LLVM, implementations, scipy.linalg)")
import genotok
small = genotok.Tokenizer.from_bed({small_u!r})
small.universe.sweep
small.encode({small_q!r})
del small
mark("this path's kernels from the cache (run on {small_n})")
tok = genotok.Tokenizer.from_bed({path!r})
tok.universe.sweep
tok.fingerprint
mark("Tokenizer.from_bed + sweep + fingerprint")
ids = tok.encode({query!r})
mark("encode the file")
print(json.dumps(rows))
"""

FLOOR_GTARS = _STEPS + """
from gtars.tokenizers import Tokenizer
mark("import gtars.tokenizers")
tok = Tokenizer.from_bed({path!r})
mark("Tokenizer.from_bed")
ids = tok({query!r})["input_ids"]
mark("tokenize the file")
print(json.dumps(rows))
"""


def _head(path, lines: int):
    """The first ``lines`` lines of ``path`` as a file beside it (made once)."""
    out = path.with_name(f"{path.stem}_head{lines}{path.suffix}")
    if not out.exists():
        with open(path, "rb") as src, open(str(out) + ".part", "wb") as dst:
            for _, line in zip(range(lines), src):
                dst.write(line)
        Path(str(out) + ".part").rename(out)
    return out


def floor_section(upath, qpath, n: int) -> str:
    """``--floor``: the steps of genotok's and gtars' peak RSS as a markdown table."""
    import json

    small_u, small_q = _head(upath, n // 10), _head(qpath, 70_000)  # > 2**16 lines: every
    ours = json.loads(in_subprocess(FLOOR_OURS.format(  # kernel of the large file's path
        small_u=str(small_u), small_q=str(small_q), small_n=f"{n // 10:,} regions, 70,000 lines",
        path=str(upath), query=str(qpath))).splitlines()[-1])
    runs = [("genotok", ours)]
    try:
        import gtars  # noqa: F401
        runs.append(("gtars", json.loads(in_subprocess(FLOOR_GTARS.format(
            path=str(upath), query=str(qpath))).splitlines()[-1])))
    except ImportError:
        pass
    rows = []
    for tool, steps in runs:
        prev = 0.0
        for label, d in steps:
            rows.append([tool, label, f"{d['VmHWM']:.1f}", f"{d['VmHWM'] - prev:+.1f}",
                         f"{d['RssAnon']:.1f}", f"{d['RssFile']:.1f}"])
            prev = d["VmHWM"]
    return ("## Where the peak RSS goes (a fresh process per tool, MiB)\n\n"
            + table(rows, ["tool", "step", "VmHWM", "step adds", "RssAnon", "RssFile"]) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="universe regions")
    ap.add_argument("--queries", type=int, default=200_000, help="query lines for the RSS check")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--floor", action="store_true", help="only the peak RSS, step by step")
    data_option(ap)
    args = ap.parse_args(argv)
    import json

    import genotok

    upath = universe_file(args.n)
    qpath = query_file(upath, args.queries)
    print(f"# Universe load ({args.n:,} regions)\n\nmachine: {machine()}\n")
    if args.floor:
        print(floor_section(upath, qpath, args.n))
        return 0

    def load_ours():
        u = genotok.Universe.from_bed(upath)
        u.sweep
        u.fingerprint

    genotok.warmup()
    warm_ours = best_of(load_ours, args.repeat)
    cold_ours = json.loads(in_subprocess(LOAD_OURS.format(path=str(upath), query=str(qpath),
                                                          peak=PEAK)))
    rows = [["genotok", f"{cold_ours['load']:.3f}", f"{warm_ours:.3f}", f"{cold_ours['imp']:.2f}",
             f"{cold_ours['first']:.3f}", f"{cold_ours['rss']:.0f}", "", ""]]
    try:
        from gtars.tokenizers import Tokenizer as GT

        warm_g = best_of(lambda: GT.from_bed(str(upath)), max(2, args.repeat // 2))
        cold_g = json.loads(in_subprocess(LOAD_GTARS.format(path=str(upath), query=str(qpath),
                                                            peak=PEAK)))
        rows.append(["gtars", f"{cold_g['load']:.3f}", f"{warm_g:.3f}", f"{cold_g['imp']:.2f}",
                     f"{cold_g['first']:.3f}", f"{cold_g['rss']:.0f}", "", ""])
        rows[0][6] = ratio(cold_g["load"], cold_ours["load"]) + " / " + ratio(warm_g, warm_ours)
        rows[0][7] = f"{cold_ours['rss'] / cold_g['rss']:.2f}x"
        if cold_ours["n"] != cold_g["n"]:
            print(f"WARNING: id counts differ: genotok {cold_ours['n']} vs gtars {cold_g['n']}")
    except ImportError:
        print("gtars not installed: `pip install gtars` for the anchor")
    print(table(rows, ["tool", "load cold (s)", "load warm (s)", "import (s)",
                       "first file (s)", "peak RSS (MiB)", "speed-up cold / warm", "RSS vs gtars"]))
    print("\ngoal: >= 10x faster than gtars; peak RSS (1M universe + one file) <= 0.5x gtars\n")
    if len(rows) > 1:
        sw, sc = warm_g / warm_ours, cold_g["load"] / cold_ours["load"]
        rss = cold_ours["rss"] / cold_g["rss"]
        goal(f"universe load, {args.n:,} regions", ">= 10x gtars",
             f"{sw:.1f}x warm ({sc:.1f}x cold: numba cache load)", sw >= 10)
        goal("peak RSS, universe + one file", "<= 0.5x gtars", f"{rss:.2f}x", rss <= 0.5)
    else:
        goal(f"universe load, {args.n:,} regions", ">= 10x gtars", "", None)

    setup = "import genotok\npath = {!r}".format
    call = "u = genotok.Universe.from_bed(path); u.sweep; u.fingerprint"
    label = "Universe.from_bed + sweep + fingerprint"
    print(cold_warm_section(label, setup(str(upath)), call, f"{args.n:,} regions"))
    sizes = {k: setup(str(universe_file(k))) for k in (args.n // 4, args.n // 2, args.n)}
    print(sweep_section(label, sizes, call, "region"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
