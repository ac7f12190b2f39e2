"""The cell sources' contract: :func:`check_source`.

A cell source (:class:`~genotok.CellSource`) hands the rows of one input to the driver in
:class:`~genotok.Chunk` s. What every source, built in or plugged in, must do (each rule
learnt from a defect of one of them):

- **declare itself**: a concrete ``CellSource`` subclass with a ``kind``, lower-case
  ``suffixes``, ``features_are`` ``"var"`` or ``"universe"``, and a
  :class:`~genotok.ReadOptions` class whose defaults round-trip their JSON (the plan of a run
  records them); registered, and found by the registry for its example when that is a path;
- **cover every row once, in order, within the budget**: for every budget and ``chunk_rows``,
  the chunks start at row 0 and follow on without gap or overlap to ``n_rows``; each is a
  ``Chunk`` of ``n_cols`` columns whose ``indptr`` never decreases and stays within its
  ``indices``/``data`` (as long as each other), whose column indices are in ``[0, n_cols)`` and
  whose values are finite and ``>= 0``; a chunk of several rows holds at most ``budget`` bytes
  at ``per_nnz`` a stored entry, and at most ``chunk_rows`` rows; every chunking gives the
  same matrix;
- **name its rows and columns**: ``names()`` one unique string per row; ``feature_names()``
  one string per column (``"var"``) or ``None`` (``"universe"``); ``obs`` returns the names of
  a row range (``obs_values`` the columns alone); an unknown ``obs`` column (or any, without
  ``has_obs``) is a ``GenotokError`` at once; ``settings()`` is plain JSON;
- **read its obs columns row for row** (``has_obs``): every column of the example's own obs
  (``obs=``, or the example's ``.obs`` when it is an AnnData) read whole equals it row for
  row, beside the row names; and read in windows of 1 and 3 rows (``obs`` and
  ``obs_values``) equals the whole read's rows (a source whose values are shifted by a row,
  or missing, fails);
- **tokenize alike by path and in memory**: the source's tokens equal those of the same
  matrix, features and names held in memory (one chunk), and for a path the entry point's
  (``tokenize_cells(path)``) equal the opened source's;
- **close**: ``close()`` twice is harmless, and so is a ``with`` block;
- **refuse a damaged input**: the example's file (or the largest file of its directory) cut
  to half its size is a :class:`~genotok.GenotokError` naming the file when opened and read,
  never another exception or silent rows.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["check_source"]

#: (budget bytes, bytes per stored entry, chunk_rows) the chunking rules are checked with
CHUNKINGS = ((1, 16, None), (4096, 16, None), (1 << 40, 16, None), (1 << 40, 16, 1),
             (1 << 40, 16, 3))


def _fail(cls, rule: str, detail: str = "") -> AssertionError:
    return AssertionError(f"check_source({cls.__name__}): {rule}"
                          + (f": {detail}" if detail else ""))


def check_source(source_class, example, *, obs=None, **context) -> None:
    """Check that a cell source class keeps the contract of the seam (module documentation)
    on ``example`` (what its :meth:`~genotok.CellSource.open` takes: a file, a directory, an
    object); raise ``AssertionError`` naming the rule it breaks.

    Parameters
    ----------
    source_class
        A :class:`~genotok.CellSource` subclass.
    example
        An input it reads: a path (the registry must find the class for it, and a damaged
        copy is made of it) or an in-memory object.
    obs
        The example's obs columns, what the source must read row for row (a mapping or data
        frame of ``column: values``, one per row); default: the example's ``.obs`` when it has
        one (an AnnData). A path's source with ``has_obs`` is checked on its obs only when
        they are given here.
    context
        What :meth:`~genotok.CellSource.open` needs besides (``tokenizer=`` for a source whose
        columns are a universe's regions; by default, a tokenizer is made of the example's
        feature regions).

    Examples
    --------
    >>> import genotok
    >>> from genotok.singlecell import FragmentSource, H5adSource
    >>> ex = genotok.examples_dir()
    >>> import anndata
    >>> check_source(H5adSource, ex / "pbmc.h5ad", obs=anndata.read_h5ad(ex / "pbmc.h5ad").obs)
    >>> check_source(FragmentSource, ex / "fragments.tsv.gz",
    ...              tokenizer=genotok.Tokenizer.from_bed(ex / "universe.bed"))
    """
    from ..singlecell.sources import CellSource, registry, source_class as found

    cls = source_class
    _check_declaration(cls)
    if cls not in registry():
        raise _fail(cls, "registered (register_source(cls), or a genotok.sources entry point)")
    by_path = isinstance(example, (str, os.PathLike))
    if by_path:
        got = found(example)
        if got is not cls:
            raise _fail(cls, "the registry finds the class for its example",
                        f"source_class({os.fspath(example)!r}) is "
                        f"{getattr(got, '__name__', got)}")
    src = cls.open(example, None, **context)
    if not isinstance(src, CellSource) or type(src) is not cls and not isinstance(src, cls):
        raise _fail(cls, "open() returns an instance of the class", type(src).__name__)
    try:
        matrix = _check_chunks(cls, src)
        _check_names(cls, src)
        if cls.has_obs:
            _check_obs(cls, src, obs if obs is not None else getattr(example, "obs", None))
        tok = context.get("tokenizer") or _tokenizer(cls, src)
        if tok is not None:
            _check_tokens(cls, src, matrix, tok, example if by_path else None)
    finally:
        src.close()
    try:
        src.close()
        with cls.open(example, None, **context):
            pass
    except Exception as exc:  # noqa: BLE001 - any failure here breaks the rule
        raise _fail(cls, "close() twice, and a with block, are harmless",
                    f"{type(exc).__name__}: {exc}") from None
    if by_path:
        _check_damaged(cls, Path(example), context)


def _check_declaration(cls) -> None:
    import inspect

    from ..singlecell.reading import ReadOptions
    from ..singlecell.sources import CellSource, read_options_from_json

    if not (isinstance(cls, type) and issubclass(cls, CellSource)):
        raise AssertionError(f"check_source: {cls!r} is not a genotok.CellSource subclass")
    if inspect.isabstract(cls):
        raise _fail(cls, "implements every abstract method of CellSource",
                    f"{', '.join(sorted(cls.__abstractmethods__))} missing")
    if not cls.kind or not isinstance(cls.kind, str):
        raise _fail(cls, "names its kind (kind = '...')")
    if not all(isinstance(s, str) and s.startswith(".") and s == s.lower()
               for s in cls.suffixes):
        raise _fail(cls, "suffixes are lower-case file endings ('.h5ad')", repr(cls.suffixes))
    if cls.features_are not in ("var", "universe"):
        raise _fail(cls, "features_are is 'var' or 'universe'", repr(cls.features_are))
    if not isinstance(cls.has_obs, bool):
        raise _fail(cls, "has_obs is a bool", repr(cls.has_obs))
    if not (isinstance(cls.options, type) and issubclass(cls.options, ReadOptions)):
        raise _fail(cls, "options is a genotok.ReadOptions subclass", repr(cls.options))
    opts = cls.options()
    try:
        text = json.dumps(opts.to_json(), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _fail(cls, "its read options' to_json() is plain JSON", str(exc)) from None
    if read_options_from_json(json.loads(text)) != opts:
        raise _fail(cls, "its read options round-trip their JSON (by name)", text[:200])


def _check_chunks(cls, src):
    """Every chunking's rows, checked; returns the matrix (CSR) they make."""
    import scipy.sparse as sp

    from ..singlecell.chunks import Chunk

    n_rows, n_cols = src.n_rows, src.n_cols
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
               for v in (n_rows, n_cols)):
        raise _fail(cls, "n_rows and n_cols are integers >= 0", f"{n_rows!r}, {n_cols!r}")
    if not isinstance(src.where, str) or not src.where:
        raise _fail(cls, "where names the input (a string)", repr(src.where))
    if not isinstance(src.read, cls.options):
        raise _fail(cls, "read holds the options it was opened with (defaults: options())",
                    repr(src.read))
    first = None
    for budget, per_nnz, chunk_rows in CHUNKINGS:
        how = f"budget={budget}, per_nnz={per_nnz}, chunk_rows={chunk_rows}"
        next_row, ptrs, idxs, datas = 0, [np.zeros(1, np.int64)], [], []
        for ch in src.chunks(budget, per_nnz, chunk_rows):
            if not isinstance(ch, Chunk):
                raise _fail(cls, "chunks() yields genotok.Chunk objects", type(ch).__name__)
            if ch.row0 != next_row:
                raise _fail(cls, "chunks cover every row once, in order",
                            f"{how}: a chunk starts at row {ch.row0}, expected {next_row}")
            _check_chunk(cls, ch, n_cols, how, budget, per_nnz, chunk_rows)
            a = int(ch.indptr[0])
            ptrs.append(ptrs[-1][-1] + (np.asarray(ch.indptr[1:], np.int64) - a))
            b = int(ch.indptr[-1])
            idxs.append(np.asarray(ch.indices[a:b], np.int64))
            datas.append(np.asarray(ch.data[a:b], np.float64))
            next_row += ch.n_rows
        if next_row != n_rows:
            raise _fail(cls, "chunks cover every row once, in order",
                        f"{how}: {next_row} rows read, n_rows is {n_rows}")
        m = sp.csr_matrix((np.concatenate(datas) if datas else np.zeros(0),
                           np.concatenate(idxs) if idxs else np.zeros(0, np.int64),
                           np.concatenate(ptrs)), shape=(n_rows, n_cols))
        if first is None:
            first = m
        elif (first != m).nnz or first.nnz != m.nnz:
            raise _fail(cls, "every chunking gives the same matrix", how)
    return first


def _check_chunk(cls, ch, n_cols, how, budget, per_nnz, chunk_rows) -> None:
    ptr = np.asarray(ch.indptr)
    at = f"{how}, rows {ch.row0}..{ch.row0 + max(ch.n_rows - 1, 0)}"
    if ch.n_cols != n_cols:
        raise _fail(cls, "a chunk has the source's n_cols", f"{at}: {ch.n_cols} != {n_cols}")
    if ptr.ndim != 1 or ptr.size < 2 or ptr.dtype.kind not in "iu":
        raise _fail(cls, "indptr is a 1-d integer array of n_rows + 1 >= 2 positions", at)
    if ch.indices.size != ch.data.size or ptr[0] < 0 or ptr[-1] > ch.indices.size or \
            (np.diff(ptr) < 0).any():
        raise _fail(cls, "indptr never decreases and stays within indices/data (as long as "
                    "each other)", at)
    a, b = int(ptr[0]), int(ptr[-1])
    idx, data = np.asarray(ch.indices[a:b]), np.asarray(ch.data[a:b])
    if idx.dtype.kind not in "iu" or (idx.size and (idx.min() < 0 or idx.max() >= n_cols)):
        raise _fail(cls, "column indices are integers in [0, n_cols)", at)
    if data.dtype.kind not in "biuf" or (data.size and not (np.isfinite(data).all()
                                                            and data.min() >= 0)):
        raise _fail(cls, "values are finite numbers >= 0", at)
    if chunk_rows is not None and ch.n_rows > chunk_rows:
        raise _fail(cls, "a chunk holds at most chunk_rows rows", f"{at}: {ch.n_rows}")
    if chunk_rows is None and ch.n_rows > 1 and (b - a) * per_nnz > budget:
        raise _fail(cls, "a chunk of several rows stays within the budget",
                    f"{at}: {b - a} entries x {per_nnz} bytes > {budget}")


def _check_names(cls, src) -> None:
    from ..errors import GenotokError

    names = src.names()
    if not isinstance(names, list) or len(names) != src.n_rows or \
            not all(isinstance(n, str) for n in names):
        raise _fail(cls, "names() is a list of one string per row",
                    f"{type(names).__name__} of {len(names)} for {src.n_rows} rows")
    if len(set(names)) != len(names):
        raise _fail(cls, "row names are unique")
    k = min(src.n_rows, 3)
    got = src.obs(())(src.n_rows - k, src.n_rows)
    if list(got[0]) != names[src.n_rows - k:] or got[1] != {}:
        raise _fail(cls, "obs(())(lo, hi) gives the names of rows lo:hi and no columns")
    if src.obs_values(())(src.n_rows - k, src.n_rows) != {}:
        raise _fail(cls, "obs_values(())(lo, hi) gives no columns")
    for asked in (src.obs, src.obs_values):
        try:
            asked(["__genotok_no_such_column__"])
        except GenotokError:
            pass
        else:
            raise _fail(cls, f"an unknown {asked.__name__} column is a GenotokError at once")
    feats = src.feature_names()
    if cls.features_are == "universe":
        if feats is not None:
            raise _fail(cls, "a source of universe columns has no feature names")
    elif not isinstance(feats, list) or len(feats) != src.n_cols or \
            not all(isinstance(f, str) for f in feats):
        raise _fail(cls, "feature_names() is one string per column")
    try:
        json.dumps(src.settings(), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _fail(cls, "settings() is plain JSON", str(exc)) from None


def _check_obs(cls, src, ref) -> None:
    """The reference's columns (at most 4) read whole, then in windows of 1 and 3 rows."""
    if ref is None:
        return
    n = src.n_rows
    cols = [str(c) for c in (ref.columns if hasattr(ref, "columns") else ref)][:4]
    want = {c: _plain(ref[c]) for c in cols}
    if any(len(v) != n for v in want.values()):
        raise _fail(cls, "obs= holds one value per row of the example",
                    f"{ {c: len(v) for c, v in want.items()} } for {n} rows")
    names, whole = src.obs(cols)(0, n)
    whole = {c: _plain(v) for c, v in whole.items()}
    if list(names) != src.names():
        raise _fail(cls, "obs(columns)(0, n_rows) gives the row names, as names() does")
    for c in cols:
        got = whole.get(c)
        if got != want[c]:
            row = next((i for i in range(n) if got is None or i >= len(got) or
                        got[i] != want[c][i]), None)
            raise _fail(cls, "its obs columns read whole equal the example's, row for row",
                        f"column {c!r}: " + ("missing" if got is None else
                                             f"{len(got)} values for {n} rows" if row is None
                                             else f"row {row} ({names[row]!r}) is "
                                                  f"{got[row]!r}, the example's "
                                                  f"{want[c][row]!r}"))
    for step in (1, 3):
        for lo in range(0, min(n, 24), step):
            hi = min(lo + step, n)
            part = {c: v[lo:hi] for c, v in whole.items() if c in cols}
            got_names, got = src.obs(cols)(lo, hi)
            values = src.obs_values(cols)(lo, hi)
            if list(got_names) != names[lo:hi] or \
                    {c: _plain(v) for c, v in got.items()} != part or \
                    {c: _plain(v) for c, v in values.items()} != part:
                raise _fail(cls, "obs and obs_values of rows lo:hi are the whole read's rows",
                            f"rows {lo}:{hi}")


def _plain(values) -> list:
    """Values as comparable plain Python (numbers as floats, NaN and None alike as None,
    anything else, a category's label, as text)."""
    out = []
    for v in list(np.asarray(values, dtype=object)):
        if v is None or isinstance(v, (float, np.floating)) and np.isnan(v):
            out.append(None)
        elif isinstance(v, bytes):
            out.append(v.decode("utf-8", "replace"))
        elif isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        elif isinstance(v, (int, float, np.integer, np.floating)):
            out.append(float(v))
        else:
            out.append(str(v))
    return out


def _tokenizer(cls, src):
    """A tokenizer of the example's feature regions (``None``: they are not regions)."""
    from ..errors import GenotokError
    from ..singlecell.varnames import var_regions
    from ..tokenizer import Tokenizer

    if cls.features_are != "var":
        raise _fail(cls, "check_source of a universe source needs tokenizer= in its context")
    feats = src.features()
    try:
        regions = var_regions(_Vars(feats) if _frame(feats) else feats)
        return Tokenizer(regions)
    except (GenotokError, ValueError):
        return None  # named features (genes): the token rule needs a tokenizer= given


class _Vars:
    def __init__(self, var):
        self.var = var


def _frame(obj) -> bool:
    return hasattr(obj, "columns") and hasattr(obj, "index") and not hasattr(obj, "obs")


def _check_tokens(cls, src, matrix, tok, path) -> None:
    from ..singlecell.cells import tokenize_cells
    from ..singlecell.spec import CellSpec

    spec = CellSpec(values=True)
    got = tokenize_cells(src, tok, spec)
    mem = _in_memory_class()(matrix, src)
    want = tokenize_cells(mem, tok, spec)
    if got != want or not np.array_equal(got.values, want.values):
        raise _fail(cls, "its tokens equal those of the same matrix and features in memory")
    if path is not None:
        again = tokenize_cells(path, tok, spec)
        if again != got:
            raise _fail(cls, "tokenize_cells(path) equals the opened source's tokens")


def _in_memory_class():
    from ..singlecell.sources import CellSource, memory_matrix

    class InMemory(CellSource):
        """The same rows held in memory (one matrix), features and names as the source's."""

        kind = "check-source-memory"

        @classmethod
        def open(cls, obj, read=None, **context):
            """``obj``: ``(matrix, source)``, the rows and the source they mirror."""
            return cls(*obj)

        def __init__(self, matrix, like):
            self.matrix = memory_matrix(matrix, "memory")
            self.n_rows, self.n_cols = matrix.shape
            self.where, self.read, self.like = "memory", like.read, like
            self.features_are = like.features_are
            self.in_memory = True

        def features(self):
            return self.like.features()

        def names(self):
            return self.like.names()
    return InMemory


def _check_damaged(cls, path: Path, context) -> None:
    """The example cut to half its size (a directory: its largest file) is a GenotokError
    naming the file (or the example) when opened and read through."""
    from ..errors import GenotokError

    with tempfile.TemporaryDirectory(prefix="genotok-check-source-") as tmp:
        copy = Path(tmp) / path.name
        if path.is_dir():
            shutil.copytree(path, copy)
            files = [p for p in copy.rglob("*") if p.is_file()]
            if not files:
                return
            victim = max(files, key=lambda p: p.stat().st_size)
        else:
            shutil.copyfile(path, copy)
            victim = copy
        raw = victim.read_bytes()
        victim.write_bytes(raw[:len(raw) // 2])
        try:
            with cls.open(copy, None, **context) as src:
                for _ in src.chunks(1 << 20, 16, None):
                    pass
                src.names()
        except GenotokError as exc:
            text = str(exc)
            if not any(s in text for s in (str(victim), str(copy), victim.name, copy.name)):
                raise _fail(cls, "a damaged input's error names the file",
                            f"{type(exc).__name__}: {text[:300]}") from None
            return
        except Exception as exc:  # noqa: BLE001 - anything else breaks the rule
            raise _fail(cls, "a damaged input is a GenotokError naming the file",
                        f"{victim.name} cut to {len(raw) // 2} bytes: {type(exc).__name__}: "
                        f"{str(exc)[:300]}") from None
        raise _fail(cls, "a damaged input is refused (GenotokError naming the file)",
                    f"{victim.name} cut to {len(raw) // 2} of {len(raw)} bytes was read "
                    "without an error")
