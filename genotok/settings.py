"""The Tokenizer's settings: how queries become tokens (overlap mode, filters, unknown policy,
hit order, gtars backend), as a frozen dataclass stored with every corpus.

Its own module so that :mod:`genotok.pretrained` (which reads gtars configurations into
settings) and :mod:`genotok.tokenizer` (which loads pretrained tokenizers) do not import each
other: both import this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kernels.modes import Unknown

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

    def __post_init__(self):
        def check(name, value, allowed):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")

        check("overlap", self.overlap, OVERLAP_MODES)
        check("unknown", self.unknown, UNKNOWN_POLICIES)
        check("order", self.order, ORDERS)
        check("fraction_of", self.fraction_of, FRACTION_OF)
        check("tokenizer_type", self.tokenizer_type, TOKENIZER_TYPES)
        if int(self.min_overlap) != self.min_overlap or self.min_overlap < 0:
            raise ValueError(f"min_overlap must be a non-negative integer (bp), got {self.min_overlap!r}")
        if not 0.0 <= float(self.min_fraction) <= 1.0:
            raise ValueError(f"min_fraction must be within [0, 1], got {self.min_fraction!r}")

    def as_dict(self) -> dict:
        """The settings as plain values (``tokenizer_type`` only when not the default, so
        records made before it existed still match)."""
        out = {"overlap": self.overlap, "min_overlap": int(self.min_overlap),
               "min_fraction": float(self.min_fraction), "fraction_of": self.fraction_of,
               "unknown": self.unknown, "order": self.order}
        if self.tokenizer_type != "bits":
            out["tokenizer_type"] = self.tokenizer_type
        return out
