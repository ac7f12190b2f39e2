"""Count-matrix rows spilled to disk in buckets of consecutive rows: the out-of-core half of a
cells × columns matrix summed while a file streams.

A fragment file is sorted by position, not by cell, so no cell's row is final before the last
block. To keep memory bounded whatever the size of the result, the caller sums pairs in memory
(a canonical CSR matrix) and, when that grows past its budget, hands the matrix to
:meth:`RowSpill.write`, which appends each bucket's rows (``rows_per_bucket`` consecutive rows)
to that bucket's file and lets the caller start afresh. At the end :meth:`RowSpill.bucket` reads
one bucket's pieces back, as ``(rows, columns, values)`` for the caller to sum (the same pair
may come from several pieces). The files live in a private temporary directory, removed by
:meth:`RowSpill.close` (or on leaving the ``with`` block), on error too.

On disk: 16 bytes a pair (``int32`` row within its bucket, ``int32`` column, ``float64`` value).
In memory: nothing but the matrix being written, and one bucket's pieces being read.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from ..errors import GenotokError
from ..params import InstanceOf, Integral, Interval, validated

#: one spilled pair: its row within the bucket, its column, its value
PAIR = np.dtype([("row", "<i4"), ("col", "<i4"), ("val", "<f8")])


class RowSpill:
    """Buckets of CSR rows on disk (see the module documentation).

    Parameters
    ----------
    n_cols
        Columns of the matrix (``< 2**31``).
    rows_per_bucket
        Consecutive rows per bucket: what one :meth:`bucket` read holds at most.
    directory
        Where the temporary directory goes (default: the system's, ``TMPDIR``).

    Examples
    --------
    >>> import numpy as np
    >>> with RowSpill(n_cols=4, rows_per_bucket=2) as spill:
    ...     spill.write(np.array([0, 1, 1, 3]), np.array([2, 0, 3]), np.array([1., 5., 2.]))
    ...     spill.write(np.array([0, 0, 0, 0, 1]), np.array([2]), np.array([7.]))
    ...     [tuple(a.tolist() for a in spill.bucket(b)) for b in range(spill.n_buckets)]
    ...     [m.toarray().tolist() for m in spill.rows()]
    [([0], [2], [1.0]), ([0, 0, 1], [0, 3, 2], [5.0, 2.0, 7.0])]
    [[[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]], [[5.0, 0.0, 0.0, 2.0], [0.0, 0.0, 7.0, 0.0]]]
    """

    @validated({"n_cols": [Interval(Integral, 0, 2**31 - 1)],
                "rows_per_bucket": [Interval(Integral, 1, None)],
                "directory": [InstanceOf(str, os.PathLike), None]}, "RowSpill")
    def __init__(self, n_cols: int, *, rows_per_bucket: int = 1024, directory=None):
        self.n_cols = int(n_cols)
        self.rows_per_bucket = int(rows_per_bucket)
        self.n_rows = 0  # rows seen so far (the most of any matrix written)
        self.pairs = 0  # pairs written so far
        self.dir = tempfile.mkdtemp(prefix="genotok-spill-", dir=directory)

    CONSTRAINTS = __init__.CONSTRAINTS

    @property
    def n_buckets(self) -> int:
        return -(-self.n_rows // self.rows_per_bucket)

    def _file(self, b: int) -> str:
        return os.path.join(self.dir, f"{b:08d}.pairs")

    def write(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> None:
        """Append a canonical CSR matrix's rows (row ``r`` of it is row ``r`` of the whole) to
        their buckets' files."""
        indptr = np.asarray(indptr, np.int64)
        n = indptr.size - 1
        nnz = int(indptr[-1]) if n >= 0 else 0
        if n < 0 or indptr[0] != 0 or (np.diff(indptr) < 0).any() or nnz > len(indices) or \
                len(indices) != len(data):
            raise AssertionError("spill: not a CSR matrix")
        if nnz and (int(indices[:nnz].min()) < 0 or int(indices[:nnz].max()) >= self.n_cols):
            raise AssertionError("spill: a column is out of range")
        self.n_rows = max(self.n_rows, n)
        R = self.rows_per_bucket
        for b in range(-(-n // R)):
            lo, hi = b * R, min(n, (b + 1) * R)
            a, z = int(indptr[lo]), int(indptr[hi])
            if a == z:
                continue
            piece = np.empty(z - a, PAIR)
            piece["row"] = np.repeat(np.arange(hi - lo, dtype=np.int32),
                                     np.diff(indptr[lo:hi + 1]))
            piece["col"] = indices[a:z]
            piece["val"] = data[a:z]
            try:
                with open(self._file(b), "ab") as fh:
                    piece.tofile(fh)
            except OSError as exc:
                raise GenotokError(f"{self.dir}: spilling the counts to disk failed ({exc}); "
                                   "free space there or set TMPDIR to a larger disk") from exc
            self.pairs += piece.size

    def bucket(self, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bucket ``b``'s pairs: ``(rows within the bucket, columns, values)``, unsummed."""
        if not 0 <= b < self.n_buckets:
            raise IndexError(f"bucket {b} of {self.n_buckets}")
        path = self._file(b)
        if not os.path.exists(path):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
        raw = np.fromfile(path, PAIR)
        rows, cols = raw["row"].astype(np.int64), raw["col"].astype(np.int64)
        # read back from disk: checked before any kernel indexes with them
        if os.path.getsize(path) != raw.size * PAIR.itemsize or (rows.size and (
                rows.min() < 0 or rows.max() >= self.rows_per_bucket or cols.min() < 0
                or cols.max() >= self.n_cols)):
            raise GenotokError(f"{path}: a spilled bucket is damaged (was {self.dir} changed "
                               "while genotok ran?)")
        return rows, cols, raw["val"].copy()

    def matrix(self, b: int, dtype=np.float32):
        """Bucket ``b`` summed: a canonical ``scipy.sparse.csr_matrix`` of its rows (the last
        bucket may have fewer than ``rows_per_bucket``)."""
        import scipy.sparse as sp

        rows, cols, vals = self.bucket(b)  # checked in range: scipy does not check
        n = min(self.rows_per_bucket, self.n_rows - b * self.rows_per_bucket)
        m = sp.coo_matrix((vals, (rows, cols)), shape=(n, self.n_cols)).tocsr()
        m.sum_duplicates()
        return m.astype(dtype, copy=False)

    def rows(self, keep: np.ndarray | None = None, dtype=np.float32):
        """The whole matrix, a bucket at a time: CSR chunks in row order, only the rows in
        ``keep`` (sorted row numbers; ``None``: all)."""
        R = self.rows_per_bucket
        for b in range(self.n_buckets):
            m = self.matrix(b, dtype)
            if keep is not None:
                lo = b * R
                sel = keep[(keep >= lo) & (keep < lo + m.shape[0])] - lo
                if sel.size != m.shape[0]:
                    m = m[sel]
            yield m

    def close(self) -> None:
        """Remove the files (idempotent)."""
        if getattr(self, "dir", None):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RowSpill:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()


__all__ = ["RowSpill"]
