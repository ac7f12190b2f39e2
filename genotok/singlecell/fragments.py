"""Fragment files (10x ``fragments.tsv[.gz]``) → per-cell tokens: :func:`fragment_counts`,
:func:`tokenize_fragments`.

A fragment file is counted into a cells x tokens matrix by the one streaming counter of
:mod:`.fragmatrix`; that matrix then goes through the same cell kernels as an AnnData
(:mod:`.cells`), its columns being the universe's regions, and the batches to the one sink.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .. import sink
from ..ragged import Ragged
from . import values as cellvalues
from .cells import _check_call, _extra_encoder, _header, _options, _stream
from .fragmatrix import (SPILL_MB, _count, _spill_mb,  # noqa: F401  (SPILL_MB: documented here)
                         per_universe)
from .pairs import _Spilled
from .reading import FragmentOptions
from .sources import _Chunk, _MemorySource, _Source
from .varnames import _var_map_from_hits


def fragment_counts(path, tokenizer, *, barcodes: Sequence[str] | None = None,
                    min_fragments: int = 1, block_bytes: int = 32 << 20,
                    n_threads: int | None = None, use_count: bool = False):
    """Stream a fragment file into a cell × token count matrix.

    Returns ``(barcodes, X, n_fragments)``: the kept cells, a ``scipy.sparse.csr_matrix`` of
    shape ``(cells, n_regions + 1)`` (column ``n_regions`` counts the fragments that hit no
    region) and the number of fragment lines of each kept cell. Each fragment line adds 1 to
    every token it hits (``use_count=True``: its column-5 count). See
    :func:`tokenize_fragments`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from genotok import Tokenizer
    >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
    >>> _ = p.write_text("chr1\\t5\\t20\\tAAA-1\\t2\\nchr9\\t1\\t2\\tAAA-1\\t1\\n")
    >>> bcs, X, n = fragment_counts(p, Tokenizer(["chr1:0-100"]))
    >>> bcs, X.toarray().tolist(), n.tolist()
    (['AAA-1'], [[1.0, 1.0]], [2])
    """
    return _count(path, tokenizer, mode="fragment", shift=(0, 0), use_count=use_count,
                  barcodes=barcodes, min_fragments=min_fragments, block_bytes=block_bytes,
                  n_threads=n_threads, miss_column=True, repeats=False)[:3]


def fragment_count_chunks(path, tokenizer, *, barcodes: Sequence[str] | None = None,
                          min_fragments: int = 1, memory_mb: float = SPILL_MB,
                          block_bytes: int = 32 << 20, n_threads: int | None = None,
                          use_count: bool = False):
    """:func:`fragment_counts`' matrix a bucket of cells at a time, in bounded memory.

    A generator: the file streams when the first chunk is asked for. The counted pairs stay
    in memory up to ``memory_mb`` (16 bytes each), beyond it they spill to temporary files
    (``TMPDIR``), and the matrix is read back as CSR chunks of up to 1,024 cells in the
    order of :func:`fragment_counts`' rows, each a ``scipy.sparse.csr_matrix`` of shape
    ``(cells, n_regions + 1)``. The files go when the generator ends, is closed or fails.
    ``pretokenize`` with :class:`~genotok.RankByMedian` takes a fragment file's medians this
    way.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from genotok import Tokenizer
    >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
    >>> _ = p.write_text("chr1\\t5\\t20\\tAAA-1\\t2\\nchr9\\t1\\t2\\tBBB-1\\t1\\n")
    >>> [X.toarray().tolist() for X in fragment_count_chunks(p, Tokenizer(["chr1:0-100"]))]
    [[[1.0, 0.0], [0.0, 1.0]]]
    """
    counts = _counts(path, tokenizer, barcodes=barcodes, min_fragments=min_fragments,
                     block_bytes=block_bytes, n_threads=n_threads, mode="fragment",
                     shift=(0, 0), memory_mb=memory_mb, use_count=use_count)[1]
    try:
        yield from counts.chunks()
    finally:
        counts.close()


def _counts(path, tokenizer, *, barcodes, min_fragments, block_bytes, n_threads, mode, shift,
            memory_mb=None, use_count: bool = False, regions=None, sizes=None):
    """The cells x (universe regions + unknown) count matrix of a fragment file (a spilled
    one, read back by buckets of cells, with ``memory_mb``): each line counts once, or its
    column-5 count with ``use_count``."""
    whole = mode == "fragment" and tuple(shift) == (0, 0)  # fragment_counts' matrix
    return _count(path, tokenizer, mode=mode, shift=shift, use_count=use_count,
                  barcodes=barcodes,
                  min_fragments=min_fragments, block_bytes=block_bytes, n_threads=n_threads,
                  miss_column=True, repeats=not whole, memory_mb=memory_mb,
                  regions=regions, sizes=sizes)[:3]


def tokenize_fragments(path, tokenizer, spec=None, *, read=None, out=None,
                       overwrite: bool = False, memory_mb: float | None = None,
                       n_threads: int | None = None, progress: bool = False):
    """Per-cell token lists with counts from a 10x fragment file (``.tsv`` or ``.tsv.gz``).

    The file (tab-separated ``chrom start end barcode count``; ``#`` lines skipped) is
    streamed in blocks; each fragment line adds 1 to every token it hits in its cell (as gtars
    and SnapATAC2 count; ``CellSpec(use_count=True)``: its column-5 count, a missing count
    counting 1). Memory is bounded by one block plus the distinct (cell, token) pairs, i.e. the
    size of the result, or by ``memory_mb``. Cells are in order of first appearance (or of the
    allow-list). Unknown handling is per cell, not per fragment: ``"set"`` gives a cell without
    any hit one ``<unk>`` (valued with its total count), ``"region"`` one ``<unk>`` valued with
    the count of its fragments that hit nothing, ``"drop"`` nothing. The spec's
    ``min_count``, ``order``, ``max_length``/``truncation`` and value encodings act on the
    per-cell token counts as in :func:`tokenize_anndata`.

    Parameters
    ----------
    spec
        A :class:`~genotok.CellSpec` (default ``CellSpec()``; its ``prepend``/``add_cls``
        need ``obs`` columns, which a fragment file has not).
    read
        :class:`~genotok.FragmentOptions`: the barcode allow-list, ``min_fragments``, the
        ``mode`` (``"fragment"`` by default, or ``"insertion"``: each fragment's two Tn5 cut
        sites counted once each, SnapATAC2's way; see :mod:`genotok.singlecell.fragmatrix`),
        ``shift`` and the block size.
    out
        A corpus path: the cells are written (barcodes as record names) and the opened
        :class:`~genotok.Corpus` is returned. Without it, ``(barcodes, Ragged)``.
    overwrite
        Replace an existing corpus at ``out`` (default: refuse it).
    memory_mb
        Bound on the counted (cell, token) pairs held in memory (16 bytes each): beyond it they
        spill to disk (``TMPDIR``) by buckets of cells and the cells are then tokenized a
        bucket at a time, so memory stays one block plus ``memory_mb`` plus one bucket whatever
        the file's size. Default: no bound (the pairs are the result's size), except with
        ``out=``: 1024 MiB (:data:`SPILL_MB`).

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
    >>> from genotok import CellSpec, Tokenizer
    >>> p = os.path.join(tempfile.mkdtemp(), "f.tsv")
    >>> from pathlib import Path
    >>> _ = Path(p).write_text("# h\\nchr1\\t5\\t20\\tAAA-1\\t2\\nchr1\\t150\\t160\\tAAA-1\\t1\\n"
    ...                       "chr9\\t1\\t2\\tCCC-1\\t1\\n")
    >>> tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    >>> names, rows = tokenize_fragments(p, tok, CellSpec(values=True))
    >>> names, rows.to_list(), rows.values.tolist()
    (['AAA-1', 'CCC-1'], [[0, 1], [2]], [1.0, 1.0, 1.0])
    >>> tokenize_fragments(p, tok, CellSpec(values=True, use_count=True))[1].values.tolist()
    [2.0, 1.0, 1.0]
    """
    spec, read = _check_call("tokenize_fragments", "path", path, tokenizer, spec, read,
                             FragmentOptions)
    if spec.prepend or spec.add_cls:
        raise ValueError("tokenize_fragments: prepend= and add_cls= take obs columns, which a "
                         "fragment file has not")
    if spec.order == "var":
        raise ValueError("tokenize_fragments: order='var' is geniml's order of a matrix' "
                         "stored entries; a fragment file has none")
    mode = "fragment" if read.mode is None else read.mode
    opt = _options(tokenizer, spec.min_count, spec.order, spec.seed, spec.max_length,
                   spec.truncation, True, spec.unknown, spec.values)
    if out is not None and os.path.exists(out) and not overwrite:  # before the count, not after
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    names, X, _ = _counts(path, tokenizer, barcodes=read.barcodes,
                          min_fragments=read.min_fragments, block_bytes=read.block_bytes,
                          n_threads=n_threads, mode=mode, shift=read.shift,
                          memory_mb=_spill_mb(memory_mb, out), use_count=spec.use_count,
                          regions=read.regions, sizes=read.fragment_size)
    settings = {"min_fragments": read.min_fragments, "mode": mode, "shift": list(read.shift)}
    for key in ("regions", "fragment_size"):  # what was read of the file, when not all
        if getattr(read, key) is not None:
            settings[key] = list(getattr(read, key))
    try:
        return _tokens(path, tokenizer, names, X, opt, out, spec, progress, overwrite,
                       n_threads, settings)
    finally:
        if isinstance(X, _Spilled):
            X.close()


def _tokens(path, tokenizer, names, X, opt, out, spec, progress, overwrite, n_threads,
            settings):
    """The cells of a counted fragment file (a matrix, or a spilled one) → tokens."""
    u = tokenizer.universe
    vm = per_universe(u, "fragment_var_map", _fragment_var_map)
    kw = spec.encoding_kwargs()
    rank, values = kw["rank"], spec.values
    if isinstance(X, _Spilled):  # a bucket of cells at a time, for each pass
        source = _ChunkedSource(X.chunks, X.shape, os.fspath(path))
        medians_of = (_anndata_of(m) for m in X.chunks()) if isinstance(rank, str) else None
        if medians_of is not None and X.shape[0] == 0:  # no chunk: the medians of no cells
            import scipy.sparse as sp

            medians_of = _anndata_of(sp.csr_matrix(X.shape, dtype=np.float32))
    else:
        source = _MemorySource(X, os.fspath(path))
        medians_of = _anndata_of(X) if isinstance(rank, str) else None
    enc = cellvalues.value_encoding(medians_of, **kw)
    encode = None if enc is None else enc.chunk_encoder(source.n_cols, source.where)
    stream = _stream(source, vm, opt, budget=256 << 20, chunk_rows=None,
                     n_threads=tokenizer.n_threads if n_threads is None else n_threads,
                     progress=progress, desc="tokenizing cells",
                     encode=_extra_encoder(spec.extra_steps(), encode, source.n_cols))
    if out is not None:
        def obs_read(lo, hi):
            return names[lo:hi], {}

        extra = {"fragments": _header(spec, enc, tokenizer, **settings)}
        return sink.write_corpus(out, tokenizer, (r for _, r in stream), records=obs_read,
                                 values=values, extra=extra, source=os.fspath(path),
                                 overwrite=overwrite)
    return names, sink.collect((r for _, r in stream), "ragged", values=values,
                               pad_token_id=u.pad_token_id)


def _fragment_var_map(u):
    """The cell kernels' map of a count matrix' columns (the universe's regions, then the
    column of fragments without a hit) to token ids; made once per universe."""
    ids = np.arange(u.n_regions, dtype=np.int64)
    hits = Ragged(ids, np.append(np.arange(u.n_regions + 1, dtype=np.int64), u.n_regions))
    return _var_map_from_hits(hits, u.sweep.rank, u.sweep.ids, u.unk_token_id)


class _ChunkedSource(_Source):
    """A matrix handed over as CSR row chunks in row order (a count matrix spilled to disk,
    read back a bucket of cells at a time); ``make_chunks()`` starts a pass over them."""

    def __init__(self, make_chunks, shape: tuple[int, int], where: str):
        self.make_chunks, self.where = make_chunks, where
        self.n_rows, self.n_cols = int(shape[0]), int(shape[1])

    def chunks(self, budget, per_nnz, chunk_rows, rows=None):
        if rows is not None:
            raise AssertionError(f"{self.where}: a chunked matrix is read in order only")
        row0 = 0
        for m in self.make_chunks():
            if m.shape[1] != self.n_cols:
                raise AssertionError(f"{self.where}: a chunk of {m.shape[1]} columns, not "
                                     f"{self.n_cols}")
            for ch in _MemorySource(m, self.where).chunks(budget, per_nnz, chunk_rows):
                yield _Chunk(row0 + ch.row0, ch.indptr, ch.indices, ch.data)
            row0 += m.shape[0]
        if row0 != self.n_rows:
            raise AssertionError(f"{self.where}: {row0} rows in the chunks, not {self.n_rows}")


def _anndata_of(X):
    """A bare AnnData around a matrix (no copy), for the value encodings' medians pass."""
    import anndata

    return anndata.AnnData(X)


__all__ = ["fragment_counts", "tokenize_fragments"]
