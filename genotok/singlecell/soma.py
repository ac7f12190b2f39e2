"""SOMA experiments (``tiledbsoma``, the format of the CELLxGENE Census) by URI:
:class:`SomaSource` and its read options :class:`SomaOptions`.

An experiment holds measurements (``RNA``, ``ATAC``), each with ``X`` layers (``raw``,
``normalized``) and a ``var`` data frame, beside one ``obs`` data frame. genotok reads one
measurement's layer (``pip install 'genotok[soma]'``), the cells an ``obs`` value filter keeps
(tiledbsoma's query syntax: ``"cell_type == 'B cell' and n_counts > 500"``), in
``soma_joinid`` order, out of core: the cells are read by row chunks sized to the memory
budget (from the mean entries per cell of the chunks read so far; the first has
:data:`FIRST_ROWS` cells), each chunk one coordinate read of the sparse
array. The ``obs`` columns are the cells' metadata and condition tokens (``obs_id``, as
``tiledbsoma.io.from_anndata`` writes the index, names the cells); ``var``'s ``var_id`` names
the features (a gene vocabulary's ids, or region strings; ``chrom``/``start``/``end`` columns
are regions too), so the presets and a region tokenizer work on an experiment as on the same
cells in an ``.h5ad``.

Nothing read is trusted: every ``soma_dim_0`` of a chunk must be one of the chunk's cells and
every ``soma_dim_1`` one of ``var``'s joinids before scipy sees them; an unknown measurement,
layer or ``obs`` column, a filter tiledbsoma refuses, a dense layer, and what tiledbsoma raises
on a damaged experiment are :class:`~genotok.errors.AnnDataError` naming the experiment.

Examples
--------
>>> SomaOptions(measurement="RNA", layer="raw", obs_filter="cell_type == 'B cell'").layer
'raw'
>>> from genotok.singlecell.sources import source_class
>>> SomaSource.kind, source_class("cells.h5ad").kind
('soma', 'h5ad')
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._optional import require
from ..errors import AnnDataError
from ..params import InstanceOf
from . import chunks as C
from . import sources as S
from .reading import AnnDataOptions

#: the obs / var columns that name the cells / features (``tiledbsoma.io.from_anndata``'s)
OBS_ID, VAR_ID, JOINID = "obs_id", "var_id", "soma_joinid"
#: cells of the first chunk, before the entries per cell are known
FIRST_ROWS = 2048


@dataclass(frozen=True)
class SomaOptions(AnnDataOptions):
    """How a SOMA experiment is read (``read=`` of every entry point).

    Parameters
    ----------
    measurement
        The measurement (``exp.ms[measurement]``), default ``"RNA"``.
    layer
        The ``X`` layer; default: the only one, else ``"raw"``.
    obs_filter
        A tiledbsoma value filter on ``obs`` (``"cell_type == 'B cell'"``); ``None``: every cell.

    The other fields are :class:`~genotok.AnnDataOptions`' (region columns, chunking, the ids'
    dtype); ``modality`` and ``raw`` do not apply.

    Examples
    --------
    >>> SomaOptions(measurement="ATAC").measurement
    'ATAC'
    """

    measurement: str = "RNA"
    obs_filter: str | None = None

    name: ClassVar[str] = "soma"
    CONSTRAINTS: ClassVar[dict] = {**AnnDataOptions.CONSTRAINTS,
                                   "measurement": [InstanceOf(str)],
                                   "obs_filter": [InstanceOf(str), None]}


def _errors(where: str):
    """What tiledbsoma, pyarrow and TileDB raise → an AnnDataError naming the experiment
    (tiledbsoma's errors have no common base with TileDB's)."""
    return C.read_errors(where, "the SOMA experiment")


def is_experiment(path: str) -> bool:
    """Whether the local directory ``path`` is a SOMA experiment (a TileDB group with ``obs``
    and ``ms``), told without tiledbsoma.

    >>> is_experiment(".")
    False
    """
    return all(os.path.exists(os.path.join(path, n)) for n in ("__tiledb_group.tdb", "obs", "ms"))


def _column(table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


class SomaSource(S.CellSource):
    """The cells of a SOMA experiment (a local path or a TileDB URI): one measurement's ``X``
    layer, the cells an ``obs`` value filter keeps, in ``soma_joinid`` order, read in row
    chunks (see :mod:`genotok.singlecell.soma`).

    Examples
    --------
    >>> SomaSource.options.__name__, SomaSource.has_obs
    ('SomaOptions', True)
    """

    kind = "soma"
    options = SomaOptions
    has_obs = True
    header = "soma"

    def __init__(self, uri, read: SomaOptions | None = None):
        soma = require("tiledbsoma", "reading a SOMA experiment")
        read = type(self).read_options(read)
        self.path = self.where = os.fspath(uri).rstrip("/")
        if read.modality is not None or read.raw:
            raise AnnDataError(f"{self.where}: modality and raw are AnnData's; a SOMA experiment "
                               "is read by SomaOptions(measurement=, layer=)")
        self.read = read
        with _errors(self.where):
            self.exp = soma.Experiment.open(self.path)
        try:
            self._open(read)
        except BaseException:
            self.close()
            raise

    def _open(self, read: SomaOptions) -> None:
        soma = require("tiledbsoma", "reading a SOMA experiment")
        where = self.where
        with _errors(where):
            have = list(self.exp.ms.keys())
            if read.measurement not in have:
                raise AnnDataError(f"{where}: no measurement {read.measurement!r}; the "
                                   f"measurements are {have}")
            ms = self.exp.ms[read.measurement]
            layers = list(ms.X.keys()) if "X" in ms else []
            layer = read.layer
            if layer is None:
                layer = layers[0] if len(layers) == 1 else "raw" if "raw" in layers else None
            if layer not in layers:
                raise AnnDataError(f"{where}: measurement {read.measurement!r} has no X layer "
                                   f"{read.layer or 'raw'!r}; its layers are {layers}" +
                                   ("" if read.layer else ": name one with SomaOptions(layer=)"))
            self.layer, self.X = layer, ms.X[layer]
            if not isinstance(self.X, soma.SparseNDArray):
                raise AnnDataError(f"{where}: X layer {layer!r} is a "
                                   f"{type(self.X).__name__}; genotok reads sparse layers")
            self.where = f"{self.path}:ms/{read.measurement}/X/{layer}"
            self.obs_names_all = [c for c in self.exp.obs.schema.names if c != JOINID]
            obs_ids = self.exp.obs.read(column_names=[JOINID], value_filter=read.obs_filter)
            self.ids = np.sort(_column(obs_ids.concat(), JOINID).astype(np.int64))
            var = ms.var.read().concat().to_pandas()
            self.n_obs_total = int(self.exp.obs.count)
        var = var.sort_values(JOINID, kind="stable")
        self.var_ids = var[JOINID].to_numpy(np.int64)
        if np.unique(self.var_ids).size != self.var_ids.size:
            raise AnnDataError(f"{self.path}: ms/{read.measurement}/var repeats a soma_joinid")
        index = var[VAR_ID].astype(str) if VAR_ID in var else var[JOINID].astype(str)
        self.var = var.drop(columns=[c for c in (JOINID, VAR_ID) if c in var])
        self.var.index = index.to_numpy(object)
        self.n_rows, self.n_cols = int(self.ids.size), int(len(self.var))
        self.nnz = None  # not known without a pass over the array (TileDB counts it slowly)
        self._obs = None

    @classmethod
    def open(cls, obj, read=None, **context) -> S.CellSource:
        return cls(obj, read)

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        return os.path.isdir(path) and is_experiment(path)

    def names(self) -> list[str]:
        return self.obs(())(0, self.n_rows)[0]

    # ----- the matrix
    def chunks(self, budget, per_nnz, chunk_rows):
        if self.n_rows == 0:
            yield C.Chunk(0, np.zeros(1, np.int64), np.zeros(0, np.int32),
                          np.zeros(0, np.float32), self.n_cols)
            return
        fixed = chunk_rows is not None
        # two chunks are held (the one read ahead): each gets half the budget
        entries = max(1, budget // per_nnz // (1 if fixed else 2))
        seen = [0, 0]  # cells, entries read so far

        def step() -> int:
            if fixed:
                return int(chunk_rows)
            if not seen[0]:
                return FIRST_ROWS
            return max(1, int(entries // max(seen[1] / seen[0], 1.0)))

        with ThreadPoolExecutor(1, thread_name_prefix="genotok-soma") as pool:
            lo, hi = 0, min(step(), self.n_rows)
            ahead = pool.submit(self._chunk, lo, hi)
            while lo < self.n_rows:  # the next chunk is read (by TileDB, without the GIL)
                chunk = ahead.result()  # while the kernels run on this one
                seen[0] += hi - lo
                seen[1] += int(chunk.indptr[-1])
                lo, hi = hi, min(hi + step(), self.n_rows)
                if lo < self.n_rows:
                    ahead = pool.submit(self._chunk, lo, hi)
                if fixed:
                    yield chunk
                    continue
                # sized by an estimate: cut to the budget (views of the chunk read)
                bounds = C._row_bounds(chunk.indptr, max(1, budget // per_nnz), None)
                for a, b in zip(bounds[:-1], bounds[1:]):
                    yield C.Chunk(chunk.row0 + int(a), chunk.indptr[a:b + 1], chunk.indices,
                                  chunk.data, self.n_cols)

    def _chunk(self, lo: int, hi: int) -> C.Chunk:
        import scipy.sparse as sp

        ids = self.ids[lo:hi]
        contiguous = int(ids[-1] - ids[0]) == ids.size - 1
        coords = slice(int(ids[0]), int(ids[-1])) if contiguous else ids  # SOMA: inclusive
        with _errors(self.where):
            tbl = self.X.read(coords=(coords,)).tables().concat()
            dim0, dim1 = _column(tbl, "soma_dim_0"), _column(tbl, "soma_dim_1")
            data = _column(tbl, "soma_data")
        row = self._positions(ids, dim0, "soma_dim_0", "a cell of the chunk", lo)
        col = self._positions(self.var_ids, dim1, "soma_dim_1", "a var soma_joinid", lo)
        if data.dtype.kind not in "biuf":
            raise AnnDataError(f"{self.where}: values must be numeric, got dtype {data.dtype}")
        n = hi - lo
        if row.size < 2 or bool(np.all(row[1:] >= row[:-1])):  # row-major: CSR as it comes
            indptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
            indices, values = col, data
        else:  # checked above: scipy may index with them
            m = sp.csr_matrix((data, (row, col)), shape=(n, self.n_cols))
            indptr, indices, values = np.asarray(m.indptr, np.int64), m.indices, m.data
        indices, values = C._clean_dtypes(indices, values, self.where)
        return C.Chunk(lo, indptr, indices, values, self.n_cols)

    def _positions(self, keys: np.ndarray, found: np.ndarray, name: str, what: str,
                   lo: int) -> np.ndarray:
        """Each of ``found`` as its position in the sorted ``keys``; one not there is an
        AnnDataError (a damaged array, or an index outside the experiment)."""
        found = np.asarray(found, dtype=np.int64)
        if keys.size and keys[-1] - keys[0] == keys.size - 1:  # a run of joinids: an offset
            pos = found - keys[0] if keys[0] else found
            ok = (pos >= 0) & (pos < keys.size)
        else:
            pos = np.minimum(np.searchsorted(keys, found), max(keys.size - 1, 0))
            ok = keys[pos] == found if keys.size else np.zeros(found.size, bool)
        if not ok.all():
            bad = int(found[np.flatnonzero(~ok)[0]])
            raise AnnDataError(f"{self.where}: {name} {bad} is not {what} (chunk from cell "
                               f"{lo}); the experiment is damaged")
        return pos

    # ----- the rest of the protocol
    def features(self):
        return self.var

    def _obs_frame(self, columns: list):
        cols = [c for c in dict.fromkeys([OBS_ID, *columns]) if c in self.obs_names_all]
        with _errors(f"{self.path}:obs"):
            coords = () if self.ids.size == self.n_obs_total else (self.ids,)
            tbl = self.exp.obs.read(coords=coords, column_names=[JOINID, *cols]).concat()
            frame = tbl.to_pandas()
        frame = frame.sort_values(JOINID, kind="stable")
        if not np.array_equal(frame[JOINID].to_numpy(np.int64), self.ids):
            raise AnnDataError(f"{self.path}:obs: the rows read do not match the query's cells")
        return frame

    def obs(self, columns):
        columns = S.obs_columns_in(columns, self.obs_names_all, self.path)
        frame = self._obs_frame(columns)
        names = (frame[OBS_ID].astype(str).tolist() if OBS_ID in frame
                 else [str(i) for i in self.ids])
        return S.rows_of(names, {c: frame[c].to_numpy() for c in columns})

    def settings(self) -> dict:
        return {"measurement": self.read.measurement, "layer": self.layer,
                **({"obs_filter": self.read.obs_filter} if self.read.obs_filter else {})}

    def close(self) -> None:
        exp = self.__dict__.pop("exp", None)
        if exp is not None:
            exp.close()


S.register_source(SomaSource)

__all__ = ["SomaOptions", "SomaSource", "is_experiment"]
