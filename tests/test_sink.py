"""The one sink (genotok.sink): a stream of token batches → list, Ragged, tensors or a corpus,
against a plain-Python oracle, whatever the batching of the stream."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import Corpus, Tokenizer, sink
from genotok.ragged import Ragged

rows_st = st.lists(st.lists(st.integers(0, 9), max_size=6), max_size=9)
TOK = Tokenizer([f"chr1:{i * 10}-{i * 10 + 10}" for i in range(3)])


def _batches(rows, cuts, with_values=True):
    """The rows as a stream of Ragged batches split at ``cuts``, values 0.5 * id + row."""
    bounds = sorted({0, len(rows), *[c % (len(rows) + 1) for c in cuts]})
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = rows[lo:hi]
        r = Ragged.from_list(part)
        vals = [0.5 * x + lo + k for k, row in enumerate(part) for x in row]
        out.append(Ragged(r.data, r.offsets, np.array(vals, np.float32)) if with_values else r)
    return out


def _values(rows):
    return [[0.5 * x + i for x in row] for i, row in enumerate(rows)]


@settings(max_examples=80, deadline=None)
@given(rows_st, st.lists(st.integers(0, 20), max_size=4), st.booleans())
def test_collect_matches_oracle(rows, cuts, values):
    batches = _batches(rows, cuts)
    r = sink.collect(batches, "ragged", values=values)
    assert r.to_list() == rows and (r.values is not None) == values
    got = sink.collect(batches, "list", values=values)
    ids, vals = got if values else (got, None)
    assert [a.tolist() for a in ids] == rows
    if values:
        assert [v.tolist() for v in vals] == _values(rows)
    t = sink.collect(batches, "np", values=values, pad_token_id=99)
    width = max([len(x) for x in rows], default=0)
    assert t["input_ids"].tolist() == [x + [99] * (width - len(x)) for x in rows]
    assert t["attention_mask"].tolist() == [[1] * len(x) + [0] * (width - len(x)) for x in rows]
    if values:
        assert t["values"].tolist() == [v + [0.0] * (width - len(v)) for v in _values(rows)]
    else:
        assert "values" not in t


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows_st, st.lists(st.integers(0, 20), max_size=4), st.booleans())
def test_write_corpus_matches_collect(tmp_path_factory, rows, cuts, values):
    rows = [[x % 3 for x in row] for row in rows]
    path = tmp_path_factory.mktemp("c") / "c.gtokc"
    meta = {"n": list(range(len(rows)))}
    c = sink.write_corpus(path, TOK, _batches(rows, cuts), values=values, metadata_columns=["n"],
                          records=lambda lo, hi: ([f"c{i}" for i in range(lo, hi)],
                                                  {"n": np.array(meta["n"][lo:hi])}),
                          extra={"test": True}, overwrite=True)
    assert isinstance(c, Corpus) and len(c) == len(rows)
    assert [c[i].tolist() for i in range(len(c))] == rows
    assert c.names == [f"c{i}" for i in range(len(rows))]


def test_outputs_and_scalars():
    assert sink.output_kind("ragged") == "ragged" and sink.output_kind("x.gtokc") == "corpus"
    with pytest.raises(ValueError, match="output must be"):
        sink.output_kind(3)
    assert sink.concat([]).to_list() == []
    assert sink.json_scalars(np.array([1, 2], np.int64)) == [1, 2]
    assert sink.json_scalars(np.array([np.nan, "a"], object)) == [None, "a"]
    assert sink.json_scalars([np.datetime64("2020-01-01")]) == ["2020-01-01"]
    pytest.importorskip("torch")
    t = sink.collect([Ragged.from_list([[1, 2], [3]])], "pt", pad_token_id=0)
    assert t["input_ids"].tolist() == [[1, 2], [3, 0]]


@pytest.mark.parametrize("capacity", [0, 1, 3, 6, 100])
@pytest.mark.parametrize("with_values", [True, False])
def test_concat_into_a_bound_equals_the_plain_join(capacity, with_values):
    """A bound (too small ones grow) gives what joining all batches gives; nothing for no batch."""
    rows = [[[1], []], [[2, 3], [4]], [], [[5, 6]]]
    parts = [Ragged.from_list(r) if r else Ragged(np.zeros(0, np.int64), np.zeros(1, np.int64))
             for r in rows]
    if with_values:
        parts = [Ragged(p.data, p.offsets, p.data.astype(np.float32) / 2) for p in parts]
    want = sink.concat(parts)
    got = sink.concat(iter(parts), capacity)
    assert got.to_list() == want.to_list()
    assert (got.values is None) == (not with_values)
    if with_values:
        assert got.values.tolist() == want.values.tolist()
    assert sink.concat(iter([]), capacity).to_list() == []


def test_concat_widens_to_the_batches_common_dtype():
    """As np.concatenate: an int32 batch then an int64 one give int64, nothing cut."""
    a = Ragged(np.array([1], np.int32), np.array([0, 1], np.int64))
    b = Ragged(np.array([2 ** 40], np.int64), np.array([0, 1], np.int64))
    for got in (sink.concat([a, b]), sink.concat(iter([a, b]), 5)):
        assert got.data.dtype == np.int64 and got.to_list() == [[1], [2 ** 40]]
