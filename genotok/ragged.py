"""Ragged arrays: many variable-length token lists in one flat buffer plus offsets."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from . import _validate


class Ragged(Sequence):
    """``n`` variable-length rows stored as one flat ``data`` array and ``n + 1`` offsets.

    Row ``i`` is ``data[offsets[i]:offsets[i + 1]]`` (a view, no copy). An optional
    ``values`` array, aligned with ``data``, carries one value per token (e.g. counts).

    Examples
    --------
    >>> r = Ragged.from_list([[1, 2], [], [3]])
    >>> len(r), r[0].tolist(), r.lengths.tolist()
    (3, [1, 2], [2, 0, 1])
    """

    __slots__ = ("data", "offsets", "values")

    def __init__(self, data: np.ndarray, offsets: np.ndarray, values: np.ndarray | None = None):
        data = np.asarray(data)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0:
            raise ValueError("offsets must be a 1-D array starting at 0")
        if offsets[-1] != data.shape[0] or (offsets.size > 1 and np.any(np.diff(offsets) < 0)):
            raise ValueError("offsets must be non-decreasing and end at len(data)")
        if values is not None:
            values = np.asarray(values)
            if values.shape[0] != data.shape[0]:
                raise ValueError("values must be aligned with data")
        self.data = data
        self.offsets = offsets
        self.values = values

    @classmethod
    def from_list(cls, rows, dtype=np.int64, values=None) -> "Ragged":
        """Build from a list of sequences (and optionally a parallel list of value rows)."""
        rows = [np.asarray(r, dtype=dtype).ravel() for r in rows]
        lengths = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.concatenate(rows) if rows else np.zeros(0, dtype=dtype)
        vals = None
        if values is not None:
            vrows = [np.asarray(v).ravel() for v in values]
            vals = np.concatenate(vrows) if vrows else np.zeros(0)
        return cls(data.astype(dtype, copy=False), offsets, vals)

    def __len__(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        """Length of every row (int64)."""
        return np.diff(self.offsets)

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return Ragged.from_list([self[j] for j in range(start, stop, step)],
                                        dtype=self.data.dtype)
            lo, hi = self.offsets[start], self.offsets[max(start, stop)]
            vals = None if self.values is None else self.values[lo:hi]
            return Ragged(self.data[lo:hi], self.offsets[start:max(start, stop) + 1] - lo, vals)
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        return self.data[self.offsets[i]:self.offsets[i + 1]]

    def row_values(self, i: int) -> np.ndarray:
        """The value channel of row ``i`` (raises if there is none)."""
        if self.values is None:
            raise ValueError("this Ragged has no value channel")
        if i < 0:
            i += len(self)
        return self.values[self.offsets[i]:self.offsets[i + 1]]

    def take(self, idx) -> "Ragged":
        """The rows ``idx`` (in that order), values kept.

        >>> Ragged.from_list([[1], [2, 3], [4]]).take([0, 2]).to_list()
        [[1], [4]]
        """
        idx = _validate.rows(idx, len(self), "row", "a Ragged of {n} rows")
        starts, ends = self.offsets[idx], self.offsets[idx + 1]
        lengths = ends - starts
        new = np.zeros(idx.size + 1, np.int64)
        np.cumsum(lengths, out=new[1:])
        # the token positions of the kept rows, without a Python loop over tokens
        pos = np.repeat(starts - new[:-1], lengths) + np.arange(new[-1])
        vals = None if self.values is None else np.asarray(self.values)[pos]
        return Ragged(np.asarray(self.data)[pos], new, vals)

    def __iter__(self) -> Iterator[np.ndarray]:
        d, o = self.data, self.offsets
        for i in range(len(self)):
            yield d[o[i]:o[i + 1]]

    def to_list(self) -> list[list[int]]:
        """Plain Python lists (for printing and comparisons)."""
        return [row.tolist() for row in self]

    def __eq__(self, other) -> bool:
        if not isinstance(other, Ragged):
            return NotImplemented
        return (np.array_equal(self.offsets, other.offsets)
                and np.array_equal(self.data, other.data))

    __hash__ = None  # mutable container

    def _repr_html_(self) -> str:
        from ._html import card, preview

        lens = self.lengths
        return card("genotok.Ragged", {
            "rows": f"{len(self):,}", "items": f"{self.data.size:,}", "dtype": str(self.data.dtype),
            "lengths": f"{lens.min()}..{lens.max()}" if lens.size else "-",
            "values": "yes" if self.values is not None else "no"},
            [(str(i), preview([str(x) for x in self[i].tolist()])) for i in range(min(3, len(self)))])

    def __repr__(self) -> str:
        n = len(self)
        lens = self.lengths
        stats = f", lengths {lens.min()}..{lens.max()}" if n else ""
        return f"Ragged({n} rows, {self.data.size} items, dtype={self.data.dtype}{stats})"
