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
