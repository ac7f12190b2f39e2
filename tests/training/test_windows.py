"""``genotok.windows.windows``: random contiguous windows of a corpus's token stream vs an
oracle that concatenates every record."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import Corpus, CorpusWriter, GenotokError, write_manifest
from genotok.params import ParameterError
from genotok.windows import windows


def _oracle(records, context_length, batch_size, seed, step):
    stream = np.array([t for r in records for t in r], np.int64)
    rng = np.random.default_rng([seed, step])
    first = rng.integers(0, stream.size - context_length, batch_size)
    x = np.stack([stream[s:s + context_length] for s in first])
    y = np.stack([stream[s + 1:s + context_length + 1] for s in first])
    return x, y


def _corpus(tmp_path, records, shards=1):
    if shards == 1:
        p = tmp_path / "c.gtokc"
        with CorpusWriter(p, vocab_size=70_000, fingerprint="fp") as w:
            w.append_batch(records)
        return Corpus.open(p)
    d = tmp_path / "sharded"
    d.mkdir(exist_ok=True)
    cuts = np.linspace(0, len(records), shards + 1).astype(int)
    files = [d / f"part-{k:05d}.gtokc" for k in range(shards)]
    for k, f in enumerate(files):
        with CorpusWriter(f, vocab_size=70_000, fingerprint="fp") as w:
            w.append_batch(records[cuts[k]:cuts[k + 1]])
    write_manifest(files, d)
    return Corpus.open(d)


@settings(max_examples=20, deadline=None)
@given(records=st.lists(st.lists(st.integers(0, 69_999), max_size=6), min_size=3, max_size=15),
       T=st.integers(1, 5), B=st.integers(1, 4), seed=st.integers(0, 5), step=st.integers(0, 3),
       shards=st.sampled_from([1, 3]))
def test_windows_match_the_oracle(tmp_path_factory, records, T, B, seed, step, shards):
    total = sum(map(len, records))
    corpus = _corpus(tmp_path_factory.mktemp("w"), records, shards)
    if total < T + 1:
        with pytest.raises(GenotokError, match="fewer than"):
            windows(corpus, T, B, seed, step=step)
        return
    x, y = windows(corpus, T, B, seed, step=step)
    ox, oy = _oracle(records, T, B, seed, step)
    assert x.dtype == np.int64 and x.tolist() == ox.tolist() and y.tolist() == oy.tolist()


def test_seeded_and_new_each_step(tmp_path):
    corpus = _corpus(tmp_path, [list(range(i, i + 50)) for i in range(0, 5000, 50)])
    a, b = windows(corpus, 16, 8, seed=1), windows(corpus, 16, 8, seed=1)
    assert (a[0] == b[0]).all()
    assert not (windows(corpus, 16, 8, seed=1, step=1)[0] == a[0]).all()
    assert ((a[1] - a[0]) == 1).all()  # the stream counts up: y is x one token later


def test_bad_arguments(tmp_path):
    corpus = _corpus(tmp_path, [[1, 2, 3]])
    with pytest.raises(ParameterError):
        windows(corpus, 0, 1)
    with pytest.raises(ParameterError):
        windows(corpus, 2, 1, seed=-1)
    with pytest.raises(GenotokError, match="not a corpus"):
        windows([[1, 2, 3]], 2, 1)
