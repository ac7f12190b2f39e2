"""Slow, obviously-correct models of :mod:`genotok.kernels.packing` (through
:func:`genotok.packing.pack`): plain Python lists, one token at a time."""

from __future__ import annotations

import numpy as np


def _records(rows, sep):
    out = [[int(x) for x in np.asarray(r).ravel()] for r in rows]
    return [r + [sep] for r in out] if sep is not None else out


def _arrays(bins, seq_len, pad):
    """``bins``: lists of segments (token lists) → ids, segment ids, position ids."""
    ids = np.full((len(bins), seq_len), pad, np.int64)
    seg = np.zeros((len(bins), seq_len), np.int64)
    pos = np.zeros((len(bins), seq_len), np.int64)
    for b, segments in enumerate(bins):
        c = 0
        for s, piece in enumerate(segments, start=1):
            for j, t in enumerate(piece):
                ids[b, c], seg[b, c], pos[b, c] = t, s, j
                c += 1
        assert c <= seq_len
    return ids, seg, pos


def greedy(rows, seq_len, pad, sep=None):
    """In order: a record that does not fit starts the next sequence; one longer than
    ``seq_len`` is split, starting where the current sequence has room."""
    bins, cur, used = [], [], 0
    for r in _records(rows, sep):
        while r:
            room = seq_len - used
            if len(r) > room and used and len(r) <= seq_len:
                bins.append(cur)
                cur, used = [], 0
                continue
            take = r[:room]
            cur.append(take)
            used += len(take)
            r = r[len(take):]
            if used == seq_len:
                bins.append(cur)
                cur, used = [], 0
    if cur:
        bins.append(cur)
    return _arrays(bins, seq_len, pad)


def ffd(rows, seq_len, pad, sep=None):
    """Chunks of ``seq_len`` (and a remainder), longest first (ties in record then chunk
    order), each into the first sequence with room (a linear scan)."""
    chunks = []
    for r in _records(rows, sep):
        chunks += [r[a:a + seq_len] for a in range(0, len(r), seq_len)]
    chunks = sorted(chunks, key=len, reverse=True)  # sorted() is stable
    bins, room = [], []
    for c in chunks:
        for b, free in enumerate(room):
            if free >= len(c):
                break
        else:
            b = len(bins)
            bins.append([])
            room.append(seq_len)
        bins[b].append(c)
        room[b] -= len(c)
    return _arrays(bins, seq_len, pad)
