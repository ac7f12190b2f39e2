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
