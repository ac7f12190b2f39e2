"""A corpus as a Hugging Face ``datasets.Dataset`` (``pip install 'genotok[hf]'``).

The tokens are not copied into Python lists: every shard's token and offset sections (memory
maps) become one Arrow ``LargeListArray`` each, without a copy, and the dataset is a table of
those chunks. ``datasets.map``, ``Dataset.with_format("numpy"/"torch")`` and the ``Trainer``
work on it as on any Arrow-backed dataset.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .._optional import require
from ..params import Flag, HasAttr, Integral, Interval, validated

#: what the tables are made of: a corpus (its records, names and metadata are read)
_TABLE = {"corpus": [HasAttr("fingerprint", "names")], "values": [Flag(), None],
          "names": [Flag()], "meta": [Flag()]}


def _require():
    return (require("datasets", "Corpus.to_hf_dataset"),
            require("pyarrow", "Corpus.to_hf_dataset"))


def _list_array(pa, data: np.ndarray, offsets: np.ndarray):
    """A ``large_list`` array over ``data`` cut at ``offsets`` (both wrapped, not copied)."""
    return pa.LargeListArray.from_arrays(pa.array(np.asarray(offsets, dtype=np.int64)),
                                         pa.array(np.asarray(data)))


@validated(_TABLE)
def arrow_table(corpus, *, values: bool | None = None, names: bool = True, meta: bool = True):
    """The corpus as a ``pyarrow.Table``: ``input_ids`` (one chunk per shard), ``length``, and
    ``values``, ``name`` and metadata columns when present.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter, Corpus
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3]], names=["a", "b"])
    >>> arrow_table(Corpus.open(p)).to_pydict()
    {'input_ids': [[1, 2], [3]], 'length': [2, 1], 'name': ['a', 'b']}
    """
    _, pa = _require()
    values = corpus.has_values if values is None else bool(values)
    if values and not corpus.has_values:
        raise ValueError(f"{corpus.path}: this corpus has no value channel")
    ids, vals, lens = [], [], []
    for b in corpus.iter_batches(batch_size=max(len(corpus), 1), values=values):  # per shard
        ids.append(_list_array(pa, b.data, b.offsets))
        lens.append(pa.array(np.diff(b.offsets)))
        if values:
            vals.append(_list_array(pa, b.values, b.offsets))
    cols = {"input_ids": pa.chunked_array(ids, type=ids[0].type) if ids else
            pa.chunked_array([], pa.large_list(pa.uint32())),
            "length": pa.chunked_array(lens, type=pa.int64())}
    if values:
        cols["values"] = pa.chunked_array(vals, type=vals[0].type)
    if names and any(n is not None for n in corpus.names):
        cols["name"] = pa.array(corpus.names, type=pa.string())
    if meta:
        for k, col in corpus.meta.items():
            if k not in cols:
                cols[k] = pa.array(col)
    return pa.table(cols)


@validated({**_TABLE, "streaming": [Flag()],
            "num_shards": [Interval(Integral, 1, None), None]})
def to_hf_dataset(corpus, *, values: bool | None = None, names: bool = True, meta: bool = True,
                  streaming: bool = False, num_shards: int | None = None):
    """A ``datasets.Dataset`` over the corpus's memory-mapped tokens (see :func:`arrow_table`).

    ``streaming=True`` gives a ``datasets.IterableDataset`` (``num_shards`` pieces, by default
    one per corpus shard) for ``split_dataset_by_node`` and DataLoader workers.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import CorpusWriter, Corpus
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3]])
    >>> ds = Corpus.open(p).to_hf_dataset()
    >>> ds[0]["input_ids"], ds.num_rows
    ([1, 2], 2)
    """
    datasets, _ = _require()
    table = arrow_table(corpus, values=values, names=names, meta=meta)
    # a fingerprint of our own: datasets would otherwise hash every token to make one
    key = repr((str(corpus.path), corpus.fingerprint, len(corpus), corpus.n_tokens,
                (corpus.manifest or {}).get("digest"), corpus.header.get("checksums"),
                table.column_names))
    fp = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    ds = datasets.Dataset(datasets.table.InMemoryTable(table), fingerprint=fp)
    if streaming:
        shards = num_shards or len((corpus.manifest or {}).get("shards") or [None])
        return ds.to_iterable_dataset(num_shards=max(1, min(shards, len(ds))))
    return ds
