"""Small sets, the inference path: one call's fixed cost against a 200k-region universe.

genotok's ``Tokenizer.encode`` against gtars' ``Tokenizer`` on the first ``n`` lines of a
query file over the universe, as a file (gtars: ``tok(path)``), as region strings (genotok;
gtars has no string input: its ``Region`` objects) and as arrays (genotok's ``(chroms,
starts, ends)``; gtars: its ``Region`` objects). Each cell: the median of ``--calls`` warm
calls, the tools alternating call by call in one process (the box is shared: only ratios
measured in one run mean anything). The ids are compared in the same run.

Issue goal: no slower than gtars from 100 lines, within 2x at 10 and within 5x at 1, for files,
strings and arrays.

Example: ``python benchmarks/bench_small.py --calls 300``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import data_option, goal, machine, query_file, table, universe_file

SIZES = (1, 10, 100, 1000)
GOALS = {1: 5.0, 10: 2.0, 100: 1.0, 1000: 1.0}  # genotok / gtars at most


def medians(fns: dict, calls: int) -> dict:
    """The median seconds of ``calls`` calls of each function, alternating call by call."""
    for f in fns.values():  # warm: compile / load the kernels, fill the caches
        for _ in range(5):
            f()
    times = {k: [] for k in fns}
    for _ in range(calls):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--universe", type=int, default=200_000)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    data_option(p)
    args = p.parse_args()
    import genotok

    upath = universe_file(args.universe)
    qpath = query_file(upath, 20_000)
    lines = qpath.read_text().splitlines()
    tok = genotok.Tokenizer.from_bed(upath)
    try:
        from gtars.models import Region
        from gtars.tokenizers import Tokenizer as GT
        gt = GT.from_bed(str(upath))
    except ImportError:
        gt = None
        print("gtars is not installed (pip install gtars): genotok's rows only, no ratios")
    print(machine(), f"load average {os.getloadavg()}")
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in map(int, args.sizes.split(",")):
            path = Path(tmp) / f"q{n}.bed"
            path.write_text("\n".join(lines[:n]) + "\n")
            fields = [ln.split("\t")[:3] for ln in lines[:n]]
            strings = [f"{c}:{s}-{e}" for c, s, e in fields]
            arrays = (np.array([c for c, _, _ in fields]),
                      np.array([int(s) for _, s, _ in fields], np.int64),
                      np.array([int(e) for _, _, e in fields], np.int64))
            ours = [tok.encode(str(path)).tolist(), tok.encode(strings).tolist(),
                    tok.encode(arrays).tolist()]
            fns = {"file": lambda: tok.encode(str(path)),
                   "strings": lambda: tok.encode(strings),
                   "arrays": lambda: tok.encode(arrays)}
            same = all(o == ours[0] for o in ours)
            if gt is not None:
                regions = [Region(c, int(s), int(e), None) for c, s, e in fields]
                theirs = [list(gt(str(path))["input_ids"]), list(gt(regions)["input_ids"])]
                same = same and ours[0] == theirs[0] == theirs[1]
                fns.update({"gtars file": lambda: gt(str(path)),
                            "gtars regions": lambda: gt(regions)})
            t = medians(fns, args.calls)
            results[n] = t
            us = {k: f"{v * 1e6:.0f}" for k, v in t.items()}
            r = {k: f"{t[k] / t[g]:.2f}" if g in t else "" for k, g in (
                ("file", "gtars file"), ("strings", "gtars regions"), ("arrays", "gtars regions"))}
            rows.append([n, us["file"], us.get("gtars file", ""), r["file"], us["strings"],
                         us["arrays"], us.get("gtars regions", ""), r["strings"], r["arrays"],
                         "yes" if same else "NO"])
    print(f"load average {os.getloadavg()}")
    print(f"\nmedian of {args.calls} warm calls, us (a {args.universe:,}-region universe; "
          "genotok / gtars: lower is better)\n")
    print(table(rows, ["lines", "genotok file", "gtars file", "file ratio", "genotok strings",
                       "genotok arrays", "gtars Regions", "strings ratio", "arrays ratio",
                       "same ids"]))
    for n, t in results.items():
        if gt is None:
            goal(f"{n} lines, fixed cost", f"<= {GOALS.get(n, 1.0):g}x gtars", "", None)
            continue
        worst = max(t["file"] / t["gtars file"], t["strings"] / t["gtars regions"],
                    t["arrays"] / t["gtars regions"])
        goal(f"{n} lines, fixed cost", f"<= {GOALS.get(n, 1.0):g}x gtars",
             f"{worst:.2f}x (worst of file, strings, arrays)", worst <= GOALS.get(n, 1.0))


if __name__ == "__main__":
    main()
