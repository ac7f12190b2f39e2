"""File plumbing: reading (maybe gzipped) bytes, atomic writes, digests."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .errors import BedParseError, GenotokError

try:  # igzip (ISA-L) decompresses several times faster than zlib; used when installed
    from isal import igzip as _fastgzip

    from isal import igzip_lib as _igzip_lib
    from isal import isal_zlib as _isal_zlib

    GZIP_BACKEND = "isal"
    _GZIP_ERRORS: tuple = (OSError, zlib.error, ValueError, _igzip_lib.IsalError, _isal_zlib.error)
except ImportError:  # pragma: no cover - depends on the environment
    _fastgzip = gzip
    GZIP_BACKEND = "gzip"
    _GZIP_ERRORS = (OSError, zlib.error, ValueError)

GZIP_MAGIC = b"\x1f\x8b"


def _check_readable(path: str | os.PathLike, error=BedParseError) -> str:
    p = os.fspath(path)
    if os.path.isdir(p):
        raise error(p, None, "is a directory, not a file; give the path of a BED file")
    if not os.path.exists(p):
        raise error(p, None, "no such file; check the path (relative paths start at "
                             f"{os.getcwd()})")
    return p


def is_gzip(path: str | os.PathLike) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike):
    """A binary reader of the file's bytes, gunzipped when it is gzip (by its magic bytes).

    Read it inside :func:`reading`, which turns the errors of a damaged file into a
    :class:`BedParseError` naming it.
    """
    p = os.fspath(path)
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
    """Gzip ``data`` with the package's one backend choice: ISA-L (``isal``, level 2: fast)
    when installed, else the standard library (level 6, ``mtime=0``: reproducible bytes).

    Examples
    --------
    >>> decompress(compress(b"chr1\\t1\\t2\\n"), "x.gz")
    b'chr1\\t1\\t2\\n'
    """
    if GZIP_BACKEND == "isal":
        return _fastgzip.compress(data, compresslevel=2)
    return gzip.compress(data, compresslevel=6, mtime=0)


def read_bytes(path: str | os.PathLike) -> np.ndarray:
    """The whole content of a file as a read-only ``uint8`` array, gunzipped when it is gzip.

    Gzip is recognised by its magic bytes, not by the file name; multi-member streams (BGZF)
    are read to the end. Decompression uses ISA-L (``isal``) when installed, else the standard
    library (see ``GZIP_BACKEND``). No copy is made of the (decompressed) bytes.

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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_temp(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    """A temporary file beside ``path`` with the permissions a plain ``open`` would give."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())
    return fd, tmp


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
    path = Path(path)
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


def default_hash() -> str:
    """``"xxh3_128"`` when xxhash is installed (≈20x faster than SHA-256), else ``"sha256"``."""
    try:
        import xxhash  # noqa: F401
    except ImportError:
        return "sha256"
    return "xxh3_128"


def file_digest(path: str | os.PathLike, algorithm: str = "sha256", chunk: int = 1 << 20) -> str:
    """Hex digest of a file's bytes, read in chunks (any hashlib name, or ``"xxh3_128"``).

    Examples
    --------
    >>> import tempfile, os, pathlib
    >>> p = os.path.join(tempfile.mkdtemp(), "x")
    >>> _ = pathlib.Path(p).write_bytes(b"abc")
    >>> file_digest(p)[:16]
    'ba7816bf8f01cfea'
    """
    if algorithm == "xxh3_128":
        import xxhash

        h = xxhash.xxh3_128()
    else:
        h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
