"""Read a range of a gzip-compressed HDF5 dataset with the chunks inflated on worker threads.

HDF5 inflates a dataset's chunks one after the other on the calling thread, so a read of a
gzip-compressed ``.h5ad`` (as many public atlases are written) is bound by one core. Here the
raw chunks are read with h5py's direct-chunk API (``dataset.id.read_direct_chunk``), inflated
with ISA-L (``isal.isal_zlib``) on a few
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
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from .errors import HDF5ChunkError

from isal import isal_zlib as _zlib

_ZLIB_ERRORS: tuple = (zlib.error, _zlib.error)

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


class _Plan:
    """Where one dataset's chunks are: per chunk (by element offset / chunk length) its file
    address (-1: never written), stored size and filter mask, and a descriptor to ``pread``
    them with (``None``: read each chunk with ``read_direct_chunk`` instead).

    The table comes from one ``chunk_iter`` pass (HDF5 >= 1.10.10/1.12.3, h5py >= 3.8) over
    the whole dataset (about 1 µs per chunk), so a caller slicing many ranges keeps the plan
    (:class:`Ranged` does). ``pread`` needs the file's own descriptor (the default ``sec2``
    driver); it releases the GIL, where ``read_direct_chunk`` holds it (and h5py's lock) for
    the copy of the chunk, which would serialise the threads.
    """

    def __init__(self, dataset):
        self.dataset, self.where = dataset, _where(dataset)
        self.clen, self.dtype = int(dataset.chunks[0]), dataset.dtype
        self.compressed = dataset.id.get_create_plist().get_nfilters() > 0
        self.fd, self.addr, self.checked = None, None, False
        # read-only files only: in a file open for writing, chunks may still sit in HDF5's
        # cache, not on disk (read_direct_chunk flushes them first)
        f = dataset.file
        if f.mode != "r" or f.driver != "sec2" or not hasattr(dataset.id, "chunk_iter"):
            return
        n = -(-int(dataset.shape[0]) // self.clen)
        addr, size = np.full(n, -1, np.int64), np.zeros(n, np.int64)
        mask = np.zeros(n, np.int64)

        def record(info):
            k = info.chunk_offset[0] // self.clen
            if 0 <= k < n and info.byte_offset is not None:
                addr[k], size[k], mask[k] = info.byte_offset, info.size, info.filter_mask

        try:
            dataset.id.chunk_iter(record)
            fd = dataset.file.id.get_vfd_handle()
        except Exception:  # noqa: BLE001 - any doubt: read through h5py's direct-chunk API
            return
        self.fd, self.addr, self.size, self.mask = int(fd), addr, size, mask

    def check(self, coord: int) -> None:
        """Use ``pread`` only if it gives the bytes HDF5 gives for a written chunk (the first
        from ``coord`` on, else the first of the dataset); once per plan."""
        if self.fd is None or self.checked:
            return
        written = np.flatnonzero(self.addr >= 0)
        if written.size == 0:
            return
        self.checked = True
        later = written[written >= coord // self.clen]
        k = int(later[0] if later.size else written[0])
        coord = k * self.clen
        try:
            mask, raw = self.dataset.id.read_direct_chunk((coord,))
            same = (mask == self.mask[k]
                    and os.pread(self.fd, int(self.size[k]), int(self.addr[k])) == raw)
        except Exception:  # noqa: BLE001 - the direct-chunk path reports what is wrong
            same = False
        if not same:
            self.fd = None

    def raw(self, coord: int):
        """``(filter mask, stored bytes)`` of the chunk at element ``coord``; ``None``: never
        written."""
        if self.fd is not None:
            k = coord // self.clen
            if self.addr[k] < 0:
                return None
            # deflate grows incompressible data by ~0.03%; a crafted index can declare any size
            nbytes = self.clen * self.dtype.itemsize
            if not 0 <= self.size[k] <= nbytes + nbytes // 64 + 4096:
                raise HDF5ChunkError(f"{self.where}: the chunk at element {coord} is stored in "
                                     f"{int(self.size[k]):,} bytes, more than {nbytes:,} values' "
                                     "bytes can take compressed; the file is damaged or crafted")
            try:
                raw = os.pread(self.fd, int(self.size[k]), int(self.addr[k]))
            except OSError as exc:
                raise HDF5ChunkError(f"{self.where}: cannot read the chunk at element {coord} "
                                     f"({exc}); the file is damaged or was changed") from None
            if len(raw) != self.size[k]:
                raise HDF5ChunkError(f"{self.where}: the chunk at element {coord} is cut short "
                                     f"({len(raw):,} of {int(self.size[k]):,} bytes); the file "
                                     "is truncated")
            return int(self.mask[k]), raw
        try:
            return self.dataset.id.read_direct_chunk((coord,))
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            try:
                info = self.dataset.id.get_chunk_info_by_coord((coord,))
            except Exception:  # noqa: BLE001 - report the first failure below
                info = None
            if info is not None and info.byte_offset is None:
                return None
            raise HDF5ChunkError(f"{self.where}: cannot read the chunk at element {coord} "
                                 f"({type(exc).__name__}: {exc}); the file is damaged") from None

    def chunk(self, coord: int):
        """The chunk's bytes, inflated and checked (``None``: never written)."""
        got = self.raw(coord)
        if got is None:
            return None
        mask, raw = got
        nbytes = self.clen * self.dtype.itemsize
        if self.compressed and not mask & 1:  # bit 0 set: deflate was skipped for this chunk
            try:
                raw = _zlib.decompress(raw, 15, nbytes)
            except _ZLIB_ERRORS as exc:
                raise HDF5ChunkError(f"{self.where}: the gzip chunk at element {coord} does "
                                     f"not inflate ({exc}); the file is damaged (re-download "
                                     "or re-write it)") from None
        if len(raw) != nbytes:
            raise HDF5ChunkError(f"{self.where}: the chunk at element {coord} holds "
                                 f"{len(raw):,} bytes, expected {nbytes:,}; the file is "
                                 "damaged (re-download or re-write it)")
        return raw


def _fill(plan: _Plan, coords, start: int, stop: int, out: np.ndarray) -> None:
    """Read the chunks at ``coords`` and copy their part of ``[start, stop)`` into ``out``."""
    clen = plan.clen
    for c in coords:
        raw = plan.chunk(c)
        lo, hi = max(c, start), min(c + clen, stop)
        if raw is None:
            out[lo - start:hi - start] = plan.dataset.fillvalue
        else:
            out[lo - start:hi - start] = np.frombuffer(raw, plan.dtype)[lo - c:hi - c]


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _forget_pools() -> None:  # a forked child has none of the parent's threads
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools)


def _pool(n_threads: int) -> ThreadPoolExecutor:
    """One pool per thread count, kept for the process (a row-chunked read calls us often)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(n_threads)
        if pool is None:
            pool = _POOLS[n_threads] = ThreadPoolExecutor(
                n_threads, thread_name_prefix=f"genotok-inflate-{n_threads}")
        return pool


def _default_threads() -> int:
    import numba

    return numba.get_num_threads()


def read_range(dataset, start: int, stop: int, out: np.ndarray | None = None,
               n_threads: int | None = None, *, _plan: _Plan | None = None) -> np.ndarray:
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
    plan = _Plan(dataset) if _plan is None else _plan
    clen = plan.clen
    coords = list(range(start - start % clen, stop, clen))
    plan.check(coords[0])
    from .params import N_THREADS, check

    check("n_threads", n_threads, N_THREADS, "read_range")  # before int(): int(1.5) is 1
    n_threads = _default_threads() if n_threads is None else int(n_threads)
    if n_threads == 1 or len(coords) < _MIN_PARALLEL_CHUNKS:
        _fill(plan, coords, start, stop, out)
        return out
    # equal-size chunks: contiguous runs of equal count, a few per thread to even out the
    # compressed sizes; each thread writes a disjoint part of ``out``
    n_parts = min(len(coords), 4 * n_threads)
    bounds = np.linspace(0, len(coords), n_parts + 1).astype(np.int64)
    pool = _pool(n_threads)
    futures = [pool.submit(_fill, plan, coords[a:b], start, stop, out)
               for a, b in zip(bounds[:-1], bounds[1:])]
    try:
        for fut in futures:
            fut.result()
    finally:  # on an error, the other parts still write into ``out``: let them end first
        for fut in futures:
            fut.cancel()
        wait(futures)
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
        self._plan: _Plan | None = None  # made at the first direct read, kept for the next

    def __getitem__(self, sl: slice) -> np.ndarray:
        if not isinstance(sl, slice) or sl.step not in (None, 1):
            raise TypeError(f"Ranged supports [a:b] slices only, got {sl!r}")
        d, n = self.dataset, self.dataset.shape[0]
        if self._plan is None and not _forced_fallback() and direct_readable(d):
            self._plan = _Plan(d)
        return read_range(d, 0 if sl.start is None else sl.start,
                          n if sl.stop is None else sl.stop, n_threads=self.n_threads,
                          _plan=self._plan)

    def __len__(self) -> int:
        return int(self.dataset.shape[0])
