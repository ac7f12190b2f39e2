"""``genotok.warmup()``: compile every numba kernel ahead of first use (a top-level helper: it
reaches every room, like the package root)."""

from __future__ import annotations

import os
import sys
import tempfile
import time


def _rooms() -> None:
    """Each room's own warmup: every kernel on tiny inputs of the dtypes the rooms use."""
    from .formats.corpus import reader
    from .kernels import build, mixing, overlap, packing, parse, small, sort
    from .singlecell import cells, values

    for room in (parse, overlap, small, sort, build, packing, mixing, cells, values, reader):
        room.warmup()


def _quick_start() -> None:
    """What the README's Quick start calls, on the bundled example data (its dtypes and paths:
    a narrowPeak, a gzipped file, a batch over threads, region strings, padded arrays)."""
    from ._examples import examples_dir
    from .tokenizer import Tokenizer

    ex = examples_dir()
    tok = Tokenizer.from_bed(ex / "universe.bed")
    tok.encode(ex / "peaks" / "sample0.narrowPeak")
    tok.tokenize(["chr1:1000000-1002000"])
    files = sorted((ex / "peaks").iterdir())
    tok.encode_batch(files, n_threads=2)
    tok.encode_batch(files, n_threads=1)
    tok([["chr1:100-200"], ["chr2:5-10"]], padding=True, return_tensors="np")


def _corpus() -> None:
    """pretokenize into a corpus and read it back (the README's training section)."""
    from ._examples import examples_dir
    from .formats.corpus import Corpus
    from .pipeline import pretokenize
    from .tokenizer import Tokenizer

    ex = examples_dir()
    tok = Tokenizer.from_bed(ex / "universe.bed")
    with tempfile.TemporaryDirectory() as tmp:
        run = pretokenize(ex / "peaks", tok, os.path.join(tmp, "corpus"), progress=False,
                          n_threads=2)
        corpus = Corpus.open(run.out, expect=tok)
        corpus[0]
        corpus.get_batch([4, 0, 2])


def _single_cell() -> None:
    """The README's single-cell calls (skipped without h5py: they need it anyway)."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        return
    import anndata

    from ._examples import examples_dir
    from .singlecell import CellSpec, fragment_matrix, tokenize_anndata, tokenize_fragments
    from .singlecell.spec import Normalize, RankByMedian
    from .tokenizer import Tokenizer

    ex = examples_dir()
    tok = Tokenizer.from_bed(ex / "universe.bed")
    adata = anndata.read_h5ad(ex / "pbmc.h5ad")  # in memory, as the README reads it too
    tokenize_anndata(ex / "pbmc.h5ad", tok)
    tokenize_anndata(adata, tok, CellSpec(max_length=2048))
    tokenize_anndata(adata, tok, CellSpec(encoding=(Normalize(1e4), RankByMedian()),
                                          max_length=2048))  # rank-value over peaks
    with tempfile.TemporaryDirectory() as tmp:  # the corpus output's own path (uint32 ids)
        tokenize_anndata(ex / "pbmc.h5ad", tok, out=os.path.join(tmp, "pbmc.gtokc"),
                         obs_columns=["cell_type"])
    tokenize_fragments(ex / "fragments.tsv.gz", tok)
    fragment_matrix(ex / "fragments.tsv.gz", tok)


#: (what, how) in order; a step's compile notices say "warmup k/n"
STEPS = (("kernels", _rooms), ("quick start", _quick_start), ("corpus", _corpus),
         ("single cell", _single_cell))


def warmup() -> None:
    """Compile every numba kernel now (on tiny inputs, then on the README's calls with the
    bundled example data) instead of on first use.

    Each group of kernels that compiles says so on stderr with an estimate and the step
    (``warmup 2/4``), and a last line gives the total. With numba's on-disk cache (on by
    default) the kernels are compiled once per machine: later calls take about a second.

    Examples
    --------
    >>> warmup()  # later first calls skip compilation
    """
    from . import _config

    notice = _config.NOTICE
    before, t0 = notice.compiled, time.perf_counter()
    try:
        for k, (_, step) in enumerate(STEPS, 1):
            notice.context = f"warmup {k}/{len(STEPS)}"
            step()
    finally:
        notice.context = ""
    n = notice.compiled - before
    if n and _config.notices_on() and sys.stderr is not None:
        print(f"genotok: warmup compiled {n} kernels in {time.perf_counter() - t0:.0f} s "
              f"({_config.cache_note()})", file=sys.stderr, flush=True)
