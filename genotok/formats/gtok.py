"""gtars-compatible ``.gtok`` files: one flat list of token ids.

Layout (as gtars writes it): ``b"GTOK"``, one width byte (``0x01`` uint16, ``0x02`` uint32),
then the ids little-endian, with no count and no footer. genotok reads every such file gtars
writes and refuses what gtars silently accepts: a trailing partial id (a truncated file).
"""

from __future__ import annotations

import os
import stat

import numpy as np

from .._io import atomic_write, local_path
from ..errors import GtokFormatError
from ..params import PATH, Flag, InstanceOf, Options, Unchecked, validated

MAGIC = b"GTOK"
HEADER_SIZE = 5
WIDTH_FLAGS = {1: np.dtype("<u2"), 2: np.dtype("<u4")}
_FLAG_OF_WIDTH = {2: 1, 4: 2}


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


@validated({"path": PATH, "what": [InstanceOf(str)], "nofollow": [Flag()],
            "error": [InstanceOf(type)]})
def open_regular(path: str | os.PathLike, what: str, *, nofollow: bool = False,
                 error: type = GtokFormatError) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only as a regular file: ``(fd, fstat)``, else ``error``.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO,
    a device (``/dev/zero``), a socket or a directory is refused at once instead of hanging or
    reading forever; ``nofollow`` refuses a symbolic link as the last path component. Messages
    name the path, never bytes of the file.

    Examples
    --------
    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gtok")
    >>> write_gtok([1], p)
    >>> fd, st = open_regular(p, ".gtok file"); os.close(fd); st.st_size
    7
    >>> os.mkfifo(p + ".fifo"); open_regular(p + ".fifo", ".gtok file")
    Traceback (most recent call last):
    ...
    genotok.errors.GtokFormatError: ...x.gtok.fifo: is a FIFO (named pipe); a .gtok file must be a regular file
    """
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise error(f"{p}: no such file (a {what} was expected)") from None
    except OSError as exc:
        if nofollow and os.path.islink(p):
            raise error(f"{p}: is a symbolic link; a {what} must be a regular file") from None
        raise error(f"{p}: cannot open the {what} ({exc.strerror or type(exc).__name__})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise error(f"{p}: is {kind}; a {what} must be a regular file")
    return fd, st


def _as_ids(ids, where: str) -> np.ndarray:
    a = np.asarray(ids)
    if a.ndim != 1:
        a = a.ravel()
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise GtokFormatError(f"{where}: token ids must be integers, got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() > 0xFFFFFFFF):
        raise GtokFormatError(f"{where}: token ids must be within 0..4294967295 "
                              f"(got {a.min()}..{a.max()})")
    return a


@validated({"ids": [Unchecked("token ids, checked by the writer")],
            "out": [InstanceOf(str, os.PathLike, hint="write_gtok takes (ids, path); gtars' "
                               "write_tokens_to_gtok takes (path, ids)")],
            "width": [Options(2, 4), None], "atomic": [Flag()]})
def write_gtok(ids, out: str | os.PathLike, width: int | None = None, *,
               atomic: bool = True) -> None:
    """Write one token list as a gtars ``.gtok`` file (atomically).

    ``width`` is ``2`` (uint16) or ``4`` (uint32); by default uint16 when every id <= 65535, as
    gtars chooses per file. ``atomic=False`` creates ``out`` directly (it must not exist) and
    fsyncs it: for files written into a temporary directory that is renamed into place as a
    whole, as :func:`~genotok.export_gtok_dir` does.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gtok")
    >>> write_gtok([0, 1, 70000], p); read_gtok(p, mmap=False).tolist()
    [0, 1, 70000]
    """
    p = os.fspath(local_path(out, "a .gtok file"))
    a = _as_ids(ids, p)
    if width is None:
        width = 2 if (a.size == 0 or a.max() <= 0xFFFF) else 4
    if width == 2 and a.size and a.max() > 0xFFFF:
        raise GtokFormatError(f"{p}: id {int(a.max())} does not fit in uint16; use width=4")
    flag = _FLAG_OF_WIDTH[width]
    payload = np.ascontiguousarray(a, dtype=WIDTH_FLAGS[flag])
    if not atomic:
        with open(p, "xb") as fh:
            fh.write(MAGIC + bytes([flag]))
            fh.write(memoryview(payload).cast("B"))
            fh.flush()
            os.fsync(fh.fileno())
        return
    with atomic_write(p, "wb") as fh:
        fh.write(MAGIC + bytes([flag]))
        fh.write(payload.tobytes())


def _check(head: bytes, size: int, p: str) -> tuple[np.dtype, int]:
    """Validate a header (the first 5 bytes) and the file size; return (dtype, number of ids)."""
    if len(head) < HEADER_SIZE or head[:4] != MAGIC:  # never quote the bytes: any file may be named
        raise GtokFormatError(f"{p}: not a .gtok file (bad magic: it does not start with {MAGIC!r}"
                              f"{'' if len(head) >= HEADER_SIZE else ' and a width byte'})")
    dtype = WIDTH_FLAGS.get(head[4])
    if dtype is None:
        raise GtokFormatError(f"{p}: unknown width flag 0x{head[4]:02x} (expected 0x01 uint16 "
                              "or 0x02 uint32)")
    payload = size - HEADER_SIZE
    if payload % dtype.itemsize:
        raise GtokFormatError(f"{p}: truncated: {payload} payload bytes is not a whole number of "
                              f"{dtype.itemsize}-byte ids (the file was cut short); re-create it")
    return dtype, payload // dtype.itemsize


def _gtok_header(fd: int, size: int, p: str) -> tuple[np.dtype, int]:
    """Validate an open ``.gtok`` file's header and size; return (dtype, number of ids)."""
    return _check(os.pread(fd, HEADER_SIZE, 0), size, p)


@validated({"path": [InstanceOf(str, os.PathLike)], "mmap": [Flag()]})
def read_gtok(path: str | os.PathLike, mmap: bool = True) -> np.ndarray:
    """Read a ``.gtok`` token list: a read-only memory map by default (no copy), else an array.

    An empty list is returned as a read-only empty array (a zero-length file region cannot be
    memory-mapped). The dtype is the file's (uint16 or uint32).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gtok")
    >>> write_gtok([5, 6], p)
    >>> read_gtok(p).tolist()
    [5, 6]
    """
    p = os.fspath(path)
    fd, st = open_regular(p, ".gtok file")
    with os.fdopen(fd, "rb") as fh:  # every read goes through the checked descriptor
        dtype, n = _gtok_header(fd, st.st_size, p)
        if n == 0:
            empty = np.zeros(0, dtype=dtype)
            empty.flags.writeable = False
            return empty
        if mmap:
            return np.memmap(fh, dtype=dtype, mode="r", offset=HEADER_SIZE, shape=(n,))
        return np.fromfile(fh, dtype=dtype, offset=HEADER_SIZE, count=n)
