"""Checking a corpus file: the header's fields, the records section, and the full
:meth:`Corpus.verify <genotok.formats.corpus.Corpus.verify>` pass over one shard (every
checksum, every id below the vocabulary, the layout's padding and reserved bytes)."""

from __future__ import annotations

import numpy as np

from ...errors import GtokFormatError
from .layout import (
    ALIGN,
    CHECKSUMS,
    PREAMBLE,
    _digest,
    _is_hex_digest,
    _is_int,
    _token_dtype,
)


def _header_problems(h: dict, n: int, t: int, version: tuple[int, int], values: bool,
                     records: bool) -> list[str]:
    """Every header field type-checked against the preamble; a list of problems (empty: fine)."""
    out = []
    if "format" in h and h["format"] != "genotok-corpus":
        out.append(f"format is {str(h['format'])[:40]!r}, expected 'genotok-corpus'")
    if "version" in h and (not isinstance(h["version"], list) or len(h["version"]) != 2
                           or tuple(h["version"]) != version):
        out.append(f"version {str(h['version'])[:40]} disagrees with the preamble's {list(version)}")
    if not isinstance(h.get("fingerprint"), str):
        out.append("fingerprint is missing or not a string")
    vs = h.get("vocab_size")
    if not _is_int(vs) or not 1 <= vs <= 2**32:
        out.append(f"vocab_size {str(vs)[:40]} is not a whole number within 1..2**32")
    if h.get("n_records") != n or h.get("n_tokens") != t or not _is_int(h.get("n_records")) \
            or not _is_int(h.get("n_tokens")):
        out.append(f"the header counts ({str(h.get('n_records'))[:20]} records, "
                   f"{str(h.get('n_tokens'))[:20]} tokens) disagree with the preamble ({n}, {t})")
    if h.get("checksum") not in CHECKSUMS:
        out.append(f"checksum algorithm {str(h.get('checksum'))[:40]!r} is missing or unknown "
                   f"(expected one of {', '.join(CHECKSUMS)})")
    sums = h.get("checksums")
    if not isinstance(sums, dict):
        out.append("the integrity section (checksums) is missing or not an object")
    else:
        need = ["tokens", "offsets"] + (["values"] if values else []) + (["records"] if records else [])
        for k in need:
            if not _is_hex_digest(sums.get(k)):
                out.append(f"checksums.{k} is missing or not a 16-digit hex digest")
    for key, kind in (("special_tokens", dict), ("settings", dict), ("meta_columns", list),
                      ("sources", list), ("extra", dict)):
        if key in h and not isinstance(h[key], kind):
            out.append(f"{key} is not a JSON {'object' if kind is dict else 'list'}")
    if isinstance(h.get("special_tokens"), dict) and _is_int(vs) and \
            not all(_is_int(v) and 0 <= v < vs for v in h["special_tokens"].values()):
        out.append("special_tokens holds an id that is not a whole number below vocab_size")
    for key in ("created", "genotok_version"):
        if key in h and not isinstance(h[key], str):
            out.append(f"{key} is not a string")
    if isinstance(h.get("sources"), list) and not all(isinstance(x, dict) for x in h["sources"]):
        out.append("sources holds an entry that is not a JSON object")
    if isinstance(h.get("meta_columns"), list) and not all(isinstance(k, str) for k in h["meta_columns"]):
        out.append("meta_columns holds a name that is not a string")
    return out


#: the JSON types of a record name and of a metadata value (``json.loads`` makes no subclass)
_NAME_TYPES = {str, type(None)}
_SCALAR_TYPES = {str, int, float, bool, type(None)}


def _records_problem(rec, n: int) -> str | None:
    """What is wrong with a parsed records section (names, metadata), or None."""
    if not isinstance(rec, dict) or set(rec) - {"names", "meta"}:
        return "not a JSON object with names and meta"
    names, meta = rec.get("names"), rec.get("meta")
    if names is not None:
        if not isinstance(names, list) or len(names) != n:
            return f"names is not a list of {n} entries"
        if not set(map(type, names)) <= _NAME_TYPES:  # (parsed JSON: exact types; one C
            # pass, where a generator took 10 ms over 20,000 names)
            return "a record name is neither a string nor null"
    if meta is not None and not isinstance(meta, dict):
        return "meta is not a JSON object"
    for k, col in (meta or {}).items():
        if not isinstance(col, list) or len(col) != n:
            return f"metadata column {k[:40]!r} is not a list of {n} entries"
        if not set(map(type, col)) <= _SCALAR_TYPES:
            return f"metadata column {k[:40]!r} holds a value that is not a JSON scalar"
    return None


def _shard_problems(s) -> list[str]:
    """What :meth:`Corpus.verify` reports for one opened shard ``s`` (empty: fine)."""
    problems = []
    h, p, offs = s.header, s.path, s.offsets
    if s.head_sum == bytes(8):
        problems.append(f"{p}: the metadata header has no digest (erased, or written by an "
                        "early development version): its integrity cannot be checked; "
                        "re-create the corpus")
    if offs[0] != 0 or offs[-1] != s.t or np.any(offs[1:] < offs[:-1]):
        steps = np.flatnonzero(offs[1:] < offs[:-1])
        where = f" at record {int(steps[0])}" if steps.size else ""
        problems.append(f"{p}: record offsets decrease{where} or leave [0, {s.t}]")
    vs = h["vocab_size"]
    top = int(s.tokens.max()) if s.t else -1
    if top >= vs:
        problems.append(f"{p}: token id {top} >= vocab_size {vs}")
    if s.dtype.itemsize != _token_dtype(vs).itemsize:
        problems.append(f"{p}: token width {s.dtype.itemsize} does not match vocab_size {vs}")
    sums = h["checksums"]
    sections = [("tokens", s.tokens), ("offsets", offs), ("values", s.values)]
    if s._rec[0]:
        sections.append(("records", s._section(*s._rec)))
    for what, arr in sections:
        if arr is None:
            continue
        got = _digest(np.ascontiguousarray(arr), s.algo).hex()
        if got != sums[what]:
            problems.append(f"{p}: {what} checksum mismatch (stored {sums[what]}, computed "
                            f"{got}): the file is corrupt")
    problems += _layout_problems(s)
    if not any("records checksum" in x for x in problems):
        try:
            s.records  # noqa: B018 - parsed and type-checked on first use
        except GtokFormatError as exc:
            problems.append(str(exc))
    return problems


def _layout_problems(s) -> list[str]:
    """Sections do not overlap; padding and reserved bytes are zero; nothing trails."""
    raw = s._raw
    pre = bytes(raw[:PREAMBLE.size])
    if pre[14:16] != bytes(2) or pre[96:128] != bytes(32):
        return [f"{s.path}: reserved preamble bytes are not zero: the file is corrupt"]
    end = PREAMBLE.size
    for off, length in s._layout:
        if off < end:
            return [f"{s.path}: sections overlap at byte {off}: the file is corrupt"]
        if off - end >= ALIGN or raw[end:off].any():
            return [f"{s.path}: bytes {end}..{off} between sections are not zero padding: "
                    "the file is corrupt"]
        end = off + length
    if end != s.size:
        return [f"{s.path}: {s.size - end} unexpected bytes after the last section"]
    return []
