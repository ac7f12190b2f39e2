"""Cells × regions count matrices as an output of the one driver: :func:`fragment_matrix`,
:class:`FragmentMatrix`, and :class:`CountMatrix`, the output that makes them.

A fragment file is a cell source (:class:`~genotok.singlecell.fragments.FragmentSource`: its
lines counted over the universe, see :mod:`.fragmatrix` for the counting modes); the one
driver (:func:`~genotok.singlecell.cells.tokenize_cells`) turns each cell's row into its
tokens with their counts as values (``CellSpec(values=True, unknown="region")``: every region
hit, with its count, and one ``<unk>`` valued with the fragments that hit nothing); and
:class:`CountMatrix` turns those token rows back into CSR rows over the universe's regions (a
repeated universe line gets the counts of its first occurrence), the ``<unk>`` values into
``unknown_count``. So source → tokenizer → spec → output is the only path, for tokens and
matrices alike.
"""

from __future__ import annotations

import contextlib
import os
from typing import NamedTuple

import numpy as np

from .. import sink
from ..errors import GenotokError
from ..params import MEMORY_MB, N_THREADS, PATH, Flag, InstanceOf, Unchecked, validated
from .cells import tokenize_cells
from .fragmatrix import _dup_map, per_universe
from .fragments import FragmentSource
from .reading import FragmentOptions, _checked

#: what a fragment file's count matrix takes
_COUNTED = {"path": PATH, "regions": [Unchecked("a Tokenizer, or what Tokenizer() reads")],
            "read": [InstanceOf(FragmentOptions), None], "use_count": [Flag()],
            "n_threads": N_THREADS}


class CountMatrix:
    """The driver's output as a cells × universe-regions count matrix.

    ``tokenize_cells(source, tokenizer, spec, out=CountMatrix(universe))`` returns ``(X,
    unknown)``: ``X`` a ``scipy.sparse.csr_matrix`` (float32, sorted column indices) whose row
    ``i`` holds cell ``i``'s token values at their regions' columns, ``unknown`` (int64) the
    value of each cell's ``<unk>`` (0 without one). ``stream=True``: a generator of such
    pairs, one per chunk of cells, as the driver makes them (nothing held whole).

    Examples
    --------
    >>> from genotok import CellSpec, Tokenizer
    >>> from genotok.ragged import Ragged
    >>> tok = Tokenizer(["chr1:0-10", "chr1:20-30"])
    >>> rows = Ragged.from_list([[1, 2], [0]])   # id 2 is <unk>
    >>> rows = Ragged(rows.data, rows.offsets, np.array([3, 1, 5], np.float32))
    >>> X, unknown = CountMatrix(tok.universe).emit([rows], {"capacity": None}, tok)
    >>> X.toarray().tolist(), unknown.tolist()
    ([[0.0, 3.0], [5.0, 0.0]], [1, 0])
    """

    def __init__(self, universe, stream: bool = False):
        self.universe, self.stream = universe, bool(stream)

    def emit(self, batches, meta: dict, tokenizer):
        """The driver's output call (:func:`~genotok.singlecell.cells._emit`)."""
        if self.stream:
            return (self.rows(b) for b in batches)
        return self.rows(sink.concat(batches, meta["capacity"]))

    def rows(self, batch) -> tuple:
        """One ``Ragged`` of token rows (values = counts) as ``(csr, unknown)``."""
        import scipy.sparse as sp

        u = self.universe
        n_cols, unk = u.n_regions, u.unk_token_id
        ids, off = batch.data, np.asarray(batch.offsets, np.int64)
        vals = batch.values if batch.values is not None else np.ones(ids.size, np.float32)
        n = off.size - 1
        unknown = np.zeros(n, np.int64)
        at = np.flatnonzero(ids == unk)
        if at.size:  # at most one <unk> a row (the column of fragments without a hit)
            row = np.searchsorted(off, at, side="right") - 1
            unknown[row] = vals[at]
            keep = np.ones(ids.size, bool)
            keep[at] = False
            counts = np.diff(off) - np.bincount(row, minlength=n)
            off = np.zeros(n + 1, np.int64)
            np.cumsum(counts, out=off[1:])
            ids, vals = ids[keep], vals[keep]
        if ids.size and int(ids.max()) >= n_cols:
            raise AssertionError(f"CountMatrix: token id {int(ids.max())} is no region of "
                                 f"the universe's {n_cols}")
        dups = per_universe(u, "dups", lambda u: _dup_map(u.sweep.first))
        if dups is not None:  # each id to every line of its region (the repeats too)
            ids, vals, off = _spread(ids, vals, off, dups)
        idx = ids.astype(np.int32 if n_cols < 2**31 else np.int64, copy=False)
        X = sp.csr_matrix((vals.astype(np.float32, copy=False), idx, off), shape=(n, n_cols))
        if not X.has_sorted_indices:  # genomic order is column order for a sorted universe
            X.sort_indices()
        return X, unknown


def _region_columns(X, u):
    """A source's count matrix (the universe's regions, then the column of fragments without
    a hit) as a matrix over the universe's lines: the last column dropped, a repeated line
    given its first occurrence's counts."""
    import scipy.sparse as sp

    X = X[:, :u.n_regions].tocsr()
    dups = per_universe(u, "dups", lambda u: _dup_map(u.sweep.first))
    if dups is None:
        return X
    ids, vals, off = _spread(X.indices, X.data, X.indptr.astype(np.int64), dups)
    X = sp.csr_matrix((vals, ids.astype(np.int32 if u.n_regions < 2**31 else np.int64), off),
                      shape=X.shape)
    X.sort_indices()
    return X


def _spread(ids, vals, off, dups):
    """Each entry ``(row, id)`` as the entries of the lines of ``id`` (``dups``: id → its
    lines; a repeat line's own id has none)."""
    offs = np.asarray(dups.offsets, np.int64)
    ids = np.asarray(ids, np.int64)
    per = offs[ids + 1] - offs[ids]
    total = int(per.sum())
    start = np.repeat(offs[ids], per)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
    lines = np.asarray(dups.data, np.int64)[start + within]
    row = np.repeat(np.arange(off.size - 1), np.diff(off))
    new_off = np.zeros(off.size, np.int64)
    np.cumsum(np.bincount(row, weights=per, minlength=off.size - 1).astype(np.int64),
              out=new_off[1:])
    return lines, np.repeat(vals, per), new_off


def _spec(use_count: bool):
    """What a matrix row is as tokens: every region hit with its count (each line one
    fragment, or its column-5 count), and one ``<unk>`` valued with the misses."""
    from .spec import CellSpec

    return CellSpec(values=True, unknown="region", use_count=bool(use_count))


@contextlib.contextmanager
def _counted(path, regions, read, use_count, memory_mb, out, n_threads):
    """The fragment file as an open cell source, counted over ``regions`` (as a Tokenizer)
    in the matrix' default mode (``"insertion"``)."""
    import dataclasses

    from ..tokenizer import Tokenizer

    tok = regions if isinstance(regions, Tokenizer) else Tokenizer(regions)
    if read.mode is None:
        read = dataclasses.replace(read, mode="insertion")
    with FragmentSource.open(path, read, tokenizer=tok, n_threads=n_threads,
                             spec=_spec(use_count), memory_mb=memory_mb, out=out) as src:
        yield src, tok


class FragmentMatrix(NamedTuple):
    """A fragment file counted into a cells × regions CSR matrix: :meth:`from_fragments`
    (:func:`fragment_matrix` gives the same counts as an AnnData).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> m = FragmentMatrix(["AAA-1"], sp.csr_matrix(np.ones((1, 2), np.float32)), np.array([3]))
    >>> m.barcodes, m.X.shape, m.n_fragments.tolist()
    (['AAA-1'], (1, 2), [3])
    """

    barcodes: list
    X: object  # scipy.sparse.csr_matrix (cells × universe regions), float32 counts
    n_fragments: np.ndarray  # int64 (cells,) fragment lines of each kept cell

    @classmethod
    @validated(_COUNTED, "FragmentMatrix.from_fragments")
    def from_fragments(cls, path, regions, *, read=None, use_count: bool = False,
                       n_threads: int | None = None) -> FragmentMatrix:
        """Count a fragment file into ``(barcodes, X, n_fragments)``: the parameters of
        :func:`fragment_matrix`, the counts as a ``scipy.sparse.csr_matrix``.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
        >>> _ = p.write_text("chr1\\t5\\t20\\tAAA-1\\t3\\nchr1\\t99\\t150\\tAAA-1\\t1\\n")
        >>> m = FragmentMatrix.from_fragments(p, ["chr1:0-10", "chr1:10-100"])
        >>> m.barcodes, m.X.toarray().tolist(), m.n_fragments.tolist()
        (['AAA-1'], [[1.0, 2.0]], [2])
        """
        read = _checked(read, FragmentOptions, "FragmentMatrix.from_fragments")
        with _counted(path, regions, read, use_count, None, None, n_threads) as (src, tok):
            # the source's counts as they are: the driver's token pass (CountMatrix) gives the
            # same matrix but costs a CSR this fast path does not pay (benchmarks/RESULTS.md,
            # "fragment_matrix on the driver": 0.16 s against 0.26 s on the liver tiles)
            return cls(src.names(), _region_columns(src.X, tok.universe), src.n_fragments)


def _var_frame(u):
    import pandas as pd

    rs = u.regions
    names = rs.to_strings()
    seen: set[str] = set()
    index = []
    for i, t in enumerate(names):  # a repeated universe line gets "#id"
        index.append(t if t not in seen else f"{t}#{i}")
        seen.add(t)
    chrom = np.asarray(rs.chrom_names, dtype=object)[rs.codes]
    return pd.DataFrame({"chrom": pd.Categorical(chrom), "start": rs.starts, "end": rs.ends,
                         "token_id": u.sweep.first.astype(np.int64)},
                        index=pd.Index(index, name="region"))


@validated({**_COUNTED, "out": [*PATH, None], "overwrite": [Flag()],
            "memory_mb": [*MEMORY_MB, None]})
def fragment_matrix(path, regions, *, read=None, use_count: bool = False, out=None,
                    overwrite: bool = False, memory_mb: float | None = None,
                    n_threads: int | None = None):
    """Count a fragment file into a cells × regions matrix (SnapATAC2's peak matrix).

    Parameters
    ----------
    path
        ``fragments.tsv`` or ``fragments.tsv.gz`` (``chrom start end barcode [count]``).
    regions
        A :class:`~genotok.Tokenizer` (its universe and overlap rule), or anything
        ``Tokenizer(...)`` accepts: a BED path, region strings …
    read
        :class:`~genotok.FragmentOptions`: the ``mode`` (default ``"insertion"``: Tn5 cut
        sites ``start`` and ``end - 1``; ``"paired-insertion"``: the same, at most once per
        fragment and region; ``"fragment"``: whole fragment overlap; see the module
        documentation), the ``shift`` added to the two cut sites (``(4, -5)`` for fragments
        that are not yet Tn5-adjusted; 10x files are), the barcode allow-list (cells come in
        its order; without it, every barcode in order of first appearance) and
        ``min_fragments`` (``0`` keeps allow-listed cells without fragments).
    use_count
        Weigh each fragment by its column-5 duplicate count (default: each line counts once,
        as :func:`~genotok.tokenize_fragments` counts by default).
    out
        An ``.h5ad`` path: the matrix is written there as it is read back from disk, a bucket
        of cells at a time (see ``memory_mb``), under a temporary name renamed into place when
        complete, and returned opened ``backed="r"``.
    memory_mb
        Bound on the counted (cell, region) pairs held in memory (16 bytes each): beyond it
        they spill to disk (``TMPDIR``) by buckets of cells. Default: no bound (the result's
        size), except with ``out=``: 1024 MiB. Memory then stays one block plus
        ``memory_mb`` plus one bucket of cells, whatever the size of the file.
    overwrite
        Replace an existing ``out`` (default: refuse it).

    Returns
    -------
    anndata.AnnData
        ``obs`` = barcodes with ``n_fragments`` and ``unknown_count`` (fragments none of whose
        cut sites or overlaps hit a region), ``var`` = the universe's regions with ``chrom``,
        ``start``, ``end`` and ``token_id`` (the tokenizer's id of the region: a repeated
        universe line has the id of its first occurrence). The same counts as a CSR matrix,
        without AnnData: :meth:`FragmentMatrix.from_fragments`.

    Raises
    ------
    BedParseError
        A malformed line (file and 1-based line number in the message).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
    >>> _ = p.write_text("# 10x header\\nchr1\\t5\\t20\\tAAA-1\\t3\\nchr1\\t99\\t150\\tAAA-1\\t1\\n")
    >>> m = fragment_matrix(p, ["chr1:0-10", "chr1:10-100"])
    >>> m.obs_names.tolist(), m.X.toarray().tolist(), m.obs["n_fragments"].tolist()
    (['AAA-1'], [[1.0, 2.0]], [2])
    >>> m.obs["unknown_count"].tolist(), m.var["token_id"].tolist()  # each hit a region
    ([0], [0, 1])
    >>> from genotok import FragmentOptions
    >>> fragment_matrix(p, ["chr1:0-10", "chr1:10-100"],
    ...                 read=FragmentOptions(mode="fragment")).X.toarray().tolist()
    [[1.0, 2.0]]
    """
    import anndata
    import pandas as pd

    read = _checked(read, FragmentOptions, "fragment_matrix")
    if out is not None and os.path.exists(out) and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    if out is not None and (os.path.isdir(out) or not os.path.isdir(
            os.path.dirname(os.path.abspath(out)))):  # known now, not after the whole count
        raise GenotokError(f"{out}: is a directory; give the .h5ad file's path" if
                           os.path.isdir(out) else f"{out}: its folder does not exist; create "
                           "it first")
    spec = _spec(use_count)
    with _counted(path, regions, read, use_count, memory_mb, out, n_threads) as (src, tok):
        u = tok.universe
        obs = pd.DataFrame({"n_fragments": src.n_fragments,
                            "unknown_count": np.zeros(src.n_rows, np.int64)},
                           index=pd.Index(src.names(), name="barcode"))
        # the universe's frame made once (its index's uniqueness, which AnnData checks, is
        # cached with it); each AnnData gets its own copy of the columns
        var = per_universe(u, "var_frame", _var_frame).copy()
        if out is not None:  # a chunk of cells at a time, as the driver streams them
            from ..formats.h5ad import write_h5ad_rows

            chunks = tokenize_cells(src, tok, spec, out=CountMatrix(u, stream=True),
                                    n_threads=n_threads)
            unknown: list = []

            def matrices():
                for X, unk in chunks:
                    unknown.append(unk)
                    yield X

            write_h5ad_rows(out, matrices(), obs=obs, var=var, overwrite=overwrite,
                            late={"obs/unknown_count": lambda: _joined(unknown)})
            return anndata.read_h5ad(out, backed="r")
        X, unknown = tokenize_cells(src, tok, spec, out=CountMatrix(u), n_threads=n_threads)
        obs["unknown_count"] = unknown
        # both indexes are unique by construction (a name table's barcodes; the regions'
        # names, a repeated line's made unique): AnnData's own check hashes every name again,
        # three times over 6M tile names (2.5 of 3.1 s of a 500-bp tile matrix)
        with anndata.settings.override(check_uniqueness=False):
            return anndata.AnnData(X, obs=obs, var=var)


def _joined(parts: list) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


__all__ = ["CountMatrix", "FragmentMatrix", "fragment_matrix"]
