"""genotok._inflate: parallel inflate of gzip HDF5 chunks equals h5py slicing, falls back on
filters it does not handle, and turns a damaged chunk into an HDF5ChunkError naming the file."""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import tempfile
import zlib

import anndata
import h5py
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import genotok.singlecell as gad
from genotok import (AnnDataOptions, CellSpec, GenotokError, HDF5ChunkError, RegionSet, Tokenizer,
                     Universe)
from genotok import _inflate as I

_names = (f"mem{i}.h5" for i in itertools.count())
_DISK = tempfile.mkdtemp(prefix="genotok_test_inflate_")
atexit.register(shutil.rmtree, _DISK, True)


def _memfile() -> h5py.File:
    """An HDF5 file in memory (core driver, no backing store): fast for hypothesis."""
    return h5py.File(next(_names), "w", driver="core", backing_store=False)


@contextlib.contextmanager
def _h5(on_disk: bool, write):
    """A file made by ``write(f)``, then open for reading: in memory (core driver: chunks
    read with h5py's ``read_direct_chunk``) or on disk, re-opened read-only (chunks read with
    ``pread``, as genotok reads a ``.h5ad`` path)."""
    if not on_disk:
        with _memfile() as f:
            write(f)
            yield f
        return
    path = os.path.join(_DISK, next(_names))
    with h5py.File(path, "w") as f:
        write(f)
    try:
        with h5py.File(path, "r") as f:
            direct = [f[k] for k in f if I.direct_readable(f[k])]
            assert all(I._Plan(d).fd is not None for d in direct)  # the pread path
            yield f
    finally:
        os.remove(path)


both = pytest.mark.parametrize("on_disk", [False, True], ids=["core", "disk"])


def _values(rng, n: int, dtype) -> np.ndarray:
    """Compressible but not constant: sorted runs (like CSR column indices) plus noise."""
    a = np.sort(rng.integers(0, 1 << 20, n)) % 50_000 + rng.integers(0, 3, n)
    noisy = rng.random(n) < 0.1
    a[noisy] = rng.integers(0, 1 << 30, int(noisy.sum()))
    return (a * 0.25).astype(dtype) if np.dtype(dtype).kind == "f" else a.astype(dtype)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 3000), clen=st.integers(1, 400),
       dtype=st.sampled_from([np.int32, np.int64, np.float32]), level=st.integers(0, 9),
       lo=st.integers(-3200, 3200), hi=st.integers(-3200, 3200), n_threads=st.integers(1, 3),
       use_out=st.booleans(), on_disk=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_equals_h5py_slicing(n, clen, dtype, level, lo, hi, n_threads, use_out, on_disk, seed):
    a = _values(np.random.default_rng(seed), n, dtype)
    with _h5(on_disk, lambda f: f.create_dataset("x", data=a, chunks=(clen,), maxshape=(None,),
                                                 compression="gzip", compression_opts=level)) as f:
        d = f["x"]
        assert I.direct_readable(d)
        ref = d[lo:hi]
        out = np.empty(ref.size, d.dtype) if use_out else None
        got = I.read_range(d, lo, hi, out=out, n_threads=n_threads)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_array_equal(got, ref)
        if use_out:
            assert got is out
        # chunk boundaries, from either side: all of them up to 24, else the first 8, the
        # last 8 and 8 between (a 1-element chunk made 3,000 boundaries, 9,000 reads: the
        # default run's slowest test, for no boundary the sampled ones do not cover)
        bounds = list(range(0, n + 1, clen))
        if len(bounds) > 24:
            step = len(bounds) // 9
            bounds = bounds[:8] + bounds[8:-8][step::step][:8] + bounds[-8:]
        for b in bounds:
            for x, y in ((b - 1, b + 1), (max(b - clen, 0), b), (b, b + 2 * clen)):
                np.testing.assert_array_equal(I.read_range(d, x, y, n_threads=2), d[x:y])


@pytest.mark.parametrize("kw", [dict(compression="gzip", shuffle=True),
                                dict(compression="lzf"), dict(compression="gzip", fletcher32=True),
                                dict(scaleoffset=0), dict(chunks=None), dict()])
@both
def test_other_layouts_and_filters_fall_back_and_agree(kw, on_disk):
    a = _values(np.random.default_rng(1), 5000, np.int32)
    chunked = kw.get("chunks", True) is not None
    kw = {"chunks": (300,), **kw} if chunked else kw
    with _h5(on_disk, lambda f: f.create_dataset("x", data=a, **kw)) as f:
        d = f["x"]
        # only deflate (gzip) alone, or no filter at all, is read directly
        assert I.direct_readable(d) == (chunked and (kw == {"chunks": (300,)}))
        for lo, hi in [(0, 5000), (299, 301), (4990, 6000), (7, 7), (-50, -1)]:
            np.testing.assert_array_equal(I.read_range(d, lo, hi, n_threads=2), d[lo:hi])
        out = np.empty(100, np.int32)
        assert I.read_range(d, 250, 350, out=out) is out
        np.testing.assert_array_equal(out, a[250:350])


def test_two_dimensional_strings_and_big_endian_fall_back():
    with _memfile() as f:
        two = f.create_dataset("two", data=np.arange(100).reshape(10, 10), chunks=(5, 5),
                               compression="gzip")
        big = f.create_dataset("big", data=np.arange(100, dtype=">i4"), chunks=(7,),
                               compression="gzip")
        strs = f.create_dataset("s", data=np.array([b"ab", b"cd"] * 10), chunks=(3,),
                                compression="gzip")
        assert not I.direct_readable(two)
        assert not I.direct_readable(big)
        assert not I.direct_readable(strs)
        np.testing.assert_array_equal(I.read_range(big, 3, 50), big[3:50])
        np.testing.assert_array_equal(I.read_range(strs, 1, 9), strs[1:9])


def test_forced_fallback(monkeypatch):
    a = np.arange(1000, dtype=np.int64)
    with _memfile() as f:
        d = f.create_dataset("x", data=a, chunks=(64,), compression="gzip")
        monkeypatch.setenv("GENOTOK_NO_INFLATE", "1")
        monkeypatch.setattr(I, "_fill", None)  # the direct path would fail here
        np.testing.assert_array_equal(I.read_range(d, 10, 900), a[10:900])


@both
def test_unwritten_chunks_read_as_the_fill_value(on_disk):
    def write(f):
        d = f.create_dataset("x", shape=(1000,), dtype=np.int32, chunks=(50,),
                             compression="gzip", fillvalue=7)
        d[120:260] = np.arange(140)

    with _h5(on_disk, write) as f:
        d = f["x"]
        for lo, hi in [(0, 1000), (100, 300), (0, 50), (255, 1000)]:
            np.testing.assert_array_equal(I.read_range(d, lo, hi, n_threads=2), d[lo:hi])


@both
def test_chunk_stored_without_deflate_is_read_raw(on_disk):
    """HDF5 skips an optional filter that fails (filter mask bit 0): the chunk is raw."""
    def write(f):
        d = f.create_dataset("x", data=np.zeros(100, np.int32), chunks=(10,),
                             compression="gzip")
        d.id.write_direct_chunk((10,), np.arange(10, 20, dtype=np.int32).tobytes(),
                                filter_mask=1)

    with _h5(on_disk, write) as f:
        d = f["x"]
        np.testing.assert_array_equal(I.read_range(d, 5, 25), d[5:25])
        assert I.read_range(d, 10, 12).tolist() == [10, 11]


def test_file_open_for_writing_is_read_through_hdf5(tmp_path):
    """Chunks written but still in HDF5's cache are not on disk: no pread then."""
    with h5py.File(tmp_path / "w.h5", "w") as f:
        d = f.create_dataset("x", data=np.arange(5000), chunks=(100,), compression="gzip")
        d[1000:1200] = -1
        assert I._Plan(d).fd is None
        np.testing.assert_array_equal(I.read_range(d, 0, 5000, n_threads=2), d[:])
        r = I.Ranged(d)
        np.testing.assert_array_equal(r[950:1300], d[950:1300])
        d[1250:1260] = -2  # a Ranged made before a write still reads what HDF5 holds
        np.testing.assert_array_equal(r[950:1300], d[950:1300])


def test_pread_is_checked_against_hdf5(tmp_path):
    """If the file addresses HDF5 reports did not give its bytes, h5py reads the chunks."""
    _gzip_file(tmp_path / "x.h5")
    with h5py.File(tmp_path / "x.h5", "r") as f:
        d = f["x"]
        for first in (0, 7_000):  # the chunk checked: the range's first, or a later one
            plan = I._Plan(d)
            plan.addr[plan.addr >= 0] += 1
            plan.addr[:first // 500] = -1  # as if never written: not checkable
            got = I.read_range(d, first, 20_000, n_threads=2, _plan=plan)
            np.testing.assert_array_equal(got, d[first:])
            assert plan.fd is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_reads_in_a_forked_child(tmp_path):
    """The worker pool is per process: a child forked after a read makes its own."""
    import multiprocessing as mp

    _gzip_file(tmp_path / "x.h5")
    with h5py.File(tmp_path / "x.h5", "r") as f:
        ref = I.read_range(f["x"], 0, 20_000, n_threads=2)
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_read_whole, (str(tmp_path / "x.h5"),)).get(timeout=60)
    np.testing.assert_array_equal(got, ref)


def _read_whole(path):
    with h5py.File(path, "r") as f:
        return I.read_range(f["x"], 0, 20_000, n_threads=2)


def test_a_declared_huge_chunk_is_refused_before_reading(tmp_path):
    _gzip_file(tmp_path / "x.h5")
    with h5py.File(tmp_path / "x.h5", "r") as f:
        plan = I._Plan(f["x"])
        I.read_range(f["x"], 0, 10, _plan=plan)  # checked: the pread path stays on
        plan.size[2] = 1 << 50
        with pytest.raises(HDF5ChunkError, match=r"x\.h5:/x: the chunk at element 1000 is stored"):
            I.read_range(f["x"], 0, 20_000, _plan=plan)


def _gzip_file(path, n=20_000, clen=500):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(n, dtype=np.int32) % 977, chunks=(clen,),
                         compression="gzip", compression_opts=4)


def _flip(path, dataset: str, chunk: int, at: float = 0.5) -> None:
    """Flip a few bytes inside one stored chunk of ``dataset``, in place on disk."""
    with h5py.File(path, "r") as f:
        info = f[dataset].id.get_chunk_info(chunk)
    pos = info.byte_offset + int(info.size * at)
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = bytearray(fh.read(4))
        fh.seek(pos)
        fh.write(bytes(x ^ 0x5A for x in b))


@pytest.mark.parametrize("at", [0.0, 0.5, 0.97])
def test_corrupt_chunk_is_a_clear_error(tmp_path, at):
    path = tmp_path / "bad.h5"
    _gzip_file(path)
    _flip(path, "x", 3, at)
    with h5py.File(path, "r") as f:
        d = f["x"]
        np.testing.assert_array_equal(I.read_range(d, 0, 1500), np.arange(1500) % 977)
        for n_threads in (1, 2):
            with pytest.raises(HDF5ChunkError, match=r"bad\.h5:/x: .*chunk at element 1500"):
                I.read_range(d, 0, 20_000, n_threads=n_threads)
        with pytest.raises(OSError):  # h5py refuses it too (it is an OSError as well)
            d[:]


@both
def test_chunk_of_the_wrong_size_is_a_clear_error(on_disk):
    def write(f):
        d = f.create_dataset("x", data=np.zeros(100, np.int64), chunks=(10,),
                             compression="gzip")
        d.id.write_direct_chunk((20,), zlib.compress(b"\0" * 40))  # 5 of 10 values

    with _h5(on_disk, write) as f:
        d = f["x"]
        with pytest.raises(HDF5ChunkError, match="holds 40 bytes, expected 80"):
            I.read_range(d, 0, 100)
        assert I.read_range(d, 0, 20).tolist() == [0] * 20  # the good chunks still read


def test_bad_arguments():
    with _memfile() as f:
        d = f.create_dataset("x", data=np.arange(100), chunks=(10,), compression="gzip")
        with pytest.raises(ValueError, match="out must be"):
            I.read_range(d, 0, 10, out=np.empty(9, d.dtype))
        with pytest.raises(ValueError, match="n_threads"):
            I.read_range(d, 0, 100, n_threads=0)
        with pytest.raises(TypeError, match="slices only"):
            I.Ranged(d)[::2]
        assert len(I.Ranged(d)) == 100
        np.testing.assert_array_equal(I.Ranged(d)[:], d[:])


# ----------------------------------------------------------------- through tokenize_anndata
def _atac(tmp_path, n_cells=300, n_peaks=400, seed=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n_cells, n_peaks, density=0.08, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.integers(1, 5, k)).astype(np.float32)
    starts = np.arange(n_peaks) * 1000
    var = {"chr": ["chr1"] * n_peaks, "start": starts, "end": starts + 500}
    import pandas as pd

    a = anndata.AnnData(X=X, var=pd.DataFrame(var, index=[f"p{i}" for i in range(n_peaks)]))
    plain = tmp_path / "plain.h5ad"
    a.write_h5ad(plain)
    gz = tmp_path / "gz.h5ad"
    a.write_h5ad(gz)
    with h5py.File(gz, "r+") as f:  # rewrite X's arrays gzip'd in small chunks (many chunks)
        for name in ("indices", "data"):
            arr = f["X"][name][:]
            del f["X"][name]
            f["X"].create_dataset(name, data=arr, chunks=(97,), maxshape=(None,),
                                  compression="gzip", compression_opts=4)
    tok = Tokenizer(Universe(RegionSet.from_tuples(
        [("chr1", int(s), int(s) + 2000) for s in range(0, n_peaks * 1000, 1500)])))
    return a, plain, gz, tok


def test_tokenize_anndata_gzip_equals_plain(tmp_path, monkeypatch):
    a, plain, gz, tok = _atac(tmp_path)
    ref = gad.tokenize_anndata(a, tok, CellSpec(values=True))
    calls = []
    fill = I._fill
    monkeypatch.setattr(I, "_fill", lambda *args: calls.append(1) or fill(*args))
    for chunk_rows in (None, 7):
        for n_threads in (1, 2):
            got = gad.tokenize_anndata(str(gz), tok, CellSpec(values=True),
                                       read=AnnDataOptions(chunk_rows=chunk_rows),
                                       n_threads=n_threads)
            assert got == ref
    assert calls  # the chunks were inflated here, not by h5py
    assert gad.tokenize_anndata(str(plain), tok, CellSpec(values=True)) == ref
    monkeypatch.setenv("GENOTOK_NO_INFLATE", "1")
    assert gad.tokenize_anndata(str(gz), tok, CellSpec(values=True),
                                read=AnnDataOptions(chunk_rows=7)) == ref


@pytest.mark.parametrize("no_inflate", ["0", "1"])
def test_tokenize_anndata_corrupt_gzip_chunk(tmp_path, monkeypatch, no_inflate):
    _, _, gz, tok = _atac(tmp_path)
    _flip(gz, "X/indices", 5)
    monkeypatch.setenv("GENOTOK_NO_INFLATE", no_inflate)
    with pytest.raises(GenotokError, match=r"gz\.h5ad"):
        gad.tokenize_anndata(str(gz), tok, read=AnnDataOptions(chunk_rows=9))
