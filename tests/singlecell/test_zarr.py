"""AnnData Zarr stores (genotok.singlecell.anndata_zarr): a store written by ``write_zarr``
(zarr formats 2 and 3, local and ``s3://`` on a moto server) gives the tokens of the same
AnnData in memory, with the ``.h5ad`` read options (layer, raw, region columns); a damaged
store is an AnnDataError naming it."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("zarr")
ad = pytest.importorskip("anndata")

from genotok import AnnDataOptions, CellSpec, Corpus, Tokenizer, ZarrOptions, pretokenize
from genotok.errors import AnnDataError
from genotok.singlecell import ZarrSource, condition_tokens, open_source, tokenize_anndata, tokenize_cells
from genotok.singlecell.sources import source_class
from tests.singlecell._cells import UNIVERSE, adata, counts, rows

SPEC = CellSpec(values=True)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(UNIVERSE)


def _write(a, path, fmt: int = 2):
    import warnings

    old = ad.settings.zarr_write_format
    ad.settings.zarr_write_format = fmt
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a.write_zarr(path)
    finally:
        ad.settings.zarr_write_format = old
    return str(path)


def _same(got, want):
    assert rows(got) == rows(want)
    if want.values is not None:
        np.testing.assert_array_equal(got.values, want.values)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(0, 9), m=st.integers(1, 9), density=st.sampled_from([0.0, 0.3, 0.8]),
       dense=st.booleans(), fmt=st.sampled_from([2, 3]), seed=st.integers(0, 99))
def test_round_trip_equals_memory(tmp_path_factory, tok, n, m, density, dense, fmt, seed):
    a = adata(counts(n, m, density, seed, dense=dense))
    path = _write(a, tmp_path_factory.mktemp("z") / "cells.zarr", fmt)
    want = tokenize_anndata(a, tok, SPEC)
    _same(tokenize_anndata(path, tok, SPEC, memory_mb=0.001), want)
    with open_source(path) as src:
        assert isinstance(src, ZarrSource) and src.names() == list(a.obs_names)
        _same(tokenize_cells(src, tok, SPEC), want)


def test_read_options_layer_raw_columns(tmp_path, tok):
    a = adata(counts(12, 7, 0.5, 1))
    a.layers["other"] = counts(12, 7, 0.5, 2)
    a.raw = adata(counts(12, 7, 0.5, 3))
    a.var["chr"], a.var["s"], a.var["e"] = a.var.pop("chrom"), a.var.pop("start"), a.var.pop("end")
    a.var.index = [f"p{i}" for i in range(7)]
    path = _write(a, tmp_path / "c.zarr", 3)
    cols = AnnDataOptions(region_columns=("chr", "s", "e"))
    for read in (cols, AnnDataOptions(region_columns=("chr", "s", "e"), layer="other"),
                 AnnDataOptions(raw=True), ZarrOptions(raw=True, chunk_rows=5)):
        _same(tokenize_anndata(path, tok, SPEC, read=read),
              tokenize_anndata(a, tok, SPEC, read=read) if not read.raw else
              tokenize_anndata(a.raw.to_adata(), tok, SPEC))
    with pytest.raises(AnnDataError, match="no matrix 'layers/none'.*other"):
        tokenize_anndata(path, tok, read=AnnDataOptions(layer="none"))
    with pytest.raises(AnnDataError, match="raw has no layers"):
        open_source(path, AnnDataOptions(raw=True, layer="other"))


def test_obs_columns_corpus_and_pretokenize(tmp_path, tok):
    a = adata(counts(10, 7, 0.4, 5))
    path = _write(a, tmp_path / "cells.zarr")
    c = tokenize_anndata(path, tok, out=tmp_path / "c.gtokc", obs_columns=["cell_type", "batch"])
    assert list(c.names) == list(a.obs_names)
    assert list(c.meta["cell_type"]) == list(a.obs["cell_type"])
    spec = CellSpec(prepend=("cell_type",))
    ctok = Tokenizer(UNIVERSE, extra_tokens=condition_tokens(a, ["cell_type"]))
    assert rows(tokenize_anndata(path, ctok, spec)) == rows(tokenize_anndata(a, ctok, spec))
    s = pretokenize([path], tok, tmp_path / "run", progress=False)
    assert s.n_records == 10 if hasattr(s, "n_records") else True
    run = Corpus.open(tmp_path / "run")
    assert [list(run[i]) for i in range(len(run))] == rows(tokenize_anndata(a, tok))
    # a store found by its contents under any name, as a directory input of the pipeline
    plain = tmp_path / "no_suffix"
    shutil.copytree(path, plain)
    assert source_class(str(plain)) is ZarrSource


def test_damaged_store_names_it(tmp_path, tok):
    a = adata(counts(6, 5, 0.6, 7))
    path = _write(a, tmp_path / "bad.zarr")
    import zarr

    g = zarr.open_group(path, mode="r+")
    g["X"]["indices"][0] = 99  # outside [0, n_vars)
    with pytest.raises(AnnDataError, match=r"bad\.zarr:X.*column index"):
        tokenize_anndata(path, tok)
    g["X"]["indptr"][1] = 10**6
    with pytest.raises(AnnDataError, match=r"bad\.zarr:X.*indptr"):
        tokenize_anndata(path, tok)
    shutil.rmtree(tmp_path / "bad.zarr" / "obs")  # (zarr reads a missing chunk as fill
    (tmp_path / "bad.zarr" / ".zmetadata").unlink()  # values: only metadata is checkable)
    with pytest.raises(AnnDataError, match="bad.zarr.*obs"):
        open_source(path)
    with pytest.raises(AnnDataError, match="no such directory"):
        ZarrSource(tmp_path / "absent.zarr")


def test_s3_store_equals_memory(tmp_path, tok):
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from tests._s3 import moto_s3

    a = adata(counts(9, 7, 0.5, 11))
    local = _write(a, tmp_path / "cells.zarr", 3)
    with moto_s3("cells") as (endpoint, client):
        import os

        for root, _, files in os.walk(local):
            for f in files:
                p = os.path.join(root, f)
                client.upload_file(p, "cells", "cells.zarr/" + os.path.relpath(p, local))
        so = {"key": "testing", "secret": "testing",
              "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
        got = tokenize_anndata("s3://cells/cells.zarr", tok, SPEC,
                               read=ZarrOptions(storage_options=so, chunk_rows=4))
        _same(got, tokenize_anndata(a, tok, SPEC))
        with pytest.raises(AnnDataError, match="s3://cells/none.zarr"):
            tokenize_anndata("s3://cells/none.zarr", tok, read=ZarrOptions(storage_options=so))


def test_check_source(tmp_path):
    from genotok.testing import check_source

    a = adata(counts(7, 6, 0.5, 3))
    check_source(ZarrSource, _write(a, tmp_path / "cells.zarr", 3), obs=a.obs)


def test_csc_store_within_and_beyond_the_budget(tmp_path, tok):
    import scipy.sparse as sp

    a = adata(sp.csc_matrix(counts(8, 7, 0.5, 13)))
    path = _write(a, tmp_path / "csc.zarr", 3)
    _same(tokenize_anndata(path, tok, SPEC), tokenize_anndata(a, tok, SPEC))
    with pytest.raises(AnnDataError, match=r"csc\.zarr:X: X is stored column-major"):
        tokenize_anndata(path, tok, memory_mb=1e-5)
