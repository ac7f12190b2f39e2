"""Cells → tokens: :func:`tokenize_anndata`, its options, and the driving of the cell kernels.

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
* ``max_length``: ``truncation="top"`` keeps the largest values (ties: genomic order),
  ``"sample"`` a seeded uniform sample without replacement;
* ``order``: ``"genomic"`` — ascending universe position (ties, with ``unique=False``: column
  order); ``"value"`` — value descending, ties genomic; ``"shuffle"`` — a seeded permutation.
  ``<unk>`` comes after every region token in genomic order.

Random draws depend only on ``seed`` and the cell's row index, never on chunking or threads.

Var names and region columns become regions in :mod:`.varnames`; matrices are read in row
chunks by the readers of :mod:`.chunks` (memory bounds, checks of untrusted input) that the
cell sources (:mod:`.sources`) open; the token batches go to the one sink
(:mod:`genotok.sink`), which makes the ``Ragged`` or the corpus (``out=``).

Fast path
---------
When the peaks are sorted like the universe (each peak's tokens, and the tokens of later
peaks, come later in genomic order: the usual case of a consensus peak set), with
``order="genomic"`` and no ``max_length``, a first pass counts (and validates) every cell's
tokens exactly and a second writes them in place: no scratch slots, no compaction, and no value
channel unless ``values=True``. An in-memory matrix tokenized to an in-memory result then runs
as a single chunk (there is no scratch to bound, and it spares concatenating the chunks).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from .. import _config, _progress, sink
from .._io import make_temp_dir
from .._usage import keywords
from ..errors import AnnDataError, SourceError
from ..kernels import cells as K
from ..kernels.modes import Order, Truncate, Unknown, parse
from ..genes import GeneTokenizer
from ..params import MEMORY_MB, N_THREADS, Flag, HasAttr, InstanceOf, ParameterError, Unchecked, validated
from ..tokenizer import Tokenizer
from ..ragged import Ragged
from . import conditions, features, reading
from . import values as cellvalues
from . import containers  # noqa: F401  (registers the HDF5 containers' sources)
from .chunks import _CSR_MESSAGES, Chunk, _Source, kernel_ints
from .sources import CellSource, _is_frame, open_source
from .fragmatrix import per_universe
from .spec import CellSpec, Normalize, fields_elsewhere
from .varnames import _adata_var_map, _var_map_from_hits, _VarMap

def _entries_as_vars(ch: Chunk, vm: _VarMap, tokenizer, dtype) -> tuple:
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
    entries = Chunk(ch.row0, np.asarray(ch.indptr, np.int64) - lo,
                    kernel_ints(np.arange(cols.size)), ch.data[lo:hi], int(ptr[-1]))
    return entries, pm, table


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
    exact: bool = False  # order="value" by float64 values (a gene vocabulary: Geneformer's rank)
    encoded: bool = False  # a value encoding ran: zeros are likely (a feature without a median)


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


def _run_chunk(ch: Chunk, vm: _VarMap, opt: _Options, where: str, table=None):
    """Validate one chunk, then count, fill and compact. Returns (ids, vals or None, lengths);
    with ``table`` (pseudo token → token id, covering ``vm.var_ids``) the ids are looked up in
    it."""
    ids, vals, lengths, looked_up = _tokens(ch, vm, opt, where, table)
    return (ids if table is None or looked_up else table[ids]), vals, lengths


def _tokens(ch: Chunk, vm: _VarMap, opt: _Options, where: str, table):
    """:func:`_run_chunk`, and whether the ids are already looked up in ``table``."""
    if ch.indices.dtype != np.int32:  # (the kernels' one index variant; plugins' chunks too)
        ch = dataclasses.replace(ch, indices=kernel_ints(ch.indices))
    indptr = np.ascontiguousarray(ch.indptr, dtype=np.int64)
    n_rows = indptr.size - 1
    blocks = _chunk_blocks(indptr)
    if n_rows and (indptr[0] < 0 or indptr[-1] > ch.indices.size
                   or ch.indices.size != ch.data.size):
        raise AnnDataError(f"{where}: indptr/indices/data are inconsistent "
                           f"(indptr ends at {indptr[-1]}, {ch.indices.size} indices, "
                           f"{ch.data.size} values)")
    validated = False  # by a count that read the values and found only unsorted columns
    if _fast_path(vm, opt):
        # "drop zeros" is the only filter: count without reading the values (half the traffic)
        # and let the fill check them; otherwise, or when the fill finds a zero or a bad value,
        # count with them (at once after a value encoding, whose zeros would fail the fill)
        guess = opt.keep_from == K.KEEP_POSITIVE and not opt.encoded
        for use_data in ((False, True) if guess else (True,)):
            counts, status = K.mono_count(indptr, ch.indices, ch.data, vm.lut_n, vm.lut_last,
                                          vm.var_ptr, vm.var_ids, opt.keep_from, use_data,
                                          opt.unk_mode, opt.unique, blocks)
            if status != K.MONO_OK:
                validated = use_data and status == K.MONO_UNSORTED
                break
            by_value = opt.order == K.ORDER_VALUE  # the values order the tokens
            if by_value and use_data and table is not None and _one_token_each(vm, opt):
                return (*_value_rows(ch, vm, opt, blocks, counts, table), True)
            offsets = np.zeros(n_rows + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            ids = np.empty(offsets[-1], opt.dtype)
            vdtype = np.float64 if by_value and opt.exact else np.float32
            vals = np.empty(offsets[-1], vdtype) if opt.values or by_value else None
            if K.mono_fill(indptr, ch.indices, ch.data, vm.lut_word, vm.var_ptr, vm.var_ids,
                           vm.unk_id, opt.keep_from, not use_data, opt.unk_mode, opt.unique,
                           blocks, offsets, ids, vals):
                if by_value:  # genomic fill, then each row by value (and cut), in place
                    counts = K.value_order_rows(offsets, ids, vals, opt.max_tokens, blocks)
                    n = K.compact(ids, vals, offsets, counts)
                    ids = ids[:n]  # the float64 rank values go as float32, when asked
                    vals = vals[:n].astype(np.float32, copy=False) if opt.values else None
                return ids, vals if opt.values else None, counts, False
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
    return ids.astype(opt.dtype, copy=False), vals if opt.values else None, lengths, False


def _one_token_each(vm: _VarMap, opt: _Options) -> bool:
    """Whether every variable has at most one token and nothing adds ``<unk>`` (a gene
    vocabulary's columns): value-ordered rows then come straight from the CSR rows
    (:func:`_value_rows`)."""
    return (opt.exact and opt.unk_mode == K.UNK_DROP and vm.lut_n.size > 0
            and int(vm.lut_n.min()) >= 0 and int(vm.lut_n.max()) <= 1)


def _value_rows(ch: Chunk, vm: _VarMap, opt: _Options, blocks: np.ndarray, counts, table):
    """``order="value"`` with one token per variable: each row's kept entries sorted by value,
    cut to ``max_length`` and looked up in ``table`` in one kernel (``counts``: its tokens,
    counted with the values)."""
    if opt.max_tokens:
        counts = np.minimum(counts, opt.max_tokens)
    offsets = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = np.empty(offsets[-1], table.dtype)
    vals = np.empty(offsets[-1], np.float32) if opt.values else None
    col_ids = np.full(vm.lut_n.size, -1, np.int64)  # column -> its token id, -1: none
    one = np.flatnonzero(vm.lut_n == 1)
    col_ids[one] = table[vm.var_ids[vm.var_ptr[one]]]
    K.value_rows(np.ascontiguousarray(ch.indptr, dtype=np.int64), ch.indices, ch.data, col_ids,
                 opt.keep_from, blocks, offsets, ids, vals)
    return ids, vals, counts


def _ids_dtype(dtype, tokenizer) -> type:
    """The NumPy scalar type for token ids, checked against the vocabulary size."""
    dt = np.dtype(dtype)  # int64, int32 or uint32: the read options' constraint checked it
    if tokenizer.vocab_size > np.iinfo(dt).max + 1:
        raise ParameterError(f"dtype {dt} cannot hold {tokenizer.vocab_size:,} token ids")
    return dt.type


def _fast_path(vm: _VarMap, opt: _Options) -> bool:
    """Whether chunks go through the exact-count kernels (no scratch; for ``order="value"``,
    each row then sorted by value and cut to its top ``max_length`` in place)."""
    if not vm.monotone:
        return False
    if opt.order == K.ORDER_VALUE:
        return opt.max_tokens == 0 or opt.truncate == K.TRUNC_TOP
    return opt.order == K.ORDER_GENOMIC and opt.max_tokens == 0


def _kernel_options(tokenizer, spec, order: str, unique: bool) -> _Options:
    """The kernels' options of a :class:`~genotok.CellSpec` (validated when it was made:
    nothing is checked again here); ``order``/``unique``: the driver's (``order="var"`` runs
    the genomic kernels over pseudo variables; a count matrix is always unique)."""
    unknown = tokenizer.settings.unknown if spec.unknown is None else spec.unknown
    cut = spec.max_length is not None
    return _Options(K.keep_threshold(-np.inf if spec.min_count is None else spec.min_count),
                    int(parse(Unknown, unknown)), bool(unique), int(parse(Order, order)),
                    int(spec.max_length) if cut else 0, int(parse(Truncate, spec.truncation)),
                    int(spec.seed), values=bool(spec.values))


def _bar(total: int, enabled: bool, desc: str):
    return _progress.progress(total, desc, "cell", enabled=enabled)


#: chunks with fewer stored entries than this run the kernels on the calling thread only: a
#: parallel region wakes numba's workers, which on a busy box costs 10-50 ms a kernel (a
#: 100-cell file: 5 regions, 0.21 s a call; benchmarks/RESULTS.md, "Gene vocabularies")
SERIAL_BELOW = 1 << 16


def _small(ch: Chunk) -> bool:
    """Whether chunk ``ch`` is too small for numba's worker threads (:data:`SERIAL_BELOW`)."""
    return int(ch.indptr[-1]) - int(ch.indptr[0]) < SERIAL_BELOW


def _stream(source: _Source, vm: _VarMap, opt: _Options, *, budget: int, chunk_rows,
            n_threads, progress: bool, desc: str, prepare=None,
            encode=None, fused=None) -> Iterator[tuple[int, Ragged]]:
    """Run the kernels chunk by chunk: yields ``(first row, Ragged with values)``.

    ``prepare(chunk) -> (chunk, var map, ids table)`` replaces a chunk and its map before the
    kernels; their ids are then looked up in the table (``order="var"``). ``fused(chunk) ->
    (ids, values, lengths)`` runs a chunk in one kernel instead (:func:`.features.ranker`), or
    returns ``None`` for the general path."""
    mean_hits = max(1.0, vm.var_ids.size / max(1, vm.n_vars))
    per_nnz = int(16 + 40 * mean_hits)
    bar = _bar(source.n_rows, progress, desc)
    try:
        with _config.threads(n_threads):
            # a fused kernel's chunks are sized to its own memory (a chunk it hands back runs
            # the general path in pieces sized to the general path's)
            for whole in source.chunks(budget, per_nnz if fused is None else fused.per_nnz,
                                       chunk_rows):
                with _config.threads(1 if _small(whole) else None):
                    done = None if fused is None else fused(whole)
                for ch in [whole] if done is not None else _pieces(
                        whole, None if fused is None else max(1, budget // per_nnz)):
                    if done is None:
                        with _config.threads(1 if _small(ch) else None):
                            ids, vals, lengths = _general(ch, vm, opt, source.where, prepare,
                                                          encode)
                    else:
                        ids, vals, lengths = done
                    offsets = np.zeros(lengths.size + 1, np.int64)
                    np.cumsum(lengths, out=offsets[1:])
                    yield ch.row0, Ragged(ids, offsets, vals)
                    if bar is not None:
                        bar.update(lengths.size)
    finally:
        if bar is not None:
            bar.close()


def _pieces(ch: Chunk, max_nnz: int | None) -> Iterator[Chunk]:
    """``ch`` as chunks of whole rows of at most ``max_nnz`` entries each (a row longer than
    that alone; ``None``: ``ch`` itself)."""
    if max_nnz is None or ch.nnz <= max_nnz:
        yield ch
        return
    indptr = np.asarray(ch.indptr, np.int64)
    lo = 0
    while lo < ch.n_rows:
        hi = int(np.searchsorted(indptr, indptr[lo] + max_nnz, side="right")) - 1
        hi = min(ch.n_rows, max(hi, lo + 1))
        yield Chunk(ch.row0 + lo, indptr[lo:hi + 1], ch.indices, ch.data, ch.n_cols)
        lo = hi


def _general(ch: Chunk, vm: _VarMap, opt: _Options, where: str, prepare, encode) -> tuple:
    """One chunk through the value encodings (``encode``), ``prepare`` and the kernels."""
    if encode is not None:  # value encodings (genotok.singlecell.values)
        ch = encode(ch)
    if prepare is None:
        return _run_chunk(ch, vm, opt, where)
    ch, cvm, table = prepare(ch)
    return _run_chunk(ch, cvm, opt, where, table)


# ---------------------------------------------------------------------------------- public API
def _header(spec, enc, tokenizer, **source) -> dict:
    """What a corpus header records of a cell spec (the JSON of the spec, with its fitted
    medians, and the parts earlier readers look up by name)."""
    from .spec import RankByMedian

    named = any(isinstance(s, RankByMedian) and isinstance(s.medians, dict)
                for s in spec.encoding)  # medians by feature id: the spec says it all
    if enc is not None and enc.medians is not None and not named:  # the medians it used
        spec = spec.replace(encoding=tuple(
            RankByMedian((enc.medians, enc.median_method)) if isinstance(s, RankByMedian) else s
            for s in spec.encoding))
    out = {**source, "cells": spec.as_dict(),
           "unknown": tokenizer.settings.unknown if spec.unknown is None else spec.unknown}
    if enc is not None:
        out["values_encoding"] = enc.to_json()
    if spec.prepend or spec.add_cls or spec.add_eos:
        out["add_cls"] = spec.add_cls
        out["add_eos"] = spec.add_eos
        out["prepend"] = list(spec.prepend)
        u = getattr(tokenizer, "universe", None)
        out["condition_tokens"] = list(u.extra_tokens) if u is not None else []
    return out


def _extra_encoder(steps, encode, n_cols: int, where: str):
    """The chunk encoder of the fused head followed by the further steps, in order, each
    through its own ``encode(chunk)`` (a :class:`Chunk` of rebased rows, ``n_cols`` wide)."""
    if not steps:
        return encode

    def run(ch):
        if encode is not None:
            ch = encode(ch)
        ch = ch.rebased()
        ptr, idx = _read_only(ch.indptr), _read_only(ch.indices)
        data = np.asarray(ch.data, np.float64)
        for step in steps:  # each sees read-only arrays: the input's own may be among them
            new = np.asarray(step.encode(Chunk(ch.row0, ptr, idx, _read_only(data), n_cols)))
            if new.shape != data.shape or new.dtype.kind not in "biuf":
                raise AnnDataError(f"{where}: the value encoding {step.name!r} returned "
                                   f"{new.dtype} values of shape {new.shape} for "
                                   f"{data.size} stored entries (rows {ch.row0}..); an "
                                   "encoding returns one number per stored entry")
            data = new.astype(np.float64, copy=False)
        if not data.flags.writeable:  # a step handed its input back: the kernels' own copy
            data = data.copy()
        return Chunk(ch.row0, ch.indptr, ch.indices, data, n_cols)
    return run


def _read_only(a: np.ndarray) -> np.ndarray:
    """A view of ``a`` that cannot be written (an encoding writing its input fails loudly)."""
    v = np.asarray(a).view()
    v.flags.writeable = False
    return v


def entry_constraints(func: str, first: str, what: str) -> dict:
    """What a single-cell entry point ``func(first, tokenizer, spec, ...)`` accepts
    (:mod:`genotok.params`): ``first`` is ``what`` (read by its source); a swap of the
    first arguments is the usual mistake, and the messages say the order.

    Examples
    --------
    >>> c = entry_constraints("tokenize_anndata", "adata", "an AnnData or a path")
    >>> sorted(c)[:3], c["tokenizer"][0].hint
    (['adata', 'memory_mb', 'n_threads'], 'the order is tokenize_anndata(adata, tokenizer, spec)')
    """
    order = f"the order is {func}({first}, tokenizer, spec)"
    return {first: [Unchecked(what)],
            "tokenizer": [InstanceOf(Tokenizer, GeneTokenizer, hint=order)],
            "spec": [InstanceOf(CellSpec, hint=f"{order}, spec=CellSpec(...)"), None],
            "read": [InstanceOf(reading.ReadOptions), None],
            "out": [InstanceOf(str, os.PathLike, hint="a path, or a (directory, format) pair "
                               "such as ('cells/', 'parquet')"), InstanceOf(tuple),
                    HasAttr("emit"), None],
            "overwrite": [Flag()], "obs_columns": [InstanceOf(list, tuple)],
            "memory_mb": MEMORY_MB, "n_threads": N_THREADS, "progress": [Flag()]}


@keywords(elsewhere=fields_elsewhere("tokenize_anndata"))
@validated(entry_constraints("tokenize_anndata", "adata",
                             "an AnnData or a path, opened by open_source"))
def tokenize_anndata(adata, tokenizer, spec=None, *, read=None, out=None,
                     overwrite: bool = False, obs_columns: Sequence[str] = (),
                     memory_mb: float = 256, n_threads: int | None = None,
                     progress: bool = False):
    """One token list per cell of a cell × peak matrix (AnnData, backed AnnData or ``.h5ad``).

    Peaks are mapped to tokens once (the tokenizer's overlap mode and thresholds); each cell's
    list is gathered from its non-zero peaks by a parallel numba kernel, as the
    :class:`~genotok.CellSpec` says (the exact semantics of its selection and order are in
    the module documentation, :mod:`genotok.singlecell.cells`).

    Parameters
    ----------
    adata
        ``anndata.AnnData`` (in memory or ``backed="r"``) or the path of a ``.h5ad`` file, read
        in row chunks with h5py (the matrix is never loaded whole); any input the registry of
        cell sources reads (:func:`~genotok.open_source`: ``.h5mu``, 10x ``.h5``, a registered
        format) is opened by its class.
    tokenizer
        A :class:`~genotok.tokenizer.Tokenizer`.
    spec
        A :class:`~genotok.CellSpec`: what a cell becomes (default: ``CellSpec()``).
    read
        The read options of the input's source: :class:`~genotok.AnnDataOptions` (the layer,
        where the peaks' regions come from, the chunking and the ids' dtype of an in-memory
        result) for AnnData inputs.
    out
        A corpus path: the cells are written chunk by chunk (the result is never held whole)
        with ``obs_names`` as record names and ``obs_columns`` as metadata, and the opened
        :class:`~genotok.Corpus` is returned (its header holds the spec). A pair
        ``(directory, format)`` writes any store instead, as ``pretokenize(format=)`` does
        (``"parquet"``, ``"arrow"``, ``"gtok-dir"``, a registered name or a configured store),
        and returns it opened (:meth:`~genotok.Corpus.open`). Without it, a
        :class:`~genotok.ragged.Ragged` (with ``values`` when the spec asks): ``.to_list()``
        gives arrays, ``tokenizer.pad(result, padding=True, return_tensors="pt")`` padded
        tensors.
    overwrite
        Replace an existing corpus at ``out`` (default: refuse it).
    obs_columns
        ``obs`` columns kept as per-record metadata (corpus output).
    memory_mb
        Chunks sized to this many MiB of working memory.
    n_threads
        numba threads (default: the tokenizer's setting, else numba's).
    progress
        Show a progress bar over cells.

    Raises
    ------
    AnnDataError
        No region information, a malformed matrix (index out of range, negative or non-finite
        values, bad indptr), an unknown layer, a backed CSC matrix too large for ``memory_mb``.

    Examples
    --------
    >>> import anndata, numpy as np, pandas as pd, scipy.sparse as sp
    >>> from genotok import CellSpec, Tokenizer
    >>> tok = Tokenizer(["chr1:0-100", "chr1:100-200", "chr2:0-100"])
    >>> X = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 0]]))
    >>> a = anndata.AnnData(X, var=pd.DataFrame(index=["chr1:50-150", "chr9:0-1", "chr2:5-6"]))
    >>> tokenize_anndata(a, tok).to_list()
    [[0, 1, 2], [3]]
    >>> tokenize_anndata(a, tok, CellSpec(order="value", max_length=1)).to_list()
    [[2], [3]]
    """
    return _by_path("tokenize_anndata", "adata", adata, tokenizer, spec, read, out, overwrite,
                    obs_columns, memory_mb, n_threads, progress)


def _by_path(func, first_name, obj, tokenizer, spec, read, out, overwrite, obs_columns,
             memory_mb, n_threads, progress):
    """An entry point's input opened by the registry (:func:`~genotok.singlecell.sources.
    open_source`: whatever class reads it, with ``read=`` checked to be its options), then
    the driver; the source is closed after."""
    spec = CellSpec() if spec is None else spec
    _refuse_existing(out, overwrite)  # before a fragment file is counted, not after
    with open_source(obj, read, tokenizer=tokenizer, n_threads=n_threads, spec=spec,
                     memory_mb=memory_mb, out=out) as source:
        return tokenize_cells(source, tokenizer, spec, out=out, overwrite=overwrite,
                              obs_columns=obs_columns, memory_mb=memory_mb,
                              n_threads=n_threads, progress=progress)


# ---------------------------------------------------------------------------------- the driver
def _is_genes(tokenizer) -> bool:
    """A vocabulary of named features (a :class:`~genotok.GeneTokenizer`)."""
    return getattr(tokenizer, "tokenizer_type", None) == "genes"


def _features_map(source: CellSource, tokenizer, n_threads):
    """The token ids of each column of ``source`` (:meth:`CellSource.features`): ``(var map,
    feature map)``. A region tokenizer maps the columns' regions (feature map ``None``); a gene
    vocabulary maps their ids (:mod:`.features`: the var map is then of the feature map's new
    columns, and the matrix goes through :func:`.features.remapper` first)."""
    feats = source.features()
    if _is_genes(tokenizer):
        if feats is None:
            raise ParameterError(f"{source.where}: a gene vocabulary maps named features (var "
                             f"ids); the columns of a {source.kind or type(source).__name__} "
                             "input are universe regions: use a region Tokenizer")
        fm = features.feature_map(_Vars(feats) if _is_frame(feats) else feats, tokenizer)
        return features.var_map(fm), fm
    if feats is None:  # column i is the universe's region i; the last column hits nothing
        return per_universe(tokenizer.universe, "universe_columns", _universe_columns), None
    if _is_frame(feats):  # the var frame itself
        feats = _Vars(feats)
    read = source.read if isinstance(source.read, reading.AnnDataOptions) else \
        reading.AnnDataOptions()
    return _adata_var_map(feats, tokenizer, read.region_columns, read.var_names_sep,
                          read.one_based, n_threads), None


def _universe_columns(u) -> _VarMap:
    """The map of a count matrix' columns (the universe's regions, then the column of lines
    without a hit) to token ids; made once per universe (:func:`.fragmatrix.per_universe`),
    so a small file against a large universe does not pay for it on every call."""
    ids = np.arange(u.n_regions, dtype=np.int64)
    hits = Ragged(ids, np.append(np.arange(u.n_regions + 1, dtype=np.int64), u.n_regions))
    return _var_map_from_hits(hits, u.sweep.rank, u.sweep.ids, u.unk_token_id)


@dataclass
class _Vars:
    """A bare ``var`` frame as the var map reads it (an object with ``var``)."""

    var: object


@keywords(elsewhere=fields_elsewhere("tokenize_cells"))
@validated(entry_constraints("tokenize_cells", "source",
                             "a CellSource, or an input opened by open_source"))
def tokenize_cells(source, tokenizer, spec=None, *, read=None, out=None,
                   overwrite: bool = False, obs_columns: Sequence[str] = (),
                   memory_mb: float = 256, n_threads: int | None = None,
                   progress: bool = False):
    """The one driver: a cell source's rows → the tokenizer → the :class:`~genotok.CellSpec`
    → the output (a ``Ragged``, or the store at ``out``).

    ``source`` is a :class:`~genotok.CellSource`, or anything the registry reads (an AnnData,
    a ``.h5ad``, ``.h5mu``, 10x ``.h5`` or fragment file, a registered format: found by
    :func:`~genotok.open_source`, opened with ``read=``, the class's own read options, and
    closed after). :func:`tokenize_anndata`, :func:`~genotok.tokenize_fragments` and
    ``pretokenize``'s cell inputs all run here: the features are mapped to tokens once (a
    region tokenizer: their regions; a :class:`~genotok.GeneTokenizer`: their ids,
    :mod:`.features`), the rows go through the value encodings and the cell kernels chunk by
    chunk (``memory_mb`` of working memory per chunk), condition tokens are prepended
    (``<eos>`` appended), and the batches go to one output call (:func:`_emit`). Parameters
    as :func:`tokenize_anndata`'s; ``out`` may also be an output object
    (:class:`~genotok.singlecell.matrix.CountMatrix`: the rows as a count matrix, how
    :func:`~genotok.fragment_matrix` runs here).

    Examples
    --------
    >>> import genotok
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> src = genotok.open_source(genotok.examples_dir() / "pbmc.h5ad")
    >>> len(tokenize_cells(src, tok)) == src.n_rows
    True
    >>> tokenize_cells(genotok.examples_dir() / "pbmc.h5ad", tok) == tokenize_cells(src, tok)
    True
    """
    if not isinstance(source, CellSource):  # an input: opened by the registry, closed after
        return _by_path("tokenize_cells", "source", source, tokenizer, spec, read, out,
                        overwrite, obs_columns, memory_mb, n_threads, progress)
    if read is not None:
        raise ParameterError(f"tokenize_cells(): read= is how an input is opened; {source!r} is "
                        "opened already (pass the path or object instead)")
    spec = CellSpec() if spec is None else spec
    type(source).check(spec, type(source).__name__)
    if (obs_columns or spec.prepend) and not source.has_obs:
        raise SourceError(f"{source.where}: a {source.kind or type(source).__name__} input has "
                          f"no obs columns (asked: {list(obs_columns) or list(spec.prepend)}); "
                          "only its row names")
    read = source.read
    by_var = spec.order == "var"
    prepend, values = list(spec.prepend), spec.values
    unique = spec.unique if source.features_are == "var" else True
    opt = _kernel_options(tokenizer, spec, "genomic" if by_var else spec.order, unique)
    # the writer stores its own width; uint32 halves the chunks' memory
    opt.dtype = _ids_dtype(np.uint32 if out is not None else getattr(read, "dtype", np.int64),
                           tokenizer)
    chunk_rows = getattr(read, "chunk_rows", None)
    n_threads = tokenizer.n_threads if n_threads is None else n_threads
    if by_var and _is_genes(tokenizer):
        raise ParameterError("order='var' is geniml's region order; a gene vocabulary orders "
                         "by 'genomic' (column order) or 'value'")
    vm, fm = _features_map(source, tokenizer, n_threads)
    # n_vars: the matrix columns the map describes; n_enc: the columns the value encodings
    # see (a gene vocabulary's new columns: known features, then the unknown features' sink)
    n_vars, n_enc = (vm.n_vars, vm.n_vars) if fm is None else (fm.col_new.size, fm.n_new)
    if n_vars != source.n_cols:
        raise AnnDataError(f"{source.where}: {source.n_cols} matrix columns but {n_vars} "
                           "variables")
    kw = spec.encoding_kwargs()
    if fm is not None:
        kw = _named_medians(kw, fm)
    elif isinstance(kw["rank"], tuple) and isinstance(kw["rank"][0], dict):
        raise ParameterError("RankByMedian with medians keyed by feature id needs a "
                         "GeneTokenizer; a region tokenizer takes an array of medians")
    medians_of, layer = source.value_input() if isinstance(kw["rank"], str) else (None, None)
    enc = cellvalues.value_encoding(medians_of, layer=layer, memory_mb=memory_mb, **kw)
    encode = None if enc is None else enc.chunk_encoder(n_enc, source.where)
    opt.encoded = enc is not None
    total = next((s.total for s in spec.encoding if isinstance(s, Normalize)), None)
    totals = None
    if fm is not None:  # the matrix in the new columns first (duplicate ids summed)
        totals = _totals(source, total, tokenizer)  # (one reader, for both paths below)
        remap = features.remapper(fm, source.n_cols, source.where, totals)
        encode = remap if encode is None else _then(remap, encode)
    elif total is not None:
        raise ParameterError("Normalize(total=...) takes each cell's total from obs with a "
                         "GeneTokenizer only")
    encode = _extra_encoder(spec.extra_steps(), encode, n_enc, source.where)
    budget = int(memory_mb * (1 << 20))
    if by_var:  # each chunk also holds a map per stored entry (about twice the working memory)
        budget //= 2
    elif out is None and source.in_memory and chunk_rows is None and _fast_path(vm, opt):
        # in memory to in memory without scratch: one pass spares the concatenation's copy
        budget = 1 << 62
    records = source.obs(obs_columns) if out is not None else None  # columns checked now
    prepare = None
    if by_var:  # the kernels see one pseudo variable per stored entry (see _entries_as_vars)
        back_dtype, opt.dtype = opt.dtype, np.int64
        prepare = lambda ch: _entries_as_vars(ch, vm, tokenizer, back_dtype)
    elif fm is not None:  # the kernels see pseudo token j for new column j: the real ids after
        table = np.append(fm.token_ids, 0).astype(opt.dtype)
        opt.dtype, opt.exact = (np.int32 if table.size < 1 << 31 else np.int64), True
        prepare = lambda ch: (ch, vm, table)
    fused = None
    if fm is not None and _rank_fused(enc, spec, vm, opt):  # Geneformer's, scGPT's: one kernel
        fused = features.ranker(fm, enc, source.n_cols, source.where,
                                totals, keep_from=opt.keep_from,
                                max_tokens=opt.max_tokens, values=opt.values,
                                dtype=table.dtype, blocks=_chunk_blocks)
    stream = _stream(source, vm, opt, budget=budget, chunk_rows=chunk_rows, n_threads=n_threads,
                     progress=progress, desc="tokenizing cells", prepare=prepare, encode=encode,
                     fused=fused)
    if prepend or spec.add_cls:  # <cls> and condition tokens (genotok.singlecell.conditions)
        stream = conditions.prepend_stream(stream, source.obs(prepend), tokenizer, prepend,
                                           spec.condition_unknown, cls=spec.add_cls)
    if spec.add_eos:  # <eos> after each cell (Geneformer V2's framing)
        stream = conditions.append_stream(stream, tokenizer)
    kept = kept_cells(source, spec.cell_filter)
    if kept is not None:  # the filter last: the streams above read obs by source row
        stream = _kept_stream(stream, kept, source.n_rows)
        records = None if records is None else _kept_records(records, kept)
    capacity = _token_bound(source, vm, opt) if prepare is None and not (
        prepend or spec.add_cls or spec.add_eos) else None
    meta = {"records": records, "metadata_columns": obs_columns, "values": values,
            # the corpus header (the spec's JSON: 5,000 medians of a gene preset) is only
            # written, never returned in memory
            "extra": {} if out is None else {source.header: _header(
                spec, enc, tokenizer, **source.settings())},
            "source": source.path, "capacity": capacity}
    return _emit((r for _, r in stream), meta, tokenizer, out, overwrite)


def _rank_fused(enc, spec, vm: _VarMap, opt: _Options) -> bool:
    """Whether a gene vocabulary's chunks can run :func:`.features.ranker`'s one kernel: the
    encoding normalises to a total, then divides by medians (the cells value-ordered, cut to
    their top tokens) or bins by quantiles (the cells in column order, uncut); nothing
    follows; one token per column, no ``<unk>``."""
    if enc is None or enc.normalize != "total" or enc.bins is not None or spec.extra_steps():
        return False
    ranked = enc.medians is not None and opt.order == K.ORDER_VALUE
    binned = enc.quantiles is not None and opt.order == K.ORDER_GENOMIC
    return (ranked or binned) and _fast_path(vm, opt) and _one_token_each(vm, opt)


def _chunk_blocks(indptr: np.ndarray) -> np.ndarray:
    """A chunk's load-balanced row blocks for numba's threads."""
    return _blocks(indptr, 4 * numba.get_num_threads())


def kept_cells(source: CellSource, column: str | None) -> np.ndarray | None:
    """The rows (increasing) whose ``obs[column] == 1`` (:attr:`CellSpec.cell_filter
    <genotok.CellSpec>`, Geneformer's ``filter_pass``: its tokenizer keeps the cells
    ``i == 1``), or ``None``: every row (no filter asked, or the input has no such column).

    Examples
    --------
    >>> import anndata, numpy as np, pandas as pd
    >>> from genotok.singlecell.sources import open_source
    >>> obs = pd.DataFrame({"ok": [1, 0, True, 2]}, index=["a", "b", "c", "d"])
    >>> a = anndata.AnnData(np.ones((4, 1)), obs=obs)
    >>> kept_cells(open_source(a), "ok").tolist(), kept_cells(open_source(a), "absent")
    ([0, 2], None)
    """
    if column is None or not source.has_obs:
        return None
    try:  # the protocol: an unknown column is an error at once, before anything is read
        read = source.obs_values([column])
    except (AnnDataError, SourceError):
        return None
    values = np.asarray(read(0, source.n_rows)[column])
    if values.dtype.kind not in "biufO" or values.dtype.kind == "O" and any(
            isinstance(v, (str, bytes)) for v in values.tolist()):  # "1" == 1 is False: every
        # cell would leave silently (a file's categorical column is objects: None, numbers)
        raise AnnDataError(f"{source.where}: the cell filter obs column {column!r} holds "
                           f"{values.dtype} values ({values[:1].tolist()!r} …); it keeps the "
                           "cells whose value is 1, so it must be numbers or booleans (convert "
                           "it, or CellSpec(cell_filter=None))")
    return np.flatnonzero(np.fromiter((v == 1 for v in values.tolist()), bool,
                                      count=source.n_rows))


def _kept_stream(stream, kept: np.ndarray, n_rows: int):
    """The batches ``(row0, Ragged)`` of source rows, only the rows ``kept``."""
    mask = np.zeros(n_rows, bool)
    mask[kept] = True
    for row0, rows in stream:
        sel = np.flatnonzero(mask[row0:row0 + len(rows)])
        yield row0, rows if sel.size == len(rows) else rows.take(sel)


def _kept_records(read, kept: np.ndarray):
    """``records(lo, hi)`` of the output's rows ``lo:hi`` (source rows ``kept[lo:hi]``)."""
    def records(lo, hi):
        rows = kept[lo:hi]
        if rows.size == 0:
            names, meta = read(0, 0)
            return names, meta
        a = int(rows[0])
        names, meta = read(a, int(rows[-1]) + 1)
        sel = (rows - a).tolist()
        return ([names[i] for i in sel] if names is not None else None,
                {k: [v[i] for i in sel] for k, v in meta.items()})
    return records


def _emit(batches, meta: dict, tokenizer, out, overwrite: bool):
    """The driver's one output step: the token batches and what describes them (``meta``:
    record names and metadata, the value channel, the corpus header) → a store's output at
    ``out`` (returned opened, :func:`_write_store`), an output object's
    ``out.emit(batches, meta, tokenizer)`` (a count matrix,
    :class:`~genotok.singlecell.matrix.CountMatrix`), or an in-memory ``Ragged``."""
    if out is not None and hasattr(out, "emit"):  # an output of its own (matrix.CountMatrix)
        return out.emit(batches, meta, tokenizer)
    if out is not None:
        path, store = _store_out(out)
        if store is not None:
            return _write_store(path, store, batches, meta, tokenizer, overwrite)
        return sink.write_corpus(path, tokenizer, batches, records=meta["records"],
                                 metadata_columns=meta["metadata_columns"],
                                 values=meta["values"], extra=meta["extra"],
                                 source=meta["source"], overwrite=overwrite)
    return sink.collect(batches, "ragged", values=meta["values"],
                        pad_token_id=_pad_id(tokenizer), capacity=meta["capacity"])


def _store_out(out):
    """``out`` as ``(path, store)``: a path is the corpus file (``store`` ``None``); a pair
    ``(directory, format)`` names any store as ``pretokenize(format=)`` does (a registered
    name such as ``"parquet"``, or a configured :class:`~genotok.formats.stores.Store`)."""
    if isinstance(out, tuple):
        from ..formats.stores import get_store

        if len(out) != 2:
            raise ParameterError(f"out= is a path, or a (directory, format) pair; got {out!r}")
        store = get_store(out[1])  # "corpus" too: a directory, as pretokenize's
        if not store.writes_files:
            from ..formats.stores import stores

            raise ParameterError(f"out=: the {store.name!r} store writes no files, so it is no "
                                 "output directory's format; leave out= out for the records in "
                                 "memory, or give a store that writes files: "
                                 f"{', '.join(n for n, c in stores().items() if c.writes_files)}")
        return out[0], store
    if not isinstance(out, (str, os.PathLike)):
        raise ParameterError(f"out= is a path, or a (directory, format) pair such as "
                        f"('cells/', 'parquet'); got {type(out).__name__}")
    return out, None


def _refuse_existing(out, overwrite: bool) -> None:
    """An existing output (``overwrite=False``) and an ``out=`` no store can write are refused
    before anything is read."""
    if out is None or hasattr(out, "emit"):
        return
    path = _store_out(out)[0]  # a bad out= (a store that writes no files) too
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")


def _write_store(path, store, batches, meta: dict, tokenizer, overwrite: bool):
    """The batches as the output of ``store`` in the directory ``path`` (one part, then the
    store's manifest), written under a temporary name and renamed into place, so an error
    leaves nothing and ``overwrite=True`` leaves no file of the output it replaces; returns
    the output opened (:meth:`~genotok.Corpus.open`)."""
    import shutil
    import tempfile

    from ..formats.corpus import Corpus

    final = Path(path)
    if final.exists() and not overwrite:
        raise FileExistsError(f"{final} exists; pass overwrite=True to replace it")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(final)
    records = meta["records"]

    def named():
        row0 = 0
        for rows in batches:
            names, cols = records(row0, row0 + len(rows)) if records is not None else (None, {})
            yield rows, {"names": names,
                         "meta": {k: sink.json_scalars(v) for k, v in cols.items()}}
            row0 += len(rows)

    src = meta["source"]
    sources = [] if src is None else [(os.path.basename(src), {"size": os.path.getsize(src)})]
    try:
        files = sink.write_records(named(), tmp / "cells", tokenizer, store=store,
                                   sources=sources, metadata_columns=meta["metadata_columns"],
                                   values=meta["values"], extra=meta["extra"], overwrite=True)
        store.finish(tmp, files, tokenizer, dict(meta["extra"]))
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old",
                                        dir=final.parent))
            os.replace(final, old / final.name)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Corpus.open(final)


def _pad_id(tokenizer) -> int:
    """The id padding fills with (a gene vocabulary without ``<pad>``: 0)."""
    pad = tokenizer.pad_token_id
    return 0 if pad is None else int(pad)


def _named_medians(kw: dict, fm) -> dict:
    """``rank=`` for a gene vocabulary: medians keyed by feature id become one per new
    column; medians computed from the matrix would be of its columns, not of the features."""
    rank = kw["rank"]
    if rank == "median":
        raise ParameterError("RankByMedian() computes medians per matrix column; with a "
                         "GeneTokenizer give them keyed by feature id: "
                         "RankByMedian({gene id: median})")
    if isinstance(rank, tuple) and isinstance(rank[0], dict):
        return {**kw, "rank": (fm.medians(rank[0]), rank[1])}
    if rank is not None:
        raise ParameterError("with a GeneTokenizer, RankByMedian takes medians keyed by feature id "
                         "({gene id: median}); an array has no feature ids")
    return kw


def _then(first, second):
    return lambda ch: second(first(ch))


def _totals(source: CellSource, column: str | None, tokenizer):
    """``f(lo, hi)`` of each cell's total from ``obs[column]`` of the source
    (:meth:`CellSource.obs`); ``None``: no column asked, or the input has none: the row sums
    then, as Geneformer's tokenizer would need them."""
    if column is None:
        return None
    if tokenizer.settings.unknown_features != "count":
        raise ParameterError("Normalize(total=...) divides by every count of a cell; a "
                         "GeneTokenizer with unknown_features='drop' has removed some")
    if not source.has_obs:
        return None
    try:  # the protocol: an unknown column is an error at once, before anything is read
        read = source.obs_values([column])
    except (AnnDataError, SourceError):
        return None

    def totals(lo: int, hi: int) -> np.ndarray:  # checked before it is converted
        col = np.asarray(read(lo, hi)[column])
        where = f"{source.where}: obs[{column!r}]"
        if col.dtype.kind not in "iuf":
            raise AnnDataError(f"{where}: each cell's total count is a number, got "
                               f"{col.dtype} values (e.g. {col[:3].tolist()!r})")
        col = col.astype(np.float64)
        bad = np.flatnonzero(~((col >= 0) & (col < np.inf)))
        if bad.size:
            raise AnnDataError(f"{where}: cell {lo + int(bad[0])}: total count "
                               f"{col[bad[0]]}; a cell's total is finite and >= 0")
        return col
    totals.column = column
    return totals


def _token_bound(source: _Source, vm: _VarMap, opt: _Options) -> int | None:
    """An upper bound of a matrix's tokens (``None`` when the source does not know its stored
    entries): each kept entry gives at most its variable's tokens (or one ``<unk>``), and a
    row at most one ``<unk>`` more."""
    nnz = getattr(source, "nnz", None)
    if nnz is None or not _fast_path(vm, opt):
        return None
    per_var = int(np.diff(vm.var_ptr).max()) if vm.var_ptr.size > 1 else 0
    return int(nnz) * max(per_var, 1) + source.n_rows


def warmup() -> None:
    """Compile the single-cell kernels on tiny inputs (float32/float64 data, int32 indices).

    Examples
    --------
    >>> warmup()
    """
    vm = _var_map_from_hits(Ragged(np.array([0], np.int64), np.array([0, 1, 1], np.int64)),
                            np.array([0], np.int64), np.array([0], np.int64), 1)
    capped = dataclasses.replace(_options_default(), max_tokens=1)  # the general kernels
    for data in (np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0], np.float64)):
        ch = Chunk(0, np.array([0, 2], np.int64), np.array([0, 1], np.int32), data, 2)
        for opt in (_options_default(), capped):  # the monotone fast path, cell_tokens
            _run_chunk(ch, vm, opt, "warmup")
    K.parse_fragments(np.frombuffer(b"chr1\t1\t2\tA\t1\n", np.uint8))


def _options_default() -> _Options:
    return _Options(K.KEEP_POSITIVE, K.UNK_SET, True, K.ORDER_GENOMIC, 0, K.TRUNC_TOP, 0)



__all__ = ["kept_cells", "tokenize_anndata", "tokenize_cells", "warmup"]
