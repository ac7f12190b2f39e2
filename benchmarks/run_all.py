"""Run every benchmark and write benchmarks/RESULTS.md (machine, date, one table per workload).

    python benchmarks/run_all.py [--scale full|small] [--only tokenize,format,...]

Data is generated with ../shared/tools/gendata.py into benchmarks/_data/ (git-ignored). Anchors
(gtars, bedtools) are measured in the same run when installed; otherwise the tables say so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import HERE, in_subprocess, machine, table

SCALES = {
    "full": {
        "universe": ["--n", "1000000"],
        "parse": ["--n-query", "200000", "--n-universe", "1000000"],
        "tokenize": ["--n-universe", "1000000", "--n-query", "200000", "--files", "50"],
        "peers": ["--peers", "--n-universe", "1000000"],
        "kernels": [],
        "format": ["--records", "1000000"],
        "pipeline": ["--files", "200", "--lines", "50000"],
        "anndata": [],
        "gzip_h5ad": ["--cells", "20000"],
        "singlecell_fm": [],  # the sizes: 50M fragments, 200k-cell h5ad
        "build": [],
        "data": [],
        "containers": ["--cells", "200000"],  # the 200k-cell SOMA experiment
    },
    "small": {
        "universe": ["--n", "200000"],
        "parse": ["--n-query", "50000", "--n-universe", "200000"],
        "tokenize": ["--n-universe", "200000", "--n-query", "50000", "--files", "10"],
        "peers": ["--peers", "--n-universe", "200000", "--repeat", "3"],
        "kernels": [],
        "format": ["--records", "100000"],
        "pipeline": ["--files", "20", "--lines", "20000", "--n-universe", "200000"],
        "anndata": [],
        "gzip_h5ad": ["--cells", "5000"],
        "singlecell_fm": ["--peaks", "200000", "--cells", "2000", "--per-cell", "2500",
                          "--h5ad-cells", "20000", "--h5ad-peaks", "200000", "--nnz", "860"],
        "build": ["--files", "50"],
        "data": [],
        "containers": ["--cells", "20000", "--mtx"],
    },
}

SCRIPTS = {"peers": "tokenize"}  # a section run by another script's flag

FIRST_CALL = """
import time, json
t0 = time.perf_counter()
import genotok
tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
ids = tok.encode(genotok.examples_dir() / "peaks" / "sample0.narrowPeak")
print(json.dumps(dict(seconds=time.perf_counter() - t0)))
"""


def speed_probe() -> float:
    """Seconds for a fixed pure-Python loop, best of 3: this shared box's speed drifts (up to
    1.7x between runs seconds apart, measured), and the probe shows by how much during a run."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        x = 0
        for i in range(1_000_000):
            x += i
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=SCALES, default="full")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(SCALES["full"]))
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = ap.parse_args(argv)
    names = [n for n in SCALES[args.scale] if not args.only or n in args.only.split(",")]
    parts = [f"# genotok benchmark results\n",
             f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
             f"- machine: {machine()}", f"- scale: {args.scale}",
             "- every ratio compares tools measured in this same run; the machine is shared, so "
             "single figures are noisy (best-of-N timings are shown)",
             "- each script ends with its main workload cold and warm at 1 and 2 threads with "
             "peak RSS, and a size sweep (how to read them: docs/benchmarks.md)\n"]
    in_subprocess(FIRST_CALL)  # fills numba's on-disk cache
    first = json.loads(in_subprocess(FIRST_CALL))["seconds"]
    parts.append(f"## Import + first tokenization with a warm compile cache\n\n{first:.2f} s "
                 f"(goal: <= 2 s)\n")
    goals = [["import + first tokenization, warm cache", "<= 2 s", f"{first:.2f} s",
              "met" if first <= 2 else "NOT met"]]
    probes = [speed_probe()]
    for name in names:
        script = HERE / f"bench_{SCRIPTS.get(name, name)}.py"
        if not script.exists():
            parts.append(f"## {name}\n\n(no benchmarks/{script.name})\n")
            continue
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, str(script), *SCALES[args.scale][name]],
                             capture_output=True, text=True, cwd=HERE)
        took = time.perf_counter() - t0
        probes.append(speed_probe())
        lines = res.stdout.strip().splitlines()
        goals += [line.split("\t")[1:] for line in lines if line.startswith("GOAL\t")]
        body = "\n".join(line for line in lines if not line.startswith("GOAL\t"))
        if res.returncode:
            body += f"\n\nFAILED (exit {res.returncode}):\n```\n{res.stderr[-2000:]}\n```"
        # demote the script's own headings one level under this file's
        body = "\n".join("#" + line if line.startswith("#") else line for line in body.splitlines())
        parts.append(f"{body}\n\n_({script.name}, {took:.0f} s; speed probe after it: "
                     f"{probes[-1] * 1e3:.0f} ms)_\n")
        print(f"{name}: {took:.0f} s", file=sys.stderr)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    parts.insert(6, "## Goals at a glance\n\nThe issue's tuning goals, each measured in this run "
                    "against its anchor (details in the sections below; where a limit is in the "
                    "way, docs/benchmarks.md explains it).\n\n"
                    + table(goals, ["workload", "goal", "measured", "status"]) + "\n")
    lo, hi = min(probes), max(probes)
    parts.insert(4, f"- speed probe (a fixed Python loop, lower is faster) before and after each "
                    f"script: {lo * 1e3:.0f}-{hi * 1e3:.0f} ms, so the box's speed drifted "
                    f"{hi / lo:.2f}x during the run; a ratio whose two sides were timed far apart "
                    "can be off by up to that much")
    parts.insert(5, f"- load average (1, 5, 15 min) when the run ended: {load} on "
                    f"{os.cpu_count()} cores (above the core count, timings are inflated)")
    Path(args.out).write_text("\n".join(parts) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
