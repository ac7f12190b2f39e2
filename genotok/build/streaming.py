"""What every universe builder shares: the natural chromosome order, sorted and merged region
arrays, the streaming fold, and reading the inputs (a few ahead, on reader threads).

**Genomic order.** Chromosomes come in *natural order*: ``chr1, chr2, …, chr10, …, chr22, chrX,
chrY, chrM`` (with or without the ``chr`` prefix, any case; ``MT`` counts as ``M``), then every
other contig in alphabetical (code point) order. See :func:`chrom_sort_key`. Within a chromosome
regions are sorted by (start, end).

**Streaming.** Inputs are read one at a time (a few ahead on reader threads) and folded into a
running result (:class:`_Fold`). A fold happens when the buffered inputs outgrow the running
result, so memory stays within a small multiple of the result, not of the sum of the inputs.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from .. import _io
from .._progress import progress as _progress_bar
from ..errors import UniverseError
from ..kernels import build as _bk
from ..params import InstanceOf, Integral, Interval, check, validated
from ..regions import RegionSet, as_regions

__all__ = ["chrom_sort_key"]

#: positions below 2**_SHIFT (1.1 Tb) sort on one packed int64 key ``code << _SHIFT | pos``
_SHIFT = 40
#: a fold never runs on fewer buffered rows than this (amortises the sort of small inputs)
_MIN_FOLD = 1 << 20
#: token ids are int32 and 7 special tokens follow the regions
_MAX_REGIONS = 2**31 - 8

# ---------------------------------------------------------------------------- chromosome order
_PRIMARY = re.compile(r"^(?:chr)?([0-9]+|X|Y|M|MT)$", re.IGNORECASE)
_SEX_MITO = {"X": 0, "Y": 1, "M": 2, "MT": 2}


@validated({"name": [InstanceOf(str)]})
def chrom_sort_key(name: str) -> tuple:
    """Sort key of the natural chromosome order used by every builder.

    Numbered chromosomes first by number, then X, Y, M (``MT`` = ``M``), with or without a
    ``chr`` prefix in any case; then every other contig alphabetically (by code point).
    Names that tie (``chr1`` and ``1``) are ordered by the name itself.

    Examples
    --------
    >>> sorted(["chrM", "chr10", "chrUn_KI270742v1", "chr2", "chrX", "chr1"], key=chrom_sort_key)
    ['chr1', 'chr2', 'chr10', 'chrX', 'chrM', 'chrUn_KI270742v1']
    """
    m = _PRIMARY.match(name)
    if m is None:
        return (1, 0, 0, name)
    t = m.group(1).upper()
    if t.isdigit():
        return (0, 0, int(t), name)
    return (0, 1, _SEX_MITO[t], name)


class _ChromTable:
    """One code space for chromosome names across inputs (each RegionSet has its own table)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []

    def _code(self, name: str) -> int:
        code = self.index.get(name)
        if code is None:
            code = self.index[name] = len(self.names)
            self.names.append(name)
        return code

    def codes(self, rs: RegionSet) -> np.ndarray:
        """``rs.codes`` translated into this table's code space (new names are added)."""
        if len(rs) == 0:
            return np.zeros(0, np.int32)
        lut = np.fromiter((self._code(n) for n in rs.chrom_names), np.int32, len(rs.chrom_names))
        return lut[rs.codes]


def _finish(names: list[str], codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> RegionSet:
    """A RegionSet in natural chromosome order with only the chromosomes present.

    Rows of each code must already be sorted by (start, end); codes index ``names``.
    """
    if codes.size == 0:
        return RegionSet.empty()
    present = np.unique(codes)
    nat = sorted(range(present.size), key=lambda i: chrom_sort_key(names[present[i]]))
    lut = np.full(len(names), -1, np.int32)
    lut[present[nat]] = np.arange(present.size, dtype=np.int32)
    new = lut[codes]
    order = None if (np.diff(new) >= 0).all() else np.argsort(new, kind="stable")
    out_names = tuple(names[present[i]] for i in nat)
    if order is None:
        return RegionSet(out_names, new, starts, ends, validate=False)
    return RegionSet(out_names, new[order], starts[order], ends[order], validate=False)


def _sort_order(codes: np.ndarray, pos: np.ndarray) -> np.ndarray | None:
    """Permutation sorting rows by (code, pos), stable; ``None`` when already sorted."""
    if codes.size < 2 or _bk.is_sorted(codes, pos):
        return None
    if int(pos.max()) < (1 << _SHIFT) and int(codes.max()) < (1 << (62 - _SHIFT)):
        key = (codes.astype(np.int64) << _SHIFT) | pos
        return np.argsort(key, kind="stable")  # timsort: near-linear on concatenated sorted runs
    return np.lexsort((pos, codes))


def _merge_arrays(codes, starts, ends, min_gap: int):
    """Sort by (code, start) and merge with the ``bedtools merge -d min_gap`` rule.

    With ``min_gap >= 0`` the order of regions with equal starts cannot change the result (the
    later one always joins); with a negative gap it can, so ends break ties (as ``sort -k1,1
    -k2,2n -k3,3n`` before bedtools does).
    """
    if min_gap < 0 and codes.size > 1:
        order = np.lexsort((ends, starts, codes))
    else:
        order = _sort_order(codes, starts)
    if order is not None:
        codes, starts, ends = codes[order], starts[order], ends[order]
    codes = np.ascontiguousarray(codes, np.int32)
    starts = np.ascontiguousarray(starts, np.int64)
    ends = np.ascontiguousarray(ends, np.int64)
    oc, os_, oe = np.empty_like(codes), np.empty_like(starts), np.empty_like(ends)
    k = _bk.merge_sorted(codes, starts, ends, np.int64(min_gap), oc, os_, oe)
    if k == codes.size:
        return oc, os_, oe
    return oc[:k].copy(), os_[:k].copy(), oe[:k].copy()  # copies: let the n-row buffers go


def _compact_arrays(codes, pos, delta):
    """Sort coverage events by (code, pos), sum equal positions, drop the ones that cancel."""
    order = _sort_order(codes, pos)
    if order is not None:
        codes, pos, delta = codes[order], pos[order], delta[order]
    oc, op, od = np.empty_like(codes), np.empty_like(pos), np.empty_like(delta)
    k = _bk.compact_events(codes, pos, delta, oc, op, od)
    if k == codes.size:
        return oc, op, od
    return oc[:k].copy(), op[:k].copy(), od[:k].copy()


class _Fold:
    """A running result plus buffered chunks, reduced together when the buffer outgrows it."""

    def __init__(self, reduce: Callable, n_arrays: int = 3):
        self.reduce = reduce
        self.run: tuple | None = None
        self.buf: list[tuple] = []
        self.n_buf = 0
        self.n_arrays = n_arrays

    def add(self, chunk: tuple) -> None:
        if chunk[0].size == 0:
            return
        self.buf.append(chunk)
        self.n_buf += chunk[0].size
        if self.n_buf >= max(_MIN_FOLD, 0 if self.run is None else self.run[0].size):
            self.fold()

    def fold(self) -> None:
        parts = ([self.run] if self.run is not None else []) + self.buf
        if not parts:
            return
        joined = tuple(np.concatenate([p[i] for p in parts]) for i in range(self.n_arrays))
        self.buf, self.n_buf = [], 0
        self.run = None  # let the old run go before the reduction allocates
        self.run = self.reduce(*joined)

    def result(self) -> tuple:
        self.fold()
        if self.run is None:
            return (np.zeros(0, np.int32),) + tuple(np.zeros(0, np.int64)
                                                    for _ in range(self.n_arrays - 1))
        return self.run


# ---------------------------------------------------------------------------- reading inputs
def _input_list(inputs) -> Iterable:
    """The inputs as an iterable of single inputs (one path / RegionSet / frame is one input)."""
    if isinstance(inputs, (str, os.PathLike, RegionSet, Mapping)) or hasattr(inputs, "columns"):
        return [inputs]
    try:
        iter(inputs)
    except TypeError:
        raise UniverseError(f"inputs must be an iterable of region sets (BED paths, RegionSets, "
                            f"…), got a {type(inputs).__name__}") from None
    return inputs


def _describe(rs: RegionSet, hash_inputs: bool) -> dict[str, Any]:
    if rs.from_file and rs.source:
        d: dict[str, Any] = {"path": rs.source, "size": os.stat(rs.source).st_size}
        if hash_inputs:
            d["sha256"] = _io.file_digest(rs.source)
        d["n_regions"] = len(rs)
        return d
    return {"path": None, "n_regions": len(rs)}


def _load(item, hash_inputs: bool) -> tuple[RegionSet, dict]:
    rs = as_regions(item)
    return rs, _describe(rs, hash_inputs)


def _bar(enabled: bool, total: int | None, desc: str):
    return _progress_bar(total, desc, "file", enabled=enabled)


def _loads(items: Iterable, hash_inputs: bool, n_readers: int) -> Iterator[tuple[RegionSet, dict]]:
    """``_load`` of every item, in order, with up to ``n_readers`` reads in flight."""
    if n_readers <= 1:
        for item in items:
            yield _load(item, hash_inputs)
        return
    with ThreadPoolExecutor(n_readers, thread_name_prefix="genotok-read") as pool:
        pending: collections.deque = collections.deque()
        try:
            for item in items:
                pending.append(pool.submit(_load, item, hash_inputs))
                if len(pending) > n_readers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # an error or an abandoned build: drop the reads not started yet
            for f in pending:
                f.cancel()


def _stream(inputs, *, hash_inputs: bool, progress: bool, desc: str,
            n_threads: int | None) -> Iterator[tuple[RegionSet, dict]]:
    """Yield ``(RegionSet, description)`` per input, in order, reading ahead on threads.

    The BED parser, file reads, gzip and sha256 release the GIL, so reader threads overlap
    them; at most one input per reader thread beyond the current one is held in memory.
    """
    items = _input_list(inputs)
    total = len(items) if hasattr(items, "__len__") else None
    n_readers = max(1, numba.get_num_threads() if n_threads is None else int(n_threads))
    bar = _bar(progress, total, desc)
    n_regions = 0
    try:
        for rs, d in _loads(items, hash_inputs, n_readers):
            n_regions += len(rs)
            bar.update(1)
            bar.set_postfix_str(f"{n_regions:,} regions")
            yield rs, d
    finally:
        bar.close()


def _check_int(value, name: str, minimum: int | None = None) -> int:
    """``value`` (an element of a caller's mapping: a chromosome's length) checked by
    :func:`genotok.params.check`, then made an ``int``."""
    return int(check(name, value, [Interval(Integral, minimum, None)], error=UniverseError))


