"""Corpus format throughput: write, batched random access, sequential scan.

Anchors in the same run: a Python loop reading a directory of gtars-style .gtok files (random
access), and ``np.fromfile`` over the same token bytes (the I/O limit for a sequential scan).
Then batched random access cold and warm with 1 and 2 threads in fresh processes (with RSS), and
a size sweep: random access over the first 1/4, 1/2 and all of the records. Last, the cost of
trust: the safe ``Corpus.open`` (every offset checked, offsets checksum) against the cheap
``trusted=True`` open and a warm ``verify()`` (goal: the checks <= 10% of verify), and the
checksum throughput of blake2b_64 (the default, standard library) against xxh3_64.

    python benchmarks/bench_format.py [--records 1000000] [--mean-length 50] [--integrity-only]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import best_of, cold_warm_section, goal, machine, ratio, sweep_section, table

import genotok
from genotok import Corpus, CorpusWriter, Ragged, read_gtok, write_gtok
from genotok.formats.corpus.layout import PREAMBLE


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--mean-length", type=int, default=50)
    ap.add_argument("--gtok-files", type=int, default=5_000, help="size of the gtok-dir anchor")
    ap.add_argument("--batch", type=int, default=4096, help="records per random-access batch")
    ap.add_argument("--integrity-only", action="store_true",
                    help="only the open / verify / checksum section")
    args = ap.parse_args(argv)
    if args.integrity_only:
        return integrity_main(args)
    rng = np.random.default_rng(0)
    lengths = rng.poisson(args.mean_length, args.records).astype(np.int64)
    offsets = np.zeros(args.records + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 1_000_000, int(offsets[-1]), dtype=np.int64)
    rows = Ragged(data, offsets)
    tmp = Path(tempfile.mkdtemp(prefix="genotok-bench-"))
    try:
        genotok.warmup()
        path = tmp / "c.gtokc"
        t0 = time.perf_counter()
        with CorpusWriter(path, vocab_size=1_000_007, fingerprint="bench") as w:
            for a in range(0, args.records, 100_000):
                w.append_batch(rows[a:a + 100_000])
        t_write = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        n_single = min(args.records, 100_000)  # one record at a time, with a name each
        t0 = time.perf_counter()
        with CorpusWriter(tmp / "one.gtokc", vocab_size=1_000_007, fingerprint="bench") as w:
            for i in range(n_single):
                w.append(rows[i], name=f"cell{i}")
        t_single = time.perf_counter() - t0
        c = Corpus.open(path)
        # random access, batched
        idx = rng.integers(0, args.records, args.records)
        c.get_batch(idx[:10])
        t_rand = best_of(lambda: [c.get_batch(idx[a:a + args.batch]) for a in range(0, idx.size, args.batch)], 3)
        # anchor: Python loop over a directory of .gtok files
        gdir = tmp / "gtok"
        gdir.mkdir()
        n_files = min(args.gtok_files, args.records)
        for i in range(n_files):
            write_gtok(rows[i], gdir / f"{i}.gtok")
        files = [gdir / f"{i}.gtok" for i in range(n_files)]
        pick = rng.integers(0, n_files, n_files)
        t_loop = best_of(lambda: [np.array(read_gtok(files[i], mmap=False)) for i in pick], 3) / n_files
        t_ours_per = t_rand / args.records
        # sequential scan
        t_scan = best_of(lambda: [b.data.sum() for b in c.iter_batches(65536)], 3)
        tok_off = PREAMBLE.unpack(path.read_bytes()[:PREAMBLE.size])[8]
        t_from = best_of(lambda: np.fromfile(path, dtype="<u4", count=data.size, offset=tok_off).sum(), 3)
        gb = data.size * 4 / 1e9
        try:  # gtars' own reader as a second random-access anchor
            from gtars.utils import read_tokens_from_gtok

            t_gtars = best_of(lambda: [read_tokens_from_gtok(str(files[i])) for i in pick], 3) / n_files
        except ImportError:
            t_gtars = None
        print(f"# Corpus format ({args.records:,} records, {data.size:,} tokens, {size_mb:.0f} MB)\n")
        print(f"machine: {machine()}\n")
        rows_out = [
            ["write (streaming, 100k-record batches)", f"{args.records / t_write:,.0f} records/s",
             f"{size_mb / t_write:,.0f} MB/s", "", ""],
            ["write (append one record + name at a time)", f"{n_single / t_single:,.0f} records/s",
             "", "", ""],
            [f"random access, batches of {args.batch}", f"{1 / t_ours_per:,.0f} records/s", "",
             f"{1 / t_loop:,.0f} records/s (np loop over .gtok dir)", ratio(t_loop, t_ours_per)],
        ]
        if t_gtars:
            rows_out.append(["random access vs gtars read_tokens_from_gtok", f"{1 / t_ours_per:,.0f} records/s",
                             "", f"{1 / t_gtars:,.0f} records/s", ratio(t_gtars, t_ours_per)])
        rows_out.append(["sequential scan (iter_batches)", f"{gb / t_scan:.2f} GB/s", "",
                         f"{gb / t_from:.2f} GB/s (np.fromfile)", f"{t_scan / t_from:.2f}x the limit's time"])
        print(table(rows_out, ["workload", "genotok", "", "anchor", "speed-up"]))
        print("\ngoals: random access >= 1M records/s and >= 20x the gtok-dir loop; scan within 1.5x of np.fromfile\n")
        goal("corpus random access", ">= 20x a Python loop over a .gtok dir",
             f"{t_loop / t_ours_per:.0f}x ({1 / t_ours_per:,.0f} records/s)",
             t_loop / t_ours_per >= 20)

        setup = (f"import numpy as np\nfrom genotok import Corpus\nc = Corpus.open({str(path)!r})\n"
                 "idx = np.random.default_rng(0).integers(0, {k}, {k})").format
        call = f"[c.get_batch(idx[a:a + {args.batch}]) for a in range(0, idx.size, {args.batch})]"
        label = f"Corpus.get_batch ({args.batch} random records a batch)"
        print(cold_warm_section(label, setup(k=args.records), call, f"{args.records:,} records"))
        sizes = {k: setup(k=k) for k in (args.records // 4, args.records // 2, args.records)}
        print(sweep_section(label + ", drawn from the first `size`", sizes, call, "record"))
        print(integrity_section(path, data.size * 4))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def integrity_section(path: Path, token_bytes: int) -> str:
    """Safe open vs trusted open vs warm verify on one corpus; checksum throughput."""
    Corpus.open(path).verify()  # warm: pages cached, kernels compiled
    t_trusted = best_of(lambda: Corpus.open(path, trusted=True), 5)
    t_safe = best_of(lambda: Corpus.open(path), 5)
    t_verify = best_of(lambda: Corpus.open(path, trusted=True).verify(), 3)
    check = t_safe - t_trusted
    buf = np.memmap(path, dtype=np.uint8, mode="r")[:token_bytes]

    def speed(make) -> float:
        def run():
            h = make()
            mv = memoryview(buf)
            for a in range(0, len(mv), 1 << 24):
                h.update(mv[a:a + (1 << 24)])
            h.digest()
        return len(buf) / best_of(run, 3) / 1e9

    out = ["\n## Integrity: the safe open against verify\n"]
    rows = [["Corpus.open(trusted=True)", f"{t_trusted * 1e3:.1f} ms", ""],
            ["Corpus.open() (every offset checked + offsets checksum)", f"{t_safe * 1e3:.1f} ms",
             f"checks {check * 1e3:.1f} ms"],
            ["verify() (warm)", f"{t_verify * 1e3:.0f} ms", ""],
            ["the safe open's checks / warm verify", f"{100 * check / t_verify:.1f} %", "goal <= 10 %"]]
    rows.append(["checksum blake2b_64 (hashlib, the default)",
                 f"{speed(lambda: hashlib.blake2b(digest_size=8)):.2f} GB/s", ""])
    try:
        import xxhash

        rows.append(["checksum xxh3_64 (xxhash, corpora written before)",
                     f"{speed(xxhash.xxh3_64):.2f} GB/s", ""])
    except ImportError:
        pass
    out.append(table(rows, ["step", "time / speed", "note"]))
    goal("safe open", "checks <= 10% of a warm verify", f"{100 * check / t_verify:.1f} %",
         check <= 0.10 * t_verify)
    return "\n".join(out)


def integrity_main(args) -> int:
    rng = np.random.default_rng(0)
    lengths = rng.poisson(args.mean_length, args.records).astype(np.int64)
    offsets = np.zeros(args.records + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 1_000_000, int(offsets[-1]), dtype=np.int64)
    rows = Ragged(data, offsets)
    tmp = Path(tempfile.mkdtemp(prefix="genotok-bench-"))
    try:
        path = tmp / "c.gtokc"
        with CorpusWriter(path, vocab_size=1_000_007, fingerprint="bench") as w:
            for a in range(0, args.records, 100_000):
                w.append_batch(rows[a:a + 100_000])
        print(f"# Corpus integrity ({args.records:,} records, {data.size:,} tokens, "
              f"{path.stat().st_size / 1e6:.0f} MB)\n\nmachine: {machine()}")
        print(integrity_section(path, data.size * 4))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
