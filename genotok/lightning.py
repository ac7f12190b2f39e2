"""A Lightning ``LightningDataModule`` over a corpus (``pip install 'genotok[lightning]'``).

The loader's position (epoch, records consumed globally) is saved in every Lightning checkpoint
and restored from it, so ``trainer.fit(model, dm, ckpt_path=...)`` continues with the next
record of the epoch, on any number of devices and workers (:mod:`genotok.sampling`).
"""

from __future__ import annotations

import os

from ._optional import require

L = require("lightning.pytorch", "genotok.lightning")

from .formats.corpus import Corpus  # noqa: E402
from .params import Flag, validate  # noqa: E402
from .sampling import PLAN_CONSTRAINTS  # noqa: E402
from .torch_data import CorpusIterableDataset, ResumableLoader  # noqa: E402


class _CountingLoader:
    """The train loader as Lightning sees it: a plain iterable (no ``state_dict``: Lightning would
    save a position that counts its prefetched batch). Each pass notes where it starts."""

    def __init__(self, loader: ResumableLoader, module: CorpusDataModule):
        self.loader, self.module = loader, module

    def __iter__(self):
        m = self.module
        m._pass_epoch, m._used = self.loader.dataset.epoch, 0
        m._pass_first = self.loader.dataset.state_dict(0)["records_seen"]
        yield from self.loader


class CorpusDataModule(L.LightningDataModule):
    """Training batches of a corpus, resumable from Lightning checkpoints.

    Parameters
    ----------
    corpus
        A :class:`~genotok.Corpus`, a path or a URL (``s3://…``).
    collate
        A collator (:class:`~genotok.torch_data.MLMCollator`, ...).
    batch_size, max_tokens, shuffle, seed, window, split, values
        As for :class:`~genotok.torch_data.CorpusIterableDataset`; rank and world size come from
        the trainer.
    num_workers, loader_kwargs
        DataLoader workers and other options of :class:`~genotok.torch_data.ResumableLoader`.
    open_kwargs
        Passed to :meth:`Corpus.open <genotok.Corpus.open>` (``expect``, ``cache_dir``,
        ``cache_limit``, ``storage_options``…).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> from genotok.torch_data import Collator
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3], [4], [5]])
    >>> dm = CorpusDataModule(p, Collator(pad_token_id=8), batch_size=2)
    >>> sorted(i for b in dm.train_dataloader() for i in b["index"].tolist())
    [0, 1, 2, 3]
    >>> sorted(dm.state_dict())  # what a checkpoint holds (counted as the trainer uses batches)
    ['batches_seen', 'epoch', 'max_tokens', 'records_seen', 'seed', 'world_size']
    """

    def __init__(self, corpus, collate, *, batch_size: int | None = None,
                 max_tokens: int | None = None, shuffle=True, seed: int = 0, window: int = 4,
                 split: str = "even", values: bool = False, num_workers: int = 0,
                 loader_kwargs: dict | None = None,
                 open_kwargs: dict | None = None):
        super().__init__()
        self.corpus, self.collate = corpus, collate
        self.dataset_kwargs = {"batch_size": batch_size, "max_tokens": max_tokens,
                               "shuffle": shuffle, "seed": seed, "window": window, "split": split,
                               "values": values}
        validate(self.dataset_kwargs, {**PLAN_CONSTRAINTS, "values": [Flag()]},
                 "CorpusDataModule")  # not at fit()
        self.loader_kwargs = dict(loader_kwargs or {}, num_workers=num_workers)
        self.open_kwargs = dict(open_kwargs or {})
        self._loader: ResumableLoader | None = None
        self._pending: dict | None = None
        self._pass_epoch = self._pass_first = self._used = 0

    def _open(self, c):
        # a path is opened; a corpus or a mixture (genotok.mix) is read as it is
        return Corpus.open(c, **self.open_kwargs) if isinstance(c, (str, os.PathLike)) else c

    def _rank(self) -> tuple[int, int]:
        t = getattr(self, "trainer", None)
        return (t.global_rank, t.world_size) if t is not None else (0, 1)

    def train_dataloader(self):
        rank, world = self._rank()
        ds = CorpusIterableDataset(self._open(self.corpus), self.collate, rank=rank,
                                   world_size=world, **self.dataset_kwargs)
        self._loader = ResumableLoader(ds, **self.loader_kwargs)
        if self._pending is not None:
            self._loader.load_state_dict(self._pending)
            self._pending = None
        return _CountingLoader(self._loader, self)

    def on_before_batch_transfer(self, batch, dataloader_idx: int):
        # called when the batch is used, not when Lightning prefetches it: the count is exact
        t = getattr(self, "trainer", None)
        if t is not None and t.training:
            self._used += 1
        return batch

    def state_dict(self) -> dict:
        """The position of training: epoch, seed, records consumed globally (JSON-ready)."""
        if self._loader is None:
            return dict(self._pending or {})
        ds = self._loader.dataset
        return ds.plan.state(epoch=self._pass_epoch, first=self._pass_first, steps=self._used,
                             world_size=ds.world_size, roll=True) | {"world_size": ds.world_size}

    def load_state_dict(self, state: dict) -> None:
        self._pending = dict(state) if state else None
