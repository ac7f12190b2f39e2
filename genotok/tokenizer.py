"""Tokenizer: region sets in, token ids out (gtars-compatible by default).

The Tokenizer validates and shapes; the overlap work is done by the numba kernels in
:mod:`genotok.kernels.overlap` over the universe's sorted :class:`~genotok.universe._SweepIndex`.
Its :class:`TokenizerSettings` (how queries become tokens, stored with every corpus) and its
vocabulary methods (gtars' and Hugging Face's names, read from the universe) live here too.

:mod:`genotok.pretrained` finds and reads what a tokenizer is built from (files, configurations,
model directories, Hub repos) and hands back the saved settings as read; the tokenizer validates
them against :class:`TokenizerSettings` (naming the file) and saves itself through it. The
imports go one way: this module uses :mod:`genotok.pretrained`, never the reverse.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

import numpy as np

from . import _config
from ._usage import unknown_keyword
from ._small import encode_small
from . import pretrained as _pretrained
from .errors import UniverseError, UniverseMismatchError
from .kernels import overlap as _kernels
from .kernels.modes import Backend, FractionOf, HitOrder, Overlap, Unknown, parse
from .kernels.sort import runs_order, sort_regions, sorted_runs
from .params import (ID_DTYPE, N_THREADS, Flag, InstanceOf, Integral, Interval, Options,
                     ParameterError, Real, Unchecked, check, validate, validate_fields, validated)
from . import batching as _batching
from .ragged import Ragged
from .regions import RegionSet, as_regions, _check_batch
from .universe import SPECIAL_NAMES, Universe, _record_fingerprint


# ------------------------------------------------------------------ settings
@dataclass(frozen=True)
class TokenizerSettings:
    """How queries become tokens. Stored with every corpus so a dataset can be reproduced.

    ``Tokenizer(universe, settings=TokenizerSettings(overlap="best"))``; the ``from_*``
    constructors take the same fields as keywords (``Tokenizer.from_bed(path,
    overlap="best")``).

    Parameters
    ----------
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
    tokenizer_type : str, default "bits"
        gtars' overlap backend, ``"bits"`` (default) or ``"ailist"``; any other value is
        refused. The hits are the same; the order of one query's several hits follows the
        backend (``"bits"``: ascending position; ``"ailist"``: as gtars' AIList reports them,
        see :attr:`Universe.ailist_key`) with the ``"gtars"`` and ``"input"`` orders.

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

    #: what each field accepts (:mod:`genotok.params`; the modes' names are those of
    #: :mod:`genotok.kernels.modes`)
    CONSTRAINTS: ClassVar[dict] = {"overlap": [Options.of(Overlap)],
                   "min_overlap": [Interval(Integral, 0, None)],
                   "min_fraction": [Interval(Real, 0, 1)],
                   "fraction_of": [Options.of(FractionOf)],
                   "unknown": [Options.of(Unknown)],
                   "order": [Options.of(HitOrder)],
                   "tokenizer_type": [Options.of(Backend)]}

    def __post_init__(self):
        validate_fields(self)
        # validated, then converted: the kernels take an int64 and a float
        object.__setattr__(self, "min_overlap", int(self.min_overlap))
        object.__setattr__(self, "min_fraction", float(self.min_fraction))

    @classmethod
    def saved(cls, saved: Mapping, where: str | None, **overrides) -> "TokenizerSettings":
        """The settings a configuration saved (``saved``, as read from the file ``where``:
        refused with a :class:`~genotok.errors.UniverseError` naming it), with ``overrides``.

        Examples
        --------
        >>> TokenizerSettings.saved({"overlap": "best"}, "t.toml", unknown="drop").unknown
        'drop'
        >>> TokenizerSettings.saved({"overlap": "most"}, "t.toml")
        Traceback (most recent call last):
        ...
        genotok.errors.UniverseError: t.toml [genotok]: overlap must be one of 'all', 'best', got 'most'
        """
        if where is not None:
            unknown = sorted(set(saved) - set(cls.CONSTRAINTS))
            if unknown:
                raise UniverseError(f"{where}: unknown setting(s) {unknown} in [genotok]; the "
                                    f"settings are {list(cls.CONSTRAINTS)}")
            validate(saved, cls.CONSTRAINTS, f"{where} [genotok]", error=UniverseError)
        return cls(**{**saved, **overrides})

    def kernel_args(self) -> tuple[int, float, float, int]:
        """``(min_overlap, frac_q, frac_r, overlap mode)`` as the overlap kernels take them.

        >>> TokenizerSettings(min_fraction=0.5, fraction_of="region", overlap="best").kernel_args()
        (0, 0.0, 0.5, 1)
        """
        query = parse(FractionOf, self.fraction_of) == FractionOf.QUERY
        return (self.min_overlap, self.min_fraction if query else 0.0,
                0.0 if query else self.min_fraction, int(parse(Overlap, self.overlap)))

    def as_dict(self) -> dict:
        """The settings as plain values (``tokenizer_type`` only when not the default, so
        records made before it existed still match)."""
        out = {"overlap": self.overlap, "min_overlap": int(self.min_overlap),
               "min_fraction": float(self.min_fraction), "fraction_of": self.fraction_of,
               "unknown": self.unknown, "order": self.order}
        if self.tokenizer_type != "bits":
            out["tokenizer_type"] = self.tokenizer_type
        return out


def _delegate(name: str) -> property:
    return property(lambda self: getattr(self.universe, name),
                    doc=f"Same as ``universe.{name}`` (gtars names).")


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


class PreparedSet(NamedTuple):
    """One region set ready for the kernels (:meth:`Tokenizer.prepare`).

    A set whose queries must be sorted for the gtars order comes back sorted (``starts``,
    ``ends`` and ``codes`` in that order, ``perm`` mapping its rows to the set's own); any other
    set keeps its arrays (``starts``/``ends`` ``None``) with an ``order`` to emit them in, or
    none when they are emitted as they are.

    Examples
    --------
    >>> PreparedSet._fields
    ('codes', 'order', 'starts', 'ends', 'perm', 'sweep')
    """

    codes: np.ndarray  #: int32 (n,): chromosome codes in the universe's code space, -1 unknown
    order: np.ndarray | None = None   #: int64 (n,): emission order of the rows; None: as they are
    starts: np.ndarray | None = None  #: int64 (n,): the sorted starts; None: the set's own
    ends: np.ndarray | None = None    #: int64 (n,): the sorted ends; None: the set's own
    #: int64 (n,): the set's query index of each sorted row (empty: not kept); None: not sorted
    perm: np.ndarray | None = None
    sweep: bool = False  #: True: the order visits each chromosome by start (unchecked: speed only)


def _check_ids_out(ragged, dtype, where: str) -> None:
    """``ragged`` a flag and ``dtype`` a token id dtype (:data:`~genotok.params.ID_DTYPE`:
    a narrower one would wrap ids silently); the usual values pass without a call's cost."""
    if ragged is not False and ragged is not True:
        check("ragged", ragged, [Flag()], where)
    if dtype is not np.int64 and dtype is not np.uint32:
        check("dtype", dtype, ID_DTYPE, where)


def _index_array(a, n_rows: int, lo: int, hi: int, what: str, k: int, *,
                 allow_empty: bool = False) -> np.ndarray:
    """Set ``k``'s ``what``: an integer array of ``n_rows`` items in ``[lo, hi)`` (it indexes
    the kernels' memory: numba checks nothing); not scanned when its dtype holds nothing else."""
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu" or not (a.size == n_rows or
                                                      (allow_empty and a.size == 0)):
        raise ParameterError(f"prepared[{k}].{what} must be a 1-D integer array of {n_rows} "
                             f"items (one per region of the set), got {a.dtype} {a.shape}")
    info = np.iinfo(a.dtype)
    scan = a.size and (info.min < lo or info.max >= hi)  # the dtype may hold a value outside
    if scan and (int(a.min()) < lo or int(a.max()) >= hi):
        bad = a[(a < lo) | (a >= hi)][0]
        raise ParameterError(f"prepared[{k}].{what}: {int(bad)} is outside [{lo}, {hi})")
    return a


def _check_prepared(p: PreparedSet, n_rows: int, n_codes: int, k: int) -> None:
    """A caller's :class:`PreparedSet` for a set of ``n_rows`` regions, checked before a kernel
    indexes with it: codes in ``[-1, n_codes)``, ``order`` and ``perm`` permutations of the
    rows, ``starts``/``ends`` one per row."""
    _index_array(p.codes, n_rows, -1, n_codes, "codes", k)
    for what in ("order", "perm"):
        a = getattr(p, what)
        if a is not None:
            a = _index_array(a, n_rows, 0, max(n_rows, 1), what, k, allow_empty=what == "perm")
            if a.size and np.bincount(a, minlength=n_rows).max() > 1:
                raise ParameterError(f"prepared[{k}].{what} must be a permutation of the set's "
                                     f"rows (each once), got {int(np.bincount(a).argmax())} twice")
    for what in ("starts", "ends"):
        a = getattr(p, what)
        if a is not None:
            _index_array(a, n_rows, -2**63, 2**63, what, k)  # any int64 (no scan for one)


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


#: the settings' field names (keywords of the ``from_*`` constructors)
_SETTING_NAMES = frozenset(f.name for f in dataclasses.fields(TokenizerSettings))


class BuiltInNew:
    """gtars' way of subclassing its ``Tokenizer``, on an explicit path.

    gtars builds its tokenizer in ``__new__``; its users subclass it with a
    ``__new__(cls, *args, **kwargs)`` returning ``super().__new__(cls, *args, **kwargs)`` and an
    ``__init__`` that calls ``super().__init__()`` without arguments (or not at all). A class
    that defines ``__new__`` below :class:`Tokenizer` says it follows that pattern, and it is
    built here, in ``__new__``, from the arguments of the call; any other class is built by
    ``Tokenizer.__init__`` in the usual way (this base class keeps ``__new__`` off
    ``Tokenizer`` itself, so its signature is ``__init__``'s, unpatched). Pickle calls
    ``__new__`` without arguments: nothing is built then, the state is restored.

    Examples
    --------
    >>> class Gtarsy(Tokenizer):
    ...     def __new__(cls, *args, **kwargs):
    ...         return super().__new__(cls, *args, **kwargs)
    ...     def __init__(self, *args, **kwargs):
    ...         super().__init__()
    >>> Gtarsy(["chr1:0-100"]).vocab_size
    8
    """

    #: built in ``__new__`` (a class defining ``__new__`` below :class:`Tokenizer`)
    _built_in_new: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._built_in_new = cls._built_in_new or "__new__" in cls.__dict__

    def __new__(cls, *args, **kwargs):
        _check_keywords(kwargs)
        self = super().__new__(cls)
        if cls._built_in_new and (args or kwargs):
            Tokenizer.__init__(self, *args, **kwargs)
        return self


def _check_keywords(kwargs: Mapping) -> None:
    """A settings field or a misspelt option given to the constructor: say what to write."""
    loose = sorted(k for k in kwargs if k in _SETTING_NAMES)
    if loose:
        raise TypeError(f"Tokenizer: {', '.join(loose)} are TokenizerSettings fields: pass "
                        f"settings=TokenizerSettings({loose[0]}=...), or use "
                        f"Tokenizer.from_bed(path, {loose[0]}=...) / from_config / "
                        "from_pretrained, which take them as keywords")
    unknown = sorted(set(kwargs) - set(Tokenizer.CONSTRAINTS))
    if unknown:
        raise unknown_keyword("Tokenizer()", unknown[0], [*Tokenizer.CONSTRAINTS, *_SETTING_NAMES])


class Tokenizer(BuiltInNew):
    """Turn genomic regions into universe token ids.

    ``Tokenizer`` can be subclassed in the usual Python way, or as gtars' is: a subclass that
    defines ``__new__(cls, *args, **kwargs)`` (gtars' pattern) is built in ``__new__``, as
    gtars builds, and its ``__init__`` may call ``super().__init__()`` bare or not at all
    (see :class:`BuiltInNew`).

    Parameters
    ----------
    source : str, PathLike, Universe or regions
        What the vocabulary comes from, recognised by itself (as gtars' ``Tokenizer(path)``):
        a BED / BED.gz file (token id = line position); a ``.toml`` configuration (gtars' or
        genotok's, see :meth:`from_config`); a model directory or a Hugging Face Hub id
        ``org/name`` (see :meth:`from_pretrained`); a :class:`Universe`; or regions in memory
        (strings ``chr:start-end``, tuples, arrays, a data frame, gtars ``Region`` objects).
        A string that could be read two ways is refused with the explicit call to use.
    settings : TokenizerSettings or None, default None
        How queries become tokens (overlap mode, filters, ``<unk>`` policy, hit order, gtars
        backend): a :class:`TokenizerSettings`. ``None``: those saved in a configuration or
        model directory, else the defaults. The ``from_*`` constructors take its fields as
        keywords, over the saved ones (``Tokenizer.from_bed(path, overlap="best")``).
    n_threads : int or None, default None
        Default numba thread count for this tokenizer's calls (``None``: numba's setting).
    special_tokens : dict or None, default None
        ``{"unk": "<UNKNOWN>", ...}``: rename special tokens (partial overrides allowed).
    strict : bool, default False
        Refuse lines with end before start in the universe and in query files (by default, as
        in gtars, such a line hits nothing: an inert token, see :class:`Universe`, or a warning).
    extra_tokens : sequence of str or None, default None
        Strings appended to the vocabulary after the seven special tokens (condition tokens
        such as ``"<batch=donor1>"``, see :mod:`genotok.singlecell.conditions`): ids ``n_regions + 7``
        on, saved with the configuration, covered by the fingerprint, decoded by ``decode``.

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

    def __init__(self, source=None, settings: TokenizerSettings | None = None, *,
                 n_threads: int | None = None, special_tokens: dict | None = None,
                 strict: bool = False, extra_tokens: Sequence[str] | None = None):
        if source is None:
            if "universe" in self.__dict__:
                return  # built in __new__ (a gtars-style subclass: see BuiltInNew)
            raise ParameterError("Tokenizer() needs a source: a BED/BED.gz path, a TOML "
                            "configuration, a model directory or Hub id, or regions")
        validate({"source": source, "settings": settings, "n_threads": n_threads,
                  "special_tokens": special_tokens, "strict": strict,
                  "extra_tokens": extra_tokens}, self.CONSTRAINTS, "Tokenizer")
        loaded = _pretrained._load(source, special_tokens, strict)
        universe = loaded.universe
        if extra_tokens is not None:  # condition tokens after the specials (genotok.singlecell.conditions)
            universe = universe.with_extra_tokens(extra_tokens)
        if settings is None:
            settings = TokenizerSettings.saved(loaded.settings, loaded.config)
        self.universe, self.strict = universe, bool(strict)
        self.settings, self.n_threads = settings, n_threads
        if loaded.check is not None:
            _pretrained._check_vocab_size(self.vocab_size, *loaded.check,
                                         len(universe.extra_tokens))

    #: what the constructor's options accept (``source``, ``special_tokens`` and
    #: ``extra_tokens`` are checked by what reads them: :mod:`genotok.pretrained`, Universe)
    CONSTRAINTS: ClassVar[dict] = {
        "source": [Unchecked("a path, a Universe or regions: read by the loader, which says "
                             "what it cannot read")],
        "settings": [InstanceOf(TokenizerSettings), None],
        "n_threads": [Interval(Integral, 1, None), None],
        "special_tokens": [InstanceOf(dict), None],
        "strict": [Flag()],
        "extra_tokens": [InstanceOf(Sequence), None]}

    @classmethod
    def _build(cls, loaded, overrides: dict, strict: bool,
               call: str = "Tokenizer()") -> "Tokenizer":
        """A tokenizer of ``cls`` from a :class:`~genotok.pretrained.Loaded` source, its saved
        settings under the keyword ``overrides`` of a ``from_*`` constructor."""
        options = {k: v for k, v in overrides.items() if k in ("n_threads", "extra_tokens")}
        unknown = sorted(set(overrides) - _SETTING_NAMES - set(options))
        if unknown:
            raise unknown_keyword(call, unknown[0], [*_SETTING_NAMES, *Tokenizer.CONSTRAINTS])
        settings = TokenizerSettings.saved(
            loaded.settings, loaded.config,
            **{k: v for k, v in overrides.items() if k in _SETTING_NAMES})
        return cls(loaded.universe, settings, strict=strict, **options)

    def _regions(self, obj) -> RegionSet:  # a query file's reversed lines: see ``strict``
        return as_regions(obj, reversed="error" if self.strict else "drop")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_bed(cls, path: str | os.PathLike, **kwargs) -> "Tokenizer":
        """A tokenizer over the universe in a BED/BED.gz file (ids: gtars' vocabulary).

        ``special_tokens``, ``strict``, ``duplicates`` and ``storage_options`` (for a URL:
        ``s3://``, ``gs://``, ``https://``…) go to :meth:`Universe.from_bed` (``strict`` also
        to the tokenizer); other keywords are the settings.
        """
        special, strict = kwargs.pop("special_tokens", None), kwargs.pop("strict", False)
        dups, so = kwargs.pop("duplicates", "unique"), kwargs.pop("storage_options", None)
        universe = Universe.from_bed(path, special, strict=strict, duplicates=dups,
                                     storage_options=so)
        return cls._build(_pretrained.Loaded(universe, {}), kwargs, strict, "Tokenizer.from_bed()")

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
        special, strict = overrides.pop("special_tokens", None), overrides.pop("strict", False)
        universe, saved = _pretrained._read_config(path, special, strict)
        return cls._build(_pretrained.Loaded(universe, saved, None, os.fspath(path)), overrides,
                          strict, "Tokenizer.from_config()")

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
        directory = _pretrained._snapshot(name_or_dir, revision=revision, cache_dir=cache_dir,
                                         local_files_only=local_files_only)
        special, strict = overrides.pop("special_tokens", None), overrides.pop("strict", False)
        loaded = _pretrained._load_directory(directory, os.fspath(name_or_dir), special, strict)
        tok = cls._build(loaded, overrides, strict, "Tokenizer.from_pretrained()")
        _pretrained._check_vocab_size(tok.vocab_size, *loaded.check, len(tok.universe.extra_tokens))
        return tok

    def save_pretrained(self, save_directory: str | os.PathLike) -> Path:
        """Write ``universe.bed.gz`` and ``tokenizer.toml`` into ``save_directory`` (created).

        gtars reads it back (``Tokenizer.from_pretrained(directory)``, ``from_config``) with
        the same ids; :meth:`from_pretrained` also restores the genotok settings. Returns the
        directory.
        """
        return _pretrained._save(self, save_directory)

    def save_config(self, out: str | os.PathLike, universe_path: str | os.PathLike | None = None) -> Path:
        """Write a TOML configuration to ``out`` that gtars can read too (genotok settings in
        ``[genotok]``).

        ``universe_path`` defaults to the file the universe was loaded from; a universe built
        in memory is written next to the configuration as ``<name>.universe.bed``.
        """
        return _pretrained._write_config(self, out, universe_path)

    @property
    def tokenizer_type(self) -> str:
        """gtars' backend name, ``"bits"`` or ``"ailist"`` (the order of a query's hits)."""
        return self.settings.tokenizer_type

    # ------------------------------------------------------------------ tokenization
    def _query_order(self, rs: RegionSet, with_perm: bool = True) -> PreparedSet:
        """One set's queries ready for the kernels, in its emission order (:class:`PreparedSet`).

        A file in the gtars order whose chromosomes are not each one sorted run is sorted here,
        by (chromosome name, start), stably, with the ends carried through the sort: the arrays
        come back sorted and ``perm[k]`` is the set's index of row ``k`` (an empty array when
        not ``with_perm``).
        """
        if parse(HitOrder, self.settings.order) == HitOrder.GTARS and rs.from_file and len(rs) > 1:
            names = rs.chrom_names
            byte_rank = np.empty(len(names), dtype=np.int64)
            byte_rank[sorted(range(len(names)), key=lambda c: names[c].encode())] = np.arange(len(names))
            runs = _chromosome_runs(rs.codes, rs.starts)
            if runs is not None:  # one sorted run per chromosome: reorder whole runs, no sort
                bounds, run_codes = runs
                pieces = np.argsort(byte_rank[run_codes], kind="stable")
                in_order = np.array_equal(pieces, np.arange(pieces.size))  # the gtars order
                order = None if in_order else runs_order(bounds, pieces)
                return PreparedSet(self.universe.map_codes(rs), order, sweep=True)
            table = self.universe._code_table(rs)
            code_of = np.empty(len(names), dtype=np.int32)
            code_of[byte_rank] = table
            # a radix sort on (rank, start) whose buckets sort in cache, ends as payload
            # (genotok.kernels.sort.sort_regions): no random gathers of the set's arrays after
            perm, codes, starts, ends = sort_regions(rs.codes, rs.starts, rs.ends, byte_rank,
                                                     code_of, perm=with_perm)
            return PreparedSet(codes, None, starts, ends,
                               perm if with_perm else np.zeros(0, np.int64), True)
        return PreparedSet(self.universe.map_codes(rs))

    def _kernel(self, codes, starts, ends, set_offsets, order, unk_mode: int, details: bool = True,
                ids_dtype=np.uint32, sweep_order: bool = False):
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
            *s.kernel_args(), unk_mode, u.unk_token_id, details, ids_dtype, sweep_order)

    def overlaps(self, sets, *, n_threads: int | None = None) -> _Overlaps:
        """Run the kernels on a list of region sets; the raw pairs before output ordering."""
        rsets = [self._regions(s) for s in sets]
        return self._overlaps(rsets, n_threads, details=True)

    def prepare(self, regions) -> PreparedSet:
        """The per-set work before the kernels: the chromosome codes in the universe's code
        space (``-1``: a chromosome the universe lacks) and the emission order of the queries
        (a file whose queries must be sorted for the gtars order comes back sorted).

        Thread-safe: the pipeline runs it in its parse workers, beside other sets, then hands
        the results to :meth:`encode_prepared`.

        Parameters
        ----------
        regions
            One region set (anything :meth:`encode` takes).

        Returns
        -------
        PreparedSet
            int32 codes, and the int64 emission order (``None``: the queries as they are).

        Examples
        --------
        >>> tok = Tokenizer(["chr1:0-100", "chr2:5-50"])
        >>> p = tok.prepare(["chr2:10-20", "chr9:0-5"])
        >>> p.codes.tolist(), p.order
        ([1, -1], None)
        """
        return self._prepare(self._regions(regions))

    def _prepare(self, rs: RegionSet, with_perm: bool = False) -> PreparedSet:
        """:meth:`_query_order`; ``with_perm``: keep the permutation of a sorted set (query
        indices need it)."""
        return self._query_order(rs, with_perm)

    def encode_prepared(self, sets, prepared=None, *, n_threads: int | None = None,
                        dtype=np.int64) -> Ragged:
        """Token ids of many region sets from their :meth:`prepare` results: the kernel step
        of :meth:`encode_batch` (the pipeline prepares in its parse workers, then calls this).

        Parameters
        ----------
        sets
            Region sets (anything :meth:`encode` takes; :class:`RegionSet` s are used as is).
        prepared
            ``prepare(set)`` of each set, in the same order, or ``None`` to prepare them here.
            A ``(codes, order)`` pair also works: codes from the caller's own name mapping
            (``-1``: unknown), and any permutation of a set's queries as the order.
        n_threads
            Threads for the kernels (default: the tokenizer's).
        dtype
            Of the ids (``np.uint32`` halves the memory of large batches).

        Returns
        -------
        Ragged
            Row ``i``: the token ids of set ``i``.

        Examples
        --------
        >>> tok = Tokenizer(["chr1:0-100", "chr2:5-50"])
        >>> sets = [["chr2:10-20"], ["chr1:50-60", "chr9:0-5"]]
        >>> tok.encode_prepared(sets, [tok.prepare(s) for s in sets]).to_list()
        [[1], [0]]
        """
        _check_ids_out(False, dtype, "Tokenizer.encode_prepared")
        rsets = [self._regions(s) for s in sets]
        if prepared is not None:
            prepared = [PreparedSet(*p) for p in prepared]
            if len(prepared) != len(rsets):
                raise ValueError(f"prepared has {len(prepared)} entries for {len(rsets)} sets: "
                                 "give one prepare() result per set, in order")
            n_codes = self.universe.sweep.chrom_ptr.size - 1
            for k, (r, p) in enumerate(zip(rsets, prepared)):
                _check_prepared(p, len(r), n_codes, k)
        res = self._overlaps(rsets, n_threads, dtype=dtype, prepared=prepared)
        return Ragged(res.ids, res.offsets)

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
                prepared = [self._prepare(r, True) if p.perm is not None and p.perm.size != len(r)
                            else p for r, p in zip(rsets, prepared)]
            starts = [r.starts if p.starts is None else p.starts for r, p in zip(rsets, prepared)]
            ends = [r.ends if p.ends is None else p.ends for r, p in zip(rsets, prepared)]
            sweep = all(p.sweep for p in prepared)
            if len(rsets) == 1:
                (codes, order, _, _, perm, _), = prepared
                (starts,), (ends,) = starts, ends
            else:
                def cat(parts, dt):
                    return np.concatenate(parts) if parts else np.zeros(0, dt)

                def index(field):  # order or perm as global indices (None: the identity)
                    parts = [getattr(p, field) for p in prepared]
                    if all(x is None for x in parts):
                        return None
                    return cat([(np.arange(len(r)) if x is None else x) + base
                                for r, x, base in zip(rsets, parts, set_offsets[:-1])], np.int64)

                codes = cat([p.codes for p in prepared], np.int32)
                starts, ends = cat(starts, np.int64), cat(ends, np.int64)
                order, perm = index("order"), (index("perm") if details else None)
            s = self.settings
            order_mode = parse(HitOrder, s.order)
            ailist = (parse(Backend, s.tokenizer_type) == Backend.AILIST
                      and parse(Overlap, s.overlap) == Overlap.ALL
                      and order_mode in (HitOrder.GTARS, HitOrder.INPUT))
            ids_dtype = np.int64 if np.dtype(dtype) == np.int64 else np.uint32
            ids, qidx, bp, out_offsets = self._kernel(
                codes, starts, ends, set_offsets, order, int(parse(Unknown, s.unknown)),
                details or ailist, ids_dtype, sweep)
            if ailist and ids.size > 1:
                ids, qidx, bp = self._ailist_order(ids, qidx, bp)
            if not details:  # asked for by the AIList order only (a sorted set kept no perm)
                qidx = bp = None
            if order_mode in (HitOrder.GENOMIC, HitOrder.UNIQUE):
                ids, out_offsets = _kernels.sort_within_sets(
                    ids, out_offsets, u.sweep.rank, order_mode == HitOrder.UNIQUE)
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
        rs = self._regions(regions)
        with _config.threads(self.n_threads if n_threads is None else n_threads):
            ids, qidx, _, _ = self._kernel(
                self.universe.map_codes(rs), rs.starts, rs.ends,
                np.array([0, len(rs)], dtype=np.int64), None, int(Unknown.DROP),
                ids_dtype=np.int64)
        offsets = np.zeros(len(rs) + 1, dtype=np.int64)
        np.cumsum(np.bincount(qidx, minlength=len(rs)), out=offsets[1:])
        return Ragged(ids, offsets)

    def encode(self, regions, *, n_threads: int | None = None) -> np.ndarray:
        """Token ids (int64) of one region set: a BED/BED.gz path, strings, tuples, arrays, a frame."""
        # a few regions: no machinery (genotok._small); n_threads is checked by the full path
        ids = encode_small(self, regions) if _config.valid_threads(n_threads) else None
        if ids is not None:
            return ids
        return self._overlaps([self._regions(regions)], n_threads).ids

    def encode_batch(self, sets, *, n_threads: int | None = None, ragged: bool = False,
                     dtype=np.int64):
        """Token ids of many region sets in one parallel call.

        Returns a list of arrays, or a :class:`~genotok.ragged.Ragged` with ``ragged=True``;
        ``dtype=np.uint32`` skips the int64 copy (what the pipeline writes to disk anyway).
        """
        _check_ids_out(ragged, dtype, "Tokenizer.encode_batch")
        sets = list(_check_batch(sets))  # (a generator is read once)
        tiny = [encode_small(self, s) for s in sets] if len(sets) <= 16 else [None]
        if all(t is not None for t in tiny) and _config.valid_threads(n_threads):
            out = Ragged.from_list(tiny, dtype=dtype)  # genotok._small
            return out if ragged else list(out)
        res = self._overlaps([self._regions(s) for s in sets], n_threads, dtype=dtype)
        out = Ragged(res.ids, res.offsets)
        return out if ragged else list(out)

    def tokenize(self, regions) -> list[str]:
        """Token strings (``chr:start-end``, or ``<unk>``) of one region set, as gtars."""
        return self.universe.convert_ids_to_tokens(self.encode(regions))

    @validated({"regions": [Unchecked("region sets, read by as_regions")],
                "padding": [Options(*_batching.PADDINGS)], "truncation": [Flag()],
                "max_length": _batching.MAX_LENGTH, "return_tensors": _batching.TENSOR_KINDS,
                "return_attention_mask": [Flag()], "n_threads": N_THREADS},
               "Tokenizer", rules=[_batching.NEEDS_MAX_LENGTH])  # before any region is read
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
        """Pad/truncate token rows into model inputs (see :meth:`__call__` and
        :func:`genotok.batching.pad_inputs`, which this is with the tokenizer's pad id)."""
        from .batching import pad_inputs

        return pad_inputs(rows, self.universe.pad_token_id, single=single, padding=padding,
                          truncation=truncation, max_length=max_length,
                          return_tensors=return_tensors,
                          return_attention_mask=return_attention_mask)

    # ------------------------------------------------------------------ vocabulary
    # (gtars' and Hugging Face's names; all read the universe, none tokenizes)

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

    @property
    def special_token_ids(self) -> dict[str, int]:
        """``{"unk": id, "pad": id, ...}`` (what a corpus header records)."""
        return self.universe.special_token_ids

    def get_vocab(self) -> dict[str, int]:
        """``{token string: id}``."""
        return self.universe.get_vocab()

    def convert_ids_to_tokens(self, ids):
        return self.universe.convert_ids_to_tokens(ids)

    def convert_tokens_to_ids(self, tokens):
        return self.universe.convert_tokens_to_ids(tokens)

    @validated({"ids": [Unchecked("token ids, checked against the vocabulary")],
                "skip_special_tokens": [Flag()]}, "Tokenizer.decode")
    def decode(self, ids, *, skip_special_tokens: bool = False) -> list[str]:
        """Token strings of ids, always a list (gtars ``decode``; one id gives a list of one).

        Examples
        --------
        >>> from genotok import Tokenizer
        >>> tok = Tokenizer(["chr1:0-100"])
        >>> tok.decode(0), tok.decode([0, 1], skip_special_tokens=True)
        (['chr1:0-100'], ['chr1:0-100'])
        """
        self._check_record(ids)
        ids = np.atleast_1d(np.asarray(ids))
        if skip_special_tokens:
            ids = ids[np.asarray(ids) < self.universe.n_regions]
        return self.universe.convert_ids_to_tokens(ids)

    @validated({"sequences": [Unchecked("sequences of token ids, checked as decode checks them")],
                "skip_special_tokens": [Flag()]}, "Tokenizer.batch_decode")
    def batch_decode(self, sequences, *, skip_special_tokens: bool = False) -> list[list[str]]:
        """:meth:`decode` of each sequence: lists of ids, a 2-D array or tensor, a ``Ragged``.

        Examples
        --------
        >>> from genotok import Tokenizer
        >>> tok = Tokenizer(["chr1:0-100", "chr2:0-5"])
        >>> tok.batch_decode([[0, 1], [1, 3]], skip_special_tokens=True)
        [['chr1:0-100', 'chr2:0-5'], ['chr2:0-5']]
        """
        if hasattr(sequences, "detach"):  # a torch tensor
            sequences = sequences.detach().cpu().numpy()
        return [self.decode(seq, skip_special_tokens=skip_special_tokens) for seq in sequences]

    def _check_record(self, ids) -> None:
        """Refuse a corpus record (a view of a shard) tokenized with another universe: its ids
        would decode to the wrong regions, silently, when the corpus was opened without
        ``expect=``."""
        theirs = _record_fingerprint(ids)
        if theirs is not None and theirs != self.fingerprint:
            raise UniverseMismatchError(
                f"these ids are a corpus record tokenized with universe {theirs[:12]}…, but this "
                f"tokenizer's universe is {self.fingerprint[:12]}…: they would decode to the "
                "wrong regions; decode with the corpus' own tokenizer (Corpus.open(path, "
                "expect=tok) checks this when opening)")

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
        >>> from genotok import Tokenizer
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

