"""Fragment files → cells × universe-regions count matrices, the ATAC way.

A 10x ``fragments.tsv(.gz)`` (``chrom start end barcode [count]``, separated by tabs or by runs
of spaces (:func:`genotok.kernels.fragments.parse_fragments`), 0-based
half-open, ``#`` header lines skipped) is streamed in byte blocks, parsed by the single-cell
fragment parser and counted into a CSR matrix of cells × universe regions: the matrix a
:class:`~genotok.singlecell.fragments.FragmentSource` hands to the driver (tokens, and
:func:`~genotok.fragment_matrix`'s counts, :mod:`genotok.singlecell.matrix`).

Counting modes
--------------
``mode="insertion"`` (the default, as SnapATAC2 and ArchR count peaks)
    each fragment contributes its two Tn5 cut sites, ``start`` and ``end - 1``; a cut site at
    ``p`` counts once in every region ``[s, e)`` with ``s <= p < e``. A fragment whose both
    cut sites fall in one region counts 2 there (SnapATAC2's ``counting_strategy="insertion"``).
``mode="paired-insertion"`` (SnapATAC2's default strategy)
    as ``"insertion"``, but a fragment counts at most once in a region (1, not 2, when both cut
    sites fall in it).
``mode="fragment"``
    each fragment counts once in every region it overlaps (at least 1 bp, the tokenizer's
    overlap rule: a zero-length fragment at ``p`` hits regions with ``s < p < e``).

The duplicate count of column 5 does **not** multiply a fragment (SnapATAC2's default:
a line is one fragment); ``use_count=True`` weighs each fragment by it instead.

Coordinates of 10x fragment files are already Tn5-adjusted (the +4/−5 shift of reads on the
plus / minus strand is applied by ``cellranger-atac``). For fragments made from raw read pairs,
``shift=(4, -5)`` moves the left cut site by +4 and the right one by −5 (``start + 4`` and
``end - 1 - 5``); a shifted site below 0 is not counted. The shift applies in insertion mode only.

Regions and columns
-------------------
The columns are the universe's regions in its order (token id ``i`` is column ``i``); there is no
``<unk>`` column and a fragment that hits nothing adds nothing (unlike gtars, which emits one
``<unk>`` per missed fragment). A region that repeats an earlier identical region gets the same
counts as the first.

Memory
------
One pass over the file; held at once: two blocks of ``block_bytes`` bytes (default 32 MiB; the
next one is inflated on a thread while this one is counted), the barcode and chromosome name
tables (the names' bytes once each), per cell two counters, and the distinct (cell, region)
pairs counted so far as a CSR matrix (12 bytes each), the pending pairs (16 bytes each, in two
buffers of at most half the distinct pairs, or 1M, each: the block kernel fills one while the
other is folded in on a thread) and, during a fold, the pending pairs bucketed by cell and the
new matrix: at most ~54 bytes per distinct pair, plus the blocks — the size of the result, not
of the file (measured: 50M fragments, 5,000 cells, 1M peaks, 31.5M distinct pairs: ~0.95 GiB
above the imports, ~31 bytes a pair).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator

import numpy as np

from .. import _io, bgzf
from ..errors import BedParseError
from ..kernels import fragments as FK
from ..kernels import fragscan as FS
from ..kernels.modes import Counting, names, parse
from ..params import MEMORY_MB, Each, Integral, Interval, Options, check
from ..ragged import Ragged
from ..regions import RegionSet
from .pairs import _PairCounts, _Spilled
from .spill import RowSpill

#: the counting modes' names (``mode=``), :class:`~genotok.kernels.modes.Counting`'s
MODES = names(Counting)
#: cells per bucket of a count spilled to disk (``memory_mb``): what one read-back holds
SPILL_ROWS = 1024
#: with ``out=``, the counted pairs held in memory (MiB) before they spill to disk by default
SPILL_MB = 1024


def _spill_mb(memory_mb: float | None, out) -> float | None:
    """``memory_mb`` as given, or :data:`SPILL_MB` when a call writing ``out`` gave none
    (:func:`_count` checks the value)."""
    return SPILL_MB if memory_mb is None and out is not None else memory_mb


def read_barcodes(source) -> list[str]:
    """A barcode allow-list: a sequence of strings, or a file (``.gz`` too) with one barcode a
    line (first tab-separated column; blank lines and comments ``#`` or ``# …`` skipped — a
    barcode may start with ``#``, as in fragment files; a file that is not UTF-8 or repeats a
    barcode raises :class:`~genotok.BedParseError` naming it and the line).

    A CSV with a header (10x's ``singlecell.csv`` or ``per_barcode_metrics.csv``) gives its
    ``barcode`` column, only the cells' rows where it has an ``is__cell_barcode`` or
    ``is_cell`` column; a CSV without a ``barcode`` column is refused.

    Examples
    --------
    >>> read_barcodes(["AAA-1", "CCC-1"])
    ['AAA-1', 'CCC-1']
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"barcode list {path!r}: no such file")
        with _io.reading(path), _io.open_binary(path) as fh:
            raw = fh.read()
        raw = raw[3:] if raw[:3] == _io.BOM else raw  # a BOM is not a barcode's
        try:
            lines = raw.decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise BedParseError(path, raw.count(b"\n", 0, exc.start) + 1,
                                "the barcode list is not valid UTF-8 text") from None
        head = next((ln for ln in lines if ln.strip()), "")
        if "," in head.split("\t")[0]:
            return _csv_barcodes(path, lines)
        out, first = [], {}
        for i, ln in enumerate(lines, 1):
            b = ln.split("\t")[0].strip()
            if b and b != "#" and not b.startswith("# "):
                _add_barcode(out, first, b, path, i)
        return out
    # bytes (h5py's strings) are the barcodes' text: str(b"A-1") is "b'A-1'", matching nothing
    out = [b.decode("utf-8") if isinstance(b, bytes) else str(b) for b in source]
    seen: set[str] = set()
    dup = [b for b in out if b in seen or seen.add(b)]
    if dup:
        raise ValueError(f"the barcode allow-list repeats {dup[0]!r} "
                         f"({len(dup)} duplicate(s)); list each barcode once")
    return out


def _csv_barcodes(path: str, lines: list[str]) -> list[str]:
    """The ``barcode`` column of a CSV allow-list (rows of cells only where it says which)."""
    import csv

    rows = csv.reader(lines)
    header = [h.strip() for h in next(rows)]
    if "barcode" not in header:
        raise BedParseError(path, 1, f"a CSV barcode list needs a 'barcode' column (10x's "
                                     f"singlecell.csv has one); its header is {header[:8]}")
    col = header.index("barcode")
    flag = next((header.index(c) for c in ("is__cell_barcode", "is_cell") if c in header), None)
    out, first = [], {}
    for i, row in enumerate(rows, 2):
        if not row:
            continue
        if len(row) != len(header):
            raise BedParseError(path, i, f"{len(row)} CSV fields, the header has {len(header)}")
        if flag is not None and row[flag].strip() not in ("1", "True", "true"):
            continue
        _add_barcode(out, first, row[col].strip(), path, i)
    return out


def _add_barcode(out: list[str], first: dict, b: str, path: str, line: int) -> None:
    """Append the barcode ``b`` of ``path``'s ``line``, refusing one listed before."""
    if b in first:
        raise BedParseError(path, line, f"the barcode {b!r} repeats line {first[b]}; list each "
                                        "barcode once")
    first[b] = line
    out.append(b)


#: a shift's sites move by at most this many bp either way
MAX_SHIFT = 1 << 40
SHIFT = [Interval(Integral, -MAX_SHIFT, MAX_SHIFT)]


def _check_shift(shift) -> tuple[int, int]:
    """``shift`` as a pair of integers (each :data:`SHIFT`), checked before ``int()``."""
    check("shift", shift, [Each(*SHIFT, sequence=True, length=2)], "fragment_matrix")
    return int(shift[0]), int(shift[1])


#: what a call derives from a universe alone (the var frame, the cell kernels' var map, the
#: repeats map), made at its first use and kept while the universe lives: a small fragment
#: file against a large universe (616k 5-kb tiles) pays for the universe once, not per call
#: (by ``id`` of the universe, which is unhashable: it compares by value) a weak reference to
#: it and what was made; an entry leaves with its universe
_PER_UNIVERSE: dict[int, tuple] = {}


def per_universe(u, key: str, make):
    """``make(u)`` made once per universe ``u`` (and ``key``) and kept while ``u`` lives.

    Examples
    --------
    >>> from genotok import Universe
    >>> u = Universe(["chr1:0-10"])
    >>> per_universe(u, "n", lambda u: [u.n_regions]) is per_universe(u, "n", list)
    True
    """
    entry = _PER_UNIVERSE.get(id(u))
    if entry is None or entry[0]() is not u:
        entry = _PER_UNIVERSE[id(u)] = (weakref.ref(u), {})
        weakref.finalize(u, _PER_UNIVERSE.pop, id(u), None)
    got = entry[1]
    if key not in got:
        got[key] = make(u)
    return got[key]


def _dup_map(first: np.ndarray) -> Ragged | None:
    """For each region id, the ids of the identical regions it stands for (itself and its
    repeats); ``None`` when the universe has no repeated region."""
    n = first.size
    if n == 0 or (first == np.arange(n)).all():
        return None
    order = np.argsort(first, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(first, minlength=n), out=offsets[1:])
    return Ragged(order.astype(np.int64), offsets)


_FRAG_MESSAGES = {
    FK.FRAG_COLUMNS: "expected chrom, start, end, barcode[, count] (non-empty), separated by "
                     "tabs or by spaces",
    FK.FRAG_START: "start is not a non-negative integer (of at most 18 digits)",
    FK.FRAG_END: "end is not a non-negative integer (of at most 18 digits)",
    FK.FRAG_COUNT: "count (column 5) is not a non-negative integer (of at most 18 digits)",
    FK.FRAG_END_BEFORE_START: "end is before start",
    FK.FRAG_BARCODE: "the barcode (column 4) holds a control byte (below 0x20, or 0x7f); fix "
                    "or drop the line (re-create the file if it is damaged)",
    FK.FRAG_MIXED: "mixes tabs and spaces in its first five columns (a line's first separator "
                   "decides: one tab, or runs of spaces); gtars would split a barcode or name "
                   "holding a space where the tabs do not, so the line is refused: separate "
                   "every column by tabs, with no space inside a name",
}


#: the longest line a fragment file may hold (its lines are ~50 bytes) beyond a block: a longer
#: one is no fragment file (e.g. a .gz of one line, which inflated into memory until it ran out)
MAX_LINE_BYTES = 64 << 20


#: the largest block read at once, whatever ``block_bytes`` asks: a caller's 1 TiB was one
#: buffer of that size (MemoryError), 2**63 - 1 a ValueError reported as "corrupt gzip data"
MAX_BLOCK_BYTES = 1 << 30


class _LineTooLong(Exception):
    """Raised by :func:`_blocks_of_lines`; :func:`_scan_file` names the line."""


def _blocks_of_lines(path: str, block_bytes: int) -> Iterator[np.ndarray]:
    """Byte blocks ending at a line end (the last one may not). Each block is read into a
    fresh buffer after the previous block's unfinished line, so no block is copied (the
    buffer at least doubles while one line goes on: a long line is not copied once a block).
    The buffer is ``np.empty``, not a zeroed ``bytearray``: the pages a small file never
    reaches are never touched (a 32 MiB ``bytearray`` cost ~0.1 s per call of the 750 KB liver
    file, more than its parse). A damaged gzip stream raises :class:`BedParseError` naming
    the file (:func:`genotok._io.reading`); a line of more than :data:`MAX_LINE_BYTES`,
    :class:`_LineTooLong`."""
    rest = b""
    with _io.reading(path), _io.open_binary(path) as fh:
        rest = fh.read(3)
        rest = b"" if rest == _io.BOM else rest  # else the first chromosome is '\ufeffchr1'
        while True:
            raw = np.empty(len(rest) + max(block_bytes, len(rest)), np.uint8)
            raw[:len(rest)] = np.frombuffer(rest, np.uint8)
            got = fh.readinto(memoryview(raw)[len(rest):])
            if not got:
                break
            end = len(rest) + got
            cut = _last_newline(raw, end)
            if cut < 0:
                if end > MAX_LINE_BYTES:
                    raise _LineTooLong
                rest = raw[:end].tobytes()
                continue
            rest = raw[cut + 1:end].tobytes()
            yield raw[:cut + 1]
    if rest:
        yield np.frombuffer(rest, dtype=np.uint8)


def _last_newline(buf: np.ndarray, end: int, step: int = 1 << 16) -> int:
    """The offset of the last ``\\n`` in ``buf[:end]``, or -1 (searched back a window at a
    time: a block's last line is short).

    >>> _last_newline(np.frombuffer(b"ab\\ncd\\nef", np.uint8), 8, step=2)
    5
    >>> _last_newline(np.frombuffer(b"abc", np.uint8), 3)
    -1
    """
    hi = end
    while hi > 0:
        lo = max(0, hi - step)
        hits = np.flatnonzero(buf[lo:hi] == 10)
        if hits.size:
            return lo + int(hits[-1])
        hi = lo
    return -1


#: a file of at most this many bytes is read on the calling thread: a thread's start and
#: hand-over (~40 ms on a busy box) cost more than the overlap of so small a read gains
SYNC_BYTES = 4 << 20


_HIT_SLICE = 1 << 18  # lines per call of the block kernel (bounds its pair arrays)


def _prefetched(blocks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """The blocks of ``blocks``, the next one read on a thread while the caller counts this
    one: ISA-L / zlib inflate and the numba kernels release the GIL, so on two cores the
    inflate and the count overlap (two blocks in memory instead of one)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="genotok-fragments") as pool:
        ahead = pool.submit(next, blocks, None)
        try:
            while True:
                block = ahead.result()
                if block is None:
                    return
                ahead = pool.submit(next, blocks, None)
                yield block
        finally:
            ahead.cancel()
            try:
                ahead.result()
            except BaseException:  # noqa: BLE001  (the error that matters is the caller's)
                pass
            blocks.close()


class _Names:
    """A kernel name table (:func:`genotok.kernels.fragscan.name_table`) with the names it
    holds decoded: each new name once, a name that is not UTF-8 refused at its first line
    (decoding it with replacement characters would merge two barcodes or chromosomes)."""

    def __init__(self, known: list[str], what: str):
        self.what = what
        enc = [x.encode("utf-8", "surrogatepass") for x in known]
        bounds = np.zeros(len(enc) + 1, np.int64)
        np.cumsum([len(x) for x in enc], out=bounds[1:])
        self.table = FS.add_names(np.frombuffer(b"".join(enc) or b"\0", np.uint8), bounds,
                                  *FS.name_table())
        self.table[4][:len(known)] = -1  # "not seen yet" (see seen_known)
        self.names = list(known)
        self.n_known = len(known)

    def seen_known(self) -> bool:
        """Whether a line used one of the names the table was filled with."""
        return bool((self.table[4][:self.n_known] >= 0).any())

    def first_bad(self) -> tuple[int, str] | None:
        """Decode the names added since the last call: ``(line, message)`` of the first one
        that is not UTF-8, else ``None``."""
        _, off, _, arena, lines, n = self.table
        k = len(self.names)
        if n > k:  # all ASCII (barcodes are): one decode, cut at the byte offsets
            bounds = off[k:n + 1].tolist()
            raw = arena[bounds[0]:bounds[-1]].tobytes()
            if raw.isascii():
                text, b0 = raw.decode("ascii"), bounds[0]
                self.names.extend(text[a - b0:b - b0] for a, b in zip(bounds[:-1], bounds[1:]))
                return None
        for i in range(k, n):
            raw = arena[off[i]:off[i + 1]].tobytes()
            try:
                self.names.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                return int(lines[i]), (f"the {self.what} {raw!r} is not valid UTF-8; fix or "
                                       "drop the line (re-create the file if it is damaged)")
        return None


def _lines(path: str, block_bytes: int, regions, n_threads,
           sizes=None) -> Iterator[np.ndarray]:
    """The file's bytes as blocks of whole lines: a BGZF file's blocks inflated on threads
    (only the blocks of ``regions`` when a ``.tbi``/``.csi`` index is beside it), any other
    file read as one stream on a thread ahead; with ``regions`` and no index, the lines
    outside them are dropped as they stream by, as are (``sizes``) the fragments whose length
    is out of ``(min, max)``."""
    want = None if regions is None else bgzf.parse_regions(regions)
    if bgzf.is_bgzf(path):
        if want is not None and bgzf.has_index(path):
            blocks = bgzf.region_lines(path, want, n_threads)
            want = None  # the index' lines are the regions' already
        else:
            # a block is scanned before the next is asked for: inflated into reused buffers
            blocks = _bom_dropped(bgzf.line_blocks(path, min(block_bytes, BGZF_BATCH),
                                                   n_threads, reuse=True))
    elif os.path.getsize(path) <= SYNC_BYTES:
        blocks = _blocks_of_lines(path, min(block_bytes, MAX_BLOCK_BYTES))
    else:
        blocks = _prefetched(_blocks_of_lines(path, min(block_bytes, MAX_BLOCK_BYTES)))
    if want is None and sizes is None:
        yield from blocks
        return
    wanted = None if want is None else {c.encode("utf-8"): v for c, v in want.items()}
    try:
        for block in blocks:
            yield bgzf.keep_lines(block, wanted, sizes)
    finally:
        blocks.close()


def _bom_dropped(blocks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """``blocks`` (the first one starting the file) without a UTF-8 byte-order mark, as
    :func:`_blocks_of_lines` reads a plain or gzip file: kept, it made the first line's
    chromosome ``\ufeffchr1``, whose fragments silently hit nothing in a BGZF file only."""
    first = True
    try:
        for block in blocks:
            yield _io.strip_bom(block) if first else block
            first = False
    finally:
        blocks.close()


#: the inflated bytes of a BGZF file handed over at a time (at most; ``block_bytes`` when
#: smaller): ``n_threads + 1`` batches inflate ahead, so the blocks in memory stay a few
#: dozen MB, and fresh 32 MiB buffers cost more in page faults than their inflate (0.42 CPU s
#: against 0.28 for 8 MiB, the 224 MB of a 5M-fragment file; htslib's bgzip: 0.29)
BGZF_BATCH = 8 << 20
#: a block is cut into pieces of at least this many bytes, one a thread (a smaller block is
#: scanned whole: a hand-over to a thread costs more than so small a scan)
PIECE_BYTES = 1 << 20


def _cut(buf: np.ndarray, n: int) -> list[int]:
    """``n + 1`` offsets cutting ``buf`` into ``n`` pieces of whole lines (about equal; a
    piece may be empty when a line is longer than a piece); the last piece ends with ``buf``.

    >>> _cut(np.frombuffer(b"a\\nbb\\nc\\nd", np.uint8), 3)
    [0, 5, 7, 8]
    """
    cuts = [0]
    for i in range(1, n):
        at = max(cuts[-1], buf.size * i // n)
        nl = -1
        while at < buf.size and nl < 0:
            window = buf[at:at + (1 << 16)]
            hit = np.flatnonzero(window == 10)
            nl = at + int(hit[0]) if hit.size else -1
            at += window.size
        cuts.append(buf.size if nl < 0 else nl + 1)
    return cuts + [buf.size]


def _table_copy(table: tuple) -> tuple:
    return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in table)


class _Piece:
    """One thread's share of each block, with tables of its own kept across blocks: its
    chromosome and barcode tables start as copies of the file's (the universe's names, the
    allow-list: the same ids) and number the names they meet after them in their own order;
    :attr:`ids` maps those local cell ids to the file's (made when the piece's new names are
    merged into the file's tables, in the pieces' order). Its own search cursors, per-cell
    counters (by local id, summed into the file's at the end) and pair buffers."""

    def __init__(self, chroms: _Names, cells: _Names, cursors: np.ndarray):
        self.ctab, self.btab = _table_copy(chroms.table), _table_copy(cells.table)
        self.cursors = cursors.copy()
        self.nfrag = np.zeros(1, np.int64)
        self.missed = np.zeros((2, 1), np.float64)
        self.keys = np.empty(1 << 16, np.int64)
        self.weights = np.empty(1 << 16, np.float64)
        #: the file's id of each local cell id (the copied names: themselves)
        self.ids = np.arange(cells.table[-1], dtype=np.int64)
        self.same = True  # whether ids is the identity
        self.nc = chroms.table[-1]  # the local chromosome names merged so far
        self.m = self.lines = 0
        self.status = FS.FRAG_OK

    def scan(self, buf: np.ndarray, n_known: int, n_allow: int, search: tuple) -> None:
        """Count the whole lines of ``buf`` (lines numbered from 0 in the tables)."""
        pos, line, m, status = 0, 0, 0, FS.FRAG_OK
        while pos < buf.size and status == FS.FRAG_OK:
            self.keys, self.weights, m, self.ctab, self.btab, self.nfrag, self.missed, pos, \
                line, status = FS.scan_fragments(
                    buf, pos, line, _HIT_SLICE, self.keys, self.weights, m, self.ctab,
                    self.btab, n_known, n_allow, self.nfrag, self.missed, self.cursors, *search)
        self.m, self.lines, self.status = m, line, status

    def merge_into(self, chroms: _Names, cells: _Names, base: int) -> None:
        """Add the names this piece met first in this block to the file's tables (those the
        file lacks, first seen at ``base`` + their line here), in their order here, and
        extend :attr:`ids`."""
        _, off, _, arena, lines, n = self.ctab
        if n > self.nc:
            chroms.table, _ = FS.merge_names(arena, off, lines, self.nc, n, base, *chroms.table)
            self.nc = n
        _, off, _, arena, lines, n = self.btab
        k = self.ids.size
        if n > k:
            cells.table, new = FS.merge_names(arena, off, lines, k, n, base, *cells.table)
            self.same = self.same and bool((new == np.arange(k, n)).all())
            self.ids = np.concatenate([self.ids, new])

    def file_keys(self, n_cols: int) -> np.ndarray:
        """This block's pairs with the file's cell ids."""
        keys = self.keys[:self.m]
        if self.same or not keys.size:
            return keys
        cell = keys // n_cols
        return self.ids[cell] * n_cols + (keys - cell * n_cols)


def _split_threads(n_threads: int, blocked: bool) -> tuple[int, int]:
    """``(scanning, inflating)`` threads for a call given ``n_threads``: a BGZF file's blocks
    inflate on threads of their own beside the scan, at about the scan's speed (ISA-L's
    inflate and the scan each take ~0.2 CPU s for 5M lines), so the threads are shared half
    and half (on 2 cores: one inflates while the other scans, and neither waits; a scan
    thread per core beside the inflating ones cost 0.06 CPU s more for no wall); another
    file is inflated or read on one thread ahead, and scanned on ``n_threads``.

    >>> _split_threads(2, True), _split_threads(1, True), _split_threads(4, False)
    ((1, 1), (1, 1), (4, 1))
    """
    if not blocked:
        return n_threads, 1
    scan = max(1, n_threads // 2)
    return scan, max(1, n_threads - scan)


def _scan_file(path, block_bytes, chroms, cells, n_allow, state, pairs, cursors, search,
               universe, spill=None, spill_bytes: float = 0, regions=None, n_threads=None,
               sizes=None):
    """The block loop of :func:`_count`: each block cut into pieces of whole lines scanned on
    threads at once (:class:`_Piece`: the kernel releases the GIL), while the next blocks
    inflate (a BGZF file: half the ``n_threads`` scan, half inflate, :func:`_split_threads`);
    then, in the pieces' order, their new names join the file's tables (so cells keep the
    order of first appearance and the ids of a scan on one thread), their pairs the counts;
    the first bad line raised. ``state`` (``[nfrag, missed]``) is set at
    the end. With a ``spill``, the pairs go to disk whenever they hold more than
    ``spill_bytes``."""
    from concurrent.futures import ThreadPoolExecutor

    import numba

    n_threads = numba.get_num_threads() if n_threads is None else max(int(n_threads), 1)
    n_threads, n_inflate = _split_threads(n_threads, bgzf.is_bgzf(path))
    pieces = [_Piece(chroms, cells, cursors)]  # more as a block is cut into more: with the
    # file's names so far (a call's n_threads of 10**6 made 10**6 pieces for a 1-line file)
    n_cols = search[-1]
    line, warned = 1, False

    def blocks():
        try:
            yield from _lines(path, block_bytes, regions, n_inflate, sizes)
        except _LineTooLong:  # every line before it is counted: ``line`` is this one
            raise BedParseError(path, line, f"a line of more than {MAX_LINE_BYTES >> 20} MiB: "
                                "not a fragment file") from None

    pool = ThreadPoolExecutor(n_threads - 1, "genotok-scan") if n_threads > 1 else None
    try:
        for buf in blocks():
            n = max(1, min(n_threads, buf.size // PIECE_BYTES))
            cuts = _cut(buf, n)
            pieces += [_Piece(chroms, cells, cursors) for _ in range(len(pieces), n)]
            args = (chroms.n_known, n_allow, search)
            futs = [pool.submit(pieces[i].scan, buf[cuts[i]:cuts[i + 1]], *args)
                    for i in range(1, n)]
            pieces[0].scan(buf[:cuts[1]], *args)
            for f in futs:
                f.result()
            bad = []
            for p in pieces[:n]:
                p.merge_into(chroms, cells, line)
                seen = _first_seen(p.ctab, chroms)
                if seen.size:  # a known chromosome's first line (for the naming hint)
                    chroms.table[4][seen] = np.where(chroms.table[4][seen] < 0, line,
                                                     chroms.table[4][seen])
                bad += [x for x in (cells.first_bad(), chroms.first_bad()) if x is not None]
                if p.status != FS.FRAG_OK:
                    bad.append((line + p.lines, _FRAG_MESSAGES[int(p.status)]))
                if bad:  # nothing of this piece is counted: its pairs may hold the cell of a
                    break  # barcode that is no UTF-8, beyond the decoded names' rows
                line += p.lines
                pairs.extend(p.file_keys(n_cols), p.weights[:p.m])
                p.m = 0
                n_cells = len(cells.names) if n_allow < 0 else n_allow
                pairs.fold_if_full(n_cells)
                if spill is not None and (pairs.nnz + pairs.n_pending) * 16 > spill_bytes:
                    pairs.spill_to(spill, n_cells)  # to disk by buckets of cells, and afresh
            if bad:
                raise BedParseError(path, *min(bad))
            if not warned and len(chroms.names) > chroms.n_known and not chroms.seen_known():
                warned = True  # the universe's chr-prefix naming hint, as the tokenizer gives it
                unknown = chroms.names[chroms.n_known:]
                universe.map_codes(RegionSet(unknown, np.zeros(1, np.int32), [0], [1],
                                             source=path, validate=False))
    finally:
        if pool is not None:
            pool.shutdown()
    n_cells = len(cells.names) if n_allow < 0 else n_allow
    nfrag = np.zeros(max(n_cells, len(cells.names), 1), np.int64)
    missed = np.zeros((2, nfrag.size), np.float64)
    for p in pieces:  # each piece's counters by local id, added at the file's ids
        k = min(p.nfrag.size, p.ids.size)
        np.add.at(nfrag, p.ids[:k], p.nfrag[:k])
        k = min(p.missed.shape[1], p.ids.size)
        for row in range(2):
            np.add.at(missed[row], p.ids[:k], p.missed[row, :k])
    state[:] = [nfrag, missed]


def _first_seen(table: tuple, names: _Names) -> np.ndarray:
    """The known names (of ``names``' first ``n_known``) a piece's table saw a line of."""
    return np.flatnonzero(table[4][:names.n_known] >= 0)


def _count(path, tokenizer, *, mode: str, shift, use_count: bool, barcodes, min_fragments: int,
           block_bytes: int, n_threads, memory_mb: float | None = None, regions=None,
           sizes=None):
    """Stream the file; returns ``(names, csr of cells × (n_regions + 1), n_fragments)``: the
    last column counts the fragments none of whose sites/overlaps hit a region (what
    :func:`genotok.tokenize_fragments` turns into ``<unk>``); a hit on a repeated universe
    line counts at its first occurrence only (token semantics, as the tokenizer's ids).

    Each block is cut into pieces scanned on threads by one kernel
    (:func:`genotok.kernels.fragscan.scan_fragments`: parse, barcode and chromosome tables,
    the search of each fragment or cut site, the pairs) while the next blocks inflate
    (:func:`_scan_file`).

    ``memory_mb``: the counted pairs held in memory (16 bytes each) before they spill to disk
    (:class:`~genotok.singlecell.spill.RowSpill`); the matrix is then a :class:`_Spilled`
    (read back a bucket of cells at a time; the caller closes it)."""
    check("mode", mode, [Options(*MODES)], "fragment_matrix")
    left, right = _check_shift(shift)
    check("min_fragments", min_fragments, [Interval(Integral, 0, None)], "fragment_matrix")
    check("block_bytes", block_bytes, [Interval(Integral, 1, None)], "fragment_matrix")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise BedParseError(path, None, "is a directory, not a fragment file"
                            if os.path.isdir(path) else "not a regular file (a FIFO, socket "
                            "or device); copy the stream to a file first"
                            if os.path.exists(path) else "no such fragment file")
    u, s = tokenizer.universe, tokenizer.settings
    n_cols = u.n_regions + 1
    allow = None if barcodes is None else read_barcodes(barcodes)
    chroms = _Names(list(u.chrom_names), "chromosome name")
    cells = _Names([] if allow is None else allow, "barcode")
    n_allow = -1 if allow is None else len(allow)
    pairs = _PairCounts(n_cols)
    check("memory_mb", memory_mb, [*MEMORY_MB, None], "fragment_matrix")
    spill = None if memory_mb is None else RowSpill(n_cols, rows_per_bucket=SPILL_ROWS)
    sw = u.sweep
    cursors = np.tile(sw.chrom_ptr[:-1], (2, 1)).astype(np.int64)
    min_overlap, frac_q, frac_r, overlap = s.kernel_args()
    search = (sw.chrom_ptr, sw.starts, sw.ends, sw.maxend, sw.ids, min_overlap, frac_q, frac_r,
              int(overlap), int(parse(Counting, mode)), left, right, bool(use_count),
              u.n_regions, n_cols)
    state: list = []
    try:
        _scan_file(path, block_bytes, chroms, cells, n_allow, state, pairs, cursors, search, u,
                   spill, 0 if memory_mb is None else memory_mb * 2 ** 20, regions, n_threads,
                   sizes)
    except BaseException:
        if spill is not None:  # its files go with an error
            spill.close()
        raise
    finally:
        pairs.close()
    nfrag, missed = state
    n_cells = len(cells.names) if allow is None else len(allow)
    who = np.flatnonzero(missed[0, :n_cells])
    pairs.add(who * n_cols + u.n_regions, missed[1, who], n_cells)
    nfrag = nfrag[:n_cells]
    names = cells.names[:n_cells]
    keep = np.flatnonzero(nfrag >= min_fragments)
    if spill is not None:
        pairs.spill_to(spill, n_cells)
        pairs.close()
        X = _Spilled(spill, keep)
    else:
        X = pairs.csr(n_cells)
        if keep.size != n_cells:
            X = X[keep]
    del pairs
    if keep.size != n_cells:
        names = [names[i] for i in keep]
        nfrag = nfrag[keep]
    return names, X, nfrag


__all__ = ["read_barcodes"]
