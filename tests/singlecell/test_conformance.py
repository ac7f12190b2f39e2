"""The conformance suites of the cell-source and value-encoding seams (genotok.testing) run on
every registered implementation, and catch planted broken ones: a source that skips a row,
an encoding that writes into its input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

ad = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")

import genotok
from genotok import Tokenizer
from genotok.singlecell import (AnnDataSource, CellSource, memory_matrix,
                                register_source, unregister_source)
from genotok.singlecell import spec as S
from genotok.singlecell.sources import registry
from genotok.testing import check_encoding, check_source
from tests.singlecell.test_containers import PEAKS, UNIVERSE, _mods, _tenx, _write_h5mu

EX = genotok.examples_dir()


def _with_obs(a):
    """``a`` with obs columns of each kind a source reads (text, category, number, NaN)."""
    n = a.n_obs
    a.obs["donor"] = [f"d{i % 3}" for i in range(n)]
    a.obs["cell_type"] = pd.Categorical(["B", "T"] * (n // 2) + ["B"] * (n % 2))
    a.obs["score"] = np.where(np.arange(n) % 4 == 1, np.nan, np.arange(n) * 0.5)
    return a


def _anndata(tmp_path):
    atac, _ = _mods()
    return _with_obs(atac), {}


def _h5ad(tmp_path):
    return EX / "pbmc.h5ad", {"obs": ad.read_h5ad(EX / "pbmc.h5ad").obs}


def _h5mu(tmp_path):
    atac, rna = _mods()
    p = tmp_path / "cells.h5mu"
    _write_h5mu(p, {"rna": rna, "atac": _with_obs(atac)})
    return p, {"obs": atac.obs}


def _10x(tmp_path):
    return _tenx(tmp_path)[0], {"tokenizer": Tokenizer(UNIVERSE)}


def _fragments(tmp_path):
    return EX / "fragments.tsv.gz", {"tokenizer": Tokenizer.from_bed(EX / "universe.bed")}


def _zarr(tmp_path):
    pytest.importorskip("zarr")
    from tests.singlecell._cells import adata, counts
    from tests.singlecell.test_zarr import _write

    a = adata(counts(7, 6, 0.5, 3))
    return _write(a, tmp_path / "cells.zarr", 3), {"obs": a.obs}


def _mtx(tmp_path):
    from tests.singlecell._cells import adata, counts
    from tests.singlecell.test_cellranger import write_folder

    return write_folder(tmp_path / "filtered_peak_bc_matrix", adata(counts(7, 6, 0.5, 3)),
                        layout="atac", order="feature"), {}


def _soma(tmp_path):
    pytest.importorskip("tiledbsoma")
    from tests.singlecell._cells import adata, counts
    from tests.singlecell.test_soma import write

    a = adata(counts(7, 6, 0.5, 3))
    return write(a, tmp_path / "exp"), {"obs": a.obs}


#: an example input of every registered source kind: a new source adds its own here
EXAMPLES = {"anndata": _anndata, "h5ad": _h5ad, "h5mu": _h5mu, "10x": _10x,
            "fragments": _fragments, "zarr": _zarr, "10x-mtx": _mtx, "soma": _soma}


@pytest.mark.parametrize("kind", [c.kind for c in registry()])
def test_every_registered_source_keeps_the_contract(tmp_path, kind):
    cls = next(c for c in registry() if c.kind == kind)
    assert kind in EXAMPLES, f"no example input for the registered source {kind!r}"
    example, context = EXAMPLES[kind](tmp_path)
    if cls.has_obs and kind != "10x":  # (a 10x file has no obs columns)
        assert len(context.get("obs", getattr(example, "obs", ())).columns), \
            f"the example of {kind!r} (a source with obs) gives obs columns to check"
    check_source(cls, example, **context)


#: instances of the encodings that need arguments (per-column state for check_encoding's
#: N_COLS columns)
INSTANCES = {"rank_by_median": S.RankByMedian(np.array([1.0, 2.0, np.nan, 0.5, 3.0, 1.0]))}


@pytest.mark.parametrize("name", sorted(S.encodings()))
def test_every_registered_encoding_keeps_the_contract(name):
    check_encoding(INSTANCES.get(name, S.encodings()[name]))


# ------------------------------------------------------------------------- planted broken ones
class _SkipsARow(AnnDataSource):
    """Drops row 1 of its first chunk, and says nothing."""

    kind = "planted-skips-a-row"

    def chunks(self, budget, per_nnz, chunk_rows):
        from genotok.singlecell import Chunk

        for ch in super().chunks(budget, per_nnz, chunk_rows):
            if ch.row0 == 0 and ch.n_rows > 2:
                ptr = np.delete(np.asarray(ch.indptr), 1)
                yield Chunk(ch.row0, ptr, ch.indices, ch.data, ch.n_cols)
            else:
                yield ch


class _SameNames(AnnDataSource):
    """Every row named alike."""

    kind = "planted-same-names"

    def names(self):
        return ["cell"] * self.n_rows


class _ReadsDamaged(CellSource):
    """A ``.npy`` matrix read with NumPy's own errors (a truncated file: ValueError)."""

    kind, suffixes = "planted-npy", (".planted.npy",)

    @classmethod
    def open(cls, path, read=None, **context):
        return cls(path)

    def __init__(self, path):
        self.read = self.options()
        self.path = self.where = str(path)
        self.matrix = memory_matrix(np.load(path), self.where)
        self.n_rows, self.n_cols = self.matrix.n_rows, self.matrix.n_cols

    def features(self):
        return pd.DataFrame(index=PEAKS[:self.n_cols])

    def names(self):
        return [f"c{i}" for i in range(self.n_rows)]


class _Overlaps(AnnDataSource):
    """Every chunk after the first starts one row early (the previous chunk's last row again),
    its ``row0`` honest about it."""

    kind = "planted-overlaps"

    def chunks(self, budget, per_nnz, chunk_rows):
        from genotok.singlecell import Chunk

        prev = None
        for ch in super().chunks(budget, per_nnz, chunk_rows):
            if prev is None:
                yield ch
            else:  # prepend prev's last row
                a, b = int(prev.indptr[-2]), int(prev.indptr[-1])
                ptr = np.asarray(ch.indptr, np.int64) - int(ch.indptr[0])
                yield Chunk(ch.row0 - 1, np.concatenate([[0], ptr + (b - a)]),
                            np.concatenate([prev.indices[a:b], ch.indices[ch.indptr[0]:]]),
                            np.concatenate([prev.data[a:b], ch.data[ch.indptr[0]:]]),
                            ch.n_cols)
            prev = ch


class _WrongRow0(AnnDataSource):
    """Every chunk says it starts at row 0."""

    kind = "planted-wrong-row0"

    def chunks(self, budget, per_nnz, chunk_rows):
        from genotok.singlecell import Chunk

        for ch in super().chunks(budget, per_nnz, chunk_rows):
            yield Chunk(0, ch.indptr, ch.indices, ch.data, ch.n_cols)


class _ShiftedRows(AnnDataSource):
    """Every chunk after the first holds the rows one before those its ``row0`` names (an
    overlap its ``row0`` hides; the source's last row never read)."""

    kind = "planted-shifted-rows"

    def chunks(self, budget, per_nnz, chunk_rows):
        from genotok.singlecell import Chunk

        X = self.matrix
        for ch in super().chunks(budget, per_nnz, chunk_rows):
            if ch.row0 == 0:
                yield ch
                continue
            whole = next(iter(super().chunks(1 << 40, per_nnz, None)))  # one chunk: every row
            lo, hi = ch.row0 - 1, ch.row0 - 1 + ch.n_rows
            ptr = np.asarray(whole.indptr[lo:hi + 1], np.int64)
            yield Chunk(ch.row0, ptr, whole.indices, whole.data, X.n_cols)


class _ShiftedObs(AnnDataSource):
    """Its obs values are those of the row before (the first row's, the last's): the names
    and every window's length right, the values a row off."""

    kind = "planted-shifted-obs"

    def obs(self, columns):
        names, whole = super().obs(columns)(0, self.n_rows)
        whole = {c: np.roll(np.asarray(v, dtype=object), 1) for c, v in whole.items()}
        return lambda lo, hi: (names[lo:hi], {c: v[lo:hi] for c, v in whole.items()})

    def obs_values(self, columns):
        read = self.obs(columns)
        return lambda lo, hi: read(lo, hi)[1]


class _LosesObs(AnnDataSource):
    """Reads the obs columns asked as if there were none (the names only)."""

    kind = "planted-loses-obs"

    def obs(self, columns):
        read = super().obs(columns)
        return lambda lo, hi: (read(lo, hi)[0], {})


class _ObsWindowsOff(AnnDataSource):
    """Reads the whole table right, a window of rows one row late (``obs_values``)."""

    kind = "planted-obs-windows-off"

    def obs_values(self, columns):
        read = super().obs_values(columns)
        n = self.n_rows
        return lambda lo, hi: read(min(lo + 1, n), min(hi + 1, n))


@pytest.mark.parametrize("planted, rule", [
    (_ShiftedObs, "obs columns read whole equal the example's, row for row"),
    (_LosesObs, "obs columns read whole .* 'donor': missing"),
    (_ObsWindowsOff, "obs and obs_values of rows lo:hi are the whole read's rows"),
])
def test_a_source_that_misreads_its_obs_fails(planted, rule):
    """Was: check_source read obs(()) and an unknown column only, so a source whose obs
    values were a row off, or missing, passed."""
    a = _with_obs(_mods()[0])
    register_source(planted)
    try:
        check_source(AnnDataSource, a)  # the real one keeps the rule
        with pytest.raises(AssertionError, match=rule):
            check_source(planted, a)
    finally:
        unregister_source(planted)


@pytest.mark.parametrize("planted, rule", [
    (_SkipsARow, "chunks cover every row once, in order"),
    (_SameNames, "row names are unique"),
    (_Overlaps, "chunks cover every row once, in order"),
    (_WrongRow0, "chunks cover every row once, in order"),
    (_ShiftedRows, "every chunking gives the same matrix"),
])
def test_planted_broken_sources_fail(planted, rule):
    a, _ = _mods()
    register_source(planted)
    try:
        with pytest.raises(AssertionError, match=rule):
            check_source(planted, a)
    finally:
        unregister_source(planted)


def test_a_source_whose_damaged_file_is_not_a_genotok_error_fails(tmp_path):
    p = tmp_path / "x.planted.npy"
    np.save(p, np.arange(600, dtype=np.float64).reshape(100, 6) % 3)
    register_source(_ReadsDamaged)
    try:
        with pytest.raises(AssertionError, match="damaged input is a GenotokError"):
            check_source(_ReadsDamaged, p, tokenizer=Tokenizer(UNIVERSE))
    finally:
        unregister_source(_ReadsDamaged)


def test_an_unregistered_source_fails():
    a, _ = _mods()
    with pytest.raises(AssertionError, match="registered"):
        check_source(_SameNames, a)


def test_an_encoding_without_encode_fails_at_once():
    """``Encoding.encode`` is abstract: an encoding that forgets it cannot be made, and
    check_encoding names it."""
    @dataclass(frozen=True)
    class Forgets(S.Encoding):
        name: ClassVar[str] = "forgets"

    with pytest.raises(TypeError, match="encode"):
        Forgets()
    with pytest.raises(AssertionError, match=r"check_encoding\(Forgets\).*encode missing"):
        check_encoding(Forgets)


def test_a_source_missing_an_abstract_method_fails_at_once():
    """A source that forgets ``names`` cannot be made, and check_source names what is
    missing; one that sets no matrix and keeps the default ``chunks`` is a SourceError, not
    a NotImplementedError."""
    class Forgets(CellSource):
        kind = "forgets"

        @classmethod
        def open(cls, obj, read=None, **context):
            return cls()

        def features(self):
            return None

    with pytest.raises(TypeError, match="names"):
        Forgets()
    with pytest.raises(AssertionError, match=r"check_source\(Forgets\).*names missing"):
        check_source(Forgets, _mods()[0])

    class NoMatrix(Forgets):
        def names(self):
            return []

    with pytest.raises(genotok.SourceError, match="sets `matrix`"):
        list(NoMatrix().chunks(1 << 20, 16, None))


@dataclass(frozen=True)
class _Mutates(S.Encoding):
    """Doubles the values in place."""

    name: ClassVar[str] = "planted_mutates"

    def encode(self, chunk):
        chunk.data *= 2
        return chunk.data


@dataclass(frozen=True)
class _Noisy(S.Encoding):
    """A fresh random draw every call."""

    name: ClassVar[str] = "planted_noisy"

    def encode(self, chunk):
        return chunk.data * np.random.default_rng().random(chunk.data.size)


@dataclass(frozen=True)
class _ByChunk(S.Encoding):
    """Each value divided by the chunk's first row's total: depends on the chunking."""

    name: ClassVar[str] = "planted_by_chunk"

    def encode(self, chunk):
        return chunk.data / max(1.0, float(chunk.data[:int(chunk.indptr[1])].sum()))


@dataclass(frozen=True)
class _OneShort(S.Encoding):
    """One value fewer than the chunk's entries (its last entry dropped)."""

    name: ClassVar[str] = "planted_one_short"

    def encode(self, chunk):
        return np.asarray(chunk.data[:-1], np.float64)


@dataclass(frozen=True)
class _PerRow(S.Encoding):
    """One value per row, not per stored entry (a plausible mix-up: a row's total)."""

    name: ClassVar[str] = "planted_per_row"

    def encode(self, chunk):
        return np.add.reduceat(np.asarray(chunk.data, np.float64),
                               np.asarray(chunk.indptr[:-1])) if chunk.data.size else \
            np.zeros(chunk.n_rows)


@pytest.mark.parametrize("planted, rule", [
    (_OneShort, "one number per stored entry"),
    (_PerRow, "one number per stored entry"),
    (_Mutates, "changed its input chunk|writes into its input chunk"),
    (_Noisy, "deterministic"),
    (_ByChunk, "do not depend on chunking"),
])
def test_planted_broken_encodings_fail(monkeypatch, planted, rule):
    monkeypatch.setitem(S.ENCODINGS, planted.name, planted)
    with pytest.raises(AssertionError, match=rule):
        check_encoding(planted)


def test_an_unregistered_encoding_fails():
    with pytest.raises(AssertionError, match="not registered by its name 'planted_mutates'"):
        check_encoding(_Mutates)


def test_the_driver_refuses_a_step_that_writes_its_input(monkeypatch):
    """The driver hands the steps read-only views: the input's own arrays can be among them."""
    monkeypatch.setitem(S.ENCODINGS, _Mutates.name, _Mutates)
    X = np.array([[1.0, 0, 2, 0, 0, 0]], np.float32)
    a = ad.AnnData(X.copy(), var=pd.DataFrame(index=PEAKS))
    with pytest.raises(ValueError, match="read-only"):
        genotok.tokenize_anndata(a, Tokenizer(UNIVERSE), genotok.CellSpec(encoding=_Mutates()))
    np.testing.assert_array_equal(np.asarray(a.X), X)
