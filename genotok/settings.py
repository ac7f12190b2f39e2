"""The Tokenizer's settings: how queries become tokens (overlap mode, filters, unknown policy,
hit order, gtars backend), as a frozen dataclass stored with every corpus.

Its own module so that :mod:`genotok.pretrained` (which reads gtars configurations into
settings) and :mod:`genotok.tokenizer` (which loads pretrained tokenizers) do not import each
other: both import this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .kernels.modes import Unknown
from .params import Integral, Interval, Options, Real, validate

OVERLAP_MODES = ("all", "best")
#: ``unknown=`` -> the kernels' mode (:class:`~genotok.kernels.modes.Unknown`, as a plain int)
UNKNOWN_POLICIES = {m.name.lower(): int(m) for m in Unknown}
ORDERS = ("gtars", "input", "genomic", "unique")
FRACTION_OF = ("query", "region")
#: gtars' overlap backends (``tokenizer_type``): one engine here, each backend's hit order
TOKENIZER_TYPES = ("bits", "ailist")


@dataclass(frozen=True)
class TokenizerSettings:
    """How queries become tokens. Stored with every corpus so a dataset can be reproduced.

    ``Tokenizer(universe, settings=TokenizerSettings(overlap="best"))``; the ``from_*``
    constructors take the same fields as keywords (``Tokenizer.from_bed(path,
    overlap="best")``).

    Parameters
    ----------
    overlap : str, default "all"
        ``"all"`` (every overlapped universe region, as gtars) or ``"best"`` (the region with
        the largest overlap per query; ties go to the lowest id).
    min_overlap : int, default 0
        Minimum overlap in bp for a hit (0: any half-open overlap counts).
    min_fraction : float, default 0.0
        Minimum overlap as a fraction (0 to 1) of the query or of the universe region, as
        ``fraction_of`` says.
    fraction_of : str, default "query"
        ``"query"`` (like bedtools and geniml's ``-f``) or ``"region"`` (the universe region).
    unknown : str, default "set"
        ``"set"`` (gtars: one ``<unk>`` when the whole set hits nothing), ``"region"`` (one
        ``<unk>`` per query without a hit, so outputs stay aligned with inputs) or ``"drop"``.
    order : str, default "gtars"
        ``"gtars"`` (a BED file is stable-sorted by (chromosome name as bytes, start) first,
        in-memory regions keep their order; hits of a query by ascending universe position),
        ``"input"`` (input order, files too), ``"genomic"`` (by universe position) or
        ``"unique"`` (de-duplicated, genomic).
    tokenizer_type : str, default "bits"
        gtars' overlap backend, ``"bits"`` (default) or ``"ailist"``; any other value is
        refused. The hits are the same; the order of one query's several hits follows the
        backend (``"bits"``: ascending position; ``"ailist"``: as gtars' AIList reports them,
        see :attr:`Universe.ailist_key`) with the ``"gtars"`` and ``"input"`` orders.

    Examples
    --------
    >>> TokenizerSettings(overlap="best").as_dict()["overlap"]
    'best'
    """

    overlap: str = "all"
    min_overlap: int = 0
    min_fraction: float = 0.0
    fraction_of: str = "query"
    unknown: str = "set"
    order: str = "gtars"
    tokenizer_type: str = "bits"

    #: what each field accepts (:mod:`genotok.params`)
    CONSTRAINTS: ClassVar[dict] = {"overlap": [Options(*OVERLAP_MODES)],
                   "min_overlap": [Interval(Integral, 0, None)],
                   "min_fraction": [Interval(Real, 0, 1)],
                   "fraction_of": [Options(*FRACTION_OF)],
                   "unknown": [Options(*UNKNOWN_POLICIES)],
                   "order": [Options(*ORDERS)],
                   "tokenizer_type": [Options(*TOKENIZER_TYPES)]}

    def __post_init__(self):
        validate(self.__dict__, self.CONSTRAINTS, "TokenizerSettings")

    def as_dict(self) -> dict:
        """The settings as plain values (``tokenizer_type`` only when not the default, so
        records made before it existed still match)."""
        out = {"overlap": self.overlap, "min_overlap": int(self.min_overlap),
               "min_fraction": float(self.min_fraction), "fraction_of": self.fraction_of,
               "unknown": self.unknown, "order": self.order}
        if self.tokenizer_type != "bits":
            out["tokenizer_type"] = self.tokenizer_type
        return out
