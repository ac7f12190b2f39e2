"""Read a range of a gzip-compressed HDF5 dataset with the chunks inflated on worker threads.

HDF5 inflates a dataset's chunks one after the other on the calling thread, so a read of a
gzip-compressed ``.h5ad`` (as many public atlases are written) is bound by one core. Here the
raw chunks are read with h5py's direct-chunk API (``dataset.id.read_direct_chunk``), inflated
with ISA-L (``isal.isal_zlib``; the standard ``zlib`` when isal is not installed) on a few
threads (both release the GIL while they inflate; h5py serialises the raw reads, which are
cheap), and copied into place.

Only what is understood is read this way: a one-dimensional, chunked dataset of a native
numeric dtype whose filter pipeline is empty or deflate alone. Anything else (shuffle, lzf,
szip, fletcher32, scale-offset, a plugin filter, a contiguous or virtual layout, 2-D, strings,
a big-endian dtype) is read by plain h5py slicing, as is everything when the environment
variable ``GENOTOK_NO_INFLATE=1`` is set (used by the benchmark to time both ways).

Every inflated chunk must be a valid zlib stream (its Adler-32 checksum included) of exactly
the chunk's size: a damaged chunk is an :class:`~genotok.errors.HDF5ChunkError` naming the
file, the dataset and the chunk, never garbage. Chunks never written (HDF5 allocates chunks
lazily) read as the dataset's fill value, as h5py gives them.
"""

from __future__ import annotations

import os
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import HDF5ChunkError

try:
    from isal import isal_zlib as _zlib

    _ZLIB_ERRORS: tuple = (zlib.error, _zlib.error)
except ImportError:  # pragma: no cover - isal is a test dependency
    _zlib = zlib
    _ZLIB_ERRORS = (zlib.error,)

#: HDF5's filter id for deflate (gzip); the only filter inflated here
_DEFLATE = 1
#: below this many chunks a read stays on the calling thread (a pool costs ~0.1 ms)
_MIN_PARALLEL_CHUNKS = 4


def _forced_fallback() -> bool:
    return os.environ.get("GENOTOK_NO_INFLATE", "") not in ("", "0")


def direct_readable(dataset) -> bool:
    """Whether :func:`read_range` inflates ``dataset`` itself (else it reads with h5py).

    True for a one-dimensional chunked dataset of a native-endian numeric dtype whose filter
    pipeline is empty or deflate (gzip) alone.

    Examples
    --------
    >>> import h5py, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
    >>> with h5py.File(path, "w") as f:
    ...     gz = f.create_dataset("gz", data=np.arange(100), chunks=(10,), compression="gzip")
    ...     lzf = f.create_dataset("lzf", data=np.arange(100), chunks=(10,), compression="lzf")
    ...     direct_readable(gz), direct_readable(lzf)
    (True, False)
    """
    import h5py

    if not isinstance(dataset, h5py.Dataset) or dataset.ndim != 1 or dataset.chunks is None:
        return False
    dt = dataset.dtype
    if dt.kind not in "biuf" or not dt.isnative or dt.fields is not None or dt.subdtype:
        return False
    plist = dataset.id.get_create_plist()
    if plist.get_layout() != h5py.h5d.CHUNKED or plist.get_external_count():
        return False
    return all(plist.get_filter(i)[0] == _DEFLATE for i in range(plist.get_nfilters()))


def _where(dataset) -> str:
    try:
        return f"{dataset.file.filename}:{dataset.name}"
    except Exception:  # noqa: BLE001 - a closed file: the message still says what happened
        return "<closed HDF5 file>"


def _chunk_bytes(dataset, coord: int, clen: int, itemsize: int, compressed: bool):
    """The bytes of the chunk at element offset ``coord`` (``None``: never written)."""
    try:
        mask, raw = dataset.id.read_direct_chunk((coord,))
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        try:
            info = dataset.id.get_chunk_info_by_coord((coord,))
        except Exception:  # noqa: BLE001 - report the first failure below
            info = None
        if info is not None and info.byte_offset is None:
            return None
        raise HDF5ChunkError(f"{_where(dataset)}: cannot read the chunk at element {coord} "
                             f"({type(exc).__name__}: {exc}); the file is damaged") from None
    nbytes = clen * itemsize
    if compressed and not mask & 1:  # bit 0 set: deflate was skipped for this chunk
        try:
            raw = _zlib.decompress(raw, 15, nbytes)
        except _ZLIB_ERRORS as exc:
            raise HDF5ChunkError(f"{_where(dataset)}: the gzip chunk at element {coord} does "
                                 f"not inflate ({exc}); the file is damaged (re-download or "
                                 "re-write it)") from None
    if len(raw) != nbytes:
        raise HDF5ChunkError(f"{_where(dataset)}: the chunk at element {coord} holds "
                             f"{len(raw):,} bytes, expected {nbytes:,}; the file is damaged "
                             "(re-download or re-write it)")
    return raw


def _fill(dataset, coords, start: int, stop: int, out: np.ndarray, compressed: bool) -> None:
    """Read the chunks at ``coords`` and copy their part of ``[start, stop)`` into ``out``."""
    clen, dt = dataset.chunks[0], dataset.dtype
    for c in coords:
        raw = _chunk_bytes(dataset, c, clen, dt.itemsize, compressed)
        lo, hi = max(c, start), min(c + clen, stop)
        if raw is None:
            out[lo - start:hi - start] = dataset.fillvalue
        else:
            out[lo - start:hi - start] = np.frombuffer(raw, dt)[lo - c:hi - c]


def _default_threads() -> int:
    import numba

    return numba.get_num_threads()


def read_range(dataset, start: int, stop: int, out: np.ndarray | None = None,
               n_threads: int | None = None) -> np.ndarray:
    """``dataset[start:stop]`` of a one-dimensional HDF5 dataset, gzip chunks inflated in parallel.

    Parameters
    ----------
    dataset : h5py.Dataset
        An open dataset. Datasets :func:`direct_readable` rejects (other filters, layouts,
        dtypes or shapes) are read with plain h5py slicing.
    start, stop : int
        The range, with Python's slice rules (clipped to the dataset, negative from the end).
    out : numpy.ndarray, optional
        A contiguous one-dimensional array of the dataset's dtype and the range's length to
        fill and return (no allocation).
    n_threads : int, optional
        Inflating threads; default numba's current thread count (``genotok`` calls set it).

    Returns
    -------
    numpy.ndarray
        Equal to ``dataset[start:stop]`` (same dtype and values).

    Raises
    ------
    HDF5ChunkError
        A chunk of the range cannot be read or does not inflate to its size (damaged file).

    Examples
    --------
    >>> import h5py, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
    >>> with h5py.File(path, "w") as f:
    ...     d = f.create_dataset("x", data=np.arange(1000, dtype=np.int32), chunks=(64,),
    ...                          compression="gzip", compression_opts=4)
    ...     read_range(d, 60, 70, n_threads=2).tolist()
    [60, 61, 62, 63, 64, 65, 66, 67, 68, 69]
    """
    start, stop, _ = slice(start, stop).indices(dataset.shape[0] if dataset.ndim else 0)
    n = max(stop - start, 0)
    if out is not None:
        if (out.ndim != 1 or out.shape[0] != n or out.dtype != dataset.dtype
                or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f"out must be a writeable contiguous 1-D array of dtype "
                             f"{dataset.dtype} and length {n}, got {out.dtype} {out.shape}")
    if _forced_fallback() or not direct_readable(dataset):
        if out is None:
            return dataset[start:stop]
        if n:
            dataset.read_direct(out, np.s_[start:stop])
        return out
    if out is None:
        out = np.empty(n, dataset.dtype)
    if n == 0:
        return out
    clen = dataset.chunks[0]
    compressed = dataset.id.get_create_plist().get_nfilters() > 0
    coords = list(range(start - start % clen, stop, clen))
    n_threads = _default_threads() if n_threads is None else int(n_threads)
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_threads == 1 or len(coords) < _MIN_PARALLEL_CHUNKS:
        _fill(dataset, coords, start, stop, out, compressed)
        return out
    # equal-size chunks: contiguous runs of equal count, a few per thread to even out the
    # compressed sizes; each thread writes a disjoint part of ``out``
    n_parts = min(len(coords), 4 * n_threads)
    bounds = np.linspace(0, len(coords), n_parts + 1).astype(np.int64)
    with ThreadPoolExecutor(n_threads, thread_name_prefix="genotok-inflate") as pool:
        futures = [pool.submit(_fill, dataset, coords[a:b], start, stop, out, compressed)
                   for a, b in zip(bounds[:-1], bounds[1:])]
        for fut in futures:
            fut.result()
    return out


class Ranged:
    """A one-dimensional dataset whose ``[a:b]`` slices are read by :func:`read_range`.

    Stands where code slices an h5py dataset (``ind = Ranged(node["indices"])``, then
    ``ind[a:b]``); only step-1 slices are supported.

    Examples
    --------
    >>> import h5py, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
    >>> with h5py.File(path, "w") as f:
    ...     d = f.create_dataset("x", data=np.arange(100.0), chunks=(8,), compression="gzip")
    ...     Ranged(d)[6:10].tolist()
    [6.0, 7.0, 8.0, 9.0]
    """

    def __init__(self, dataset, n_threads: int | None = None):
        self.dataset, self.n_threads = dataset, n_threads

    def __getitem__(self, sl: slice) -> np.ndarray:
        if not isinstance(sl, slice) or sl.step not in (None, 1):
            raise TypeError(f"Ranged supports [a:b] slices only, got {sl!r}")
        n = self.dataset.shape[0]
        return read_range(self.dataset, 0 if sl.start is None else sl.start,
                          n if sl.stop is None else sl.stop, n_threads=self.n_threads)

    def __len__(self) -> int:
        return int(self.dataset.shape[0])
