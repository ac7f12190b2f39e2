"""The held-out split of a :func:`~genotok.pipeline.pretokenize` run
(``RunOptions(validation=0.05)``).

A record is held out when a hash of its key falls below the fraction: the key is the record's
name (a BED input's file name without its suffixes; a cell's ``INPUT/BARCODE``, so one barcode
in two samples is two draws). The choice depends on the key alone, so a record stays on its
side when inputs are added or removed, in any order and on any machine. The held-out records
are written as a second output in ``out/validation/`` (the same store, its own manifest);
both manifests record the fraction (under ``split``). With a split, a single-cell input's
cells are held in memory and then written to both sides (without one, the corpus streams
them).

Examples
--------
>>> held_out(["GSM1", "GSM4", "GSM5"], 0.5).tolist()
[False, True, False]
>>> held_out(["GSM1"], 0.0).tolist(), held_out(["GSM1"], 1.0).tolist()
([False], [True])
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..formats.stores import Store
from ..params import InstanceOf, Interval, Real
from ..ragged import Ragged

#: the folder (and split name) of the held-out records
VALIDATION = "validation"
#: how a key becomes a draw in [0, 1), as the manifest says it
HASH = "blake2b-64(key utf-8) / 2**64 < fraction"


def draw(key: str) -> int:
    """A record key's 64-bit draw.

    Examples
    --------
    >>> draw("GSM1") == draw("GSM1") != draw("GSM2")
    True
    """
    raw = key.encode("utf-8", "surrogateescape")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")


def held_out(keys, fraction: float) -> np.ndarray:
    """Which records of ``keys`` are held out for a ``fraction`` (bool array).

    Examples
    --------
    >>> held_out(["GSM1", "GSM4"], 0.5).tolist()
    [False, True]
    """
    cut = min(int(float(fraction) * 2.0**64), 2**64)
    return np.array([draw(str(k)) < cut for k in keys], dtype=bool)


@dataclass
class SplitStore(Store):
    """A store whose records are split: the held-out ones (:func:`held_out` of
    ``meta["keys"]``, else of the names) go to the same store in ``directory/validation``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from genotok import Tokenizer, Corpus
    >>> from genotok.formats.stores import get_store
    >>> d, tok = Path(tempfile.mkdtemp()), Tokenizer(["chr1:0-10"])
    >>> s = SplitStore(get_store("corpus"), 0.5).open(d, "part.gtokc", tok)
    >>> s.write(Ragged.from_list([[0], [0, 0], [1]]), {"names": ["GSM1", "GSM4", "GSM5"]})
    >>> s.commit()
    ['part.gtokc', 'validation/part.gtokc']
    >>> Corpus.open(d / "validation/part.gtokc").names
    ['GSM4']
    """

    inner: Store | None = None
    fraction: float = 0.0

    name: ClassVar[str] = "split"
    CONSTRAINTS: ClassVar[dict] = {"inner": [InstanceOf(Store)],
                                   "fraction": [Interval(Real, 0, 1, closed="neither")]}

    def __post_init__(self):
        super().__post_init__()
        self.supports, self.suffix = self.inner.supports, self.inner.suffix
        self.per_record_files = self.inner.per_record_files

    def config(self) -> dict:
        return {**self.inner.config(), VALIDATION: self.fraction}

    def open(self, directory, part: str, tokenizer, **kw) -> SplitStore:
        s = copy.copy(self)
        s._kept = self.inner.open(directory, part, tokenizer, **kw)
        held = Path(directory) / VALIDATION
        held.mkdir(exist_ok=True)
        s._held = self.inner.open(held, part, tokenizer, **kw)
        return s

    def write(self, batch: Ragged, meta: dict) -> None:
        mask = held_out(meta.get("keys") or meta["names"], self.fraction)
        for w, sel in ((self._kept, np.flatnonzero(~mask)), (self._held, np.flatnonzero(mask))):
            if sel.size:
                w.write(batch.take(sel), {k: None if v is None else [v[i] for i in sel]
                                           for k, v in meta.items()})

    def commit(self) -> list[str]:
        return self._kept.commit() + [f"{VALIDATION}/{f}" for f in self._held.commit()]

    def abort(self) -> None:
        self._kept.abort()
        self._held.abort()

    def read_file(self, path: Path, header: dict):
        """A file of either half, read by the inner store's reader (each half's manifest names
        the inner store: ``Corpus.open`` never asks this class)."""
        return self.inner.read_file(path, header)

    def finish(self, directory: Path, files: list[str], tokenizer, extra: dict) -> None:
        """The held-out output's manifest, then the kept one's (last: the run is done)."""
        prefix = f"{VALIDATION}/"
        held = [f[len(prefix):] for f in files if f.startswith(prefix)]
        kept = [f for f in files if not f.startswith(prefix)]
        info = {"fraction": self.fraction, "hash": HASH, "validation": VALIDATION}
        self.inner.finish(Path(directory) / VALIDATION, held, tokenizer,
                          {**extra, "split": {"name": VALIDATION, **info}})
        self.inner.finish(directory, kept, tokenizer, {**extra, "split": {"name": "train", **info}})
