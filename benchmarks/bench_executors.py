"""The executors compared: serial, Dask and Ray on 200 and 2,000 small files, in one run.

Small BED files (``--lines`` regions each, cut from the bundled universe) are pre-tokenized into a
corpus by each executor with the same settings (``--files-per-shard``); the output is checked to
be the serial run's, record for record. Reported:

- start-up: the engine started and one trivial task round-tripped (a Dask ``LocalCluster`` of
  ``--workers`` processes; a local Ray with ``--workers`` CPUs, on 127.0.0.1);
- warm-up: the first run on the fresh workers (the kernels loaded from the cache, the tokenizer
  shipped), on 20 files;
- each run's wall time, best of ``--repeat``, and its ratio to the serial run (the engine's
  overhead; on a machine with few cores the engines cannot win, they can only cost).

    python benchmarks/bench_executors.py [--files 200,2000] [--lines 200] [--workers 2]

Measured 2026-11-29 on the shared 2-core box (load 8.6, two workers, 16 files a shard):
start-up Dask 7.0 s, Ray 16.3 s; first run on fresh workers Dask 2.2 s, Ray 9.0 s (serial
0.2 s); 200 files: Dask 1.43x serial, Ray 1.02x; 2,000 files: Dask 1.64x, Ray 0.98x. An earlier
run at load 10.7 gave Dask 1.88x / 1.53x and Ray 4.32x / 1.67x: the ratios move with the load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # a local Ray on 127.0.0.1

import numpy as np  # noqa: E402

import genotok  # noqa: E402
from genotok import Corpus, Tokenizer  # noqa: E402
from genotok.pipeline import (DaskExecutor, RayExecutor, RunOptions,  # noqa: E402
                              SerialExecutor, pretokenize)


def make_files(folder: Path, n: int, lines: int, seed: int = 0) -> Path:
    u = genotok.Universe.from_bed(genotok.examples_dir() / "universe.bed").regions
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        pick = rng.integers(0, len(u), lines)
        s = np.maximum(0, u.starts[pick] + rng.integers(-300, 300, lines))
        (folder / f"f{i:05d}.bed").write_text(
            "".join(f"{u.chrom_names[c]}\t{a}\t{a + 200}\n" for c, a in zip(u.codes[pick], s)))
    return folder


def run(inputs, tok, out: Path, executor, files_per_shard: int) -> float:
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    pretokenize(inputs, tok, out, progress=False,
                options=RunOptions(files_per_shard=files_per_shard, executor=executor))
    return time.perf_counter() - t0


def _add(a, b):
    return a + b


def start(executor) -> float:
    """Seconds to start the engine and round-trip one trivial task."""
    t0 = time.perf_counter()
    if isinstance(executor, DaskExecutor):
        executor.client.submit(sum, [1, 2]).result()
    elif isinstance(executor, RayExecutor):
        ray = executor._ray()  # noqa: SLF001 - the benchmark times the engine's own start
        ray.get(ray.remote(_add).remote(1, 2))
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="200,2000")
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--files-per-shard", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--engines", default="serial,dask,ray")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.files.split(",")]
    engines = args.engines.split(",")
    tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    tmp = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    warnings.simplefilter("ignore")
    try:
        folders = {n: make_files(tmp / f"in{n}", n, args.lines) for n in sizes}
        warm = make_files(tmp / "warm", 20, args.lines, seed=1)
        executors = {"serial": SerialExecutor(),
                     "dask": DaskExecutor(address="local", n_workers=args.workers),
                     "ray": RayExecutor(address="local", num_workers=args.workers)}
        executors = {k: v for k, v in executors.items() if k in engines}
        print(f"# executors: {args.workers} workers, {args.lines} regions per file, "
              f"files_per_shard={args.files_per_shard}, {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.2f}")
        startup, warmup = {}, {}
        for name, ex in executors.items():
            startup[name] = start(ex)
            warmup[name] = run(warm, tok, tmp / f"warm-{name}", ex, args.files_per_shard)
        times: dict = {}
        for n in sizes:
            ref = None
            for name, ex in executors.items():
                best = min(run(folders[n], tok, tmp / f"out-{name}", ex, args.files_per_shard)
                           for _ in range(args.repeat))
                times[name, n] = best
                got = Corpus.open(tmp / f"out-{name}").to_ragged()
                ref = got if ref is None else ref
                assert got == ref, f"{name}: not the serial run's records"
        print("| engine | start-up (s) | first run, 20 files (s) | "
              + " | ".join(f"{n:,} files (s) | × serial" for n in sizes) + " |")
        print("|---|---|---|" + "---|---|" * len(sizes))
        for name in executors:
            cells = [f"{times[name, n]:.2f} | {times[name, n] / times['serial', n]:.2f}"
                     if "serial" in executors else f"{times[name, n]:.2f} | -" for n in sizes]
            print(f"| {name} | {startup[name]:.2f} | {warmup[name]:.2f} | "
                  + " | ".join(cells) + " |")
        others = [name for name in executors if name != "serial"]
        if others:  # (a run that differs fails the assertion above)
            print(f"GOAL\t{', '.join(others)}: pretokenize {', '.join(map(str, sizes))} small "
                  "files\tthe serial run's records, record for record\tequal\tmet")
        for ex in executors.values():
            ex.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
