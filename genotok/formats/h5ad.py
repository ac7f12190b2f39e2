"""An ``.h5ad`` written row chunk by row chunk: a cells × regions matrix too large to hold whole
(:func:`genotok.fragment_matrix` with ``out=``) goes to disk as its rows are summed.

:func:`write_h5ad_rows` writes ``obs``, ``var`` and the rest with anndata's own writer (an
AnnData without ``X``), then appends each CSR chunk to ``X`` (``csr_matrix`` encoding, anndata's
on-disk format) with h5py. The file is written under a temporary name beside ``out`` and renamed
into place once complete: a failure leaves no partial ``.h5ad``. Memory: one chunk.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .. import _io
from ..errors import GenotokError
from ..params import PATH, Flag, HasAttr, InstanceOf, Unchecked, validated


@validated({"out": PATH, "chunks": [Unchecked("CSR matrices, each checked as it is written")],
            "obs": [HasAttr("index")], "var": [HasAttr("index")],
            "dtype": [InstanceOf(type, np.dtype, str)], "overwrite": [Flag()],
            "late": [InstanceOf(dict), None]})
def write_h5ad_rows(out, chunks: Iterable, *, obs, var, dtype=np.float32,
                    overwrite: bool = False, late: dict | None = None) -> Path:
    """Write an ``.h5ad`` of ``obs`` × ``var`` whose ``X`` is the CSR ``chunks`` stacked.

    Parameters
    ----------
    out
        The ``.h5ad`` path (refused when it exists, unless ``overwrite``).
    chunks
        ``scipy.sparse`` CSR matrices of ``len(var)`` columns, in row order; their rows add up
        to ``len(obs)``.
    obs, var
        ``pandas.DataFrame`` of the rows and the columns (index = names).
    dtype
        Of the stored values (default ``float32``, as anndata reads counts).
    late
        Values known only once the chunks are written: ``{dataset: f()}``, each dataset (such
        as ``"obs/unknown_count"``, written from ``obs`` as a placeholder of its length and
        dtype) overwritten with ``f()`` before the file is renamed into place.

    Returns
    -------
    pathlib.Path
        ``out``.

    Examples
    --------
    >>> import os, tempfile, anndata, pandas as pd, scipy.sparse as sp
    >>> out = os.path.join(tempfile.mkdtemp(), "m.h5ad")
    >>> chunks = [sp.csr_matrix([[1, 0, 2]]), sp.csr_matrix([[0, 0, 0], [0, 3, 0]])]
    >>> _ = write_h5ad_rows(out, chunks, obs=pd.DataFrame(index=["a", "b", "c"]),
    ...                     var=pd.DataFrame(index=["x", "y", "z"]))
    >>> anndata.read_h5ad(out).X.toarray().tolist()
    [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0]]
    """
    import anndata
    import h5py

    out = _io.local_path(out, "an .h5ad file")
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    n_rows, n_cols = len(obs), len(var)
    try:
        fd, tmp = _io.make_temp(out, ".h5ad")
    except OSError as exc:  # no folder, no permission
        raise GenotokError(f"{out}: writing the .h5ad failed ({exc})") from exc
    os.close(fd)
    try:
        anndata.AnnData(obs=obs, var=var).write_h5ad(tmp)
        with h5py.File(tmp, "r+") as f:
            x = f.create_group("X")
            x.attrs["encoding-type"] = "csr_matrix"
            x.attrs["encoding-version"] = "0.1.0"
            x.attrs["shape"] = np.array([n_rows, n_cols], np.int64)
            idx_dtype = np.int32 if n_cols < 2 ** 31 else np.int64
            data = x.create_dataset("data", (0,), dtype=dtype, maxshape=(None,),
                                    chunks=(1 << 16,))
            indices = x.create_dataset("indices", (0,), dtype=idx_dtype, maxshape=(None,),
                                       chunks=(1 << 16,))
            indptr = np.zeros(n_rows + 1, np.int64)
            row = 0
            for chunk in chunks:
                if chunk.shape[1] != n_cols or row + chunk.shape[0] > n_rows:
                    raise AssertionError(f"write_h5ad_rows: a {chunk.shape} chunk at row {row} "
                                         f"of a {n_rows} x {n_cols} matrix")
                nnz = int(chunk.indptr[-1])
                a = int(indptr[row])
                data.resize((a + nnz,))
                indices.resize((a + nnz,))
                data[a:] = chunk.data[:nnz].astype(dtype, copy=False)
                indices[a:] = chunk.indices[:nnz].astype(idx_dtype, copy=False)
                indptr[row + 1:row + chunk.shape[0] + 1] = a + chunk.indptr[1:]
                row += chunk.shape[0]
            if row != n_rows:
                raise AssertionError(f"write_h5ad_rows: {row} rows written of {n_rows}")
            x.create_dataset("indptr", data=indptr)
            for key, make in (late or {}).items():
                f[key][...] = make()
        os.replace(tmp, out)
    except BaseException as exc:  # no partial file stays, whatever stopped the writing
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise GenotokError(f"{out}: writing the .h5ad failed ({exc})") from exc
        raise
    return out


__all__ = ["write_h5ad_rows"]
