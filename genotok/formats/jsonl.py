"""JSON Lines: one JSON object per record, ``{"name": …, "input_ids": […]}`` (EasyDeL's format,
for inspection and debugging), gzip-compressed on request; the value channel (``values``) and
metadata columns ride along as more keys (one named like the record's own keys as
``meta.<name>``: :func:`~genotok.formats.tables._stored_key`). A line holds records only, so
each part's header (the tokenizer's identity, the run's extra: its cell spec and fitted
medians, the part's inputs) is a file of its own beside its shards, ``PART.header.json``,
committed with them and read back as a part of no records (:meth:`JsonlStore.read_file`).

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from genotok import Tokenizer
>>> d = tempfile.mkdtemp()
>>> s = JsonlStore().open(d, "part", Tokenizer(["chr1:0-10"]))
>>> s.write(Ragged.from_list([[0, 1], [1]]), {"names": ["a", "b"]})
>>> s.commit()
['part.header.json', 'part-000.jsonl']
>>> print(Path(d, "part-000.jsonl").read_text(), end="")
{"name": "a", "input_ids": [0, 1]}
{"name": "b", "input_ids": [1]}
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import GtokFormatError
from ..params import Flag, Integral, Interval
from ..ragged import Ragged
from .._io import atomic_write
from .store import ArrayShard, ShardedStore, _check_header, ragged_of
from .tables import IDS, NAME, VALUES, _column_of, _stored_key

#: the most bytes one line may hold (a record of ~10 M tokens)
MAX_LINE = 256 << 20


@dataclass
class JsonlStore(ShardedStore):
    """JSON Lines shards ``PART-000.jsonl`` (``.jsonl.gz`` with ``gzip=True``) of at most
    ``rows_per_shard`` records.

    Examples
    --------
    >>> JsonlStore(gzip=True).suffix
    '.jsonl.gz'
    """

    rows_per_shard: int = 100_000
    bytes_per_shard: int = 256 << 20
    gzip: bool = False

    name: ClassVar[str] = "jsonl"
    suffix: ClassVar[str] = ".jsonl"
    #: the part's header file (``PART.header.json``)
    HEADER: ClassVar[str] = ".header.json"
    supports: ClassVar[frozenset] = frozenset({"values", "names", "metadata", "sources", "extra"})
    CONSTRAINTS: ClassVar[dict] = {"rows_per_shard": [Interval(Integral, 1, None)],
                                   "bytes_per_shard": [Interval(Integral, 1, None)],
                                   "gzip": [Flag()]}

    def __post_init__(self):
        super().__post_init__()
        self.suffix = ".jsonl.gz" if self.gzip else ".jsonl"

    def _begin(self) -> None:
        super()._begin()
        old = self.directory / f"{self._stem}{self.HEADER}"
        if old.exists():  # (its shards were refused or removed by the base already)
            if not self.overwrite:
                raise FileExistsError(f"{old} exists; pass overwrite=True to replace it")
            old.unlink()

    def commit(self) -> list[str]:
        """The shards, then the part's header file (written last, listed first: a reader's
        first shard gives an output's header)."""
        files = super().commit()
        header = f"{self._stem}{self.HEADER}"
        with atomic_write(self.directory / header, "w") as fh:
            json.dump({**self._header(), "values": self.values}, fh)
        return [header, *files]

    def abort(self) -> None:
        super().abort()
        (self.directory / f"{self._stem}{self.HEADER}").unlink(missing_ok=True)

    def _open_writer(self, fh, meta: dict, first: bool):
        return (gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) if self.gzip else fh)

    def _write_rows(self, batch: Ragged, meta: dict, a: int, b: int) -> None:
        names = meta.get("names")
        keys = [(c, _stored_key(c)) for c in self.columns]
        lines = []
        for i in range(a, b):
            lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
            rec = {NAME: None if names is None else names[i],
                   IDS: np.asarray(batch.data[lo:hi]).tolist()}
            if self.values:
                rec[VALUES] = np.asarray(batch.values[lo:hi], np.float32).tolist()
            for c, key in keys:
                col = meta.get(c)
                rec[key] = None if col is None else col[i]
            lines.append(json.dumps(rec))
        self._writer.write(("\n".join(lines) + "\n").encode())

    def _close_writer(self) -> None:
        if self._writer is not self._fh:
            self._writer.close()

    @classmethod
    def read_file(cls, path: Path, header: dict) -> ArrayShard:
        """One JSON Lines file (gzip when its name ends in ``.gz``); a line that is not a
        record is a :class:`~genotok.GtokFormatError` naming the file and line. A part's
        header file is a shard of no records with that header."""
        if str(path).endswith(cls.HEADER):
            return _header_shard(path)
        names, ids, values, meta = [], [], [], {}
        try:
            with open(path, "rb") as raw:
                fh = gzip.GzipFile(fileobj=raw) if str(path).endswith(".gz") else raw
                for k, line in enumerate(fh, 1):
                    if len(line) > MAX_LINE:
                        raise GtokFormatError(f"{path}: line {k} is longer than {MAX_LINE:,} bytes")
                    _record(line, k, path, names, ids, values, meta)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise GtokFormatError(f"{path}: not a readable JSON Lines file (truncated or "
                                  f"damaged: {exc})") from None
        if values and len(values) != len(ids):
            raise GtokFormatError(f"{path}: some records have {VALUES!r} and others not")
        data, offsets = ragged_of(ids, path)
        vals = None
        if values:
            vals = np.asarray([v for x in values for v in x], np.float32)
            if [len(x) for x in values] != [len(x) for x in ids]:
                raise GtokFormatError(f"{path}: {VALUES!r} does not hold one value per token")
        return ArrayShard(path, data, offsets, vals, header, names, meta)


def _header_shard(path) -> ArrayShard:
    """A part's header file as a shard of no records (its value channel as the part's)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_LINE + 1)
        h = json.loads(raw)
    except OSError as exc:
        raise GtokFormatError(f"{path}: not a readable header file ({exc})") from None
    except (ValueError, RecursionError):
        raise GtokFormatError(f"{path}: not a JSON object (truncated or damaged)") from None
    kept = h.pop("values", None) if isinstance(h, dict) else None
    if not isinstance(kept, bool):
        raise GtokFormatError(f"{path}: not a part's header (an object with 'values': a bool)")
    values = np.zeros(0, np.float32) if kept else None
    return ArrayShard(path, np.zeros(0, np.int64), np.zeros(1, np.int64), values,
                      _check_header(h, path), [], {})


def _record(line: bytes, k: int, path, names, ids, values, meta) -> None:
    """Line ``k`` parsed into the columns being gathered."""
    where = f"{path}: line {k}"
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, too deep, a 5,000-digit int
        raise GtokFormatError(f"{where}: not a JSON object (truncated or damaged)") from None
    if not isinstance(rec, dict) or not isinstance(rec.get(IDS), list):
        raise GtokFormatError(f"{where}: not a record (an object with an {IDS!r} list)")
    name = rec.get(NAME)
    if name is not None and not isinstance(name, str):
        raise GtokFormatError(f"{where}: {NAME!r} is not text")
    row = len(names)
    names.append(name)
    ids.append(rec[IDS])
    if VALUES in rec:
        v = rec[VALUES]
        if not isinstance(v, list) or not all(isinstance(x, (int, float)) and
                                              not isinstance(x, bool) for x in v):
            raise GtokFormatError(f"{where}: {VALUES!r} is not a list of numbers")
        values.append(v)
    for c, v in rec.items():
        if c in (NAME, IDS, VALUES):
            continue
        col = meta.setdefault(_column_of(c), [None] * row)
        col.append(v)
    for col in meta.values():
        if len(col) < row + 1:
            col.append(None)


__all__ = ["JsonlStore"]
