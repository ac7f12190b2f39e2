"""PyTorch datasets and collators over a corpus (``pip install 'genotok[torch]'``).

torch is imported when this module is; ``import genotok`` never imports it.

- :class:`CorpusDataset`: map-style, one record per index (use with any sampler).
- :class:`CorpusIterableDataset`: yields ready batches; splits every epoch's (seeded, shuffled)
  record order over distributed ranks and DataLoader workers so every record is seen exactly
  once per epoch; resumable mid-epoch through :class:`ResumableLoader`.
- :class:`Collator`, :class:`MLMCollator`, :class:`RTDCollator`: lists of records → tensors.
"""

from __future__ import annotations

import abc
import ast
import multiprocessing
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._optional import require

torch = require("torch", "genotok.torch_data")

from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info  # noqa: E402

from . import data as _data  # noqa: E402
from . import sampling as _sampling  # noqa: E402
from ._io import is_url  # noqa: E402
from .batching import MAX_LENGTH, MAX_SEQUENCE, TOKEN_ID, TRUNCATIONS, token_ids, token_values  # noqa: E402,E501
from .errors import GenotokError  # noqa: E402
from .formats.corpus import reader as _corpus  # noqa: E402
from .formats.corpus import Corpus  # noqa: E402
from .mixture import MIXTURE_FILE, mix  # noqa: E402
from .sampling import BatchPlan  # noqa: E402,F401 (what the datasets take)
from .packing import STRATEGIES  # noqa: E402
from .params import (EXPECT, Below, Flag, HasAttr, InstanceOf, Integral, Interval, Options,  # noqa: E402
                     ParameterError, Real, SumAtMost, Unchecked, check, validate_fields, validated)

#: a probability
PROB = [Interval(Real, 0, 1)]
#: a packed pad id: any 64-bit integer, as pack takes it (a negative one, e.g. -1, marks "no token")
PAD_ID = [Interval(Integral, None, None)]
#: a corpus: a path (any store's output, a run folder with ``mixture.json``), or a corpus
#: or a mixture object
CORPUS = [InstanceOf(str, os.PathLike), HasAttr("fingerprint")]


def _open(corpus, expect=None, **open_kwargs):
    """A path is opened as a corpus (any store), a run folder with ``mixture.json`` as its
    mixture (:func:`genotok.mix`); a corpus, or anything read like one (a mixture), is used as
    it is."""
    if isinstance(corpus, (str, os.PathLike)):
        if not is_url(str(corpus)) and (Path(corpus) / MIXTURE_FILE).is_file():
            corpus = mix(corpus)
        else:
            return Corpus.open(corpus, expect=expect, **open_kwargs)
    _corpus.check_expected(corpus.fingerprint, expect, getattr(corpus, "path", "corpus"))
    return corpus


def _tensors(batch: dict) -> dict:
    """NumPy arrays → tensors sharing their memory; anything else is left as it is."""
    return {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
            for k, v in batch.items()}


def _row_dicts(rows: Sequence[Mapping]) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Row dicts (a Hugging Face ``Trainer``'s features) → token arrays and value arrays."""
    missing = [k for k, r in enumerate(rows) if "input_ids" not in r]
    if missing:
        raise ParameterError(f"row {missing[0]} of the batch has no 'input_ids' (its keys: "
                         f"{sorted(rows[missing[0]])[:8]}): a collator takes rows with "
                         "'input_ids' and optional 'values'")
    ids = [token_ids(r["input_ids"], "collator: input_ids", k) for k, r in enumerate(rows)]
    with_values = ["values" in r for r in rows]
    if any(with_values) and not all(with_values):
        raise ParameterError("some rows of the batch have 'values' and others not: give every row "
                         "its values, or none")
    if not all(with_values):
        return ids, None
    return ids, [token_values(r["values"], i.size, "collator: values", k)
                 for k, (r, i) in enumerate(zip(rows, ids))]


@dataclass
class Collator:
    """Records (arrays, or ``(ids, values)`` pairs) → ``input_ids``, ``attention_mask`` tensors.

    Parameters mirror :func:`genotok.data.make_batch`; ``seed`` makes shuffles and random
    truncation reproducible (each call draws from a generator advanced per call).

    Examples
    --------
    >>> import numpy as np
    >>> c = Collator(pad_token_id=9, max_length=3, truncation="head")
    >>> c([np.array([1, 2, 3, 4]), np.array([5])])["input_ids"].tolist()
    [[1, 2, 3], [5, 9, 9]]
    >>> c([{"input_ids": [1, 2]}, {"input_ids": [5]}])["input_ids"].tolist()  # HF Trainer rows
    [[1, 2], [5, 9]]
    """

    pad_token_id: int
    max_length: int | None = None
    truncation: str | None = None
    padding: str = "longest"
    shuffle_tokens: bool = False
    cls_token_id: int | None = None
    eos_token_id: int | None = None
    seed: int = 0

    CONSTRAINTS = {"pad_token_id": PAD_ID, "max_length": MAX_LENGTH,
                   "truncation": [Options(*TRUNCATIONS), None],
                   "padding": [Options("longest", "max_length")], "shuffle_tokens": [Flag()],
                   "cls_token_id": TOKEN_ID + [None], "eos_token_id": TOKEN_ID + [None],
                   "seed": [Interval(Integral, 0, None)]}

    def __post_init__(self):
        validate_fields(self)
        self._rng = np.random.default_rng(self.seed)

    def arrays(self, records: Sequence, rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
        """The batch as NumPy arrays: what calling the collator returns as tensors.

        ``records``: token arrays, ``(ids, values)`` pairs, or row dicts with ``input_ids``
        and optional ``values`` (lists, arrays or tensors: what a Hugging Face ``Trainer`` hands
        its ``data_collator``; other keys are ignored).
        """
        values = None
        if records and isinstance(records[0], Mapping):
            records, values = _row_dicts(records)
        elif records and isinstance(records[0], tuple):
            records, values = [r[0] for r in records], [r[1] for r in records]
        return _data.make_batch(records, pad_token_id=self.pad_token_id, max_length=self.max_length,
                                truncation=self.truncation, padding=self.padding,
                                shuffle_tokens=self.shuffle_tokens, cls_token_id=self.cls_token_id,
                                eos_token_id=self.eos_token_id, values=values,
                                rng=rng if rng is not None else self._rng)

    def __call__(self, records: Sequence,
                 rng: np.random.Generator | None = None) -> dict[str, torch.Tensor]:
        return _tensors(self.arrays(records, rng))

    @classmethod
    def for_tokenizer(cls, tokenizer, **kwargs):
        """A collator with the tokenizer's ``<pad>`` (and, when asked, ``<cls>``/``<eos>``) ids."""
        return cls(pad_token_id=tokenizer.pad_token_id, **kwargs)


@dataclass
class PackingCollator:
    """Records packed into sequences of ``seq_len`` tokens (:func:`genotok.packing.pack`),
    every record kept whole and once, and each token traceable to its record.

    A batch of ``B`` records becomes ``input_ids``, ``attention_mask``, ``segment_ids`` (1, 2, …
    within a sequence, 0 on padding: for block-diagonal attention), ``position_ids`` (from 0
    in each segment) and ``record_ids``, all ``(sequences, seq_len)``: ``record_ids`` is the row
    (0 … ``B - 1``) of the batch's record each token belongs to, -1 on padding (a record longer
    than the room left is split over sequences; its pieces share its row). With values, a
    ``values`` array of the same shape. The datasets add ``index`` and ``sample_weight`` per
    record (``B`` of each), as for padded batches: ``sample_weight[record_ids]`` weights each
    token by its record's weight, and a loss summed per record (``scatter_add`` over
    ``record_ids``) counts every record once. An empty record has no token (unless
    ``sep_token_id`` is given) but keeps its row in ``index`` and ``sample_weight``.

    Packing draws nothing; ``seed`` starts the random stream of an objective over it
    (:class:`MLMCollator`, :class:`RTDCollator`) when it is called outside a dataset.

    Examples
    --------
    >>> import numpy as np
    >>> c = PackingCollator(seq_len=4, pad_token_id=0, strategy="greedy")
    >>> b = c([np.array([5, 6]), np.array([7, 8, 9]), np.array([4])])
    >>> b["input_ids"].tolist(), b["record_ids"].tolist()
    ([[5, 6, 0, 0], [7, 8, 9, 4]], [[0, 0, -1, -1], [1, 1, 1, 2]])
    """

    seq_len: int
    pad_token_id: int
    sep_token_id: int | None = None
    strategy: str = "ffd"
    seed: int = 0

    CONSTRAINTS = {"seq_len": [Interval(Integral, 1, MAX_SEQUENCE)], "pad_token_id": PAD_ID,
                   "sep_token_id": TOKEN_ID + [None], "strategy": [Options(*STRATEGIES)],
                   "seed": [Interval(Integral, 0, None)]}

    def __post_init__(self):
        validate_fields(self)
        self._rng = np.random.default_rng(self.seed)

    #: packing keeps every token: nothing is truncated (a token budget counts whole records)
    max_length = None

    def arrays(self, records, rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
        """The packed batch as NumPy arrays (``rng`` is not used: packing draws nothing)."""
        from .packing import pack

        values = None
        if records and isinstance(records[0], Mapping):
            records, values = _row_dicts(records)
        elif records and isinstance(records[0], tuple):
            records, values = [r[0] for r in records], [r[1] for r in records]
        rows = [token_ids(r, "PackingCollator", k) for k, r in enumerate(records)]
        if values is not None:
            if len(values) != len(rows):
                raise ParameterError(f"PackingCollator: {len(rows)} records and {len(values)} "
                                     "value channels")
            values = [token_values(v, r.size, "PackingCollator", k)
                      for k, (r, v) in enumerate(zip(rows, values))]
        out = dict(pack(rows, self.seq_len, self.pad_token_id, self.sep_token_id,
                        strategy=self.strategy))
        out["input_ids"] = out["input_ids"].astype(np.int64, copy=False)
        # where every token came from: the same placement (it depends on the lengths alone)
        # of rows holding their own row number and each token's place in its row
        extra = int(self.sep_token_id is not None)
        sizes = [r.size + extra for r in rows]
        rec = pack([np.full(n, k, np.int64) for k, n in enumerate(sizes)], self.seq_len, -1,
                   strategy=self.strategy)["input_ids"]
        out["record_ids"] = rec
        if values is not None:
            at = pack([np.arange(n, dtype=np.int64) for n in sizes], self.seq_len, -1,
                      strategy=self.strategy)["input_ids"]
            padded = [np.append(np.asarray(v, np.float32).ravel(), np.float32(0))
                      for v in values]  # the separator's value: 0
            starts = np.concatenate([[0], np.cumsum([p.size for p in padded])])
            flat = np.concatenate(padded) if padded else np.zeros(0, np.float32)
            real = rec >= 0
            vals = np.zeros(rec.shape, np.float32)
            vals[real] = flat[starts[rec[real]] + at[real]]
            out["values"] = vals
        return out

    def __call__(self, records: Sequence,
                 rng: np.random.Generator | None = None) -> dict[str, torch.Tensor]:
        return _tensors(self.arrays(records, rng))


class ObjectiveCollator(abc.ABC):
    """A training objective over a :class:`Collator` or a :class:`PackingCollator`: the
    collator pads and truncates (or packs), the objective changes the batch (masks tokens,
    replaces them) and adds ``labels``. Over packed batches the objective sees the packed
    ``input_ids`` (padding and separators are special tokens: never chosen) and the batch keeps
    ``segment_ids``, ``position_ids`` and ``record_ids``, so a loss summed per record counts
    every record once.

    Subclasses implement :meth:`apply`; ``max_length``, ``pad_token_id`` and the random stream
    are the collator's.

    Examples
    --------
    >>> issubclass(MLMCollator, ObjectiveCollator), issubclass(RTDCollator, ObjectiveCollator)
    (True, True)
    """

    collator: Collator | PackingCollator

    def __new__(cls, *args, **kwargs):
        # A tokenizer where the collator goes: say which constructor takes one (the dataclass's
        # own __init__ would only say that two arguments are missing)
        first = args[0] if args else kwargs.get("collator")
        if not isinstance(first, (Collator, PackingCollator)) and hasattr(first, "universe"):
            raise ParameterError(f"{cls.__name__}: collator must be a Collator, got a tokenizer: "
                                 f"{cls.__name__}.for_tokenizer(tokenizer, ...) takes one (its "
                                 "pad, mask and region ids)")
        return super().__new__(cls)

    @property
    def max_length(self) -> int | None:
        return self.collator.max_length

    @property
    def pad_token_id(self) -> int:
        return self.collator.pad_token_id

    @abc.abstractmethod
    def apply(self, batch: dict, rng: np.random.Generator) -> dict:
        """The padded ``batch`` (NumPy arrays) changed by the objective, with ``labels``."""

    def arrays(self, records, rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
        """The batch as NumPy arrays (see :meth:`Collator.arrays`), the objective applied."""
        rng = rng if rng is not None else self.collator._rng
        return self.apply(self.collator.arrays(records, rng), rng)

    def __call__(self, records: Sequence,
                 rng: np.random.Generator | None = None) -> dict[str, torch.Tensor]:
        return _tensors(self.arrays(records, rng))

    @classmethod
    def for_tokenizer(cls, tokenizer, **kwargs):
        """The objective with the tokenizer's ids over ``Collator.for_tokenizer(tokenizer)``;
        ``kwargs`` are the objective's settings and the collator's (``max_length``…)."""
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in cls.__dataclass_fields__}
        return cls(Collator.for_tokenizer(tokenizer, **kwargs), **cls._tokenizer_ids(tokenizer),
                   **own)

    @staticmethod
    def _tokenizer_ids(tokenizer) -> dict:
        return {"n_regions": tokenizer.universe.n_regions}


@dataclass
class MLMCollator(ObjectiveCollator):
    """Masked-language-model batches: ``input_ids``, ``attention_mask``, ``labels`` (-100 = ignore).

    ``collator`` pads and truncates (a :class:`Collator`) or packs (a
    :class:`PackingCollator`); ``n_regions`` and ``mask_token_id`` come from the tokenizer
    (:meth:`for_tokenizer`); special tokens and padding are never masked.

    Examples
    --------
    >>> import numpy as np
    >>> c = MLMCollator(Collator(pad_token_id=6), n_regions=5, mask_token_id=7, mask_prob=1.0,
    ...                 random_prob=0.0, replace_prob=1.0)
    >>> c([np.array([1, 2]), np.array([3])])["labels"].tolist()
    [[1, 2], [3, -100]]
    >>> p = MLMCollator(PackingCollator(seq_len=4, pad_token_id=6), n_regions=5, mask_token_id=7,
    ...                 mask_prob=1.0, random_prob=0.0, replace_prob=1.0)  # packed batches
    >>> b = p([np.array([1, 2]), np.array([3])])
    >>> b["input_ids"].tolist(), b["labels"].tolist(), b["record_ids"].tolist()
    ([[7, 7, 7, 6]], [[1, 2, 3, -100]], [[0, 0, 1, -1]])
    """

    collator: Collator | PackingCollator
    n_regions: int
    mask_token_id: int
    mask_prob: float = 0.15
    replace_prob: float = 0.8
    random_prob: float = 0.1

    CONSTRAINTS = {"collator": [InstanceOf(Collator, PackingCollator)],
                   "n_regions": [Interval(Integral, 1, None)],
                   "mask_token_id": TOKEN_ID, "mask_prob": PROB, "replace_prob": PROB,
                   "random_prob": PROB}
    RULES = (SumAtMost(("replace_prob", "random_prob"), 1),)

    def __post_init__(self):
        validate_fields(self)

    @staticmethod
    def _tokenizer_ids(tokenizer) -> dict:
        return {"n_regions": tokenizer.universe.n_regions, "mask_token_id": tokenizer.mask_token_id}

    def apply(self, batch, rng):
        batch["input_ids"], batch["labels"] = _data.mlm_mask(
            batch["input_ids"], n_regions=self.n_regions, mask_token_id=self.mask_token_id, rng=rng,
            mask_prob=self.mask_prob, replace_prob=self.replace_prob, random_prob=self.random_prob)
        return batch


@dataclass
class RTDCollator(ObjectiveCollator):
    """Replaced-token-detection (ELECTRA-style) batches: ``labels`` 1 replaced, 0 kept, -100 special.

    Examples
    --------
    >>> import numpy as np
    >>> c = RTDCollator(Collator(pad_token_id=6), n_regions=5, replace_prob=0.0)
    >>> c([np.array([1, 2]), np.array([3])])["labels"].tolist()
    [[0, 0], [0, -100]]
    """

    collator: Collator | PackingCollator
    n_regions: int
    replace_prob: float = 0.15

    CONSTRAINTS = {"collator": [InstanceOf(Collator, PackingCollator)],
                   "n_regions": [Interval(Integral, 2, None)],
                   "replace_prob": PROB}

    def __post_init__(self):
        validate_fields(self)

    def apply(self, batch, rng):
        batch["input_ids"], batch["labels"] = _data.rtd_replace(
            batch["input_ids"], n_regions=self.n_regions, rng=rng, replace_prob=self.replace_prob)
        return batch


#: genotok's own collators: they use no numba parallel kernel (safe in forked workers)
COLLATORS = (Collator, ObjectiveCollator, PackingCollator)


class CorpusDataset(Dataset):
    """Map-style dataset: ``ds[i]`` is record ``i`` (int64 array; ``(ids, values)`` with values).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3]])
    >>> CorpusDataset(p)[0].tolist()
    [1, 2]
    """

    @validated({"corpus": CORPUS, "values": [Flag()], "expect": EXPECT}, "CorpusDataset")
    def __init__(self, corpus, *, values: bool = False, expect=None):
        self.corpus = _open(corpus, expect)
        self.values = values

    CONSTRAINTS = __init__.CONSTRAINTS

    def __len__(self) -> int:
        return len(self.corpus)

    def __getitem__(self, i):
        ids = np.asarray(self.corpus[int(i)], dtype=np.int64)
        return (ids, np.asarray(self.corpus.values(int(i)))) if self.values else ids


class CorpusIterableDataset(IterableDataset):
    """Batches of an epoch, split over ranks and workers: every record exactly once per epoch.

    ``corpus`` is a corpus of any store, a path or URL (``Corpus.open``), a mixture
    (:func:`genotok.mix`) or a run folder holding ``mixture.json``; ``plan`` is a
    :class:`~genotok.sampling.BatchPlan` of settings (bound to the corpus here; a token budget
    takes its ``max_length`` from the collator unless the plan gives one); ``collate`` makes
    the batches (:class:`Collator`, :class:`MLMCollator`, :class:`PackingCollator`…).

    The epoch's record order and its cut into global batches depend only on ``(corpus, seed,
    epoch)`` and the plan's settings: ``shuffle`` is
    ``True``/``"full"``, ``"block"`` (shards, then records within ``window`` shards) or
    ``False``; batches hold ``batch_size`` records, or up to ``max_tokens`` padded tokens of
    records of similar length. Rank ``r`` of ``W`` makes global batches ``r, r + W, …``, and
    every rank makes as many batches as every other: ``split`` says how the last ones that do
    not divide among the ranks are shared (:class:`genotok.sampling.BatchPlan`): ``"even"``
    cuts their records into one smaller batch per rank, ``"drop_last"`` drops them
    (:attr:`dropped` counts them), ``"pad"`` repeats earlier batches on the last ranks. Every
    batch carries ``sample_weight`` (float32, one per row): 0 on a repeated record, 1 otherwise;
    weight the loss with it and no record counts twice. DataLoader worker ``w`` of ``K``
    produces that rank's batches ``w, w + K, …``. DataLoader
    hands batches over in worker order, so the main process receives batch 0, 1, 2, … exactly
    as with no workers. The state (:meth:`state_dict`) is the records consumed globally: a run
    resumes with any number of ranks and workers. Use with
    :class:`ResumableLoader`, or ``DataLoader(ds, batch_size=None,
    multiprocessing_context=safe_context(k))``; with workers, only the former survives a loop
    that stops mid-epoch and keeps its workers across epochs.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3], [4]])
    >>> ds = CorpusIterableDataset(p, BatchPlan(batch_size=2, shuffle=False),
    ...                            Collator(pad_token_id=8))
    >>> [b["input_ids"].tolist() for b in ds]
    [[[1, 2], [3, 8]], [[4]]]
    """

    @validated({"corpus": CORPUS, "plan": [InstanceOf(BatchPlan, hint="e.g. BatchPlan("
                                                        "batch_size=64, seed=0)")],
                "collate": [Unchecked("a callable on a list of records (a collator)")],
                "values": [Flag()], "rank": [Interval(Integral, 0, None), None],
                "world_size": [Interval(Integral, 1, None), None], "expect": EXPECT},
               "CorpusIterableDataset", rules=[Below("rank", "world_size")])
    def __init__(self, corpus, plan: _sampling.BatchPlan, collate, *, values: bool = False,
                 rank: int | None = None, world_size: int | None = None, expect=None):
        self.corpus = _open(corpus, expect)
        if plan.max_tokens is not None and plan.max_length is None and \
                getattr(collate, "max_length", None) is not None:  # budgets count truncated rows
            plan = plan.replace(max_length=collate.max_length)
        self.plan = plan.over(self.corpus)
        env_rank, env_world = _data._env_rank()
        self.rank = env_rank if rank is None else int(rank)
        self.world_size = env_world if world_size is None else int(world_size)
        self.collate, self.values, self.seed = collate, values, self.plan.seed
        self.epoch = 0
        self.start_batch = 0
        self.resume_at = (0, 0)  # (epoch, records consumed globally) where this run began

    CONSTRAINTS = __init__.CONSTRAINTS

    @validated({"epoch": [Interval(Integral, 0, None)]}, "CorpusIterableDataset.set_epoch")
    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def schedule(self) -> _sampling.Schedule:
        """This rank's batches of the current epoch (from the resume point in its epoch)."""
        first = self.resume_at[1] if self.epoch == self.resume_at[0] else 0
        return self.plan.schedule(self.epoch, first, rank=self.rank, world_size=self.world_size)

    def records(self) -> np.ndarray:
        """This rank's records for the current epoch, in order."""
        return self.schedule().records()

    def n_batches(self) -> int:
        """This rank's batches of the current epoch: the same number on every rank."""
        return len(self.schedule())

    @property
    def dropped(self) -> int:
        """Records of the current epoch no rank makes: with ``split="drop_last"``, the last
        ``(global batches) % world_size`` batches; 0 with the other splits."""
        return self.schedule().dropped

    def state_dict(self, delivered: int = 0) -> dict:
        """The position once every rank has made ``delivered`` batches of this run's epoch."""
        first = self.resume_at[1] if self.epoch == self.resume_at[0] else 0
        state = self.plan.state(epoch=self.epoch, first=first, steps=delivered,
                                world_size=self.world_size, roll=True)
        return {**state, "batches_delivered": int(delivered), "rank": self.rank,
                "world_size": self.world_size, "corpus": self.corpus.identity,
                "n_records": len(self.corpus)}

    @validated({"state": [InstanceOf(Mapping, hint="a loader's state_dict()")]},
               "load_state_dict")
    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state`` (saved with any number of ranks and workers); a state of
        another corpus (its identity and length) or out of range is refused."""
        n = len(self.corpus)
        if "corpus" in state and state["corpus"] != self.corpus.identity or \
                "n_records" in state and state["n_records"] != n:
            raise ParameterError(
                f"this state belongs to another corpus (identity {str(state.get('corpus'))[:40]}, "
                f"{str(state.get('n_records'))[:20]} records; this one is {self.corpus.identity}, "
                f"{n} records): its resume point would mean other records; resume with the corpus "
                "it was saved with")
        for key in ("epoch", "records_seen"):
            check(f"state[{key!r}]", state.get(key, 0),  # the corpus size bounds the records
                  [Interval(Integral, 0, n if key == "records_seen" else None)], "load_state_dict")
        if "records_seen" not in state:  # saved before elastic states: same world size only
            if state.get("world_size") != self.world_size:
                raise ParameterError("this state (without records_seen) was saved with another "
                                     "world size; it resumes with the same one only")
            check("state['batches_delivered']", state.get("batches_delivered"),
                  [Interval(Integral, 0, None)], "load_state_dict")
            state = self.plan.state(epoch=state["epoch"], first=0, steps=state["batches_delivered"],
                                    world_size=self.world_size) | {"seed": state.get("seed")}
        self.resume_at = self.plan.resume(state)
        self.epoch, self.start_batch = self.resume_at[0], 0

    def __len__(self) -> int:
        return self.n_batches()

    def __iter__(self) -> Iterator[dict]:
        return (_tensors(b) for b in self._batches())

    def _batches(self) -> Iterator[dict]:
        """This worker's batches as NumPy arrays (see :func:`_arrays`)."""
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        if info is not None:  # in a DataLoader worker, forked or not: no numba thread pool
            worker_init(wid)
        if hasattr(self.corpus, "set_epoch"):  # a mixture: its draws depend on the epoch
            self.corpus.set_epoch(self.epoch)
        sched = self.schedule()
        mine = range(self.start_batch + wid, len(sched), nw)
        if hasattr(self.corpus, "prefetch") and len(mine):  # a remote corpus: fetch shards ahead
            self.corpus.prefetch(np.concatenate([sched.batch(k)[1] for k in mine]))
        for k in mine:
            at, idx = sched.batch(k)
            batch = self.corpus.get_batch(idx, values=self.values)
            rows = [np.asarray(r, dtype=np.int64) for r in batch]
            if self.values:
                rows = [(r, batch.row_values(k)) for k, r in enumerate(rows)]
            # drawn from the batch's place in the global sequence: the same for any world size
            rng = np.random.default_rng([self.seed, self.epoch, at])
            out = _arrays(self.collate, rows, rng)
            out["index"] = idx
            out["sample_weight"] = sched.weights(k)  # 0 on a repeat (split="pad" / "even")
            yield out


def _arrays(collate, rows, rng) -> dict:
    """``collate(rows, rng)`` with NumPy arrays in place of tensors.

    genotok's collators make their arrays directly (``arrays``); tensors from any other collate
    are copied out, so that no array keeps a tensor alive (see :class:`_NumpyWire`). Tensors of a
    dtype NumPy lacks (bfloat16) stay tensors.
    """
    make = getattr(collate, "arrays", None)
    if make is not None:
        return make(rows, rng)
    return {k: _array_copy(v) if isinstance(v, torch.Tensor) else v
            for k, v in collate(rows, rng).items()}


def _array_copy(t: torch.Tensor):
    """A NumPy copy of ``t``; ``t`` itself when NumPy has no such dtype (bfloat16)."""
    try:
        return t.detach().cpu().numpy().copy()
    except TypeError:
        return t


class _NumpyWire(IterableDataset):
    """A :class:`CorpusIterableDataset`'s batches as NumPy arrays, with no tensor made at all.

    :class:`ResumableLoader` runs this in its workers. When a loader is dropped mid-epoch, a
    worker exits while its queue's feeder thread is still sending prefetched batches, and Python
    ends that thread with ``pthread_exit`` the next time it takes the GIL. If that happens inside
    torch's C++ (pickling a tensor into shared memory, or freeing one: ``THPVariable_clear``
    releases the GIL), the unwinding calls ``std::terminate``: the worker dies by SIGABRT and the
    main process reports "DataLoader worker … killed by signal: Aborted". NumPy's pickling and
    freeing are plain C and unwind cleanly, so batches cross as arrays that hold no tensor.

    The workers live across epochs (persistent workers) and keep the copy of the dataset they
    were started with; ``state`` (shared memory: epoch, first batch) is how the main process
    hands them the epoch and the resume point of every new pass.
    """

    def __init__(self, dataset: CorpusIterableDataset):
        self.dataset = dataset
        self.state = multiprocessing.RawArray("q", 2)

    def __iter__(self) -> Iterator[dict]:
        ds = self.dataset
        ds.epoch, ds.start_batch = int(self.state[0]), int(self.state[1])
        return ds._batches()


def _as_is(batch):
    """DataLoader ``collate_fn`` that leaves a ready batch alone (no tensors made in the worker)."""
    return batch


def _from_wire(batch: dict, pin: bool) -> dict:
    """The main-process side of :class:`_NumpyWire`: NumPy arrays back to (pinned) tensors."""
    out = _tensors(batch)
    if pin:
        out = {k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in out.items()}
    return out


def _numba_openmp_started() -> bool:
    """Whether numba's GNU OpenMP thread pool runs in this process (then ``fork`` children must
    not enter a parallel kernel: GNU OpenMP terminates them)."""
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", False):
        return False
    import numba

    try:
        return numba.threading_layer() == "omp"
    except ValueError:  # pragma: no cover - initialised without a layer
        return False


def _fork_problem(collate) -> str | None:
    """Why forking DataLoader workers would be unsafe here, or ``None`` when it is safe."""
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        return f"fork is not safe on {sys.platform}"
    if collate is not None and not isinstance(collate, COLLATORS) and _numba_openmp_started():
        return ("numba's OpenMP threads run in this process and the custom collate could enter "
                "a parallel kernel, which GNU OpenMP forbids after fork")
    return None


@validated({"num_workers": [Interval(Integral, 0, None)],
            "collate": [Unchecked("a collator, asked whether it is fork-safe"), None]})
def safe_context(num_workers: int, collate=None) -> str | None:
    """The multiprocessing start method for DataLoader workers over a corpus.

    ``"fork"`` on Linux: workers start in milliseconds and a plain script needs no ``if
    __name__ == "__main__":`` guard. Forked workers must not run a numba *parallel* kernel
    once numba's OpenMP pool runs in the parent (GNU OpenMP terminates them):
    :class:`CorpusIterableDataset` makes every worker gather serially (:func:`worker_init`), so
    a plain ``DataLoader`` with this context is safe, and genotok's collators use no parallel
    kernel. ``"spawn"`` elsewhere, and for a custom ``collate`` once numba's OpenMP threads have
    started. ``None`` without workers.

    Examples
    --------
    >>> safe_context(0) is None, safe_context(2) in ("fork", "spawn")
    (True, True)
    """
    if num_workers <= 0:
        return None
    return "spawn" if _fork_problem(collate) else "fork"


@validated({"worker_id": [Interval(Integral, 0, None)]})
def worker_init(worker_id: int) -> None:
    """Make corpus gathers in this DataLoader worker serial (no numba thread pool).

    :class:`CorpusIterableDataset` calls it in every worker; usable as a ``worker_init_fn``
    for other datasets over a corpus.

    A forked worker cannot use numba's OpenMP pool of its parent; with several workers each
    worker is a unit of parallelism anyway (as torch sets one intra-op thread in its workers).

    Examples
    --------
    >>> import genotok.formats.corpus.reader as c
    >>> saved = c.PARALLEL_GATHER_MIN
    >>> worker_init(0); c.PARALLEL_GATHER_MIN > 2 ** 62
    True
    >>> c.PARALLEL_GATHER_MIN = saved
    """
    _corpus.PARALLEL_GATHER_MIN = sys.maxsize


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either side)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    consts = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and consts == {"__main__"}


def _check_main_guard(num_workers: int, why: str) -> None:
    """Refuse to spawn workers from an unguarded script, saying what to add.

    A spawned worker re-imports the main script; code at its top level that is not under
    ``if __name__ == "__main__":`` runs again there, starts workers of its own and dies with
    multiprocessing's "bootstrapping phase" error. Notebooks, ``python -c`` and the REPL have
    no script file and are fine.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return
    line = None
    frame = sys._getframe(1)
    while frame is not None:  # the outermost statement of the script on the stack
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
        frame = frame.f_back
    if line is None:
        return
    try:
        tree = ast.parse(Path(path).read_text(), path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.body \
                and node.body[0].lineno <= line <= (node.body[-1].end_lineno or line):
            return
    raise GenotokError(
        f"{path}:{line}: ResumableLoader(num_workers={num_workers}) must spawn its workers "
        f"({why}), and a spawned worker re-runs this script from the top. Put the script's "
        f"top-level code under `if __name__ == \"__main__\":` (e.g. in a main() function "
        f"called from there), or use num_workers=0")


class ResumableLoader:
    """A DataLoader over a :class:`CorpusIterableDataset` that can stop and resume mid-epoch.

    ``state_dict()`` records the epoch and the batches already delivered; after
    ``load_state_dict()`` iteration continues with the next batch of the same order. Each
    complete pass moves the dataset to the next epoch.

    ``loader_kwargs`` go to :class:`torch.utils.data.DataLoader` (``num_workers``,
    ``prefetch_factor``, ``pin_memory``, ``worker_init_fn``...); the dataset's collator makes
    the batches, so ``batch_size`` and ``collate_fn`` are not taken.

    Workers are forked on Linux (:func:`safe_context`), so a plain script works without an
    ``if __name__ == "__main__":`` guard; where they must be spawned, a script without the guard
    gets a :class:`~genotok.GenotokError` that says what to add. Workers are started once and
    kept across epochs (``persistent_workers=True`` unless given): each pass hands them its
    epoch and first batch through shared memory, so a later epoch's first batch comes as soon
    as a worker has made it. They keep the copy of the dataset they started with: to change its
    collator or batch size, make a new loader (or call :meth:`close`). Batches cross from the
    workers as NumPy arrays, turned back into tensors here without a copy: that way a loop that
    stops mid-epoch (``break``, an exception, a checkpoint-and-exit) shuts the workers down
    cleanly, where torch's own tensor hand-over can abort them.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3], [4], [5, 6, 7]])
    >>> plan = BatchPlan(batch_size=2, seed=0)
    >>> ds = CorpusIterableDataset(p, plan, Collator(pad_token_id=8))
    >>> loader = ResumableLoader(ds)
    >>> it = iter(loader); first = next(it)
    >>> state = loader.state_dict(); state["epoch"], state["batches_delivered"]
    (0, 1)
    >>> again = ResumableLoader(CorpusIterableDataset(p, plan, Collator(pad_token_id=8)))
    >>> again.load_state_dict(state); len(list(again))  # the rest of epoch 0
    1
    """

    @validated({"dataset": [InstanceOf(CorpusIterableDataset)]}, "ResumableLoader")
    def __init__(self, dataset: CorpusIterableDataset, **loader_kwargs):
        taken = sorted({"batch_size", "collate_fn", "dataset"} & set(loader_kwargs))
        if taken:
            raise TypeError(f"ResumableLoader sets {', '.join(taken)} itself: the dataset's "
                            "collator makes the batches")
        self.dataset = dataset
        self.loader_kwargs = loader_kwargs
        self.delivered = 0
        self._loader: DataLoader | None = None
        self._wire: _NumpyWire | None = None
        self._pin = False


    CONSTRAINTS = __init__.CONSTRAINTS

    def __len__(self) -> int:
        return self.dataset.n_batches()

    def _make(self) -> None:
        kw = dict(self.loader_kwargs)
        workers = int(kw.get("num_workers", 0))
        if workers > 0:
            if kw.get("multiprocessing_context") is None:
                why = _fork_problem(self.dataset.collate)
                kw["multiprocessing_context"] = "spawn" if why else "fork"
            ctx = kw["multiprocessing_context"]
            method = ctx if isinstance(ctx, str) else ctx.get_start_method()
            if method == "spawn":
                _check_main_guard(workers, _fork_problem(self.dataset.collate)
                                  or "multiprocessing_context='spawn' was asked for")
            elif method == "fork":
                _warm(self.dataset)
            kw.setdefault("persistent_workers", True)
        self._pin = bool(kw.pop("pin_memory", False)) and torch.cuda.is_available()
        self._wire = _NumpyWire(self.dataset)
        # NumPy out of the dataset, tensors made here: with workers, dropping the loader
        # mid-epoch must not abort one (see _NumpyWire)
        self._loader = DataLoader(self._wire, batch_size=None, collate_fn=_as_is, **kw)

    def __iter__(self):
        ds = self.dataset
        if self._loader is None:
            self._make()
        self._wire.state[0], self._wire.state[1] = ds.epoch, self.delivered
        with warnings.catch_warnings():
            # Python >= 3.12 warns on fork() beside other threads (numba's, torch's); the workers
            # touch neither pool (see worker_init), which is what makes this fork safe
            warnings.filterwarnings("ignore", r".*multi-threaded, use of fork\(\) may lead to "
                                    "deadlocks")
            batches = iter(self._loader)
        for batch in batches:
            self.delivered += 1
            yield _from_wire(batch, self._pin)
        self.delivered = 0
        ds.start_batch = 0
        ds.set_epoch(ds.epoch + 1)

    def close(self) -> None:
        """Stop the workers now (they also stop when the loader is garbage-collected)."""
        self._loader = self._wire = None

    def state_dict(self) -> dict:
        """Small and JSON-ready: epoch, seed, records consumed globally (any world size resumes)."""
        return self.dataset.state_dict(self.delivered)

    def load_state_dict(self, state: dict) -> None:
        if self._loader is not None:  # running workers keep the resume point they started with
            self.close()
        self.dataset.load_state_dict(state)
        self.delivered = 0


def _warm(dataset: CorpusIterableDataset) -> None:
    """Make one batch here before forking, so that the workers inherit compiled kernels
    instead of each loading them from numba's cache (0.5 s per worker on first use)."""
    saved = dataset.start_batch
    dataset.start_batch = 0
    try:
        next(iter(dataset._batches()), None)
    finally:
        dataset.start_batch = saved
