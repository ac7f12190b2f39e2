"""``genotok.mix``: exact weights per window, determinism, whole corpora per epoch, resume."""

from __future__ import annotations

import json
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
    with pytest.raises(GenotokError, match=r"in \(0, inf\)"):
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
    from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset, ResumableLoader

    def loader(**kw):
        ds = CorpusIterableDataset(mix(paths, [0.5, 0.3, 0.2], seed=2, window=10),
                                   BatchPlan(batch_size=10, shuffle=False),
                                   Collator(pad_token_id=0))
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
                                  BatchPlan(batch_size=10, shuffle=False),
                                  Collator(pad_token_id=0))
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
    from genotok.sampling import BatchPlan
    from genotok.torch_data import Collator

    m = mix(paths, [0.5, 0.3, 0.2], seed=2, window=10)
    dm = CorpusDataModule(m, BatchPlan(batch_size=10, shuffle=False), Collator(pad_token_id=0))
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


# ------------------------------------------------------------------ issue 43: hostile inputs


def test_huge_weights_keep_their_ratio(paths):
    # [1.7e308, 1e308] summed to inf: every weight became 0 and the draws 50/50
    m = mix(paths[:2], [1.7e308, 1e308], seed=0, length=10_000)
    assert np.allclose(m.weights, [1.7 / 2.7, 1 / 2.7]) and np.isfinite(m.weights).all()
    kinds = m.sources(np.arange(len(m)))[0]
    assert abs((kinds == 0).mean() - 1.7 / 2.7) < 1e-3
    tiny = mix(paths[:2], [1.7e-308, 1e-308], seed=0, length=10_000)  # subnormal-ish: same
    assert np.allclose(tiny.weights, m.weights)


def test_a_window_that_cannot_hold_the_weights_is_refused(paths):
    # 1:1 weights over a window of 3 held 2:1 and 1:2: a window is a multiple of the grid
    with pytest.raises(GenotokError, match="multiple of 2"):
        mix(paths[:2], [1, 1], window=3)
    with pytest.raises(GenotokError, match="multiple of 10"):
        mix(paths, [0.5, 0.3, 0.2], window=15)
    m = mix(paths[:2], [1, 1], window=4, length=40)
    kinds = m.sources(np.arange(40))[0].reshape(-1, 4)
    assert ((kinds == 0).sum(axis=1) == 2).all()


def test_a_seed_beyond_uint64_is_refused_up_front(paths):
    for seed in (2**64, 2**63):  # genotok's integers are 64-bit signed (genotok.params)
        with pytest.raises(ParameterError, match="seed"):
            mix(paths, [1, 1, 1], seed=seed)
    m = mix(paths, [1, 1, 1], seed=2**63 - 1)  # the largest one reads
    assert m[0] is not None


def test_a_tiny_weight_or_a_huge_length_draws_lazily(paths):
    import tracemalloc

    tracemalloc.start()
    try:
        m = mix(paths[:2], [1, 1e-6], seed=0)  # an epoch of ~10^8 draws (every corpus whole)
        assert len(m) > 10**7
        rows = [m[0], m[len(m) - 1], m[len(m) // 2]]
        big = mix(paths[:2], [1, 1], seed=0, length=2**40)
        rows += [big[0], big[2**40 - 1]]
        assert big.get_batch(np.arange(2**39, 2**39 + 64)).data.size > 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(r.size for r in rows) and peak < 200 * 2**20  # was: gigabytes per epoch
    with pytest.raises(GenotokError, match="epoch_lengths"):
        big.epoch_lengths()
    with pytest.raises(GenotokError, match="at most 16,777,216 draws per window"):
        mix(paths[:2], [1, 1], window=2**26, length=2**40)
    torch_data = pytest.importorskip("genotok.torch_data")
    with pytest.raises(GenotokError, match="at most 268,435,456"):  # a loader orders an epoch
        torch_data.CorpusIterableDataset(big, torch_data.BatchPlan(batch_size=8, shuffle=False),
                                         torch_data.Collator(pad_token_id=0))


@settings(max_examples=25, deadline=None)
@given(a=st.lists(st.integers(1, 7), min_size=1, max_size=3), n=st.integers(1, 200))
def test_one_period_of_the_interleave_gives_the_whole_epoch(paths, a, n):
    # the draws are made from one period of D slots; unshuffled, the epoch is exactly the
    # interleave of the whole epoch (the oracle) and each corpus's draws number 0, 1, 2, …
    m = mix(paths[:len(a)], a, seed=0, length=n, shuffle=False)
    k, r = m.sources(np.arange(n))
    assert k.tolist() == naive.interleave([x // np.gcd.reduce(a) for x in a], n)
    for j in range(len(a)):
        assert r[k == j].tolist() == [i % SIZES[j] for i in range(int((k == j).sum()))]


def test_lazy_windows_keep_exact_counts_and_whole_passes(paths):
    # the draws of a window are made when read: an epoch read in pieces equals one read whole
    m = mix(paths, [0.5, 0.3, 0.2], seed=3, window=20)
    m.set_epoch(2)
    whole = m.sources(np.arange(len(m)))
    parts = [m.sources(np.arange(a, min(a + 7, len(m)))) for a in range(0, len(m), 7)]
    assert (np.concatenate([p[0] for p in parts]) == whole[0]).all()
    assert (np.concatenate([p[1] for p in parts]) == whole[1]).all()


# ------------------------------------------------------------------ issue 41: mixtures on disk


def test_write_mixture_then_mix_the_run_folder_draws_the_same(tmp_path):
    import json

    run = tmp_path / "run"
    (run / "peaks").mkdir(parents=True)
    a = _write(run / "peaks" / "p.gtokc", 30, 1)
    b = _write(tmp_path / "elsewhere.gtokc", 12, 2)
    out = genotok_write(run, {"peaks": a, "cells": b}, {"peaks": 0.6, "cells": 0.4}, seed=7)
    doc = json.loads(out.read_text())
    assert doc == {"format": "genotok-mixture", "version": 1, "seed": 7,
                   "weights": {"peaks": 0.6, "cells": 0.4},
                   "datasets": [{"name": "peaks", "path": "peaks/p.gtokc", "fingerprint": "fp"},
                                {"name": "cells", "path": str(b.resolve()),
                                 "fingerprint": "fp"}]}
    on_disk, direct = mix(run), mix([a, b], [0.6, 0.4], seed=7)
    assert on_disk.identity == direct.identity and on_disk.dataset_names == ["peaks", "cells"]
    for e in (0, 1):
        on_disk.set_epoch(e), direct.set_epoch(e)
        idx = np.arange(len(direct))
        assert all((x == y).all() for x, y in zip(on_disk.sources(idx), direct.sources(idx)))
    assert mix(out).identity == direct.identity  # the file itself names the run too
    moved = tmp_path / "moved"
    run.rename(moved)  # paths inside the folder are relative: the run folder moves whole
    assert mix(moved).identity != "" and len(mix(moved)) == len(direct)


def test_bad_mixture_files_are_refused(tmp_path, paths):
    import json

    from genotok import write_mixture

    with pytest.raises(GenotokError, match="no mixture.json"):
        mix(tmp_path)
    with pytest.raises(GenotokError, match="neither"):
        mix(tmp_path, [1])
    other = _write(tmp_path / "o.gtokc", 3, 9, fingerprint="other")
    with pytest.raises(UniverseMismatchError):
        write_mixture(tmp_path, {"a": paths[0], "o": other}, [1, 1])
    with pytest.raises(GenotokError, match="one weight per dataset"):
        write_mixture(tmp_path, {"a": paths[0]}, {"b": 1})
    with pytest.raises(GenotokError, match=r"in \(0, inf\)"):
        write_mixture(tmp_path, {"a": paths[0]}, {"a": float("nan")})
    with pytest.raises(ParameterError):
        write_mixture(tmp_path, {"a": paths[0]}, [1], seed=2**64)
    with pytest.raises(GenotokError, match="missing"):
        write_mixture(tmp_path, {"a": tmp_path / "missing"}, [1])
    assert not (tmp_path / "mixture.json").exists()  # nothing written by a refusal
    write_mixture(tmp_path, {"a": paths[0], "b": paths[1]}, [1, 2], seed=3)
    f = tmp_path / "mixture.json"
    good = json.loads(f.read_text())
    for bad, match in (({**good, "format": "x"}, "not a genotok mixture"),
                       ({**good, "version": 2}, "version"),
                       ({**good, "seed": -1}, "seed"),
                       ({**good, "weights": {"a": 1}}, "same"),
                       ({**good, "weights": {"a": 1, "b": "2"}}, "weight of 'b'"),
                       ({**good, "datasets": [{"name": "a"}]}, "lacks")):
        f.write_text(json.dumps(bad))
        with pytest.raises(GenotokError, match=match):
            mix(tmp_path)
    f.write_text("{not json")
    with pytest.raises(GenotokError, match="JSON"):
        mix(tmp_path)
    f.write_text(json.dumps({**good, "datasets": [{**good["datasets"][0], "fingerprint": "zz"},
                                                  good["datasets"][1]]}))
    with pytest.raises(UniverseMismatchError, match="re-tokenized"):
        mix(tmp_path)


def genotok_write(*args, **kwargs):
    from genotok import write_mixture

    return write_mixture(*args, **kwargs)


# ------------------------------------------------------------------ every store's output


def _store_formats():
    from genotok.formats.stores import stores

    return sorted(n for n, s in stores().items() if s.writes_files and n != "corpus")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    import genotok
    from genotok import Tokenizer, pretokenize

    pytest.importorskip("torch")  # the test reads them through the torch loaders
    pytest.importorskip("pyarrow")  # the Parquet and Arrow stores write with it
    d = tmp_path_factory.mktemp("stores")
    ex = genotok.examples_dir()
    tok = Tokenizer.from_bed(ex / "universe.bed")
    files = sorted((ex / "peaks").iterdir())
    out = {}
    for fmt in ["corpus"] + _store_formats():
        out[fmt] = d / fmt
        pretokenize(files, tok, out[fmt], progress=False, format=fmt)
    return out


@pytest.mark.parametrize("fmt", _store_formats())
def test_mix_and_the_loaders_read_every_store(outputs, fmt, tmp_path):
    """The training room reads any store through the Corpus reader API: a mixture of a store's
    output draws the records the corpus store holds for the same inputs."""
    torch = pytest.importorskip("torch")
    from genotok import Corpus, write_mixture
    from genotok.torch_data import BatchPlan, Collator, CorpusIterableDataset

    ref = Corpus.open(outputs["corpus"])
    other = Corpus.open(outputs[fmt])
    m = mix([outputs["corpus"], outputs[fmt]], [1, 1], seed=3)
    k, r = m.sources(np.arange(len(m)))
    for i in range(len(m)):
        assert m[i].tolist() == ref[int(r[i])].tolist()  # both corpora hold the same records
    write_mixture(tmp_path, {"ref": outputs["corpus"], fmt: outputs[fmt]}, [1, 1], seed=3)
    assert mix(tmp_path).identity == m.identity
    ds = CorpusIterableDataset(other, BatchPlan(batch_size=2, seed=1), Collator(pad_token_id=0))
    want = CorpusIterableDataset(ref, BatchPlan(batch_size=2, seed=1), Collator(pad_token_id=0))
    for a, b in zip(ds, want, strict=True):
        assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["index"], b["index"])
    from genotok.data import PretokenizedDataset
    from genotok.windows import windows

    assert [x.tolist() for x in PretokenizedDataset(outputs[fmt])] == \
        [x.tolist() for x in PretokenizedDataset(outputs["corpus"])]  # the manifest's order
    for got, exp in zip(windows(other, 16, 4, seed=2), windows(ref, 16, 4, seed=2)):
        assert (got == exp).all()


def test_a_remote_run_folder_mixes_as_a_local_one(tmp_path, paths):
    """A run written to s3:// (moto on 127.0.0.1): write_mixture there, mix(URL) reads it."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from genotok import write_manifest, write_mixture

    from .._s3 import moto_s3

    with moto_s3("bucket") as (endpoint, client):
        for name, src in (("a", paths[0]), ("b", paths[1])):
            d = tmp_path / name
            d.mkdir()
            (d / "part.gtokc").write_bytes(src.read_bytes())
            write_manifest([d / "part.gtokc"], d)
            for f in d.iterdir():
                client.put_object(Bucket="bucket", Key=f"run/{name}/{f.name}",
                                  Body=f.read_bytes())
        opts = {"cache_dir": str(tmp_path / "cache"),
                "storage_options": {"key": "testing", "secret": "testing",
                                    "client_kwargs": {"endpoint_url": endpoint,
                                                      "region_name": "us-east-1"}}}
        out = write_mixture("s3://bucket/run", {"a": "s3://bucket/run/a", "b": "b"}, [2, 1],
                            seed=5, open_kwargs=opts)
        assert out == "s3://bucket/run/mixture.json"
        doc = json.loads(client.get_object(Bucket="bucket", Key="run/mixture.json")["Body"]
                         .read())
        assert [e["path"] for e in doc["datasets"]] == ["a", "b"]  # relative to the folder
        remote = mix("s3://bucket/run", open_kwargs=opts)
        local = mix([tmp_path / "a", tmp_path / "b"], [2, 1], seed=5)
        assert remote.identity == local.identity
        assert remote[:len(remote)].to_list() == local[:len(local)].to_list()
        with pytest.raises(GenotokError, match="no mixture.json"):
            mix("s3://bucket/elsewhere", open_kwargs=opts)


# ---- issue 43 round-4 campaign (tests/campaigns): weights and mixture files checked first
@pytest.mark.parametrize("weights", [[True, True], ["1", "2"], [1 + 0j, 1], [[1], [2]],
                                     {"a": 1}], ids=["bool", "text", "complex", "nested", "dict"])
def test_weights_are_numbers_checked_before_conversion(tmp_path, weights):
    paths = []
    for name in ("a", "b"):
        paths.append(str(tmp_path / f"{name}.gtokc"))
        with CorpusWriter(paths[-1], vocab_size=9, fingerprint="fp") as w:
            w.append_batch([[1]] * 3)
    with pytest.raises(GenotokError, match="weights"):
        mix(paths, weights)


@pytest.mark.parametrize("how", ["deep", "fifo", "seed-2**63"])
def test_a_tampered_mixture_file_is_refused_naming_it(tmp_path, how):
    import os

    from genotok import write_mixture

    p = tmp_path / "a.gtokc"
    with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1]] * 3)
    write_mixture(tmp_path, {"a": str(p)}, {"a": 1.0})
    mf = tmp_path / "mixture.json"
    if how == "deep":
        mf.write_text("[" * 100_000 + "]" * 100_000)
    elif how == "fifo":  # refused at once, never waited on
        mf.unlink()
        os.mkfifo(mf)
    else:
        doc = json.loads(mf.read_text())
        doc["seed"] = 2**63
        mf.write_text(json.dumps(doc))
    with pytest.raises(GenotokError, match="mixture.json"):
        mix(tmp_path)
