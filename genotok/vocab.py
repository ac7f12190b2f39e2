"""The vocabulary side of the :class:`~genotok.tokenizer.Tokenizer`, named as in gtars and
Hugging Face tokenizers (``vocab_size``, ``unk_token_id``, ``decode``, ``get_vocab``,
``get_special_tokens_mask`` ...): all read the tokenizer's universe, none tokenizes. The
Tokenizer inherits them from :class:`_Vocabulary`, so its own module holds the tokenization.
"""

from __future__ import annotations

import weakref

import numpy as np

from .errors import UniverseMismatchError
from .universe import SPECIAL_NAMES


def _delegate(name: str) -> property:
    return property(lambda self: getattr(self.universe, name),
                    doc=f"Same as ``universe.{name}`` (gtars names).")


#: the universe fingerprint of each open corpus shard's mapping (``np.memmap._mmap``), by weak
#: reference (the corpus reader fills it): how a record's ids say where they came from
RECORD_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_fingerprint(ids) -> str | None:
    """The universe fingerprint of the corpus ``ids`` were read from (a record, or a slice of
    one: a view of a shard's mapping), ``None`` for any other array.

    Examples
    --------
    >>> import numpy as np
    >>> record_fingerprint(np.arange(3)) is None
    True
    """
    m = getattr(ids, "_mmap", None)
    return RECORD_FINGERPRINTS.get(m) if m is not None else None

class _Vocabulary:
    """The vocabulary methods of :class:`~genotok.tokenizer.Tokenizer` (``self.universe``
    is its :class:`~genotok.universe.Universe`)."""

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
        theirs = record_fingerprint(ids)
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
