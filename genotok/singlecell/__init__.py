"""Single cell: AnnData / ``.h5ad`` cells x peaks and 10x fragment files to per-cell tokens, value
encodings, condition tokens and fragment matrices.

Modules: :mod:`.varnames` (var names / region columns → regions), :mod:`.chunks` (a matrix
read in row chunks: memory, h5py, backed), :mod:`.sources` (the cell source protocol and its
registry; AnnData sources; obs and var names), :mod:`.containers` (``.h5mu``, 10x ``.h5`` and every
``.h5ad`` encoding: their cell source classes), :mod:`.cells` (the driver :func:`tokenize_cells`,
:func:`tokenize_anndata`),
:mod:`.fragments` (fragment files), :mod:`.values` (value encodings), :mod:`.conditions`
(condition tokens), :mod:`.fragmatrix` (the fragment counter), :mod:`.matrix` (cells x regions
count matrices: the driver's rows as a matrix). The token batches go to the
one sink, :mod:`genotok.sink`.
"""

from .cells import tokenize_anndata, tokenize_cells
from .conditions import condition_tokens
from .matrix import CountMatrix, FragmentMatrix, fragment_matrix
from .chunks import Chunk
from .reading import AnnDataOptions, FragmentOptions, ReadOptions
from .spec import (Bins, CellSpec, Encoding, Log1p, Normalize, QuantileBins, RankByMedian,
                   register_encoding)
from .fragments import FragmentSource, fragment_count_chunks, fragment_counts, tokenize_fragments
from .containers import Container, H5adSource, H5muSource, TenxH5Source, open_container
from .sources import (AnnDataSource, CellSource, memory_matrix, obs_names,
                      open_source, register_source, source_class, unregister_source, var_names)
from .values import feature_medians
from .varnames import var_regions
from ..bgzf import write_bgzf

__all__ = ["AnnDataOptions", "AnnDataSource", "Bins", "CellSource", "CellSpec", "Chunk",
           "Container", "Encoding", "ReadOptions", "register_encoding",
           "FragmentSource", "H5adSource", "H5muSource", "TenxH5Source", "memory_matrix",
           "open_container", "open_source", "register_source", "source_class",
           "tokenize_cells", "unregister_source", "CountMatrix", "FragmentMatrix", "FragmentOptions", "Log1p",
           "Normalize", "QuantileBins", "RankByMedian", "condition_tokens", "feature_medians",
           "fragment_count_chunks",
           "fragment_counts", "fragment_matrix",
           "obs_names", "tokenize_anndata", "tokenize_fragments", "var_names", "var_regions",
           "write_bgzf", "MtxOptions", "MtxSource", "SomaOptions", "SomaSource", "ZarrOptions",
           "ZarrSource"]
from .anndata_zarr import ZarrOptions, ZarrSource  # noqa: E402  (each registers its source)
from .cellranger import MtxOptions, MtxSource  # noqa: E402
from .soma import SomaOptions, SomaSource  # noqa: E402
