"""Random contiguous windows over a corpus read as one token stream (cs336's ``get_batch``).

For decoder-style next-token training, the records of a corpus are laid end to end (record
0's tokens, then record 1's, …; shards in order) into one stream of ``n_tokens`` tokens, and a
batch is ``batch_size`` windows starting at uniformly random positions: ``x`` the window,
``y`` the same window one token later. Nothing is loaded: the windows are gathered straight
from the corpus's memory-mapped shards (only the pages under the windows are read).
"""

from __future__ import annotations

import numpy as np

from .errors import GenotokError
from .params import Integral, Interval, Unchecked, validated

#: what :func:`windows` accepts (:mod:`genotok.params`)
CONSTRAINTS = {"corpus": [Unchecked("a corpus, or records: read by what iterates it")],
               "context_length": [Interval(Integral, 1, None)],
               "batch_size": [Interval(Integral, 1, None)],
               "seed": [Interval(Integral, 0, None)],
               "step": [Interval(Integral, 0, None)]}


def _stream(corpus) -> tuple[list[np.ndarray], np.ndarray]:
    """The token arrays of the corpus's shards in order, and where each starts in the stream."""
    if not hasattr(corpus, "iter_batches") or not hasattr(corpus, "n_tokens"):
        raise GenotokError(f"windows: {type(corpus).__name__} is not a corpus (Corpus.open): "
                           "its records have no single token stream")
    # one batch per shard: zero-copy views of the shards' memory-mapped tokens
    arrays = [b.data for b in corpus.iter_batches(max(1, len(corpus)))]
    starts = np.zeros(len(arrays) + 1, np.int64)
    np.cumsum([a.size for a in arrays], out=starts[1:])
    return arrays, starts


@validated(CONSTRAINTS)
def windows(corpus, context_length: int, batch_size: int, seed: int = 0, *,
            step: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``batch_size`` random windows of the corpus's token stream: ``(x, y)``, ``y`` = ``x``
    shifted by one token.

    Parameters
    ----------
    corpus
        A :class:`~genotok.Corpus` (its records end to end, shards in order).
    context_length
        Tokens per window.
    batch_size
        Windows per batch.
    seed, step
        The starts are drawn from ``numpy.random.default_rng([seed, step])``: pass the
        training step to get a new batch every step, the same one again after a resume.

    Returns
    -------
    x, y
        ``(batch_size, context_length)`` int64 arrays.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import Corpus, CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=99, fingerprint="fp") as w:
    ...     w.append_batch([[10, 11, 12], [13, 14], [15, 16, 17, 18]])
    >>> x, y = windows(Corpus.open(p), context_length=4, batch_size=2, seed=0)
    >>> x.shape, bool((x[:, 1:] == y[:, :-1]).all()), bool((y - x == 1).all())
    ((2, 4), True, True)
    """
    arrays, starts = _stream(corpus)
    total, T = int(starts[-1]), int(context_length)
    if total < T + 1:
        raise GenotokError(f"windows: {getattr(corpus, 'path', 'the corpus')} holds {total} "
                           f"tokens, fewer than context_length + 1 = {T + 1}")
    rng = np.random.default_rng([int(seed), int(step)])
    first = rng.integers(0, total - T, int(batch_size))  # x = [s, s+T), y = [s+1, s+T+1)
    pos = first[:, None] + np.arange(T + 1)
    if len(arrays) == 1:
        toks = arrays[0][pos]  # a fancy index of the memmap: only the windows' pages are read
    else:
        toks = np.empty(pos.shape, np.int64)
        shard = np.searchsorted(starts, pos, side="right") - 1
        for k, a in enumerate(arrays):
            sel = shard == k
            if sel.any():
                toks[sel] = a[pos[sel] - starts[k]]
    toks = toks.astype(np.int64, copy=False)
    return toks[:, :-1], toks[:, 1:]
