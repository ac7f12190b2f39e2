"""Tile matrices straight from fragment files: cells × genome-wide bins, SnapATAC2's way.

:func:`tile_matrix` counts a fragment file into consecutive bins of ``bin_size`` bases over
each chromosome of ``chrom_sizes`` (no universe file needed), as SnapATAC2's
``pp.add_tile_matrix`` does:

- the bins of a chromosome of size ``n`` are ``[0, b), [b, 2b), …`` up to ``n`` (the last one
  shorter), named ``chrom:start-end`` (:func:`genotok.build.tile`: chromosomes in natural
  order); chromosomes in ``exclude_chroms`` (default SnapATAC2's ``chrM``, ``chrY``, ``M``,
  ``Y``) get none;
- ``mode="paired-insertion"`` (SnapATAC2's default ``counting_strategy``): a fragment adds 1
  to the bin of each Tn5 cut site (``start`` and ``end - 1``), once when both fall in one
  bin; ``"insertion"`` 1 per cut site (2 in one bin); ``"fragment"`` 1 to every bin it overlaps;
- every line is one fragment (the column-5 duplicate count does not multiply it;
  ``use_count=True`` weighs by it instead);
- ``FragmentOptions(fragment_size=(min, max))``: SnapATAC2's ``min_frag_size`` /
  ``max_frag_size`` (inclusive, on ``end - start``);
- a cut site on a chromosome without bins, or past the chromosome's end, counts nowhere.

The bins are a :class:`~genotok.Tokenizer` universe (:func:`tile_tokenizer`; token id ``i`` is
bin ``i``), so the same tiles tokenize cells with :func:`~genotok.tokenize_fragments`. It is
made once per ``(chrom_sizes, bin_size, exclude_chroms)`` in a process and kept (a few, most
recent first): a small fragment file against 616k 5-kb tiles pays for the tiles once.

This room sits above both :mod:`genotok.build` (the tiles) and :mod:`genotok.singlecell` (the
count), which may not import each other.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from ..errors import UniverseError
from ..params import InstanceOf, Integral, Interval, check

#: SnapATAC2's ``exclude_chroms`` default
EXCLUDE = ("chrM", "chrY", "M", "Y")
_TILES: OrderedDict = OrderedDict()
_KEEP = 4

#: the tile width's constraint (tile_tokenizer and tile_matrix check it before any tile is made)
CONSTRAINTS = {"bin_size": [Interval(Integral, 1, 1 << 40)]}


def tile_tokenizer(chrom_sizes, bin_size: int = 500, exclude_chroms: Sequence[str] = EXCLUDE):
    """A :class:`~genotok.Tokenizer` whose universe is the bins (kept for the next call).

    Examples
    --------
    >>> tok = tile_tokenizer({"chr1": 1000}, 500)
    >>> tok.universe.n_regions, tok is tile_tokenizer({"chr1": 1000}, 500)
    (2, True)
    """
    from ..build import read_chrom_sizes, tile
    from ..tokenizer import Tokenizer

    check("bin_size", bin_size, CONSTRAINTS["bin_size"], "tile_tokenizer")
    check("exclude_chroms", exclude_chroms, [InstanceOf(list, tuple, set, frozenset)],
          "tile_tokenizer", error=TypeError)
    drop = set(exclude_chroms)
    sizes = tuple((c, n) for c, n in read_chrom_sizes(chrom_sizes) if c not in drop)
    if not sizes:
        raise UniverseError("tile_tokenizer: every chromosome of chrom_sizes is excluded")
    key = (sizes, int(bin_size))
    tok = _TILES.get(key)
    if tok is None:
        tok = Tokenizer(tile(dict(sizes), int(bin_size), hash_inputs=False)[0])
        _TILES[key] = tok
        while len(_TILES) > _KEEP:
            _TILES.popitem(last=False)
    _TILES.move_to_end(key)
    return tok


def tile_matrix(path, chrom_sizes, bin_size: int = 500, *,
                exclude_chroms: Sequence[str] = EXCLUDE, read=None, use_count: bool = False,
                out=None, overwrite: bool = False, memory_mb: float | None = None,
                n_threads: int | None = None):
    """Count a fragment file into a cells × genome-bins matrix (SnapATAC2's tile matrix).

    Parameters
    ----------
    path
        A fragment file (``.tsv``, ``.tsv.gz``, BGZF with or without its ``.tbi``).
    chrom_sizes
        A mapping ``{chrom: size}`` or a ``.chrom.sizes`` file.
    bin_size
        The bins' width in bases (SnapATAC2's default 500).
    exclude_chroms
        Chromosomes without bins (default SnapATAC2's ``chrM``, ``chrY``, ``M``, ``Y``).
    read
        :class:`~genotok.FragmentOptions`; its ``mode`` defaults to ``"paired-insertion"``
        here (SnapATAC2's ``counting_strategy``), ``fragment_size`` is SnapATAC2's
        ``min_frag_size``/``max_frag_size``, ``regions`` reads a part of the genome.
    use_count, out, overwrite, memory_mb, n_threads
        As :func:`~genotok.fragment_matrix`.

    Returns
    -------
    anndata.AnnData
        As :func:`~genotok.fragment_matrix`: ``var`` holds the bins (``chrom:start-end``).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
    >>> _ = p.write_text("chr1\\t5\\t20\\tA-1\\t1\\nchr1\\t8\\t760\\tA-1\\t1\\n"
    ...                  "chrM\\t1\\t9\\tA-1\\t1\\n")
    >>> m = tile_matrix(p, {"chr1": 1000, "chrM": 100}, 500)
    >>> m.var_names.tolist(), m.X.toarray().tolist()
    (['chr1:0-500', 'chr1:500-1000'], [[2.0, 1.0]])
    """
    from ..singlecell.fragmatrix import fragment_matrix
    from ..singlecell.reading import FragmentOptions

    read = FragmentOptions() if read is None else check(
        "read", read, [InstanceOf(FragmentOptions)], "tile_matrix", error=TypeError)
    if read.mode is None:
        read = FragmentOptions(**{**read.__dict__, "mode": "paired-insertion"})
    tok = tile_tokenizer(chrom_sizes, bin_size, exclude_chroms)
    return fragment_matrix(path, tok, read=read, use_count=use_count, out=out,
                           overwrite=overwrite, memory_mb=memory_mb, n_threads=n_threads)


__all__ = ["CONSTRAINTS", "EXCLUDE", "tile_matrix", "tile_tokenizer"]
