"""Slow, obviously-correct oracles for genotok.build (plain Python and base-pair arrays).

Region sets are lists of ``(chrom, start, end)`` tuples; results are such lists in genomic order.
"""

from __future__ import annotations

import math

import numpy as np

PRIMARY_ORDER = [str(i) for i in range(1, 100)] + ["X", "Y", "M"]


def natural_key(name: str):
    """chr1..chr99, chrX, chrY, chrM (MT = M; any case, prefix optional), then the rest."""
    bare = name[3:] if name.lower().startswith("chr") else name
    bare = bare.upper()
    if bare == "MT":
        bare = "M"
    if bare.isdigit() and str(int(bare)) in PRIMARY_ORDER:
        return (0, PRIMARY_ORDER.index(str(int(bare))), name)
    if bare in ("X", "Y", "M"):
        return (0, PRIMARY_ORDER.index(bare), name)
    return (1, 0, name)


def genomic(regions):
    return sorted(regions, key=lambda r: (natural_key(r[0]), r[1], r[2]))


def tile(sizes: dict, size: int):
    out = []
    for chrom, length in sizes.items():
        s = 0
        while s < length:
            out.append((chrom, s, min(s + size, length)))
            s += size
    return genomic(out)


def merge(sets, min_gap: int):
    """bedtools merge -d min_gap on all regions of all sets (zero-length regions kept as they are)."""
    regions = sorted((r for s in sets for r in s), key=lambda r: (r[0], r[1], r[2]))
    out: list[list] = []
    for c, s, e in regions:
        if out and out[-1][0] == c and s - out[-1][2] <= min_gap:
            out[-1][2] = max(out[-1][2], e)
        else:
            out.append([c, s, e])
    return genomic([tuple(r) for r in out])


def coverage(sets) -> dict[str, np.ndarray]:
    """Per chromosome, the number of sets covering each base pair (a set counts once)."""
    length = {}
    for s in sets:
        for c, a, b in s:
            length[c] = max(length.get(c, 0), b + 1)
    cov = {c: np.zeros(n, np.int64) for c, n in length.items()}
    for s in sets:
        mine = {c: np.zeros(n, bool) for c, n in length.items()}
        for c, a, b in s:
            mine[c][a:b] = True
        for c in cov:
            cov[c] += mine[c]
    return cov


def runs(cov: dict[str, np.ndarray], k: int, min_width: int = 0):
    """Maximal runs of base pairs with coverage >= k, at least min_width wide."""
    out = []
    for c, a in cov.items():
        pos = 0
        n = a.size
        while pos < n:
            if a[pos] >= k:
                end = pos
                while end < n and a[end] >= k:
                    end += 1
                if end - pos >= min_width:
                    out.append((c, pos, end))
                pos = end
            else:
                pos += 1
    return genomic(out)


def consensus(sets, k: int, min_width: int = 0):
    return runs(coverage(sets), k, min_width)


def fraction_count(fraction: float, n: int) -> int:
    from decimal import Decimal

    return max(1, math.ceil(Decimal(repr(fraction)) * n))


def top_k(candidate, sets, max_regions: int, min_hits: int = 1):
    """Hit counts by brute force over every (candidate, set, region); top by (-count, position)."""
    unique = genomic(set(candidate))
    counts = []
    for c, s, e in unique:
        counts.append(sum(any(qc == c and s < qe and e > qs for qc, qs, qe in q) for q in sets))
    ranked = sorted((i for i in range(len(unique)) if counts[i] >= min_hits),
                    key=lambda i: (-counts[i], i))
    keep = sorted(ranked[:max_regions])
    return [unique[i] for i in keep], [counts[i] for i in keep]


def bed_text(regions) -> bytes:
    return "".join(f"{c}\t{s}\t{e}\n" for c, s, e in regions).encode()


def merge_sorted(codes, starts, ends, min_gap):
    """The merge kernel's contract on arrays sorted by (code, start)."""
    out = []
    for c, s, e in zip(codes.tolist(), starts.tolist(), ends.tolist()):
        if out and out[-1][0] == c and s - out[-1][2] <= min_gap:
            out[-1][2] = max(out[-1][2], e)
        else:
            out.append([c, s, e])
    return out


def compact_events(codes, pos, delta):
    sums: dict = {}
    for c, p, d in zip(codes.tolist(), pos.tolist(), delta.tolist()):
        sums[(c, p)] = sums.get((c, p), 0) + d
    return [(c, p, d) for (c, p), d in sorted(sums.items()) if d != 0]
