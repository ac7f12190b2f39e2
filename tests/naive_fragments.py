"""Plain-Python oracle of the fragment block kernel (``genotok.kernels.fragscan``).

Line by line, with a dict for each name table and every universe region compared with every
query: what :func:`genotok.kernels.fragscan.scan_fragments` counts, obviously and slowly.
"""

from __future__ import annotations

from collections import Counter


def _int(field: bytes) -> int:
    """A non-negative decimal of at most 18 digits, else -1 (the kernel's ``_int_field``)."""
    if not field or len(field) > 18 or not all(48 <= c <= 57 for c in field):
        return -1
    return int(field)


def parse_line(raw: bytes):
    """``None`` for a blank or ``#`` line, a status string for a bad one, else the fields
    ``(chrom, start, end, barcode, count)``."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if not raw or raw[:1] == b"#":
        return None
    first = next((c for c in raw if c in b"\t "), 9)  # the first separator decides
    if first == 32:  # runs of spaces, as gtars' split_whitespace
        f = [t for t in raw.split(b" ") if t]
        if any(b"\t" in t for t in f[:5]):
            return "mixed"
    else:
        f = raw.split(b"\t")
        if any(b" " in t for t in f[:5]):
            return "mixed"
    if len(f) < 4:
        return "columns"
    s, e = _int(f[1]), _int(f[2])
    if s < 0:
        return "start"
    if e < 0:
        return "end"
    if e < s:
        return "end before start"
    c = _int(f[4]) if len(f) > 4 else 1
    if c < 0:
        return "count"
    if not f[0] or not f[3]:
        return "columns"
    if any(b < 32 or b == 127 for b in f[3]):
        return "barcode"
    return f[0], s, e, f[3], c


def _peak_line(raw: bytes) -> bool:
    """genotok's rule for a peak line (narrowPeak, broadPeak) where fragments were expected:
    seven columns or more, split as the parser splits, the 6th a strand."""
    raw = raw[:-1] if raw.endswith(b"\r") else raw
    first = next((c for c in raw if c in b"\t "), 9)
    f = [t for t in raw.split(b" ") if t] if first == 32 else raw.split(b"\t")
    return len(f) >= 7 and f[5] in (b".", b"+", b"-")


def hits(regions, chrom: bytes, qs: int, qe: int, repeats: bool):
    """Ids of ``regions`` (``(chrom, start, end)`` in bytes/ints) hit by ``[qs, qe)``, the
    tokenizer's any-overlap rule; without ``repeats`` only a region's first identical line."""
    out = []
    seen = set()
    for i, (c, s, e) in enumerate(regions):
        if not repeats and (c, s, e) in seen:
            continue
        seen.add((c, s, e))
        if c == chrom and s < qe and e > qs:
            out.append(i)
    return out


def scan(text: bytes, regions, *, mode: str, left: int = 0, right: int = 0,
         use_count: bool = False, miss: bool = False, repeats: bool = True, allow=None):
    """``(pairs, nfrag, barcodes, error_line)`` of a whole text: ``pairs`` a Counter of
    ``(cell, column)`` weights, ``nfrag`` a dict cell -> lines, ``barcodes`` the barcode
    table in order (the allow-list first), ``error_line`` the 1-based line of the first bad
    line (``None``: none); the pairs are those of the lines before it."""
    names = [] if allow is None else [b.encode() for b in allow]
    index = {b: i for i, b in enumerate(names)}
    pairs: Counter = Counter()
    nfrag: Counter = Counter()
    n_cols = len(regions) + 1
    first = True
    for ln, raw in enumerate(text.split(b"\n"), start=1):
        got = parse_line(raw)
        if got is None:
            continue
        if first and _peak_line(raw):  # a peak file given for fragments: refused at once
            return pairs, nfrag, names, ln
        first = False
        if isinstance(got, str):
            return pairs, nfrag, names, ln
        chrom, a, b, bc, c = got
        if bc not in index:
            index[bc] = len(names)
            names.append(bc)
        cell = index[bc]
        if allow is not None and cell >= len(allow):
            continue
        nfrag[cell] += 1
        w = c if use_count else 1
        if mode == "fragment":
            cols = hits(regions, chrom, a, b, repeats)
        else:
            sites = [p for p in (a + left, b - 1 + right) if p >= 0]
            per_site = [hits(regions, chrom, p, p + 1, repeats) for p in sites]
            cols = [i for h in per_site for i in h]
            if mode == "paired-insertion":
                cols = list(dict.fromkeys(cols))
        if not cols and miss:
            pairs[(cell, n_cols - 1)] += w
        for i in cols:
            pairs[(cell, i)] += w
    return pairs, nfrag, names, None


def index_bins(raw, pos: int, n_ref: int, csi: bool, pseudo: int):
    """The tabix/CSI bin walk (``genotok.kernels.tabix.index_bins``) with ``struct``, one
    record at a time: the same tuple, or the same status and stop byte with empty arrays."""
    import struct

    import numpy as np

    from genotok.kernels import tabix as TX

    raw = bytes(np.asarray(raw, np.uint8))
    head = 16 if csi else 8
    ref_ptr, ids, where, counts, lin_at, lin_n = [0], [], [], [], [], []

    def fail(status):
        e = np.zeros(0, np.int64)
        return np.zeros(1, np.int64), e, e, e, e, e, pos, status

    for _ in range(n_ref):
        if pos + 4 > len(raw):
            return fail(TX.TBI_ENDS_EARLY)
        (n_bin,) = struct.unpack_from("<i", raw, pos)
        pos += 4
        if n_bin < 0 or n_bin * head > len(raw) - pos:
            return fail(TX.TBI_BIN_COUNT)
        for _ in range(n_bin):
            if pos + head > len(raw):
                return fail(TX.TBI_ENDS_EARLY)
            (b,), (n_chunk,) = struct.unpack_from("<I", raw, pos), \
                struct.unpack_from("<i", raw, pos + head - 4)
            pos += head
            if n_chunk < 0 or pos + 16 * n_chunk > len(raw):
                return fail(TX.TBI_CHUNK_COUNT)
            if b != pseudo:
                ids.append(b)
                where.append(pos)
                counts.append(n_chunk)
            pos += 16 * n_chunk
        ref_ptr.append(len(ids))
        if csi:
            lin_at.append(0)
            lin_n.append(0)
            continue
        if pos + 4 > len(raw):
            return fail(TX.TBI_ENDS_EARLY)
        (n_intv,) = struct.unpack_from("<i", raw, pos)
        pos += 4
        if n_intv < 0 or n_intv * 8 > len(raw) - pos:
            return fail(TX.TBI_LINEAR_COUNT)
        lin_at.append(pos)
        lin_n.append(n_intv)
        pos += 8 * n_intv
    a = [np.array(x, np.int64) for x in (ref_ptr, ids, where, counts, lin_at, lin_n)]
    return (*a, pos, TX.TBI_OK)
