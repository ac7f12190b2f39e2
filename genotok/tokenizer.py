"""Tokenizer: region sets in, token ids out (gtars-compatible by default).

The Tokenizer validates and shapes; the overlap work is done by the numba kernels in
:mod:`genotok._kernels` over the universe's sorted :class:`~genotok.universe._SweepIndex`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _config, _kernels
from ._sort import sort_regions, sorted_runs
from .errors import UniverseError
from .ragged import Ragged
from .regions import RegionSet, as_regions
from .universe import SPECIAL_NAMES, Universe

OVERLAP_MODES = ("all", "best")
UNKNOWN_POLICIES = {"drop": 0, "set": 1, "region": 2}
ORDERS = ("gtars", "input", "genomic", "unique")
FRACTION_OF = ("query", "region")
#: gtars' overlap backends (``tokenizer_type``): one engine here, each backend's hit order
TOKENIZER_TYPES = ("bits", "ailist")


@dataclass(frozen=True)
class TokenizerSettings:
    """How queries become tokens. Stored with every corpus so a dataset can be reproduced.

    Examples
    --------
    >>> TokenizerSettings(overlap="best").as_dict()["overlap"]
    'best'
    """

    overlap: str = "all"
    min_overlap: int = 0
    min_fraction: float = 0.0
    fraction_of: str = "query"
    unknown: str = "set"
    order: str = "gtars"
    tokenizer_type: str = "bits"

    def __post_init__(self):
        def check(name, value, allowed):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")

        check("overlap", self.overlap, OVERLAP_MODES)
        check("unknown", self.unknown, UNKNOWN_POLICIES)
        check("order", self.order, ORDERS)
        check("fraction_of", self.fraction_of, FRACTION_OF)
        check("tokenizer_type", self.tokenizer_type, TOKENIZER_TYPES)
        if int(self.min_overlap) != self.min_overlap or self.min_overlap < 0:
            raise ValueError(f"min_overlap must be a non-negative integer (bp), got {self.min_overlap!r}")
        if not 0.0 <= float(self.min_fraction) <= 1.0:
            raise ValueError(f"min_fraction must be within [0, 1], got {self.min_fraction!r}")

    def as_dict(self) -> dict:
        """The settings as plain values (``tokenizer_type`` only when not the default, so
        records made before it existed still match)."""
        out = {"overlap": self.overlap, "min_overlap": int(self.min_overlap),
               "min_fraction": float(self.min_fraction), "fraction_of": self.fraction_of,
               "unknown": self.unknown, "order": self.order}
        if self.tokenizer_type != "bits":
            out["tokenizer_type"] = self.tokenizer_type
        return out


@dataclass
class _Overlaps:
    """Every (query, universe region) pair a tokenization produced, in emission order.

    ``ids`` are token ids; ``query`` the index of the query row within its set (``-1`` for a
    set-level ``<unk>``); ``overlap`` the overlap in bp (0 for ``<unk>``); ``offsets`` split the
    flat arrays per input set.
    """

    ids: np.ndarray
    query: np.ndarray
    overlap: np.ndarray
    offsets: np.ndarray


def _chromosome_runs(codes: np.ndarray, starts: np.ndarray):
    """(run bounds, run codes) when each chromosome is one run with non-decreasing starts, else None.

    That is how most BED files are laid out (sorted, whatever the chromosome order); the gtars
    order of such a file is its runs rearranged, which needs no sort.
    """
    runs = sorted_runs(codes, starts)
    if runs is None or np.unique(runs[1]).size != runs[1].size:
        return None
    return runs


def _is_single_set(obj) -> bool:
    """True when ``obj`` is one region set, False when it is a sequence of region sets."""
    if isinstance(obj, (RegionSet, str, os.PathLike, Mapping)) or hasattr(obj, "columns"):
        return True
    if isinstance(obj, tuple) and len(obj) == 3 and all(isinstance(x, np.ndarray) for x in obj):
        return True
    if not isinstance(obj, Sequence) or isinstance(obj, (bytes, bytearray)):
        return True
    if len(obj) == 0:
        return True
    first = obj[0]
    if isinstance(first, tuple) and len(first) >= 3 and isinstance(first[0], (str, bytes)):
        return True  # a list of (chrom, start, end) tuples
    if hasattr(first, "chr") and hasattr(first, "start") and hasattr(first, "end"):
        return True  # a list of gtars Region objects
    if isinstance(first, str):
        # a list of file paths is a batch; a list of "chr:start-end" strings is one set
        return not all(isinstance(x, str) and os.path.isfile(x) for x in obj)
    return False


def _delegate(name: str) -> property:
    return property(lambda self: getattr(self.universe, name),
                    doc=f"Same as ``universe.{name}`` (gtars names).")


class Tokenizer:
    """Turn genomic regions into universe token ids.

    Parameters
    ----------
    source : str, PathLike, Universe or regions
        What the vocabulary comes from, recognised by itself (as gtars' ``Tokenizer(path)``):
        a BED / BED.gz file (token id = line position); a ``.toml`` configuration (gtars' or
        genotok's, see :meth:`from_config`); a model directory or a Hugging Face Hub id
        ``org/name`` (see :meth:`from_pretrained`); a :class:`Universe`; or regions in memory
        (strings ``chr:start-end``, tuples, arrays, a data frame, gtars ``Region`` objects).
        A string that could be read two ways is refused with the explicit call to use.
    overlap : str, default "all"
        ``"all"`` (every overlapped universe region, as gtars) or ``"best"`` (the region with
        the largest overlap per query; ties go to the lowest id).
    min_overlap : int, default 0
        Minimum overlap in bp for a hit (0: any half-open overlap counts).
    min_fraction : float, default 0.0
        Minimum overlap as a fraction (0 to 1) of the query or of the universe region, as
        ``fraction_of`` says.
    fraction_of : str, default "query"
        ``"query"`` (like bedtools and geniml's ``-f``) or ``"region"`` (the universe region).
    unknown : str, default "set"
        ``"set"`` (gtars: one ``<unk>`` when the whole set hits nothing), ``"region"`` (one
        ``<unk>`` per query without a hit, so outputs stay aligned with inputs) or ``"drop"``.
    order : str, default "gtars"
        ``"gtars"`` (a BED file is stable-sorted by (chromosome name as bytes, start) first,
        in-memory regions keep their order; hits of a query by ascending universe position),
        ``"input"`` (input order, files too), ``"genomic"`` (by universe position) or
        ``"unique"`` (de-duplicated, genomic).
    n_threads : int or None, default None
        Default numba thread count for this tokenizer's calls (``None``: numba's setting).
    special_tokens : dict or None, default None
        ``{"unk": "<UNKNOWN>", ...}``: rename special tokens (partial overrides allowed).
    tokenizer_type : str, default "bits"
        gtars' overlap backend, ``"bits"`` (default) or ``"ailist"``; any other value is
        refused. The hits are the same; the order of one query's several hits follows the
        backend (``"bits"``: ascending position; ``"ailist"``: as gtars' AIList reports them,
        see :attr:`Universe.ailist_key`) with the ``"gtars"`` and ``"input"`` orders.
    strict : bool, default False
        Refuse universe lines whose end is before their start (gtars accepts them; by default
        they keep their ids as inert tokens, see :class:`Universe`).
    extra_tokens : sequence of str or None, default None
        Strings appended to the vocabulary after the seven special tokens (condition tokens
        such as ``"<batch=donor1>"``, see :mod:`genotok.conditions`): ids ``n_regions + 7``
        on, saved with the configuration, covered by the fingerprint, decoded by ``decode``.

    Settings not given keep the values saved in a configuration, else the defaults above.
    ``Tokenizer`` can be subclassed as gtars' is (``__new__(cls, *args, **kwargs)`` and an
    ``__init__`` calling ``super().__init__()``) or in the usual Python way.

    Examples
    --------
    >>> tok = Tokenizer(["chr1:100-200", "chr1:150-300", "chr2:0-50"])
    >>> tok.encode(["chr1:120-160", "chr3:0-10"]).tolist()
    [0, 1]
    >>> tok.tokenize([("chr2", 10, 20)])
    ['chr2:0-50']
    >>> tok.encode([("chr9", 1, 2)]).tolist() == [tok.unk_token_id]
    True
    """

    def __new__(cls, *args, **kwargs):
        # gtars' Tokenizer is built in __new__; its users subclass it with
        # ``__new__(cls, *args, **kwargs)`` returning ``super().__new__(cls, *args, **kwargs)``
        # and an ``__init__`` that calls ``super().__init__()`` without arguments. Keep the
        # arguments for that call (pickle calls __new__ with none).
        self = super().__new__(cls)
        self._new_args = (args, kwargs)
        return self

    def __init__(self, *args, **kwargs):
        stored = self.__dict__.pop("_new_args", None)
        if not args and not kwargs:
            if stored is not None and (stored[0] or stored[1]):
                args, kwargs = stored  # the gtars subclassing pattern
            elif "universe" in self.__dict__:
                return
            else:
                raise TypeError("Tokenizer() needs a source: a BED/BED.gz path, a TOML "
                                "configuration, a model directory or Hub id, or regions")
        self._setup(*args, **kwargs)

    def __getattr__(self, name):
        # only for attributes not found: a subclass whose __init__ never calls
        # Tokenizer.__init__ (gtars builds in __new__, so such subclasses work there) is built
        # from its __new__ arguments on first use
        stored = self.__dict__.get("_new_args")
        if name.startswith("__") or "universe" in self.__dict__ or not stored or not any(stored):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        del self.__dict__["_new_args"]
        self._setup(*stored[0], **stored[1])
        return getattr(self, name)

    def _setup(self, source, *, overlap: str | None = None, min_overlap: int | None = None,
               min_fraction: float | None = None, fraction_of: str | None = None,
               unknown: str | None = None, order: str | None = None,
               n_threads: int | None = None, special_tokens: dict | None = None,
               tokenizer_type: str | None = None, strict: bool = False, extra_tokens=None):
        from . import pretrained as _pretrained

        universe, saved, check = _pretrained.load(source, special_tokens, strict)
        if extra_tokens is not None:  # condition tokens after the specials (genotok.conditions)
            universe = universe.with_extra_tokens(extra_tokens)
        given = {"overlap": overlap, "min_overlap": min_overlap, "min_fraction": min_fraction,
                 "fraction_of": fraction_of, "unknown": unknown, "order": order,
                 "tokenizer_type": tokenizer_type}
        settings = {**saved, **{k: v for k, v in given.items() if v is not None}}
        ttype = settings.get("tokenizer_type", "bits")
        if ttype not in TOKENIZER_TYPES:
            raise UniverseError(f"tokenizer_type must be one of {list(TOKENIZER_TYPES)} (as in "
                                f"gtars), got {ttype!r}")
        self.universe = universe
        self.settings = TokenizerSettings(**settings)
        self.n_threads = n_threads
        if check is not None:
            _pretrained.check_vocab_size(self.vocab_size, *check,
                                         len(self.universe.extra_tokens))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_bed(cls, path: str | os.PathLike, **kwargs) -> "Tokenizer":
        """A tokenizer over the universe in a BED/BED.gz file (token id = line position).

        ``special_tokens`` and ``strict`` (refuse lines with end before start, which gtars
        accepts) go to :meth:`Universe.from_bed`; other keywords are the settings.
        """
        special = kwargs.pop("special_tokens", None)
        strict = kwargs.pop("strict", False)
        return cls(Universe.from_bed(path, special, strict=strict), **kwargs)

    @classmethod
    def from_config(cls, path: str | os.PathLike, **overrides) -> "Tokenizer":
        """Load a tokenizer configuration: genotok's own TOML or gtars' ``tokenizer.toml``.

        Both have ``universe = "path"`` (relative to the config file), optional
        ``special_tokens`` (gtars: a list of ``{name, token}`` tables, partial overrides
        allowed; genotok: the same, or a table ``{unk = "<unk>", ...}``) and
        ``tokenizer_type`` (``"bits"`` or ``"ailist"``; anything else is refused, as gtars
        does). genotok settings live in a ``[genotok]`` table; when it records a
        ``fingerprint``, a universe file that changed since is refused. Keyword arguments
        override the file's settings.
        """
        from .pretrained import read_config

        special = overrides.pop("special_tokens", None)
        strict = overrides.pop("strict", False)
        universe, saved = read_config(path, special, strict)
        return cls(universe, **{**saved, **overrides})

    @classmethod
    def from_pretrained(cls, name_or_dir: str | os.PathLike, *, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, **overrides) -> "Tokenizer":
        """The tokenizer of a model: a local directory or a Hugging Face Hub model repo.

        Looks for ``tokenizer.toml`` (and the universe it names), then ``universe.bed.gz``,
        then ``universe.bed``. When the repo's ``config.json`` / ``config.yaml`` gives a
        ``vocab_size``, the tokenizer's must be equal. Hub repos need ``huggingface_hub``
        (``pip install 'genotok[hub]'``) and follow its cache and offline conventions
        (``HF_HUB_OFFLINE=1``, ``local_files_only=True``). See :mod:`genotok.pretrained`.

        Examples
        --------
        >>> import tempfile
        >>> d = Tokenizer(["chr1:0-100", "chr2:5-50"]).save_pretrained(tempfile.mkdtemp())
        >>> Tokenizer.from_pretrained(d).encode(["chr2:10-20"]).tolist()
        [1]
        """
        from . import pretrained as _pretrained

        directory = _pretrained.snapshot(name_or_dir, revision=revision, cache_dir=cache_dir,
                                         local_files_only=local_files_only)
        special = overrides.pop("special_tokens", None)
        strict = overrides.pop("strict", False)
        universe, saved, check = _pretrained.load_directory(directory, os.fspath(name_or_dir),
                                                            special, strict)
        tok = cls(universe, **{**saved, **overrides})
        _pretrained.check_vocab_size(tok.vocab_size, *check, len(tok.universe.extra_tokens))
        return tok

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        """Write ``universe.bed.gz`` and ``tokenizer.toml`` into ``directory`` (created).

        gtars reads it back (``Tokenizer.from_pretrained(directory)``, ``from_config``) with
        the same ids; :meth:`from_pretrained` also restores the genotok settings. Returns the
        directory.
        """
        from .pretrained import save

        return save(self, directory)

    def save_config(self, path: str | os.PathLike, universe_path: str | os.PathLike | None = None) -> Path:
        """Write a TOML configuration gtars can read too (genotok settings in ``[genotok]``).

        ``universe_path`` defaults to the file the universe was loaded from; a universe built
        in memory is written next to the configuration as ``<name>.universe.bed``.
        """
        from ._io import atomic_write

        path = Path(path)
        if universe_path is None:
            if self.universe.source and os.path.isfile(self.universe.source):
                universe_path = Path(self.universe.source)
            else:
                universe_path = path.with_suffix(".universe.bed")
                self.universe.write_bed(universe_path)
        universe_path = Path(universe_path)
        try:
            ref = os.path.relpath(universe_path.resolve(), path.parent.resolve())
        except ValueError:  # another drive on Windows
            ref = str(universe_path.resolve())

        def q(s) -> str:
            return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'

        lines = [f"universe = {q(ref)}", f"tokenizer_type = {q(self.tokenizer_type)}",
                 "special_tokens = ["]
        lines += [f"  {{ name = {q(k)}, token = {q(self.universe.special_tokens[k])} }},"
                  for k in SPECIAL_NAMES]
        lines += ["]", "", "[genotok]"]
        for k, v in self.settings.as_dict().items():
            if k == "tokenizer_type":
                continue  # gtars' key, at the top
            lines.append(f"{k} = {q(v) if isinstance(v, str) else v}")
        if self.universe.extra_tokens:
            lines.append("extra_tokens = [" + ", ".join(q(t) for t in self.universe.extra_tokens)
                         + "]")
        lines.append(f"fingerprint = {q(self.universe.fingerprint)}")
        with atomic_write(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        return path

    @property
    def tokenizer_type(self) -> str:
        """gtars' backend name, ``"bits"`` or ``"ailist"`` (the order of a query's hits)."""
        return self.settings.tokenizer_type

    # ------------------------------------------------------------------ vocabulary (as gtars)
    @property
    def vocab_size(self) -> int:
        """Regions plus the seven special tokens."""
        return self.universe.vocab_size

    def __len__(self) -> int:
        return self.universe.vocab_size

    for _name in SPECIAL_NAMES:
        locals()[f"{_name}_token"] = _delegate(f"{_name}_token")
        locals()[f"{_name}_token_id"] = _delegate(f"{_name}_token_id")
    del _name

    @property
    def fingerprint(self) -> str:
        """The universe fingerprint (written with every corpus)."""
        return self.universe.fingerprint

    @property
    def special_tokens_map(self) -> dict[str, str]:
        return self.universe.special_tokens_map

    def get_vocab(self) -> dict[str, int]:
        """``{token string: id}``."""
        return self.universe.get_vocab()

    def convert_ids_to_tokens(self, ids):
        return self.universe.convert_ids_to_tokens(ids)

    def convert_tokens_to_ids(self, tokens):
        return self.universe.convert_tokens_to_ids(tokens)

    def decode(self, ids, *, skip_special_tokens: bool = False) -> list[str]:
        """Token strings of ids, always a list (gtars ``decode``; one id gives a list of one).

        Examples
        --------
        >>> tok = Tokenizer(["chr1:0-100"])
        >>> tok.decode(0), tok.decode([0, 1], skip_special_tokens=True)
        (['chr1:0-100'], ['chr1:0-100'])
        """
        ids = np.atleast_1d(np.asarray(ids))
        if skip_special_tokens:
            ids = ids[np.asarray(ids) < self.universe.n_regions]
        return self.universe.convert_ids_to_tokens(ids)

    def batch_decode(self, sequences, *, skip_special_tokens: bool = False) -> list[list[str]]:
        """:meth:`decode` of each sequence: lists of ids, a 2-D array or tensor, a ``Ragged``.

        Examples
        --------
        >>> tok = Tokenizer(["chr1:0-100", "chr2:0-5"])
        >>> tok.batch_decode([[0, 1], [1, 3]], skip_special_tokens=True)
        [['chr1:0-100', 'chr2:0-5'], ['chr2:0-5']]
        """
        if hasattr(sequences, "detach"):  # a torch tensor
            sequences = sequences.detach().cpu().numpy()
        return [self.decode(np.asarray(seq), skip_special_tokens=skip_special_tokens)
                for seq in sequences]

    @property
    def all_special_tokens(self) -> list[str]:
        """The seven special token strings, in id order (``<unk> <pad> <mask> ...``)."""
        return [self.universe.special_tokens[k] for k in SPECIAL_NAMES]

    @property
    def all_special_ids(self) -> list[int]:
        """The seven special token ids (``n_regions ... n_regions + 6``)."""
        return [self.universe.n_regions + k for k in range(len(SPECIAL_NAMES))]

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None, *,
                                already_has_special_tokens: bool = True) -> list[int]:
        """1 for each special token of a sequence, 0 for each region (tokens or ids).

        As gtars' ``get_special_tokens_mask(tokens)``, which marks the special tokens a
        sequence contains: that is Hugging Face's ``already_has_special_tokens=True``, the
        default here. With ``already_has_special_tokens=False`` (Hugging Face's default) the
        mask describes the special tokens *this tokenizer would add*: it adds none, so it is
        all zeros (over ``token_ids_0`` and ``token_ids_1``).

        Examples
        --------
        >>> tok = Tokenizer(["chr9:3526071-3526165"])
        >>> tok.get_special_tokens_mask(["<pad>", "chr9:3526071-3526165", "<unk>"])
        [1, 0, 1]
        >>> tok.get_special_tokens_mask([2, 0, 1])
        [1, 0, 1]
        """
        if not already_has_special_tokens:
            n1 = 0 if token_ids_1 is None else len(token_ids_1)
            return [0] * (len(token_ids_0) + n1)
        if token_ids_1 is not None:
            raise ValueError("token_ids_1 cannot be given with already_has_special_tokens=True: "
                             "a sequence that already has its special tokens is one sequence")
        if hasattr(token_ids_0, "detach"):
            token_ids_0 = token_ids_0.detach().cpu().numpy()
        if isinstance(token_ids_0, str):
            token_ids_0 = [token_ids_0]
        items = token_ids_0.tolist() if isinstance(token_ids_0, np.ndarray) else list(token_ids_0)
        specials = set(self.all_special_tokens)
        n = self.universe.n_regions
        out = []
        for x in items:
            if isinstance(x, str):
                out.append(int(x in specials))
            elif isinstance(x, (int, np.integer)) and not isinstance(x, bool):
                out.append(int(n <= x < self.vocab_size))
            else:
                raise TypeError(f"get_special_tokens_mask takes token strings or integer ids, "
                                f"got {x!r} ({type(x).__name__})")
        return out

    # ------------------------------------------------------------------ tokenization
    def _query_order(self, rs: RegionSet, with_perm: bool = True):
        """``(codes, starts, ends, order, perm)``: one set's queries ready for the kernels, in
        its emission order.

        ``order`` indexes the arrays (``None``: as they are). A file in the gtars order whose
        chromosomes are not each one sorted run is sorted here, by (chromosome name, start),
        stably, with the ends carried through the sort: the arrays come back sorted (``order``
        is ``None``) and ``perm[k]`` is the set's index of row ``k`` (an empty array when not
        ``with_perm``). Otherwise ``perm`` is ``None``: the arrays are the set's own.
        """
        if self.settings.order == "gtars" and rs.from_file and len(rs) > 1:
            names = rs.chrom_names
            byte_rank = np.empty(len(names), dtype=np.int64)
            byte_rank[sorted(range(len(names)), key=lambda c: names[c].encode())] = np.arange(len(names))
            runs = _chromosome_runs(rs.codes, rs.starts)
            if runs is not None:  # one sorted run per chromosome: reorder whole runs, no sort
                bounds, run_codes = runs
                pieces = np.argsort(byte_rank[run_codes], kind="stable")
                if np.array_equal(pieces, np.arange(pieces.size)):  # already in the gtars order
                    return self.universe.map_codes(rs), rs.starts, rs.ends, None, None
                order = np.concatenate([np.arange(bounds[k], bounds[k + 1]) for k in pieces])
                return self.universe.map_codes(rs), rs.starts, rs.ends, order, None
            table = self.universe._code_table(rs)
            code_of = np.empty(len(names), dtype=np.int32)
            code_of[byte_rank] = table
            # a radix sort on (rank, start) whose buckets sort in cache, ends as payload
            # (genotok._sort.sort_regions): no random gathers of the set's arrays afterwards
            perm, codes, starts, ends = sort_regions(rs.codes, rs.starts, rs.ends, byte_rank,
                                                     code_of, perm=with_perm)
            return codes, starts, ends, None, perm if with_perm else np.zeros(0, np.int64)
        return self.universe.map_codes(rs), rs.starts, rs.ends, None, None

    def _kernel(self, codes, starts, ends, set_offsets, order, unk_mode: int, details: bool = True,
                ids_dtype=np.uint32):
        """The one call into the overlap kernels, with this tokenizer's settings."""
        s, u = self.settings, self.universe
        sw = u.sweep
        return _kernels.overlap(
            np.ascontiguousarray(codes, dtype=np.int32),
            np.ascontiguousarray(starts, dtype=np.int64),
            np.ascontiguousarray(ends, dtype=np.int64),
            np.ascontiguousarray(set_offsets, dtype=np.int64),
            None if order is None else np.ascontiguousarray(order, dtype=np.int64),
            sw.chrom_ptr, sw.starts, sw.ends, sw.maxend, sw.ids,
            int(s.min_overlap),
            float(s.min_fraction) if s.fraction_of == "query" else 0.0,
            float(s.min_fraction) if s.fraction_of == "region" else 0.0,
            s.overlap == "best", unk_mode, u.unk_token_id, details, ids_dtype)

    def overlaps(self, sets, *, n_threads: int | None = None) -> _Overlaps:
        """Run the kernels on a list of region sets; the raw pairs before output ordering."""
        rsets = [as_regions(s) for s in sets]
        return self._overlaps(rsets, n_threads, details=True)

    def _prepare(self, rs: RegionSet, with_perm: bool = False) -> tuple:
        """``(codes, starts, ends, order, perm)`` of one set (:meth:`_query_order`): the per-set
        work before the kernels. Thread-safe: the pipeline runs it in its parse workers, beside
        other sets. ``with_perm``: keep the permutation of a sorted set (query indices need it)."""
        return self._query_order(rs, with_perm)

    def _overlaps(self, rsets: list[RegionSet], n_threads: int | None,
                  details: bool = False, dtype=np.int64, prepared=None) -> _Overlaps:
        """The kernels over ``rsets``; ``prepared``: their :meth:`_prepare` results, if known."""
        u = self.universe
        sizes = np.fromiter((len(r) for r in rsets), dtype=np.int64, count=len(rsets))
        set_offsets = np.zeros(len(rsets) + 1, dtype=np.int64)
        np.cumsum(sizes, out=set_offsets[1:])
        with _config.threads(self.n_threads if n_threads is None else n_threads):
            if prepared is None:
                prepared = [self._prepare(r, details) for r in rsets]
            elif details:  # a sorted set prepared without its permutation: sort it again
                prepared = [self._prepare(r, True) if p[4] is not None and p[4].size != len(r)
                            else p for r, p in zip(rsets, prepared)]
            if len(rsets) == 1:
                (codes, starts, ends, order, perm), = prepared
            else:
                def cat(parts, dt):
                    return np.concatenate(parts) if parts else np.zeros(0, dt)

                def index(k):  # order or perm as global indices (None: the identity)
                    if all(p[k] is None for p in prepared):
                        return None
                    return cat([(np.arange(len(r)) if p[k] is None else p[k]) + base
                                for r, p, base in zip(rsets, prepared, set_offsets[:-1])],
                               np.int64)

                codes = cat([p[0] for p in prepared], np.int32)
                starts = cat([p[1] for p in prepared], np.int64)
                ends = cat([p[2] for p in prepared], np.int64)
                order, perm = index(3), (index(4) if details else None)
            s = self.settings
            ailist = (self.tokenizer_type == "ailist" and s.overlap == "all"
                      and s.order in ("gtars", "input"))
            ids_dtype = np.int64 if np.dtype(dtype) == np.int64 else np.uint32
            ids, qidx, bp, out_offsets = self._kernel(
                codes, starts, ends, set_offsets, order, UNKNOWN_POLICIES[s.unknown],
                details or ailist, ids_dtype)
            if ailist and ids.size > 1:
                ids, qidx, bp = self._ailist_order(ids, qidx, bp)
                if not details:
                    qidx = bp = None
            if s.order in ("genomic", "unique"):
                ids, out_offsets = _kernels.sort_within_sets(
                    ids, out_offsets, u.sweep.rank, s.order == "unique")
                qidx = bp = None
        if qidx is not None:
            if perm is not None:  # sorted rows -> the sets' own query indices
                qidx = np.where(qidx >= 0, perm[np.maximum(qidx, 0)], -1)
            # global query index -> index within its set
            set_of = np.searchsorted(set_offsets, qidx, side="right") - 1
            qidx = np.where(qidx >= 0, qidx - set_offsets[np.maximum(set_of, 0)], -1)
        return _Overlaps(ids.astype(dtype, copy=False), qidx, bp, out_offsets)

    def _ailist_order(self, ids, qidx, bp):
        """Each query's hits in the order of gtars' AIList backend (its queries' hits are
        consecutive in the kernels' output: reorder within those runs)."""
        n = self.universe.n_regions
        run = np.zeros(ids.size, np.int64)
        np.cumsum(qidx[1:] != qidx[:-1], out=run[1:])
        key = np.where(ids < n, self.universe.ailist_key[np.minimum(ids, n - 1)], 0)
        perm = np.lexsort((key, run))
        return ids[perm], qidx[perm], bp[perm]

    def region_hits(self, regions, *, n_threads: int | None = None) -> Ragged:
        """For every query region (in input order), the ids it hits; no ``<unk>``, no reordering.

        Applies the overlap mode and thresholds; row ``i`` lists the hits of query ``i`` by
        ascending universe position (empty when it hits nothing). The single-cell adapter maps
        matrix variables (peaks) to tokens with this once, then gathers per cell.
        """
        rs = as_regions(regions)
        with _config.threads(self.n_threads if n_threads is None else n_threads):
            ids, qidx, _, _ = self._kernel(
                self.universe.map_codes(rs), rs.starts, rs.ends,
                np.array([0, len(rs)], dtype=np.int64), None, 0, ids_dtype=np.int64)
        offsets = np.zeros(len(rs) + 1, dtype=np.int64)
        np.cumsum(np.bincount(qidx, minlength=len(rs)), out=offsets[1:])
        return Ragged(ids, offsets)

    def encode(self, regions, *, n_threads: int | None = None) -> np.ndarray:
        """Token ids (int64) of one region set: a BED/BED.gz path, strings, tuples, arrays, a frame."""
        return self._overlaps([as_regions(regions)], n_threads).ids

    def encode_batch(self, sets, *, n_threads: int | None = None, ragged: bool = False,
                     dtype=np.int64):
        """Token ids of many region sets in one parallel call.

        Returns a list of arrays, or a :class:`~genotok.ragged.Ragged` with ``ragged=True``;
        ``dtype=np.uint32`` skips the int64 copy (what the pipeline writes to disk anyway).
        """
        res = self._overlaps([as_regions(s) for s in sets], n_threads, dtype=dtype)
        out = Ragged(res.ids, res.offsets)
        return out if ragged else list(out)

    def tokenize(self, regions) -> list[str]:
        """Token strings (``chr:start-end``, or ``<unk>``) of one region set, as gtars."""
        return self.universe.convert_ids_to_tokens(self.encode(regions))

    def __call__(self, regions, *, padding=False, truncation=False, max_length: int | None = None,
                 return_tensors: str | None = None, return_attention_mask: bool = True,
                 n_threads: int | None = None) -> dict:
        """Model inputs, as Hugging Face tokenizers return them.

        ``regions`` is one region set or a list of them. Returns a dict with ``input_ids``
        (and ``attention_mask``): lists by default, padded arrays with ``return_tensors="np"``,
        torch tensors with ``"pt"`` (torch is imported only then). ``padding=True`` or
        ``"longest"`` pads to the longest set, ``"max_length"`` to ``max_length``;
        ``truncation=True`` keeps the first ``max_length`` tokens.

        Examples
        --------
        >>> tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
        >>> out = tok([["chr1:50-150"], ["chr1:10-20"]], padding=True, return_tensors="np")
        >>> out["input_ids"].tolist(), out["attention_mask"].tolist()
        ([[0, 1], [0, 3]], [[1, 1], [1, 0]])
        """
        single = _is_single_set(regions)
        sets = [regions] if single else list(regions)
        rows = self.encode_batch(sets, n_threads=n_threads)
        return self.pad(rows, single=single, padding=padding, truncation=truncation,
                        max_length=max_length, return_tensors=return_tensors,
                        return_attention_mask=return_attention_mask)

    def pad(self, rows, *, single: bool = False, padding=False, truncation=False,
            max_length: int | None = None, return_tensors: str | None = None,
            return_attention_mask: bool = True) -> dict:
        """Pad/truncate token rows into model inputs (see :meth:`__call__`)."""
        if padding not in (False, True, "longest", "max_length", "do_not_pad"):
            raise ValueError(f"padding must be False, True, 'longest' or 'max_length', got {padding!r}")
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        if (truncation or padding == "max_length") and max_length is None:
            raise ValueError("truncation and padding='max_length' need max_length")
        if max_length is not None and max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        rows = [np.asarray(r, dtype=np.int64) for r in rows]
        if truncation:
            rows = [r[:max_length] for r in rows]
        pad_to = None
        if padding in (True, "longest"):
            pad_to = max((r.size for r in rows), default=0)
        elif padding == "max_length":
            pad_to = max(max_length, max((r.size for r in rows), default=0)) if not truncation else max_length
        if pad_to is None and return_tensors is not None and len({r.size for r in rows}) > 1:
            raise ValueError("sets have different lengths: use padding=True to return tensors")
        if pad_to is None:
            pad_to = rows[0].size if rows else 0
        if return_tensors is None and not padding:
            out = {"input_ids": [r.tolist() for r in rows]}
            if return_attention_mask:
                out["attention_mask"] = [[1] * r.size for r in rows]
        else:
            ids = np.full((len(rows), pad_to), self.universe.pad_token_id, dtype=np.int64)
            mask = np.zeros((len(rows), pad_to), dtype=np.int64)
            for i, r in enumerate(rows):
                ids[i, :r.size] = r
                mask[i, :r.size] = 1
            out = {"input_ids": ids}
            if return_attention_mask:
                out["attention_mask"] = mask
            if return_tensors is None:
                out = {k: v.tolist() for k, v in out.items()}
            elif return_tensors == "pt":
                from ._optional import require

                torch = require("torch", "return_tensors='pt'")

                out = {k: torch.from_numpy(v) for k, v in out.items()}
        if single:
            out = {k: v[0] for k, v in out.items()}
        return out

    # ------------------------------------------------------------------ display
    def _repr_html_(self) -> str:
        from ._html import card

        u = self.universe
        fields = {"regions": f"{u.n_regions:,}", "vocab_size": f"{self.vocab_size:,}",
                  "universe": u.source or "in memory", "fingerprint": self.fingerprint[:16] + "…"}
        fields.update(self.settings.as_dict())
        return card("genotok.Tokenizer", fields)

    def __repr__(self) -> str:
        s = self.settings
        return (f"Tokenizer({self.universe.n_regions:,} regions, vocab_size={self.vocab_size:,}, "
                f"overlap={s.overlap!r}, unknown={s.unknown!r}, order={s.order!r}, "
                f"fingerprint={self.fingerprint[:12]})")


# help(Tokenizer) and IDEs show the real parameters (``__init__`` takes *args for subclassing)
Tokenizer.__init__.__signature__ = inspect.signature(Tokenizer._setup)
Tokenizer.__new__.__signature__ = inspect.signature(Tokenizer._setup)
