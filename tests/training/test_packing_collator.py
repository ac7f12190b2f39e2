"""Issue 40 item 10: packed training counts every record once, its weight recoverable per
record; and the training room takes a BatchPlan (and a collator), not copies of its fields."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from genotok import Corpus  # noqa: E402
from genotok.torch_data import (  # noqa: E402
    BatchPlan,
    Collator,
    CorpusIterableDataset,
    MLMCollator,
    PackingCollator,
    ResumableLoader,
    RTDCollator,
)

N = 37


@pytest.fixture(scope="module")
def corpus_path(valued_corpus):
    # record i: tokens 100*i + 1 … (lengths 0..12; some longer than 8), values i + 0.5
    return valued_corpus([(100 * i + 1 + np.arange((i * 5) % 13), i + 0.5, None)
                          for i in range(N)], 5000)


def _records(batch):
    """{record index: (its tokens in packed order, its values, its weight)} from one batch."""
    out = {}
    rec = batch["record_ids"].numpy()
    ids, vals = batch["input_ids"].numpy(), batch["values"].numpy()
    for row, (i, w) in enumerate(zip(batch["index"].tolist(), batch["sample_weight"].tolist())):
        at = rec == row
        out.setdefault(i, []).append((ids[at].tolist(), vals[at].tolist(), w))
    return out


@pytest.mark.parametrize("strategy", ["greedy", "ffd"])
@pytest.mark.parametrize("world,split", [(1, "even"), (2, "pad"), (3, "even")])
def test_a_packed_epoch_sees_every_record_once_with_its_weight(corpus_path, strategy, world,
                                                               split):
    corpus = Corpus.open(corpus_path)
    collate = PackingCollator(seq_len=8, pad_token_id=0, strategy=strategy)
    counted = {}
    for rank in range(world):
        ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=5, seed=3, split=split),
                                   collate, values=True, rank=rank, world_size=world)
        for batch in ResumableLoader(ds):
            assert batch["input_ids"].shape[1] == 8
            seg, rec = batch["segment_ids"], batch["record_ids"]
            assert ((seg == 0) == (rec == -1)).all()  # padding is the only token without a record
            assert batch["index"].shape == batch["sample_weight"].shape  # one of each per record
            for i, pieces in _records(batch).items():
                for toks, vals, w in pieces:
                    if w > 0:
                        counted.setdefault(i, []).append((toks, vals, w))
    assert sorted(counted) == list(range(N))  # every record counted, none twice
    for i, pieces in counted.items():
        assert len(pieces) == 1
        toks, vals, w = pieces[0]
        assert sorted(toks) == sorted(corpus[i].tolist()) and w == 1.0  # whole, once
        assert vals == [i + 0.5] * len(toks)  # the values travel with their tokens


def test_packed_batches_resume_mid_epoch(corpus_path):
    def loader():
        return ResumableLoader(CorpusIterableDataset(
            corpus_path, BatchPlan(batch_size=4, seed=1), PackingCollator(8, 0)))

    full = [b["input_ids"].tolist() for b in loader()]
    run = loader()
    it = iter(run)
    first = [next(it)["input_ids"].tolist() for _ in range(3)]
    state = run.state_dict()
    again = loader()
    again.load_state_dict(state)
    assert first + [b["input_ids"].tolist() for b in again] == full


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_mlm_and_rtd_train_on_packed_batches(corpus_path, objective):
    """The pretraining objectives over a PackingCollator: every record once, whole, with its
    weight; labels only on region tokens, never on padding or a separator."""
    corpus = Corpus.open(corpus_path)
    n_regions, pad, sep, mask = 5000, 5001, 5006, 5002
    pack = PackingCollator(seq_len=8, pad_token_id=pad, sep_token_id=sep)
    collate = (MLMCollator(pack, n_regions=n_regions, mask_token_id=mask, mask_prob=0.5)
               if objective == "mlm" else RTDCollator(pack, n_regions=n_regions, replace_prob=0.5))
    seen, chosen = {}, 0
    for batch in ResumableLoader(CorpusIterableDataset(corpus_path, BatchPlan(batch_size=5, seed=2),
                                                       collate)):
        ids, labels = batch["input_ids"].numpy(), batch["labels"].numpy()
        rec, seg = batch["record_ids"].numpy(), batch["segment_ids"].numpy()
        assert ids.shape == labels.shape == rec.shape == seg.shape and ids.shape[1] == 8
        special = (rec == -1) | (ids == sep)
        assert (labels[rec == -1] == -100).all() and (ids[rec == -1] == pad).all()
        assert (labels[ids == sep] == -100).all()
        if objective == "mlm":
            # the original tokens: the label where chosen, else the token itself
            orig = np.where(labels != -100, labels, ids)
            chosen += int((labels != -100).sum())
        else:
            assert set(np.unique(labels[~special]).tolist()) <= {0, 1}
            chosen += int((labels == 1).sum())
            orig = None
        for row, (i, w) in enumerate(zip(batch["index"].tolist(),
                                         batch["sample_weight"].tolist())):
            at = (rec == row) & (ids != sep) if orig is not None else (rec == row) & ~special
            assert w == 1.0 and i not in seen
            seen[i] = orig[at].tolist() if orig is not None else int(at.sum())
    assert sorted(seen) == list(range(N)) and chosen > 0  # every record once; some were chosen
    for i, got in seen.items():
        want = corpus[i].tolist()
        assert sorted(got) == sorted(want) if objective == "mlm" else got == len(want)


def test_an_objective_refuses_what_is_not_a_collator():
    from genotok.params import ParameterError

    with pytest.raises(ParameterError, match="collator must be a Collator or a PackingCollator"):
        MLMCollator(object(), n_regions=5, mask_token_id=7)


def test_packing_collator_keeps_separators_and_rows():
    c = PackingCollator(seq_len=4, pad_token_id=0, sep_token_id=9, strategy="greedy")
    b = c.arrays([np.array([5, 6]), np.array([], np.int64), np.array([7, 8, 3, 2, 1])])
    assert b["input_ids"].tolist() == [[5, 6, 9, 9], [7, 8, 3, 2], [1, 9, 0, 0]]
    assert b["record_ids"].tolist() == [[0, 0, 0, 1], [2, 2, 2, 2], [2, 2, -1, -1]]
    rows = [{"input_ids": [1, 2], "values": [0.5, 1.5]}, {"input_ids": [3], "values": [2.5]}]
    got = PackingCollator(seq_len=3, pad_token_id=0, strategy="greedy").arrays(rows)
    assert got["values"].tolist() == [[0.5, 1.5, 2.5]] and got["record_ids"].tolist() == [[0, 0, 1]]


TRAINING = {"CorpusIterableDataset": CorpusIterableDataset, "Collator": Collator,
            "MLMCollator": MLMCollator, "PackingCollator": PackingCollator,
            "BatchPlan": BatchPlan}


@pytest.mark.parametrize("name", sorted(TRAINING))
def test_the_training_room_takes_at_most_10_parameters(name):
    sig = inspect.signature(TRAINING[name])
    assert len(sig.parameters) <= 10, (name, list(sig.parameters))


def test_the_data_module_takes_a_plan_and_a_collator():
    pytest.importorskip("lightning")
    from genotok.lightning import CorpusDataModule

    params = list(inspect.signature(CorpusDataModule).parameters)
    assert len(params) <= 10 and params[:3] == ["corpus", "plan", "collate"]
    assert "batch_size" not in params and "seed" not in params
    with pytest.raises(TypeError, match="BatchPlan"):
        CorpusDataModule("x", Collator(pad_token_id=0), BatchPlan(batch_size=2))


# ---- issue 43 round-4 campaign (tests/campaigns): collators check ids and settings first
@pytest.mark.parametrize("rows", [[np.array([1.7])], [np.array([True])], [np.array([-1])],
                                  [np.array([2**63 + 5], np.uint64)], [[[1, 2], [3, 4]]]],
                         ids=["float", "bool", "negative", "uint64-top", "nested"])
@pytest.mark.parametrize("make", ["Collator", "rows", "PackingCollator", "MLMCollator"])
def test_collators_refuse_what_is_not_a_token_id(rows, make):
    from genotok.params import ParameterError
    from genotok.torch_data import Collator, MLMCollator

    c = Collator(pad_token_id=0)
    run = {"Collator": lambda: c.arrays(rows),
           "rows": lambda: c.arrays([{"input_ids": r} for r in rows]),
           "PackingCollator": lambda: PackingCollator(4, 0).arrays(rows),
           "MLMCollator": lambda: MLMCollator(c, n_regions=5, mask_token_id=6).arrays(rows)}[make]
    with pytest.raises(ParameterError, match="record 0"):
        run()


@pytest.mark.parametrize("make", [
    lambda C, M, R: C(pad_token_id=2**64), lambda C, M, R: C(pad_token_id=None),
    lambda C, M, R: C(pad_token_id=0, max_length=2**40),
    lambda C, M, R: M(C(pad_token_id=0), n_regions=5, mask_token_id=float("nan")),
    lambda C, M, R: M(C(pad_token_id=0), n_regions=5, mask_token_id=6, mask_prob=1.5),
    lambda C, M, R: M(C(pad_token_id=0), n_regions=5, mask_token_id=6, replace_prob=0.8,
                      random_prob=0.5),
    lambda C, M, R: R(C(pad_token_id=0), n_regions=1),
    lambda C, M, R: PackingCollator(2**40, 0)],
    ids=["pad-2**64", "pad-None", "max_length-huge", "mask-nan", "prob-1.5", "probs-sum",
         "rtd-one-region", "seq_len-huge"])
def test_collator_settings_are_refused_at_construction(make):
    from genotok.params import ParameterError
    from genotok.torch_data import Collator, MLMCollator, RTDCollator

    with pytest.raises(ParameterError):
        make(Collator, MLMCollator, RTDCollator)


@pytest.mark.parametrize("values", [np.array([1.0]), np.array(["a"])], ids=["short", "text"])
def test_values_must_be_numbers_one_per_token(values):
    from genotok.params import ParameterError
    from genotok.torch_data import Collator

    for c in (Collator(pad_token_id=0), PackingCollator(4, 0)):
        with pytest.raises(ParameterError, match="record 0"):
            c.arrays([(np.array([1, 2]), values)])
