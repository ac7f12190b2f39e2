"""Quick-look plots of tokenized data (``pip install 'genotok[plot]'``; matplotlib).

Every function takes an optional ``ax`` and returns the Axes it drew on.
"""

from __future__ import annotations

import numpy as np

from .ragged import Ragged


def _axes(ax):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("genotok.plot needs matplotlib: pip install 'genotok[plot]'") from None
    return plt.subplots(figsize=(6, 3.5))[1]


def _rows(records):
    """(flat ids, lengths) of a Corpus, a Ragged or a list of arrays."""
    if isinstance(records, Ragged):
        return records.data, records.lengths
    if hasattr(records, "to_ragged"):
        r = records.to_ragged()
        return r.data, r.lengths
    rows = [np.asarray(r) for r in records]
    data = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return data, np.array([r.size for r in rows], dtype=np.int64)


def record_lengths(records, *, bins: int = 50, ax=None):
    """Histogram of tokens per record (file or cell).

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> record_lengths([[1, 2], [3]]).get_xlabel()
    'tokens per record'
    """
    ax = _axes(ax)
    _, lengths = _rows(records)
    ax.hist(lengths, bins=bins, color="#4472c4")
    ax.set_xlabel("tokens per record")
    ax.set_ylabel("records")
    ax.set_title(f"{lengths.size:,} records, median {np.median(lengths) if lengths.size else 0:.0f} tokens")
    return ax


def token_frequency(records, tokenizer, *, top: int = 30, ax=None):
    """How often the most frequent region tokens occur, plus the share of special tokens.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from genotok import Tokenizer
    >>> tok = Tokenizer(["chr1:0-10", "chr1:10-20"])
    >>> token_frequency([[0, 0, 1]], tok).get_ylabel()
    'occurrences'
    """
    ax = _axes(ax)
    data, _ = _rows(records)
    n_regions = tokenizer.universe.n_regions
    counts = np.bincount(data.astype(np.int64), minlength=tokenizer.vocab_size)
    order = np.argsort(counts[:n_regions])[::-1][:top]
    ax.bar(np.arange(order.size), counts[order], color="#4472c4")
    ax.set_xticks(np.arange(order.size))
    ax.set_xticklabels(tokenizer.convert_ids_to_tokens(order), rotation=90, fontsize=6)
    special = counts[n_regions:].sum()
    ax.set_ylabel("occurrences")
    ax.set_title(f"top {order.size} regions; special tokens: {special / max(counts.sum(), 1):.1%}")
    return ax


def universe_coverage(records, tokenizer, *, ax=None):
    """Per chromosome, the share of universe regions hit at least once.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from genotok import Tokenizer
    >>> universe_coverage([[0]], Tokenizer(["chr1:0-10", "chr1:10-20"])).get_title()
    'universe coverage: 50.0% of 2 regions'
    """
    ax = _axes(ax)
    data, _ = _rows(records)
    u = tokenizer.universe
    hit = np.zeros(u.n_regions, dtype=bool)
    ids = data[data < u.n_regions].astype(np.int64)
    hit[ids] = True
    codes = u.regions.codes
    per = np.bincount(codes, weights=hit, minlength=len(u.chrom_names))
    tot = np.bincount(codes, minlength=len(u.chrom_names))
    share = np.divide(per, tot, out=np.zeros_like(per), where=tot > 0)
    ax.bar(np.arange(share.size), share, color="#4472c4")
    ax.set_xticks(np.arange(share.size))
    ax.set_xticklabels(u.chrom_names, rotation=90, fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("regions ever hit")
    ax.set_title(f"universe coverage: {hit.mean():.1%} of {u.n_regions:,} regions")
    return ax


def overlap_counts(tokenizer, regions, *, ax=None):
    """Histogram of how many universe regions each query region hits.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from genotok import Tokenizer
    >>> overlap_counts(Tokenizer(["chr1:0-10"]), ["chr1:5-6", "chr2:1-2"]).get_title()
    '2 queries, 50.0% hit nothing'
    """
    ax = _axes(ax)
    lengths = tokenizer.region_hits(regions).lengths
    top = int(lengths.max()) if lengths.size else 0
    ax.bar(np.arange(top + 1), np.bincount(lengths, minlength=top + 1), color="#4472c4")
    ax.set_xlabel("universe regions hit per query")
    ax.set_ylabel("queries")
    ax.set_title(f"{lengths.size:,} queries, {np.mean(lengths == 0) if lengths.size else 0:.1%} hit nothing")
    return ax
