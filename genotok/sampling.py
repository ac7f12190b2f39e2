"""Epoch orders and batch plans that do not depend on the number of ranks or workers.

An epoch of a corpus is one *global sequence* of records and one cut of it into *global
batches*, both fixed by ``(corpus, seed, epoch)`` and the batching settings, never by the
cluster. Rank ``r`` of ``W`` trains on global batches ``J0 + r, J0 + r + W, …`` (``J0`` being the
batches consumed before this run started), and DataLoader worker ``w`` of ``K`` makes that rank's
batches ``w, w + K, …``. So the position reached after any step is one number, the records (or
batches) consumed globally, and a run stopped with N ranks resumes with M ranks on exactly the
records a never-stopped run would still see. The last global batches, when they do not divide
among the ranks, are shared out (or repeated with weight 0, or dropped: :class:`BatchPlan`'s
``split``) so that every rank makes as many batches as every other.

- :func:`epoch_order`: no shuffle, a full random permutation, or a *block* shuffle that shuffles
  shards and then records within windows of a few shards (reads stay local: for corpora larger
  than memory, or remote corpora behind a shard cache).
- :func:`token_budget_batches`: batches of up to ``max_tokens`` padded tokens, made of records of
  similar length (length-bucketed), so that padding waste stays small.
- :class:`BatchPlan`: the settings of a run; :meth:`BatchPlan.schedule` is one rank's share of
  one epoch; :meth:`BatchPlan.state` and :meth:`BatchPlan.resume` are the small, JSON-ready state.
- :func:`shuffle_quality` and :func:`padding_waste`: the figures the benchmarks report.

This module needs NumPy only (no torch).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numba import njit

from ._config import NJIT
from .errors import GenotokError
from .params import (Below, ExactlyOne, Flag, HasAttr, InstanceOf, Integral, Interval, Options,
                     ParameterError, check, validate, validated)

SHUFFLES = ("none", "full", "block")
SPLITS = ("even", "drop_last", "pad")
#: a plan orders an epoch in memory (8 bytes a record): at most this many records
MAX_PLANNED = 1 << 28


#: an epoch order's shuffle: ``True`` (``"full"``), ``False``/``None`` (``"none"``) or a name
SHUFFLE = [InstanceOf(bool), Options(*SHUFFLES), None]
#: a record count, a seed, an epoch, a rank: 64-bit integers from 0
COUNT = [Interval(Integral, 0, None)]
#: a positive count
POSITIVE = [Interval(Integral, 1, None)]
#: an array-like of integers (record ids, lengths, bounds)
ARRAY = [InstanceOf(np.ndarray, list, tuple, range)]
#: a rank among ``world_size`` ranks (:class:`~genotok.params.Below` relates the two)
RANKS = {"rank": COUNT, "world_size": POSITIVE}


def _shuffle_mode(shuffle) -> str:
    """The shuffle's name (its value passed :data:`SHUFFLE`)."""
    if shuffle is True:
        return "full"
    return "none" if shuffle is False or shuffle is None else shuffle


@validated({"n": COUNT, "shard_starts": ARRAY + [None], "chunk_records": POSITIVE + [None]})
def chunk_bounds(n: int, shard_starts=None, chunk_records: int | None = None) -> np.ndarray:
    """Record boundaries of the units a block shuffle moves: shards, cut to ``chunk_records``.

    Examples
    --------
    >>> chunk_bounds(10, [0, 6, 10], chunk_records=4).tolist()
    [0, 4, 6, 10]
    """
    starts = np.asarray([0, n] if shard_starts is None else shard_starts, dtype=np.int64)
    if starts.ndim != 1 or starts.size < 2 or starts[0] != 0 or starts[-1] != n \
            or np.any(np.diff(starts) < 0):
        raise ValueError(f"shard_starts must rise from 0 to {n}, got {starts[:8].tolist()}…")
    if chunk_records is None:
        return starts
    cuts = [np.arange(a, b, chunk_records) for a, b in itertools.pairwise(starts)]
    return np.unique(np.concatenate(cuts + [np.array([n], np.int64)]))


@validated({"n": COUNT, "seed": COUNT, "epoch": COUNT, "shuffle": SHUFFLE, "bounds": ARRAY + [None],
            "window": POSITIVE})
def epoch_order(n: int, seed: int, epoch: int, shuffle="full", *, bounds=None,
                window: int = 4) -> np.ndarray:
    """The global record order of one epoch: a function of its arguments only.

    Parameters
    ----------
    n
        Number of records.
    seed, epoch
        The order is drawn from ``numpy.random.default_rng([seed, epoch])``.
    shuffle
        ``"none"`` (0..n-1), ``"full"`` (a uniform permutation) or ``"block"``: the chunks
        (``bounds``, e.g. shards from :func:`chunk_bounds`) are put in a random order, taken
        ``window`` at a time, and the records of each window are permuted. A reader then holds
        only ``window`` chunks at once.
    bounds
        Chunk boundaries for ``"block"`` (default: one chunk).
    window
        Chunks mixed together by ``"block"``.

    Examples
    --------
    >>> epoch_order(5, 0, 0, "none").tolist()
    [0, 1, 2, 3, 4]
    >>> order = epoch_order(8, 0, 0, "block", bounds=[0, 2, 4, 6, 8], window=2)
    >>> sorted(order[:4].tolist()) in ([0, 1, 2, 3], [0, 1, 4, 5], [0, 1, 6, 7], [2, 3, 4, 5],
    ...                                [2, 3, 6, 7], [4, 5, 6, 7])
    True
    """
    mode = _shuffle_mode(shuffle)
    if mode == "none":
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng([int(seed), int(epoch)])
    if mode == "full":
        return rng.permutation(n).astype(np.int64, copy=False)
    b = chunk_bounds(n) if bounds is None else np.asarray(bounds, dtype=np.int64)
    sizes = np.diff(b)
    perm = rng.permutation(sizes.size)
    # the chunks' records laid out in the shuffled chunk order (a vectorised concatenation)
    sz = sizes[perm]
    starts = np.repeat(b[:-1][perm] - np.concatenate([[0], np.cumsum(sz)[:-1]]), sz)
    order = starts + np.arange(n, dtype=np.int64)
    ends = np.concatenate([[0], np.cumsum(sz)])[::window]
    ends = np.append(ends, n) if ends[-1] != n else ends
    for a, c in itertools.pairwise(ends):
        order[a:c] = order[a:c][rng.permutation(c - a)]
    return order


@njit(**NJIT)
def _budget_cuts(lens, max_tokens):  # pragma: no cover - compiled
    """Greedy cuts of ascending lengths: a batch grows while ``count * longest <= max_tokens``."""
    cuts = np.empty(lens.size + 1, np.int64)
    k = 0
    cuts[0] = 0
    start = 0
    for i in range(lens.size):
        if i > start and (i - start + 1) * lens[i] > max_tokens:
            k += 1
            cuts[k] = i
            start = i
    if lens.size:
        k += 1
        cuts[k] = lens.size
    return cuts[:k + 1]


@validated({"order": ARRAY, "lengths": ARRAY, "max_tokens": POSITIVE, "bucket": POSITIVE,
            "rng": [InstanceOf(np.random.Generator), None], "max_length": POSITIVE + [None]})
def token_budget_batches(order: np.ndarray, lengths: np.ndarray, max_tokens: int, *,
                         bucket: int = 4096, rng: np.random.Generator | None = None,
                         max_length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cut ``order`` into batches of at most ``max_tokens`` padded tokens, length-bucketed.

    The order is taken ``bucket`` records at a time; each bucket is sorted by length and cut
    greedily (a batch of ``k`` records whose longest has ``L`` tokens costs ``k × L``), and the
    batches of a bucket are put in a random order (``rng``) so that lengths do not rise through
    the epoch. A record longer than ``max_tokens`` is a batch of its own. ``max_length`` is the
    collator's truncation, applied to the lengths first.

    Returns ``(sequence, bounds)``: the records in batch order and the batch boundaries into it.

    Examples
    --------
    >>> import numpy as np
    >>> seq, bounds = token_budget_batches(np.arange(6), np.array([1, 9, 2, 8, 1, 9]), 18)
    >>> [seq[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]
    [[0, 4, 2], [3, 1], [5]]
    """
    order = np.asarray(order, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)[order]
    if max_length is not None:
        lens = np.minimum(lens, max_length)
    lens = np.maximum(lens, 1)  # an empty record still takes a row
    seqs, bounds, done = [], [np.zeros(1, np.int64)], 0
    for a in range(0, order.size, bucket):
        part = np.argsort(lens[a:a + bucket], kind="stable")
        cuts = _budget_cuts(np.ascontiguousarray(lens[a:a + bucket][part]), int(max_tokens))
        pieces = [part[x:y] for x, y in itertools.pairwise(cuts)]
        if rng is not None:
            pieces = [pieces[i] for i in rng.permutation(len(pieces))]
        seqs.append(order[a:a + bucket][np.concatenate(pieces)] if pieces else order[:0])
        bounds.append(done + np.cumsum([p.size for p in pieces], dtype=np.int64))
        done += sum(p.size for p in pieces)
    seq = np.concatenate(seqs) if seqs else order[:0]
    return seq, np.concatenate(bounds)


@validated({"lengths": ARRAY, "seq": ARRAY, "bounds": ARRAY, "max_length": POSITIVE + [None]})
def padding_waste(lengths: np.ndarray, seq: np.ndarray, bounds: np.ndarray,
                  max_length: int | None = None) -> float:
    """Share of padded positions in the batches ``seq[bounds[j]:bounds[j + 1]]``.

    Examples
    --------
    >>> import numpy as np
    >>> round(padding_waste(np.array([1, 3, 2, 2]), np.arange(4), np.array([0, 2, 4])), 3)
    0.2
    """
    lens = np.asarray(lengths, dtype=np.int64)[np.asarray(seq, dtype=np.int64)]
    if max_length is not None:
        lens = np.minimum(lens, max_length)
    b = np.asarray(bounds, dtype=np.int64)
    keep = b[1:] > b[:-1]
    if not keep.any():
        return 0.0
    longest = np.maximum.reduceat(lens, b[:-1][keep]) if lens.size else np.zeros(0, np.int64)
    padded = int((longest * np.diff(b)[keep]).sum())
    return 1.0 - int(lens.sum()) / padded if padded else 0.0


@validated({"order": ARRAY, "bounds": ARRAY + [None], "span": POSITIVE})
def shuffle_quality(order: np.ndarray, bounds=None, span: int = 1024) -> dict:
    """How well ``order`` mixes, and how many chunks (shards) a reader holds at once.

    ``neighbour_distance``: the mean ``|order[i+1] - order[i]|`` over ``n / 3`` (about 1.0 for a
    uniform permutation, near 0 without shuffle). ``chunks_per_span``: the mean number of
    distinct chunks among ``span`` consecutive records (what a shard cache must hold).

    Examples
    --------
    >>> import numpy as np
    >>> shuffle_quality(np.arange(10))["neighbour_distance"]
    0.3
    """
    o = np.asarray(order, dtype=np.int64)
    n = o.size
    dist = float(np.abs(np.diff(o)).mean() / (n / 3)) if n > 1 else 0.0
    out = {"neighbour_distance": dist}
    if bounds is not None:
        chunk = np.searchsorted(np.asarray(bounds, dtype=np.int64), o, side="right") - 1
        counts = [np.unique(chunk[a:a + span]).size for a in range(0, max(n - span + 1, 1), span)]
        out["chunks_per_span"] = float(np.mean(counts)) if counts else 0.0
    return out


# ---------------------------------------------------------------------------------- plans
@dataclass(frozen=True)
class Schedule:
    """One rank's batches of one epoch (from :meth:`BatchPlan.schedule`).

    ``sequence[bounds[j]:bounds[j + 1]]`` is global batch ``j``; this rank makes the global
    batches ``batch_ids`` in that order, and then, when the epoch's last global batches do not
    divide among the ranks, one more batch ``last`` (see :class:`BatchPlan`'s ``split``): a
    share of those last batches (``"even"``) or a repeat of an earlier batch (``"pad"``). Every
    rank of a run has as many batches as every other. ``weights(k)`` is 1 for each record of
    batch ``k`` that counts and 0 for a repeat, so that no record counts twice in a loss.

    Examples
    --------
    >>> s = BatchPlan(batch_size=2, shuffle=False).bind(5).schedule(0, rank=1, world_size=2)
    >>> [s.batch(k)[1].tolist() for k in range(len(s))], s.weights(1).tolist()
    ([[2, 3], [4]], [0.0])
    >>> s.consumed(1), s.consumed(2)  # rank 0 makes [0, 1] and [4]: record 4 counts once
    (2, 3)
    """

    sequence: np.ndarray
    bounds: np.ndarray
    batch_ids: np.ndarray
    first: int  # global batches consumed before this schedule
    world_size: int
    last: np.ndarray | None = None  # records of the extra last batch (None: no such batch)
    last_weight: float = 1.0  # 1.0: a share of the epoch's last batches; 0.0: a repeat
    last_position: int = 0  # where ``last`` starts in ``sequence`` (its batch's random stream)
    last_filler: int = 0  # records of ``last`` repeated only to keep it non-empty (weight 0)
    dropped: int = 0  # records of this epoch that no rank makes (``split="drop_last"``)

    def __len__(self) -> int:
        return int(self.batch_ids.size) + (self.last is not None)

    def batch(self, k: int) -> tuple[int, np.ndarray]:
        """``(position, record ids)`` of this rank's ``k``-th batch: ``position`` is where the
        batch starts in the epoch's global sequence (its random stream is drawn from it)."""
        if k == self.batch_ids.size and self.last is not None:
            return self.last_position, self.last
        j = int(self.batch_ids[k])
        return int(self.bounds[j]), self.sequence[self.bounds[j]:self.bounds[j + 1]]

    def weights(self, k: int) -> np.ndarray:
        """float32, one per record of batch ``k``: 1 where the record counts, 0 on a repeat."""
        rows = self.batch(k)[1].size
        w = np.ones(rows, np.float32)
        if k == self.batch_ids.size and self.last is not None:
            w[:] = self.last_weight
            if self.last_filler:
                w[rows - self.last_filler:] = 0.0
        return w

    def records(self) -> np.ndarray:
        """This rank's records, in the order it sees them (repeats included)."""
        if not len(self):
            return self.sequence[:0]
        return np.concatenate([self.batch(k)[1] for k in range(len(self))])

    def consumed(self, steps: int) -> int:
        """Global batches consumed once every rank has made ``steps`` batches: all of them
        (the dropped ones too) once every rank has made its last."""
        n = self.bounds.size - 1
        if len(self) and steps >= len(self):
            return n
        return min(n, self.first + int(steps) * self.world_size)


class BatchPlan:
    """How an epoch is ordered and batched: the settings, independent of ranks and workers.

    A plan is made of settings alone and then bound to the records it orders (:meth:`over` a
    corpus or a mixture, :meth:`bind` to lengths or a count): the datasets and the Lightning
    data module take a plan and bind it to their corpus, so its settings are written once.

    Parameters
    ----------
    batch_size
        Records per batch (per rank), when ``max_tokens`` is not given.
    max_tokens
        Padded tokens per batch instead (:func:`token_budget_batches`); ``bucket`` and
        ``max_length`` (the collator's truncation; a dataset fills it from its collator) go
        there.
    shuffle, seed, window, chunk_records
        The epoch order (:func:`epoch_order`; the block shuffle's chunks are the corpus's
        shards cut to ``chunk_records``, :func:`chunk_bounds`).
    split
        The epoch's last global batches when they do not divide among the ranks (``tail =
        (batches left) % world_size`` of them). Every rank makes as many batches as every other,
        whatever the split, so a collective per step (DDP's all-reduce) never waits for a rank
        that has finished: ``"even"`` (default) cuts the tail's records into ``world_size``
        near-equal shares, one more (smaller) batch per rank, every record exactly once (a rank
        left without a record when the tail holds fewer records than ranks repeats one with
        weight 0); ``"drop_last"`` drops the tail's records (:meth:`dropped` counts them,
        ``Schedule.dropped`` too), fewer than ``world_size`` batches per epoch; ``"pad"`` gives
        the tail's batches to the first ranks as they are and the last ranks repeat this run's
        first batches with weight 0 (``Schedule.weights``; the loaders' ``sample_weight``), so
        no record counts twice in a loss that uses the weights.
    drop_last_batch
        Drop a short last batch (fixed ``batch_size`` only).

    Examples
    --------
    >>> import numpy as np
    >>> plan = BatchPlan(batch_size=2, shuffle=False).bind(10)
    >>> [plan.schedule(0, 0, rank=r, world_size=2).records().tolist() for r in range(2)]
    [[0, 1, 4, 5, 8], [2, 3, 6, 7, 9]]
    >>> state = plan.state(epoch=0, first=0, steps=2, world_size=2); state["records_seen"]
    8
    >>> plan.schedule(0, plan.resume(state)[1], rank=0, world_size=1).records().tolist()
    [8, 9]
    """

    #: what a plan (so every loader and dataset over it) accepts, checked when it is made:
    #: ``batch_size=1.5`` or a negative ``seed`` is refused there, not at the first iteration
    CONSTRAINTS = {"batch_size": POSITIVE + [None], "max_tokens": POSITIVE + [None],
                   "seed": COUNT, "window": POSITIVE, "chunk_records": POSITIVE + [None],
                   "split": [Options(*SPLITS)], "drop_last_batch": [Flag()],
                   "bucket": POSITIVE, "max_length": POSITIVE + [None], "shuffle": SHUFFLE}
    RULES = (ExactlyOne("batch_size", "max_tokens"),)

    def __init__(self, batch_size: int | None = None, *, max_tokens: int | None = None,
                 shuffle="full", seed: int = 0, window: int = 4,
                 chunk_records: int | None = None, split: str = "even",
                 drop_last_batch: bool = False, bucket: int = 4096,
                 max_length: int | None = None):
        validate({"batch_size": batch_size, "max_tokens": max_tokens, "shuffle": shuffle,
                  "seed": seed, "window": window, "chunk_records": chunk_records, "split": split,
                  "drop_last_batch": drop_last_batch, "bucket": bucket,
                  "max_length": max_length}, self.CONSTRAINTS, "BatchPlan", rules=self.RULES)
        self.batch_size, self.max_tokens = batch_size, max_tokens
        self.shuffle, self.seed, self.window = _shuffle_mode(shuffle), int(seed), int(window)
        self.chunk_records = chunk_records
        self.split, self.drop_last_batch = split, bool(drop_last_batch)
        self.bucket, self.max_length = int(bucket), max_length
        self.lengths: np.ndarray | None = None  # bound: tokens of every record (or zeros)
        self.bounds: np.ndarray | None = None
        self._n: int | None = None
        self._cache: tuple | None = None

    def settings(self) -> dict:
        """The plan's settings (what it was made with), e.g. to make a changed copy."""
        return {"batch_size": self.batch_size, "max_tokens": self.max_tokens,
                "shuffle": self.shuffle, "seed": self.seed, "window": self.window,
                "chunk_records": self.chunk_records, "split": self.split,
                "drop_last_batch": self.drop_last_batch, "bucket": self.bucket,
                "max_length": self.max_length}

    def replace(self, **changes) -> BatchPlan:
        """An unbound copy with some settings changed."""
        return BatchPlan(**{**self.settings(), **changes})

    def bind(self, lengths, shard_starts=None) -> BatchPlan:
        """A copy of this plan over records of ``lengths`` (tokens of every record), or over
        a number of records when batches hold ``batch_size`` records; ``shard_starts`` are
        the chunks of a block shuffle (:func:`shard_starts`)."""
        if np.ndim(lengths) == 0:
            if self.max_tokens is not None:
                raise ValueError("max_tokens needs the length of every record, not a count")
            n, lengths = int(lengths), None
        else:
            lengths = np.asarray(lengths)
            n = int(lengths.size)
        if n > MAX_PLANNED:
            raise GenotokError(
                f"BatchPlan: an epoch of {n:,} records is ordered in memory (8 bytes a record), "
                f"at most {MAX_PLANNED:,}: give a mixture a smaller length= (draws per epoch), "
                "or split the corpus")
        plan = self.replace()
        plan._n, plan.lengths = n, lengths
        plan.bounds = chunk_bounds(n, shard_starts, self.chunk_records)
        return plan

    def over(self, corpus) -> BatchPlan:
        """A copy of this plan bound to a corpus (or a mixture): its shards are the block
        shuffle's chunks; the record lengths are read only for ``max_tokens``."""
        lengths = corpus.lengths if self.max_tokens is not None else len(corpus)
        return self.bind(lengths, shard_starts(corpus))

    def _bound(self) -> int:
        if self._n is None:
            raise GenotokError("this BatchPlan holds settings only: bind it to its records "
                               "first (plan.over(corpus), plan.bind(lengths))")
        return self._n

    def __len__(self) -> int:
        return self._bound()

    def order(self, epoch: int) -> np.ndarray:
        """The epoch's global record order."""
        return epoch_order(len(self), self.seed, epoch, self.shuffle, bounds=self.bounds,
                           window=self.window)

    def batches(self, epoch: int, first_record: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(sequence, bounds)``: the epoch's global batches (fixed size: from ``first_record``).

        A fixed batch size cuts the order from the first record not yet consumed, so a run may
        resume with another ``batch_size``; token-budget batches are cut once per epoch.
        """
        key = (int(epoch), int(first_record) if self.max_tokens is None else 0)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        order = self.order(epoch)
        if self.max_tokens is None:
            n, b, f = order.size, int(self.batch_size), key[1]
            last = n if not self.drop_last_batch else f + (n - f) // b * b
            # the records before the resume point form batch 0 (consumed); then batches of b
            cuts = np.concatenate([[0], np.arange(f, last, b, dtype=np.int64), [last]])
            out = (order, np.unique(cuts))
        else:
            rng = np.random.default_rng([self.seed, int(epoch), 1])
            out = token_budget_batches(order, self.lengths, self.max_tokens, bucket=self.bucket,
                                       rng=rng, max_length=self.max_length)
        self._cache = (key, out)
        return out

    def _first_batch(self, epoch: int, first_record: int) -> tuple[np.ndarray, np.ndarray, int]:
        seq, bounds = self.batches(epoch, first_record)
        if first_record >= bounds[-1]:
            return seq, bounds, bounds.size - 1
        j = int(np.searchsorted(bounds, first_record))
        if bounds[j] != first_record:
            raise ValueError(f"record position {first_record} is not a batch boundary of this plan "
                             "(a token-budget state resumes with the same max_tokens and bucket)")
        return seq, bounds, j

    @validated({"epoch": COUNT, "first_record": COUNT, **RANKS}, "BatchPlan.schedule",
               rules=[Below("rank", "world_size")])
    def schedule(self, epoch: int, first_record: int = 0, *, rank: int = 0,
                 world_size: int = 1) -> Schedule:
        """Rank ``rank``'s batches of ``epoch``, once ``first_record`` records are consumed.

        Every rank gets as many batches as every other, whatever the split (see the class).
        """
        seq, bounds, first = self._first_batch(epoch, first_record)
        total = bounds.size - 1
        left = total - first
        full, tail = divmod(left, world_size)
        ids = first + rank + world_size * np.arange(full, dtype=np.int64)
        if not tail:
            return Schedule(seq, bounds, ids, first, world_size)
        cut = int(bounds[first + full * world_size])  # the tail: records of the last batches
        if self.split == "drop_last":
            return Schedule(seq, bounds, ids, first, world_size, dropped=int(bounds[-1]) - cut)
        if self.split == "pad":
            if rank < tail:  # a batch of the tail as it is
                j = first + full * world_size + rank
                return Schedule(seq, bounds, ids, first, world_size,
                                last=seq[bounds[j]:bounds[j + 1]], last_position=int(bounds[j]))
            j = first + (rank - tail) % left  # a repeat of this run's first batches, weight 0
            return Schedule(seq, bounds, ids, first, world_size, last=seq[bounds[j]:bounds[j + 1]],
                            last_weight=0.0, last_position=int(bounds[j]))
        # "even": the tail's records cut into world_size near-equal contiguous shares
        q, r = divmod(int(bounds[-1]) - cut, world_size)  # the first r ranks take q + 1
        a = cut + rank * q + min(rank, r)
        b = a + q + (rank < r)
        if a < b:
            return Schedule(seq, bounds, ids, first, world_size, last=seq[a:b], last_position=a)
        # fewer tail records than ranks: this rank repeats one of them, with weight 0
        return Schedule(seq, bounds, ids, first, world_size, last=seq[cut:cut + 1],
                        last_position=cut, last_filler=1)

    def dropped(self, epoch: int, world_size: int, first_record: int = 0) -> int:
        """Records of ``epoch`` that ``split="drop_last"`` drops on ``world_size`` ranks (0 for
        the other splits): the last ``(batches left) % world_size`` global batches.

        Examples
        --------
        >>> BatchPlan(batch_size=64, split="drop_last").bind(500).dropped(0, world_size=3)
        116
        """
        return self.schedule(epoch, first_record, world_size=world_size).dropped

    def state(self, *, epoch: int, first: int, steps: int, world_size: int,
              roll: bool = False) -> dict:
        """The position after ``steps`` batches per rank of a run that began at record ``first``.

        Small and JSON-ready: the epoch, the seed, the records (and batches) consumed globally.
        ``roll``: a finished epoch is given as the start of the next one.
        """
        sched = self.schedule(epoch, first, world_size=world_size)
        j = sched.consumed(steps)
        if roll and j == sched.bounds.size - 1 and (steps > 0 or first >= sched.bounds[-1]):
            epoch, j, sched = epoch + 1, 0, self.schedule(epoch + 1, world_size=world_size)
        return {"epoch": int(epoch), "seed": self.seed, "records_seen": int(sched.bounds[j]),
                "batches_seen": int(j), "max_tokens": self.max_tokens}

    @validated({"state": [InstanceOf(Mapping, hint="a loader's state_dict()")]},
               "BatchPlan.resume")
    def resume(self, state: dict) -> tuple[int, int]:
        """``(epoch, first record)`` to continue from ``state``, for any world size. The state
        is checked before it is used (a state is a file someone may have edited): a mapping
        whose ``seed``, ``epoch`` and ``records_seen`` are whole numbers >= 0 (within
        ``n_records`` when bound), of this plan's seed and ``max_tokens``; a
        :class:`~genotok.params.ParameterError` (a ``ValueError``) otherwise."""
        if any(k not in state for k in ("seed", "epoch", "records_seen")):
            raise ParameterError("resume: the state needs 'seed', 'epoch' and 'records_seen' "
                                 f"(a loader's state_dict()), got {str(state)[:80]}")
        for key, hi in (("seed", None), ("epoch", None), ("records_seen", self._n)):
            check(f"state[{key!r}]", state[key], [Interval(Integral, 0, hi)], "resume")
        if int(state["seed"]) != self.seed:
            raise ParameterError(f"the saved state belongs to seed {state['seed']}, this run uses "
                                 f"{self.seed}: the record order would differ")
        if state.get("max_tokens") != self.max_tokens:
            raise ParameterError(f"the saved state was made with max_tokens="
                                 f"{str(state.get('max_tokens'))[:40]}, this run uses "
                                 f"{self.max_tokens}: the batches would differ")
        return int(state["epoch"]), int(state["records_seen"])


@validated({"corpus": [HasAttr("__len__")]})
def shard_starts(corpus) -> np.ndarray:
    """First record of every shard of a corpus (from its manifest: the corpus store's shards,
    another store's files), and the total at the end; one chunk when the manifest says nothing.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter, Corpus
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1], [2]])
    >>> shard_starts(Corpus.open(p)).tolist()
    [0, 2]
    """
    m = getattr(corpus, "manifest", None)
    m = m if isinstance(m, dict) else {}
    # the corpus store lists its shards, the other stores their files ("entries"), with counts
    parts = m.get("shards") if isinstance(m.get("shards"), list) else m.get("entries")
    ok = isinstance(parts, list) and parts and all(
        isinstance(e, dict) and isinstance(e.get("n_records"), int) and e["n_records"] >= 0
        for e in parts)
    counts = [e["n_records"] for e in parts] if ok else [len(corpus)]
    if sum(counts) != len(corpus):  # counted otherwise: one chunk
        counts = [len(corpus)]
    return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])


@validated({"corpus": [HasAttr("__len__")], "batch_size": POSITIVE + [None],
            "max_tokens": POSITIVE + [None]})
def plan_for(corpus, *, batch_size: int | None = None, max_tokens: int | None = None,
             **kwargs) -> BatchPlan:
    """A :class:`BatchPlan` of these settings bound to a corpus (``BatchPlan(...).over(corpus)``).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter, Corpus
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1], [2, 3], [4]])
    >>> plan = plan_for(Corpus.open(p), max_tokens=2, shuffle=False)
    >>> sched = plan.schedule(0)
    >>> sorted(sched.batch(k)[1].tolist() for k in range(len(sched)))  # 2 tokens per batch
    [[0, 2], [1]]
    """
    return BatchPlan(batch_size, max_tokens=max_tokens, **kwargs).over(corpus)


class BatchSampler:
    """One rank's batches of record indices from a :class:`BatchPlan`, epoch by epoch.

    A ``batch_sampler`` for a map-style ``torch.utils.data.DataLoader`` (over
    :class:`~genotok.torch_data.CorpusDataset`, or a Hugging Face dataset from
    :meth:`Corpus.to_hf_dataset <genotok.Corpus.to_hf_dataset>`), e.g. token-budget batches.
    Call :meth:`set_epoch` before each epoch, as with torch's ``DistributedSampler``.

    Examples
    --------
    >>> import numpy as np
    >>> plan = BatchPlan(max_tokens=5, shuffle=False).bind(np.array([5, 1, 1, 5, 2]))
    >>> sampler = BatchSampler(plan)
    >>> sorted(sorted(b) for b in sampler), len(sampler)  # at most 5 padded tokens each
    ([[0], [1, 2], [3], [4]], 4)
    """

    @validated({"plan": [InstanceOf(BatchPlan)], **RANKS}, "BatchSampler",
               rules=[Below("rank", "world_size")])
    def __init__(self, plan: BatchPlan, *, rank: int = 0, world_size: int = 1):
        self.plan, self.rank, self.world_size = plan, int(rank), int(world_size)
        self.epoch = 0

    CONSTRAINTS = __init__.CONSTRAINTS

    @validated({"epoch": [Interval(Integral, 0, None)]}, "BatchSampler.set_epoch")
    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _schedule(self) -> Schedule:
        return self.plan.schedule(self.epoch, rank=self.rank, world_size=self.world_size)

    def __len__(self) -> int:
        return len(self._schedule())

    def __iter__(self):
        sched = self._schedule()
        for k in range(len(sched)):
            yield sched.batch(k)[1].tolist()
