"""Region sets: chromosome codes, starts and ends as arrays, from any input people have.

A :class:`RegionSet` is the compact form every other room works on. Chromosome codes are given
in order of first appearance, so the same regions in the same order give identical arrays
whatever they were read from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

import numpy as np

from . import _io, _parse
from .errors import BedParseError, RegionParseError

_SEPS = {":": ":", "-": "-", "_": "_"}
_AUTO = re.compile(r"^(.+)[:_-]([0-9][0-9,]*)[_-]([0-9][0-9,]*)$")


def _pattern(sep: str | None) -> re.Pattern:
    if sep is None:
        return _AUTO
    if sep not in _SEPS:
        raise ValueError(f"sep must be None, ':', '-' or '_', got {sep!r}")
    inner = "-" if sep == ":" else re.escape(sep)
    return re.compile(rf"^(.+){re.escape(sep)}([0-9][0-9,]*){inner}([0-9][0-9,]*)$")


def _codes_first_appearance(chroms: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    if chroms.size == 0:
        return np.zeros(0, np.int32), ()
    uniq, first, inverse = np.unique(chroms, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    remap = np.empty(order.size, np.int32)
    remap[order] = np.arange(order.size, dtype=np.int32)
    names = tuple(str(x.decode() if isinstance(x, bytes) else x) for x in uniq[order])
    return remap[inverse.ravel()], names


def _int_coords(values, what: str) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise RegionParseError(f"{what} must be one-dimensional, got shape {a.shape}")
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.round(a))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RegionParseError(f"{what}[{i}] = {a[i]!r} is not an integer coordinate")
        return a.astype(np.int64)
    try:
        return np.array([int(x) for x in a], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        for i, x in enumerate(a):
            try:
                int(x)
            except (TypeError, ValueError, OverflowError):
                raise RegionParseError(f"{what}[{i}] = {x!r} is not an integer coordinate") from None
        raise


class RegionSet:
    """Genomic regions as arrays: ``chrom_names[codes[i]]``, ``[starts[i], ends[i])``.

    Parameters
    ----------
    chrom_names
        Chromosome name of each code.
    codes, starts, ends
        int32 codes and int64 0-based half-open coordinates, one per region, in input order.
    source
        The file the regions came from (for messages and manifests), or ``None``.
    from_file
        True when parsed from a BED file (gtars sorts file queries before tokenizing).

    Examples
    --------
    >>> rs = RegionSet.from_strings(["chr1:100-200", "chrUn_KI270742v1_5_10"])
    >>> rs.chrom_names, rs.starts.tolist(), rs.ends.tolist()
    (('chr1', 'chrUn_KI270742v1'), [100, 5], [200, 10])
    """

    __slots__ = ("chrom_names", "codes", "starts", "ends", "source", "from_file")

    def __init__(self, chrom_names, codes, starts, ends, source: str | None = None,
                 from_file: bool = False, *, validate: bool = True):
        self.chrom_names = tuple(chrom_names)
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.starts = np.ascontiguousarray(starts, dtype=np.int64)
        self.ends = np.ascontiguousarray(ends, dtype=np.int64)
        self.source = None if source is None else str(source)
        self.from_file = bool(from_file)
        if validate:
            self._validate()

    def _validate(self) -> None:
        n = self.codes.size
        if not (self.starts.size == self.ends.size == n):
            raise RegionParseError(f"codes, starts and ends differ in length "
                                   f"({n}, {self.starts.size}, {self.ends.size})")
        if n == 0:
            return
        if self.codes.min() < 0 or self.codes.max() >= len(self.chrom_names):
            raise RegionParseError("chromosome codes out of range of chrom_names")
        where = f"{self.source}: " if self.source else ""
        for bad, msg in ((self.starts < 0, "negative start"),
                         (self.ends < self.starts, "end is before start")):
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise RegionParseError(
                    f"{where}region {i} ({self._str(i)}): {msg}")

    def _str(self, i: int) -> str:
        return f"{self.chrom_names[self.codes[i]]}:{int(self.starts[i])}-{int(self.ends[i])}"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_bed(cls, path: str | os.PathLike) -> "RegionSet":
        """Parse a BED / BED.gz file (any number of columns >= 3).

        Raises :class:`BedParseError` naming the file and line for malformed input.
        """
        p = os.fspath(path)
        buf = _io.read_bytes(p)
        return cls._from_buffer(buf, p)

    @classmethod
    def _from_buffer(cls, buf: np.ndarray, path: str) -> "RegionSet":
        chunks = _split_lines(buf, _parse_threads(buf.size))
        if len(chunks) == 1:
            results = [_parse.run(buf)]
        else:  # the parser releases the GIL: chunks parse side by side
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(chunks)) as pool:
                results = list(pool.map(lambda ab: _parse.run(buf[ab[0]:ab[1]], ab[0] == 0), chunks))
        seen_data = False
        for (a, _), (codes, _, _, _, _, status, line, pos, header) in zip(chunks, results):
            if status != _parse.OK:
                if a and not seen_data:  # maybe the file's header: only a serial parse can tell
                    results, chunks = [_parse.run(buf)], [(0, buf.size)]
                    status, line, pos = (int(x) for x in results[0][5:8])
                    if status == _parse.OK:
                        break
                    a = 0
                _raise_parse_error(buf, path, int(status), int(line), int(pos), a)
            seen_data = seen_data or codes.size > 0 or header > 0
        names: list[str] = []
        index: dict[str, int] = {}
        parts_codes = []
        for (a, _), (codes, _, _, ns, ne, *_rest) in zip(chunks, results):
            remap = np.empty(ns.size, dtype=np.int32)
            for c in range(ns.size):
                raw = buf[a + ns[c]:a + ne[c]].tobytes()
                try:
                    name = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line_no = int(np.count_nonzero(buf[:a + ns[c]] == 10)) + 1
                    raise BedParseError(path, line_no, f"chromosome name {raw!r} is not valid UTF-8") from None
                remap[c] = index.setdefault(name, len(index))
                if remap[c] == len(names):
                    names.append(name)
            parts_codes.append(remap[codes] if codes.size else codes)
        if len(results) == 1:
            r = results[0]
            return cls(names, parts_codes[0], r[1], r[2], source=path, from_file=True, validate=False)
        return cls(names, np.concatenate(parts_codes), np.concatenate([r[1] for r in results]),
                   np.concatenate([r[2] for r in results]), source=path, from_file=True,
                   validate=False)

    @classmethod
    def from_strings(cls, strings, *, sep: str | None = None, one_based: bool = False) -> "RegionSet":
        """Regions from strings ``chr1:100-200``, ``chr1-100-200`` or ``chr1_100_200``."""
        return parse_region_strings(strings, sep=sep, one_based=one_based)

    @classmethod
    def from_tuples(cls, tuples) -> "RegionSet":
        """Regions from ``(chrom, start, end, ...)`` tuples (extra items are ignored)."""
        index: dict[str, int] = {}
        codes, starts, ends = [], [], []
        for i, t in enumerate(tuples):
            try:
                c, s, e = t[0], t[1], t[2]
            except (TypeError, IndexError, KeyError):
                raise RegionParseError(f"region {i} ({t!r}) is not a (chrom, start, end) tuple") from None
            if isinstance(c, bytes):
                c = c.decode()
            codes.append(index.setdefault(str(c), len(index)))
            starts.append(s)
            ends.append(e)
        return cls(tuple(index), np.asarray(codes, np.int32),
                   _int_coords(np.asarray(starts, dtype=object) if starts else [], "start"),
                   _int_coords(np.asarray(ends, dtype=object) if ends else [], "end"))

    @classmethod
    def from_arrays(cls, chroms, starts, ends, *, source: str | None = None) -> "RegionSet":
        """Regions from three parallel arrays (chromosome names as str, object or bytes)."""
        chroms = np.asarray(chroms)
        if chroms.dtype.kind not in "USO" and chroms.size:
            raise RegionParseError(f"chromosome names must be strings, got dtype {chroms.dtype}")
        s, e = _int_coords(starts, "start"), _int_coords(ends, "end")
        if not (chroms.size == s.size == e.size):
            raise RegionParseError(f"chroms, starts and ends differ in length "
                                   f"({chroms.size}, {s.size}, {e.size})")
        if chroms.dtype.kind == "O":
            chroms = np.array([x.decode() if isinstance(x, bytes) else str(x) for x in chroms],
                              dtype=object)
        codes, names = _codes_first_appearance(chroms)
        return cls(names, codes, s, e, source=source)

    @classmethod
    def from_frame(cls, frame) -> "RegionSet":
        """Regions from a data frame or mapping with chrom/start/end columns (any common name)."""
        cols = {str(k).lower(): k for k in (frame.columns if hasattr(frame, "columns") else frame.keys())}

        def pick(options, what):
            for o in options:
                if o.lower() in cols:
                    return np.asarray(frame[cols[o.lower()]])
            raise RegionParseError(f"no {what} column: expected one of {list(options)}, "
                                   f"found {list(cols.values())}")

        return cls.from_arrays(pick(("chrom", "chr", "seqnames", "chromosome", "seqname"), "chromosome"),
                               pick(("start", "chromStart"), "start"),
                               pick(("end", "chromEnd", "stop"), "end"))

    @classmethod
    def empty(cls) -> "RegionSet":
        return cls((), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64))

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return int(self.codes.size)

    def chrom_of(self, i: int) -> str:
        """Chromosome name of region ``i``."""
        return self.chrom_names[self.codes[i]]

    def take(self, indices) -> "RegionSet":
        """The regions at ``indices`` (or a boolean mask), same chromosome table."""
        idx = np.asarray(indices)
        return RegionSet(self.chrom_names, self.codes[idx], self.starts[idx], self.ends[idx],
                         self.source, self.from_file, validate=False)

    def to_strings(self) -> list[str]:
        """``["chr1:100-200", ...]`` (the gtars token strings)."""
        names = self.chrom_names
        return [f"{names[c]}:{s}-{e}" for c, s, e in
                zip(self.codes.tolist(), self.starts.tolist(), self.ends.tolist())]

    def __eq__(self, other) -> bool:
        if not isinstance(other, RegionSet):
            return NotImplemented
        if len(self) != len(other):
            return False
        mine = np.asarray(self.chrom_names, dtype=object)[self.codes] if len(self) else []
        theirs = np.asarray(other.chrom_names, dtype=object)[other.codes] if len(other) else []
        return (np.array_equal(self.starts, other.starts) and np.array_equal(self.ends, other.ends)
                and list(mine) == list(theirs))

    __hash__ = None

    def __repr__(self) -> str:
        src = f", source={os.path.basename(self.source)!r}" if self.source else ""
        head = ", ".join(self._str(i) for i in range(min(3, len(self))))
        more = ", …" if len(self) > 3 else ""
        return f"RegionSet({len(self):,} regions on {len(self.chrom_names)} chromosomes{src}: [{head}{more}])"


PARALLEL_PARSE_BYTES = 8 << 20  # below this, one thread parses faster than two start


def _parse_threads(n_bytes: int) -> int:
    import numba

    if n_bytes < PARALLEL_PARSE_BYTES:
        return 1
    return max(1, min(numba.get_num_threads(), n_bytes // (PARALLEL_PARSE_BYTES // 2)))


def _split_lines(buf: np.ndarray, k: int) -> list[tuple[int, int]]:
    """``k`` byte ranges covering ``buf``, each ending just after a newline (or at the end)."""
    n = buf.size
    cuts = [0]
    for i in range(1, k):
        target = max(cuts[-1], i * n // k)
        nl = np.flatnonzero(buf[target:min(n, target + (1 << 20))] == 10)
        if nl.size == 0:
            break
        cuts.append(target + int(nl[0]) + 1)
    cuts.append(n)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a] or [(0, n)]


def _raise_parse_error(buf, path, status, line, pos, offset):
    """A BedParseError for a kernel status in the chunk starting at byte ``offset``."""
    line += int(np.count_nonzero(buf[:offset] == 10)) if offset else 0
    pos += offset
    nul = np.flatnonzero(buf[:8192] == 0)
    if nul.size and status != _parse.BINARY:  # the real trouble: not a text file at all
        status, pos = _parse.BINARY, int(nul[0])
        line = int(np.count_nonzero(buf[:pos] == 10)) + 1
    raise BedParseError(path, line, f"{_parse.MESSAGES[status]}: {_line_text(buf, pos)}")


def _line_text(buf: np.ndarray, pos: int) -> str:
    if pos < 0:
        return ""
    lo = pos
    while lo > 0 and buf[lo - 1] != 10:
        lo -= 1
    hi = pos
    while hi < buf.size and buf[hi] != 10 and hi - lo < 200:
        hi += 1
    text = buf[lo:hi].tobytes()
    return repr(text[:80] + (b"..." if len(text) > 80 else b""))[1:]


def parse_region_strings(strings, *, sep: str | None = None, one_based: bool = False) -> RegionSet:
    """Parse ``chr:start-end`` style strings into a :class:`RegionSet`, from the right.

    Parameters
    ----------
    strings
        Strings like ``chr1:100-200`` (10x, SnapATAC2), ``chr1-100-200`` (Signac) or
        ``chr1_100_200`` (episcanpy). Contig names may contain ``_``, ``-`` or ``:``
        (``chrUn_KI270742v1``, ``HLA-A*01:01``): the last two numbers are the coordinates.
        Thousands separators (``chr1:1,000-2,000``) are accepted.
    sep
        ``None`` detects the convention per string; ``":"``, ``"-"`` or ``"_"`` forces one.
    one_based
        Names from R are often 1-based closed: ``chr1:101-200`` then means ``[100, 200)``.

    Raises
    ------
    RegionParseError
        Listing the first few strings that do not parse, with their positions.

    Examples
    --------
    >>> parse_region_strings(["chr1-100-200", "chr2_5_10"]).to_strings()
    ['chr1:100-200', 'chr2:5-10']
    """
    pat = _pattern(sep)
    strings = list(strings)
    matches = [pat.match(s) if isinstance(s, str) else None for s in strings]
    bad = [i for i, m in enumerate(matches) if m is None]
    if bad:
        shown = ", ".join(f"[{i}] {strings[i]!r}" for i in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        conv = "chr:start-end, chr-start-end or chr_start_end" if sep is None else f"separator {sep!r}"
        raise RegionParseError(f"{len(bad)} of {len(strings)} region strings do not parse as "
                               f"{conv}: {shown}{more}")
    if not strings:
        return RegionSet.empty()
    chroms = np.array([m.group(1) for m in matches], dtype=object)
    starts = np.array([int(m.group(2).replace(",", "")) for m in matches], dtype=np.int64)
    ends = np.array([int(m.group(3).replace(",", "")) for m in matches], dtype=np.int64)
    if one_based:
        starts -= 1
        if (starts < 0).any():
            i = int(np.flatnonzero(starts < 0)[0])
            raise RegionParseError(f"[{i}] {strings[i]!r}: a 1-based start must be >= 1")
    codes, names = _codes_first_appearance(chroms)
    return RegionSet(names, codes, starts, ends)


def as_regions(obj) -> RegionSet:
    """Any region input as a :class:`RegionSet`.

    Accepts a RegionSet; a path (str or PathLike) to a BED/BED.gz file; one region string; a
    list of region strings; a list of ``(chrom, start, end)`` tuples; a tuple of three arrays
    ``(chroms, starts, ends)``; a pandas data frame or a mapping of columns.

    Examples
    --------
    >>> as_regions([("chr1", 5, 10)]).to_strings()
    ['chr1:5-10']
    >>> as_regions("chr2:1-2").chrom_names
    ('chr2',)
    """
    if isinstance(obj, RegionSet):
        return obj
    if isinstance(obj, os.PathLike):
        return RegionSet.from_bed(obj)
    if isinstance(obj, str):
        if os.path.exists(obj) or not _AUTO.match(obj):
            return RegionSet.from_bed(obj)  # a file (or a clear "no such file" error)
        return parse_region_strings([obj])
    if hasattr(obj, "columns") or isinstance(obj, Mapping):
        return RegionSet.from_frame(obj)
    if isinstance(obj, tuple) and len(obj) == 3 and all(hasattr(x, "__len__") and not isinstance(x, str) for x in obj):
        return RegionSet.from_arrays(*obj)
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "USO" and obj.ndim == 1:
        return parse_region_strings(obj.tolist())
    if isinstance(obj, Sequence) or isinstance(obj, np.ndarray):
        items = list(obj)
        if not items:
            return RegionSet.empty()
        if all(isinstance(x, str) for x in items):
            return parse_region_strings(items)
        return RegionSet.from_tuples(items)
    raise RegionParseError(f"cannot read regions from a {type(obj).__name__}; give a BED path, "
                           "region strings, (chrom, start, end) tuples, arrays or a data frame")
