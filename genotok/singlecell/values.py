"""Value encodings of single-cell matrices for foundation models (Geneformer, scGPT).

An encoding rewrites each stored entry of a cell × feature matrix, row chunk by row chunk,
before the cells become tokens (the ``encoding`` steps of a :class:`~genotok.CellSpec`:
``Normalize``, ``Log1p``, ``RankByMedian``, ``Bins``, which compile to a
:class:`ValueEncoding` here); the encoded value is the token's value channel.

Steps, in this order
--------------------
``normalize="total"``
    each entry divided by its cell's total (sum of the row's stored entries) times
    ``target_sum`` (default 10,000); ``log1p=True`` then takes ``log(1 + x)``. A cell whose
    total is 0 stays 0; one whose total, or ``target_sum / total``, overflows float64 (values
    near 1e308, or a subnormal total) is refused.
``rank="median"`` (Geneformer's rank-value encoding)
    each entry divided by its feature's median of the non-zero (normalised) values over the
    whole matrix; with ``order="value"`` a cell's tokens come by this ratio, descending, ties in
    genomic (token id) order. The medians come from one streaming pass over the matrix
    (:func:`feature_medians`, backed files by row chunks) or are given (the training corpus'
    medians at inference: ``rank=corpus`` or an array, finite and ``>= 0``). Entries of a
    feature without a median (never non-zero in training: NaN, or 0) are dropped.
``bins=n`` (scGPT's value binning)
    per cell, a positive value ``v`` gets the bin ``1 + r * (n - 1) // m``, where ``m`` is the
    number of the cell's positive values and ``r`` how many of them are strictly below ``v``
    (equal values share a bin): bins ``1 .. n-1`` are per-cell quantiles, ``0`` is reserved
    for zero; ``2 <= n <= 2**24 + 1`` (the float32 value channel holds the bins exactly).
    ``rank`` and ``bins`` exclude each other.

Entries a row stores twice for one column are summed first (as scipy reads them): each matrix
element is encoded once.

When several peaks hit one token, the token's value is the sum of its peaks' encoded values
(``unique=True``); use a universe equal to the peak set, or ``unique=False``, for one value
per feature.

How the medians are computed
----------------------------
One pass over row chunks feeds a per-feature histogram of the positive values, kept as
``(feature, code) → count`` pairs (memory: the distinct pairs, not the entries). While every
value is an integer (raw counts, ``normalize=None``) the code is the value itself and the
median is **exact** (``numpy.median`` of the feature's non-zero values). Real values (and
integer histograms once a real value appears) use log-spaced codes, ``floor(log2(v) * B)``
with ``B = bins_per_octave`` (default 128): the median is the geometric midpoint of its code's
bin, within a relative error of ``2 ** (0.5 / B) - 1`` (0.27 %) of the median of the values
rounded to their bins (method ``"log-histogram"``).

Memory: one row chunk (about ``memory_mb``, its keys included) plus the histogram: hash tables
of 8-byte slots, one per block of 128 features (:mod:`genotok.kernels.histogram`), 2-4 slots
per distinct (feature, code) pair (16-32 bytes; a block grows alone, so the peak adds one
block's table, not the histogram's). Integer counts have few distinct values per feature;
normalised values have at most ``B`` codes per octave their feature spans, and nearly every
entry of a sparse matrix can be its own pair (measured: 20,000 cells × 200,001 peaks, 17.2M
entries, normalised, ``B = 128``: 11.5M distinct pairs, 376 MiB above the imports, where
the sorted histogram merged chunk by chunk took 685 MiB; raw counts, 0.8M pairs: 161 MiB).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import ClassVar

import numba
import numpy as np

from .. import _validate
from ..errors import AnnDataError
from ..kernels import histogram as HK
from ..kernels import values as VK
from ..kernels.cells import compact
from ..params import (MEMORY_MB, Flag, HasAttr, InstanceOf, Integral, Interval, Options, Real,
                      Unchecked, validate_fields, validated)
from .chunks import Chunk
from .chunks import kernel_ints as _kernel_ints  # (features.py takes it from here)
from .sources import CellSource, _check_rows, _source

_OFF = np.int64(1) << np.int64(31)
_PARALLEL_FROM = 1 << 16  # keys (or pairs) from which the blocks are shared out to threads


def _threads() -> int:
    """The threads the medians pass shares its work out to (numba's thread count)."""
    return numba.get_num_threads()


@dataclass(frozen=True)
class ValueEncoding:
    """Normalise → rank by median or bin, as described in :mod:`genotok.singlecell.values`.

    Examples
    --------
    >>> import numpy as np
    >>> enc = ValueEncoding(normalize="total", target_sum=10)
    >>> enc.encode(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([1.0, 3.0, 5.0]), 2).tolist()
    [2.5, 7.5, 10.0]
    """

    normalize: str | None = None
    target_sum: float = 1e4
    log1p: bool = False
    medians: np.ndarray | None = field(default=None, repr=False)
    median_method: str | None = None
    #: ``0`` is the zero bin; the float32 value channel holds bins up to ``2**24`` exactly
    bins: int | None = None
    #: scGPT's quantile bins after the normalisation (``QuantileBins``' ``(n, side, seed)``)
    quantiles: tuple | None = None
    CONSTRAINTS: ClassVar[dict] = {
        "normalize": [Options("total"), None],
        "target_sum": [Interval(Real, 0, 1e308, closed="right")],
        "log1p": [Flag()],
        "medians": [InstanceOf(np.ndarray, list, tuple), None],
        "median_method": [InstanceOf(str), None],
        "bins": [Interval(Integral, 2, 2**24 + 1), None],
        "quantiles": [InstanceOf(tuple), None]}

    def __post_init__(self):
        validate_fields(self)
        if self.medians is not None:
            med = np.asarray(self.medians, dtype=np.float64)
            if med.ndim != 1:
                raise ValueError(f"medians must be one-dimensional, got shape {med.shape}")
            bad = np.flatnonzero(~(np.isnan(med) | ((med >= 0) & (med < np.inf))))
            if bad.size:  # a log-scale or sentinel median would silently drop its feature
                raise ValueError(f"medians must be finite and >= 0 (NaN or 0: a feature without "
                                 f"a median, dropped); feature {bad[0]} has {med[bad[0]]}")
        if self.bins is not None and self.medians is not None:
            raise ValueError("rank='median' and bins= exclude each other; choose one")
        if self.quantiles is not None and (self.normalize != "total" or self.bins is not None
                                           or self.medians is not None):
            raise ValueError("quantile bins follow a normalisation to a total, alone")

    def encode(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_cols: int,
               where: str = "X", row0: int = 0) -> np.ndarray:
        """Encoded float64 values of rows ``indptr`` (rebased: ``indptr[0] == 0``; the first
        is row ``row0`` of the matrix, for messages)."""
        indptr = _validate.offsets(indptr, data.size, where, error=AnnDataError)
        _same_length(indptr, indices, data, where)
        data = _kernel_floats(data)
        if data.size and not (data.min() >= 0 and np.isfinite(data.max())):
            raise AnnDataError(f"{where}: value encodings need finite values >= 0 (counts); "
                               f"found {data[~(np.isfinite(data) & (data >= 0))][0]}")
        # float32 rows always normalise (totals < 3.4e38 * 2**63, target_sum / 1.4e-45 finite)
        if self.normalize == "total" and (data.dtype != np.float32 or self.target_sum > 1e250):
            r = VK.unbounded_row(indptr, data, float(self.target_sum))
            if r >= 0:
                raise _unbounded(where, row0 + r, data[indptr[r]:indptr[r + 1]],
                                 self.target_sum)
        med = None
        if self.medians is not None:
            med = np.asarray(self.medians, dtype=np.float64)
            if med.size != n_cols:
                raise AnnDataError(f"{where}: {n_cols} features but {med.size} medians; "
                                   "the medians must come from a matrix with the same columns")
            idx = _kernel_ints(_validate.indices(indices, n_cols, where, what="column index",
                                                 error=AnnDataError))  # numba indexes med
        if self.normalize == "total" and med is not None:  # one pass, no normalised array
            out = _out(data)  # (rows with repeated columns: encoded as they are, as before)
            VK.normalize_divide(indptr, idx, data, float(self.target_sum), bool(self.log1p),
                                med, out)
            return _finite_ratios(out, indptr, idx, med, where, row0)
        if self.quantiles is not None:  # normalise, log1p, scGPT's bins: one pass
            n, side, seed = self.quantiles
            return VK.quantile_bins(indptr, data, True, float(self.target_sum), bool(self.log1p),
                                    np.linspace(0, 1, int(n) - 1), int(seed), int(row0),
                                    side == "both", _out(data))
        if self.normalize == "total" and self.bins is not None:
            out = _out(data)
            VK.normalize_bins(indptr, _kernel_ints(indices), data, n_cols,
                              float(self.target_sum), bool(self.log1p), int(self.bins), out)
            return out
        data = np.ascontiguousarray(data, dtype=np.float64)
        out = data
        if self.normalize == "total":
            out = VK.normalize_rows(indptr, data, float(self.target_sum), bool(self.log1p),
                                    _out(data))
        elif self.log1p:
            out = np.log1p(data)
        if med is not None:
            out = _finite_ratios(VK.divide_by_median(np.ascontiguousarray(out, np.float64), idx,
                                                     med, _out(out)), indptr, idx, med, where,
                                 row0)
        if self.bins is not None:
            out = VK.row_bins(indptr, out, int(self.bins), data, _out(out))
        return out

    def chunk_encoder(self, n_cols: int, where: str):
        """``chunk -> chunk`` for the single-cell stream (rebases the chunk's rows)."""
        def encode(ch):
            a, b = int(ch.indptr[0]), int(ch.indptr[-1])
            ptr = _validate.offsets(ch.indptr - a, b - a, where, error=AnnDataError)
            idx, data = ch.indices[a:b], ch.data[a:b]
            _same_length(ptr, idx, data, where)  # (a plugin's chunk may hold fewer)
            out = self._one_pass(ptr, idx, data, n_cols)
            if out is None:  # repeated columns summed, then the checks and their messages
                ptr, idx, data = _summed_duplicates(ptr, idx, data, n_cols)
                out = self.encode(ptr, idx, data, n_cols, where, ch.row0)
            return Chunk(ch.row0, ptr, idx, out, n_cols)
        return encode

    def _one_pass(self, indptr, indices, data, n_cols: int) -> np.ndarray | None:
        """The encoded values of rows one kernel checks and encodes as they are (normalised,
        then divided by the medians or binned), when every row is clean (values finite and
        ``>= 0``, columns strictly increasing within ``n_cols``, totals and ratios finite:
        :func:`~genotok.kernels.values.normalize_divide`); else ``None``, and the general
        path sums repeated columns and says what is wrong. One pass where the general path
        takes five (the duplicate check, two value and index checks, the kernel, the ratios'
        check). The caller has checked that the arrays hold what ``indptr`` points to
        (:func:`_same_length`)."""
        if self.normalize != "total" or self.quantiles is not None or (
                (self.medians is None) == (self.bins is None)):
            return None
        idx = np.asarray(indices)
        if idx.dtype != np.int32:  # (the kernels' one index variant: kernel_ints)
            return None
        idx, data = np.ascontiguousarray(idx), _kernel_floats(data)
        out = _out(data)
        if self.medians is not None:
            med = np.asarray(self.medians, dtype=np.float64)
            clean = med.size == n_cols and VK.normalize_divide(
                indptr, idx, data, float(self.target_sum), bool(self.log1p), med, out)
        else:
            clean = VK.normalize_bins(indptr, idx, data, n_cols, float(self.target_sum),
                                      bool(self.log1p), int(self.bins), out)
        return out if clean else None

    def to_json(self) -> dict:
        """JSON metadata (stored in a corpus header; NaN medians as ``null``)."""
        med = None
        if self.medians is not None:
            med = [None if not math.isfinite(x) else x for x in np.asarray(self.medians).tolist()]
        return {"normalize": self.normalize, "target_sum": self.target_sum, "log1p": self.log1p,
                "rank": None if med is None else "median", "medians": med,
                "median_method": self.median_method, "bins": self.bins,
                "quantiles": None if self.quantiles is None else list(self.quantiles)}

    @classmethod
    def from_json(cls, d: dict) -> ValueEncoding:
        med = d.get("medians")
        if med is not None:
            med = np.array([np.nan if x is None else x for x in med], dtype=np.float64)
        q = d.get("quantiles")
        return cls(d.get("normalize"), float(d.get("target_sum", 1e4)), bool(d.get("log1p")),
                   med, d.get("median_method"), d.get("bins"), None if q is None else tuple(q))


def _same_length(indptr: np.ndarray, indices, data, where: str) -> None:
    """Refuse rows whose arrays do not hold what ``indptr`` (checked) points to: the kernels
    index them with it."""
    if not int(indptr[-1]) == len(indices) == len(data):
        raise AnnDataError(f"{where}: indptr ends at {int(indptr[-1])}, but there are "
                           f"{len(indices)} column indices and {len(data)} values")


def _out(like: np.ndarray) -> np.ndarray:
    """A float64 array as long as ``like`` for a kernel to write: allocated by NumPy, which asks
    for huge pages (``genotok/kernels/__init__.py``)."""
    return np.empty(like.size, np.float64)


def _finite_ratios(out: np.ndarray, indptr: np.ndarray, idx: np.ndarray, med: np.ndarray,
                   where: str, row0: int) -> np.ndarray:
    """``out`` (values / medians), refused when a ratio overflows float64 (a tiny median):
    the cells' kernels would otherwise blame an infinite value the matrix does not hold."""
    if out.size and not np.isfinite(out.max()):  # the ratios are >= 0: max finds inf
        k = int(np.flatnonzero(~np.isfinite(out))[0])
        r = int(np.searchsorted(indptr, k, side="right")) - 1
        raise AnnDataError(f"{where}: row {row0 + r}, column {int(idx[k])}: its value divided "
                           f"by the column's median {float(med[idx[k]])!r} overflows float64")
    return out


def _unbounded(where: str, row: int, values: np.ndarray, target_sum: float) -> AnnDataError:
    with np.errstate(over="ignore"):
        total = float(np.sum(values, dtype=np.float64))
    return AnnDataError(f"{where}: row {row}: its total {total!r} cannot be normalised to "
                        f"target_sum={target_sum} in float64 (the total or target_sum / total "
                        "overflows); rescale the matrix")


class _Histogram:
    """``(feature, code) → count`` pairs in hash tables, one per block of ``2**7`` features
    (:mod:`genotok.kernels.histogram`), filled from row chunks: bounded by the distinct pairs,
    never by the entries. A count past ``2**24 - 1`` leaves its slot for ``spills``."""

    def __init__(self, bins_per_octave: int, n_features: int):
        from numba.typed import List

        self.B = bins_per_octave
        self.n_features = n_features
        self.exact = True
        n_blocks = max(1, -(-n_features // (1 << HK.BLOCK)))
        none = HK.new_table(0)  # shared by the blocks until their first key (never written)
        self.tables = List([none] * n_blocks)
        self.used = np.zeros(n_blocks, np.int64)
        self.spills: dict[int, int] = {}

    def _spilled(self, flat: np.ndarray) -> None:
        for key, count in flat.reshape(-1, 2).tolist():
            self.spills[key] = self.spills.get(key, 0) + count

    def add_rows(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                 enc: ValueEncoding, where: str, row0: int = 0) -> None:
        """Count the positive encoded values of CSR rows (``indptr`` rebased, checked; the
        first is row ``row0``, for messages): the rows' keys made in parts on threads, then
        each thread counting the keys of a range of blocks, part after part (the tables then
        hold the pairs and counts one thread would give them; their sizes may differ)."""
        while True:
            parts = self._on_row_parts(indptr, indices, data, enc)
            if all(p[2] == HK.OK for p in parts):
                def count(lo, hi):
                    return [HK.count_blocks(self.tables, self.used, keys, starts, lo, hi)
                            for keys, starts, _, _ in parts]

                weight = sum(np.diff(starts) for _, starts, _, _ in parts)
                for flats in self._on_threads(count, weight):
                    for flat in flats:
                        self._spilled(flat)
                return
            # the chunk's first problem, in the order one pass over it checks
            _, _, status, pos = (parts if len(parts) == 1 else self._on_row_parts(
                indptr, indices, data, enc, 1))[0]
            if status == HK.INEXACT:  # a real value: the exact histogram becomes a log one
                self._to_log_codes()
                continue
            if status == HK.BAD_TOTAL:
                raise _unbounded(where, row0 + pos, data[indptr[pos]:indptr[pos + 1]],
                                 enc.target_sum)
            if status == HK.BAD_VALUE:
                raise AnnDataError(f"{where}: value encodings need finite values >= 0 (counts); "
                                   f"found {float(data[pos])}")
            raise AnnDataError(f"{where}: column index {int(indices[pos])} at position {pos} "
                               f"is out of range [0, {self.n_features})")

    def _to_log_codes(self) -> None:
        """Recode the exact histogram (integer values) with log codes, spills too."""
        def recode(keys):
            c = (keys & ((np.int64(1) << 32) - 1)) - _OFF  # integer values >= 1
            codes = np.floor(np.log2(c.astype(np.float64)) * self.B).astype(np.int64)
            return (keys >> 32) << 32 | (codes + _OFF)

        spills, self.spills = self.spills, {}
        if spills:
            keys = recode(np.array(list(spills), np.int64))
            for key, count in zip(keys.tolist(), spills.values()):
                self.spills[key] = self.spills.get(key, 0) + count
        for q in range(len(self.tables)):
            if not self.used[q]:
                continue
            keys, counts = HK.pairs(self.tables[q], q)
            self.tables[q], self.used[q], flat = HK.add_block(
                HK.new_table(self.tables[q].size), 0, q, recode(keys), counts, 0, keys.size)
            self._spilled(flat)
        self.exact = False

    def _on_row_parts(self, indptr, indices, data, enc: ValueEncoding,
                      n_parts: int | None = None) -> list:
        """:func:`~genotok.kernels.histogram.chunk_keys` of the rows cut into ``n_parts``
        (default: a part per thread) of about equal entries, on threads; in row order."""
        n_parts = _threads() if n_parts is None else n_parts
        if data.size < _PARALLEL_FROM or indptr.size < 3:
            n_parts = 1
        rows = np.unique(np.searchsorted(indptr, np.linspace(0, data.size, n_parts + 1)[1:-1]))
        cuts = [0, *rows[(rows > 0) & (rows < indptr.size - 1)].tolist(), indptr.size - 1]
        args = (self.n_features, enc.normalize == "total", float(enc.target_sum),
                bool(enc.log1p), self.exact, float(self.B))

        def keys(r):
            a, b = indptr[cuts[r]], indptr[cuts[r + 1]]
            return HK.chunk_keys(indptr[cuts[r]:cuts[r + 1] + 1] - a, indices[a:b], data[a:b],
                                 *args)

        if len(cuts) == 2:
            return [keys(0)]
        with ThreadPoolExecutor(len(cuts) - 1, thread_name_prefix="genotok-medians") as pool:
            return list(pool.map(keys, range(len(cuts) - 1)))

    def _on_threads(self, kernel, weight: np.ndarray, *args) -> list:
        """``kernel(*args, q_lo, q_hi)`` over ranges of blocks, one per thread, each range
        about an equal share of ``weight`` (per block: its keys, or its pairs); the results in
        block order. The kernels release the GIL and each writes only its blocks' entries."""
        n_blocks = len(self.tables)
        n = min(_threads(), n_blocks)
        total = int(weight.sum())
        if n < 2 or total < _PARALLEL_FROM:
            return [kernel(*args, 0, n_blocks)]
        cum = np.cumsum(weight)
        cuts = np.searchsorted(cum, np.arange(1, n) * (total / n), side="right")
        cuts = [0, *cuts.tolist(), n_blocks]
        ranges = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
        with ThreadPoolExecutor(len(ranges), thread_name_prefix="genotok-medians") as pool:
            return list(pool.map(lambda r: kernel(*args, *r), ranges))

    def medians(self) -> np.ndarray:
        keys = np.array(sorted(self.spills), np.int64)
        counts = np.array([self.spills[k] for k in keys.tolist()], np.int64)
        med = np.full(self.n_features, np.nan)
        n_blocks = len(self.tables)

        def first(q):  # the first spill of block q's features (keys sorted; 2**BLOCK a block)
            return keys.size if q >= n_blocks else int(np.searchsorted(keys, q << HK.BLOCK + 32))

        def blocks(lo, hi):
            a, b = first(lo), first(hi)
            return HK.medians(self.tables, keys[a:b], counts[a:b], self.n_features, self.exact,
                              float(self.B), lo, hi, med)[1]

        ok = self._on_threads(blocks, self.used)
        if not all(ok) or (keys.size and int(keys[-1]) >> 32 >= n_blocks << HK.BLOCK):
            raise AssertionError("histogram keys must name features")
        return med


@validated({"adata": [Unchecked("an AnnData or a path, or several: each opened by open_source")],
            "layer": [InstanceOf(str), None], **{k: ValueEncoding.CONSTRAINTS[k] for k in (
                "normalize", "target_sum", "log1p")},
            "bins_per_octave": [Interval(Integral, 1, 2**20)], "memory_mb": MEMORY_MB})
def feature_medians(adata, *, layer: str | None = None, normalize: str | None = None,
                    target_sum: float = 1e4, log1p: bool = False, bins_per_octave: int = 128,
                    memory_mb: float = 256) -> tuple[np.ndarray, str]:
    """Per-feature median of the positive (normalised) values, in one pass over row chunks.

    ``adata`` is an AnnData or ``.h5ad`` path, or a list of them with the same features in the
    same order (medians over all their cells: a corpus made of many files; then pass the
    medians to each file's ``RankByMedian(medians)``), or an iterator of them
    (a generator: each is opened when reached, so one matrix at a time is in memory).

    Returns ``(medians, method)``: float64 medians (NaN for a feature never positive) and
    ``"exact"`` or ``"log-histogram(B/octave)"`` (see :mod:`genotok.singlecell.values`).

    Examples
    --------
    >>> import anndata, numpy as np, scipy.sparse as sp
    >>> a = anndata.AnnData(sp.csr_matrix(np.array([[1., 0, 4], [3, 0, 0], [2, 0, 5]])))
    >>> med, method = feature_medians(a)
    >>> med.tolist(), method
    ([2.0, nan, 4.5], 'exact')
    >>> feature_medians([a, a[:1]])[0].tolist()  # the cells of both
    [1.5, nan, 4.0]
    >>> feature_medians(x for x in (a, a[:1]))[0].tolist()  # one at a time
    [1.5, nan, 4.0]
    """
    enc = ValueEncoding(normalize, target_sum, log1p)
    if isinstance(adata, Iterator):  # opened one at a time, when reached
        sources = (_opened(x, layer) for x in adata)
    else:
        many = isinstance(adata, (list, tuple))
        sources = [_opened(x, layer) for x in (adata if many else [adata])]
        _same_columns(sources)  # all of them checked before the pass
    hist = None
    first = None
    # per entry: the chunk's indices and data, and the chunk's keys twice (flat, by block)
    for source in sources:
        first = source if first is None else first
        _same_columns([first, source])
        if hist is None:
            hist = _Histogram(int(bins_per_octave), first.n_cols)
        for ch in source.chunks(int(memory_mb * (1 << 20)), 32, None):
            a, b = int(ch.indptr[0]), int(ch.indptr[-1])
            ptr = _validate.offsets(ch.indptr - a, b - a, source.where, error=AnnDataError)
            ptr, idx, data = _summed_duplicates(ptr, ch.indices[a:b], ch.data[a:b],
                                                source.n_cols)
            hist.add_rows(ptr, _kernel_ints(idx), _kernel_floats(data), enc, source.where,
                          ch.row0)
    if first is None:
        raise ValueError("feature_medians needs at least one matrix")
    med = hist.medians()
    return med, "exact" if hist.exact else f"log-histogram({hist.B}/octave)"


def _summed_duplicates(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                       n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR rows (``indptr`` rebased, checked) with the entries of a column stored twice in a
    row summed, as scipy reads them: the encodings (log1p, medians, bins) are not additive, so
    each matrix element must be encoded once. Rows then come sorted by column. Returned as
    given when no column repeats (one pass), or when an index or a value is bad (for the
    checks that follow to refuse, not to merge away)."""
    indices = np.asarray(indices)
    if indices.size < 2 or VK.rows_increasing(indptr, _kernel_ints(indices)):
        return indptr, indices, data
    cols = indices.astype(np.int64)
    if not (cols.min() >= 0 and cols.max() < n_cols and data.min() >= 0
            and np.isfinite(data.max())):
        return indptr, indices, data
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    key = rows * n_cols + cols
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    if first.size == key.size:  # unsorted, but no column repeats: storage order kept
        return indptr, indices, data
    ptr = np.zeros(indptr.size, np.int64)
    np.cumsum(np.bincount(rows[order][first], minlength=indptr.size - 1), out=ptr[1:])
    with np.errstate(over="ignore"):  # an infinite sum is refused by the value check
        summed = np.add.reduceat(_kernel_floats(data)[order], first)
    return ptr, cols[order][first].astype(indices.dtype), summed


def _opened(adata, layer: str | None):
    """The matrix source of ``adata``, its rows checked against ``obs`` (a file's shape
    attribute may lie) before anything is sized by them."""
    if isinstance(adata, CellSource):  # opened already (a fragment file's counts)
        return adata
    source, path = _source(adata, layer)
    _check_rows(source, adata, path)
    return source


def _kernel_floats(a: np.ndarray) -> np.ndarray:
    """Values as float32 or float64 (the kernels' two compiled variants), contiguous."""
    a = np.asarray(a)
    return np.ascontiguousarray(a if a.dtype in (np.float32, np.float64) else
                                a.astype(np.float64))


def _same_columns(sources: list) -> None:
    """The medians need one feature space: every source with the first one's columns."""
    if not sources:
        raise ValueError("feature_medians needs at least one matrix")
    n_cols = sources[0].n_cols
    for src in sources:
        if src.n_cols != n_cols:
            raise AnnDataError(f"{src.where}: {src.n_cols} features, but {sources[0].where} "
                               f"has {n_cols}; the medians need the same features in each")
    if n_cols >= 2**31:
        raise AnnDataError(f"{sources[0].where}: {n_cols} features; the medians pass handles "
                           "fewer than 2**31")


@validated({"adata": [Unchecked("an AnnData or a path: read by feature_medians"), None],
            "layer": [InstanceOf(str), None],
            **{k: ValueEncoding.CONSTRAINTS[k] for k in ("normalize", "target_sum", "log1p",
                                                         "bins", "quantiles")},
            "rank": [Options("median"), InstanceOf(np.ndarray, list, tuple), HasAttr("header"),
                     None], "memory_mb": MEMORY_MB})
def value_encoding(adata=None, *, layer: str | None = None, normalize: str | None = None,
                   target_sum: float = 1e4, log1p: bool = False, rank=None,
                   bins: int | None = None, quantiles: tuple | None = None,
                   memory_mb: float = 256) -> ValueEncoding | None:
    """The encoding that a :class:`~genotok.CellSpec`'s ``encoding`` steps apply (``None`` when
    nothing is asked). ``rank`` is ``None``, ``"median"`` (medians from ``adata``), an array
    of medians, the ``(medians, method)`` pair that :func:`feature_medians` returns (the
    corpus then records its method, not ``"given"``), or a corpus written with
    ``rank="median"`` (its training medians). ``quantiles``: ``(n, side, seed)`` of a
    :class:`~genotok.QuantileBins` right after the normalisation (run in the same kernel).

    Examples
    --------
    >>> import anndata, numpy as np, scipy.sparse as sp
    >>> a = anndata.AnnData(sp.csr_matrix(np.array([[1., 0, 4], [3, 0, 0]])))
    >>> enc = value_encoding(a, normalize="total", target_sum=10, rank="median")
    >>> enc.medians.tolist(), enc.median_method
    ([6.0, nan, 8.0], 'exact')
    """
    if normalize is None and not log1p and rank is None and bins is None:
        return None
    medians, method = None, None
    if isinstance(rank, str):
        if adata is None:
            raise ValueError("rank='median' computes the medians from the matrix: pass it")
        medians, method = feature_medians(adata, layer=layer, normalize=normalize,
                                          target_sum=target_sum, log1p=log1p,
                                          memory_mb=memory_mb)
    elif rank is not None and hasattr(rank, "header"):  # a corpus: its training medians
        stored = (rank.header.get("extra") or {})
        stored = next((v["values_encoding"] for v in stored.values()
                       if isinstance(v, dict) and v.get("values_encoding")), None)
        if stored is None or stored.get("medians") is None:
            raise ValueError("the corpus was not written with rank='median'; it has no medians")
        trained = ValueEncoding.from_json(stored)
        if (trained.normalize, trained.target_sum, trained.log1p) != (normalize, target_sum,
                                                                        log1p):
            raise ValueError(
                f"the corpus' medians are of normalize={trained.normalize!r}, "
                f"target_sum={trained.target_sum}, log1p={trained.log1p}; pass the same "
                f"(got normalize={normalize!r}, target_sum={target_sum}, log1p={log1p})")
        medians, method = trained.medians, trained.median_method
    elif isinstance(rank, tuple) and len(rank) == 2 and isinstance(rank[1], str):
        medians, method = np.asarray(rank[0], dtype=np.float64), rank[1]  # feature_medians'
        if medians.ndim != 1:
            raise ValueError(f"medians must be one-dimensional, got shape {medians.shape}")
    elif rank is not None:
        medians = np.asarray(rank, dtype=np.float64)
        if medians.ndim != 1:
            raise ValueError(f"medians must be one-dimensional, got shape {medians.shape}")
        method = "given"
    return ValueEncoding(normalize, float(target_sum), bool(log1p), medians, method, bins,
                         None if quantiles is None else tuple(quantiles))


def warmup() -> None:
    """Compile the value-encoding kernels on tiny inputs.

    Examples
    --------
    >>> warmup()
    """
    p = np.array([0, 2], np.int64)
    d = np.array([1.0, 2.0])
    idx = np.array([0, 1], np.int32)  # column indices reach the kernels as int32: kernel_ints
    grid = np.linspace(0, 1, 3)
    ids = np.empty(2, np.int64)
    for x in (d, d.astype(np.float32)):
        hist = _Histogram(128, 2)
        hist.add_rows(p, idx, x, ValueEncoding("total"), "warmup")  # log codes
        hist.add_rows(p, idx, x, ValueEncoding(), "warmup")
        hist = _Histogram(128, 2)
        hist.add_rows(p, idx, x, ValueEncoding(), "warmup")  # exact, then log codes
        hist.add_rows(p, idx, x / 4, ValueEncoding(), "warmup")
        hist.medians()
        VK.normalize_bins(p, idx, x, 2, 1.0, True, 3, _out(x))
        VK.normalize_divide(p, idx, x, 1.0, True, d, _out(x))
        VK.quantile_bins(p, x, True, 1.0, True, grid, 0, 0, True, _out(x))
        VK.rank_rows(p, idx, x, np.array([0, 1], np.int64), 1, d[:1], True, 1.0, False, d,
                     np.array([5, -1], np.int64), 0.5, 0, np.array([0, 1]), p, ids,
                     np.empty(2, np.float32))
        VK.bin_rows(p, idx, x, np.array([0, 1], np.int64), 1.0, True, grid, 0, 0, True,
                    np.array([5, -1], np.int64), 0.5, np.array([0, 1]), p, ids,
                    np.empty(2, np.float32))
    VK.normalize_rows(p, d, 1.0, True, _out(d))
    VK.row_bins(p, d, 3, d, _out(d))
    VK.divide_by_median(d, idx, d, _out(d))
    VK.rows_increasing(p, idx)
    VK.merge_counts(*[np.array([1], np.int64)] * 4)
    compact(ids, np.empty(0, np.float32), p, np.array([2], np.int64))


__all__ = ["ValueEncoding", "feature_medians", "value_encoding", "warmup"]
