"""Packing variable-length records into fixed-length sequences (bins of ``seq_len`` tokens).

A packing is a list of *pieces*, in placement order: piece ``p`` copies ``size[p]`` tokens of
record ``rec[p]``, from token ``src[p]`` of that record, to sequence ``bin[p]`` at column
``pos[p]``. Two placements make the pieces (:func:`greedy_place`, :func:`first_fit`), one fill
makes the arrays (:func:`fill`). Oracles: ``tests/naive_packing.py``.

- greedy (in order): a record that does not fit the current sequence starts the next one;
  a record longer than ``seq_len`` starts where the current one has room and is split.
- first-fit-decreasing: records are cut into chunks of ``seq_len`` (and a remainder); the
  chunks, longest first (the caller sorts), each go to the first sequence with room
  (a max-tree over the sequences' free room finds it in ``log(bins)`` steps).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .._config import NJIT


class Pieces(NamedTuple):
    """Where every piece goes (placement order): record, first token, size, sequence, column."""

    rec: np.ndarray
    src: np.ndarray
    size: np.ndarray
    bin: np.ndarray
    pos: np.ndarray
    n_bins: int


@njit(**NJIT)
def _greedy(lengths, seq_len, write, rec, src, size, bin_, pos):  # pragma: no cover - compiled
    """Walk the greedy placement; write the pieces when ``write``. Returns (pieces, bins)."""
    b, fill, p = 0, 0, 0
    for r in range(lengths.size):
        m = lengths[r]
        done = 0
        while m > 0:
            room = seq_len - fill
            if m > room and fill > 0 and m <= seq_len:
                b += 1
                fill = 0
                continue
            take = min(m, room)
            if write:
                rec[p], src[p], size[p], bin_[p], pos[p] = r, done, take, b, fill
            p += 1
            fill += take
            done += take
            m -= take
            if fill == seq_len:
                b += 1
                fill = 0
    return p, b + (1 if fill > 0 else 0)


def greedy_place(lengths: np.ndarray, seq_len: int) -> Pieces:
    """The greedy, in-order placement of records of ``lengths`` (int64, >= 0; ``seq_len`` >= 1)."""
    e = np.zeros(0, np.int64)
    n, _ = _greedy(lengths, seq_len, False, e, e, e, e, e)
    rec, src, size, bin_, pos = (np.empty(n, np.int64) for _ in range(5))
    _, n_bins = _greedy(lengths, seq_len, True, rec, src, size, bin_, pos)
    return Pieces(rec, src, size, bin_, pos, int(n_bins))


@njit(**NJIT)
def _first_fit(sizes, seq_len, bin_, pos):  # pragma: no cover - compiled
    """First fit of ``sizes`` (in the given order) into sequences of ``seq_len``.

    ``tree`` is a max-tree over at most ``sizes.size`` sequences' free room (unopened ones
    have all of it); the leftmost leaf with room >= size is the first sequence that fits.
    Returns the number of sequences used.
    """
    n = sizes.size
    leaves = 1
    while leaves < max(n, 1):
        leaves *= 2
    tree = np.full(2 * leaves, seq_len, np.int64)
    used = 0
    for i in range(n):
        s = sizes[i]
        k = 1
        while k < leaves:  # descend to the leftmost leaf with enough room
            k = 2 * k if tree[2 * k] >= s else 2 * k + 1
        b = k - leaves
        bin_[i] = b
        pos[i] = seq_len - tree[k]
        tree[k] -= s
        k //= 2
        while k >= 1:
            tree[k] = max(tree[2 * k], tree[2 * k + 1])
            k //= 2
        used = max(used, b + 1)
    return used


def first_fit(sizes: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(sequence, column, sequences used)`` of each size (int64 in ``1..seq_len``), first fit
    in the given order."""
    bin_, pos = np.empty(sizes.size, np.int64), np.empty(sizes.size, np.int64)
    used = _first_fit(sizes, seq_len, bin_, pos)
    return bin_, pos, int(used)


@njit(**NJIT)
def fill(tokens, offsets, lengths, sep, rec, src, size, bin_, pos,
         out_ids, out_seg, out_pos, out_mask):  # pragma: no cover - compiled
    """Copy the pieces into ``out_ids`` and number them: ``out_seg`` counts the pieces of a
    sequence from 1 in placement order, ``out_pos`` restarts at 0 in every piece, ``out_mask``
    is 1 under every piece. Token ``lengths[r]`` of record ``r`` (one past its stored ones) is
    ``sep``; ``out_*`` come filled with padding (0 segments, 0 mask)."""
    segs = np.zeros(out_ids.shape[0], np.int32)
    for p in range(rec.size):
        r, b, c, n = rec[p], bin_[p], pos[p], size[p]
        segs[b] += 1
        real = min(n, lengths[r] - src[p])  # stored tokens in the piece; the rest is ``sep``
        a = offsets[r] + src[p]
        row_ids, row_seg, row_pos = out_ids[b], out_seg[b], out_pos[b]
        out_mask[b, c:c + n] = 1
        row_ids[c:c + real] = tokens[a:a + real]
        for j in range(real, n):
            row_ids[c + j] = sep
        row_seg[c:c + n] = segs[b]
        for j in range(n):
            row_pos[c + j] = j


def warmup() -> None:
    """Compile the placements and the fill on a tiny input."""
    lengths = np.array([2, 1], np.int64)
    pieces = greedy_place(lengths + 1, 2)
    first_fit(np.array([2, 1], np.int64), 2)
    for dt in (np.int64, np.uint32, np.uint16):
        ids = np.zeros((pieces.n_bins, 2), dt)
        fill(np.arange(3, dtype=dt), np.array([0, 2, 3], np.int64), lengths, dt(0), pieces.rec,
             pieces.src, pieces.size, pieces.bin, pieces.pos, ids,
             np.zeros(ids.shape, np.int32), np.zeros(ids.shape, np.int32),
             np.zeros(ids.shape, np.int64))
