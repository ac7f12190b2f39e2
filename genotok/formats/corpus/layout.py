"""The corpus file's byte layout, checksums and temporary files: what the writer, the shard
reader, the manifest and remote corpora share (the names with an underscore are private to :mod:`genotok.formats`).

A corpus holds millions of token lists in one memory-mappable file (or many shards).

Byte layout (little-endian; every section starts on a 64-byte boundary; docs/formats.md has
the full description):

====== ======== ===========================================================
offset size     field
====== ======== ===========================================================
0      8        magic ``b"GTOKCORP"``
8      2        format major version (a reader refuses a newer major)
10     2        format minor version
12     1        token width in bytes (2: uint16, 4: uint32)
13     1        value channel: 0 none, 1 float32, 2 uint16
14     2        reserved (0)
16     8        number of records ``n``
24     8        number of tokens ``t``
32     8        byte offset of the tokens section (``t`` ids)
40     8        byte offset of the values section (``t`` values; 0 when none)
48     8        byte offset of the record offsets (``n + 1`` int64, from 0 to ``t``)
56     8        byte offset of the JSON header
64     8        byte length of the JSON header
72     8        byte offset of the records JSON (names, metadata columns)
80     8        byte length of the records JSON
88     8        checksum of the JSON header bytes (raw digest; checked on open)
96     32       reserved (0)
====== ======== ===========================================================

The JSON header is small and read on open: format, genotok version, creation time, universe
fingerprint, vocabulary size, special token ids, tokenizer settings, metadata column names,
sources (name, size, hash) and the checksums of the data sections. Record names and metadata
columns (one value per record: megabytes for millions of cells) live in the records JSON, read
only when :attr:`Corpus.names` or :attr:`Corpus.meta` is first used.

A corpus may also be a directory holding ``manifest.json`` and shard files: shards written by
separate processes or machines are joined by writing a manifest, never by copying token data.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import struct
import tempfile
from pathlib import Path

import numpy as np

from ..._io import hasher
from ...errors import GtokFormatError

MAGIC = b"GTOKCORP"
MAJOR, MINOR = 1, 0
PREAMBLE = struct.Struct("<8sHHBBH9Q8s32x")
assert PREAMBLE.size == 128
ALIGN = 64
VALUE_DTYPES = {0: None, 1: np.dtype("<f4"), 2: np.dtype("<u2")}
_VALUE_CODES = {np.dtype("float32"): 1, np.dtype("uint16"): 2}
MANIFEST = "manifest.json"
#: bytes hashed or copied per step (a read of ``n`` bytes allocates ``n`` bytes first)
_COPY_BLOCK = 1 << 24

#: checksum of corpora: BLAKE2b with an 8-byte digest, from the standard library, so that
#: every install can verify every corpus
CHECKSUM = "blake2b_64"
CHECKSUMS = (CHECKSUM,)


def _new_hasher(name: str):
    """A streaming hasher for the section checksums (``blake2b_64``)."""
    if name in CHECKSUMS:
        return hasher(name)
    raise GtokFormatError(f"unknown checksum algorithm {str(name)[:40]!r} (expected one of "
                          f"{', '.join(CHECKSUMS)})")


def _digest(data, name: str) -> bytes:
    h = _new_hasher(name)
    mv = memoryview(data).cast("B")
    for i in range(0, len(mv), _COPY_BLOCK):
        h.update(mv[i:i + _COPY_BLOCK])
    return h.digest()


#: temporary names: ``.<target name>.writing-<host>-<pid>-<random>.tmp`` for a CorpusWriter,
#: ``.<directory name>.exporting-<host>-<pid>-<random>.tmp`` for export_gtok_dir. A writer
#: killed with SIGKILL leaves one behind; the next writer of the same target removes those
#: whose process is gone (same host, pid no longer running). Other hosts' files are left alone.
_WRITING, _EXPORTING = ".writing-", ".exporting-"


def _host() -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in socket.gethostname())[:64] or "host"


def _make_temp(parent: Path, prefix: str) -> tuple[int, str]:
    """A temporary file ``<prefix><host>-<pid>-<random>.tmp`` with a plain open's permissions."""
    fd, tmp = tempfile.mkstemp(prefix=f"{prefix}{_host()}-{os.getpid()}-", suffix=".tmp",
                               dir=parent)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    return fd, tmp


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _clean_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove temporary files/directories ``<prefix><host>-<pid>-*.tmp`` of dead local processes."""
    removed = []
    host = _host()
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        fields = name[len(prefix):-4].rsplit("-", 2)
        if len(fields) != 3 or fields[0] != host or not fields[1].isdigit():
            continue
        pid = int(fields[1])
        if pid == os.getpid() or _alive(pid):
            continue
        p = parent / name
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
    return removed


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _pad(n: int) -> int:
    return (-n) % ALIGN


def _token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65536), else uint32."""
    return _width_dtype(2 if vocab_size <= 65536 else 4)


def _width_dtype(width: int) -> np.dtype:
    """The token dtype of a preamble's token width (2 or 4 bytes)."""
    return np.dtype("<u2") if width == 2 else np.dtype("<u4")


_HEX16 = frozenset("0123456789abcdef")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_hex_digest(x) -> bool:
    return isinstance(x, str) and len(x) == 16 and set(x) <= _HEX16


def _json_load(raw, what: str, p) -> object:
    """Parse JSON read from a file; a clear error that never quotes the file's bytes."""
    try:
        return json.loads(bytes(raw))
    except UnicodeDecodeError:
        raise GtokFormatError(f"{p}: corrupt {what}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise GtokFormatError(f"{p}: corrupt {what}: not valid JSON ({exc.msg} at line "
                              f"{exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise GtokFormatError(f"{p}: corrupt {what}: not valid JSON ({type(exc).__name__})") from None

