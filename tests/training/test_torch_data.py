"""torch datasets and collators: exactly-once over workers and ranks, resume, MLM/RTD tensors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from genotok import CorpusWriter, Tokenizer  # noqa: E402
from genotok.torch_data import (  # noqa: E402
    BatchPlan,
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
def corpus_path(valued_corpus):
    rng = np.random.default_rng(0)
    return valued_corpus([(rng.integers(0, 50, int(rng.integers(1, 9))), i, f"r{i}")
                          for i in range(N)], 57)


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
        ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=4, seed=5),
                                   Collator(pad_token_id=51), rank=rank, world_size=world)
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
        ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=3),
                                   Collator(pad_token_id=51), rank=rank, world_size=world)
        seen.extend(_seen(ds, workers))
    assert sorted(seen) == list(range(N))


def test_epochs_differ_and_repeat(corpus_path):
    ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=5, seed=1),
                               Collator(pad_token_id=51))
    e0 = _seen(ds, 0)
    ds.set_epoch(1)
    e1 = _seen(ds, 0)
    ds.set_epoch(0)
    assert e0 != e1 and _seen(ds, 0) == e0


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch(corpus_path, workers):
    def make():
        ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=3, seed=7),
                                   Collator(pad_token_id=51, max_length=4,
                                                        truncation="subsample"))
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
        collate = MLMCollator(Collator(pad_token_id=51), n_regions=50, mask_token_id=52)
        ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=4, seed=3), collate,
                                   values=True)
        return list(ResumableLoader(ds, num_workers=workers))

    for a, b in zip(batches(0), batches(2), strict=True):
        assert a.keys() == b.keys() == {"input_ids", "attention_mask", "labels", "values", "index",
                                        "sample_weight"}
        for k in a:
            assert isinstance(b[k], torch.Tensor) and b[k].dtype == a[k].dtype
            assert torch.equal(a[k], b[k])


def test_loader_keeps_its_own_batching(corpus_path):
    ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=4), Collator(pad_token_id=51))
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
    ds = CorpusIterableDataset(path, BatchPlan(batch_size=20, seed=1), Collator(pad_token_id=4991))
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


# --------------------------------------------------------------------- the loader in a plain script
def _run_script(tmp_path, code: str, timeout: int = 240):
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "train.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path, env=env)


def test_plain_script_without_main_guard_keeps_its_workers(tmp_path, corpus_path):
    # the README's loader in a script with no `if __name__ == "__main__":`; workers must start
    # (no "bootstrapping phase" error), see every record once per epoch, and live across epochs
    code = f"""
import os
import numpy as np
from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

class PidCollator(Collator):
    def arrays(self, records, rng=None):
        out = super().arrays(records, rng)
        out["pid"] = np.array([os.getpid()])
        return out

ds = CorpusIterableDataset({str(corpus_path)!r}, BatchPlan(batch_size=4, seed=3),
                           PidCollator(pad_token_id=51))
loader = ResumableLoader(ds, num_workers=2)
pids = []
for epoch in range(2):
    seen, epoch_pids = [], set()
    want = ds.records().tolist()
    for batch in loader:
        seen += batch["index"].tolist()
        epoch_pids.add(int(batch["pid"][0]))
    assert seen == want, (epoch, seen, want)
    pids.append(epoch_pids)
assert pids[0] == pids[1] and len(pids[0]) == 2 and os.getpid() not in pids[0], pids
assert ds.epoch == 2
print("ok")
"""
    run = _run_script(tmp_path, code)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_forked_workers_survive_numba_openmp_in_the_parent(tmp_path):
    # batches over corpus.PARALLEL_GATHER_MIN tokens take a parallel kernel; after the parent
    # has started numba's GNU OpenMP pool, a forked worker entering one would be terminated
    code = """
import numpy as np
import genotok
from genotok import CorpusWriter
from genotok.formats.corpus import reader as corpus
from genotok.torch_data import (BatchPlan, Collator, CorpusIterableDataset, ResumableLoader,
                                _numba_openmp_started)

n = corpus.PARALLEL_GATHER_MIN // 8 + 1
with CorpusWriter("big.gtokc", vocab_size=5000, fingerprint="fp") as w:
    w.append_batch([np.arange(n) % 4990 for _ in range(24)])
c = genotok.Corpus.open("big.gtokc")
c.get_batch(np.arange(24))          # the parallel gather, here in the parent
import numba
started = _numba_openmp_started() or numba.threading_layer() != "omp"
ds = CorpusIterableDataset(c, BatchPlan(batch_size=12, shuffle=False), Collator(pad_token_id=4991))
got = [b["input_ids"].shape for b in ResumableLoader(ds, num_workers=2)]
assert got == [(12, n), (12, n)], got
import torch
from genotok.torch_data import safe_context
plain = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                    multiprocessing_context=safe_context(2))
assert [b["input_ids"].shape for b in plain] == got
print("ok", started)
"""
    run = _run_script(tmp_path, code)
    assert run.returncode == 0 and run.stdout.strip() == "ok True", run.stderr[-3000:]


def test_spawn_without_main_guard_says_what_to_add(tmp_path, corpus_path):
    code = f"""
from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

ds = CorpusIterableDataset({str(corpus_path)!r}, BatchPlan(batch_size=4), Collator(pad_token_id=51))
for batch in ResumableLoader(ds, num_workers=2, multiprocessing_context="spawn"):
    pass
"""
    run = _run_script(tmp_path, code)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("genotok.errors.GenotokError: ") and "train.py:5:" in last
    assert 'if __name__ == "__main__":' in last and "num_workers=0" in last
    assert "bootstrapping" not in run.stderr


@pytest.mark.slow
def test_spawn_with_main_guard_works(tmp_path, corpus_path):
    code = f"""
from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

def main():
    ds = CorpusIterableDataset({str(corpus_path)!r}, BatchPlan(batch_size=4),
                               Collator(pad_token_id=51))
    print(sum(len(b["index"]) for b in ResumableLoader(ds, num_workers=2,
                                                       multiprocessing_context="spawn")))

if __name__ == "__main__":
    main()
"""
    run = _run_script(tmp_path, code)
    assert run.returncode == 0 and run.stdout.strip() == str(N), run.stderr[-3000:]


def test_persistent_workers_get_each_epoch_and_resume_point(corpus_path):
    ds = CorpusIterableDataset(corpus_path, BatchPlan(batch_size=3, seed=9),
                               Collator(pad_token_id=51))
    loader = ResumableLoader(ds, num_workers=2)
    orders = []
    for _ in range(2):
        want = ds.records().tolist()
        orders.append([i for b in loader for i in b["index"].tolist()])
        assert orders[-1] == want
    assert orders[0] != orders[1]
    first = loader._loader
    want = ds.records().tolist()
    it = iter(loader)  # epoch 2, stopped after two batches, resumed by the same workers
    head = [i for _, b in zip(range(2), it) for i in b["index"].tolist()]
    it.close()
    rest = [i for b in loader for i in b["index"].tolist()]
    assert head + rest == want and len(head) == 6
    assert loader._loader is first  # the same DataLoader (and workers) throughout
    loader.close()


def test_missing_torch_names_the_extra(tmp_path):
    code = """
import sys
sys.modules["torch"] = None   # as if torch were not installed
try:
    import genotok.torch_data
except ImportError as exc:
    import genotok
    assert isinstance(exc, genotok.GenotokError)
    print(exc)
"""
    run = _run_script(tmp_path, code)
    assert run.stdout.strip() == ("genotok.torch_data needs torch: pip install 'genotok[torch]' "
                                  "(or pip install torch)"), run.stderr[-2000:]


def test_a_state_of_another_corpus_or_out_of_range_is_refused(tmp_path):
    """Issue 32: the state of a 1,000-record corpus loaded into a 10-record one, and the
    resumed epoch silently delivered nothing; a tampered records_seen likewise."""
    def make(name, n):
        p = tmp_path / name
        with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
            w.append_batch([[1 + i % 5] for i in range(n)])
        return p

    big = CorpusIterableDataset(make("big.gtokc", 1000), BatchPlan(batch_size=10),
                                Collator(pad_token_id=8))
    small = CorpusIterableDataset(make("small.gtokc", 10), BatchPlan(batch_size=10),
                                  Collator(pad_token_id=8))
    state = big.state_dict(delivered=50)
    assert state["n_records"] == 1000 and state["corpus"] == big.corpus.identity
    with pytest.raises(ValueError, match="belongs to another corpus"):
        small.load_state_dict(state)
    same = CorpusIterableDataset(big.corpus, BatchPlan(batch_size=10), Collator(pad_token_id=8))
    same.load_state_dict(state)
    assert len(same) == 50
    for bad in (-1, 1001, 2.5, True):
        with pytest.raises(ValueError, match="records_seen"):
            same.load_state_dict({**state, "records_seen": bad})


@pytest.mark.parametrize("kind", ["list", "array", "tensor"])
@pytest.mark.parametrize("collator", [Collator, MLMCollator, RTDCollator])
def test_collators_take_the_row_dicts_a_hf_trainer_hands_them(kind, collator):
    """Issue 34: MLMCollator as a Trainer's data_collator raised "too many indices for array":
    the Trainer hands a list of row dicts."""
    rows = [np.array([1, 2, 3]), np.array([4]), np.array([], np.int64)]
    vals = [np.array([0.5, 1.0, 2.0], np.float32), np.array([3.0], np.float32),
            np.zeros(0, np.float32)]
    as_kind = {"list": lambda a: a.tolist(), "array": lambda a: a,
               "tensor": torch.from_numpy}[kind]
    if collator is Collator:
        make = lambda: Collator(pad_token_id=9, seed=4)
    else:
        make = lambda: collator(Collator(pad_token_id=9, seed=4), n_regions=5,
                                **({"mask_token_id": 6} if collator is MLMCollator else {}))
    plain = make()([(r, v) for r, v in zip(rows, vals)])
    feats = [{"input_ids": as_kind(r), "values": as_kind(v), "length": len(r), "name": "x"}
             for r, v in zip(rows, vals)]
    got = make()(feats)
    assert got.keys() == plain.keys() and "values" in got
    for k in got:
        assert torch.equal(got[k], plain[k])
    no_values = make()([{"input_ids": as_kind(r)} for r in rows])
    assert "values" not in no_values and torch.equal(no_values["input_ids"], plain["input_ids"])


def test_collators_say_what_a_row_dict_lacks():
    c = Collator(pad_token_id=9)
    with pytest.raises(ValueError, match="row 1 of the batch has no 'input_ids'"):
        c([{"input_ids": [1]}, {"ids": [2]}])
    with pytest.raises(ValueError, match="some rows of the batch have 'values'"):
        c([{"input_ids": [1], "values": [1.0]}, {"input_ids": [2]}])
    with pytest.raises(ValueError, match="record 0 has 2 token ids and 1 values"):
        c([{"input_ids": [1, 2], "values": [1.0]}])


# ---- issue 43 round-4 campaign (tests/campaigns): a loader state is checked before use
@pytest.mark.parametrize("edit", [lambda s: s.update(seed="x"), lambda s: s.pop("seed"),
                                  lambda s: s.update(epoch=2**70),
                                  lambda s: [s.pop("records_seen"), s.pop("world_size")],
                                  lambda s: [s.pop("records_seen"),
                                             s.update(batches_delivered="2")]],
                         ids=["seed-text", "seed-missing", "epoch-huge", "old-no-world",
                              "old-batches-text"])
def test_a_tampered_loader_state_is_a_parameter_error(tmp_path, edit):
    from genotok.params import ParameterError
    from genotok.sampling import BatchPlan

    p = tmp_path / "s.gtokc"
    with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1]] * 20)
    make = lambda rank: CorpusIterableDataset(p, BatchPlan(batch_size=4, seed=3),  # noqa: E731
                                              Collator(pad_token_id=0), rank=rank, world_size=2)
    state = make(0).state_dict(delivered=1)
    edit(state)
    with pytest.raises(ParameterError):
        make(1).load_state_dict(state)


def test_an_objective_given_a_tokenizer_says_which_constructor_takes_one():
    """MLMCollator(tok) failed in the dataclass's __init__ ("missing 2 required positional
    arguments"); it now names for_tokenizer, and the collator made that way still pickles."""
    import pickle

    from genotok.params import ParameterError
    from genotok.torch_data import MLMCollator, RTDCollator

    tok = Tokenizer(["chr1:%d-%d" % (i * 10, i * 10 + 10) for i in range(5)])
    for cls in (MLMCollator, RTDCollator):
        with pytest.raises(ParameterError, match=rf"{cls.__name__}\.for_tokenizer\(tokenizer"):
            cls(tok)
        with pytest.raises(ParameterError, match="got a tokenizer"):
            cls(collator=tok)
        made = cls.for_tokenizer(tok)
        assert pickle.loads(pickle.dumps(made)) == made
