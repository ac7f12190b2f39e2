"""The tiny-input path of :meth:`Tokenizer.encode <genotok.Tokenizer.encode>`: a few regions
(a short BED file, region strings, three short arrays) tokenized without the machinery.

A call on one region set pays a fixed cost before its first region: the block reader's
bookkeeping, the parse kernel's dispatch, a dozen NumPy calls and four numba dispatches of
20-odd arguments (about 100 us: ``benchmarks/RESULTS.md``, "Small sets"). Below
:data:`MAX_REGIONS` regions this path parses in plain Python and finds the hits with two
vectorised binary searches over the sweep index (:class:`genotok.universe._SweepIndex`, sorted
by chromosome, start, end, id, with the running maximum of the ends), so a call costs a few
microseconds per region.

It takes only what it is sure of and answers ``None`` for anything else, and the caller takes
the full path: settings other than ``overlap="all"`` without thresholds, ``tokenizer_type=
"bits"`` and the ``gtars`` or ``input`` order; a file that is not plain ASCII BED lines
(``chrom<TAB>start<TAB>end[<TAB>...]``, no header, no empty line, no carriage return, a start
not after its end); a chromosome the universe lacks (the full path warns about ``chr`` naming);
a region string other than ``chrom:start-end`` with plain digits. Below
:data:`COLD_REGIONS` lines it also serves larger sets while the overlap kernels are neither
compiled nor cached (and :func:`genotok.bed.read_file` reads such files through
:func:`read_plain` while the parse kernel is not): a new install's first calls, the README's
Quick start, do not wait for numba. So every answer equals the
full path's (checked against ``tests/naive_tokenizer.py`` by ``tests/test_small.py``).
"""

from __future__ import annotations

import gzip
import operator
import os
import re
import stat

import numpy as np

from . import _config

#: the most regions (lines, strings, array rows) a set may have for this path
MAX_REGIONS = 256
#: the most bytes of a file this path reads (a longer file takes the full path)
MAX_BYTES = 32768
#: the same while the overlap or parse kernels would have to be compiled first (a new
#: install's first calls: compiling takes seconds, this path milliseconds)
COLD_REGIONS = 1 << 16
COLD_BYTES = 4 << 20
_DIGITS = 15  # a coordinate of at most 15 digits (far inside every parser's bound)
# region strings chrom:start-end, plain digits, a name without ":", "-", "_" or space
_STRING_TEXT = r"([!-~]+):([0-9]{1,15})-([0-9]{1,15})"
_STRING = re.compile(_STRING_TEXT.replace("[!-~]", r"[!-,.-9;-^`-~]"))
_STRINGS = re.compile(rf"(?:{_STRING.pattern}\n)*{_STRING.pattern}")
_SHIFT = 40  # global sort keys: code << 40 | coordinate (coordinates below 2**40)
_SORTED = ("gtars", "input")
# the names of plain BED lines, one a line: printable, no space, not a header's #, track,
# browser
_NAMES = re.compile(r"(?:(?!#|track|browser)[!-~]+\n)*(?!#|track|browser)[!-~]+")


def encode_small(tok, regions) -> np.ndarray | None:
    """The token ids (int64) of ``regions`` for ``tok``, or ``None``: not a case for this path
    (see the module documentation)."""
    s = tok.settings
    if (s.overlap != "all" or s.min_overlap or s.min_fraction or s.order not in _SORTED
            or s.tokenizer_type != "bits"):
        return None
    cold = not (_WARM or _warm())
    parsed = _parse(regions, COLD_REGIONS if cold else MAX_REGIONS,
                    COLD_BYTES if cold else MAX_BYTES)
    if parsed is None:
        return None
    names, starts, ends, from_file = parsed
    u = tok.universe
    code = u.chrom_code
    codes = [code(n) for n in names]
    if max(codes) < 0:  # no name known: the full path warns about a chr-prefix mismatch
        return None  # (a query on an unknown chromosome: code -1, a key below every row's)
    n = len(codes)
    if from_file and s.order == "gtars" and n > 1:  # gtars sorts a file by (name bytes, start)
        order = sorted(range(n), key=lambda k: (names[k].encode(), starts[k]))
        codes = [codes[k] for k in order]
        starts = [starts[k] for k in order]
        ends = [ends[k] for k in order]
    keys = _keys(u)
    if keys is None:
        return None
    gstart, gmax, ends_sorted, ids = keys
    unk = u.unk_token_id
    mode = s.unknown
    if n <= 4:  # scalar searches: fewer NumPy calls than the vectorised form
        out = []
        for c, qs, qe in zip(codes, starts, ends):
            base = c << _SHIFT
            lo = int(gmax.searchsorted(base + qs, "right"))
            hi = int(gstart.searchsorted(base + qe, "left"))
            hit = False
            for row in range(lo, hi):
                if ends_sorted[row] > qs:
                    out.append(int(ids[row]))
                    hit = True
            if not hit and mode == "region":
                out.append(unk)
        if not out and mode == "set":
            out.append(unk)
        return np.array(out, dtype=np.int64)
    c = np.array(codes, dtype=np.int64) << _SHIFT
    qs = np.array(starts, dtype=np.int64)
    lo = gmax.searchsorted(c + qs, "right")
    hi = gstart.searchsorted(c + np.array(ends, dtype=np.int64), "left")
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    if total > 64 * n:  # long regions spanning many rows: the kernels' business
        return None
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    rows = np.repeat(lo, counts) + within
    hit = ends_sorted[rows] > np.repeat(qs, counts)
    found = ids[rows[hit]].astype(np.int64)
    if mode == "region":
        per = np.bincount(np.repeat(np.arange(n), counts)[hit], minlength=n)
        if per.min() == 0:  # an <unk> where a query hits nothing, in its place
            slot = np.cumsum(np.maximum(per, 1)) - np.maximum(per, 1)
            out = np.full(int(np.maximum(per, 1).sum()), unk, dtype=np.int64)
            own = np.repeat(slot, per) + (np.arange(found.size) -
                                          np.repeat(np.cumsum(per) - per, per))
            out[own] = found
            return out
    if found.size == 0 and mode == "set":
        return np.array([unk], dtype=np.int64)
    return found


def _keys(u):
    """The sweep index as global sort keys ``code << 40 | start`` and ``code << 40 | running
    max end`` (built once per universe), or ``None`` when a coordinate does not fit."""
    cached = getattr(u, "_small_keys", None)
    if cached is not None:
        return cached or None
    sw = u.sweep
    n_chroms = sw.chrom_ptr.size - 1
    ok = (sw.ends.size == 0 or int(sw.maxend.max()) < 1 << _SHIFT) and n_chroms < 1 << 22
    keys = ()
    if ok:
        code = np.repeat(np.arange(n_chroms, dtype=np.int64), np.diff(sw.chrom_ptr)) << _SHIFT
        keys = (code + sw.starts, code + sw.maxend, sw.ends, sw.ids)
    try:
        u._small_keys = keys
    except AttributeError:  # a universe that takes no attribute: build again next time
        pass
    return keys or None


_WARM = False  # the overlap kernels run without compiling (remembered once true)


def _warm() -> bool:
    """Whether the overlap kernels are compiled or cached (:func:`genotok._config.group_ready`)."""
    global _WARM
    _WARM = _config.group_ready("overlap")
    return _WARM


def _parse(obj, max_regions: int = MAX_REGIONS, max_bytes: int = MAX_BYTES):
    """``(names, starts, ends, from_file)`` as Python lists, or ``None`` (not for this path)."""
    if isinstance(obj, os.PathLike) or isinstance(obj, str) and os.path.exists(obj):
        return read_plain(os.fspath(obj), max_regions, max_bytes)
    if isinstance(obj, str):
        one = _region_string(obj)
        return None if one is None else ([one[0]], [one[1]], [one[2]], False)
    if isinstance(obj, list):
        if len(obj) == 1 and type(obj[0]) is str:  # one string: no join, no regex
            one = _region_string(obj[0])
            return None if one is None else ([one[0]], [one[1]], [one[2]], False)
        if not 0 < len(obj) <= max_regions or not all(type(x) is str for x in obj):
            return None
        text = "\n".join(obj)
        if _STRINGS.fullmatch(text) is None:
            return None
        names, starts, ends = zip(*_STRING.findall(text))
        starts, ends = list(map(int, starts)), list(map(int, ends))
        if any(map(operator.gt, starts, ends)):
            return None
        return list(names), starts, ends, False
    if type(obj) is tuple and len(obj) == 3:
        return _arrays(*obj, max_regions)
    return None


def _region_string(x: str):
    """``(chrom, start, end)`` of ``chrom:start-end`` with plain digits, else ``None``."""
    head, _, e = x.rpartition("-")
    chrom, _, st = head.rpartition(":")
    if (not chrom or not _number(st) or not _number(e) or "-" in chrom or "_" in chrom
            or ":" in chrom or not chrom.isascii() or not chrom.isprintable() or " " in chrom):
        return None  # (the names _STRING takes)
    a, b = int(st), int(e)
    return None if a > b else (chrom, a, b)


def _number(x: str) -> bool:
    return 0 < len(x) <= _DIGITS and x.isdigit() and x.isascii()


def _arrays(chroms, starts, ends, max_regions: int):
    """Three 1-D arrays (names; integer starts and ends) → lists, or ``None``."""
    if not (isinstance(starts, np.ndarray) and isinstance(ends, np.ndarray)
            and isinstance(chroms, np.ndarray)):
        return None
    n = chroms.shape[0] if chroms.ndim == 1 else -1
    if (not 0 < n <= max_regions or starts.shape != (n,) or ends.shape != (n,)
            or starts.dtype.kind not in "iu" or ends.dtype.kind not in "iu"
            or chroms.dtype.kind != "U"):
        return None
    s, e = starts.tolist(), ends.tolist()
    if min(s) < 0 or max(e) >= 10**_DIGITS or any(a > b for a, b in zip(s, e)):
        return None
    return chroms.tolist(), s, e, False


def read_plain(path: str, max_regions: int = MAX_REGIONS, max_bytes: int = MAX_BYTES):
    """``(names, starts, ends, True)`` of a short plain BED file (gzip allowed), or ``None``
    (see the module documentation): at most ``max_regions`` lines and ``max_bytes`` bytes."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:  # a pipe is read once:
            return None  # by the full path (and a long file is not read twice)
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
        if data[:2] == b"\x1f\x8b" and len(data) <= max_bytes:
            with gzip.open(path, "rb") as f:
                data = f.read(max_bytes + 1)
    except (OSError, EOFError, ValueError):  # damaged gzip: the full path names the problem
        return None
    if not data or len(data) > max_bytes or not data.isascii() or b"\r" in data or b"\0" in data:
        return None
    if data[-1:] != b"\n":
        data += b"\n"
    lines = data.decode("ascii").split("\n")
    lines.pop()  # after the last newline
    if len(lines) > max_regions:
        return None
    try:
        names, starts, ends = zip(*[line.split("\t", 3)[:3] for line in lines])
    except ValueError:  # a line of fewer than three fields
        return None
    if (_NAMES.fullmatch("\n".join(names)) is None or not _numbers(starts)
            or not _numbers(ends)):
        return None
    starts, ends = list(map(int, starts)), list(map(int, ends))
    if any(map(operator.gt, starts, ends)):
        return None
    return list(names), starts, ends, True


def _numbers(xs) -> bool:
    """Whether every string of ``xs`` is 1 to 15 ASCII digits (``xs`` is ASCII)."""
    return "".join(xs).isdigit() and 0 < min(map(len, xs)) and max(map(len, xs)) <= _DIGITS
