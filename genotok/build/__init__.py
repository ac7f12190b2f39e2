"""Building universes: tile a genome, merge files, keep regions covered by K inputs, top-k."""

from .builders import (
    BuildReport,
    BuildResult,
    bed_bytes,
    build_cli,
    chrom_sort_key,
    coverage_cutoff,
    merge,
    read_chrom_sizes,
    sidecar_path,
    tile,
    top_k,
    write_universe,
)

__all__ = ["BuildReport", "BuildResult", "bed_bytes", "build_cli", "chrom_sort_key",
           "coverage_cutoff", "merge", "read_chrom_sizes", "sidecar_path", "tile", "top_k",
           "write_universe"]
