"""The walk over a tabix (``.tbi``) or CSI index' bins: one pass in numba instead of one
``struct`` read per bin in Python (196k bins of a 2M-fragment file: ~0.3 s in Python, the
floor of a region read; benchmarks/RESULTS.md, "BGZF fragment files and tile matrices").

Each reference is ``n_bin`` (int32), then per bin ``bin`` (uint32), for CSI its ``loffset``
(uint64), ``n_chunk`` (int32) and ``n_chunk`` chunks of two uint64 virtual offsets; a tabix
index then has its linear index, ``n_intv`` (int32) and ``n_intv`` uint64. The bytes are
untrusted: every count is checked against the bytes left before it moves the cursor, and the
first one that does not fit stops the walk with a status and the byte it was read at
(:class:`genotok.bgzf.Index` turns that into an error naming the index).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._config import NJIT

#: statuses of :func:`index_bins` (the byte offset where the walk stopped goes with them)
TBI_OK, TBI_ENDS_EARLY, TBI_BIN_COUNT, TBI_CHUNK_COUNT, TBI_LINEAR_COUNT = 0, 1, 2, 3, 4


@njit(**NJIT)
def _i32(raw, p):
    v = (np.int64(raw[p]) | np.int64(raw[p + 1]) << 8 | np.int64(raw[p + 2]) << 16
         | np.int64(raw[p + 3]) << 24)
    return v - (np.int64(1) << 32) if v >= (np.int64(1) << 31) else v


@njit(**NJIT)
def _u32(raw, p):
    return (np.int64(raw[p]) | np.int64(raw[p + 1]) << 8 | np.int64(raw[p + 2]) << 16
            | np.int64(raw[p + 3]) << 24)


@njit(**NJIT)
def index_bins(raw, pos, n_ref, csi, pseudo):
    """Walk the ``n_ref`` references' bins of ``raw`` (the inflated index, uint8) from byte
    ``pos``. Returns ``(ref_ptr, ids, where, counts, lin_at, lin_n, end, status)``: the
    bins of reference ``r`` are ``ref_ptr[r]:ref_ptr[r + 1]`` of ``ids`` (bin number),
    ``where`` (byte offset of its first chunk) and ``counts`` (its chunk count), the pseudo-bin
    ``pseudo`` (metadata, not chunks) left out; ``lin_at``/``lin_n`` the byte offset and length
    of each reference's linear index (tabix only; 0 for CSI); ``end`` the byte after the walk.
    ``status`` is ``TBI_OK`` or the first count that does not fit the bytes left (``end`` is
    then the byte after that count, or where the bytes ran out; the arrays are empty)."""
    size = raw.size
    head = 16 if csi else 8
    cap = max(size - pos, 0) // head + 1  # no more bins than that fit in the bytes
    ids = np.empty(cap, np.int64)
    where = np.empty(cap, np.int64)
    counts = np.empty(cap, np.int64)
    ref_ptr = np.zeros(n_ref + 1, np.int64)
    lin_at = np.zeros(n_ref, np.int64)
    lin_n = np.zeros(n_ref, np.int64)
    k = 0
    status = TBI_OK
    for r in range(n_ref):
        if pos + 4 > size:
            status = TBI_ENDS_EARLY
            break
        n_bin = _i32(raw, pos)
        pos += 4
        if n_bin < 0 or n_bin * head > size - pos:
            status = TBI_BIN_COUNT
            break
        for _ in range(n_bin):
            if pos + head > size:
                status = TBI_ENDS_EARLY
                break
            b = _u32(raw, pos)
            n_chunk = _i32(raw, pos + head - 4)
            pos += head
            if n_chunk < 0 or pos + 16 * n_chunk > size:
                status = TBI_CHUNK_COUNT
                break
            if b != pseudo:
                ids[k] = b
                where[k] = pos
                counts[k] = n_chunk
                k += 1
            pos += 16 * n_chunk
        if status != TBI_OK:
            break
        ref_ptr[r + 1] = k
        if not csi:
            if pos + 4 > size:
                status = TBI_ENDS_EARLY
                break
            n_intv = _i32(raw, pos)
            pos += 4
            if n_intv < 0 or n_intv * 8 > size - pos:
                status = TBI_LINEAR_COUNT
                break
            lin_at[r] = pos
            lin_n[r] = n_intv
            pos += 8 * n_intv
    if status != TBI_OK:
        e = np.zeros(0, np.int64)
        return np.zeros(1, np.int64), e, e, e, e, e, pos, status
    return ref_ptr, ids[:k].copy(), where[:k].copy(), counts[:k].copy(), lin_at, lin_n, pos, \
        status
