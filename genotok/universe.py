"""The vocabulary: universe regions + special tokens, a fingerprint, and the sweep index.

Token id ``i`` is the ``i``-th distinct region of the universe in order of first appearance (its
line in the BED file when no line repeats another, as in gtars; a repeated region keeps the id
of its first line and later lines shift up, as gtars' vocabulary does); the special tokens
follow in gtars order ``<unk> <pad> <mask> <cls> <eos> <bos> <sep>``.
"""

from __future__ import annotations

import hashlib
import os
import re
import weakref
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

import numpy as np

from ._usage import warn
from ._io import fetch_url, is_url
from .errors import BedParseError, UniverseError
from .kernels import names as _names
from .kernels import parse as _parse
from .kernels import sweep as _sweep_kernels
from .params import Each, Flag, InstanceOf, Options, Text, validate, validated
from .regions import REGIONS, RegionSet, as_regions, _check_path

#: gtars order of the special tokens (ids n_regions + 0 ... n_regions + 6)
SPECIAL_NAMES = ("unk", "pad", "mask", "cls", "eos", "bos", "sep")
DEFAULT_SPECIAL_TOKENS = {name: f"<{name}>" for name in SPECIAL_NAMES}
#: extra tokens (condition tokens): strings without NUL, which separates them in the
#: fingerprint (so no two lists collide); one string is not a list of one-character tokens
EXTRA_TOKENS = [Each(Text(), sequence=True, hint="a list of strings; wrap one token in a list")]
#: what a universe's repeated regions become (see :class:`Universe`)
DUPLICATES = ("unique", "lines", "error")

_FINGERPRINT_TAG = b"genotok-universe-v1\0"

#: the universe fingerprint of each open corpus shard's mapping (``np.memmap._mmap``), by weak
#: reference (the corpus reader fills it): how a record's ids say where they came from
RECORD_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _record_fingerprint(ids) -> str | None:
    """The universe fingerprint of the corpus ``ids`` were read from (a record, or a slice of
    one: a view of a shard's mapping), ``None`` for any other array.

    Examples
    --------
    >>> import numpy as np
    >>> _record_fingerprint(np.arange(3)) is None
    True
    """
    m = getattr(ids, "_mmap", None)
    return RECORD_FINGERPRINTS.get(m) if m is not None else None


@dataclass
class _SweepIndex:
    """The sorted universe the overlap kernels sweep (see ``docs/architecture.md``).

    Coordinates are int32 when they fit (every real genome), else int64; ``maxend`` is
    ``ends`` itself when no region ends before an earlier one of its chromosome.
    """

    chrom_ptr: np.ndarray  # int64 (n_chroms + 1,)
    starts: np.ndarray  # int32 or int64 (m,) sorted by (code, start, end, id)
    ends: np.ndarray  # same dtype (m,)
    maxend: np.ndarray  # same dtype (m,) running max of ends within a chromosome
    ids: np.ndarray  # int32 (m,) token id of each sorted row
    n_regions: int
    #: int64 (n_regions,) id -> id of its first identical region; None: each id its own (no
    #: repeated region, the usual universe: an identity array would cost 8 bytes a region)
    first_map: np.ndarray | None = None
    _rank: np.ndarray | None = None

    @property
    def first(self) -> np.ndarray:
        """int64 (n_regions,): id -> id of its first identical region (made on each call when
        every id is its own)."""
        if self.first_map is None:
            return np.arange(self.n_regions, dtype=np.int64)
        return self.first_map

    @property
    def rank(self) -> np.ndarray:
        """int64 (n_regions,): id -> genomic rank (built on first use: genomic/unique order)."""
        if self._rank is None:
            kept = np.zeros(self.n_regions, dtype=np.int64)
            kept[self.ids] = np.arange(self.ids.size, dtype=np.int64)
            self._rank = kept if self.first_map is None else kept[self.first_map]
        return self._rank


def _check_special_tokens(special_tokens) -> dict[str, str]:
    if special_tokens is None:
        return dict(DEFAULT_SPECIAL_TOKENS)
    unknown = set(special_tokens) - set(SPECIAL_NAMES)
    if unknown:
        raise UniverseError(
            f"unknown special token name(s) {sorted(unknown)}; the names are {list(SPECIAL_NAMES)}")
    out = dict(DEFAULT_SPECIAL_TOKENS)
    out.update({k: str(v) for k, v in special_tokens.items()})
    if len(set(out.values())) != len(out):
        raise UniverseError(f"special tokens must be distinct strings, got {out}")
    region_like = [t for t in out.values() if re.search(r":\d+-\d+$", t)]
    if region_like:  # as for extra tokens: its string would name a region, or shadow one
        raise UniverseError(f"special token {region_like[0]!r} is spelled like a region "
                            "(chrom:start-end); special tokens need names of their own")
    return out


def _same_as_previous(codes, starts, ends) -> np.ndarray:
    same = np.zeros(codes.size, dtype=bool)
    if codes.size > 1:
        same[1:] = (codes[1:] == codes[:-1]) & (starts[1:] == starts[:-1]) & (ends[1:] == ends[:-1])
    return same


def _first_occurrence(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """Sorted order of the regions (None: already sorted, no duplicates), and per region the id
    of its first identical region (None: no region repeats another, each id is its own), and
    which sorted rows repeat their predecessor."""
    n = codes.size
    order = _sweep_kernels.sort_order(codes, starts, ends)  # by (code, start, end, id)
    if order is None:  # already sorted, as most universe files are: skip the sort
        same = _same_as_previous(codes, starts, ends)
        if not same.any():
            return None, None, same  # sorted, no duplicates: identity order, nothing to store
        order = np.arange(n, dtype=np.int64)
    same = _same_as_previous(codes[order], starts[order], ends[order])
    if not same.any():
        return order, None, same
    # head of each run of identical regions: the smallest id (ties are in id order)
    head_pos = np.maximum.accumulate(np.where(same, 0, np.arange(n)))
    first = np.empty(n, dtype=np.int64)
    first[order] = order[head_pos]
    return order, first, same


class Universe:
    """A universe of reference regions: the vocabulary of a region tokenizer.

    Parameters
    ----------
    regions
        Anything :func:`genotok.regions.as_regions` accepts: a BED/BED.gz path, a
        :class:`RegionSet`, strings ``chr:start-end``, ``(chrom, start, end)`` tuples,
        arrays or a data frame. Region ``i`` becomes token id ``i`` (with repeated regions:
        see ``duplicates``).
    special_tokens
        Optional ``{"unk": "<unk>", ...}`` to rename special tokens (gtars names by default).
    duplicates
        What a region listed on more than one line becomes. ``"unique"`` (default, as gtars'
        vocabulary): each distinct region is one token, ids in order of first appearance, so
        a universe with repeated lines has the ``get_vocab()`` and ``vocab_size`` gtars gives
        it (the embedding table of a model trained with gtars on it); every hit gets the id of
        its region, once. ``"lines"``: every line keeps its line position as its id (ids of
        repeated lines decode to the same region; overlaps report the first one's id).
        ``"error"``: refuse such a universe. ``"unique"`` and ``"lines"`` warn, naming the
        first repeated line (``file:line``) and the count.
    strict
        For a BED file: refuse a line whose end is before its start. By default such a line
        (which gtars accepts and gives an id) keeps its id as an *inert* token that no query
        can hit, with one warning; its token string is the line's ``chr:start-end``.

    Examples
    --------
    >>> u = Universe(["chr1:100-200", "chr1:150-300", "chr2:0-50"])
    >>> u.vocab_size, u.unk_token_id, u.pad_token_id
    (10, 3, 4)
    >>> u.convert_ids_to_tokens([0, 3])
    ['chr1:100-200', '<unk>']
    """

    extra_tokens: tuple = ()  # see with_extra_tokens

    #: what the constructor accepts (:mod:`genotok.params`; the regions are read by
    #: :func:`~genotok.as_regions`, which says what is wrong with them)
    CONSTRAINTS: ClassVar[dict] = {"regions": REGIONS,
                                   # {name: token string}: a number is not a token
                                   "special_tokens": [Each(InstanceOf(str), mapping=True), None],
                                   "duplicates": [Options(*DUPLICATES)], "strict": [Flag()]}

    def __init__(self, regions, special_tokens: dict | None = None, *, duplicates: str = "unique",
                 strict: bool = False):
        validate({"regions": regions, "special_tokens": special_tokens, "duplicates": duplicates,
                  "strict": strict}, self.CONSTRAINTS, "Universe", error=UniverseError)
        if isinstance(regions, (str, os.PathLike)) and os.path.isfile(regions):
            rs = _read_bed(regions, strict)
        else:
            rs = as_regions(regions)
        self.source = rs.source
        self.special_tokens = _check_special_tokens(special_tokens)
        n = len(rs)
        if n == 0:
            raise UniverseError(f"{self.source or 'universe'}: the universe has no regions (an "
                                "empty or comment-only file?); a vocabulary needs at least one region")
        if n >= 2**31 - 8:
            raise UniverseError(f"{self.source or 'universe'}: {n} regions is more than token ids "
                                "can hold")
        order, first, dup_sorted = _first_occurrence(rs.codes, rs.starts, rs.ends)
        #: how many input lines repeat an earlier line's region
        self.n_duplicates = int(dup_sorted.sum())
        #: ``"unique"`` or ``"lines"``: how repeated regions became ids (see ``duplicates``)
        self.duplicates = "lines" if duplicates == "lines" else "unique"
        self._line_ids = None  # (None: each line its own id; see line_ids)
        if self.n_duplicates:
            msg = _duplicates_message(rs, first, self.n_duplicates)
            if duplicates == "error":
                raise UniverseError(msg + "; remove the repeated lines (or pass duplicates="
                                    "'unique', gtars' vocabulary, or 'lines')")
            if duplicates == "unique":
                kept = first == np.arange(n)
                self._line_ids = (np.cumsum(kept) - 1)[first]
                rs = rs.take(np.flatnonzero(kept))
                order, first, dup_sorted = _first_occurrence(rs.codes, rs.starts, rs.ends)
                msg += ("; each distinct region is one token, in order of first appearance (as "
                        "gtars' vocabulary); duplicates='lines' keeps line positions as ids")
            else:
                msg += ("; ids stay line positions and overlaps report the first occurrence's "
                        "id; the default duplicates='unique' gives gtars' vocabulary")
            warn(msg)
        self.regions: RegionSet = rs
        self._order, self._first = order, first
        self._chrom_index = {name: code for code, name in enumerate(rs.chrom_names)}
        #: ids of the lines that are not intervals (end < start): kept, never hit
        self.inert_ids = np.flatnonzero(rs.ends < rs.starts)
        self._dup_sorted = None if first is None else dup_sorted  # (None: no row repeats)
        self._sweep: _SweepIndex | None = None
        self._ailist_key: np.ndarray | None = None
        self._fingerprint: str | None = None
        self._vocab: dict[str, int] | None = None
        #: tokens after the seven special ones (condition tokens, see :mod:`genotok.singlecell.conditions`)
        self.extra_tokens: tuple[str, ...] = ()

    @validated({"tokens": EXTRA_TOKENS}, "Universe.with_extra_tokens", error=UniverseError)
    def with_extra_tokens(self, tokens) -> Universe:
        """This universe with ``tokens`` appended after the special tokens (ids
        ``n_regions + 7 ...``; region and special ids never move). Replaces earlier extras.

        Examples
        --------
        >>> u = Universe(["chr1:0-10"]).with_extra_tokens(["<batch=a>"])
        >>> u.vocab_size, u.convert_ids_to_tokens([8]), u.convert_tokens_to_ids("<batch=a>")
        (9, ['<batch=a>'], 8)
        """
        import copy

        tokens = tuple(tokens)  # (NUL separates them in the fingerprint: EXTRA_TOKENS)
        taken = set(self.special_tokens.values())
        clash = [t for t in tokens if t in taken]
        if clash or len(set(tokens)) != len(tokens):
            what = f"{clash[0]!r} is a special token" if clash else "they repeat a token"
            raise UniverseError(f"extra tokens must be distinct from each other and from the "
                                f"special tokens: {what}")
        if any(re.search(r":\d+-\d+$", t) for t in tokens):  # could name a region: its string
            names = set(self.regions.to_strings())  # would map to the extra id, not the region
            clash = [t for t in tokens if t in names]
            if clash:
                raise UniverseError(f"extra token {clash[0]!r} is the name of a region of the "
                                    "universe; condition tokens need names of their own")
        if self.n_regions + len(SPECIAL_NAMES) + len(tokens) >= 2**31:
            raise UniverseError(f"{len(tokens)} extra tokens is more than token ids can hold")
        out = copy.copy(self)
        out.extra_tokens = tokens
        out._fingerprint = None
        out._vocab = None
        return out

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_bed(cls, path: str | os.PathLike, special_tokens: dict | None = None, *,
                 strict: bool = False, storage_options: dict | None = None,
                 **kwargs) -> "Universe":
        """Load a universe from a BED or BED.gz file (token id = position among the distinct
        regions; the data line position when no line repeats another; see ``duplicates``).

        Lines with end before start get inert ids as gtars gives them (see ``strict``). A URL
        (``s3://``, ``gs://``, ``https://``…) is read through fsspec (``storage_options``: its
        credentials, endpoint…) from a local copy in genotok's cache.
        """
        path = _check_path(path, "from_bed", "Tokenizer(regions) or Universe(regions) take regions")
        if is_url(path):
            path = fetch_url(path, storage_options)
        return cls(_read_bed(path, strict), special_tokens, **kwargs)

    def _where(self) -> str:
        return self.source or "universe"

    # ------------------------------------------------------------------ sizes and ids
    @property
    def n_regions(self) -> int:
        """Number of universe regions (ids ``0 .. n_regions - 1``)."""
        return len(self.regions)

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def vocab_size(self) -> int:
        """Regions plus the seven special tokens (as gtars), plus any extra tokens."""
        return self.n_regions + len(SPECIAL_NAMES) + len(self.extra_tokens)

    @property
    def special_token_ids(self) -> dict[str, int]:
        """``{"unk": id, "pad": id, ...}``."""
        return {name: self.n_regions + k for k, name in enumerate(SPECIAL_NAMES)}

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """``{"unk_token": "<unk>", ...}`` as gtars and Hugging Face name it."""
        return {f"{name}_token": tok for name, tok in self.special_tokens.items()}

    unk_token_id = property(lambda self: self.n_regions + 0, doc="Id of ``<unk>``.")
    pad_token_id = property(lambda self: self.n_regions + 1, doc="Id of ``<pad>``.")
    mask_token_id = property(lambda self: self.n_regions + 2, doc="Id of ``<mask>``.")
    cls_token_id = property(lambda self: self.n_regions + 3, doc="Id of ``<cls>``.")
    eos_token_id = property(lambda self: self.n_regions + 4, doc="Id of ``<eos>``.")
    bos_token_id = property(lambda self: self.n_regions + 5, doc="Id of ``<bos>``.")
    sep_token_id = property(lambda self: self.n_regions + 6, doc="Id of ``<sep>``.")
    unk_token = property(lambda self: self.special_tokens["unk"], doc="The ``<unk>`` string.")
    pad_token = property(lambda self: self.special_tokens["pad"], doc="The ``<pad>`` string.")
    mask_token = property(lambda self: self.special_tokens["mask"], doc="The ``<mask>`` string.")
    cls_token = property(lambda self: self.special_tokens["cls"], doc="The ``<cls>`` string.")
    eos_token = property(lambda self: self.special_tokens["eos"], doc="The ``<eos>`` string.")
    bos_token = property(lambda self: self.special_tokens["bos"], doc="The ``<bos>`` string.")
    sep_token = property(lambda self: self.special_tokens["sep"], doc="The ``<sep>`` string.")

    @property
    def line_ids(self) -> np.ndarray:
        """int64 (input lines,): the token id of each input region (line): its line position
        but under the default ``duplicates="unique"`` with repeated lines. (Made on each call
        when it is the identity: the usual universe keeps no array of it.)"""
        if self._line_ids is None:
            return np.arange(len(self.regions), dtype=np.int64)
        return self._line_ids

    @property
    def duplicate_of(self) -> np.ndarray:
        """For every id, the id of its first identical region: itself, except with
        ``duplicates="lines"``, where a repeated line's id maps to its first line's id (the
        input line of each id under the default is :attr:`line_ids`)."""
        if self._first is None:
            return np.arange(len(self.regions), dtype=np.int64)
        return self._first

    # ------------------------------------------------------------------ fingerprint
    @property
    def fingerprint(self) -> str:
        """Stable hex SHA-256 of the regions in id order and the special tokens.

        Equal for equal region lists whatever they were loaded from (file, strings, arrays),
        different when any region, its position, or a special token differs.
        """
        if self._fingerprint is None:
            rs = self.regions
            h = hashlib.sha256(_FINGERPRINT_TAG)
            names = "\0".join(rs.chrom_names).encode()
            h.update(len(names).to_bytes(8, "little"))
            h.update(names)
            h.update(len(rs).to_bytes(8, "little"))
            # the arrays themselves (a copy only where the dtype differs): .tobytes() copied
            # 20 bytes a region, 20 MB of peak memory for a 1M-region universe
            h.update(np.ascontiguousarray(rs.codes, dtype="<i4"))
            h.update(np.ascontiguousarray(rs.starts, dtype="<i8"))
            h.update(np.ascontiguousarray(rs.ends, dtype="<i8"))
            h.update("\0".join(self.special_tokens[k] for k in SPECIAL_NAMES).encode())
            if self.extra_tokens:  # absent: the fingerprint of a plain universe is unchanged
                h.update(b"\0extra\0" + "\0".join(self.extra_tokens).encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def check_fingerprint(self, fingerprint: str, what: str = "data") -> None:
        """Raise :class:`UniverseMismatchError` when ``fingerprint`` is not this universe's."""
        from .errors import UniverseMismatchError

        if fingerprint != self.fingerprint:
            raise UniverseMismatchError(
                f"{what} was tokenized with universe {fingerprint[:12]}…, not with this one "
                f"({self.fingerprint[:12]}…, {self._where()}); token ids are specific to their "
                "universe: re-tokenize with the right universe or open it with the one it was made with")

    # ------------------------------------------------------------------ sweep index
    @property
    def sweep(self) -> _SweepIndex:
        """The sorted index the overlap kernels need (built on first use, then cached)."""
        if self._sweep is None:
            rs = self.regions
            order = self._order
            if order is not None and self._dup_sorted is not None:
                order = order[~self._dup_sorted]
            if self.inert_ids.size:  # never in the sweep: no query can hit them
                inert = np.zeros(len(rs), dtype=bool)
                inert[self.inert_ids] = True
                order = np.arange(len(rs)) if order is None else order
                order = order[~inert[order]]
            self._sweep = _SweepIndex(*_sweep_kernels.build_sweep_sorted(
                rs.codes, rs.starts, rs.ends, order, len(rs.chrom_names)), len(rs), self._first)
        return self._sweep

    @property
    def ailist_key(self) -> np.ndarray:
        """int64 (n_regions,): the order in which gtars' AIList backend reports a query's hits.

        gtars (``tokenizer_type = "ailist"``) sorts each chromosome's regions by start (ties:
        file order), splits off, level after level, every region that contains at least 10 of
        the 19 regions after it, and reports hits level by level, within a level by
        descending position. Sorting one query's hits by this key gives that order.
        """
        if self._ailist_key is None:
            rs = self.regions
            self._ailist_key = _ailist_key(rs.codes, rs.starts, rs.ends)
        return self._ailist_key

    @property
    def chrom_names(self) -> tuple[str, ...]:
        """Chromosome names of the universe, in order of first appearance."""
        return self.regions.chrom_names

    def chrom_code(self, name: str) -> int:
        """Chromosome code of ``name`` in this universe, ``-1`` when absent."""
        return self._chrom_index.get(name, -1)

    def map_codes(self, regions: RegionSet) -> np.ndarray:
        """Chromosome codes of ``regions`` translated into this universe's code space.

        Chromosomes absent from the universe get ``-1``. When none of a non-empty set's
        chromosomes is known but they would be after adding or removing a ``chr`` prefix,
        a warning says so (a ``chr1`` vs ``1`` naming mismatch hits nothing silently otherwise).
        """
        table = self._code_table(regions)
        if not table.size:
            return np.zeros(0, dtype=np.int32)
        if len(regions) < 1 << 16:
            return table[regions.codes]
        return _names.translate_codes(table, regions.codes)

    def _code_table(self, regions: RegionSet) -> np.ndarray:
        """int32: this universe's code of each of ``regions``' chromosome names (``-1`` when
        absent), with :meth:`map_codes`' naming warning."""
        table = np.fromiter((self._chrom_index.get(n, -1) for n in regions.chrom_names),
                            dtype=np.int32, count=len(regions.chrom_names))
        if len(regions) and table.size and np.all(table < 0):
            self._warn_naming(regions)
        return table

    def _warn_naming(self, regions: RegionSet) -> None:
        def flip(n: str) -> str:
            return n[3:] if n.startswith("chr") else "chr" + n

        flipped = [n for n in regions.chrom_names if flip(n) in self._chrom_index]
        if flipped:
            where = regions.source or "the query regions"
            style = "without" if flipped[0].startswith("chr") else "with"
            warn(
                f"{where}: no chromosome name matches the universe ({self._where()}), but "
                f"{len(flipped)} would {style} a 'chr' prefix (e.g. {flipped[0]!r} vs "
                f"{flip(flipped[0])!r}); rename the chromosomes so that both use one convention")

    # ------------------------------------------------------------------ decoding
    def _token_of(self, i: int) -> str:
        rs = self.regions
        return f"{rs.chrom_names[rs.codes[i]]}:{int(rs.starts[i])}-{int(rs.ends[i])}"

    def _check_ids(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise UniverseError(f"token ids must be integers, got dtype {ids.dtype}")
        ids = ids.astype(np.int64, copy=False)
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            bad = ids[(ids < 0) | (ids >= self.vocab_size)][0]
            raise UniverseError(f"token id {bad} is outside this vocabulary (0..{self.vocab_size - 1})")
        return ids

    def convert_ids_to_tokens(self, ids):
        """Token strings (``chr:start-end`` or a special token) of one id or many."""
        if np.ndim(ids) == 0:
            return self.convert_ids_to_tokens([ids])[0]
        ids = self._check_ids(ids)
        n = self.n_regions
        specials = [self.special_tokens[k] for k in SPECIAL_NAMES] + list(self.extra_tokens)
        regs = ids < n
        out = np.empty(ids.size, dtype=object)
        if regs.any():
            out[regs] = self.regions.take(ids[regs]).to_strings()
        for j in np.flatnonzero(~regs):
            out[j] = specials[ids[j] - n]
        return out.tolist()

    def decode_regions(self, ids) -> RegionSet:
        """The regions of region ids (special ids are refused)."""
        ids = self._check_ids(np.atleast_1d(ids))
        if ids.size and ids.max() >= self.n_regions:
            raise UniverseError(f"id {int(ids.max())} is a special token, not a region")
        return self.regions.take(ids)

    def get_vocab(self) -> dict[str, int]:
        """``{token string: id}`` for every region and special token (gtars' ``get_vocab()``;
        with ``duplicates="lines"`` a repeated region maps to its first line's id)."""
        if self._vocab is None:
            vocab: dict[str, int] = {}
            for i, tok in enumerate(self.regions.to_strings()):
                vocab.setdefault(tok, i)
            for name, i in self.special_token_ids.items():
                vocab[self.special_tokens[name]] = i
            for k, tok in enumerate(self.extra_tokens):
                vocab[tok] = self.n_regions + len(SPECIAL_NAMES) + k
            self._vocab = vocab
        return self._vocab

    def convert_tokens_to_ids(self, tokens):
        """Ids of token strings (exact match); unknown strings give ``unk_token_id``."""
        vocab = self.get_vocab()
        if isinstance(tokens, str):
            return vocab.get(tokens, self.unk_token_id)
        return [vocab.get(t, self.unk_token_id) for t in tokens]

    def write_bed(self, out: str | os.PathLike) -> None:
        """Write the regions as BED3 to ``out`` in id order (atomically: a temporary name, then
        rename)."""
        from ._io import atomic_write

        rs = self.regions
        names = np.asarray(rs.chrom_names, dtype=object)[rs.codes] if len(rs) else []
        with atomic_write(out, "w") as fh:
            fh.writelines(f"{c}\t{s}\t{e}\n" for c, s, e in zip(names, rs.starts.tolist(), rs.ends.tolist()))

    def __eq__(self, other) -> bool:
        return isinstance(other, Universe) and other.fingerprint == self.fingerprint

    __hash__ = None

    def _repr_html_(self) -> str:
        from ._html import card, preview

        return card("genotok.Universe", {
            "regions": f"{self.n_regions:,}", "chromosomes": len(self.chrom_names),
            "vocab_size": f"{self.vocab_size:,}", "duplicates": self.n_duplicates,
            "inert lines": int(self.inert_ids.size),
            "source": self.source or "in memory", "fingerprint": self.fingerprint[:16] + "…",
            "special tokens": " ".join(self.special_tokens[k] for k in SPECIAL_NAMES)},
            [("first regions", preview(self.regions.take(np.arange(min(6, self.n_regions))).to_strings()))])

    def __repr__(self) -> str:
        src = f", source={Path(self.source).name!r}" if self.source else ""
        inert = f", {self.inert_ids.size:,} inert" if self.inert_ids.size else ""
        return (f"Universe({self.n_regions:,} regions{inert} on {len(self.chrom_names)} "
                f"chromosomes, vocab_size={self.vocab_size:,}{src}, "
                f"fingerprint={self.fingerprint[:12]})")


def _duplicates_message(rs: RegionSet, first: np.ndarray, count: int) -> str:
    """``"<file>:<line>: <count> duplicate line(s) ..."``: the first line that repeats an
    earlier line's region, where it is (the file's line number when the regions came from a
    file), and what it repeats."""
    row = int(np.flatnonzero(first != np.arange(first.size))[0])
    token = rs._str(row)
    if rs.from_file and rs.source:
        line, earlier = _file_line(rs.source, rs, row), _file_line(rs.source, rs, int(first[row]))
    else:
        line = earlier = None
    if line is not None and earlier is not None:
        return (f"{rs.source}:{line}: {count} duplicate line(s) (a region an earlier line "
                f"already lists); the first repeats line {earlier}, {token}")
    return (f"{rs.source or 'universe'}: {count} duplicate region(s); the first is region "
            f"{row} ({token}), which repeats region {int(first[row])}")


def _file_line(path: str, rs: RegionSet, row: int) -> int | None:
    """The 1-based line of ``path`` that holds region ``row`` of ``rs``, found by its
    chromosome, start and end (the first ``row`` regions hold it once at most: ``row`` is the
    first repeat); ``None`` when the text does not show it plainly. Reads the file up to that
    line only, on the warning's path."""
    import gzip

    chrom, start, end = rs.chrom_names[rs.codes[row]], int(rs.starts[row]), int(rs.ends[row])
    want = int(np.count_nonzero((rs.codes[:row] == rs.codes[row]) & (rs.starts[:row] == start)
                                & (rs.ends[:row] == end))) + 1
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rt", errors="replace", newline="\n") if gz  # (lines end at
              else open(path, errors="replace", newline="\n")) as fh:  # \n only, as the parser's)
            for lineno, text in enumerate(fh, 1):
                tab, space = text.find("\t"), text.find(" ")  # the line's first separator
                f = text.split("\t") if tab >= 0 and not 0 <= space < tab else text.split()
                if len(f) >= 3 and f[0] == chrom and _is_int(f[1], start) \
                        and _is_int(f[2], end):
                    want -= 1
                    if not want:
                        return lineno
    except (OSError, EOFError, ValueError):
        return None
    return None


def _is_int(field: str, value: int) -> bool:
    """Whether a BED coordinate field reads as ``value`` (``+5`` and ``005`` are 5 to the
    parser: comparing the text with ``str(value)`` missed them, and counted a later line)."""
    field = field.strip()
    digits = field[1:] if field[:1] == "+" else field  # one sign, as the parser reads it
    return 0 < len(digits) <= 20 and digits.isascii() and digits.isdigit() and int(digits) == value


def _read_bed(path: str | os.PathLike, strict: bool) -> RegionSet:
    """A universe BED file as regions; lines with end < start kept (with a warning) unless
    ``strict``. The strict parse runs first, so a well-formed file costs nothing extra."""
    try:
        return RegionSet.from_bed(path)
    except BedParseError as exc:
        if not exc.problem.startswith(_parse.MESSAGES[_parse.END_BEFORE_START]):
            raise
        if strict:
            raise BedParseError(exc.path, exc.line, exc.problem + "; gtars accepts such a line "
                                "as a token no query hits: strict=False loads it the same "
                                "way") from None
        first_line = exc.line
    rs = RegionSet.from_bed(path, reversed="keep")
    bad = np.flatnonzero(rs.ends < rs.starts)
    warn(
        f"{os.fspath(path)}:{first_line}: {bad.size} line(s) with end before start (first: id "
        f"{int(bad[0])}, {rs._str(int(bad[0]))}); kept as inert tokens with the ids gtars gives "
        "them (no query hits them); strict=True refuses such a file")
    return rs


def _ailist_key(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                coverage: int = 10) -> np.ndarray:
    """See :attr:`Universe.ailist_key` (the decomposition of gtars' ``AIList::build``)."""
    n = codes.size
    key = np.zeros(n, np.int64)
    order = np.lexsort((np.arange(n), starts, codes))
    for seg in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        level, cur = 0, seg
        while cur.size:
            e = ends[cur]
            contained = np.zeros(cur.size, np.int64)  # of the next 2 * coverage - 1 regions
            for i in range(1, min(2 * coverage, cur.size)):
                contained[:-i] += e[:-i] > e[i:]
            stay = contained < coverage
            kept = cur[stay]
            key[kept] = level * n + (kept.size - 1 - np.arange(kept.size))
            cur, level = cur[~stay], level + 1
    return key
