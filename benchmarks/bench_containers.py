"""Cells where they live: a SOMA experiment, an AnnData Zarr store and a Cell Ranger matrix
folder against the same cells in an ``.h5ad`` (the anchor), timed in the same run.

Data (generated here, in a temporary directory): ``--cells`` cells x ``--genes`` genes of raw
counts, about ``--nnz`` detected genes per cell (uniform columns, counts 1-9), Ensembl-style
ids; written once as ``.h5ad`` (CSR), as a SOMA experiment (``tiledbsoma.io.from_anndata``,
layer ``raw``), as an AnnData Zarr store and (``--mtx``) as a Cell Ranger folder.

Each is tokenized by path with the Geneformer V1 preset (``tokenize_anndata``, in-memory
result; kernels compiled before timing), best of ``--runs``; the ratio is each container's time
over the ``.h5ad``'s. The issue's goal: the 200,000-cell SOMA experiment within 1.5x of the
``.h5ad``. Outputs are compared (equal input_ids) in the same run.

Example: ``python benchmarks/bench_containers.py --cells 200000 --genes 2000 --nnz 60``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import best_of, goal, machine, table  # noqa: E402


def make(n: int, m: int, nnz: int, seed: int = 0):
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    per = rng.poisson(nnz, n).clip(0, m)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(per, out=indptr[1:])
    cols = np.concatenate([np.sort(rng.choice(m, k, replace=False)) for k in per]) \
        if n else np.zeros(0, np.int64)
    data = rng.integers(1, 10, cols.size).astype(np.float32)
    X = sp.csr_matrix((data, cols.astype(np.int32), indptr), shape=(n, m))
    genes = [f"ENSG{i:011d}" for i in range(m)]
    obs = pd.DataFrame({"n_counts": np.asarray(X.sum(1)).ravel().astype(np.float64)},
                       index=[f"cell{i}" for i in range(n)])
    return ad.AnnData(X, obs=obs, var=pd.DataFrame(index=genes))


def write_mtx(a, folder: Path) -> None:
    import gzip

    folder.mkdir()
    M = a.X.T.tocoo()
    order = np.lexsort((M.row, M.col))  # by barcode, as Cell Ranger writes it
    with gzip.open(folder / "matrix.mtx.gz", "wt", compresslevel=1) as fh:
        fh.write(f"%%MatrixMarket matrix coordinate integer general\n"
                 f"{M.shape[0]} {M.shape[1]} {M.nnz}\n")
        np.savetxt(fh, np.column_stack([M.row[order] + 1, M.col[order] + 1,
                                        M.data[order].astype(np.int64)]), fmt="%d")
    with gzip.open(folder / "barcodes.tsv.gz", "wt") as fh:
        fh.write("".join(f"{b}\n" for b in a.obs_names))
    with gzip.open(folder / "features.tsv.gz", "wt") as fh:
        fh.write("".join(f"{g}\t{g}\tGene Expression\n" for g in a.var_names))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--genes", type=int, default=2_000)
    ap.add_argument("--nnz", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mtx", action="store_true", help="also a Cell Ranger folder (slow write)")
    args = ap.parse_args(argv)

    import anndata as ad
    import tiledbsoma.io

    import genotok

    tmp = Path(tempfile.mkdtemp(prefix="bench-containers-"))
    try:
        t0 = time.perf_counter()
        a = make(args.cells, args.genes, args.nnz)
        paths = {".h5ad": tmp / "cells.h5ad", "SOMA": tmp / "exp", "Zarr": tmp / "cells.zarr"}
        a.write_h5ad(paths[".h5ad"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tiledbsoma.io.from_anndata(str(paths["SOMA"]), a, measurement_name="RNA",
                                       X_layer_name="raw")
            ad.settings.zarr_write_format = 3
            a.write_zarr(paths["Zarr"])
        if args.mtx:
            paths["Cell Ranger folder"] = tmp / "filtered_feature_bc_matrix"
            write_mtx(a, paths["Cell Ranger folder"])
        made = time.perf_counter() - t0
        genes = list(a.var_names)
        rng = np.random.default_rng(1)
        vocab = {"<pad>": 0, "<mask>": 1,
                 **{g: i + 2 for i, g in enumerate(rng.permutation(genes))}}
        medians = {g: float(x) for g, x in zip(genes, rng.lognormal(0, 1, len(genes)))}
        tok, spec = genotok.presets.geneformer(vocab, medians, version=1)

        def run(path):
            return genotok.tokenize_anndata(str(path), tok, spec)

        want = run(paths[".h5ad"])  # compiles
        times, rows = {}, []
        for name, path in paths.items():
            got = run(path)
            same = np.array_equal(got.data, want.data) and np.array_equal(got.offsets,
                                                                         want.offsets)
            times[name] = best_of(lambda p=path: run(p), repeat=args.runs)
            rows.append([name, f"{times[name]:.2f}", f"{args.cells / times[name]:,.0f}",
                         f"{times[name] / times['.h5ad']:.2f}x", "yes" if same else "NO"])
        print(f"# Containers: Geneformer V1 from each container by path\n\n- machine: "
              f"{machine()}\n- {args.cells:,} cells x {args.genes:,} genes, "
              f"{a.X.nnz:,} stored entries (~{args.nnz} per cell); data made in {made:.0f} s\n")
        print(table(rows, ["container", "seconds (best of %d)" % args.runs, "cells/s",
                           "time / .h5ad's", "same input_ids"]))
        r = times["SOMA"] / times[".h5ad"]
        goal(f"SOMA experiment, {args.cells:,} cells, Geneformer V1, vs the same .h5ad",
             "<= 1.5x the .h5ad's time", f"{r:.2f}x", r <= 1.5)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
