"""Single-cell adapters: AnnData / ``.h5ad`` matrices and fragment files → one token list per cell.

How a cell becomes tokens
-------------------------
The variables (peaks) are mapped to tokens **once** with the tokenizer's overlap mode and
thresholds (a peak may hit zero, one or several universe regions). Then, per cell (row), a
parallel numba kernel gathers the tokens of the cell's non-zero peaks:

* **kept entries**: stored entries with ``value > 0`` and ``value >= min_count``;
* each kept entry contributes every token of its peak, valued with the entry's value;
* ``unique=True`` merges a token contributed by several peaks into one (values summed);
  ``unique=False`` keeps one token per (peak, token) pair;
* ``<unk>`` (``unknown`` policy, default the tokenizer's): ``"set"`` — a cell without any
  region token (also a cell without kept entries) gets one ``<unk>`` valued with the cell's
  total; ``"region"`` — one ``<unk>`` per kept entry whose peak hits nothing (valued with the
  entry, never merged, after the region tokens in storage order); ``"drop"`` — none;
* ``max_tokens``: ``truncate="top"`` keeps the largest values (ties: genomic order),
  ``"sample"`` a seeded uniform sample without replacement;
* ``order``: ``"genomic"`` — ascending universe position (ties, with ``unique=False``: column
  order); ``"value"`` — value descending, ties genomic; ``"shuffle"`` — a seeded permutation.
  ``<unk>`` comes after every region token in genomic order.

Var names are parsed by a numba pass over all names at once (same rules as
:func:`genotok.regions.parse_region_strings`, which is used as the fallback and for messages).

Random draws depend only on ``seed`` and the cell's row index, never on chunking or threads.

Memory (out of core)
--------------------
For a ``.h5ad`` path or a backed AnnData, ``X`` is read with h5py in row chunks of at most
``memory_mb`` (default 256 MiB) of working memory: per chunk the stored entries
(indices + data), the per-cell token slots (16 bytes per raw token) and the chunk's output.
Besides the chunks, only ``indptr`` (8 bytes per cell), the variable → token map, per-thread
scratch (about 8.2 bytes × universe regions with ``unique=True`` when the peaks are not sorted
like the universe; 8.2 bytes × peaks with ``unique=False``) and the result are held; with a
corpus ``output`` the result goes to disk chunk by chunk, so peak memory is
flat in the number of cells. A dense ``X`` is read in row blocks. A backed **CSC** matrix cannot
be read by rows: it is loaded and converted when it fits in ``memory_mb``, otherwise an
:class:`AnnDataError` says how to rewrite the file as CSR.

Untrusted input
---------------
Every integer read from a file or taken from a caller's matrix that will index memory is
checked in one vectorised pass (:mod:`genotok._validate`) before scipy or a kernel sees it:
``indptr`` (length, start at 0, never decreasing, ends at the number of stored entries) and
every index (in range), for CSR, CSC (before scipy's ``tocsr()``, which trusts them), COO, BSR
and dense, in memory, backed and by path; a file's shape attribute, datasets, dtypes and
lengths are checked before they are read, and the matrix must have one row per ``obs`` cell.
Values are checked by the kernels (finite, ``>= 0``). Anything wrong is an
:class:`AnnDataError` naming the file (or ``X``/the layer) and the key; what h5py raises on a
damaged file becomes one too. The cost is about 1-2% of a call (``benchmarks/bench_anndata.py``).
What is *not* caught: a damaged file whose arrays stay valid (an ``.h5ad`` has no checksums,
so changed counts give other tokens), and the HDF5 library's own parsing of a hostile file (a
C library; read untrusted files in a separate process). A backed view
(``read_h5ad(p, backed="r")[10:20]``) is read through the same checks, not through anndata's
slicing. Fragment files: a damaged ``.gz``, a control byte in a barcode or a barcode or
chromosome name that is not UTF-8 is a :class:`~genotok.errors.BedParseError` naming the file
(and line).

Fast path
---------
When the peaks are sorted like the universe (each peak's tokens, and the tokens of later
peaks, come later in genomic order: the usual case of a consensus peak set), with
``order="genomic"`` and no ``max_tokens``, a first pass counts (and validates) every cell's
tokens exactly and a second writes them in place: no scratch slots, no compaction, and no value
channel unless ``values=True``. An in-memory matrix tokenized to an in-memory result then runs
as a single chunk (there is no scratch to bound, and it spares concatenating the chunks).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from . import _cell_kernels as K
from . import _config, _inflate, _parse
from . import _validate as V
from .errors import AnnDataError, GenotokError, RegionParseError
from .ragged import Ragged
from .regions import RegionSet, parse_region_strings

CHROM_COLUMNS = ("chr", "chrom", "seqnames", "chromosome", "seqname")
START_COLUMNS = ("start", "chromstart")
END_COLUMNS = ("end", "chromend")
ORDERS = {"genomic": K.ORDER_GENOMIC, "value": K.ORDER_VALUE, "shuffle": K.ORDER_SHUFFLE}
TRUNCATE = {"top": K.TRUNC_TOP, "sample": K.TRUNC_SAMPLE}
UNKNOWN = {"drop": K.UNK_DROP, "set": K.UNK_SET, "region": K.UNK_REGION}
OUTPUTS = ("ragged", "list", "np", "pt")
_CSR_MESSAGES = {
    K.CSR_INDPTR: "indptr is not non-decreasing within the stored entries",
    K.CSR_INDEX: "a column index is outside [0, n_vars)",
    K.CSR_NEGATIVE: "a negative value (counts must be >= 0)",
    K.CSR_NOT_FINITE: "a NaN or infinite value",
}


# ---------------------------------------------------------------------------------- var → regions
@dataclass
class _Frame:
    """The little of a data frame we need: column names, a column getter, the index."""

    columns: list
    get: object      # name -> np.ndarray
    index: object    # () -> np.ndarray of names
    where: str


def _h5_column(group, name: str, sl=slice(None)) -> np.ndarray:
    """One column of an anndata-encoded data frame group (strings, numbers, categoricals)."""
    import h5py

    node = group[name]
    if isinstance(node, h5py.Group):
        enc = node.attrs.get("encoding-type", "")
        if enc == "categorical":
            cats = np.asarray(_h5_column(node, "categories"), dtype=object)
            codes = np.asarray(node["codes"][sl], dtype=np.int64)
            out = cats[np.maximum(codes, 0)] if cats.size else np.full(codes.size, None, object)
            out = np.asarray(out, dtype=object)
            out[codes < 0] = None
            return out
        if enc.startswith("nullable"):
            vals = np.asarray(node["values"][sl]).astype(object)
            vals[np.asarray(node["mask"][sl], dtype=bool)] = None
            return vals
        raise AnnDataError(f"{group.file.filename}: {group.name}/{name} has encoding "
                           f"{enc!r}, which genotok cannot read as a column")
    if h5py.check_string_dtype(node.dtype) is not None:
        return np.asarray(node.asstr()[sl], dtype=object)
    out = node[sl]
    if out.dtype.kind == "S":
        return np.array([x.decode() for x in out], dtype=object)
    return np.asarray(out)


def _h5_frame(path: str, key: str) -> _Frame:
    import h5py

    with _h5_errors(path), h5py.File(path, "r") as f:
        if key not in f or not isinstance(f[key], h5py.Group):
            raise AnnDataError(f"{path}: no {key!r} data frame group; this does not look like an "
                               "h5ad file written by anndata >= 0.7 (re-save it with a current "
                               "anndata: anndata.read_h5ad(path).write_h5ad(path))")
        g = f[key]
        index = g.attrs.get("_index", "_index")
        cols = [k for k in g.keys() if k != index]

    def get(name):
        with _h5_errors(path), h5py.File(path, "r") as f:
            return _h5_column(f[key], name)

    def idx():
        with _h5_errors(path), h5py.File(path, "r") as f:
            return _h5_column(f[key], index)

    return _Frame(cols, get, idx, path)


def obs_names(adata) -> list[str]:
    """The cell names of an AnnData or an ``.h5ad`` path, as strings.

    A path is read with h5py under the same checks as its matrix: a damaged file is an
    :class:`AnnDataError` naming it, never anndata's own errors, and no file stays open.

    Examples
    --------
    >>> import genotok
    >>> obs_names(genotok.examples_dir() / "pbmc.h5ad")[:2]
    ['GCATACGTGTACGCCC-1', 'AAGCTATCAACATTTC-1']
    """
    if _is_path(adata):
        return [str(x) for x in _h5_frame(os.fspath(adata), "obs").index()]
    return [str(x) for x in adata.obs_names]


def _adata_frame(df, where: str) -> _Frame:
    return _Frame(list(df.columns), lambda c: df[c].to_numpy(), lambda: np.asarray(df.index),
                  where)


def _find(columns: list, options: Sequence[str]):
    low = {str(c).lower(): c for c in columns}
    for o in options:
        if o in low:
            return low[o]
    return None


def _region_columns(columns: list) -> tuple | None:
    """The detected ``(chrom, start, end)`` columns of ``var``, or None unless all three exist."""
    cols = (_find(columns, CHROM_COLUMNS), _find(columns, START_COLUMNS),
            _find(columns, END_COLUMNS))
    return cols if all(c is not None for c in cols) else None


def _regions_from_frame(fr: _Frame, region_columns, var_names_sep, one_based) -> RegionSet:
    if region_columns is not None:
        if len(region_columns) != 3:
            raise ValueError("region_columns must be (chrom, start, end) column names")
        missing = [c for c in region_columns if c not in fr.columns]
        if missing:
            raise AnnDataError(f"{fr.where}: var has no column(s) {missing}; its columns are "
                               f"{fr.columns}")
        cols = tuple(region_columns)
    else:
        cols = _region_columns(fr.columns)
    if cols is not None:
        chroms = np.asarray(fr.get(cols[0]), dtype=object)
        if any(c is None or (isinstance(c, float) and c != c) for c in chroms):
            raise AnnDataError(f"{fr.where}: var column {cols[0]!r} has missing chromosome names")
        starts, ends = fr.get(cols[1]), fr.get(cols[2])
        try:
            rs = RegionSet.from_arrays(chroms.astype(str).astype(object), starts, ends)
            if one_based:
                rs = _one_based(rs)
        except RegionParseError as exc:
            raise AnnDataError(f"{fr.where}: var columns {list(cols)}: {exc}") from None
        return rs
    names = fr.index().tolist()
    try:
        fast = _parse_names_fast(names, var_names_sep, one_based)
    except TypeError:  # names that are not all str (bytes from h5py, numbers)
        names = [x.decode() if isinstance(x, bytes) else str(x) for x in names]
        fast = _parse_names_fast(names, var_names_sep, one_based)
    if fast is not None:
        return fast
    try:  # the reference parser (also the one with the detailed message)
        return parse_region_strings(names, sep=var_names_sep, one_based=one_based)
    except RegionParseError as exc:
        shown = ", ".join(repr(x) for x in names[:3])
        raise AnnDataError(
            f"{fr.where}: no region information for the variables. var has columns "
            f"{fr.columns} (expected a chromosome column {list(CHROM_COLUMNS)}, a start column "
            f"{list(START_COLUMNS)} and an end column {list(END_COLUMNS)}, or give "
            f"region_columns=(chrom, start, end)), and var_names (e.g. {shown}) are not regions "
            f"like chr1:100-200, chr1-100-200 or chr1_100_200 ({exc})") from None


def _parse_names_fast(names: list[str], sep: str | None, one_based: bool) -> RegionSet | None:
    """A numba pass over all names at once (same rules as ``parse_region_strings``, without
    thousands separators); ``None`` when any name needs the reference parser."""
    if not names:
        return None
    seps = {None: (-1, -1), ":": (58, 45), "-": (45, 45), "_": (95, 95)}
    if sep not in seps:
        return None
    raw = ("\n".join(names) + "\n").encode("utf-8", "surrogatepass")
    if raw.count(b"\n") != len(names):
        return None
    buf = np.frombuffer(raw, dtype=np.uint8)
    cs, ce, st, en, bad = K.parse_names(buf, *seps[sep])
    if bad >= 0:
        return None
    chroms, codes = _unique_spans(buf, cs, ce)
    if one_based:
        if (st < 1).any():
            return None
        st = st - 1
    if (en < st).any():
        return None
    return RegionSet(chroms, codes.astype(np.int32), st, en)


def _one_based(rs: RegionSet) -> RegionSet:
    if len(rs) and rs.starts.min() < 1:
        i = int(np.argmin(rs.starts))
        raise RegionParseError(f"region {i}: a 1-based start must be >= 1, got {rs.starts[i]}")
    return RegionSet(rs.chrom_names, rs.codes, rs.starts - 1, rs.ends, rs.source)


def _is_path(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def var_regions(adata, *, region_columns: Sequence[str] | None = None,
                var_names_sep: str | None = None, one_based: bool = False) -> RegionSet:
    """The genomic region of every variable (peak) of an AnnData object or ``.h5ad`` file.

    Taken from ``var`` columns (chromosome: ``chr``/``chrom``/``seqnames``/``chromosome``;
    ``start``/``chromStart``; ``end``/``chromEnd``; case-insensitive) when all three exist,
    otherwise parsed from ``var_names`` (``chr1:100-200``, ``chr1-100-200``, ``chr1_100_200``,
    detected per name and parsed from the right).

    Parameters
    ----------
    adata
        An ``anndata.AnnData`` (in memory or backed) or the path of a ``.h5ad`` file (read with
        h5py: only ``var`` is loaded).
    region_columns
        ``(chrom, start, end)`` column names, overriding the detection.
    var_names_sep
        Force one var-name convention: ``":"``, ``"-"`` or ``"_"`` (``None``: detect).
    one_based
        Coordinates are 1-based closed (names from R/Bioconductor): starts are decremented.

    Returns
    -------
    RegionSet
        One region per variable, in variable order.

    Raises
    ------
    AnnDataError
        No usable region information; the message lists the var columns and example names.

    Examples
    --------
    >>> import anndata, numpy as np, pandas as pd
    >>> a = anndata.AnnData(np.zeros((1, 2)), var=pd.DataFrame(index=["chr1:0-10", "chr2-5-9"]))
    >>> var_regions(a).to_strings()
    ['chr1:0-10', 'chr2:5-9']
    """
    if _is_path(adata):
        fr = _h5_frame(os.fspath(adata), "var")
    else:
        fr = _adata_frame(adata.var, "var")
    return _regions_from_frame(fr, region_columns, var_names_sep, one_based)


# ---------------------------------------------------------------------------------- the var map
@dataclass
class _VarMap:
    var_ptr: np.ndarray
    var_ids: np.ndarray
    vpos: np.ndarray
    rank: np.ndarray
    rank_ids: np.ndarray  # genomic rank -> token id
    monotone: bool        # every row in column order emits tokens in genomic order
    unk_id: int
    n_vars: int
    # the fast path's summary of a monotone map (see _cell_kernels.mono_fill)
    lut_n: np.ndarray | None = None
    lut_last: np.ndarray | None = None
    lut_word: np.ndarray | None = None


def _var_map_from_hits(hits: Ragged, rank: np.ndarray, rank_ids: np.ndarray,
                       unk_id: int) -> _VarMap:
    var_ptr = np.ascontiguousarray(hits.offsets, dtype=np.int64)
    var_ids = np.ascontiguousarray(hits.data, dtype=np.int64)
    rank = np.ascontiguousarray(rank, dtype=np.int64)
    n_vars = var_ptr.size - 1
    has = np.diff(var_ptr) > 0
    key = np.full(n_vars, np.iinfo(np.int64).max, dtype=np.int64)
    first = rank[var_ids[var_ptr[:-1][has]]]
    last = rank[var_ids[var_ptr[1:][has] - 1]]
    key[has] = first
    order = np.argsort(key, kind="stable")
    vpos = np.empty(n_vars, np.int64)
    vpos[order] = np.arange(n_vars, dtype=np.int64)
    # monotone: each variable's tokens by ascending rank, and for hit variables a < b (column
    # order) every token of a ranks <= every token of b
    ranks = rank[var_ids]
    later = np.ones(var_ids.size, dtype=bool)
    later[var_ptr[:-1][has]] = False  # not the first token of its variable
    monotone = bool(np.all(np.diff(ranks)[later[1:]] > 0)
                    and (first.size < 2 or np.all(first[1:] >= np.maximum.accumulate(last)[:-1])))
    vm = _VarMap(var_ptr, var_ids, vpos, rank, np.ascontiguousarray(rank_ids, dtype=np.int64),
                 monotone, int(unk_id), n_vars)
    if monotone:
        n_tok = np.diff(var_ptr)
        if var_ids.size:
            at = lambda p: var_ids[np.clip(p, 0, var_ids.size - 1)]  # noqa: E731
            first, second, vm.lut_last = at(var_ptr[:-1]), at(var_ptr[:-1] + 1), at(var_ptr[1:] - 1)
            shared = np.bincount(var_ids)[first] > 1  # unique may merge it
        else:
            first = second = vm.lut_last = np.zeros(n_vars, np.int64)
            shared = np.zeros(n_vars, dtype=bool)
        fast = (n_tok <= 2) & ~(shared & has)
        if var_ids.size and int(var_ids.max()) >= K.LUT_WORD_IDS:  # too large to pack: only
            fast &= ~has  # variables without tokens stay (mono_count counts them as misses)
        vm.lut_n = np.where(fast, n_tok, -1).astype(np.int8)
        vm.lut_word = K.pack_lut_word(vm.lut_n, np.where(fast, first, 0), np.where(fast, second, 0))
    return vm


def _entries_as_vars(ch: _Chunk, vm: _VarMap, tokenizer, dtype) -> tuple:
    """``order="var"``: every stored entry of the chunk becomes its own variable, whose tokens
    are pseudo tokens ranked by entry, then by the tokenizer's hit order. The kernels' genomic
    order is then storage order (geniml's ``X[row].nonzero()``). Returns the rewritten chunk,
    its map and ``pseudo id -> token id`` (the last entry is ``<unk>``)."""
    lo, hi = int(ch.indptr[0]), int(ch.indptr[-1])
    cols = np.asarray(ch.indices[lo:hi], dtype=np.int64)
    if cols.size and (cols.min() < 0 or cols.max() >= vm.n_vars):
        bad = int(np.flatnonzero((cols < 0) | (cols >= vm.n_vars))[0])
        raise AnnDataError(f"stored entry {lo + bad}: column index {int(cols[bad])} is outside "
                           f"[0, {vm.n_vars})")
    ids = vm.var_ids
    if getattr(tokenizer, "tokenizer_type", "bits") == "ailist" and ids.size:
        run = np.repeat(np.arange(vm.n_vars), np.diff(vm.var_ptr))
        ids = ids[np.lexsort((tokenizer.universe.ailist_key[ids], run))]
    n_tok = np.diff(vm.var_ptr)[cols]
    ptr = np.zeros(cols.size + 1, np.int64)
    np.cumsum(n_tok, out=ptr[1:])
    # position of each pseudo token in the var map: its column's first token + its rank
    within = np.arange(ptr[-1], dtype=np.int64) - np.repeat(ptr[:-1], n_tok)
    table = np.append(ids[np.repeat(vm.var_ptr[cols], n_tok) + within], vm.unk_id).astype(dtype)
    pseudo = np.arange(ptr[-1], dtype=np.int64)
    pm = _var_map_from_hits(Ragged(pseudo, ptr), pseudo, pseudo, int(ptr[-1]))
    entries = _Chunk(ch.row0, np.asarray(ch.indptr, np.int64) - lo,
                     np.arange(cols.size, dtype=np.int64), ch.data[lo:hi])
    return entries, pm, table


def _var_map(tokenizer, regions: RegionSet, n_threads) -> _VarMap:
    hits = tokenizer.region_hits(regions, n_threads=n_threads)
    u = tokenizer.universe
    return _var_map_from_hits(hits, u.sweep.rank, u.sweep.ids, u.unk_token_id)


#: var maps made from var_names, by ``id`` of the Index: (Index ref, universe ref, settings,
#: var_names_sep, one_based, map); an entry leaves with its Index (see _adata_var_map)
_VAR_MAPS: dict[int, tuple] = {}


def _adata_var_map(adata, tokenizer, region_columns, var_names_sep, one_based,
                   n_threads) -> _VarMap:
    """The var map of ``adata`` (AnnData or a path) for ``tokenizer``, reused while both hold.

    Building it (parse every var name, overlap the peaks with the universe) costs 25-40 ms for
    100k peaks here, more than tokenizing a thousand cells; inference over mini-batches
    (``adata[i:i + 64]``, whose views share their parent's ``var_names``) would pay it on every
    call. A pandas Index cannot be changed in place, so a map made from ``var_names`` holds
    while the same Index object meets the same universe and settings. Maps made from region
    columns (editable in place) or read from a file are built every time.
    """
    def build() -> _VarMap:
        regions = var_regions(adata, region_columns=region_columns,
                              var_names_sep=var_names_sep, one_based=one_based)
        return _var_map(tokenizer, regions, n_threads)

    var = getattr(adata, "var", None)
    if (var is None or region_columns is not None
            or _region_columns(list(var.columns)) is not None):
        return build()
    index, u = var.index, tokenizer.universe
    key = (tokenizer.settings, var_names_sep, one_based)
    hit = _VAR_MAPS.get(id(index))
    if hit is not None and hit[0]() is index and hit[1]() is u and hit[2:5] == key:
        return hit[5]
    vm = build()
    if hit is None or hit[0]() is not index:
        weakref.finalize(index, _VAR_MAPS.pop, id(index), None)
    _VAR_MAPS[id(index)] = (weakref.ref(index), weakref.ref(u), *key, vm)
    return vm


# ---------------------------------------------------------------------------------- matrix chunks
@dataclass
class _Chunk:
    row0: int
    indptr: np.ndarray   # absolute positions into indices/data (n_rows + 1)
    indices: np.ndarray
    data: np.ndarray


def _clean_dtypes(indices: np.ndarray, data: np.ndarray, where: str):
    if data.dtype.kind not in "biuf":
        raise AnnDataError(f"{where}: matrix values must be numeric, got dtype {data.dtype}")
    if data.dtype not in (np.float32, np.float64):  # two kernel specialisations, not eight
        data = data.astype(np.float64 if data.dtype.itemsize > 4 else np.float32)
    if indices.dtype.kind not in "iu":
        raise AnnDataError(f"{where}: column indices must be integers, got dtype {indices.dtype}")
    if indices.dtype not in (np.int32, np.int64):
        indices = indices.astype(np.int64)
    return np.ascontiguousarray(indices), np.ascontiguousarray(data)


def _row_bounds(indptr: np.ndarray, nnz_budget: int, chunk_rows: int | None) -> np.ndarray:
    """Chunk boundaries (row numbers): fixed ``chunk_rows`` or at most ``nnz_budget`` entries."""
    n = indptr.size - 1
    if n == 0:
        return np.array([0, 0], dtype=np.int64)
    if chunk_rows is not None:
        return np.unique(np.append(np.arange(0, n, int(chunk_rows), dtype=np.int64), n))
    bounds = [0]
    while bounds[-1] < n:
        lo = bounds[-1]
        hi = int(np.searchsorted(indptr, indptr[lo] + nnz_budget, side="right")) - 1
        bounds.append(min(n, max(hi, lo + 1)))
    return np.asarray(bounds, dtype=np.int64)


def _dense_rows(n_vars: int, itemsize: int, budget: int, chunk_rows: int | None) -> int:
    if chunk_rows is not None:
        return max(1, int(chunk_rows))
    return max(1, budget // max(1, 3 * n_vars * itemsize))


def _dense_chunk(block: np.ndarray, row0: int, where: str) -> _Chunk:
    if block.dtype.kind not in "biuf":
        raise AnnDataError(f"{where}: matrix values must be numeric, got dtype {block.dtype}")
    rows, cols = np.nonzero(block)
    indptr = np.zeros(block.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=block.shape[0]), out=indptr[1:])
    indices, data = _clean_dtypes(cols.astype(np.int32 if block.shape[1] < 2**31 else np.int64),
                                  block[rows, cols], where)
    return _Chunk(row0, indptr, indices, data)


class _Source:
    """Row chunks of a matrix, wherever it lives. ``n_rows``, ``n_cols``, ``chunks()``."""

    n_rows: int
    n_cols: int
    where: str

    def chunks(self, budget: int, per_nnz: int, chunk_rows: int | None) -> Iterator[_Chunk]:
        raise AnnDataError("internal: abstract source")  # pragma: no cover


def _check_columns(indices, indptr: np.ndarray, n_cols: int, where: str, row0: int = 0):
    """Every column index of a CSR chunk in ``[0, n_cols)`` (one vectorised pass), else an
    AnnDataError naming the row and the stored entry. ``indptr`` holds absolute positions
    (``indptr[0]`` is the position of ``indices[0]``)."""
    try:
        return V.indices(indices, n_cols, where, what="column index", error=AnnDataError)
    except AnnDataError:
        a = np.asarray(indices)
        if a.dtype.kind not in "iu" or a.ndim != 1:
            raise
        bad = int(np.flatnonzero((a < 0) | (a >= n_cols))[0])
        pos = int(indptr[0]) + bad
        r = row0 + int(np.searchsorted(indptr, pos, side="right")) - 1
        raise AnnDataError(f"{where}: {_CSR_MESSAGES[K.CSR_INDEX]} at row {r}, stored entry "
                           f"{pos} (column {int(a[bad])}); n_vars = {n_cols}") from None


def _checked_csr(X, where: str):
    """A scipy sparse matrix or array of any format as CSR, after checking every integer that
    scipy's conversion or our kernels will use to index memory (:mod:`genotok._validate`).

    scipy's ``tocsr()`` trusts ``indptr``/``indices`` (CSC, BSR) and ``row``/``col`` (COO):
    a row index past the end writes outside its buffers. So those are checked first (one
    vectorised pass); the CSR that scipy makes of checked arrays is valid, and the one it makes
    of other formats (LIL, DIA, DOK: structure checked first) is checked again.
    """
    import scipy.sparse as sp

    err = AnnDataError
    fmt = X.format
    n_rows, n_cols = V.shape(X.shape, where, error=err)
    dtype = np.dtype(X.dtype)  # (LIL keeps lists in an object array: its data is not it)
    if dtype.kind not in "biuf":  # before scipy converts them
        raise err(f"{where}: matrix values must be numeric, got dtype {dtype}")
    if fmt in ("csr", "csc", "bsr"):
        br, bc = (1, 1) if fmt != "bsr" else V.shape(X.blocksize, where, what="blocksize",
                                                      error=err)
        if br < 1 or bc < 1 or n_rows % br or n_cols % bc:
            raise err(f"{where}: BSR blocksize {(br, bc)} does not divide the shape "
                      f"{(n_rows, n_cols)}")
        major, minor = (n_rows // br, n_cols // bc) if fmt != "csc" else (n_cols, n_rows)
        if fmt == "csr":
            indptr = V.offsets(X.indptr, np.size(X.indices), where, n_rows=n_rows,
                               what="indptr (CSR, per row)", error=err)
            indices = _check_columns(X.indices, indptr, n_cols, where)
        else:
            indptr, indices = V.compressed(X.indptr, X.indices, major, minor, where,
                                           fmt=fmt if fmt != "bsr" else "csr", error=err)
        expected = (indices.size,) + ((br, bc) if fmt == "bsr" else ())
        if np.shape(X.data) != expected:
            raise err(f"{where}: data has shape {np.shape(X.data)}, expected {expected} (one "
                      f"value per stored index)")
        if fmt == "csr":
            return indptr, indices, X.data
    elif fmt == "coo":
        row, col = V.indices(X.row, n_rows, where, what="row index", error=err), X.col
        V.indices(col, n_cols, where, what="column index", error=err)
        V.same_length(col, row.size, where, what="column indices", error=err)
        V.same_length(X.data, row.size, where, what="data", error=err)
    elif fmt == "lil":
        V.same_length(X.rows, n_rows, where, what="lil rows", why="one per row", error=err)
        V.same_length(X.data, n_rows, where, what="lil data", why="one per row", error=err)
    elif fmt == "dia" and (np.ndim(X.data) != 2 or np.shape(X.data)[0] != np.size(X.offsets)):
        raise err(f"{where}: DIA data of shape {np.shape(X.data)} does not match its "
                  f"{np.size(X.offsets)} offsets")
    X = sp.csr_matrix(X.tocsr())
    if fmt in ("csc", "bsr", "coo"):  # scipy's conversion of checked arrays: a valid CSR
        return np.asarray(X.indptr, dtype=np.int64), X.indices, X.data
    indptr = V.offsets(X.indptr, np.size(X.indices), where, n_rows=n_rows, error=err)
    indices = _check_columns(X.indices, indptr, n_cols, where)
    V.same_length(X.data, indices.size, where, what="data", error=err)
    return indptr, indices, X.data


class _MemorySource(_Source):
    def __init__(self, X, where: str, n_obs: int | None = None):
        import scipy.sparse as sp

        self.where = where
        if sp.issparse(X):
            self.n_rows, self.n_cols = V.shape(X.shape, where, error=AnnDataError)
            if n_obs is not None and self.n_rows != n_obs:  # before a conversion sized by it
                raise AnnDataError(f"{where}: {self.n_rows} matrix rows but {n_obs} cells in obs")
            self.kind = "csr"
            self.indptr, indices, data = _checked_csr(X, where)
            self.indices, self.data = _clean_dtypes(indices, data, where)
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise AnnDataError(f"{where}: expected a 2-D matrix, got shape {X.shape}")
            if X.dtype.kind not in "biuf":
                raise AnnDataError(f"{where}: matrix values must be numeric, got dtype "
                                   f"{X.dtype}")
            self.kind = "dense"
            self.X = X
            self.n_rows, self.n_cols = int(X.shape[0]), int(X.shape[1])

    def chunks(self, budget, per_nnz, chunk_rows, rows=None):
        lo0, hi0 = (0, self.n_rows) if rows is None else rows
        if self.kind == "csr":
            bounds = lo0 + _row_bounds(self.indptr[lo0:hi0 + 1], max(1, budget // per_nnz),
                                       chunk_rows)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                yield _Chunk(int(lo), self.indptr[lo:hi + 1], self.indices, self.data)
        else:
            step = _dense_rows(self.n_cols, self.X.dtype.itemsize, budget, chunk_rows)
            for lo in range(lo0, hi0, step):
                yield _dense_chunk(self.X[lo:min(lo + step, hi0)], lo, self.where)


@contextlib.contextmanager
def _h5_errors(where: str):
    """Turn what h5py and numpy raise on a damaged or crafted file into an AnnDataError that
    names it (``pretokenize --on-error skip`` catches GenotokError, not OSError/KeyError)."""
    try:
        yield
    except GenotokError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError, IndexError) as exc:
        raise AnnDataError(f"{where}: cannot read the file as h5ad ({type(exc).__name__}: "
                           f"{exc}); is it a complete .h5ad written by anndata?") from None


def _h5_dataset(group, name: str, where: str, kinds: str, what: str):
    """``group[name]``, required to be a one-dimensional dataset of a dtype kind in ``kinds``."""
    import h5py

    node = group.get(name)
    if not isinstance(node, h5py.Dataset):
        raise AnnDataError(f"{where}: the sparse matrix has no {name!r} dataset "
                           f"({'missing' if node is None else 'a group'}); the file is damaged "
                           f"or not written by anndata")
    if node.ndim != 1:
        raise AnnDataError(f"{where}: {name} must be one-dimensional, got shape {node.shape}")
    if node.dtype.kind not in kinds:
        raise AnnDataError(f"{where}: {name} must hold {what}, got dtype {node.dtype}")
    return node


def _check_row_lengths(indptr: np.ndarray, n_cols: int, where: str) -> None:
    """No row of a file's CSR matrix stores more entries than there are columns.

    A chunk holds whole rows, so one row's entries are read at once whatever ``memory_mb``
    says; a crafted file can declare a row of 10**11 entries in an unallocated (tiny) HDF5
    dataset. anndata writes canonical CSR (no duplicate entries), where this cannot happen.
    """
    if indptr.size > 1 and n_cols >= 0:
        lengths = np.diff(indptr)
        r = int(np.argmax(lengths))
        if lengths[r] > max(n_cols, 1):
            raise AnnDataError(f"{where}: row {r} stores {int(lengths[r]):,} entries but there "
                               f"are only {n_cols:,} columns; the file is damaged or crafted "
                               "(re-write it with anndata)")


class _H5Source(_Source):
    """``X`` (or a layer) of a ``.h5ad`` file, read by row chunks with h5py.

    Nothing read is trusted: the shape attribute, the datasets' presence, dtypes and lengths
    are checked on open; ``indptr`` (whole, 8 bytes per row) and every chunk's indices are
    checked (:mod:`genotok._validate`) before a kernel or scipy sees them.
    """

    def __init__(self, path: str, key: str):
        import h5py

        self.path, self.key, self.where = path, key, f"{path}:{key}"
        with _h5_errors(path), h5py.File(path, "r") as f:
            if key not in f:
                have = list(f["layers"].keys()) if isinstance(f.get("layers"), h5py.Group) else []
                raise AnnDataError(f"{path}: no matrix {key!r} (layers: {have})")
            node = f[key]
            if isinstance(node, h5py.Group):
                enc = node.attrs.get("encoding-type", node.attrs.get("h5sparse_format", ""))
                enc = enc.decode(errors="replace") if isinstance(enc, bytes) else str(enc)
                if enc not in ("csr_matrix", "csc_matrix", "csr", "csc"):
                    raise AnnDataError(f"{self.where}: unknown matrix encoding {enc!r}")
                self.kind = "csr" if enc.startswith("csr") else "csc"
                shape = node.attrs.get("shape", node.attrs.get("h5sparse_shape"))
                if shape is None:
                    raise AnnDataError(f"{self.where}: the sparse matrix has no shape attribute")
                self.n_rows, self.n_cols = V.shape(shape, self.where, what="the shape attribute",
                                                   error=AnnDataError)
                ind = _h5_dataset(node, "indices", self.where, "iu", "integers")
                dat = _h5_dataset(node, "data", self.where, "biuf", "numbers")
                ptr = _h5_dataset(node, "indptr", self.where, "iu", "integers")
                self.nnz = int(ind.shape[0])
                V.same_length(dat, self.nnz, self.where, what="data", error=AnnDataError)
                n_major = self.n_rows if self.kind == "csr" else self.n_cols
                if ptr.shape[0] != n_major + 1:  # before reading it: a huge shape is a lie
                    raise AnnDataError(f"{self.where}: indptr has {ptr.shape[0]} entries, "
                                       f"expected {n_major + 1} for a "
                                       f"{self.kind.upper()} matrix of shape "
                                       f"{(self.n_rows, self.n_cols)}")
                self.itemsize = ind.dtype.itemsize + dat.dtype.itemsize
            else:
                self.kind = "dense"
                if node.ndim != 2:
                    raise AnnDataError(f"{self.where}: expected a 2-D matrix, got {node.shape}")
                if node.dtype.kind not in "biuf":
                    raise AnnDataError(f"{self.where}: matrix values must be numeric, got "
                                       f"dtype {node.dtype}")
                self.n_rows, self.n_cols = map(int, node.shape)
                self.itemsize = node.dtype.itemsize

    def chunks(self, budget, per_nnz, chunk_rows, rows=None):
        """Row chunks (only of rows ``lo:hi`` when ``rows=(lo, hi)``)."""
        import h5py

        err, where = AnnDataError, self.where
        lo0, hi0 = (0, self.n_rows) if rows is None else rows
        with _h5_errors(self.path), h5py.File(self.path, "r") as f:
            node = f[self.key]
            if self.kind == "csr":
                indptr = V.offsets(node["indptr"][:], self.nnz, where, n_rows=self.n_rows,
                                   what="indptr (CSR, per row)", error=err)
                _check_row_lengths(indptr, self.n_cols, where)
                bounds = lo0 + _row_bounds(indptr[lo0:hi0 + 1], max(1, budget // per_nnz),
                                           chunk_rows)
                ind, dat = _inflate.Ranged(node["indices"]), _inflate.Ranged(node["data"])
                for lo, hi in zip(bounds[:-1], bounds[1:]):
                    a, b = int(indptr[lo]), int(indptr[hi])
                    indices = _check_columns(ind[a:b], indptr[lo:hi + 1], self.n_cols, where,
                                             int(lo))
                    indices, data = _clean_dtypes(indices, dat[a:b], where)
                    yield _Chunk(int(lo), indptr[lo:hi + 1] - a, indices, data)
            elif self.kind == "dense":
                step = _dense_rows(self.n_cols, self.itemsize, budget, chunk_rows)
                for lo in range(lo0, hi0, step):
                    yield _dense_chunk(node[lo:min(lo + step, hi0)], lo, where)
            else:
                if self.nnz * (self.itemsize + 16) > budget:
                    raise AnnDataError(
                        f"{where}: X is stored column-major (CSC, {self.nnz:,} entries), "
                        f"which cannot be read by cells without loading it, and it needs more "
                        f"than memory_mb allows. Load it (anndata.read_h5ad(path)) and pass the "
                        f"AnnData, raise memory_mb, or rewrite the file as CSR once: "
                        f"a = anndata.read_h5ad(path); a.X = a.X.tocsr(); a.write_h5ad(new_path)")
                import scipy.sparse as sp

                # checked by _MemorySource (via _checked_csr) before scipy converts it
                m = sp.csc_matrix((self.n_rows, self.n_cols), dtype=node["data"].dtype)
                m.data, m.indices = node["data"][:], node["indices"][:]
                m.indptr = node["indptr"][:]
                yield from _MemorySource(m, where).chunks(budget, per_nnz, chunk_rows, rows)


class _ViewSource(_Source):
    """The rows and columns of a backed view (``adata[10:20]`` of ``read_h5ad(p, backed="r")``).

    Only the file's rows from the view's first to its last are read, by the file source (so
    checked like any read, within ``memory_mb`` for CSC); scipy then selects the view's rows
    and columns from those checked arrays. anndata's own backed slicing is not used: it hands
    the file's arrays to scipy unchecked.
    """

    def __init__(self, src: _H5Source, view):
        oidx, vidx = getattr(view, "_oidx", None), getattr(view, "_vidx", None)
        if oidx is None or vidx is None:  # pragma: no cover - a future anndata without them
            raise AnnDataError(f"{src.where}: cannot tell which rows this backed view selects; "
                               "pass adata.to_memory() or the parent AnnData")
        self.src, self.where = src, src.where
        self.rows = np.arange(src.n_rows)[oidx].reshape(-1)
        self.cols = np.arange(src.n_cols)[vidx].reshape(-1)
        self.n_rows, self.n_cols = int(self.rows.size), int(self.cols.size)

    def chunks(self, budget, per_nnz, chunk_rows):
        import scipy.sparse as sp

        sel = self.rows
        lo, hi = (int(sel.min()), int(sel.max()) + 1) if sel.size else (0, 0)
        parts = []
        for ch in self.src.chunks(budget, per_nnz, None, rows=(lo, hi)):
            a, b = int(ch.indptr[0]), int(ch.indptr[-1])
            parts.append(sp.csr_matrix((ch.data[a:b], ch.indices[a:b], ch.indptr - a),
                                       shape=(ch.indptr.size - 1, self.src.n_cols)))
        X = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, self.src.n_cols))
        yield from _MemorySource(X[sel - lo][:, self.cols], self.where).chunks(
            budget, per_nnz, chunk_rows)


def _h5_n_obs(path: str, key: str = "obs") -> int:
    """The number of cells (``key="var"``: variables) of a ``.h5ad`` file: the length of its
    obs (var) index, not read."""
    import h5py

    with _h5_errors(path), h5py.File(path, "r") as f:
        g = f.get(key)
        index = g.attrs.get("_index", "_index") if isinstance(g, h5py.Group) else None
        index = index.decode(errors="replace") if isinstance(index, bytes) else index
        node = g.get(str(index)) if index is not None else None
        if not isinstance(node, h5py.Dataset) or node.ndim != 1:
            raise AnnDataError(f"{path}: no {key} index ({key}/{index}); the file is damaged "
                               "or not written by anndata")
        return int(node.shape[0])


def _check_rows(source: _Source, adata, path: str | None) -> None:
    """The matrix has one row per cell of ``obs`` (a file's shape attribute may lie)."""
    n_obs = _h5_n_obs(path) if path is not None and not hasattr(adata, "obs") else adata.n_obs
    if int(n_obs) != source.n_rows:
        raise AnnDataError(f"{source.where}: {source.n_rows} matrix rows but {n_obs} cells in "
                           "obs")


def _source(adata, layer: str | None) -> tuple[_Source, str | None]:
    """The matrix source and the file path (``None`` for in-memory matrices)."""
    if _is_path(adata):
        path = os.fspath(adata)
        if not os.path.isfile(path):
            raise AnnDataError(f"{path}: no such file")
        return _H5Source(path, "X" if layer is None else f"layers/{layer}"), path
    if not hasattr(adata, "obs_names"):
        raise AnnDataError(f"expected an AnnData object or a .h5ad path, got "
                           f"{type(adata).__name__}")
    if getattr(adata, "isbacked", False):
        path = os.fspath(adata.filename)
        if layer is None or layer not in adata.layers:
            src = _H5Source(path, "X" if layer is None else f"layers/{layer}")
            if getattr(adata, "is_view", False):  # the file holds more than the view shows
                n_obs, n_vars = _h5_n_obs(path), _h5_n_obs(path, "var")
                if (src.n_rows, src.n_cols) != (n_obs, n_vars):  # before sizing anything by it
                    raise AnnDataError(f"{src.where}: the matrix has shape "
                                       f"{(src.n_rows, src.n_cols)} but obs and var have "
                                       f"{n_obs} and {n_vars} entries")
                return _ViewSource(src, adata), path
            return src, path
    if layer is not None:
        if layer not in adata.layers:
            raise AnnDataError(f"no layer {layer!r}; the layers are {list(adata.layers.keys())}")
        X = adata.layers[layer]
    else:
        X = adata.X
    if X is None:
        raise AnnDataError("the AnnData has no X matrix; name a layer with layer=")
    if hasattr(X, "to_memory"):  # a backed sparse dataset
        X = X.to_memory()
    return _MemorySource(X, "X" if layer is None else f"layers[{layer!r}]",
                         n_obs=int(adata.n_obs)), None


# ---------------------------------------------------------------------------------- the kernel call
@dataclass
class _Options:
    keep_from: float  # keep entries with value >= keep_from (K.keep_threshold)
    unk_mode: int
    unique: bool
    order: int
    max_tokens: int
    truncate: int
    seed: int
    path: int = K.PATH_AUTO
    values: bool = True  # False: the caller drops the value channel (the fast path skips it)
    dtype: type = np.int64  # of the token ids


def _blocks(indptr: np.ndarray, n_blocks: int) -> np.ndarray:
    """Row boundaries splitting the entries of a chunk into ``n_blocks`` load-balanced blocks."""
    n = indptr.size - 1
    if n == 0:
        return np.zeros(1, np.int64)
    nb = max(1, min(n, n_blocks))
    targets = np.linspace(indptr[0], indptr[-1], nb + 1)
    b = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    b[0], b[-1] = 0, n
    return np.maximum.accumulate(np.clip(b, 0, n))


def _run_chunk(ch: _Chunk, vm: _VarMap, opt: _Options, where: str):
    """Validate one chunk, then count, fill and compact. Returns (ids, vals or None, lengths)."""
    indptr = np.ascontiguousarray(ch.indptr, dtype=np.int64)
    n_rows = indptr.size - 1
    blocks = _blocks(indptr, 4 * numba.get_num_threads())
    if n_rows and (indptr[0] < 0 or indptr[-1] > ch.indices.size
                   or ch.indices.size != ch.data.size):
        raise AnnDataError(f"{where}: indptr/indices/data are inconsistent "
                           f"(indptr ends at {indptr[-1]}, {ch.indices.size} indices, "
                           f"{ch.data.size} values)")
    validated = False  # by a count that read the values and found only unsorted columns
    if _fast_path(vm, opt):
        # "drop zeros" is the only filter: count without reading the values (half the traffic)
        # and let the fill check them; otherwise, or when the fill finds a zero or a bad value,
        # count with them
        for use_data in ((False, True) if opt.keep_from == K.KEEP_POSITIVE else (True,)):
            counts, status = K.mono_count(indptr, ch.indices, ch.data, vm.lut_n, vm.lut_last,
                                          vm.var_ptr, vm.var_ids, opt.keep_from, use_data,
                                          opt.unk_mode, opt.unique, blocks)
            if status != K.MONO_OK:
                validated = use_data and status == K.MONO_UNSORTED
                break
            offsets = np.zeros(n_rows + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            ids = np.empty(offsets[-1], opt.dtype)
            vals = np.empty(offsets[-1], np.float32) if opt.values else None
            if K.mono_fill(indptr, ch.indices, ch.data, vm.lut_word, vm.var_ptr, vm.var_ids,
                           vm.unk_id, opt.keep_from, not use_data, opt.unk_mode, opt.unique,
                           blocks, offsets, ids, vals):
                return ids, vals, counts
    if n_rows and not validated:
        code, pos = K.check_csr(indptr, ch.indices, ch.data, vm.n_vars, blocks)
        if code != K.CSR_OK:
            what = _CSR_MESSAGES[int(code)]
            if code == K.CSR_INDPTR:
                at = f"row {ch.row0 + int(pos)}"
            else:
                r = ch.row0 + int(np.searchsorted(indptr, pos, side="right")) - 1
                at = (f"row {r}, stored entry {int(pos)} (column {int(ch.indices[pos])}, "
                      f"value {float(ch.data[pos])})")
            raise AnnDataError(f"{where}: {what} at {at}; n_vars = {vm.n_vars}")
    cap = K.row_capacity(indptr, ch.indices, ch.data, vm.var_ptr, opt.keep_from, opt.unk_mode,
                         blocks)
    cap_off = np.zeros(n_rows + 1, np.int64)
    np.cumsum(cap, out=cap_off[1:])
    ids = np.empty(cap_off[-1], np.int64)
    vals = np.empty(cap_off[-1], np.float32)
    lengths = K.cell_tokens(
        indptr, ch.indices, ch.data, vm.var_ptr, vm.var_ids, vm.vpos, vm.rank, vm.rank_ids,
        vm.monotone, vm.unk_id, opt.keep_from, opt.unk_mode, opt.unique, opt.order,
        opt.max_tokens, opt.truncate, opt.seed, ch.row0, opt.path, blocks, cap_off, ids, vals)
    if int(lengths.sum()) != ids.size:
        n = K.compact(ids, vals, cap_off, lengths)
        if n < ids.size // 2:  # do not keep a mostly empty buffer alive
            ids, vals = ids[:n].copy(), vals[:n].copy()
        else:
            ids, vals = ids[:n], vals[:n]
    return ids.astype(opt.dtype, copy=False), vals if opt.values else None, lengths


def _ids_dtype(dtype, tokenizer) -> type:
    """The NumPy scalar type for token ids, checked against the vocabulary size."""
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint32)):
        raise ValueError(f"dtype must be int64, int32 or uint32, got {dt}")
    if tokenizer.vocab_size > np.iinfo(dt).max + 1:
        raise ValueError(f"dtype {dt} cannot hold {tokenizer.vocab_size:,} token ids")
    return dt.type


def _fast_path(vm: _VarMap, opt: _Options) -> bool:
    """Whether chunks go through the exact-count kernels (no scratch, no compaction)."""
    return vm.monotone and opt.order == K.ORDER_GENOMIC and opt.max_tokens == 0


def _options(tokenizer, min_count, order, seed, max_tokens, truncate, unique, unknown,
             values: bool = True) -> _Options:
    if order not in ORDERS:
        raise ValueError(f"order must be one of {list(ORDERS)}, got {order!r}")
    if truncate not in TRUNCATE:
        raise ValueError(f"truncate must be one of {list(TRUNCATE)}, got {truncate!r}")
    unknown = tokenizer.settings.unknown if unknown is None else unknown
    if unknown not in UNKNOWN:
        raise ValueError(f"unknown must be one of {list(UNKNOWN)}, got {unknown!r}")
    if max_tokens is not None and (int(max_tokens) != max_tokens or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
    if min_count is not None and not np.isfinite(min_count):
        raise ValueError(f"min_count must be a finite number or None, got {min_count!r}")
    if int(seed) < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return _Options(K.keep_threshold(-np.inf if min_count is None else min_count),
                    UNKNOWN[unknown],
                    bool(unique), ORDERS[order], 0 if max_tokens is None else int(max_tokens),
                    TRUNCATE[truncate], int(seed), values=bool(values))


# ---------------------------------------------------------------------------------- outputs
def _obs_reader(adata, path: str | None, obs_columns: Sequence[str]):
    """``f(lo, hi) -> (names, {column: values})`` for a range of cells."""
    obs_columns = list(obs_columns)
    if path is not None and not hasattr(adata, "obs"):
        fr = _h5_frame(path, "obs")
        missing = [c for c in obs_columns if c not in fr.columns]
        if missing:
            raise AnnDataError(f"{path}: obs has no column(s) {missing}; it has {fr.columns}")

        def read(lo, hi):
            import h5py

            with _h5_errors(path), h5py.File(path, "r") as f:
                g = f["obs"]
                index = g.attrs.get("_index", "_index")
                names = _h5_column(g, index, slice(lo, hi))
                meta = {c: _h5_column(g, c, slice(lo, hi)) for c in obs_columns}
            return [str(x) for x in names], meta
        return read
    missing = [c for c in obs_columns if c not in adata.obs.columns]
    if missing:
        raise AnnDataError(f"obs has no column(s) {missing}; it has {list(adata.obs.columns)}")

    def read_mem(lo, hi):
        names = [str(x) for x in adata.obs_names[lo:hi]]
        return names, {c: adata.obs[c].iloc[lo:hi].to_numpy() for c in obs_columns}
    return read_mem


def _json_scalars(values) -> list:
    out = []
    for x in np.asarray(values, dtype=object).tolist():
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and x != x:
            x = None
        elif not isinstance(x, (str, int, float, bool, type(None))):
            x = str(x)
        out.append(x)
    return out


def _shape_output(rows: Ragged, tokenizer, output: str, values: bool):
    if output == "ragged":
        return rows if values else Ragged(rows.data, rows.offsets)
    if output == "list":
        ids = list(Ragged(rows.data, rows.offsets))
        if values:
            return ids, [rows.values[a:b] for a, b in zip(rows.offsets[:-1], rows.offsets[1:])]
        return ids
    out = tokenizer.pad(list(Ragged(rows.data, rows.offsets)), padding=True,
                        return_tensors=output)
    if values:
        width = out["input_ids"].shape[1]
        v = np.zeros((len(rows), width), np.float32)
        lens = rows.lengths
        mask = np.arange(width)[None, :] < lens[:, None]
        v[mask] = rows.values
        if output == "pt":
            from ._optional import require

            torch = require("torch", "output='pt'")

            v = torch.from_numpy(v)
        out["values"] = v
    return out


def _progress(total: int, enabled: bool, desc: str):
    from ._progress import progress  # tqdm when installed, else a plain stderr line

    return progress(total, desc, "cell", enabled=enabled)


def _stream(source: _Source, vm: _VarMap, opt: _Options, *, budget: int, chunk_rows,
            n_threads, progress: bool, desc: str, prepare=None,
            encode=None) -> Iterator[tuple[int, Ragged]]:
    """Run the kernels chunk by chunk: yields ``(first row, Ragged with values)``.

    ``prepare(chunk) -> (chunk, var map, ids table)`` replaces a chunk and its map before the
    kernels; their ids are then looked up in the table (``order="var"``)."""
    mean_hits = max(1.0, vm.var_ids.size / max(1, vm.n_vars))
    per_nnz = int(16 + 40 * mean_hits)
    bar = _progress(source.n_rows, progress, desc)
    try:
        with _config.threads(n_threads):
            for ch in source.chunks(budget, per_nnz, chunk_rows):
                if encode is not None:  # value encodings (genotok.cellvalues)
                    ch = encode(ch)
                if prepare is None:
                    ids, vals, lengths = _run_chunk(ch, vm, opt, source.where)
                else:
                    ch, cvm, table = prepare(ch)
                    ids, vals, lengths = _run_chunk(ch, cvm, opt, source.where)
                    ids = table[ids]
                offsets = np.zeros(lengths.size + 1, np.int64)
                np.cumsum(lengths, out=offsets[1:])
                yield ch.row0, Ragged(ids, offsets, vals)
                if bar is not None:
                    bar.update(lengths.size)
    finally:
        if bar is not None:
            bar.close()


def _concat(parts: list[Ragged]) -> Ragged:
    if not parts:
        return Ragged(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.float32))
    if len(parts) == 1:
        return parts[0]
    lengths = np.concatenate([p.lengths for p in parts])
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = None if parts[0].values is None else np.concatenate([p.values for p in parts])
    return Ragged(np.concatenate([p.data for p in parts]), offsets, values)


def _to_corpus(path, tokenizer, stream, obs_read, obs_columns, values: bool, extra: dict,
               source_path: str | None, overwrite: bool = False):
    from .corpus import Corpus, CorpusWriter

    with CorpusWriter.for_tokenizer(path, tokenizer, values_dtype="float32" if values else None,
                                    metadata_columns=list(obs_columns), extra=extra,
                                    overwrite=overwrite) as w:
        if source_path is not None:
            w.add_source(os.path.basename(source_path), size=os.path.getsize(source_path))
        for row0, rows in stream:
            names, meta = obs_read(row0, row0 + len(rows))
            w.append_batch(rows if values else Ragged(rows.data, rows.offsets), names=names,
                           meta={k: _json_scalars(v) for k, v in meta.items()})
    return Corpus.open(path)


def _check_output(output):
    if isinstance(output, os.PathLike) or (isinstance(output, str) and output not in OUTPUTS):
        return "corpus"
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {list(OUTPUTS)} or a corpus path, got {output!r}")
    return output


# ---------------------------------------------------------------------------------- public API
def tokenize_anndata(adata, tokenizer, *, layer: str | None = None,
                     min_count: float | None = None, values: bool = False,
                     order: str = "genomic", seed: int = 0, max_tokens: int | None = None,
                     truncate: str = "top", unique: bool = True, unknown: str | None = None,
                     chunk_rows: int | None = None, memory_mb: float = 256,
                     region_columns: Sequence[str] | None = None,
                     var_names_sep: str | None = None, one_based: bool = False,
                     n_threads: int | None = None, output="ragged",
                     obs_columns: Sequence[str] = (), progress: bool = False, dtype=np.int64,
                     overwrite: bool = False, normalize: str | None = None,
                     target_sum: float = 1e4, log1p: bool = False, rank=None,
                     bins: int | None = None, prepend: Sequence[str] = (),
                     condition_unknown: str = "unk", add_cls: bool = False):
    """One token list per cell of a cell × peak matrix (AnnData, backed AnnData or ``.h5ad``).

    Peaks are mapped to tokens once (the tokenizer's overlap mode and thresholds); each cell's
    list is gathered from its non-zero peaks by a parallel numba kernel. The exact semantics of
    ``min_count``, ``unique``, ``unknown``, ``max_tokens``/``truncate`` and ``order`` are in the
    module documentation (:mod:`genotok.anndata`).

    Parameters
    ----------
    adata
        ``anndata.AnnData`` (in memory or ``backed="r"``) or the path of a ``.h5ad`` file, read
        in row chunks with h5py (the matrix is never loaded whole).
    tokenizer
        A :class:`~genotok.tokenizer.Tokenizer`.
    layer
        Use ``adata.layers[layer]`` instead of ``X``.
    min_count
        Keep entries with ``value >= min_count`` (``None``: every stored entry ``> 0``);
        ``min_count=2`` with counts binarizes at 2.
    values
        Keep each token's value (sum of its peaks' entries) as a float32 value channel.
    order, seed
        ``"genomic"``, ``"value"`` (descending), ``"shuffle"`` (seeded per cell) or ``"var"``:
        geniml's sequences, each cell's kept entries in storage order (``X[row].nonzero()``;
        column order in a canonical matrix), each entry's tokens in the tokenizer's hit order,
        every (peak, token) pair kept (needs ``unique=False``; about twice the working memory).
    max_tokens, truncate
        At most ``max_tokens`` per cell: the ``"top"`` values or a seeded ``"sample"``.
    unique
        Merge a token reached from several peaks (values summed).
    unknown
        ``"set"``, ``"region"`` or ``"drop"``, per cell (default: the tokenizer's policy).
    chunk_rows, memory_mb
        Rows per chunk, or (default) chunks sized to ``memory_mb`` MiB of working memory.
    region_columns, var_names_sep, one_based
        Where the peaks' regions come from (see :func:`var_regions`).
    n_threads
        numba threads (default: the tokenizer's setting, else numba's).
    output
        ``"ragged"`` (a :class:`~genotok.ragged.Ragged`, with ``values`` when asked), ``"list"``
        (arrays; with ``values=True`` a pair of lists), ``"np"``/``"pt"`` (padded
        ``input_ids``/``attention_mask``, plus ``values``), or a corpus path: written chunk by
        chunk with ``obs_names`` as record names and ``obs_columns`` as metadata; the opened
        :class:`~genotok.corpus.Corpus` is returned.
    obs_columns
        ``obs`` columns kept as per-record metadata (corpus output).
    progress
        Show a progress bar over cells (tqdm when installed, else a line on stderr).
    dtype
        Integer dtype of the token ids in a ``"ragged"`` or ``"list"`` result: ``np.int64``
        (default), or ``np.uint32``/``np.int32`` to halve the result's memory and the time spent
        writing it (the vocabulary must fit). A corpus always gets the width it stores.
    overwrite
        Replace an existing corpus at the ``output`` path (default: refuse it).
    normalize, target_sum, log1p, rank, bins
        Value encodings applied to the entries before tokenizing (``"total"`` normalisation,
        Geneformer's ``rank="median"``, scGPT's ``bins=n``): see :mod:`genotok.cellvalues`.
        A corpus stores the encoding (and the medians) in its header; ``rank=corpus`` reuses
        a training corpus' medians.
    prepend, condition_unknown
        ``obs`` columns whose condition tokens (``<batch=d1>``, the tokenizer's
        ``extra_tokens``) start each cell, in this order; a value without a token gives
        ``<unk>`` or an error (``"error"``). See :mod:`genotok.conditions`.
    add_cls
        Start each cell with ``<cls>`` (before its condition tokens).

    Raises
    ------
    AnnDataError
        No region information, a malformed matrix (index out of range, negative or non-finite
        values, bad indptr), an unknown layer, a backed CSC matrix too large for ``memory_mb``.

    Examples
    --------
    >>> import anndata, numpy as np, pandas as pd, scipy.sparse as sp
    >>> from genotok import Tokenizer
    >>> tok = Tokenizer(["chr1:0-100", "chr1:100-200", "chr2:0-100"])
    >>> X = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 0]]))
    >>> a = anndata.AnnData(X, var=pd.DataFrame(index=["chr1:50-150", "chr9:0-1", "chr2:5-6"]))
    >>> tokenize_anndata(a, tok).to_list()
    [[0, 1, 2], [3]]
    """
    kind = _check_output(output)
    by_var = order == "var"
    if by_var and unique:
        raise ValueError("order='var' keeps every (peak, token) pair in storage order, as "
                         "geniml's per-cell loop does: pass unique=False with it")
    opt = _options(tokenizer, min_count, "genomic" if by_var else order, seed, max_tokens,
                   truncate, unique, unknown, values)
    opt.dtype = _ids_dtype(dtype, tokenizer)
    if kind == "corpus":  # the writer stores its own width; uint32 halves the chunks' memory
        opt.dtype = _ids_dtype(np.uint32, tokenizer)
    if memory_mb <= 0:
        raise ValueError(f"memory_mb must be > 0, got {memory_mb}")
    if chunk_rows is not None and int(chunk_rows) < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    n_threads = tokenizer.n_threads if n_threads is None else n_threads
    source, path = _source(adata, layer)
    vm = _adata_var_map(path if path is not None and not hasattr(adata, "var") else adata,
                        tokenizer, region_columns, var_names_sep, one_based, n_threads)
    if vm.n_vars != source.n_cols:
        raise AnnDataError(f"{source.where}: {source.n_cols} matrix columns but {vm.n_vars} "
                           "variables")
    _check_rows(source, adata, path)
    from . import cellvalues

    enc = cellvalues.value_encoding(adata, layer=layer, normalize=normalize,
                                    target_sum=target_sum, log1p=log1p, rank=rank, bins=bins,
                                    memory_mb=memory_mb)
    budget = int(memory_mb * (1 << 20))
    if by_var:  # each chunk also holds a map per stored entry (about twice the working memory)
        budget //= 2
    elif kind != "corpus" and path is None and chunk_rows is None and _fast_path(vm, opt):
        # in memory to in memory without scratch: one pass spares the concatenation's copy
        budget = 1 << 62
    obs_read = _obs_reader(adata, path, obs_columns) if kind == "corpus" else None
    prepare = None
    if by_var:  # the kernels see one pseudo variable per stored entry (see _entries_as_vars)
        back_dtype, opt.dtype = opt.dtype, np.int64
        prepare = lambda ch: _entries_as_vars(ch, vm, tokenizer, back_dtype)  # noqa: E731
    stream = _stream(source, vm, opt, budget=budget, chunk_rows=chunk_rows, n_threads=n_threads,
                     progress=progress, desc="tokenizing cells", prepare=prepare,
                     encode=None if enc is None else enc.chunk_encoder(source.n_cols,
                                                                       source.where))
    if prepend or add_cls:  # <cls> and condition tokens (genotok.conditions)
        from . import conditions

        stream = conditions.prepend_stream(stream, _obs_reader(adata, path, list(prepend)),
                                           tokenizer, list(prepend), condition_unknown,
                                           cls=add_cls)
    if kind == "corpus":
        extra = {"anndata": {"layer": layer, "min_count": min_count, "order": order, "seed": seed,
                             "max_tokens": max_tokens, "truncate": truncate, "unique": unique,
                             "unknown": tokenizer.settings.unknown if unknown is None else unknown}}
        if enc is not None:
            extra["anndata"]["values_encoding"] = enc.to_json()
        if prepend or add_cls:
            extra["anndata"]["add_cls"] = bool(add_cls)
            extra["anndata"]["prepend"] = list(prepend)
            extra["anndata"]["condition_tokens"] = list(tokenizer.universe.extra_tokens)
        return _to_corpus(output, tokenizer, stream, obs_read, obs_columns, values, extra, path,
                          overwrite)
    rows = _concat([r for _, r in stream])
    return _shape_output(rows, tokenizer, kind, values)


# ---------------------------------------------------------------------------------- fragments
def _unique_spans(buf: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Distinct byte strings of the spans (decoded, in order of first appearance) and each
    span's index among them."""
    index, a, b = _parse.intern_spans(buf, s, e)
    names = [buf[x:y].tobytes().decode("utf-8", "replace") for x, y in zip(a.tolist(), b.tolist())]
    return names, index


def fragment_counts(path, tokenizer, *, barcodes: Sequence[str] | None = None,
                    min_fragments: int = 1, block_bytes: int = 32 << 20,
                    n_threads: int | None = None):
    """Stream a fragment file into a cell × token count matrix.

    Returns ``(barcodes, X, n_fragments)``: the kept cells, a ``scipy.sparse.csr_matrix`` of
    shape ``(cells, n_regions + 1)`` (column ``n_regions`` counts the fragments that hit no
    region) and the number of fragment lines of each kept cell. Each fragment adds its count to
    every token it hits. See :func:`tokenize_fragments`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from genotok import Tokenizer
    >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
    >>> _ = p.write_text("chr1\\t5\\t20\\tAAA-1\\t2\\nchr9\\t1\\t2\\tAAA-1\\t1\\n")
    >>> bcs, X, n = fragment_counts(p, Tokenizer(["chr1:0-100"]))
    >>> bcs, X.toarray().tolist(), n.tolist()
    (['AAA-1'], [[2.0, 1.0]], [2])
    """
    from .fragmatrix import _count  # the one streaming fragment counter

    return _count(path, tokenizer, mode="fragment", shift=(0, 0), use_count=True,
                  barcodes=barcodes, min_fragments=min_fragments, block_bytes=block_bytes,
                  n_threads=n_threads, miss_column=True, repeats=False)


def tokenize_fragments(path, tokenizer, *, barcodes: Sequence[str] | None = None,
                       min_fragments: int = 1, min_count: float | None = None,
                       values: bool = True, order: str = "genomic", seed: int = 0,
                       max_tokens: int | None = None, truncate: str = "top",
                       unknown: str | None = None, block_bytes: int = 32 << 20,
                       n_threads: int | None = None, output="ragged", progress: bool = False,
                       overwrite: bool = False, mode: str = "fragment", shift=(0, 0),
                       normalize: str | None = None, target_sum: float = 1e4,
                       log1p: bool = False, rank=None, bins: int | None = None):
    """Per-cell token lists with counts from a 10x fragment file (``.tsv`` or ``.tsv.gz``).

    The file (tab-separated ``chrom start end barcode count``; ``#`` lines skipped; a missing
    count counts 1) is streamed in blocks of ``block_bytes``; each fragment adds its count to
    every token it hits in its cell. Memory is bounded by one block plus the distinct
    (cell, token) pairs, i.e. the size of the result. Cells are in order of first appearance
    (or of ``barcodes``). Unknown handling is per cell, not per fragment: ``"set"`` gives a
    cell without any hit one ``<unk>`` (valued with its total count), ``"region"`` one ``<unk>``
    valued with the count of its fragments that hit nothing, ``"drop"`` nothing. ``min_count``,
    ``order``, ``max_tokens``/``truncate`` act on the per-cell token counts as in
    :func:`tokenize_anndata`. The byte parser is this module's own (``genotok._parse`` reads
    three BED columns only).

    Parameters
    ----------
    barcodes
        Allow-list: only these cells, in this order (cells of the list without fragments are
        kept when ``min_fragments=0``).
    min_fragments
        Keep cells with at least this many fragment lines.
    output
        ``"ragged"``/``"list"``/``"np"``/``"pt"`` → ``(barcodes, result)``; ``"anndata"`` → an
        AnnData of counts (cells × universe regions, var_names the token strings, ``obs``
        columns ``n_fragments`` and ``unknown_count``; the per-cell options do not apply);
        a corpus path → the opened corpus (barcodes as record names).
    overwrite
        Replace an existing corpus at the ``output`` path (default: refuse it).
    mode, shift
        ``"fragment"`` (above) or ``"insertion"``: each fragment's two Tn5 cut sites counted
        once each, whatever the count column (SnapATAC2's way; ``<unk>`` counts fragments
        none of whose sites hits), see :mod:`genotok.fragmatrix`.
    normalize, target_sum, log1p, rank, bins
        Value encodings of the per-cell counts, as in :func:`tokenize_anndata`.

    Raises
    ------
    BedParseError
        A malformed line (file and 1-based line number in the message), a barcode holding a
        control byte, a barcode or chromosome name that is not UTF-8 (refused rather than
        decoded with replacement characters, which would merge two cells), a truncated or
        corrupt ``.gz`` (file named; nothing is written).

    Examples
    --------
    >>> import os, tempfile
    >>> from genotok import Tokenizer
    >>> p = os.path.join(tempfile.mkdtemp(), "f.tsv")
    >>> from pathlib import Path
    >>> _ = Path(p).write_text("# h\\nchr1\\t5\\t20\\tAAA-1\\t2\\nchr1\\t150\\t160\\tAAA-1\\t1\\n"
    ...                       "chr9\\t1\\t2\\tCCC-1\\t1\\n")
    >>> names, rows = tokenize_fragments(p, Tokenizer(["chr1:0-100", "chr1:100-200"]))
    >>> names, rows.to_list(), rows.values.tolist()
    (['AAA-1', 'CCC-1'], [[0, 1], [2]], [2.0, 1.0, 1.0])
    """
    kind = "anndata" if output == "anndata" else _check_output(output)
    opt = _options(tokenizer, min_count, order, seed, max_tokens, truncate, True, unknown,
                   values)
    if mode == "fragment" and tuple(shift) == (0, 0):
        names, X, nfrag = fragment_counts(path, tokenizer, barcodes=barcodes,
                                          min_fragments=min_fragments, block_bytes=block_bytes,
                                          n_threads=n_threads)
    else:  # insertion counts (genotok.fragmatrix)
        from .fragmatrix import _count

        names, X, nfrag = _count(path, tokenizer, mode=mode, shift=shift, use_count=False,
                                 barcodes=barcodes, min_fragments=min_fragments,
                                 block_bytes=block_bytes, n_threads=n_threads, miss_column=True)
    u = tokenizer.universe
    if kind == "anndata":
        import anndata
        import pandas as pd

        obs = pd.DataFrame({"n_fragments": nfrag,
                            "unknown_count": np.asarray(X[:, u.n_regions].todense()).ravel()},
                           index=pd.Index(names, name="barcode"))
        tokens = u.convert_ids_to_tokens(np.arange(u.n_regions))
        seen: set[str] = set()
        index = []
        for i, t in enumerate(tokens):  # a duplicate universe line gets "#id" (never counted)
            index.append(t if t not in seen else f"{t}#{i}")
            seen.add(t)
        var = pd.DataFrame({"token_id": np.arange(u.n_regions)},
                           index=pd.Index(index, name="token"))
        return anndata.AnnData(X[:, :u.n_regions].tocsr(), obs=obs, var=var)
    ids = np.arange(u.n_regions, dtype=np.int64)
    hits = Ragged(ids, np.append(np.arange(u.n_regions + 1, dtype=np.int64), u.n_regions))
    vm = _var_map_from_hits(hits, u.sweep.rank, u.sweep.ids, u.unk_token_id)
    source = _MemorySource(X, os.fspath(path))
    from . import cellvalues

    enc = cellvalues.value_encoding(_anndata_of(X) if isinstance(rank, str) else None,
                                    normalize=normalize, target_sum=target_sum, log1p=log1p,
                                    rank=rank, bins=bins)
    stream = _stream(source, vm, opt, budget=256 << 20, chunk_rows=None,
                     n_threads=tokenizer.n_threads if n_threads is None else n_threads,
                     progress=progress, desc="tokenizing cells",
                     encode=None if enc is None else enc.chunk_encoder(source.n_cols,
                                                                       source.where))
    if kind == "corpus":
        def obs_read(lo, hi):
            return names[lo:hi], {}

        extra = {"fragments": {"min_fragments": min_fragments, "min_count": min_count,
                               "order": order, "seed": seed, "max_tokens": max_tokens,
                               "truncate": truncate,
                               "unknown": tokenizer.settings.unknown if unknown is None
                               else unknown, "mode": mode, "shift": list(shift)}}
        if enc is not None:
            extra["fragments"]["values_encoding"] = enc.to_json()
        return _to_corpus(output, tokenizer, stream, obs_read, (), values, extra, os.fspath(path),
                          overwrite)
    rows = _concat([r for _, r in stream])
    return names, _shape_output(rows, tokenizer, kind, values)


def _anndata_of(X):
    """A bare AnnData around a matrix (no copy), for the value encodings' medians pass."""
    import anndata

    return anndata.AnnData(X)


def warmup() -> None:
    """Compile the single-cell kernels on tiny inputs (float32/float64 data, int32 indices).

    Examples
    --------
    >>> warmup()
    """
    vm = _var_map_from_hits(Ragged(np.array([0], np.int64), np.array([0, 1, 1], np.int64)),
                            np.array([0], np.int64), np.array([0], np.int64), 1)
    for data in (np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0], np.float64)):
        ch = _Chunk(0, np.array([0, 2], np.int64), np.array([0, 1], np.int32), data)
        _run_chunk(ch, vm, _options_default(), "warmup")
    K.parse_fragments(np.frombuffer(b"chr1\t1\t2\tA\t1\n", np.uint8))


def _options_default() -> _Options:
    return _Options(K.KEEP_POSITIVE, K.UNK_SET, True, K.ORDER_GENOMIC, 0, K.TRUNC_TOP, 0)


__all__ = ["fragment_counts", "tokenize_anndata", "tokenize_fragments", "var_regions", "warmup"]
