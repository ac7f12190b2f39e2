"""Var names and region columns → a :class:`~genotok.regions.RegionSet`, and the var map.

The variables (peaks) of a matrix get their regions from ``var`` columns (chromosome, start,
end; detected case-insensitively, or named by ``region_columns``) or from ``var_names``
(``chr1:100-200``, ``chr1-100-200``, ``chr1_100_200``). Var names are parsed by a numba pass
over all names at once (same rules as :func:`genotok.regions.parse_region_strings`, which is
used as the fallback and for messages).

The *var map* is the peaks' tokens, computed once per matrix with the tokenizer's overlap mode
and thresholds (a peak may hit zero, one or several universe regions), plus what the kernels
need to order them; maps made from ``var_names`` are cached while the same pandas Index meets
the same universe and settings (``_adata_var_map``).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import AnnDataError, RegionParseError
from ..kernels import cells as K
from ..kernels import parse as _parse
from ..ragged import Ragged
from ..params import Each, Flag, Text, Unchecked, validated
from ..regions import SEP, RegionSet, parse_region_strings
from .sources import _container, _Frame, _is_path

CHROM_COLUMNS = ("chr", "chrom", "seqnames", "chromosome", "seqname")
START_COLUMNS = ("start", "chromstart")
END_COLUMNS = ("end", "chromend")


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


@validated({"adata": [Unchecked("an AnnData or an .h5ad path, read by its var frame")],
            "region_columns": [Each(Text(), sequence=True, length=3), None],
            "var_names_sep": SEP, "one_based": [Flag()]})
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
        fr = _container(adata).frame("var")
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


def _unique_spans(buf: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Distinct byte strings of the spans (decoded, in order of first appearance) and each
    span's index among them."""
    index, a, b = _parse.intern_spans(buf, s, e)
    names = [buf[x:y].tobytes().decode("utf-8", "replace") for x, y in zip(a.tolist(), b.tolist())]
    return names, index


__all__ = ["var_regions"]
