"""Region sets: chromosome codes, starts and ends as arrays, from any input people have.

A :class:`RegionSet` is the compact form every other room works on. Chromosome codes are given
in order of first appearance, so the same regions in the same order give identical arrays
whatever they were read from.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Mapping

import numpy as np

from . import bed as _bed
from ._usage import warn
from .errors import BedParseError, RegionParseError
from .kernels import names as _names
from .kernels import parse as _parse
from .params import Flag, HasAttr, InstanceOf, Options, Unchecked, validated

_NUM = r"([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)"  # 1234 or 1,234 (thousands separators)
# auto: chrom<:-_>start<-_>end, from the right (the contig name may contain any of these)
_AUTO = re.compile(rf"(.+)[:_-]{_NUM}[_-]{_NUM}")
_FORCED = {":": re.compile(rf"(.+):{_NUM}-{_NUM}"),
           "-": re.compile(rf"(.+)-{_NUM}-{_NUM}"),
           "_": re.compile(rf"(.+)_{_NUM}_{_NUM}")}
#: what a region string's separator may be forced to (``sep``, ``var_names_sep``): one of
#: ``_FORCED``'s, or None to detect it per string
SEP = [Options(*_FORCED), None]


#: what a line whose end is before its start becomes (:meth:`RegionSet.from_bed`)
REVERSED = [Options("error", "drop", "keep")]
#: any region input (:func:`as_regions` reads it and names what it cannot read)
REGIONS = [Unchecked("a region input, read by as_regions")]


def _pattern(sep: str | None) -> re.Pattern:
    return _AUTO if sep is None else _FORCED[sep]


def _codes_first_appearance(chroms: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """int32 codes in order of first appearance for an array of names (str, or UTF-8 bytes).

    A dict over the names (``np.unique`` on objects sorts: slower, see benchmarks/RESULTS.md).
    """
    if chroms.size == 0:
        return np.zeros(0, np.int32), ()
    index: dict = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in chroms.tolist()),
                        dtype=np.int32, count=chroms.size)
    names = []
    for k in index:
        if isinstance(k, bytes):
            try:
                k = k.decode("utf-8")
            except UnicodeDecodeError:
                i = int(np.flatnonzero(codes == len(names))[0])
                raise RegionParseError(f"chromosome [{i}] {k!r} is not valid UTF-8") from None
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            k = str(k)
        elif not isinstance(k, str):
            i = int(np.flatnonzero(codes == len(names))[0])
            raise RegionParseError(f"chromosome [{i}] is {k!r} ({type(k).__name__}), "
                                   "not a name: give chromosome names as strings")
        if not k:
            i = int(np.flatnonzero(codes == len(names))[0])
            raise RegionParseError(f"chromosome [{i}] is an empty name")
        names.append(k)
    if len(set(names)) != len(names):  # b"chr1" and "chr1" in one object array
        seen: dict[str, int] = {}
        remap = np.array([seen.setdefault(x, len(seen)) for x in names], dtype=np.int32)
        return remap[codes], tuple(seen)
    return codes, tuple(names)


def _object_array(items: list) -> np.ndarray:
    """A 1-d object array of ``items`` as they are (``np.asarray`` would make tuples 2-d)."""
    a = np.empty(len(items), dtype=object)
    a[:] = items
    return a


def _int_coords(values, what: str) -> np.ndarray:
    """int64 coordinates from any 1-d array-like of integers (or integral floats/strings)."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise RegionParseError(f"{what}s must be one-dimensional, got shape {a.shape}")
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.dtype.kind in "iu":
        if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.max() > _parse.MAX_COORD:
            i = int(np.argmax(a))
            raise RegionParseError(f"{what}[{i}] = {a[i]} is larger than 2^62")
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.round(a)) | (np.abs(a) > _parse.MAX_COORD)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RegionParseError(f"{what}[{i}] = {a[i].item()!r} is not an integer coordinate")
        return a.astype(np.int64)
    if a.dtype.kind == "b":
        raise RegionParseError(f"{what}s are booleans ({a[:3].tolist()}...), not coordinates")
    out = np.empty(a.size, np.int64)
    for i, x in enumerate(a.tolist()):
        v = _one_int(x)
        if v is None:
            raise RegionParseError(f"{what}[{i}] = {x!r} is not an integer coordinate")
        out[i] = v
    return out


def _one_int(x) -> int | None:
    """``x`` as an int when it is one (int, integral float, decimal string); else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        v = x
    elif isinstance(x, float):
        if not (x == x and abs(x) != float("inf") and x == int(x)):
            return None
        v = int(x)
    elif isinstance(x, (str, bytes)):
        try:
            v = int(x)
        except ValueError:
            return None
    else:
        try:
            v = int(operator.index(x))
        except TypeError:
            return None
    return v if abs(v) <= _parse.MAX_COORD else None


#: the column names a region table may use (matched case-insensitively, first match wins), for
#: every reader of tables: data frames, mappings of columns, AnnData ``var``
REGION_COLUMNS = {"chromosome": ("chrom", "chr", "seqnames", "chromosome", "seqname"),
                  "start": ("start", "chromStart"),
                  "end": ("end", "chromEnd", "stop")}


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
                         (self.ends < self.starts, "end is before start"),
                         (self.ends > _parse.MAX_COORD, "coordinate larger than 2^62")):
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise RegionParseError(
                    f"{where}region {i} ({self._str(i)}): {msg}")

    def _str(self, i: int) -> str:
        return f"{self.chrom_names[self.codes[i]]}:{int(self.starts[i])}-{int(self.ends[i])}"

    # ------------------------------------------------------------------ constructors
    @classmethod
    @validated({"path": [InstanceOf(str, os.PathLike)], "reversed": REVERSED},
               "RegionSet.from_bed")
    def from_bed(cls, path: str | os.PathLike, *, reversed: str = "error") -> "RegionSet":
        """Parse a BED / BED.gz file (any number of columns >= 3; rules in ``genotok.kernels.parse``).

        Files of more than 8 MiB of text are read a block of 8 MiB at a time (gzip: inflated
        a block at a time), each block parsed in chunks on all numba threads while the next
        is read: memory is the regions (20 bytes each) and two blocks, not the file.

        ``reversed`` says what a line whose end is before its start becomes: ``"error"``
        (default) refuses the file; ``"drop"`` leaves such lines out with one warning naming
        the file and the first such line (what a query file gets when a
        :class:`~genotok.Tokenizer` reads it: gtars tokenizes such a file and those lines hit
        nothing); ``"keep"`` keeps them as they are (for universes gtars accepted, see
        :class:`genotok.universe.Universe`).

        Raises
        ------
        BedParseError
            Naming the file and the 1-based line, with the offending line shown.

        Examples
        --------
        >>> import tempfile, os, pathlib
        >>> p = os.path.join(tempfile.mkdtemp(), "peaks.bed")
        >>> _ = pathlib.Path(p).write_text("track name=x\\nchr1\\t10\\t20\\tpeak1\\t.\\n")
        >>> RegionSet.from_bed(p).to_strings()
        ['chr1:10-20']
        """
        p = os.fspath(path)
        try:  # the strict parse first: a well-formed file costs nothing extra
            names, codes, starts, ends = _bed._read_file(p)
            return cls(names, codes, starts, ends, source=p, from_file=True, validate=False)
        except BedParseError as exc:
            if reversed == "error" or not exc.problem.startswith(
                    _parse.MESSAGES[_parse.END_BEFORE_START]):
                raise
            first_line = exc.line
        names, codes, starts, ends = _bed._read_file(p, allow_reversed=True)
        rs = cls(names, codes, starts, ends, source=p, from_file=True, validate=False)
        if reversed == "drop":
            bad = rs.ends < rs.starts
            warn(
                f"{p}:{first_line}: {int(bad.sum())} line(s) with end before start (first: "
                f"{rs._str(int(np.flatnonzero(bad)[0]))}) hit nothing, as in gtars; strict=True "
                "refuses such a file")
            rs = rs.take(~bad)
        return rs

    @classmethod
    def from_strings(cls, strings, *, sep: str | None = None, one_based: bool = False) -> "RegionSet":
        """Regions from strings ``chr1:100-200``, ``chr1-100-200`` or ``chr1_100_200``.

        See :func:`parse_region_strings` (this is it).
        """
        return parse_region_strings(strings, sep=sep, one_based=one_based)

    @classmethod
    def from_tuples(cls, tuples) -> "RegionSet":
        """Regions from ``(chrom, start, end, ...)`` tuples (extra items are ignored).

        Examples
        --------
        >>> RegionSet.from_tuples([("chr1", 5, 10), ("chr2", 0, 3)]).to_strings()
        ['chr1:5-10', 'chr2:0-3']
        """
        chroms, starts, ends = [], [], []
        for i, t in enumerate(tuples):
            if isinstance(t, (str, bytes)):
                raise RegionParseError(f"region {i} ({t!r}) is a string among (chrom, start, end) "
                                       "tuples: give all regions in one form")
            try:  # objects with .chr/.start/.end (gtars Region) too
                c, s, e = (t.chr, t.start, t.end) if hasattr(t, "chr") else (t[0], t[1], t[2])
            except (TypeError, IndexError, KeyError, AttributeError):
                if isinstance(t, os.PathLike):
                    raise RegionParseError(
                        f"region {i} is the path {os.fspath(t)!r}: a list of files is many region "
                        "sets, one per file; use Tokenizer.encode_batch(paths) (encode takes one "
                        "set: one file, or a list of regions)") from None
                raise RegionParseError(f"region {i} ({t!r}) is not a (chrom, start, end) tuple") from None
            chroms.append(c)
            starts.append(s)
            ends.append(e)
        return cls.from_arrays(_object_array(chroms), _object_array(starts), _object_array(ends))

    @classmethod
    def from_arrays(cls, chroms, starts, ends, *, source: str | None = None) -> "RegionSet":
        """Regions from three parallel arrays.

        ``chroms`` holds names as str, bytes (UTF-8) or an object array of them; integer names
        (Ensembl ``1``, ``2``, ...) are turned into strings. Coordinates are integers (integral
        floats are accepted).

        Examples
        --------
        >>> RegionSet.from_arrays(["chr2", "chr1"], [10, 5], [20, 6]).chrom_names
        ('chr2', 'chr1')
        """
        chroms = np.asarray(chroms)
        if chroms.ndim != 1:
            raise RegionParseError(f"chroms must be one-dimensional, got shape {chroms.shape}")
        if chroms.dtype.kind in "iu":
            chroms = chroms.astype(str)
        elif chroms.dtype.kind not in "USO" and chroms.size:
            raise RegionParseError(f"chromosome names must be strings, got dtype {chroms.dtype}")
        s, e = _int_coords(starts, "start"), _int_coords(ends, "end")
        if not (chroms.size == s.size == e.size):
            raise RegionParseError(f"chroms, starts and ends differ in length "
                                   f"({chroms.size}, {s.size}, {e.size})")
        codes, names = _codes_first_appearance(chroms)
        return cls(names, codes, s, e, source=source)

    @classmethod
    def from_frame(cls, frame) -> "RegionSet":
        """Regions from a data frame or a mapping of columns.

        Column names are matched case-insensitively (:data:`REGION_COLUMNS`): ``chrom``/
        ``chr``/``seqnames``/``chromosome``/``seqname``, ``start``/``chromStart``,
        ``end``/``chromEnd``/``stop``.
        pandas is not needed: any mapping of column name to array works.

        Examples
        --------
        >>> RegionSet.from_frame({"Chr": ["chr1"], "Start": [5], "End": [9]}).to_strings()
        ['chr1:5-9']
        """
        cols = {str(k).lower(): k for k in (frame.columns if hasattr(frame, "columns") else frame.keys())}

        def pick(options, what):
            for o in options:
                if o.lower() in cols:
                    return np.asarray(frame[cols[o.lower()]])
            raise RegionParseError(f"no {what} column: expected one of {list(options)}, "
                                   f"found {list(cols.values())}")

        return cls.from_arrays(*(pick(names, what) for what, names in REGION_COLUMNS.items()))

    @classmethod
    def empty(cls) -> "RegionSet":
        """A set of no regions.

        Examples
        --------
        >>> len(RegionSet.empty())
        0
        """
        return cls((), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64))

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return int(self.codes.size)

    def chrom_of(self, i: int) -> str:
        """Chromosome name of region ``i``."""
        return self.chrom_names[self.codes[i]]

    def take(self, indices) -> "RegionSet":
        """The regions at ``indices`` (integers, or a boolean mask), same chromosome table.

        Examples
        --------
        >>> rs = RegionSet.from_strings(["chr1:0-5", "chr2:0-5", "chr1:9-10"])
        >>> rs.take([2, 0]).to_strings(), rs.take(rs.codes == 1).to_strings()
        (['chr1:9-10', 'chr1:0-5'], ['chr2:0-5'])
        """
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


@validated({"strings": [InstanceOf(list, tuple, np.ndarray), HasAttr("tolist")],
            "sep": SEP, "one_based": [Flag()]})
def parse_region_strings(strings, *, sep: str | None = None, one_based: bool = False) -> RegionSet:
    """Parse ``chr:start-end`` style strings into a :class:`RegionSet`, from the right.

    Parameters
    ----------
    strings
        Strings like ``chr1:100-200`` (10x, SnapATAC2), ``chr1-100-200`` (Signac) or
        ``chr1_100_200`` (episcanpy). Contig names may contain ``_``, ``-`` or ``:``
        (``chrUn_KI270742v1``, ``HLA-A*01:01``): the last two numbers are the coordinates.
        Thousands separators (``chr1:1,000-2,000``) are accepted; coordinates are at most
        2^62. Auto-detection takes ``:``, ``-`` or ``_`` before the start and ``-`` or ``_``
        before the end (so ``chr1:100_200`` parses too).
    sep
        ``None`` detects the convention per string; ``":"`` (``chr:start-end``), ``"-"``
        (``chr-start-end``) or ``"_"`` (``chr_start_end``) forces one.
    one_based
        Names from R are often 1-based closed: ``chr1:101-200`` then means ``[100, 200)``.

    Returns
    -------
    RegionSet
        One region per string, chromosome codes in order of first appearance. A numba pass
        over all strings at once.

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
    strings = strings.tolist() if isinstance(strings, np.ndarray) else list(strings)
    if not strings:
        return RegionSet.empty()
    parsed = _region_strings_kernel(strings, sep)
    if parsed is None:  # something the kernel does not take, or a bad string: the reference
        parsed = _region_strings_reference(strings, pat, sep)
    names, codes, starts, ends = parsed
    if one_based:
        if starts.min() < 1:
            i = int(np.argmin(starts))
            raise RegionParseError(f"region string [{i}] {strings[i]!r}: a 1-based start must "
                                   "be >= 1 (or leave one_based=False)")
        starts = starts - 1
    if (ends < starts).any():
        i = int(np.flatnonzero(ends < starts)[0])
        raise RegionParseError(f"region string [{i}] {strings[i]!r}: end is before start")
    return RegionSet(names, codes, starts, ends, validate=False)


def _region_strings_kernel(strings: list, sep: str | None):
    """The numba path: all strings joined into one buffer. ``None`` when a string is not a
    ``str``, holds a newline, or does not parse (the reference parser then words the error).

    Much faster than a regex per string (benchmarks/RESULTS.md, "Design measurements").
    """
    try:
        raw = ("\n".join(strings) + "\n").encode("utf-8")
    except (TypeError, UnicodeEncodeError):  # not all str, or lone surrogates
        return None
    buf = np.frombuffer(raw, dtype=np.uint8)
    codes, starts, ends, ns, ne, bad, _ = _names.parse_region_names(buf, *_names.SEPARATORS[sep])
    if bad >= 0 or codes.size != len(strings):  # a bad string, or a newline inside one
        return None
    names = tuple(raw[x:y].decode("utf-8") for x, y in zip(ns.tolist(), ne.tolist()))
    return names, codes, starts, ends


def _region_strings_reference(strings: list, pat: re.Pattern, sep: str | None):
    """One regular expression per string: slow, plain, and the one that explains failures."""
    chroms, starts, ends, bad = [], [], [], []
    for i, x in enumerate(strings):
        m = pat.fullmatch(x) if isinstance(x, str) else None
        if m is None:
            bad.append((i, x, ""))
            continue
        a, z = int(m.group(2).replace(",", "")), int(m.group(3).replace(",", ""))
        if max(a, z) > _parse.MAX_COORD:
            bad.append((i, x, " (coordinate larger than 2^62)"))
            continue
        chroms.append(m.group(1))
        starts.append(a)
        ends.append(z)
    if bad:
        shown = ", ".join(f"[{i}] {x!r}{why}" for i, x, why in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        conv = ("chr:start-end, chr-start-end or chr_start_end" if sep is None
                else f"chrom{sep}start{'-' if sep == ':' else sep}end")
        raise RegionParseError(f"{len(bad)} of {len(strings)} region strings do not parse as "
                               f"{conv}: {shown}{more}")
    codes, names = _codes_first_appearance(np.array(chroms, dtype=object))
    return names, codes, np.array(starts, np.int64), np.array(ends, np.int64)


def _looks_like_columns(obj: tuple) -> bool:
    """A tuple ``(chroms, starts, ends)`` of three array-likes, rather than three region tuples."""
    def region_tuple(x) -> bool:
        return (isinstance(x, (tuple, list)) and len(x) >= 3 and isinstance(x[0], (str, bytes))
                and not isinstance(x[1], (str, bytes)))

    if not all(hasattr(x, "__len__") and not isinstance(x, (str, bytes)) for x in obj):
        return False
    return not all(region_tuple(x) for x in obj)


def _check_path(path, what: str, instead: str):
    """``path``, after refusing one that is not a path (a Tokenizer, ``None``), naming it.

    Examples
    --------
    >>> _check_path(None, "from_bed", "Tokenizer(regions) takes regions")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: from_bed takes the path of a BED/BED.gz file, got a NoneType; ...
    """
    if not isinstance(path, (str, os.PathLike)):
        hint = " (it is a tokenizer already)" if hasattr(path, "encode_batch") else ""
        raise TypeError(f"{what} takes the path of a BED/BED.gz file, got a "
                        f"{type(path).__name__}{hint}; {instead}")
    return path


def _check_batch(sets):
    """``sets``, after refusing what is not a batch of region sets (``encode_batch``'s argument):
    one path (a str
    was iterated character by character: "/: is a directory"), one set, ``None``, a number.

    Examples
    --------
    >>> _check_batch([["chr1:1-2"], "x.bed"])  # a batch: given back
    [['chr1:1-2'], 'x.bed']
    >>> _check_batch("x.bed")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.RegionParseError: encode_batch takes a list of region sets (...), got the single str 'x.bed': ...
    """
    if isinstance(sets, (str, bytes, os.PathLike)):
        path = os.fsdecode(sets)
        if os.path.isdir(path):
            raise RegionParseError(
                f"encode_batch takes a list of region sets (paths, region lists, frames), got "
                f"the folder {path!r}: give its files, e.g. "
                f"encode_batch(sorted(pathlib.Path({path!r}).glob('*.bed*')))")
        raise RegionParseError(
            f"encode_batch takes a list of region sets (paths, region lists, frames), got the "
            f"single {type(sets).__name__} {path!r}: use encode({path!r}) for one set, or "
            f"encode_batch([{path!r}])")
    if not hasattr(sets, "__iter__") or isinstance(sets, (RegionSet, Mapping)) or hasattr(
            sets, "columns"):
        raise TypeError(f"encode_batch takes a list of region sets (paths, region lists, "
                        f"frames), got a {type(sets).__name__}; for one set use encode()")
    return sets


@validated({"obj": REGIONS, "reversed": REVERSED})
def as_regions(obj, *, reversed: str = "error") -> RegionSet:
    """Any region input as a :class:`RegionSet`.

    Accepts a RegionSet; a path (str or PathLike) to a BED/BED.gz file (``reversed``: what a
    line with end before start becomes, see :meth:`RegionSet.from_bed`); one region string; a
    list of region strings; a list of ``(chrom, start, end)`` tuples or of objects with
    ``.chr``/``.start``/``.end`` (gtars ``Region``); a tuple of three arrays
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
        return RegionSet.from_bed(obj, reversed=reversed)
    if isinstance(obj, str):
        if os.path.exists(obj):
            return RegionSet.from_bed(obj, reversed=reversed)
        if _AUTO.fullmatch(obj):
            return parse_region_strings([obj])
        raise BedParseError(obj, None, "no such file, and not a region string like "
                                       "chr1:100-200 either; check the path")
    if hasattr(obj, "columns") or isinstance(obj, Mapping):
        return RegionSet.from_frame(obj)
    if hasattr(obj, "chr") and hasattr(obj, "start") and hasattr(obj, "end"):
        return RegionSet.from_tuples([obj])  # one gtars Region
    if isinstance(obj, tuple) and len(obj) == 3 and _looks_like_columns(obj):
        return RegionSet.from_arrays(*obj)
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "US" and obj.ndim == 1:
        return parse_region_strings(obj.astype(str).tolist())
    if hasattr(obj, "__iter__") and not isinstance(obj, (bytes, bytearray)):
        items = obj.tolist() if isinstance(obj, np.ndarray) else list(obj)
        if not items:
            return RegionSet.empty()
        if all(isinstance(x, str) for x in items):
            return parse_region_strings(items)
        return RegionSet.from_tuples(items)
    raise RegionParseError(f"cannot read regions from a {type(obj).__name__}; give a BED path, "
                           "region strings, (chrom, start, end) tuples, arrays or a data frame")
