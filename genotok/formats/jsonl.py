"""JSON Lines: one JSON object per record, ``{"name": …, "input_ids": […]}`` (EasyDeL's format,
for inspection and debugging), gzip-compressed on request; the value channel (``values``) and
metadata columns ride along as more keys. The tokenizer's identity is in the run's manifest.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from genotok import Tokenizer
>>> d = tempfile.mkdtemp()
>>> s = JsonlStore().open(d, "part", Tokenizer(["chr1:0-10"]))
>>> s.write(Ragged.from_list([[0, 1], [1]]), {"names": ["a", "b"]})
>>> s.commit()
['part-000.jsonl']
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
from .store import ArrayShard, ShardedStore, ragged_of
from .tables import IDS, NAME, VALUES

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
    supports: ClassVar[frozenset] = frozenset({"values", "names", "metadata"})
    CONSTRAINTS: ClassVar[dict] = {"rows_per_shard": [Interval(Integral, 1, None)],
                                   "bytes_per_shard": [Interval(Integral, 1, None)],
                                   "gzip": [Flag()]}

    def __post_init__(self):
        super().__post_init__()
        self.suffix = ".jsonl.gz" if self.gzip else ".jsonl"

    def _open_writer(self, fh, meta: dict, first: bool):
        return (gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) if self.gzip else fh)

    def _write_rows(self, batch: Ragged, meta: dict, a: int, b: int) -> None:
        names = meta.get("names")
        lines = []
        for i in range(a, b):
            lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
            rec = {NAME: None if names is None else names[i],
                   IDS: np.asarray(batch.data[lo:hi]).tolist()}
            if self.values:
                rec[VALUES] = np.asarray(batch.values[lo:hi], np.float32).tolist()
            for c in self.columns:
                col = meta.get(c)
                rec[c] = None if col is None else col[i]
            lines.append(json.dumps(rec))
        self._writer.write(("\n".join(lines) + "\n").encode())

    def _close_writer(self) -> None:
        if self._writer is not self._fh:
            self._writer.close()

    @classmethod
    def read_file(cls, path: Path, header: dict) -> ArrayShard:
        """One JSON Lines file (gzip when its name ends in ``.gz``); a line that is not a
        record is a :class:`~genotok.GtokFormatError` naming the file and line."""
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
        col = meta.setdefault(c, [None] * row)
        col.append(v)
    for col in meta.values():
        if len(col) < row + 1:
            col.append(None)


__all__ = ["JsonlStore"]
