"""Issue 33 items 2, 4, 6: BGZF fragment files and tile matrices, ratios in one run.

1. **Liver tiles** (small input, large universe): ../shared's 15,530 liver fragments (8,029
   cells) against genome-wide 5-kb tiles of hg38 (the tiles loaded once, untimed, as each tool
   holds its tokenizer): genotok ``tokenize_fragments``, ``fragment_matrix``, ``tile_matrix``
   and ``FragmentMatrix.from_fragments`` against gtars' ``tokenize_fragment_file``.
   Goals: tokens >= gtars' speed; ``fragment_matrix`` <= 2x the tokens.
2. **BGZF** (``--fragments N``, default 2M lines, 2,000 barcodes, written BGZF by genotok's own
   writer, and the same bytes as one gzip member): tokens against 5-kb tiles from BGZF on
   ``--threads`` threads and from the one-member gzip, the tile matrix from BGZF, gtars'
   ``tokenize_fragment_file`` on the BGZF file, and the parallel-inflate limit (the same
   blocks inflated and checked on the same threads, nothing else). Each in a fresh process:
   wall time (best of ``--runs``) and peak RSS. SnapATAC2 where installed.
   Goals (at 50M, 2 threads): tokens >= 10x gtars, within 1.5x of the inflate limit.

    python benchmarks/bench_bgzf_tiles.py --fragments 2000000 --runs 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, in_subprocess  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
LIVER = SHARED / "scframework" / "homo_sapiens_liver_fragments_sorted_test.bed"
SIZES = SHARED / "chromsizes" / "hg38.chrom.sizes"

CHILD = """
import json, sys, time
sys.path.insert(0, {here!r})
from _common import peak_rss_mib
{setup}
best = float("inf")
for _ in range({repeat}):
    t0 = time.perf_counter()
    out = {call}
    best = min(best, time.perf_counter() - t0)
print(json.dumps(dict(seconds=best, rss=peak_rss_mib())))
"""

SETUP_GENOTOK = """
import genotok
from genotok import FragmentOptions, tile_tokenizer, tokenize_fragments, fragment_matrix
from genotok.singlecell import FragmentMatrix
tok = tile_tokenizer({sizes!r}, 5000)
tokenize_fragments({path!r}, tok); fragment_matrix({path!r}, tok)  # kernels, per-universe data
"""

SETUP_GTARS = """
from gtars.tokenizers import Tokenizer, tokenize_fragment_file
tok = Tokenizer({tiles!r})
"""

SETUP_INFLATE = """
from concurrent.futures import ThreadPoolExecutor
from genotok._bgzf import BGZF
f = BGZF({path!r})
blocks = f.blocks(0)
batches = [blocks[i:i + 512] for i in range(0, len(blocks), 512)]
pool = ThreadPoolExecutor({threads})
def inflate():
    return sum(len(x) for x in pool.map(f.inflate, batches))
"""


def run(setup: str, call: str, repeat: int, threads: int) -> dict:
    code = CHILD.format(here=str(Path(__file__).resolve().parent), setup=setup, call=call,
                        repeat=repeat)
    env = {"NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    return json.loads(in_subprocess(code, env).strip().splitlines()[-1])


def make_fragments(n: int, out: Path, seed: int = 0) -> tuple[Path, Path]:
    """``n`` fragment lines over chr1..chr22 (sorted), written BGZF (+ .tbi) and one-member
    gzip; reused when present."""
    from genotok._bgzf import write_bgzf

    bg, gz = out / f"frag{n}.bgzf.tsv.gz", out / f"frag{n}.gzip.tsv.gz"
    if bg.exists() and gz.exists():
        return bg, gz
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes = {ln.split()[0]: int(ln.split()[1]) for ln in SIZES.read_text().splitlines()}
    chroms = [f"chr{i}" for i in range(1, 23)]
    w = np.array([sizes[c] for c in chroms], float)
    per = rng.multinomial(n, w / w.sum())
    bcs = [f"{''.join(rng.choice(list('ACGT'), 16))}-1" for _ in range(2000)]
    parts = []
    for c, k in zip(chroms, per):
        s = np.sort(rng.integers(0, sizes[c] - 1000, k))
        ln = rng.integers(40, 700, k)
        b = rng.integers(0, len(bcs), k)
        cnt = rng.integers(1, 4, k)
        parts.append("".join(f"{c}\t{x}\t{x + y}\t{bcs[z]}\t{q}\n"
                             for x, y, z, q in zip(s.tolist(), ln.tolist(), b.tolist(),
                                                   cnt.tolist())))
    raw = "".join(parts).encode()
    write_bgzf(bg, raw, index=True)
    with gzip.open(gz, "wb", compresslevel=6) as fh:
        fh.write(raw)
    return bg, gz


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fragments", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip", nargs="*", default=[], choices=["liver", "bgzf"])
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    DATA.mkdir(exist_ok=True)
    tiles = DATA / "hg38_tiles_5kb.bed"
    if not tiles.exists():
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from genotok import tile_tokenizer

        rs = tile_tokenizer(str(SIZES), 5000).universe.regions
        tiles.write_text("".join(f"{t.replace(':', chr(9)).replace('-', chr(9))}\n"
                                 for t in rs.to_strings()))
    try:
        import gtars.tokenizers  # noqa: F401
        have_gtars = True
    except ImportError:
        have_gtars = False
        print("gtars is not installed: its rows are skipped")
    rows = []

    def add(label, setup, call, **kw):
        r = run(setup, call, a.runs, a.threads)
        rows.append((label, r, kw))
        print(f"{label}: {r['seconds']:.3f} s, peak {r['rss']:.0f} MiB", flush=True)
        return r

    if "liver" not in a.skip:
        g = SETUP_GENOTOK.format(sizes=str(SIZES), path=str(LIVER))
        p = str(LIVER)
        t_tok = add("liver: genotok tokenize_fragments", g, f"tokenize_fragments({p!r}, tok)")
        t_fm = add("liver: genotok fragment_matrix", g, f"fragment_matrix({p!r}, tok)")
        add("liver: genotok FragmentMatrix.from_fragments", g,
            f"FragmentMatrix.from_fragments({p!r}, tok)")
        add("liver: genotok tile_matrix", g, f"genotok.tile_matrix({p!r}, {str(SIZES)!r}, 5000)")
        if have_gtars:
            t_g = add("liver: gtars tokenize_fragment_file", SETUP_GTARS.format(tiles=str(tiles)),
                      f"tokenize_fragment_file({p!r}, tok)")
            print(f"liver: tokens / gtars = {t_tok['seconds'] / t_g['seconds']:.2f} "
                  f"(goal <= 1)")
        print(f"liver: fragment_matrix / tokens = {t_fm['seconds'] / t_tok['seconds']:.2f} "
              f"(goal <= 2)")
    if "bgzf" not in a.skip:
        bg, gz = make_fragments(a.fragments, DATA)
        g = SETUP_GENOTOK.format(sizes=str(SIZES), path=str(LIVER))
        t_b = add(f"{a.fragments:,} BGZF: genotok tokenize_fragments", g,
                  f"tokenize_fragments({str(bg)!r}, tok, n_threads={a.threads})")
        t_z = add(f"{a.fragments:,} one-member gzip: genotok tokenize_fragments", g,
                  f"tokenize_fragments({str(gz)!r}, tok, n_threads={a.threads})")
        t_m = add(f"{a.fragments:,} BGZF: genotok tile_matrix 5 kb", g,
                  f"genotok.tile_matrix({str(bg)!r}, {str(SIZES)!r}, 5000, "
                  f"n_threads={a.threads})")
        add(f"{a.fragments:,} BGZF: genotok tokenize_fragments, regions chr1+chr2", g,
            f"tokenize_fragments({str(bg)!r}, tok, "
            "read=FragmentOptions(regions=['chr1', 'chr2']))")
        t_i = add(f"{a.fragments:,} BGZF: parallel inflate alone ({a.threads} threads)",
                  SETUP_INFLATE.format(path=str(bg), threads=a.threads), "inflate()")
        add(f"{a.fragments:,} BGZF: inflate alone (1 thread)",
            SETUP_INFLATE.format(path=str(bg), threads=1), "inflate()")
        print(f"BGZF: tokens / inflate limit = {t_b['seconds'] / t_i['seconds']:.2f} "
              f"(goal <= 1.5); BGZF / one-member gzip = {t_b['seconds'] / t_z['seconds']:.2f}; "
              f"tile matrix / tokens = {t_m['seconds'] / t_b['seconds']:.2f}")
        if have_gtars:
            t_g = add(f"{a.fragments:,} BGZF: gtars tokenize_fragment_file",
                      SETUP_GTARS.format(tiles=str(tiles)),
                      f"tokenize_fragment_file({str(bg)!r}, tok)")
            print(f"BGZF: gtars / genotok tokens = {t_g['seconds'] / t_b['seconds']:.2f} "
                  "(goal >= 10 at 50M)")
    print("\n| workload | best s | peak RSS MiB |\n|---|---|---|")
    for label, r, _ in rows:
        print(f"| {label} | {r['seconds']:.3f} | {r['rss']:.0f} |")
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
