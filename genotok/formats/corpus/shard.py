"""One corpus file opened for reading: :class:`_Shard` maps it once and checks it on open
(the preamble, every section inside the file, the header against its digest and, unless
trusted, every record offset), so that no read leaves the file or returns another record's data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..._validate import offsets as _valid_offsets
from ...errors import GtokFormatError, UniverseMismatchError
from ...universe import RECORD_FINGERPRINTS
from ..gtok import open_regular
from .layout import (
    CHECKSUMS,
    MAGIC,
    MAJOR,
    MANIFEST,
    MINOR,
    PREAMBLE,
    VALUE_DTYPES,
    _digest,
    _json_load,
    _width_dtype,
)
from .verify import _header_problems, _records_problem, _shard_problems


class _Shard:
    """One corpus file, memory-mapped once; checked on open (see :meth:`Corpus.open`)."""

    def __init__(self, path: Path, *, trusted: bool = False, nofollow: bool = False):
        self.path = path
        p = str(path)
        if os.path.isdir(p) and not nofollow:
            raise GtokFormatError(f"{p}: is a directory without {MANIFEST}")
        fd, st = open_regular(p, "corpus file", nofollow=nofollow)
        with os.fdopen(fd, "rb") as fh:  # every byte is read through this checked descriptor
            self._open(fh, p, st, trusted)

    def _open(self, fh, p: str, st: os.stat_result, trusted: bool) -> None:
        size = st.st_size
        self.ident = (st.st_dev, st.st_ino)
        pre = os.pread(fh.fileno(), PREAMBLE.size, 0)
        if len(pre) < PREAMBLE.size or pre[:8] != MAGIC:  # never quote the bytes of the file
            raise GtokFormatError(f"{p}: not a genotok corpus (bad magic: it does not start "
                                  f"with {MAGIC!r}; an interrupted write or another file type)")
        (_, major, minor, width, vcode, _, n, t, tok_off, val_off, off_off, json_off,
         json_len, rec_off, rec_len, head_sum) = PREAMBLE.unpack(pre)
        if major > MAJOR:
            raise GtokFormatError(f"{p}: corpus format {major}.{minor} is newer than this genotok "
                                  f"reads ({MAJOR}.{MINOR}); upgrade genotok")
        if width not in (2, 4) or vcode not in VALUE_DTYPES:
            raise GtokFormatError(f"{p}: corrupt preamble (token width {width}, value code {vcode})")
        if major < 1:
            raise GtokFormatError(f"{p}: corrupt preamble (format version {major}.{minor})")
        self.version = (major, minor)
        self.dtype = _width_dtype(width)
        self.values_dtype = VALUE_DTYPES[vcode]
        sections = [(tok_off, t * width, "tokens"), (off_off, (n + 1) * 8, "offsets"),
                    (json_off, json_len, "header")]
        if self.values_dtype is not None:
            sections.append((val_off, t * self.values_dtype.itemsize, "values"))
        if rec_off:
            sections.append((rec_off, rec_len, "records"))
        for off, length, what in sections:  # the size check: a truncated file fails here
            if off < PREAMBLE.size or off + length > size:
                raise GtokFormatError(f"{p}: truncated or corrupt: the {what} section "
                                      f"[{off}, {off + length}) lies outside the file ({size} bytes)")
        self.head_sum = head_sum
        raw_header = os.pread(fh.fileno(), json_len, json_off)
        self.header = _json_load(raw_header, "metadata header", p)
        if not isinstance(self.header, dict):
            raise GtokFormatError(f"{p}: corrupt metadata header (not a JSON object)")
        algo = self.header.get("checksum")
        self.algo = algo
        if head_sum != bytes(8):
            if algo not in CHECKSUMS:
                raise GtokFormatError(f"{p}: corrupt metadata header (checksum algorithm "
                                      f"{str(algo)[:40]!r} is missing or unknown)")
            if head_sum != _digest(raw_header, algo):
                raise GtokFormatError(f"{p}: metadata header checksum mismatch: the file is corrupt")
        if not rec_off:  # every writer writes one (only development files kept them in the header)
            raise GtokFormatError(f"{p}: corrupt preamble: the records section (names, metadata) "
                                  "is missing")
        problems = _header_problems(self.header, n, t, self.version, self.values_dtype is not None,
                                    bool(rec_off))
        if problems:
            raise GtokFormatError(f"{p}: corrupt metadata header: " + "; ".join(problems))
        self.n, self.t = n, t
        self.size = size
        self.trusted = trusted
        self._layout = sorted((off, length) for off, length, _ in sections)
        self._rec = (rec_off, rec_len)
        self._records: dict | None = None
        # one read-only mapping of the whole file; every section is a view into it
        self._raw = np.memmap(fh, dtype=np.uint8, mode="r", shape=(size,))
        # a record (a view of the mapping) knows its universe: decoding it with another
        # tokenizer is refused (Tokenizer.decode), also for a corpus opened without expect=
        if isinstance(self.header.get("fingerprint"), str):
            RECORD_FINGERPRINTS[self._raw._mmap] = self.header["fingerprint"]
        self.tokens = self._raw[tok_off:tok_off + t * width].view(self.dtype)
        self.offsets = np.asarray(self._raw[off_off:off_off + (n + 1) * 8].view("<i8"))
        self.values = None
        if self.values_dtype is not None:
            self.values = self._raw[val_off:val_off + t * self.values_dtype.itemsize].view(
                self.values_dtype)
        if trusted:  # the cheap open: the index agrees with the payload size
            if self.offsets[0] != 0 or self.offsets[-1] != t:
                raise GtokFormatError(f"{p}: corrupt record offsets (first {int(self.offsets[0])}, "
                                      f"last {int(self.offsets[-1])}, expected 0 and {t}); run verify()")
            return
        # the safe open: every offset in bounds and non-decreasing, and the section's checksum
        try:
            _valid_offsets(self.offsets, t, f"{p}: corrupt record offsets", n_rows=n,
                           what="the offsets section", error=GtokFormatError)
        except GtokFormatError as exc:
            raise GtokFormatError(f"{exc}; the file is corrupt: re-create it (verify() lists every "
                                  "problem of a file opened with trusted=True)") from None
        want = self.header["checksums"]["offsets"]
        if _digest(self.offsets, algo).hex() != want:
            raise GtokFormatError(f"{p}: offsets checksum mismatch (stored {want}): record "
                                  "boundaries are corrupt; re-create the file")

    def bounds(self, j: int) -> tuple[int, int]:
        """Token range of local record ``j``, checked (cheap) even for a trusted open."""
        a, b = int(self.offsets[j]), int(self.offsets[j + 1])
        if not 0 <= a <= b <= self.t:
            raise GtokFormatError(f"{self.path}: corrupt record offsets at record {j} ([{a}, {b}) "
                                  f"for {self.t} tokens): the file is corrupt; run verify()")
        return a, b

    def check_offsets(self, ja: int, jb: int) -> None:
        """For a trusted open: offsets ``ja..jb`` non-decreasing within ``[0, t]`` (one pass)."""
        if not self.trusted or jb <= ja:
            return
        o = self.offsets[ja:jb + 1]
        if o[0] < 0 or o[-1] > self.t or np.any(o[1:] < o[:-1]):
            raise GtokFormatError(f"{self.path}: corrupt record offsets in records {ja}..{jb}: the "
                                  "file is corrupt; run verify()")

    @property
    def meta_columns(self) -> list[str]:
        return list(self.header.get("meta_columns") or [])

    def _section(self, off: int, length: int) -> np.ndarray:
        return self._raw[off:off + length]

    @property
    def records(self) -> dict:
        """Names and metadata columns (read on first use), type-checked."""
        if self._records is None:
            rec_off, rec_len = self._rec
            rec = _json_load(self._section(rec_off, rec_len), "records section (names, "
                             "metadata)", self.path)
            problem = _records_problem(rec, self.n)
            if problem:
                raise GtokFormatError(f"{self.path}: corrupt records section: {problem}; run verify()")
            self._records = {"names": rec.get("names"), "meta": rec.get("meta") or {}}
        return self._records

    def verify(self) -> list[str]:
        """Every problem of this file (checksums, ids, layout, records); empty: fine."""
        return _shard_problems(self)


def _check_shards(shards: list[_Shard], path) -> None:
    """Shards of one corpus share its universe and layout (else a clear error naming both)."""
    if not shards:
        raise GtokFormatError(f"{path}: a corpus needs at least one shard")
    first = shards[0]
    for s in shards[1:]:
        if s.header.get("fingerprint") != first.header.get("fingerprint"):
            raise UniverseMismatchError(f"{s.path}: shard was tokenized with another universe "
                                        f"than {first.path}; shards of one corpus must share it")
        if s.dtype != first.dtype or s.values_dtype != first.values_dtype:
            raise GtokFormatError(f"{s.path}: shard layout (tokens {s.dtype}, values "
                                  f"{s.values_dtype}) differs from {first.path} (tokens "
                                  f"{first.dtype}, values {first.values_dtype})")
        if s.header["vocab_size"] != first.header["vocab_size"]:
            raise GtokFormatError(f"{s.path}: vocab_size {s.header['vocab_size']} differs from "
                                  f"{first.path}'s {first.header['vocab_size']}")
