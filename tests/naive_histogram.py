"""Slow, obviously-correct model of the medians pass (:mod:`genotok.kernels.histogram`):
the keys of a CSR chunk's positive (normalised) values, in plain Python, and each feature's
median from a ``{(feature, code): count}`` histogram by walking its sorted codes."""

from __future__ import annotations

import math

import numpy as np

OK, INEXACT, BAD_VALUE, BAD_INDEX, BAD_TOTAL = 0, 1, 2, 3, 4
OFF = 1 << 31


def chunk_keys(indptr, indices, data, n_features, normalize, target_sum, log1p, exact, B):
    """``(keys in row order, status, position)``: checks first (value, then index, entry by
    entry), then the codes; ``status`` and the entry of the first problem."""
    data = [float(x) for x in np.asarray(data, dtype=np.float64)]
    for k, (x, f) in enumerate(zip(data, np.asarray(indices).tolist())):
        if not (x >= 0 and math.isfinite(x)):
            return [], BAD_VALUE, k
        if not 0 <= f < n_features:
            return [], BAD_INDEX, k
    for r in range(len(indptr) - 1):  # a row that cannot be normalised in float64: its row
        with np.errstate(over="ignore"):
            total = sum(np.float64(x) for x in data[int(indptr[r]):int(indptr[r + 1])])
            scale = np.float64(target_sum) / np.float64(total) if total else 0.0
        if normalize and not (math.isfinite(total) and math.isfinite(scale)):
            return [], BAD_TOTAL, r
    keys = []
    for r in range(len(indptr) - 1):
        a, b = int(indptr[r]), int(indptr[r + 1])
        total = sum(np.float64(x) for x in data[a:b])  # float64 sums in order, as the kernel
        scale = 1.0
        if normalize:
            scale = target_sum / total if total > 0 else 0.0
        for k in range(a, b):
            v = np.float64(data[k]) * np.float64(scale)
            if not v > 0:
                continue
            if log1p:
                v = np.log1p(v)
            if exact:
                if v != math.floor(v) or v >= 2147483647.0:
                    return [], INEXACT, k
                c = int(v)
            else:
                c = int(math.floor(np.log2(v) * B))
            keys.append(int(indices[k]) << 32 | (c + OFF))
    return keys, OK, 0


def medians(hist: dict, n_features: int, exact: bool, B: float) -> np.ndarray:
    """Per feature: the mean of the values at sorted positions ``(n-1)//2`` and ``n//2``
    (a code's value: the code itself, or ``2 ** ((code + 0.5) / B)``); NaN without values."""
    med = np.full(n_features, np.nan)
    per: dict[int, list] = {}
    for (f, c), n in hist.items():
        if n:
            per.setdefault(f, []).append((c, n))
    for f, codes in per.items():
        codes.sort()
        total = sum(n for _, n in codes)

        def at(pos):
            seen = 0
            for c, n in codes:
                if seen <= pos < seen + n:
                    return float(c) if exact else 2.0 ** ((c + 0.5) / B)
                seen += n
            raise AssertionError("position past the values")

        lo, hi = at((total - 1) // 2), at(total // 2)
        med[f] = 0.5 * (lo + hi) if lo + hi < math.inf else 0.5 * lo + 0.5 * hi
    return med
