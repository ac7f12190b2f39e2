"""What a cell becomes: :class:`CellSpec` and its value encodings.

A :class:`CellSpec` is one frozen, validated, JSON-serialisable description of how a cell's
stored entries become its tokens: which entries are kept and in what order (``min_count``,
``unique``, ``unknown``, ``order``, ``seed``), how long a cell may be (``max_length``,
``truncation``), how its values are encoded (``encoding``: :class:`Normalize`,
:class:`Log1p`, :class:`RankByMedian`, :class:`Bins`, in this order), its condition tokens
(``prepend``, ``condition_unknown``, ``add_cls``), whether the values are returned
(``values``) and how fragment lines count (``use_count``). The same spec drives
:func:`~genotok.tokenize_anndata`, :func:`~genotok.tokenize_fragments` and is stored, as
JSON, in the corpus header.

Defaults
--------
* ``order``: ``"value"`` when the encoding ranks by median (Geneformer's rank-value encoding
  *is* an order), else ``"genomic"``;
* ``unique``: ``False`` with ``order="var"`` (geniml's sequences keep every (peak, token)
  pair), else ``True``;
* ``values``: ``False`` for every entry point (ask for the value channel);
* ``use_count``: ``False``: each fragment line counts once, as gtars and SnapATAC2 count.

Adding a value encoding
-----------------------
One class (a frozen dataclass with ``name``, ``encode(chunk)`` and the JSON of its fields) and
one registry line, ``register_encoding(MyEncoding)`` (or a ``genotok.encodings`` entry point):
see ``docs/architecture.md``.

Examples
--------
>>> spec = CellSpec(encoding=(Normalize(1e4), RankByMedian()), max_length=2048)
>>> spec.order, spec.unique
('value', True)
>>> CellSpec.from_json(spec.to_json()) == spec
True
>>> CellSpec(order="var").unique
False
"""

from __future__ import annotations

import abc
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar

import numpy as np

from .._usage import did_you_mean
from ..params import (Each, Flag, HasAttr, InstanceOf, Integral, Interval, Options,
                      ParameterError, Real, validate, validate_fields)
from ..kernels.modes import Order, Truncate, Unknown, names
from ..kernels import values as VK
from . import conditions

#: ``order=`` of a cell spec: the cell kernel's :class:`~genotok.kernels.modes.Order`, and
#: ``"var"`` (geniml's storage order, every (peak, token) pair as stored)
ORDERS = (*names(Order), "var")
#: ``truncation=`` of a cell spec: the largest values, or a seeded sample
TRUNCATIONS = names(Truncate)
#: ``unknown=`` (``None``: the tokenizer's policy)
UNKNOWN = names(Unknown)


# ---------------------------------------------------------------------------- value encodings
class Encoding(abc.ABC):
    """A value encoding step (an abstract base class). Subclasses are frozen dataclasses with
    a unique ``name``; their fields are their JSON (:meth:`to_json`, :meth:`from_json`).

    ``encode(chunk)`` takes a :class:`~genotok.singlecell.Chunk` (whole CSR rows, ``indptr``
    rebased to 0, ``row0`` the first row's number in the input, ``n_cols`` the columns) and
    returns the new values of its stored entries: a float array of ``chunk.data``'s shape,
    computed from the chunk alone (never written into it), the same for the same chunk. The
    built-in steps at the head of a spec's chain (``Normalize``/``Log1p``, then
    ``RankByMedian``/``Bins``) run fused in the kernels of :mod:`genotok.singlecell.values`;
    every step after them, built in or not, runs chunk by chunk through its own ``encode``, in
    the order given. :func:`genotok.testing.check_encoding` holds the contract.

    Examples
    --------
    >>> sorted(ENCODINGS)
    ['bins', 'log1p', 'normalize', 'quantile_bins', 'rank_by_median']
    """

    name: ClassVar[str] = ""

    @abc.abstractmethod
    def encode(self, chunk) -> np.ndarray:
        """The new values of ``chunk``'s stored entries (``chunk.data``'s shape)."""

    def to_json(self) -> dict:
        return {"name": self.name, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_json(cls, d: dict) -> Encoding:
        names = [f.name for f in fields(cls)]
        _known_keys(cls.__name__, d, names)
        return cls(**{k: v for k, v in d.items() if k != "name"})

    def _alone(self):
        """The :class:`~genotok.singlecell.values.ValueEncoding` that runs this built-in step
        alone (its ``encode``: the fused kernels on one step)."""
        from .values import value_encoding

        kw = _fused((self,))[0]
        if isinstance(kw["rank"], str):
            raise ParameterError("RankByMedian() computes its medians from the matrix; after "
                                 "another step it needs them given: RankByMedian(medians)")
        return value_encoding(**kw)

    def _encode_builtin(self, chunk) -> np.ndarray:
        ch = chunk.rebased()
        return self._alone().encode(ch.indptr, ch.indices, ch.data, ch.n_cols,
                                    f"{self.name} (rows {ch.row0}..)", ch.row0)


def _known_keys(what: str, d: Mapping, names: list, extra=("name",)) -> None:
    """A key of ``d`` (a spec's JSON or TOML table) that is not a field of ``what``: refused
    naming it, with the closest field."""
    unknown = sorted((str(k) for k in set(d) - {*extra, *names}))
    if unknown:
        raise ParameterError(f"{what}: unknown field(s) {unknown}"
                             f"{did_you_mean(unknown[0], names)}; the fields are {names}")


def register_encoding(cls: type[Encoding]) -> type[Encoding]:
    """Add a value encoding class to :data:`ENCODINGS` by its ``name`` (a class decorator,
    too): :meth:`CellSpec.from_json` then finds it. The ``genotok.encodings`` entry points of
    installed distributions are registered the same way when the registry is first read.

    >>> register_encoding(Log1p) is Log1p
    True
    """
    from .. import _plugins

    return _plugins.claim(ENCODINGS, cls, Encoding, "name", "value encoding")


def encodings() -> dict[str, type[Encoding]]:
    """:data:`ENCODINGS`, after loading the ``genotok.encodings`` plugins once.

    >>> "bins" in encodings()
    True
    """
    from .. import _plugins

    _plugins.load("genotok.encodings", register_encoding)
    return ENCODINGS


@dataclass(frozen=True)
class Normalize(Encoding):
    """Each entry divided by its cell's total, times ``target_sum``; then ``log(1 + x)`` with
    ``log1p=True``.

    ``total``: an ``obs`` column holding each cell's total (Geneformer's ``n_counts``), used
    when the file has it (else the row's sum); with a :class:`~genotok.GeneTokenizer` only
    (see :mod:`genotok.singlecell.features`).

    Examples
    --------
    >>> Normalize(100, log1p=True).to_json()
    {'name': 'normalize', 'target_sum': 100.0, 'log1p': True}
    >>> Normalize(total="n_counts").to_json()["total"]
    'n_counts'
    """

    target_sum: float = 1e4
    log1p: bool = False
    total: str | None = None
    name: ClassVar[str] = "normalize"
    CONSTRAINTS: ClassVar[dict] = {"target_sum": [Interval(Real, 0, 1e308, closed="right")],
                                   "log1p": [Flag()], "total": [InstanceOf(str), None]}

    def to_json(self) -> dict:
        d = super().to_json()
        if self.total is None:
            del d["total"]
        return d

    def __post_init__(self):
        validate_fields(self)
        object.__setattr__(self, "log1p", bool(self.log1p))
        object.__setattr__(self, "target_sum", float(self.target_sum))

    def encode(self, chunk) -> np.ndarray:
        if self.total is not None:
            raise ParameterError("Normalize(total=...) reads each cell's total from obs: it "
                                 "runs first in the chain only")
        return self._encode_builtin(chunk)


@dataclass(frozen=True)
class Log1p(Encoding):
    """``log(1 + x)`` of each entry, without normalising.

    Examples
    --------
    >>> Log1p().to_json()
    {'name': 'log1p'}
    """

    name: ClassVar[str] = "log1p"
    CONSTRAINTS: ClassVar[dict] = {}

    def encode(self, chunk) -> np.ndarray:
        return self._encode_builtin(chunk)


#: the largest cell spec TOML file read (its medians included)
MAX_TOML_BYTES = 256 << 20


def _median_problem(v) -> str | None:
    """Why ``v`` is not a median (``None``: it is one; NaN: a feature without a median)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return ", not a number"
    if not (math.isnan(v) or 0 <= v < math.inf):
        return "; medians are finite and >= 0 (NaN or 0: a feature without a median)"
    return None


def _medians_array(medians):
    """The medians as an array or a ``{feature id: median}`` dict in key order, each value
    checked before it is converted (a string, a negative or an infinite median is refused
    here, not at tokenize time)."""
    if isinstance(medians, Mapping):  # keyed by feature id (a gene vocabulary's features)
        out = {}
        for k, v in sorted(medians.items(), key=lambda kv: str(kv[0])):
            problem = _median_problem(v)
            if problem:
                raise ParameterError(f"RankByMedian: the median of {k!r} is {v!r}{problem}")
            if str(k) in out:  # 1 and "1" (a pickle's keys) are one feature id
                raise ParameterError(f"RankByMedian: feature {str(k)!r} has two medians (keys "
                                     "of different types with the same text); keep one")
            out[str(k)] = float(v)
        return out
    if not isinstance(medians, (np.ndarray, list, tuple)):
        raise ParameterError(f"RankByMedian: medians are an array, a list or a mapping "
                             f"{{feature id: median}}, got {type(medians).__name__}")
    med = np.asarray(medians) if isinstance(medians, np.ndarray) else np.asarray(
        medians, dtype=object)
    if med.ndim != 1:
        raise ParameterError(f"RankByMedian: medians must be one-dimensional, got shape "
                             f"{med.shape}")
    if med.dtype.kind not in "iuf":  # a list: each entry checked before it is converted
        med = np.array([np.nan if v is None else v for v in med.tolist()], dtype=object)
        for i, v in enumerate(med.tolist()):
            problem = _median_problem(v)
            if problem:
                raise ParameterError(f"RankByMedian: median {i} is {v!r}{problem}")
    med = med.astype(np.float64)
    bad = np.flatnonzero(~(np.isnan(med) | ((med >= 0) & (med < np.inf))))
    if bad.size:
        raise ParameterError(f"RankByMedian: median {int(bad[0])} is {med[bad[0]]}; medians "
                             "are finite and >= 0 (NaN or 0: a feature without a median)")
    return med


def _fitted_on(fitted) -> tuple | None:
    """``fitted_on`` checked as ``(normalize, target_sum, log1p)`` before it is converted."""
    if fitted is None:
        return None
    if not isinstance(fitted, (tuple, list)) or len(fitted) != 3:
        raise ParameterError(f"RankByMedian: fitted_on is (normalize, target_sum, log1p), "
                             f"e.g. ['total', 10000.0, false], got {fitted!r}")
    norm, target, log1p = fitted
    validate({"fitted_on[0]": norm, "fitted_on[1]": target, "fitted_on[2]": log1p},
             {"fitted_on[0]": [Options("total"), None],
              "fitted_on[1]": [Interval(Real, 0, 1e308, closed="right")],
              "fitted_on[2]": [Flag()]}, "RankByMedian")
    return (norm, float(target), bool(log1p))


@dataclass(frozen=True, eq=False)
class RankByMedian(Encoding):
    """Geneformer's rank-value encoding: each entry divided by its feature's median of the
    non-zero (normalised) values; tokens then come by this ratio, descending.

    ``medians``: ``None`` (computed from the matrix being tokenized), an array (NaN: a feature
    without a median), a mapping ``{feature id: median}`` (Geneformer's
    ``gene_median_dictionary``; with a :class:`~genotok.GeneTokenizer`), :func:`~genotok.singlecell.feature_medians`' ``(medians, method)`` or a
    corpus written with them (its training medians, and the normalisation they were of,
    which the spec must repeat).

    Examples
    --------
    >>> import numpy as np
    >>> r = RankByMedian(np.array([2.0, np.nan]))
    >>> r.to_json()["medians"], r.method, RankByMedian.from_json(r.to_json()) == r
    ([2.0, None], 'given', True)
    """

    medians: np.ndarray | None = field(default=None, repr=False)
    method: str | None = None
    #: the normalisation the medians are of (a corpus' ``[normalize, target_sum, log1p]``)
    fitted_on: tuple | None = None
    name: ClassVar[str] = "rank_by_median"
    #: ``medians`` and ``fitted_on`` are checked in depth by ``__post_init__`` (a corpus,
    #: ``(medians, method)``, each median a finite number >= 0 or NaN)
    CONSTRAINTS: ClassVar[dict] = {"medians": [InstanceOf(np.ndarray, list, tuple, Mapping),
                                               HasAttr("header"), None],
                                   "method": [InstanceOf(str), None],
                                   "fitted_on": [InstanceOf(tuple, list), None]}

    def __post_init__(self):
        validate_fields(self)
        med, method, fitted = self.medians, self.method, self.fitted_on
        if med is not None and hasattr(med, "header"):  # a corpus: its training medians
            from .values import ValueEncoding

            stored = med.header.get("extra") or {}
            stored = next((v["values_encoding"] for v in stored.values()
                           if isinstance(v, dict) and v.get("values_encoding")), None)
            if stored is None or stored.get("medians") is None:
                raise ParameterError("the corpus was not written with RankByMedian(); it has "
                                     "no medians")
            trained = ValueEncoding.from_json(stored)
            med, method = trained.medians, trained.median_method
            fitted = (trained.normalize, trained.target_sum, trained.log1p)
        elif isinstance(med, tuple) and len(med) == 2 and isinstance(med[1], str):
            med, method = med
        if med is not None:
            med = _medians_array(med)
            method = "given" if method is None else method
        object.__setattr__(self, "medians", med)
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "fitted_on", _fitted_on(fitted))

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        a, b = self.medians, other.medians
        if isinstance(a, dict) or isinstance(b, dict):  # NaN (no median) equals NaN
            same = (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                    and np.array_equal(np.fromiter(a.values(), float, len(a)),
                                       np.fromiter((b[k] for k in a), float, len(b)),
                                       equal_nan=True))
            return same and (self.method, self.fitted_on) == (other.method, other.fitted_on)
        same = (a is None and b is None) or (a is not None and b is not None and a.shape ==
                                              b.shape and np.array_equal(a, b, equal_nan=True))
        return same and (self.method, self.fitted_on) == (other.method, other.fitted_on)

    __hash__ = None  # an array inside: compared by value, not hashed

    def encode(self, chunk) -> np.ndarray:
        if isinstance(self.medians, dict):
            raise ParameterError("RankByMedian with medians keyed by feature id runs in the "
                                 "fused head of the chain only (a GeneTokenizer's columns)")
        return self._encode_builtin(chunk)

    def to_json(self) -> dict:
        if isinstance(self.medians, dict):
            med = {k: None if not math.isfinite(x) else x for k, x in self.medians.items()}
            return {"name": self.name, "medians": med, "method": self.method,
                    "fitted_on": None if self.fitted_on is None else list(self.fitted_on)}
        med = None if self.medians is None else [
            None if not math.isfinite(x) else x for x in self.medians.tolist()]
        return {"name": self.name, "medians": med, "method": self.method,
                "fitted_on": None if self.fitted_on is None else list(self.fitted_on)}

    @classmethod
    def from_json(cls, d: dict) -> RankByMedian:
        _known_keys("RankByMedian", d, ["medians", "method", "fitted_on"])
        med = d.get("medians")
        if isinstance(med, dict):
            med = {k: np.nan if x is None else x for k, x in med.items()}
        elif isinstance(med, list):  # JSON null / TOML nan: a feature without a median
            med = [np.nan if x is None else x for x in med]
        elif med is not None:
            raise ParameterError(f"RankByMedian: medians are a list or a table {{feature id = "
                                 f"median}}, got {type(med).__name__} {str(med)[:40]!r}")
        return cls(med, d.get("method"), d.get("fitted_on"))


@dataclass(frozen=True)
class Bins(Encoding):
    """scGPT's value binning: per cell, ``n - 1`` quantile bins of the positive values (0 is
    the zero bin).

    Examples
    --------
    >>> Bins(11).n
    11
    """

    n: int = 51
    name: ClassVar[str] = "bins"
    CONSTRAINTS: ClassVar[dict] = {"n": [Interval(Integral, 2, 2**24 + 1)]}

    def __post_init__(self):
        validate_fields(self)

    def encode(self, chunk) -> np.ndarray:
        return self._encode_builtin(chunk)


@dataclass(frozen=True)
class QuantileBins(Encoding):
    """scGPT's value binning as its ``preprocess.binning`` computes it: per cell, the edges are
    ``numpy.quantile`` of the positive values at ``linspace(0, 1, n - 1)``; a positive value
    gets ``numpy.digitize(v, edges)`` (``side="one"``), or, where it sits on several equal
    edges, a uniform draw between ``digitize(v, edges, right=True)`` and that (``"both"``,
    scGPT's default: ``ceil(u * (right - left) + left)``); 0 stays 0 (bins ``1 .. n - 1``).
    scGPT draws ``u`` from NumPy's global generator; here each cell draws from its own
    SplitMix64 stream seeded by ``(seed, row)``, so the bins do not depend on chunking or threads
    (the same distribution as scGPT's, not its draws: ``side="one"`` is equal bin for bin).

    Examples
    --------
    >>> import numpy as np
    >>> from genotok.singlecell import Chunk
    >>> QuantileBins(5, side="one").encode(Chunk(0, np.array([0, 4]), np.arange(4),
    ...                                          np.array([1., 2, 3, 4]), 4))
    array([1., 2., 3., 4.])
    """

    n: int = 51
    side: str = "both"
    seed: int = 0
    name: ClassVar[str] = "quantile_bins"
    CONSTRAINTS: ClassVar[dict] = {"n": [Interval(Integral, 3, 2**24 + 1)],
                                   "side": [Options("one", "both")],
                                   "seed": [Interval(Integral, 0, 2**63 - 1)]}

    def __post_init__(self):
        validate_fields(self)

    def encode(self, chunk) -> np.ndarray:
        ch = chunk.rebased()
        indptr = np.ascontiguousarray(ch.indptr, dtype=np.int64)
        data = np.ascontiguousarray(ch.data, dtype=np.float64)
        row0 = ch.row0
        if indptr.size and (indptr[0] < 0 or indptr[-1] > data.size or
                            bool(np.any(indptr[1:] < indptr[:-1]))):
            raise ValueError(f"QuantileBins: bad row pointers for {data.size} values")
        # the edges, both digitize sides and the draw where they differ in one numba pass
        return VK.quantile_bins(indptr, data, False, 1.0, False, np.linspace(0, 1, self.n - 1),
                                int(self.seed), int(row0), self.side == "both",
                                np.zeros(data.size, np.float64))  # (entries past the rows: 0)


#: the value encodings by name (:func:`register_encoding`; the ``genotok.encodings`` plugins
#: are added when :func:`encodings` first reads it)
ENCODINGS: dict[str, type[Encoding]] = {
    Normalize.name: Normalize,
    Log1p.name: Log1p,
    RankByMedian.name: RankByMedian,
    Bins.name: Bins,
    QuantileBins.name: QuantileBins,
}
#: the steps that run fused at the head of a chain
BUILTIN = (Normalize, Log1p, RankByMedian, Bins)


def _encoding_chain(encoding) -> tuple:
    if encoding is None:
        return ()
    return (encoding,) if isinstance(encoding, Encoding) else tuple(encoding)


def _fused(steps: tuple) -> tuple[dict, tuple]:
    """The built-in head of ``steps`` (``Normalize`` or ``Log1p``, then ``RankByMedian`` or
    ``Bins``) as :func:`~genotok.singlecell.values.value_encoding`'s keywords, and the steps
    after it, in order (each run through its own ``encode(chunk)``)."""
    kw = {"normalize": None, "target_sum": 1e4, "log1p": False, "rank": None, "bins": None,
          "quantiles": None}
    i = 0
    if i < len(steps) and isinstance(steps[i], Normalize):
        kw.update(normalize="total", target_sum=float(steps[i].target_sum),
                  log1p=bool(steps[i].log1p))
        i += 1
        if i < len(steps) and isinstance(steps[i], QuantileBins):  # scGPT's: one kernel
            q = steps[i]
            kw["quantiles"] = (int(q.n), q.side, int(q.seed))
            i += 1
    elif i < len(steps) and isinstance(steps[i], Log1p):
        kw["log1p"] = True
        i += 1
    if i < len(steps) and isinstance(steps[i], RankByMedian):
        r = steps[i]
        kw["rank"] = "median" if r.medians is None else (r.medians, r.method)
        i += 1
    elif i < len(steps) and isinstance(steps[i], Bins):
        kw["bins"] = int(steps[i].n)
        i += 1
    rest = steps[i:]
    for s in rest:  # what a step after the head cannot do alone
        if isinstance(s, RankByMedian) and (s.medians is None or isinstance(s.medians, dict)):
            raise ParameterError(f"CellSpec: {s!r} after {steps[i - 1] if i else 'the head'} "
                                 "needs its medians given as an array (medians computed from "
                                 "the matrix, or keyed by feature id, are of the head's values)")
        if isinstance(s, Normalize) and s.total is not None:
            raise ParameterError("CellSpec: Normalize(total=...) reads each cell's total from "
                                 "obs: it comes first in the chain")
    return kw, rest


def _toml_string(text: str) -> str:
    r"""A TOML basic string: JSON's escapes for ``"``, ``\`` and the control characters
    (valid TOML), every other character as it is. JSON's ``ensure_ascii`` would write a
    character outside the BMP (an emoji) as a surrogate pair, ``\ud83d\ude00``, which TOML
    forbids; DEL, which JSON leaves raw, TOML wants escaped.

    >>> import tomllib
    >>> text = "donor \U0001F600 \x7f \n"
    >>> tomllib.loads("v = " + _toml_string(text))["v"] == text
    True
    """
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(v) -> str:
    """One TOML value of a spec's JSON: strings as TOML basic strings (:func:`_toml_string`),
    ``None`` inside a list (a feature without a median) as ``nan``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):  # medians keyed by gene id: an inline table (``key = value``)
        return "{" + ", ".join(f"{_toml_string(str(k))} = {_toml_value(x)}"
                               for k, x in v.items()) + "}"
    if isinstance(v, str):
        return _toml_string(v)
    return json.dumps(v)


# --------------------------------------------------------------------------------- the spec
@dataclass(frozen=True)
class CellSpec:
    """What a cell becomes (see :mod:`genotok.singlecell.spec`).

    Parameters
    ----------
    min_count
        Keep entries with ``value >= min_count`` (``None``: every stored entry ``> 0``).
    unique
        Merge a token reached from several peaks (values summed); default ``True``, ``False``
        with ``order="var"``.
    unknown
        ``"set"``, ``"region"`` or ``"drop"`` (``None``: the tokenizer's policy).
    order, seed
        ``"genomic"``, ``"value"`` (descending), ``"shuffle"`` (seeded per cell) or ``"var"``
        (geniml's storage order); default ``"value"`` with :class:`RankByMedian`, else
        ``"genomic"``.
    max_length, truncation
        At most ``max_length`` tokens per cell: the ``"top"`` values or a seeded ``"sample"``.
    encoding
        Value encoding steps: :class:`Normalize` or :class:`Log1p`, then
        :class:`RankByMedian` or :class:`Bins` (one step or a tuple).
    prepend, condition_unknown, add_cls
        ``obs`` columns whose condition tokens start each cell (a string is one column); a
        value without a token gives ``<unk>`` or an error (``"error"``); ``<cls>`` first.
    add_eos
        ``<eos>`` last (after truncation: ``max_length`` counts neither ``<cls>`` nor
        ``<eos>``; Geneformer V2's 4,096 is ``max_length=4094`` with both).
    values
        Return (store) each token's value as a float32 value channel.
    use_count
        Fragment files: weigh each fragment by its column-5 count (default: each line once).
    cell_filter
        An ``obs`` column: when the input has it, only the cells whose value ``== 1`` are
        tokenized (Geneformer's ``filter_pass``: ``1``, ``1.0`` and ``True`` pass); an input
        without it (a fragment file has no ``obs``) keeps every cell, as Geneformer does. The
        cells left out are still read (and checked); medians computed from the matrix
        (``RankByMedian()``) are of every cell.

    Examples
    --------
    >>> CellSpec(max_length=512, prepend="batch").prepend
    ('batch',)
    """

    min_count: float | None = None
    unique: bool | None = None
    unknown: str | None = None
    order: str | None = None
    seed: int = 0
    max_length: int | None = None
    truncation: str = "top"
    encoding: tuple = ()
    prepend: tuple = ()
    condition_unknown: str = "unk"
    add_cls: bool = False
    add_eos: bool = False
    values: bool = False
    use_count: bool = False
    cell_filter: str | None = None

    CONSTRAINTS: ClassVar[dict] = {
        "min_count": [Interval(Real, -math.inf, math.inf, closed="neither"), None],
        "unique": [Flag(), None],
        "unknown": [Options(*UNKNOWN), None],
        "order": [Options(*ORDERS), None],
        "seed": [Interval(Integral, 0, 2**63 - 1)],
        "max_length": [Interval(Integral, 1, None), None],
        "truncation": [Options(*TRUNCATIONS)],
        "encoding": [InstanceOf(Encoding, hint="value encodings: Normalize(), RankByMedian(), "
                                "Bins(n), ..."), Each(InstanceOf(Encoding), sequence=True), None],
        "prepend": [InstanceOf(str, tuple, list)],
        "condition_unknown": [Options(*conditions.UNKNOWN)],
        "add_cls": [Flag()],
        "add_eos": [Flag()],
        "values": [Flag()],
        "use_count": [Flag()],
        "cell_filter": [InstanceOf(str), None],
    }

    def __post_init__(self):
        validate_fields(self)
        steps = _encoding_chain(self.encoding)
        _fused(steps)  # the order of the steps
        ranked = any(isinstance(s, RankByMedian) for s in steps)
        order = self.order if self.order is not None else "value" if ranked else "genomic"
        unique = self.unique if self.unique is not None else order != "var"
        if order == "var" and unique:
            raise ParameterError("CellSpec: order='var' keeps every (peak, token) pair in "
                                 "storage order, as geniml does: it cannot be unique=True")
        for s in steps:
            if isinstance(s, RankByMedian) and s.fitted_on is not None:
                kw = _fused(steps)[0]
                mine = (kw["normalize"], kw["target_sum"], kw["log1p"])
                if tuple(s.fitted_on) != mine:
                    raise ParameterError(
                        f"CellSpec: the medians are of normalize={s.fitted_on[0]!r}, "
                        f"target_sum={s.fitted_on[1]}, log1p={s.fitted_on[2]}; encode with the "
                        f"same (got normalize={mine[0]!r}, target_sum={mine[1]}, "
                        f"log1p={mine[2]})")
        set_ = object.__setattr__
        set_(self, "encoding", steps)
        set_(self, "order", order)
        set_(self, "unique", bool(unique))
        set_(self, "prepend", tuple(conditions._check_columns(self.prepend, "CellSpec: prepend")))
        set_(self, "seed", int(self.seed))
        if self.max_length is not None:
            set_(self, "max_length", int(self.max_length))
        if self.min_count is not None:
            set_(self, "min_count", float(self.min_count))
        for name in ("add_cls", "add_eos", "values", "use_count"):
            set_(self, name, bool(getattr(self, name)))

    # --------------------------------------------------------------------- JSON
    def as_dict(self) -> dict:
        """The spec as plain JSON values (what :meth:`to_json` writes)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["encoding"] = [s.to_json() for s in self.encoding]
        d["prepend"] = list(self.prepend)
        return d

    def to_json(self) -> str:
        """The spec as JSON text (sorted keys: equal specs give equal text)."""
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text) -> CellSpec:
        """The spec of :meth:`to_json`'s text (or :meth:`as_dict`'s dict)."""
        if isinstance(text, (str, bytes, bytearray)):
            try:  # a deep nest is a RecursionError of the parser, bad UTF-8 a UnicodeError
                d = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise ParameterError(f"CellSpec: not a JSON cell spec: {exc}"[:500]) from None
        else:
            d = text
        if not isinstance(d, Mapping):
            raise ParameterError(f"CellSpec: a spec is a JSON object (a table), got "
                                 f"{type(d).__name__}")
        d = dict(d)
        _known_keys("CellSpec", d, [f.name for f in fields(cls)], extra=())
        steps = []
        encoding = () if d.get("encoding") is None else d["encoding"]
        prepend = () if d.get("prepend") is None else d["prepend"]
        validate({"encoding": encoding, "prepend": prepend},
                 {"encoding": [InstanceOf(list, tuple)], "prepend": [InstanceOf(str, list, tuple)]},
                 "CellSpec")
        for s in encoding:
            if not isinstance(s, Mapping):
                raise ParameterError(f"CellSpec: each encoding step is a table with a name "
                                     f"(e.g. {{name = \"bins\", n = 51}}), got {s!r}"[:300])
            name = s.get("name")
            known = encodings()
            if not isinstance(name, str) or name not in known:
                raise ParameterError(f"CellSpec: unknown value encoding {name!r}; known: "
                                     f"{sorted(known)}")
            steps.append(known[name].from_json(dict(s)))
        d["encoding"] = tuple(steps)
        d["prepend"] = (prepend,) if isinstance(prepend, str) else tuple(prepend)
        return cls(**d)

    def to_toml(self) -> str:
        """The spec as TOML text: its fields (``None`` left out: the default), then each
        encoding step as an ``[[encoding]]`` table. :meth:`from_toml` reads it back (``==``).

        Examples
        --------
        >>> print(CellSpec(max_length=512, encoding=Bins(5)).to_toml())
        add_cls = false
        add_eos = false
        condition_unknown = "unk"
        max_length = 512
        order = "genomic"
        prepend = []
        seed = 0
        truncation = "top"
        unique = true
        use_count = false
        values = false
        <BLANKLINE>
        [[encoding]]
        name = "bins"
        n = 5
        <BLANKLINE>
        """
        d = json.loads(self.to_json())
        steps = d.pop("encoding")
        lines = [f"{k} = {_toml_value(v)}" for k, v in sorted(d.items()) if v is not None]
        for step in steps:
            lines += ["", "[[encoding]]", f"name = {_toml_value(step.pop('name'))}"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in step.items() if v is not None]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, source) -> CellSpec:
        """The spec of a TOML file (a path) or text (a ``str`` holding a newline or ``=``),
        as :meth:`to_toml` writes it; a field left out takes its default. A file that is not
        TOML, or names an unknown field, is refused naming the file (and line).

        Examples
        --------
        >>> CellSpec.from_toml("max_length = 64").max_length
        64
        """
        import os

        from .._io import parse_toml, read_small

        text = source if isinstance(source, str) and ("\n" in source or "=" in source) else None
        where = "CellSpec TOML" if text is not None else os.fspath(source)
        if text is None:
            text = read_small(source, MAX_TOML_BYTES, ParameterError, "cell spec")
        d = parse_toml(text, where, ParameterError, "cell spec")
        try:
            return cls.from_json(d)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
            raise ParameterError(f"{where}: {exc}") from None

    def replace(self, **changes) -> CellSpec:
        """A copy with ``changes`` (validated again)."""
        return replace(self, **changes)

    # --------------------------------------------------------------------- for the drivers
    def encoding_kwargs(self) -> dict:
        """The built-in steps as :func:`~genotok.singlecell.values.value_encoding`'s
        keywords (``rank``: ``"median"`` to compute the medians, or ``(medians, method)``)."""
        return _fused(self.encoding)[0]

    def extra_steps(self) -> tuple:
        """The encoding steps after the built-in ones (run by their own ``encode``)."""
        return _fused(self.encoding)[1]


__all__ = ["Bins", "CellSpec", "ENCODINGS", "Encoding", "Log1p", "Normalize", "QuantileBins",
           "RankByMedian", "encodings", "register_encoding"]



def fields_elsewhere(call: str, shape: str = "x, tokenizer, CellSpec({f}=...)") -> dict[str, str]:
    """What an entry point says when given a :class:`CellSpec` field as its own keyword: the
    field's name -> the call that takes it (for :func:`genotok._usage.keywords`).

    >>> fields_elsewhere("tokenize_anndata")["max_length"]
    'max_length is a CellSpec field: tokenize_anndata(x, tokenizer, CellSpec(max_length=...))'
    """
    return {f.name: f"{f.name} is a CellSpec field: {call}({shape.format(f=f.name)})"
            for f in fields(CellSpec)}
