"""``genotok.pack``: greedy and first-fit-decreasing packing against the plain-Python oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.packing import pack
from genotok.params import ParameterError
from genotok.ragged import Ragged

from . import naive_packing as naive

records = st.lists(st.lists(st.integers(0, 70000), max_size=12), max_size=25)


@settings(max_examples=60, deadline=None)
@given(rows=records, seq_len=st.integers(1, 9), sep=st.booleans(),
       strategy=st.sampled_from(["greedy", "ffd"]), ragged=st.booleans())
def test_kernels_match_the_oracles(rows, seq_len, sep, strategy, ragged):
    src = Ragged.from_list(rows, dtype=np.uint32) if ragged else [np.array(r, np.int64) for r in rows]
    out = pack(src, seq_len, pad_token_id=-1 if not ragged else 70001,
               sep_token_id=(70002 if sep else None), strategy=strategy)
    oracle = getattr(naive, strategy)
    ids, seg, pos = oracle(rows, seq_len, -1 if not ragged else 70001, 70002 if sep else None)
    assert out["input_ids"].tolist() == ids.tolist()
    assert out["segment_ids"].tolist() == seg.tolist()
    assert out["position_ids"].tolist() == pos.tolist()
    assert out["attention_mask"].tolist() == (seg > 0).astype(int).tolist()


@settings(max_examples=50, deadline=None)
@given(rows=records, seq_len=st.integers(1, 9), strategy=st.sampled_from(["greedy", "ffd"]))
def test_every_token_once_segments_contiguous_positions_restart(rows, seq_len, strategy):
    # tokens made unique so that "kept exactly once" is a multiset equality of positions
    uniq, k = [], 0
    for r in rows:
        uniq.append(list(range(k, k + len(r))))
        k += len(r)
    out = pack([np.array(r, np.int64) for r in uniq], seq_len, pad_token_id=-1, strategy=strategy)
    ids, seg, pos = out["input_ids"], out["segment_ids"], out["position_ids"]
    assert ids.shape[1] == seq_len
    assert sorted(ids[seg > 0].tolist()) == list(range(k))  # every token exactly once
    assert out.n_tokens == k and (seg > 0).sum() == k        # no sequence over capacity
    for b in range(ids.shape[0]):
        s = seg[b]
        n = int((s > 0).sum())
        assert (s[:n] > 0).all() and (s[n:] == 0).all()         # padding only at the end
        assert (np.diff(s[:n]) >= 0).all() and (np.diff(s[:n]) <= 1).all()  # contiguous, 1, 2..
        for g in np.unique(s[:n]):
            where = np.flatnonzero(s == g)
            assert pos[b, where].tolist() == list(range(where.size))      # restart per segment
            toks = ids[b, where]
            assert (np.diff(toks) == 1).all()  # a segment is one contiguous piece of a record
    if strategy == "greedy":  # greedy keeps the records' order
        assert ids[seg > 0].tolist() == list(range(k))


def test_ffd_fills_95_percent_on_lengths_1_to_512():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 513, 20_000)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rows = Ragged(np.arange(offsets[-1], dtype=np.int64) % 60000, offsets)
    ffd = pack(rows, 512, pad_token_id=0, strategy="ffd")
    greedy = pack(rows, 512, pad_token_id=0)
    assert ffd.n_tokens == greedy.n_tokens == int(lengths.sum())
    assert int((ffd["segment_ids"] > 0).sum()) == int(lengths.sum())
    assert ffd.fill >= 0.95, ffd.fill
    assert ffd.fill > greedy.fill
    assert "fill" in repr(ffd)


def test_dtype_kept_when_the_pad_fits_else_int64():
    rows = Ragged.from_list([[1, 2], [3]], dtype=np.uint16)
    assert pack(rows, 4, pad_token_id=9)["input_ids"].dtype == np.uint16
    assert pack(rows, 4, pad_token_id=70000)["input_ids"].dtype == np.int64
    assert pack(rows, 4, pad_token_id=9, sep_token_id=-1)["input_ids"].dtype == np.int64


def test_empty_input_and_empty_records():
    out = pack([], 4, pad_token_id=0, strategy="ffd")
    assert out["input_ids"].shape == (0, 4) and out.fill == 1.0
    out = pack([[], [5], []], 4, pad_token_id=0)
    assert out["input_ids"].tolist() == [[5, 0, 0, 0]]


@pytest.mark.parametrize("kwargs", [{"seq_len": 0}, {"seq_len": True}, {"strategy": "best"},
                                    {"pad_token_id": 1.5}, {"sep_token_id": "x"}])
def test_bad_parameters_are_refused(kwargs):
    args = {"seq_len": 4, "pad_token_id": 0} | kwargs
    with pytest.raises(ParameterError):
        pack([[1]], **args)


def test_float_records_are_refused():
    with pytest.raises(TypeError, match="integer"):
        pack(Ragged(np.array([1.5]), np.array([0, 1])), 4, pad_token_id=0)


def test_rows_are_checked_before_they_are_converted():
    """Issue 43 #6/#11: a float row was truncated (1.7 -> 1), a uint64 id of 2**63 + 5 wrapped
    negative and pad_token_id=2**64 passed, then overflowed: each is refused before a cast."""
    from genotok.params import ParameterError

    with pytest.raises(TypeError, match="record 1 holds float64 values"):
        pack([[1, 2], np.array([1.7, 2.0])], seq_len=4, pad_token_id=0)
    big = np.array([2**63 + 5], np.uint64)  # no token id: beyond int64 (round 4 refuses it)
    with pytest.raises(ParameterError, match="beyond int64"):
        pack([big], seq_len=2, pad_token_id=0)
    out = pack([np.array([2**63 - 1], np.uint64)], seq_len=2, pad_token_id=0)
    assert int(out["input_ids"][0, 0]) == 2**63 - 1
    out = pack([np.array([2**63 - 1], np.uint64)], seq_len=2, pad_token_id=-1)
    assert out["input_ids"].dtype == np.int64 and out["input_ids"].tolist() == [[2**63 - 1, -1]]
    for bad in (2**64, 1e300):
        with pytest.raises(ParameterError, match="pad_token_id must be an integer"):
            pack([[1]], seq_len=2, pad_token_id=bad)


# ---- issue 43 round-4 campaign (tests/campaigns): ids checked before any conversion
@pytest.mark.parametrize("rows", [[[1.0, 2.0]], [np.array([True])], [[-3, 1]],
                                  [np.array([2**63 + 5], np.uint64)], [[2**63 + 5]],
                                  [[[1, 2], [3, 4]]], [["a"]], [np.array([1, None], object)]],
                         ids=["float", "bool", "negative", "uint64-top", "pyint-top", "nested",
                              "text", "none"])
def test_pack_refuses_what_is_not_a_token_id(rows):
    from genotok.params import ParameterError

    with pytest.raises(ParameterError, match="pack: record 0"):
        pack(rows, 4, 0)


def test_pack_refuses_a_sequence_longer_than_any_model_before_allocating():
    from genotok.batching import MAX_SEQUENCE
    from genotok.params import ParameterError

    with pytest.raises(ParameterError, match="seq_len"):
        pack([[1]], MAX_SEQUENCE + 1, 0)
