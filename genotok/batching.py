"""The one pad / truncate / mask implementation: token rows → fixed-width model inputs.

Every place that turns variable-length token rows into a rectangle calls this module: the
:class:`~genotok.tokenizer.Tokenizer` (``__call__``/``pad``, Hugging Face's ``padding=``,
``truncation=``, ``max_length=``, ``return_tensors=``), the training batches of
:mod:`genotok.data` (``make_batch``, ``pad_batch``, ``truncate``) and the sink's padded tensors
(:mod:`genotok.sink`, used by the single-cell adapters).

The rectangle is always the same: ``input_ids`` (int64, right-padded with the pad id),
``attention_mask`` (int64, 1 on tokens, 0 on padding) and, when asked, ``values`` (float32, 0 on
padding) aligned with the ids.

Examples
--------
>>> b = pad_batch([[5, 6, 7], [8]], pad_token_id=0)
>>> b["input_ids"].tolist(), b["attention_mask"].tolist()
([[5, 6, 7], [8, 0, 0]], [[1, 1, 1], [1, 0, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .params import Flag, InstanceOf, Integral, Interval, Needs, Options, ParameterError, validated
from .ragged import Ragged

#: the longest sequence a batch pads or packs to (``max_length``, ``seq_len``): a longer one
#: is refused before anything is allocated (one row of it is 128 MiB of int64 already)
MAX_SEQUENCE = 1 << 24

#: ``truncate`` strategies (``make_batch(truncation=...)``)
TRUNCATIONS = ("head", "window", "subsample", "subsample_ordered")
#: ``pad_inputs(padding=...)`` values, as Hugging Face tokenizers take them
PADDINGS = (False, True, "longest", "max_length", "do_not_pad")
#: ``return_tensors`` values (``None``: Python lists)
TENSORS = (None, "np", "pt")

# what the parameters of this module accept (:mod:`genotok.params`): ``max_length=True`` is
# not a length (it would cut every row to one token); a pad id a 64-bit integer holds
MAX_LENGTH = [Interval(Integral, 1, MAX_SEQUENCE), None]
TOKEN_ID = [Interval(Integral, 0, None)]
RNG = [InstanceOf(np.random.Generator), None]
ROWS = [InstanceOf(Ragged, Sequence, np.ndarray)]
VALUES = [InstanceOf(Sequence, np.ndarray), None]
TENSOR_KINDS = [Options("np", "pt"), None]


def _needs_max_length(v) -> bool:
    return bool(v.get("truncation")) or v.get("padding") == "max_length"


def token_ids(row, where: str, k: int) -> np.ndarray:
    """Record ``k`` of a caller's batch as a 1-D array of token ids, checked before anything
    converts it: integers (not bools, floats, text or objects: ``1.7`` is not an id, and a
    cast would make it 1), 0 … 2**63 - 1 (a negative id indexes nothing; a uint64 above int64
    would wrap negative). The array keeps its own integer dtype.

    Examples
    --------
    >>> token_ids([3, 4], "pack", 0).tolist()
    [3, 4]
    >>> token_ids([1.7], "pack", 2)
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: pack: record 2 holds float64 values, not token ids (integers): [1.7]
    """
    try:
        a = np.asarray(row)
    except (ValueError, TypeError):  # a ragged nesting
        raise ParameterError(f"{where}: record {k} is not a flat sequence of token ids") from None
    if a.ndim != 1:
        raise ParameterError(f"{where}: record {k} has {a.ndim} dimensions, a record of token "
                             "ids has one")
    if a.size and a.dtype.kind not in "iu":
        raise ParameterError(f"{where}: record {k} holds {a.dtype} values, not token ids "
                             f"(integers): {a[:3].tolist()}")
    if a.size and a.dtype.kind == "i" and int(a.min()) < 0:
        raise ParameterError(f"{where}: record {k} holds the negative token id {int(a.min())}")
    if a.size and a.dtype.kind == "u" and a.dtype.itemsize == 8 and \
            int(a.max()) > np.iinfo(np.int64).max:
        raise ParameterError(f"{where}: record {k} holds the token id {int(a.max())}, beyond "
                             "int64 (2**63 - 1)")
    return a


def token_values(values, n: int, where: str, k: int) -> np.ndarray:
    """Record ``k``'s value channel as float32: real numbers, one per token (``n``), checked
    before the cast (a shorter channel would misalign every later value).

    Examples
    --------
    >>> token_values([1, 2.5], 2, "pack", 0).tolist()
    [1.0, 2.5]
    >>> token_values([1.0], 2, "pack", 3)
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: pack: record 3 has 2 token ids and 1 values: one value per token
    """
    try:
        v = np.asarray(values)
    except (ValueError, TypeError):
        v = np.asarray(values, dtype=object)
    if v.ndim != 1 or (v.size and v.dtype.kind not in "iuf") or v.dtype.kind == "b":
        raise ParameterError(f"{where}: the values of record {k} are not a flat sequence of "
                             "numbers")
    if v.size != n:
        raise ParameterError(f"{where}: record {k} has {n} token ids and {v.size} values: one "
                             "value per token")
    return v.astype(np.float32, copy=False)




#: truncation and padding to ``max_length`` need a ``max_length``
NEEDS_MAX_LENGTH = Needs("max_length", _needs_max_length, "truncation or padding='max_length'")


@validated({"ids": [InstanceOf(np.ndarray)], "max_length": MAX_LENGTH[:1],
            "truncation": [Options(*TRUNCATIONS)], "rng": RNG})
def truncate(ids: np.ndarray, max_length: int, truncation: str = "head",
             rng: np.random.Generator | None = None) -> np.ndarray:
    """Cut a record to ``max_length`` tokens, by the strategy ``truncation``.

    ``head``: the first tokens; ``window``: a random contiguous window; ``subsample``: a random
    subset in random order (cell tokens are an unordered set); ``subsample_ordered``: a random
    subset keeping the original order (for models with position embeddings).

    Examples
    --------
    >>> import numpy as np
    >>> truncate(np.arange(10), 3).tolist()
    [0, 1, 2]
    >>> truncate(np.arange(10), 3, "subsample_ordered", np.random.default_rng(0)).tolist()
    [5, 6, 9]
    """
    return _cut(ids, max_length, truncation, rng)


def _cut(ids: np.ndarray, max_length: int, strategy: str, rng) -> np.ndarray:
    """:func:`truncate` on arguments its caller has checked (a batch's records: one check of
    the batch's parameters, not one per record)."""
    if ids.size <= max_length:
        return ids
    if strategy == "head":
        return ids[:max_length]
    rng = rng if rng is not None else np.random.default_rng()
    if strategy == "window":
        a = int(rng.integers(0, ids.size - max_length + 1))
        return ids[a:a + max_length]
    pick = rng.choice(ids.size, size=max_length, replace=False)
    if strategy == "subsample_ordered":
        pick.sort()
    return ids[pick]


@validated({"rows": ROWS, "pad_token_id": TOKEN_ID, "pad_to": [Interval(Integral, 0, None), None],
            "values": VALUES})
def pad_batch(rows: Sequence[np.ndarray] | Ragged, pad_token_id: int, *, pad_to: int | None = None,
              values: Sequence[np.ndarray] | np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Right-pad rows into ``input_ids`` (int64) and ``attention_mask``; ``values`` alongside.

    ``rows`` is a sequence of token arrays or a :class:`~genotok.ragged.Ragged` (then ``values``
    may be its flat value channel). ``pad_to`` (``None``: the longest row) must not be shorter
    than any row.

    Examples
    --------
    >>> pad_batch([[1, 2], [3]], 0)["input_ids"].tolist()
    [[1, 2], [3, 0]]
    >>> from genotok.ragged import Ragged
    >>> r = Ragged([1, 2, 3], [0, 2, 3], values=[0.5, 1.0, 2.0])
    >>> pad_batch(r, 0, values=r.values)["values"].tolist()
    [[0.5, 1.0], [2.0, 0.0]]
    """
    if isinstance(rows, Ragged):
        lengths = rows.lengths.astype(np.int64, copy=False)
        flat = lambda: np.asarray(rows.data, dtype=np.int64)
        flat_values = (lambda: np.asarray(values, dtype=np.float32)) if values is not None else None
    else:
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = lambda: np.concatenate([np.asarray(r, dtype=np.int64) for r in rows])
        flat_values = None if values is None else (
            lambda: np.concatenate([np.asarray(v, dtype=np.float32) for v in values]))
    width = int(lengths.max()) if lengths.size else 0
    if pad_to is not None:
        if pad_to < width:
            raise ValueError(f"a row has {width} tokens, more than pad_to={pad_to}: truncate first")
        width = pad_to
    ids = np.full((lengths.size, width), pad_token_id, dtype=np.int64)
    mask = np.arange(width)[None, :] < lengths[:, None]
    if lengths.sum():
        ids[mask] = flat()
    out = {"input_ids": ids, "attention_mask": mask.astype(np.int64)}
    if flat_values is not None:
        vals = np.zeros((lengths.size, width), dtype=np.float32)
        if lengths.sum():
            vals[mask] = flat_values()
        out["values"] = vals
    return out


@validated({"batch": [InstanceOf(dict)], "return_tensors": TENSOR_KINDS})
def as_tensors(batch: dict, return_tensors: str | None) -> dict:
    """A padded batch as ``"np"`` arrays (unchanged), ``"pt"`` torch tensors or (``None``) lists.

    torch is imported only for ``"pt"``.

    Examples
    --------
    >>> as_tensors(pad_batch([[1, 2], [3]], 0), None)["attention_mask"]
    [[1, 1], [1, 0]]
    """
    if return_tensors is None:
        return {k: v.tolist() for k, v in batch.items()}
    if return_tensors == "pt":
        from ._optional import require

        torch = require("torch", "return_tensors='pt'")
        return {k: torch.from_numpy(v) for k, v in batch.items()}
    return batch


@validated({"rows": ROWS, "pad_token_id": TOKEN_ID, "max_length": MAX_LENGTH,
            "truncation": [Options(*TRUNCATIONS), None],
            "padding": [Options("longest", "max_length")], "shuffle_tokens": [Flag()],
            "cls_token_id": TOKEN_ID + [None], "eos_token_id": TOKEN_ID + [None],
            "values": VALUES, "rng": RNG}, rules=[NEEDS_MAX_LENGTH])
def make_batch(rows: Sequence[np.ndarray], *, pad_token_id: int, max_length: int | None = None,
               truncation: str | None = None, padding: str = "longest",
               shuffle_tokens: bool = False, cls_token_id: int | None = None,
               eos_token_id: int | None = None, values: Sequence[np.ndarray] | None = None,
               rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
    """Records → model inputs: optional token shuffle (``shuffle_tokens``: the order within each
    record), truncation, ``<cls>``/``<eos>``, padding.

    ``max_length`` counts the wrapping tokens. ``padding="longest"`` pads to the longest row,
    ``"max_length"`` to ``max_length``. With ``values`` (one per token), the value channel
    follows the same shuffles and cuts (wrapping tokens get value 0).

    Examples
    --------
    >>> make_batch([[1, 2, 3]], pad_token_id=0, max_length=4, padding="max_length")["input_ids"].tolist()
    [[1, 2, 3, 0]]
    """
    rng = rng if rng is not None else np.random.default_rng()
    head = [] if cls_token_id is None else [cls_token_id]
    tail = [] if eos_token_id is None else [eos_token_id]
    extra = len(head) + len(tail)
    if max_length is not None and max_length <= extra:
        raise ValueError(f"max_length={max_length} leaves no room beside <cls>/<eos>")
    out_rows, out_vals = [], []
    rows = [token_ids(r, "make_batch", k) for k, r in enumerate(rows)]
    if values is not None:
        if len(values) != len(rows):
            raise ParameterError(f"make_batch: {len(rows)} records and {len(values)} value "
                                 "channels: one per record")
        values = [token_values(v, r.size, "make_batch", k) for k, (r, v) in
                  enumerate(zip(rows, values))]
    for k, r in enumerate(rows):
        idx = np.arange(len(r))
        if shuffle_tokens:
            idx = rng.permutation(idx)
        if truncation:
            idx = _cut(idx, max_length - extra, truncation, rng)
        elif max_length is not None and idx.size + extra > max_length:
            raise ValueError(f"row {k} has {idx.size} tokens, more than max_length={max_length}: "
                             "set truncation")
        out_rows.append(np.concatenate([np.array(head, np.int64),
                                        np.asarray(np.asarray(r)[idx], dtype=np.int64),
                                        np.array(tail, np.int64)]))
        if values is not None:
            v = np.asarray(values[k], dtype=np.float32)[idx]
            out_vals.append(np.concatenate([np.zeros(len(head), np.float32), v,
                                            np.zeros(len(tail), np.float32)]))
    return pad_batch(out_rows, pad_token_id, pad_to=max_length if padding == "max_length" else None,
                     values=out_vals if values is not None else None)


class Encoding(dict):
    """The model inputs :func:`pad_inputs` and ``tok(...)`` return: a dict (``input_ids``,
    ``attention_mask``, ``values``), shown in a notebook as a table of shapes and first ids.

    Examples
    --------
    >>> enc = pad_inputs([[4, 5], [6]], 1, padding=True, return_tensors="np")
    >>> enc["input_ids"].shape, "(2, 2) int64: [4, 5, 6, 1]" in enc._repr_html_()
    ((2, 2), True)
    """

    def _repr_html_(self) -> str:
        from ._html import card

        fields = {}
        for k, v in self.items():
            if hasattr(v, "shape"):  # an array or a tensor
                desc, first = f"{tuple(v.shape)} {v.dtype}", v.reshape(-1)[:9].tolist()
            else:  # lists: one row, or rows
                rows = v if v and isinstance(v[0], list) else [v]
                sizes = [len(r) for r in rows]
                desc = f"{len(rows)} list(s) of {min(sizes, default=0)}-{max(sizes, default=0)}"
                first = (rows[0] if rows else [])[:9]
            head = ", ".join(map(str, first[:8])) + (", …" if len(first) > 8 else "")
            fields[k] = f"{desc}: [{head}]"
        return card("model inputs", fields)


@validated({"rows": ROWS, "pad_token_id": TOKEN_ID, "single": [Flag()],
            "padding": [Options(*PADDINGS)], "truncation": [Flag()], "max_length": MAX_LENGTH,
            "return_tensors": TENSOR_KINDS, "return_attention_mask": [Flag()]},
           rules=[NEEDS_MAX_LENGTH])
def pad_inputs(rows, pad_token_id: int, *, single: bool = False, padding=False, truncation=False,
               max_length: int | None = None, return_tensors: str | None = None,
               return_attention_mask: bool = True) -> dict:
    """Token rows → model inputs the way Hugging Face tokenizers pad them.

    ``padding=True``/``"longest"`` pads to the longest row, ``"max_length"`` to ``max_length``
    (or the longest row, if longer and not truncated); ``truncation=True`` keeps the first
    ``max_length`` tokens. Without padding, ``return_tensors`` needs rows of one length. Lists by
    default, arrays with ``"np"``, torch tensors with ``"pt"``; ``single`` returns the first row
    only (one region set in, one out) as lists; tensors keep the batch dimension,
    ``(1, n)``, as Hugging Face returns them. A :class:`~genotok.ragged.Ragged` with a value channel
    (``tokenize_anndata(..., CellSpec(values=True))``) also gets ``"values"`` (float32, 0 on padding).
    :meth:`genotok.Tokenizer.pad` is this with the tokenizer's pad id.

    Examples
    --------
    >>> pad_inputs([[4, 5], [6]], 1, padding=True)
    {'input_ids': [[4, 5], [6, 1]], 'attention_mask': [[1, 1], [1, 0]]}
    >>> pad_inputs([[4, 5, 6]], 1, single=True, truncation=True, max_length=2)["input_ids"]
    [4, 5]
    """
    padding = False if padding == "do_not_pad" else padding
    vals = None  # a Ragged's value channel is padded alongside, into "values"
    if isinstance(rows, Ragged) and rows.values is not None:
        vals = [rows.values[a:b] for a, b in zip(rows.offsets[:-1].tolist(), rows.offsets[1:].tolist())]
    rows = [np.asarray(r, dtype=np.int64) for r in rows]
    if truncation:
        rows = [_cut(r, max_length, "head", None) for r in rows]
        if vals is not None:  # "head": each row's first values
            vals = [v[:r.size] for v, r in zip(vals, rows)]
    longest = max((r.size for r in rows), default=0)
    pad_to = None
    if padding in (True, "longest"):
        pad_to = longest
    elif padding == "max_length":
        pad_to = max(max_length, longest) if not truncation else max_length
    if pad_to is None and return_tensors is not None and len({r.size for r in rows}) > 1:
        raise ValueError("sets have different lengths: use padding=True to return tensors")
    if return_tensors is None and not padding:
        out = {"input_ids": [r.tolist() for r in rows]}
        if return_attention_mask:
            out["attention_mask"] = [[1] * r.size for r in rows]
        if vals is not None:
            out["values"] = [v.tolist() for v in vals]
    else:
        out = pad_batch(rows, pad_token_id, pad_to=pad_to, values=vals)
        if not return_attention_mask:
            del out["attention_mask"]
        out = as_tensors(out, return_tensors)
    if single and return_tensors is None:  # tensors keep their batch dimension, as in HF
        out = {k: v[0] for k, v in out.items()}
    return Encoding(out)


__all__ = ["PADDINGS", "TENSORS", "TRUNCATIONS", "Encoding", "as_tensors", "make_batch",
           "pad_batch", "pad_inputs", "truncate"]
