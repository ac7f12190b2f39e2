"""Cell sources: the protocol, the one registry (object type, suffix, magic bytes), the one
driver (``tokenize_cells``) and the pipeline asking the same registry."""

from __future__ import annotations

import gzip
import os
import shutil
import stat
from dataclasses import dataclass
from typing import ClassVar

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


def test_tokenize_fragments_honours_the_registrys_fragment_source(tmp_path):
    """A registered fragment source (its columns the universe's regions) is what
    ``tokenize_fragments`` reads with, whatever its base class (was: any class not derived
    from ``FragmentSource`` was dropped for the text reader, which took the file for a text
    file of fragments); a class of named features is refused, naming it."""

    class NpzFragments(CellSource):  # counted fragments, saved by another tool
        kind, suffixes, features_are, header = "npz-fragments", (".fragnpz",), "universe", "f"

        @classmethod
        def open(cls, obj, read=None, **context):
            self = cls()
            with np.load(obj) as z:
                self.barcodes, X = list(z["barcodes"]), z["X"]
            self.path = self.where = str(obj)
            self.matrix = memory_matrix(X, self.where)
            self.n_rows, self.n_cols = X.shape
            return self

        def features(self):
            return None

        def names(self):
            return self.barcodes

    tok = Tokenizer(["chr1:0-100", "chr1:100-200", "chr2:0-50"])
    p = tmp_path / "cells.fragnpz"
    with open(p, "wb") as fh:
        np.savez(fh, X=np.array([[1, 0, 2, 0], [0, 3, 0, 0]], np.float32),
                 barcodes=np.array(["AAA-1", "CCC-1"]))
    register_source(NpzFragments)
    try:
        names, rows = tokenize_fragments(p, tok, CellSpec(values=True))
    finally:
        unregister_source(NpzFragments)
    assert names == ["AAA-1", "CCC-1"] and rows.to_list() == [[0, 2], [1]]
    assert rows.values.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(SourceError, match=r"pbmc\.h5ad is a h5ad input \(H5adSource: its "
                                          r"columns are named features\).*tokenize_cells"):
        tokenize_fragments(EX / "pbmc.h5ad", tok)


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
    with pytest.raises(TypeError, match="a cell source class derives from CellSource"):
        register_source(dict)

    class Nameless(CellSource):
        pass

    with pytest.raises(TypeError, match="names its kind"):
        register_source(Nameless)


def test_a_source_of_a_built_in_class_name_from_elsewhere_replaces_nothing():
    from genotok.singlecell import sources as S

    builtin = S.source_class("x.h5ad")
    twin = type(builtin.__name__, (builtin,), {"kind": "twin-h5ad", "suffixes": (".twin",),
                                               "__module__": "myplugin"})
    register_source(twin)
    try:
        assert builtin in S.SOURCES and S.source_class("x.h5ad") is builtin
        assert S.source_class("x.twin") is twin
    finally:
        unregister_source(twin)


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


# ------------------------------------------------------------------------- the seam's edges
def test_the_entry_points_are_public_and_cell_source_is_abstract():
    assert genotok.tokenize_cells is tokenize_cells and genotok.open_source is open_source
    assert genotok.Chunk is genotok.singlecell.Chunk
    assert CellSource.has_obs is False  # a source says it has obs
    with pytest.raises(TypeError, match="abstract"):
        CellSource()

    class Half(CellSource):
        kind = "half"

        def features(self):
            return None

    with pytest.raises(TypeError, match="Half: a cell source class implements names, open"):
        register_source(Half)


class _NoObs(_NpzCells):
    """The toy source, whose chunks must not be read before the obs error."""

    kind = "npz-no-obs"

    def chunks(self, budget, per_nnz, chunk_rows):
        raise AssertionError("read before the obs columns were refused")


def test_a_source_without_obs_refuses_obs_early(tmp_path):
    p = tmp_path / "a.cells.npz"
    np.savez(p, X=np.array([[1, 0], [0, 3]]), peaks=["chr1:100-200", "chr1:900-950"],
             cells=["AAA-1", "CCC-1"])
    tok = Tokenizer(["chr1:0-150", "chr1:900-1000"])
    src = _NoObs.open(p)
    with pytest.raises(SourceError, match=r"a.cells.npz: a npz-no-obs input has no obs columns "
                                          r"\(asked: \['batch'\]\)"):
        tokenize_cells(src, tok, obs_columns=["batch"], out=tmp_path / "c.gtokc")
    with pytest.raises(SourceError, match="prepend=\\['batch'\\] takes obs columns"):
        tokenize_cells(src, tok, CellSpec(prepend="batch"))
    assert not (tmp_path / "c.gtokc").exists()


def test_every_entry_point_finds_a_path_through_the_registry(tmp_path, tok):
    """tokenize_anndata and tokenize_cells open what the registry says (it forced H5adSource
    on any path that was not an AnnData's: a registered format was an AnnDataError)."""
    p = tmp_path / "pbmc.cells.npz"
    np.savez(p, X=np.array([[1, 0], [0, 3], [2, 2]]), peaks=["chr1:100-200", "chr1:900-950"],
             cells=["AAA-1", "CCC-1", "GGG-1"])
    toy = Tokenizer(["chr1:0-150", "chr1:900-1000"])
    register_source(_NpzCells)
    try:
        assert tokenize_anndata(p, toy).to_list() == [[0], [1], [0, 1]]
        assert tokenize_cells(p, toy).to_list() == [[0], [1], [0, 1]]
        with pytest.raises(TypeError, match=r"_NpzCells \(npz-cells inputs\) takes no read "
                                            r"options; got read=FragmentOptions"):
            tokenize_cells(p, toy, read=genotok.FragmentOptions())
    finally:
        unregister_source(_NpzCells)
    frag = EX / "fragments.tsv.gz"
    names, want = tokenize_fragments(frag, tok)
    assert tokenize_cells(frag, tok) == want == tokenize_anndata(frag, tok)
    read = genotok.FragmentOptions(min_fragments=40)
    few = tokenize_cells(frag, tok, read=read)
    assert few == tokenize_fragments(frag, tok, read=read)[1] and len(few) < len(names)
    with pytest.raises(TypeError, match="opened already"):
        tokenize_cells(open_source(EX / "pbmc.h5ad"), tok, read=genotok.AnnDataOptions())


@pytest.mark.parametrize("read", [
    genotok.AnnDataOptions(), genotok.AnnDataOptions(layer="counts", region_columns=["c", "s", "e"],
                                                     dtype=np.uint32, chunk_rows=7, raw=True),
    genotok.FragmentOptions(), genotok.FragmentOptions(
        barcodes=["A-1", b"B-1"], min_fragments=0, mode="insertion", shift=[4, -5],
        regions=["chr1", "chr2:0-100"], fragment_size=(10, None)),
    genotok.FragmentOptions(barcodes=EX / "fragments.tsv.gz"), genotok.ReadOptions()])
def test_read_options_round_trip_their_json(read):
    import json

    from genotok.singlecell.sources import read_options_from_json

    d = json.loads(json.dumps(read.to_json(), allow_nan=False))
    assert read_options_from_json(d) == read and type(read).from_json(d) == read


def test_read_options_refuse_unknown_json():
    from genotok.params import ParameterError
    from genotok.singlecell.sources import read_options_from_json

    with pytest.raises(ParameterError, match="unknown read options 'no-such-kind'"):
        read_options_from_json({"name": "no-such-kind"})
    with pytest.raises(ParameterError, match=r"AnnDataOptions: unknown field\(s\) \['lyer'\]"):
        read_options_from_json({"name": "anndata", "lyer": "x"})


@dataclass(frozen=True)
class _NpzOptions(genotok.ReadOptions):
    """The toy's read options: which array holds the matrix."""

    key: str = "X"
    name: ClassVar[str] = "npz-cells"
    CONSTRAINTS: ClassVar[dict] = {"key": [genotok.params.InstanceOf(str)]}


class _NpzWithOptions(_NpzCells):
    kind, suffixes, options = "npz-opts", (".opts.npz",), _NpzOptions

    @classmethod
    def open(cls, path, read=None, **context):
        read = cls.read_options(read)
        f = np.load(path)
        src = cls(path)
        src.read = read
        src.matrix = memory_matrix(f[read.key], src.where)
        src.n_rows, src.n_cols = src.matrix.n_rows, src.matrix.n_cols
        return src


@pytest.mark.filterwarnings("ignore:.*hit no region of the universe")
def test_any_source_options_go_into_the_run_and_its_plan(tmp_path):
    """RunOptions.read takes any source's options (one per kind): each input is read with its
    class's, and the plan records them by name (no field listed by hand)."""
    from genotok.pipeline.plan import read_json

    p = tmp_path / "a.opts.npz"
    np.savez(p, X=np.array([[1, 0]]), Y=np.array([[0, 5]]), peaks=["chr1:100-200", "chr1:900-950"],
             cells=["AAA-1"])
    tok = Tokenizer(["chr1:0-150", "chr1:900-1000"])
    register_source(_NpzWithOptions)
    try:
        read = (_NpzOptions(key="Y"), genotok.FragmentOptions(min_fragments=40))
        frag = EX / "fragments.tsv.gz"
        run = genotok.pretokenize([p, frag], tok, tmp_path / "c", progress=False,
                                  options=genotok.RunOptions(read=read))
        corpus = genotok.Corpus.open(run.out)
        want = tokenize_fragments(frag, tok, read=read[1])[0]
        assert list(corpus[0]) == [1] and corpus.names[1:] == want  # Y, and the 40+ cells
        assert read_json(read) == [{"name": "npz-cells", "key": "Y"},
                                   genotok.FragmentOptions(min_fragments=40).to_json()]
        with pytest.raises(genotok.pipeline.PipelineError, match="holds a run with other inputs "
                                                                 "or settings"):
            genotok.pretokenize([p, frag], tok, tmp_path / "c", progress=False,
                                options=genotok.RunOptions(read=read[:1]))
    finally:
        unregister_source(_NpzWithOptions)
    from genotok.params import ParameterError
    with pytest.raises(ParameterError, match="two FragmentOptions"):
        genotok.RunOptions(read=[genotok.FragmentOptions(), genotok.FragmentOptions()])


PLUGIN = """
import numpy as np
import pandas as pd
from dataclasses import dataclass
from typing import ClassVar

from genotok import SourceError
from genotok.singlecell import CellSource, Encoding, memory_matrix


class NpzPlugin(CellSource):
    kind, suffixes = "npz-plugin", (".plug.npz",)

    @classmethod
    def open(cls, path, read=None, **context):
        src = cls()
        try:
            with open(path, "rb") as fh:  # numpy leaves its own handle open on a bad zip
                f = dict(np.load(fh))
        except Exception as exc:  # a damaged file is an error naming it (check_source)
            raise SourceError(f"{path}: not a readable .npz ({exc})") from None
        src.read, src.path = cls.read_options(read), str(path)
        src.where = src.path
        src.matrix = memory_matrix(f["X"], src.where)
        src.n_rows, src.n_cols = src.matrix.n_rows, src.matrix.n_cols
        src.peaks, src.cells = [str(p) for p in f["peaks"]], [str(c) for c in f["cells"]]
        return src

    def features(self):
        return pd.DataFrame(index=self.peaks)

    def names(self):
        return self.cells


@dataclass(frozen=True)
class Double(Encoding):
    name: ClassVar[str] = "double"

    def encode(self, chunk):
        return chunk.data * 2.0
"""


def test_source_and_encoding_plugins_are_found_by_python_and_the_cli(tmp_path):
    """A distribution declaring genotok.sources and genotok.encodings entry points, on the
    path: Python's registries and the CLI's pretokenize both see them."""
    import subprocess
    import sys

    from genotok.singlecell import spec as S
    from genotok.testing import check_encoding, check_source
    from tests._plugin_dist import cli_env, on_sys_path, plugin_dist

    site = plugin_dist(tmp_path, "genotok-npz", {"genotok.sources": {"npz": "npzdemo:NpzPlugin"},
                                                 "genotok.encodings": {"double": "npzdemo:Double"}},
                       {"npzdemo.py": PLUGIN})
    p = tmp_path / "a.plug.npz"
    np.savez(p, X=np.array([[1, 0], [0, 3]]), peaks=["chr1:100-200", "chr1:900-950"],
             cells=["AAA-1", "CCC-1"])
    toy = Tokenizer(["chr1:0-150", "chr1:900-1000"])
    try:
        with on_sys_path(site, "genotok.sources", "genotok.encodings"):
            assert source_class(p).kind == "npz-plugin" and input_kind(p) == "npz-plugin"
            spec = CellSpec.from_json('{"encoding": [{"name": "double"}], "values": true}')
            rows = tokenize_cells(p, toy, spec)
            assert rows.to_list() == [[0], [1]] and rows.values.tolist() == [2.0, 6.0]
            check_source(source_class(p), p)
            check_encoding(S.encodings()["double"])
    finally:
        sources.SOURCES[:] = [c for c in sources.SOURCES if c.kind != "npz-plugin"]
        S.ENCODINGS.pop("double", None)
    assert source_class(p) is None
    (tmp_path / "u.bed").write_text("chr1\t0\t150\nchr1\t900\t1000\n")
    (tmp_path / "cells.toml").write_text('values = true\n[[encoding]]\nname = "double"\n')
    run = subprocess.run([sys.executable, "-m", "genotok", "pretokenize", "--universe",
                          str(tmp_path / "u.bed"), "--out", str(tmp_path / "c"), "-q",
                          "--cells", str(tmp_path / "cells.toml"), str(p)],
                         env=cli_env(site), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    corpus = genotok.Corpus.open(tmp_path / "c")
    assert corpus.names == ["AAA-1", "CCC-1"] and [list(x) for x in corpus] == [[0], [1]]
    run = subprocess.run([sys.executable, "-m", "genotok", "pretokenize", "--universe",
                          str(tmp_path / "u.bed"), "--out", str(tmp_path / "d"), "-q",
                          "--encoding", "log1p,double", "--values", str(p)],
                         env=cli_env(site), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert genotok.Corpus.open(tmp_path / "d").values(1).tolist() == [pytest.approx(
        2 * np.log1p(3.0))]


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "gtok-dir", "corpus"])
def test_out_takes_any_store(tmp_path, tok, fmt):
    """out=(directory, format) writes any store, as pretokenize(format=) does, and returns it
    opened: the records, names and values equal the in-memory result."""
    pytest.importorskip("pyarrow")
    spec = CellSpec(values=fmt != "gtok-dir")
    want = tokenize_anndata(EX / "pbmc.h5ad", tok, spec)
    out = tmp_path / "cells"
    got = tokenize_anndata(EX / "pbmc.h5ad", tok, spec, out=(out, fmt),
                           obs_columns=["cell_type"] if fmt != "gtok-dir" else ())
    assert [list(x) for x in got] == want.to_list()
    assert list(got.names) == genotok.singlecell.obs_names(EX / "pbmc.h5ad")
    # the directory named, as pretokenize(format=) writes it ("corpus" too: was a file
    # cells.gtokc beside it, which Corpus.open("cells") and genotok info did not find), with
    # the permissions of a plain mkdir (was 0o700, tempfile.mkdtemp's)
    assert out.is_dir() and genotok.Corpus.open(out).names == got.names
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~mask
    if spec.values:
        np.testing.assert_array_equal(got.to_ragged(values=True).values, want.values)
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        tokenize_anndata(EX / "pbmc.h5ad", tok, spec, out=(out, fmt))
    names, frags = tokenize_fragments(EX / "fragments.tsv.gz", tok, spec)
    again = tokenize_fragments(EX / "fragments.tsv.gz", tok, spec, out=(out, fmt),
                               overwrite=True)
    assert [list(x) for x in again] == frags.to_list() and list(again.names) == names
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # nothing of the old
    assert len(genotok.Corpus.open(out)) == len(names)


def test_a_failed_store_output_leaves_nothing(tmp_path, tok):
    pytest.importorskip("pyarrow")
    bad = anndata.AnnData(np.array([[1.0, -2.0]], np.float32),
                     var=pd.DataFrame(index=["chr1:0-10", "chr1:20-30"]))
    with pytest.raises(genotok.AnnDataError, match="negative value"):
        tokenize_anndata(bad, tok, out=(tmp_path / "cells", "parquet"))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError, match=r"out must be a str or a PathLike .*, got 3 \(a path, or "
                       r"a \(directory, format\) pair"):
        tokenize_anndata(bad, tok, out=3)
    with pytest.raises(genotok.params.ParameterError, match="format must be one of"):
        tokenize_anndata(bad, tok, out=(tmp_path / "x", "csv"))
    # a store that writes no files is no out= (was: a directory holding only a manifest, then
    # "'genotok-memory' is no store's this install knows (stores: … memory …)")
    for overwrite in (False, True):
        for call in (lambda **kw: tokenize_anndata(EX / "pbmc.h5ad", tok, **kw),
                     lambda **kw: tokenize_fragments(EX / "fragments.tsv.gz", tok, **kw)):
            with pytest.raises(genotok.params.ParameterError,
                               match="'memory' store writes no files.*leave out= out"):
                call(out=(tmp_path / "m", "memory"), overwrite=overwrite)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_reads_any_source_options_as_json(tmp_path, tok, capsys):
    from genotok.cli.main import main

    frag = EX / "fragments.tsv.gz"
    read = genotok.FragmentOptions(min_fragments=40)
    base = ["pretokenize", "-q", "--universe", str(EX / "universe.bed"), "--out"]
    assert main(base + [str(tmp_path / "c"), "--read", '{"name": "fragments", '
                        '"min_fragments": 40}', str(frag)]) == 0
    names, rows = tokenize_fragments(frag, tok, read=read)
    corpus = genotok.Corpus.open(tmp_path / "c")
    assert corpus.names == names and [list(x) for x in corpus] == rows.to_list()
    assert main(base + [str(tmp_path / "d"), "--read", "{min", str(frag)]) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert main(base + [str(tmp_path / "d"), "--read", '{"name": "no-such-kind"}', str(frag)]) == 2
    assert "unknown read options 'no-such-kind'" in capsys.readouterr().err
    assert main(base + [str(tmp_path / "d"), "--layer", "x", "--read",
                        '{"name": "anndata", "raw": true}', str(frag)]) == 2
    assert "both set the AnnData options" in capsys.readouterr().err


# ------------------------------------------------------------------ one index dtype (issue 44)
def test_column_indices_reach_the_kernels_as_int32_exactly():
    """The cell and value kernels are compiled for int32 column indices only (warmup() compiles
    one variant, not two); int64 and unsigned arrays are cast exactly, and an index beyond int32
    (never a valid column) stays int64 so that the checks report it as it is."""
    from genotok.singlecell.chunks import kernel_ints

    for dt in (np.int64, np.uint32, np.uint64, np.int16):
        out = kernel_ints(np.array([0, 7, 2**31 - 1], dt) if np.iinfo(dt).max >= 2**31 - 1
                          else np.array([0, 7], dt))
        assert out.dtype == np.int32 and out.flags.c_contiguous
    assert kernel_ints(np.array([], np.int64)).dtype == np.int32
    big = kernel_ints(np.array([0, 2**31], np.int64))
    assert big.dtype == np.int64 and big.tolist() == [0, 2**31]
    assert kernel_ints(np.array([-2**31 - 1, 0], np.int64)).dtype == np.int64
    assert kernel_ints(np.array([1, 2], np.int64), checked=2**40).dtype == np.int32  # (looked at)


def test_int64_indices_give_the_same_tokens_and_no_int64_cell_kernel(tok):
    from genotok.kernels import cells as K

    kernels = (K.cell_tokens, K.check_csr, K.row_capacity, K.mono_count, K.mono_fill)
    ad = anndata.read_h5ad(EX / "pbmc.h5ad")
    specs = (CellSpec(max_length=64), CellSpec())  # the general and the fast path
    ref = [tokenize_anndata(ad, tok, spec) for spec in specs]
    before = [len(k.signatures) for k in kernels]
    ad.X.indices = ad.X.indices.astype(np.int64)
    assert [tokenize_anndata(ad, tok, spec) for spec in specs] == ref
    assert [len(k.signatures) for k in kernels] == before  # (other tests may add their own)


def test_obs_values_are_the_obs_columns_without_reading_the_names(tmp_path, monkeypatch):
    """A cell's total (Geneformer's ``n_counts``) is read by ``obs_values``: the columns of
    ``obs`` alone; a file's reader leaves the cell names unread (decoding 20,000 of them took
    longer than the totals)."""
    obs = pd.DataFrame({"n_counts": [3.0, 5.0, 7.0], "batch": ["a", "b", "a"]},
                       index=["c1", "c2", "c3"])
    a = anndata.AnnData(np.ones((3, 2), np.float32), obs=obs)
    p = tmp_path / "x.h5ad"
    a.write_h5ad(p)
    for src in (open_source(a), open_source(p)):
        names, cols = src.obs(["n_counts", "batch"])(1, 3)
        got = src.obs_values(["n_counts", "batch"])(1, 3)
        assert names == ["c2", "c3"] and set(got) == {"n_counts", "batch"}
        assert got["n_counts"].tolist() == cols["n_counts"].tolist() == [5.0, 7.0]
        assert list(got["batch"]) == list(cols["batch"]) == ["b", "a"]
        with pytest.raises(genotok.GenotokError, match="no column"):
            src.obs_values(["absent"])
    read = open_source(p).obs_values(["n_counts"])
    index = []
    real = sources._h5_column
    monkeypatch.setattr(sources, "_h5_column", lambda g, name, *a: index.append(name) or
                        real(g, name, *a))
    assert read(0, 3)["n_counts"].tolist() == [3.0, 5.0, 7.0] and index == ["n_counts"]
