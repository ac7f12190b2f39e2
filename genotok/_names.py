"""Record names used as file names: a safe, reversible spelling.

A record name comes from a file (a barcode, a file stem) and may hold anything: ``/``,
``..``, control bytes, non-ASCII text. :func:`to_file_stem` percent-encodes every byte of its
UTF-8 form outside ``[A-Za-z0-9_-.]`` (and a leading ``.``), so the result is never a path
separator, never ``.`` or ``..``, never hidden, and :func:`from_file_stem` gives the name back.
The encoding is injective: two different names never share a stem, so a collision between
file names means the same record name twice, which callers report as an error.
"""

from __future__ import annotations

import re

from .errors import GenotokError

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
#: file systems limit a name to 255 bytes; leave room for a prefix and a suffix
MAX_STEM = 200
_ESCAPE = re.compile(r"%([0-9A-F]{2})")


def to_file_stem(name: str, where: str = "record name") -> str:
    """A file-name-safe, reversible spelling of ``name``.

    Examples
    --------
    >>> to_file_stem("AAACGA-1")
    'AAACGA-1'
    >>> to_file_stem("../x/y")
    '%2E.%2Fx%2Fy'
    >>> from_file_stem(to_file_stem("../x/y"))
    '../x/y'
    """
    if not isinstance(name, str) or name == "":
        raise GenotokError(f"{where}: {name!r} cannot name a file (an empty or non-text name)")
    raw = name.encode("utf-8", "surrogateescape")
    out = []
    for i, b in enumerate(raw):
        if b in _SAFE and not (i == 0 and b == 0x2E):
            out.append(chr(b))
        else:
            out.append(f"%{b:02X}")
    stem = "".join(out)
    if len(stem) > MAX_STEM:
        raise GenotokError(f"{where}: {name[:40]!r}… is too long to name a file "
                           f"({len(stem)} characters once made safe, at most {MAX_STEM})")
    return stem


def from_file_stem(stem: str) -> str:
    """The record name that :func:`to_file_stem` spelled as ``stem``."""
    raw = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(stem):
        raw += stem[pos:m.start()].encode("ascii")
        raw.append(int(m.group(1), 16))
        pos = m.end()
    raw += stem[pos:].encode("ascii")
    return raw.decode("utf-8", "surrogateescape")
