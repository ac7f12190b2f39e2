"""Cell sources: the protocol, the one registry (object type, suffix, magic bytes), the one
driver (``tokenize_cells``) and the pipeline asking the same registry."""

from __future__ import annotations

import gzip
import shutil

import anndata
import numpy as np
import pandas as pd
import pytest

import genotok
from genotok import CellSpec, Tokenizer
from genotok.errors import SourceError
from genotok.pipeline.plan import cell_class, input_kind
from genotok.singlecell import (
    AnnDataSource,
    CellSource,
    FragmentSource,
    H5adSource,
    memory_matrix,
    open_source,
    register_source,
    source_class,
    tokenize_anndata,
    tokenize_cells,
    tokenize_fragments,
    unregister_source,
)
from genotok.singlecell import sources

EX = genotok.examples_dir()


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(EX / "universe.bed")


def test_registry_by_type_then_suffix_then_magic(tmp_path):
    a = anndata.AnnData(np.zeros((2, 1)), var=pd.DataFrame(index=["chr1:0-10"]))
    assert source_class(a) is AnnDataSource
    assert source_class("x.H5AD") is H5adSource  # suffixes match whatever the case
    assert source_class("x.tsv.gz") is FragmentSource and source_class("x.tsv") is FragmentSource
    h5 = tmp_path / "cells.dat"
    shutil.copy(EX / "pbmc.h5ad", h5)
    assert source_class(h5) is H5adSource  # HDF5 magic
    frag = tmp_path / "frags.bed.gz"
    shutil.copy(EX / "fragments.tsv.gz", frag)
    assert source_class(frag) is FragmentSource  # gzip + the five fragment columns
    bed = tmp_path / "peaks.bed.gz"
    bed.write_bytes(gzip.compress(b"chr1\t10\t20\n"))
    assert source_class(bed) is None  # gzip, but three BED columns
    assert source_class(EX / "peaks" / "sample4.narrowPeak.gz") is None
    assert source_class(tmp_path) is None  # a folder has no first bytes


def test_a_later_class_wins_by_type_and_magic(tmp_path):
    """Types and first bytes are asked of the latest registered class first: a container
    registered after ``H5adSource`` (an HDF5 file too) or after ``AnnDataSource`` (an
    AnnData-like object too) is found, while suffixes still decide before the bytes."""

    class Container(AnnDataSource):
        kind, suffixes, magic = "container", (".ctr",), (b"\x89HDF",)

    h5 = tmp_path / "cells.dat"
    shutil.copy(EX / "pbmc.h5ad", h5)
    a = anndata.AnnData(np.zeros((1, 1)))
    register_source(Container)
    try:
        assert source_class(h5) is Container and source_class(a) is Container
        assert source_class("x.h5ad") is H5adSource and source_class("x.ctr") is Container
    finally:
        unregister_source(Container)
    assert source_class(h5) is H5adSource and source_class(a) is AnnDataSource


def test_open_source_names_what_no_source_reads(tmp_path):
    with pytest.raises(SourceError, match=r"universe\.bed: not a cell input; the cell sources "
                                          r"read .*h5ad \(\.h5ad\)"):
        open_source(EX / "universe.bed")
    with pytest.raises(SourceError, match=r"nope\.xyz: no such file"):
        open_source(tmp_path / "nope.xyz")
    with pytest.raises(SourceError, match="a list is not a cell input"):
        open_source([1, 2])
    with pytest.raises(TypeError, match="tokenizer="):
        open_source(EX / "fragments.tsv.gz")  # counted over a universe: needs one


def test_register_source_refuses_what_is_not_a_source():
    with pytest.raises(TypeError, match="CellSource subclass"):
        register_source(dict)

    class Nameless(CellSource):
        pass

    with pytest.raises(TypeError, match="names its kind"):
        register_source(Nameless)


def test_the_driver_gives_the_entry_points_tokens(tok):
    spec = CellSpec(values=True, order="value", max_length=5)
    with open_source(EX / "pbmc.h5ad") as src:
        got = tokenize_cells(src, tok, spec)
    want = tokenize_anndata(EX / "pbmc.h5ad", tok, spec)
    assert got.to_list() == want.to_list()
    np.testing.assert_array_equal(got.values, want.values)
    with open_source(EX / "fragments.tsv.gz", tokenizer=tok) as src:
        got, names = tokenize_cells(src, tok, spec), src.names()
    want_names, want = tokenize_fragments(EX / "fragments.tsv.gz", tok, spec)
    assert names == want_names and got.to_list() == want.to_list()


def test_sources_describe_themselves(tok):
    with open_source(EX / "pbmc.h5ad") as h5:
        assert (h5.kind, h5.features_are, h5.has_obs, h5.path) == (
            "h5ad", "var", True, str(EX / "pbmc.h5ad"))
        assert h5.feature_names() == genotok.singlecell.var_names(EX / "pbmc.h5ad")
    with open_source(EX / "fragments.tsv.gz", tokenizer=tok) as fr:
        assert (fr.kind, fr.features_are, fr.has_obs, fr.feature_names()) == (
            "fragments", "universe", False, None)
        assert fr.n_cols == tok.universe.n_regions + 1  # the universe's tokens and a miss column
        with pytest.raises(SourceError, match="no obs columns"):
            fr.obs(["cell_type"])
    with pytest.raises(ValueError, match="prepend= and add_cls= take obs columns"):
        FragmentSource.check(CellSpec(add_cls=True), "f")


class _NpzCells(CellSource):
    """A toy source: ``X``, ``peaks`` and ``cells`` of an ``.npz``."""

    kind, suffixes = "npz-cells", (".cells.npz",)

    @classmethod
    def open(cls, path, read=None, **context):
        return cls(path)

    def __init__(self, path):
        f = np.load(path)
        self.path = self.where = str(path)
        self.matrix = memory_matrix(f["X"], self.where)
        self.n_rows, self.n_cols = self.matrix.n_rows, self.matrix.n_cols
        self.peaks, self.cells = [str(p) for p in f["peaks"]], [str(c) for c in f["cells"]]

    def features(self):
        return pd.DataFrame(index=self.peaks)

    def names(self):
        return self.cells


def test_a_registered_source_drives_pretokenize(tmp_path):
    """One class and one registry line: the pipeline then makes one record per cell of the
    new format (before the registry, an unknown suffix was a BED input)."""
    p = tmp_path / "pbmc.cells.npz"
    np.savez(p, X=np.array([[1, 0], [0, 3], [2, 2]]), peaks=["chr1:100-200", "chr1:900-950"],
             cells=["AAA-1", "CCC-1", "GGG-1"])
    tok = Tokenizer(["chr1:0-150", "chr1:900-1000"])
    assert input_kind(p) == "bed"
    register_source(_NpzCells)
    try:
        assert input_kind(p) == "npz-cells" and cell_class(p) is _NpzCells
        assert tokenize_cells(open_source(p), tok).to_list() == [[0], [1], [0, 1]]
        run = genotok.pretokenize([p], tok, tmp_path / "corpus", progress=False)
        corpus = genotok.Corpus.open(run.out)
        assert list(corpus.names) == ["AAA-1", "CCC-1", "GGG-1"]
        assert [list(corpus[i]) for i in range(3)] == [[0], [1], [0, 1]]
        assert genotok.pipeline.expand_inputs(tmp_path)[0] == p  # a folder's inputs too
    finally:
        unregister_source(_NpzCells)
    assert _NpzCells not in sources.SOURCES


def test_pipeline_kinds_are_the_registry_answer(tmp_path):
    h5 = tmp_path / "cells.dat"
    shutil.copy(EX / "pbmc.h5ad", h5)
    assert input_kind(h5) == "h5ad"  # by its first bytes (was "bed": suffix only)
    frag = tmp_path / "frags.bed.gz"
    shutil.copy(EX / "fragments.tsv.gz", frag)
    assert input_kind(frag) == "bed"  # a BED suffix decides first: the pipeline's own input
    assert input_kind("x.tsv.bgz") == "fragments" and input_kind("a.narrowPeak") == "bed"
