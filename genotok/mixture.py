"""Weighted mixtures of corpora: :func:`mix` gives a corpus-like view the loaders read as one.

A :class:`Mixture` of corpora ``C_0 … C_{K-1}`` with weights ``w_k`` (normalised to sum to 1)
is, for each epoch, a sequence of ``len(mixture)`` draws:

1. **Which corpus.** A deterministic interleave (:mod:`genotok.kernels.mixing`, a smooth
   weighted round robin on integer weights) assigns draw slots to corpora so that every prefix
   holds each corpus's share to within one draw. The weights are made integers ``a_k / D``
   (exact fractions: 0.5, 0.3, 0.2 become 5, 3, 2 of 10), and a *window* of ``window`` draws, a
   multiple of ``D``, holds exactly ``a_k * window / D`` draws of corpus ``k``.
   A window that is not a multiple of ``D`` is refused: no shuffle of a shorter window could
   hold the weights exactly (1:1 weights over a window of 3 would give 2:1 and 1:2).
2. **Shuffled within each window** by ``(seed, epoch, window)``: the order changes every
   epoch, the counts of every window stay exact.
3. **Which record.** Corpus ``k`` is read as an endless stream of passes, each pass a
   permutation of its records fixed by ``(seed, k, pass)`` (records ranked by a hash; in
   order with ``shuffle=False``); the mixture's ``c``-th draw of corpus ``k`` in epoch ``e`` is draw
   ``e * q_k + c`` of that stream (``q_k`` the corpus's draws per epoch). So no record repeats
   before its corpus has been seen whole, and an epoch continues where the last one stopped.

**An epoch** is, by default, long enough that every corpus is seen whole at least once:
``max_k ceil(n_k / w_k)`` draws (the corpus with the largest size per weight sets it; smaller
shares are repeated, each repeat in a fresh order). Give ``length=`` for another size (e.g. a
fixed number of draws per epoch, where large corpora are seen in parts over several epochs).

**Memory.** Nothing is made per epoch: the interleave repeats every ``D`` draws (after ``D``
draws each corpus has exactly its ``a_k``), so draw ``i``'s corpus and its number within that
corpus come from one period of ``D`` slots, and a window is shuffled (and its records looked
up) when it is read, one window at a time. An epoch of 10^8 draws, or ``length=2**40``, costs
what one window costs; only :meth:`Mixture.epoch_lengths` (the whole epoch at once) is bounded
(:data:`MAX_EAGER`).

**On disk.** :func:`write_mixture` writes a run folder's ``mixture.json`` (the datasets by path
relative to the folder, their fingerprints, the weights and the seed); ``mix(run_folder)``
opens it with the same draws as ``mix(paths, weights, seed)``.

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
import json
import math
import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from . import _validate
from ._io import atomic_write, is_url, url_fs
from .errors import GenotokError, UniverseMismatchError
from .formats.corpus import Corpus
from .formats.gtok import open_regular
from .kernels import mixing as _k
from .kernels.gather import gather as _gather_rows
from .params import Each, Flag, InstanceOf, Integral, Interval, Real, validated
from .ragged import Ragged

#: what :func:`mix` and :class:`Mixture` accept (:mod:`genotok.params`)
SEED = [Interval(Integral, 0, 2**63 - 1)]  # the hashes' seed (a 64-bit integer)
#: one positive, finite weight per corpus (a sequence, or a mapping's values)
WEIGHTS = [Each(Interval(Real, 0, math.inf, closed="neither"))]
MIX = {"length": [Interval(Integral, 1, None), None], "window": [Interval(Integral, 1, None), None],
       "shuffle": [Flag()]}
OPEN_KWARGS = [InstanceOf(dict), None]

#: the default window holds at least this many draws
WINDOW = 1024
#: draws gathered at once when a batch lies within such a block (the loaders' batches in order)
BLOCK = 1024
#: weights are made fractions with denominators up to this (a finer weight is rounded to it)
MAX_DENOMINATOR = 1 << 20
#: a window holds at most this many draws (one window is shuffled in memory at a time)
MAX_WINDOW = 1 << 24
#: :meth:`Mixture.epoch_lengths` makes one int64 per draw of the epoch: at most this many
MAX_EAGER = 1 << 27
#: the record orders of passes kept at once (int64 entries; one pass is always kept)
PASS_CACHE = 1 << 22
#: the name of a run folder's mixture file (:func:`write_mixture`)
MIXTURE_FILE = "mixture.json"


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


def _shares(weights: np.ndarray) -> np.ndarray:
    """Finite positive weights normalised to sum to 1, without overflow: divided by the
    largest first (``[1.7e308, 1e308]`` sums to inf, ``[0.63, 0.37]`` does not)."""
    w = np.asarray(weights, dtype=np.float64) / np.max(weights)
    return w / w.sum()


def _integer_weights(weights) -> tuple[np.ndarray, int]:
    """Positive weights as integers ``a`` and their sum ``D``: the shares ``a / D``."""
    w = [float(x) for x in _shares(np.asarray(weights, dtype=np.float64).ravel())]
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

    @validated({"corpora": [InstanceOf(Sequence)],
                "weights": [Each(Interval(Real, 0, math.inf, closed="neither"), sequence=True)],
                "seed": SEED, **MIX}, "mix")
    def __init__(self, corpora: Sequence, weights, *, seed: int = 0,
                 length: int | None = None, window: int | None = None, shuffle: bool = True):
        self.corpora = list(corpora)
        w = np.asarray(weights, dtype=np.float64) if len(weights) else np.zeros(0)
        if not self.corpora or w.size != len(self.corpora):
            raise GenotokError(f"mix: {len(self.corpora)} corpora and {w.size} weights: give one "
                               "positive weight per corpus (and at least one corpus)")
        for k, c in enumerate(self.corpora):
            if len(c) == 0:
                raise GenotokError(f"mix: corpus {k} ({getattr(c, 'path', c)}) has no records "
                                   "to draw")
            if c.fingerprint != self.corpora[0].fingerprint:
                raise UniverseMismatchError(
                    f"mix: corpus {k} ({getattr(c, 'path', c)}) was tokenized with universe "
                    f"{c.fingerprint[:12]}…, corpus 0 ({getattr(self.corpora[0], 'path', '')}) "
                    f"with {self.corpora[0].fingerprint[:12]}…: their ids mean different regions")
        self.weights = _shares(w)
        self.seed, self.shuffle = int(seed), bool(shuffle)
        self._a, self._den = _integer_weights(w)
        den = self._den
        sizes = np.array([len(c) for c in self.corpora], np.int64)
        self.length = int(length) if length is not None else \
            int(max(-(-int(n) * den // int(a)) for n, a in zip(sizes, self._a)))
        if window is not None and int(window) % den:
            shares = ":".join(str(int(x)) for x in self._a)
            raise GenotokError(
                f"mix: window={window} cannot hold the weights exactly: they are {shares} in "
                f"{den} draws, so a window must be a multiple of {den} (e.g. "
                f"{den * max(1, int(window) // den)}; or leave window=None)")
        self.window = int(window) if window is not None else den * -(-WINDOW // den)
        if min(self.window, self.length) > MAX_WINDOW:
            raise GenotokError(
                f"mix: a window of {self.window:,} draws (the weights' grid is {den:,} draws) "
                f"is shuffled in memory; at most {MAX_WINDOW:,} draws per window: give coarser "
                "weights or a smaller window")
        #: what each corpus is called (a run folder's dataset names, else their paths)
        self.dataset_names = [str(getattr(c, "path", k)) for k, c in enumerate(self.corpora)]
        self.epoch = 0
        self._period: tuple | None = None
        self._win: tuple | None = None
        self._passes: dict = {}
        self._block: tuple | None = None

    CONSTRAINTS = __init__.CONSTRAINTS

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
        """Tokens of every draw of the current epoch (int64; at most :data:`MAX_EAGER` draws)."""
        if self.length > MAX_EAGER:
            raise GenotokError(f"epoch_lengths: this mixture has {self.length:,} draws per "
                               f"epoch, more than the {MAX_EAGER:,} it lists at once (8 bytes "
                               "each): read lengths of a range of draws with get_batch")
        out = np.empty(self.length, np.int64)
        for lo in range(0, self.length, self.window):
            idx = np.arange(lo, min(lo + self.window, self.length))
            k, r = self.sources(idx)
            for j, c in enumerate(self.corpora):
                sel = k == j
                out[idx[sel]] = c.lengths[r[sel]]
        return out

    def __len__(self) -> int:
        return self.length

    @validated({"epoch": [Interval(Integral, 0, None)]}, "Mixture.set_epoch")
    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose draws indexing returns (the loaders call it)."""
        self.epoch = int(epoch)

    # -- the draws, one window at a time
    def _period_slots(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One period of the interleave (it repeats every ``D`` draws): the corpus of each of
        its slots, the slot's number within that corpus, and the draws per corpus per epoch."""
        if self._period is None:
            den, k_n = self._den, len(self.corpora)
            kinds = np.empty(den, np.int32)
            _k.interleave(self._a, den, kinds)
            number = np.empty(den, np.int64)
            for j in range(k_n):
                sel = np.flatnonzero(kinds == j)
                number[sel] = np.arange(sel.size)
            whole, part = divmod(self.length, den)
            counts = whole * self._a + np.bincount(kinds[:part], minlength=k_n)
            self._period = (kinds, number, counts.astype(np.int64))
        return self._period

    def _window(self, w: int) -> tuple[np.ndarray, np.ndarray]:
        """``(corpus, record)`` of every draw of window ``w`` of the current epoch (the last
        window read is kept)."""
        key = (self.epoch, w)
        if self._win is not None and self._win[0] == key:
            return self._win[1]
        kinds, number, counts = self._period_slots()
        lo = w * self.window
        slots = np.arange(lo, min(lo + self.window, self.length), dtype=np.int64)
        if self.shuffle:  # a permutation within the window, from (seed, epoch, window)
            rng = np.random.default_rng([self.seed, self.epoch, w, 0x6D6978])
            slots = slots[rng.permutation(slots.size)]
        turn, at = np.divmod(slots, self._den)
        kind = kinds[at].astype(np.int64)
        record = np.empty(slots.size, np.int64)
        for j in range(len(self.corpora)):
            sel = np.flatnonzero(kind == j)
            # the draw's number in corpus j's stream: epochs before, periods before, this slot
            g = self.epoch * counts[j] + turn[sel] * self._a[j] + number[at[sel]]
            record[sel] = self._stream(j, g)
        self._win = (key, (kind, record))
        return kind, record

    def _stream(self, j: int, g: np.ndarray) -> np.ndarray:
        """Record of draws ``g`` of corpus ``j``'s stream of passes."""
        size = len(self.corpora[j])
        passes, at = np.divmod(g, size)
        if not self.shuffle or g.size == 0:
            return at
        todo = np.unique(passes)
        if todo.size * size > PASS_CACHE:  # many passes of a small corpus: ranked, not kept
            out = np.empty(g.size, np.int64)
            step = max(1, PASS_CACHE // size)
            for a in range(0, todo.size, step):
                chunk = todo[a:a + step]
                sel = (passes >= chunk[0]) & (passes <= chunk[-1])
                perms = _pass_orders(self.seed, j, chunk, size)
                out[sel] = perms[np.searchsorted(chunk, passes[sel]), at[sel]]
            return out
        # a few passes (of a large corpus): kept, the next windows read them again
        keep = {(j, p) for p in todo.tolist()}
        missing = np.array([p for p in todo.tolist() if (j, p) not in self._passes], np.int64)
        if missing.size:
            if sum(v.size for v in self._passes.values()) + missing.size * size > PASS_CACHE:
                self._passes = {k: v for k, v in self._passes.items() if k in keep}
            for p, order in zip(missing.tolist(), _pass_orders(self.seed, j, missing, size)):
                self._passes[(j, p)] = order
        if todo.size == 1:  # a window within one pass (the common case): no copy
            return self._passes[(j, int(todo[0]))][at]
        perms = np.stack([self._passes[(j, p)] for p in todo.tolist()])
        return perms[np.searchsorted(todo, passes), at]

    def sources(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """``(corpus, record)`` arrays of draws ``indices`` of the current epoch."""
        idx = self._check(indices)
        kind = np.empty(idx.size, np.int64)
        record = np.empty(idx.size, np.int64)
        win, local = np.divmod(idx, self.window)
        for w in np.unique(win).tolist():
            sel = win == w
            k, r = self._window(w)
            kind[sel], record[sel] = k[local[sel]], r[local[sel]]
        return kind, record

    def source(self, i: int) -> tuple[int, int]:
        """``(corpus, record)`` of draw ``i`` of the current epoch."""
        k, r = self.sources([i])
        return int(k[0]), int(r[0])

    def _check(self, indices) -> np.ndarray:
        return _validate.rows(indices, self.length, "draw", "a mixture of {n} draws per epoch")

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
                    self._block = (key, self._grouped(np.arange(lo, hi), values))
                grouped, inv = self._block[1]  # kept grouped by corpus: no reorder of the block
                return self._rows(grouped, inv[idx - lo], values)
        grouped, inv = self._grouped(idx, values)
        return self._rows(grouped, inv, values)

    def _grouped(self, idx: np.ndarray, values: bool) -> tuple[Ragged, np.ndarray]:
        """Draws ``idx`` (checked), one gather per corpus: their rows grouped by corpus, and
        where each draw's row is among them."""
        kind, record = self.sources(idx)
        n = kind.size
        by = np.argsort(kind, kind="stable")  # the draws grouped by corpus
        cut = np.searchsorted(kind[by], np.arange(len(self.corpora) + 1))
        parts = [c.get_batch(record[by[cut[j]:cut[j + 1]]], values=values)
                 for j, c in enumerate(self.corpora) if cut[j + 1] > cut[j]]
        inv = np.empty(n, np.int64)
        inv[by] = np.arange(n)
        if not parts:
            return Ragged(np.zeros(0, np.uint32), np.zeros(1, np.int64),
                          np.zeros(0, np.float32) if values else None), inv
        if len(parts) == 1:
            return parts[0], inv
        lens = np.concatenate([np.diff(p.offsets) for p in parts])
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        data = np.concatenate([p.data for p in parts])
        vals = np.concatenate([p.values for p in parts]) if values else None
        return Ragged(data, offsets, vals), inv

    @staticmethod
    def _rows(grouped: Ragged, rows: np.ndarray, values: bool) -> Ragged:
        """Rows ``rows`` of ``grouped`` (every index made here, in range), in that order."""
        lens = grouped.offsets[rows + 1] - grouped.offsets[rows]
        offsets = np.zeros(rows.size + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        data = np.empty(int(offsets[-1]), grouped.data.dtype)
        _gather_rows(grouped.data, grouped.offsets, rows, offsets, data)
        vals = None
        if values:
            vals = np.empty(int(offsets[-1]), grouped.values.dtype)
            _gather_rows(grouped.values, grouped.offsets, rows, offsets, vals)
        return Ragged(data, offsets, vals)

    def prefetch(self, indices) -> None:
        """Ask remote corpora to fetch the shards of these draws ahead."""
        kind, record = self.sources(indices)
        for j, c in enumerate(self.corpora):
            if hasattr(c, "prefetch") and np.any(kind == j):
                c.prefetch(record[kind == j])

    def __getstate__(self):  # pickled without the per-epoch arrays (workers rebuild them)
        return {**self.__dict__, "_period": None, "_win": None, "_passes": {}, "_block": None}

    def __repr__(self) -> str:
        shares = ", ".join(f"{w:.3g}" for w in self.weights)
        return (f"Mixture({len(self.corpora)} corpora, weights [{shares}], {self.length:,} draws "
                f"per epoch, window {self.window}, seed {self.seed}, epoch {self.epoch})")


# ---------------------------------------------------------------------------------- on disk
def _mixture_file(run_folder) -> Path:
    p = Path(run_folder)
    return p if p.name == MIXTURE_FILE and not p.is_dir() else p / MIXTURE_FILE


def _run_folder(run_folder) -> str:
    """The run folder as a string (a URL, or a local path), without a trailing mixture.json."""
    if is_url(str(run_folder)):
        url = str(run_folder).rstrip("/")
        return url[:-len(MIXTURE_FILE) - 1] if url.endswith("/" + MIXTURE_FILE) else url
    return str(_mixture_file(run_folder).parent)


def _join(folder: str, path: str) -> str:
    """A dataset's path in a mixture file, from its run folder (a URL or a local folder)."""
    if is_url(path) or Path(path).is_absolute():
        return path
    return f"{folder}/{path}" if is_url(folder) else str(Path(folder) / path)


def _remote(folder: str, open_kwargs: dict):
    """``(filesystem, path)`` of a remote run folder (fsspec, with the storage options)."""
    return url_fs(folder, open_kwargs.get("storage_options"))


def _bad(path, why: str) -> GenotokError:
    return GenotokError(f"{path}: {why} (a mixture file written by genotok.write_mixture: "
                        '{"format": "genotok-mixture", "version": 1, "seed": …, "weights": '
                        '{name: weight}, "datasets": [{"name", "path", "fingerprint"}]})')


@validated({"run_folder": [InstanceOf(str, os.PathLike)],
            "datasets": [InstanceOf(Mapping, list, tuple)], "weights": WEIGHTS, "seed": SEED,
            "open_kwargs": OPEN_KWARGS})
def write_mixture(run_folder, datasets, weights, seed: int = 0, *,
                  open_kwargs: dict | None = None) -> Path | str:
    """Write ``run_folder/mixture.json``: the datasets, their weights and the seed, so that
    ``mix(run_folder)`` draws what ``mix(paths, weights, seed)`` draws.

    Parameters
    ----------
    run_folder
        The run's folder (local); the file is written atomically (a temporary name, then
        renamed), and nothing is written when anything is refused.
    datasets
        ``{name: path}`` (or a sequence of paths, named by their folder or file names):
        outputs of any store that ``Corpus.open`` reads. A relative path is taken from the
        current folder, or else from ``run_folder`` (``"peaks"`` for ``run_folder/peaks``). A
        path inside ``run_folder`` is written relative to it (the folder can move); others
        absolute; URLs as given.
    weights
        ``{name: weight}``, or a sequence in the order of ``datasets``: positive, finite.
    seed
        The mixture's seed.
    open_kwargs
        Passed to ``Corpus.open`` for each dataset (``storage_options``, ``cache_dir``… of a
        remote one); for a remote run folder (``s3://…``), its ``storage_options`` reach it.

    Returns the file's path (a URL for a remote run folder, written in one piece). Each dataset is opened (the readers' cheap checks) to record its
    universe fingerprint; datasets of different universes are refused.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter, mix
    >>> run = tempfile.mkdtemp()
    >>> for name, n in (("peaks", 6), ("cells", 3)):
    ...     with CorpusWriter(os.path.join(run, name + ".gtokc"), vocab_size=9, fingerprint="fp") as w:
    ...         w.append_batch([[1]] * n)
    >>> p = write_mixture(run, {"peaks": os.path.join(run, "peaks.gtokc"), "cells": "cells.gtokc"},
    ...                   {"peaks": 0.6, "cells": 0.4}, seed=7)
    >>> m = mix(run)
    >>> m.seed, m.weights.round(2).tolist(), m.dataset_names
    (7, [0.6, 0.4], ['peaks', 'cells'])
    """
    open_kwargs = dict(open_kwargs or {})
    remote = is_url(str(run_folder))
    base = _run_folder(run_folder) if remote else str(run_folder)
    folder = Path(base)
    if not remote and not folder.is_dir():
        raise GenotokError(f"write_mixture: {run_folder} is not a folder")
    if isinstance(datasets, Mapping):
        names, paths = [str(k) for k in datasets], list(datasets.values())
    else:
        paths = list(datasets)
        names = [Path(str(p).rstrip("/")).stem for p in paths]
    if not names or len(set(names)) != len(names):
        raise GenotokError(f"write_mixture: datasets need distinct names, got {names}")
    if isinstance(weights, Mapping):
        unknown = sorted(set(map(str, weights)) ^ set(names))
        if unknown:
            raise GenotokError(f"write_mixture: weights name {sorted(map(str, weights))}, the "
                               f"datasets are {names}: give one weight per dataset")
        w = [weights[n] for n in names]
    else:
        w = list(weights)
    w = [float(x) for x in w]
    if len(w) != len(names):
        raise GenotokError(f"write_mixture: {len(names)} datasets and {len(w)} weights")
    entries = []
    for name, p in zip(names, paths):
        s = str(p)
        if remote and not is_url(s) and not Path(s).is_absolute():
            s = _join(base, s)  # a name in the remote run folder
        if remote and s.startswith(base + "/"):
            s = s[len(base) + 1:]  # inside the run folder: relative
        elif not is_url(s):
            q = Path(s)
            if not q.is_absolute() and not q.exists():  # a name in the run folder ('peaks')
                q = folder / s
            try:
                s = q.resolve().relative_to(folder.resolve()).as_posix()
            except ValueError:  # outside the run folder: kept absolute
                s = str(q.resolve())
        corpus = _open_dataset(base, s, f"write_mixture: dataset {name!r}", **open_kwargs)
        entries.append({"name": name, "path": s, "fingerprint": corpus.fingerprint})
    for e in entries[1:]:
        if e["fingerprint"] != entries[0]["fingerprint"]:
            raise UniverseMismatchError(
                f"write_mixture: dataset {e['name']!r} was tokenized with universe "
                f"{e['fingerprint'][:12]}…, {entries[0]['name']!r} with "
                f"{entries[0]['fingerprint'][:12]}…: their ids mean different regions")
    doc = {"format": "genotok-mixture", "version": 1, "seed": int(seed),
           "weights": dict(zip(names, w)), "datasets": entries}
    text = json.dumps(doc, indent=1)
    if remote:  # one object, written whole (an object store has no partial object)
        fs, root = _remote(base, open_kwargs)
        fs.pipe_file(f"{root}/{MIXTURE_FILE}", text.encode())
        return f"{base}/{MIXTURE_FILE}"
    out = folder / MIXTURE_FILE
    with atomic_write(out, "w") as fh:
        fh.write(text)
    return out


def _open_dataset(folder: str, path: str, where: str, **open_kwargs):
    """A mixture's dataset, by its path in the file (relative to the run folder)."""
    full = _join(folder, path)
    try:
        return _open_path(full, open_kwargs)
    except (OSError, GenotokError) as e:
        raise type(e)(f"{where} ({full}): {e}") if isinstance(e, GenotokError) else \
            GenotokError(f"{where}: cannot open {full}: {e}") from e


def _open_path(path: str, open_kwargs: dict):
    """``Corpus.open(path)``: with every option for a URL, the local ones for a local path."""
    if not is_url(path):
        open_kwargs = {k: v for k, v in open_kwargs.items() if k in LOCAL_OPTIONS}
    return Corpus.open(path, **open_kwargs)


#: the options of ``Corpus.open`` that a local path takes (the others are a remote corpus's)
LOCAL_OPTIONS = ("expect", "verify", "trusted")


#: a mixture file larger than this is refused unread (a real one is a few KiB)
MAX_MIXTURE_BYTES = 64 << 20


def _read_regular(path: Path) -> str:
    """A local mixture file's text: a regular file (a FIFO or a device is refused at once,
    never waited on or read forever), of a bounded size."""
    if not path.exists():
        raise FileNotFoundError(path)
    fd, st = open_regular(path, "mixture file", error=GenotokError)
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > MAX_MIXTURE_BYTES:
            raise _bad(path, f"{st.st_size:,} bytes, more than a mixture file holds")
        return fh.read().decode("utf-8")


@validated({"run_folder": [InstanceOf(str, os.PathLike)], "storage_options": OPEN_KWARGS})
def read_mixture(run_folder, *, storage_options: dict | None = None) -> dict:
    """The checked content of a run folder's ``mixture.json`` (:func:`write_mixture`).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> run = tempfile.mkdtemp()
    >>> with CorpusWriter(os.path.join(run, "a.gtokc"), vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1]] * 3)
    >>> _ = write_mixture(run, {"a": "a.gtokc"}, {"a": 1.0}, seed=3)
    >>> doc = read_mixture(run)
    >>> doc["format"], doc["seed"], [d["name"] for d in doc["datasets"]]
    ('genotok-mixture', 3, ['a'])
    """
    remote = is_url(str(run_folder))
    path = f"{_run_folder(run_folder)}/{MIXTURE_FILE}" if remote else _mixture_file(run_folder)
    try:
        if remote:
            fs, root = url_fs(_run_folder(run_folder), storage_options)
            text = fs.cat_file(f"{root}/{MIXTURE_FILE}").decode("utf-8")
        else:
            text = _read_regular(path)
        doc = json.loads(text)
    except FileNotFoundError:
        raise GenotokError(f"{run_folder}: no {MIXTURE_FILE} here: write one with "
                           "genotok.write_mixture (genotok run writes it), or give mix the "
                           "datasets and their weights") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:200]
        raise _bad(path, f"not a readable JSON file ({why})") from None
    if not isinstance(doc, dict) or doc.get("format") != "genotok-mixture":
        raise _bad(path, "not a genotok mixture")
    if doc.get("version") != 1:
        raise _bad(path, f"version {doc.get('version')!r}, this genotok reads version 1")
    seed = doc.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise _bad(path, f"seed {seed!r} is not a whole number in [0, 2**63)")
    ds, weights = doc.get("datasets"), doc.get("weights")
    if not isinstance(ds, list) or not ds or not isinstance(weights, dict):
        raise _bad(path, "'datasets' must be a non-empty list and 'weights' an object")
    for e in ds:
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str)
                                              for k in ("name", "path", "fingerprint")):
            raise _bad(path, f"dataset entry {str(e)[:80]} lacks a string name, path or "
                             "fingerprint")
    names = [e["name"] for e in ds]
    if len(set(names)) != len(names) or set(weights) != set(names):
        raise _bad(path, f"the datasets {names} and the weights {sorted(weights)} must name "
                         "the same, distinct datasets")
    for n in names:
        w = weights[n]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
                or w <= 0:
            raise _bad(path, f"weight of {n!r} is {w!r}, not a finite number > 0")
    return doc


@validated({"corpora": [InstanceOf(str, os.PathLike, Sequence)], "weights": WEIGHTS + [None],
            "seed": SEED + [None], **MIX, "open_kwargs": OPEN_KWARGS})
def mix(corpora, weights=None, seed: int | None = None, *, length: int | None = None,
        window: int | None = None, shuffle: bool = True,
        open_kwargs: dict | None = None) -> Mixture:
    """A weighted mixture of corpora, read as one corpus (see :mod:`genotok.mixture`).

    Parameters
    ----------
    corpora
        :class:`~genotok.Corpus` objects or paths (opened with ``Corpus.open``, any store),
        of one universe; or a run folder holding ``mixture.json`` (:func:`write_mixture`,
        ``genotok run``), whose datasets, weights and seed are then used (give neither
        ``weights`` nor ``seed``).
    weights
        One positive weight per corpus (normalised).
    seed
        Fixes every draw (with the epoch); 0 when not given.
    length
        Draws per epoch (default: enough to see every corpus whole at least once).
    window
        Draws over which the weights hold exactly: a multiple of the weights' common
        denominator (default: the smallest such multiple that is at least 1024).
    shuffle
        Shuffle within windows and each corpus's passes (``False``: in order, for tests).
    open_kwargs
        Passed to ``Corpus.open`` for each path (``storage_options``, ``cache_dir``… of remote
        corpora; the storage options reach a remote run folder's ``mixture.json`` too).

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
    if isinstance(corpora, (str, os.PathLike)):
        if weights is not None or seed is not None:
            raise GenotokError(f"mix: {corpora} is a run folder whose mixture.json holds the "
                               "weights and the seed: give neither (or give mix the datasets "
                               "themselves)")
        open_kwargs = dict(open_kwargs or {})
        doc = read_mixture(corpora, storage_options=open_kwargs.get("storage_options"))
        folder = _run_folder(corpora)
        where = f"{folder}/{MIXTURE_FILE}"
        opened = []
        for e in doc["datasets"]:
            c = _open_dataset(folder, e["path"], f"mix: dataset {e['name']!r} of {where}",
                              **open_kwargs)
            if c.fingerprint != e["fingerprint"]:
                raise UniverseMismatchError(
                    f"{where}: dataset {e['name']!r} ({e['path']}) now holds "
                    f"universe {c.fingerprint[:12]}…, the mixture was written for "
                    f"{e['fingerprint'][:12]}…: it was re-tokenized since; write the mixture "
                    "again")
            opened.append(c)
        m = Mixture(opened, [doc["weights"][e["name"]] for e in doc["datasets"]],
                    seed=doc["seed"], length=length, window=window, shuffle=shuffle)
        m.dataset_names = [e["name"] for e in doc["datasets"]]
        return m
    if weights is None:
        raise GenotokError("mix: give one weight per corpus (or a run folder with mixture.json)")
    opened = [_open_path(str(c), dict(open_kwargs or {}))
              if isinstance(c, (str, os.PathLike)) else c for c in corpora]
    return Mixture(opened, weights, seed=0 if seed is None else seed, length=length,
                   window=window, shuffle=shuffle)
