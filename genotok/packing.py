"""Packing records into fixed-length sequences with segment and position ids.

:func:`pack` lays variable-length records end to end into sequences of exactly ``seq_len``
tokens, so that a batch wastes little on padding; ``segment_ids`` say which record each token
belongs to (for block-diagonal attention) and ``position_ids`` restart at 0 in every segment.
Two strategies (numba kernels in :mod:`genotok.kernels.packing`):

- ``"greedy"``: records in order; one that does not fit the current sequence starts the next,
  one longer than ``seq_len`` is split over several. The order of the tokens is the order of
  the records: for streams where that order matters.
- ``"ffd"`` (first-fit-decreasing): records are cut into chunks of ``seq_len`` and a remainder,
  and the chunks, longest first, go to the first sequence with room. Nearly every sequence is
  full (>= 95% of tokens are real on lengths uniform in 1..512 at ``seq_len=512``); the records
  are no longer in order.

Every token is kept exactly once either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .batching import MAX_SEQUENCE, token_ids
from .kernels import packing as _k
from .params import InstanceOf, Integral, Interval, Options, ParameterError, validated
from .ragged import Ragged

STRATEGIES = ("greedy", "ffd")

#: what :func:`pack` accepts (:mod:`genotok.params`)
CONSTRAINTS = {"rows": [InstanceOf(Ragged, Sequence, np.ndarray)],
               "seq_len": [Interval(Integral, 1, MAX_SEQUENCE)],
               "pad_token_id": [Interval(Integral, None, None)],
               "sep_token_id": [Interval(Integral, None, None), None],
               "strategy": [Options(*STRATEGIES)]}


class Packed(dict):
    """What :func:`pack` returns: a dict of ``(n_sequences, seq_len)`` arrays (``input_ids``,
    ``segment_ids`` from 1 per sequence and 0 on padding, ``position_ids`` restarting at 0 in
    each segment, ``attention_mask``), with the figures of the packing as attributes.

    Attributes
    ----------
    n_tokens
        Tokens packed (the records' tokens, and their separators).
    fill
        ``n_tokens`` over the sequences' room: the share of real tokens.
    strategy
        ``"greedy"`` or ``"ffd"``.

    Examples
    --------
    >>> out = pack([[1, 2, 3], [4]], seq_len=3, pad_token_id=0, strategy="ffd")
    >>> sorted(out), out.n_tokens, round(out.fill, 2)
    (['attention_mask', 'input_ids', 'position_ids', 'segment_ids'], 4, 0.67)
    """

    n_tokens: int
    strategy: str

    @property
    def fill(self) -> float:
        room = self["input_ids"].size
        return self.n_tokens / room if room else 1.0

    def __repr__(self) -> str:
        n, s = self["input_ids"].shape
        return (f"Packed({n:,} sequences of {s}, {self.n_tokens:,} tokens, fill {self.fill:.1%}, "
                f"strategy={self.strategy!r})")


def _flat(rows) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, offsets)`` of the records: a :class:`Ragged`'s own buffers, or one array of
    the rows' own integer dtype. Checked before any conversion
    (:func:`genotok.batching.token_ids`): a float row (``1.7`` is not an id), a negative id or
    one above 2**63 - 1 (it would wrap negative) is refused."""
    if not isinstance(rows, Ragged):
        if isinstance(rows, np.ndarray) and rows.ndim == 2:
            rows = list(rows)
        arrays = [token_ids(r, "pack", i) for i, r in enumerate(rows)]
        kept = [a for a in arrays if a.size]
        dtype = np.result_type(*kept) if kept else np.dtype(np.int64)
        if dtype.kind == "f":  # uint64 beside signed rows: every id fits int64 (checked)
            dtype = np.dtype(np.int64)
        data = np.concatenate(kept).astype(dtype, copy=False) if kept else np.zeros(0, dtype)
        offsets = np.zeros(len(arrays) + 1, np.int64)
        np.cumsum([a.size for a in arrays], out=offsets[1:])
        return data, offsets
    data = rows.data
    if data.ndim != 1 or (data.size and data.dtype.kind not in "iu"):
        raise ParameterError(f"pack: token ids must be a 1-D integer array, got {data.dtype} "
                             f"with shape {data.shape}")
    if data.size and data.dtype.kind == "i" and int(data.min()) < 0:
        raise ParameterError(f"pack: the rows hold the negative token id {int(data.min())}")
    return np.ascontiguousarray(data), np.ascontiguousarray(rows.offsets, dtype=np.int64)


def _fits(dtype: np.dtype, *values) -> bool:
    info = np.iinfo(dtype)
    return all(v is None or info.min <= int(v) <= info.max for v in values)


@validated(CONSTRAINTS)
def pack(rows: Sequence[np.ndarray] | Ragged, seq_len: int, pad_token_id: int,
         sep_token_id: int | None = None, *, strategy: str = "greedy") -> Packed:
    """Pack records into sequences of ``seq_len`` tokens with segment and position ids.

    Parameters
    ----------
    rows
        The records: a :class:`~genotok.Ragged` (e.g. ``Corpus.get_batch``; its buffers are
        read as they are) or a sequence of integer arrays.
    seq_len
        Tokens per sequence (a fixed length, not a cap).
    pad_token_id
        Fills the end of sequences that are not full.
    sep_token_id
        Appended to every record when given (it is then part of the record's segment).
    strategy
        ``"greedy"`` (in order) or ``"ffd"`` (first-fit-decreasing): see the module.

    Returns
    -------
    Packed
        ``input_ids`` (the rows' dtype when the pad and separator ids fit it, else int64),
        ``segment_ids``, ``position_ids`` (int32), ``attention_mask`` (int64), and ``fill``.

    Examples
    --------
    >>> out = pack([[1, 2], [3, 4, 5], [6]], seq_len=4, pad_token_id=0)
    >>> out["input_ids"].tolist(), out["segment_ids"].tolist(), out["position_ids"].tolist()
    ([[1, 2, 0, 0], [3, 4, 5, 6]], [[1, 1, 0, 0], [1, 1, 1, 2]], [[0, 1, 0, 0], [0, 1, 2, 0]])
    >>> ffd = pack([[1, 2], [3, 4, 5], [6]], seq_len=4, pad_token_id=0, strategy="ffd")
    >>> ffd["input_ids"].tolist(), ffd.fill
    ([[3, 4, 5, 6], [1, 2, 0, 0]], 0.75)
    """
    seq_len = int(seq_len)
    tokens, offsets = _flat(rows)
    stored = np.diff(offsets)
    lengths = stored + 1 if sep_token_id is not None else stored
    if strategy == "greedy":
        pieces = _k.greedy_place(lengths, seq_len)
    else:
        pieces = _ffd(lengths, seq_len)
    dtype = tokens.dtype if tokens.size and _fits(tokens.dtype, pad_token_id, sep_token_id) \
        else np.dtype(np.int64)
    if tokens.size and not _fits(dtype, int(tokens.max()), int(tokens.min())):
        raise ParameterError(f"pack: the ids are {tokens.dtype} up to {int(tokens.max())}, and "
                        f"pad_token_id={pad_token_id} / sep_token_id={sep_token_id} do not fit "
                        "that dtype: no int64 holds both")
    tokens = tokens.astype(dtype, copy=False)
    ids = np.full((pieces.n_bins, seq_len), pad_token_id, dtype)
    seg = np.zeros(ids.shape, np.int32)
    pos = np.zeros(ids.shape, np.int32)
    mask = np.zeros(ids.shape, np.int64)
    sep = dtype.type(0 if sep_token_id is None else sep_token_id)
    _k.fill(tokens, offsets, stored, sep, pieces.rec, pieces.src, pieces.size, pieces.bin,
            pieces.pos, ids, seg, pos, mask)
    out = Packed(input_ids=ids, segment_ids=seg, position_ids=pos, attention_mask=mask)
    out.n_tokens, out.strategy = int(lengths.sum()), strategy
    return out


def _ffd(lengths: np.ndarray, seq_len: int) -> _k.Pieces:
    """First-fit-decreasing pieces: every record cut into chunks of ``seq_len`` and a remainder,
    the chunks placed longest first (ties: record order, then chunk order)."""
    n_chunks = -(-lengths // seq_len)  # 0 for an empty record: nothing to place
    total = int(n_chunks.sum())
    rec = np.repeat(np.arange(lengths.size, dtype=np.int64), n_chunks)
    first = np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)
    src = (np.arange(total, dtype=np.int64) - first) * seq_len
    size = np.minimum(lengths[rec] - src, seq_len)
    order = np.argsort(-size, kind="stable")
    rec, src, size = rec[order], src[order], size[order]
    bin_, pos, used = _k.first_fit(size, seq_len)
    # in sequence order for the fill (its writes then run through memory once); within a
    # sequence, column order is placement order, so the segments keep their numbers
    by = np.argsort(bin_ * seq_len + pos, kind="stable")
    return _k.Pieces(rec[by], src[by], size[by], bin_[by], pos[by], used)
