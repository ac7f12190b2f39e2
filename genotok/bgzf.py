"""BGZF (blocked gzip) files: blocks inflated on worker threads, tabix/CSI region reads.

A BGZF file (``bgzip``, as 10x fragment files are written) is a series of gzip members of at
most 64 KiB each, every member's extra field holding a ``BC`` subfield with its compressed size
(``BSIZE``). The block boundaries are found from those sizes without inflating anything, so
batches of blocks inflate on a few threads at once (ISA-L, which releases the GIL) while the
caller scans the previous batch. Every block is checked: a header that is no BGZF header, a
deflate stream that does not inflate, or a CRC-32 / ISIZE that does not match the inflated
bytes is a :class:`~genotok.errors.BedParseError` naming the file and the block's byte offset.

A tabix ``.tbi`` (or ``.csi``) index beside the file gives the blocks holding a chromosome or
a region (:func:`region_lines`): only those are inflated, and the lines outside the regions
dropped. The index is untrusted input: every offset is checked against the file before it is
used, and a malformed index raises :class:`~genotok.errors.BedParseError` naming it.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from isal import isal_zlib as _zlib

from ._io import warn_cut_short
from .errors import BedParseError
from .params import N_THREADS, PATH, Each, Flag, InstanceOf, Integral, Interval, validated
from .kernels import tabix as TX

_ZLIB_ERRORS: tuple = (zlib.error, _zlib.error)
#: a block is at most 64 KiB compressed and inflated (the BGZF specification)
MAX_BLOCK = 1 << 16
_HEADER = struct.Struct("<4BIBBH")  # ID1 ID2 CM FLG MTIME XFL OS XLEN


@validated({"path": PATH})
def is_bgzf(path: str | os.PathLike) -> bool:
    """Whether the file starts with a BGZF block (a gzip member whose extra field has ``BC``).

    Examples
    --------
    >>> import gzip, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "f.gz")
    >>> with open(p, "wb") as fh:
    ...     _ = fh.write(gzip.compress(b"x"))
    >>> is_bgzf(p), is_bgzf(write_bgzf(os.path.join(d, "b.gz"), b"chr1\\t1\\t2\\tA\\n"))
    (False, True)
    """
    with open(path, "rb") as fh:
        head = fh.read(MAX_BLOCK)
    try:
        return _block_size(head, 0) is not None
    except ValueError:
        return False


def _block_size(buf, off: int) -> int | None:
    """The total size of the block at ``off`` (``BSIZE + 1``), ``None`` if it is a gzip member
    without a ``BC`` subfield; ``ValueError`` if it is no gzip header at all."""
    if off + 18 > len(buf):
        raise ValueError("the file ends inside a block header")
    id1, id2, cm, flg, _, _, _, xlen = _HEADER.unpack_from(buf, off)
    if (id1, id2, cm) != (0x1F, 0x8B, 8):
        raise ValueError("no gzip header")
    if not flg & 4 or off + 12 + xlen > len(buf):
        return None
    pos, end = off + 12, off + 12 + xlen
    while pos + 4 <= end:
        si1, si2, slen = buf[pos], buf[pos + 1], struct.unpack_from("<H", buf, pos + 2)[0]
        if si1 == 66 and si2 == 67 and slen == 2 and pos + 6 <= end:
            return struct.unpack_from("<H", buf, pos + 4)[0] + 1
        pos += 4 + slen
    return None


class BGZF:
    """A BGZF file mapped read-only: its blocks found by their sizes and inflated checked.

    Examples
    --------
    >>> import os, tempfile
    >>> p = write_bgzf(os.path.join(tempfile.mkdtemp(), "f.gz"), b"ab\\n" * 40000)
    >>> with BGZF(p) as f:
    ...     blocks = f.blocks(0)
    ...     len(blocks) > 1, len(f.inflate(blocks)) == 120000
    (True, True)
    """

    @validated({"path": PATH}, "BGZF")
    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._fh = open(self.path, "rb")
        self.size = os.fstat(self._fh.fileno()).st_size
        self.mm = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""

    CONSTRAINTS = __init__.CONSTRAINTS

    def close(self) -> None:
        if isinstance(self.mm, mmap.mmap):
            self.mm.close()
        self._fh.close()

    def __enter__(self) -> BGZF:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _error(self, off: int, problem: str) -> BedParseError:
        return BedParseError(self.path, None, f"BGZF block at byte offset {off:,}: {problem}; "
                             "the file is damaged or truncated (re-download or re-create it)")

    def block_at(self, off: int) -> tuple[int, int]:
        """``(total compressed size, inflated size)`` of the block starting at byte ``off``."""
        try:
            bsize = _block_size(self.mm, off)
        except ValueError as exc:
            raise self._error(off, str(exc)) from None
        if bsize is None:
            raise self._error(off, "a gzip member without a BGZF block size (BC); the file "
                              "mixes BGZF and plain gzip: decompress and re-compress it whole")
        if bsize < 26 or off + bsize > self.size:
            raise self._error(off, f"block size {bsize:,} runs past the end of the file"
                              if bsize >= 26 else f"block size {bsize} is too small")
        isize = struct.unpack_from("<I", self.mm, off + bsize - 4)[0]
        if isize > MAX_BLOCK:
            raise self._error(off, f"declares {isize:,} inflated bytes, above BGZF's 64 KiB")
        return bsize, isize

    def blocks(self, start: int, stop: int | None = None,
               max_bytes: int | None = None) -> list[tuple[int, int, int]]:
        """``(offset, compressed size, inflated size)`` of the blocks from byte ``start`` up to
        ``stop`` (default: the end), or until ``max_bytes`` inflated bytes are reached."""
        stop = self.size if stop is None else min(stop, self.size)
        out, off, total = [], start, 0
        while off < stop:
            bsize, isize = self.block_at(off)
            out.append((off, bsize, isize))
            off += bsize
            total += isize
            if max_bytes is not None and total >= max_bytes:
                break
        return out

    def release(self, start: int, stop: int) -> None:
        """Drop the mapped pages of bytes ``[start, stop)`` from this process' resident set
        once they are inflated: they are read-only file pages (the page cache keeps them and
        a later read maps them again), but counted in the RSS they would make a 632 MB file
        read to its end weigh 632 MB more than a stream read. Only whole pages are dropped."""
        if not isinstance(self.mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return
        a = start - start % mmap.PAGESIZE
        b = stop - stop % mmap.PAGESIZE
        if b > a:
            self.mm.madvise(mmap.MADV_DONTNEED, a, b - a)

    def _inflated(self, off: int, bsize: int, isize: int) -> bytes:
        """One block's bytes, inflated and checked (CRC-32 and size)."""
        mm = self.mm
        xlen = struct.unpack_from("<H", mm, off + 10)[0]
        crc = struct.unpack_from("<I", mm, off + bsize - 8)[0]
        try:
            data = _zlib.decompress(memoryview(mm)[off + 12 + xlen:off + bsize - 8], -15,
                                    max(isize, 1))
        except _ZLIB_ERRORS as exc:
            raise self._error(off, f"does not inflate ({exc})") from None
        if len(data) != isize:
            raise self._error(off, f"inflates to {len(data):,} bytes, its ISIZE says {isize:,}")
        if _zlib.crc32(data) != crc:
            raise self._error(off, "CRC-32 mismatch")
        return data

    def inflate(self, blocks: Sequence[tuple[int, int, int]]) -> bytes:
        """The blocks' bytes, inflated and checked (CRC-32 and size), concatenated."""
        parts = [self._inflated(*block) for block in blocks]
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _inflate_into(self, blocks: Sequence[tuple[int, int, int]], out: np.ndarray) -> int:
        """:meth:`inflate` into the uint8 array ``out`` (large enough for the blocks' inflated
        sizes); returns the bytes written. A reused buffer: no fresh memory per batch and no
        join (their page faults and copy: ~5% of the inflate)."""
        view, at = memoryview(out), 0
        for block in blocks:
            data = self._inflated(*block)
            view[at:at + len(data)] = data
            at += len(data)
        return at


def _default_threads() -> int:
    import numba

    return numba.get_num_threads()


def _threads(n_threads: int | None) -> int:
    """The inflating threads for ``n_threads`` (``None``: numba's), at most the cores: more
    only hold more batches in memory at once (``n_threads=10**6`` inflated a whole file
    ahead of its scan, or started a thread per chunk of a region read)."""
    return _default_threads() if n_threads is None else min(int(n_threads), os.cpu_count() or 1)


def _newline(data: np.ndarray, last: bool, step: int = 1 << 16) -> int:
    """The offset of the first (``last``: the last) ``\\n`` of ``data``, or -1; searched a
    window at a time from that end (a line is short).

    >>> _newline(np.frombuffer(b"ab\\ncd\\nef", np.uint8), True, step=2)
    5
    >>> _newline(np.frombuffer(b"ab\\ncd\\nef", np.uint8), False, step=2)
    2
    """
    n = data.size
    for k in range(0, n, step):
        lo, hi = (max(n - k - step, 0), n - k) if last else (k, min(k + step, n))
        hits = np.flatnonzero(data[lo:hi] == 10)
        if hits.size:
            return lo + int(hits[-1] if last else hits[0])
    return -1


@validated({"path": PATH, "block_bytes": [Interval(Integral, 1, None)],
            "n_threads": N_THREADS, "max_line": [Interval(Integral, 1, None)],
            "reuse": [Flag()]})
def line_blocks(path: str | os.PathLike, block_bytes: int, n_threads: int | None = None,
                max_line: int = 64 << 20, reuse: bool = False) -> Iterator[np.ndarray]:
    """The inflated bytes of a BGZF file as blocks of whole lines (the last one may lack its
    line end), batches of about ``block_bytes`` inflated on ``n_threads`` threads ahead of the
    caller (who scans one while the next ones inflate). A line longer than ``max_line`` bytes
    is a :class:`~genotok.errors.BedParseError` (no text file of fragments has one; a file
    of one endless line would otherwise be held whole).

    ``reuse=True``: the batches inflate into a few buffers used over and over
    (:meth:`BGZF._inflate_into`; fresh memory for each batch costs its page faults, ~5% of
    the inflate), so a block is valid only until the next one is asked for: copy what must
    outlive that.

    Examples
    --------
    >>> import os, tempfile
    >>> p = write_bgzf(os.path.join(tempfile.mkdtemp(), "f.gz"), b"chr1\\t1\\t2\\tA\\n" * 9000)
    >>> sum(b.size for b in line_blocks(p, 1 << 16, n_threads=2))
    99000
    >>> sum(b.size for b in line_blocks(p, 1 << 16, n_threads=2, reuse=True))
    99000
    """
    n_threads = _threads(n_threads)  # n_threads + 1 batches are inflated ahead
    step = max(int(block_bytes), MAX_BLOCK)
    with BGZF(path) as f, ThreadPoolExecutor(n_threads, "genotok-bgzf") as pool:
        pending: list = []
        free: list[np.ndarray] = []  # buffers whose blocks the caller is done with
        off, rest = 0, b""

        def submit():
            nonlocal off
            if off >= f.size:
                return False
            try:
                bl = f.blocks(off, max_bytes=step)
            except BedParseError as exc:  # a damaged header is raised in its batch's turn: read
                failed = Future()  # ahead as far as n_threads goes, it came before the lines
                failed.set_exception(exc)  # of the batches before it (a bad line among them)
                pending.append((failed, off, f.size, None))
                off = f.size
                return True
            start, off = off, bl[-1][0] + bl[-1][1]
            if reuse:  # at most step + one block
                out = free.pop() if free else np.empty(step + MAX_BLOCK, np.uint8)
                pending.append((pool.submit(f._inflate_into, bl, out), start, off, out))
            else:
                pending.append((pool.submit(f.inflate, bl), start, off, None))
            return True

        try:
            while len(pending) < n_threads + 1 and submit():
                pass
            while pending:
                fut, start, stop, out = pending.pop(0)
                got = fut.result()
                data = np.frombuffer(got, np.uint8) if out is None else out[:got]
                f.release(start, stop)
                submit()
                cut = _newline(data, True)
                if cut < 0:
                    rest += data.tobytes()
                    if len(rest) > max_line:
                        raise BedParseError(f.path, None, f"a line of more than "
                                            f"{max_line >> 20} MiB: not a fragment file")
                elif data.size:
                    first = 0
                    if rest:
                        first = _newline(data, False) + 1
                        yield np.concatenate([np.frombuffer(rest, np.uint8), data[:first]])
                    if cut + 1 > first:
                        yield data[first:cut + 1]
                    rest = data[cut + 1:].tobytes()
                if out is not None:  # the caller is done with its blocks
                    free.append(out)
            if rest:
                yield np.frombuffer(rest, np.uint8)
            # every block read: was it the whole file? (a damaged one said so already)
            warn_cut_short(f.path, f.mm[:16], f.mm[-28:])
        finally:
            for fut, *_ in pending:
                fut.cancel()
            for fut, *_ in pending:
                try:
                    fut.result()
                except BaseException:  # noqa: BLE001 - the caller's error is the one to raise
                    pass


# --------------------------------------------------------------------------- the index

class Index:
    """A tabix (``.tbi``) or CSI index: the reference names and, per reference, the bins'
    chunks (virtual offset ranges) and the linear index; checked against the data file.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "f.tsv.gz")
    >>> _ = write_bgzf(p, b"chr1\\t10\\t20\\tA\\t1\\nchr2\\t5\\t9\\tB\\t1\\n", index=True)
    >>> Index.read(p + ".tbi", os.path.getsize(p)).names
    ['chr1', 'chr2']
    """

    def __init__(self, path, names, bins, linear, min_shift, depth, zero_based, meta):
        self.path, self.names, self.bins, self.linear = path, names, bins, linear
        self.min_shift, self.depth, self.zero_based, self.meta = min_shift, depth, \
            zero_based, meta

    @classmethod
    def find(cls, path: str, data_size: int) -> Index | None:
        """The index beside ``path`` (``.tbi`` first, then ``.csi``), or ``None``."""
        for ext in (".tbi", ".csi"):
            if os.path.isfile(path + ext):
                return cls.read(path + ext, data_size)
        return None

    @classmethod
    def read(cls, ipath: str, data_size: int) -> Index:
        with open(ipath, "rb") as fh:
            raw = fh.read()
        try:
            raw = _gunzip_all(raw)
        except (ValueError, EOFError, *_ZLIB_ERRORS) as exc:
            raise BedParseError(ipath, None, f"the index does not inflate ({exc}); re-create "
                                "it with tabix") from None
        r = _Reader(raw, ipath)
        magic = r.take(4)
        if magic == b"TBI\x01":
            n_ref = r.i32()
            fmt, _, _, _, meta, _, l_nm = (r.i32() for _ in range(7))
            names_raw = r.take(l_nm)
            min_shift, depth = 14, 5
        elif magic == b"CSI\x01":
            min_shift, depth, l_aux = r.i32(), r.i32(), r.i32()
            aux = _Reader(r.take(l_aux), ipath)
            fmt, meta, names_raw = 0, ord("#"), b""
            if l_aux >= 28:
                fmt, _, _, _, meta, _, l_nm = (aux.i32() for _ in range(7))
                names_raw = aux.take(l_nm)
            if not (0 < min_shift < 32 and 0 < depth < 12):
                raise r.bad(f"min_shift {min_shift}, depth {depth} out of range")
            n_ref = r.i32()
        else:
            raise BedParseError(ipath, None, "neither a tabix (.tbi) nor a CSI index")
        names = [x.decode("utf-8", "replace") for x in names_raw.split(b"\0")[:-1]] \
            if names_raw else []
        if n_ref < 0 or (names and len(names) != n_ref):
            raise r.bad(f"{n_ref} references but {len(names)} names")
        max_v = data_size << 16
        pseudo = ((1 << (depth * 3 + 3)) - 1) // 7 + 1  # metadata, not chunks (37450 in .tbi)
        if n_ref > r.left() // 4:  # each reference holds at least its bin count
            raise r.bad(f"{n_ref} references: it ends early")
        csi = magic == b"CSI\x01"
        # where each bin's chunks are (read, checked and merged when a region asks): one
        # kernel pass over the bins (a struct read per bin in Python was ~0.3 s for 196k)
        ref_ptr, ids, where, counts, lin_at, lin_n, end, status = TX.index_bins(
            np.frombuffer(r.raw, np.uint8), r.pos, n_ref, csi, pseudo)
        if status != TX.TBI_OK:
            r.pos = int(end)
            raise r.bad(_WALK_ERRORS[int(status)])
        r.pos = int(end)
        bins = [(ids[a:b], where[a:b], counts[a:b])
                for a, b in zip(ref_ptr[:-1].tolist(), ref_ptr[1:].tolist())]
        linear = []
        for at, n in zip(lin_at.tolist(), lin_n.tolist()):
            lin = np.frombuffer(r.raw, "<u8", count=n, offset=at)
            if (lin > max_v).any():
                raise BedParseError(ipath, None, f"malformed index at byte {at:,} of its "
                                    "inflated data: a linear index offset outside the data "
                                    "file; re-create it with tabix")
            linear.append(lin)
        if not names:
            raise BedParseError(ipath, None, "a CSI index without reference names (not made "
                                "by tabix); re-create it with tabix --csi")
        out = cls(ipath, names, bins, linear, min_shift, depth, bool(fmt & 0x10000), meta)
        out.raw, out.max_v, out._bins = raw, max_v, {}
        return out

    def _ref_bins(self, ref: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Reference ``ref``'s ``(bin ids, chunks (n, 2), chunk count per bin)``, every
        offset checked against the data file (once per reference)."""
        got = self._bins.get(ref)
        if got is None:
            ids, where, counts = self.bins[ref]
            n = int(counts.sum())  # every chunk's 16 bytes gathered at once
            first = np.repeat(where - 16 * (np.cumsum(counts) - counts), counts)
            at = first + 16 * np.arange(n, dtype=np.int64)
            raw = np.frombuffer(self.raw, np.uint8)
            ch = raw[at[:, None] + np.arange(16)].view("<u8").reshape(-1, 2)
            if ch.size and ((ch[:, 0] > ch[:, 1]).any() or (ch > self.max_v).any()):
                raise BedParseError(self.path, None, "malformed index: a chunk of reference "
                                    f"{self.names[ref]!r} lies outside the data file, or ends "
                                    "before it starts; re-create it with tabix")
            got = self._bins[ref] = (ids, ch, counts)
        return got

    def chunks(self, ref: int, beg: int, end: int) -> np.ndarray:
        """The ``(begin, end)`` virtual offsets of the chunks that may hold ``[beg, end)`` of
        reference ``ref`` (0-based), sorted and merged."""
        ids, ch, counts = self._ref_bins(ref)
        span = 1 << (self.min_shift + 3 * self.depth)
        if beg > 0 or end < span:  # else: the whole reference, every bin
            want = _region_bins(ids, beg, end, self.min_shift, self.depth)
            ch = ch[np.repeat(want, counts)]
        lin = self.linear[ref]
        if lin.size and ch.size:
            ch = ch[ch[:, 1] > lin[min(beg >> self.min_shift, lin.size - 1)]]
        return _merge(ch)


def _merge(ch: np.ndarray) -> np.ndarray:
    """Chunks sorted by start, those that overlap or touch merged."""
    ch = np.asarray(ch, np.uint64).reshape(-1, 2)
    if ch.shape[0] == 0:
        return ch
    ch = ch[np.argsort(ch[:, 0], kind="stable")]
    reach = np.maximum.accumulate(ch[:, 1])
    new = np.ones(ch.shape[0], bool)
    new[1:] = ch[1:, 0] > reach[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], ch.shape[0]) - 1
    return np.stack([ch[starts, 0], reach[ends]], axis=1)


def _region_bins(ids: np.ndarray, beg: int, end: int, min_shift: int, depth: int) -> np.ndarray:
    """Which of the bins ``ids`` may hold ``[beg, end)``: htslib's ``reg2bins`` (the region
    clipped to the index' span, ``2^(min_shift + 3 depth)``, as htslib does), asked of the
    index' own bins instead of listing every bin of the region (a CSI index may say
    ``min_shift=1, depth=11``: a 1-Gb region was 5*10^8 bin ids, minutes and GiB)."""
    span = 1 << (min_shift + depth * 3)
    beg, end = min(max(beg, 0), span - 1), min(max(end, beg + 1), span)
    end -= 1
    ids = np.asarray(ids, np.int64)
    want = np.zeros(ids.size, bool)
    s, t = min_shift + depth * 3, 0
    for level in range(depth + 1):
        at = ids - t
        want |= (at >= beg >> s) & (at <= end >> s) & (at < 1 << (level * 3))
        s -= 3
        t += 1 << (level * 3)
    return want


_WALK_ERRORS = {TX.TBI_ENDS_EARLY: "it ends early",
                TX.TBI_BIN_COUNT: "a bin count past the end of the index",
                TX.TBI_CHUNK_COUNT: "a chunk count past the end of the index",
                TX.TBI_LINEAR_COUNT: "a linear index past the end of the index"}


class _Reader:
    def __init__(self, raw: bytes, path: str):
        self.raw, self.pos, self.path = raw, 0, path

    def bad(self, problem: str) -> BedParseError:
        return BedParseError(self.path, None, f"malformed index at byte {self.pos:,} of its "
                             f"inflated data: {problem}; re-create it with tabix")

    def left(self) -> int:
        return len(self.raw) - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.raw):
            raise self.bad("it ends early")
        out = self.raw[self.pos:self.pos + n]
        self.pos += n
        return out

    def i32(self) -> int:
        return struct.unpack("<i", self.take(4))[0]

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]


def _gunzip_all(raw: bytes) -> bytes:
    """All the members of a gzip stream (an index is BGZF: many members)."""
    out, pos = [], 0
    while pos < len(raw):
        d = zlib.decompressobj(31)
        out.append(d.decompress(raw[pos:]))
        if not d.eof:
            raise EOFError("truncated")
        pos = len(raw) - len(d.unused_data)
    return b"".join(out)


# --------------------------------------------------------------------------- regions

_REGION = re.compile(r"^(?P<chrom>[^\s:]+)(?::(?P<start>[\d,]+)-(?P<end>[\d,]+))?$")


@validated({"regions": [Each(InstanceOf(str), sequence=True)]})
def parse_regions(regions: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """``["chr1", "chr2:0-5000000"]`` → per chromosome its merged ``[start, end)`` intervals
    (BED coordinates, as the tokenizer's region strings; a name alone is the whole chromosome).

    Examples
    --------
    >>> parse_regions(["chr2:10-20", "chr1", "chr2:15-30", "chr2:40-50"])
    {'chr2': [(10, 30), (40, 50)], 'chr1': [(0, 4611686018427387904)]}
    """
    out: dict[str, list] = {}
    for r in regions:
        m = _REGION.match(str(r).strip())
        if m is None:
            raise ValueError(f"regions: {r!r} is neither a chromosome name nor chrom:start-end")
        if m["start"] is None:
            iv = (0, 1 << 62)
        else:
            iv = (int(m["start"].replace(",", "")), int(m["end"].replace(",", "")))
            if not iv[0] < iv[1] <= 1 << 62:
                raise ValueError(f"regions: {r!r} has end <= start (BED coordinates: "
                                 "chrom:start-end, end exclusive)")
        out.setdefault(m["chrom"], []).append(iv)
    for c, ivs in out.items():
        ivs.sort()
        merged = [ivs[0]]
        for s, e in ivs[1:]:
            if s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        out[c] = merged
    return out


@validated({"buf": [InstanceOf(np.ndarray)], "want": [InstanceOf(dict), None],
            "sizes": [InstanceOf(tuple), None]})
def keep_lines(buf: np.ndarray, want: dict[bytes, list[tuple[int, int]]] | None,
               sizes: tuple | None = None) -> np.ndarray:
    """The lines of ``buf`` (whole lines) whose chromosome is a key of ``want`` and which
    overlap one of its intervals (``want=None``: every line), and whose length ``end - start``
    is within ``sizes = (min, max)`` (inclusive, ``None``: no bound; ``sizes=None``: any). A
    space-separated line (its first separator a space) is read with runs of spaces as one. A
    line without three tab- or space-separated fields or whose start or end is no integer is kept (the
    parser then names it), a ``#`` line dropped.

    Examples
    --------
    >>> buf = np.frombuffer(b"chr1\\t5\\t9\\tA\\nchr1\\t50\\t90\\tB\\n"
    ...                     b"chr2\\t5\\t9\\tC\\n", np.uint8)
    >>> keep_lines(buf, {b"chr1": [(0, 10)], b"chr2": [(8, 20)]}).tobytes()
    b'chr1\\t5\\t9\\tA\\nchr2\\t5\\t9\\tC\\n'
    >>> keep_lines(buf, None, (10, None)).tobytes()
    b'chr1\\t50\\t90\\tB\\n'
    >>> keep_lines(np.frombuffer(b"chr1  5 9 A\\nchr1 50  90 B\\n", np.uint8), {b"chr1": [(0, 10)]}).tobytes()
    b'chr1  5 9 A\\n'
    """
    if buf.size == 0:
        return buf
    if buf[-1] != 10:
        buf = np.append(buf, np.uint8(10))
    nl = np.flatnonzero(buf == 10)
    ls = np.concatenate([[0], nl[:-1] + 1])
    tabs = np.flatnonzero(buf == 9)
    if tabs.size < 3:  # no line has three tabs: each is read as the rule below says
        tabs = np.concatenate([tabs, np.full(3, buf.size)])
    k = np.searchsorted(tabs, ls)
    ok = k + 2 < tabs.size
    k = np.minimum(k, tabs.size - 3)
    t1, t2, t3 = tabs[k], tabs[k + 1], tabs[k + 2]
    ok &= t3 < nl
    start, good1 = _digits(buf, t1 + 1, t2)
    end, good2 = _digits(buf, t2 + 1, t3)
    good = good1 & good2
    keep = ~ok & (buf[ls] != ord("#"))
    if want is None:
        sel = ok.copy()
    else:
        sel = np.zeros(ls.size, bool)
        reach = np.maximum(end, start + 1)  # a zero-length fragment covers its base
        for chrom, ivs in want.items():
            same = ok & (t1 - ls == len(chrom))
            for i, ch in enumerate(chrom):
                same &= buf[np.minimum(ls + i, buf.size - 1)] == ch
            hit = ~good.copy()
            for s, e in ivs:
                hit |= (start < e) & (reach > s)
            sel |= same & hit
    if sizes is not None:
        n = end - start
        fits = ~good.copy()
        fits |= ((sizes[0] is None) | (n >= (sizes[0] or 0))) & \
            ((sizes[1] is None) | (n <= (sizes[1] if sizes[1] is not None else 0)))
        sel &= fits
    keep |= sel
    spaced = np.flatnonzero(~ok & (buf[ls] != ord("#")) & (buf[ls] != 10))
    if spaced.size:  # lines whose first three fields are not tab-separated: space-separated ones
        keep[spaced] = [_keep_spaced(buf[a:b].tobytes(), want, sizes)
                        for a, b in zip(ls[spaced], nl[spaced])]
    if keep.all():
        return buf
    return buf[np.repeat(keep, nl - ls + 1)]


def _keep_spaced(line: bytes, want, sizes) -> bool:
    """:func:`keep_lines`' rule for one line that has no three tabs before its newline: a line
    whose first separator is a space is read as the fragment parser reads it (runs of spaces
    as one); any other line, or one whose start or end is no integer, is kept (the parser
    then names it). Python per line: such files are small test files (gtars')."""
    first = next((c for c in line if c in (9, 32)), None)
    f = [t for t in line.rstrip(b"\r").split(b" ") if t]
    if first != 32 or len(f) < 3 or any(9 in t for t in f[:3]) or not (f[1].isdigit() and f[2].isdigit()) \
            or len(f[1]) > 18 or len(f[2]) > 18:
        return True
    start, end = int(f[1]), int(f[2])
    if want is not None:
        ivs = want.get(f[0])
        reach = max(end, start + 1)
        if ivs is None or not any(start < e and reach > s for s, e in ivs):
            return False
    if sizes is not None:
        n = end - start
        if (sizes[0] is not None and n < sizes[0]) or (sizes[1] is not None and n > sizes[1]):
            return False
    return True


def _digits(buf: np.ndarray, a: np.ndarray, b: np.ndarray):
    width = b - a
    good = (width >= 1) & (width <= 18)
    val = np.zeros(a.size, np.int64)
    for i in range(int(width[good].max()) if good.any() else 0):
        on = good & (i < width)
        d = buf[np.minimum(a + i, buf.size - 1)].astype(np.int64) - 48
        good &= ~on | ((d >= 0) & (d <= 9))
        val = np.where(on, val * 10 + d, val)
    return val, good


@validated({"path": PATH})
def has_index(path: str | os.PathLike) -> bool:
    """Whether a tabix ``.tbi`` or a ``.csi`` index is beside the file.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "f.tsv.gz.tbi").write_bytes(b"")
    >>> has_index(d / "f.tsv.gz"), has_index(d / "g.tsv.gz")
    (True, False)
    """
    return any(os.path.isfile(os.fspath(path) + ext) for ext in (".tbi", ".csi"))


@validated({"path": PATH, "want": [InstanceOf(dict)], "n_threads": N_THREADS})
def region_lines(path: str | os.PathLike, want: dict[str, list[tuple[int, int]]],
                 n_threads: int | None = None) -> Iterator[np.ndarray]:
    """The lines of a BGZF file in the regions ``want`` (:func:`parse_regions`), read through
    its ``.tbi``/``.csi`` index (in the file's order; a chromosome the index does not know
    gives nothing). Only the blocks the index names are inflated.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "f.tsv.gz")
    >>> _ = write_bgzf(p, b"chr1\\t10\\t20\\tA\\t1\\nchr2\\t5\\t9\\tB\\t1\\n", index=True)
    >>> b"".join(b.tobytes() for b in region_lines(p, parse_regions(["chr2"])))
    b'chr2\\t5\\t9\\tB\\t1\\n'
    """
    path = os.fspath(path)
    n_threads = _threads(n_threads)
    with BGZF(path) as f:
        idx = Index.find(path, f.size)
        if idx is None:
            raise BedParseError(path, None, "reading regions needs a tabix index beside the "
                                "file (.tbi or .csi; make it with `tabix -p bed`)")
        jobs = []
        for ref, name in enumerate(idx.names):
            if name in want:
                ivs = want[name]
                ch = np.concatenate([idx.chunks(ref, s, min(e, 1 << 40)) for s, e in ivs])
                for b, e in _merge(ch):
                    jobs.append((int(b), int(e), {name.encode("utf-8"): ivs}))
        jobs.sort()
        with ThreadPoolExecutor(n_threads, "genotok-bgzf") as pool:
            futs = [pool.submit(_chunk_lines, f, *job) for job in jobs]
            try:
                for fut in futs:
                    try:
                        parts = fut.result()
                    except BedParseError as exc:  # where the index points: it may be the
                        # index that is wrong (another file's, or older than this one)
                        raise BedParseError(path, None, f"{exc.problem}; or its index "
                                            f"{idx.path} is not this file's (re-create it "
                                            "with tabix)") from None
                    for part in parts:
                        if part.size:
                            yield part
            finally:
                for fut in futs:
                    fut.cancel()


def _chunk_lines(f: BGZF, vbeg: int, vend: int, want: dict) -> list[np.ndarray]:
    """The kept lines of one chunk ``[vbeg, vend)`` (virtual offsets), inflated in pieces."""
    cbeg, ubeg, cend, uend = vbeg >> 16, vbeg & 0xFFFF, vend >> 16, vend & 0xFFFF
    out, rest, off = [], b"", cbeg
    while off <= cend and off < f.size:
        bl = f.blocks(off, cend + 1, max_bytes=4 << 20)
        if not bl:
            break
        data = f.inflate(bl)
        if off == cbeg:
            if ubeg > bl[0][2]:
                raise f._error(cbeg, f"the index points {ubeg} bytes into a block of "
                               f"{bl[0][2]}")
            data = data[ubeg:]
        last = bl[-1]
        if last[0] == cend:  # the chunk ends inside this batch's last block
            cut = len(data) - last[2] + min(uend, last[2])
            data = data[:cut]
        off = last[0] + last[1]
        data = rest + data
        nl = data.rfind(b"\n")
        rest = data[nl + 1:]
        if nl >= 0:
            out.append(keep_lines(np.frombuffer(data, np.uint8, count=nl + 1), want))
    if rest:
        out.append(keep_lines(np.frombuffer(rest, np.uint8), want))
    return out


# --------------------------------------------------------------------------- writing

_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


@validated({"path": [InstanceOf(str, os.PathLike)], "data": [InstanceOf(bytes, bytearray)],
            "index": [Flag()], "block": [Interval(Integral, 1, 0xFF00)]})
def write_bgzf(path: str | os.PathLike, data: bytes, *, index: bool = False,
               block: int = 0xFF00) -> str:
    """Write ``data`` as a BGZF file (blocks of ``block`` inflated bytes, lines kept whole
    where they fit, and the empty end-of-file block); ``index=True`` also writes a tabix
    ``.tbi`` for a sorted BED-like file (``chrom start end ...``, 0-based, ``#`` header lines).

    Examples
    --------
    >>> import gzip, os, tempfile
    >>> p = write_bgzf(os.path.join(tempfile.mkdtemp(), "f.gz"), b"chr1\\t1\\t2\\tA\\n")
    >>> gzip.open(p).read()
    b'chr1\\t1\\t2\\tA\\n'
    """
    path = os.fspath(path)
    pieces, pos = [], 0
    while pos < len(data):
        end = min(pos + block, len(data))
        if end < len(data):
            nl = data.rfind(b"\n", pos, end)
            end = nl + 1 if nl >= pos else end
        pieces.append((pos, end))
        pos = end
    offsets, out = [], bytearray()
    for a, b in pieces:
        offsets.append((len(out), a))
        out += _block(data[a:b])
    out += _EOF
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(out)
    os.replace(tmp, path)
    if index:
        _write_tbi(path + ".tbi", data, offsets, len(out) - len(_EOF))
    return path


def _block(raw: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    cdata = c.compress(raw) + c.flush()
    bsize = 18 + len(cdata) + 8
    return (struct.pack("<4BIBBHBBHH", 0x1F, 0x8B, 8, 4, 0, 0, 0xFF, 6, 66, 67, 2, bsize - 1)
            + cdata + struct.pack("<II", zlib.crc32(raw), len(raw)))


def _write_tbi(ipath: str, data: bytes, offsets: list, end_c: int) -> None:
    """A tabix index (``-p bed``: zero-based, meta ``#``) of ``data`` written in blocks that
    start at the ``(compressed, inflated)`` offsets."""
    starts_c = np.array([c for c, _ in offsets] + [end_c], np.uint64)
    starts_u = np.array([u for _, u in offsets] + [len(data)], np.int64)

    def voff(u: int) -> int:
        k = int(np.searchsorted(starts_u, u, side="right")) - 1
        return (int(starts_c[k]) << 16) | (u - int(starts_u[k]))

    names: list[bytes] = []
    refs: list[dict] = []
    pos = 0
    for line in data.splitlines(keepends=True):
        a, pos = pos, pos + len(line)
        if line.startswith(b"#") or not line.strip():
            continue
        chrom, s, e = line.split(b"\t")[:3]
        s, e = int(s), max(int(e), int(s) + 1)
        if not names or names[-1] != chrom:
            names.append(chrom)
            refs.append({"bins": {}, "lin": {}})
        ref = refs[-1]
        b = _reg2bin(s, e)
        v0, v1 = voff(a), voff(pos)
        ch = ref["bins"].setdefault(b, [])
        if ch and ch[-1][1] == v0:
            ch[-1][1] = v1
        else:
            ch.append([v0, v1])
        for w in range(s >> 14, ((e - 1) >> 14) + 1):
            ref["lin"].setdefault(w, v0)
    nm = b"".join(n + b"\0" for n in names)
    out = bytearray(b"TBI\x01" + struct.pack("<8i", len(names), 0x10000, 1, 2, 3, ord("#"),
                                             0, len(nm)) + nm)
    for ref in refs:
        out += struct.pack("<i", len(ref["bins"]))
        for b, ch in sorted(ref["bins"].items()):
            out += struct.pack("<Ii", b, len(ch))
            for v0, v1 in ch:
                out += struct.pack("<QQ", v0, v1)
        n = max(ref["lin"]) + 1 if ref["lin"] else 0
        lin, last = [], 0
        for w in range(n):
            last = ref["lin"].get(w, last)
            lin.append(last)
        out += struct.pack(f"<i{n}Q", n, *lin)
    blocks = bytearray()
    for a in range(0, len(out), 0xFF00):
        blocks += _block(bytes(out[a:a + 0xFF00]))
    with open(ipath + ".tmp", "wb") as fh:
        fh.write(bytes(blocks) + _EOF)
    os.replace(ipath + ".tmp", ipath)


def _reg2bin(beg: int, end: int) -> int:
    end -= 1
    for shift, offset in ((14, 4681), (17, 585), (20, 73), (23, 9), (26, 1)):
        if beg >> shift == end >> shift:
            return offset + (beg >> shift)
    return 0


__all__ = ["BGZF", "Index", "has_index", "is_bgzf", "keep_lines", "line_blocks", "parse_regions",
           "region_lines", "write_bgzf"]
