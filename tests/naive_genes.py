"""Plain-Python oracles of the gene models' tokenizations, written from their published
descriptions (not from genotok): the references of tests/singlecell/test_genes*.py.

Geneformer (Theodoris et al., Nature 2023, Methods "Rank value encoding"; its tokenizer's
documentation): raw counts; genes labelled by Ensembl id, duplicate ids summed; each cell's
counts divided by its total read count (``n_counts``), multiplied by 10,000 and divided by
the gene's non-zero median over the training corpus; genes detected in the cell (non-zero)
ranked by that value, descending, ties in the order the genes come (a stable sort); the
ranked gene tokens truncated to the model's input size; V2 adds ``<cls>`` first and ``<eos>``
last (input size counted with them).

scGPT (Cui et al., Nature Methods 2024, "Value binning"; its ``preprocess.binning``): genes
of the vocabulary only; counts normalised to 10,000 per cell and log1p; per cell, the positive
values binned at the quantiles ``0, 1/(n_bins - 2), ..., 1`` of the cell's positive values
(``numpy.digitize``, left side), 0 kept for zero.
"""

from __future__ import annotations

import numpy as np


def summed_columns(X: np.ndarray, ids: list[str]) -> tuple[np.ndarray, list[str]]:
    """Columns sharing an id summed, in the order of each id's first column."""
    order: dict[str, list[int]] = {}
    for c, g in enumerate(ids):
        order.setdefault(g, []).append(c)
    cols = [X[:, cs].sum(axis=1) for cs in order.values()]
    out = np.stack(cols, axis=1) if cols else np.zeros((X.shape[0], 0))
    return out, list(order)


def geneformer(X, ids, token_dict, median_dict, *, n_counts=None, input_size=2048,
               framed=False, specials=("<pad>", "<mask>", "<cls>", "<eos>")) -> list[list[int]]:
    """Geneformer's input_ids of every cell of the dense count matrix ``X``."""
    X = np.asarray(X, dtype=np.float64)
    totals = X.sum(axis=1) if n_counts is None else np.asarray(n_counts, np.float64)
    S, genes = summed_columns(X, list(ids))
    keep = [j for j, g in enumerate(genes) if g in token_dict and g not in specials
            and g in median_dict and median_dict[g] > 0]
    out = []
    for i in range(X.shape[0]):
        vals, toks = [], []
        for j in keep:
            x = S[i, j]
            if x > 0:
                vals.append(x / totals[i] * 1e4 / median_dict[genes[j]])
                toks.append(token_dict[genes[j]])
        order = np.argsort(-np.asarray(vals, np.float64), kind="stable")
        ranked = [toks[k] for k in order]
        if framed:
            out.append([token_dict["<cls>"]] + ranked[:input_size - 2] + [token_dict["<eos>"]])
        else:
            out.append(ranked[:input_size])
    return out


def scgpt(X, ids, vocab, n_bins=51, specials=("<pad>", "<cls>", "<eoc>")):
    """scGPT's (gene ids, bins) of every cell: genes of ``vocab`` in column order, positive
    values only, binned at the per-cell quantile edges (``side="one"``: the left digit)."""
    X = np.asarray(X, dtype=np.float64)
    cols = [j for j, g in enumerate(ids) if g in vocab and g not in specials]
    S = X[:, cols]
    out = []
    for i in range(S.shape[0]):
        row = S[i]
        tot = row.sum()
        v = np.log1p(row * (1e4 / tot)) if tot > 0 else row
        pos = v[v > 0]
        toks, bins = [], []
        if pos.size:
            edges = np.quantile(pos, np.linspace(0, 1, n_bins - 1))
            for j, x in enumerate(v):
                if x > 0:
                    toks.append(vocab[ids[cols[j]]])
                    bins.append(int(np.digitize(x, edges)))
        out.append((toks, bins))
    return out


def rank_rows(indptr, cols, data, col_new, sink, totals, has_totals, target_sum, log1p, med,
              col_ids, keep_from, max_tokens):
    """Plain-Python oracle of ``kernels.values.rank_rows`` (Geneformer's rank in one pass):
    ``(True,)`` when some row needs the general path (a repeated or unsorted new column, a
    value negative or not finite, an obs total below the kept counts, a total that does not
    normalise, a ratio that overflows), else ``(False, ids per row, values per row)``: each
    row's kept entries (new column ``c = col_new[col] >= 0``, not the sink: without totals its
    entries count in the total, summed first where several) valued
    ``x * target_sum / total`` (``log1p``) ``/ med[c]`` (0 without a median), those ``>=
    keep_from`` with a token, by value descending (ties in column order), cut to ``max_tokens``.
    """
    import math

    ids_out, vals_out = [], []
    typ = np.dtype(data.dtype).type
    for r in range(len(indptr) - 1):
        row, known, last, stored, sunk = [], 0.0, -1, 0.0, []
        for k in range(int(indptr[r]), int(indptr[r + 1])):
            c = int(col_new[int(cols[k])])
            if c < 0 or (has_totals and c == sink):
                continue
            x = float(data[k])
            if not 0 <= x < math.inf:
                return (True,)
            stored += x
            if c == sink:  # no totals: its entries count in the total, in data's dtype
                sunk.append(typ(data[k]))
                continue
            if c <= last:
                return (True,)
            last = c
            row.append((c, x))
            known += x
        total = stored
        if len(sunk) > 1:  # merged into one entry (summed in data's dtype), last
            s = sunk[0]
            for x in sunk[1:]:
                s = typ(s + x)
            total = known + float(s)
        if has_totals:
            rest = float(totals[r]) - known
            if not rest >= 0:
                return (True,)
            total = known + rest if rest > 0 else known
        if total == math.inf or (total > 0 and target_sum / total == math.inf):
            return (True,)
        scale = target_sum / total if total > 0 else 0.0
        kept = []
        for c, x in row:
            m = float(med[c])
            y = 0.0
            if m > 0:
                y = x * scale
                y = (math.log1p(y) if log1p else y) / m
            if y == math.inf:
                return (True,)
            if y >= keep_from and col_ids[c] >= 0:
                kept.append((y, c))
        kept.sort(key=lambda t: -t[0])  # stable: ties in column order
        if max_tokens:
            kept = kept[:max_tokens]
        ids_out.append([int(col_ids[c]) for _, c in kept])
        vals_out.append([float(np.float32(y)) for y, _ in kept])
    return False, ids_out, vals_out


def quantile_bins(indptr, data, normalize, target_sum, log1p, grid, seed, row0, both):
    """Plain-Python/NumPy oracle of ``kernels.values.quantile_bins``: per row, the values
    (``data``, or normalised to ``target_sum`` by the row's float64 total, ``log1p``), the
    edges ``numpy.quantile`` of the positive ones at ``grid``, each positive value's
    ``numpy.digitize`` (left) and ``digitize(right=True)``; with ``both`` a draw ``u`` per
    positive value from the row's SplitMix64 stream (``naive_cells.Rng(seed, row0 + r)``,
    ``below(2**53) / 2**53``) gives ``ceil(u * (right - left) + left)`` where they differ."""
    import math

    from .naive_cells import Rng

    out = np.zeros(len(data), np.float64)
    for r in range(len(indptr) - 1):
        a, b = int(indptr[r]), int(indptr[r + 1])
        row = [float(x) for x in data[a:b]]
        scale = 1.0
        if normalize:
            total = 0.0
            for x in row:
                total += x
            scale = target_sum / total if total > 0 else 0.0
        vals = [x * scale for x in row]
        if log1p:
            vals = [math.log1p(y) if y > 0 else y for y in vals]
        pos = [j for j, y in enumerate(vals) if row[j] * scale > 0]
        if not pos:
            continue
        v = np.array([vals[j] for j in pos])
        edges = np.quantile(v, grid)
        lft, rgt = np.digitize(v, edges), np.digitize(v, edges, right=True)
        rng = Rng(seed, row0 + r)
        for j, lo, hi in zip(pos, lft.tolist(), rgt.tolist()):
            out[a + j] = lo
            if both:
                u = rng.below(1 << 53) / float(1 << 53)
                if hi != lo:
                    out[a + j] = math.ceil(u * (hi - lo) + lo)
    return out


def bin_rows(indptr, cols, data, col_new, target_sum, log1p, grid, seed, row0, both, col_ids,
             keep_from):
    """Plain-Python oracle of ``kernels.values.bin_rows`` (scGPT's bins in one pass):
    ``(True,)`` when some row needs the general path (a repeated or unsorted kept column, a
    value negative or not finite, a total that does not normalise), else ``(False, ids per
    row, bins per row)``: each row's entries of kept columns (``col_new[col] >= 0``) binned by
    :func:`quantile_bins` (normalised by their total), those with a bin ``>= keep_from`` and a
    token, in column order."""
    import math

    ids_out, bins_out = [], []
    for r in range(len(indptr) - 1):
        row, last = [], -1
        for k in range(int(indptr[r]), int(indptr[r + 1])):
            c = int(col_new[int(cols[k])])
            if c < 0:
                continue
            if c <= last or not 0 <= float(data[k]) < math.inf:
                return (True,)
            last = c
            row.append((c, data[k]))
        total = 0.0
        for _, x in row:
            total += float(x)
        if total == math.inf or (total > 0 and target_sum / total == math.inf):
            return (True,)
        x = np.array([v for _, v in row], dtype=data.dtype)
        bins = quantile_bins(np.array([0, x.size]), x, True, target_sum, log1p, grid, seed,
                             row0 + r, both)
        kept = [(int(col_ids[c]), float(b)) for (c, _), b in zip(row, bins.tolist())
                if b >= keep_from and col_ids[c] >= 0]
        ids_out.append([t for t, _ in kept])
        bins_out.append([b for _, b in kept])
    return False, ids_out, bins_out
