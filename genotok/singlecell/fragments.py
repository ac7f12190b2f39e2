"""Fragment files (10x ``fragments.tsv[.gz]``) → per-cell tokens: :func:`fragment_counts`,
:func:`tokenize_fragments`.

A fragment file is counted into a cells x tokens matrix by the one streaming counter of
:mod:`.fragmatrix`; that matrix then goes through the same cell kernels as an AnnData
(:mod:`.cells`), its columns being the universe's regions, and the batches to the one sink.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from collections.abc import Iterable

from .._usage import keywords
from ..genes import GeneTokenizer
from ..params import (MEMORY_MB, N_THREADS, PATH, Flag, InstanceOf, Integral, Interval,
                      ParameterError, validated)
from ..tokenizer import Tokenizer
from ..errors import BedParseError, GenotokError, SourceError
from .cells import _refuse_existing, entry_constraints, tokenize_cells
from .chunks import Chunk, _MemorySource, _Source
from .fragmatrix import SPILL_MB, _count, _spill_mb  # noqa: F401  (SPILL_MB: documented here)
from .pairs import _Spilled
from .reading import FragmentOptions
from .sources import CellSource, register_source, source_class
from .spec import CellSpec, fields_elsewhere


#: what the fragment counts take (a :class:`~genotok.FragmentOptions`' fields, spelt out)
COUNTS = {"path": PATH, "tokenizer": [InstanceOf(Tokenizer)],
          "barcodes": [InstanceOf(str, os.PathLike, Iterable), None],
          "min_fragments": [Interval(Integral, 0, None)],
          "block_bytes": [Interval(Integral, 1, None)], "n_threads": N_THREADS,
          "use_count": [Flag()]}


@validated(COUNTS)
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
    check_columns(path)
    return _count(path, tokenizer, mode="fragment", shift=(0, 0), use_count=use_count,
                  barcodes=barcodes, min_fragments=min_fragments, block_bytes=block_bytes,
                  n_threads=n_threads)


@validated({**COUNTS, "memory_mb": MEMORY_MB})
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
    column-5 count with ``use_count``. A repeated universe line counts nowhere (token
    semantics: a hit is the first occurrence's id, in every mode; a count matrix over the
    lines spreads it, :class:`~genotok.singlecell.matrix.CountMatrix`)."""
    check_columns(path)
    return _count(path, tokenizer, mode=mode, shift=shift, use_count=use_count,
                  barcodes=barcodes,
                  min_fragments=min_fragments, block_bytes=block_bytes, n_threads=n_threads,
                  memory_mb=memory_mb, regions=regions, sizes=sizes)


@keywords(elsewhere=fields_elsewhere("tokenize_fragments"))
@validated({**{k: v for k, v in entry_constraints(
    "tokenize_fragments", "path", "a fragment file's path, or what a registered fragment "
    "source reads").items() if k != "obs_columns"}, "memory_mb": [*MEMORY_MB, None]})
def tokenize_fragments(path, tokenizer, spec=None, *, read=None, out=None,
                       overwrite: bool = False, memory_mb: float | None = None,
                       n_threads: int | None = None, progress: bool = False):
    """Per-cell token lists with counts from a 10x fragment file (``.tsv`` or ``.tsv.gz``).

    The file (``chrom start end barcode count`` separated by tabs or by runs of spaces, as
    gtars reads it; ``#`` lines skipped) is
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
    spec = CellSpec() if spec is None else spec  # (the types: entry_constraints)
    if getattr(tokenizer, "tokenizer_type", None) == "genes":  # before the file is counted
        raise TypeError("tokenize_fragments() counts fragments over a universe's regions; a "
                        "GeneTokenizer has none (it maps named features: use a region "
                        "Tokenizer, or tokenize_anndata on a cell x gene matrix)")
    _refuse_existing(out, overwrite)  # before the count, not after
    # the registry's class when it reads fragments (its columns the universe's regions, any
    # base class: a plugin's too), else none found: a text file of fragments
    cls = source_class(path)
    if cls is None and not isinstance(path, (str, os.PathLike)):  # nothing reads it: not a path
        swap = " (did you swap them?)" if isinstance(path, (Tokenizer, GeneTokenizer)) else ""
        raise ParameterError(f"tokenize_fragments: path must be a fragment file's path, or what "
                             f"a registered fragment source reads, got {type(path).__name__}"
                             f"{swap}; the order is tokenize_fragments(path, tokenizer, spec)")
    cls = cls or FragmentSource
    if cls.features_are != "universe":
        what = os.fspath(path) if isinstance(path, (str, os.PathLike)) else type(path).__name__
        raise SourceError(f"tokenize_fragments: {what} is a {cls.kind or 'cell'} input "
                          f"({cls.__name__}: its columns are named features), not fragments "
                          "counted over a universe; read it with tokenize_cells (or "
                          "tokenize_anndata)")
    cls.check(spec, "tokenize_fragments")
    with cls.open(path, read, tokenizer=tokenizer, n_threads=n_threads, spec=spec,
                  memory_mb=memory_mb, out=out) as source:
        rows = tokenize_cells(source, tokenizer, spec, out=out, overwrite=overwrite,
                              n_threads=n_threads, progress=progress)
        return rows if out is not None else (source.names(), rows)


#: gzip's magic (BGZF is gzip with an extra field)
GZIP_MAGIC = b"\x1f\x8b"
#: a strand, the 6th column of the BED6+ peak formats (narrowPeak, broadPeak)
STRANDS = (b".", b"+", b"-")


def looks_like_peaks(line: bytes) -> int:
    """The number of columns of ``line`` when it is a peak line (narrowPeak, broadPeak: seven
    columns or more, the 6th a strand), else 0; fields split as the fragment parser splits
    them (the first separator decides: tabs, or runs of spaces).

    >>> looks_like_peaks(b"chr1\\t5\\t20\\tp1\\t500\\t.\\t8.1\\t-1\\t2.3\\t40")
    10
    >>> looks_like_peaks(b"chr1\\t5\\t20\\tAAAC-1\\t1\\t.")  # gtars' fragment files
    0
    """
    line = line.rstrip(b"\r")
    first = next((c for c in line if c in b"\t "), 9)
    fields = [t for t in line.split(b" ") if t] if first == 32 else line.split(b"\t")
    return len(fields) if len(fields) >= 7 and fields[5] in STRANDS else 0


def check_columns(path, head_bytes: int = 1 << 16) -> None:
    """Refuse a file whose first data line is a peak line (:func:`looks_like_peaks`: a
    narrowPeak or broadPeak file given for a fragment file, each peak taken as a cell), naming
    the file and the line. A file that cannot be read is left for the scan to report.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "peaks.tsv"
    >>> _ = p.write_text("chr1\\t5\\t20\\tpeak1\\t500\\t.\\t8.1\\t-1\\t2.3\\t40\\n")
    >>> check_columns(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.BedParseError: .../peaks.tsv:1: 10 columns, the 6th a strand: a peak file ...
    """
    from .._io import open_binary, reading

    path = os.fspath(path)
    if not os.path.isfile(path):
        return
    try:
        with reading(path), open_binary(path) as fh:
            head = fh.read(head_bytes)
    except (OSError, GenotokError):
        return
    for number, line in enumerate(head.split(b"\n")[:-1], 1):  # whole lines only
        if line.startswith(b"#") or not line.strip():
            continue
        n = looks_like_peaks(line)
        if n:
            raise BedParseError(path, number, f"{n} columns, the 6th a strand: a peak file "
                                "(narrowPeak, broadPeak), not a fragment file (chrom, start, "
                                "end, barcode, count). Tokenize it as a region set with "
                                "Tokenizer.encode, encode_batch or pretokenize")
        return


class FragmentSource(CellSource):
    """A 10x fragment file (``chrom start end barcode count``, ``.tsv[.gz]``; or a gzip or
    BGZF file of five such columns whatever its name), counted into a cells × (universe
    regions + unknown) matrix when opened (:func:`fragment_counts`' matrix; with ``out=`` or
    ``memory_mb`` spilled to disk and read back a bucket of cells at a time): the columns
    are the universe's tokens, the rows the barcodes; there are no ``obs`` columns.

    Examples
    --------
    >>> import genotok
    >>> from genotok.singlecell.sources import source_class
    >>> source_class(genotok.examples_dir() / "fragments.tsv.gz") is FragmentSource
    True
    """

    kind = "fragments"
    suffixes = (".tsv", ".tsv.gz", ".tsv.bgz")
    magic = (GZIP_MAGIC,)
    options = FragmentOptions
    features_are = "universe"
    has_obs = False
    header = "fragments"

    def __init__(self, path, read: FragmentOptions, barcodes: list, X, mode: str,
                 n_fragments=None):
        self.path = self.where = os.fspath(path)
        self.read, self.mode, self.barcodes, self.X = read, mode, barcodes, X
        #: the fragment lines of each kept cell (int64)
        self.n_fragments = n_fragments
        if isinstance(X, _Spilled):  # a bucket of cells at a time, for each pass
            self.matrix = _ChunkedSource(X.chunks, X.shape, self.where)
        else:
            self.matrix = _MemorySource(X, self.where)
        self.n_rows, self.n_cols = self.matrix.n_rows, self.matrix.n_cols

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        """A gzip (or BGZF) file whose first data line has the five fragment columns
        (separated by tabs or by runs of spaces)."""
        if not head.startswith(GZIP_MAGIC):
            return False
        import zlib

        try:
            text = zlib.decompressobj(31).decompress(head)
        except zlib.error:
            return False
        for line in text.split(b"\n")[:-1]:  # whole lines only
            if line.startswith(b"#") or not line.strip():
                continue
            line = line.rstrip(b"\r")
            spaced = next((c for c in line if c in (9, 32)), 9) == 32  # the parser's rule
            f = line.split() if spaced and 9 not in line else line.split(b"\t")
            return (len(f) == 5 and f[1].isdigit() and f[2].isdigit() and f[4].isdigit()
                    and not f[3].isdigit())
        return False

    @classmethod
    def check(cls, spec, func: str) -> None:
        if spec.prepend or spec.add_cls:
            raise ValueError(f"{func}: prepend= and add_cls= take obs columns, which a "
                             "fragment file has not")
        if spec.order == "var":
            raise ValueError(f"{func}: order='var' is geniml's order of a matrix' "
                             "stored entries; a fragment file has none")

    @classmethod
    def open(cls, obj, read=None, *, tokenizer=None, n_threads=None, spec=None,
             memory_mb=None, out=None, **context) -> FragmentSource:
        """Count the file over ``tokenizer``'s universe (``spec.use_count``: weigh each line
        by its count); ``memory_mb`` bounds the counted pairs held (default: none, or
        :data:`SPILL_MB` when writing ``out``)."""
        if tokenizer is None:
            raise TypeError(f"{os.fspath(obj)}: a fragment file is counted over a tokenizer's "
                            "universe: open it with tokenizer=")
        read = cls.read_options(read)
        mode = "fragment" if read.mode is None else read.mode
        names, X, nfrag = _counts(obj, tokenizer, barcodes=read.barcodes,
                              min_fragments=read.min_fragments, block_bytes=read.block_bytes,
                              n_threads=n_threads, mode=mode, shift=read.shift,
                              memory_mb=_spill_mb(memory_mb, out),
                              use_count=bool(spec is not None and spec.use_count),
                              regions=read.regions, sizes=read.fragment_size)
        return cls(obj, read, names, X, mode, nfrag)

    def features(self):
        return None

    def names(self) -> list[str]:
        return list(self.barcodes)

    def settings(self) -> dict:
        settings = {"min_fragments": self.read.min_fragments, "mode": self.mode,
                    "shift": list(self.read.shift)}
        for key in ("regions", "fragment_size"):  # what was read of the file, when not all
            if getattr(self.read, key) is not None:
                settings[key] = list(getattr(self.read, key))
        return settings

    def close(self) -> None:
        if isinstance(self.X, _Spilled):
            self.X.close()


register_source(FragmentSource)


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
                yield Chunk(row0 + ch.row0, ch.indptr, ch.indices, ch.data, self.n_cols)
            row0 += m.shape[0]
        if row0 != self.n_rows:
            raise AssertionError(f"{self.where}: {row0} rows in the chunks, not {self.n_rows}")


__all__ = ["FragmentSource", "fragment_counts", "tokenize_fragments"]
