"""torch datasets and collators: exactly-once over workers and ranks, resume, MLM/RTD tensors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from genotok import CorpusWriter, Tokenizer  # noqa: E402
from genotok.torch_data import (  # noqa: E402
    Collator,
    CorpusDataset,
    CorpusIterableDataset,
    MLMCollator,
    ResumableLoader,
    RTDCollator,
    safe_context,
)

N = 23


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "c.gtokc"
    rng = np.random.default_rng(0)
    with CorpusWriter(path, vocab_size=57, fingerprint="fp", values_dtype="float32") as w:
        for i in range(N):
            k = int(rng.integers(1, 9))
            w.append(rng.integers(0, 50, k), name=f"r{i}", values=np.full(k, i, np.float32))
    return path


def _seen(ds, workers):
    out = []
    for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                             multiprocessing_context=safe_context(workers)):
        out.extend(batch["index"].tolist())
    return out


@pytest.mark.parametrize("workers, world", [(0, 1), (0, 2), (0, 3), (2, 2)])
def test_every_record_exactly_once(corpus_path, workers, world):
    seen = []
    for rank in range(world):
        ds = CorpusIterableDataset(corpus_path, Collator(pad_token_id=51), batch_size=4, seed=5,
                                   rank=rank, world_size=world)
        ds.set_epoch(2)
        got = _seen(ds, workers)
        assert got == ds.records().tolist()  # in the epoch's order, whatever the worker count
        seen.extend(got)
    assert sorted(seen) == list(range(N))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("workers, world", [(1, 1), (2, 1), (2, 3), (3, 2), (4, 3)])
def test_every_record_exactly_once_more_workers(corpus_path, workers, world):
    seen = []
    for rank in range(world):
        ds = CorpusIterableDataset(corpus_path, Collator(pad_token_id=51), batch_size=3,
                                   rank=rank, world_size=world)
        seen.extend(_seen(ds, workers))
    assert sorted(seen) == list(range(N))


def test_epochs_differ_and_repeat(corpus_path):
    ds = CorpusIterableDataset(corpus_path, Collator(pad_token_id=51), batch_size=5, seed=1)
    e0 = _seen(ds, 0)
    ds.set_epoch(1)
    e1 = _seen(ds, 0)
    ds.set_epoch(0)
    assert e0 != e1 and _seen(ds, 0) == e0


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch(corpus_path, workers):
    def make():
        ds = CorpusIterableDataset(corpus_path, Collator(pad_token_id=51, max_length=4,
                                                        truncation="subsample"),
                                   batch_size=3, seed=7)
        return ResumableLoader(ds, num_workers=workers)

    full = [{k: v.clone() for k, v in b.items()} for b in make()]
    loader = make()
    it = iter(loader)
    first = [next(it) for _ in range(3)]
    state = loader.state_dict()
    del it
    again = make()
    again.load_state_dict(state)
    rest = list(again)
    assert len(first) + len(rest) == len(full)
    for a, b in zip(first + rest, full):
        assert all(torch.equal(a[k], b[k]) for k in b)  # same records, same random truncation
    assert again.dataset.epoch == 1  # the epoch ended and moved on


def test_map_style_and_values(corpus_path):
    ds = CorpusDataset(corpus_path, values=True)
    ids, vals = ds[3]
    assert len(ds) == N and (vals == 3).all() and ids.dtype == np.int64
    batch = Collator(pad_token_id=51)([ds[0], ds[1]])
    assert batch["values"].dtype == torch.float32 and batch["input_ids"].dtype == torch.int64
    loader = torch.utils.data.DataLoader(CorpusDataset(corpus_path), batch_size=4,
                                         collate_fn=Collator(pad_token_id=51))
    assert sum(int(b["attention_mask"].sum()) for b in loader) == sum(len(ds[i][0]) for i in range(N))


def test_mlm_and_rtd_collators():
    tok = Tokenizer(["chr1:%d-%d" % (i * 10, i * 10 + 10) for i in range(50)])
    rows = [np.arange(50) for _ in range(40)]
    mlm = MLMCollator.for_tokenizer(tok, cls_token_id=tok.cls_token_id, mask_prob=0.3)(rows)
    assert set(mlm) == {"input_ids", "attention_mask", "labels"}
    assert (mlm["labels"][:, 0] == -100).all()  # <cls> never masked
    assert ((mlm["labels"] != -100).float().mean() - 0.3 * 50 / 51).abs() < 0.05
    rtd = RTDCollator.for_tokenizer(tok)(rows + [np.arange(3)])
    assert (rtd["labels"][rtd["attention_mask"] == 0] == -100).all()


def test_inference_tensors_from_the_tokenizer():
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    out = tok([["chr1:50-150"], ["chr1:10-20"]], padding=True, truncation=True, max_length=2,
              return_tensors="pt")
    assert out["input_ids"].tolist() == [[0, 1], [0, tok.pad_token_id]]
    assert out["attention_mask"].dtype == torch.int64
