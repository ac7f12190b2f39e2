"""Named features (genes) → the cell kernels: the var map of a :class:`~genotok.GeneTokenizer`.

The region tokenizer maps each variable to the universe regions it overlaps
(:mod:`.varnames`); a gene vocabulary maps each variable to the token of its id in a ``var``
column. Both end in the same seam, a var map the cell kernels read, so everything after it
(row-wise CSR, backed files, value encodings, corpora) is shared.

How a matrix is seen through a gene vocabulary
----------------------------------------------
* the ids come from ``settings.id_column`` of the tokenizer, else the first of
  :data:`genotok.genes.ID_COLUMNS` in ``var``, else ``var_names``;
* the **known features** (ids in the vocabulary, special tokens excluded) become new columns
  ``0 .. k - 1`` in the order of their first column: a cell's ties then keep column order
  (Geneformer's stable rank), whatever the token ids;
* columns repeating an id are **summed first** (raw counts), as Geneformer collapses duplicate
  Ensembl ids, before any normalisation;
* entries of unknown features: ``unknown_features="count"`` puts them in one extra column
  ``k`` that has no token and no median (they count in the cell's total only);
  ``"drop"`` removes them before anything else;
* ``Normalize(total="n_counts")``: when ``obs`` has that column, each cell's total is taken
  from it (Geneformer's ``n_counts``): the extra column ``k`` then holds ``n_counts`` minus the
  cell's known counts, so the normalisation divides by ``n_counts`` exactly while the counts
  are integers (below 2**53). A cell whose ``n_counts`` is below its known counts is refused.

The kernels see pseudo token ``j`` for new column ``j`` (ranked by column: the genomic order
of the region kind is the column order here), and the real ids are looked up afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import _validate
from ..errors import AnnDataError
from ..genes import ID_COLUMNS
from ..ragged import Ragged
from .chunks import Chunk
from .sources import _h5_frame, _is_path
from ..kernels import values as VK
from ..kernels.cells import compact
from .values import _kernel_floats, _kernel_ints, _summed_duplicates
from .varnames import _adata_frame, _var_map_from_hits, _VarMap

_NO_TOTALS = np.empty(0, np.float64)


@dataclass
class FeatureMap:
    """Matrix columns → the new columns the kernels see (see the module documentation).

    >>> import anndata, numpy as np, pandas as pd
    >>> from genotok import GeneTokenizer
    >>> var = pd.DataFrame({"gene_ids": ["B", "Z", "B"]}, index=["x", "y", "z"])
    >>> a = anndata.AnnData(np.zeros((1, 3)), var=var)
    >>> fm = feature_map(a, GeneTokenizer({"A": 0, "B": 1}))
    >>> fm.col_new.tolist(), fm.names, fm.sink, fm.medians({"B": 2.0}).tolist()
    ([0, 1, 0], ['B'], 1, [2.0, nan])
    """

    col_new: np.ndarray    #: int64 (n_cols,): new column of each column; -1: dropped
    names: list            #: the feature id of each known new column (first appearance order)
    token_ids: np.ndarray  #: int64 (k,): the token id of each known new column
    sink: int | None       #: the new column of unknown features' counts (``count``), or None
    id_column: str         #: where the ids came from
    where: str

    @property
    def n_new(self) -> int:
        return len(self.names) + (self.sink is not None)

    def medians(self, medians: Mapping) -> np.ndarray:
        """Medians keyed by feature id → one per new column (NaN: none, the column's entries
        are dropped by the rank encoding)."""
        get = medians.get
        out = np.array([float(get(n, np.nan)) for n in self.names] +
                       ([np.nan] if self.sink is not None else []), dtype=np.float64)
        return out


def var_features(adata, id_column: str | None = None) -> tuple[list[str], str]:
    """The feature id of each variable and where it came from (a ``var`` column or
    ``"var_names"``).

    Examples
    --------
    >>> import anndata, numpy as np, pandas as pd
    >>> var = pd.DataFrame({"gene_ids": ["E1", "E2"]}, index=["A", "B"])
    >>> var_features(anndata.AnnData(np.zeros((1, 2)), var=var))
    (['E1', 'E2'], 'gene_ids')
    """
    fr = _h5_frame(os.fspath(adata), "var") if _is_path(adata) else _adata_frame(adata.var,
                                                                                 "var")
    if id_column is None:
        id_column = next((c for c in ID_COLUMNS if c in fr.columns), "var_names")
    if id_column == "var_names":
        raw = fr.index()
    elif id_column not in fr.columns:
        raise AnnDataError(f"{fr.where}: var has no column {id_column!r} of feature ids; its "
                           f"columns are {fr.columns} (or use id_column='var_names')")
    else:
        raw = fr.get(id_column)
    raw = np.asarray(raw)
    if raw.dtype.kind in "fcb" and raw.size:  # checked before str(): 1.0 is not the id "1"
        raise AnnDataError(f"{fr.where}: the feature ids ({id_column}) are {raw.dtype} values "
                           f"({raw[:3].tolist()}); feature ids are strings or integers: "
                           f"convert the column, or choose another with id_column=")
    names = [x.decode() if isinstance(x, bytes) else str(x) for x in raw.tolist()]
    return names, id_column


def feature_map(adata, tokenizer) -> FeatureMap:
    """The :class:`FeatureMap` of ``adata`` (AnnData or a path) for a gene vocabulary.

    >>> import anndata, numpy as np, pandas as pd
    >>> from genotok import GeneTokenizer
    >>> a = anndata.AnnData(np.zeros((1, 2)), var=pd.DataFrame(index=["B", "A"]))
    >>> feature_map(a, GeneTokenizer({"A": 5, "B": 7})).token_ids.tolist()
    [7, 5]
    """
    names, column = var_features(adata, tokenizer.settings.id_column)
    where = os.fspath(adata) if _is_path(adata) else "AnnData"
    ids = tokenizer.feature_ids(names)
    known = ids >= 0
    first: dict[str, int] = {}
    col_new = np.full(len(names), -1, dtype=np.int64)
    cols = np.flatnonzero(known)
    for c in cols.tolist():
        col_new[c] = first.setdefault(names[c], len(first))
    kept = list(first)
    token_ids = np.zeros(len(kept), np.int64)  # each known id's token: the id of its columns
    token_ids[col_new[cols]] = ids[cols]
    sink = None
    if tokenizer.settings.unknown_features == "count":
        sink = len(kept)
        col_new[~known] = sink
    return FeatureMap(col_new, kept, token_ids, sink, column, where)


def var_map(fm: FeatureMap) -> _VarMap:
    """The kernels' map: new column ``j < k`` → pseudo token ``j`` (rank ``j``); the sink
    column has no token.

    >>> import numpy as np
    >>> fm = FeatureMap(np.array([0, 1]), ["A"], np.array([5]), 1, "var_names", "X")
    >>> var_map(fm).var_ptr.tolist(), var_map(fm).var_ids.tolist()
    ([0, 1, 1], [0])
    """
    k = len(fm.names)
    ptr = np.concatenate([np.arange(k + 1, dtype=np.int64),
                          np.full(fm.n_new - k, k, dtype=np.int64)])
    pseudo = np.arange(k, dtype=np.int64)
    return _var_map_from_hits(Ragged(pseudo, ptr), pseudo, pseudo, k)


def remapper(fm: FeatureMap, n_cols: int, where: str, totals=None):
    """``chunk -> chunk`` in the new columns (duplicates summed; ``totals(lo, hi)``: each
    cell's total from ``obs``, or ``None``).

    >>> import numpy as np
    >>> from genotok.singlecell.chunks import Chunk
    >>> fm = FeatureMap(np.array([0, 1, 0]), ["A"], np.array([5]), 1, "var_names", "X")
    >>> ch = remapper(fm, 3, "X")(Chunk(0, np.array([0, 3]), np.array([0, 1, 2]),
    ...                                  np.array([1.0, 2.0, 3.0]), 3))
    >>> ch.indices.tolist(), ch.data.tolist()
    ([0, 1], [4.0, 2.0])
    """
    col_new = np.ascontiguousarray(fm.col_new, dtype=np.int64)
    identity = np.array_equal(col_new, np.arange(col_new.size))

    sink = -1 if fm.sink is None else int(fm.sink)
    new_proto = np.empty(0, np.int32 if fm.n_new < 2**31 else np.int64)

    def remap(ch: Chunk) -> Chunk:
        a, b = int(ch.indptr[0]), int(ch.indptr[-1])
        ptr = _validate.offsets(np.asarray(ch.indptr, np.int64) - a, b - a, where,
                                error=AnnDataError)
        cols = _validate.indices(np.asarray(ch.indices[a:b]), n_cols, where,
                                 what="column index", error=AnnDataError)
        data = np.asarray(ch.data[a:b])
        n_rows = ptr.size - 1
        if totals is None and identity:  # no entry moves: the rows keep their pointers
            out_ptr, new, data = _summed_duplicates(ptr, cols, data, fm.n_new)
            return Chunk(ch.row0, out_ptr, new, data, fm.n_new)
        tot = _NO_TOTALS
        if totals is not None:
            tot = np.ascontiguousarray(totals(ch.row0, ch.row0 + n_rows), dtype=np.float64)
            if tot.shape != (n_rows,) or sink < 0:
                raise AnnDataError(f"{where}: {tot.size} cell totals for {n_rows} cells")
        vals = _kernel_floats(data)
        proto = np.empty(0, np.float64 if totals is not None else vals.dtype)
        # one fused pass (genotok.kernels.values.remap_rows): rows are already grouped
        out_ptr, new, out, bad = VK.remap_rows(ptr, _kernel_ints(cols), vals, col_new, sink,
                                               tot, totals is not None, proto, new_proto)
        if bad >= 0:
            keep = col_new[cols[ptr[bad]:ptr[bad + 1]]]
            keep = (keep >= 0) & (keep != sink)
            known = float(np.sum(vals[ptr[bad]:ptr[bad + 1]][keep], dtype=np.float64))
            raise AnnDataError(f"{where}: cell {ch.row0 + bad}: obs"
                               f"[{getattr(totals, 'column', 'total')!r}] {float(tot[bad])} "
                               f"is below the sum of its counts in the vocabulary "
                               f"({known}); is it the cell's total count?")
        return Chunk(ch.row0, out_ptr, new, out, fm.n_new)
    return remap


def ranker(fm: FeatureMap, enc, n_cols: int, where: str, totals, *, keep_from: float,
           max_tokens: int, values: bool, dtype, blocks):
    """``chunk -> (ids, values or None, lengths)`` of a gene vocabulary in one fused kernel,
    or ``None`` for a chunk that needs the general path (:func:`remapper`, the encoding and
    the cell kernels): Geneformer's rank (``enc`` normalises to a total and divides by
    per-feature medians; value order, cut to ``max_tokens``:
    :func:`genotok.kernels.values.rank_rows`) or scGPT's bins (``enc.quantiles``; column
    order: :func:`genotok.kernels.values.bin_rows`). The kernel reads the matrix's rows and
    writes the token ids: the same ids and values as the general path for every chunk it
    accepts. ``blocks(indptr)``: the rows' load-balanced blocks; ``dtype``: the ids'.

    >>> import numpy as np
    >>> from genotok.singlecell.chunks import Chunk
    >>> from genotok.singlecell.values import ValueEncoding
    >>> fm = FeatureMap(np.array([0, 1, 2]), ["A", "B"], np.array([7, 5]), 2, "var_names", "X")
    >>> enc = ValueEncoding("total", 10.0, medians=np.array([1.0, 4.0, np.nan]))
    >>> run = ranker(fm, enc, 3, "X", None, keep_from=1e-300, max_tokens=0, values=False,
    ...              dtype=np.int64, blocks=lambda p: np.array([0, p.size - 1]))
    >>> ids, vals, lengths = run(Chunk(0, np.array([0, 3]), np.array([0, 1, 2]),
    ...                                np.array([1.0, 2.0, 1.0], np.float32), 3))
    >>> ids.tolist(), lengths.tolist()
    ([7, 5], [2])
    """
    col_new = np.ascontiguousarray(fm.col_new, dtype=np.int64)
    sink = -1 if fm.sink is None else int(fm.sink)
    col_ids = np.append(fm.token_ids, np.full(fm.n_new - len(fm.names), -1)).astype(np.int64)
    if col_new.size and int(col_new.max()) >= fm.n_new:
        raise AnnDataError(f"{where}: a column maps to feature {int(col_new.max())} of "
                           f"{fm.n_new}")
    if enc.quantiles is None:
        med = np.ascontiguousarray(enc.medians, dtype=np.float64)
        if med.size != fm.n_new:
            raise AnnDataError(f"{where}: {fm.n_new} features but {med.size} medians")
    else:
        n_bins, side, seed = enc.quantiles
        grid = np.linspace(0, 1, int(n_bins) - 1)

    def run(ch: Chunk):
        a, b = int(ch.indptr[0]), int(ch.indptr[-1])
        ptr = _validate.offsets(np.asarray(ch.indptr, np.int64) - a, b - a, where,
                                error=AnnDataError)
        cols = _kernel_ints(_validate.indices(np.asarray(ch.indices[a:b]), n_cols, where,
                                              what="column index", error=AnnDataError))
        data = _kernel_floats(np.asarray(ch.data[a:b]))
        n_rows = ptr.size - 1
        tot = _NO_TOTALS
        if totals is not None:
            if enc.quantiles is not None:
                return None  # bins of obs totals: the general path
            tot = np.ascontiguousarray(totals(ch.row0, ch.row0 + n_rows), dtype=np.float64)
            if tot.shape != (n_rows,) or sink < 0:
                return None  # the general path says what is wrong
        cap = np.diff(ptr)
        if max_tokens:
            np.minimum(cap, max_tokens, out=cap)
        cap_off = np.zeros(n_rows + 1, np.int64)
        np.cumsum(cap, out=cap_off[1:])
        ids = np.empty(cap_off[-1], dtype)
        vals = np.empty(cap_off[-1] if values else 0, np.float32)  # empty: no values
        if enc.quantiles is None:
            lengths, general = VK.rank_rows(
                ptr, cols, data, col_new, sink, tot, totals is not None,
                float(enc.target_sum), bool(enc.log1p), med, col_ids, float(keep_from),
                int(max_tokens), blocks(ptr), cap_off, ids, vals)
        else:
            lengths, general = VK.bin_rows(
                ptr, cols, data, col_new, float(enc.target_sum), bool(enc.log1p), grid,
                int(seed), int(ch.row0), side == "both", col_ids, float(keep_from), blocks(ptr),
                cap_off, ids, vals)
        if general:
            return None
        n = compact(ids, vals, cap_off, lengths)
        if n < ids.size:  # a mostly empty buffer is not kept alive
            cut = (lambda x: x[:n].copy()) if n < ids.size // 2 else (lambda x: x[:n])
            ids, vals = cut(ids), cut(vals) if values else vals
        return ids, vals if values else None, lengths
    # a chunk's memory per stored entry: its indices and values as read (at most 8 bytes
    # each), the ids and values written (the kernel's scratch is per row)
    run.per_nnz = 16 + np.dtype(dtype).itemsize + (4 if values else 0)
    return run


__all__ = ["FeatureMap", "feature_map", "ranker", "var_features", "var_map"]
