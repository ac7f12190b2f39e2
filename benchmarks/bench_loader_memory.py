"""What a DataLoader worker's memory is made of while it streams a sharded corpus.

A worker maps every shard it reads; the pages it touched count in its RSS until the kernel
needs them back, so RSS grows to the size of every shard touched (issue 34: 5.4 GiB per
worker on a 5 GiB corpus) while the worker's own memory stays small. This script streams one
epoch, in order, with one worker, and reads ``/proc/self/smaps_rollup`` in the worker after
every batch: ``Rss`` against ``Private_Clean + Private_Dirty`` (the worker's own pages) and
``Shared_Clean`` (clean file pages: the page cache, shared with every process mapping them and
dropped by the kernel under pressure). With ``--madvise`` the worker calls
``mmap.madvise(MADV_DONTNEED)`` on every shard once it has moved past it.

    python benchmarks/bench_loader_memory.py [--shards 4] [--shard-mb 64] [--madvise]
"""

from __future__ import annotations

import argparse
import mmap
import os
import tempfile
import time
from pathlib import Path

import numpy as np

FIELDS = ("Rss", "Pss", "Shared_Clean", "Private_Clean", "Private_Dirty", "Anonymous")


def rollup() -> dict[str, int]:
    """This process's ``/proc/self/smaps_rollup`` fields, in MiB."""
    out = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        if key in FIELDS:
            out[key] = int(value.split()[0]) / 1024
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--shard-mb", type=int, default=64)
    ap.add_argument("--record-tokens", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--madvise", action="store_true")
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch is not installed: nothing to measure")
        return 0
    from genotok import Corpus, CorpusWriter, write_manifest
    from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

    tmp = Path(tempfile.mkdtemp(prefix="loader-mem-"))
    per_shard = args.shard_mb * 2**20 // 4 // args.record_tokens
    files = [tmp / f"part-{k:05d}.gtokc" for k in range(args.shards)]
    rng = np.random.default_rng(0)
    for f in files:
        with CorpusWriter(f, vocab_size=2**20, fingerprint="fp") as w:
            block = rng.integers(70_000, 2**20, (per_shard, args.record_tokens), dtype=np.uint32)
            w.append_batch(list(block))
    write_manifest(files, tmp)
    corpus = Corpus.open(tmp)
    starts = np.concatenate([[0], np.cumsum([per_shard] * args.shards)])
    madvise = args.madvise

    state = {"shard": 0}

    def measure(idx):
        k = int(np.searchsorted(starts, int(idx[0]), side="right")) - 1
        if madvise and k > state["shard"]:
            for j in range(state["shard"], k):
                raw = corpus._shards[j]._raw  # the shard file's np.memmap (a bench, not the API)
                raw._mmap.madvise(mmap.MADV_DONTNEED)
            state["shard"] = k
        return rollup()

    ds = CorpusIterableDataset(corpus, BatchPlan(batch_size=args.batch, shuffle=False),
                               Collator(pad_token_id=0, max_length=512,
                                                 truncation="head"))
    orig = ds._batches

    def batches():
        for b in orig():
            m = measure(b["index"])
            b["mem"] = np.array([m.get(f, 0.0) for f in FIELDS])
            yield b

    ds._batches = batches
    loader = ResumableLoader(ds, num_workers=1)
    t = time.perf_counter()
    mems = [b["mem"].numpy() for b in loader]
    dt = time.perf_counter() - t
    mems = np.stack(mems)
    total_mb = os.path.getsize(files[0]) * args.shards / 2**20
    print(f"{args.shards} shards x {args.shard_mb} MiB ({total_mb:.0f} MiB), 1 worker, "
          f"madvise={madvise}, {len(mems)} batches in {dt:.1f} s; load {os.getloadavg()[0]:.1f}")
    print("| in the worker, MiB | " + " | ".join(FIELDS) + " |")
    print("|---" * (len(FIELDS) + 1) + "|")
    for name, row in (("after the first batch", mems[0]), ("at the end of the epoch", mems[-1]),
                      ("maximum over the epoch", mems.max(axis=0))):
        print(f"| {name} | " + " | ".join(f"{v:.0f}" for v in row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
