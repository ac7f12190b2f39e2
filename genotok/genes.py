"""Vocabularies of named features: a tokenizer kind whose tokens are gene ids (or any strings).

Single-cell RNA foundation models (Geneformer, scGPT) tokenize **genes**: the vocabulary maps a
feature id (an Ensembl gene id, a gene symbol, any string) to the model's token id, and the
model's special tokens sit at whatever ids it chose (Geneformer V1: ``<pad>`` 0, ``<mask>`` 1;
V2 adds ``<cls>`` and ``<eos>``; scGPT: ``<pad>``, ``<cls>``, ``<eoc>`` after the genes). None
is forced: a role the vocabulary lacks has no id (``None``).

A :class:`GeneTokenizer` plugs into the cell path (:func:`~genotok.tokenize_anndata`,
:func:`~genotok.pretokenize`) at the same seam as the region :class:`~genotok.Tokenizer`: the
matrix's variables become token ids once (here by their id in a ``var`` column, there by
overlap), then the kernels gather each cell's tokens (see :mod:`genotok.singlecell.features`).

Loaded from JSON (``{"ENSG…": 2, …}``), TOML (a ``[tokens]`` table, and a ``[genotok]`` table
for the settings), or the model's own dictionary files (Geneformer's ``token_dictionary.pkl``,
a pickled dict, read by a restricted unpickler that builds only dicts, strings and numbers);
``save_pretrained`` / ``from_pretrained`` round-trip a directory (``vocab.json`` and
``tokenizer.toml``). The fingerprint (hex sha256 of the names and ids in id order and the
special roles) is written with every corpus, like a universe's.

Examples
--------
>>> tok = GeneTokenizer({"<pad>": 0, "<mask>": 1, "ENSG01": 2, "ENSG02": 3})
>>> tok.vocab_size, tok.pad_token_id, tok.cls_token_id
(4, 0, None)
>>> tok.convert_tokens_to_ids(["ENSG02", "ENSG01"]), tok.decode([3, 0])
([3, 2], ['ENSG02', '<pad>'])
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import ClassVar
from pathlib import Path

import numpy as np

from .errors import GenotokError
from .params import (N_THREADS, Flag, InstanceOf, Options, ParameterError, Unchecked, validate,
                     validate_fields, validated)

#: the special roles a vocabulary may give ids to, and the token each role is found by
ROLES = {"unk": "<unk>", "pad": "<pad>", "mask": "<mask>", "cls": "<cls>", "eos": "<eos>",
         "bos": "<bos>", "sep": "<sep>"}
#: ``var`` columns tried, in order, when no ``id_column`` is given (then ``var_names``)
ID_COLUMNS = ("ensembl_id", "gene_ids", "gene_id", "feature_id")
#: what becomes of a cell's entries whose feature is not in the vocabulary
UNKNOWN_FEATURES = ("count", "drop")


class VocabularyError(GenotokError, ValueError):
    """A vocabulary file or mapping that cannot be used (names the file).

    >>> GeneTokenizer({"A": 0, "B": 0})
    Traceback (most recent call last):
    ...
    genotok.genes.VocabularyError: vocabulary: tokens 'A' and 'B' share id 0; each token needs its own id
    """


@dataclass(frozen=True)
class GeneSettings:
    """What a :class:`GeneTokenizer` does besides its vocabulary.

    ``id_column``: the ``var`` column holding the feature ids (``None``: the first of
    :data:`ID_COLUMNS` present, else ``var_names``; ``"var_names"`` forces the index).
    ``unknown_features``: ``"count"`` — an entry of a feature outside the vocabulary gives no
    token but stays in its cell's total (Geneformer normalises by all counts); ``"drop"`` — it
    is removed before anything else (scGPT keeps the genes of its vocabulary first).
    ``unknown`` is the cell kernels' policy, always ``"drop"``: a gene vocabulary has no
    ``<unk>`` token to give.

    >>> GeneSettings("gene_ids", "drop").as_dict()
    {'id_column': 'gene_ids', 'unknown_features': 'drop', 'unknown': 'drop'}
    """

    id_column: str | None = None
    unknown_features: str = "count"
    unknown: str = "drop"

    CONSTRAINTS: ClassVar[dict] = {"id_column": [InstanceOf(str), None],
                                   "unknown_features": [Options(*UNKNOWN_FEATURES)],
                                   "unknown": [Options("drop")]}

    def __post_init__(self):
        validate_fields(self)

    def as_dict(self) -> dict:
        return asdict(self)


#: the largest dictionary file read (Geneformer's: a few MiB)
MAX_DICTIONARY_BYTES = 256 << 20


def _plain_dtype(spec, align=False, copy=False):
    """``numpy.dtype`` as a pickle of a number scalar calls it: a numeric type code only.
    Any other argument (a list of fields) is refused: numpy converts a nested field list once
    per reference, so a few hundred bytes of shared references took minutes and gigabytes."""
    if not isinstance(spec, str) or not isinstance(align, bool) or not isinstance(copy, bool):
        # (the argument's type only: the repr of a nested field list is its whole expansion)
        raise pickle.UnpicklingError(f"refused numpy.dtype of a {type(spec).__name__}: a "
                                     "dictionary file holds only names and numbers")
    dt = np.dtype(spec)
    if dt.kind not in "biuf":
        raise pickle.UnpicklingError(f"refused numpy.dtype({spec!r}): a dictionary file holds "
                                     "only names and numbers")
    return np.dtype(spec, align, copy)


class _SafeUnpickler(pickle.Unpickler):
    """Builds plain containers, strings and numbers only: a dictionary file is data, and
    pickle would otherwise run any code the file names. No callable that turns a structure
    of shared references into something as large as its expansion (``str``, ``numpy.dtype``
    of fields) is allowed: a file of a few hundred bytes would otherwise take minutes and
    gigabytes."""

    ALLOWED = {("builtins", "dict"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
               ("numpy._core.multiarray", "scalar")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused {module}.{name}: a dictionary file holds "
                                         "only names and numbers")
        if (module, name) == ("numpy", "dtype"):
            return _plain_dtype
        return super().find_class(module, name)


@validated({"path": [InstanceOf(str, os.PathLike)]})
def read_mapping(path: str | os.PathLike) -> dict:
    """A ``{name: number}`` dictionary file: JSON (an object), TOML (a ``[tokens]`` table, or
    top-level keys) or a Python pickle of a dict (Geneformer's ``.pkl``, read safely).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "v.json"
    >>> _ = p.write_text(json.dumps({"A": 0, "B": 1}))
    >>> read_mapping(p)
    {'A': 0, 'B': 1}
    """
    from ._io import read_small

    where = os.fspath(path)
    raw = read_small(path, MAX_DICTIONARY_BYTES, VocabularyError, "dictionary",
                     "dictionary of names to numbers")
    try:
        if raw[:1] == b"\x80":  # pickle protocol 2+
            try:
                d = _SafeUnpickler(io.BytesIO(raw)).load()
            except pickle.UnpicklingError:
                raise
            except Exception as exc:  # noqa: BLE001 - a malformed pickle raises what its
                # opcodes' targets raise (TypeError, AttributeError, OverflowError, a
                # MemoryError for a length past the file ...): each is this file's fault
                raise pickle.UnpicklingError(f"{type(exc).__name__}: {exc}") from None
        elif where.endswith(".toml"):
            import tomllib

            d = tomllib.loads(raw.decode("utf-8"))
            d = d.get("tokens", {k: v for k, v in d.items() if not isinstance(v, dict)})
        else:
            d = json.loads(raw.decode("utf-8"))
    except (pickle.UnpicklingError, EOFError, ValueError, UnicodeDecodeError,
            RecursionError) as exc:
        raise VocabularyError(f"{where}: not a JSON, TOML or pickled dictionary: {exc}") from None
    if not isinstance(d, dict):
        raise VocabularyError(f"{where}: holds a {type(d).__name__}, not a dictionary of "
                              "names to numbers")
    return d


class GeneTokenizer:
    """A vocabulary of named features (gene ids) → token ids, with special tokens at any ids.

    Parameters
    ----------
    vocab
        ``{feature id or special token: token id}`` (a mapping, or a dictionary file: see
        :func:`read_mapping`). Ids are distinct integers in ``0 .. 2**31 - 2``.
    special_tokens
        ``{role: token}`` for the roles of :data:`ROLES` (``"pad"``, ``"cls"``, ``"eos"`` …);
        default: each role whose usual token (``"<pad>"`` …) is in ``vocab``. A token named
        here must be in ``vocab``.
    settings
        :class:`GeneSettings`: the ``var`` id column and what unknown features do.

    Examples
    --------
    >>> tok = GeneTokenizer({"<cls>": 7, "G1": 0, "G2": 1}, settings=GeneSettings("gene_ids"))
    >>> tok.cls_token_id, tok.special_token_ids, tok.settings.id_column
    (7, {'cls': 7}, 'gene_ids')
    """

    #: what the constructor accepts (the vocabulary's content is checked as it is read)
    CONSTRAINTS: ClassVar[dict] = {"vocab": [InstanceOf(str, os.PathLike, Mapping)],
                                   "special_tokens": [InstanceOf(Mapping), None],
                                   "settings": [InstanceOf(GeneSettings), None],
                                   "n_threads": N_THREADS}

    def __init__(self, vocab, *, special_tokens: Mapping[str, str] | None = None,
                 settings: GeneSettings | None = None, n_threads: int | None = None):
        validate({"vocab": vocab, "special_tokens": special_tokens, "settings": settings,
                  "n_threads": n_threads}, self.CONSTRAINTS, "GeneTokenizer")
        where = "vocabulary"
        if isinstance(vocab, (str, os.PathLike)):
            where = os.fspath(vocab)
            vocab = read_mapping(vocab)
        if not isinstance(vocab, Mapping) or not vocab:
            raise VocabularyError(f"{where}: a vocabulary is a non-empty mapping of names to "
                                  f"token ids, got {type(vocab).__name__}")
        names = [str(k) for k in vocab]
        if len(set(names)) < len(names):  # 1 and "1" (a pickle's keys) are one name
            seen: set[str] = set()
            twice = next(n for n in names if n in seen or seen.add(n))
            raise VocabularyError(f"{where}: the token {twice!r} is listed twice (keys of "
                                  "different types with the same text); keep one")
        ids = []
        for k, v in vocab.items():
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) \
                    or not 0 <= int(v) < 2**31 - 1:
                raise VocabularyError(f"{where}: token {k!r} has id {v!r}; ids are integers in "
                                      f"0 .. {2**31 - 2}")
            ids.append(int(v))
        ids = np.asarray(ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        dup = np.flatnonzero(np.diff(ids[order]) == 0)
        if dup.size:
            a, b = order[dup[0]], order[dup[0] + 1]
            raise VocabularyError(f"{where}: tokens {names[a]!r} and {names[b]!r} share id "
                                  f"{int(ids[a])}; each token needs its own id")
        self._names = names
        self._ids = ids
        self._index = dict(zip(names, ids.tolist()))
        if special_tokens is None:
            special_tokens = {r: t for r, t in ROLES.items() if t in self._index}
        bad = [r for r in special_tokens if r not in ROLES]
        if bad:
            raise VocabularyError(f"{where}: unknown special role(s) {bad}; roles are "
                                  f"{list(ROLES)}")
        missing = [t for t in special_tokens.values() if t not in self._index]
        if missing:
            raise VocabularyError(f"{where}: special token(s) {missing} are not in the "
                                  "vocabulary; add them with their model ids")
        self.special_tokens = dict(special_tokens)
        self.settings = settings if settings is not None else GeneSettings()
        self.n_threads = n_threads
        self.source = where if where != "vocabulary" else None

    # ------------------------------------------------------------------ loading and saving
    @classmethod
    def from_file(cls, path: str | os.PathLike, **kwargs) -> GeneTokenizer:
        """A vocabulary from a JSON, TOML or pickled dictionary file (see :func:`read_mapping`)."""
        return cls(path, **kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike) -> Path:
        """Write ``vocab.json`` and ``tokenizer.toml`` (kind, special roles, settings,
        fingerprint) into ``save_directory`` (created); :meth:`from_pretrained` reads them.

        Examples
        --------
        >>> import tempfile
        >>> tok = GeneTokenizer({"<pad>": 0, "G1": 1}, settings=GeneSettings("gene_ids"))
        >>> d = tok.save_pretrained(tempfile.mkdtemp())
        >>> GeneTokenizer.from_pretrained(d).fingerprint == tok.fingerprint
        True
        """
        import tomli_w

        from ._io import atomic_write

        d = Path(save_directory)
        d.mkdir(parents=True, exist_ok=True)
        vocab = {n: int(i) for n, i in zip(self._names, self._ids.tolist())}
        with atomic_write(d / "vocab.json") as fh:
            fh.write(json.dumps(vocab, indent=0).encode())
        s = {k: v for k, v in self.settings.as_dict().items() if v is not None}
        conf = {"genotok": {"kind": "genes", "vocab": "vocab.json",
                            "special_tokens": self.special_tokens, "settings": s,
                            "fingerprint": self.fingerprint}}
        with atomic_write(d / "tokenizer.toml") as fh:
            fh.write(tomli_w.dumps(conf).encode())
        return d

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, **overrides) -> GeneTokenizer:
        """The tokenizer :meth:`save_pretrained` wrote (a vocabulary changed since is refused:
        its fingerprint no longer matches)."""
        from ._io import parse_toml, read_small

        conf_path = Path(directory) / "tokenizer.toml"
        raw = read_small(conf_path, 1 << 20, VocabularyError, "tokenizer")
        conf = parse_toml(raw, str(conf_path), VocabularyError).get("genotok", {})
        if not isinstance(conf, dict):
            raise VocabularyError(f"{conf_path}: [genotok] is a table, got {conf!r}"[:300])
        if conf.get("kind") != "genes":
            raise VocabularyError(f"{conf_path}: not a gene vocabulary (kind = "
                                  f"{conf.get('kind')!r}); use genotok.Tokenizer.from_pretrained")
        kw = {"special_tokens": conf.get("special_tokens"),
              "settings": GeneSettings(**conf.get("settings", {})), **overrides}
        tok = cls(Path(directory) / conf.get("vocab", "vocab.json"), **kw)
        want = conf.get("fingerprint")
        if want is not None and "special_tokens" not in overrides and tok.fingerprint != want:
            raise VocabularyError(f"{conf_path}: the vocabulary's fingerprint is "
                                  f"{tok.fingerprint[:12]}…, the configuration recorded "
                                  f"{want[:12]}…: vocab.json changed since it was saved")
        return tok

    # ------------------------------------------------------------------ the vocabulary
    @property
    def vocab_size(self) -> int:
        """One more than the largest id (ids need not be contiguous)."""
        return int(self._ids.max()) + 1

    def __len__(self) -> int:
        return len(self._names)

    @property
    def fingerprint(self) -> str:
        """Hex sha256 of the (name, id) pairs in id order and the special roles (kept for the
        roles it was computed with: a run asks for it a few times, ~10 ms each for 25,000
        names; the names and ids never change, the roles may)."""
        roles = json.dumps(self.special_tokens, sort_keys=True)
        known = getattr(self, "_fingerprint", None)
        if known is not None and known[0] == roles:
            return known[1]
        h = hashlib.sha256(b"genotok-genes-v1\0")
        for i in np.argsort(self._ids, kind="stable").tolist():
            h.update(f"{self._names[i]}\t{int(self._ids[i])}\n".encode("utf-8",
                                                                    "surrogatepass"))
        h.update(roles.encode())
        self._fingerprint = (roles, h.hexdigest())
        return self._fingerprint[1]

    @property
    def special_token_ids(self) -> dict[str, int]:
        """``{role: id}`` of the roles this vocabulary has."""
        return {r: self._index[t] for r, t in self.special_tokens.items()}

    def _role_id(self, role: str) -> int | None:
        t = self.special_tokens.get(role)
        return None if t is None else self._index[t]

    unk_token_id = property(lambda self: self._role_id("unk"))
    pad_token_id = property(lambda self: self._role_id("pad"))
    mask_token_id = property(lambda self: self._role_id("mask"))
    cls_token_id = property(lambda self: self._role_id("cls"))
    eos_token_id = property(lambda self: self._role_id("eos"))
    bos_token_id = property(lambda self: self._role_id("bos"))
    sep_token_id = property(lambda self: self._role_id("sep"))

    @property
    def tokenizer_type(self) -> str:
        return "genes"

    def get_vocab(self) -> dict[str, int]:
        """``{token: id}``."""
        return dict(self._index)

    def feature_ids(self, features) -> np.ndarray:
        """The token id of each feature id (``-1``: not in the vocabulary; special tokens are
        not features and give ``-1`` too).

        Examples
        --------
        >>> GeneTokenizer({"<pad>": 0, "G1": 5}).feature_ids(["G1", "G9", "<pad>"]).tolist()
        [5, -1, -1]
        """
        get = self._index.get
        ids = np.array([get(f, -1) for f in features], dtype=np.int64).reshape(-1)
        special = [self._index[t] for t in self.special_tokens.values()]
        if special:  # (ids are distinct: only a special token's name has a special's id)
            ids[np.isin(ids, special)] = -1
        return ids

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self._index[tokens]
        return [self._index[t] for t in tokens]

    def convert_ids_to_tokens(self, ids) -> list[str]:
        lookup = dict(zip(self._ids.tolist(), self._names))
        arr = np.atleast_1d(np.asarray(ids))
        if arr.size and arr.dtype.kind not in "iu":
            raise ParameterError(f"token ids must be integers, got dtype {arr.dtype}")
        out = [lookup.get(i) for i in arr.ravel().tolist()]
        if None in out:
            bad = arr.ravel()[out.index(None)]
            raise ParameterError(f"token id {int(bad)} is not in this vocabulary "
                                 f"({len(lookup)} ids)")
        return out

    @validated({"ids": [Unchecked("token ids, checked against the vocabulary")],
                "skip_special_tokens": [Flag()]}, "GeneTokenizer.decode")
    def decode(self, ids, *, skip_special_tokens: bool = False) -> list[str]:
        """Token strings of ids, always a list."""
        out = self.convert_ids_to_tokens(ids)
        if skip_special_tokens:
            special = set(self.special_tokens.values())
            out = [t for t in out if t not in special]
        return out

    def pad(self, rows, *, single: bool = False, padding=False, truncation=False,
            max_length: int | None = None, return_tensors: str | None = None,
            return_attention_mask: bool = True):
        """Pad rows of ids with ``<pad>`` (as :meth:`genotok.Tokenizer.pad`)."""
        from .batching import pad_inputs

        if self.pad_token_id is None and padding:
            raise VocabularyError("this vocabulary has no <pad> token; give special_tokens="
                                  "{'pad': ...} to pad")
        return pad_inputs(rows, self.pad_token_id if self.pad_token_id is not None else 0,
                          single=single, padding=padding, truncation=truncation,
                          max_length=max_length, return_tensors=return_tensors,
                          return_attention_mask=return_attention_mask)

    def __repr__(self) -> str:
        roles = ", ".join(f"{r}={i}" for r, i in self.special_token_ids.items())
        return (f"GeneTokenizer({len(self) - len(self.special_tokens):,} features, "
                f"vocab_size={self.vocab_size:,}, specials: {roles or 'none'})")


__all__ = ["GeneSettings", "GeneTokenizer", "ID_COLUMNS", "ROLES", "UNKNOWN_FEATURES",
           "VocabularyError", "read_mapping"]
