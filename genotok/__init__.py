"""genotok: fast, gtars-compatible tokenization of genomic regions for machine learning."""

from ._examples import examples_dir
from .errors import (
    AnnDataError,
    BedParseError,
    GenotokError,
    GtokFormatError,
    RegionParseError,
    UniverseError,
    UniverseMismatchError,
)
from .ragged import Ragged
from .regions import RegionSet, as_regions
from .tokenizer import Tokenizer, TokenizerSettings
from .universe import Universe

__version__ = "0.1.0"


def warmup() -> None:
    """Compile every numba kernel now (on tiny inputs) instead of on first use.

    With numba's on-disk cache (on by default) this takes well under a second after the
    first run on a machine.
    """
    from . import _kernels, _parse

    _parse.warmup()
    _kernels.warmup()


__all__ = [
    "AnnDataError", "BedParseError", "GenotokError", "GtokFormatError", "Ragged",
    "RegionParseError", "RegionSet", "Tokenizer", "TokenizerSettings", "Universe",
    "UniverseError", "UniverseMismatchError", "__version__", "as_regions", "examples_dir",
    "warmup",
]
