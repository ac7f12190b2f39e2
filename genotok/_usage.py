"""What genotok tells its caller about the call itself: an unknown keyword with the one that was
meant, and warnings that point at the caller's line rather than at genotok's own source.

:func:`keywords` wraps a public callable: a keyword it does not take is a
:class:`~genotok.errors.KeywordError` (a ``TypeError``) naming the callable as the user wrote it,
the closest keyword it takes, or where the keyword belongs (a ``CellSpec`` field given to an
entry point). :func:`check_keywords` says the same for a callable that takes ``**kwargs``.
:func:`warn` is ``warnings.warn`` with the stack level of the first frame outside genotok.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping

from .errors import KeywordError

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def did_you_mean(name, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to an unknown key ``name`` (a file's
    key, a field), or ``""``.

    >>> did_you_mean("max_lenght", ["max_length", "seed"]), did_you_mean("zzz", ["seed"])
    (" (did you mean 'max_length'?)", '')
    """
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_keyword(call: str, name: str, known: Iterable[str],
                    elsewhere: Mapping[str, str] | None = None) -> KeywordError:
    """The error for keyword ``name`` given to ``call``, which takes ``known``.

    ``elsewhere`` maps a keyword that belongs to another object to what to say instead (the
    object it belongs to and the call that takes it).

    >>> str(unknown_keyword("Tokenizer.from_bed()", "overlapp", ["overlap", "min_overlap"]))
    "Tokenizer.from_bed() got an unexpected keyword argument 'overlapp': did you mean overlap=...?"
    >>> print(unknown_keyword("tokenize_anndata()", "max_length", ["read"],
    ...                       {"max_length": "a CellSpec field: f(x, tok, CellSpec(max_length=...))"}))
    tokenize_anndata() got an unexpected keyword argument 'max_length': a CellSpec field: f(x, tok, CellSpec(max_length=...))
    """
    known = sorted(set(known))
    head = f"{call} got an unexpected keyword argument {name!r}"
    if elsewhere and name in elsewhere:
        return KeywordError(f"{head}: {elsewhere[name]}")
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return KeywordError(f"{head}: did you mean {close[0]}=...?")
    close = difflib.get_close_matches(name, list(elsewhere or ()), n=1, cutoff=0.6)
    if close:
        return KeywordError(f"{head}: did you mean {close[0]}? {elsewhere[close[0]]}")
    return KeywordError(f"{head}; it takes {', '.join(known) or 'no keywords'}")


def check_keywords(call: str, given: Iterable[str], known: Iterable[str],
                   elsewhere: Mapping[str, str] | None = None) -> None:
    """Raise :func:`unknown_keyword`'s error for the first of ``given`` not in ``known``.

    >>> check_keywords("f()", ["a"], ["a", "b"])
    >>> check_keywords("f()", ["c"], ["a", "b"])
    Traceback (most recent call last):
    ...
    genotok.errors.KeywordError: f() got an unexpected keyword argument 'c'; it takes a, b
    """
    known = set(known)
    for name in given:
        if name not in known:
            raise unknown_keyword(call, name, known, elsewhere)


def keywords(fn: Callable | None = None, *, elsewhere: Mapping[str, str] | None = None,
             call: str | None = None):
    """Decorate a public callable so that a keyword it does not take says which was meant.

    Only a ``TypeError`` raised by binding the call's own arguments is rewritten (one raised
    inside the callable is left alone); the wrapped callable keeps its signature and docs.

    >>> @keywords
    ... def scale(x, *, factor=1.0):
    ...     '''x times factor'''
    ...     return x * factor
    >>> scale(2, factor=3)
    6
    >>> scale(2, facter=3)
    Traceback (most recent call last):
    ...
    genotok.errors.KeywordError: scale() got an unexpected keyword argument 'facter': did you mean factor=...?
    """
    def wrap(f: Callable) -> Callable:
        params = inspect.signature(f).parameters
        known = [p for p, v in params.items()
                 if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)]
        name = call or f"{f.__qualname__}()"
        takes = None if any(v.kind is v.VAR_KEYWORD for v in params.values()) else set(known)

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            if takes is not None:  # checked here: an inner wrapper (validated) knows no hints
                check_keywords(name, kwargs, takes, elsewhere)
            try:
                return f(*args, **kwargs)
            except TypeError as exc:
                tb = exc.__traceback__
                m = _UNEXPECTED.search(str(exc))
                if m is None or tb is None or tb.tb_next is not None:
                    raise  # raised inside f, not by binding its arguments
                raise unknown_keyword(name, m[1], known, elsewhere) from None

        return wrapper

    return wrap if fn is None else wrap(fn)


def stack_level() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called from genotok that names the first frame
    outside the genotok package (the user's line), counted from the caller of this function."""
    frame, level = sys._getframe(1), 0
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return max(level, 1)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` pointing at the caller's own line (the first frame outside genotok).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn("careful")
    >>> seen[0].filename.startswith(_PACKAGE), str(seen[0].message)
    (False, 'careful')
    """
    warnings.warn(message, category, stacklevel=stack_level() + 1)
