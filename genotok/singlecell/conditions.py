"""Condition tokens: ``<batch=donor1>``, ``<assay=ATAC>`` … prepended to each cell's tokens.

One model can serve many data sets when each cell's sequence starts with tokens that name its
conditions (batch, donor, assay, species, cell type). They are extra tokens of the vocabulary,
appended after the seven special tokens, so the ids of regions and specials never move:

>>> import anndata, numpy as np, pandas as pd
>>> from genotok import Tokenizer
>>> obs = pd.DataFrame({"batch": ["d1", "d2"], "assay": ["ATAC", "ATAC"]}, index=["c0", "c1"])
>>> a = anndata.AnnData(np.zeros((2, 1)), obs=obs)
>>> condition_tokens(a, ["assay", "batch"])
['<assay=ATAC>', '<batch=d1>', '<batch=d2>']
>>> tok = Tokenizer(["chr1:0-100"], extra_tokens=condition_tokens(a, ["assay", "batch"]))
>>> condition_ids(obs, tok, ["assay", "batch"]).tolist()
[[8, 9], [8, 10]]

Order and semantics
-------------------
* a token is ``template.format(column=..., value=...)`` (default ``"<{column}={value}>"``) of the
  column name and the value as :func:`spell` spells them: ``%``, ``=``, ``<`` and ``>`` are
  percent-escaped, so no two (column, value) pairs share a token (``assay``/``x=1`` is
  ``<assay=x%3D1>``, ``assay=x``/``1`` is ``<assay%3Dx=1>``);
  :func:`condition_tokens` lists, column by column in the order given, the column's categories
  (a categorical's category order, else sorted as strings); a missing value (NaN) has none;
* ``CellSpec(prepend=["assay", "batch"])`` puts, before each cell's tokens, one
  token per column in the order of ``prepend`` (after ``<cls>`` with ``add_cls=True``); their
  values (with ``values=True``) are 0;
* a value with no token in the tokenizer (a category unseen in training, or NaN) becomes
  ``<unk>`` (``condition_unknown="unk"``, the default) or raises (``"error"``); a column with
  no token at all (a tokenizer made without ``extra_tokens=``) raises, saying how to make one;
* the tokens are saved with the tokenizer configuration (``extra_tokens`` in its ``[genotok]``
  table) and are covered by its fingerprint, so a corpus written with one condition
  vocabulary refuses a tokenizer with another; ``decode`` gives them back as strings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import AnnDataError
from ..params import InstanceOf, Options, ParameterError, Unchecked, validated
from ..ragged import Ragged
from .sources import _container, _is_path, _obs_reader

TEMPLATE = "<{column}={value}>"
UNKNOWN = ("unk", "error")


def spell(value) -> str | None:
    """The one spelling of a condition value, ``None`` when it is missing: every path (an
    in-memory ``obs`` of any dtype, an ``.h5ad`` file, :func:`condition_tokens` and
    ``prepend=``) spells through here, so a value has one token whatever way it came.

    Whole numbers are spelled as integers (a nullable ``Int64`` read as float is the same
    value), bytes as UTF-8 text, dates as ``pandas.Timestamp`` prints them. ``%``, ``=``, ``<``
    and ``>`` are percent-escaped (column names too, see :func:`token`), so a token names one
    (column, value) pair: ``assay``/``x=1`` and ``assay=x``/``1`` differ.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> [spell(v) for v in (1, 1.0, np.int8(1), 2.5, b"x", np.datetime64("2020-01-02"),
    ...                     pd.NA, float("nan"), None, True)]
    ['1', '1', '1', '2.5', 'x', '2020-01-02 00:00:00', None, None, None, 'True']
    >>> spell("x=1"), spell("<a>"), spell("5%")
    ('x%3D1', '%3Ca%3E', '5%25')
    """
    text = _spell(value)
    return None if text is None else _escape(text)


_ESCAPES = str.maketrans({"%": "%25", "=": "%3D", "<": "%3C", ">": "%3E"})


def _escape(text: str) -> str:
    return text.translate(_ESCAPES)


def token(column: str, word: str, template: str = TEMPLATE) -> str:
    """The condition token of column ``column`` and the value spelled ``word`` (by :func:`spell`);
    the column name is escaped as values are.

    Examples
    --------
    >>> token("assay", spell("x=1")), token("assay=x", spell(1))
    ('<assay=x%3D1>', '<assay%3Dx=1>')
    """
    return template.format(column=_escape(str(column)), value=word)


def _spell(value) -> str | None:
    import datetime

    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v != v:
            return None
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(value, (np.datetime64, datetime.date)):
        if isinstance(value, np.datetime64) and np.isnat(value):
            return None
        return str(pd.Timestamp(value))
    return str(value)


def _column_values(values) -> list:
    """The categories of an obs column (categorical order, else sorted), missing excluded."""
    import pandas as pd

    s = pd.Series(values)
    if isinstance(s.dtype, pd.CategoricalDtype):
        spelled = [spell(c) for c in s.cat.categories]
        return list(dict.fromkeys(v for v in spelled if v is not None))
    return sorted({v for v in map(spell, s.tolist()) if v is not None})


def _obs_columns(adata, columns: Sequence[str]) -> dict:
    box = _container(adata) if _is_path(adata) else None
    if box is not None and (box.kind != "h5ad" or box.root):  # obs of a .h5mu modality, 10x
        return _container_obs(box, columns)
    path = None if box is None else box.path
    if path is not None:
        import anndata

        with_obs = anndata.read_h5ad(path, backed="r")
        try:
            return {c: _get(with_obs.obs, c) for c in columns}
        finally:
            with_obs.file.close()
    if not hasattr(adata, "obs"):
        read = _obs_reader(adata, None, columns)  # raises the usual error
        return read(0, 0)[1]
    return {c: _get(adata.obs, c) for c in columns}


def _container_obs(box, columns: Sequence[str]) -> dict:
    """``obs`` columns of a container that is not a whole ``.h5ad`` (a ``.h5mu`` modality: read
    by anndata, categories in their order; a 10x file has none)."""
    import h5py

    if box.kind == "10x":
        raise AnnDataError(f"{box.path}: a 10x .h5 file has no obs columns ({list(columns)} "
                           "asked)")
    try:
        from anndata.io import read_elem
    except ImportError:  # pragma: no cover - anndata < 0.11
        from anndata.experimental import read_elem
    with h5py.File(box.path, "r") as f:
        obs = read_elem(f[f"{box.root}/obs"])
    return {c: _get(obs, c) for c in columns}


def _get(obs, column: str):
    if column not in obs.columns:
        raise AnnDataError(f"obs has no column {column!r}; it has {list(obs.columns)}")
    return obs[column]


@validated({"adata": [Unchecked("an AnnData, an .h5ad path or a frame, read by column")],
            "columns": [InstanceOf(list, tuple, str)], "template": [InstanceOf(str)]})
def condition_tokens(adata, columns: Sequence[str], *, template: str = TEMPLATE) -> list[str]:
    """The condition tokens of ``obs`` columns of an AnnData (or ``.h5ad`` path, or a frame).

    Give them to ``Tokenizer(..., extra_tokens=...)``; see :mod:`genotok.singlecell.conditions`.

    Examples
    --------
    >>> import pandas as pd
    >>> condition_tokens(pd.DataFrame({"batch": ["d2", "d1", "d2"]}), ["batch"])
    ['<batch=d1>', '<batch=d2>']
    """
    columns = _check_columns(columns)
    obs = adata if hasattr(adata, "columns") else None
    cols = {c: _get(obs, c) for c in columns} if obs is not None else _obs_columns(adata, columns)
    return [token(c, v, template) for c in columns for v in _column_values(cols[c])]


def _check_columns(columns, what: str = "condition columns") -> list[str]:
    if isinstance(columns, str):
        columns = [columns]
    bad = [c for c in columns if not isinstance(c, str) or not c]
    if bad:  # a number or a table is no column name (its text would be taken as one)
        raise ParameterError(f"{what}: obs column names are non-empty strings, got "
                             f"{bad[0]!r}"[:300])
    columns = [str(c) for c in columns]
    if len(set(columns)) != len(columns):
        raise ParameterError(f"{what}: the columns repeat: {columns}")
    return columns


@validated({"obs": [Unchecked("obs columns, read by name")],
            "tokenizer": [Unchecked("a tokenizer, checked by the entry point")],
            "prepend": [InstanceOf(list, tuple, str)], "unknown": [Options(*UNKNOWN)],
            "template": [InstanceOf(str)]})
def condition_ids(obs, tokenizer, prepend: Sequence[str], *, unknown: str = "unk",
                  template: str = TEMPLATE) -> np.ndarray:
    """``(cells, len(prepend))`` int64 ids of each cell's condition tokens.

    ``obs`` is a data frame or a ``{column: values}`` dict. A value without a token gives
    ``<unk>`` (``unknown="unk"``) or an :class:`AnnDataError` (``"error"``).

    Examples
    --------
    >>> from genotok import Tokenizer
    >>> tok = Tokenizer(["chr1:0-100"], extra_tokens=["<batch=d1>"])
    >>> condition_ids({"batch": ["d1", "d9"]}, tok, ["batch"]).tolist()  # d9: <unk>
    [[8], [1]]
    """
    prepend = _check_columns(prepend)
    vocab = tokenizer.universe.get_vocab()
    first_extra = tokenizer.universe.n_regions + 7
    unk = tokenizer.universe.unk_token_id
    _check_vocabulary(tokenizer, prepend, template)
    cols = []
    for c in prepend:
        if hasattr(obs, "columns"):
            values = _get(obs, c)
        elif c in obs:
            values = obs[c]
        else:
            raise AnnDataError(f"obs has no column {c!r}; it has {list(obs)}")
        import pandas as pd

        # (not np.asarray(values, dtype=object): datetime64[ns] would become integers)
        s = pd.Series(values) if isinstance(values, pd.Series) else pd.Series(list(values))
        ids = np.empty(len(s), np.int64)
        for i, v in enumerate(s.tolist()):
            word = spell(v)
            t = None if word is None else vocab.get(token(c, word, template))
            if t is None or t < first_extra:  # only condition tokens count
                if unknown == "error":
                    raise AnnDataError(
                        f"obs column {c!r}: value {v!r} has no condition token in this "
                        f"tokenizer (its extra tokens: {list(tokenizer.universe.extra_tokens)[:8]}"
                        f"…); add it with extra_tokens=, or pass condition_unknown='unk'")
                t = unk
            ids[i] = t
        cols.append(ids)
    n = len(cols[0]) if cols else 0
    return np.stack(cols, axis=1) if cols else np.zeros((n, 0), np.int64)


def _check_vocabulary(tokenizer, prepend: list[str], template: str) -> None:
    """Refuse a column with no condition token at all in the tokenizer: every cell's would be
    ``<unk>``, silently (the tokenizer was made without ``extra_tokens=``)."""
    extra = list(tokenizer.universe.extra_tokens)
    for c in prepend:
        head, _, tail = token(c, "\0", template).partition("\0")
        if not any(t.startswith(head) and t.endswith(tail) for t in extra):
            raise AnnDataError(
                f"prepend={prepend}: the tokenizer has no condition token of column {c!r}, so "
                f"every cell's would be <unk>; make it with Tokenizer(..., extra_tokens="
                f"condition_tokens(adata, {prepend}))")


def prepend_ids(rows: Ragged, ids: np.ndarray) -> Ragged:
    """``ids[i]`` (a ``(cells, k)`` array) before row ``i``'s tokens; value 0 for them.

    Examples
    --------
    >>> import numpy as np
    >>> from genotok.ragged import Ragged
    >>> prepend_ids(Ragged.from_list([[0], []]), np.array([[8], [9]])).to_list()
    [[8, 0], [9]]
    """
    ids = np.asarray(ids)
    n, k = ids.shape
    if n != len(rows):
        raise ParameterError(f"{n} rows of condition ids for {len(rows)} cells")
    lens = rows.lengths + k
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    head = (offsets[:-1, None] + np.arange(k)[None, :]).ravel()
    return _spliced(rows, offsets, head, ids.ravel())


def _spliced(rows: Ragged, offsets: np.ndarray, at: np.ndarray, ids) -> Ragged:
    """``rows`` laid out at ``offsets`` with ``ids`` at the positions ``at`` (value 0 there);
    the rows' own tokens (and values) fill the other positions in order."""
    data = np.empty(int(offsets[-1]), dtype=rows.data.dtype)  # ids < vocab_size fit it
    body = np.ones(data.size, bool)
    body[at] = False
    data[at] = ids
    data[body] = rows.data
    values = None
    if rows.values is not None:
        values = np.zeros(data.size, rows.values.dtype)
        values[body] = rows.values
    return Ragged(data, offsets, values)


def prepend_stream(stream, obs_read, tokenizer, prepend: Sequence[str], unknown: str,
                   cls: bool = False):
    """Wrap the single-cell stream ``(row0, Ragged)``: ``<cls>`` (when ``cls``), then the
    condition tokens, before each cell's tokens.

    ``obs_read(lo, hi) -> (names, {column: values})`` reads the ``obs`` of cells ``lo:hi``.

    Examples
    --------
    >>> from genotok import Tokenizer
    >>> from genotok.ragged import Ragged
    >>> tok = Tokenizer(["chr1:0-100"], extra_tokens=["<batch=d1>"])
    >>> read = lambda lo, hi: (None, {"batch": ["d1", "d1"][lo:hi]})
    >>> stream = [(0, Ragged.from_list([[0], []]))]
    >>> [r.to_list() for _, r in prepend_stream(stream, read, tok, ["batch"], "unk", cls=True)]
    [[[4, 8, 0], [4, 8]]]
    """
    for row0, rows in stream:
        if prepend:
            _, meta = obs_read(row0, row0 + len(rows))
            ids = condition_ids(meta, tokenizer, prepend, unknown=unknown)
        else:
            ids = np.zeros((len(rows), 0), np.int64)
        if cls:
            ids = np.hstack([np.full((len(rows), 1), _special_id(tokenizer, "cls")), ids])
        yield row0, prepend_ids(rows, ids)


def _special_id(tokenizer, role: str) -> int:
    """The id of ``<role>`` (a gene vocabulary may lack it: said plainly)."""
    i = getattr(tokenizer, f"{role}_token_id")
    if i is None:
        raise ParameterError(f"the tokenizer's vocabulary has no <{role}> token; give it one "
                         f"(GeneTokenizer(..., special_tokens={{{role!r}: ...}}))")
    return int(i)


def append_ids(rows: Ragged, token_id: int) -> Ragged:
    """``token_id`` after each row's tokens (value 0).

    Examples
    --------
    >>> from genotok.ragged import Ragged
    >>> append_ids(Ragged.from_list([[0, 1], []]), 9).to_list()
    [[0, 1, 9], [9]]
    """
    n = len(rows)
    offsets = rows.offsets + np.arange(n + 1, dtype=np.int64)
    return _spliced(rows, offsets, offsets[1:] - 1, token_id)


def append_stream(stream, tokenizer):
    """Wrap the single-cell stream ``(row0, Ragged)``: ``<eos>`` after each cell's tokens.

    Examples
    --------
    >>> from genotok import GeneTokenizer
    >>> from genotok.ragged import Ragged
    >>> tok = GeneTokenizer({"G": 0, "<eos>": 3})
    >>> [r.to_list() for _, r in append_stream([(0, Ragged.from_list([[0], []]))], tok)]
    [[[0, 3], [3]]]
    """
    eos = _special_id(tokenizer, "eos")
    for row0, rows in stream:
        yield row0, append_ids(rows, eos)


__all__ = ["append_ids", "append_stream", "condition_ids", "condition_tokens", "prepend_ids", "prepend_stream", "spell", "token"]
