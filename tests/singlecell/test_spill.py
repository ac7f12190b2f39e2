"""RowSpill: matrices written in pieces, read back by bucket, sum to the matrices' sum; the
files go away; damaged files are refused, never indexed with."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok.errors import GenotokError
from genotok.singlecell.spill import PAIR, RowSpill


def csr(dense: np.ndarray) -> sp.csr_matrix:
    m = sp.csr_matrix(dense)
    m.sort_indices()
    return m


@st.composite
def pieces(draw):
    n_cols = draw(st.integers(1, 6))
    rows = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4))  # rows seen by each write
    mats = [draw(st.lists(st.lists(st.integers(0, 3), min_size=n_cols, max_size=n_cols),
                          min_size=r, max_size=r)) for r in rows]
    return n_cols, [np.array(m, np.float64).reshape(len(m), n_cols) for m in mats]


@given(pieces(), st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_buckets_sum_to_the_written_matrices(case, rows_per_bucket):
    n_cols, mats = case
    n = max(m.shape[0] for m in mats)
    total = np.zeros((n, n_cols))
    with RowSpill(n_cols, rows_per_bucket=rows_per_bucket) as spill:
        for m in mats:
            total[:m.shape[0]] += m
            c = csr(m)
            spill.write(c.indptr, c.indices, c.data)
        assert spill.n_rows == n and spill.n_buckets == -(-n // rows_per_bucket)
        got = np.zeros_like(total)
        for b in range(spill.n_buckets):
            r, c, v = spill.bucket(b)
            assert ((r >= 0) & (r < rows_per_bucket)).all()
            np.add.at(got, (b * rows_per_bucket + r, c), v)
        d = spill.dir
        assert os.path.isdir(d)
    assert not os.path.exists(d)  # closed: the files are gone
    np.testing.assert_array_equal(got, total)


def test_refuses_bad_input_and_damaged_files(tmp_path):
    spill = RowSpill(3, rows_per_bucket=2, directory=tmp_path)
    with pytest.raises(AssertionError, match="column is out of range"):
        spill.write(np.array([0, 1]), np.array([3]), np.array([1.0]))
    with pytest.raises(AssertionError, match="not a CSR"):
        spill.write(np.array([0, 2, 1]), np.array([0, 1]), np.array([1.0, 1.0]))
    spill.write(np.array([0, 1, 2]), np.array([0, 2]), np.array([1.0, 2.0]))
    with pytest.raises(IndexError):
        spill.bucket(1)
    bad = np.zeros(1, PAIR)
    bad["row"], bad["col"] = 0, 99  # a column beyond n_cols: refused, not indexed with
    with open(spill._file(0), "ab") as fh:
        bad.tofile(fh)
    with pytest.raises(GenotokError, match="damaged"):
        spill.bucket(0)
    with open(spill._file(0), "ab") as fh:
        fh.write(b"xyz")  # a torn record
    with pytest.raises(GenotokError, match="damaged"):
        spill.bucket(0)
    spill.close()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        RowSpill(3, rows_per_bucket=0)
