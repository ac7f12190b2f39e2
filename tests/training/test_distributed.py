"""Real torch.distributed (gloo) on 2 and 3 processes over data that does not divide evenly:
every rank makes as many steps, a collective per step never waits for a finished rank, and the
records of weight 1 are the epoch's records exactly once (issue 34)."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed.nn  # noqa: E402,F401  (before any group: see _rank_main's end)

from genotok import CorpusWriter
from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

pytestmark = pytest.mark.slow

N = 500


def _rank_main(rank: int, world: int, port: int, path: str, out: str) -> None:
    """One rank: each split, a DDP model trained step by step, an all-reduce per step; a
    loader state saved at the epoch's last step resumed into a whole next epoch."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.EmbeddingBag(60, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    report = {}
    for split in ("even", "pad", "drop_last"):
        ds = CorpusIterableDataset(path, BatchPlan(batch_size=64, seed=1, split=split),
                                   Collator(pad_token_id=0))  # rank, world size: torch.distributed
        loader = ResumableLoader(ds)
        seen, steps, states = [], 0, []
        for batch in loader:
            w = batch["sample_weight"]
            loss = (model(batch["input_ids"]).pow(2).mean(1) * w).sum() / w.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()  # DDP's gradient all-reduce: hangs or fails if a rank has finished
            opt.step()
            steps_all = torch.tensor([steps], dtype=torch.int64)
            dist.all_reduce(steps_all, op=dist.ReduceOp.MAX)
            assert int(steps_all) == steps  # every rank at the same step
            seen += batch["index"][w > 0].tolist()
            steps += 1
            states.append(loader.state_dict())
        again = ResumableLoader(CorpusIterableDataset(path,
                                                      BatchPlan(batch_size=64, seed=1, split=split),
                                                      Collator(pad_token_id=0)))
        again.load_state_dict(states[-1])  # saved at the last step: the next epoch, whole
        report[split] = {"seen": seen, "steps": steps, "dropped": ds.dropped,
                         "last_state": states[-1], "next_epoch_steps": len(list(again)),
                         "epoch_steps": len(ds)}
    dist.barrier()
    del model  # its reducer holds the group: then destroy_process_group stops gloo's threads
    dist.destroy_process_group()
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "uneven.gtokc"
    rng = np.random.default_rng(0)
    with CorpusWriter(path, vocab_size=60, fingerprint="fp") as w:
        for _ in range(N):
            w.append(rng.integers(1, 50, int(rng.integers(1, 9))))
    return path


@pytest.mark.parametrize("world", [2, 3])
def test_gloo_ranks_step_together_on_uneven_data(uneven, tmp_path, world):
    import torch.multiprocessing as mp

    mp.spawn(_rank_main, args=(world, _free_port(), str(uneven), str(tmp_path)), nprocs=world)
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    n_batches = -(-N // 64)  # 8 global batches
    for split in ("even", "pad", "drop_last"):
        got = [r[split] for r in reports]
        steps = {g["steps"] for g in got}
        assert len(steps) == 1, (split, steps)  # as many steps on every rank
        want = n_batches // world if split == "drop_last" else -(-n_batches // world)
        assert steps == {want}
        seen = [i for g in got for i in g["seen"]]
        assert len(seen) == len(set(seen))  # no record of weight 1 twice
        assert len(seen) == N - got[0]["dropped"]
        assert got[0]["dropped"] == (sum(min(64, N - 64 * j) for j in
                                         range(n_batches - n_batches % world, n_batches))
                                     if split == "drop_last" else 0)
        for g in got:  # the state at the last step is the next epoch's start, which is whole
            assert (g["last_state"]["epoch"], g["last_state"]["records_seen"]) == (1, 0)
            assert g["next_epoch_steps"] == g["epoch_steps"] == want



GROUP_FREED = """
import os, socket
import torch, torch.distributed as dist
import torch.distributed.nn  # before any group, as the docs' DDP recipe does

def gloo_threads():
    names = (open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))
    return [n for n in names if "gloo" in n]

def train(port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.EmbeddingBag(10, 2))
    model(torch.tensor([[1, 2]])).sum().backward()
    dist.all_reduce(torch.ones(1))
    running = gloo_threads()
    del model
    dist.destroy_process_group()
    return running, gloo_threads()

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
running, left = train(port)
print(len(running), len(left))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_ddp_recipes_way_out_stops_gloo_threads(tmp_path):
    """The docs' DDP recipe imports torch.distributed.nn before the group and lets the model go
    before destroy_process_group; then the group's gloo threads stop there, not at the
    interpreter's exit, where a thread freeing a tensor needs the GIL and aborts the process
    now and then (the SIGABRT CI met). DistributedDataParallel imports torch.distributed.nn,
    whose functions bind the world group into their defaults when imported after
    init_process_group; the model's reducer holds the group too, and freed after
    destroy_process_group it would join gloo's threads holding the GIL (a deadlock, seen)."""
    import subprocess
    import sys

    script = tmp_path / "group.py"
    script.write_text(GROUP_FREED)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    running, left = map(int, run.stdout.split()[-2:])
    assert running > 0, "no gloo thread seen while the group ran: the check checks nothing"
    assert left == 0, f"{left} gloo threads outlived destroy_process_group"
