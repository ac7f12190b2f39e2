"""Slow, obviously-correct model of :func:`genotok.kernels.mixing.interleave`: exact fractions."""

from __future__ import annotations

from fractions import Fraction


def interleave(a, n):
    """The source of each of ``n`` draws: the one furthest behind its share (lowest on ties)."""
    total = sum(a)
    count = [0] * len(a)
    out = []
    for i in range(n):
        deficits = [Fraction(w * (i + 1), total) - c for w, c in zip(a, count)]
        k = deficits.index(max(deficits))
        out.append(k)
        count[k] += 1
    return out
