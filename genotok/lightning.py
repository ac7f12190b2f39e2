"""A Lightning ``LightningDataModule`` over a corpus (``pip install 'genotok[lightning]'``).

The loader's position (epoch, records consumed globally) is saved in every Lightning checkpoint
and restored from it, so ``trainer.fit(model, dm, ckpt_path=...)`` continues with the next
record of the epoch, on any number of devices and workers (:mod:`genotok.sampling`).
"""

from __future__ import annotations

from ._optional import require

L = require("lightning.pytorch", "genotok.lightning")

from .sampling import BatchPlan  # noqa: E402
from .params import Flag, InstanceOf, Integral, Interval, Unchecked, validated  # noqa: E402
from .torch_data import CORPUS, CorpusIterableDataset, ResumableLoader  # noqa: E402
from .torch_data import _open  # noqa: E402


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


def _rewind_epoch(progress: dict, epoch: int) -> None:
    """Lightning's epoch counters (a checkpoint's ``epoch_progress``) back to ``epoch`` begun
    and not finished: what a checkpoint taken within that epoch says."""
    for part in ("total", "current"):
        counts = progress.get(part)
        if isinstance(counts, dict):
            over = max(0, int(counts.get("completed", 0)) - epoch)
            for key in ("processed", "completed"):
                counts[key] = max(0, int(counts.get(key, 0)) - over)


class _LoopAgreement(L.Callback):
    """Makes a checkpoint's loop state agree with the data module's position.

    A fit stopped by ``max_steps`` within an epoch ends that epoch as Lightning counts
    (``trainer.save_checkpoint`` afterwards says the next epoch) while the data still has the
    epoch's other batches to give: resumed, they were counted as the next epoch, so every later
    epoch started one short and ``max_epochs`` stopped training early. The checkpoint then
    says what one taken at that step within the epoch says (the epoch begun, not finished).
    """

    def __init__(self, module: CorpusDataModule):
        self.module = module

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        state = checkpoint.get(type(self.module).__qualname__)
        loop = checkpoint.get("loops", {}).get("fit_loop", {})
        progress = loop.get("epoch_progress")
        if not state or not isinstance(progress, dict) or not state.get("records_seen"):
            return  # at an epoch's start both say the same
        epoch = int(state["epoch"])
        done = int(progress.get("current", {}).get("completed", epoch))
        if done > epoch:  # Lightning finished an epoch the data is still in
            _rewind_epoch(progress, epoch)
            checkpoint["epoch"] = epoch


class CorpusDataModule(L.LightningDataModule):
    """Training batches of a corpus, resumable from Lightning checkpoints.

    Parameters
    ----------
    corpus
        A :class:`~genotok.Corpus` (any store), a path or a URL (``s3://…``), a mixture
        (:func:`genotok.mix`) or a run folder holding ``mixture.json``.
    plan
        A :class:`~genotok.sampling.BatchPlan` (``batch_size`` or ``max_tokens``, shuffle,
        seed, split…); rank and world size come from the trainer.
    collate
        A collator (:class:`~genotok.torch_data.MLMCollator`,
        :class:`~genotok.torch_data.PackingCollator`, ...).
    values
        Read the value channel (as :class:`~genotok.torch_data.CorpusIterableDataset`).
    num_workers, loader_kwargs
        DataLoader workers and other options of :class:`~genotok.torch_data.ResumableLoader`.
    open_kwargs
        Passed to :meth:`Corpus.open <genotok.Corpus.open>` (``expect``, ``cache_dir``,
        ``cache_limit``, ``storage_options``…).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> from genotok.sampling import BatchPlan
    >>> from genotok.torch_data import Collator
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3], [4], [5]])
    >>> dm = CorpusDataModule(p, BatchPlan(batch_size=2), Collator(pad_token_id=8))
    >>> sorted(i for b in dm.train_dataloader() for i in b["index"].tolist())
    [0, 1, 2, 3]
    >>> sorted(dm.state_dict())  # what a checkpoint holds (counted as the trainer uses batches)
    ['batches_seen', 'epoch', 'max_tokens', 'records_seen', 'seed', 'world_size']
    """

    @validated({"corpus": CORPUS, "plan": [InstanceOf(BatchPlan, hint="e.g. BatchPlan("
                                                        "batch_size=64, seed=0)")],
                "collate": [Unchecked("a callable on a list of records (a collator)")],
                "values": [Flag()], "num_workers": [Interval(Integral, 0, None)],
                "loader_kwargs": [InstanceOf(dict), None], "open_kwargs": [InstanceOf(dict), None]},
               "CorpusDataModule")  # at once, not at fit()
    def __init__(self, corpus, plan: BatchPlan, collate, *, values: bool = False,
                 num_workers: int = 0, loader_kwargs: dict | None = None,
                 open_kwargs: dict | None = None):
        super().__init__()
        self.corpus, self.plan, self.collate, self.values = corpus, plan, collate, values
        self.loader_kwargs = dict(loader_kwargs or {}, num_workers=num_workers)
        self.open_kwargs = dict(open_kwargs or {})
        self._loader: ResumableLoader | None = None
        self._pending: dict | None = None
        self._pass_epoch = self._pass_first = self._used = 0

    CONSTRAINTS = __init__.CONSTRAINTS

    def _rank(self) -> tuple[int, int]:
        t = getattr(self, "trainer", None)
        return (t.global_rank, t.world_size) if t is not None else (0, 1)

    def train_dataloader(self):
        rank, world = self._rank()
        ds = CorpusIterableDataset(_open(self.corpus, **self.open_kwargs), self.plan,
                                   self.collate, values=self.values, rank=rank, world_size=world)
        self._loader = ResumableLoader(ds, **self.loader_kwargs)
        t = getattr(self, "trainer", None)
        if t is not None and not any(isinstance(c, _LoopAgreement) and c.module is self
                                     for c in t.callbacks):
            t.callbacks.append(_LoopAgreement(self))
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
