"""The single-cell adapters' former module path, kept so that old imports keep working.

The room is split into :mod:`.varnames` (var names → regions, the var map), :mod:`.sources`
(memory, h5py and backed matrix sources, obs readers), :mod:`.cells` (``tokenize_anndata``)
and :mod:`.fragments` (fragment files); import from them or from :mod:`genotok.singlecell`.
"""

from .cells import tokenize_anndata, warmup
from .fragments import fragment_counts, tokenize_fragments
from .sources import obs_names, var_names
from .varnames import var_regions

__all__ = ["fragment_counts", "obs_names", "tokenize_anndata", "tokenize_fragments",
           "var_names", "var_regions", "warmup"]
