"""Containers read by path (genotok.singlecell.containers): anndata 0.7 encodings, dense ``X``,
``raw``, MuData ``.h5mu`` and Cell Ranger 10x ``.h5`` give the tokens of the same data read into
memory by anndata / mudata / scanpy; unreadable encodings are an AnnDataError naming the file
and the key. The real files of ``../shared/data/real`` are each read both ways."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests._shared import SHARED, shared

ad = pytest.importorskip("anndata")
h5py = pytest.importorskip("h5py")
pd = pytest.importorskip("pandas")
sp = pytest.importorskip("scipy.sparse")

from genotok import AnnDataOptions, CellSpec, Corpus, Normalize, Tokenizer, pretokenize
from genotok.errors import AnnDataError
from genotok.singlecell import obs_names, open_container, tokenize_anndata, var_names, var_regions

REAL = SHARED / "data" / "real"
UNIVERSE = ["chr1:0-100", "chr1:100-200", "chr1:300-400", "chr2:0-100", "chr2:150-250"]
PEAKS = ["chr1:10-20", "chr1:150-160", "chr2:10-20", "chr1:350-360", "chr9:0-10", "chr2:200-210"]


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(UNIVERSE)


def _X(n=7, m=6, seed=0):  # six: len(PEAKS)
    X = sp.random(n, m, density=0.5, format="csr", random_state=seed, dtype=np.float32)
    X.data[:] = np.arange(1, X.nnz + 1)
    return X


def _rows(r):
    return [np.asarray(x).tolist() for x in (r.to_list() if hasattr(r, "to_list") else r)]


# ------------------------------------------------------------------------- anndata 0.7 encodings
def _write_07(path, X, *, chrom_fixed=False):
    """An ``.h5ad`` laid out as anndata 0.7 wrote it: vlen strings without encoding attributes,
    categoricals as integer codes with an object reference to ``__categories/<col>``."""
    chroms = [p.split(":")[0] for p in PEAKS]
    cats = sorted(set(chroms))
    vlen = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        g = f.create_group("X")
        g.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0",
                        "shape": np.array(X.shape)})
        g["data"], g["indices"], g["indptr"] = X.data, X.indices, X.indptr
        for key, names in (("obs", [f"cell{i}" for i in range(X.shape[0])]), ("var", PEAKS)):
            fr = f.create_group(key)
            fr.attrs.update({"_index": "_index", "encoding-type": "dataframe",
                             "encoding-version": "0.1.0"})
            fr.create_dataset("_index", data=np.array(names, dtype=object), dtype=vlen)
        var = f["var"]
        c = var.create_group("__categories")
        if chrom_fixed:  # fixed-length bytes categories
            c["chr"] = np.array(cats, dtype="S")
        else:
            c.create_dataset("chr", data=np.array(cats, dtype=object), dtype=vlen)
        var.create_dataset("chr", data=np.array([cats.index(x) for x in chroms], np.int8))
        var["chr"].attrs["categories"] = c["chr"].ref
        var["start"] = np.array([int(p.split(":")[1].split("-")[0]) for p in PEAKS])
        var["end"] = np.array([int(p.split("-")[1]) for p in PEAKS])
        var["gene_ids"] = np.array([p.encode() for p in PEAKS], dtype="S")  # fixed-length
        obs = f["obs"]
        oc = obs.create_group("__categories")
        oc.create_dataset("kind", data=np.array(["B", "T"], dtype=object), dtype=vlen)
        obs.create_dataset("kind", data=np.array([i % 2 for i in range(X.shape[0])], np.int8))
        obs["kind"].attrs["categories"] = oc["kind"].ref
        var.attrs["column-order"] = np.array(["chr", "start", "end", "gene_ids"], dtype=object)
        obs.attrs["column-order"] = np.array(["kind"], dtype=object)


@pytest.mark.parametrize("chrom_fixed", [False, True])
def test_anndata_07_categoricals_give_the_in_memory_tokens(tmp_path, tok, chrom_fixed):
    """Issue 33: the codes of a 0.7 categorical were taken as chromosome names (every cell
    ``[<unk>]``, silently)."""
    X = _X()
    p = tmp_path / "old.h5ad"
    _write_07(p, X, chrom_fixed=chrom_fixed)
    mem = ad.AnnData(X, var=pd.DataFrame(index=PEAKS))
    want = _rows(tokenize_anndata(mem, tok))
    assert _rows(tokenize_anndata(p, tok)) == want
    assert var_regions(p).to_strings() == PEAKS
    assert any(r != [tok.unk_token_id] for r in want)
    out = tokenize_anndata(p, tok, out=tmp_path / "c", obs_columns=["kind"])
    assert out.to_ragged().to_list() == want
    with warnings.catch_warnings():  # anndata reads it too, to the same frame
        warnings.simplefilter("ignore")
        back = ad.read_h5ad(p)
    assert list(back.var["chr"].astype(str)) == [x.split(":")[0] for x in PEAKS]


def test_anndata_07_frame_columns_leave_out_the_categories_group(tmp_path):
    from genotok.singlecell.sources import _h5_frame

    p = tmp_path / "old.h5ad"
    _write_07(p, _X())
    assert "__categories" not in _h5_frame(str(p), "var").columns


@pytest.mark.parametrize("damage, said", [
    ("not a reference", "not an HDF5 object reference"),
    ("code out of range", "categorical code 7"),
    ("codes not integers", "codes must be integers"),
    ("not a dataset", "is not a one-dimensional dataset"),
])
def test_anndata_07_unreadable_categorical_names_the_file_and_key(tmp_path, tok, damage, said):
    p = tmp_path / "bad.h5ad"
    _write_07(p, _X())
    with h5py.File(p, "a") as f:
        var = f["var"]
        if damage == "not a reference":
            var["chr"].attrs["categories"] = "chr"
        elif damage == "code out of range":
            codes = var["chr"][:]
            codes[3] = 7
            var["chr"][...] = codes
        elif damage == "codes not integers":
            ref = var["chr"].attrs["categories"]
            del var["chr"]
            var["chr"] = np.zeros(len(PEAKS), np.float32)
            var["chr"].attrs["categories"] = ref
        else:
            var["chr"].attrs["categories"] = var["__categories"].ref
    with pytest.raises(AnnDataError, match=said) as e:
        tokenize_anndata(p, tok)
    assert "bad.h5ad" in str(e.value) and "/var/chr" in str(e.value)


def test_object_column_that_is_not_strings_is_refused(tmp_path):
    from genotok.singlecell.sources import _h5_column

    p = tmp_path / "refs.h5"
    with h5py.File(p, "w") as f:
        f["a"] = np.zeros(2)
        f.create_dataset("refs", data=[f["a"].ref, f["a"].ref], dtype=h5py.ref_dtype)
        with pytest.raises(AnnDataError, match="refs: a column of dtype object"):
            _h5_column(f, "refs")


# ------------------------------------------------------------------------- dense X and raw
def test_dense_x_and_raw_by_path_equal_memory(tmp_path, tok):
    X = _X(seed=1)
    full = ad.AnnData(X.toarray(), var=pd.DataFrame(index=PEAKS))
    a = full[:, :4].copy()  # X: the first four peaks (dense); raw: all six
    a.raw = full
    p = tmp_path / "dense_raw.h5ad"
    a.write_h5ad(p)
    with h5py.File(p) as f:
        assert isinstance(f["X"], h5py.Dataset)  # dense on disk
    assert _rows(tokenize_anndata(p, tok)) == _rows(tokenize_anndata(a, tok))
    raw = AnnDataOptions(raw=True)
    assert _rows(tokenize_anndata(p, tok, read=raw)) == _rows(tokenize_anndata(full, tok))
    with pytest.raises(AnnDataError, match="raw has no layers"):
        tokenize_anndata(p, tok, read=AnnDataOptions(raw=True, layer="counts"))
    q = tmp_path / "noraw.h5ad"
    full.write_h5ad(q)
    with pytest.raises(AnnDataError, match="noraw.h5ad: raw=True, but raw"):
        tokenize_anndata(q, tok, read=raw)


# ------------------------------------------------------------------------- MuData .h5mu
def _write_h5mu(path, mods: dict):
    """A ``.h5mu`` as mudata lays it out (``mod/<name>`` anndata groups), without mudata."""
    try:
        from anndata.io import write_elem
    except ImportError:  # anndata < 0.11
        from anndata.experimental import write_elem

    with h5py.File(path, "w") as f:
        for name, a in mods.items():
            write_elem(f, f"mod/{name}", a)
        write_elem(f, "obs", pd.DataFrame(index=list(next(iter(mods.values())).obs_names)))


def _mods(seed=2):
    X = _X(seed=seed)
    atac = ad.AnnData(X, var=pd.DataFrame(index=PEAKS),
                      obs=pd.DataFrame(index=[f"c{i}" for i in range(X.shape[0])]))
    rna = ad.AnnData(np.ones((X.shape[0], 2), np.float32),
                     var=pd.DataFrame(index=["GeneA", "GeneB"]), obs=atac.obs.copy())
    return atac, rna


@pytest.mark.parametrize("name", ["atac", "peaks"])
def test_h5mu_reads_the_region_modality(tmp_path, tok, name):
    atac, rna = _mods()
    p = tmp_path / "x.h5mu"
    _write_h5mu(p, {"rna": rna, name: atac})
    assert open_container(p).root == f"mod/{name}"
    want = _rows(tokenize_anndata(atac, tok))
    assert _rows(tokenize_anndata(p, tok)) == want
    assert _rows(tokenize_anndata(p, tok, read=AnnDataOptions(modality=name))) == want
    assert obs_names(p) == list(atac.obs_names) and var_names(p) == PEAKS
    with pytest.raises(AnnDataError, match=r"no modality 'prot'; the modalities are"):
        tokenize_anndata(p, tok, read=AnnDataOptions(modality="prot"))
    with pytest.raises(AnnDataError, match=r"x.h5mu:mod/rna/var: no region information"):
        tokenize_anndata(p, tok, read=AnnDataOptions(modality="rna"))


def test_h5mu_two_region_modalities_need_a_name(tmp_path, tok):
    atac, _ = _mods()
    p = tmp_path / "two.h5mu"
    _write_h5mu(p, {"a": atac, "b": atac})
    with pytest.raises(AnnDataError, match=r"cannot tell which modality.*\['a', 'b'\] have"):
        tokenize_anndata(p, tok)
    assert _rows(tokenize_anndata(p, tok, read=AnnDataOptions(modality="b"))) == \
        _rows(tokenize_anndata(atac, tok))


def test_modality_of_an_h5ad_is_refused(tmp_path, tok):
    atac, _ = _mods()
    p = tmp_path / "a.h5ad"
    atac.write_h5ad(p)
    with pytest.raises(AnnDataError, match="a.h5ad: modality='atac' asked, but this is a .h5ad"):
        tokenize_anndata(p, tok, read=AnnDataOptions(modality="atac"))


# ------------------------------------------------------------------------- 10x .h5
def _write_10x(path, X, feature_types, names, intervals=None):
    """Cell Ranger's layout: CSC of features x barcodes under ``matrix/``."""
    T = sp.csc_matrix(X.T)
    with h5py.File(path, "w") as f:
        m = f.create_group("matrix")
        m["data"], m["indices"], m["indptr"] = T.data, T.indices, T.indptr
        m["shape"] = np.array(T.shape, np.int64)
        m["barcodes"] = np.array([f"BC{i}-1".encode() for i in range(X.shape[0])])
        g = m.create_group("features")
        g["id"] = np.array([n.encode() for n in names])
        g["name"] = np.array([n.encode() for n in names])
        g["feature_type"] = np.array([t.encode() for t in feature_types])
        g["genome"] = np.array([b"GRCh38"] * len(names))
        if intervals is not None:
            g["interval"] = np.array([i.encode() for i in intervals])


def _tenx(tmp_path, intervals=True):
    genes = ["GeneA", "GeneB"]
    names = genes[:1] + PEAKS[:3] + genes[1:] + PEAKS[3:]
    types = ["Gene Expression"] + ["Peaks"] * 3 + ["Gene Expression"] + ["Peaks"] * 3
    X = _X(m=len(names), seed=3)
    p = tmp_path / "filtered_feature_bc_matrix.h5"
    _write_10x(p, X, types, names, ["chr1:1-2", *PEAKS[:3], "NA", *PEAKS[3:]]
               if intervals else None)
    keep = np.array([t == "Peaks" for t in types])
    mem = ad.AnnData(X[:, keep], var=pd.DataFrame(index=PEAKS),
                     obs=pd.DataFrame(index=[f"BC{i}-1" for i in range(X.shape[0])]))
    return p, mem


@pytest.mark.parametrize("intervals", [True, False])
def test_10x_h5_reads_the_peaks_by_barcode(tmp_path, tok, intervals):
    p, mem = _tenx(tmp_path, intervals)
    assert open_container(p).kind == "10x"
    assert _rows(tokenize_anndata(p, tok)) == _rows(tokenize_anndata(mem, tok))
    assert _rows(tokenize_anndata(p, tok, read=AnnDataOptions(chunk_rows=2))) == \
        _rows(tokenize_anndata(mem, tok))
    assert obs_names(p) == list(mem.obs_names) and var_regions(p).to_strings() == PEAKS
    c = tokenize_anndata(p, tok, out=tmp_path / "c")
    assert c.names == list(mem.obs_names)


@pytest.mark.parametrize("spec", [CellSpec(order="var"), CellSpec(order="value", max_length=2),
                                  CellSpec(encoding=(Normalize(),), values=True)])
def test_10x_h5_values_are_the_peaks_only(tmp_path, tok, spec):
    """Gene expression columns take no part: not in the order, not in a cell's total."""
    p, mem = _tenx(tmp_path)
    a, b = tokenize_anndata(mem, tok, spec), tokenize_anndata(p, tok, spec)
    assert _rows(b) == _rows(a)
    if spec.values:
        np.testing.assert_allclose(b.values, a.values, rtol=1e-6)


@pytest.mark.parametrize("damage, said", [
    ("indptr", "indptr has 3 entries, expected 8"),
    ("index", "a column index is outside"),
    ("shape", "matrix/shape must be 2 non-negative integers"),
    ("features", "matrix/features/feature_type: 2 entries, but the matrix has 8"),
    ("no peaks", "no feature has feature_type 'Peaks'"),
    ("barcodes", "7 matrix rows but 3 cells in obs"),
])
def test_10x_h5_integers_are_checked(tmp_path, tok, damage, said):
    p, _ = _tenx(tmp_path)
    with h5py.File(p, "a") as f:
        m = f["matrix"]
        if damage == "indptr":
            del m["indptr"]
            m["indptr"] = np.array([0, 1, 2])
        elif damage == "index":
            ind = m["indices"][:]
            ind[0] = 10**6
            m["indices"][...] = ind
        elif damage == "shape":
            m["shape"][...] = np.array([-1, 7])
        elif damage == "features":
            del m["features/feature_type"]
            m["features/feature_type"] = np.array([b"Peaks", b"Peaks"])
        elif damage == "barcodes":
            del m["barcodes"]
            m["barcodes"] = np.array([b"A", b"B", b"C"])
        else:
            m["features/feature_type"][...] = np.array([b"Gene Expression"] * 8)
    with pytest.raises(AnnDataError, match=said) as e:
        tokenize_anndata(p, tok)
    assert "filtered_feature_bc_matrix.h5" in str(e.value)


def test_pretokenize_takes_containers(tmp_path, tok):
    p, mem = _tenx(tmp_path)
    atac, _ = _mods()
    q = tmp_path / "m.h5mu"
    _write_h5mu(q, {"atac": atac})
    run = pretokenize([p, q], tok, tmp_path / "out", options=None, progress=False)
    c = Corpus.open(run.out, expect=tok)
    assert c.names == list(mem.obs_names) + list(atac.obs_names)
    assert c.to_ragged().to_list() == _rows(tokenize_anndata(mem, tok)) + \
        _rows(tokenize_anndata(atac, tok))


def test_containers_are_registered_cell_sources(tmp_path, tok):
    """.h5mu and 10x .h5 are classes of the one registry (no parallel suffix list): found by
    suffix, by a look inside an HDF5 file of another name, and by pretokenize's plan."""
    import shutil

    from genotok.pipeline.plan import cell_class, input_kind
    from genotok.singlecell import H5adSource, H5muSource, TenxH5Source, open_source
    from genotok.singlecell.sources import SOURCES, source_class

    p, mem = _tenx(tmp_path)
    atac, _ = _mods()
    q = tmp_path / "m.h5mu"
    _write_h5mu(q, {"atac": atac})
    assert {H5muSource, TenxH5Source} <= set(SOURCES)
    assert issubclass(H5muSource, H5adSource) and issubclass(TenxH5Source, H5adSource)
    assert cell_class(p) is TenxH5Source and cell_class(q) is H5muSource
    assert (input_kind(p), input_kind(q)) == ("10x", "h5mu")
    for src, cls in ((p, TenxH5Source), (q, H5muSource)):
        other = tmp_path / f"{cls.__name__}.dat"
        shutil.copy(src, other)
        assert source_class(other) is cls  # sniffed: the suffix says nothing
    with open_source(q) as s:
        assert type(s) is H5muSource and s.names() == list(atac.obs_names)
        assert s.settings()["modality"] == "atac"
    with open_source(p) as s:
        assert type(s) is TenxH5Source and s.n_cols == mem.n_vars


def test_an_h5_is_told_by_its_contents_not_its_suffix(tmp_path, tok):
    """A ``.h5`` is any HDF5 file: an AnnData saved under that name is read as the .h5ad it
    is (not as a 10x matrix), a 10x matrix as 10x, and an HDF5 file that is neither is a
    SourceError naming it (the suffix alone took all three for 10x)."""
    import shutil

    from genotok.errors import SourceError
    from genotok.pipeline.plan import input_kind
    from genotok.singlecell import H5adSource, TenxH5Source, open_source
    from genotok.singlecell.containers import hdf5_kind
    from genotok.singlecell.sources import source_class

    mem = ad.AnnData(_X(), var=pd.DataFrame(index=PEAKS),
                     obs=pd.DataFrame(index=[f"c{i}" for i in range(7)]))
    h5ad_as_h5 = tmp_path / "really_anndata.h5"
    mem.write_h5ad(h5ad_as_h5)
    tenx, tenx_mem = _tenx(tmp_path)
    tenx_as_h5ad = tmp_path / "tenx_named.h5ad"  # the other way round: the suffix is kept
    shutil.copy(tenx, tenx_as_h5ad)
    assert hdf5_kind(h5ad_as_h5) == "h5ad" and hdf5_kind(tenx) == "10x"
    assert source_class(h5ad_as_h5) is H5adSource and input_kind(h5ad_as_h5) == "h5ad"
    with open_source(h5ad_as_h5) as s:
        assert type(s) is H5adSource and s.names() == list(mem.obs_names)
    assert _rows(tokenize_anndata(h5ad_as_h5, tok)) == _rows(tokenize_anndata(mem, tok))
    assert source_class(tenx) is TenxH5Source
    assert _rows(tokenize_anndata(tenx, tok)) == _rows(tokenize_anndata(tenx_mem, tok))
    assert open_container(tenx_as_h5ad).kind == "10x"
    assert _rows(tokenize_anndata(tenx_as_h5ad, tok)) == _rows(tokenize_anndata(tenx_mem, tok))
    assert source_class("not_written_yet.h5") is TenxH5Source  # no file: the suffix says
    neither = tmp_path / "neither.h5"
    with h5py.File(neither, "w") as f:
        f.create_group("matrix")["data"] = np.arange(3)  # a matrix group, but not Cell Ranger's
        f["other"] = np.arange(2)
    assert hdf5_kind(neither) is None and source_class(neither) is None
    for call in (lambda: open_source(neither), lambda: tokenize_anndata(neither, tok)):
        with pytest.raises(SourceError, match="neither.h5: not a cell input"):  # the registry
            call()
    with pytest.raises(SourceError, match="neither.h5: an HDF5 file that is none"):
        open_container(neither)


# ------------------------------------------------------------------------- the real files
def _real(pattern):
    if not SHARED.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared is absent"))]
    return sorted(str(x.relative_to(REAL)) for x in REAL.glob(pattern))


def _in_memory(path):
    """The same data read into memory as people read it (anndata, mudata, scanpy)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path.suffix == ".h5ad":
            return ad.read_h5ad(path)
        if path.suffix == ".h5mu":
            mudata = pytest.importorskip("mudata", reason="mudata reads .h5mu in memory")
            return mudata.read_h5mu(path)["atac"]
        sc = pytest.importorskip("scanpy", reason="scanpy reads 10x .h5 in memory")
        a = sc.read_10x_h5(path, gex_only=False)
        return a[:, (a.var["feature_types"] == "Peaks").to_numpy()].copy()


@pytest.mark.parametrize("rel", _real("**/*.h5ad") + _real("**/*.h5mu") + _real("**/*.h5"))
def test_real_container_by_path_equals_memory(tmp_path, rel):
    path = shared(REAL / rel)
    mem = _in_memory(path)
    try:
        regions = var_regions(mem)
    except AnnDataError:  # features that are not regions (genes): refused both ways
        with pytest.raises(AnnDataError, match="no region information"):
            tokenize_anndata(path, Tokenizer(["chr1:0-10"]))
        return
    tok = Tokenizer(regions.to_strings()[::2] or ["chr1:0-10"])
    assert var_regions(path).to_strings() == regions.to_strings()
    want = _rows(tokenize_anndata(mem, tok))
    assert _rows(tokenize_anndata(path, tok)) == want
    assert len(want) == mem.n_obs and any(len(r) > 1 for r in want)
    assert obs_names(path) == [str(x) for x in mem.obs_names]
    spec = CellSpec(order="value", max_length=8)
    run = pretokenize([path], tok, tmp_path / "out", cells=spec, progress=False)
    c = Corpus.open(run.out, expect=tok)
    assert c.to_ragged().to_list() == _rows(tokenize_anndata(mem, tok, spec))
    assert c.names == [str(x) for x in mem.obs_names]


def test_h5mu_condition_tokens_from_the_modality_obs(tmp_path):
    """condition_tokens and prepend read the modality's obs (``str`` of the path was handed to
    anndata.read_h5ad, which does not read a .h5mu)."""
    from genotok.singlecell import condition_tokens

    atac, rna = _mods()
    atac.obs["batch"] = pd.Categorical(["z", "a"] * 3 + ["z"], categories=["z", "a"])
    p = tmp_path / "x.h5mu"
    _write_h5mu(p, {"rna": rna, "atac": atac})
    extra = condition_tokens(atac, ["batch"])
    assert condition_tokens(p, ["batch"]) == extra == ["<batch=z>", "<batch=a>"]
    tok = Tokenizer(UNIVERSE, extra_tokens=extra)
    spec = CellSpec(prepend=["batch"])
    assert _rows(tokenize_anndata(p, tok, spec)) == _rows(tokenize_anndata(atac, tok, spec))
    q, _ = _tenx(tmp_path)
    with pytest.raises(AnnDataError, match="a 10x .h5 file has no obs columns"):
        condition_tokens(q, ["batch"])


# ------------------------------------------------------------------------- the column subset
hyp = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")


@hyp.settings(max_examples=60, deadline=None)
@hyp.given(n=st.integers(0, 9), m=st.integers(1, 9), seed=st.integers(0, 2**16),
           density=st.floats(0, 1), chunk=st.integers(1, 4), data=st.data())
def test_column_subset_equals_scipy(n, m, seed, density, chunk, data):
    """``_Columns`` (a 10x file's peaks among its features) against scipy's column selection,
    chunk by chunk, for in-memory chunks (absolute ``indptr``) and int32/int64 indices."""
    from genotok.singlecell.containers import _Columns
    from genotok.singlecell.chunks import _MemorySource

    keep = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    X = sp.random(n, m, density=density, format="csr", random_state=seed, dtype=np.float64)
    if data.draw(st.booleans()):
        X.indices = X.indices.astype(np.int64)
    src = _Columns(_MemorySource(X, "X"), keep)
    assert (src.n_rows, src.n_cols) == (n, int(keep.sum()))
    got = []
    for ch in src.chunks(1 << 20, 16, chunk):
        part = sp.csr_matrix((ch.data, ch.indices, ch.indptr), shape=(ch.indptr.size - 1,
                                                                      src.n_cols))
        got.append(part.toarray())
    want = X[:, np.flatnonzero(keep)].toarray()
    assert np.array_equal(np.vstack(got) if got else np.zeros((0, src.n_cols)), want)


def test_an_h5ad_with_an_empty_mod_group_is_an_h5ad(tmp_path):
    """Was: read as a .h5mu of no modalities ('cannot tell which modality to read')."""
    import shutil

    import genotok
    from genotok.singlecell.containers import hdf5_kind

    p = tmp_path / "x.h5"
    shutil.copy(genotok.examples_dir() / "pbmc.h5ad", p)
    with h5py.File(p, "a") as f:
        f.create_group("mod")
    tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    assert hdf5_kind(p) == "h5ad"
    assert tokenize_anndata(p, tok).to_list() == tokenize_anndata(
        genotok.examples_dir() / "pbmc.h5ad", tok).to_list()
