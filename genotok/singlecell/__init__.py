"""Single cell: AnnData / ``.h5ad`` cells x peaks and 10x fragment files to per-cell tokens, value
encodings, condition tokens and fragment matrices.

Modules: :mod:`.varnames` (var names / region columns → regions), :mod:`.sources` (matrix
sources: memory, h5py, backed; obs and var names), :mod:`.cells` (:func:`tokenize_anndata`),
:mod:`.fragments` (fragment files), :mod:`.values` (value encodings), :mod:`.conditions`
(condition tokens), :mod:`.fragmatrix` (cells x regions matrices). The token batches go to the
one sink, :mod:`genotok.sink`.
"""

from .cells import tokenize_anndata
from .conditions import condition_tokens
from .fragmatrix import FragmentMatrix, fragment_matrix
from .reading import AnnDataOptions, FragmentOptions
from .spec import Bins, CellSpec, Log1p, Normalize, QuantileBins, RankByMedian
from .fragments import fragment_count_chunks, fragment_counts, tokenize_fragments
from .sources import obs_names, var_names
from .values import feature_medians
from .varnames import var_regions

__all__ = ["AnnDataOptions", "Bins", "CellSpec", "FragmentMatrix", "FragmentOptions", "Log1p",
           "Normalize", "QuantileBins", "RankByMedian", "condition_tokens", "feature_medians", "fragment_count_chunks",
           "fragment_counts", "fragment_matrix",
           "obs_names", "tokenize_anndata", "tokenize_fragments", "var_names", "var_regions"]
