"""Elastic determinism: one global order per (corpus, seed, epoch), resumable on any world size."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import CorpusWriter
from genotok.sampling import (
    BatchPlan,
    chunk_bounds,
    epoch_order,
    padding_waste,
    shuffle_quality,
    token_budget_batches,
)


def _stream(plan, epoch, first, world, workers=1, steps=None):
    """Records in the order a synchronous run of ``world`` ranks consumes them (step by step,
    rank 0 first), each rank's batches made by ``workers`` simulated DataLoader workers."""
    scheds = [plan.schedule(epoch, first, rank=r, world_size=world) for r in range(world)]
    per_rank = []
    for s in scheds:  # the records that count (weight 1): a repeat of weight 0 is not consumed
        made = {w: [s.batch(k)[1][s.weights(k) > 0] for k in range(w, len(s), workers)]
                for w in range(workers)}
        # DataLoader hands batches over in worker round-robin: batch k comes from worker k % K
        per_rank.append([made[k % workers][k // workers] for k in range(len(s))])
    n_steps = max(len(b) for b in per_rank)
    steps = n_steps if steps is None else min(steps, n_steps)
    out = [b[k] for k in range(steps) for b in per_rank if k < len(b)]
    return (np.concatenate(out) if out else np.zeros(0, np.int64)), steps


@pytest.mark.parametrize("shuffle", ["none", "full", "block"])
@pytest.mark.parametrize("max_tokens", [None, 40])
def test_one_global_order_for_every_world_and_worker_count(shuffle, max_tokens):
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 20, 103)
    kw = {"batch_size": 4} if max_tokens is None else {"max_tokens": max_tokens}
    plan = BatchPlan(shuffle=shuffle, seed=3, **kw).bind(lengths, [0, 30, 31, 70, 103])
    seq, _ = plan.batches(2)
    for world, workers in [(1, 1), (2, 2), (3, 1), (4, 2), (5, 3)]:
        got, _ = _stream(plan, 2, 0, world, workers)
        np.testing.assert_array_equal(got, seq)
    assert sorted(seq.tolist()) == list(range(103))
    assert (shuffle == "none") == (plan.order(2).tolist() == list(range(103)))
    assert plan.order(2).tolist() != plan.order(3).tolist() or shuffle == "none"


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 80), b1=st.integers(1, 9), b2=st.integers(1, 9), w1=st.integers(1, 5),
       w2=st.integers(1, 5), k1=st.integers(1, 4), k2=st.integers(1, 4), stop=st.integers(0, 40),
       shuffle=st.sampled_from(["none", "full", "block"]), budget=st.booleans(),
       seed=st.integers(0, 2**32))
def test_resume_on_another_world_size_loses_and_repeats_nothing(n, b1, b2, w1, w2, k1, k2, stop,
                                                                 shuffle, budget, seed):
    lengths = np.random.default_rng(seed).integers(0, 12, n)
    starts = np.sort(np.concatenate([[0, n], np.random.default_rng(seed).integers(0, n + 1, 3)]))

    def plan(b):
        # a token budget resumes with the same budget; a batch size may change
        kw = {"max_tokens": 3 * b1 + 10, "bucket": 17} if budget else {"batch_size": b}
        return BatchPlan(shuffle=shuffle, seed=seed, window=2, **kw).bind(lengths, starts)

    before, after = plan(b1), plan(b2)
    first, steps = _stream(before, 0, 0, w1, k1, steps=stop)
    # the state of rank 0, through JSON as a checkpoint would keep it
    state = json.loads(json.dumps(before.state(epoch=0, first=0, steps=steps, world_size=w1)))
    assert state["records_seen"] == first.size
    epoch, at = after.resume(state)
    rest, _ = _stream(after, epoch, at, w2, k2)
    both = np.concatenate([first, rest])
    assert sorted(both.tolist()) == list(range(n))  # every record once: none lost, none twice
    never_stopped, _ = _stream(before, 0, 0, 1)
    # the same records as a run that never stopped, in the same global order
    np.testing.assert_array_equal(both, never_stopped)


@pytest.mark.parametrize("split", ["even", "drop_last", "pad"])
def test_the_last_batches_follow_split(split):
    plan = BatchPlan(batch_size=2, shuffle=False, split=split).bind(11)  # 6 global batches
    scheds = [plan.schedule(0, rank=r, world_size=4) for r in range(4)]
    per_rank = [s.records().tolist() for s in scheds]
    weights = [np.concatenate([s.weights(k) for k in range(len(s))]).tolist() for s in scheds]
    if split == "even":  # the last 3 records shared out: one more (smaller) batch on every rank
        assert per_rank == [[0, 1, 8], [2, 3, 9], [4, 5, 10], [6, 7, 8]]
        assert weights[3] == [1, 1, 0]  # rank 3 had no record left: a repeat of weight 0
    elif split == "drop_last":
        assert per_rank == [[0, 1], [2, 3], [4, 5], [6, 7]]
        assert scheds[0].dropped == plan.dropped(0, 4) == 3
    else:  # ranks 2 and 3 repeat the first batches, with weight 0
        assert per_rank == [[0, 1, 8, 9], [2, 3, 10], [4, 5, 0, 1], [6, 7, 2, 3]]
        assert weights[2] == weights[3] == [1, 1, 0, 0] and weights[1] == [1, 1, 1]
    assert {len(s) for s in scheds} == {1 if split == "drop_last" else 2}
    assert BatchPlan(batch_size=2, shuffle=False, drop_last_batch=True).bind(11).schedule(0) \
        .records().tolist() == list(range(10))


def test_500_records_in_batches_of_64_on_3_ranks_make_3_batches_each():
    """Issue 34: the default split gave 3/3/2 batches (a DDP all-reduce then waits forever)."""
    plan = BatchPlan(batch_size=64, seed=0).bind(500)
    scheds = [plan.schedule(0, rank=r, world_size=3) for r in range(3)]
    assert [len(s) for s in scheds] == [3, 3, 3]
    assert [s.batch(2)[1].size for s in scheds] == [39, 39, 38]  # 64 + 52 records shared out
    assert sorted(np.concatenate([s.records() for s in scheds]).tolist()) == list(range(500))
    assert plan.dropped(0, 3) == 0 and BatchPlan(batch_size=64, split="drop_last").bind(500) \
        .dropped(0, 3) == 116


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 200), b=st.integers(1, 70), world=st.integers(1, 7),
       split=st.sampled_from(["even", "drop_last", "pad"]), budget=st.booleans(),
       first=st.integers(0, 200), drop_short=st.booleans(), seed=st.integers(0, 2**16))
def test_every_rank_makes_as_many_batches_and_weighted_records_count_once(
        n, b, world, split, budget, first, drop_short, seed):
    lengths = np.random.default_rng(seed).integers(1, 30, n)
    kw = {"max_tokens": b + 29} if budget else {"batch_size": b, "drop_last_batch": drop_short}
    plan = BatchPlan(seed=seed, split=split, **kw).bind(lengths)
    seq, bounds = plan.batches(1, 0)
    first = 0 if budget else min(first, n)  # a fixed batch size resumes from any record
    seq, bounds = plan.batches(1, first)
    j0 = int(np.searchsorted(bounds, first))
    left = bounds.size - 1 - j0
    scheds = [plan.schedule(1, first, rank=r, world_size=world) for r in range(world)]
    counts = {len(s) for s in scheds}
    assert counts == {left // world if split == "drop_last" else -(-left // world)}
    counted = []
    for s in scheds:
        for k in range(len(s)):
            rows, w = s.batch(k)[1], s.weights(k)
            assert rows.size >= 1 and w.shape == rows.shape and w.dtype == np.float32
            counted += rows[w > 0].tolist()
    assert len(counted) == len(set(counted))  # no record counts twice
    kept = seq[bounds[j0]:bounds[-1] - scheds[0].dropped].tolist()
    assert sorted(counted) == sorted(kept)  # every record not dropped counts once
    tail = left % world
    assert scheds[0].dropped == (int(bounds[-1] - bounds[bounds.size - 1 - tail])
                                 if split == "drop_last" else 0)
    assert scheds[0].consumed(max(counts)) == (bounds.size - 1 if max(counts) else j0)


@pytest.mark.parametrize("split", ["even", "drop_last", "pad"])
def test_a_state_saved_at_the_last_step_resumes_at_the_next_epoch(split):
    """Issue 34: a drop_last state saved at the epoch's last step never rolled over, so the
    resumed run spent the next epoch with 0 steps."""
    plan = BatchPlan(batch_size=2, seed=0, split=split).bind(11)  # 6 batches, 4 ranks
    steps = len(plan.schedule(0, rank=0, world_size=4))
    state = plan.state(epoch=0, first=0, steps=steps, world_size=4, roll=True)
    assert (state["epoch"], state["records_seen"]) == (1, 0)
    epoch, at = plan.resume(state)
    assert len(plan.schedule(epoch, at, rank=0, world_size=4)) == steps
    last_but_one = plan.state(epoch=0, first=0, steps=steps - 1, world_size=4, roll=True)
    assert (last_but_one["epoch"], last_but_one["records_seen"]) == (0, 2 * 4 * (steps - 1))


def test_state_is_small_and_a_finished_epoch_moves_on():
    plan = BatchPlan(batch_size=256, seed=4).bind(10**6)
    state = plan.state(epoch=3, first=0, steps=100, world_size=8)
    assert len(json.dumps(state)) < 200
    assert state == {"epoch": 3, "seed": 4, "records_seen": 204800, "batches_seen": 800,
                     "max_tokens": None}
    done = plan.state(epoch=3, first=0, steps=10**6, world_size=8)
    assert done["records_seen"] == 10**6
    assert len(plan.schedule(3, done["records_seen"], rank=1, world_size=2)) == 0
    with pytest.raises(ValueError, match="seed"):
        BatchPlan(batch_size=256, seed=5).bind(10**6).resume(state)
    with pytest.raises(ValueError, match="max_tokens"):
        BatchPlan(max_tokens=512, seed=4).bind(np.ones(10**6)).resume(state)


def test_block_shuffle_keeps_reads_within_a_window_of_chunks():
    bounds = chunk_bounds(1000, [0, 300, 1000], chunk_records=100)
    assert bounds.tolist() == [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    order = epoch_order(1000, 7, 0, "block", bounds=bounds, window=3)
    assert sorted(order.tolist()) == list(range(1000))
    chunk = np.searchsorted(bounds, order, side="right") - 1
    for a in range(0, 900, 300):  # each window of 3 chunks: exactly 3 chunks, all of each
        win = chunk[a:a + 300]
        assert np.unique(win).size == 3 and np.all(np.bincount(win)[np.unique(win)] == 100)
    assert chunk[900:].tolist() == [chunk[900]] * 100
    full, block = (shuffle_quality(epoch_order(1000, 7, 0, m, bounds=bounds, window=3), bounds,
                                   span=300) for m in ("full", "block"))
    assert 0.9 < full["neighbour_distance"] < 1.1 and full["chunks_per_span"] == 10
    assert 0.3 < block["neighbour_distance"] < 1.1 and block["chunks_per_span"] == 3
    assert shuffle_quality(np.arange(1000))["neighbour_distance"] < 0.01


def _naive_budget(lens, max_tokens):
    """Greedy over ascending lengths in plain Python."""
    out, cur = [], []
    for i in sorted(range(len(lens)), key=lambda i: (lens[i], i)):
        if cur and (len(cur) + 1) * lens[i] > max_tokens:
            out.append(cur)
            cur = []
        cur.append(i)
    return out + ([cur] if cur else [])


@settings(max_examples=100, deadline=None)
@given(lens=st.lists(st.integers(1, 50), max_size=60), max_tokens=st.integers(1, 120))
def test_token_budget_batches_match_a_naive_greedy(lens, max_tokens):
    lens = np.array(lens, dtype=np.int64)
    seq, bounds = token_budget_batches(np.arange(lens.size), lens, max_tokens, bucket=10**6)
    got = [seq[a:b].tolist() for a, b in itertools.pairwise(bounds)]
    assert got == _naive_budget(lens.tolist(), max_tokens)
    for b in got:
        assert len(b) == 1 or len(b) * lens[b].max() <= max_tokens


def test_token_budget_wastes_less_padding_than_fixed_batches():
    rng = np.random.default_rng(0)
    lens = rng.lognormal(4, 1, 20000).astype(np.int64) + 1
    order = rng.permutation(lens.size)
    seq, bounds = token_budget_batches(order, lens, 4096, rng=rng)
    assert sorted(seq.tolist()) == list(range(lens.size))
    fixed = np.arange(0, lens.size + 32, 32).clip(max=lens.size)
    budget_waste, fixed_waste = padding_waste(lens, seq, bounds), padding_waste(lens, order, fixed)
    assert budget_waste < 0.1 and fixed_waste > 0.5


def test_corpus_dataset_resumes_on_another_world_size(tmp_path):
    torch_data = pytest.importorskip("genotok.torch_data")
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=60, fingerprint="fp") as w:
        w.append_batch([np.arange(1 + i % 7) for i in range(41)])

    def loaders(world, **kw):
        plan = torch_data.BatchPlan(seed=9, **kw)
        collate = torch_data.MLMCollator(torch_data.Collator(pad_token_id=55), n_regions=50,
                                         mask_token_id=56)
        return [torch_data.ResumableLoader(torch_data.CorpusIterableDataset(
            path, plan, collate, rank=r, world_size=world)) for r in range(world)]

    def run(ls, steps=None):
        its = [iter(x) for x in ls]
        out = []
        for _ in range(steps if steps is not None else 10**9):
            got = [next(it, None) for it in its]
            if all(g is None for g in got):
                break
            out.extend(g for g in got if g is not None)
        return out

    never = run(loaders(1, batch_size=3))
    first_run = loaders(3, batch_size=1, shuffle="full")
    part = run(first_run, steps=5)
    state = json.loads(json.dumps(first_run[0].state_dict()))
    assert state["records_seen"] == 15
    second = loaders(2, batch_size=3)
    for x in second:
        x.load_state_dict(state)
    rest = run(second)
    seen = [i for b in part + rest for i in b["index"].tolist()]
    assert seen == [i for b in never for i in b["index"].tolist()]
    # the masks depend on the batch's place in the global sequence only: same batches, same masks
    by_start = {tuple(b["index"].tolist()): b["labels"] for b in never}
    same = [b for b in rest if tuple(b["index"].tolist()) in by_start]
    assert same and all(bool((b["labels"] == by_start[tuple(b["index"].tolist())]).all())
                        for b in same)
    assert second[0].dataset.epoch == 1


def test_real_workers_follow_the_global_order(tmp_path):
    torch_data = pytest.importorskip("genotok.torch_data")
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=60, fingerprint="fp") as w:
        w.append_batch([np.arange(1 + i % 5) for i in range(37)])
    seen = {}
    for world, workers in [(1, 0), (2, 2)]:
        per_rank = []
        for r in range(world):
            ds = torch_data.CorpusIterableDataset(
                path, torch_data.BatchPlan(batch_size=4, seed=2, shuffle="block"),
                torch_data.Collator(pad_token_id=55), rank=r, world_size=world)
            ds.set_epoch(1)
            per_rank.append([b["index"].tolist()
                             for b in torch_data.ResumableLoader(ds, num_workers=workers)])
        steps = max(map(len, per_rank))
        seen[world] = [i for k in range(steps) for b in per_rank if k < len(b) for i in b[k]]
        assert ds.plan.order(1).tolist() == seen[world]
    assert seen[1] == seen[2]


def _gloo_rank(rank, world, port, path, steps, state, out):
    """One rank of a torch.distributed (gloo) job: ``steps`` batches (all when None)."""
    import itertools

    import torch.distributed as dist

    from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        ds = CorpusIterableDataset(path, BatchPlan(batch_size=2, seed=5, shuffle="block"),
                                   Collator(pad_token_id=55))  # rank, world size: torch.distributed
        loader = ResumableLoader(ds)
        if state is not None:
            loader.load_state_dict(state)
        seen = [b["index"].tolist() for b in itertools.islice(loader, steps)]
        everyone = [None] * world
        dist.all_gather_object(everyone, seen)
        if rank == 0:
            with open(out, "w") as fh:
                json.dump({"seen": everyone, "state": loader.state_dict()}, fh)
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_gloo_job_stopped_on_two_ranks_resumes_on_three(tmp_path):
    mp = pytest.importorskip("torch.multiprocessing")
    from genotok import Corpus
    from genotok.sampling import plan_for

    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=60, fingerprint="fp") as w:
        w.append_batch([np.arange(1 + i % 5) for i in range(29)])

    def job(world, steps, state):
        out = tmp_path / f"job{world}.json"
        mp.spawn(_gloo_rank, args=(world, _free_port(), str(path), steps, state, str(out)),
                 nprocs=world)
        return json.loads(out.read_text())

    first = job(2, 3, None)
    assert first["state"]["records_seen"] == 12 and first["state"]["world_size"] == 2
    rest = job(3, None, first["state"])

    def stream(seen):  # step by step, rank 0 first
        return [i for k in range(max(map(len, seen))) for r in seen if k < len(r) for i in r[k]]

    order = plan_for(Corpus.open(path), batch_size=2, seed=5, shuffle="block").order(0)
    assert stream(first["seen"]) + stream(rest["seen"]) == order.tolist()


def test_a_state_saved_before_elastic_states_still_resumes(tmp_path):
    torch_data = pytest.importorskip("genotok.torch_data")
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=60, fingerprint="fp") as w:
        w.append_batch([[i % 50] for i in range(10)])

    def loader(world=1):
        return torch_data.ResumableLoader(torch_data.CorpusIterableDataset(
            path, torch_data.BatchPlan(batch_size=3, seed=1), torch_data.Collator(pad_token_id=55),
            rank=0, world_size=world))

    old = {"epoch": 0, "batches_delivered": 2, "seed": 1, "rank": 0, "world_size": 1}
    again = loader()
    again.load_state_dict(old)
    rest = [i for b in again for i in b["index"].tolist()]
    assert rest == again.dataset.plan.order(0)[6:].tolist()
    with pytest.raises(ValueError, match="another world size"):
        loader(world=2).load_state_dict(old)


def test_batch_sampler_feeds_a_map_style_dataloader(tmp_path):
    torch_data = pytest.importorskip("genotok.torch_data")
    import torch

    from genotok import Corpus
    from genotok.sampling import BatchSampler, plan_for

    path = tmp_path / "c.gtokc"
    rng = np.random.default_rng(3)
    with CorpusWriter(path, vocab_size=60, fingerprint="fp") as w:
        w.append_batch([rng.integers(0, 50, int(rng.integers(1, 30))) for _ in range(80)])
    corpus = Corpus.open(path)
    plan = plan_for(corpus, max_tokens=64, seed=2)
    seen = []
    for rank in range(2):
        sampler = BatchSampler(plan, rank=rank, world_size=2)
        sampler.set_epoch(1)
        loader = torch.utils.data.DataLoader(torch_data.CorpusDataset(corpus), batch_sampler=sampler,
                                             collate_fn=torch_data.Collator(pad_token_id=55))
        for batch in loader:
            assert batch["input_ids"].numel() <= 64 or batch["input_ids"].shape[0] == 1
            seen.append(int(batch["attention_mask"].sum()))
        assert len(loader) == len(sampler)
    assert sum(seen) == corpus.n_tokens  # every record once over the two ranks


def test_batch_size_and_seed_checked_when_made(tmp_path):
    """Issue 32 item 14: batch_size=1.5 was accepted, and a negative seed failed only at the
    first iteration; every loader and dataset builds a BatchPlan, which checks them."""
    from genotok import Corpus
    from genotok.data import PretokenizedDataset
    from genotok.params import ParameterError

    for kw, word in [({"batch_size": 1.5}, "batch_size"), ({"batch_size": 0}, "batch_size"),
                     ({"batch_size": True}, "batch_size"), ({"max_tokens": 2.5}, "max_tokens"),
                     ({"batch_size": 2, "seed": -1}, "seed"),
                     ({"batch_size": 2, "seed": 0.5}, "seed")]:
        with pytest.raises(ParameterError, match=f"BatchPlan: {word} must be an integer"):
            BatchPlan(**kw).bind(np.ones(5, np.int64))
    assert BatchPlan(batch_size=2.0, seed=3).bind(5).schedule(0).records().size == 5
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1], [2, 3], [4]])
    with pytest.raises(ParameterError, match="iter_batches: batch_size must be an integer"):
        next(Corpus.open(path).iter_batches(1.5))
    with pytest.raises(ParameterError, match="PretokenizedDataset: seed"):
        PretokenizedDataset(path, shuffle=True, seed=-1)
    torch_data = pytest.importorskip("genotok.torch_data")
    collate = torch_data.Collator(pad_token_id=8)
    with pytest.raises(ParameterError, match="seed must be an integer in \\[0, inf\\)"):
        torch_data.CorpusIterableDataset(path, torch_data.BatchPlan(batch_size=2, seed=-1), collate)
    with pytest.raises(ParameterError, match="batch_size"):
        torch_data.CorpusIterableDataset(path, torch_data.BatchPlan(batch_size=1.5), collate)
