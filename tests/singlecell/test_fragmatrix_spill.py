"""Fragment counts spilled to disk (``memory_mb``): the matrix, its obs/var columns, the
``.h5ad`` written as it is read back (``out=``) and the tokens of a spilled count equal the
in-memory path and the plain-Python oracle; the spill's files never outlive the call."""

from __future__ import annotations

import tempfile

import anndata
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import CellSpec, Corpus, FragmentOptions, tokenize_fragments
from genotok.errors import BedParseError
from genotok.singlecell import fragmatrix
from genotok.singlecell.matrix import fragment_matrix
from tests._cellspec import spec_of

from .test_fragmatrix import _tok, _write, fragment, oracle, region

TINY = 1e-9  # MiB: every batch of pairs spills


def misses(lines, regions, *, mode="insertion", use_count=False, keep):
    """Per kept cell, the (weighted) fragments none of whose sites / overlaps hit a region."""
    out = dict.fromkeys(keep, 0)
    for line in lines:
        if line.startswith("#"):
            continue
        c, a, b, bc, k = line.rstrip("\n").split("\t")
        a, b = int(a), int(b)
        if bc not in out:
            continue
        if mode == "fragment":
            hit = any(c == rc and ((s < b and a < e) if b > a else s < a < e)
                      for rc, s, e in regions)
        else:
            hit = any(c == rc and s <= p < e for rc, s, e in regions for p in (a, b - 1))
        out[bc] += 0 if hit else (int(k) if use_count else 1)
    return [out[bc] for bc in keep]


def first_ids(regions):
    return [regions.index(r) for r in regions]


@pytest.fixture
def no_leftovers(tmp_path, monkeypatch):
    """TMPDIR of the call: nothing of the spill may stay there."""
    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill_dir))
    yield spill_dir
    assert [p for p in spill_dir.iterdir() if p.name.startswith("genotok-spill-")] == []


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(regions=st.lists(region, min_size=1, max_size=10),
       frags=st.lists(fragment, max_size=30),
       mode=st.sampled_from(["insertion", "paired-insertion", "fragment"]),
       use_count=st.booleans(), min_fragments=st.integers(0, 2),
       rows=st.sampled_from([1, 2, 1024]), memory_mb=st.sampled_from([None, TINY]),
       to_file=st.booleans(), block_bytes=st.sampled_from([9, 1 << 20]))
def test_matrix_spilled_or_not_equals_oracle(regions, frags, mode, use_count, min_fragments,
                                             rows, memory_mb, to_file, block_bytes,
                                             no_leftovers, monkeypatch, tmp_path):
    monkeypatch.setattr(fragmatrix, "SPILL_ROWS", rows)
    lines = [f"{c}\t{a}\t{a + n}\t{b}\t{k}\n" for c, a, n, b, k in frags]
    path = _write(lines)
    out = tmp_path / "m.h5ad" if to_file else None
    m = fragment_matrix(path, _tok(regions),
                        read=FragmentOptions(min_fragments=min_fragments, mode=mode, block_bytes=block_bytes),
                        use_count=use_count, memory_mb=memory_mb, out=out, overwrite=True)
    names, X, n = oracle(lines, regions, mode=mode, use_count=use_count,
                         min_fragments=min_fragments)
    if to_file:
        assert m.isbacked
        m = anndata.read_h5ad(out)
    assert m.obs_names.tolist() == names
    np.testing.assert_array_equal(m.X.toarray(), X)
    np.testing.assert_array_equal(m.obs["n_fragments"], n)
    assert m.obs["unknown_count"].tolist() == misses(lines, regions, mode=mode,
                                                      use_count=use_count, keep=names)
    assert m.var["token_id"].tolist() == first_ids(regions)
    assert m.var[["start", "end"]].values.tolist() == [[s, e] for _, s, e in regions]


@pytest.mark.parametrize("kw", [
    {},
    {"mode": "insertion", "order": "value", "max_length": 3},
    {"normalize": "total", "rank": "median", "order": "value"},
    {"bins": 5, "unknown": "region"},
], ids=["plain", "insertion-value", "geneformer", "bins"])
def test_tokens_of_a_spilled_count_equal_in_memory(kw, no_leftovers, monkeypatch, tmp_path):
    monkeypatch.setattr(fragmatrix, "SPILL_ROWS", 2)
    rng = np.random.default_rng(3)
    regions = [("chr1", s, s + 80) for s in range(0, 2000, 100)]
    lines = [f"chr{int(rng.integers(1, 3))}\t{a}\t{a + int(rng.integers(1, 250))}\t"
             f"BC{int(rng.integers(0, 9))}\t{int(rng.integers(1, 4))}\n"
             for a in np.sort(rng.integers(0, 1900, 300))]
    path = _write(lines)
    tok = _tok(regions)
    spec = spec_of(values=True, use_count="mode" not in kw,
                   **{k: v for k, v in kw.items() if k != "mode"})
    read = FragmentOptions(mode=kw.get("mode"))
    names, rows = tokenize_fragments(path, tok, spec, read=read)
    writes = []
    real = fragmatrix.RowSpill.write
    monkeypatch.setattr(fragmatrix.RowSpill, "write",
                        lambda self, *a: writes.append(1) or real(self, *a))
    corpus = tokenize_fragments(path, tok, spec, read=FragmentOptions(mode=kw.get("mode"),
                                                                      block_bytes=512),
                                out=tmp_path / "c.gtokc", memory_mb=TINY)
    assert len(writes) > 3  # it did spill, more than once
    assert isinstance(corpus, Corpus) and corpus.names == names
    got = corpus.to_ragged(values=True)
    assert got.to_list() == rows.to_list()
    np.testing.assert_allclose(got.values, rows.values.astype(np.float32), rtol=1e-6)
    # and a spilled count in memory too (memory_mb without out=)
    names2, rows2 = tokenize_fragments(path, tok, spec, read=read, memory_mb=TINY)
    assert names2 == names and rows2.to_list() == rows.to_list()


def test_a_bad_line_after_a_spill_leaves_nothing(no_leftovers, tmp_path):
    lines = [f"chr1\t{a}\t{a + 50}\tBC{a % 7}\t1\n" for a in range(0, 3000, 10)]
    lines.append("chr1\t5\tnot-a-number\tBC1\t1\n")
    path = _write(lines)
    tok = _tok([("chr1", 0, 100), ("chr1", 500, 900)])
    with pytest.raises(BedParseError, match=f":{len(lines)}:"):
        fragment_matrix(path, tok, read=FragmentOptions(block_bytes=64), memory_mb=TINY,
                        out=tmp_path / "m.h5ad")
    assert not (tmp_path / "m.h5ad").exists()
    with pytest.raises(BedParseError):
        tokenize_fragments(path, tok, CellSpec(values=True, use_count=True),
                           read=FragmentOptions(block_bytes=64), out=tmp_path / "c.gtokc",
                           memory_mb=TINY)
    assert not (tmp_path / "c.gtokc").exists()


def test_out_refuses_an_existing_file_and_bad_memory(tmp_path):
    path = _write(["chr1\t5\t20\tAAA-1\t1\n"])
    tok = _tok([("chr1", 0, 100)])
    out = tmp_path / "m.h5ad"
    fragment_matrix(path, tok, out=out)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        fragment_matrix(path, tok, out=out)
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="memory_mb"):
            fragment_matrix(path, tok, memory_mb=bad)
        with pytest.raises(ValueError, match="memory_mb"):
            tokenize_fragments(path, tok, CellSpec(values=True, use_count=True), memory_mb=bad)
        with pytest.raises(ValueError, match="memory_mb"):  # with out= too (no default then)
            fragment_matrix(path, tok, memory_mb=bad, out=tmp_path / "x.h5ad")
        with pytest.raises(ValueError, match="memory_mb"):
            tokenize_fragments(path, tok, CellSpec(values=True, use_count=True),
                               out=tmp_path / "x.gtokc", memory_mb=bad)
    assert not (tmp_path / "x.h5ad").exists() and not (tmp_path / "x.gtokc").exists()
