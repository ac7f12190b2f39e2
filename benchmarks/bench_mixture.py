"""Streaming a mixture of 3 corpora against one corpus of the same records (tokens/s).

One epoch through ``CorpusIterableDataset`` + ``Collator`` (no workers): the anchor is one
corpus of all the records, fully shuffled; the mixture ``mix([a, b, c], [0.5, 0.3, 0.2])``
draws as many records (``length=``), shuffled within its windows, batched in its order. The
goal (issue 34): the mixture at >= 90% of the single corpus' tokens/s. Alternating epochs,
``--repeat`` rounds; the goal's ratio is the median of each round's ratio of CPU time (one
numba and one torch thread: the loader without workers is one thread; the shared box's load
moves wall-clock ratios far more), tokens/s the best wall-clock epoch.

    python benchmarks/bench_mixture.py [--records 60000] [--mean-length 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--mean-length", type=int, default=200)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch is not installed: nothing to measure")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-mix-") as tmp:  # removed after the run
        return _run(args, Path(tmp))


def _run(args, tmp: Path) -> int:
    import numba
    import torch
    from _common import goal

    torch.set_num_threads(1)
    numba.set_num_threads(1)
    from genotok import Corpus, CorpusWriter, mix
    from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset

    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 2 * args.mean_length, args.records)
    records = np.split(rng.integers(0, 1_000_000, int(lengths.sum()), dtype=np.uint32),
                       np.cumsum(lengths)[:-1])
    cuts = [0, args.records // 2, args.records * 8 // 10, args.records]
    paths = []
    for k in range(3):
        paths.append(tmp / f"part{k}.gtokc")
        with CorpusWriter(paths[-1], vocab_size=1_000_007, fingerprint="fp") as w:
            w.append_batch(records[cuts[k]:cuts[k + 1]])
    with CorpusWriter(tmp / "all.gtokc", vocab_size=1_000_007, fingerprint="fp") as w:
        w.append_batch(records)
    single = Corpus.open(tmp / "all.gtokc")
    parts = [Corpus.open(p) for p in paths]
    collate = Collator(pad_token_id=0, max_length=512, truncation="head")

    def epoch(ds, e):
        ds.set_epoch(e)
        c, t = time.process_time(), time.perf_counter()
        n = sum(int(b["attention_mask"].sum()) for b in ds)
        return n, time.perf_counter() - t, time.process_time() - c

    one = CorpusIterableDataset(single, BatchPlan(batch_size=args.batch, shuffle=True, seed=0),
                                collate)
    m = mix(parts, [0.5, 0.3, 0.2], seed=0, length=args.records)
    mixed = CorpusIterableDataset(m, BatchPlan(batch_size=args.batch, shuffle=False), collate)
    epoch(one, 99), epoch(mixed, 99)  # warm: kernels loaded, pages in the cache
    best = {"one": 0.0, "mix": 0.0}
    ratios = []
    for e in range(args.repeat):  # alternating, a new epoch (new order) each time
        per_token = {}
        for name, ds in (("one", one), ("mix", mixed))[::1 if e % 2 else -1]:
            n, dt, cpu = epoch(ds, e)
            best[name] = max(best[name], n / dt)
            per_token[name] = cpu / n
        ratios.append(per_token["one"] / per_token["mix"])
    ratio = float(np.median(ratios))
    print(f"{args.records:,} records, mean length {args.mean_length}, batch {args.batch}, "
          f"max_length 512, no workers; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print("| stream | tokens/s (best of %d) | vs one corpus |\n|---|---|---|" % args.repeat)
    print(f"| one corpus, full shuffle | {best['one']:,.0f} | 1.00 |")
    print(f"| mix of 3 (0.5/0.3/0.2) | {best['mix']:,.0f} | {best['mix'] / best['one']:.2f} |")
    print(f"\nCPU time per token, one corpus / mixture: median of {args.repeat} rounds "
          f"{ratio:.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f})")
    goal("mix of 3 corpora through CorpusIterableDataset", ">= 0.9x one corpus",
         f"{ratio:.2f}x (CPU time, median of {args.repeat} rounds)", ratio >= 0.9)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
