"""Pre-tokenizing many files: genotok pretokenize vs a gtars loop, 1 vs 2 threads.

200 generated narrowPeak files (≈ 50k lines each by default) → a corpus, against a loop of gtars
``Tokenizer.__call__`` + ``write_tokens_to_gtok`` over the same files in the same run. Then
``pretokenize`` cold and warm with 1 and 2 threads in fresh processes (with RSS), and a size
sweep over 1/4, 1/2 and all of the files.

    python benchmarks/bench_pipeline.py [--files 200] [--lines 50000] [--quick]

``--quick``: only the first table (genotok 1 and 2 threads against the gtars loop), for A/B runs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _common
from _common import (
    cold_warm_section,
    data_option,
    gendata,
    goal,
    machine,
    ratio,
    sweep_section,
    table,
    universe_file,
)

import genotok
from genotok.pipeline.run import pretokenize


def input_dir(n_files: int, lines: int, base: list[Path]) -> Path:
    """A folder of ``n_files`` narrowPeak links, cycling over the ``base`` files (made once)."""
    indir = _common.DATA / f"pipe_in_{n_files}_{lines}"
    if not indir.exists() or len(list(indir.iterdir())) != n_files:
        shutil.rmtree(indir, ignore_errors=True)
        indir.mkdir()
        for i in range(n_files):
            (indir / f"sample{i:04d}.narrowPeak").symlink_to(base[i % len(base)])
    return indir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each thread count (best is shown)")
    ap.add_argument("--n-universe", type=int, default=1_000_000)
    ap.add_argument("--distinct", type=int, default=20,
                    help="distinct generated files, repeated (as links) up to --files")
    ap.add_argument("--quick", action="store_true",
                    help="skip the cold/warm and size-sweep sections")
    data_option(ap)
    args = ap.parse_args(argv)
    upath = universe_file(args.n_universe)
    base = [gendata("query", f"pipe_{args.lines}_{k}.narrowPeak", "--n", str(args.lines), "--seed",
                    str(500 + k), inputs=(upath,)) for k in range(min(args.distinct, args.files))]
    indir = input_dir(args.files, args.lines, base)
    files = sorted(indir.iterdir())
    mb = sum(f.stat().st_size for f in files) / 1e6
    genotok.warmup()
    tok = genotok.Tokenizer.from_bed(upath)
    tmp = Path(tempfile.mkdtemp(prefix="genotok-pipe-"))
    try:
        results = {1: float("inf"), 2: float("inf")}
        for k in range(args.repeat):  # alternating, best of each: the box is shared
            for threads in (1, 2):
                out = tmp / f"out{threads}_{k}"
                t0 = time.perf_counter()
                run = pretokenize(indir, tok, out, n_threads=threads, progress=False)
                results[threads] = min(results[threads], time.perf_counter() - t0)
                n_tokens = run.n_tokens
                shutil.rmtree(out)
        rows = [[f"genotok pretokenize, {t} thread{'s' if t > 1 else ''}", f"{results[t]:.2f}",
                 f"{args.files / results[t]:.1f}", f"{mb / results[t]:.0f}", ""] for t in (1, 2)]
        rows[1][4] = f"{results[1] / results[2]:.2f}x one thread"
        try:
            from gtars.tokenizers import Tokenizer as GT
            from gtars.utils import write_tokens_to_gtok

            gt = GT.from_bed(str(upath))
            gdir = tmp / "gtars"
            gdir.mkdir()
            t0 = time.perf_counter()
            for f in files:
                ids = gt(str(f))["input_ids"]
                write_tokens_to_gtok(str(gdir / f"{f.stem}.gtok"), ids)
            t_g = time.perf_counter() - t0
            rows.append(["gtars loop (__call__ + write_tokens_to_gtok)", f"{t_g:.2f}",
                         f"{args.files / t_g:.1f}", f"{mb / t_g:.0f}", ""])
            rows[0][4] = f"{ratio(t_g, results[1])} vs gtars"
            rows[1][4] += f", {ratio(t_g, results[2])} vs gtars"
        except ImportError:
            print("gtars not installed (pip install gtars): no gtars anchor")
        print(f"# {args.files} narrowPeak files ({args.lines:,} lines each, {mb:.0f} MB) -> corpus\n")
        print(f"machine: {machine()}\n")
        print(table(rows, ["run", "time (s)", "files/s", "MB/s", "speed-up"]))
        print(f"\n{n_tokens:,} tokens written. goals (issue 25): >= 10x the gtars loop; "
              "2 threads >= 1.8x one\n")
        work = f"{args.files} files -> corpus"
        if len(rows) > 2:
            goal(work, ">= 10x the gtars loop", f"{t_g / results[2]:.1f}x (2 threads), "
                 f"{t_g / results[1]:.1f}x (1 thread)", t_g / results[2] >= 10)
        else:
            goal(work, ">= 10x the gtars loop", "", None)
        goal(work, "2 threads >= 1.8x one", f"{results[1] / results[2]:.2f}x",
             results[1] / results[2] >= 1.8)
        if args.quick:
            return 0

        setup = ("import genotok\nfrom genotok.pipeline import pretokenize\n"
                 f"tok = genotok.Tokenizer.from_bed({str(upath)!r})\n"
                 "indir = {!r}\n" f"out = {str(tmp / 'cold_warm')!r}").format
        call = "pretokenize(indir, tok, out, progress=False, overwrite=True)"
        label = f"pretokenize ({args.lines:,}-line files)"
        print(cold_warm_section(label, setup(str(indir)), call, f"{args.files} files", repeat=2))
        sizes = {k: setup(str(input_dir(k, args.lines, base)))
                 for k in (args.files // 4, args.files // 2, args.files)}
        print(sweep_section(label, sizes, call, "file", repeat=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
