"""Small AnnData for the container tests (Zarr, Cell Ranger folders, SOMA): each container is
checked against the same AnnData tokenized in memory."""

from __future__ import annotations

import numpy as np

UNIVERSE = ["chr1:0-100", "chr1:100-200", "chr1:300-400", "chr2:0-100", "chr2:150-250"]
#: features: region strings (some hit several regions, one hits none)
PEAKS = ["chr1:10-20", "chr1:150-160", "chr2:10-20", "chr1:50-350", "chr9:0-10",
         "chr2:200-210", "chr1:0-400"]


def adata(X, *, n_peaks: int | None = None, seed: int = 0):
    """An AnnData of ``X`` (cells x peaks), peaks named by :data:`PEAKS` (cycled with a
    shift so names stay unique), an ``obs`` with a categorical, a number and ``n_counts``."""
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    n, m = X.shape
    names = [_peak(j) for j in range(m)]
    rng = np.random.default_rng(seed)
    total = np.asarray(X.sum(axis=1)).ravel().astype(np.float64)
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["B cell", "T cell"], n),
                                                    categories=["B cell", "T cell"]),
                        "batch": rng.integers(0, 3, n), "n_counts": total},
                       index=[f"cell{i}" for i in range(n)])
    chrom = [p.split(":")[0] for p in names]
    start = [int(p.split(":")[1].split("-")[0]) for p in names]
    end = [int(p.split("-")[1]) for p in names]
    var = pd.DataFrame({"chrom": chrom, "start": start, "end": end}, index=names)
    return ad.AnnData(X if sp.issparse(X) else np.asarray(X), obs=obs, var=var)


def _peak(j: int) -> str:
    base = PEAKS[j % len(PEAKS)]
    if j < len(PEAKS):
        return base
    c, r = base.split(":")
    s, e = map(int, r.split("-"))
    k = j // len(PEAKS)
    return f"{c}:{s + k}-{e + k}"


def counts(n: int, m: int, density: float, seed: int, *, dense: bool = False):
    """An integer-valued float32 matrix (zeros: empty cells and features where they fall)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = (rng.random((n, m)) < density) * rng.integers(1, 9, (n, m))
    X = X.astype(np.float32)
    return X if dense else sp.csr_matrix(X)


def rows(r) -> list:
    return [np.asarray(x).tolist() for x in (r.to_list() if hasattr(r, "to_list") else r)]
