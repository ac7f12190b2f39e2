"""Small synthetic example data shipped with genotok (regenerate with ``python -m genotok._examples``).

The files in ``genotok/examples/`` are made by :func:`make_examples` with a fixed seed: a universe
of 2,000 peak-like regions on four chromosomes and, in ``peaks/``, five narrowPeak query files, one
gzipped, with a few regions on contigs the
universe does not know.
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


def make_examples(out_dir: str | Path = EXAMPLES_DIR, seed: int = 7) -> list[Path]:
    """Write the example universe and query files into ``out_dir``; return their paths."""
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
    return written


def examples_dir() -> Path:
    """Folder of the bundled example data (``universe.bed``, ``peaks/sample*.narrowPeak[.gz]``)."""
    return EXAMPLES_DIR


if __name__ == "__main__":
    for p in make_examples():
        print(p)
