"""Round 4 of "trust nothing" (issue 43), surfaces S4 (mixtures) and S5 (packing and the
collators): odd weights, seeds, lengths and windows, corpora of no records or of another
universe, tampered ``mixture.json`` files; odd ids (float, bool, negative, beyond int64,
nested, text, None), odd pad / mask ids and probabilities, huge sequence lengths. The oracle
(:mod:`tests.campaigns._oracle`): the correct draws or batch, or a ``GenotokError`` naming the
argument or the file; memory-risky attacks run in a subprocess under a 2 GiB address-space
limit. Run with ``python -m pytest -m slow -p no:xdist tests/campaigns``."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from genotok import CorpusWriter, GenotokError, mix, write_mixture
from genotok.mixture import read_mixture
from genotok.packing import pack

from ._oracle import in_subprocess, known_defects, refused_any, right_or_refused

pytestmark = pytest.mark.slow

#: attacks that hit a defect not fixed yet (strict xfails; each names the defect)
KNOWN: dict = {}


@pytest.fixture(autouse=True)
def _known(request):
    known_defects(request, KNOWN)


def _corpus(path, n: int, fingerprint: str = "fp", vocab: int = 50, start: int = 0) -> str:
    with CorpusWriter(path, vocab_size=vocab, fingerprint=fingerprint) as w:
        for i in range(n):
            w.append([start + i % 40], name=f"r{i}")
    return str(path)


@pytest.fixture
def two(tmp_path):
    return [_corpus(tmp_path / "a.gtokc", 100), _corpus(tmp_path / "b.gtokc", 100, start=1)]


def _counts(m, k: int = 2) -> list[int]:
    kinds = m.sources(np.arange(min(len(m), m.window)))[0]
    return [int((kinds == j).sum()) for j in range(k)]


# ------------------------------------------------------------------------ S4: weights
WEIGHTS = {  # weights: the shares a correct mixture draws, or None when they must be refused
    "inf": ([np.inf, 1], None), "nan": ([np.nan, 1], None), "zero": ([0, 1], None),
    "negative": ([-1, 2], None), "neg-zero": ([-0.0, 1], None),
    "subnormal-both": ([5e-324, 5e-324], [0.5, 0.5]),
    "subnormal-one": ([1, 5e-324], "tiny"), "huge-both": ([1.7e308, 1e308], [0.63, 0.37]),
    "huge-equal": ([1e308, 1e308], [0.5, 0.5]), "ratio-1e6": ([1e6, 1], "tiny"),
    "ratio-1e-6": ([1, 1e-6], "tiny"), "third": ([1, 2], [1 / 3, 2 / 3]),
    "bool": ([True, True], None), "strings": (["1", "2"], None), "none": ([1, None], None),
    "complex": ([1 + 0j, 1], None), "nested": ([[1], [2]], None), "dict": ({"a": 1}, None),
    "one-weight": ([1], None), "three-weights": ([1, 1, 1], None), "empty": ([], None),
    "uint8": (np.array([1, 3], np.uint8), [0.25, 0.75]), "int-huge": ([2**70, 2**70], [0.5, 0.5]),
}


@pytest.mark.parametrize("how", list(WEIGHTS))
def test_mixture_weights(how, two):
    w, want = WEIGHTS[how]
    if want is None:
        refused_any(lambda: mix(two, w, seed=1), "weight")
        return
    if want == "tiny":  # a share finer than the grid: rounded to it, the epoch stays lazy
        out = in_subprocess(f"""
            from genotok import mix
            m = mix({two!r}, {w!r}, seed=1)
            _attack(lambda: (m[0], m[len(m) - 1], m.get_batch(range(64))))
            print("OK")""")
        assert out == "OK"
        return
    m = mix(two, w, seed=1)
    assert np.allclose(m.weights, want, atol=0.005)
    share = np.array(_counts(m)) / min(len(m), m.window)
    assert np.allclose(share, want, atol=0.005)


SEEDS = {"bool": True, "float": 1.0, "float-frac": 1.5, "2**63": 2**63, "2**63-1": 2**63 - 1,
         "2**64": 2**64, "-1": -1, "str": "1", "np-uint64-top": np.uint64(2**63 + 1),
         "np-int64": np.int64(5), "none": None}


@pytest.mark.parametrize("how", list(SEEDS))
def test_mixture_seed(how, two):
    seed = SEEDS[how]
    ok = how in ("2**63-1", "np-int64", "none", "float")  # an integral float is an integer
    if not ok:
        refused_any(lambda: mix(two, [1, 1], seed=seed), "seed")
        refused_any(lambda: write_mixture(os.path.dirname(two[0]), two, [1, 1], seed=seed), "seed")
        return
    m = mix(two, [1, 1], seed=seed)
    assert m[0].tolist() == mix(two, [1, 1], seed=seed)[0].tolist()
    m.get_batch([0, len(m) - 1])


LENGTHS = {"0": 0, "-1": -1, "1": 1, "2**40": 2**40, "2**63-1": 2**63 - 1, "2**63": 2**63,
           "float": 10.0, "bool": True, "str": "10"}


@pytest.mark.parametrize("how", list(LENGTHS))
def test_mixture_length(how, two):
    n = LENGTHS[how]
    if how in ("0", "-1", "2**63", "bool", "str"):
        refused_any(lambda: mix(two, [1, 1], seed=0, length=n), "length")
        return
    out = in_subprocess(f"""
        from genotok import mix
        m = mix({two!r}, [1, 1], seed=0, length={n})
        assert len(m) == {n}
        _attack(lambda: (m[0], m[len(m) - 1], m.get_batch([0, len(m) - 1]), m.set_epoch(3),
                         m[len(m) - 1]))""")
    assert out == "OK"


WINDOWS = {"3-for-1:1": (3, [1, 1], None), "0": (0, [1, 1], None),
           "huge": (2**25, [1, 1], "lazy"),  # larger than the epoch: the epoch is one window
           "2": (2, [1, 1], [1, 1]), "6-for-1:2": (6, [1, 2], [2, 4]), "bool": (True, [1], None),
           "float": (4.0, [1, 1], [2, 2]), "5-for-2:3": (5, [0.4, 0.6], [2, 3]),
           "2**24": (2**24, [1, 1], "lazy")}


@pytest.mark.parametrize("how", list(WINDOWS))
def test_mixture_window(how, two):
    window, w, want = WINDOWS[how]
    corpora = two[:len(w)]
    if want is None:
        refused_any(lambda: mix(corpora, w, seed=0, window=window), "window")
        return
    if want == "lazy":
        assert in_subprocess(f"""
            from genotok import mix
            m = mix({corpora!r}, {w!r}, seed=0, window={window},
                    length=2**30 if {window} < 2**24 else None)
            _attack(lambda: m[0])""") == "OK"
        return
    m = mix(corpora, w, seed=0, window=window, length=int(window) * 7)
    kinds = m.sources(np.arange(len(m)))[0]
    for lo in range(0, len(m), int(window)):
        assert [int((kinds[lo:lo + int(window)] == j).sum()) for j in range(len(w))] == want


@pytest.mark.parametrize("how", ["empty", "other-universe", "missing-path", "directory-no-manifest",
                                 "one-record", "mixture-of-mixture", "same-twice", "no-corpora",
                                 "corpus-object"])
def test_mixture_corpora(how, two, tmp_path):
    from genotok import Corpus
    if how == "empty":
        refused_any(lambda: mix([two[0], _corpus(tmp_path / "e.gtokc", 0)], [1, 1]), "e.gtokc", "record")
    elif how == "other-universe":
        refused_any(lambda: mix([two[0], _corpus(tmp_path / "o.gtokc", 3, "other")], [1, 1]), "o.gtokc")
    elif how == "missing-path":
        refused_any(lambda: mix([two[0], tmp_path / "nope.gtokc"], [1, 1]), "nope.gtokc")
    elif how == "directory-no-manifest":
        (tmp_path / "d").mkdir()
        refused_any(lambda: mix([two[0], tmp_path / "d"], [1, 1]), "d")
    elif how == "one-record":
        m = mix([_corpus(tmp_path / "one.gtokc", 1)], [1], seed=3, length=5)
        assert [m[i].tolist() for i in range(5)] == [[0]] * 5
    elif how == "mixture-of-mixture":
        inner = mix(two, [1, 1], seed=0)
        right_or_refused(lambda: len(mix([inner, two[0]], [1, 1], seed=0)) > 0, True, "mix")
    elif how == "same-twice":
        m = mix([two[0], two[0]], [1, 1], seed=0)
        assert sorted(m.get_batch(range(len(m))).to_list()) == sorted(
            [[i % 40] for i in range(100)] * 2)
    elif how == "no-corpora":
        refused_any(lambda: mix([], []), "corpora")
    else:
        c = Corpus.open(two[0])
        assert len(mix([c], [2.0], seed=0)) == 100


# ------------------------------------------------------------------ S4: mixture files
def _doc(run, two) -> dict:
    write_mixture(run, {"a": two[0], "b": two[1]}, {"a": 1, "b": 3}, seed=5)
    return json.loads((run / "mixture.json").read_text())


FILES = {
    "not-json": b"{", "not-utf8": b"\xff\xfe", "list": b"[]", "deep": b"[" * 100_000 + b"]" * 100_000,
    "format": lambda d: d.update(format="other"), "version-2": lambda d: d.update(version=2),
    "version-str": lambda d: d.update(version="1"), "seed-str": lambda d: d.update(seed="5"),
    "seed-neg": lambda d: d.update(seed=-1), "seed-2**63": lambda d: d.update(seed=2**63),
    "seed-2**64": lambda d: d.update(seed=2**64), "seed-float": lambda d: d.update(seed=5.0),
    "seed-bool": lambda d: d.update(seed=True), "weights-list": lambda d: d.update(weights=[1, 3]),
    "weight-zero": lambda d: d["weights"].update(a=0), "weight-inf": lambda d: d["weights"].update(a=1e309),
    "weight-str": lambda d: d["weights"].update(a="1"), "weight-bool": lambda d: d["weights"].update(a=True),
    "weight-missing": lambda d: d["weights"].pop("a"), "weight-extra": lambda d: d["weights"].update(c=1),
    "datasets-empty": lambda d: d.update(datasets=[]), "dataset-int": lambda d: d["datasets"].append(7),
    "dataset-path-int": lambda d: d["datasets"][0].update(path=7),
    "dataset-path-missing": lambda d: d["datasets"][0].update(path="gone.gtokc"),
    "dataset-name-dup": lambda d: d["datasets"][1].update(name="a"),
    "fingerprint-changed": lambda d: d["datasets"][0].update(fingerprint="zz"),
    "path-dotdot": lambda d: d["datasets"][0].update(path="../../../../../../etc/passwd"),
    "path-devzero": lambda d: d["datasets"][0].update(path="/dev/zero"),
    "fifo": "fifo", "directory": "directory", "huge-padding": b" " * (64 << 20) + b"{}",
}


@pytest.mark.parametrize("how", list(FILES))
def test_tampered_mixture_files(how, two, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    doc = _doc(run, two)
    mf = run / "mixture.json"
    attack = FILES[how]
    if attack == "fifo":
        mf.unlink()
        os.mkfifo(mf)
    elif attack == "directory":
        mf.unlink()
        mf.mkdir()
    elif isinstance(attack, bytes):
        mf.write_bytes(attack)
    else:
        attack(doc)
        mf.write_text(json.dumps(doc))
    if how in ("fifo", "huge-padding", "deep"):  # a hang or a memory blow-up would show here
        out = in_subprocess(f"""
            from genotok import mix
            _attack(lambda: mix({str(run)!r}))""", timeout=60)
        assert out.startswith("REFUSED") and "mixture.json" in out, out
        return
    if how in ("weight-extra",):
        refused_any(lambda: mix(run), "mixture.json")
        return
    refused_any(lambda: mix(run), "mixture.json", "mix: dataset")
    refused_any(lambda: read_mixture(run) and mix(run), "mixture.json", "mix: dataset")


# ----------------------------------------------------------------- S5: packing, collators
torch = pytest.importorskip("torch")
from genotok.torch_data import Collator, MLMCollator, PackingCollator, RTDCollator  # noqa: E402

IDS = {  # records: the batch a correct collator gives (ids), or None when they must be refused
    "float": [np.array([1.7, 2.0])], "float-integral": [[1.0, 2.0]], "bool": [np.array([True, False])],
    "negative": [np.array([-3, 1])], "uint64-top": [np.array([2**63 + 5], np.uint64)],
    "pyint-top": [[2**63 + 5]], "text": [["a"]], "nested": [[[1, 2], [3, 4]]],
    "none": [np.array([1, None], object)], "nan": [[float("nan")]],
}
GOOD_IDS = {"uint64": ([np.array([5], np.uint64)], [[5]]), "empty": ([np.array([], np.int64)], [[]]),
            "int8": ([np.array([3, 4], np.int8)], [[3, 4]]), "list": ([[3, 4], [5]], [[3, 4], [5]])}
COLLATORS = {
    "pack": lambda rows: pack(rows, 4, 0)["input_ids"].tolist(),
    "Collator": lambda rows: Collator(pad_token_id=0).arrays(rows)["input_ids"].tolist(),
    "row-dicts": lambda rows: Collator(pad_token_id=0).arrays(
        [{"input_ids": r} for r in rows])["input_ids"].tolist(),
    "PackingCollator": lambda rows: PackingCollator(4, 0).arrays(rows)["input_ids"].tolist(),
    "MLMCollator": lambda rows: MLMCollator(Collator(pad_token_id=0), n_regions=50,
                                            mask_token_id=51, mask_prob=0.0).arrays(rows)[
        "input_ids"].tolist(),
}


@pytest.mark.parametrize("how", list(IDS))
@pytest.mark.parametrize("who", list(COLLATORS))
def test_odd_ids_are_refused(how, who):
    refused_any(lambda: COLLATORS[who](IDS[how]), "record", "row", "input_ids", "token id")


@pytest.mark.parametrize("how", list(GOOD_IDS))
@pytest.mark.parametrize("who", ["pack", "Collator", "PackingCollator"])
def test_plain_ids_are_kept(how, who):
    rows, want = GOOD_IDS[how]
    got = COLLATORS[who](rows)
    if who == "Collator":
        assert [r[:len(w)] for r, w in zip(got, want)] == want
    else:
        assert [t for r in got for t in r if t] == [t for w in want for t in w if t]


PADS = {"2**64": 2**64, "2**63": 2**63, "-1": -1, "1.5": 1.5, "bool": True, "none": None,
        "str": "0", "nan": float("nan"), "np-uint64-top": np.uint64(2**63 + 5)}
PAD_USERS = {
    "pack": lambda p: pack([[1]], 4, p),
    "Collator": lambda p: Collator(pad_token_id=p).arrays([np.array([1])]),
    "PackingCollator": lambda p: PackingCollator(4, p).arrays([np.array([1])]),
    "MLM-mask": lambda p: MLMCollator(Collator(pad_token_id=0), n_regions=5, mask_token_id=p,
                                      mask_prob=1.0).arrays([np.array([1])]),
}


@pytest.mark.parametrize("how", list(PADS))
@pytest.mark.parametrize("who", list(PAD_USERS))
def test_odd_pad_and_mask_ids(how, who):
    if how == "-1":  # a negative pad id is packing's choice (e.g. -1 for "no token"); a padded
        # batch's pad id (make_batch) and a mask id are token ids, refused below
        if who in ("pack", "PackingCollator"):
            PAD_USERS[who](-1)
            return
    refused_any(lambda: PAD_USERS[who](PADS[how]), "pad_token_id", "mask_token_id")


PROBS = {"-0.1": -0.1, "1.5": 1.5, "nan": float("nan"), "str": "x", "none": None, "inf": np.inf}


@pytest.mark.parametrize("how", list(PROBS))
@pytest.mark.parametrize("field", ["mask_prob", "replace_prob", "random_prob", "rtd_replace_prob"])
def test_odd_objective_probabilities(how, field):
    p = PROBS[how]
    if field == "rtd_replace_prob":
        make = lambda: RTDCollator(Collator(pad_token_id=0), n_regions=5,  # noqa: E731
                                   replace_prob=p).arrays([np.array([1])])
    else:
        make = lambda: MLMCollator(Collator(pad_token_id=0), n_regions=5,  # noqa: E731
                                   mask_token_id=6, **{field: p}).arrays([np.array([1])])
    refused_any(make, field.replace("rtd_", ""), "probabilit")


@pytest.mark.parametrize("how", ["n_regions-0", "n_regions-neg", "rtd-n_regions-1",
                                 "replace+random>1", "n_regions-str"])
def test_odd_objective_settings(how):
    c = Collator(pad_token_id=0)
    make = {
        "n_regions-0": lambda: MLMCollator(c, n_regions=0, mask_token_id=6, mask_prob=1.0,
                                           replace_prob=0.0, random_prob=1.0),
        "n_regions-neg": lambda: MLMCollator(c, n_regions=-5, mask_token_id=6),
        "rtd-n_regions-1": lambda: RTDCollator(c, n_regions=1),
        "replace+random>1": lambda: MLMCollator(c, n_regions=5, mask_token_id=6,
                                                replace_prob=0.8, random_prob=0.5),
        "n_regions-str": lambda: MLMCollator(c, n_regions="5", mask_token_id=6),
    }[how]
    refused_any(lambda: make().arrays([np.array([1, 2])]), "n_regions", "replace_prob", "probabilit")


@pytest.mark.parametrize("how", ["pack-seq_len-2**62", "pack-seq_len-2**33", "collator-max_length-2**40",
                                 "packing-collator-2**40", "pack-ffd-2**33"])
def test_huge_lengths_are_refused_not_allocated(how):
    code = {
        "pack-seq_len-2**62": "pack([[1]], 2**62, 0)",
        "pack-seq_len-2**33": "pack([[1]], 2**33, 0)",
        "pack-ffd-2**33": "pack([[1]], 2**33, 0, strategy='ffd')",
        "collator-max_length-2**40": "Collator(pad_token_id=0, max_length=2**40, "
                                     "padding='max_length').arrays([np.array([1])])",
        "packing-collator-2**40": "PackingCollator(2**40, 0).arrays([np.array([1])])",
    }[how]
    out = in_subprocess(f"""
        import numpy as np
        from genotok.packing import pack
        from genotok.torch_data import Collator, PackingCollator
        _attack(lambda: {code})""", limit_gib=3)
    assert out.startswith("REFUSED") and ("seq_len" in out or "max_length" in out), out


@pytest.mark.parametrize("how", ["longer-than-seq", "empty-records", "sep-on-empty", "values-short",
                                 "values-nan", "values-text", "row-dicts-mixed-values",
                                 "ffd-one-long", "sample-of-zero"])
def test_packing_edges(how):
    if how == "longer-than-seq":
        b = PackingCollator(2, 0, strategy="greedy").arrays([np.arange(5)])
        assert b["input_ids"].tolist() == [[0, 1], [2, 3], [4, 0]]
        assert b["record_ids"].tolist() == [[0, 0], [0, 0], [0, -1]]
    elif how == "empty-records":
        b = PackingCollator(3, 0).arrays([np.array([], np.int64), np.array([7])])
        assert b["input_ids"].tolist() == [[7, 0, 0]] and b["record_ids"].tolist() == [[1, -1, -1]]
    elif how == "sep-on-empty":
        b = PackingCollator(2, 0, sep_token_id=9, strategy="greedy").arrays(
            [np.array([], np.int64), np.array([7])])
        assert b["input_ids"].tolist() == [[9, 0], [7, 9]]  # the separator ends a record
    elif how == "values-short":
        refused_any(lambda: PackingCollator(4, 0).arrays([(np.array([1, 2]), np.array([1.0]))]),
                "value")
    elif how == "values-nan":  # a NaN value is the caller's data, carried as it is
        b = PackingCollator(4, 0).arrays([(np.array([1, 2]), np.array([1.0, np.nan]))])
        assert np.isnan(b["values"][0, 1]) and b["values"][0, 0] == 1.0
    elif how == "values-text":
        refused_any(lambda: PackingCollator(4, 0).arrays([(np.array([1]), np.array(["a"]))]), "value")
    elif how == "row-dicts-mixed-values":
        refused_any(lambda: Collator(pad_token_id=0).arrays(
            [{"input_ids": [1], "values": [1.0]}, {"input_ids": [2]}]), "values")
    elif how == "ffd-one-long":
        out = pack([np.arange(1, 10)], 4, 0, strategy="ffd")
        assert sorted(t for r in out["input_ids"].tolist() for t in r if t) == list(range(1, 10))
    else:
        c = Collator(pad_token_id=0)
        refused_any(lambda: c.arrays([(np.array([1, 2]), np.array([1.0]))]), "value")


# ------------------------------------------------------- S5: cross-rank loader states
STATES = {  # a loader state saved on one rank, tampered before another rank loads it
    "seed-other": lambda s: s.update(seed=s["seed"] + 1), "seed-text": lambda s: s.update(seed="x"),
    "seed-missing": lambda s: s.pop("seed"), "epoch-negative": lambda s: s.update(epoch=-1),
    "epoch-float": lambda s: s.update(epoch=1.5), "epoch-huge": lambda s: s.update(epoch=2**70),
    "records-past": lambda s: s.update(records_seen=10**9),
    "records-float": lambda s: s.update(records_seen=1.7),
    "records-bool": lambda s: s.update(records_seen=True),
    "corpus-other": lambda s: s.update(corpus="other"),
    "n_records-other": lambda s: s.update(n_records=3),
    "max_tokens-other": lambda s: s.update(max_tokens=64),
    "old-style-no-world": lambda s: [s.pop("records_seen"), s.pop("world_size")],
    "old-style-batches-text": lambda s: [s.pop("records_seen"), s.update(batches_delivered="2")],
    "not-a-dict": None,
}


@pytest.mark.parametrize("how", list(STATES))
def test_a_tampered_loader_state_is_refused(how, tmp_path):
    from genotok.sampling import BatchPlan
    from genotok.torch_data import CorpusIterableDataset

    path = _corpus(tmp_path / "s.gtokc", 40)
    make = lambda rank: CorpusIterableDataset(  # noqa: E731
        path, BatchPlan(batch_size=4, seed=3), Collator(pad_token_id=0), rank=rank, world_size=2)
    state = make(0).state_dict(delivered=2)
    if STATES[how] is None:
        state = [state]
    else:
        STATES[how](state)
    refused_any(lambda: make(1).load_state_dict(state), "state", "seed", "epoch", "records_seen",
            "corpus", "max_tokens", "world", "batches_delivered")
