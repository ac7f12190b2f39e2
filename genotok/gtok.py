"""gtars-compatible ``.gtok`` files: one flat list of token ids.

Layout (as gtars writes it): ``b"GTOK"``, one width byte (``0x01`` uint16, ``0x02`` uint32),
then the ids little-endian, with no count and no footer. genotok reads every such file gtars
writes and refuses what gtars silently accepts: a trailing partial id (a truncated file).
"""

from __future__ import annotations

import os

import numpy as np

from ._io import atomic_write
from .errors import GtokFormatError

MAGIC = b"GTOK"
HEADER_SIZE = 5
WIDTH_FLAGS = {1: np.dtype("<u2"), 2: np.dtype("<u4")}
_FLAG_OF_WIDTH = {2: 1, 4: 2}


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


def write_gtok(path: str | os.PathLike, ids, width: int | None = None) -> None:
    """Write one token list as a gtars ``.gtok`` file (atomically).

    ``width`` is ``2`` (uint16) or ``4`` (uint32); by default uint16 when every id <= 65535, as
    gtars chooses per file.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gtok")
    >>> write_gtok(p, [0, 1, 70000]); read_gtok(p, mmap=False).tolist()
    [0, 1, 70000]
    """
    p = os.fspath(path)
    a = _as_ids(ids, p)
    if width is None:
        width = 2 if (a.size == 0 or a.max() <= 0xFFFF) else 4
    if width not in _FLAG_OF_WIDTH:
        raise ValueError(f"width must be 2 (uint16) or 4 (uint32), got {width!r}")
    if width == 2 and a.size and a.max() > 0xFFFF:
        raise GtokFormatError(f"{p}: id {int(a.max())} does not fit in uint16; use width=4")
    flag = _FLAG_OF_WIDTH[width]
    with atomic_write(p, "wb") as fh:
        fh.write(MAGIC + bytes([flag]))
        fh.write(np.ascontiguousarray(a, dtype=WIDTH_FLAGS[flag]).tobytes())


def _check(head: bytes, size: int, p: str) -> tuple[np.dtype, int]:
    """Validate a header (the first 5 bytes) and the file size; return (dtype, number of ids)."""
    if len(head) < HEADER_SIZE or head[:4] != MAGIC:
        raise GtokFormatError(f"{p}: not a .gtok file (bad magic {head[:4]!r}, expected {MAGIC!r})")
    dtype = WIDTH_FLAGS.get(head[4])
    if dtype is None:
        raise GtokFormatError(f"{p}: unknown width flag 0x{head[4]:02x} (expected 0x01 uint16 "
                              "or 0x02 uint32)")
    payload = size - HEADER_SIZE
    if payload % dtype.itemsize:
        raise GtokFormatError(f"{p}: truncated: {payload} payload bytes is not a whole number of "
                              f"{dtype.itemsize}-byte ids (the file was cut short); re-create it")
    return dtype, payload // dtype.itemsize


def _gtok_header(path: str | os.PathLike) -> tuple[np.dtype, int]:
    """Validate a ``.gtok`` file's header and size; return (dtype, number of ids)."""
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        with open(p, "rb") as fh:
            head = fh.read(HEADER_SIZE)
    except FileNotFoundError:
        raise GtokFormatError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise GtokFormatError(f"{p}: is a directory, not a .gtok file") from None
    return _check(head, size, p)


def decode_gtok(raw: bytes, where: str = "<bytes>") -> np.ndarray:
    """The token ids of a ``.gtok`` file's content (already read into memory).

    Same checks as :func:`read_gtok`; ``where`` names the source in error messages.
    Returns a read-only view of ``raw``.

    Examples
    --------
    >>> decode_gtok(b"GTOK\\x01\\x05\\x00\\x06\\x00").tolist()
    [5, 6]
    """
    dtype, n = _check(bytes(raw[:HEADER_SIZE]), len(raw), where)
    return np.frombuffer(raw, dtype=dtype, count=n, offset=HEADER_SIZE)


def read_gtok(path: str | os.PathLike, mmap: bool = True) -> np.ndarray:
    """Read a ``.gtok`` token list: a read-only memory map by default (no copy), else an array.

    An empty list is returned as a read-only empty array (a zero-length file region cannot be
    memory-mapped). The dtype is the file's (uint16 or uint32).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gtok")
    >>> write_gtok(p, [5, 6])
    >>> read_gtok(p).tolist()
    [5, 6]
    """
    p = os.fspath(path)
    dtype, n = _gtok_header(p)
    if n == 0:
        empty = np.zeros(0, dtype=dtype)
        empty.flags.writeable = False
        return empty
    if mmap:
        return np.memmap(p, dtype=dtype, mode="r", offset=HEADER_SIZE, shape=(n,))
    return np.fromfile(p, dtype=dtype, offset=HEADER_SIZE, count=n)
