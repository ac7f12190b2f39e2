"""genotok: fast, gtars-compatible tokenization of genomic regions for machine learning.

The names below are imported on first use (PEP 562): ``import genotok`` loads neither numba's
kernels nor the rooms a program does not use (``benchmarks/RESULTS.md``, first_call). Add a
public name as ``from .module import name`` inside the ``if TYPE_CHECKING`` block: the block
is read once, at import, into the table of lazy names (and type checkers read it as it is).
"""

from typing import TYPE_CHECKING

from ._version import __version__
from .errors import (
    AnnDataError,
    BedParseError,
    GenotokError,
    GtokFormatError,
    HDF5ChunkError,
    RegionParseError,
    SourceError,
    UniverseError,
    UniverseMismatchError,
)

if TYPE_CHECKING:  # the lazy names: read by genotok._lazy (keep one import per line block)
    from ._examples import examples_dir
    from ._warmup import warmup
    from .build import coverage_cutoff, merge, tile, top_k, write_universe
    from .formats.corpus import Corpus, CorpusWriter, write_manifest
    from .formats.gtok import read_gtok, write_gtok
    from .genes import GeneSettings, GeneTokenizer
    from .formats.interop import export_gtok_dir, export_store, import_gtok_dir, import_parquet
    from .mixture import mix, write_mixture
    from . import presets
    from .pipeline import RunOptions, pretokenize
    from .runfile import Pipeline
    from .ragged import Ragged
    from .regions import RegionSet, as_regions
    from .singlecell import (AnnDataOptions, Bins, CellSource, CellSpec, Chunk, Encoding,
                             FragmentOptions, Log1p, Normalize, QuantileBins, RankByMedian,
                             ReadOptions, open_source, register_encoding, register_source)
    from .singlecell import MtxOptions, SomaOptions, ZarrOptions
    from .singlecell import (fragment_counts, tokenize_anndata, tokenize_cells, tokenize_fragments,
                             var_regions)
    from .singlecell.conditions import condition_tokens
    from .singlecell.matrix import fragment_matrix
    from .pipeline.tiles import tile_matrix, tile_tokenizer
    from .singlecell.values import feature_medians
    from .tokenizer import Tokenizer, TokenizerSettings
    from .universe import Universe

from ._lazy import lazy_names as _lazy_names  # noqa: E402

__getattr__, __dir__ = _lazy_names(__name__, __file__, globals())

__all__ = [
    "AnnDataError", "BedParseError", "Corpus", "CorpusWriter", "export_gtok_dir",
    "export_store", "import_gtok_dir", "import_parquet", "read_gtok", "write_gtok",
    "write_manifest", "GenotokError", "GtokFormatError", "HDF5ChunkError", "Ragged",
    "RegionParseError", "RegionSet", "Tokenizer", "TokenizerSettings", "Universe",
    "UniverseError", "UniverseMismatchError", "__version__", "as_regions", "examples_dir",
    "fragment_counts", "tile_matrix", "tile_tokenizer", "tokenize_anndata", "tokenize_fragments", "var_regions",
    "warmup",
    "coverage_cutoff", "merge", "tile", "top_k", "write_universe",
    "condition_tokens", "feature_medians", "fragment_matrix", "pretokenize",
    "AnnDataOptions", "Bins", "CellSpec", "FragmentOptions", "Log1p", "Normalize",
    "RankByMedian", "RunOptions", "CellSource", "SourceError", "register_source", "mix", "write_mixture",
    "GeneSettings", "GeneTokenizer", "QuantileBins", "presets",
    "Chunk", "Encoding", "ReadOptions", "open_source", "register_encoding", "tokenize_cells",
    "MtxOptions", "SomaOptions", "ZarrOptions",
    "Pipeline",
]
