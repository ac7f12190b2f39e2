"""Building a universe (the vocabulary) from training region sets: tiles, merge, consensus, top-k.

For text, stage one is training the tokenizer on the corpus; for genomic regions it is building
the universe from the region sets that will be tokenized:

- :func:`tile` — genome-wide fixed-width bins from chromosome sizes;
- :func:`merge` — the union of every input, merged like ``bedtools merge -d min_gap``;
- :func:`coverage_cutoff` — regions covered by at least ``k`` input sets (a consensus set);
- :func:`top_k` — the ``max_regions`` candidate regions hit by the most input sets
  (vocabulary-size control).

Every builder returns a :class:`BuildResult` ``(regions, report)``: a
:class:`~genotok.regions.RegionSet` in genomic order and a :class:`BuildReport` saying how it was
built. ``result.write("u.bed")`` writes the BED and a ``u.bed.json`` sidecar;
``result.tokenizer()`` gives a :class:`~genotok.tokenizer.Tokenizer` straight away.

**Genomic order.** Chromosomes come in *natural order*: ``chr1, chr2, …, chr10, …, chr22, chrX,
chrY, chrM`` (with or without the ``chr`` prefix, any case; ``MT`` counts as ``M``), then every
other contig in alphabetical (code point) order. See :func:`chrom_sort_key`. Within a chromosome
regions are sorted by (start, end).

**Streaming.** Inputs are read one at a time (a few ahead on reader threads) and folded into a
running result: the merged regions for :func:`merge`, the compacted coverage change points for
:func:`coverage_cutoff`, one hit counter per candidate for :func:`top_k`. A fold happens when the
buffered inputs outgrow the running result, so memory stays within a small multiple of the
result, not of the sum of the inputs.
"""

from __future__ import annotations

import collections
import datetime
import gzip
import hashlib
import json
import operator
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import numba
import numpy as np

from .. import _config, _io
from ..errors import BedParseError, GenotokError, UniverseError
from ..kernels import build as _bk
from ..regions import RegionSet, as_regions
from ..tokenizer import Tokenizer
from ..universe import Universe

__all__ = ["BuildReport", "BuildResult", "build_cli", "chrom_sort_key", "coverage_cutoff",
           "merge", "read_chrom_sizes", "tile", "top_k", "write_universe"]

#: positions below 2**_SHIFT (1.1 Tb) sort on one packed int64 key ``code << _SHIFT | pos``
_SHIFT = 40
#: a fold never runs on fewer buffered rows than this (amortises the sort of small inputs)
_MIN_FOLD = 1 << 20
#: token ids are int32 and 7 special tokens follow the regions
_MAX_REGIONS = 2**31 - 8

# ---------------------------------------------------------------------------- chromosome order
_PRIMARY = re.compile(r"^(?:chr)?([0-9]+|X|Y|M|MT)$", re.IGNORECASE)
_SEX_MITO = {"X": 0, "Y": 1, "M": 2, "MT": 2}


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


# ---------------------------------------------------------------------------- report and result
def _version() -> str:
    import genotok

    return str(getattr(genotok, "__version__", "unknown"))


@dataclass
class BuildReport:
    """How a universe was built: written next to the BED as a ``.json`` sidecar.

    Attributes
    ----------
    method
        ``"tile"``, ``"merge"``, ``"coverage_cutoff"`` or ``"top_k"``.
    params
        The parameters of the call (``min_gap``, ``min_count``, ``max_regions`` …).
    inputs
        One dict per input, in the order read: ``path`` (``None`` for in-memory regions),
        ``size`` in bytes and ``sha256`` of the file (when hashed), ``n_regions``.
    n_regions
        Regions in the universe.
    n_input_regions
        Regions read from all inputs together.
    stats
        Method-specific figures (``max_coverage``, ``cutoff_hits``, ``genome_size`` …).
    chrom_order
        Always ``"natural"`` (see :func:`chrom_sort_key`).
    genotok_version, created, elapsed_s
        Version that built it, UTC time (ISO 8601) and wall time of the build.

    Examples
    --------
    >>> res = merge([["chr1:0-10", "chr1:5-20"], ["chr2:0-5"]])
    >>> res.report.method, res.report.as_dict()["params"]["min_gap"]
    ('merge', 0)
    """

    method: str
    params: dict[str, Any]
    inputs: list[dict[str, Any]]
    n_regions: int
    n_input_regions: int
    stats: dict[str, Any] = field(default_factory=dict)
    chrom_order: str = "natural"
    genotok_version: str = ""
    created: str = ""
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    def to_json(self) -> str:
        """The report as indented JSON text."""
        return json.dumps(self.as_dict(), indent=2) + "\n"

    @classmethod
    def read(cls, path: str | os.PathLike) -> "BuildReport":
        """Read a sidecar written by :func:`write_universe` (a ``.json`` path or the BED path)."""
        p = Path(path)
        if p.suffix != ".json":
            p = sidecar_path(p)
        try:
            d = json.loads(p.read_text())
            known = {f for f in cls.__dataclass_fields__}
            return cls(**{k: v for k, v in d.items() if k in known})
        except (OSError, ValueError, TypeError) as exc:
            raise UniverseError(f"{p}: not a readable universe build report ({exc})") from None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items()
                           if not isinstance(v, (dict, list)))
        return (f"BuildReport({self.method}({params}): {len(self.inputs)} inputs, "
                f"{self.n_input_regions:,} input regions -> {self.n_regions:,} regions, "
                f"{self.elapsed_s:.2f} s)")


class BuildResult(NamedTuple):
    """A built universe: ``regions`` (genomic order) and the ``report`` of how it was built.

    Unpacks as a pair: ``regions, report = merge(files)``.

    Examples
    --------
    >>> regions, report = merge([["chr1:0-10", "chr1:10-20"]])
    >>> regions.to_strings(), report.method
    (['chr1:0-20'], 'merge')
    """

    regions: RegionSet
    report: BuildReport

    def write(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the BED (``.gz`` compresses) and its ``<path>.json`` sidecar.

        An existing file is refused unless ``overwrite=True``. See :func:`write_universe`.
        """
        return write_universe(self.regions, path, self.report, overwrite=overwrite)

    def universe(self, **kwargs) -> Universe:
        """A :class:`~genotok.universe.Universe` over the regions (id = genomic rank)."""
        return Universe(self.regions, **kwargs)

    def tokenizer(self, **kwargs):
        """A :class:`~genotok.tokenizer.Tokenizer` over the regions (``kwargs`` go to it)."""
        from ..tokenizer import Tokenizer

        special = kwargs.pop("special_tokens", None)
        return Tokenizer(self.universe(special_tokens=special), **kwargs)


def _report(method: str, params: dict, inputs: list, rs: RegionSet, t0: float,
            stats: dict | None = None) -> BuildReport:
    return BuildReport(
        method=method, params=params, inputs=inputs, n_regions=len(rs),
        n_input_regions=int(sum(d.get("n_regions", 0) for d in inputs)),
        stats=stats or {}, genotok_version=_version(),
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        elapsed_s=round(time.perf_counter() - t0, 4))


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
    from .._progress import progress  # tqdm when installed, else a plain stderr line

    return progress(total, desc, "file", enabled=enabled)


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
    if isinstance(value, bool):
        raise UniverseError(f"{name} must be an integer, got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise UniverseError(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and v < minimum:
        raise UniverseError(f"{name} must be >= {minimum}, got {v}")
    return int(v)


# ---------------------------------------------------------------------------- tile
def read_chrom_sizes(chrom_sizes) -> list[tuple[str, int]]:
    """Chromosome sizes from a ``chrom.sizes`` file, a mapping or ``(name, length)`` pairs.

    A file has one ``name<whitespace>length`` per line (more columns are ignored; ``#``
    comments and blank lines are skipped; ``.gz`` is fine). Order is kept as given.

    Raises
    ------
    BedParseError
        For a malformed line, a negative length or a name listed twice (with file:line).
    UniverseError
        For a malformed mapping or pair.

    Examples
    --------
    >>> read_chrom_sizes({"chr1": 1000, "chr2": 500})
    [('chr1', 1000), ('chr2', 500)]
    """
    if isinstance(chrom_sizes, (str, os.PathLike)):
        path = os.fspath(chrom_sizes)
        raw = _io.read_bytes(path).tobytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BedParseError(path, None, "not UTF-8 text; expected a chrom.sizes file "
                                "('name<TAB>length' per line)") from None
        out: list[tuple[str, int]] = []
        seen: dict[str, int] = {}
        for no, line in enumerate(text.splitlines(), start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) < 2:
                raise BedParseError(path, no, f"expected 'name<TAB>length', got {line[:80]!r}")
            name, length = fields[0], fields[1]
            if not (length.isascii() and length.isdigit()):
                raise BedParseError(path, no, f"length {length!r} of {name} is not a "
                                    "non-negative integer")
            if name in seen:
                raise BedParseError(path, no, f"chromosome {name} is listed twice (first on "
                                    f"line {seen[name]}); keep one line per chromosome")
            seen[name] = no
            out.append((name, int(length)))
        return out
    pairs = chrom_sizes.items() if isinstance(chrom_sizes, Mapping) else chrom_sizes
    out = []
    seen_names: set[str] = set()
    try:
        for pair in pairs:
            name, length = pair
            if not isinstance(name, str) or not name or any(ch.isspace() for ch in name):
                raise UniverseError(f"chromosome name {name!r} must be a non-empty string "
                                    "without whitespace")
            if name in seen_names:
                raise UniverseError(f"chromosome {name} is listed twice in chrom_sizes")
            seen_names.add(name)
            out.append((name, _check_int(length, f"length of {name}", 0)))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, GenotokError):
            raise
        raise UniverseError(f"chrom_sizes must be a chrom.sizes path, a {{name: length}} "
                            f"mapping or (name, length) pairs ({exc})") from None
    return out


def tile(chrom_sizes, size: int, *, hash_inputs: bool = True) -> BuildResult:
    """Genome-wide fixed-width bins ("tiles"): ``[0, size), [size, 2 size), …`` per chromosome.

    The last bin of a chromosome is clipped to its length; a chromosome of length 0 has none.
    Chromosomes come in natural order (see :func:`chrom_sort_key`), whatever the input order.

    Parameters
    ----------
    chrom_sizes
        A ``chrom.sizes`` path, a ``{name: length}`` mapping or ``(name, length)`` pairs
        (see :func:`read_chrom_sizes`).
    size
        Bin width in bp (>= 1).
    hash_inputs
        Record the sha256 of a ``chrom.sizes`` file in the report.

    Returns
    -------
    BuildResult
        ``(regions, report)``.

    Raises
    ------
    UniverseError
        For ``size < 1`` or more bins than token ids can hold (choose a larger ``size``).

    Examples
    --------
    >>> regions, report = tile({"chr2": 25, "chr1": 20}, 10)
    >>> regions.to_strings()
    ['chr1:0-10', 'chr1:10-20', 'chr2:0-10', 'chr2:10-20', 'chr2:20-25']
    """
    t0 = time.perf_counter()
    size = _check_int(size, "size", 1)
    pairs = read_chrom_sizes(chrom_sizes)
    pairs = sorted(pairs, key=lambda p: chrom_sort_key(p[0]))
    lengths = np.array([n for _, n in pairs], dtype=np.int64)
    n_bins = -(-lengths // size)
    total = int(n_bins.sum())
    if total > _MAX_REGIONS:
        raise UniverseError(f"{total:,} tiles of {size} bp are more than token ids can hold "
                            f"({_MAX_REGIONS:,}); choose a larger size")
    keep = n_bins > 0
    names = tuple(p[0] for p, k in zip(pairs, keep) if k)
    n_bins, lengths = n_bins[keep], lengths[keep]
    codes = np.repeat(np.arange(len(names), dtype=np.int32), n_bins)
    first = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(n_bins, out=first[1:])
    starts = (np.arange(total, dtype=np.int64) - np.repeat(first[:-1], n_bins)) * size
    ends = np.minimum(starts + size, np.repeat(lengths, n_bins))
    rs = RegionSet(names, codes, starts, ends, validate=False)
    if isinstance(chrom_sizes, (str, os.PathLike)):
        p = os.fspath(chrom_sizes)
        info: dict[str, Any] = {"path": p, "size": os.stat(p).st_size, "role": "chrom_sizes"}
        if hash_inputs:
            info["sha256"] = _io.file_digest(p)
        inputs = [info]
    else:
        inputs = []
    stats = {"n_chroms": len(names), "genome_size": int(lengths.sum())}
    return BuildResult(rs, _report("tile", {"size": size}, inputs, rs, t0, stats))


# ---------------------------------------------------------------------------- merge
def merge(inputs, min_gap: int = 0, *, progress: bool = False, quiet: bool = False,
          hash_inputs: bool = True, n_threads: int | None = None) -> BuildResult:
    """The union of all regions of many inputs, merged like ``bedtools merge -d min_gap``.

    Regions (of any input) on the same chromosome are merged when they overlap or lie within
    ``min_gap`` bp: sorted by start, a region joins the running one when
    ``start - running_end <= min_gap``. So touching (book-ended) regions merge with the
    default ``min_gap=0``, as in bedtools; a negative ``min_gap = -n`` merges only regions
    overlapping by at least ``n`` bp (``-1`` keeps book-ended regions apart; regions with equal
    starts are then taken shortest first).
    Zero-length regions are kept and merged like any other; bedtools instead widens a
    zero-length region by 1 bp on each side when it merges it with a neighbour.

    Parameters
    ----------
    inputs
        An iterable of inputs, each anything :func:`~genotok.regions.as_regions` accepts
        (BED/BED.gz paths, RegionSets, lists of strings or tuples, frames). A single path,
        RegionSet or frame is one input. Generators are fine (read once).
    min_gap
        Largest gap (bp) between regions that are still merged.
    progress
        Show a progress bar over the inputs (tqdm when installed, else a line on stderr).
    quiet
        No progress bar and no warnings.
    hash_inputs
        Record the sha256 of every input file in the report (``False`` skips the hashing).
    n_threads
        Reader threads and numba threads (``None``: numba's current thread count).

    Returns
    -------
    BuildResult
        ``(regions, report)``: merged regions in genomic order (natural chromosome order).

    Examples
    --------
    >>> regions, report = merge([["chr1:0-10", "chr2:5-8"], ["chr1:10-20", "chr1:30-40"]])
    >>> regions.to_strings()
    ['chr1:0-20', 'chr1:30-40', 'chr2:5-8']
    >>> merge([["chr1:0-10", "chr1:15-20"]], min_gap=5).regions.to_strings()
    ['chr1:0-20']
    """
    t0 = time.perf_counter()
    min_gap = _check_int(min_gap, "min_gap")
    table = _ChromTable()
    fold = _Fold(lambda c, s, e: _merge_arrays(c, s, e, min_gap))
    described = []
    with _config.threads(n_threads):
        for rs, info in _stream(inputs, hash_inputs=hash_inputs, progress=progress and not quiet,
                                desc="merge", n_threads=n_threads):
            described.append(info)
            fold.add(_merge_arrays(table.codes(rs), rs.starts, rs.ends, min_gap))
        codes, starts, ends = fold.result()
    out = _finish(table.names, codes, starts, ends)
    stats = {"n_inputs": len(described), "bp_covered": int((out.ends - out.starts).sum())}
    return BuildResult(out, _report("merge", {"min_gap": min_gap}, described, out, t0, stats))


# ---------------------------------------------------------------------------- coverage cutoff
def _fraction_count(fraction: float, n: int) -> int:
    """``ceil(fraction * n)`` computed on the decimal the user wrote (0.1 * 10 is 1, not 2)."""
    return int(-(-Fraction(repr(float(fraction))) * n // 1))


def coverage_cutoff(inputs, min_count: int | None = None, *, min_fraction: float | None = None,
                    min_width: int = 0, progress: bool = False, quiet: bool = False,
                    hash_inputs: bool = True, n_threads: int | None = None) -> BuildResult:
    """Consensus regions: maximal runs of positions covered by at least ``k`` input sets.

    Coverage counts *input sets*, not regions: each input is merged first, so regions
    overlapping within one input count once. All start/end events of all inputs are swept at
    once (streamed: the events are folded into compacted change points as inputs are read).
    Zero-length regions cover no position and add nothing.

    Parameters
    ----------
    inputs
        As for :func:`merge`.
    min_count
        ``k``: the minimum number of input sets covering a position (>= 1).
    min_fraction
        Instead of ``min_count``: ``k = ceil(min_fraction * n_inputs)`` (at least 1),
        with ``0 < min_fraction <= 1``. Give exactly one of the two.
    min_width
        Drop consensus regions narrower than this (bp).
    progress, quiet, hash_inputs, n_threads
        As for :func:`merge`. Without ``quiet`` a warning says when ``k`` exceeds the number
        of inputs (the result is then empty).

    Returns
    -------
    BuildResult
        ``(regions, report)``; ``report.stats`` has the effective ``min_count`` and the
        ``max_coverage`` seen.

    Examples
    --------
    >>> sets = [["chr1:0-100"], ["chr1:50-150", "chr1:60-70"], ["chr1:90-200"]]
    >>> coverage_cutoff(sets, 2).regions.to_strings()
    ['chr1:50-150']
    >>> coverage_cutoff(sets, min_fraction=1.0).regions.to_strings()
    ['chr1:90-100']
    """
    t0 = time.perf_counter()
    if (min_count is None) == (min_fraction is None):
        raise UniverseError("give exactly one of min_count (a number of input sets) and "
                            "min_fraction (a fraction of the inputs)")
    if min_count is not None:
        min_count = _check_int(min_count, "min_count", 1)
    else:
        try:
            f = float(min_fraction)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise UniverseError(f"min_fraction must be a number, got {min_fraction!r}") from None
        if not 0.0 < f <= 1.0:
            raise UniverseError(f"min_fraction must be in (0, 1], got {min_fraction!r}")
        min_fraction = f
    min_width = _check_int(min_width, "min_width", 0)
    table = _ChromTable()
    fold = _Fold(_compact_arrays)
    described = []
    with _config.threads(n_threads):
        for rs, info in _stream(inputs, hash_inputs=hash_inputs, progress=progress and not quiet,
                                desc="coverage", n_threads=n_threads):
            described.append(info)
            c, s, e = _merge_arrays(table.codes(rs), rs.starts, rs.ends, 0)
            nz = e > s
            c, s, e = c[nz], s[nz], e[nz]
            ones = np.ones(c.size, np.int64)
            fold.add((np.concatenate([c, c]), np.concatenate([s, e]),
                      np.concatenate([ones, -ones])))
        codes, pos, delta = fold.result()
        n = len(described)
        k = min_count if min_count is not None else max(1, _fraction_count(min_fraction, n))
        if k > n and not quiet:
            warnings.warn(f"min_count {k} is more than the {n} inputs: no position can be covered "
                          f"that often, the consensus is empty", UserWarning, stacklevel=2)
        oc, os_, oe = (np.empty(codes.size, np.int32), np.empty(codes.size, np.int64),
                       np.empty(codes.size, np.int64))
        m = _bk.runs_at_least(codes, pos, delta, np.int64(k), np.int64(min_width), oc, os_, oe)
    out = _finish(table.names, oc[:m], os_[:m], oe[:m])
    max_cov = int(np.cumsum(delta).max()) if delta.size else 0
    params: dict[str, Any] = {"min_count": min_count, "min_fraction": min_fraction,
                              "min_width": min_width}
    stats = {"n_inputs": n, "min_count": int(k), "max_coverage": max_cov,
             "bp_covered": int((out.ends - out.starts).sum())}
    return BuildResult(out, _report("coverage_cutoff", params, described, out, t0, stats))


# ---------------------------------------------------------------------------- top-k
def top_k(candidate, inputs, max_regions: int, *, min_hits: int = 1, progress: bool = False,
          quiet: bool = False, hash_inputs: bool = True,
          n_threads: int | None = None) -> BuildResult:
    """Vocabulary-size control: the ``max_regions`` candidate regions hit by the most input sets.

    A candidate region's hit count is the number of input sets with at least one region
    overlapping it, half-open as in the tokenizer: ``[s, e)`` and ``[qs, qe)`` overlap iff
    ``s < qe and e > qs`` (a zero-length input region strictly inside counts). Regions with
    fewer than ``min_hits`` hits are never kept. The top ``max_regions`` by count are kept,
    ties broken by genomic position (earlier first), and returned in genomic order.
    Exact duplicate candidate regions are counted and kept once. The overlap search uses the
    shared sweep kernels of :mod:`genotok.kernels.overlap` (the tokenizer's).

    Parameters
    ----------
    candidate
        The candidate universe: anything :func:`~genotok.regions.as_regions` accepts.
    inputs
        As for :func:`merge`.
    max_regions
        Vocabulary size (number of regions) to keep (>= 1).
    min_hits
        Minimum number of input sets hitting a kept region (>= 0; 0 lets never-hit regions
        fill up the vocabulary by position).
    progress, quiet, hash_inputs, n_threads
        As for :func:`merge`. Without ``quiet`` a warning says when fewer than
        ``max_regions`` candidates have ``min_hits`` hits.

    Returns
    -------
    BuildResult
        ``(regions, report)``; ``report.stats`` has ``n_candidates``, ``n_eligible`` and
        ``cutoff_hits`` (the hit count of the least-hit kept region).

    Examples
    --------
    >>> cand = ["chr1:0-10", "chr1:20-30", "chr2:0-10"]
    >>> sets = [["chr1:5-25"], ["chr1:25-26", "chr2:1-2"], ["chr2:3-4"]]
    >>> top_k(cand, sets, 2).regions.to_strings()
    ['chr1:20-30', 'chr2:0-10']
    """
    t0 = time.perf_counter()
    max_regions = _check_int(max_regions, "max_regions", 1)
    min_hits = _check_int(min_hits, "min_hits", 0)
    cand = as_regions(candidate)
    if len(cand) == 0:
        raise UniverseError(f"{cand.source or 'candidate'}: the candidate universe has no regions; "
                            "give regions to choose the vocabulary from")
    names = list(cand.chrom_names)
    nat = sorted(range(len(names)), key=lambda i: chrom_sort_key(names[i]))
    lut = np.empty(len(names), np.int32)
    lut[nat] = np.arange(len(names), dtype=np.int32)
    nat_names = [names[i] for i in nat]
    codes = lut[cand.codes] if len(cand) else np.zeros(0, np.int32)
    order = np.lexsort((cand.ends, cand.starts, codes))
    c, s, e = codes[order], cand.starts[order], cand.ends[order]
    dup = np.zeros(c.size, bool)
    if c.size > 1:
        dup[1:] = (c[1:] == c[:-1]) & (s[1:] == s[:-1]) & (e[1:] == e[:-1])
    c, s, e = (np.ascontiguousarray(x[~dup]) for x in (c, s, e))
    m = c.size
    # sorted and unique: id i of this universe is row i of (c, s, e), so hits index counts
    tok = Tokenizer(Universe(RegionSet(nat_names, c, s, e, validate=False)), unknown="drop",
                    order="input")
    index = {n: i for i, n in enumerate(nat_names)}
    counts = np.zeros(m, np.int64)
    described = []
    with _config.threads(n_threads):
        for rs, info in _stream(inputs, hash_inputs=hash_inputs, progress=progress and not quiet,
                                desc="top-k", n_threads=n_threads):
            described.append(info)
            n = len(rs)
            if n == 0 or m == 0:
                continue
            qlut = np.fromiter((index.get(x, -1) for x in rs.chrom_names), np.int32,
                               len(rs.chrom_names))
            out_ids = tok.encode_prepared([rs], [(qlut[rs.codes], np.arange(n, dtype=np.int64))],
                                          n_threads=n_threads).data
            counts[np.unique(out_ids)] += 1  # a set counts once per region
    eligible = np.flatnonzero(counts >= min_hits)
    best = np.lexsort((eligible, -counts[eligible]))[:max_regions]
    keep = np.sort(eligible[best])
    if keep.size < max_regions and not quiet:
        warnings.warn(f"only {keep.size:,} of {m:,} candidate regions are hit by >= {min_hits} "
                      f"input set(s); the vocabulary has {keep.size:,} regions, "
                      f"not {max_regions:,}",
                      UserWarning, stacklevel=2)
    out = _finish(nat_names, c[keep], s[keep], e[keep])
    cinfo = _describe(cand, hash_inputs)
    cinfo["n_unique"] = int(m)
    params = {"max_regions": max_regions, "min_hits": min_hits, "candidate": cinfo}
    stats = {"n_inputs": len(described), "n_candidates": int(m), "n_eligible": int(eligible.size),
             "cutoff_hits": int(counts[keep].min()) if keep.size else 0,
             "max_hits": int(counts.max()) if m else 0}
    return BuildResult(out, _report("top_k", params, described, out, t0, stats))


# ---------------------------------------------------------------------------- output
def sidecar_path(path: str | os.PathLike) -> Path:
    """The report written next to a universe BED: ``<path>.json`` (``u.bed`` -> ``u.bed.json``).

    Examples
    --------
    >>> sidecar_path("u.bed").name
    'u.bed.json'
    """
    p = Path(path)
    return p.with_name(p.name + ".json")


def bed_bytes(regions: RegionSet) -> bytes:
    """BED3 text of ``regions`` in row order (formatted by a numba kernel).

    Examples
    --------
    >>> from genotok import RegionSet
    >>> bed_bytes(RegionSet.from_strings(["chr1:5-10"]))
    b'chr1\\t5\\t10\\n'
    """
    rs = regions
    if len(rs) == 0:
        return b""
    encoded = [n.encode("utf-8") for n in rs.chrom_names]
    name_len = np.array([len(b) for b in encoded], dtype=np.int64)
    name_off = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(name_len, out=name_off[1:])
    joined = b"".join(encoded)
    names = np.frombuffer(joined, dtype=np.uint8) if joined else np.zeros(1, np.uint8)
    lens = np.empty(len(rs), dtype=np.int64)
    _bk.bed_line_lengths(rs.codes, rs.starts, rs.ends, name_len, lens)
    line_off = np.zeros(len(rs) + 1, dtype=np.int64)
    np.cumsum(lens, out=line_off[1:])
    buf = np.empty(int(line_off[-1]), dtype=np.uint8)
    _bk.fill_bed(rs.codes, rs.starts, rs.ends, names, name_off, line_off, buf)
    return buf.tobytes()


def _gzip(data: bytes) -> bytes:
    try:
        from isal import igzip

        return igzip.compress(data, compresslevel=2)
    except ImportError:  # pragma: no cover - depends on the environment
        return gzip.compress(data, compresslevel=6, mtime=0)


def write_universe(regions, path: str | os.PathLike,
                   report: BuildReport | Mapping | None = None, *,
                   overwrite: bool = False) -> Path:
    """Write a universe as BED3 (row order = token ids) and, with a report, a JSON sidecar.

    Both files are written atomically (a temporary name in the same folder, then renamed). A
    path ending in ``.gz`` is gzip-compressed. The sidecar ``<path>.json`` holds the report plus
    an ``output`` entry with the BED's name, region count and sha256.

    Parameters
    ----------
    regions
        A :class:`~genotok.regions.RegionSet` (or anything ``as_regions`` accepts), or a
        :class:`BuildResult` (its report is used when ``report`` is not given).
    path
        The BED file to write.
    report
        A :class:`BuildReport` or a JSON-ready mapping; ``None`` writes no sidecar.
    overwrite
        Replace an existing BED (and sidecar); by default an existing one raises
        :class:`FileExistsError`, as the corpus writers do.

    Returns
    -------
    pathlib.Path
        The BED path.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "tiles.bed")
    >>> write_universe(tile({"chr1": 15}, 10), out).name
    'tiles.bed'
    >>> Path(out).read_text()
    'chr1\\t0\\t10\\nchr1\\t10\\t15\\n'
    """
    if isinstance(regions, BuildResult):
        regions, report = regions.regions, (report if report is not None else regions.report)
    rs = as_regions(regions)
    bad = [n for n in rs.chrom_names if not n or any(ch.isspace() for ch in n)]
    if bad:
        raise UniverseError(f"chromosome name {bad[0]!r} is empty or contains whitespace and "
                            "cannot be written as BED; rename it")
    path = Path(path)
    if not overwrite:
        for p in (path, sidecar_path(path)) if report is not None else (path,):
            if os.path.lexists(p):
                raise FileExistsError(f"{p} exists; pass overwrite=True to replace it")
    payload = bed_bytes(rs)
    if path.name.endswith(".gz"):
        payload = _gzip(payload)
    with _io.atomic_write(path, "wb") as fh:
        fh.write(payload)
    if report is not None:
        d = report.as_dict() if isinstance(report, BuildReport) else dict(report)
        d["output"] = {"path": path.name, "n_regions": len(rs),
                       "sha256": hashlib.sha256(payload).hexdigest()}
        with _io.atomic_write(sidecar_path(path), "w") as fh:
            fh.write(json.dumps(d, indent=2) + "\n")
    return path


# ---------------------------------------------------------------------------- command line
def build_cli(argv: list[str] | None = None) -> int:
    """The ``genotok universe {tile,merge,consensus,top}`` commands (kept for old callers).

    Same as ``genotok.cli.main(["universe", *argv])``: the exit code is 0 on success, 2 on a
    usage error and 1 on a failure, with one ``genotok: error: …`` line on stderr.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> sizes = os.path.join(d, "g.sizes")
    >>> _ = Path(sizes).write_text("chr1\\t25\\n")
    >>> build_cli(["tile", "-q", "--chrom-sizes", sizes, "--size", "10", "-o", os.path.join(d, "t.bed")])
    0
    >>> Path(d, "t.bed").read_text().splitlines()[-1]
    'chr1\\t20\\t25'
    """
    from ..cli.main import main

    return main(["universe", *(sys.argv[1:] if argv is None else argv)])
