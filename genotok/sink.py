"""The one sink: a stream of token batches → a list, a ``Ragged``, padded tensors or a corpus.

Adapters (the single-cell matrices and fragment files, the pipeline) do not shape their own
results: they yield token batches, each a :class:`~genotok.ragged.Ragged` of consecutive
records with its value channel (``values``, float32, one per token, or ``None``), and hand
the stream to :func:`collect` (in memory) or :func:`write_corpus` (on disk, batch by batch, so
memory stays flat in the number of records).

Outputs (``output=``):

* ``"ragged"``: one :class:`~genotok.ragged.Ragged` (with ``values`` when asked);
* ``"list"``: one id array per record (with values: a pair of lists);
* ``"np"`` / ``"pt"``: right-padded ``input_ids`` / ``attention_mask`` (plus ``values``) as
  NumPy arrays or torch tensors, padded by :mod:`genotok.batching`;
* a path: an indexed corpus, or any store (:mod:`genotok.formats.stores`) through
  :func:`write_records`.

Examples
--------
>>> import numpy as np
>>> from genotok.ragged import Ragged
>>> batches = [Ragged.from_list([[1, 2], [3]]), Ragged.from_list([[4]])]
>>> collect(batches, "np", pad_token_id=0)["input_ids"].tolist()
[[1, 2], [3, 0], [4, 0]]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .batching import as_tensors, pad_batch
from ._io import local_path
from .formats.corpus import Corpus
from .formats.stores import Store, get_store
from .params import Flag, InstanceOf, Integral, Interval, Options, Unchecked, validated
from .ragged import Ragged

#: in-memory outputs; any other string (or a path) names a corpus
OUTPUTS = ("ragged", "list", "np", "pt")
#: an in-memory output's name
IN_MEMORY = [Options(*OUTPUTS)]
BATCHES = [Unchecked("token batches (Ragged), consumed as they come")]
CAPACITY = [Interval(Integral, 0, None), None]
TOKENIZER = [Unchecked("a tokenizer, whose universe the output records")]
WRITE = {"metadata_columns": [InstanceOf(list, tuple)], "values": [Flag()],
         "extra": [InstanceOf(dict), None], "overwrite": [Flag()]}


@validated({"output": IN_MEMORY + [InstanceOf(str, os.PathLike)]})
def output_kind(output) -> str:
    """``"corpus"`` for a path (a string that is not one of :data:`OUTPUTS`), else ``output``.

    Examples
    --------
    >>> output_kind("np"), output_kind("cells.gtokc")
    ('np', 'corpus')
    """
    return output if isinstance(output, str) and output in OUTPUTS else "corpus"


@validated({"batches": BATCHES, "capacity": CAPACITY})
def concat(batches: Iterable[Ragged], capacity: int | None = None) -> Ragged:
    """The records of all batches in one :class:`~genotok.ragged.Ragged` (values kept when the
    batches have them; no copy for a single batch).

    ``capacity``: an upper bound of the total tokens, when the caller knows one. Each batch is
    then copied into a result of that size as it arrives and let go, so no batch outlives its
    turn (the result's pages beyond the tokens are never touched, so never resident); a bound
    that proves too small only costs a copy.

    Examples
    --------
    >>> concat([Ragged.from_list([[1], []]), Ragged.from_list([[2, 3]])]).to_list()
    [[1], [], [2, 3]]
    >>> concat(iter([Ragged.from_list([[1], []]), Ragged.from_list([[2, 3]])]), 2).to_list()
    [[1], [], [2, 3]]
    """
    if capacity is not None:
        return _concat_into(iter(batches), int(capacity))
    parts = list(batches)
    if not parts:
        return Ragged(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.float32))
    if len(parts) == 1:
        return parts[0]
    total = sum(p.data.size for p in parts)
    parts.reverse()  # handed over one at a time and let go: the peak is the result plus a batch
    return _concat_into((parts.pop() for _ in range(len(parts))), total)


def _concat_into(batches, capacity: int) -> Ragged:
    """:func:`concat` into a result of ``capacity`` tokens (grown if the bound was wrong)."""
    data = values = None
    lengths, o = [], 0
    for part in batches:
        n = part.data.size
        if data is None:
            data = np.empty(max(capacity, n), part.data.dtype)
            values = None if part.values is None else np.empty(data.size, part.values.dtype)
        elif o + n > data.size or np.result_type(data, part.data) != data.dtype or (
                values is not None and np.result_type(values, part.values) != values.dtype):
            # a bound that was too small, or a batch of a wider dtype (as np.concatenate would)
            data = _grown(data, o, max(data.size, 2 * (o + n)), part.data)
            if values is not None:
                values = _grown(values, o, data.size, part.values)
        data[o:o + n] = part.data
        if values is not None:
            values[o:o + n] = part.values
        lengths.append(part.lengths)
        o += n
        del part
    if data is None:
        return concat([])
    offsets = np.zeros(sum(x.size for x in lengths) + 1, np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return Ragged(data[:o], offsets, None if values is None else values[:o])


def _grown(a: np.ndarray, used: int, size: int, incoming: np.ndarray) -> np.ndarray:
    """``a[:used]`` in a new array of ``size`` items of the dtype both fit in."""
    out = np.empty(size, np.result_type(a, incoming))
    out[:used] = a[:used]
    return out


@validated({"rows": [InstanceOf(Ragged)], "output": IN_MEMORY,
            "pad_token_id": [Interval(Integral, 0, None)], "values": [Flag()]})
def shape(rows: Ragged, output: str = "ragged", *, pad_token_id: int = 0,
          values: bool = False):
    """One ``Ragged`` as an in-memory output (see the module documentation).

    Examples
    --------
    >>> r = Ragged.from_list([[5, 6], [7]])
    >>> [a.tolist() for a in shape(r, "list")]
    [[5, 6], [7]]
    """
    if output == "ragged":
        return rows if values else Ragged(rows.data, rows.offsets)
    if output == "list":
        ids = list(Ragged(rows.data, rows.offsets))
        if values:
            return ids, [rows.values[a:b] for a, b in zip(rows.offsets[:-1], rows.offsets[1:])]
        return ids
    out = pad_batch(rows, pad_token_id, values=rows.values if values else None)
    return as_tensors(out, output)


@validated({"batches": BATCHES, "output": IN_MEMORY, "pad_token_id": [Interval(Integral, 0, None)],
            "values": [Flag()], "capacity": CAPACITY})
def collect(batches: Iterable[Ragged], output: str = "ragged", *, pad_token_id: int = 0,
            values: bool = False, capacity: int | None = None):
    """A stream of token batches as one in-memory output: ``"ragged"``, ``"list"``, ``"np"``
    or ``"pt"`` (``values``: keep the value channel).

    Examples
    --------
    >>> collect([Ragged.from_list([[1, 2]]), Ragged.from_list([[3]])]).to_list()
    [[1, 2], [3]]
    """
    return shape(concat(batches, capacity), output, pad_token_id=pad_token_id, values=values)


@validated({"values": [Unchecked("a column of per-record values, converted one by one")]})
def json_scalars(values) -> list:
    """Per-record metadata as JSON scalars: NumPy scalars unwrapped, NaN as ``None``, anything
    else that is not a str/int/float/bool as its ``str``.

    Examples
    --------
    >>> json_scalars(np.array([1.5, np.nan]))
    [1.5, None]
    """
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


@validated({"records": [Unchecked("(batch, metadata) pairs, consumed as they come")],
            "out": [InstanceOf(str, os.PathLike)], "tokenizer": TOKENIZER,
            "store": [InstanceOf(str, Store)], "sources": [Unchecked("(name, info) pairs")],
            **WRITE})
def write_records(records: Iterable[tuple[Ragged, dict]], out, tokenizer, *,
                  store: str | Store = "corpus", sources: Iterable[tuple[str, dict]] = (),
                  metadata_columns: Sequence[str] = (), values: bool = False,
                  extra: dict | None = None, overwrite: bool = False) -> list[str]:
    """The one place where token batches become files (every adapter's ``out=`` and the
    pipeline's shards): ``records`` yields ``(rows, kw)``, a batch and its ``names=`` and
    ``meta=`` (``{column: values}``); ``sources`` ``(name, kw)`` pairs of the inputs;
    ``store`` a :class:`~genotok.formats.stores.Store` or its name (``"corpus"``,
    ``"parquet"``…, see :data:`~genotok.formats.stores.STORES`), opened for the part ``out``
    (a file, or the stem of a store's shards). The files are committed (fsynced and renamed
    into place) when the records end, never left half-written; their names are returned.

    Examples
    --------
    >>> import os, tempfile
    >>> from genotok import Corpus, Tokenizer
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> write_records([(Ragged.from_list([[0], [1]]), {})], p, Tokenizer(["chr1:0-10"]),
    ...               sources=[("a.bed", {"size": 3})])
    ['c.gtokc']
    >>> len(Corpus.open(p)), Corpus.open(p).info()["sources"][0]["name"]
    (2, 'a.bed')
    """
    out = local_path(out, "a store's part")
    w = get_store(store).open(out.parent, out.name, tokenizer, values=values,
                              columns=metadata_columns, extra=extra, sources=list(sources),
                              overwrite=overwrite)
    try:
        for rows, kw in records:
            w.write(rows, {"names": kw.get("names"), **(kw.get("meta") or {})})
    except BaseException:
        w.abort()
        raise
    return w.commit()


@validated({"path": [InstanceOf(str, os.PathLike)], "tokenizer": TOKENIZER, "batches": BATCHES,
            "records": [Unchecked("a callable (lo, hi) -> (names, metadata)"), None],
            "source": [InstanceOf(str), None], **WRITE})
def write_corpus(path, tokenizer, batches: Iterable[Ragged], *,
                 records: Callable[[int, int], tuple[list, dict]] | None = None,
                 metadata_columns: Sequence[str] = (), values: bool = False,
                 extra: dict | None = None, source: str | None = None,
                 overwrite: bool = False) -> Corpus:
    """Write a stream of token batches to a corpus, batch by batch, and open it.

    ``records(lo, hi) -> (names, {column: values})`` names the records ``lo:hi`` (counted over
    the whole stream) and gives their ``metadata_columns``; ``source`` (a file) is recorded as
    the corpus' input; ``extra`` goes to the header.

    Examples
    --------
    >>> import os, tempfile
    >>> from genotok import Tokenizer
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> c = write_corpus(p, Tokenizer(["chr1:0-10"]), [Ragged.from_list([[0], [1]])],
    ...                  records=lambda lo, hi: ([f"r{i}" for i in range(lo, hi)], {}))
    >>> len(c), c.names[:2]
    (2, ['r0', 'r1'])
    """
    def named():
        row0 = 0
        for rows in batches:
            names, meta = records(row0, row0 + len(rows)) if records is not None else (None, {})
            yield rows, {"names": names, "meta": {k: json_scalars(v) for k, v in meta.items()}}
            row0 += len(rows)

    sources = ([] if source is None else
               [(os.path.basename(source), {"size": os.path.getsize(source)})])
    written = write_records(named(), path, tokenizer, sources=sources,
                            metadata_columns=metadata_columns, values=values, extra=extra,
                            overwrite=overwrite)
    # the corpus store names its file ``<out>.gtokc`` when ``out`` has no such suffix
    return Corpus.open(os.path.join(os.path.dirname(os.fspath(path)), written[0]))


__all__ = ["OUTPUTS", "collect", "concat", "json_scalars", "output_kind", "shape",
           "write_corpus", "write_records"]
