"""``genotok.mix``: exact weights per window, determinism, whole corpora per epoch, resume."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import CorpusWriter, GenotokError, UniverseMismatchError, mix
from genotok.kernels.mixing import interleave
from genotok.params import ParameterError

from .. import naive_mixing as naive

SIZES = (40, 25, 7)


def _write(path, n, tag, fingerprint="fp", values=False):
    with CorpusWriter(path, vocab_size=10_000, fingerprint=fingerprint,
                      values_dtype="float32" if values else None) as w:
        for i in range(n):  # record i of corpus `tag`: tokens [tag*1000 + i] * (1 + i % 3)
            ids = np.full(1 + i % 3, tag * 1000 + i)
            w.append(ids, values=np.full(ids.size, float(i)) if values else None)
    return path


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("mix")
    return [_write(d / f"c{k}.gtokc", n, k, values=True) for k, n in enumerate(SIZES)]


@settings(max_examples=40, deadline=None)
@given(a=st.lists(st.integers(1, 9), min_size=1, max_size=4), n=st.integers(0, 60))
def test_interleave_matches_the_oracle_and_holds_every_prefix(a, n):
    out = np.empty(n, np.int32)
    interleave(np.array(a, np.int64), sum(a), out)
    assert out.tolist() == naive.interleave(a, n)
    for i in range(1, n + 1):  # every prefix within one draw of each share
        for k, w in enumerate(a):
            assert abs(int((out[:i] == k).sum()) - w * i / sum(a)) < 1


@pytest.mark.parametrize("epoch", [0, 1, 5])
def test_weights_exact_in_every_window(paths, epoch):
    m = mix(paths, [0.5, 0.3, 0.2], seed=3, window=20)
    m.set_epoch(epoch)
    kinds = m.sources(np.arange(len(m)))[0]
    full = len(m) // 20 * 20
    per_window = np.stack([np.bincount(w, minlength=3) for w in kinds[:full].reshape(-1, 20)])
    assert (per_window == [10, 6, 4]).all()


def test_default_epoch_sees_every_corpus_whole(paths):
    m = mix(paths, [0.5, 0.3, 0.2], seed=0)
    assert len(m) == max(int(np.ceil(n / w)) for n, w in zip(SIZES, [0.5, 0.3, 0.2]))  # 83
    k, r = m.sources(np.arange(len(m)))
    for j, n in enumerate(SIZES):
        assert set(r[k == j].tolist()) == set(range(n))
    # the largest share per weight (corpus 1: 25 / 0.3) is seen once, no record twice
    assert sorted(r[k == 1].tolist()) == list(range(25))


def test_a_corpus_stream_repeats_nothing_before_it_is_whole(paths):
    m = mix(paths, [1, 1, 1], seed=4, length=30)  # 10 draws of each per epoch
    seen = {j: [] for j in range(3)}
    for e in range(4):
        m.set_epoch(e)
        k, r = m.sources(np.arange(len(m)))
        for j in range(3):
            seen[j] += r[k == j].tolist()
    for j, n in enumerate(SIZES):  # 40 draws: whole passes, then a part of one, no repeat
        counts = np.bincount(seen[j], minlength=n)
        assert len(seen[j]) == 40 and set(counts.tolist()) <= {40 // n, 40 // n + 1}
    assert sorted(seen[0]) == list(range(40))


def test_deterministic_in_seed_and_epoch(paths):
    a, b = mix(paths, [2, 1, 1], seed=7), mix(paths, [2, 1, 1], seed=7)
    idx = np.arange(len(a))
    assert all((x == y).all() for x, y in zip(a.sources(idx), b.sources(idx)))
    a.set_epoch(1)
    assert not (a.sources(idx)[1] == b.sources(idx)[1]).all()
    c = mix(paths, [2, 1, 1], seed=8)
    assert not (c.sources(idx)[1] == b.sources(idx)[1]).all()
    assert a.identity == b.identity != c.identity
    d = pickle.loads(pickle.dumps(a))
    assert d.epoch == 1 and all((x == y).all() for x, y in zip(a.sources(idx), d.sources(idx)))


def test_reads_are_the_corpora_records(paths):
    from genotok import Corpus

    corpora = [Corpus.open(p) for p in paths]
    m = mix(corpora, [0.5, 0.3, 0.2], seed=1)
    idx = np.array([5, 0, 77, 5, 40])
    batch = m.get_batch(idx, values=True)
    for row, vals, i in zip(batch, np.split(batch.values, batch.offsets[1:-1]), idx):
        k, r = m.source(int(i))
        assert row.tolist() == corpora[k][r].tolist() == m[int(i)].tolist()
        assert vals.tolist() == corpora[k].values(r).tolist() == m.values(int(i)).tolist()
    assert m[[0, 1]].to_list() == [m[0].tolist(), m[1].tolist()]
    assert len(m[2:5]) == 3 and m.get_batch([]).to_list() == []
    lens = m.epoch_lengths()
    assert lens[5] == len(m[5])
    with pytest.raises(IndexError):
        m[len(m)]


def test_bad_mixtures_are_refused(paths, tmp_path):
    with pytest.raises(GenotokError, match="weights"):
        mix(paths, [1, 1])
    with pytest.raises(GenotokError, match="> 0"):
        mix(paths, [1, 0, 1])
    with pytest.raises(ParameterError):
        mix(paths, [1, 1, 1], seed=-1)
    with pytest.raises(ParameterError):
        mix(paths, [1, 1, 1], length=True)
    other = _write(tmp_path / "o.gtokc", 3, 9, fingerprint="other")
    with pytest.raises(UniverseMismatchError, match="corpus 1"):
        mix([paths[0], other], [1, 1])
    empty = _write(tmp_path / "e.gtokc", 0, 9)
    with pytest.raises(GenotokError, match="no records"):
        mix([paths[0], empty], [1, 1])
    with pytest.raises(GenotokError, match="batch_size"):
        mix(paths, [1, 1, 1]).lengths


def test_weights_made_exact_fractions():
    from genotok.mixture import _integer_weights

    assert _integer_weights([0.5, 0.3, 0.2])[0].tolist() == [5, 3, 2]
    assert _integer_weights([2, 2])[0].tolist() == [1, 1]
    a, d = _integer_weights([1 / 3, 2 / 3])
    assert a.tolist() == [1, 2] and d == 3
    a, d = _integer_weights([1e-9, 1])  # a share below 2**-20 still draws (rounded up to it)
    assert a[0] == 1 and d == 2**20 + 1


# ------------------------------------------------------------------ the loaders


def _indices(batches):
    return [tuple(b["index"].tolist()) for b in batches]


def test_loader_reads_a_mixture_and_resumes_mid_epoch(paths):
    torch = pytest.importorskip("torch")
    from genotok.torch_data import Collator, CorpusIterableDataset, ResumableLoader

    def loader(**kw):
        ds = CorpusIterableDataset(mix(paths, [0.5, 0.3, 0.2], seed=2, window=10),
                                   Collator(pad_token_id=0), batch_size=10, shuffle=False)
        return ResumableLoader(ds, **kw)

    full = loader()
    epoch0, epoch1 = list(full), list(full)
    assert len(epoch0) == 9 and _indices(epoch0) != [] and _indices(epoch0) == _indices(epoch1)
    # each batch of 10 draws is one window: 5, 3, 2 tokens of the three corpora (tag*1000+i)
    for b in epoch0[:-1]:
        tags = (b["input_ids"][:, 0] // 1000).tolist()
        assert sorted(tags) == [0] * 5 + [1] * 3 + [2] * 2
    # epochs differ in their draws (not in their indices, which are positions)
    assert any(not torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(epoch0, epoch1))
    # stop after 4 batches of epoch 1, resume in a new loader with 2 workers
    run = loader()
    list(run)
    it = iter(run)
    got = [next(it) for _ in range(4)]
    state = run.state_dict()
    assert state["epoch"] == 1 and state["corpus"].startswith("mix-")
    again = loader(num_workers=2)
    again.load_state_dict(state)
    rest = list(again)
    assert [b["input_ids"].tolist() for b in got + rest] == \
        [b["input_ids"].tolist() for b in epoch1]
    # a state of another mixture is refused
    other = CorpusIterableDataset(mix(paths, [0.5, 0.3, 0.2], seed=9, window=10),
                                  Collator(pad_token_id=0), batch_size=10, shuffle=False)
    with pytest.raises(ValueError, match="another corpus"):
        other.load_state_dict(state)


def test_map_style_dataset_reads_a_mixture(paths):
    pytest.importorskip("torch")
    from genotok.torch_data import CorpusDataset

    m = mix(paths, [1, 1, 1], seed=0)
    ds = CorpusDataset(m, values=True)
    ids, vals = ds[3]
    assert len(ds) == len(m) and ids.tolist() == m[3].tolist()
    assert vals.tolist() == m.values(3).tolist()


def test_batches_within_and_across_blocks_read_the_same(paths, monkeypatch):
    from genotok import Corpus, mixture

    monkeypatch.setattr(mixture, "BLOCK", 16)
    corpora = [Corpus.open(p) for p in paths]
    m = mix(corpora, [0.5, 0.3, 0.2], seed=5)
    for epoch in (0, 1):
        m.set_epoch(epoch)
        for idx in ([0, 3, 15], [17, 16, 30], [10, 20], [len(m) - 1], list(range(len(m)))):
            got = m.get_batch(idx, values=True)
            want = [corpora[k][r].tolist() for k, r in zip(*m.sources(idx))]
            vals = [corpora[k].values(r).tolist() for k, r in zip(*m.sources(idx))]
            assert got.to_list() == want
            assert np.split(got.values, got.offsets[1:-1]) and \
                [v.tolist() for v in np.split(got.values, got.offsets[1:-1])] == vals
            assert m.get_batch(idx).to_list() == want  # the block cached with values, read without


def test_the_lightning_data_module_reads_a_mixture(paths):
    pytest.importorskip("torch")
    pytest.importorskip("lightning")
    from genotok.lightning import CorpusDataModule
    from genotok.torch_data import Collator

    m = mix(paths, [0.5, 0.3, 0.2], seed=2, window=10)
    dm = CorpusDataModule(m, Collator(pad_token_id=0), batch_size=10, shuffle=False)
    batches = list(dm.train_dataloader())
    assert len(batches) == -(-len(m) // 10)
    firsts = [b["input_ids"][:, 0].tolist() for b in batches]
    assert firsts == [[int(m[i][0]) for i in range(j, min(j + 10, len(m)))]
                      for j in range(0, len(m), 10)]
    assert dm.state_dict()["epoch"] == 0


def test_pass_orders_depend_on_the_pass_alone_and_are_permutations():
    from genotok.mixture import _pass_orders

    many = _pass_orders(3, 1, np.arange(50), 9)
    assert (np.sort(many, axis=1) == np.arange(9)).all()
    assert (_pass_orders(3, 1, np.array([17]), 9)[0] == many[17]).all()  # however grouped
    assert len({tuple(r) for r in many.tolist()}) > 40  # passes differ
    assert not (_pass_orders(4, 1, np.arange(50), 9) == many).all()


def test_a_tiny_corpus_upweighted_is_cheap(tmp_path, paths):
    one = _write(tmp_path / "one.gtokc", 1, 5)
    m = mix([one, paths[0]], [0.5, 0.5], seed=0, length=100_000)  # 50,000 passes of 1 record
    k, r = m.sources(np.arange(len(m)))
    assert (r[k == 0] == 0).all() and int((k == 0).sum()) == 50_000
