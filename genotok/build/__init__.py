"""Building universes: tile a genome, merge files, keep regions covered by K inputs, top-k.

- :mod:`~genotok.build.builders`: the four builders (:func:`tile`, :func:`merge`,
  :func:`coverage_cutoff`, :func:`top_k`) and :func:`read_chrom_sizes`;
- :mod:`~genotok.build.report`: :class:`BuildReport`, :class:`BuildResult`, :func:`write_universe`;
- :mod:`~genotok.build.bedfile`: BED3 text (:func:`bed_bytes`) and the sidecar's name;
- :mod:`~genotok.build.streaming`: the natural chromosome order (:func:`chrom_sort_key`), the
  streaming fold and the input readers every builder shares.

The command line (``genotok universe …``) is in :mod:`genotok.cli`.
"""

from .bedfile import bed_bytes, sidecar_path
from .builders import coverage_cutoff, merge, read_chrom_sizes, tile, top_k
from .report import BuildReport, BuildResult, write_universe
from .streaming import chrom_sort_key

__all__ = ["BuildReport", "BuildResult", "bed_bytes", "chrom_sort_key", "coverage_cutoff",
           "merge", "read_chrom_sizes", "sidecar_path", "tile", "top_k", "write_universe"]

