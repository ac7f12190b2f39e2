"""Ragged containers and the thread-control context manager."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import _config
from genotok.ragged import Ragged

rows_st = st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=6), max_size=8)


@settings(max_examples=100, deadline=None)
@given(rows_st)
def test_ragged_round_trip_and_views(rows):
    r = Ragged.from_list(rows)
    assert len(r) == len(rows)
    assert r.to_list() == rows
    assert r.lengths.tolist() == [len(x) for x in rows]
    assert [x.tolist() for x in r] == rows
    for i in range(-len(rows), len(rows)):
        assert r[i].tolist() == rows[i]
        if r[i].size:
            assert np.shares_memory(r[i], r.data)  # a view, not a copy
    for a in range(len(rows) + 1):
        for b in range(a, len(rows) + 1):
            assert r[a:b].to_list() == rows[a:b]
    assert r[::2].to_list() == rows[::2]
    assert Ragged.from_list(rows) == r


def test_ragged_values_and_errors():
    r = Ragged.from_list([[1, 2], [3]], values=[[0.5, 1.5], [2.0]])
    assert r.row_values(1).tolist() == [2.0]
    assert r[0:1].values.tolist() == [0.5, 1.5]
    with pytest.raises(IndexError):
        r[2]
    with pytest.raises(ValueError, match="offsets"):
        Ragged(np.arange(3), np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError, match="offsets"):
        Ragged(np.arange(3), np.array([0, 2]))
    with pytest.raises(ValueError, match="aligned"):
        Ragged(np.arange(3), np.array([0, 3]), values=np.zeros(2))
    with pytest.raises(ValueError, match="value channel"):
        Ragged.from_list([[1]]).row_values(0)
    assert "2 rows" in repr(r)


def test_threads_restores_previous_count():
    before = numba.get_num_threads()
    with _config.threads(1) as n:
        assert n == numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with _config.threads(1):
            raise RuntimeError("boom")
    assert numba.get_num_threads() == before
    with _config.threads(10_000) as n:  # clipped to the pool
        assert n == _config.max_threads()
    with _config.threads(None) as n:
        assert n == before
    with pytest.raises(ValueError, match="n_threads"):
        with _config.threads(0):
            pass


def test_html_reprs(tmp_path):
    import genotok

    tok = genotok.Tokenizer(["chr1:0-100", "chr2:0-5"])
    rows = tok.encode_batch([["chr1:5-6"], ["chr9:1-2", "chr2:1-2"]], ragged=True)
    path = tmp_path / "c.gtokc"
    with genotok.CorpusWriter.for_tokenizer(path, tok) as w:
        w.append_batch(rows, names=["a", "b<script>"])
    corpus = genotok.Corpus.open(path)
    for obj, must in ((tok.universe, "chr1:0-100"), (tok, "overlap"), (corpus, "b&lt;script&gt;"),
                      (rows, "items")):
        html = obj._repr_html_()
        assert html.startswith("<div class='genotok-repr'>") and must in html
        assert "<script>" not in html  # names are escaped


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), max_size=6), max_size=12), st.data())
def test_take_matches_a_python_oracle(rows, data):
    r = Ragged.from_list(rows)
    r.values = np.arange(r.data.size, dtype=np.float32)
    idx = sorted(data.draw(st.sets(st.integers(0, max(len(rows) - 1, 0)), max_size=len(rows)))
                 if rows else [])
    got = r.take(np.asarray(idx, np.int64))
    assert got.to_list() == [rows[i] for i in idx]
    want_vals = [r.values[r.offsets[i]:r.offsets[i + 1]] for i in idx]
    np.testing.assert_array_equal(got.values, np.concatenate(want_vals) if idx else [])


@pytest.mark.parametrize("idx,match", [([0.5], "must be integers"), ([True], "must be integers"),
                                       ([3], "row 3 out of range"), ([-4], "row -4 out of range")])
def test_take_checks_its_rows_before_they_index_memory(idx, match):
    r = Ragged.from_list([[1], [2, 3], [4]])
    with pytest.raises(IndexError, match=match):
        r.take(idx)
    assert r.take([-1, 0]).to_list() == [[4], [1]]  # from the end, as NumPy counts


def test_decode_and_corpus_reads_check_their_flags(tmp_path):
    from genotok import Corpus, Tokenizer
    from genotok.formats.corpus import CorpusWriter
    from genotok.params import ParameterError

    tok = Tokenizer(["chr1:0-100"])
    with pytest.raises(ParameterError, match="skip_special_tokens"):
        tok.decode([0], skip_special_tokens="no")
    with pytest.raises(ParameterError, match="skip_special_tokens"):
        tok.batch_decode([[0]], skip_special_tokens="no")
    p = tmp_path / "c.gtokc"
    with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        w.append_batch([[1], [2, 3]])
    c = Corpus.open(p)
    for call in (lambda: c.to_ragged(values="no"), lambda: c.get_batch([0], values="no"),
                 lambda: list(c.iter_batches(0)), lambda: list(c.iter_batches(1.5))):
        with pytest.raises(ParameterError):
            call()
    with pytest.raises(IndexError, match="must be integers"):
        c.get_batch([0.5])
