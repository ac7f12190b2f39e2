"""BED text to region arrays: the parse of a whole file's bytes (in chunks on all numba threads
when it is large) and the error that names the file, the line and the offending text.

:meth:`genotok.regions.RegionSet.from_bed` reads a file with :func:`read_buffer`; the byte rules
are the kernel's (:mod:`genotok.kernels.parse`).

Examples
--------
>>> names, codes, starts, ends = read_buffer(np.frombuffer(b"chr1\\t5\\t9\\n", np.uint8), "x.bed")
>>> names, codes.tolist(), starts.tolist(), ends.tolist()
(['chr1'], [0], [5], [9])
"""

from __future__ import annotations

import numpy as np

from .errors import BedParseError
from .kernels import parse as _parse


def read_buffer(buf: np.ndarray, path: str, allow_reversed: bool = False):
    """``(chromosome names, codes, starts, ends)`` of the BED text in ``buf`` (uint8), the
    names in order of first appearance; ``path`` names the file in errors.

    Raises
    ------
    BedParseError
        At the first line that breaks the rules (``allow_reversed`` keeps lines whose end is
        before their start).

    Examples
    --------
    >>> read_buffer(np.frombuffer(b"chr1\\t9\\t5\\n", np.uint8), "x.bed")
    Traceback (most recent call last):
    ...
    genotok.errors.BedParseError: x.bed:1: end is before start (are the columns swapped?): ...
    """
    chunks = _split_lines(buf, 1 if allow_reversed else _parse_threads(buf.size))
    if len(chunks) == 1:
        results = [_parse.run(buf, allow_reversed=allow_reversed)]
    else:  # the parser releases the GIL: chunks parse side by side
        results, shared = _parse_chunks(buf, chunks)
    error = None  # (line, status, byte position) of the first problem the kernel found
    seen_data = False
    for k, ((a, _), r) in enumerate(zip(chunks, results)):
        status = int(r.status)
        if status != _parse.OK:
            if a and not seen_data:  # maybe the file's header: only a serial parse can tell
                results, chunks = [_parse.run(buf)], [(0, buf.size)]
                r, a = results[0], 0
                status = int(r.status)
            if status != _parse.OK:
                line = int(r.err_line) + (int(np.count_nonzero(buf[:a] == 10)) if a else 0)
                error = (line, status, int(r.err_pos) + a)
            break
        seen_data = seen_data or r.codes.size > 0 or r.header_line > 0
    # chromosome names: UTF-8 decoded once per name and chunk, merged in order of appearance
    names: list[str] = []
    index: dict[str, int] = {}
    bad_name = None  # (line, raw name) of the first name that is not UTF-8
    for (a, _), (codes, _, _, ns, ne, *_rest) in zip(chunks, results):
        remap = np.empty(ns.size, dtype=np.int32)
        for c, (x, y) in enumerate(zip(ns.tolist(), ne.tolist())):
            raw = buf[a + x:a + y].tobytes()
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                line_no = int(np.count_nonzero(buf[:a + x] == 10)) + 1
                if bad_name is None or line_no < bad_name[0]:
                    bad_name = (line_no, raw)
                continue
            remap[c] = index.setdefault(name, len(index))
            if remap[c] == len(names):
                names.append(name)
        if error is None and bad_name is None and codes.size and not bool(
                (remap == np.arange(remap.size)).all()):  # identity for the first chunk
            codes[:] = remap[codes]  # in place: a view of the chunk's records
    if error is not None or bad_name is not None:
        _raise_parse_error(buf, path, error, bad_name)
    if len(results) == 1:
        r = results[0]
        return names, r.codes, r.starts, r.ends
    return (names, *_joined(results, *shared))


PARALLEL_PARSE_BYTES = 8 << 20  # below this, one thread parses faster than two start


def _parse_threads(n_bytes: int) -> int:
    import numba

    if n_bytes < PARALLEL_PARSE_BYTES:
        return 1
    return max(1, min(numba.get_num_threads(), n_bytes // (PARALLEL_PARSE_BYTES // 2)))


def _parse_chunks(buf: np.ndarray, chunks: list[tuple[int, int]]):
    """Parse the ``chunks`` of ``buf`` in threads into one set of output arrays, each chunk
    into its own slice: ``(kernel results, (outputs, slice bounds))``. The usual file (one
    record per line) then needs no concatenation, which cost a copy of every record and 20 MB
    of peak memory on a 1M-line universe."""
    from concurrent.futures import ThreadPoolExecutor

    parts = [buf[a:b] for a, b in chunks]
    with ThreadPoolExecutor(len(chunks)) as pool:
        bounds = list(pool.map(_parse.bound, parts))
        sizes = [need for need, _ in bounds]
        base = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        out = (np.empty(int(base[-1]), np.int32), np.empty(int(base[-1]), np.int64),
               np.empty(int(base[-1]), np.int64))

        def parse(k: int):
            lo, hi = int(base[k]), int(base[k + 1])
            return _parse.parse_into(parts[k], bounds[k][1], *(a[lo:hi] for a in out),
                                     allow_header=chunks[k][0] == 0)

        return list(pool.map(parse, range(len(chunks)))), (out, base)


def _joined(results: list[_parse.BedParse], out: tuple, base: np.ndarray) -> tuple:
    """The chunks' records as three arrays: ``out`` itself when every chunk filled its slice
    (no copy), else the records moved together (comment or blank lines leave gaps)."""
    dst = 0
    for k, r in enumerate(results):
        src, m = int(base[k]), r.codes.size
        if src != dst:
            for a in out:
                a[dst:dst + m] = a[src:src + m]  # overlapping, dst < src: NumPy buffers it
        dst += m
    return out if dst == out[0].size else tuple(a[:dst] for a in out)


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
    line is short; comparing the whole megabyte at once cost 0.3 ms of a 6 ms parse)."""
    size = 4096
    while lo < hi:
        window = buf[lo:min(hi, lo + size)]
        at = int(np.argmax(window == 10))
        if window[at] == 10:
            return lo + at
        lo += window.size
        size *= 2
    return -1


def _raise_parse_error(buf: np.ndarray, path: str, error: tuple | None, bad_name: tuple | None):
    """Raise the BedParseError for the earliest problem: a kernel ``error`` (line, status,
    byte) or a ``bad_name`` (line, raw bytes) that is not UTF-8.

    A NUL byte in the first 8 KiB trumps both: the file is not text at all (a BAM, a PNG...),
    and saying so helps more than whatever the parser tripped over first.
    """
    nul = np.flatnonzero(buf[:8192] == 0)
    if nul.size:
        pos = int(nul[0])
        error = (int(np.count_nonzero(buf[:pos] == 10)) + 1, _parse.BINARY, pos)
    elif bad_name is not None and (error is None or bad_name[0] < error[0]):
        raise BedParseError(path, bad_name[0], f"chromosome name {bad_name[1]!r} is not valid "
                            "UTF-8 (is the file in another encoding? convert it to UTF-8)")
    line, status, pos = error
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
