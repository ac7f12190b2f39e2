"""Cell Ranger matrix folders by path: :class:`MtxSource`.

Both layouts, each file gzipped or not:

- ``filtered_peak_bc_matrix/`` (Cell Ranger ATAC): ``matrix.mtx``, ``peaks.bed`` (the
  features: ``chrom``, ``start``, ``end``) and ``barcodes.tsv``;
- ``filtered_feature_bc_matrix/`` (Cell Ranger 3+, ARC / multiome): ``matrix.mtx.gz``,
  ``features.tsv.gz`` (``id``, ``name``, ``feature_type``, and for ARC ``chrom``, ``start``,
  ``end``) and ``barcodes.tsv.gz``; Cell Ranger 2's ``genes.tsv`` (``id``, ``name``) too.

The barcodes are the cells' names; the features are ``var``: indexed by their id, with
``gene_symbols`` and ``feature_types`` columns as ``scanpy.read_10x_mtx(path,
var_names="gene_ids")`` makes them, and ``chrom``/``start``/``end`` where the file has them.
A folder holding several feature types is read through one of them
(:class:`MtxOptions` ``feature_type``; by default ``"Peaks"`` for a region tokenizer and
``"Gene Expression"`` for a gene vocabulary, which is what the presets work on).

The matrix is read out of core
------------------------------
A MatrixMarket file of 10x is features x barcodes, one ``feature barcode value`` line per
stored entry (1-based), so a cell's entries are not contiguous in general. A first pass over
the file (in blocks of lines, under the memory budget) checks every line and every index and
counts each cell's entries (the CSR ``indptr``). A file sorted by barcode (as Cell Ranger
writes it) is then read again as it stands, cut into row chunks; any other order is sorted
once into a temporary memory-mapped CSR beside nothing else (a counting sort: each block's
entries scattered to their cells' slots), removed by :meth:`MtxSource.close`. Each chunk is
summed over duplicate entries and sorted by feature, as scipy makes the CSR that scanpy reads.

Nothing in the files is trusted: a malformed header, a line that is not three numbers, an
index outside the size line's shape, a count of lines that disagrees with it, or a damaged
``.gz`` is an :class:`~genotok.errors.AnnDataError` naming the file and the line, before scipy
or a kernel sees an index.

Examples
--------
>>> import genotok
>>> from genotok.singlecell.sources import source_class
>>> MtxSource.kind, source_class(genotok.examples_dir()) is None
('10x-mtx', True)
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import AnnDataError
from ..params import InstanceOf
from . import chunks as C
from . import sources as S
from .reading import AnnDataOptions

PEAKS, GENES = "Peaks", "Gene Expression"
#: the file of each role, in the order they are looked for (gzipped first, as Cell Ranger 3+)
FILES = {"matrix": ("matrix.mtx.gz", "matrix.mtx"),
         "barcodes": ("barcodes.tsv.gz", "barcodes.tsv"),
         "features": ("features.tsv.gz", "features.tsv", "peaks.bed.gz", "peaks.bed",
                      "genes.tsv.gz", "genes.tsv")}
#: lines per block of a pass over the matrix (at most; fewer under a small memory budget)
BLOCK_LINES = 1 << 20
_FIELDS = {"integer", "real", "pattern", "double"}


@dataclass(frozen=True)
class MtxOptions(AnnDataOptions):
    """:class:`~genotok.AnnDataOptions` for a Cell Ranger matrix folder, and which features
    are its columns: ``feature_type`` (``"Peaks"``, ``"Gene Expression"``, …; ``None``: the
    tokenizer's kind decides, see :mod:`genotok.singlecell.cellranger`).

    Examples
    --------
    >>> MtxOptions(feature_type="Peaks").feature_type
    'Peaks'
    """

    feature_type: str | None = None

    name: ClassVar[str] = "10x-mtx"
    CONSTRAINTS: ClassVar[dict] = {**AnnDataOptions.CONSTRAINTS,
                                   "feature_type": [InstanceOf(str), None]}


def find_files(path: str) -> dict | None:
    """The matrix, barcodes and features files of a folder (``{role: path}``), or ``None``
    when it is not a Cell Ranger matrix folder.

    >>> find_files(".") is None
    True
    """
    out = {}
    for role, names in FILES.items():
        hit = next((os.path.join(path, n) for n in names
                    if os.path.isfile(os.path.join(path, n))), None)
        if hit is None:
            return None
        out[role] = hit
    return out


def _errors(where: str):
    """A damaged ``.gz`` or an unreadable file → an AnnDataError naming it."""
    return C.read_errors(where, catch=(OSError, EOFError, zlib.error, UnicodeDecodeError,
                                       ValueError))


def _open(path: str):
    return gzip.open(path, "rt", encoding="utf-8", newline="") if path.endswith(".gz") else \
        open(path, encoding="utf-8", newline="")


def _lines(path: str) -> list[str]:
    with _errors(path), _open(path) as fh:
        lines = fh.read().splitlines()
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass
class _Header:
    field: str
    n_features: int
    n_barcodes: int
    nnz: int
    lines: int  # header lines, the size line included


def _header(path: str) -> _Header:
    """The banner and size line of a MatrixMarket file, checked."""
    with _errors(path), _open(path) as fh:
        banner = fh.readline()
        words = banner.lower().split()
        if len(words) != 5 or words[0] != "%%matrixmarket" or words[1] != "matrix":
            raise AnnDataError(f"{path}:1: not a MatrixMarket header ({banner.strip()[:60]!r})")
        if words[2] != "coordinate" or words[3] not in _FIELDS or words[4] != "general":
            raise AnnDataError(f"{path}:1: genotok reads 'matrix coordinate integer|real|"
                               f"pattern general', got {' '.join(words[1:])!r}")
        n = 1
        for line in fh:
            n += 1
            if line.startswith("%"):
                continue
            size = line.split()
            if len(size) != 3 or not all(s.isdigit() for s in size):
                raise AnnDataError(f"{path}:{n}: the size line must be three non-negative "
                                   f"integers (features barcodes entries), got {line.strip()!r}")
            rows, cols, nnz = map(int, size)
            if max(rows, cols, nnz) >= 2**62:
                raise AnnDataError(f"{path}:{n}: sizes {size} are too large")
            return _Header(words[3], rows, cols, nnz, n)
    raise AnnDataError(f"{path}: no size line after the header")


def _blocks(path: str, head: _Header, block: int) -> Iterator[tuple[int, np.ndarray, np.ndarray,
                                                                     np.ndarray]]:
    """``(first line, feature, barcode, value)`` of each block of entry lines, every index
    checked (0-based on return) and every line checked to be numbers; the entry count checked
    against the size line."""
    import pandas as pd

    n_fields = 2 if head.field == "pattern" else 3
    seen = 0
    with _errors(path), _open(path) as fh:
        for _ in range(head.lines):
            fh.readline()
        try:
            reader = pd.read_csv(fh, sep=r"\s+", header=None, names=list(range(n_fields)),
                                 chunksize=block, skip_blank_lines=False, comment=None,
                                 engine="c")
            for df in reader:
                line0 = head.lines + seen + 1
                if seen + len(df) > head.nnz:
                    raise AnnDataError(f"{path}:{head.lines + head.nnz + 1}: more entries than "
                                       f"the size line's {head.nnz}")
                r = _integers(df[0], path, line0, "feature index", head.n_features)
                c = _integers(df[1], path, line0, "barcode index", head.n_barcodes)
                v = (np.ones(len(df), np.float32) if n_fields == 2 else
                     _numbers(df[2], path, line0))
                seen += len(df)
                yield line0, r, c, v
        except pd.errors.ParserError as exc:
            m = re.search(r"line (\d+)", str(exc))
            at = f":{head.lines + int(m.group(1))}" if m else ""
            raise AnnDataError(f"{path}{at}: not a line of {n_fields} numbers ({exc})") from None
        except pd.errors.EmptyDataError:
            pass
    if seen != head.nnz:
        raise AnnDataError(f"{path}: {seen} entry lines, but the size line says {head.nnz}")


def _first_bad(bad: np.ndarray, path: str, line0: int, what: str, col) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AnnDataError(f"{path}:{line0 + i}: {what} {col.iloc[i]!r} is not valid")


def _integers(col, path: str, line0: int, what: str, n: int) -> np.ndarray:
    """A column of 1-based indices in ``[1, n]`` → 0-based int64 (else the first bad line)."""
    import pandas as pd

    a = col.to_numpy()
    if a.dtype.kind not in "iu":
        num = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        _first_bad(~np.isfinite(num) | (num != np.floor(num)), path, line0,
                   f"{what} (not an integer)", col)
        _first_bad((num < 1) | (num > n), path, line0, f"{what} (outside [1, {n}])", col)
        a = num.astype(np.int64)
    bad = (a < 1) | (a > n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AnnDataError(f"{path}:{line0 + i}: {what} {int(a[i])} is outside [1, {n}] (the "
                           "size line's shape)")
    return a.astype(np.int64) - 1


def _numbers(col, path: str, line0: int) -> np.ndarray:
    import pandas as pd

    a = col.to_numpy()
    if a.dtype.kind not in "iuf" or (a.dtype.kind == "f" and np.isnan(a).any()):
        num = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        _first_bad(np.isnan(num), path, line0, "value (not a number)", col)
        a = num
    return a.astype(np.float32)  # as scanpy reads a MatrixMarket file


# ---------------------------------------------------------------------------------- features
def _features(path: str, n: int):
    """The ``var`` frame of a features file (``features.tsv``, ``genes.tsv``, ``peaks.bed``)."""
    import pandas as pd

    lines = _lines(path)
    if len(lines) != n:
        raise AnnDataError(f"{path}: {len(lines)} features, but the matrix has {n} rows")
    rows = [ln.split("\t") for ln in lines]
    base = os.path.basename(path).split(".")[0]
    width = {"peaks": 3, "genes": 2}.get(base, 3)
    for i, r in enumerate(rows):
        if len(r) < width or any(not x for x in r[:width]):
            raise AnnDataError(f"{path}:{i + 1}: expected {width} tab-separated fields, got "
                               f"{lines[i][:80]!r}")
    if base == "peaks":
        chrom, start, end = (np.array([r[k] for r in rows], dtype=object) for k in range(3))
        s, e = _coordinates(start, path), _coordinates(end, path)
        ids = [f"{c}:{a}-{b}" for c, a, b in zip(chrom, s, e)]
        return pd.DataFrame({"chrom": chrom, "start": s, "end": e},
                            index=pd.Index(ids, dtype=object))
    var = pd.DataFrame({"gene_symbols": np.array([r[1] for r in rows], dtype=object)},
                       index=pd.Index([r[0] for r in rows], dtype=object))
    var["feature_types"] = np.array([r[2] if len(r) > 2 else GENES for r in rows], dtype=object)
    if rows and all(len(r) >= 6 for r in rows):
        var["chrom"] = np.array([r[3] for r in rows], dtype=object)
        var["start"] = _coordinates(np.array([r[4] for r in rows], dtype=object), path, True)
        var["end"] = _coordinates(np.array([r[5] for r in rows], dtype=object), path, True)
    return var


def _coordinates(text: np.ndarray, path: str, blank_ok: bool = False) -> np.ndarray:
    """Decimal coordinates (``-1`` for a blank one where ``blank_ok``: a gene without a
    location in an ARC file), else an AnnDataError naming the line."""
    out = np.empty(text.size, np.int64)
    for i, t in enumerate(text):
        t = t.strip()
        if t.isdigit() and len(t) < 19:
            out[i] = int(t)
        elif blank_ok and t in ("", "NA", "."):
            out[i] = -1
        else:
            raise AnnDataError(f"{path}:{i + 1}: coordinate {t!r} is not a non-negative "
                               "integer")
    return out


# ---------------------------------------------------------------------------------- the source
class MtxSource(S.CellSource):
    """A Cell Ranger matrix folder (``filtered_peak_bc_matrix/``,
    ``filtered_feature_bc_matrix/``) by path: barcodes are the cells, the features of one type
    the columns, read out of core in row chunks (see :mod:`genotok.singlecell.cellranger`).

    Examples
    --------
    >>> MtxSource.kind, MtxSource.options.__name__
    ('10x-mtx', 'MtxOptions')
    """

    kind = "10x-mtx"
    options = MtxOptions
    has_obs = False
    header = "anndata"

    def __init__(self, path, read: MtxOptions | None = None, tokenizer=None):
        read = type(self).read_options(read)
        self.path = self.where = os.fspath(path)
        for name in ("layer", "modality"):
            if getattr(read, name) is not None:
                raise AnnDataError(f"{self.path}: {name}={getattr(read, name)!r} asked, but a "
                                   "Cell Ranger matrix folder has one matrix")
        if read.raw:
            raise AnnDataError(f"{self.path}: a Cell Ranger matrix folder has no raw matrix; "
                               "leave raw unset")
        files = find_files(self.path) if os.path.isdir(self.path) else None
        for role, names in FILES.items():  # matrix.mtx and matrix.mtx.gz: which one is meant?
            found = [n for n in names if os.path.isfile(os.path.join(self.path, n))]
            if files is not None and len(found) > 1:
                raise AnnDataError(f"{self.path}: holds {' and '.join(found)}: one {role} file "
                                   "per folder (remove the other)")
        if files is None:
            raise AnnDataError(f"{self.path}: not a Cell Ranger matrix folder (matrix.mtx[.gz], "
                               "barcodes.tsv[.gz] and features.tsv[.gz], peaks.bed or genes.tsv)")
        self.read, self.files = read, files
        self.head = _header(files["matrix"])
        self.barcodes = [ln.split("\t", 1)[0] for ln in _lines(files["barcodes"])]
        if len(self.barcodes) != self.head.n_barcodes:
            raise AnnDataError(f"{files['barcodes']}: {len(self.barcodes)} barcodes, but the "
                               f"matrix has {self.head.n_barcodes} columns")
        var = _features(files["features"], self.head.n_features)
        self.feature_type = self._feature_type(var, tokenizer)
        keep = np.ones(len(var), bool) if self.feature_type is None else \
            np.asarray(var["feature_types"] == self.feature_type)
        self.var = var[keep]
        self.new = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        self.n_rows, self.n_cols = self.head.n_barcodes, int(keep.sum())
        self.nnz = self.head.nnz  # an upper bound
        self._indptr = self._tmp = None
        self._sorted = False

    def _feature_type(self, var, tokenizer) -> str | None:
        asked = getattr(self.read, "feature_type", None)
        types = list(dict.fromkeys(var["feature_types"])) if "feature_types" in var else []
        if asked is not None:
            if asked not in types:
                raise AnnDataError(f"{self.files['features']}: no feature of type {asked!r}; "
                                   f"the types are {types or [PEAKS]}")
            return asked
        if len(types) <= 1:
            return None
        genes = getattr(tokenizer, "tokenizer_type", None) == "genes"
        want = GENES if genes else PEAKS
        if want not in types:
            raise AnnDataError(f"{self.files['features']}: no {want!r} features for a "
                               f"{'gene vocabulary' if genes else 'region tokenizer'} (the "
                               f"types are {types}); name one with MtxOptions(feature_type=)")
        return want

    @classmethod
    def open(cls, obj, read=None, **context) -> S.CellSource:
        return cls(obj, read, context.get("tokenizer"))

    @classmethod
    def sniff(cls, head: bytes, path: str) -> bool:
        return os.path.isdir(path) and find_files(path) is not None

    # ----- the matrix
    def _block(self, budget: int) -> int:
        return int(min(BLOCK_LINES, max(1 << 12, budget // 64)))

    def _count(self, budget: int) -> None:
        """Pass 1: every line checked, each cell's entries counted; sorted by barcode?"""
        counts = np.zeros(self.n_rows, np.int64)
        last, ordered = -1, True
        for _, _, c, _ in _blocks(self.files["matrix"], self.head, self._block(budget)):
            counts += np.bincount(c, minlength=self.n_rows)
            if c.size:
                ordered = ordered and c[0] >= last and bool(np.all(c[1:] >= c[:-1]))
                last = int(c[-1])
        self._indptr = np.zeros(self.n_rows + 1, np.int64)
        np.cumsum(counts, out=self._indptr[1:])
        self._sorted = ordered

    def _spill(self, budget: int) -> tuple[np.ndarray, np.ndarray]:
        """An unsorted file, sorted by barcode into a temporary memory-mapped CSR."""
        self._tmp = tempfile.mkdtemp(prefix="genotok-mtx-")
        nnz = int(self._indptr[-1])
        feat = np.lib.format.open_memmap(os.path.join(self._tmp, "f.npy"), "w+", np.int64,
                                         (nnz,))
        vals = np.lib.format.open_memmap(os.path.join(self._tmp, "v.npy"), "w+", np.float32,
                                         (nnz,))
        pos = self._indptr[:-1].copy()
        for _, r, c, v in _blocks(self.files["matrix"], self.head, self._block(budget)):
            order = np.argsort(c, kind="stable")
            cs = c[order]
            starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
            rank = np.arange(cs.size) - np.repeat(starts, np.diff(np.r_[starts, cs.size]))
            dest = pos[cs] + rank
            feat[dest], vals[dest] = r[order], v[order]
            pos += np.bincount(c, minlength=self.n_rows)
        return feat, vals

    def _entries(self, budget: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The entries ``(feature, value)`` in cell order, in blocks."""
        if self._sorted:
            for _, r, _, v in _blocks(self.files["matrix"], self.head, self._block(budget)):
                yield r, v
            return
        if self._tmp is None:
            self._spilled = self._spill(budget)
        feat, vals = self._spilled
        step = self._block(budget)
        for a in range(0, feat.size, step):
            yield np.asarray(feat[a:a + step]), np.asarray(vals[a:a + step])

    def chunks(self, budget, per_nnz, chunk_rows):
        import scipy.sparse as sp

        if self._indptr is None:
            self._count(budget)
        indptr = self._indptr
        bounds = C._row_bounds(indptr, max(1, budget // per_nnz), chunk_rows)
        blocks = self._entries(budget)
        buf_r, buf_v, held = [], [], 0
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            need = int(indptr[hi] - indptr[lo])
            while held < need:
                r, v = next(blocks)
                buf_r.append(r)
                buf_v.append(v)
                held += r.size
            r, v = (np.concatenate(buf_r), np.concatenate(buf_v)) if buf_r else \
                (np.zeros(0, np.int64), np.zeros(0, np.float32))
            buf_r, buf_v, held = [r[need:]], [v[need:]], r.size - need
            ptr = indptr[lo:hi + 1] - indptr[lo]
            cols = self.new[r[:need]]  # checked in [0, n_features) by _blocks
            kept = cols >= 0
            if not kept.all():
                row = np.repeat(np.arange(hi - lo), np.diff(ptr))
                ptr = np.zeros(hi - lo + 1, np.int64)
                np.cumsum(np.bincount(row[kept], minlength=hi - lo), out=ptr[1:])
            m = sp.csr_matrix((v[:need][kept], cols[kept], ptr), shape=(hi - lo, self.n_cols))
            m.sum_duplicates()  # as scipy's COO -> CSR that scanpy reads
            yield C.Chunk(int(lo), np.asarray(m.indptr, np.int64), *C._clean_dtypes(
                m.indices, m.data, self.where), self.n_cols)
        blocks.close()

    # ----- the rest of the protocol
    def features(self):
        return self.var

    def names(self) -> list[str]:
        return list(self.barcodes)

    def settings(self) -> dict:
        return {"layer": None, "store": "10x-mtx",
                **({"feature_type": self.feature_type} if self.feature_type else {})}

    def close(self) -> None:
        if self._tmp is not None:
            self._spilled = None  # the memory maps first
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


S.register_source(MtxSource)

__all__ = ["MtxOptions", "MtxSource", "find_files"]
