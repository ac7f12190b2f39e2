"""Run the benchmarks and write benchmarks/RESULTS.md, a results page: the goals at a glance
(workload, goal, measured against its anchor, status, date, box load) and each script's tables.

    python benchmarks/run_all.py [--scale full|small|quick|smoke] [--only tokenize,...] [--out PATH]

``--scale quick`` runs a subset in minutes (the tiny-input calls, the gene presets, the first
use, one BED file and the shuffled one against gtars). A run keeps what it did not re-measure:
the goals rows and sections of the scripts it did not run are carried over from the previous
page, marked "not re-measured" with the date of their last figure (the page's HTML comments
delimit them). The history of the figures is in git, not in the page.

Data is generated with ../shared/tools/gendata.py into benchmarks/_data/ (git-ignored). Anchors
(gtars, bedtools, Geneformer's tokenizer) are measured in the same run when installed; otherwise
the tables say so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
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
        "executors": [],
        "stores": [],
        "mixture": [],
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
        "executors": ["--files", "200"],
        "stores": ["--files", "20", "--lines", "20000", "--n-universe", "200000"],
        "mixture": ["--records", "30000"],
    },
    "quick": {
        "small": ["--calls", "300"],
        "genes": ["--cells", "20000", "--genes", "5000", "--nnz", "530", "--skip-real",
                  "--runs", "3"],
        "first_use": ["quickstart"],
        "tokenize": ["--n-universe", "1000000", "--n-query", "200000", "--quick"],
        # the seams of issue 40 (each about a minute on the shared 2-core box)
        "executors": ["--files", "200", "--repeat", "1"],
        # (the read-back goal only: writing a few small files is all fixed costs)
        "stores": ["read", "--records", "10000", "--read-repeat", "11"],
        "mixture": ["--records", "20000", "--repeat", "5"],
    },
}
#: two scripts at tiny sizes, to check that this page is still written (tests/test_benchmarks.py
#: runs it with ``--out`` elsewhere; it runs every script at its tiniest sizes itself)
SCALES["smoke"] = {"packing": ["--records", "2000", "--max-len", "64", "--repeat", "1"],
                   "mixture": ["--records", "600", "--mean-length", "20", "--repeat", "1"]}
for _scale in ("full", "small"):  # the quick scripts run at every scale (with its own sizes)
    for _name, _args in SCALES["quick"].items():
        SCALES[_scale].setdefault(_name, _args)

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


def _previous(path: Path) -> tuple[dict, dict]:
    """The previous page's goals rows and sections by script (to carry over what a run does
    not re-measure)."""
    text = path.read_text() if path.exists() else ""
    rows: dict = {}
    block = re.search(r"<!-- goals -->(.*?)<!-- /goals -->", text, re.S)
    for line in (block.group(1) if block else "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] not in ("script", "") and not set(cells[0]) <= {"-"}:
            rows.setdefault(cells[0], []).append(cells)
    sections = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r"<!-- section (\S+) (\S+) -->\n(.*?)<!-- /section \1 -->", text, re.S)}
    return rows, sections


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=SCALES, default="full")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(SCALES["full"]))
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = ap.parse_args(argv)
    names = [n for n in SCALES[args.scale] if not args.only or n in args.only.split(",")]
    old_rows, old_sections = _previous(Path(args.out))
    today = dt.date.today().isoformat()
    in_subprocess(FIRST_CALL)  # fills numba's on-disk cache
    first = json.loads(in_subprocess(FIRST_CALL))["seconds"]
    load = f"{os.getloadavg()[0]:.1f}"
    goals = [["first_call", "import + first tokenization, warm cache", "<= 2 s", f"{first:.2f} s",
              "met" if first <= 2 else "NOT met", today, load]]
    sections = {}
    probes = [speed_probe()]
    for name in names:
        script = HERE / f"bench_{SCRIPTS.get(name, name)}.py"
        if not script.exists():
            continue
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, str(script), *SCALES[args.scale][name]],
                             capture_output=True, text=True, cwd=HERE)
        took = time.perf_counter() - t0
        probes.append(speed_probe())
        load = f"{os.getloadavg()[0]:.1f}"
        lines = res.stdout.strip().splitlines()
        goals += [[name, *line.split("\t")[1:5], today, load] for line in lines
                  if line.startswith("GOAL\t")]
        body = "\n".join(line for line in lines if not line.startswith("GOAL\t"))
        if res.returncode:
            body += f"\n\nFAILED (exit {res.returncode}):\n```\n{res.stderr[-2000:]}\n```"
        # demote the script's own headings two levels under this file's
        body = "\n".join("##" + line if line.startswith("#") else line
                         for line in body.splitlines())
        sections[name] = (f"{today},load-{load}", f"### {name} ({script.name}, {today}, load "
                          f"{load}, {took:.0f} s)\n\n{body}\n")
        print(f"{name}: {took:.0f} s", file=sys.stderr)
    ran = {g[0] for g in goals} | set(sections)
    for script, rows in old_rows.items():  # not re-measured: carried over, marked
        if script not in ran:
            goals += [[*r[:5], r[5] if "not re-measured" in r[5] else
                       f"{r[5]} (not re-measured)", r[6]] for r in rows]
    carried = {k: v for k, v in old_sections.items() if k not in sections}
    lo, hi = min(probes), max(probes)
    parts = ["# genotok benchmark results\n",
             f"- this run: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}, "
             f"`run_all.py --scale {args.scale}`{' --only ' + args.only if args.only else ''}",
             f"- machine: {machine()}; load average (1, 5, 15 min) at the end: "
             + ", ".join(f"{x:.1f}" for x in os.getloadavg())
             + f" on {os.cpu_count()} cores (above the core count, timings are inflated)",
             f"- speed probe (a fixed Python loop) around each script: {lo * 1e3:.0f}-"
             f"{hi * 1e3:.0f} ms, a drift of {hi / lo:.2f}x during the run",
             "- every ratio compares tools measured in the same run (the box is shared: single "
             "figures are noisy); rows marked \"not re-measured\" keep the figure and date of "
             "their last run (their history is in git); how to read the tables: "
             "docs/benchmarks.md\n",
             "## Goals at a glance\n", "<!-- goals -->",
             table(goals, ["script", "workload", "goal", "measured", "status", "date",
                           "load"]), "<!-- /goals -->\n", "## This run\n"]
    for name, (stamp, text) in sections.items():
        parts += [f"<!-- section {name} {stamp} -->", text.rstrip() + "\n",
                  f"<!-- /section {name} -->\n"]
    if carried:
        parts.append("## Not re-measured in this run\n")
        for name, (stamp, text) in carried.items():
            parts += [f"<!-- section {name} {stamp} -->", text.rstrip() + "\n",
                      f"<!-- /section {name} -->\n"]
    Path(args.out).write_text("\n".join(parts) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
