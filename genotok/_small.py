"""The tiny-input path of :meth:`Tokenizer.encode <genotok.Tokenizer.encode>`: a few regions
(a short BED file, region strings, three short arrays) tokenized without the machinery.

A call on one region set pays a fixed cost before its first region: the block reader's
bookkeeping, the parse kernel's dispatch, a dozen NumPy calls and four numba dispatches of
20-odd arguments (about 100 us: ``benchmarks/RESULTS.md``, "Small sets"). Below
:data:`MAX_REGIONS` regions this path finds the hits with two binary searches a region over
global sort keys of the sweep index (:class:`genotok.universe._SweepIndex`, sorted by
chromosome, start, end, id, with the running maximum of the ends). Warm, it is two dispatches
of :mod:`genotok.kernels.small` of few arguments (:func:`_compiled`: ``scan`` reads the bytes
of a file or of the joined region strings, ``hits`` searches; one region string is parsed in
Python): a call costs 3 to 20 us from 1 to 100 regions. Its plain-Python form
(:func:`_python`: a Python parse, vectorised NumPy searches) is the kernels' oracle, serves
while the overlap kernels are cold, and takes what the kernels leave (a file out of gtars'
order).

It takes only what it is sure of and answers ``None`` for anything else, and the caller takes
the full path: settings other than ``overlap="all"`` without thresholds, ``tokenizer_type=
"bits"`` and the ``gtars`` or ``input`` order; a file that is not plain ASCII BED lines
(``chrom<TAB>start<TAB>end[<TAB>...]``, no header, no empty line, no carriage return or other
control byte in any column, a start
not after its end); a chromosome the universe lacks (the full path warns about ``chr`` naming);
a region string other than ``chrom:start-end`` with plain digits. Below
:data:`COLD_REGIONS` lines it also serves larger sets while the overlap kernels are neither
compiled nor cached (and :func:`genotok.bed._read_file` reads such files through
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
import time
import zlib

import numpy as np

from . import _config
from .kernels.modes import Backend, HitOrder, Overlap, Unknown, name, parse

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
_LIMIT = 1 << _SHIFT  # a coordinate from here on takes the full path (it fits no key)
# the settings' names this path compares with, read once from the modes' enums (a settings
# field is its member's name: comparing it with these is comparing members, parsed never)
_ALL, _BITS = name(Overlap.ALL), name(Backend.BITS)
_GTARS = name(HitOrder.GTARS)
_SORTED = (_GTARS, name(HitOrder.INPUT))
_UNK_SET, _UNK_REGION = name(Unknown.SET), name(Unknown.REGION)
# the names of plain BED lines, one a line: printable, no space, not a header's #, track,
# browser
_NAMES = re.compile(r"(?:(?!#|track|browser)[!-~]+\n)*(?!#|track|browser)[!-~]+")
# a control byte other than tab and newline (CR included): the parser refuses it in any column
_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f]")


#: the settings last found fit for this path (``TokenizerSettings`` are frozen: checked once)
_FIT = None


def encode_small(tok, regions) -> np.ndarray | None:
    """The token ids (int64) of ``regions`` for ``tok``, or ``None``: not a case for this path
    (see the module documentation)."""
    global _FIT
    s = tok.settings
    if s is not _FIT:
        if (s.overlap != _ALL or s.min_overlap or s.min_fraction or s.order not in _SORTED
                or s.tokenizer_type != _BITS):
            return None
        _FIT = s
    cold = not (_WARM or _warm())
    if not cold:  # two dispatches of genotok.kernels.small (its oracle: the Python form)
        ids = _compiled(tok, regions)
        if ids is not None:
            return ids
    return _python(tok, regions, cold)


def _python(tok, regions, cold: bool = False) -> np.ndarray | None:
    """:func:`encode_small` in plain Python and NumPy: no kernel (while they are cold, and for
    what :func:`_compiled` leaves)."""
    s = tok.settings
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
    if from_file and s.order == _GTARS and n > 1:  # gtars sorts a file by (name bytes, start)
        order = sorted(range(n), key=lambda k: (names[k].encode(), starts[k]))
        codes = [codes[k] for k in order]
        starts = [starts[k] for k in order]
        ends = [ends[k] for k in order]
    keys = _keys(u)
    if keys is None:
        return None
    gstart, gmax, ends_sorted, ids = keys[:4]
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
            if not hit and mode == _UNK_REGION:
                out.append(unk)
        if not out and mode == _UNK_SET:
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
    if mode == _UNK_REGION:
        per = np.bincount(np.repeat(np.arange(n), counts)[hit], minlength=n)
        if per.min() == 0:  # an <unk> where a query hits nothing, in its place
            slot = np.cumsum(np.maximum(per, 1)) - np.maximum(per, 1)
            out = np.full(int(np.maximum(per, 1).sum()), unk, dtype=np.int64)
            own = np.repeat(slot, per) + (np.arange(found.size) -
                                          np.repeat(np.cumsum(per) - per, per))
            out[own] = found
            return out
    if found.size == 0 and mode == _UNK_SET:
        return np.array([unk], dtype=np.int64)
    return found


def _compiled(tok, obj) -> np.ndarray | None:
    """:func:`encode_small` by :mod:`genotok.kernels.small`, or ``None``: the Python form
    decides (a file out of gtars' order, anything the kernels refuse)."""
    u = tok.universe
    kind, keys = -1, None
    if type(obj) is tuple and len(obj) == 3:
        got = _array_rows(*obj, u)
        if got is None:
            return None
        rows, heads, codes, keys = got
    elif isinstance(obj, str) and (st := _stat(obj)) is not None:
        data, kind = _read(obj, MAX_BYTES, st), 0
    elif isinstance(obj, str) or type(obj) is list and len(obj) == 1 and type(obj[0]) is str:
        one = _region_string(obj if isinstance(obj, str) else obj[0])  # no join, no scan
        keys = None if one is None else _keys(u)
        code = -1 if keys is None else keys[5].get(one[0], -1)
        if code < 0:  # (an unknown name: the full path warns about chr prefixes)
            return None
        rows, codes = np.empty((2, 1), dtype=np.int64), np.empty(1, dtype=np.int64)
        rows[0, 0], rows[1, 0], codes[0], heads = one[1], one[2], code, _HEAD
    elif isinstance(obj, os.PathLike):
        data, kind = _read(os.fspath(obj), MAX_BYTES), 0
    elif isinstance(obj, list) and 0 < len(obj) <= MAX_REGIONS:
        try:
            data, kind = "\n".join(obj), 1
        except TypeError:  # not all strings
            return None
        if not data.isascii():
            return None
        data = data.encode()
    else:
        return None
    if kind >= 0 and data is None:
        return None
    if keys is None:  # only now, for an input this path takes: they hold 32 bytes a universe
        keys = _keys(u)  # region (30 MiB for 1M), which a large set would carry for nothing
        if keys is None:
            return None
    if kind >= 0:
        status, rows, runs, r, in_order = _kernels().scan(np.frombuffer(data, np.uint8), kind)
        if status or kind and rows.shape[1] != len(obj):
            return None
        if not kind and not in_order and tok.settings.order == _GTARS:
            return None  # gtars sorts a file by (name bytes, start): the Python form does
        get = keys[4].get
        codes = [get(data[a:b], -1) for a, b in zip(*runs[1:, :r].tolist())]
        if max(codes) < 0:
            return None  # no name known: the full path warns about a chr-prefix mismatch
        heads, codes = runs[0, :r], np.array(codes, dtype=np.int64)
    status, ids = _kernels().hits(rows, heads, codes, keys[6], keys[7],
                                  int(parse(Unknown, tok.settings.unknown)))
    return None if status else ids


_HEADS = np.arange(MAX_REGIONS, dtype=np.int64)  # a run a line (read only by the kernel)
_HEAD = _HEADS[:1]


def _stat(path: str):
    """``os.stat(path)``, or ``None`` where :func:`os.path.exists` says false (asked first by
    ``access``: a region string is no file, and a failing ``stat`` raises, which costs 2 us)."""
    try:
        return os.stat(path) if os.access(path, os.F_OK) else None
    except (OSError, ValueError):
        return None


def _array_rows(chroms, starts, ends, u):
    """``(rows, heads, codes, keys)`` for :func:`genotok.kernels.small.hits` of three short
    arrays against the universe ``u`` (``keys``: its :func:`_keys`), or ``None`` (the kernel
    checks the coordinates: a uint64 past 2**63 turns negative in int64, a negative start or
    one after its end, which it refuses)."""
    if not (type(chroms) is np.ndarray and type(starts) is np.ndarray
            and type(ends) is np.ndarray):
        return None
    n = chroms.size
    if (not 0 < n <= MAX_REGIONS or chroms.ndim != 1 or starts.shape != chroms.shape
            or ends.shape != chroms.shape or starts.dtype.kind not in "iu"
            or ends.dtype.kind not in "iu" or chroms.dtype.kind != "U"):
        return None
    keys = _keys(u)
    if keys is None:
        return None
    get = keys[5].get
    codes = [get(c, -1) for c in chroms.tolist()]
    if max(codes) < 0:
        return None
    rows = np.empty((2, n), dtype=np.int64)
    rows[0], rows[1] = starts, ends
    return rows, _HEADS[:n], np.array(codes, dtype=np.int64), keys


def _read(path: str, max_bytes: int, st=None) -> bytes | None:
    """The bytes of a short regular file (inflated when gzipped), or ``None``."""
    try:
        st = os.stat(path) if st is None else st
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:  # a pipe is read once:
            return None  # by the full path (and a long file is not read twice)
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, max_bytes + 1)
            while len(data) < st.st_size:  # (a short read)
                more = os.read(fd, max_bytes + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        if data[:2] == b"\x1f\x8b" and len(data) <= max_bytes:
            from ._io import bgzf_cut_short  # (not at import: it loads isal)

            if bgzf_cut_short(data, data):  # a BGZF file cut short: the full path warns of it
                return None
            with gzip.open(path, "rb") as f:
                data = f.read(max_bytes + 1)
    except (OSError, EOFError, ValueError, zlib.error):  # damaged gzip (a bad deflate stream:
        # zlib.error, no OSError): the full path names the problem
        return None
    return data if len(data) <= max_bytes else None


_SMALL_KERNELS = None


def _kernels():
    """:mod:`genotok.kernels.small`, imported on first use (numba-compiled: not at import)."""
    global _SMALL_KERNELS
    if _SMALL_KERNELS is None:
        from .kernels import small
        _SMALL_KERNELS = small
    return _SMALL_KERNELS


def _keys(u):
    """The sweep index as global sort keys ``code << 40 | start`` and ``code << 40 | running
    max end`` (built once per universe), or ``None`` when a coordinate does not fit; then the
    ends, the ids, the chromosome codes by name as bytes and as str, and the four stacked for
    :func:`genotok.kernels.small.hits`."""
    cached = getattr(u, "_small_keys", None)
    if cached is not None:
        return cached or None
    sw = u.sweep
    n_chroms = sw.chrom_ptr.size - 1
    ok = (sw.ends.size == 0 or int(sw.maxend.max()) < 1 << _SHIFT) and n_chroms < 1 << 22
    keys = ()
    if ok:
        code = np.repeat(np.arange(n_chroms, dtype=np.int64), np.diff(sw.chrom_ptr)) << _SHIFT
        stacked = np.empty((4, sw.ends.size), dtype=np.int64)
        stacked[0], stacked[1], stacked[2], stacked[3] = (code + sw.starts, code + sw.maxend,
                                                          sw.ends, sw.ids)
        index = {name: k for k, name in enumerate(u.chrom_names)}
        by_bytes = {k.encode(): v for k, v in index.items()}
        keys = (stacked[0], stacked[1], stacked[2], stacked[3], by_bytes, index, stacked,
                u.unk_token_id)
    try:
        u._small_keys = keys
    except AttributeError:  # a universe that takes no attribute: build again next time
        pass
    return keys or None


_WARM = False  # the overlap kernels run without compiling (remembered once true)
_COLD_UNTIL = 0.0  # a cold answer holds until then (a look lists a cache folder: 40 us)


def _warm() -> bool:
    """Whether the overlap kernels are compiled or cached (:func:`genotok._config.group_ready`);
    a cold answer is asked again after a second at the earliest."""
    global _WARM, _COLD_UNTIL
    now = time.monotonic()
    if now < _COLD_UNTIL:
        return False
    _WARM = _config.group_ready("overlap")
    _COLD_UNTIL = now + 1.0
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
        if any(map(operator.gt, starts, ends)) or max(ends) >= _LIMIT:
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
    return None if a > b or b >= _LIMIT else (chrom, a, b)


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
    if min(s) < 0 or max(e) >= _LIMIT or any(a > b for a, b in zip(s, e)):
        return None
    return chroms.tolist(), s, e, False


def read_plain(path: str, max_regions: int = MAX_REGIONS, max_bytes: int = MAX_BYTES):
    """``(names, starts, ends, True)`` of a short plain BED file (gzip allowed), or ``None``
    (see the module documentation): at most ``max_regions`` lines and ``max_bytes`` bytes."""
    data = _read(path, max_bytes)
    if data is None:
        return None
    if not data or not data.isascii() or _CONTROL.search(data):
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
    if any(map(operator.gt, starts, ends)) or max(ends) >= _LIMIT:
        return None
    return list(names), starts, ends, True


def _numbers(xs) -> bool:
    """Whether every string of ``xs`` is 1 to 15 ASCII digits (``xs`` is ASCII)."""
    return "".join(xs).isdigit() and 0 < min(map(len, xs)) and max(map(len, xs)) <= _DIGITS
