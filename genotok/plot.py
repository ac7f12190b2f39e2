"""Quick-look plots of tokenized data (``pip install 'genotok[plot]'``; matplotlib).

Every function takes an optional ``ax`` and returns the Axes it drew on. Without ``ax``, a new
figure with matplotlib's constrained layout is made, so labels are never clipped; counts carry
thousands separators.
"""

from __future__ import annotations

import numpy as np

from ._optional import require
from .ragged import Ragged

LABEL_SIZE = 10
TICK_SIZE = 8
COLOR = "#4472c4"


def _axes(ax, size: tuple[float, float] = (6, 3.5)):
    """``ax``, or the Axes of a new figure whose layout keeps every label inside it."""
    if ax is not None:
        return ax
    plt = require("matplotlib.pyplot", "genotok.plot")
    return plt.subplots(figsize=size, layout="constrained")[1]


def _style(ax, xlabel: str | None, ylabel: str | None, title: str, *, x_thousands: bool = False,
           y_thousands: bool = False, x_integer: bool = False, y_integer: bool = False) -> None:
    """Labels at a readable size; counts with thousands separators; an axis of counts
    (``*_integer``) gets whole-number ticks (small counts showed 0, 0, 1, 2, 2, 2, 3: ticks
    at 0.5 steps, rounded by the separator format)."""
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    if x_integer:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if y_integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))

    if xlabel is not None:
        ax.set_xlabel(xlabel, fontsize=LABEL_SIZE)
    if ylabel is not None:
        ax.set_ylabel(ylabel, fontsize=LABEL_SIZE)
    ax.set_title(title, fontsize=LABEL_SIZE)
    ax.tick_params(labelsize=TICK_SIZE)
    if x_thousands:
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    if y_thousands:
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


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
    ax.hist(lengths, bins=bins, color=COLOR)
    median = np.median(lengths) if lengths.size else 0
    _style(ax, "tokens per record", "records", f"{lengths.size:,} records, median {median:,.0f} tokens",
           x_thousands=True, y_thousands=True, x_integer=True, y_integer=True)
    return ax


def token_frequency(records, tokenizer, *, top: int = 30, ax=None):
    """How often the most frequent region tokens occur, plus the share of special tokens.

    A horizontal bar per region, most frequent on top, so that the region names read level.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from genotok import Tokenizer
    >>> tok = Tokenizer(["chr1:0-10", "chr1:10-20"])
    >>> ax = token_frequency([[0, 0, 1]], tok)
    >>> ax.get_xlabel(), [t.get_text() for t in ax.get_yticklabels()]
    ('occurrences', ['chr1:0-10', 'chr1:10-20'])
    """
    data, _ = _rows(records)
    n_regions = tokenizer.universe.n_regions
    counts = np.bincount(data.astype(np.int64), minlength=tokenizer.vocab_size)
    order = np.argsort(counts[:n_regions], kind="stable")[::-1][:top]
    ax = _axes(ax, (6, max(3.0, 1.2 + 0.2 * order.size)))
    ax.barh(np.arange(order.size), counts[order], color=COLOR)
    ax.set_yticks(np.arange(order.size))
    ax.set_yticklabels(tokenizer.convert_ids_to_tokens(order))
    ax.invert_yaxis()  # the most frequent on top
    special = counts[n_regions:].sum()
    _style(ax, "occurrences", None,
           f"top {order.size} regions; special tokens: {special / max(counts.sum(), 1):.1%}",
           x_thousands=True)
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
    data, _ = _rows(records)
    u = tokenizer.universe
    ax = _axes(ax, (max(4.0, 1.5 + 0.25 * len(u.chrom_names)), 3.5))
    hit = np.zeros(u.n_regions, dtype=bool)
    ids = data[data < u.n_regions].astype(np.int64)
    hit[ids] = True
    codes = u.regions.codes
    per = np.bincount(codes, weights=hit, minlength=len(u.chrom_names))
    tot = np.bincount(codes, minlength=len(u.chrom_names))
    share = np.divide(per, tot, out=np.zeros_like(per), where=tot > 0)
    ax.bar(np.arange(share.size), share, color=COLOR)
    ax.set_xticks(np.arange(share.size))
    ax.set_xticklabels(u.chrom_names, rotation=90 if share.size > 6 else 0)
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(_percent())
    _style(ax, None, "regions ever hit",
           f"universe coverage: {hit.mean():.1%} of {u.n_regions:,} regions")
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
    ax.bar(np.arange(top + 1), np.bincount(lengths, minlength=top + 1), color=COLOR)
    nothing = np.mean(lengths == 0) if lengths.size else 0
    _style(ax, "universe regions hit per query", "queries",
           f"{lengths.size:,} queries, {nothing:.1%} hit nothing", y_thousands=True,
           x_integer=True, y_integer=True)
    return ax


def _percent():
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)
