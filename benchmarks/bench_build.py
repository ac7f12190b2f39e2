"""Universe building: genotok merge / coverage cutoff / top-k vs bedtools on generated narrowPeaks.

Generates FILES narrowPeak files of PEAKS peaks each (``../shared/tools/gendata.py`` query model,
drawn around one generated universe) into ``benchmarks/_data/``, then times in the same run:

- merge: ``genotok.build.merge(files)`` vs
  ``cat files | LC_ALL=C sort -k1,1 -k2,2n | bedtools merge``;
- consensus (regions covered by >= K files): ``genotok.build.coverage_cutoff(files, K)`` vs
  ``bedtools multiinter -i files | awk '$4 >= K' | bedtools merge`` (multiinter needs sorted
  inputs: sorted copies are made once, not timed);
- top-k over the merged union (no anchor: reported for scale).

Warm = best of ``--repeat`` runs in this process after a warm-up; cold = a fresh interpreter
(import, numba cache load, first call). Rates are input regions per second. Input hashing
(sha256 of every file, recorded in the report) is on, as by default. Then merge cold and warm
with 1 and 2 threads in fresh processes (with RSS), and a size sweep over 1/4, 1/2 and all of
the files.

    python benchmarks/bench_build.py [--files 200] [--peaks 20000] [--min-count 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import _common
from _common import (
    GENDATA,
    HERE,
    best_of,
    cold_warm_section,
    data_option,
    gendata,
    in_subprocess,
    machine,
    sweep_section,
    table,
)

if importlib.util.find_spec("genotok") is None:  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))

COLD = """
import time, json
t0 = time.perf_counter()
from genotok.build import builders as build
files = {files!r}
t1 = time.perf_counter()
r = build.{call}
t2 = time.perf_counter()
print(json.dumps(dict(imp=t1 - t0, run=t2 - t1, n=len(r.regions))))
"""


def find_bedtools() -> str | None:
    """bedtools on PATH, or None (the table then says so: a benchmark installs nothing; on
    Debian, `apt-get install bedtools`)."""
    found = shutil.which("bedtools")
    if not found:
        print("bedtools not installed (apt-get install bedtools): no bedtools anchor",
              file=sys.stderr)
    return found


def peak_files(n_files: int, peaks: int, universe_n: int) -> list[str]:
    """FILES narrowPeak files (generated once, reused): gendata's query model, seeds 1000 + i."""
    upath = gendata("universe", f"universe_{universe_n}_s1.bed", "--n", str(universe_n),
                    "--seed", "1")
    folder = _common.DATA / f"build_{universe_n}_{peaks}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"peaks_{i:03d}.narrowPeak" for i in range(n_files)]
    missing = [p for p in paths if not p.exists()]
    if missing:
        import numpy as np

        spec = importlib.util.spec_from_file_location("gendata", GENDATA)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        parsed = mod.read_bed(str(upath))
        mod.read_bed = lambda _path: parsed  # parse the universe once for all query files
        print(f"generating {len(missing)} narrowPeak files in {folder} …", file=sys.stderr)
        for p in missing:
            rng = np.random.default_rng(1000 + paths.index(p))
            tmp = p.with_name(p.name + ".part")
            mod.write_bed(str(tmp), mod.query(str(upath), peaks, rng), extra_cols=True, rng=rng)
            tmp.rename(p)
    return [str(p) for p in paths]


def sorted_copies(files: list[str]) -> list[str]:
    out = []
    for f in files:
        s = f + ".sorted.bed"
        if not os.path.exists(s):
            with open(s + ".part", "wb") as fh:
                subprocess.run(["sort", "-k1,1", "-k2,2n", f], stdout=fh, check=True,
                               env={**os.environ, "LC_ALL": "C"})
            os.rename(s + ".part", s)
        out.append(s)
    return out


def shell(cmd: str) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    res = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, check=True,
                         env={**os.environ, "LC_ALL": "C"})
    return time.perf_counter() - t0, res.stdout


def bed_set(text: bytes) -> set[tuple[str, int, int]]:
    out = set()
    for line in text.decode().splitlines():
        c, s, e = line.split("\t")[:3]
        out.add((c, int(s), int(e)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200, help="narrowPeak files (default 200)")
    ap.add_argument("--peaks", type=int, default=20_000, help="peaks per file (default 20,000)")
    ap.add_argument("--universe-n", type=int, default=200_000,
                    help="regions of the universe the peaks are drawn around (default 200,000)")
    ap.add_argument("--min-count", type=int, default=None,
                    help="consensus cutoff K (default: 5%% of the files, at least 2)")
    ap.add_argument("--max-regions", type=int, default=100_000, help="top-k vocabulary size")
    ap.add_argument("--repeat", type=int, default=3, help="warm runs (best of)")
    ap.add_argument("--threads", type=int, default=None, help="genotok threads (default: all)")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-interpreter runs")
    data_option(ap)
    args = ap.parse_args(argv)

    from genotok.build import builders as build

    files = peak_files(args.files, args.peaks, args.universe_n)
    lines = [sum(1 for _ in open(f, "rb")) for f in files]
    n_in = sum(lines)
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    bedtools = find_bedtools()
    print(f"# Universe building: {args.files} narrowPeak files, {n_in:,} regions ({mb:.0f} MB)\n")
    print(f"machine: {machine()}")
    version = (subprocess.run([bedtools, "--version"], capture_output=True, text=True).stdout.strip()
               if bedtools else "not installed")
    print(f"bedtools: {version}\n")

    k = args.min_count if args.min_count is not None else max(2, args.files // 20)
    th = args.threads
    calls = {
        "merge": (lambda: build.merge(files, n_threads=th), f"merge(files, n_threads={th})"),
        f"consensus (>= {k} files)": (
            lambda: build.coverage_cutoff(files, k, n_threads=th),
            f"coverage_cutoff(files, {k}, n_threads={th})"),
    }
    from genotok.kernels import build as _build_kernels
    from genotok.kernels import overlap as _kernels

    _build_kernels.warmup()
    _kernels.warmup()
    rows, results, warm_s = [], {}, {}
    for name, (fn, call) in calls.items():
        results[name] = fn()
        warm = warm_s[name] = best_of(fn, args.repeat)
        cold = (None if args.no_cold
                else json.loads(in_subprocess(COLD.format(files=files, call=call))))
        rows.append([name, "genotok", f"{cold['run']:.2f}" if cold else "", f"{warm:.2f}",
                     f"{n_in / warm / 1e6:.1f}", f"{len(results[name].regions):,}", ""])
    anchors = {}
    if bedtools:
        srt = sorted_copies(files)
        t, out = shell(f"cat {' '.join(files)} | sort -k1,1 -k2,2n | {bedtools} merge -i stdin")
        anchors["merge"] = (t, out, "sort | bedtools merge")
        t, out = shell(f"{bedtools} multiinter -i {' '.join(srt)} | awk -v OFS='\\t' '$4 >= {k}' "
                       f"| {bedtools} merge -i stdin")
        anchors[f"consensus (>= {k} files)"] = (t, out, "bedtools multiinter | awk | merge")
        for row in list(rows):
            t, out, label = anchors[row[0]]
            ours = set(results[row[0]].regions.to_strings())
            theirs = {f"{c}:{s}-{e}" for c, s, e in bed_set(out)}
            same = "identical" if ours == theirs else f"DIFFER ({len(ours ^ theirs)} regions)"
            row[6] = f"{t / warm_s[row[0]]:.1f}x ({same})"  # (not row[3]: 2 decimals, maybe 0)
            rows.append([row[0], label, "", f"{t:.2f}", f"{n_in / t / 1e6:.1f}",
                         f"{len(theirs):,}", ""])
        rows.sort(key=lambda r: (r[0], r[1] != "genotok"))
    else:
        print("bedtools unavailable: anchors skipped\n")
    union = results["merge"].regions
    top = lambda: build.top_k(union, files, args.max_regions, n_threads=th)  # noqa: E731
    top()
    t_top = best_of(top, args.repeat)
    rows.append([f"top-k ({args.max_regions:,} of {len(union):,})", "genotok", "", f"{t_top:.2f}",
                 f"{n_in / t_top / 1e6:.1f}", f"{min(args.max_regions, len(union)):,}",
                 "no anchor"])
    print(table(rows, ["task", "tool", "cold (s)", "warm (s)", "M regions/s", "regions out",
                       "genotok speed-up (same result?)"]))
    hashless = best_of(lambda: build.merge(files, n_threads=th, hash_inputs=False), args.repeat)
    print(f"\nmerge without input hashing: {hashless:.2f} s (sha256 of every input: "
          f"{warm_s['merge'] - hashless:+.2f} s of the {warm_s['merge']:.2f} s)")
    print("anchors: bedtools run single-threaded in a shell pipeline (LC_ALL=C sort); multiinter "
          "reads pre-sorted copies (sorting not timed)\n")
    if not args.no_cold:
        setup = "from genotok import build\nfiles = {!r}".format
        label, call = "build.merge (input hashing on)", "build.merge(files)"
        print(cold_warm_section(label, setup(files), call, f"{n_in:,} regions", repeat=args.repeat))
        sizes = {sum(lines[:k]): setup(files[:k])
                 for k in (len(files) // 4, len(files) // 2, len(files))}
        print(sweep_section(label, sizes, call, "region", repeat=args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
