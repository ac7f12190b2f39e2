"""Packing records into fixed-length sequences: numba greedy and first-fit-decreasing against
the Python greedy loop ``genotok.data.pack`` was before (the anchor, copied below as it was).

Lengths are uniform in 1..``--max-len``, ``seq_len`` = ``--max-len``. The records are a
:class:`~genotok.Ragged` (what ``Corpus.get_batch`` gives); the Python loop gets the same rows
as a list of arrays. Cold = first call in this process (numba cache load or compile).

    python benchmarks/bench_packing.py [--records 1000000] [--max-len 512]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from genotok import Ragged
from genotok.packing import pack


def python_greedy(rows, seq_len, pad_token_id, sep_token_id=None):
    """``genotok.data.pack`` before the numba kernels (commit 5662fe2), verbatim."""
    seqs, segs = [], []
    cur, cur_seg, seg = [], [], 0
    for r in rows:
        r = np.asarray(r, dtype=np.int64)
        if sep_token_id is not None:
            r = np.append(r, sep_token_id)
        while r.size:
            room = seq_len - len(cur)
            if r.size > room and cur and r.size <= seq_len:
                seqs.append(cur)
                segs.append(cur_seg)
                cur, cur_seg, seg = [], [], 0
                continue
            take = r[:seq_len - len(cur)]
            seg += 1
            cur.extend(take.tolist())
            cur_seg.extend([seg] * take.size)
            r = r[take.size:]
            if len(cur) == seq_len:
                seqs.append(cur)
                segs.append(cur_seg)
                cur, cur_seg, seg = [], [], 0
    if cur:
        seqs.append(cur)
        segs.append(cur_seg)
    ids = np.full((len(seqs), seq_len), pad_token_id, dtype=np.int64)
    seg_ids = np.zeros((len(seqs), seq_len), dtype=np.int64)
    for i, (s, g) in enumerate(zip(seqs, segs)):
        ids[i, :len(s)] = s
        seg_ids[i, :len(g)] = g
    return {"input_ids": ids, "segment_ids": seg_ids, "attention_mask": (seg_ids > 0).astype(np.int64)}


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, args.max_len + 1, args.records)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rows = Ragged((np.arange(offsets[-1], dtype=np.int64) % 65000).astype(np.uint16), offsets)
    as_list = list(rows)
    S = args.max_len
    print(f"{args.records:,} records, lengths uniform in 1..{S}, {int(offsets[-1]):,} tokens, "
          f"seq_len {S}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    t_py, ref = timed(lambda: python_greedy(as_list, S, 0))
    lines = [("Python greedy loop (before)", t_py, t_py, ref["attention_mask"].mean())]
    for strategy in ("greedy", "ffd"):
        cold, out = timed(lambda: pack(rows, S, 0, strategy=strategy))
        warm = min(timed(lambda: pack(rows, S, 0, strategy=strategy))[0] for _ in range(args.repeat))
        if strategy == "greedy":
            assert (out["input_ids"] == ref["input_ids"]).all()
        lines.append((f"numba {strategy}", cold, warm, out.fill))
    warm_list = min(timed(lambda: pack(as_list, S, 0, strategy="ffd"))[0] for _ in range(args.repeat))
    lines.append(("numba ffd, rows as a list of arrays", warm_list, warm_list, out.fill))
    print(f"| packing | cold s | warm s | vs Python loop (warm) | fill |\n|---|---|---|---|---|")
    for name, cold, warm, fill in lines:
        print(f"| {name} | {cold:.3f} | {warm:.3f} | {t_py / warm:.1f}x | {fill:.1%} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
