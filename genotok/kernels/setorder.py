"""Each set's output ids reordered by genomic rank (the tokenizer's ``order="genomic"`` and
``"unique"``), in parallel over groups of sets of about equal total size. Arrays in, arrays out.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._config import NJIT_PARALLEL


@njit(**NJIT_PARALLEL)
def _sort_sets(ids, offsets, groups, rank, keep, unique):
    """Sort each set's ids by rank (ids >= rank.size last, stable); groups of sets in parallel."""
    n_reg = rank.size
    for g in prange(groups.size - 1):
        for s in range(groups[g], groups[g + 1]):
            a, b = offsets[s], offsets[s + 1]
            if b - a == 0:
                continue
            key = np.empty(b - a, np.int64)
            for k in range(b - a):
                i = ids[a + k]
                key[k] = rank[i] if i < n_reg else n_reg + k
            o = np.argsort(key, kind="mergesort")
            tmp = ids[a:b].copy()
            for k in range(b - a):
                ids[a + k] = tmp[o[k]]
            keep[a] = True
            for k in range(a + 1, b):
                keep[k] = not unique or ids[k] != ids[k - 1]
            if unique:  # specials are last, in input order: keep the first of each id
                k0 = b
                while k0 > a and ids[k0 - 1] >= n_reg:
                    k0 -= 1
                seen = np.empty(b - k0, ids.dtype)  # distinct specials so far (a handful)
                n_seen = 0
                for k in range(k0, b):
                    new = True
                    for t in range(n_seen):
                        if seen[t] == ids[k]:
                            new = False
                            break
                    keep[k] = new
                    if new:
                        seen[n_seen] = ids[k]
                        n_seen += 1


def _size_groups(offsets: np.ndarray, parts: int) -> np.ndarray:
    """Bounds of ``<= parts`` runs of consecutive sets with about equal total size."""
    n_sets = offsets.size - 1
    if n_sets <= 0:
        return np.zeros(1, np.int64)
    targets = np.linspace(offsets[0], offsets[-1], parts + 1)[1:-1]
    cuts = np.searchsorted(offsets[1:-1], targets, side="left") + 1
    return np.unique(np.concatenate(([0], cuts, [n_sets]))).astype(np.int64)


def sort_within_sets(ids: np.ndarray, out_offsets: np.ndarray, rank: np.ndarray,
                     unique: bool) -> tuple[np.ndarray, np.ndarray]:
    """Reorder each set's ids by genomic rank; with ``unique`` drop repeated ids.

    ``rank[id]`` is the id's position in genomic order; ids ``>= rank.size`` (special tokens
    such as ``<unk>``) go last in their original order. Sets are sorted in parallel, in groups
    of about equal total size.

    Parameters
    ----------
    ids : uint32 or int64 (n,)
    out_offsets : int64 (S+1,)
    rank : int64 (n_regions,)
    unique : bool

    Returns
    -------
    ids : the same dtype, a new array
    out_offsets : int64 (S+1,), new offsets when ``unique`` drops ids

    Examples
    --------
    >>> import numpy as np
    >>> ids, offs = sort_within_sets(np.array([3, 0, 3, 9], np.uint32), np.array([0, 2, 4]),
    ...                              np.array([2, 0, 1, 3]), True)
    >>> ids.tolist(), offs.tolist()
    ([0, 3, 3, 9], [0, 2, 4])
    """
    import numba

    ids = np.array(ids, copy=True)
    out_offsets = np.ascontiguousarray(out_offsets, dtype=np.int64)
    if (ids.ndim != 1 or out_offsets.size < 1 or out_offsets[0] != 0
            or out_offsets[-1] != ids.size or np.any(np.diff(out_offsets) < 0)):
        raise ValueError(f"out_offsets must rise from 0 to len(ids) = {ids.size}; got "
                         f"{out_offsets.size} offsets ending at {out_offsets[-1:].tolist()}: "
                         "pass the offsets returned with these ids")
    keep = np.ones(ids.size, dtype=np.bool_)
    groups = _size_groups(out_offsets, 4 * numba.get_num_threads())
    _sort_sets(ids, out_offsets, groups, np.ascontiguousarray(rank, dtype=np.int64), keep,
               bool(unique))
    if not unique:
        return ids, out_offsets
    csum = np.zeros(ids.size + 1, dtype=np.int64)
    np.cumsum(keep, out=csum[1:])
    return ids[keep], csum[out_offsets]
