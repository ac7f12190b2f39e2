"""Plain-Python BED parser with the same dialect rules as genotok._parse (the oracle)."""

from __future__ import annotations


class NaiveError(Exception):
    def __init__(self, line: int):
        self.line = line


def parse(text: bytes):
    """Return [(chrom, start, end)] or raise NaiveError(line) for the first malformed line."""
    out = []
    header_seen = False
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for no, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if any(b < 9 or 13 < b < 32 or b in (11, 12) for b in raw.rstrip(b"\r")):
            raise NaiveError(no)
        if line.strip(b" \t") == b"" or line.startswith(b"#"):
            continue
        first = line.split(b"\t")[0].split(b" ")[0]
        if first in (b"track", b"browser"):
            continue
        first_tab, first_space = line.find(b"\t"), line.find(b" ")
        tab_mode = first_tab >= 0 and (first_space < 0 or first_tab < first_space)
        fields = line.split(b"\t") if tab_mode else [f for f in line.split(b" ") if f]
        if len(fields) < 3 or fields[0] == b"" or fields[2] == b"":
            raise NaiveError(no)
        c, s, e = fields[:3]
        if any((b" " if tab_mode else b"\t") in x for x in (c, s, e)):
            raise NaiveError(no)  # mixed separators
        ok = all(x.isdigit() for x in (s, e))
        if not ok:
            if not header_seen and not out:
                header_seen = True
                continue
            raise NaiveError(no)
        s, e = int(s), int(e)
        if e < s or max(s, e) > 2**62:
            raise NaiveError(no)
        header_seen = True
        out.append((c.decode(), s, e))
    return out
