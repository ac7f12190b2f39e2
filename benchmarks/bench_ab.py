"""Before / after on one box: ``Tokenizer.encode`` of the shuffled and the sorted 200k-line
files (1M-region universe) by two genotok trees, each against gtars in the same process.

    python benchmarks/bench_ab.py --before /path/to/old/tree [--after .] [--rounds 3]

Each round runs one fresh process per tree, the trees alternating; a process loads the
tokenizer (kernels from the cache), then times ``tok.encode(path)`` and gtars' ``tok(path)``
alternately, best of ``--repeat`` each. The box is shared: the ratios to gtars (same process)
and the after / before ratio of the medians over rounds are what to read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_option, goal, query_file, table, universe_file

CHILD = r"""
import json, sys, time
import genotok
u, files, repeat = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
tok = genotok.Tokenizer.from_bed(u)
fns = {"genotok": lambda f: tok.encode(f)}
try:
    from gtars.tokenizers import Tokenizer as GT
    gt = GT.from_bed(u)
    fns["gtars"] = lambda f: gt(f)
except ImportError:  # genotok's rows only
    pass
out = {}
for f in files:
    best = {}
    for k, fn in fns.items():
        fn(f)
        best[k] = 1e9
    for _ in range(repeat):
        for k, fn in fns.items():
            t = time.perf_counter(); fn(f); best[k] = min(best[k], time.perf_counter() - t)
    out[f] = best
print(json.dumps(out))
"""


def _env(tree: str) -> dict:
    """The environment of a child importing ``tree``'s genotok: the tree first on its path."""
    rest = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=tree + (os.pathsep + rest if rest else ""))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, help="the old tree (its folder)")
    p.add_argument("--after", default=str(Path(__file__).resolve().parents[1]))
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    data_option(p)
    args = p.parse_args()
    upath = universe_file(args.universe)
    files = {"shuffled": query_file(upath, args.queries, shuffle=True),
             "sorted": query_file(upath, args.queries)}
    runs = {"before": [], "after": []}
    for side in ("before", "after"):  # untimed: each tree's kernels compiled or loaded once
        subprocess.run([sys.executable, "-c", CHILD, str(upath), str(files["sorted"]), "1"],
                       env=_env(getattr(args, side)), check=True,
                       capture_output=True, cwd=getattr(args, side))
    for _ in range(args.rounds):
        for side in ("before", "after"):
            env = _env(getattr(args, side))
            res = subprocess.run([sys.executable, "-c", CHILD, str(upath),
                                  ",".join(map(str, files.values())), str(args.repeat)],
                                 env=env, capture_output=True, text=True, check=True,
                                 cwd=getattr(args, side))  # -c: the working folder first
            runs[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()}\n")
    rows = []
    tools = [k for k in ("genotok", "gtars") if all(k in r[str(f)] for rs in runs.values()
                                                   for r in rs for f in files.values())]
    if "gtars" not in tools:
        print("gtars is not installed (pip install gtars): before / after only, no ratios\n")
    for name, f in files.items():
        med = {side: {k: statistics.median(r[str(f)][k] for r in runs[side]) for k in tools}
               for side in runs}
        rb = med["before"]["gtars"] / med["before"]["genotok"] if "gtars" in tools else None
        ra = med["after"]["gtars"] / med["after"]["genotok"] if "gtars" in tools else None
        rows.append([f"{args.queries:,} lines, {name}", f"{med['before']['genotok'] * 1e3:.1f}",
                     f"{med['after']['genotok'] * 1e3:.1f}",
                     f"{med['after']['genotok'] / med['before']['genotok']:.2f}",
                     f"{rb:.1f}x" if rb else "", f"{ra:.1f}x" if ra else ""])
        if name == "shuffled":
            goal(f"a shuffled {args.queries:,}-line file -> ids, warm", ">= 8x gtars",
                 f"{ra:.1f}x (before: {rb:.1f}x)" if ra else "", ra >= 8 if ra else None)
    print(f"medians over {args.rounds} rounds of best-of-{args.repeat}, ms\n")
    print(table(rows, ["workload", "before ms", "after ms", "after / before",
                       "gtars / genotok before", "gtars / genotok after"]))


if __name__ == "__main__":
    main()
