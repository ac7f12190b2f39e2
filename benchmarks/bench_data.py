"""Streaming pre-tokenized data into a model: the torch DataLoader over a corpus vs gtars files.

Anchors in the same run: reading a directory of gtars ``.gtok`` files with gtars'
``read_tokens_from_gtok`` (what older geniml datasets did) and collating the same batches, and
a plain torch ``DataLoader`` with 2 workers over the same dataset (batches cross the process
boundary as tensors, through torch's shared memory, where ``ResumableLoader`` sends NumPy
arrays). Loaders with workers are reported after their first batch (the spawn), which is given
on its own.
A small embedding-bag model's training step rate is printed alongside, to show whether the
loader could ever be the bottleneck. Then one epoch with the ``Collator`` (no workers) cold and
warm with 1 and 2 threads in fresh processes (with RSS), and a size sweep over corpora of 1/4,
1/2 and all of the records.

    python benchmarks/bench_data.py [--records 100000] [--mean-length 200] [--batch 64]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import cold_warm_section, machine, sweep_section, table

from genotok import CorpusWriter, Ragged, write_gtok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--mean-length", type=int, default=200)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--gtok-files", type=int, default=5_000, help="size of the gtars-directory anchor")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed (pip install 'genotok[torch]'): nothing to measure")
        return 0
    from torch.utils.data import DataLoader

    from genotok.torch_data import (BatchPlan, Collator, CorpusIterableDataset, MLMCollator,
                                    ResumableLoader)

    vocab = 1_000_007
    rng = np.random.default_rng(0)
    lengths = np.maximum(1, rng.poisson(args.mean_length, args.records))
    offsets = np.zeros(args.records + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    rows = Ragged(rng.integers(0, vocab - 7, int(offsets[-1])), offsets)
    tmp = Path(tempfile.mkdtemp(prefix="genotok-data-"))
    def write(n):
        path = tmp / f"c_{n}.gtokc"
        with CorpusWriter(path, vocab_size=vocab, fingerprint="bench") as w:
            w.append_batch(rows[:n])
        return path

    try:
        path = write(args.records)
        results = []
        plain = Collator(pad_token_id=vocab - 6, max_length=args.max_length, truncation="subsample_ordered")
        mlm = MLMCollator(Collator(pad_token_id=vocab - 6, max_length=args.max_length,
                                   truncation="subsample_ordered"), n_regions=vocab - 7,
                          mask_token_id=vocab - 5)
        spawn = dict(num_workers=2, multiprocessing_context="spawn")
        for name, collate, make in (
                ("genotok corpus, Collator", plain, ResumableLoader),
                ("genotok corpus, MLMCollator", mlm, ResumableLoader),
                ("genotok corpus, MLMCollator, 2 workers", mlm, lambda ds: ResumableLoader(ds, num_workers=2)),
                ("torch DataLoader (tensor hand-over), MLMCollator, 2 workers", mlm,
                 lambda ds: DataLoader(ds, batch_size=None, **spawn))):
            ds = CorpusIterableDataset(path, BatchPlan(batch_size=args.batch, seed=0), collate)
            for _, _b in zip(range(3), ResumableLoader(ds)):  # compile / cache-load outside the timing
                pass
            loader = make(CorpusIterableDataset(path, BatchPlan(batch_size=args.batch, seed=0),
                                                collate))
            t0 = time.perf_counter()
            n_b = n_t = 0
            for b in loader:
                if n_b == 0:
                    t_first = time.perf_counter()
                n_b += 1
                n_t += int(b["attention_mask"].sum())
            t_end = time.perf_counter()
            first = t_first - t0
            dt = t_end - t_first if "workers" in name else t_end - t0  # steady state after the spawn
            n = n_b - 1 if "workers" in name else n_b
            results.append([name, f"{n / dt:,.0f}", f"{n_t * n / n_b / dt / 1e6:.1f}", f"{first:.2f}",
                            f"{t_end - t0:.2f}"])
        try:
            from gtars.utils import read_tokens_from_gtok

            gdir = tmp / "gtok"
            gdir.mkdir()
            n_files = min(args.gtok_files, args.records)
            for i in range(n_files):
                write_gtok(rows[i], gdir / f"{i}.gtok")
            files = [str(gdir / f"{i}.gtok") for i in range(n_files)]
            collate = Collator(pad_token_id=vocab - 6, max_length=args.max_length, truncation="subsample_ordered")
            t0 = time.perf_counter()
            n_t = 0
            for a in range(0, n_files, args.batch):
                recs = [np.asarray(read_tokens_from_gtok(f), dtype=np.int64) for f in files[a:a + args.batch]]
                n_t += int(collate(recs)["attention_mask"].sum())
            dt = time.perf_counter() - t0
            n_b = -(-n_files // args.batch)
            results.append([f"gtars .gtok directory ({n_files:,} files)", f"{n_b / dt:,.0f}",
                            f"{n_t / dt / 1e6:.1f}", "—", f"{dt:.2f}"])
        except ImportError:
            print("gtars not installed: no gtars anchor")
        # a small model's step rate, for scale
        model = torch.nn.EmbeddingBag(vocab, 64, mode="mean")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ids = torch.randint(0, vocab - 7, (args.batch, min(args.max_length, args.mean_length)))
        t0 = time.perf_counter()
        for _ in range(20):
            opt.zero_grad()
            model(ids).sum().backward()
            opt.step()
        step = (time.perf_counter() - t0) / 20
        print(f"# Streaming batches ({args.records:,} records, mean length {args.mean_length}, "
              f"batch {args.batch}, max_length {args.max_length})\n\nmachine: {machine()}\n")
        print(table(results, ["loader", "batches/s", "M tokens/s", "first batch (s)", "time (s)"]))
        print("\n(with workers, the rates are after the first batch: each epoch spawns its workers, "
              "since numba's thread pool does not survive fork)")
        print(f"\nfor scale: a 64-d EmbeddingBag training step on one such batch takes {step * 1e3:.1f} ms "
              f"({1 / step:,.0f} steps/s)\n")

        setup = ("from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, "
                 "ResumableLoader\n"
                 f"collate = Collator(pad_token_id={vocab - 6}, max_length={args.max_length}, "
                 "truncation='subsample_ordered')\npath = {!r}").format
        call = ("for b in ResumableLoader(CorpusIterableDataset(path, BatchPlan("
                f"batch_size={args.batch}, seed=0), collate)): pass")
        label = "one epoch, Collator, no workers"
        print(cold_warm_section(label, setup(str(path)), call, f"{args.records:,} records",
                                repeat=2))
        sizes = {n: setup(str(path if n == args.records else write(n)))
                 for n in (args.records // 4, args.records // 2, args.records)}
        print(sweep_section(label, sizes, call, "record", repeat=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
