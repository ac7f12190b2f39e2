"""Counts per (cell, column) pair while a fragment file streams: summed in memory into a
canonical CSR matrix (:class:`_PairCounts`, folded as it grows, on a thread), or handed to
disk by buckets of cells when they outgrow ``memory_mb`` (:class:`_Spilled`, over
:class:`~genotok.singlecell.spill.RowSpill`). Used by :mod:`.fragmatrix`; no public names.
"""

from __future__ import annotations

import numpy as np

from ..kernels import fragments as FK
from .spill import RowSpill


class _PairCounts:
    """Sum of counts per (cell, column) pair, folded as it grows into a canonical CSR matrix
    (``kernels.fragments.add_pairs``: a counting sort by cell and a dense row accumulator,
    linear where ``np.unique`` of the keys sorted them all). Bounded by the distinct pairs:
    12 bytes each (int32 column, float64 sum), plus the pending pairs in one buffer (16 bytes
    each, at most half as many as the distinct ones, or 1M, plus one call of the block kernel:
    the kernel writes into that buffer) and, while they are folded in, a
    the pairs bucketed by cell (16 bytes a pending pair) and the new matrix, with a second
    pending buffer filling meanwhile (folds run on a thread): about 60 bytes per distinct pair
    at the peak. The matrix arrays keep their slack after a fold (no trimming copy)."""

    def __init__(self, n_cols: int):
        self.n_cols = n_cols
        self.indptr = np.zeros(1, np.int64)
        self.indices = np.zeros(0, np.int32 if n_cols < 1 << 31 else np.int64)
        self.data = np.zeros(0, np.float64)
        self.nnz = 0
        self.keys = np.empty(1 << 16, np.int64)
        self.weights = np.empty(1 << 16, np.float64)
        self.n_pending = 0
        self._pool = self._folding = self._spare = None

    def _limit(self) -> int:
        return max(1 << 20, self.nnz // 2)

    def add(self, keys: np.ndarray, counts: np.ndarray, n_rows: int) -> None:
        """Pairs ``keys = cell * n_cols + column`` (cells below ``n_rows``) with ``counts``."""
        if keys.size != counts.size:
            raise AssertionError("pair counts: keys and counts differ in length")
        end = self.n_pending + keys.size
        if end > self.keys.size:
            if self.n_pending >= self._limit():
                self.reduce(n_rows)
                end = keys.size
            if end > self.keys.size:
                self._grow(max(end, min(2 * self.keys.size, self._limit() + keys.size), 1 << 16))
        self._put(keys, counts, end)
        if self.n_pending > self._limit():
            self.reduce(n_rows)

    def extend(self, keys: np.ndarray, counts: np.ndarray) -> None:
        """Append pairs to the pending ones (the buffer grown as needed; the caller then
        calls :meth:`fold_if_full`)."""
        end = self.n_pending + keys.size
        if end > self.keys.size:
            self._grow(max(end, 2 * self.keys.size))
        self._put(keys, counts, end)

    def _grow(self, cap: int) -> None:
        """Room for ``cap`` pending pairs, the pending ones kept."""
        k2 = np.empty(cap, np.int64)
        k2[:self.n_pending] = self.keys[:self.n_pending]
        w2 = np.empty(cap, np.float64)
        w2[:self.n_pending] = self.weights[:self.n_pending]
        self.keys, self.weights = k2, w2

    def _put(self, keys: np.ndarray, counts: np.ndarray, end: int) -> None:
        self.keys[self.n_pending:end] = keys
        self.weights[self.n_pending:end] = counts
        self.n_pending = end

    def fold_if_full(self, n_rows: int) -> None:
        """Start folding when the pending pairs (written into ``keys``/``weights`` by the
        block kernel) passed the bound: on a thread (``add_pairs`` releases the GIL), the
        kernel writing on into a second buffer meanwhile (one more pending buffer in memory;
        a fold still running when the next is due is waited for)."""
        if self.n_pending <= self._limit():
            return
        from concurrent.futures import ThreadPoolExecutor

        self.wait()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="genotok-fold")
        keys, weights, n = self.keys, self.weights, self.n_pending
        spare = self._spare if self._spare is not None and self._spare[0].size >= keys.size \
            else (np.empty(keys.size, np.int64), np.empty(keys.size, np.float64))
        self.keys, self.weights = spare
        self._spare, self.n_pending = None, 0

        def fold():
            self._fold(keys[:n], weights[:n], n_rows)
            self._spare = (keys, weights)

        self._folding = self._pool.submit(fold)

    def wait(self) -> None:
        """Wait for the fold running on the thread, if any (its error is raised here)."""
        if self._folding is not None:
            folding, self._folding = self._folding, None
            folding.result()

    def close(self) -> None:
        """Wait for a running fold and stop the thread."""
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None

    def spill_to(self, spill, n_rows: int) -> None:
        """Fold, hand the matrix to ``spill`` (:meth:`RowSpill.write`) and start afresh."""
        self.reduce(n_rows)
        spill.write(self.indptr, self.indices[:self.nnz], self.data[:self.nnz])
        self.indptr = np.zeros(1, np.int64)
        self.indices, self.data = self.indices[:0].copy(), self.data[:0].copy()
        self.nnz = 0

    def reduce(self, n_rows: int) -> None:
        """Fold the pending pairs in; the matrix then has ``n_rows`` rows."""
        self.wait()
        keys, counts = self.keys[:self.n_pending], self.weights[:self.n_pending]
        self.n_pending = 0
        self._fold(keys, counts, n_rows)

    def _fold(self, keys: np.ndarray, counts: np.ndarray, n_rows: int) -> None:
        n_cols = self.n_cols
        # every integer the kernel indexes with is checked here (numba does not)
        if n_rows < self.indptr.size - 1 or (keys.size and n_cols < 1):
            raise AssertionError("pair counts: rows or columns shrank")
        if keys.size and (int(keys.min()) < 0 or int(keys.max()) >= n_rows * n_cols):
            raise AssertionError("pair counts: a (cell, column) key is out of range")
        ptr, idx, dat, n = FK.add_pairs(self.indptr, self.indices[:self.nnz],
                                        self.data[:self.nnz], keys, counts, n_rows, n_cols)
        self.indptr, self.indices, self.data, self.nnz = ptr, idx, dat, n

    def csr(self, n_rows: int):
        """The counts as a float32 ``scipy.sparse.csr_matrix`` of ``n_rows`` rows."""
        import scipy.sparse as sp

        self.reduce(n_rows)
        self.close()
        n = self.nnz
        return sp.csr_matrix((self.data[:n].astype(np.float32), self.indices[:n], self.indptr),
                             shape=(n_rows, self.n_cols))


class _Spilled:
    """A counted matrix spilled to disk: ``shape``, ``chunks()`` (CSR chunks of the kept rows,
    a bucket of cells at a time, as often as asked) and ``close()`` (removes the files)."""

    def __init__(self, spill: RowSpill, keep: np.ndarray):
        self.spill, self.keep = spill, keep
        self.shape = (int(keep.size), spill.n_cols)

    def chunks(self):
        return self.spill.rows(self.keep)

    def close(self) -> None:
        self.spill.close()
