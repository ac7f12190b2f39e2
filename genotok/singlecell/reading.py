"""How an input is read: the source options of the single-cell entry points.

:class:`AnnDataOptions` (where a matrix's regions come from, which layer, chunking, the ids'
dtype of an in-memory result) and :class:`FragmentOptions` (which cells of a fragment file,
how a fragment hits a region). Validated once (:mod:`genotok.params`); each cell source
(:mod:`.sources`) names its options class (``CellSource.options``) and keeps them as ``read``.

Examples
--------
>>> AnnDataOptions(layer="counts").layer
'counts'
>>> FragmentOptions(min_fragments=True)
Traceback (most recent call last):
...
genotok.params.ParameterError: FragmentOptions: min_fragments must be an integer in [0, inf), got True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..params import (DType, Flag, InstanceOf, Integral, Interval, Options, ParameterError, check,
                      validate_fields)


@dataclass(frozen=True)
class AnnDataOptions:
    """How :func:`~genotok.tokenize_anndata` reads an AnnData or ``.h5ad``.

    Examples
    --------
    >>> AnnDataOptions(layer="counts", chunk_rows=1024).chunk_rows
    1024

    Parameters
    ----------
    layer
        Use ``adata.layers[layer]`` instead of ``X``.
    region_columns, var_names_sep, one_based
        Where the peaks' regions come from (see :func:`~genotok.var_regions`).
    chunk_rows
        Rows per chunk (default: chunks sized to the call's ``memory_mb``).
    dtype
        Integer dtype of the token ids of an in-memory result: ``np.int64`` (default), or
        ``np.uint32``/``np.int32`` to halve its memory (the vocabulary must fit). A corpus
        always gets the width it stores.
    modality
        The modality of a ``.h5mu`` path to read (``mod/<modality>``); default: ``atac``, else
        the only one whose features are regions (see :func:`~genotok.singlecell.open_container`).
    raw
        Read ``raw/X`` and ``raw/var`` of a path instead of ``X`` and ``var``.
    """

    layer: str | None = None
    region_columns: Sequence[str] | None = None
    var_names_sep: str | None = None
    one_based: bool = False
    chunk_rows: int | None = None
    dtype: type = np.int64
    modality: str | None = None
    raw: bool = False

    CONSTRAINTS: ClassVar[dict] = {
        "layer": [InstanceOf(str), None],
        "region_columns": [InstanceOf(list, tuple), None],
        "var_names_sep": [InstanceOf(str), None],
        "one_based": [Flag()],
        "chunk_rows": [Interval(Integral, 1, None), None],
        "dtype": [DType(np.int64, np.int32, np.uint32)],
        "modality": [InstanceOf(str), None],
        "raw": [Flag()],
    }

    def __post_init__(self):
        validate_fields(self)


@dataclass(frozen=True)
class FragmentOptions:
    """How a fragment file is read and counted.

    Examples
    --------
    >>> FragmentOptions(mode="insertion", shift=[4, -5]).shift
    (4, -5)

    Parameters
    ----------
    barcodes
        Allow-list: a sequence of barcodes or a file with one a line; cells come in its order
        (cells of the list without fragments are kept when ``min_fragments=0``).
    min_fragments
        Keep cells with at least this many fragment lines.
    mode, shift
        ``"fragment"`` (whole fragment overlap), ``"insertion"`` (Tn5 cut sites) or
        ``"paired-insertion"``; ``(left, right)`` added to the cut sites. ``None``: each entry
        point's default (``"fragment"`` for tokens, ``"insertion"`` for matrices).
    block_bytes
        The file is streamed in blocks of this many bytes.
    regions
        Read only these chromosomes or regions: ``["chr1", "chr2:0-5000000"]`` (BED
        coordinates, as the tokenizer's region strings: start 0-based, end exclusive); a
        fragment is read when it overlaps one. A BGZF file with a tabix ``.tbi`` (or ``.csi``)
        index beside it (as 10x writes them) has only those blocks inflated; any other file is
        streamed whole and the other lines dropped. Line numbers in error messages then count
        the lines read. ``None``: the whole file.
    fragment_size
        ``(min, max)``: count only the fragments whose length ``end - start`` is within
        (inclusive; ``None`` leaves a side open), as SnapATAC2's ``min_frag_size`` /
        ``max_frag_size``. ``None``: every fragment.
    """

    barcodes: object = None
    min_fragments: int = 1
    mode: str | None = None
    shift: tuple = (0, 0)
    block_bytes: int = 32 << 20
    regions: tuple | None = None
    fragment_size: tuple | None = None

    CONSTRAINTS: ClassVar[dict] = {
        "barcodes": [InstanceOf(str, os.PathLike, Iterable), None],
        "min_fragments": [Interval(Integral, 0, None)],
        "mode": [Options("fragment", "insertion", "paired-insertion"), None],
        "shift": [InstanceOf(tuple, list)],
        "block_bytes": [Interval(Integral, 1, None)],
        "regions": [InstanceOf(tuple, list), None],
        "fragment_size": [InstanceOf(tuple, list), None],
    }

    def __post_init__(self):
        validate_fields(self)
        object.__setattr__(self, "shift", tuple(self.shift))
        if self.regions is not None:
            from .._bgzf import parse_regions

            object.__setattr__(self, "regions", tuple(str(r) for r in self.regions))
            parse_regions(self.regions)  # a malformed region string refused now
        if self.fragment_size is not None:
            size = tuple(self.fragment_size)
            if len(size) != 2:
                raise ParameterError(f"FragmentOptions: fragment_size must be (min, max), got "
                                     f"{self.fragment_size!r}")
            for name, v in zip(("fragment_size[0]", "fragment_size[1]"), size):
                check(name, v, [Interval(Integral, 0, None), None], "FragmentOptions")
            object.__setattr__(self, "fragment_size", size)


def _checked(read, kind: type, where: str):
    """``read`` (``None``: the defaults) checked to be a ``kind``."""
    if read is None:
        return kind()
    return check("read", read, [InstanceOf(kind)], where, error=TypeError)


__all__ = ["AnnDataOptions", "FragmentOptions"]
