"""Each store against the corpus (the anchor): writing, and reading back for training.

``write``: generated narrowPeak files (the inputs of ``bench_pipeline.py``) → each store,
alternating, best of ``--repeat``; the goal (issue 34): Parquet / Arrow output within 1.5x the
corpus time.

``read``: the same generated records (``--records``, log-normal lengths) in a corpus, Parquet
and Arrow shards, opened with ``Corpus.open`` and trained through: one epoch of
``CorpusIterableDataset`` (MLM batches) and of a two-corpus ``mix``, short epochs interleaved
in a rotating order, ``--read-repeat`` rounds. The ratio is the median of each round's ratio
of **CPU time** (``time.process_time``; one numba and one torch thread: the loader without
workers is one thread), which the other processes of the shared box barely move, where
wall-clock ratios swung 0.65x-1.5x between runs; the wall-clock median is shown beside it.
Once open, every store is read by the same gather from the same kind of arrays. The goal
(issue 40): Parquet / Arrow at >= 0.9x the corpus loader's throughput.

    python benchmarks/bench_stores.py [write|read|all] [--files 40] [--lines 50000] [--repeat 3]
        [--records 30000] [--read-repeat 15]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import data_option, gendata, goal, machine, table, universe_file

import genotok
from genotok.pipeline.run import pretokenize


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", choices=("write", "read", "all"), default="all")
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-universe", type=int, default=1_000_000)
    ap.add_argument("--records", type=int, default=30_000)
    ap.add_argument("--read-repeat", type=int, default=15)
    ap.add_argument("--mean-length", type=float, default=150)
    data_option(ap)
    args = ap.parse_args(argv)
    if args.what in ("read", "all"):
        read_section(args)
    if args.what in ("write", "all"):
        write_section(args)
    return 0


def _records(n: int, mean: float, vocab: int):
    """Batches of generated records (log-normal lengths), the same for every store."""
    rng = np.random.default_rng(0)
    for a in range(0, n, 20_000):
        m = min(20_000, n - a)
        lens = np.maximum(1, rng.lognormal(np.log(mean), 0.8, m).astype(np.int64))
        offs = np.concatenate([[0], np.cumsum(lens)])
        yield genotok.Ragged(rng.integers(0, vocab - 8, int(offs[-1])), offs), \
            {"names": [f"r{a + i}" for i in range(m)]}


def _timed(fn) -> tuple[float, float, int]:
    """(CPU seconds of this process, wall seconds, tokens) of ``fn()``."""
    c0, t0 = time.process_time(), time.perf_counter()
    toks = fn()
    return time.process_time() - c0, time.perf_counter() - t0, toks


def _epoch(corpus, collate, batch: int) -> tuple[float, float, int]:
    """CPU and wall seconds and tokens of one epoch of MLM batches (no workers: the reader's
    cost)."""
    from genotok.torch_data import BatchPlan, CorpusIterableDataset

    ds = CorpusIterableDataset(corpus, BatchPlan(batch_size=batch, seed=1), collate)
    return _timed(lambda: sum(int(b["attention_mask"].sum()) for b in ds))


def _mix_epoch(corpus, batch: int) -> tuple[float, float, int]:
    """CPU and wall seconds and tokens of reading a two-corpus mixture's epoch in batches."""
    m = genotok.mix([corpus, corpus], [0.5, 0.5], seed=1)
    return _timed(lambda: sum(int(m[a:min(a + batch, len(m))].data.size)
                              for a in range(0, len(m), batch)))


def read_section(args) -> None:
    try:
        import torch

        from genotok.torch_data import Collator, MLMCollator
    except ImportError:
        print("torch is not installed (pip install 'genotok[torch]'): no read section")
        return
    import numba

    from genotok.formats.stores import get_store

    torch.set_num_threads(1)  # the loader without workers is one thread: CPU time is its cost
    numba.set_num_threads(1)
    vocab, batch = 100_007, 64
    tok = genotok.Tokenizer([f"chr1:{10 * i}-{10 * i + 10}" for i in range(vocab - 7)])
    collate = MLMCollator(Collator(pad_token_id=tok.universe.special_token_ids["pad"],
                                   max_length=512, truncation="head"),
                          n_regions=vocab - 7, mask_token_id=tok.universe.special_token_ids["mask"])
    tmp = Path(tempfile.mkdtemp(prefix="genotok-stores-read-"))
    formats = ("corpus", "parquet", "arrow")
    opened, toks = {}, 0
    cpu = {w: {f: [] for f in formats} for w in ("ds", "mix")}
    wall = {w: {f: [] for f in formats} for w in ("ds", "mix")}
    try:
        for fmt in formats:
            out = tmp / fmt
            out.mkdir()
            store = get_store(fmt)
            w = store.open(out, "shard-00000", tok)
            for rows, meta in _records(args.records, args.mean_length, vocab):
                w.write(rows, meta)
            store.finish(out, w.commit(), tok, {})
            t0 = time.perf_counter()
            genotok.Corpus.open(out)
            opened[fmt] = time.perf_counter() - t0
        corpora = {fmt: genotok.Corpus.open(tmp / fmt) for fmt in formats}
        for fmt in formats:  # warm: pages in the cache, kernels loaded
            _epoch(corpora[fmt], collate, batch), _mix_epoch(corpora[fmt], batch)
        for k in range(args.read_repeat):  # short epochs, interleaved in a rotating order
            for fmt in formats[k % 3:] + formats[:k % 3]:
                c, s, toks = _epoch(corpora[fmt], collate, batch)
                cpu["ds"][fmt].append(c), wall["ds"][fmt].append(s)
                c, s, _ = _mix_epoch(corpora[fmt], batch)
                cpu["mix"][fmt].append(c), wall["mix"][fmt].append(s)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# read back for training: {args.records:,} records, {toks:,} tokens per epoch, "
          f"batch {batch}, {args.read_repeat} interleaved rounds, {machine()}\n")

    def ratio(times, fmt):  # the median of each round's corpus time / this store's time
        return float(np.median(np.array(times["corpus"]) / np.array(times[fmt])))

    rows = [[fmt, f"{opened[fmt]:.2f}", f"{toks / np.median(cpu['ds'][fmt]) / 1e6:.1f}",
             f"{ratio(cpu['ds'], fmt):.2f}x", f"{ratio(wall['ds'], fmt):.2f}x",
             f"{ratio(cpu['mix'], fmt):.2f}x", f"{ratio(wall['mix'], fmt):.2f}x"]
            for fmt in formats]
    print(table(rows, ["store", "open (s)", "CorpusIterableDataset M tokens/CPU-s (median)",
                       "vs corpus, CPU time", "(wall clock)", "mix vs corpus, CPU time",
                       "(wall clock)"]))
    worst = min(ratio(cpu["ds"], f) for f in ("parquet", "arrow"))
    worst_mix = min(ratio(cpu["mix"], f) for f in ("parquet", "arrow"))
    goal("Parquet / Arrow through CorpusIterableDataset", ">= 0.9x the corpus",
         f"{worst:.2f}x (CPU time, median of {args.read_repeat} rounds)", worst >= 0.9)
    goal("Parquet / Arrow through mix", ">= 0.9x the corpus",
         f"{worst_mix:.2f}x (CPU time, median of {args.read_repeat} rounds)", worst_mix >= 0.9)


def write_section(args) -> None:
    from bench_pipeline import input_dir
    upath = universe_file(args.n_universe)
    base = [gendata("query", f"pipe_{args.lines}_{k}.narrowPeak", "--n", str(args.lines),
                    "--seed", str(500 + k), inputs=(upath,)) for k in range(min(20, args.files))]
    indir = input_dir(args.files, args.lines, base)
    genotok.warmup()
    tok = genotok.Tokenizer.from_bed(upath)
    tmp = Path(tempfile.mkdtemp(prefix="genotok-stores-"))
    formats = ("corpus", "parquet", "arrow")
    best = dict.fromkeys(formats, float("inf"))
    size = {}
    try:
        pretokenize(indir, tok, tmp / "warm", progress=False, format="parquet")  # imports
        for k in range(args.repeat):  # alternating, best of each: the box is shared
            for fmt in formats:
                out = tmp / f"{fmt}{k}"
                t0 = time.perf_counter()
                run = pretokenize(indir, tok, out, progress=False, format=fmt)
                best[fmt] = min(best[fmt], time.perf_counter() - t0)
                size[fmt] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
                shutil.rmtree(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {args.files} narrowPeak files ({args.lines:,} lines each) -> "
          f"{run.n_tokens:,} tokens, {machine()}\n")
    rows = [[fmt, f"{best[fmt]:.2f}", f"{size[fmt] / 1e6:.1f}",
             f"{best[fmt] / best['corpus']:.2f}x"] for fmt in formats]
    print(table(rows, ["store", "seconds (best)", "MB written", "vs corpus"]))
    worst = max(best["parquet"], best["arrow"]) / best["corpus"]
    goal("pretokenize into Parquet / Arrow", "<= 1.5x the corpus", f"{worst:.2f}x", worst <= 1.5)


if __name__ == "__main__":
    raise SystemExit(main())
