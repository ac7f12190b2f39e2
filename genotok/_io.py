"""File plumbing: reading (maybe gzipped) bytes, whole or a block of lines at a time, atomic
writes, digests."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import queue
import secrets
import stat
import tempfile
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ._optional import optional, require
from .errors import BedParseError, GenotokError

# igzip (ISA-L, a required dependency) inflates faster than zlib (benchmarks/bench_parse.py)
from isal import igzip as _fastgzip
from isal import igzip_lib as _igzip_lib
from isal import isal_zlib as _isal_zlib

#: what inflating a damaged gzip stream raises (ISA-L's ``IsalError`` for a bad deflate stream,
#: ``BadGzipFile``, an ``OSError``, for a bad header or CRC). Not ``ValueError``: nothing of a
#: damaged stream raises one, and a caller's mistake (a bad argument, a bug) must not read as a
#: damaged file
_GZIP_ERRORS: tuple = (OSError, zlib.error, _igzip_lib.IsalError, _isal_zlib.error)

GZIP_MAGIC = b"\x1f\x8b"
#: the empty block that ends every BGZF file (SAM/BAM spec, 4.1.2): without it the file was
#: cut at a block's end, and every block before it is a whole gzip member that reads fine
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def bgzf_cut_short(head: bytes, tail: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` and last bytes ``tail`` is BGZF (a gzip
    member with the ``BC`` extra field) without its end-of-file block (htslib warns of it)."""
    return (head[:4] == b"\x1f\x8b\x08\x04" and head[12:14] == b"BC"
            and not tail.endswith(BGZF_EOF))


def warn_cut_short(path: str, head: bytes, tail: bytes) -> None:
    """Warn, as htslib does, when ``path`` (first bytes ``head``, last ``tail``) is a BGZF file
    without its end-of-file block: its whole blocks read as a valid stream, the rest is lost."""
    if bgzf_cut_short(head, tail):
        from ._usage import warn

        warn(f"{path}: a BGZF file without its end-of-file block: probably cut short (a "
             "copy or download that stopped at a block's end); its whole blocks are "
             "read, the rest is missing; re-create the file")


def _check_readable(path: str | os.PathLike, error=BedParseError) -> str:
    """``path`` as a string, after refusing what reading it would not do well: a missing path,
    a directory, a named pipe (FIFO: with no writer, opening it blocks forever), a device
    (``/dev/zero`` never ends) or a socket. An anonymous pipe (``<(zcat x.bed.gz)``,
    ``/dev/stdin`` fed by a pipe) is read: its writer exists."""
    p = os.fspath(path)
    if os.path.isdir(p):
        raise error(p, None, "is a directory, not a file; give the path of a BED file")
    if not os.path.exists(p):
        raise error(p, None, "no such file; check the path (relative paths start at "
                             f"{os.getcwd()})")
    try:
        mode = os.stat(p).st_mode
    except OSError as exc:
        raise error(p, None, f"cannot read the file ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return p
    if stat.S_ISFIFO(mode):
        # an anonymous pipe's /dev/fd/N resolves to "pipe:[inode]", a name on no file system
        if not os.path.exists(os.path.realpath(p)):
            return p
        raise error(p, None, "is a named pipe (FIFO), not a regular file: reading one waits "
                             "forever when nothing writes to it; give a regular file (or pipe "
                             "the data in: '-' for standard input on the command line, <(cmd) "
                             "in bash)")
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device"
            if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "something else")
    if stat.S_ISCHR(mode) and os.path.realpath(p).startswith(("/dev/pts/", "/dev/tty")):
        raise error(p, None, "is a terminal, not a file: pipe a BED file in (zcat x.bed.gz | "
                             "genotok tokenize --universe u.bed -)")
    raise error(p, None, f"is {kind}, not a regular file; give the path of a BED file")


def is_gzip(path: str | os.PathLike) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike):
    """A binary reader of the file's bytes, gunzipped when it is gzip (by its magic bytes).

    Read it inside :func:`reading`, which turns the errors of a damaged file into a
    :class:`BedParseError` naming it.
    """
    p = _check_readable(path)
    with reading(p):
        if is_gzip(p):
            return _fastgzip.open(p, "rb")
        return open(p, "rb")


@contextlib.contextmanager
def reading(path: str | os.PathLike, error=BedParseError) -> Iterator[None]:
    """Turn what reading a damaged file raises (``EOFError`` of a truncated gzip stream,
    ``zlib.error``/``BadGzipFile`` of flipped bytes, ``OSError``) into ``error(path, None,
    problem)``, so callers (``pretokenize --on-error skip``) can catch one class.

    Examples
    --------
    >>> import os, tempfile, pathlib, gzip
    >>> p = os.path.join(tempfile.mkdtemp(), "f.tsv.gz")
    >>> _ = pathlib.Path(p).write_bytes(gzip.compress(b"chr1\\t1\\t2\\tA\\n")[:-6])
    >>> try:
    ...     with reading(p), open_binary(p) as fh:
    ...         _ = fh.read()
    ... except BedParseError as exc:
    ...     print(exc.problem)
    truncated gzip stream: the file ends before the compressed data does (an interrupted download?); re-create it
    """
    p = os.fspath(path)
    try:
        yield
    except GenotokError:
        raise
    except EOFError:
        raise error(p, None, "truncated gzip stream: the file ends before the compressed data "
                             "does (an interrupted download?); re-create it") from None
    except _GZIP_ERRORS as exc:
        if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and exc.errno:
            raise error(p, None, f"cannot read the file ({exc.strerror or exc})") from None
        raise error(p, None, f"corrupt gzip data ({exc}); re-create the file") from None


def decompress(raw: bytes, path: str) -> bytes:
    """Decompress a (multi-member, BGZF too) gzip stream; clear errors for damaged files."""
    try:
        return _fastgzip.decompress(raw)
    except EOFError:
        raise BedParseError(path, None, "truncated gzip stream: the file ends before the "
                            "compressed data does (an interrupted download?); re-create it") from None
    except _GZIP_ERRORS as exc:
        raise BedParseError(path, None, f"corrupt gzip data ({exc}); re-create the file") from None


def compress(data: bytes) -> bytes:
    """Gzip ``data`` with ISA-L (``isal``, level 2: fast).

    Examples
    --------
    >>> decompress(compress(b"chr1\\t1\\t2\\n"), "x.gz")
    b'chr1\\t1\\t2\\n'
    """
    return _fastgzip.compress(data, compresslevel=2)


#: the UTF-8 byte-order mark some editors (Excel, Notepad) put at the start of a text file
BOM = b"\xef\xbb\xbf"


def strip_bom(buf: np.ndarray) -> np.ndarray:
    """``buf`` (the first bytes of a text file) without a UTF-8 byte-order mark: with it, the
    first chromosome would be ``\ufeffchr1``, a name no other file uses.

    Examples
    --------
    >>> strip_bom(np.frombuffer(BOM + b"chr1", np.uint8)).tobytes()
    b'chr1'
    """
    return buf[3:] if buf[:3].tobytes() == BOM else buf


def read_bytes(path: str | os.PathLike) -> np.ndarray:
    """The whole content of a file as a read-only ``uint8`` array, gunzipped when it is gzip.

    Gzip is recognised by its magic bytes, not by the file name; multi-member streams (BGZF)
    are read to the end. Decompression uses ISA-L (``isal``). No copy is made of the
    (decompressed) bytes.

    Raises
    ------
    BedParseError
        Missing path, a directory, an unreadable file, a truncated or corrupt gzip stream.

    Examples
    --------
    >>> import gzip, tempfile, os, pathlib
    >>> p = os.path.join(tempfile.mkdtemp(), "x.bed")
    >>> _ = pathlib.Path(p).write_bytes(gzip.compress(b"chr1\\t1\\t2\\n"))
    >>> read_bytes(p).tobytes()
    b'chr1\\t1\\t2\\n'
    """
    p = _check_readable(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise BedParseError(p, None, f"cannot read the file ({exc.strerror or exc})") from None
    if raw[:2] == GZIP_MAGIC:
        raw = decompress(raw, p)
    return np.frombuffer(raw, dtype=np.uint8)


#: bytes :func:`line_blocks` reads at a time (a line longer than this makes its block longer);
#: a plain file of at most this size is read whole, as :func:`read_bytes` does. Two blocks
#: of 8 MiB stay in a 32 MiB L3 cache between the read and the parse (measured against blocks
#: of 32 MiB: benchmarks/RESULTS.md, "Design measurements")
BLOCK_BYTES = 8 << 20
#: a gzip stream is inflated into the block this much at a time: one ``readinto`` of 32 MB made
#: the gzip reader allocate and copy a 32 MB temporary (slower: benchmarks/RESULTS.md)
_INFLATE_PIECE = 1 << 20
#: a .gz file of at most a block / this is inflated whole, as :func:`read_bytes` does (the
#: path small files took before blocks; warm, a 1.4 MB .gz reads as fast either way, but the
#: first touch of a fresh 8 MiB NumPy buffer, huge pages, stalled at times: benchmarks/RESULTS.md)
_GZIP_WHOLE = 4
#: the longest line a BED file may hold (its lines are tens of bytes; the fragment reader has the
#: same cap): a longer one is no BED file, e.g. a one-line .gz bomb that inflated into memory
#: until it ran out
MAX_LINE_BYTES = 64 << 20
#: a small .gz file inflated whole may give at most this many bytes; beyond it (a bomb, or a very
#: compressible file) it is read in blocks like a large one, so memory stays bounded
_WHOLE_MAX = 256 << 20
#: a buffer's room for the unfinished line carried into it, beyond a block (at most a block;
#: a line longer than this makes a larger buffer; a new buffer each block cost page faults)
_CARRY_ROOM = 1 << 16


def line_blocks(path: str | os.PathLike, block_bytes: int | None = None,
                ahead: bool = True) -> Iterator[tuple[np.ndarray, int, bool]]:
    """The (gunzipped) bytes of a file as consecutive blocks of whole lines: yields
    ``(block, expected, last)``, ``block`` a ``uint8`` array that ends just after a newline (the
    last one: at the end of the file), ``expected`` the bytes of text the whole file is expected
    to hold (its size; for gzip, estimated from the compressed bytes read so far; for a pipe,
    the bytes read so far) and ``last`` whether the file ends with this block (empty when the
    previous one ended the file).

    A block is valid until the next one is asked for: two buffers of ``block_bytes`` (default
    :data:`BLOCK_BYTES`, and room for the line carried over) take turns, and with ``ahead`` a
    thread reads (and inflates) the next block while the caller works on this one. A plain file
    of at most ``block_bytes`` (a gzip file of at most a quarter of it) is one block, read as
    :func:`read_bytes` reads it; an empty file is one empty block.

    Raises
    ------
    BedParseError
        As :func:`read_bytes`: missing path, a directory, an unreadable file, a truncated or
        corrupt gzip stream (when the reading reaches the damage).

    Examples
    --------
    >>> import tempfile, os, pathlib
    >>> p = os.path.join(tempfile.mkdtemp(), "x.bed")
    >>> _ = pathlib.Path(p).write_bytes(b"chr1\\t1\\t2\\nchr2\\t3\\t4\\n")
    >>> [(b.tobytes(), last) for b, _, last in line_blocks(p, block_bytes=6)]
    [(b'chr1\\t1\\t2\\n', False), (b'chr2\\t3\\t4\\n', True)]
    """
    p = _check_readable(path)
    size = max(1, int(block_bytes or BLOCK_BYTES))
    with reading(p):
        raw = open(p, "rb")  # noqa: SIM115 (closed below, after the last block)
    with raw:
        with reading(p):
            st = os.fstat(raw.fileno())
            regular = stat.S_ISREG(st.st_mode)  # not a pipe (``<(zcat x.bed.gz)``): a size
            total = st.st_size if regular else 0
            # (a peek would fill the reader's buffer and slow the whole read after it)
            head = os.pread(raw.fileno(), 16, 0) if regular else raw.peek(2)[:2]
            gz = head[:2] == GZIP_MAGIC
            if gz and regular:
                warn_cut_short(p, head, os.pread(raw.fileno(), 28, max(total - 28, 0)))
            whole = None
            if regular and total <= (size // _GZIP_WHOLE if gz else size):
                whole = raw.read()  # as read_bytes reads it
        src = raw
        if whole is not None and gz:
            inflated = _inflate_bounded(whole, p)
            if inflated is None:  # more than _WHOLE_MAX: in blocks, bounded, after all
                src, whole = io.BytesIO(whole), None
            else:
                whole = inflated
        if whole is not None:
            buf = np.frombuffer(whole, dtype=np.uint8)
            yield buf, buf.size, True
            return
        frames = _frames(src, total, gz, size, p)
        try:
            with reading(p):  # the first block here: a small .gz file starts no thread
                first = next(frames)
            yield first
            if first[2]:
                return
            if ahead:
                yield from _read_ahead(frames, p)
            else:
                with reading(p):
                    yield from frames
        finally:
            frames.close()


def _read_ahead(frames: Iterator, p: str) -> Iterator[tuple[np.ndarray, int, bool]]:
    """The ``frames`` (:func:`_frames`) made on a thread, one block ahead of the caller: the
    thread takes a buffer only when the caller has given one back (by asking for the next
    block), so two exist: the caller holds one, the thread fills the other."""
    ready: queue.Queue = queue.Queue()
    free = threading.Semaphore(2)
    stop = threading.Event()
    end = object()

    def produce() -> None:
        try:
            while True:
                free.acquire()
                if stop.is_set():
                    return
                item = next(frames, end)
                ready.put(item)
                if item is end:
                    return
        except BaseException as exc:  # noqa: BLE001 (handed to the caller, raised there)
            ready.put(exc)
        finally:
            frames.close()

    worker = threading.Thread(target=produce, name="genotok-read-ahead", daemon=True)
    worker.start()
    try:
        while (item := ready.get()) is not end:
            if isinstance(item, BaseException):
                with reading(p):
                    raise item
            yield item
            free.release()  # the caller is done with that block's buffer
    finally:
        stop.set()
        free.release()
        worker.join()


def _inflate_bounded(data: bytes, path: str) -> bytes | None:
    """The gzip stream ``data`` inflated, or None when it gives more than :data:`_WHOLE_MAX`
    bytes (never more than that is held)."""
    limit = _WHOLE_MAX
    try:
        with _fastgzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as gz:
            out = gz.read(limit + 1)
    except EOFError:
        raise BedParseError(path, None, "truncated gzip stream: the file ends before the "
                            "compressed data does (an interrupted download?); re-create it") from None
    except _GZIP_ERRORS as exc:
        raise BedParseError(path, None, f"corrupt gzip data ({exc}); re-create the file") from None
    return out if len(out) <= limit else None


def _frames(raw, total: int, gz: bool, size: int,
            path: str = "") -> Iterator[tuple[np.ndarray, int, bool]]:
    """:func:`line_blocks` of the open file ``raw`` (``total`` bytes) without the thread: fill
    a buffer, cut it after its last newline, carry the unfinished line into the other buffer.
    A line longer than :data:`MAX_LINE_BYTES` is refused (a gzip bomb of one line)."""
    with (_fastgzip.open(raw, "rb") if gz else contextlib.nullcontext(raw)) as src:
        piece = _INFLATE_PIECE if gz else size
        bufs: list = [np.empty(0, np.uint8), np.empty(0, np.uint8)]
        carry = bufs[1][:0]  # the unfinished line after the previous block
        text = 0  # bytes of text up to the end of this block
        k = 0
        while True:
            c = carry.size
            _line_cap(c, text, path)  # memory stays under the cap and two blocks
            if bufs[k].size - c < (size + 1) // 2:  # room for the carried line and half a block
                bufs[k] = np.empty(c + size + min(size, _CARRY_ROOM), np.uint8)
            buf = bufs[k]
            buf[:c] = carry
            n = _fill(src, buf, c, piece)
            while n == buf.size and (cut := _last_newline(buf, c, n)) < 0:
                _line_cap(n, text, path)
                c = n  # one line longer than the buffer: grow it and read on
                bufs[k] = np.empty(buf.size + max(buf.size, size), np.uint8)
                bufs[k][:n] = buf[:n]
                buf = bufs[k]
                n = _fill(src, buf, c, piece)
            last = n < buf.size  # (empty when the file ended with the previous block)
            cut = n if last else cut + 1
            text += cut
            if last or not total:  # the end, or a pipe: no guess
                expected = text + n - cut
            elif not gz:
                expected = total
            else:  # inflated so far, scaled by the compressed bytes left
                expected = int((text + n - cut) * total / max(raw.tell(), 1))
            yield buf[:cut], expected, last
            if last:
                return
            carry, k = buf[cut:n], 1 - k


def _line_cap(length: int, text: int, path: str) -> None:
    """Refuse an unfinished line longer than :data:`MAX_LINE_BYTES`."""
    if length > MAX_LINE_BYTES:
        raise BedParseError(path, None, f"a line of more than {MAX_LINE_BYTES >> 20} MiB (after "
                            f"{text:,} bytes of text): this is no BED file (a binary file, or a "
                            "gzip bomb?)")


def _fill(src, buf: np.ndarray, lo: int, piece: int) -> int:
    """Read into ``buf[lo:]`` until it is full or the stream ends: the bytes in ``buf`` then."""
    view = memoryview(buf)
    while lo < buf.size:
        got = src.readinto(view[lo:min(buf.size, lo + piece)])
        if not got:
            break
        lo += got
    return lo


def _last_newline(buf: np.ndarray, lo: int, hi: int) -> int:
    """Index of the last newline in ``buf[lo:hi]``, or -1: windows of 4 KiB from the end,
    then doubling (the last line of a block is short)."""
    size = 4096
    while hi > lo:
        a = max(lo, hi - size)
        at = buf[a:hi].tobytes().rfind(b"\n")
        if at >= 0:
            return a + at
        hi = a
        size *= 2
    return -1


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_temp_dir(path: Path, suffix: str = ".tmp", prefix: str | None = None) -> Path:
    """A temporary directory beside ``path`` (``prefix`` or ``.NAME.``) with the permissions a
    plain ``mkdir`` would give (``tempfile.mkdtemp`` makes it 0o700: an output renamed into
    place from it would be closed to the group and others)."""
    tmp = tempfile.mkdtemp(prefix=prefix or f".{path.name}.", suffix=suffix, dir=path.parent)
    os.chmod(tmp, 0o777 & ~_umask())
    return Path(tmp)


def make_temp(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    """A temporary file beside ``path`` with the permissions a plain ``open`` would give."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())
    return fd, tmp


class CanonicalJSON:
    """A JSON object encoded once: each top-level value as canonical JSON (sorted keys,
    compact, ASCII), so that :attr:`text` (the whole object's canonical JSON, what a digest
    is taken of: ``json.dumps(obj, sort_keys=True, separators=(",", ":"))``) and
    :meth:`lines` (the file's text) cost one encoding, not one each; a gene preset's 209 KB
    manifest took ~3 ms an encoding, three times a manifest. ``allow_nan=False``: a NaN is
    a ``ValueError`` here.

    >>> c = CanonicalJSON({"b": [1, 2], "a": {"y": 1, "x": 2}})
    >>> c.text
    '{"a":{"x":2,"y":1},"b":[1,2]}'
    >>> print(c.lines({"digest": "ab"}), end="")
    {
     "b": [1,2],
     "a": {"x":2,"y":1},
     "digest": "ab"
    }
    """

    def __init__(self, obj: dict, allow_nan: bool = True):
        import json

        self.parts = {k: json.dumps(v, sort_keys=True, separators=(",", ":"),
                                    ensure_ascii=True, allow_nan=allow_nan)
                      for k, v in obj.items()}
        self.text = "{" + ",".join(f"{json.dumps(k)}:{self.parts[k]}"
                                   for k in sorted(self.parts)) + "}"

    def lines(self, more: dict | None = None) -> str:
        """The object one top-level key a line (as readable at the top as ``json.dump(
        indent=1)``, which takes Python's own encoder), then the keys of ``more``."""
        import json

        parts = {**self.parts, **{k: json.dumps(v) for k, v in (more or {}).items()}}
        return "{\n" + ",\n".join(f" {json.dumps(k)}: {v}" for k, v in parts.items()) \
            + "\n}\n"


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator:
    """Write ``path`` through a temporary file in the same folder, renamed into place on success.

    The data is fsynced before the rename. An exception inside the block (KeyboardInterrupt
    too) removes the temporary file and leaves ``path`` as it was, so readers never see a
    partial file.

    Examples
    --------
    >>> import tempfile, os, pathlib
    >>> p = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_write(p, "w") as fh:
    ...     _ = fh.write("done")
    >>> pathlib.Path(p).read_text()
    'done'
    """
    path = local_path(path, "this file")
    fd, tmp = make_temp(path)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def staging_name(path: str | os.PathLike) -> Path:
    """A fresh name beside ``path`` to write it under before :func:`place_once`
    (``.NAME.XXXXXXXX.tmp``, the pattern of :func:`make_temp`, which a resumed run removes).

    Examples
    --------
    >>> name = staging_name("d/c.gtokc").name
    >>> name.startswith(".c.gtokc."), name.endswith(".tmp"), len(name)
    (True, True, 21)
    """
    path = Path(path)
    return path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"


def place_once(staged: str | os.PathLike, path: str | os.PathLike) -> bool:
    """Move the finished file ``staged`` to ``path`` unless a file is there already (it stays).

    ``True`` when ``staged`` was put in place; ``staged`` is gone afterwards either way. The
    check and the move are one step (a hard link, which fails on an existing name), so of two
    writers of the same file the first stays, whatever their timing: a task a cluster runs
    again (Dask recomputes a finished task whose worker died) cannot replace a file that
    another process has already recorded or read. Where the file system has no hard links the
    check and the move are two steps.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> for text in ("first", "second"):
    ...     _ = (d / "s.tmp").write_text(text)
    ...     print(place_once(d / "s.tmp", d / "s"))
    True
    False
    >>> (d / "s").read_text(), sorted(os.listdir(d))
    ('first', ['s'])
    """
    staged, path = Path(staged), Path(path)
    try:
        os.link(staged, path)
        placed = True
    except FileExistsError:
        placed = False
    except OSError:  # no hard links here (some FUSE mounts): check, then rename
        placed = not path.exists()
        if placed:
            os.replace(staged, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
    if placed:
        _fsync_dir(path.parent)
    return placed


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable (best effort: some file systems refuse to open folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: what :func:`default_hash` may give: what a journal's input hash and its stamps may name
DEFAULT_HASHES = ("xxh3_128", "sha256")


def default_hash() -> str:
    """``"xxh3_128"`` when xxhash is installed (much faster than SHA-256), else ``"sha256"``."""
    return "sha256" if optional("xxhash") is None else "xxh3_128"


def hasher(algorithm: str):
    """A streaming hasher: ``"xxh3_128"`` (xxhash), ``"blake2b_64"`` (BLAKE2b with an 8-byte
    digest: stores' and corpora's checksums) or any :func:`hashlib.new` name."""
    if algorithm == "xxh3_128":
        return require("xxhash", "hashing with xxh3_128").xxh3_128()
    if algorithm == "blake2b_64":
        return hashlib.blake2b(digest_size=8)
    return hashlib.new(algorithm)


def file_digest(path: str | os.PathLike, algorithm: str = "sha256", chunk: int = 1 << 20) -> str:
    """Hex digest of a file's bytes, read in chunks (any name :func:`hasher` takes).

    Examples
    --------
    >>> import tempfile, os, pathlib
    >>> p = os.path.join(tempfile.mkdtemp(), "x")
    >>> _ = pathlib.Path(p).write_bytes(b"abc")
    >>> file_digest(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hasher(algorithm)
    if os.path.isdir(path):  # a store of files (Zarr, SOMA, a Cell Ranger folder): its tree
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                p = os.path.join(root, name)
                h.update(os.path.relpath(p, path).encode("utf-8", "surrogateescape") + b"\0")
                h.update(file_digest(p, algorithm, chunk).encode())
        return h.hexdigest()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------- URLs (fsspec)
def is_url(path) -> bool:
    """Whether ``path`` names an object in a remote store (``scheme://…``, not ``file://``).

    Check the string itself: ``Path("s3://bkt/x")`` is the local path ``s3:/bkt/x``.

    Examples
    --------
    >>> is_url("s3://bucket/corpus"), is_url("/data/corpus"), is_url("file:///data/c")
    (True, False, False)
    """
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


def local_path(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a local :class:`~pathlib.Path`, refusing a URL (``s3://…``), which
    ``Path`` would turn into a local directory named ``s3:``.

    Examples
    --------
    >>> local_path("s3://bkt/c.gtokc", "a corpus file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.GenotokError: s3://bkt/c.gtokc: a URL; a corpus file is written to ...
    """
    if is_url(path):
        raise GenotokError(f"{path}: a URL; {what} is written to a local path only: write it "
                           "locally and upload it, or pre-tokenize straight to the store with "
                           "genotok.pretokenize(inputs, tokenizer, out=URL)")
    return Path(path)


def cache_root() -> Path:
    """genotok's cache directory: ``$GENOTOK_CACHE`` or ``~/.cache/genotok``."""
    return Path(os.environ.get("GENOTOK_CACHE") or Path.home() / ".cache" / "genotok")


def url_fs(url: str, storage_options: dict | None = None):
    """``(filesystem, path)`` of ``url`` through fsspec (``pip install 'genotok[remote]'``);
    an unknown scheme or a missing driver (s3fs, gcsfs) is a :class:`GenotokError`."""
    fsspec = require("fsspec", f"reading or writing {url}")
    try:
        return fsspec.core.url_to_fs(url, **(storage_options or {}))
    except (ImportError, ValueError) as exc:
        raise GenotokError(f"{url}: cannot open this URL with fsspec ({exc}); install its "
                           "driver (s3fs for s3://, gcsfs for gs://, aiohttp for https://)"
                           ) from None


def fetch_url(url: str, storage_options: dict | None = None) -> Path:
    """A local copy of the remote file ``url`` (its name kept, so suffixes and record names
    are the remote file's), under :func:`cache_root` ``/inputs``; a copy of the same size is
    reused (its modification time then stays, so a resumed run sees the same input). The copy
    is downloaded to a temporary name and renamed into place."""
    fs, rpath = url_fs(url, storage_options)
    try:
        size = fs.info(rpath).get("size")
    except FileNotFoundError:
        raise GenotokError(f"{url}: no such remote file") from None
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    folder = cache_root() / "inputs" / key
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / (url.rstrip("/").rsplit("/", 1)[-1] or "input")
    if dest.is_file() and size is not None and dest.stat().st_size == size:
        return dest
    fd, tmp = make_temp(dest)
    os.close(fd)
    try:
        fs.get_file(rpath, tmp)
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return dest


def read_small(path: str | os.PathLike, limit: int, error: type[Exception], what: str,
               not_a: str | None = None) -> bytes:
    """The bytes of ``path``, a small file of settings (a run file, a cell spec, a dictionary),
    read as a bounded prefix: a device or a pipe that never ends cannot hang the call, nor can
    a named pipe nothing writes to (opened without waiting for a writer, then refused). A file
    that cannot be read, or of more than ``limit`` bytes, is ``error`` naming it and ``what`` it
    should be (``not_a``: the longer name the size message gives, ``what`` by default).

    >>> read_small("no-such.toml", 1 << 20, ValueError, "run file")
    Traceback (most recent call last):
    ValueError: no-such.toml: cannot read the run file: No such file or directory
    """
    where = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO waits for a writer
        os.set_blocking(fd, True)  # (then a FIFO without one reads as empty, at once)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(limit + 1)
            pipe = not raw and stat.S_ISFIFO(os.fstat(fh.fileno()).st_mode)
    except OSError as exc:
        raise error(f"{where}: cannot read the {what}: {exc.strerror or exc}") from None
    if pipe:
        raise error(f"{where}: a pipe that nothing wrote to, not a {what}: give a regular file")
    if len(raw) > limit:
        raise error(f"{where}: more than {limit >> 20} MiB: not a {not_a or what}")
    return raw


def parse_toml(raw: bytes | str, where: str, error: type[Exception], what: str = "") -> dict:
    """The TOML document ``raw`` (bytes: UTF-8); a document that cannot be read (not TOML,
    not UTF-8, a nest deeper than the parser recurses, an integer of more than 4,300 digits)
    is ``error`` naming ``where`` (``what``: the kind of file): every TOML file genotok reads (run files, cell specs,
    tokenizer configurations) is refused the same way, never with the parser's raw error.

    >>> parse_toml(b"a = 1", "f.toml", ValueError)
    {'a': 1}
    >>> parse_toml("a = " + "[" * 5000, "f.toml", ValueError)
    Traceback (most recent call last):
    ValueError: f.toml: not valid TOML: maximum recursion depth exceeded
    """
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError, UnicodeError: ValueErrors
        msg = str(exc).split(" while ", 1)[0] if isinstance(exc, RecursionError) else str(exc)
        kind = f"a valid TOML {what}" if what else "valid TOML"
        raise error(f"{where}: not {kind}: {msg}"[:500]) from None
