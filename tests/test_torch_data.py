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


def test_workers_hand_over_the_same_tensors(corpus_path):
    def batches(workers):
        ds = CorpusIterableDataset(corpus_path, MLMCollator(pad_token_id=51, n_regions=50,
                                                            mask_token_id=52), batch_size=4, seed=3,
                                   values=True)
        return list(ResumableLoader(ds, num_workers=workers))

    for a, b in zip(batches(0), batches(2), strict=True):
        assert a.keys() == b.keys() == {"input_ids", "attention_mask", "labels", "values", "index"}
        for k in a:
            assert isinstance(b[k], torch.Tensor) and b[k].dtype == a[k].dtype
            assert torch.equal(a[k], b[k])


def test_loader_keeps_its_own_batching(corpus_path):
    ds = CorpusIterableDataset(corpus_path, Collator(pad_token_id=51), batch_size=4)
    for kw in ({"collate_fn": list}, {"batch_size": 2}):
        with pytest.raises(TypeError, match="sets .* itself"):
            ResumableLoader(ds, **kw)


@pytest.mark.slow
def test_stopping_mid_epoch_shuts_workers_down_cleanly(tmp_path):
    # Dropping a loader while its workers still send prefetched batches used to abort a worker
    # (SIGABRT from torch's C++ tensor hand-over in an exiting process) now and then; pytest
    # turns the "Exception ignored in DataLoader.__del__" that follows into a failure. Big
    # batches and a deep prefetch keep the workers' queues busy at the moment of the drop.
    path = tmp_path / "big.gtokc"
    with CorpusWriter(path, vocab_size=5000, fingerprint="fp") as w:
        w.append_batch([np.arange(4000) % 4990 for _ in range(400)])
    ds = CorpusIterableDataset(path, Collator(pad_token_id=4991), batch_size=20, seed=1)
    loader = ResumableLoader(ds, num_workers=2, prefetch_factor=8)
    for _ in range(8):
        it = iter(loader)
        assert next(it)["input_ids"].shape == (20, 4000)
        it.close()  # the DataLoader and its workers go now, mid-epoch
        loader.delivered = 0


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
