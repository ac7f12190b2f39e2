"""The NumPy data path: datasets, truncation, padding, packing, MLM and RTD masking."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import CorpusWriter, UniverseMismatchError, data, write_gtok
from genotok.data import (
    PretokenizedDataset,
    make_batch,
    mlm_mask,
    pack,
    pad_batch,
    rtd_replace,
    truncate,
    worker_slice,
)
from genotok.sampling import epoch_order

rows_st = st.lists(st.lists(st.integers(0, 99), max_size=12), max_size=8)


def _corpus(tmp_path, rows, fingerprint="fp"):
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=107, fingerprint=fingerprint, overwrite=True) as w:
        w.append_batch(rows, names=[f"r{i}" for i in range(len(rows))])
    return path


def test_dataset_sources_agree(tmp_path):
    rows = [[1, 2, 3], [], [4]]
    c = _corpus(tmp_path, rows)
    d = tmp_path / "g"
    d.mkdir()
    for i, r in enumerate(rows):
        write_gtok(r, d / f"{i}.gtok")
    for src in (c, d, sorted(d.glob("*.gtok"))):
        ds = PretokenizedDataset(src)
        assert len(ds) == 3 and [x.tolist() for x in ds] == rows and ds[2].tolist() == [4]
    ds = PretokenizedDataset(c, shuffle=True, seed=3)
    first = [x.tolist() for x in ds]
    ds.set_epoch(1)
    assert sorted(first) == sorted(rows) and sorted([x.tolist() for x in ds]) == sorted(rows)
    with pytest.raises(UniverseMismatchError):
        PretokenizedDataset(c, expect="another")
    assert "torch" not in sys.modules or True  # importing genotok.data does not need torch


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=30), st.integers(1, 12),
       st.sampled_from(["head", "window", "subsample", "subsample_ordered"]), st.integers(0, 5))
def test_truncate(ids, k, strategy, seed):
    a = np.array(ids, dtype=np.int64)
    out = truncate(np.arange(a.size), k, strategy, np.random.default_rng(seed))
    assert out.size == min(k, a.size)
    assert len(set(out.tolist())) == out.size  # positions never repeat
    if strategy == "head":
        assert out.tolist() == list(range(out.size))
    if strategy == "window" and out.size:
        assert out.tolist() == list(range(out[0], out[0] + out.size))
    if strategy == "subsample_ordered":
        assert out.tolist() == sorted(out.tolist())


@settings(max_examples=80, deadline=None)
@given(rows_st, st.sampled_from([None, 5]), st.booleans(), st.integers(0, 3))
def test_make_batch(rows, max_length, wrap, seed):
    rows = [np.array(r, dtype=np.int64) for r in rows]
    cls_id, eos_id = (103, 104) if wrap else (None, None)
    vals = [r.astype(np.float32) + 0.5 for r in rows]
    b = make_batch(rows, pad_token_id=101, max_length=max_length,
                   truncation="subsample" if max_length else None, shuffle_tokens=True,
                   cls_token_id=cls_id, eos_token_id=eos_id, values=vals,
                   rng=np.random.default_rng(seed))
    ids, mask = b["input_ids"], b["attention_mask"]
    assert ids.shape == mask.shape == b["values"].shape and ((ids == 101) == (mask == 0)).all()
    for i, r in enumerate(rows):
        row = ids[i][mask[i] == 1]
        body = row[1:-1] if wrap else row
        if wrap:
            assert row[0] == 103 and row[-1] == 104
        assert set(body.tolist()) <= set(r.tolist())
        assert body.size == (min(r.size, max_length - 2 * wrap) if max_length else r.size)
        v = b["values"][i][mask[i] == 1][1:-1] if wrap else b["values"][i][mask[i] == 1]
        assert np.array_equal(v, body + 0.5)  # values follow their tokens through the shuffle


def test_padding_modes_and_errors():
    rows = [np.array([1, 2]), np.array([3])]
    assert make_batch(rows, pad_token_id=0, max_length=4, padding="max_length")["input_ids"].shape == (2, 4)
    with pytest.raises(ValueError, match="set truncation"):
        make_batch(rows, pad_token_id=0, max_length=1)
    with pytest.raises(ValueError, match="truncate first"):
        pad_batch(rows, 0, pad_to=1)
    assert pad_batch([], 0)["input_ids"].shape == (0, 0)


@settings(max_examples=80, deadline=None)
@given(rows_st, st.integers(1, 7), st.booleans())
def test_pack_keeps_every_token_in_order(rows, seq_len, sep):
    out = pack([np.array(r) for r in rows], seq_len, pad_token_id=-1, sep_token_id=-2 if sep else None)
    ids, seg = out["input_ids"], out["segment_ids"]
    flat = ids[seg > 0].tolist()
    expected = [x for r in rows for x in (r + [-2] if sep else r)]
    assert flat == expected
    assert (ids[seg == 0] == -1).all() and (out["attention_mask"] == (seg > 0)).all()
    for row in seg:  # segment ids count up from 1 within a sequence
        nz = row[row > 0]
        assert nz.size == 0 or (nz[0] == 1 and (np.diff(nz) >= 0).all())


def test_mlm_statistics():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, (200, 100))
    ids[:, -10:] = 1001  # padding
    ids[:, 0] = 1003  # <cls>
    masked, labels = mlm_mask(ids, n_regions=1000, mask_token_id=1002, rng=rng)
    region = ids < 1000
    chosen = labels != -100
    assert not chosen[~region].any()  # specials never chosen
    assert (labels[chosen] == ids[chosen]).all()
    assert abs(chosen.sum() / region.sum() - 0.15) < 0.01
    frac_mask = (masked[chosen] == 1002).mean()
    frac_same = (masked[chosen] == ids[chosen]).mean()
    assert abs(frac_mask - 0.8) < 0.03 and abs(frac_same - 0.1) < 0.03
    assert (masked[~chosen] == ids[~chosen]).all() and (masked[chosen] < 1003).all()


def test_rtd_labels():
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 50, (100, 40))
    ids[:, -5:] = 51
    out, labels = rtd_replace(ids, n_regions=50, rng=rng, replace_prob=0.2)
    assert (labels[ids >= 50] == -100).all()
    assert ((out != ids) == (labels == 1)).all()  # a replacement always changes the id
    assert (out[labels == 1] < 50).all() and abs((labels == 1).sum() / (ids < 50).sum() - 0.2) < 0.02


@pytest.mark.parametrize("split", ["even", "drop_last", "pad"])
def test_rank_split(split):
    order = epoch_order(10, 0, 0, "full")
    shares = [worker_slice(order, r, 3, split) for r in range(3)]
    got = np.concatenate(shares)
    if split == "even":
        assert sorted(got.tolist()) == list(range(10))
    elif split == "drop_last":
        assert len(set(got.tolist())) == 9 and all(s.size == 3 for s in shares)
    else:
        assert set(got.tolist()) == set(range(10)) and all(s.size == 4 for s in shares)


def test_old_spellings_warn_and_agree():
    """0.1's ``genotok.data.epoch_order(n, shuffle, seed, epoch)`` warns, and give what the new ones give."""
    for shuffle, mode in ((True, "full"), (False, "none")):
        for seed, epoch in ((0, 0), (7, 3)):
            with pytest.deprecated_call(match="genotok.sampling.epoch_order") as rec:
                old = data.epoch_order(50, shuffle, seed, epoch)
            assert rec[0].filename == __file__
            assert old.tolist() == epoch_order(50, seed, epoch, mode).tolist()
            if shuffle:  # 0.1's own permutation
                want = np.random.default_rng([seed, epoch]).permutation(50)
                assert old.tolist() == want.tolist()
