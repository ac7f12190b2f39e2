"""Single-cell adapter: kernels vs the per-cell loop oracle, h5ad/backed/in-memory, errors."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import anndata
import h5py
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import (AnnDataError, AnnDataOptions, CellSpec, Corpus, RegionSet, Tokenizer,
                     TokenizerSettings, Universe)
from genotok import sink as gsink
from genotok.kernels import cells as K
from genotok.ragged import Ragged
import genotok.singlecell as gad
from genotok.singlecell import cells as gcells
from genotok.singlecell import chunks as gsrc
from genotok.singlecell import varnames as gvar
from tests import naive_cells as naive
from tests._cellspec import kernel_options

from .._shared import GENDATA, PBMC, needs_shared

ROOT = Path(__file__).resolve().parents[2]

CHROMS = ["chr1", "chr2", "chrUn_KI270742v1"]


def _tokenizer(regs, **kw) -> Tokenizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # duplicate universe lines are intended
        return Tokenizer(Universe(RegionSet.from_tuples(regs)), settings=TokenizerSettings(**kw))


def _rows_of(r):
    return [list(map(int, x)) for x in r]


def _check(result: "Ragged", ref_ids, ref_vals):
    assert result.to_list() == ref_ids
    got = [result.values[a:b].tolist() for a, b in zip(result.offsets[:-1], result.offsets[1:])]
    for g, e in zip(got, ref_vals):
        np.testing.assert_allclose(g, e, rtol=1e-6)


# ---------------------------------------------------------------------------------- strategies
@st.composite
def regions(draw, n_min, n_max, chroms=CHROMS, max_coord=300):
    out = []
    for _ in range(draw(st.integers(n_min, n_max))):
        c = draw(st.sampled_from(chroms))
        s = draw(st.integers(0, max_coord))
        out.append((c, s, s + draw(st.sampled_from([0, 1, 20, 60, 150]))))
    return out


@st.composite
def problems(draw):
    universe = draw(regions(1, 12))
    if draw(st.booleans()):  # nested and duplicate universe regions
        c, s, e = universe[0]
        universe += [(c, s, e), (c, s + (e - s) // 3, e)]
    if draw(st.booleans()):
        universe.sort()
    variables = draw(regions(1, 10, chroms=CHROMS + ["chrZ"]))  # chrZ: unknown chromosome
    if draw(st.booleans()):  # sorted peaks: often a monotone var → token map (one-pass path)
        variables.sort(key=lambda v: (CHROMS + ["chrZ"]).index(v[0]) * 10**6 + v[1])
    n_vars = len(variables)
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        k = draw(st.integers(0, 2 * n_vars))
        cols = draw(st.lists(st.integers(0, n_vars - 1), min_size=k, max_size=k))
        if draw(st.booleans()):
            cols = sorted(set(cols))  # canonical CSR; otherwise unsorted, with duplicates
        vals = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 7.0]),
                             min_size=len(cols), max_size=len(cols)))
        rows.append(list(zip(cols, vals)))
    opts = draw(st.fixed_dictionaries({
        "min_count": st.sampled_from([None, 1.0, 2.0]),
        "unique": st.booleans(),
        "unknown": st.sampled_from(["set", "region", "drop"]),
        "order": st.sampled_from(["genomic", "value", "shuffle"]),
        "max_tokens": st.sampled_from([None, 1, 2, 5]),
        "truncate": st.sampled_from(["top", "sample"]),
        "seed": st.integers(0, 2**40),
    }))
    tok_kw = draw(st.fixed_dictionaries({
        "overlap": st.sampled_from(["all", "best"]),
        "min_overlap": st.sampled_from([0, 10]),
    }))
    return universe, variables, rows, opts, tok_kw


def _csr(rows, n_vars):
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.array([c for r in rows for c, _ in r], np.int32)
    data = np.array([v for r in rows for _, v in r], np.float64)
    return indptr, indices, data


# ---------------------------------------------------------------------------------- the kernel
_KERNEL_CASES = given(problems(), st.sampled_from([K.PATH_AUTO, K.PATH_KEYSORT, K.PATH_BITMAP]),
                      st.integers(1, 4), st.booleans(), st.booleans())


# 60 examples in the default run (150 cost ~15 s of CPU, the examples' own work, not a
# compile: the same with a warm kernel cache), 400 in the slow step
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_KERNEL_CASES
def test_kernel_matches_the_per_cell_loop(problem, path, chunk, generic, values):
    _kernel_matches_the_per_cell_loop(problem, path, chunk, generic, values)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_KERNEL_CASES
def test_kernel_matches_the_per_cell_loop_long(problem, path, chunk, generic, values):
    _kernel_matches_the_per_cell_loop(problem, path, chunk, generic, values)


def _kernel_matches_the_per_cell_loop(problem, path, chunk, generic, values):
    universe, variables, rows, opts, tok_kw = problem
    tok = _tokenizer(universe, **tok_kw)
    vm = gvar._var_map(tok, RegionSet.from_tuples(variables), None)
    if generic:
        vm.monotone = False  # the general paths must agree on monotone maps too
    opt = kernel_options(tok, **opts, values=values)
    opt.path = path
    indptr, indices, data = _csr(rows, len(variables))
    src = gsrc._MemorySource(sp.csr_matrix((data, indices, indptr),
                                           shape=(len(rows), len(variables))), "X")
    # the scipy matrix keeps our (unsorted, duplicate) storage order as given
    assert np.array_equal(src.indices, indices)
    parts = [r for _, r in gcells._stream(src, vm, opt, budget=1 << 20, chunk_rows=chunk,
                                          n_threads=None, progress=False, desc="")]
    got = gsink.concat(parts)
    ids, vals = naive.cells(universe, variables, rows, unk_id=tok.unk_token_id, **tok_kw, **opts)
    if values or got.values is not None:  # the fast path drops values nobody asked for
        _check(got, ids, vals)
    else:
        assert got.to_list() == ids


# A monotone map with every kind of variable: none, one, two and three tokens, first tokens
# shared with the previous variable (merged when unique), an unknown chromosome.
FAST_UNIVERSE = [("chr1", 0, 100), ("chr1", 90, 200), ("chr1", 190, 300), ("chr1", 400, 500),
                 ("chr1", 600, 700), ("chr1", 650, 800), ("chr1", 780, 900), ("chr2", 0, 50),
                 ("chr1", 455, 550)]
FAST_VARS = [("chr1", 10, 50), ("chr1", 95, 150), ("chr1", 195, 199), ("chr1", 300, 350),
             ("chr1", 450, 460), ("chr1", 640, 790), ("chr1", 850, 860), ("chr2", 10, 20),
             ("chrZ", 0, 10)]


@pytest.mark.parametrize("unknown", ["set", "region", "drop"])
@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("min_count", [None, 2.0])
@pytest.mark.parametrize("packable", [True, False])
@pytest.mark.parametrize("order, max_tokens", [("genomic", None), ("value", None), ("value", 3)])
def test_fast_path_matches_the_per_cell_loop(monkeypatch, unknown, unique, values, min_count,
                                             packable, order, max_tokens):
    tok = _tokenizer(FAST_UNIVERSE)
    if not packable:  # ids too large for the fill's packed word: every variable takes the
        monkeypatch.setattr(K, "LUT_WORD_IDS", 3)  # general loop of the same kernels
    vm = gvar._var_map(tok, RegionSet.from_tuples(FAST_VARS), None)
    assert vm.monotone
    assert set(vm.lut_n.tolist()) == ({-1, 0, 1, 2} if packable else {-1, 0})
    assert np.array_equal(((vm.lut_word >> 62) & 3) - 1, vm.lut_n)
    rng = np.random.default_rng(7)
    rows = [[], [(3, 1.0)], [(8, 2.0)]]  # empty, a token-less peak, an unknown chromosome
    for _ in range(60):
        cols = sorted(set(rng.integers(0, len(FAST_VARS), rng.integers(1, 10)).tolist()))
        rows.append([(c, float(rng.choice([0.5, 1.0, 2.0, 3.0]))) for c in cols])
    calls = []
    fill = K.mono_fill
    monkeypatch.setattr(K, "mono_fill", lambda *a: calls.append(1) or fill(*a))
    opts = dict(min_count=min_count, unique=unique, unknown=unknown, order=order,
                max_tokens=max_tokens, truncate="top", seed=0)
    opt = kernel_options(tok, **opts, values=values)
    indptr, indices, data = _csr(rows, len(FAST_VARS))
    src = gsrc._MemorySource(sp.csr_matrix((data, indices, indptr),
                                           shape=(len(rows), len(FAST_VARS))), "X")
    for chunk in (1, 7, 1000):  # blocks of one row exercise the plain loop at block ends
        calls.clear()
        got = gsink.concat([r for _, r in gcells._stream(src, vm, opt, budget=1 << 20,
                                                         chunk_rows=chunk, n_threads=None,
                                                         progress=False, desc="")])
        assert calls, "the fast path was not taken"
        ids, vals = naive.cells(FAST_UNIVERSE, FAST_VARS, rows, unk_id=tok.unk_token_id,
                                overlap="all", min_overlap=0, **opts)
        if values:
            _check(got, ids, vals)
        else:
            assert got.values is None and got.to_list() == ids


# int32 in the slow step: each id dtype compiles the cells kernels again (int32's two cases were
# 27 s and 50 s under load 12, the default run's costliest compiles after warmup) for the same
# property, which uint32 keeps in the default run
@pytest.mark.parametrize("order", ["genomic", "value"])  # fast and general path
@pytest.mark.parametrize("dtype", [np.uint32, pytest.param(np.int32, marks=pytest.mark.slow)],
                         ids=["uint32", "int32"])
def test_narrow_id_dtypes_give_the_same_ids(order, dtype):
    tok = _tokenizer(FAST_UNIVERSE)
    rows = [[(0, 1.0), (1, 2.0), (5, 1.0)], [], [(3, 1.0), (8, 4.0)]]
    a = _adata(rows, FAST_VARS)
    ref = gad.tokenize_anndata(a, tok, CellSpec(order=order))
    got = gad.tokenize_anndata(a, tok, CellSpec(order=order), read=AnnDataOptions(dtype=dtype))
    assert got.data.dtype == dtype and got.to_list() == ref.to_list()


def test_bad_id_dtypes_are_refused():
    tok = _tokenizer(FAST_UNIVERSE)
    a = _adata([[(0, 1.0)]], FAST_VARS)
    with pytest.raises(ValueError, match="int64, int32 or uint32"):
        gad.tokenize_anndata(a, tok, read=AnnDataOptions(dtype=np.float32))
    with pytest.raises(ValueError, match="cannot hold"):
        gcells._ids_dtype(np.int32, type("T", (), {"vocab_size": 2**31 + 1})())


def test_fast_path_falls_back_on_unsorted_columns():
    tok = _tokenizer(FAST_UNIVERSE)
    vm = gvar._var_map(tok, RegionSet.from_tuples(FAST_VARS), None)
    rows = [[(5, 1.0), (1, 1.0), (1, 2.0)], [(0, 1.0), (2, 1.0)]]  # unsorted, repeated column
    indptr, indices, data = _csr(rows, len(FAST_VARS))
    for use_data in (False, True):
        counts, status = K.mono_count(indptr, indices, data, vm.lut_n, vm.lut_last, vm.var_ptr,
                                      vm.var_ids, K.keep_threshold(-np.inf), use_data, K.UNK_SET,
                                      True, np.array([0, 1, 2], np.int64))
        assert status == K.MONO_UNSORTED
    got = gsink.concat([r for _, r in gcells._stream(
        gsrc._MemorySource(sp.csr_matrix((data, indices, indptr), shape=(2, len(FAST_VARS))), "X"),
        vm, kernel_options(tok, None, "genomic", 0, None, "top", True, None), budget=1 << 20,
        chunk_rows=None, n_threads=None, progress=False, desc="")])
    ids, vals = naive.cells(FAST_UNIVERSE, FAST_VARS, rows, unk_id=tok.unk_token_id, overlap="all",
                            min_overlap=0, min_count=None, unique=True, unknown="set",
                            order="genomic", max_tokens=None, truncate="top", seed=0)
    _check(got, ids, vals)


@pytest.mark.parametrize("indptr, indices, data, message", [
    ([0, 1, 2], [0, 9], [1.0, 1.0], "outside [0, n_vars) at row 1, stored entry 1 (column 9"),
    ([0, 1, 2], [0, -1], [1.0, 1.0], "outside [0, n_vars) at row 1"),
    ([0, 1, 2], [0, 1], [1.0, -2.0], "(counts must be >= 0) at row 1, stored entry 1"),
    ([0, 1, 2], [0, 1], [np.nan, 1.0], "NaN or infinite value at row 0, stored entry 0"),
    ([0, 2, 1], [0, 1], [1.0, 1.0],
     "indptr is not non-decreasing within the stored entries at row 1"),
    ([0, 2], [1, 0], [1.0, -1.0], "(counts must be >= 0) at row 0, stored entry 1"),  # unsorted too
    ([0, 1, 2], [0, 1], [np.inf, 0.0], "NaN or infinite value at row 0"),
])
def test_fast_path_validates_like_the_general_path(indptr, indices, data, message):
    tok = _tokenizer(FAST_UNIVERSE)
    vm = gvar._var_map(tok, RegionSet.from_tuples(FAST_VARS), None)
    ch = gsrc.Chunk(0, np.array(indptr, np.int64), np.array(indices, np.int32),
                    np.array(data, np.float32), len(FAST_VARS))
    opt = kernel_options(tok, None, "genomic", 0, None, "top", True, None)
    with pytest.raises(AnnDataError, match=re.escape(message)):
        gcells._run_chunk(ch, vm, opt, "X")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**31), min_size=1, max_size=5), st.integers(1, 50))
def test_rng_matches_the_python_model(seeds, n):
    for seed in seeds:
        state = K.rng_seed(seed, 7)
        ref = naive.Rng(seed, 7)
        for _ in range(5):
            state, x = K.rng_below(np.uint64(state), n)
            assert x == ref.below(n)
            assert 0 <= x < n


def test_check_csr_finds_every_problem():
    blocks = np.array([0, 2], np.int64)
    ok = (np.array([0, 1, 2], np.int64), np.array([0, 1], np.int32), np.array([1.0, 2.0]))
    assert K.check_csr(*ok, 2, blocks) == (K.CSR_OK, -1)
    assert K.check_csr(ok[0], ok[1], ok[2], 1, blocks) == (K.CSR_INDEX, 1)
    assert K.check_csr(ok[0], ok[1], np.array([1.0, -1.0]), 2, blocks) == (K.CSR_NEGATIVE, 1)
    assert K.check_csr(ok[0], ok[1], np.array([np.nan, 1.0]), 2, blocks) == (K.CSR_NOT_FINITE, 0)
    assert K.check_csr(np.array([0, 2, 1], np.int64), ok[1], ok[2], 2, blocks)[0] == K.CSR_INDPTR


# ---------------------------------------------------------------------------------- AnnData inputs
def _adata(rows, variables, names="colon", dtype=np.float32):
    indptr, indices, data = _csr(rows, len(variables))
    X = sp.csr_matrix((data.astype(dtype), indices, indptr), shape=(len(rows), len(variables)))
    obs = pd.DataFrame({"cell_type": pd.Categorical(["T", "B"] * (len(rows) // 2)
                                                    + ["T"] * (len(rows) % 2))},
                       index=[f"c{i}" for i in range(len(rows))])
    if names == "columns":
        var = pd.DataFrame({"chr": [c for c, _, _ in variables],
                            "start": [s for _, s, _ in variables],
                            "end": [e for _, _, e in variables]},
                           index=[f"p{i}" for i in range(len(variables))])
    else:
        fmt = {"colon": "{}:{}-{}", "dash": "{}-{}-{}", "underscore": "{}_{}_{}"}[names]
        var = pd.DataFrame(index=[fmt.format(*v) for v in variables])
    return anndata.AnnData(X=X, obs=obs, var=var)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(5)
    universe = [(c, int(s), int(s) + int(w)) for c, s, w in
                zip(rng.choice(CHROMS[:2], 40), rng.integers(0, 5000, 40),
                    rng.integers(50, 400, 40))]
    variables = [(c, int(s), int(s) + 200) for c, s in
                 zip(rng.choice(CHROMS, 60), rng.integers(0, 5200, 60))]
    rows = []
    for _ in range(23):
        cols = np.sort(rng.choice(60, int(rng.integers(0, 30)), replace=False))
        rows.append([(int(c), float(rng.integers(1, 5))) for c in cols])
    return universe, variables, rows


@pytest.mark.parametrize("names", ["colon", "dash", "underscore", "columns"])
def test_every_var_name_convention(small, names):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables, names)
    assert var_regions_strings(a) == [f"{c}:{s}-{e}" for c, s, e in variables]
    got = gad.tokenize_anndata(a, tok, CellSpec(values=True))
    _check(got, *naive.cells(universe, variables, rows, unk_id=tok.unk_token_id))


def var_regions_strings(a):
    return gad.var_regions(a).to_strings()


def test_h5ad_path_backed_and_memory_agree(small, tmp_path):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables, "columns")
    p = tmp_path / "a.h5ad"
    a.write_h5ad(p)
    spec = CellSpec(values=True, order="value", max_length=6, truncation="sample", seed=3)
    mem = gad.tokenize_anndata(a, tok, spec)
    on_disk = gad.tokenize_anndata(p, tok, spec, read=AnnDataOptions(chunk_rows=4))
    tiny_budget = gad.tokenize_anndata(p, tok, spec, memory_mb=0.0001)
    backed = anndata.read_h5ad(p, backed="r")
    try:
        from_backed = gad.tokenize_anndata(backed, tok, spec)
    finally:
        backed.file.close()
    for other in (on_disk, tiny_budget, from_backed):
        assert other == mem
        assert np.array_equal(other.values, mem.values)
    _check(mem, *naive.cells(universe, variables, rows, unk_id=tok.unk_token_id,
                             order="value", max_tokens=6, truncate="sample", seed=3))


def test_csc_dense_and_layers_agree(small, tmp_path):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    ref = gad.tokenize_anndata(a, tok, CellSpec(values=True))
    dense = a.copy()
    dense.X = a.X.toarray()
    csc = a.copy()
    csc.X = a.X.tocsc()
    layered = a.copy()
    layered.layers["counts"] = a.X.copy()
    layered.X = sp.csr_matrix(a.shape, dtype=np.float32)
    assert gad.tokenize_anndata(dense, tok, CellSpec(values=True),
                                read=AnnDataOptions(chunk_rows=5)) == ref
    assert gad.tokenize_anndata(csc, tok, CellSpec(values=True)) == ref
    assert gad.tokenize_anndata(layered, tok, CellSpec(values=True),
                                read=AnnDataOptions(layer="counts")) == ref
    for name, obj in (("dense", dense), ("csc", csc), ("layer", layered)):
        p = tmp_path / f"{name}.h5ad"
        obj.write_h5ad(p)
        got = gad.tokenize_anndata(p, tok, CellSpec(values=True),
                                   read=AnnDataOptions(layer="counts" if name == "layer" else None, chunk_rows=6))
        assert got == ref, name
        assert np.array_equal(got.values, ref.values)


@pytest.mark.parametrize("fmt", ["csr", "csc", "dense"])
def test_backed_views_tokenize_only_their_cells(small, tmp_path, fmt):
    """A view of a backed AnnData (``b[10:20]``) used to tokenize every cell of the file."""
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    a.X = {"csr": a.X, "csc": a.X.tocsc(), "dense": a.X.toarray()}[fmt]
    p = tmp_path / f"{fmt}.h5ad"
    a.write_h5ad(p)
    b = anndata.read_h5ad(p, backed="r")
    try:
        mask = np.arange(a.n_obs) % 3 == 1
        for sel in (np.s_[4:9], np.s_[[7, 0, 3]], mask, np.s_[2:12, ::2], np.s_[5:5]):
            got = gad.tokenize_anndata(b[sel], tok, CellSpec(values=True))
            ref = gad.tokenize_anndata(a[sel].copy(), tok, CellSpec(values=True))
            assert got == ref
            assert np.array_equal(got.values, ref.values)
    finally:
        b.file.close()


def test_backed_csc_larger_than_the_budget_is_refused(small, tmp_path):
    universe, variables, rows = small
    a = _adata(rows, variables)
    a.X = a.X.tocsc()
    p = tmp_path / "csc.h5ad"
    a.write_h5ad(p)
    with pytest.raises(AnnDataError, match=r"column-major \(CSC.*tocsr\(\)"):
        gad.tokenize_anndata(p, _tokenizer(universe), memory_mb=1e-5)


def test_min_count_binarizes_and_one_based_names(small):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    got = gad.tokenize_anndata(a, tok,
                               CellSpec(min_count=3, unique=False, unknown="region", values=True))
    _check(got, *naive.cells(universe, variables, rows, unk_id=tok.unk_token_id, min_count=3,
                             unknown="region", unique=False))
    shifted = [(c, s + 1, e) for c, s, e in variables]
    b = _adata(rows, shifted)
    assert gad.var_regions(b, one_based=True).to_strings() == \
        [f"{c}:{s}-{e}" for c, s, e in variables]
    assert gad.tokenize_anndata(b, tok, read=AnnDataOptions(one_based=True)) == gad.tokenize_anndata(a, tok)


def test_var_map_is_reused_only_while_names_universe_and_settings_hold(small):
    import gc

    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    ref = lambda t, obj, **kw: naive.cells(  # noqa: E731
        t, [v for v in variables], rows[:len(obj)], unk_id=tok.unk_token_id, **kw)[0]
    vm = gvar._adata_var_map(a, tok, None, None, False, None)
    # mini-batch views share the parent's var_names: one map for all of them
    assert gvar._adata_var_map(a[3:9], tok, None, None, False, None) is vm
    assert gad.tokenize_anndata(a[:5], tok).to_list() == ref(universe, a[:5])
    # another tokenizer object over the same universe and settings may share it too; another
    # universe, other settings or other parsing options may not
    assert gvar._adata_var_map(a, Tokenizer(tok.universe), None, None, False, None) is vm
    other = [(c, s + 30, e + 30) for c, s, e in universe]
    assert gad.tokenize_anndata(a, _tokenizer(other)).to_list() == ref(other, a)
    assert gvar._adata_var_map(a, tok, None, None, False, None) is not vm
    strict = Tokenizer(tok.universe, settings=TokenizerSettings(min_overlap=150))
    want = ref(universe, a, min_overlap=150)
    assert want != ref(universe, a)  # the setting matters here
    assert gad.tokenize_anndata(a, strict).to_list() == want
    # new var_names: a new Index object, a new map
    b = a.copy()
    b.var_names = [f"{c}:{s + 100}-{e + 100}" for c, s, e in variables]
    got = gad.tokenize_anndata(b, tok).to_list()
    assert got == naive.cells(universe, [(c, s + 100, e + 100) for c, s, e in variables], rows,
                              unk_id=tok.unk_token_id)[0]
    # region columns can be edited in place: never cached
    c = _adata(rows, variables, names="columns")
    assert gad.tokenize_anndata(c, tok).to_list() == ref(universe, c)
    c.var["start"] += 100
    c.var["end"] += 100
    assert gad.tokenize_anndata(c, tok).to_list() == got
    # an entry leaves with its Index
    key = id(b.var_names)
    assert key in gvar._VAR_MAPS
    del b
    gc.collect()
    assert key not in gvar._VAR_MAPS


def test_outputs_list_tensors_and_corpus(small, tmp_path):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    ref = gad.tokenize_anndata(a, tok, CellSpec(values=True))
    ids = list(ref)
    vals = [ref.row_values(i) for i in range(len(ref))]
    assert [x.tolist() for x in ids] == ref.to_list()
    assert np.array_equal(np.concatenate(vals), ref.values)
    out = tok.pad(ref, padding=True, return_tensors="np")
    lens = ref.lengths
    assert out["input_ids"].shape == (len(rows), lens.max())
    assert out["attention_mask"].sum(axis=1).tolist() == lens.tolist()
    assert out["input_ids"][out["attention_mask"] == 1].tolist() == ref.data.tolist()
    assert (out["input_ids"][out["attention_mask"] == 0] == tok.pad_token_id).all()
    assert out["values"][out["attention_mask"] == 1].tolist() == ref.values.tolist()
    c = gad.tokenize_anndata(a, tok, CellSpec(values=True), read=AnnDataOptions(chunk_rows=5),
                             out=tmp_path / "cells.gtokc", obs_columns=["cell_type"])
    assert isinstance(c, Corpus)
    assert c.names == list(a.obs_names)
    assert c.meta["cell_type"] == list(a.obs["cell_type"].astype(str))
    assert c.fingerprint == tok.fingerprint
    assert c.to_ragged().to_list() == ref.to_list()
    p = tmp_path / "a.h5ad"
    a.write_h5ad(p)
    c2 = gad.tokenize_anndata(p, tok, read=AnnDataOptions(chunk_rows=7),
                              out=str(tmp_path / "c2.gtokc"), obs_columns=["cell_type"])
    assert c2.names == c.names and c2.meta["cell_type"] == c.meta["cell_type"]
    assert c2.to_ragged().to_list() == ref.to_list()
    pytest.importorskip("torch")  # last: all but the torch tensors is checked without torch
    pt = tok.pad(gad.tokenize_anndata(a, tok), padding=True, return_tensors="pt")
    assert pt["input_ids"].numpy().tolist() == out["input_ids"].tolist()
    assert "values" not in pt


def test_errors_say_what_was_found(small, tmp_path):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    bad = anndata.AnnData(X=a.X, var=pd.DataFrame({"gene": ["x"] * a.n_vars},
                                                  index=[str(i) for i in range(a.n_vars)]))
    with pytest.raises(AnnDataError, match=r"no region information.*\['gene'\].*'0', '1', '2'"):
        gad.tokenize_anndata(bad, tok)
    with pytest.raises(AnnDataError, match="no column"):
        gad.var_regions(a, region_columns=("c", "s", "e"))
    neg = a.copy()
    neg.X = neg.X.copy()
    neg.X.data[3] = -1
    with pytest.raises(AnnDataError, match=r"negative value \(counts must be >= 0\) at row 0, "
                                           r"stored entry 3 \(column \d+, value -1.0\)"):
        gad.tokenize_anndata(neg, tok)
    nan = a.copy()
    nan.X = nan.X.copy()
    nan.X.data[0] = np.nan
    with pytest.raises(AnnDataError, match="NaN"):
        gad.tokenize_anndata(nan, tok)
    p = tmp_path / "oob.h5ad"
    a.write_h5ad(p)
    with h5py.File(p, "r+") as f:
        f["X/indices"][5] = a.n_vars + 3
    with pytest.raises(AnnDataError, match=r"column index is outside \[0, n_vars\)"):
        gad.tokenize_anndata(p, tok)
    with pytest.raises(AnnDataError, match="no layer 'nope'"):
        gad.tokenize_anndata(a, tok, read=AnnDataOptions(layer="nope"))
    with pytest.raises(AnnDataError, match="no matrix 'layers/nope'"):
        gad.tokenize_anndata(p, tok, read=AnnDataOptions(layer="nope"))
    with pytest.raises(ValueError, match="order must be one of"):
        gad.tokenize_anndata(a, tok, CellSpec(order="random"))


def test_empty_matrix_and_empty_rows(small):
    universe, variables, _ = small
    tok = _tokenizer(universe)
    a = _adata([[], []], variables)
    assert gad.tokenize_anndata(a, tok).to_list() == [[tok.unk_token_id]] * 2
    assert gad.tokenize_anndata(a, tok, CellSpec(unknown="drop")).to_list() == [[], []]
    none = _adata([], variables)
    assert len(gad.tokenize_anndata(none, tok)) == 0


# ---------------------------------------------------------------------------------- real files
@needs_shared
def test_pbmc_real_file_matches_the_loop(tmp_path):
    a = anndata.read_h5ad(PBMC)
    chroms, starts, ends = (a.var["chr"].astype(str).tolist(), a.var["start"].tolist(),
                            a.var["end"].tolist())
    peaks = list(zip(chroms, starts, ends))
    universe = peaks[::2] + [(c, s + 250, e + 250) for c, s, e in peaks[::3]]
    tok = _tokenizer(universe)
    got = gad.tokenize_anndata(PBMC, tok, CellSpec(values=True))
    _check(got, *naive.cells(universe, peaks, naive.csr_rows(a.X), unk_id=tok.unk_token_id))
    backed = anndata.read_h5ad(PBMC, backed="r")
    try:
        assert gad.tokenize_anndata(backed, tok) == got
    finally:
        backed.file.close()
    c = gad.tokenize_anndata(PBMC, tok, out=tmp_path / "pbmc.gtokc", obs_columns=["cell_type"])
    assert c.names == list(a.obs_names)
    assert c.meta["cell_type"] == a.obs["cell_type"].astype(str).tolist()


@needs_shared
@pytest.mark.parametrize("names", ["colon", "dash", "columns"])
def test_gendata_files(tmp_path, names):
    p = tmp_path / f"g_{names}.h5ad"
    subprocess.run([sys.executable, str(GENDATA), "h5ad", str(p), "--cells", "30",
                    "--peaks", "400", "--nnz", "100", "--names", names], check=True)
    a = anndata.read_h5ad(p)
    rs = gad.var_regions(p)
    assert rs == gad.var_regions(a)
    variables = list(zip(np.asarray(rs.chrom_names, dtype=object)[rs.codes].tolist(),
                         rs.starts.tolist(), rs.ends.tolist()))
    universe = variables[::3] + [(c, s + 100, e + 300) for c, s, e in variables[1::4]]
    tok = _tokenizer(universe, unknown="region")
    got = gad.tokenize_anndata(p, tok, CellSpec(unique=False, values=True),
                               read=AnnDataOptions(chunk_rows=8))
    _check(got, *naive.cells(universe, variables, naive.csr_rows(a.X), unk_id=tok.unk_token_id,
                             unknown="region", unique=False))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text("chrUn_:-AK1", min_size=0, max_size=8),
                          st.sampled_from(":-_"), st.integers(0, 10**12),
                          st.sampled_from("-_"), st.integers(0, 10**12),
                          st.sampled_from(["", ",", "x"])), min_size=1, max_size=6),
       st.sampled_from([None, ":", "-", "_"]), st.booleans())
def test_fast_var_name_parser_matches_parse_region_strings(parts, sep, one_based):
    from genotok.errors import RegionParseError
    from genotok.regions import parse_region_strings

    names = [f"{c}{s1}{a}{s2}{b}{junk}" for c, s1, a, s2, b, junk in parts]
    fast = gvar._parse_names_fast(names, sep, one_based)
    try:
        ref = parse_region_strings(names, sep=sep, one_based=one_based)
    except RegionParseError:
        ref = None
    if fast is not None:  # None: the reference parser decides (and words the error)
        assert ref is not None and fast == ref
        assert fast.chrom_names == ref.chrom_names and np.array_equal(fast.codes, ref.codes)
    if ref is not None and not any(p[-1] for p in parts):
        assert fast is not None


# ---------------------------------------------------------------------------------- validation
def _naive_compressed_ok(indptr, indices, n_major, n_minor) -> bool:
    """What a valid CSR (CSC: rows and columns swapped) is, one rule at a time."""
    if len(indptr) != n_major + 1 or indptr[0] != 0 or indptr[-1] != len(indices):
        return False
    if any(b < a for a, b in zip(indptr[:-1], indptr[1:])):
        return False
    return all(0 <= i < n_minor for i in indices)


@st.composite
def raw_compressed(draw):
    n_rows, n_cols = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    fmt = draw(st.sampled_from(["csr", "csc"]))
    n_major, n_minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
    nnz = draw(st.integers(0, 6))
    if draw(st.booleans()):  # mostly plausible pointers: sorted, from 0 to nnz
        inner = sorted(draw(st.lists(st.integers(0, nnz), min_size=n_major - 1,
                                     max_size=n_major - 1))) if n_major else []
        indptr = ([0] + inner + [nnz]) if n_major else [0]
    else:
        indptr = draw(st.lists(st.integers(-2, nnz + 2), min_size=max(0, n_major - 1),
                               max_size=n_major + 2))
    indices = draw(st.lists(st.integers(-2, n_minor + 1), min_size=nnz, max_size=nnz))
    return fmt, (n_rows, n_cols), indptr, indices


@settings(max_examples=300, deadline=None)
@given(raw_compressed(), st.sampled_from([np.int32, np.int64, np.uint64]))
def test_memory_source_accepts_exactly_the_valid_matrices(raw, idx_dtype):
    """_MemorySource (what every in-memory matrix passes) against the naive rules: a valid
    CSR/CSC gives the same cells as a per-entry loop; anything else is an AnnDataError, never a
    scipy conversion of unchecked arrays."""
    fmt, shape, indptr, indices = raw
    if idx_dtype == np.uint64 and (min(indptr + indices, default=0) < 0):
        return  # not representable
    n_major, n_minor = shape if fmt == "csr" else shape[::-1]
    X = (sp.csr_matrix if fmt == "csr" else sp.csc_matrix)(shape, dtype=np.float32)
    X.indptr = np.array(indptr, dtype=idx_dtype)
    X.indices = np.array(indices, dtype=idx_dtype)
    X.data = np.arange(1, len(indices) + 1, dtype=np.float32)
    ok = _naive_compressed_ok(indptr, indices, n_major, n_minor)
    if not ok:
        with pytest.raises(AnnDataError):
            gsrc._MemorySource(X, "X")
        return
    src = gsrc._MemorySource(X, "X")
    dense = np.zeros(shape, np.float32)
    for m in range(n_major):
        for j in range(indptr[m], indptr[m + 1]):
            r, c = (m, indices[j]) if fmt == "csr" else (indices[j], m)
            dense[r, c] += X.data[j]
    got = sp.csr_matrix((src.data, src.indices, src.indptr), shape=shape).toarray()
    np.testing.assert_array_equal(got, dense)


def test_no_cut_is_max_length_none_and_truncation_is_a_strategy(small):
    universe, variables, rows = small
    tok = _tokenizer(universe)
    a = _adata(rows, variables)
    full = gad.tokenize_anndata(a, tok)
    assert gad.tokenize_anndata(a, tok, CellSpec(max_length=None)) == full
    for no_cut in (False, None, True):  # max_length=None is no cut; truncation is a strategy
        with pytest.raises(ValueError, match="truncation must be one of 'top', 'sample'"):
            CellSpec(max_length=1, truncation=no_cut)
    assert gad.tokenize_anndata(a, tok, CellSpec(max_length=1, truncation="top")) == \
        gad.tokenize_anndata(a, tok, CellSpec(max_length=1, truncation="top"))


# ---------------------------------------------------------------------------------- fixed costs
def _gene_case(medians=(2.0, 0.0, 1.0)):
    """Three genes (the second without a median: its values encode to 0), 40 cells."""
    import genotok

    rng = np.random.default_rng(3)
    x = sp.random(40, 3, density=0.7, format="csr", random_state=rng, dtype=np.float32)
    x.data = np.ceil(x.data * 5).astype(np.float32)
    a = anndata.AnnData(x, var=pd.DataFrame(index=["G1", "G2", "G3"]))
    vocab = {"<pad>": 0, "<mask>": 1, "G1": 4, "G2": 2, "G3": 3}
    tok, spec = genotok.presets.geneformer(vocab, dict(zip(["G1", "G2", "G3"], medians)),
                                           id_column="var_names")
    return a, tok, spec


def test_small_chunks_run_the_kernels_on_the_calling_thread(monkeypatch):
    """A parallel region only wakes numba's workers for a chunk of a few entries (10-50 ms a
    kernel on a busy box): below SERIAL_BELOW the kernels see one thread."""
    import numba

    from genotok.kernels import values as VK

    a, tok, spec = _gene_case()
    seen, fused = [], []
    real, real_fused = K.mono_count, VK.rank_rows
    monkeypatch.setattr(K, "mono_count", lambda *x: seen.append(numba.get_num_threads())
                        or real(*x))
    monkeypatch.setattr(VK, "rank_rows", lambda *x: fused.append(numba.get_num_threads())
                        or real_fused(*x))
    want = _rows_of(gad.tokenize_anndata(a, tok, spec))  # the fused kernel (features.ranker)
    monkeypatch.setattr(gcells, "_rank_fused", lambda *x: False)  # the general path
    assert _rows_of(gad.tokenize_anndata(a, tok, spec)) == want
    assert seen == [1] and fused == [1]
    monkeypatch.setattr(gcells, "SERIAL_BELOW", 0)
    assert _rows_of(gad.tokenize_anndata(a, tok, spec)) == want
    assert seen[-1] == numba.get_num_threads()


def test_an_encoding_counts_with_the_values_at_once(monkeypatch):
    """A value encoding gives 0 to a feature without a median: the count that does not read
    the values would be undone by the fill (both passes twice), so it is not tried."""
    a, tok, spec = _gene_case()
    used = []
    real = K.mono_count
    monkeypatch.setattr(K, "mono_count", lambda *x: used.append(x[8]) or real(*x))
    monkeypatch.setattr(gcells, "_rank_fused", lambda *x: False)  # the general path
    r = gad.tokenize_anndata(a, tok, spec)
    assert used == [True]
    dense = a.X.toarray()
    assert 2 not in r.data and len(r) == 40  # G2 has no median: never a token
    for row, toks in zip(dense, _rows_of(r)):
        assert sorted(toks) == sorted({0: 4, 2: 3}[j] for j in np.flatnonzero(row) if j != 1)


@pytest.mark.parametrize("column", [["1"] * 20, pd.Categorical(["1", "0"] * 10), ["True"] * 20],
                         ids=["strings", "categorical-strings", "string-booleans"])
def test_a_cell_filter_column_of_strings_is_refused(tmp_path, column):
    """Was: every cell left out silently ("1" == 1 is False), an empty output."""
    from genotok import examples_dir

    a = anndata.read_h5ad(examples_dir() / "pbmc.h5ad")
    a.obs["fp"] = column
    tok = Tokenizer.from_bed(examples_dir() / "universe.bed")
    with pytest.raises(AnnDataError, match="cell filter obs column 'fp' holds .*numbers or "
                       "booleans"):
        gad.tokenize_anndata(a, tok, CellSpec(cell_filter="fp"))
    a.obs["fp"] = [1.0, np.nan] * 10  # numbers, NaN not 1: those cells left out
    assert len(gad.tokenize_anndata(a, tok, CellSpec(cell_filter="fp"))) == 10
    a.obs["fp"] = pd.Categorical([1, 0] * 10)  # categories of numbers are numbers
    assert len(gad.tokenize_anndata(a, tok, CellSpec(cell_filter="fp"))) == 10
    a.write_h5ad(tmp_path / "c.h5ad")  # by path: a categorical column is read as objects
    assert len(gad.tokenize_anndata(tmp_path / "c.h5ad", tok, CellSpec(cell_filter="fp"))) == 10
    a.obs["fp"] = column
    a.write_h5ad(tmp_path / "s.h5ad")
    with pytest.raises(AnnDataError, match="s.h5ad.*cell filter obs column 'fp'"):
        gad.tokenize_anndata(tmp_path / "s.h5ad", tok, CellSpec(cell_filter="fp"))
