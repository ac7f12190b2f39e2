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

from _common import goal, query_file, table, universe_file

CHILD = r"""
import json, sys, time
import genotok
from gtars.tokenizers import Tokenizer as GT
u, files, repeat = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
tok, gt = genotok.Tokenizer.from_bed(u), GT.from_bed(u)
out = {}
for f in files:
    tok.encode(f); gt(f)
    best = {"genotok": 1e9, "gtars": 1e9}
    for _ in range(repeat):
        for k, fn in (("genotok", lambda: tok.encode(f)), ("gtars", lambda: gt(f))):
            t = time.perf_counter(); fn(); best[k] = min(best[k], time.perf_counter() - t)
    out[f] = best
print(json.dumps(out))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, help="the old tree (its folder)")
    p.add_argument("--after", default=str(Path(__file__).resolve().parents[1]))
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    upath = universe_file(args.universe)
    files = {"shuffled": query_file(upath, args.queries, shuffle=True),
             "sorted": query_file(upath, args.queries)}
    runs = {"before": [], "after": []}
    for side in ("before", "after"):  # untimed: each tree's kernels compiled or loaded once
        subprocess.run([sys.executable, "-c", CHILD, str(upath), str(files["sorted"]), "1"],
                       env=dict(os.environ, PYTHONPATH=getattr(args, side)), check=True,
                       capture_output=True, cwd=getattr(args, side))
    for _ in range(args.rounds):
        for side in ("before", "after"):
            env = dict(os.environ, PYTHONPATH=getattr(args, side))
            res = subprocess.run([sys.executable, "-c", CHILD, str(upath),
                                  ",".join(map(str, files.values())), str(args.repeat)],
                                 env=env, capture_output=True, text=True, check=True,
                                 cwd=getattr(args, side))  # -c: the working folder first
            runs[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()}\n")
    rows = []
    for name, f in files.items():
        med = {side: {k: statistics.median(r[str(f)][k] for r in runs[side])
                      for k in ("genotok", "gtars")} for side in runs}
        rb = med["before"]["gtars"] / med["before"]["genotok"]
        ra = med["after"]["gtars"] / med["after"]["genotok"]
        rows.append([f"{args.queries:,} lines, {name}", f"{med['before']['genotok'] * 1e3:.1f}",
                     f"{med['after']['genotok'] * 1e3:.1f}",
                     f"{med['after']['genotok'] / med['before']['genotok']:.2f}",
                     f"{rb:.1f}x", f"{ra:.1f}x"])
        if name == "shuffled":
            goal(f"a shuffled {args.queries:,}-line file -> ids, warm", ">= 8x gtars",
                 f"{ra:.1f}x (before: {rb:.1f}x)", ra >= 8)
    print(f"medians over {args.rounds} rounds of best-of-{args.repeat}, ms\n")
    print(table(rows, ["workload", "before ms", "after ms", "after / before",
                       "gtars / genotok before", "gtars / genotok after"]))


if __name__ == "__main__":
    main()
