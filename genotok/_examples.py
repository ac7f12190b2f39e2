"""Small synthetic example data shipped with genotok (regenerate with ``python -m genotok._examples``).

The files in ``genotok/examples/`` are made by :func:`make_examples` with a fixed seed:

- ``universe.bed``: 2,000 peak-like regions on four chromosomes (the vocabulary);
- ``peaks/``: five narrowPeak query files, one gzipped, with a few regions on contigs the universe
  does not know;
- ``pbmc.h5ad``: a 20-cell × 300-peak count matrix (sparse, ``var`` columns ``chr``/``start``/``end``,
  ``obs`` columns ``barcode``/``cell_type``), its peaks near universe regions, as a cellranger-ATAC
  or ArchR peak matrix would be;
- ``fragments.tsv.gz``: a 10x fragment file of the same 20 barcodes (``chrom start end barcode
  count``, sorted, with a ``#`` header).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

EXAMPLES_DIR = Path(__file__).with_name("examples")
CHROMS = (("chr1", 2_000_000), ("chr2", 1_500_000), ("chr3", 1_000_000), ("chrX", 800_000))


def _universe(rng: np.random.Generator, n: int):
    lens = np.array([length for _, length in CHROMS], dtype=float)
    per = rng.multinomial(n, lens / lens.sum())
    out = []
    for (name, length), k in zip(CHROMS, per):
        starts = np.sort(rng.integers(1_000, length - 6_000, size=k))
        widths = np.clip(rng.lognormal(np.log(500), 0.5, size=k), 150, 3_000).astype(np.int64)
        out += [(name, int(s), int(s + w)) for s, w in zip(starts, widths)]
    return out


def _query(rng: np.random.Generator, universe, n: int):
    rows = []
    for i in range(n):
        if rng.random() < 0.75:  # near a universe peak
            c, s, e = universe[rng.integers(len(universe))]
            shift = int(rng.integers(-300, 300))
            s, e = max(0, s + shift), max(0, s + shift) + int(rng.integers(100, 900))
        elif rng.random() < 0.9:  # background
            c, length = CHROMS[rng.integers(len(CHROMS))]
            s = int(rng.integers(0, length - 1_000))
            e = s + int(rng.integers(100, 900))
        else:  # a contig the universe does not have
            c = ("chrUn_KI270742v1", "chrM", "chr1_KI270706v1_random")[rng.integers(3)]
            s = int(rng.integers(0, 30_000))
            e = s + int(rng.integers(100, 900))
        score = int(rng.integers(0, 1000))
        signal = rng.gamma(2.0, 5.0)
        rows.append(f"{c}\t{s}\t{e}\tpeak_{i}\t{score}\t.\t{signal:.4f}\t-1\t-1\t{(e - s) // 2}\n")
    return rows


CELL_TYPES = ("CD4+", "CD8+", "BCell", "Mono")


def _barcodes(rng: np.random.Generator, n: int) -> list[str]:
    letters = np.array(list("ACGT"))
    return ["".join(rng.choice(letters, 16)) + "-1" for _ in range(n)]


def _h5ad(path: Path, rng: np.random.Generator, universe, barcodes: list[str],
          n_peaks: int = 300) -> None:
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    pick = np.sort(rng.choice(len(universe), n_peaks, replace=False))
    shift = rng.integers(-100, 100, n_peaks)
    var = pd.DataFrame({"chr": [universe[i][0] for i in pick],
                        "start": [max(0, universe[i][1] + int(d)) for i, d in zip(pick, shift)],
                        "end": [universe[i][2] + int(d) for i, d in zip(pick, shift)]})
    var.index = [f"{c}:{a}-{b}" for c, a, b in zip(var["chr"], var["start"], var["end"])]
    counts = rng.poisson(0.25, (len(barcodes), n_peaks)).astype(np.float32)
    obs = pd.DataFrame({"barcode": barcodes,
                        "cell_type": [CELL_TYPES[i % len(CELL_TYPES)] for i in range(len(barcodes))]},
                       index=barcodes)
    anndata.AnnData(X=sp.csr_matrix(counts), obs=obs, var=var).write_h5ad(path)


def _fragments(path: Path, rng: np.random.Generator, universe, barcodes: list[str]) -> None:
    rows = []
    for bc in barcodes:
        for _ in range(int(rng.integers(20, 60))):
            if rng.random() < 0.8:  # in open chromatin: near a universe peak
                c, s, e = universe[rng.integers(len(universe))]
                a = int(rng.integers(s - 200, e))
            else:
                c, length = CHROMS[rng.integers(len(CHROMS))]
                a = int(rng.integers(0, length - 1_000))
            rows.append((c, max(0, a), max(0, a) + int(rng.integers(40, 400)), bc,
                         int(rng.integers(1, 4))))
    rank = {name: i for i, (name, _) in enumerate(CHROMS)}
    rows.sort(key=lambda r: (rank[r[0]], r[1], r[2], r[3]))
    text = "# id=genotok-example\n# reference=synthetic\n" + "".join(
        f"{c}\t{a}\t{b}\t{bc}\t{n}\n" for c, a, b, bc, n in rows)
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        fh.write(text.encode())


def make_examples(out_dir: str | Path = EXAMPLES_DIR, seed: int = 7) -> list[Path]:
    """Write the example universe, query files, ``.h5ad`` and fragments into ``out_dir``.

    Returns the paths written.
    """
    out_dir = Path(out_dir)
    (out_dir / "peaks").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    universe = _universe(rng, 2_000)
    written = [out_dir / "universe.bed"]
    written[0].write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in universe))
    for k in range(5):
        rows = _query(rng, universe, int(rng.integers(300, 800)))
        if k == 4:
            path = out_dir / "peaks" / f"sample{k}.narrowPeak.gz"
            with gzip.GzipFile(path, "wb", mtime=0) as fh:  # mtime=0: reproducible bytes
                fh.write("".join(rows).encode())
        else:
            path = out_dir / "peaks" / f"sample{k}.narrowPeak"
            path.write_text("".join(rows))
        written.append(path)
    cells = np.random.default_rng(seed + 1)  # its own stream: the files above stay as they were
    barcodes = _barcodes(cells, 20)
    _h5ad(out_dir / "pbmc.h5ad", cells, universe, barcodes)
    _fragments(out_dir / "fragments.tsv.gz", cells, universe, barcodes)
    return written + [out_dir / "pbmc.h5ad", out_dir / "fragments.tsv.gz"]


def examples_dir() -> Path:
    """Folder of the bundled example data.

    ``universe.bed``, ``peaks/sample*.narrowPeak[.gz]``, ``pbmc.h5ad`` (20 cells × 300 peaks) and
    ``fragments.tsv.gz`` (the same 20 cells); see :mod:`genotok._examples`.

    Examples
    --------
    >>> sorted(p.name for p in examples_dir().iterdir() if p.is_file())
    ['fragments.tsv.gz', 'pbmc.h5ad', 'universe.bed']
    """
    return EXAMPLES_DIR


if __name__ == "__main__":
    for p in make_examples():
        print(p)
