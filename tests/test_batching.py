"""The one pad / truncate / mask implementation (genotok.batching) against plain-Python oracles,
and the three callers (Tokenizer.pad, genotok.data, the sink) agreeing with it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import Tokenizer, data
from genotok.batching import as_tensors, make_batch, pad_batch, pad_inputs, truncate
from genotok.ragged import Ragged

rows_st = st.lists(st.lists(st.integers(0, 70000), max_size=10), max_size=7)
PAD = 101


# ---------------------------------------------------------------------------------- oracles
def naive_pad(rows, pad_id, width=None, values=None):
    """Row by row, cell by cell: the rectangle as a person would write it."""
    width = max([len(r) for r in rows], default=0) if width is None else width
    ids = [[r[j] if j < len(r) else pad_id for j in range(width)] for r in rows]
    mask = [[1 if j < len(r) else 0 for j in range(width)] for r in rows]
    out = {"input_ids": ids, "attention_mask": mask}
    if values is not None:
        out["values"] = [[float(v[j]) if j < len(v) else 0.0 for j in range(width)] for v in values]
    return out


def naive_inputs(rows, pad_id, padding, truncation, max_length):
    """Hugging Face's rules for one batch, written out."""
    rows = [list(r)[:max_length] if truncation else list(r) for r in rows]
    if padding in (True, "longest"):
        return naive_pad(rows, pad_id)
    if padding == "max_length":
        longest = max([len(r) for r in rows], default=0)
        return naive_pad(rows, pad_id, max_length if truncation else max(max_length, longest))
    return {"input_ids": rows, "attention_mask": [[1] * len(r) for r in rows]}


def _lists(out):
    return {k: np.asarray(v).tolist() for k, v in out.items()}


# ---------------------------------------------------------------------------------- properties
@settings(max_examples=120, deadline=None)
@given(rows_st, st.integers(0, 4), st.booleans())
def test_pad_batch_matches_oracle(rows, extra, with_values):
    vals = [[0.5 * x for x in r] for r in rows] if with_values else None
    width = None if extra == 0 else max([len(r) for r in rows], default=0) + extra - 1
    got = pad_batch(rows, PAD, pad_to=width, values=vals)
    assert _lists(got) == naive_pad(rows, PAD, width, vals)
    assert got["input_ids"].dtype == np.int64 and got["attention_mask"].dtype == np.int64
    # a Ragged and its value channel give the same rectangle
    r = Ragged.from_list(rows)
    flat = None if vals is None else np.array([x for v in vals for x in v], dtype=np.float32)
    rg = pad_batch(r, PAD, pad_to=width, values=flat)
    assert _lists(rg) == _lists(got)


@settings(max_examples=120, deadline=None)
@given(rows_st, st.sampled_from([False, True, "longest", "max_length"]), st.booleans(),
       st.integers(1, 12))
def test_pad_inputs_matches_oracle(rows, padding, truncation, max_length):
    expected = naive_inputs(rows, PAD, padding, truncation, max_length)
    assert pad_inputs(rows, PAD, padding=padding, truncation=truncation,
                      max_length=max_length) == expected
    if padding:
        got = pad_inputs(rows, PAD, padding=padding, truncation=truncation,
                         max_length=max_length, return_tensors="np")
        assert _lists(got) == expected


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=30), st.integers(1, 12),
       st.sampled_from(["head", "window", "subsample", "subsample_ordered"]), st.integers(0, 5))
def test_truncate_matches_oracle(ids, k, strategy, seed):
    a = np.array(ids, dtype=np.int64)
    out = truncate(a, k, strategy, np.random.default_rng(seed)).tolist()
    if len(ids) <= k or strategy == "head":
        assert out == ids[:k]
    elif strategy == "window":
        assert any(out == ids[i:i + k] for i in range(len(ids) - k + 1))
    else:  # a subset of the positions, in order when asked
        pos = truncate(np.arange(a.size), k, strategy, np.random.default_rng(seed)).tolist()
        assert len(set(pos)) == k and out == [ids[p] for p in pos]
        if strategy == "subsample_ordered":
            assert pos == sorted(pos)


@settings(max_examples=60, deadline=None)
@given(rows_st, st.integers(3, 9), st.booleans(), st.booleans())
def test_make_batch_matches_oracle(rows, max_length, cls, eos):
    head, tail = [1] if cls else [], [2] if eos else []
    vals = [[float(x) for x in r] for r in rows]
    got = make_batch(rows, pad_token_id=PAD, max_length=max_length, truncation="head",
                     cls_token_id=1 if cls else None, eos_token_id=2 if eos else None,
                     values=vals)
    keep = max_length - len(head) - len(tail)
    wrapped = [head + r[:keep] + tail for r in rows]
    wvals = [[0.0] * len(head) + v[:keep] + [0.0] * len(tail) for v in vals]
    assert _lists(got) == naive_pad(wrapped, PAD, None, wvals)


# ---------------------------------------------------------------------------------- one implementation
def test_the_callers_are_this_module():
    assert data.pad_batch is pad_batch and data.make_batch is make_batch
    assert data.truncate is truncate
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    rows = [[0, 1], [3]]
    assert tok.pad(rows, padding=True) == pad_inputs(rows, tok.pad_token_id, padding=True)
    out = tok([["chr1:50-150"], ["chr1:10-20"]], padding="max_length", max_length=3,
              return_tensors="np")
    assert _lists(out) == naive_pad([[0, 1], [0]], tok.pad_token_id, 3)


def test_errors_and_edges():
    with pytest.raises(ValueError, match="pad_to"):
        pad_batch([[1, 2, 3]], 0, pad_to=2)
    with pytest.raises(ValueError, match="different lengths"):
        pad_inputs([[1, 2], [3]], 0, return_tensors="np")
    with pytest.raises(ValueError, match="needs max_length"):
        pad_inputs([[1]], 0, truncation=True)
    with pytest.raises(ValueError, match="padding must be"):
        pad_inputs([[1]], 0, padding="left")
    with pytest.raises(ValueError, match="return_tensors"):
        as_tensors({}, "tf")
    assert pad_batch([], 0)["input_ids"].shape == (0, 0)
    assert pad_inputs([[1, 2]], 0, padding="do_not_pad") == pad_inputs([[1, 2]], 0)
    assert pad_inputs([[1, 2]], 0, return_tensors="np", return_attention_mask=False).keys() == \
        {"input_ids"}
