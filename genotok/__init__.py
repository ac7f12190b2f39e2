"""genotok: fast, gtars-compatible tokenization of genomic regions for machine learning."""

import numpy as np

from ._examples import examples_dir
from .anndata import fragment_counts, tokenize_anndata, tokenize_fragments, var_regions
from .build import coverage_cutoff, merge, tile, top_k, write_universe
from .cellvalues import feature_medians
from .conditions import condition_tokens
from .corpus import (
    Corpus,
    CorpusWriter,
    export_gtok_dir,
    export_parquet,
    import_gtok_dir,
    import_parquet,
    write_manifest,
)
from .errors import (
    AnnDataError,
    BedParseError,
    GenotokError,
    GtokFormatError,
    HDF5ChunkError,
    RegionParseError,
    UniverseError,
    UniverseMismatchError,
)
from .fragmatrix import fragment_matrix
from .gtok import read_gtok, write_gtok
from .ragged import Ragged
from .regions import RegionSet, as_regions
from .tokenizer import Tokenizer, TokenizerSettings
from .universe import Universe

__version__ = "0.1.0"


def warmup() -> None:
    """Compile every numba kernel now (on tiny inputs) instead of on first use.

    With numba's on-disk cache (on by default) this takes well under a second after the
    first run on a machine.

    Examples
    --------
    >>> warmup()  # later first calls skip compilation
    """
    from . import _build_kernels, _kernels, _parse, _sort, anndata, cellvalues, corpus

    _parse.warmup()
    _kernels.warmup()
    _sort.warmup()
    _build_kernels.warmup()
    anndata.warmup()
    cellvalues.warmup()
    corpus._gather_rows(np.zeros(1, np.uint16), np.array([0, 1], np.int64), np.zeros(1, np.int64))


__all__ = [
    "AnnDataError", "BedParseError", "Corpus", "CorpusWriter", "export_gtok_dir",
    "export_parquet", "import_gtok_dir", "import_parquet", "read_gtok", "write_gtok",
    "write_manifest", "GenotokError", "GtokFormatError", "HDF5ChunkError", "Ragged",
    "RegionParseError", "RegionSet", "Tokenizer", "TokenizerSettings", "Universe",
    "UniverseError", "UniverseMismatchError", "__version__", "as_regions", "examples_dir",
    "fragment_counts", "tokenize_anndata", "tokenize_fragments", "var_regions", "warmup",
    "coverage_cutoff", "merge", "tile", "top_k", "write_universe",
    "condition_tokens", "feature_medians", "fragment_matrix",
]
