"""Single cell: AnnData / ``.h5ad`` cells x peaks and 10x fragment files to per-cell tokens, value
encodings, condition tokens and fragment matrices."""

from .anndata import (
    fragment_counts,
    obs_names,
    tokenize_anndata,
    tokenize_fragments,
    var_names,
    var_regions,
)
from .conditions import condition_tokens
from .fragmatrix import fragment_matrix
from .values import feature_medians

__all__ = ["condition_tokens", "feature_medians", "fragment_counts", "fragment_matrix",
           "obs_names", "tokenize_anndata", "tokenize_fragments", "var_names", "var_regions"]
