"""write_h5ad_rows: anndata reads back what the chunks held; a failure leaves no file."""

from __future__ import annotations

import anndata
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from genotok.formats.h5ad import write_h5ad_rows


def frames(n, m):
    obs = pd.DataFrame({"n_fragments": np.arange(n)}, index=[f"c{i}" for i in range(n)])
    var = pd.DataFrame({"start": np.arange(m)}, index=[f"r{j}" for j in range(m)])
    return obs, var


@pytest.mark.parametrize("splits", [[5], [0, 2, 0, 3], [1, 1, 1, 1, 1]])
def test_round_trip(tmp_path, splits):
    rng = np.random.default_rng(1)
    X = sp.random(5, 7, density=0.4, format="csr", random_state=rng, dtype=np.float64)
    X.data = np.ceil(X.data * 5)
    bounds = np.cumsum([0, *splits])
    obs, var = frames(5, 7)
    out = write_h5ad_rows(tmp_path / "m.h5ad", (X[a:b] for a, b in zip(bounds[:-1], bounds[1:])),
                          obs=obs, var=var)
    a = anndata.read_h5ad(out)
    np.testing.assert_array_equal(a.X.toarray(), X.toarray())
    assert a.X.dtype == np.float32 and sp.issparse(a.X)
    pd.testing.assert_frame_equal(a.obs, obs)
    pd.testing.assert_frame_equal(a.var, var)
    backed = anndata.read_h5ad(out, backed="r")  # readable row by row, as atlases are
    np.testing.assert_array_equal(backed.X[3:5].toarray(), X[3:5].toarray())
    assert [p.name for p in tmp_path.iterdir()] == ["m.h5ad"]


def test_failures_leave_nothing(tmp_path):
    obs, var = frames(3, 2)
    out = tmp_path / "m.h5ad"
    with pytest.raises(AssertionError, match="2 rows written of 3"):
        write_h5ad_rows(out, [sp.csr_matrix(np.ones((2, 2)))], obs=obs, var=var)
    with pytest.raises(AssertionError, match="chunk"):
        write_h5ad_rows(out, [sp.csr_matrix(np.ones((2, 3)))], obs=obs, var=var)

    def broken():
        yield sp.csr_matrix(np.ones((1, 2)))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_h5ad_rows(out, broken(), obs=obs, var=var)
    assert list(tmp_path.iterdir()) == []
    write_h5ad_rows(out, [sp.csr_matrix(np.ones((3, 2)))], obs=obs, var=var)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_h5ad_rows(out, [], obs=obs, var=var)
    write_h5ad_rows(out, [sp.csr_matrix((3, 2))], obs=obs, var=var, overwrite=True)
    assert anndata.read_h5ad(out).X.nnz == 0
