"""Single-cell tokenization: cells/s and tokens/s vs the geniml-style loop and a bare gather.

Anchors measured in the same run:

* **geniml-style loop** — the geniml way (``../shared/spec``: ≈ 214 cells/s): for each cell,
  ``X[i].nonzero()`` → the peaks' ``Region`` objects → gtars ``Tokenizer.__call__``. Skipped
  with a note when gtars is not installed. Timed on ``--loop-cells`` cells, extrapolated.
* **genotok loop** — the same loop with genotok's ``Tokenizer.encode`` per cell (what a user
  gets by swapping the tokenizer but keeping the loop).
* **gather** — ``lut.take(X.indices)`` over the whole CSR (one token per entry, no per-cell
  work): the memory-bound limit of any per-cell gather.
* **gather of the output's length** — the same gather, on every numba thread, over an index as
  long as genotok's output (1.44 tokens per entry here): the cost of writing that many int64
  tokens at all, so the loop's time over it is the highest ratio any tokenizer could reach.

Then genotok's ``tokenize_anndata`` on the in-memory matrix (cold = first call incl. numba
compile or cache load; warm = best of repeats, reusing the var map made from the same
``var_names``, as the loops reuse their per-peak lists; "var map rebuilt" = warm with that map
made again, as for a new AnnData), in 64-cell mini-batches (views, as inference reads them) and
from the ``.h5ad`` path (chunked h5py reads).
Then the cost of validating indptr/indices (``genotok._validate``) as a share of the whole call
(goal < 5%). Finally the peak RSS of backed mode (``.h5ad`` path → corpus, ``--memory-mb`` chunks) for files
of growing size, each in a fresh subprocess, next to the RSS of the same process after imports.

Data: ``gendata.py h5ad`` and ``gendata.py universe`` into ``benchmarks/_data/``; ``gendata.py
fragments`` for the fragment-file row.

Example: ``python benchmarks/bench_anndata.py --cells 10000 --peaks 200000 --nnz 5000``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (  # noqa: E402
    HERE,
    best_of,
    best_of_each,
    cold_warm_section,
    data_option,
    gendata,
    goal,
    in_subprocess,
    machine,
    once,
    parallel_take,
    ratio,
    sweep_section,
    table,
    universe_file,
)

# Peak RSS in a fresh process: _common.peak_rss_mib (VmHWM; getrusage would report at least the
# parent's RSS at fork time, hiding the figure we want).
RSS_CODE = """
import sys, tempfile, os
sys.path.insert(0, {here!r})
from _mem import peak_rss_mib
import genotok
import genotok.singlecell as gad
from genotok import Tokenizer
tok = Tokenizer.from_bed({universe!r})
genotok.warmup()
base = peak_rss_mib()
out = os.path.join(tempfile.mkdtemp(), "c.gtokc")
c = gad.tokenize_anndata({path!r}, tok, out=out, memory_mb={mb})
print(base, peak_rss_mib(), len(c), c.n_tokens)
"""


def h5ad_file(cells: int, peaks: int, nnz: int, names: str = "colon") -> Path:
    return gendata("h5ad", f"cells_{cells}_{peaks}_{nnz}_{names}.h5ad", "--cells", str(cells),
                   "--peaks", str(peaks), "--nnz", str(nnz), "--names", names)


def validation_section(a, path: Path, tok, repeat: int, n_threads) -> None:
    """Cost of checking the integers that index memory (issue 19: ``genotok._validate``) next
    to the whole ``tokenize_anndata`` call that pays it, in memory (CSR and CSC) and by path.

    The in-memory check is ``anndata._checked_csr`` (indptr monotone and in bounds, every index
    in range); for CSC the same check of the CSC arrays, before scipy's conversion (which is
    not counted); by path, the same checks over the arrays the reader reads (the h5py reading
    itself is not counted)."""
    from genotok import _validate as V
    import genotok.singlecell as gad
    from genotok.singlecell import chunks as gsrc

    X = a.X.tocsr()
    csc = a.copy()
    csc.X = X.tocsc()
    n_rows, n_cols = X.shape
    fns = {
        "check_csr": lambda: gsrc._checked_csr(X, "X"),
        "check_csc": lambda: V.compressed(csc.X.indptr, csc.X.indices, n_cols, n_rows, "X",
                                          fmt="csc"),
        "check_path": lambda: (V.offsets(X.indptr, X.indices.size, "p", n_rows=n_rows),
                               V.indices(X.indices, n_cols, "p")),
        "call_csr": lambda: gad.tokenize_anndata(a, tok, n_threads=n_threads),
        "call_csc": lambda: gad.tokenize_anndata(csc, tok, n_threads=n_threads),
        "call_path": lambda: gad.tokenize_anndata(path, tok, n_threads=n_threads),
    }
    fns["call_csr"]()  # compile / warm the var map
    t = best_of_each(fns, max(2, repeat))
    rows = []
    for kind, label in (("csr", "in memory, CSR"), ("csc", "in memory, CSC (checked before conversion)"),
                        ("path", ".h5ad path, chunked")):
        share = t[f"check_{kind}"] / t[f"call_{kind}"]
        rows.append([label, f"{t[f'check_{kind}'] * 1e3:.2f}", f"{t[f'call_{kind}'] * 1e3:.1f}",
                     f"{100 * share:.1f}%"])
    print(f"\nvalidation of indptr/indices ({X.nnz:,} stored entries, {n_rows:,} cells) vs the "
          "whole tokenize_anndata call (warm, best of each):")
    print(table(rows, ["input", "validation ms", "whole call ms", "share"]))
    worst = max(t[f"check_{k}"] / t[f"call_{k}"] for k in ("csr", "csc", "path"))
    goal(f"{n_rows:,}-cell h5ad", "validation < 5% of the call", f"{100 * worst:.1f}% (worst)",
         worst < 0.05)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", type=int, default=10_000)
    p.add_argument("--peaks", type=int, default=100_000)
    p.add_argument("--nnz", type=int, default=2000, help="mean non-zero peaks per cell")
    p.add_argument("--universe", type=int, default=200_000,
                   help="regions of the gendata universe used for the fragment file")
    p.add_argument("--loop-cells", type=int, default=200, help="cells timed for the loop anchor")
    p.add_argument("--repeat", type=int, default=5,
                   help="warm timings are the best of this many (fresh-memory costs vary a lot)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--rss-cells", default="1000,4000,16000",
                   help="comma-separated cell counts for the backed-mode RSS rows ('' to skip)")
    p.add_argument("--memory-mb", type=float, default=64, help="chunk budget in backed mode")
    p.add_argument("--fragments", type=int, default=200,
                   help="cells in the fragment file (0: skip)")
    p.add_argument("--validation-only", action="store_true",
                   help="print only the validation-cost section (issue 19)")
    data_option(p)
    args = p.parse_args()

    import anndata

    from genotok import AnnDataOptions, CellSpec, RegionSet, Tokenizer, Universe
    import genotok.singlecell as gad
    from genotok.singlecell import varnames as gvar

    print(f"# bench_anndata on {machine()}")
    path = h5ad_file(args.cells, args.peaks, args.nnz)
    a = anndata.read_h5ad(path)
    # the universe: every peak plus a copy of every other peak shifted by 250 bp (so a peak hits
    # one to three tokens, as with a real consensus peak set)
    upath = path.with_suffix(".universe.bed")
    if not upath.exists():
        rs = gad.var_regions(a)
        names = np.asarray(rs.chrom_names, dtype=object)[rs.codes]
        both = RegionSet.from_arrays(np.concatenate([names, names[::2]]),
                                     np.concatenate([rs.starts, rs.starts[::2] + 250]),
                                     np.concatenate([rs.ends, rs.ends[::2] + 250]))
        Universe(both).write_bed(upath)
    tok = Tokenizer.from_bed(upath, n_threads=args.threads)
    X = a.X.tocsr()
    nnz = X.nnz
    print(f"# {args.cells:,} cells × {a.n_vars:,} peaks, {nnz:,} non-zeros; universe "
          f"{tok.universe.n_regions:,} regions")

    if args.validation_only:
        validation_section(a, path, tok, args.repeat, args.threads)
        return

    # -- anchor 1: the per-cell Python loops
    regions = gad.var_regions(a)
    k = min(args.loop_cells, X.shape[0])

    def loop():
        out = []
        for i in range(k):
            cols = X[i].nonzero()[1]
            out.append(tok.encode(regions.take(cols)))
        return out

    fns = {"ours_loop": loop}
    try:
        from gtars.models import Region
        from gtars.tokenizers import Tokenizer as GT

        gt = GT.from_bed(str(upath))
        chroms = np.asarray(regions.chrom_names, dtype=object)[regions.codes].tolist()
        starts, ends = regions.starts.tolist(), regions.ends.tolist()

        def geniml_loop():
            out = []
            for i in range(k):
                cols = X[i].nonzero()[1]
                out.append(gt([Region(chroms[c], starts[c], ends[c], "") for c in cols])
                           ["input_ids"])
            return out

        fns["loop"] = geniml_loop
    except ImportError:
        print("gtars not installed (pip install gtars): no geniml-style loop; ratios are "
              "against the genotok loop")

    # -- anchor 2: the bare gather
    hits = tok.region_hits(regions)
    lut = np.where(hits.lengths > 0, hits.data[np.minimum(hits.offsets[:-1], hits.data.size - 1)]
                   if hits.data.size else 0, tok.unk_token_id).astype(np.int64)
    fns["gather"] = lambda: lut.take(X.indices)

    # -- genotok: cold first, then every timing in turn (anchors included), best of --repeat
    t_cold, res = once(lambda: gad.tokenize_anndata(a, tok, n_threads=args.threads))
    # -- anchor 3: the same gather, as long as genotok's output (the floor of writing it at all)
    out_idx = np.resize(X.indices, res.data.size)
    parallel_take(lut, out_idx[:16])  # compile
    fns["gather_out"] = lambda: parallel_take(lut, out_idx)
    fns["warm"] = lambda: gad.tokenize_anndata(a, tok, n_threads=args.threads)
    fns["rebuilt"] = lambda: (gvar._VAR_MAPS.clear(),
                              gad.tokenize_anndata(a, tok, n_threads=args.threads))
    mini = min(X.shape[0], 64 * 50)  # the first 3,200 cells, 64 at a time
    fns["mini"] = lambda: [gad.tokenize_anndata(a[i:i + 64], tok, n_threads=args.threads)
                           for i in range(0, mini, 64)]
    fns["u32"] = lambda: gad.tokenize_anndata(a, tok, read=AnnDataOptions(dtype=np.uint32),
                                              n_threads=args.threads)
    fns["path"] = lambda: gad.tokenize_anndata(path, tok, n_threads=args.threads)
    fns["val"] = lambda: gad.tokenize_anndata(
        a, tok, CellSpec(values=True, order="value", max_length=512), n_threads=args.threads)
    t = best_of_each(fns, max(2, (args.repeat + 1) // 2))
    t_ours_loop = t["ours_loop"] / k  # seconds per cell
    t_loop = t["loop"] / k if "loop" in t else None
    t_ref = t_loop if t_loop is not None else t_ours_loop
    t_gather, t_warm, t_u32 = t["gather"], t["warm"], t["u32"]
    t_gout = t["gather_out"]
    t_path, t_val = t["path"], t["val"]
    t_mini = t["mini"] * X.shape[0] / mini  # extrapolated to every cell
    n_tok = res.data.size
    n = X.shape[0]
    loops = [("geniml-style loop (gtars per cell)", t_loop),
             ("genotok loop (encode per cell)", t_ours_loop)]
    rows = [[name, f"{1 / t:,.0f}", f"{n_tok / n / t:,.0f}", f"{n * t:.3f} (extrap.)",
             ratio(n * t_ref, n * t)] for name, t in loops if t is not None]
    batches = f"genotok 64-cell mini-batches (views; {mini:,} cells, extrap.)"
    for name, t, per in [("bare np.take gather (limit)", t_gather, nnz),
                         ("gather as long as genotok's output, all threads (floor)", t_gout,
                          n_tok),
                         ("genotok in memory, cold", t_cold, n_tok),
                         ("genotok in memory, warm", t_warm, n_tok),
                         ("genotok in memory, warm, var map rebuilt", t["rebuilt"], n_tok),
                         (batches, t_mini, n_tok),
                         ("genotok in memory, warm, dtype=uint32", t_u32, n_tok),
                         ("genotok .h5ad path (chunked)", t_path, n_tok),
                         ("genotok values, order=value, top-512", t_val, n_tok)]:
        rows.append([name, f"{n / t:,.0f}", f"{per / t:,.0f}", f"{t:.3f}", ratio(n * t_ref, t)])
    print(table(rows, ["method", "cells/s", "tokens/s (gather: entries/s)", "seconds",
                       "vs loop"]))
    cells = f"{n:,}-cell h5ad (in memory)"
    goal(cells, ">= 500x the geniml-style loop",
         f"{n * t_loop / t_warm:,.0f}x (a gather of the same output: {n * t_loop / t_gout:,.0f}x)"
         if t_loop is not None else "", None if t_loop is None else n * t_loop / t_warm >= 500)
    goal(cells, "within 2x of the gather limit", f"{t_warm / t_gather:.2f}x",
         t_warm / t_gather <= 2)
    print(f"\ngenotok warm vs the {loops[0 if t_loop is not None else 1][0]}: "
          f"{n * t_ref / t_warm:,.0f}x (goal >= 500x); vs bare gather: "
          f"{t_warm / t_gather:.2f}x the gather's time (goal <= 2x)")
    print(f"writing {n_tok:,} int64 tokens at all, as a bare gather of that length on every "
          f"thread, takes {t_gout:.3f} s: {n * t_ref / t_gout:,.0f}x the loop is the most any "
          f"tokenizer returning int64 could reach in this run; genotok takes "
          f"{t_warm / t_gout:.2f}x that")

    setup = ("import anndata\nfrom genotok import Tokenizer\nimport genotok.singlecell as gad\n"
             f"tok = Tokenizer.from_bed({str(upath)!r})\n"
             f"a = anndata.read_h5ad({str(path)!r})\n")
    call = "gad.tokenize_anndata(a, tok)"
    print()
    print(cold_warm_section(f"tokenize_anndata, {n:,} cells in memory", setup, call,
                            size=f"{nnz:,} nnz", repeat=args.repeat))
    sizes = sorted({max(1, n // 4), max(1, n // 2), n})
    print(sweep_section("tokenize_anndata in memory",
                        {c: setup + f"a = a[:{c}].copy()\n" for c in sizes}, call, "cell",
                        threads=2, repeat=args.repeat))

    validation_section(a, path, tok, args.repeat, args.threads)

    if args.fragments:
        fu = universe_file(args.universe)
        fpath = gendata("fragments", f"fragments_{fu.stem}_{args.fragments}.tsv.gz",
                        "--cells", str(args.fragments), inputs=(fu,))
        ftok = Tokenizer.from_bed(fu, n_threads=args.threads)
        size = os.path.getsize(fpath)
        t_cold_f, (names, fr) = once(lambda: gad.tokenize_fragments(fpath, ftok))
        t_f = best_of(lambda: gad.tokenize_fragments(fpath, ftok), max(1, args.repeat - 1))
        print(f"\nfragments: {fpath.name} ({size / 2**20:.1f} MiB gz), {len(names):,} cells, "
              f"{fr.data.size:,} tokens: {t_f:.2f} s warm ({t_cold_f:.2f} s cold), "
              f"{size / 2**20 / t_f:.1f} MiB/s compressed")

    if args.rss_cells:
        rss_rows = []
        for c in [int(x) for x in args.rss_cells.split(",") if x]:
            fp = h5ad_file(c, args.peaks, args.nnz)
            out = in_subprocess(RSS_CODE.format(here=str(HERE), universe=str(upath),
                                                path=str(fp), mb=args.memory_mb))
            base, peak, n_rec, n_tokens = out.split()
            rss_rows.append([f"{c:,}", f"{os.path.getsize(fp) / 2**20:,.0f}", f"{float(base):,.0f}",
                             f"{float(peak):,.0f}", f"{float(peak) - float(base):,.0f}",
                             f"{int(n_tokens):,}"])
        print(f"\nbacked mode (.h5ad path → corpus, memory_mb={args.memory_mb:g}), peak RSS "
              "in a fresh process:")
        print(table(rss_rows, ["cells", "file MiB", "RSS after imports MiB", "peak RSS MiB",
                               "growth MiB", "tokens"]))


if __name__ == "__main__":
    main()
