"""``genotok.warmup()``: compile every numba kernel ahead of first use (a top-level helper: it
reaches every room, like the package root).

With numba's on-disk cache on and two or more cores, the work is split between this process and
a helper process that compiles into the same cache (numba compiles on one thread: a second
process is the only way to use a second core). The steps are one list, :data:`UNITS`: this
process takes them from the front, the helper from the back, each claiming a step before it
runs it (a file in a shared temporary folder), until they meet, so both finish together
whatever each step costs on this machine. Then this process runs every step once more,
loading what the helper wrote (and compiling whatever a concurrent write to one kernel's index
lost). Measured: ``benchmarks/RESULTS.md``, first_use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time


#: the rooms with a warmup of their own (every kernel on tiny inputs of the dtypes they use)
_ROOMS = ("kernels.parse", "kernels.overlap", "kernels.small", "kernels.sort", "kernels.build",
          "kernels.packing", "kernels.mixing", "formats.corpus.reader", "singlecell.values",
          "singlecell.cells")


def _room(name: str):
    """The room ``name``'s own warmup, as a step of its own."""
    def step() -> None:
        import importlib

        importlib.import_module(f"genotok.{name}").warmup()

    step.__name__ = f"_room_{name.rsplit('.', 1)[-1]}"
    return step


def _example_tokenizer():
    """``(the bundled examples' folder, a tokenizer of their universe)``: what every README step
    below starts from."""
    from ._examples import examples_dir
    from .tokenizer import Tokenizer

    ex = examples_dir()
    return ex, Tokenizer.from_bed(ex / "universe.bed")


def _no_h5py() -> bool:
    """The single-cell steps need h5py (as the README's single-cell calls do): without it they
    are skipped."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        return True
    return False


def _quick_start() -> None:
    """What the README's Quick start calls, on the bundled example data (its dtypes and paths:
    a narrowPeak, a gzipped file, a batch over threads, region strings, padded arrays)."""
    ex, tok = _example_tokenizer()
    tok.encode(ex / "peaks" / "sample0.narrowPeak")
    tok.tokenize(["chr1:1000000-1002000"])
    files = sorted((ex / "peaks").iterdir())
    tok.encode_batch(files, n_threads=2)
    tok.encode_batch(files, n_threads=1)
    tok([["chr1:100-200"], ["chr2:5-10"]], padding=True, return_tensors="np")


def _corpus() -> None:
    """pretokenize into a corpus and read it back (the README's training section)."""
    from .formats.corpus import Corpus
    from .pipeline import pretokenize

    ex, tok = _example_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        run = pretokenize(ex / "peaks", tok, os.path.join(tmp, "corpus"), progress=False,
                          n_threads=2)
        corpus = Corpus.open(run.out, expect=tok)
        corpus[0]
        corpus.get_batch([4, 0, 2])


def _anndata_call(k: int):
    """The README's AnnData call ``k`` (of 4) as a step of its own (a parallel warmup shares
    them out one by one; skipped without h5py)."""
    def step() -> None:
        if _no_h5py():
            return
        import anndata

        from .singlecell import CellSpec, tokenize_anndata
        from .singlecell.spec import Normalize, RankByMedian

        ex, tok = _example_tokenizer()
        path = ex / "pbmc.h5ad"
        if k == 0:
            tokenize_anndata(path, tok)
        elif k == 1:  # in memory, as the README reads it too
            tokenize_anndata(anndata.read_h5ad(path), tok, CellSpec(max_length=2048))
        elif k == 2:  # rank-value over peaks
            tokenize_anndata(anndata.read_h5ad(path), tok, CellSpec(
                encoding=(Normalize(1e4), RankByMedian()), max_length=2048))
        else:
            with tempfile.TemporaryDirectory() as tmp:  # the corpus output (uint32 ids)
                tokenize_anndata(path, tok, out=os.path.join(tmp, "pbmc.gtokc"),
                                 obs_columns=["cell_type"])

    step.__name__ = f"_anndata_{k}"
    return step


_ANNDATA = tuple(map(_anndata_call, range(4)))


def _fragments() -> None:
    """The README's fragment-file calls (skipped without h5py, as the single-cell block)."""
    if _no_h5py():
        return
    from .singlecell import fragment_matrix, tokenize_fragments

    ex, tok = _example_tokenizer()
    tokenize_fragments(ex / "fragments.tsv.gz", tok)
    fragment_matrix(ex / "fragments.tsv.gz", tok)


#: every step of a warmup, one list: in one process they run in order; with a helper, this
#: process takes them from the front and the helper from the back, until they meet. The order
#: makes the halves about equal with no kernel compiled twice (measured, numba 0.68: the region
#: rooms ~28 CPU s with the process's start and the cells room ~27 here, the values room ~36
#: and the fragment calls ~20 in the helper; the AnnData calls then load only)
UNITS = (*map(_room, _ROOMS[:-2]), _quick_start, _corpus, _room(_ROOMS[-1]), *_ANNDATA,
         _fragments, _room(_ROOMS[-2]))


def _claim(folder: str, i: int) -> bool:
    """Whether this process claimed step ``i`` (the other has not)."""
    try:
        os.close(os.open(os.path.join(folder, str(i)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _take(folder: str, order) -> None:
    """Run the steps of :data:`UNITS` in ``order`` while this process claims them (the first
    claimed by the other process ends the walk: it came from the other end)."""
    for i in order:
        if not _claim(folder, i):
            return
        UNITS[i]()


def _helper(folder: str) -> None:
    """The helper process's share (``python -c "from genotok._warmup import _helper; ..."``):
    the steps of :data:`UNITS` from the back; prints how many kernels it compiled."""
    from . import _config

    _take(folder, reversed(range(len(UNITS))))
    print(_config.NOTICE.compiled, flush=True)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


def _helped() -> bool:
    """Whether a helper process would pay: not when the kernel cache is off (its work would be
    lost), on one core, or when the cache already holds the helper's longest compile (a warm
    cache, where a helper would double the second a warmup takes)."""
    from . import _config

    if not _config._CACHE or _cores() < 2 or os.environ.get("GENOTOK_WARMUP_SERIAL", "") not in (
            "", "0"):
        return False
    from .kernels import cells

    return not _config.kernel_ready(cells.cell_tokens)


def _start_helper(folder: str):
    """The helper process, claiming its steps in ``folder``, or ``None`` if it did not start."""
    from . import _config

    env = dict(os.environ, GENOTOK_QUIET_COMPILE="1")
    cache = _config.kernel_cache_dir()
    if cache is not None:
        env["GENOTOK_KERNEL_CACHE"] = cache
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    try:
        return subprocess.Popen([sys.executable, "-c",
                                 f"from genotok._warmup import _helper; _helper({folder!r})"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
    except OSError:
        return None


def warmup() -> None:
    """Compile every numba kernel now (on tiny inputs, then on the README's calls with the
    bundled example data) instead of on first use.

    Each group of kernels that compiles says so on stderr with an estimate and the step
    (``warmup 1/2``: with a helper process on a second core, see the module documentation;
    ``warmup 5/16`` in one process: ``GENOTOK_WARMUP_SERIAL=1`` or one core), and a last line
    gives the total. With numba's on-disk cache (on by
    default) the kernels are compiled once per machine: later calls take about a second.

    What it covers: every kernel on the dtypes genotok hands them (matrix values float32 or
    float64, column indices int32: an int64 index array is cast, exactly,
    :func:`genotok.singlecell.chunks.kernel_ints`), so no later call compiles. One exception,
    on bad input only: column indices beyond int32 stay int64 for the checks to report, which
    compiles the check's int64 variant first.

    Examples
    --------
    >>> warmup()  # later first calls skip compilation
    """
    from . import _config

    notice = _config.NOTICE
    before, t0 = notice.compiled, time.perf_counter()
    folder = tempfile.mkdtemp(prefix="genotok-warmup-") if _helped() else None
    helper, by_helper = folder and _start_helper(folder), 0
    try:
        if helper is not None:
            notice.context = "warmup 1/2"
            _take(folder, range(len(UNITS)))
            out, _ = helper.communicate()
            by_helper = int(out.split()[-1]) if helper.returncode == 0 and out.split() else 0
        for k, step in enumerate(UNITS, 1):  # (after a helper: loads, compiles the rest)
            notice.context = f"warmup {k}/{len(UNITS)}" if helper is None else "warmup 2/2"
            step()
    finally:
        notice.context = ""
        if helper is not None and helper.poll() is None:
            helper.kill()
            helper.wait()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    n = notice.compiled - before + by_helper
    if n and _config.notices_on() and sys.stderr is not None:
        print(f"genotok: warmup compiled {n} kernels in {time.perf_counter() - t0:.0f} s "
              f"({_config.cache_note()})", file=sys.stderr, flush=True)
