"""Brute-force oracles of the overlap kernels (``genotok.kernels.overlap``): all pairs, plain Python.

Slow and obviously correct: every query is compared with every universe region. Outputs have the
same shapes, dtypes and order as the kernels', for every option.
"""

from __future__ import annotations

import numpy as np


def build_sweep(codes, starts, ends, n_chroms, keep_mask=None):
    """The sweep index by sorting Python tuples (code, start, end, id): ``(chrom_ptr, starts,
    ends, maxend, ids)`` over the rows ``keep_mask`` keeps."""
    n = len(codes)
    keep = [True] * n if keep_mask is None else [bool(k) for k in keep_mask]
    rows = sorted(range(n), key=lambda i: (int(codes[i]), int(starts[i]), int(ends[i]), i))
    kept = [i for i in rows if keep[i]]
    chrom_ptr = [sum(1 for i in kept if codes[i] < c) for c in range(n_chroms + 1)]
    s = [int(starts[i]) for i in kept]
    e = [int(ends[i]) for i in kept]
    maxend = []
    for k, i in enumerate(kept):
        same = [e[j] for j in range(k + 1) if codes[kept[j]] == codes[i]]
        maxend.append(max(same))
    # coordinates as int32 when they all fit, as the kernels store them
    dt = np.int32 if s and min(s) >= 0 and max(e) < 2**31 else np.int64
    return (np.array(chrom_ptr, np.int64), np.array(s, dt), np.array(e, dt),
            np.array(maxend, dt), np.array(kept, np.int32))


def running_max(ends, chrom_ptr):
    """``_running_max``: the largest end so far within each chromosome, as a list."""
    out = []
    for c in range(len(chrom_ptr) - 1):
        run = ends[chrom_ptr[c]:chrom_ptr[c + 1]]
        out += [max(run[:k + 1]) for k in range(len(run))]
    return out


def hits(qc, qs, qe, chrom_ptr, starts, ends, ids, min_overlap=0, frac_q=0.0, frac_r=0.0,
         best=False):
    """[(id, bp)] of one query, by ascending sorted-universe row."""
    out = []
    if qc < 0:
        return out
    for j in range(int(chrom_ptr[qc]), int(chrom_ptr[qc + 1])):
        s, e = int(starts[j]), int(ends[j])
        if not (s < qe and e > qs):
            continue
        bp = min(qe, e) - max(qs, s)
        if min_overlap > 0 and bp < min_overlap:
            continue
        if frac_q > 0 and bp < frac_q * (qe - qs):
            continue
        if frac_r > 0 and bp < frac_r * (e - s):
            continue
        out.append((int(ids[j]), bp))
    if best and out:
        out = [min(out, key=lambda h: (-h[1], h[0]))]
    return out


def overlap(q_codes, q_starts, q_ends, set_offsets, order, chrom_ptr, starts, ends, maxend, ids,
            min_overlap, frac_q, frac_r, best, unk_mode, unk_id):
    """(ids uint32, qidx int64, overlap_bp int64, out_offsets int64) as the kernel returns them."""
    out_ids, out_q, out_bp, offs = [], [], [], [0]
    for s in range(len(set_offsets) - 1):
        set_ids, set_q, set_bp = [], [], []
        for p in range(int(set_offsets[s]), int(set_offsets[s + 1])):
            q = int(order[p])
            h = hits(int(q_codes[q]), int(q_starts[q]), int(q_ends[q]), chrom_ptr, starts, ends,
                     ids, min_overlap, frac_q, frac_r, best)
            if not h and unk_mode == 2:
                h = [(unk_id, 0)]
            for i, bp in h:
                set_ids.append(i)
                set_q.append(q)
                set_bp.append(bp)
        if not set_ids and unk_mode == 1:
            set_ids, set_q, set_bp = [unk_id], [-1], [0]
        out_ids += set_ids
        out_q += set_q
        out_bp += set_bp
        offs.append(len(out_ids))
    return (np.array(out_ids, np.uint32), np.array(out_q, np.int64), np.array(out_bp, np.int64),
            np.array(offs, np.int64))


def sort_within_sets(ids, out_offsets, rank, unique):
    """Per set: ``sorted()`` by rank, specials (id >= len(rank)) last in their order."""
    n = len(rank)
    out, offs = [], [0]
    for s in range(len(out_offsets) - 1):
        row = [int(x) for x in ids[out_offsets[s]:out_offsets[s + 1]]]
        row = sorted(row, key=lambda i: (0, int(rank[i])) if i < n else (1, 0))  # stable
        if unique:
            row = list(dict.fromkeys(row))
        out += row
        offs.append(len(out))
    return np.array(out, dtype=np.asarray(ids).dtype), np.array(offs, np.int64)
