"""Datasets and batching for training and inference, in NumPy (torch wrappers: ``torch_data``).

Everything random takes a ``numpy.random.Generator``; the datasets derive theirs from
``(seed, epoch, index)`` so that results are the same whatever the number of workers.

Examples
--------
>>> import numpy as np
>>> rows = [np.array([5, 6, 7]), np.array([8])]
>>> b = make_batch(rows, pad_token_id=0, max_length=2, truncation="head")
>>> b["input_ids"].tolist(), b["attention_mask"].tolist()
([[5, 6], [8, 0]], [[1, 1], [1, 0]])
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from . import sampling as _sampling
from .batching import TRUNCATIONS, make_batch, pad_batch, truncate  # noqa: F401 (the one implementation)
from ._optional import optional
from .errors import GtokFormatError, UniverseMismatchError
from .formats.corpus import Corpus
from .formats.gtok import read_gtok
from .packing import pack  # noqa: F401 (the numba packing: greedy or first-fit-decreasing)
from .params import (EXPECT, Below, Flag, InstanceOf, Integral, Interval, Options, Real,
                     SumAtMost, validated)

#: a probability
PROB = [Interval(Real, 0, 1)]
#: token ids (an array, or a list)
IDS = [InstanceOf(np.ndarray, list, tuple)]
RNG = [InstanceOf(np.random.Generator)]
TOKEN_ID = [Interval(Integral, 0, None)]


class PretokenizedDataset(Sequence):
    """Pre-tokenized records from a corpus, a folder of ``.gtok`` files or a list of them.

    Indexing returns zero-copy views (a memmap slice of the corpus or of the ``.gtok`` file).

    Parameters
    ----------
    source
        A :class:`~genotok.Corpus`, a corpus path (file or sharded directory), any store's
        output (a folder with ``manifest.json``, read by ``Corpus.open``), a folder of
        ``.gtok`` files (sorted by name) or a list of ``.gtok`` paths.
    shuffle, seed
        Iterate in a seeded random order that changes with :meth:`set_epoch`.
    expect
        A Tokenizer/Universe or fingerprint: a corpus of another universe is refused.
        (Plain ``.gtok`` files carry no fingerprint; for them this checks ids < vocab_size.)

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3]])
    >>> [r.tolist() for r in PretokenizedDataset(p)]
    [[1, 2], [3]]
    """

    @validated({"source": [InstanceOf(Corpus, str, os.PathLike, list, tuple)],
                "shuffle": [Flag()], "seed": _sampling.COUNT,
                "expect": EXPECT}, "PretokenizedDataset")
    def __init__(self, source, *, shuffle: bool = False, seed: int = 0, expect=None):
        self.shuffle, self.seed, self.epoch = bool(shuffle), int(seed), 0
        self.corpus: Corpus | None = None
        self.files: list[Path] | None = None
        if isinstance(source, Corpus):
            self.corpus = source
        elif isinstance(source, (list, tuple)):
            self.files = [Path(p) for p in source]
        else:
            p = Path(source)
            if p.is_dir() and not (p / "manifest.json").exists():  # a folder of gtars files
                self.files = sorted(p.glob("*.gtok"))
                if not self.files:
                    raise GtokFormatError(f"{p}: folder holds no .gtok files and no "
                                          "manifest.json")
            else:  # a corpus file, or any store's output (its manifest: records in its order)
                self.corpus = Corpus.open(p)
        if self.corpus is not None and expect is not None:
            want = expect if isinstance(expect, str) else expect.fingerprint
            if self.corpus.fingerprint != want:
                raise UniverseMismatchError(f"{self.corpus.path}: tokenized with another universe "
                                            f"({self.corpus.fingerprint[:12]}… vs {want[:12]}…)")
        self._vocab_size = getattr(expect, "vocab_size", None)

    CONSTRAINTS = __init__.CONSTRAINTS

    def __len__(self) -> int:
        return len(self.corpus) if self.corpus is not None else len(self.files)

    def __getitem__(self, i):
        if self.corpus is not None:
            return self.corpus[i]
        arr = read_gtok(self.files[i])
        if self._vocab_size is not None and arr.size and int(arr.max()) >= self._vocab_size:
            raise GtokFormatError(f"{self.files[i]}: id {int(arr.max())} >= vocab_size "
                                  f"{self._vocab_size}: written with another universe?")
        return arr

    @validated({"epoch": [Interval(Integral, 0, None)]}, "PretokenizedDataset.set_epoch")
    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose shuffled order iteration follows."""
        self.epoch = int(epoch)

    def order(self) -> np.ndarray:
        """Record order of the current epoch."""
        return _sampling.epoch_order(len(self), self.seed, self.epoch,
                                     "full" if self.shuffle else "none")

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in self.order():
            yield self[int(i)]

    def __repr__(self) -> str:
        src = self.corpus.path if self.corpus is not None else f"{len(self.files)} .gtok files"
        return f"PretokenizedDataset({len(self):,} records from {src}, shuffle={self.shuffle})"


# ---------------------------------------------------------------------------------- per record
@validated({"ids": [InstanceOf(np.ndarray)], "rng": RNG})
def shuffle_tokens(ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A shuffled copy of one record (Region2Vec/word2vec-style training shuffles documents).

    Examples
    --------
    >>> import numpy as np
    >>> sorted(shuffle_tokens(np.array([3, 1, 2]), np.random.default_rng(0)).tolist())
    [1, 2, 3]
    """
    return ids[rng.permutation(ids.size)]


@validated({"ids": IDS, "cls_token_id": TOKEN_ID + [None], "eos_token_id": TOKEN_ID + [None]})
def wrap(ids: np.ndarray, cls_token_id: int | None = None, eos_token_id: int | None = None) -> np.ndarray:
    """``[<cls>] + ids + [<eos>]`` (either optional).

    Examples
    --------
    >>> wrap([5, 6], cls_token_id=1, eos_token_id=2).tolist()
    [1, 5, 6, 2]
    """
    parts = []
    if cls_token_id is not None:
        parts.append(np.array([cls_token_id], dtype=np.int64))
    parts.append(np.asarray(ids, dtype=np.int64))
    if eos_token_id is not None:
        parts.append(np.array([eos_token_id], dtype=np.int64))
    return np.concatenate(parts)


# ---------------------------------------------------------------------------------- objectives
@validated({"input_ids": IDS, "n_regions": [Interval(Integral, 1, None)],
            "mask_token_id": TOKEN_ID, "rng": RNG, "mask_prob": PROB, "replace_prob": PROB,
            "random_prob": PROB}, rules=[SumAtMost(("replace_prob", "random_prob"), 1)])
def mlm_mask(input_ids: np.ndarray, *, n_regions: int, mask_token_id: int,
             rng: np.random.Generator, mask_prob: float = 0.15,
             replace_prob: float = 0.8, random_prob: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """BERT-style masking: returns ``(masked input_ids, labels)``.

    Each region token (id < ``n_regions``) is chosen with ``mask_prob``; a chosen token becomes
    ``<mask>`` with ``replace_prob``, a random region id with ``random_prob``, and stays as it is
    otherwise (80/10/10 by default). Special tokens (``<pad>``, ``<cls>``…) are never chosen.
    ``labels`` hold the original id where chosen and -100 elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> ids, labels = mlm_mask(np.array([[1, 2, 9]]), n_regions=5, mask_token_id=7,
    ...                       rng=np.random.default_rng(0), mask_prob=1.0, replace_prob=1.0, random_prob=0.0)
    >>> ids.tolist(), labels.tolist()
    ([[7, 7, 9]], [[1, 2, -100]])
    """
    ids = np.array(input_ids, dtype=np.int64, copy=True)
    eligible = ids < n_regions
    chosen = eligible & (rng.random(ids.shape) < mask_prob)
    labels = np.where(chosen, ids, -100)
    u = rng.random(ids.shape)
    to_mask = chosen & (u < replace_prob)
    to_rand = chosen & (u >= replace_prob) & (u < replace_prob + random_prob)
    ids[to_mask] = mask_token_id
    ids[to_rand] = rng.integers(0, n_regions, int(to_rand.sum()))
    return ids, labels


@validated({"input_ids": IDS, "n_regions": [Interval(Integral, 2, None)], "rng": RNG,
            "replace_prob": PROB})
def rtd_replace(input_ids: np.ndarray, *, n_regions: int, rng: np.random.Generator,
                replace_prob: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """ELECTRA-style replaced-token detection: ``(input_ids, labels)``.

    A fraction of region tokens is replaced by a random *different* region id; labels are 1
    where replaced, 0 for other region tokens and -100 on special tokens and padding.

    Examples
    --------
    >>> import numpy as np
    >>> ids, labels = rtd_replace(np.array([[1, 2, 9]]), n_regions=5, rng=np.random.default_rng(0),
    ...                          replace_prob=1.0)
    >>> labels.tolist(), bool((ids[0, :2] != [1, 2]).all())
    ([[1, 1, -100]], True)
    """
    ids = np.array(input_ids, dtype=np.int64, copy=True)
    eligible = ids < n_regions
    chosen = eligible & (rng.random(ids.shape) < replace_prob)
    # a random id different from the original: shift by 1..n_regions-1
    shift = rng.integers(1, n_regions, int(chosen.sum()))
    ids[chosen] = (ids[chosen] + shift) % n_regions
    labels = np.where(eligible, chosen.astype(np.int64), -100)
    return ids, labels


@validated({"order": [InstanceOf(np.ndarray)], **_sampling.RANKS,
            "split": [Options("even", "drop_last", "pad")]}, rules=[Below("rank", "world_size")])
def worker_slice(order: np.ndarray, rank: int, world_size: int, split: str = "even") -> np.ndarray:
    """This rank's share of an epoch's record order.

    ``split="even"``: ranks get ``len // world_size`` or one more (every record exactly once).
    ``"drop_last"``: the tail that does not divide evenly is dropped (equal shares).
    ``"pad"``: the order is padded by repeating its start so that shares are equal, like
    torch's DistributedSampler (a few records are seen twice).

    Examples
    --------
    >>> import numpy as np
    >>> [worker_slice(np.arange(5), r, 2).tolist() for r in range(2)]
    [[0, 2, 4], [1, 3]]
    """
    n = order.size
    if split == "drop_last":
        order = order[: n - n % world_size]
    elif split == "pad":
        extra = (-n) % world_size
        if extra and n:
            order = np.concatenate([order, np.resize(order, extra)])
    return order[rank::world_size]


def _env_rank() -> tuple[int, int]:
    """Rank and world size from torch.distributed when initialised, else the environment."""
    dist = optional("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
