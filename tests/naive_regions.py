"""Plain-Python oracles for genotok's region parsing: BED text and region strings.

Slow and obvious on purpose: ``bytes.split``, ``int``, ``str.rpartition``. They implement the
dialect rules written in ``genotok/_parse.py`` and ``genotok.regions.parse_region_strings``.
"""

from __future__ import annotations

import re

MAX_COORD = 2**62


class NaiveError(Exception):
    """The first malformed line: ``line`` (1-based) and ``kind``, one of ``columns``, ``start``,
    ``end``, ``negative``, ``overflow``, ``order``, ``binary``, ``empty``, ``mixed``, ``utf8``."""

    def __init__(self, line: int, kind: str):
        super().__init__(f"line {line}: {kind}")
        self.line = line
        self.kind = kind


def _number(field: bytes):
    """("ok", value) | ("overflow",) | ("negative",) | ("bad",) for one coordinate field."""
    if re.fullmatch(rb"\+?[0-9]+", field):
        v = int(field)
        return ("ok", v) if v <= MAX_COORD else ("overflow",)
    if re.match(rb"-[0-9]", field):
        return ("negative",)
    return ("bad",)


def _fields(line: bytes, no: int):
    """The first three fields of a data line (the rest is ignored), or NaiveError."""
    first = min(i for i in (line.find(b"\t"), line.find(b" "), len(line)) if i >= 0)
    if first == len(line):
        raise NaiveError(no, "columns")
    if first == 0:
        raise NaiveError(no, "empty")
    if line[first:first + 1] == b"\t":  # tab-separated: one tab between fields
        parts = line.split(b"\t")
        chrom, start = parts[0], parts[1]
        if b" " in start:
            raise NaiveError(no, "mixed")
        if len(parts) < 3:
            raise NaiveError(no, "columns")
        end = parts[2]
        if b" " in end:
            raise NaiveError(no, "mixed")
        if end == b"":
            raise NaiveError(no, "columns")
        return chrom, start, end
    # space-separated: runs of spaces are one separator; a tab in the first three fields is mixing
    chrom = line[:first]
    rest = line[first:].lstrip(b" ")
    start, sep, rest = re.match(rb"([^ \t]*)([ \t]?)(.*)", rest, re.DOTALL).groups()
    if sep == b"":
        raise NaiveError(no, "columns")
    if sep == b"\t":
        raise NaiveError(no, "mixed")
    rest = rest.lstrip(b" ")
    end, sep, _ = re.match(rb"([^ \t]*)([ \t]?)(.*)", rest, re.DOTALL).groups()
    if sep == b"\t":
        raise NaiveError(no, "mixed")
    if end == b"":
        raise NaiveError(no, "columns")
    return chrom, start, end


def _parse_lines(text: bytes):
    out = []
    header_allowed = True
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for no, raw in enumerate(lines, start=1):
        if any(b < 32 and b not in (9, 13) for b in raw):
            raise NaiveError(no, "binary")
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if line.strip(b" \t") == b"" or line.startswith(b"#"):
            continue
        if re.match(rb"(track|browser)([ \t]|$)", line):
            continue
        chrom, start, end = _fields(line, no)
        s, e = _number(start), _number(end)
        if s[0] != "ok" or e[0] != "ok":
            if header_allowed and s[0] == "bad" and e[0] == "bad":
                header_allowed = False
                continue
            if s[0] != "ok":
                raise NaiveError(no, "start" if s[0] == "bad" else s[0])
            raise NaiveError(no, "end" if e[0] == "bad" else e[0])
        header_allowed = False
        if e[1] < s[1]:
            raise NaiveError(no, "order")
        try:
            name = chrom.decode("utf-8")
        except UnicodeDecodeError:
            raise NaiveError(no, "utf8") from None
        out.append((name, s[1], e[1]))
    return out


def parse(text: bytes):
    """Return ``[(chrom, start, end)]`` or raise :class:`NaiveError` for the first bad line.

    A NUL byte in the first 8 KiB makes any failure a ``binary`` one at the NUL's line (the file
    is not text at all). A leading UTF-8 byte-order mark is dropped, as the readers drop it.
    """
    if text.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is not text (genotok._io.strip_bom)
        text = text[3:]
    try:
        return _parse_lines(text)
    except NaiveError:
        nul = text.find(b"\x00", 0, 8192)
        if nul >= 0:
            raise NaiveError(text.count(b"\n", 0, nul) + 1, "binary") from None
        raise


def _right_number(s: str):
    """Split ``s`` into (rest, number text) at the last character that is not a digit or comma."""
    k = len(s)
    while k > 0 and (s[k - 1].isascii() and (s[k - 1].isdigit() or s[k - 1] == ",")):
        k -= 1
    return s[:k], s[k:]


def _number_text(t: str):
    """Value of ``1234`` or ``1,234``; None when malformed."""
    if t.isdigit() and t.isascii():
        return int(t)
    groups = t.split(",")
    if (len(groups) > 1 and 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])
            and all(g.isascii() and g.isdigit() for g in groups)):
        return int("".join(groups))
    return None


def parse_region_string(s, sep=None):
    """``(chrom, start, end)`` from ``chrom<sep1>start<sep2>end``, read from the right; None when
    it does not parse. ``sep=None`` allows sep1 in ``:-_`` and sep2 in ``-_``."""
    if not isinstance(s, str) or "\n" in s:
        return None
    seps = {None: (":-_", "-_"), ":": (":", "-"), "-": ("-", "-"), "_": ("_", "_")}[sep]
    rest, end = _right_number(s)
    if not rest or rest[-1] not in seps[1]:
        return None
    rest, start = _right_number(rest[:-1])
    if len(rest) < 2 or rest[-1] not in seps[0]:
        return None
    a, z = _number_text(start), _number_text(end)
    if a is None or z is None or max(a, z) > MAX_COORD:
        return None
    return rest[:-1], a, z
