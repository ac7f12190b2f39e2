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

Without ``chrom_sizes``, the sizes come from the fragment file's ``#`` header
(:func:`header_chrom_sizes`): contig lines with lengths (``##contig=<ID=chr1,length=…>``), or
the ``reference_path=`` of a Cell Ranger header when that reference is on this machine (its
``fasta/genome.fa.fai``, the ``primary_contig=`` lines choosing among them); a header that
names contigs without lengths (Cell Ranger's usual one) is refused, asking for them.

The bins are a :class:`~genotok.Tokenizer` universe (:func:`tile_tokenizer`; token id ``i`` is
bin ``i``), so the same tiles tokenize cells with :func:`~genotok.tokenize_fragments`. It is
made once per ``(chrom_sizes, bin_size, exclude_chroms)`` in a process and kept (a few, most
recent first): a small fragment file against 616k 5-kb tiles pays for the tiles once.

This room sits above both :mod:`genotok.build` (the tiles) and :mod:`genotok.singlecell` (the
count), which may not import each other.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

from .. import _io
from ..errors import BedParseError, UniverseError
from ..params import MEMORY_MB, N_THREADS, Flag, InstanceOf, Integral, Interval, validated
from ..singlecell.reading import FragmentOptions

#: SnapATAC2's ``exclude_chroms`` default
EXCLUDE = ("chrM", "chrY", "M", "Y")
_TILES: OrderedDict = OrderedDict()
_KEEP = 4
#: the ``#`` lines read of a fragment file's header at most (Cell Ranger's: ~60)
HEADER_LINES = 100_000
_CONTIG = re.compile(r"contig=<ID=([^,>\s]+),(?:[^>]*,)?length=(\d+)")


#: the longest ``#`` line read (Cell Ranger's longest: a few hundred bytes)
HEADER_LINE_BYTES = 1 << 20
#: the longest contig a header may give (as ``tile_matrix``'s ``bin_size``: int64 bins)
MAX_CONTIG = 1 << 40


def _header(path: str) -> list[str]:
    """The ``#`` lines at the top of a fragment file (``#`` and spaces stripped)."""
    out = []
    with _io.reading(path), _io.open_binary(path) as fh:
        while len(out) < HEADER_LINES:
            raw = fh.readline(HEADER_LINE_BYTES + 1)
            if not raw.startswith(b"#"):
                break
            if len(raw) > HEADER_LINE_BYTES:  # a binary file or a bomb, not a header
                raise BedParseError(path, len(out) + 1, f"a '#' header line of more than "
                                    f"{HEADER_LINE_BYTES:,} bytes: not a fragment file's header")
            out.append(raw.decode("utf-8", "replace").lstrip("#").strip())
    return out


def _contigs(path: str, lines: list[str]) -> list[tuple[str, int]]:
    """The ``(name, length)`` of the header's contig lines, each checked (file:line)."""
    sizes: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for no, m in enumerate(map(_CONTIG.search, lines), start=1):
        if m is None:
            continue
        name, length = m[1], int(m[2])
        if name in seen:
            raise BedParseError(path, no, f"contig {name} is listed twice (first on line "
                                f"{seen[name]}); the header's sizes are ambiguous")
        if length > MAX_CONTIG:
            raise BedParseError(path, no, f"contig {name} has length {length:,}, above "
                                f"{MAX_CONTIG:,}; a damaged header? give chrom_sizes=")
        seen[name] = no
        sizes.append((name, length))
    return sizes


def header_chrom_sizes(path) -> list[tuple[str, int]]:
    """The contig sizes a fragment file's ``#`` header gives, in its order.

    Two ways: contig lines with lengths (``##contig=<ID=chr1,length=248956422>``, as VCF and
    htslib write them); else a Cell Ranger header's ``reference_path=`` when that reference
    folder is on this machine (its ``fasta/genome.fa.fai``), keeping the ``primary_contig=``
    contigs when the header lists them. Cell Ranger's headers name their contigs without
    lengths: such a file needs ``chrom_sizes`` from its reference.

    Raises
    ------
    UniverseError
        The header gives no lengths; the message names the file and what the header holds.
    BedParseError
        A contig listed twice or longer than :data:`MAX_CONTIG`, or a ``#`` line longer than
        :data:`HEADER_LINE_BYTES` (file:line).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "f.tsv"
    >>> _ = p.write_text("##contig=<ID=chr1,length=1000>\\nchr1\\t5\\t20\\tA-1\\t1\\n")
    >>> header_chrom_sizes(p)
    [('chr1', 1000)]
    """
    path = os.fspath(path)
    lines = _header(path)
    sizes = _contigs(path, lines)
    if sizes:
        return sizes
    keys = [ln.partition("=") for ln in lines if "=" in ln]
    primary = [v.strip() for k, _, v in keys if k.strip() == "primary_contig"]
    ref = next((v.strip() for k, _, v in keys if k.strip() == "reference_path"), None)
    fai = None if ref is None else os.path.join(ref, "fasta", "genome.fa.fai")
    if fai is not None and os.path.isfile(fai):
        from ..build import read_chrom_sizes

        have = read_chrom_sizes(fai)  # name, length, …: the first two columns
        if primary:
            keep = set(primary)
            have = [(c, n) for c, n in have if c in keep]
        if have:
            return have
    said = (f"its header names {len(primary)} contigs (primary_contig={primary[0]} …) without "
            "lengths" if primary else "its header gives no contig lengths" if lines else
            "it has no '#' header")
    where = "" if ref is None else (f", and its reference_path {ref} has no fasta/genome.fa.fai "
                                    "here")
    raise UniverseError(f"{path}: no chromosome sizes: {said}{where}; give chrom_sizes= (a "
                        ".chrom.sizes file of the genome the fragments were aligned to, or "
                        "{chrom: size})")

#: the most bins a tile matrix may have: each one holds ~230 bytes before a fragment is read
#: and ~340 at the peak (the universe's arrays and sweep, the ``var`` frame's name and
#: columns; measured: hg38 at 500 bp, 6.06M bins, 2.07 GB), so 2**24 bins (hg38 at 200 bp:
#: 15.5M) is ~5.7 GB; chromosome sizes from a damaged or crafted header (one 10-Gb contig in
#: a 57-byte file: 20M bins of 500 bp) are refused here, before anything is allocated
MAX_TILES = 1 << 24
#: what the tile functions accept (checked before any tile is made)
TILES = {"chrom_sizes": [InstanceOf(str, os.PathLike, Mapping, Iterable)],
         "bin_size": [Interval(Integral, 1, 1 << 40)],
         "exclude_chroms": [InstanceOf(list, tuple, set, frozenset)]}


def _check_bins(sizes, bin_size: int, where: str) -> None:
    """Refuse ``sizes`` (``(chrom, size)`` pairs) that make more than :data:`MAX_TILES` bins
    of ``bin_size``, before any is made; ``where`` opens the message."""
    n_bins = sum(-(-int(n) // int(bin_size)) for _, n in sizes)
    if n_bins > MAX_TILES:
        raise UniverseError(f"{where} {len(sizes)} chromosome(s) of {sum(n for _, n in sizes):,} "
                            f"bp make {n_bins:,} bins of {int(bin_size):,} bp, above the "
                            f"{MAX_TILES:,} a tile matrix may have (~340 bytes each at the "
                            "peak); choose a larger bin_size, or give the genome's real sizes "
                            "as chrom_sizes=")


@validated(TILES)
def tile_tokenizer(chrom_sizes, bin_size: int = 500, exclude_chroms: Sequence[str] = EXCLUDE):
    """A :class:`~genotok.Tokenizer` whose universe is the bins (kept for the next call).

    More than :data:`MAX_TILES` bins is a :class:`~genotok.UniverseError`, raised before a
    bin is made.

    Examples
    --------
    >>> tok = tile_tokenizer({"chr1": 1000}, 500)
    >>> tok.universe.n_regions, tok is tile_tokenizer({"chr1": 1000}, 500)
    (2, True)
    """
    from ..build import read_chrom_sizes, tile
    from ..tokenizer import Tokenizer

    drop = set(exclude_chroms)
    sizes = tuple((c, n) for c, n in read_chrom_sizes(chrom_sizes) if c not in drop)
    if not sizes:
        raise UniverseError("tile_tokenizer: every chromosome of chrom_sizes is excluded")
    _check_bins(sizes, bin_size, "chrom_sizes:")
    key = (sizes, int(bin_size))
    tok = _TILES.get(key)
    if tok is None:
        tok = Tokenizer(tile(dict(sizes), int(bin_size), hash_inputs=False)[0])
        _TILES[key] = tok
        while len(_TILES) > _KEEP:
            _TILES.popitem(last=False)
    _TILES.move_to_end(key)
    return tok


@validated({"path": [InstanceOf(str, os.PathLike)], **TILES,
            "chrom_sizes": TILES["chrom_sizes"] + [None], "read": [InstanceOf(FragmentOptions), None],
            "use_count": [Flag()], "out": [InstanceOf(str, os.PathLike), None],
            "overwrite": [Flag()], "memory_mb": MEMORY_MB + [None], "n_threads": N_THREADS})
def tile_matrix(path, chrom_sizes=None, bin_size: int = 500, *,
                exclude_chroms: Sequence[str] = EXCLUDE, read=None, use_count: bool = False,
                out=None, overwrite: bool = False, memory_mb: float | None = None,
                n_threads: int | None = None):
    """Count a fragment file into a cells × genome-bins matrix (SnapATAC2's tile matrix).

    Parameters
    ----------
    path
        A fragment file (``.tsv``, ``.tsv.gz``, BGZF with or without its ``.tbi``).
    chrom_sizes
        A mapping ``{chrom: size}`` or a ``.chrom.sizes`` file; ``None``: from the fragment
        file's header (:func:`header_chrom_sizes`; an error asks for them when it has none).
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
    from ..singlecell.matrix import fragment_matrix

    read = FragmentOptions() if read is None else read
    if read.mode is None:
        read = FragmentOptions(**{**read.__dict__, "mode": "paired-insertion"})
    if chrom_sizes is None:  # untrusted sizes: refused by the file's name when too many bins
        chrom_sizes = header_chrom_sizes(path)
        _check_bins([(c, n) for c, n in chrom_sizes if c not in set(exclude_chroms)],
                    bin_size, f"{os.fspath(path)}: its header's")
    tok = tile_tokenizer(chrom_sizes, bin_size, exclude_chroms)
    return fragment_matrix(path, tok, read=read, use_count=use_count, out=out,
                           overwrite=overwrite, memory_mb=memory_mb, n_threads=n_threads)


__all__ = ["EXCLUDE", "TILES", "header_chrom_sizes", "tile_matrix", "tile_tokenizer"]
