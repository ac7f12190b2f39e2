"""BED text to region arrays: the parse of a file's bytes a block of whole lines at a time, each
block in chunks on all numba threads when it is large, and the error that names the file, the
line and the offending text.

:meth:`genotok.regions.RegionSet.from_bed` reads a file with :func:`_read_file`; the byte rules
are the kernel's (:mod:`genotok.kernels.parse`).

Memory: a file larger than one block (:data:`genotok._io.BLOCK_BYTES`, 8 MiB of text) is read
and parsed a block at a time, the next block read (and inflated) on a thread while this one
parses on the numba threads, into output arrays sized from the first block's records per byte;
the finished arrays are cut to the records. So the peak is the output (20 bytes a record:
int32 code, int64 start and end) plus two blocks, not the file (``benchmarks/RESULTS.md``,
"Large BED files"). The parse state that crosses a block (the header rule, line numbers, the
chromosome names, the first 8 KiB for the not-a-text-file check) is carried by
:class:`_Records`, so a file parses the same whatever the block size (tests/test_bed_blocks.py).

Examples
--------
>>> names, codes, starts, ends = _read_buffer(np.frombuffer(b"chr1\\t5\\t9\\n", np.uint8), "x.bed")
>>> names, codes.tolist(), starts.tolist(), ends.tolist()
(['chr1'], [0], [5], [9])
"""

from __future__ import annotations

import os

import numpy as np

from . import _config, _io, _small
from .errors import BedParseError
from .kernels import parse as _parse

#: a NUL byte in the first ``_HEAD`` bytes makes any problem "binary data": the file is not
#: text at all; ``_HEAD_KEEP`` keeps room for the text of the line shown with it
_HEAD = 8192
_HEAD_KEEP = _HEAD + 256


def _cold_read(path: str):
    """:func:`_read_file`'s answer for a small plain BED file (``genotok._small.read_plain``:
    the same records as the parse kernel, by ``tests/test_small.py``), or ``None``: used while
    the parse kernel is neither compiled nor cached, so that a new install's first small files
    (the README's Quick start) do not wait ~10 s for it to compile."""
    if not os.path.isfile(path):
        return None
    plain = _small.read_plain(path, _small.COLD_REGIONS, _small.COLD_BYTES)
    if plain is None:
        return None
    names, starts, ends, _ = plain
    index: dict = {}
    codes = np.fromiter((index.setdefault(n, len(index)) for n in names), np.int32, len(names))
    return list(index), codes, np.array(starts, np.int64), np.array(ends, np.int64)


def _read_buffer(buf: np.ndarray, path: str, allow_reversed: bool = False):
    """``(chromosome names, codes, starts, ends)`` of the BED text in ``buf`` (uint8), the
    names in order of first appearance; ``path`` names the file in errors.

    Raises
    ------
    BedParseError
        At the first line that breaks the rules (``allow_reversed`` keeps lines whose end is
        before their start).

    Examples
    --------
    >>> _read_buffer(np.frombuffer(b"chr1\\t9\\t5\\n", np.uint8), "x.bed")
    Traceback (most recent call last):
    ...
    genotok.errors.BedParseError: x.bed:1: end is before start (are the columns swapped?): ...
    """
    records = _Records(allow_reversed)
    buf = _io.strip_bom(buf)
    try:
        problem = records.add(buf)
    finally:
        records.close()
    if problem is not None:
        raise BedParseError(path, *(_nul_problem(buf) or problem))
    return records.finish()


def _read_file(path: str | os.PathLike, allow_reversed: bool = False,
              block_bytes: int | None = None):
    """``(chromosome names, codes, starts, ends)`` of a BED or BED.gz file: what
    :func:`_read_buffer` gives for its whole text, read ``block_bytes`` at a time (default
    :data:`genotok._io.BLOCK_BYTES`; a file of at most one block is read whole).

    Raises
    ------
    BedParseError
        As :func:`_read_buffer` (the line numbers are the file's), and for a missing,
        unreadable or damaged (gzip) file.

    Examples
    --------
    >>> import tempfile, os, pathlib
    >>> p = os.path.join(tempfile.mkdtemp(), "x.bed")
    >>> _ = pathlib.Path(p).write_bytes(b"chr1\\t5\\t9\\nchr2\\t1\\t2\\nchr1\\t0\\t3\\n")
    >>> names, codes, starts, ends = _read_file(p, block_bytes=12)  # three blocks
    >>> names, codes.tolist(), starts.tolist(), ends.tolist()
    (['chr1', 'chr2'], [0, 1, 0], [5, 1, 0], [9, 2, 3])
    """
    p = os.fspath(path)
    if not _config.kernel_ready(_parse.parse_bed):  # a new install's first files: no compile
        plain = _cold_read(p)
        if plain is not None:
            return plain
    records = _Records(allow_reversed)
    blocks = _io.line_blocks(p, block_bytes)
    head = b""  # the file's first bytes, for the binary-file check
    try:
        for buf, expected, last in blocks:
            if not head:
                buf = _io.strip_bom(buf)  # (line numbers stay the file's)
            records.streamed |= not last
            if len(head) < _HEAD_KEEP:
                head += buf[:_HEAD_KEEP - len(head)].tobytes()
            problem = records.add(buf, None if last else expected)
            if problem is not None:  # its text is taken: now the blocks may move on
                try:
                    while len(head) < _HEAD_KEEP and (more := next(blocks, None)) is not None:
                        head += more[0][:_HEAD_KEEP - len(head)].tobytes()
                except BedParseError:  # damage after the problem: the problem is the news
                    pass
                raise BedParseError(p, *(_nul_problem(np.frombuffer(head, np.uint8)) or problem))
    finally:
        blocks.close()
        records.close()
    return records.finish()


class _Records:
    """The records of a file's blocks, parsed in order into one set of output arrays, and what
    the parse of the next block needs from the blocks before it: the chromosome names (codes
    in order of first appearance across blocks), the lines before it (error lines are the
    file's) and whether a data line or the header came already (a header may only come first).
    """

    def __init__(self, allow_reversed: bool = False):
        self.allow_reversed = allow_reversed
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.out: tuple | None = None  # codes, starts, ends: records [0, m), then room
        self.m = 0
        self.lines = 0
        self.text = 0  # bytes of the blocks before
        self.seen_data = False
        self.blocks = 0
        self.streamed = False  # one block of many: parsed on all threads from 1 MiB
        self.pool = None  # the threads that parse a block's chunks, started once

    def close(self) -> None:
        """Stop the parse threads (the records stay)."""
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def add(self, buf: np.ndarray, expected: int | None = None):
        """Parse the block ``buf`` (whole lines: those after the blocks added before) into the
        outputs; ``expected``: the bytes of text the file is expected to hold, when more blocks
        follow (sizes the outputs for them). Returns ``None``, or ``(line, message)`` of the
        first problem."""
        self.blocks += 1
        chunks = _split_lines(buf, _parse_threads(buf.size, PARALLEL_BLOCK_BYTES)
                              if self.streamed else _parse_threads(buf.size))
        results, base = self._parse(buf, chunks, expected)
        error = None  # (line, status, byte position) of the first problem the kernel found
        seen_data = self.seen_data
        for (a, _), r in zip(chunks, results):
            if int(r.status) != _parse.OK:
                if a and not seen_data:  # maybe the file's header: only a serial parse can tell
                    chunks = [(0, buf.size)]
                    results, base = self._parse(buf, chunks, expected)
                    r, a = results[0], 0
                if int(r.status) != _parse.OK:
                    line = int(r.err_line) + (int(np.count_nonzero(buf[:a] == 10)) if a else 0)
                    error = (self.lines + line, int(r.status), int(r.err_pos) + a)
                break
            seen_data = seen_data or r.codes.size > 0 or r.header_line > 0
        bad_name = self._names(buf, chunks, results, error is None)
        if error is not None or bad_name is not None:
            return _problem(buf, error, bad_name)
        self.m = self._joined(results, base)
        self.lines += sum(int(r.err_line) for r in results)  # an OK parse's line: its last
        self.seen_data = self.seen_data or any(  # (the serial parse's too)
            r.codes.size > 0 or r.header_line > 0 for r in results)
        self.text += buf.size
        return None

    def _parse(self, buf: np.ndarray, chunks: list[tuple[int, int]], expected: int | None):
        """Parse the ``chunks`` of ``buf`` (on threads when more than one: the parser releases
        the GIL) into the outputs after the records so far, each chunk into its own slice:
        ``(kernel results, slice bounds)``. The usual block (one record per line) then needs
        no concatenation, which cost a copy of every record and 20 MB of peak memory on a
        1M-line universe."""
        parts = [buf[a:b] for a, b in chunks]

        def parse(k: int):
            lo, hi = int(base[k]), int(base[k + 1])
            return _parse.parse_into(parts[k], bounds[k][1], *(a[lo:hi] for a in self.out),
                                     allow_header=k == 0 and not self.seen_data,
                                     allow_reversed=self.allow_reversed)

        if len(parts) == 1:
            bounds = [_parse.bound(parts[0])]
            base = self._reserve(bounds, buf.size, expected)
            return [parse(0)], base
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(len(parts), thread_name_prefix="genotok-parse")
        bounds = list(self.pool.map(_parse.bound, parts))
        base = self._reserve(bounds, buf.size, expected)
        return list(self.pool.map(parse, range(len(parts)))), base

    def _reserve(self, bounds: list, size: int, expected: int | None) -> np.ndarray:
        """Room in the outputs for the records the ``bounds`` allow after the first ``m``:
        their slice bounds.

        The outputs of the first block with records, when more blocks follow (``expected``
        bytes of text in all), have room for the rest of the file, guessed from this block's
        records per byte (+25%): room never written costs address space, not memory, and
        ``finish`` gives it back. Should the room still run out (a file whose first block has
        far fewer records per byte than the rest), the outputs grow in place
        (``ndarray.resize``) by this block's records and an eighth at least. That costs memory
        for a moment: ``realloc`` moves the pages rather than copying records, but the peak RSS
        counts them twice while it does (on Linux with NumPy's huge pages: a 74 MB array
        raised the peak by 74 MB), and NumPy zeroes what it adds."""
        base = self.m + np.concatenate(([0], np.cumsum([b for b, _ in bounds]))).astype(np.int64)
        need = int(base[-1])
        cap = 0 if self.out is None else self.out[0].size
        if self.out is not None and need <= cap:
            return base
        if cap:  # out of room: grow (the last block: to its records)
            room = need if expected is None else max(2 * need - self.m, cap + cap // 8)
            for a in self.out:
                a.resize(room, refcheck=False)
            return base
        room = need  # the first records (m is 0): room for all, or guessed for the rest
        if expected is not None:
            room = max(need, int(need * ((expected - self.text) / max(size, 1)) * 1.25))
        try:
            self.out = (np.empty(room, np.int32), np.empty(room, np.int64),
                        np.empty(room, np.int64))
        except MemoryError:  # a guess too large for the address space
            self.out = (np.empty(need, np.int32), np.empty(need, np.int64),
                        np.empty(need, np.int64))
        return base

    def _names(self, buf: np.ndarray, chunks: list, results: list, remap: bool):
        """Merge the chunks' chromosome names into the file's (UTF-8 decoded once per name and
        chunk) and, when ``remap``, turn the chunks' codes into the file's, in place. Returns
        ``(line, raw bytes)`` of the first name that is not UTF-8, or None."""
        bad_name = None
        for (a, _), r in zip(chunks, results):
            codes = np.empty(r.name_start.size, dtype=np.int32)
            for c, (x, y) in enumerate(zip(r.name_start.tolist(), r.name_end.tolist())):
                raw = buf[a + x:a + y].tobytes()
                try:
                    name = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line = self.lines + int(np.count_nonzero(buf[:a + x] == 10)) + 1
                    if bad_name is None or line < bad_name[0]:
                        bad_name = (line, raw)
                    continue
                codes[c] = self.index.setdefault(name, len(self.index))
                if codes[c] == len(self.names):
                    self.names.append(name)
            if remap and bad_name is None and r.codes.size and not bool(
                    (codes == np.arange(codes.size)).all()):  # identity for the first chunk
                r.codes[:] = codes[r.codes]  # in place: a view of the chunk's records
        return bad_name

    def _joined(self, results: list, base: np.ndarray) -> int:
        """Move the chunks' records together (comment or blank lines leave gaps at the end of
        a chunk's slice); returns the records in all."""
        dst = int(base[0])
        for k, r in enumerate(results):
            src, n = int(base[k]), r.codes.size
            if src != dst:
                for a in self.out:
                    a[dst:dst + n] = a[src:src + n]  # overlapping, dst < src: NumPy buffers it
            dst += n
        return dst

    def finish(self):
        """``(names, codes, starts, ends)``: the records, in arrays of their size. One block's
        are views of its outputs when a few lines were not records (as before blocks); more
        blocks' outputs are cut to size in place."""
        if self.out is None:
            self._reserve([], 0, None)
        m, out = self.m, self.out
        if m != out[0].size:
            if self.blocks > 1:
                for a in out:
                    a.resize(m, refcheck=False)
            else:
                out = tuple(a[:m] for a in out)
        return (self.names, *out)


PARALLEL_PARSE_BYTES = 8 << 20  # below this, one thread parses faster than two start
#: the same for a block of a file read in blocks, whose threads start once for the file
PARALLEL_BLOCK_BYTES = 1 << 20


def _parse_threads(n_bytes: int, floor: int = PARALLEL_PARSE_BYTES) -> int:
    import numba

    if n_bytes < floor:
        return 1
    return max(1, min(numba.get_num_threads(), n_bytes // (floor // 2)))


def _split_lines(buf: np.ndarray, k: int) -> list[tuple[int, int]]:
    """``k`` byte ranges covering ``buf``, each ending just after a newline (or at the end)."""
    n = buf.size
    cuts = [0]
    for i in range(1, k):
        target = max(cuts[-1], i * n // k)
        nl = _next_newline(buf, target, min(n, target + (1 << 20)))
        if nl < 0:
            break
        cuts.append(nl + 1)
    cuts.append(n)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a] or [(0, n)]


def _next_newline(buf: np.ndarray, lo: int, hi: int) -> int:
    """Index of the first newline in ``buf[lo:hi]``, or -1: windows of 4 KiB, then doubling (a
    line is short; comparing the whole megabyte at once was measurable: benchmarks/RESULTS.md)."""
    size = 4096
    while lo < hi:
        window = buf[lo:min(hi, lo + size)]
        at = int(np.argmax(window == 10))
        if window[at] == 10:
            return lo + at
        lo += window.size
        size *= 2
    return -1


def _problem(buf: np.ndarray, error: tuple | None, bad_name: tuple | None) -> tuple[int, str]:
    """``(line, message)`` of the earlier of a kernel ``error`` (line, status, byte in ``buf``)
    and a ``bad_name`` (line, raw bytes) that is not UTF-8."""
    if bad_name is not None and (error is None or bad_name[0] < error[0]):
        return bad_name[0], (f"chromosome name {bad_name[1]!r} is not valid UTF-8 (is the file "
                             "in another encoding? convert it to UTF-8)")
    line, status, pos = error
    keep = 16 if status == _parse.BINARY else 80
    return line, f"{_parse.MESSAGES[status]}: {_line_text(buf, pos, keep)}"


def _nul_problem(head: np.ndarray) -> tuple[int, str] | None:
    """The problem to report instead of any other when the file's first 8 KiB (``head``: the
    file's first bytes) hold a NUL byte: the file is not text at all (a BAM, a PNG...), and
    saying so helps more than whatever the parser tripped over first."""
    nul = np.flatnonzero(head[:_HEAD] == 0)
    if not nul.size:
        return None
    pos = int(nul[0])
    return (int(np.count_nonzero(head[:pos] == 10)) + 1,
            f"{_parse.MESSAGES[_parse.BINARY]}: {_line_text(head, pos, 16)}")


def _line_text(buf: np.ndarray, pos: int, keep: int = 80) -> str:
    """The line holding byte ``pos``, its first ``keep`` bytes, escaped (a binary file's
    escaped bytes take four characters each: it gets a short excerpt)."""
    if pos < 0:
        return ""
    lo = pos
    while lo > 0 and buf[lo - 1] != 10:
        lo -= 1
    hi = pos
    while hi < buf.size and buf[hi] != 10 and hi - lo < 200:
        hi += 1
    text = buf[lo:hi].tobytes()
    return repr(text[:keep] + (b"..." if len(text) > keep else b""))[1:]
