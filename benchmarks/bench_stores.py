"""pretokenize into each store: the corpus (the anchor) against Parquet and Arrow IPC shards.

Generated narrowPeak files (the inputs of ``bench_pipeline.py``) → each store, alternating,
best of ``--repeat``; the goal (issue 34): Parquet / Arrow output within 1.5x the corpus time.

    python benchmarks/bench_stores.py [--files 40] [--lines 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _common import gendata, goal, machine, table, universe_file
from bench_pipeline import input_dir

import genotok
from genotok.pipeline.run import pretokenize


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-universe", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    upath = universe_file(args.n_universe)
    base = [gendata("query", f"pipe_{args.lines}_{k}.narrowPeak", "--n", str(args.lines),
                    "--seed", str(500 + k), inputs=(upath,)) for k in range(min(20, args.files))]
    indir = input_dir(args.files, args.lines, base)
    genotok.warmup()
    tok = genotok.Tokenizer.from_bed(upath)
    tmp = Path(tempfile.mkdtemp(prefix="genotok-stores-"))
    formats = ("corpus", "parquet", "arrow")
    best = dict.fromkeys(formats, float("inf"))
    size = {}
    try:
        pretokenize(indir, tok, tmp / "warm", progress=False, format="parquet")  # imports
        for k in range(args.repeat):  # alternating, best of each: the box is shared
            for fmt in formats:
                out = tmp / f"{fmt}{k}"
                t0 = time.perf_counter()
                run = pretokenize(indir, tok, out, progress=False, format=fmt)
                best[fmt] = min(best[fmt], time.perf_counter() - t0)
                size[fmt] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
                shutil.rmtree(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {args.files} narrowPeak files ({args.lines:,} lines each) -> "
          f"{run.n_tokens:,} tokens, {machine()}\n")
    rows = [[fmt, f"{best[fmt]:.2f}", f"{size[fmt] / 1e6:.1f}",
             f"{best[fmt] / best['corpus']:.2f}x"] for fmt in formats]
    print(table(rows, ["store", "seconds (best)", "MB written", "vs corpus"]))
    worst = max(best["parquet"], best["arrow"]) / best["corpus"]
    goal("pretokenize into Parquet / Arrow", "<= 1.5x the corpus", f"{worst:.2f}x", worst <= 1.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
