"""gtars' and geniml's names, for code people already have: change its import lines only.

=========================================================  ==========================================
their import                                               genotok's
=========================================================  ==========================================
``from gtars.tokenizers import Tokenizer``                 ``from genotok.compat import Tokenizer``
``from gtars.tokenizers import tokenize_fragment_file``    ``from genotok.compat import tokenize_fragment_file``
``from gtars.utils import write_tokens_to_gtok``           ``from genotok.compat import write_tokens_to_gtok``
``from genimtools.utils import write_tokens_to_gtok``      ``from genotok.compat import write_tokens_to_gtok``
``from geniml.tokenization import ITTokenizer``            ``from genotok.compat import ITTokenizer``
``from geniml.tokenization import TreeTokenizer``          ``from genotok.compat import TreeTokenizer``
``from geniml.region2vec.utils import Region2VecDataset``  ``from genotok.compat import Region2VecDataset``
=========================================================  ==========================================

The ids are gtars' (``docs/migrating.md``). New code should use genotok's own API
(``Tokenizer.encode``, ``tokenize_fragments``, ``write_gtok``, ``pretokenize`` and ``Corpus``);
these names are here so that a script, a notebook or a tutorial runs as it is written.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .errors import GtokFormatError
from .params import PATH, Flag, InstanceOf, Unchecked, validated
from .formats.gtok import read_gtok, write_gtok
from .singlecell.fragments import tokenize_fragments
from .singlecell.spec import CellSpec
from .tokenizer import Tokenizer


@validated({"path": PATH, "tokenizer": [InstanceOf(Tokenizer)]})
def tokenize_fragment_file(path: str | os.PathLike, tokenizer: Tokenizer) -> dict[str, list[int]]:
    """gtars' ``tokenize_fragment_file``: ``{barcode: [token id, ...]}`` for a fragment file.

    Each fragment adds the ids of the universe regions it overlaps, and one ``<unk>`` when it
    overlaps none, as gtars counts them: each cell's list holds gtars' ids as a multiset (here
    in genomic order, ``<unk>`` last; gtars lists them fragment by fragment). Barcodes are in
    order of first appearance. For training, :func:`genotok.tokenize_fragments` gives the same
    counts as one ``Ragged`` (each token once, its count as its value) in a fraction of the
    memory.

    Examples
    --------
    >>> import genotok
    >>> ex = genotok.examples_dir()
    >>> tok = Tokenizer.from_bed(ex / "universe.bed")
    >>> cells = tokenize_fragment_file(ex / "fragments.tsv.gz", tok)
    >>> len(cells), all(isinstance(v, list) for v in cells.values())
    (20, True)
    """
    spec = CellSpec(values=True, unknown="region", unique=True)
    names, rows = tokenize_fragments(path, tokenizer, spec)
    unk = tokenizer.unk_token_id
    out: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        lo, hi = int(rows.offsets[i]), int(rows.offsets[i + 1])
        ids = np.repeat(rows.data[lo:hi], rows.values[lo:hi].astype(np.int64))
        out[str(name)] = (ids[ids != unk].tolist() + ids[ids == unk].tolist())
    return out


#: a path or token ids, in either order (the one that is a path is written)
_PATH_OR_IDS = [InstanceOf(str, os.PathLike, list, tuple, np.ndarray)]


@validated({"a": _PATH_OR_IDS, "b": _PATH_OR_IDS})
def write_tokens_to_gtok(a, b) -> None:
    """gtars' ``write_tokens_to_gtok(path, ids)``, and the ``(ids, path)`` order geniml's
    pre-tokenization tutorial calls it with: whichever argument is the path.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gtok")
    >>> write_tokens_to_gtok(p, [1, 2, 3]); write_tokens_to_gtok([4, 5], p)
    >>> read_gtok(p).tolist()
    [4, 5]
    """
    first_is_path = isinstance(a, (str, os.PathLike))
    if first_is_path == isinstance(b, (str, os.PathLike)):
        raise GtokFormatError("write_tokens_to_gtok takes a path and a list of token ids (in "
                              f"either order), got a {type(a).__name__} and a "
                              f"{type(b).__name__}")
    path, ids = (a, b) if first_is_path else (b, a)
    write_gtok(ids, path)


class TokenizedRegion(NamedTuple):
    """One token of a :class:`TokenizedRegionSet`: its universe region and id.

    >>> TokenizedRegion("chr1", 100, 200, 0).chr
    'chr1'
    """

    chr: str
    start: int
    end: int
    id: int


class TokenizedRegionSet:
    """What geniml's tokenizers return: ``.ids`` (and ``to_ids()``), and the universe regions
    (``TokenizedRegion``: ``chr``, ``start``, ``end``, ``id``) when iterated.

    Examples
    --------
    >>> tok = ITTokenizer(["chr1:100-200", "chr1:300-400"])
    >>> tokens = tok.tokenize([("chr1", 150, 350)])
    >>> tokens.ids, tokens.to_ids(), len(tokens)
    ([0, 1], [0, 1], 2)
    >>> list(tokens)[1]
    TokenizedRegion(chr='chr1', start=300, end=400, id=1)
    """

    def __init__(self, ids: np.ndarray, tokenizer: Tokenizer):
        self.ids = [int(i) for i in ids]
        self._tokenizer = tokenizer

    def to_ids(self) -> list[int]:
        return list(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[TokenizedRegion]:
        for i, text in zip(self.ids, self._tokenizer.decode(self.ids)):
            chrom, _, span = text.rpartition(":")
            start, _, end = span.partition("-")
            if chrom and start.isdigit() and end.isdigit():
                yield TokenizedRegion(chrom, int(start), int(end), i)
            else:  # a special token (<unk>)
                yield TokenizedRegion(text, 0, 0, i)

    def __repr__(self) -> str:
        return f"TokenizedRegionSet({len(self)} tokens)"


class ITTokenizer:
    """geniml's ``ITTokenizer(universe)`` (and ``TreeTokenizer``): ``tokenize(regions)`` gives
    a :class:`TokenizedRegionSet` of gtars' ids for a BED file or regions in memory.

    Examples
    --------
    >>> import genotok
    >>> tok = ITTokenizer(genotok.examples_dir() / "universe.bed")
    >>> ids = tok.tokenize(genotok.examples_dir() / "peaks" / "sample0.narrowPeak").ids
    >>> ids == Tokenizer.from_bed(genotok.examples_dir() / "universe.bed").encode(
    ...     genotok.examples_dir() / "peaks" / "sample0.narrowPeak").tolist()
    True
    """

    @validated({"universe": [Unchecked("a Tokenizer, or what Tokenizer() reads")]},
               "ITTokenizer")
    def __init__(self, universe, **kwargs):
        self.tokenizer = (universe if isinstance(universe, Tokenizer)
                          else Tokenizer(universe, **kwargs))

    CONSTRAINTS = __init__.CONSTRAINTS

    def tokenize(self, regions) -> TokenizedRegionSet:
        return TokenizedRegionSet(self.tokenizer.encode(regions), self.tokenizer)

    def __len__(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def universe(self):
        return self.tokenizer.universe


TreeTokenizer = ITTokenizer


class Region2VecDataset:
    """geniml's ``Region2VecDataset(path, shuffle=True, convert_to_str=False)``: the token
    lists of a folder of ``.gtok`` files (sorted by name; geniml's pre-tokenization tutorial)
    or of a Parquet file with a ``tokens`` or ``input_ids`` column (geniml 0.8), one list per
    document, shuffled within each document when ``shuffle``.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_tokens_to_gtok([3, 1, 2], os.path.join(d, "a.gtok"))
    >>> list(Region2VecDataset(d, shuffle=False))
    [[3, 1, 2]]
    >>> sorted(Region2VecDataset(d, convert_to_str=True)[0])
    ['1', '2', '3']
    """

    @validated({"path": PATH, "shuffle": [Flag()], "convert_to_str": [Flag()]},
               "Region2VecDataset")
    def __init__(self, path: str | os.PathLike, shuffle: bool = True,
                 convert_to_str: bool = False):
        p = Path(path)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.name.endswith(".gtok"))
            if not files:
                raise GtokFormatError(f"{p}: no .gtok files in this folder")
            self.data = [read_gtok(f, mmap=False).tolist() for f in files]
        else:
            from ._optional import require

            table = require("pyarrow.parquet", "Region2VecDataset on a Parquet file").read_table(p)
            column = next((c for c in ("tokens", "input_ids") if c in table.column_names), None)
            if column is None:
                raise GtokFormatError(f"{p}: no 'tokens' or 'input_ids' column (columns: "
                                      f"{table.column_names})")
            self.data = table[column].to_pylist()
        self.shuffle, self.convert_to_str = shuffle, convert_to_str

    CONSTRAINTS = __init__.CONSTRAINTS

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, idx: int) -> list:
        tokens = list(self.data[idx])
        if self.shuffle:
            random.shuffle(tokens)
        return [str(t) for t in tokens] if self.convert_to_str else tokens

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Region2VecDataset({len(self)} documents, shuffle={self.shuffle})"


__all__ = ["ITTokenizer", "Region2VecDataset", "Tokenizer", "TokenizedRegion",
           "TokenizedRegionSet", "TreeTokenizer", "tokenize_fragment_file", "write_tokens_to_gtok"]
