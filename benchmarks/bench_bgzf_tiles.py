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
   wall time (best of ``--runs``) and peak RSS. SnapATAC2's tile matrix
   (``pp.import_fragments`` + ``pp.add_tile_matrix``, 5 kb, paired-insertion, ``n_jobs`` =
   ``--threads``) runs in the interpreter of ``--snapatac2-python`` (its own venv: it pulls
   another numpy), when given.
   Goals (at 50M, 2 threads): tokens >= 10x gtars, within 1.5x of the inflate limit; tile
   matrix >= 5x SnapATAC2 at <= half its peak memory.

3. **Issue 44** (``--peaks 200000 --cells 4000 --fragments 5000000``): the same rows over a
   universe of ``--peaks`` random 500-bp peaks instead of the tiles, ``fragment_matrix`` on
   the same file, and htslib's own parallel inflate (``bgzip -@threads -dc > /dev/null``) as
   the anchor. Goals: tokens >= 10x gtars and <= 1.5x bgzip's inflate; matrices within 1.2x
   of the tokens. The floor under the first: genotok's own inflate alone, and each block's raw
   deflate data inflated in memory on one thread by ISA-L and, when the ``deflate`` package is
   installed, by libdeflate (what ``bgzip`` uses).
4. **muon tiles** (``--skip muon`` to leave out): the real muon PBMC fragment file (367k
   fragments, 24,508 cells) into 500-bp hg38 tiles (6.06M columns, the AnnData included)
   against SnapATAC2 (``import_fragments`` + ``add_tile_matrix``), in the interpreter of
   ``--snapatac2-python`` or this one when it has snapatac2. Goal: >= 5x SnapATAC2.

The generated files go to ``--data`` (default ``/tmp/genotok-bench-bgzf``; never committed):
the text written by pyarrow's CSV writer a million lines at a time, then ``bgzip`` +
``tabix -p bed`` when on ``PATH`` (genotok's own ``write_bgzf`` otherwise, which holds the file
in memory: fine at 2M, not at 50M), and the one-member gzip by ``isal``'s ``igzip``.

    python benchmarks/bench_bgzf_tiles.py --fragments 2000000 --runs 2
    python benchmarks/bench_bgzf_tiles.py --fragments 5000000 --cells 4000 --peaks 200000 \
        --runs 1 --skip liver gzip regions
    python benchmarks/bench_bgzf_tiles.py --fragments 50000000 --runs 1 --skip liver \
        --snapatac2-python /work/ciclone/.ci-venv/bin/python
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import in_subprocess  # noqa: E402

#: ../shared beside the repository, or where ``GENOTOK_SHARED`` says (a worktree's checkout)
SHARED = Path(os.environ.get("GENOTOK_SHARED", Path(__file__).resolve().parents[2] / "shared")) \
    / "data" / "real"
LIVER = SHARED / "scframework" / "homo_sapiens_liver_fragments_sorted_test.bed"
SIZES = SHARED / "chromsizes" / "hg38.chrom.sizes"
MUON = SHARED / "muon" / "test_rna_atac_fragments.tsv.gz"

CHILD = """
import json, sys, time
sys.path[:] = [p for p in sys.path if p]  # not the working directory's genotok: PYTHONPATH's
sys.path.insert(0, {here!r})
from _mem import peak_rss_mib, rss_mib
{setup}
setup = rss_mib()
best = cpu = float("inf")
for _ in range({repeat}):
    out = None  # the last run's result freed first: the peak is one call's, not two
    t0, c0 = time.perf_counter(), time.process_time()
    out = {call}
    t1, c1 = time.perf_counter(), time.process_time()
    if t1 - t0 < best:
        best, cpu = t1 - t0, c1 - c0
print(json.dumps(dict(seconds=best, cpu=cpu, rss=peak_rss_mib(), setup=setup)))
"""

SETUP_GENOTOK = """
import genotok
from genotok import FragmentOptions, tile_tokenizer, tokenize_fragments, fragment_matrix
from genotok.singlecell import FragmentMatrix
tok = tile_tokenizer({sizes!r}, 5000)
tokenize_fragments({path!r}, tok); fragment_matrix({path!r}, tok)  # kernels, per-universe data
tokenize_fragments({warm!r}, tok); genotok.tile_matrix({warm!r}, {sizes!r}, 5000)  # BGZF path
"""

SETUP_TOKENS = """
from genotok import FragmentOptions, Tokenizer, fragment_matrix, tile_tokenizer, tokenize_fragments
tok = tile_tokenizer({sizes!r}, 5000) if {peaks!r} is None else Tokenizer({peaks!r})
tokenize_fragments({path!r}, tok); tokenize_fragments({warm!r}, tok)  # kernels, BGZF path
fragment_matrix({warm!r}, tok)
"""

SETUP_MUON = """
import genotok
genotok.tile_matrix({path!r}, {sizes!r}, 500)  # kernels, the tiles and their var frame
"""

# the tile matrix builds its own tiles: no tokenizer held beside it (its peak is its own)
SETUP_TILES = """
import genotok
genotok.tile_matrix({warm!r}, {sizes!r}, 5000)  # kernels, BGZF path
"""

SETUP_GTARS = """
from gtars.tokenizers import Tokenizer, tokenize_fragment_file
tok = Tokenizer({tiles!r})
"""

SETUP_INFLATE = """
from concurrent.futures import ThreadPoolExecutor
from genotok.bgzf import BGZF
f = BGZF({path!r})
blocks = f.blocks(0)
batches = [blocks[i:i + 512] for i in range(0, len(blocks), 512)]
pool = ThreadPoolExecutor({threads})
def inflate():
    return sum(len(x) for x in pool.map(f.inflate, batches))
"""

# the floor under the inflate: each block's raw deflate data already in memory, inflated (and
# its CRC-32 taken) by one library on one thread, no file, no copy, no check of ours
SETUP_RAW = """
import struct
from genotok.bgzf import BGZF
with BGZF({path!r}) as f:
    raw = []
    for off, bsize, isize in f.blocks(0):
        xlen = struct.unpack_from("<H", f.mm, off + 10)[0]
        raw.append((bytes(f.mm[off + 12 + xlen:off + bsize - 8]), max(isize, 1)))
if {lib!r} == "isal":
    from isal import isal_zlib as z
    def inflate():
        return sum(z.crc32(z.decompress(r, -15, n)) & 1 for r, n in raw)
else:
    import deflate as d
    def inflate():
        return sum(d.crc32(d.deflate_decompress(r, n)) & 1 for r, n in raw)
"""


def run(setup: str, call: str, repeat: int, threads: int, tree: str | None = None) -> dict:
    """``call`` timed in a fresh process after ``setup``; ``tree``: another genotok checkout
    imported instead of this one (``--before``; its own kernel cache)."""
    code = CHILD.format(here=str(Path(__file__).resolve().parent), setup=setup, call=call,
                        repeat=repeat)
    env = {"NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    if tree is not None:
        env.update(PYTHONPATH=str(Path(tree).resolve()),
                   GENOTOK_KERNEL_CACHE=str(Path(tree).resolve() / ".kernel-cache"))
    return json.loads(in_subprocess(code, env).strip().splitlines()[-1])


def make_peaks(n: int, out: Path, seed: int = 1) -> Path:
    """``n`` random 500-bp peaks over chr1..chr22 (sorted, overlaps allowed), reused when
    present."""
    path = out / f"peaks{n}.bed"
    if path.exists():
        return path
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes = {ln.split()[0]: int(ln.split()[1]) for ln in SIZES.read_text().splitlines()}
    chroms = [f"chr{i}" for i in range(1, 23)]
    w = np.array([sizes[c] for c in chroms], float)
    lines = []
    for c, k in zip(chroms, rng.multinomial(n, w / w.sum())):
        for x in np.sort(rng.integers(0, sizes[c] - 1000, k)).tolist():
            lines.append(f"{c}\t{x}\t{x + 500}\n")
    path.write_text("".join(lines))
    return path


def time_bgzip(path: Path, threads: int, repeat: int) -> dict:
    """htslib's own parallel inflate of the file to /dev/null, best of ``repeat``."""
    import shutil
    import subprocess

    import resource

    if not shutil.which("bgzip"):
        return {}
    best = cpu = float("inf")
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(["bgzip", "-@", str(threads), "-dc", str(path)],
                       stdout=subprocess.DEVNULL, check=True)
        t = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if t < best:
            best = t
            cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return dict(seconds=best, cpu=cpu, rss=float("nan"), setup=float("nan"))


def make_fragments(n: int, out: Path, seed: int = 0, cells: int = 2000) -> tuple[Path, Path]:
    """``n`` fragment lines over chr1..chr22 (sorted), written BGZF (+ .tbi) and one-member
    gzip; reused when present. Written a chunk of lines at a time (50M lines are ~1.5 GB of
    text): never the whole file in memory when ``bgzip``/``tabix`` are there."""
    import shutil
    import subprocess

    tag = f"{n}" if cells == 2000 else f"{n}x{cells}"
    bg, gz = out / f"frag{tag}.bgzf.tsv.gz", out / f"frag{tag}.gzip.tsv.gz"
    if bg.exists() and gz.exists():
        return bg, gz
    out.mkdir(parents=True, exist_ok=True)
    txt = out / f"frag{tag}.tsv"
    _write_text(n, txt, seed, cells)
    if shutil.which("bgzip") and shutil.which("tabix"):
        with open(str(bg) + ".part", "wb") as fh:
            subprocess.run(["bgzip", "-@", "2", "-c", str(txt)], stdout=fh, check=True)
        os.replace(str(bg) + ".part", bg)
        subprocess.run(["tabix", "-f", "-p", "bed", str(bg)], check=True)
    else:
        from genotok.bgzf import write_bgzf

        write_bgzf(bg, txt.read_bytes(), index=True)
    with open(str(gz) + ".part", "wb") as fh:
        subprocess.run([sys.executable, "-m", "isal.igzip", "-c", str(txt)], stdout=fh,
                       check=True)
    os.replace(str(gz) + ".part", gz)
    txt.unlink()
    return bg, gz


def _write_text(n: int, txt: Path, seed: int, cells: int, chunk: int = 1_000_000) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    sizes = {ln.split()[0]: int(ln.split()[1]) for ln in SIZES.read_text().splitlines()}
    chroms = [f"chr{i}" for i in range(1, 23)]
    w = np.array([sizes[c] for c in chroms], float)
    per = rng.multinomial(n, w / w.sum())
    bcs = np.array([f"{''.join(rng.choice(list('ACGT'), 16))}-1" for _ in range(cells)])
    opts = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with open(str(txt) + ".part", "wb") as fh:
        for c, k in zip(chroms, per):
            s = np.sort(rng.integers(0, sizes[c] - 1000, k))
            for a in range(0, k, chunk):
                x = s[a:a + chunk]
                m = x.size
                t = pa.table({"c": pa.array(np.full(m, c)), "s": x,
                              "e": x + rng.integers(40, 700, m),
                              "b": pa.array(bcs[rng.integers(0, bcs.size, m)]),
                              "n": rng.integers(1, 4, m)})
                pacsv.write_csv(t, fh, opts)
    os.replace(str(txt) + ".part", txt)


SNAPATAC2 = """
import json, sys, time
import snapatac2 as snap

def peak(key="VmHWM:"):
    for ln in open("/proc/self/status"):
        if ln.startswith(key):
            return int(ln.split()[1]) / 1024
setup = peak("VmRSS:")
sizes = {{ln.split()[0]: int(ln.split()[1]) for ln in open({sizes!r})}}
best = float("inf")
for _ in range({repeat}):
    t0 = time.perf_counter()
    ad = snap.pp.import_fragments({path!r}, chrom_sizes=sizes, file=None, min_num_fragments=1,
                                  sorted_by_barcode=False, n_jobs={threads})
    snap.pp.add_tile_matrix(ad, bin_size={bin_size}, counting_strategy="paired-insertion",
                            exclude_chroms=None, n_jobs={threads})
    best = min(best, time.perf_counter() - t0)
print(json.dumps(dict(seconds=best, rss=peak(), setup=setup, shape=list(ad.X.shape),
                      nnz=int(ad.X.nnz))))
"""


def run_snapatac2(python: str, path: Path, repeat: int, threads: int,
                  bin_size: int = 5000) -> dict:
    import subprocess

    code = SNAPATAC2.format(sizes=str(SIZES), path=str(path), repeat=repeat, threads=threads,
                            bin_size=bin_size)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    res = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env,
                         check=False)
    if res.returncode:
        raise RuntimeError(f"SnapATAC2 failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fragments", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cells", type=int, default=2000, help="barcodes of the generated file")
    ap.add_argument("--peaks", type=int, default=0,
                    help="a universe of this many random 500-bp peaks (0: 5-kb tiles)")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["liver", "bgzf", "gzip", "regions", "gtars", "muon"])
    ap.add_argument("--data", type=Path, default=Path("/tmp/genotok-bench-bgzf"),
                    help="where the generated fragment files go (never committed)")
    ap.add_argument("--before", default=None,
                    help="another genotok checkout (e.g. `git archive main`): its tokens and "
                         "fragment_matrix rows timed beside this tree's, the trees alternating")
    ap.add_argument("--snapatac2-python", default=None,
                    help="an interpreter with snapatac2 installed (its own venv)")
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    a.data.mkdir(parents=True, exist_ok=True)
    tiles = a.data / "hg38_tiles_5kb.bed"  # gtars' universe: beside the generated files
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
    warm = a.data / "liver.bgzf.tsv.gz"  # the BGZF path's kernels, loaded before the timing
    if not warm.exists():
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from genotok.bgzf import write_bgzf

        a.data.mkdir(parents=True, exist_ok=True)
        write_bgzf(warm, LIVER.read_bytes(), index=True)
    rows = []

    def add(label, setup, call, tree=None, **kw):
        r = run(setup, call, a.runs, a.threads, tree)
        rows.append((label, r, kw))
        print(f"{label}: {r['seconds']:.3f} s ({r.get('cpu', float('nan')):.2f} CPU s), peak "
              f"{r['rss']:.0f} MiB (after setup {r['setup']:.0f})", flush=True)
        return r

    if "liver" not in a.skip:
        g = SETUP_GENOTOK.format(sizes=str(SIZES), path=str(LIVER), warm=str(warm))
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
        bg, gz = make_fragments(a.fragments, a.data, cells=a.cells)
        peaks = str(make_peaks(a.peaks, a.data)) if a.peaks else None
        if peaks:
            tiles = Path(peaks)  # gtars' universe too
        g = SETUP_TOKENS.format(sizes=str(SIZES), path=str(LIVER), warm=str(warm), peaks=peaks)
        t_b = add(f"{a.fragments:,} BGZF: genotok tokenize_fragments", g,
                  f"tokenize_fragments({str(bg)!r}, tok, n_threads={a.threads})")
        t_fm = add(f"{a.fragments:,} BGZF: genotok fragment_matrix", g,
                   f"fragment_matrix({str(bg)!r}, tok, n_threads={a.threads})")
        if a.before:
            t_bb = add(f"{a.fragments:,} BGZF: before (--before) tokenize_fragments", g,
                       f"tokenize_fragments({str(bg)!r}, tok, n_threads={a.threads})",
                       tree=a.before)
            add(f"{a.fragments:,} BGZF: before (--before) fragment_matrix", g,
                f"fragment_matrix({str(bg)!r}, tok, n_threads={a.threads})", tree=a.before)
            print(f"tokens after / before = {t_b['seconds'] / t_bb['seconds']:.2f} (wall), "
                  f"{t_b['cpu'] / t_bb['cpu']:.2f} (CPU)")
        t_h = time_bgzip(bg, a.threads, a.runs)
        if t_h:
            rows.append((f"{a.fragments:,} BGZF: htslib bgzip -@{a.threads} -dc > /dev/null",
                         t_h, {}))
            print(f"bgzip -@{a.threads} -dc: {t_h['seconds']:.3f} s ({t_h['cpu']:.2f} CPU s); "
                  f"tokens / bgzip = "
                  f"{t_b['seconds'] / t_h['seconds']:.2f} (goal <= 1.5); fragment_matrix / "
                  f"tokens = {t_fm['seconds'] / t_b['seconds']:.2f} (goal <= 1.2)", flush=True)
        t_z = t_b if "gzip" in a.skip else add(
            f"{a.fragments:,} one-member gzip: genotok tokenize_fragments", g,
            f"tokenize_fragments({str(gz)!r}, tok, n_threads={a.threads})")
        t_m = add(f"{a.fragments:,} BGZF: genotok tile_matrix 5 kb",
                  SETUP_TILES.format(sizes=str(SIZES), warm=str(warm)),
                  f"genotok.tile_matrix({str(bg)!r}, {str(SIZES)!r}, 5000, "
                  f"n_threads={a.threads})")
        if "regions" not in a.skip:
            add(f"{a.fragments:,} BGZF: genotok tokenize_fragments, regions chr1+chr2", g,
                f"tokenize_fragments({str(bg)!r}, tok, "
                "read=FragmentOptions(regions=['chr1', 'chr2']))")
        t_i = add(f"{a.fragments:,} BGZF: parallel inflate alone ({a.threads} threads)",
                  SETUP_INFLATE.format(path=str(bg), threads=a.threads), "inflate()")
        add(f"{a.fragments:,} BGZF: inflate alone (1 thread)",
            SETUP_INFLATE.format(path=str(bg), threads=1), "inflate()")
        libs = ["isal"] + (["deflate"] if importlib.util.find_spec("deflate") else [])
        for lib in libs:  # libdeflate: what htslib's bgzip uses (the `deflate` package)
            add(f"{a.fragments:,} BGZF: raw inflate of the blocks in memory, 1 thread, "
                f"{'ISA-L' if lib == 'isal' else 'libdeflate'}",
                SETUP_RAW.format(path=str(bg), lib=lib), "inflate()")
        print(f"BGZF: tokens / inflate limit = {t_b['seconds'] / t_i['seconds']:.2f} "
              f"(goal <= 1.5); BGZF / one-member gzip = {t_b['seconds'] / t_z['seconds']:.2f}; "
              f"tile matrix / tokens = {t_m['seconds'] / t_b['seconds']:.2f}")
        if a.snapatac2_python:
            r = run_snapatac2(a.snapatac2_python, bg, a.runs, a.threads)
            label = (f"{a.fragments:,} BGZF: SnapATAC2 import_fragments + add_tile_matrix "
                     "5 kb")
            rows.append((label, r, {}))
            print(f"SnapATAC2 tile matrix: {r['seconds']:.3f} s, peak {r['rss']:.0f} MiB, "
                  f"{r['shape']}, nnz {r['nnz']:,}", flush=True)
            print(f"BGZF: SnapATAC2 / genotok tile matrix = "
                  f"{r['seconds'] / t_m['seconds']:.2f} (goal >= 5); peak RSS genotok / "
                  f"SnapATAC2 = {t_m['rss'] / r['rss']:.2f} (goal <= 0.5)")
        if have_gtars and "gtars" not in a.skip:
            t_g = add(f"{a.fragments:,} BGZF: gtars tokenize_fragment_file",
                      SETUP_GTARS.format(tiles=str(tiles)),
                      f"tokenize_fragment_file({str(bg)!r}, tok)")
            print(f"BGZF: gtars / genotok tokens = {t_g['seconds'] / t_b['seconds']:.2f} "
                  "(goal >= 10 at 50M)")
    if "muon" not in a.skip and MUON.exists():
        t_mu = add("muon PBMC: genotok tile_matrix 500 bp (AnnData)",
                   SETUP_MUON.format(path=str(MUON), sizes=str(SIZES)),
                   f"genotok.tile_matrix({str(MUON)!r}, {str(SIZES)!r}, 500, "
                   f"n_threads={a.threads})")
        python = a.snapatac2_python
        if python is None:
            python = sys.executable if importlib.util.find_spec("snapatac2") else None
        if python:
            r = run_snapatac2(python, MUON, a.runs, a.threads, bin_size=500)
            rows.append(("muon PBMC: SnapATAC2 import_fragments + add_tile_matrix 500 bp", r,
                         {}))
            print(f"muon: SnapATAC2 {r['seconds']:.3f} s, {r['shape']}; SnapATAC2 / genotok "
                  f"= {r['seconds'] / t_mu['seconds']:.2f} (goal >= 5)", flush=True)
    print("\n| workload | best s | CPU s | peak RSS MiB | RSS after setup MiB |\n"
          "|---|---|---|---|---|")
    for label, r, _ in rows:
        print(f"| {label} | {r['seconds']:.3f} | {r.get('cpu', float('nan')):.2f} | "
              f"{r['rss']:.0f} | {r['setup']:.0f} |")
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
