"""How an input is read: the read options of the cell sources.

Every cell source kind has its own options class, a frozen dataclass deriving from
:class:`ReadOptions` (validated once, :mod:`genotok.params`): :class:`AnnDataOptions` (where a
matrix's regions come from, which layer, chunking, the ids' dtype of an in-memory result) and
:class:`FragmentOptions` (which cells of a fragment file, how a fragment hits a region). A
source names its class (``CellSource.options``) and keeps the options as ``read``; the options
serialise themselves (:meth:`ReadOptions.to_json`, read back by name with
:func:`~genotok.singlecell.sources.read_options_from_json`), which is how a ``pretokenize``
run's plan records how its inputs were read. Registering a source registers its options class
(:data:`READ_OPTIONS`).

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
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from .. import _plugins
from ..kernels.modes import Counting, names
from ..regions import SEP
from ..params import (ID_DTYPE, Each, Flag, InstanceOf, Integral, Interval, Options, ParameterError,
                      Text, check, validate_fields)


def _json_value(v):
    """A field's value as JSON: tuples as lists, a NumPy dtype or scalar type by its name,
    paths as strings."""
    import os

    if isinstance(v, (tuple, list)):
        return [_json_value(x) for x in v]
    if isinstance(v, type) and issubclass(v, np.generic) or isinstance(v, np.dtype):
        return np.dtype(v).name
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


@dataclass(frozen=True)
class ReadOptions:
    """The base of every source's read options: a frozen dataclass whose fields are its JSON.

    ``name`` names the class in JSON (:data:`READ_OPTIONS`); :meth:`to_json` gives
    ``{"name": ..., field: value, ...}`` and :meth:`from_json` reads it back (equal options).
    A source that takes no options has ``options = ReadOptions``.

    Examples
    --------
    >>> ReadOptions().to_json()
    {'name': 'none'}
    >>> AnnDataOptions.from_json(AnnDataOptions(layer="counts").to_json()).layer
    'counts'
    """

    name: ClassVar[str] = "none"
    CONSTRAINTS: ClassVar[dict] = {}

    def __post_init__(self):
        validate_fields(self)

    def to_json(self) -> dict:
        """The options as plain JSON values (``name`` first)."""
        return {"name": self.name, **{f.name: _json_value(getattr(self, f.name))
                                      for f in fields(self)}}

    @classmethod
    def from_json(cls, d: dict) -> ReadOptions:
        """The options of :meth:`to_json`'s dict (an unknown field is refused)."""
        d = {k: v for k, v in dict(d).items() if k != "name"}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ParameterError(f"{cls.__name__}: unknown field(s) {unknown}; the fields are "
                                 f"{sorted(known)}")
        return cls(**d)


#: the read options classes by name: a cell source's ``options`` is added when it is registered
READ_OPTIONS: dict[str, type[ReadOptions]] = {ReadOptions.name: ReadOptions}


def register_read_options(cls: type[ReadOptions]) -> type[ReadOptions]:
    """Add a :class:`ReadOptions` subclass to :data:`READ_OPTIONS` (``register_source`` does it
    for a source's ``options``); another class of the same name is refused.

    >>> register_read_options(AnnDataOptions) is AnnDataOptions
    True
    """
    return _plugins.claim(READ_OPTIONS, cls, ReadOptions, "name", "read options")


@dataclass(frozen=True)
class AnnDataOptions(ReadOptions):
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

    name: ClassVar[str] = "anndata"
    CONSTRAINTS: ClassVar[dict] = {
        "layer": [InstanceOf(str), None],
        # (chrom, start, end) column names of var
        "region_columns": [Each(Text(), sequence=True, length=3), None],
        # None: 'chr:start-end' names
        "var_names_sep": SEP,
        "one_based": [Flag()],
        "chunk_rows": [Interval(Integral, 1, None), None],
        "dtype": ID_DTYPE,
        "modality": [InstanceOf(str), None],
        "raw": [Flag()],
    }

    def __post_init__(self):
        validate_fields(self)
        if self.region_columns is not None:  # checked now, not when a matrix is read
            object.__setattr__(self, "region_columns", tuple(self.region_columns))

    @classmethod
    def from_json(cls, d: dict) -> AnnDataOptions:
        d = dict(d)
        if isinstance(d.get("dtype"), str):  # written by name
            d["dtype"] = np.dtype(d["dtype"]).type
        return super().from_json(d)


@dataclass(frozen=True)
class FragmentOptions(ReadOptions):
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

    name: ClassVar[str] = "fragments"
    CONSTRAINTS: ClassVar[dict] = {
        "barcodes": [InstanceOf(str, os.PathLike, Iterable), None],
        "min_fragments": [Interval(Integral, 0, None)],
        "mode": [Options(*names(Counting)), None],
        "shift": [Each(Interval(Integral, -(1 << 40), 1 << 40), sequence=True, length=2)],
        "block_bytes": [Interval(Integral, 1, None)],
        "regions": [InstanceOf(tuple, list), None],
        "fragment_size": [Each(Interval(Integral, 0, None), None, sequence=True, length=2),
                          None],
    }

    def __post_init__(self):
        validate_fields(self)
        object.__setattr__(self, "shift", tuple(int(v) for v in self.shift))
        if self.barcodes is not None:  # a file by its path, or the list itself (equal JSON)
            import os

            bcs = self.barcodes
            object.__setattr__(self, "barcodes", os.fspath(bcs) if isinstance(
                bcs, (str, os.PathLike)) else tuple(b.decode("utf-8") if isinstance(b, bytes)
                                                    else str(b) for b in bcs))
        if self.regions is not None:
            from ..bgzf import parse_regions

            object.__setattr__(self, "regions", tuple(str(r) for r in self.regions))
            parse_regions(self.regions)  # a malformed region string refused now
        if self.fragment_size is not None:
            size = tuple(self.fragment_size)
            if None not in size and size[0] > size[1]:  # no fragment fits: every cell empty
                raise ParameterError(f"FragmentOptions: fragment_size is (min, max) with min <= "
                                     f"max, got {self.fragment_size!r}")
            object.__setattr__(self, "fragment_size", size)


def _checked(read, kind: type, where: str):
    """``read`` (``None``: the defaults) checked to be a ``kind``; a plain
    :class:`AnnDataOptions` given to a source whose options extend it (Zarr, SOMA, a 10x
    folder) is those options with the same fields.

    >>> from genotok.singlecell.anndata_zarr import ZarrOptions
    >>> _checked(AnnDataOptions(layer="x"), ZarrOptions, "").layer
    'x'
    """
    if read is None:
        return kind()
    if type(read) is AnnDataOptions and kind is not AnnDataOptions and \
            issubclass(kind, AnnDataOptions):
        read = kind(**{f.name: getattr(read, f.name) for f in fields(read)})
    return check("read", read, [InstanceOf(kind)], where, error=TypeError)


for _cls in (AnnDataOptions, FragmentOptions):
    register_read_options(_cls)

__all__ = ["AnnDataOptions", "FragmentOptions", "READ_OPTIONS", "ReadOptions",
           "register_read_options"]
