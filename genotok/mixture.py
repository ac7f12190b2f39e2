"""Weighted mixtures of corpora: :func:`mix` gives a corpus-like view the loaders read as one.

A :class:`Mixture` of corpora ``C_0 … C_{K-1}`` with weights ``w_k`` (normalised to sum to 1)
is, for each epoch, a sequence of ``len(mixture)`` draws:

1. **Which corpus.** A deterministic interleave (:mod:`genotok.kernels.mixing`, a smooth
   weighted round robin on integer weights) assigns draw slots to corpora so that every prefix
   holds each corpus's share to within one draw. The weights are made integers ``a_k / D``
   (exact fractions: 0.5, 0.3, 0.2 become 5, 3, 2 of 10), and a *window* of ``window`` draws, a
   multiple of ``D``, holds exactly ``a_k * window / D`` draws of corpus ``k``.
2. **Shuffled within each window** by ``(seed, epoch)``: the order changes every epoch, the
   counts of every window stay exact.
3. **Which record.** Corpus ``k`` is read as an endless stream of passes, each pass a
   permutation of its records fixed by ``(seed, k, pass)`` (records ranked by a hash; in
   order with ``shuffle=False``); the mixture's ``c``-th draw of corpus ``k`` in epoch ``e`` is draw
   ``e * q_k + c`` of that stream (``q_k`` the corpus's draws per epoch). So no record repeats
   before its corpus has been seen whole, and an epoch continues where the last one stopped.

**An epoch** is, by default, long enough that every corpus is seen whole at least once:
``max_k ceil(n_k / w_k)`` draws (the corpus with the largest size per weight sets it; smaller
shares are repeated, each repeat in a fresh order). Give ``length=`` for another size (e.g. a
fixed number of draws per epoch, where large corpora are seen in parts over several epochs).

Everything is a function of ``(corpora, weights, seed, length, window, shuffle, epoch)``: a
mixture is elastic and resumable exactly as a single corpus (the loaders' state is the epoch
and the records consumed; :attr:`Mixture.identity` covers the settings). The torch datasets
and the Lightning data module take a mixture where they take a corpus; batch it in order
(``shuffle=False``: the mixture shuffles itself, and a dataset shuffle would only move draws
across windows) and by ``batch_size`` (a mixture's record lengths change with the epoch, so
token budgets are refused).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .errors import GenotokError, UniverseMismatchError
from .formats.corpus import Corpus
from .kernels import mixing as _k
from .kernels.gather import gather as _gather_rows
from .params import Flag, Integral, Interval, validate
from .ragged import Ragged

#: what :func:`mix` accepts (:mod:`genotok.params`)
CONSTRAINTS = {"seed": [Interval(Integral, 0, None)],
               "length": [Interval(Integral, 1, None), None],
               "window": [Interval(Integral, 1, None), None],
               "shuffle": [Flag()]}

#: the default window holds at least this many draws
WINDOW = 1024
#: draws gathered at once when a batch lies within such a block (the loaders' batches in order)
BLOCK = 1024
#: weights are made fractions with denominators up to this (a finer weight is rounded to it)
MAX_DENOMINATOR = 1 << 20


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wraps; arrays never warn on overflow)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _pass_orders(seed: int, j: int, passes: np.ndarray, size: int) -> np.ndarray:
    """``(len(passes), size)``: the record order of each pass of corpus ``j``, a function of
    ``(seed, j, pass)`` alone (records ranked by a hash), however the passes are grouped."""
    base = _mix64(_mix64(np.array([seed], np.uint64)) ^ np.array([j], np.uint64))
    rows = _mix64(base ^ passes.astype(np.uint64))
    keys = _mix64(rows[:, None] ^ _mix64(np.arange(size, dtype=np.uint64))[None, :])
    return np.argsort(keys, axis=1, kind="stable")


def _integer_weights(weights) -> tuple[np.ndarray, int]:
    """Positive weights as integers ``a`` and their sum ``D``: the shares ``a / D``."""
    w = [float(x) for x in np.asarray(weights, dtype=np.float64).ravel()]
    total = sum(w)
    fracs = [Fraction(x / total).limit_denominator(MAX_DENOMINATOR) for x in w]
    den = math.lcm(*(f.denominator for f in fracs))
    if den > MAX_DENOMINATOR or not all(fracs):  # fine or tiny shares: a grid of 2**-20
        a = [max(1, round(x / total * MAX_DENOMINATOR)) for x in w]
    else:
        a = [f.numerator * (den // f.denominator) for f in fracs]
    g = math.gcd(*a)
    a = np.array([x // g for x in a], np.int64)
    return a, int(a.sum())


class Mixture(Sequence):
    """A weighted mixture of corpora read as one corpus (make it with :func:`mix`).

    ``mixture[i]`` is the record of draw ``i`` of the current epoch (:meth:`set_epoch`),
    :meth:`source` says which corpus and record it is, :meth:`get_batch` gathers many.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> d = tempfile.mkdtemp()
    >>> for name, rows in (("a", [[1], [2], [3], [4]]), ("b", [[5, 6], [7, 8]])):
    ...     with CorpusWriter(os.path.join(d, name + ".gtokc"), vocab_size=9, fingerprint="fp") as w:
    ...         w.append_batch(rows)
    >>> m = mix([os.path.join(d, "a.gtokc"), os.path.join(d, "b.gtokc")], [0.5, 0.5], seed=1)
    >>> len(m), m.window  # every corpus seen whole: 4 records at a half share
    (8, 1024)
    >>> sorted(m.source(i)[0] for i in range(len(m)))  # exactly half of each
    [0, 0, 0, 0, 1, 1, 1, 1]
    >>> sorted(m.source(i)[1] for i in range(len(m)) if m.source(i)[0] == 0)
    [0, 1, 2, 3]
    """

    def __init__(self, corpora: Sequence[Corpus], weights, *, seed: int = 0,
                 length: int | None = None, window: int | None = None, shuffle: bool = True):
        validate({"seed": seed, "length": length, "window": window, "shuffle": shuffle},
                 CONSTRAINTS, "mix")
        self.corpora = list(corpora)
        w = np.asarray(weights, dtype=np.float64).ravel() if len(np.ravel(weights)) else \
            np.zeros(0)
        if not self.corpora or w.size != len(self.corpora):
            raise GenotokError(f"mix: {len(self.corpora)} corpora and {w.size} weights: give one "
                               "positive weight per corpus (and at least one corpus)")
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise GenotokError(f"mix: weights must be finite and > 0, got {w.tolist()}")
        for k, c in enumerate(self.corpora):
            if len(c) == 0:
                raise GenotokError(f"mix: corpus {k} ({getattr(c, 'path', c)}) has no records "
                                   "to draw")
            if c.fingerprint != self.corpora[0].fingerprint:
                raise UniverseMismatchError(
                    f"mix: corpus {k} ({getattr(c, 'path', c)}) was tokenized with universe "
                    f"{c.fingerprint[:12]}…, corpus 0 ({getattr(self.corpora[0], 'path', '')}) "
                    f"with {self.corpora[0].fingerprint[:12]}…: their ids mean different regions")
        self.weights = w / w.sum()
        self.seed, self.shuffle = int(seed), bool(shuffle)
        self._a, self._den = _integer_weights(w)
        sizes = np.array([len(c) for c in self.corpora], np.int64)
        self.length = int(length) if length is not None else \
            int(max(-(-int(n) * self._den // int(a)) for n, a in zip(sizes, self._a)))
        self.window = int(window) if window is not None else self._den * -(-WINDOW // self._den)
        self.epoch = 0
        self._slots: tuple | None = None
        self._cache: tuple | None = None
        self._block: tuple | None = None

    # -- what a corpus offers the loaders
    @property
    def identity(self) -> str:
        """What this mixture is: its corpora's identities and every setting (loader states
        carry it, so that a state resumes only the same mixture)."""
        h = hashlib.blake2b(digest_size=8)
        h.update(repr((tuple(c.identity for c in self.corpora), self._a.tolist(), self.seed,
                       self.length, self.window, self.shuffle)).encode())
        return "mix-" + h.hexdigest()

    @property
    def fingerprint(self) -> str:
        """The universe fingerprint (the same for every corpus of a mixture)."""
        return self.corpora[0].fingerprint

    @property
    def vocab_size(self) -> int:
        return self.corpora[0].vocab_size

    @property
    def special_token_ids(self) -> dict:
        return self.corpora[0].special_token_ids

    @property
    def has_values(self) -> bool:
        """Whether every corpus has a value channel."""
        return all(c.has_values for c in self.corpora)

    @property
    def manifest(self) -> None:
        """A mixture has no shards of its own (block shuffles see one chunk)."""
        return None

    @property
    def lengths(self) -> np.ndarray:
        """Refused: a mixture's records, so their lengths, change with the epoch."""
        raise GenotokError("a mixture's records change with the epoch, so a plan cut once on "
                           "their lengths would be wrong from the second epoch on: batch a "
                           "mixture by batch_size (token budgets, max_tokens, are not supported "
                           "over a mixture); epoch_lengths() gives this epoch's lengths")

    def epoch_lengths(self) -> np.ndarray:
        """Tokens of every draw of the current epoch (int64)."""
        k, r = self._mapping()
        out = np.empty(self.length, np.int64)
        for j, c in enumerate(self.corpora):
            sel = k == j
            out[sel] = c.lengths[r[sel]]
        return out

    def __len__(self) -> int:
        return self.length

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose draws indexing returns (the loaders call it)."""
        self.epoch = int(epoch)

    # -- the draws
    def _interleave(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(corpus of each slot, its draw number within that corpus, draws per corpus)``:
        the same for every epoch."""
        if self._slots is None:
            kinds = np.empty(self.length, np.int32)
            _k.interleave(self._a, self._den, kinds)
            counts = np.bincount(kinds, minlength=len(self.corpora)).astype(np.int64)
            number = np.empty(self.length, np.int64)
            for j in range(len(self.corpora)):
                sel = np.flatnonzero(kinds == j)
                number[sel] = np.arange(sel.size)
            self._slots = (kinds, number, counts)
        return self._slots

    def _mapping(self) -> tuple[np.ndarray, np.ndarray]:
        """``(corpus, record)`` of every draw of the current epoch (cached per epoch)."""
        if self._cache is not None and self._cache[0] == self.epoch:
            return self._cache[1]
        kinds, number, counts = self._interleave()
        n = self.length
        if self.shuffle:  # a permutation within each window, from (seed, epoch)
            rng = np.random.default_rng([self.seed, self.epoch, 0x6D6978])
            key = (np.arange(n, dtype=np.int64) // self.window << 32) | \
                rng.integers(0, 1 << 32, n, dtype=np.int64)
            perm = np.argsort(key, kind="stable")
        else:
            perm = np.arange(n, dtype=np.int64)
        kind = kinds[perm].astype(np.int64)
        record = np.empty(n, np.int64)
        for j, c in enumerate(self.corpora):
            sel = np.flatnonzero(kind == j)
            g = self.epoch * counts[j] + number[perm[sel]]  # draws of corpus j's stream
            record[sel] = self._stream(j, g)
        self._cache = (self.epoch, (kind, record))
        return kind, record

    def _stream(self, j: int, g: np.ndarray) -> np.ndarray:
        """Record of draws ``g`` of corpus ``j``'s stream of passes."""
        size = len(self.corpora[j])
        passes, at = np.divmod(g, size)
        if not self.shuffle:
            return at
        out = np.empty(g.size, np.int64)
        todo = np.unique(passes)
        step = max(1, (1 << 22) // size)  # passes ranked at once: at most 4 M keys in memory
        for a in range(0, todo.size, step):
            chunk = todo[a:a + step]
            perms = _pass_orders(self.seed, j, chunk, size)
            sel = (passes >= chunk[0]) & (passes <= chunk[-1])
            out[sel] = perms[np.searchsorted(chunk, passes[sel]), at[sel]]
        return out

    def sources(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """``(corpus, record)`` arrays of draws ``indices`` of the current epoch."""
        idx = self._check(indices)
        kind, record = self._mapping()
        return kind[idx], record[idx]

    def source(self, i: int) -> tuple[int, int]:
        """``(corpus, record)`` of draw ``i`` of the current epoch."""
        k, r = self.sources([i])
        return int(k[0]), int(r[0])

    def _check(self, indices) -> np.ndarray:
        idx = np.asarray(indices)
        if idx.size and idx.dtype.kind not in "iu":
            raise IndexError(f"draw indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64, copy=False).ravel()
        n = self.length
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"draw {int(bad)} out of range for a mixture of {n} draws per epoch")
        return np.where(idx < 0, idx + n, idx)

    # -- reading
    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.get_batch(np.arange(*i.indices(self.length)))
        if isinstance(i, (list, tuple, np.ndarray)):
            return self.get_batch(i)
        k, r = self.source(int(i))
        return self.corpora[k][r]

    def values(self, i: int) -> np.ndarray:
        """The value channel of draw ``i``."""
        k, r = self.source(int(i))
        return self.corpora[k].values(r)

    def get_batch(self, indices, *, values: bool = False) -> Ragged:
        """Many draws at once, in the order asked.

        Draws that lie in one block of :data:`BLOCK` draws (a loader's batches, in order) are
        served from that block, gathered whole once per epoch (one gather per corpus per
        block, then one gather per batch, as from a single corpus); others are gathered
        directly (one gather per corpus, then one reorder).
        """
        idx = self._check(indices)
        if idx.size:
            b = int(idx[0]) // BLOCK
            lo, hi = b * BLOCK, min((b + 1) * BLOCK, self.length)
            if idx.min() >= lo and idx.max() < hi:
                key = (self.epoch, b, bool(values))
                if self._block is None or self._block[0] != key:
                    self._block = (key, self._gather(np.arange(lo, hi), values))
                block = self._block[1]
                local = idx - lo
                lens = np.diff(block.offsets)[local]
                offsets = np.zeros(idx.size + 1, np.int64)
                np.cumsum(lens, out=offsets[1:])
                data = np.empty(int(offsets[-1]), block.data.dtype)
                _gather_rows(block.data, block.offsets, local, offsets, data)
                vals = None
                if values:
                    vals = np.empty(int(offsets[-1]), block.values.dtype)
                    _gather_rows(block.values, block.offsets, local, offsets, vals)
                return Ragged(data, offsets, vals)
        return self._gather(idx, values)

    def _gather(self, idx: np.ndarray, values: bool) -> Ragged:
        """Draws ``idx`` (checked): one gather per corpus, then each row back to its place."""
        kind, record = self.sources(idx)
        n = kind.size
        by = np.argsort(kind, kind="stable")  # the draws grouped by corpus
        cut = np.searchsorted(kind[by], np.arange(len(self.corpora) + 1))
        parts = [c.get_batch(record[by[cut[j]:cut[j + 1]]], values=values)
                 for j, c in enumerate(self.corpora) if cut[j + 1] > cut[j]]
        if not parts:
            return Ragged(np.zeros(0, np.uint32), np.zeros(1, np.int64),
                          np.zeros(0, np.float32) if values else None)
        # the groups' rows end to end, then each row back to its place (one gather kernel)
        lens = np.concatenate([np.diff(p.offsets) for p in parts])
        grouped = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=grouped[1:])
        inv = np.empty(n, np.int64)
        inv[by] = np.arange(n)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lens[inv], out=offsets[1:])
        data = self._reorder([p.data for p in parts], grouped, inv, offsets)
        vals = self._reorder([p.values for p in parts], grouped, inv, offsets) if values else None
        return Ragged(data, offsets, vals)

    @staticmethod
    def _reorder(arrays, grouped, inv, offsets) -> np.ndarray:
        """Rows ``inv`` of the concatenated ``arrays`` (rows at ``grouped``), at ``offsets``."""
        src = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        out = np.empty(int(offsets[-1]), src.dtype)
        _gather_rows(src, grouped, inv, offsets, out)  # every index made here, in range
        return out

    def prefetch(self, indices) -> None:
        """Ask remote corpora to fetch the shards of these draws ahead."""
        kind, record = self.sources(indices)
        for j, c in enumerate(self.corpora):
            if hasattr(c, "prefetch") and np.any(kind == j):
                c.prefetch(record[kind == j])

    def __getstate__(self):  # pickled without the per-epoch arrays (workers rebuild them)
        return {**self.__dict__, "_slots": None, "_cache": None, "_block": None}

    def __repr__(self) -> str:
        shares = ", ".join(f"{w:.3g}" for w in self.weights)
        return (f"Mixture({len(self.corpora)} corpora, weights [{shares}], {self.length:,} draws "
                f"per epoch, window {self.window}, seed {self.seed}, epoch {self.epoch})")


def mix(corpora, weights, seed: int = 0, *, length: int | None = None,
        window: int | None = None, shuffle: bool = True) -> Mixture:
    """A weighted mixture of corpora, read as one corpus (see :mod:`genotok.mixture`).

    Parameters
    ----------
    corpora
        :class:`~genotok.Corpus` objects or paths (opened with ``Corpus.open``), of one universe.
    weights
        One positive weight per corpus (normalised).
    seed
        Fixes every draw (with the epoch).
    length
        Draws per epoch (default: enough to see every corpus whole at least once).
    window
        Draws over which the weights hold exactly (default: the smallest multiple of the
        weights' common denominator that is at least 1024).
    shuffle
        Shuffle within windows and each corpus's passes (``False``: in order, for tests).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> d = tempfile.mkdtemp()
    >>> paths = []
    >>> for name, n in (("big", 60), ("mid", 30), ("small", 3)):
    ...     paths.append(os.path.join(d, name + ".gtokc"))
    ...     with CorpusWriter(paths[-1], vocab_size=9, fingerprint="fp") as w:
    ...         w.append_batch([[1]] * n)
    >>> m = mix(paths, [0.5, 0.3, 0.2], seed=0, window=10)
    >>> kinds = m.sources(range(len(m)))[0]
    >>> len(m), [int((kinds[:10] == k).sum()) for k in range(3)]  # 5, 3, 2 in every window
    (120, [5, 3, 2])
    """
    opened = [c if not isinstance(c, (str, os.PathLike)) else Corpus.open(c) for c in corpora]
    return Mixture(opened, weights, seed=seed, length=length, window=window, shuffle=shuffle)
