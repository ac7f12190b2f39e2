"""Exceptions raised by genotok. Every one is a :class:`GenotokError`."""

from __future__ import annotations


class GenotokError(Exception):
    """Base class of every error genotok raises on purpose."""


class RegionParseError(GenotokError, ValueError):
    """A region given in memory (string, tuple, array, data frame) is malformed."""


class BedParseError(RegionParseError):
    """A BED file is malformed. The message names the file and the 1-based line.

    Attributes ``path`` and ``line`` (``None`` when not applicable) are set.
    """

    def __init__(self, path: str, line: int | None, problem: str):
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class UniverseError(GenotokError, ValueError):
    """A universe (vocabulary) or tokenizer configuration is unusable."""


class GtokFormatError(GenotokError, ValueError):
    """A ``.gtok`` file or a corpus is corrupt, truncated or of an unknown version."""


class UniverseMismatchError(GenotokError):
    """Tokens written with one universe were opened with another (fingerprints differ)."""


class AnnDataError(GenotokError, ValueError):
    """An AnnData object or ``.h5ad`` file cannot be tokenized (no region info, bad matrix)."""


class HDF5ChunkError(GenotokError, OSError):
    """A chunk of an HDF5 dataset (e.g. in a ``.h5ad`` file) is damaged: it cannot be read, or
    does not inflate to its size. The message names the file, the dataset and the chunk."""


class SourceError(GenotokError, ValueError):
    """No cell source reads an input (its type, suffix and first bytes fit none registered)."""


class PluginError(GenotokError, ImportError):
    """A plugin declared in a distribution's entry points cannot be loaded or is not what its
    group expects. The message names the group, the entry point and the distribution."""


class KeywordError(GenotokError, TypeError):
    """A keyword a callable does not take; the message names the one that was meant, or the
    object the keyword belongs to (a ``CellSpec`` field given to an entry point)."""
