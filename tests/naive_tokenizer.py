"""Slow, obviously-correct model of Tokenizer semantics (all modes, policies and orders).

Regions are plain ``(chrom, start, end)`` tuples; the universe is a list of them: id = index
among the distinct regions in order of first appearance (``duplicates="unique"``, gtars'
vocabulary), or id = index (``duplicates="lines"``: a repeated region is hit as its first line).
"""

from __future__ import annotations

SPECIALS = 7


def tokenize(universe, queries, *, from_file=False, overlap="all", min_overlap=0,
             min_fraction=0.0, fraction_of="query", unknown="set", order="gtars",
             duplicates="unique"):
    if duplicates == "unique":
        universe = list(dict.fromkeys(tuple(r) for r in universe))
    n = len(universe)
    unk = n
    first = {}
    for i, r in enumerate(universe):
        first.setdefault(tuple(r), i)
    chrom_code = {}
    for c, _, _ in universe:
        chrom_code.setdefault(c, len(chrom_code))
    rank_key = {i: (chrom_code[c], s, e, i) for i, (c, s, e) in enumerate(universe)}
    idx = list(range(len(queries)))
    if order == "gtars" and from_file:
        idx.sort(key=lambda k: (queries[k][0].encode(), queries[k][1]))  # stable
    out = []
    for k in idx:
        qc, qs, qe = queries[k]
        hits = []
        for i, (c, s, e) in enumerate(universe):
            if first[(c, s, e)] != i or c != qc or not (s < qe and e > qs):
                continue
            bp = min(qe, e) - max(qs, s)
            if min_overlap > 0 and bp < min_overlap:
                continue
            if min_fraction > 0 and fraction_of == "query" and bp < min_fraction * (qe - qs):
                continue
            if min_fraction > 0 and fraction_of == "region" and bp < min_fraction * (e - s):
                continue
            hits.append((s, e, i, bp))
        if overlap == "best" and hits:
            best = max(h[3] for h in hits)
            hits = [min((h for h in hits if h[3] == best), key=lambda h: h[2])]
        hits.sort()
        if not hits and unknown == "region":
            out.append(unk)
        out += [h[2] for h in hits]
    if not out and unknown == "set":
        out = [unk]
    if order in ("genomic", "unique"):
        out.sort(key=lambda i: rank_key[i] if i < n else (float("inf"), 0, 0, 0))
        if order == "unique":
            seen, uniq = set(), []
            for i in out:
                if i not in seen:
                    seen.add(i)
                    uniq.append(i)
            out = uniq
    return out
