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

The natural chromosome order and the streaming fold are in :mod:`genotok.build.streaming`;
the report and the writer in :mod:`genotok.build.report`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _config, _io
from .._usage import warn
from ..errors import BedParseError, GenotokError, UniverseError
from ..kernels import build as _bk
from ..kernels.names import MAX_COORD
from ..params import N_THREADS, Flag, InstanceOf, Integral, Interval, Real, Unchecked, validated
from ..regions import RegionSet, as_regions
from ..tokenizer import Tokenizer, TokenizerSettings
from ..universe import Universe
from .report import BuildResult, _report
from .streaming import (
    _MAX_REGIONS,
    _check_int,
    _ChromTable,
    _compact_arrays,
    _describe,
    _finish,
    _Fold,
    _merge_arrays,
    _stream,
    chrom_sort_key,
)

__all__ = ["CONSTRAINTS", "coverage_cutoff", "merge", "read_chrom_sizes", "tile", "top_k"]

#: region sets: BED paths, RegionSets or anything :func:`~genotok.as_regions` reads (checked
#: by the streaming reader, which says what is wrong with an item)
_INPUTS = [Unchecked("region sets, each read by the streaming reader")]
_COMMON = {"progress": [Flag()], "hash_inputs": [Flag()], "n_threads": N_THREADS}

#: Each builder's parameter constraints (:func:`genotok.params.validated`).
CONSTRAINTS = {
    "tile": {"chrom_sizes": [InstanceOf(str, os.PathLike, Mapping, Iterable)],
             "size": [Interval(Integral, 1, None)], "hash_inputs": [Flag()]},
    "merge": {"inputs": _INPUTS, "min_gap": [Interval(Integral)], **_COMMON},
    "coverage_cutoff": {"inputs": _INPUTS, "min_inputs": [Interval(Integral, 1, None), None],
                        "min_input_fraction": [Interval(Real, 0, 1, closed="right"), None],
                        "min_width": [Interval(Integral, 0, None)], **_COMMON},
    "top_k": {"candidate": [Unchecked("a region set, read by as_regions")], "inputs": _INPUTS,
              "max_regions": [Interval(Integral, 1, None)],
              "min_inputs": [Interval(Integral, 0, None)], **_COMMON},
}


# ---------------------------------------------------------------------------- tile
@validated({"chrom_sizes": [InstanceOf(str, os.PathLike, Mapping, Iterable)]},
           error=UniverseError)
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
        for no, line in enumerate(text.split("\n"), start=1):  # (splitlines also splits
            # at form feeds, \x1c-\x1e and \x85: the line numbers were not the file's)
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) < 2:
                raise BedParseError(path, no, f"expected 'name<TAB>length', got {line[:80]!r}")
            name, length = fields[0], fields[1]
            if not (length.isascii() and length.isdigit()):
                raise BedParseError(path, no, f"length {length!r} of {name} is not a "
                                    "non-negative integer")
            if len(length) > 19 or int(length) > MAX_COORD:  # (numpy's OverflowError later;
                # int() refuses more than 4,300 digits with a ValueError)
                raise BedParseError(path, no, f"length {length[:40]} of {name} is larger than "
                                    "2^62")
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


@validated(CONSTRAINTS["tile"], error=UniverseError)
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
    size = int(size)
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
@validated(CONSTRAINTS["merge"], error=UniverseError)
def merge(inputs, min_gap: int = 0, *, progress: bool = False,
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
        Show a progress bar over the inputs.
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
    min_gap = int(min_gap)
    table = _ChromTable()
    fold = _Fold(lambda c, s, e: _merge_arrays(c, s, e, min_gap))
    described = []
    with _config.threads(n_threads):
        for rs, info in _stream(inputs, hash_inputs=hash_inputs, progress=progress,
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


@validated(CONSTRAINTS["coverage_cutoff"], error=UniverseError)
def coverage_cutoff(inputs, min_inputs: int | None = None, *,
                    min_input_fraction: float | None = None, min_width: int = 0,
                    progress: bool = False, hash_inputs: bool = True,
                    n_threads: int | None = None) -> BuildResult:
    """Consensus regions: maximal runs of positions covered by at least ``k`` input sets.

    Coverage counts *input sets*, not regions: each input is merged first, so regions
    overlapping within one input count once. All start/end events of all inputs are swept at
    once (streamed: the events are folded into compacted change points as inputs are read).
    Zero-length regions cover no position and add nothing.

    Parameters
    ----------
    inputs
        As for :func:`merge`.
    min_inputs
        ``k``: the minimum number of input sets covering a position (>= 1).
    min_input_fraction
        Instead of ``min_inputs``: ``k = ceil(min_input_fraction * n_inputs)`` (at least 1),
        with ``0 < min_input_fraction <= 1``. Give exactly one of the two.
    min_width
        Drop consensus regions narrower than this (bp).
    progress, hash_inputs, n_threads
        As for :func:`merge`. A warning says when ``k`` exceeds the number of inputs (the
        result is then empty).

    Returns
    -------
    BuildResult
        ``(regions, report)``; ``report.stats`` has the effective ``k`` (as ``min_count``,
        the report's key) and the ``max_coverage`` seen.

    Examples
    --------
    >>> sets = [["chr1:0-100"], ["chr1:50-150", "chr1:60-70"], ["chr1:90-200"]]
    >>> coverage_cutoff(sets, 2).regions.to_strings()
    ['chr1:50-150']
    >>> coverage_cutoff(sets, min_input_fraction=1.0).regions.to_strings()
    ['chr1:90-100']
    """
    t0 = time.perf_counter()
    if (min_inputs is None) == (min_input_fraction is None):
        raise UniverseError("give exactly one of min_inputs (a number of input sets) and "
                            "min_input_fraction (a fraction of the inputs)")
    if min_inputs is not None:
        min_inputs = int(min_inputs)
    else:
        min_input_fraction = float(min_input_fraction)  # type: ignore[arg-type]
    min_width = int(min_width)
    table = _ChromTable()
    fold = _Fold(_compact_arrays)
    described = []
    with _config.threads(n_threads):
        for rs, info in _stream(inputs, hash_inputs=hash_inputs, progress=progress,
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
        k = (min_inputs if min_inputs is not None
             else max(1, _fraction_count(min_input_fraction, n)))
        if k > n:
            warn(f"min_inputs {k} is more than the {n} inputs: no position can be covered "
                 "that often, the consensus is empty")
        oc, os_, oe = (np.empty(codes.size, np.int32), np.empty(codes.size, np.int64),
                       np.empty(codes.size, np.int64))
        m = _bk.runs_at_least(codes, pos, delta, np.int64(k), np.int64(min_width), oc, os_, oe)
    out = _finish(table.names, oc[:m], os_[:m], oe[:m])
    max_cov = int(np.cumsum(delta).max()) if delta.size else 0
    # the report's keys are the sidecar's format (BuildReport.read): they keep their names
    params: dict[str, Any] = {"min_count": min_inputs, "min_fraction": min_input_fraction,
                              "min_width": min_width}
    stats = {"n_inputs": n, "min_count": int(k), "max_coverage": max_cov,
             "bp_covered": int((out.ends - out.starts).sum())}
    return BuildResult(out, _report("coverage_cutoff", params, described, out, t0, stats))


# ---------------------------------------------------------------------------- top-k
@validated(CONSTRAINTS["top_k"], error=UniverseError)
def top_k(candidate, inputs, max_regions: int, *, min_inputs: int = 1, progress: bool = False,
          hash_inputs: bool = True, n_threads: int | None = None) -> BuildResult:
    """Vocabulary-size control: the ``max_regions`` candidate regions hit by the most input sets.

    A candidate region's hit count is the number of input sets with at least one region
    overlapping it, half-open as in the tokenizer: ``[s, e)`` and ``[qs, qe)`` overlap iff
    ``s < qe and e > qs`` (a zero-length input region strictly inside counts). Regions with
    fewer than ``min_inputs`` hits are never kept. The top ``max_regions`` by count are kept,
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
    min_inputs
        Minimum number of input sets hitting a kept region (>= 0; 0 lets never-hit regions
        fill up the vocabulary by position).
    progress, hash_inputs, n_threads
        As for :func:`merge`. A warning says when fewer than ``max_regions`` candidates have
        ``min_inputs`` hits.

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
    max_regions, min_inputs = int(max_regions), int(min_inputs)
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
    tok = Tokenizer(Universe(RegionSet(nat_names, c, s, e, validate=False)),
                    settings=TokenizerSettings(unknown="drop", order="input"))
    index = {n: i for i, n in enumerate(nat_names)}
    counts = np.zeros(m, np.int64)
    described = []
    with _config.threads(n_threads):
        for rs, info in _stream(inputs, hash_inputs=hash_inputs, progress=progress,
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
    eligible = np.flatnonzero(counts >= min_inputs)
    best = np.lexsort((eligible, -counts[eligible]))[:max_regions]
    keep = np.sort(eligible[best])
    if keep.size < max_regions:
        why = (f"the candidates hold {m:,} distinct regions" if keep.size == m else
               f"only {keep.size:,} of the {m:,} candidate regions are hit by >= {min_inputs} "
               "input set(s)")
        warn(f"{why}: the vocabulary has {keep.size:,} regions, not {max_regions:,}")
    out = _finish(nat_names, c[keep], s[keep], e[keep])
    cinfo = _describe(cand, hash_inputs)
    cinfo["n_unique"] = int(m)
    # the report's keys are the sidecar's format (BuildReport.read): they keep their names
    params = {"max_regions": max_regions, "min_hits": min_inputs, "candidate": cinfo}
    stats = {"n_inputs": len(described), "n_candidates": int(m), "n_eligible": int(eligible.size),
             "cutoff_hits": int(counts[keep].min()) if keep.size else 0,
             "max_hits": int(counts.max()) if m else 0}
    return BuildResult(out, _report("top_k", params, described, out, t0, stats))
