"""Deprecation plumbing: old spellings of the public API kept one release, with a warning.

Helpers for the ways a public name changes (``docs/api/names.md`` lists every
rename, the release it came in and the release it goes):

- :func:`renamed_kwargs` -- a keyword argument renamed (``quiet=`` -> ``progress=``), optionally
  with a conversion of its value (``quiet=True`` means ``progress=False``);
- :func:`reordered_args` -- two positional arguments swapped (``write_gtok(path, ids)`` ->
  ``write_gtok(ids, out)``), the old order recognised by the arguments' types, and only where
  the types tell the two orders apart;
- :func:`renamed_function` -- a function renamed: the old name stays, as an alias that warns;
- :func:`renamed_property` -- the same for a property;
- :func:`deprecated_value` -- a value of an option retired (``output="list"``), its job moved.

Every warning is a :class:`DeprecationWarning` raised at the caller's line, naming the old
spelling, the new one and the release that removes the old one. Passing an old and a new
spelling of the same argument is a :class:`TypeError`, never a silent choice.

No domain logic here; any room may import this module.
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: the release that introduced the new spellings, and the one that removes the old ones
SINCE = "0.2"
REMOVED_IN = "0.3"


def _where(func: Callable) -> str:
    return f"{func.__qualname__}()"


def warn_deprecated(message: str, *, stacklevel: int = 3) -> None:
    """Emit a :class:`DeprecationWarning` ``message`` at the caller's caller (the user's line).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_deprecated("old is deprecated", stacklevel=1)
    >>> w[0].category.__name__
    'DeprecationWarning'
    """
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def renamed_kwargs(*, since: str = SINCE, removed_in: str = REMOVED_IN,
                   **renames: str | tuple[str, Callable[[Any], Any]]) -> Callable[[F], F]:
    """Decorator: keyword arguments renamed, the old keywords still accepted for one release.

    ``renames`` maps each old keyword to its new name, or to ``(new name, convert)`` when the
    value changes meaning too (``convert(old_value)`` is passed as the new keyword). An old
    keyword warns :class:`DeprecationWarning` naming the new one and the release it goes in;
    passing both the old and the new keyword raises :class:`TypeError`. The decorated
    function's signature (``inspect.signature``, ``help``) shows only the new names.

    Parameters
    ----------
    since, removed_in
        Releases named in the warning.
    **renames
        ``old="new"`` or ``old=("new", convert)``.

    Examples
    --------
    >>> import warnings
    >>> @renamed_kwargs(quiet=("progress", lambda quiet: not quiet), max_tokens="max_length")
    ... def run(x, *, progress=True, max_length=None):
    ...     return x, progress, max_length
    >>> run(1, progress=False, max_length=5)
    (1, False, 5)
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     run(1, quiet=True, max_tokens=5)
    (1, False, 5)
    >>> print(w[0].message)
    run(): quiet= is deprecated since genotok 0.2 and will be removed in 0.3; use progress= (quiet=True is progress=False)
    """
    table: dict[str, tuple[str, Callable[[Any], Any] | None]] = {}
    for old, spec in renames.items():
        new, convert = (spec, None) if isinstance(spec, str) else spec
        if old == new:
            raise ValueError(f"renamed_kwargs: {old!r} renamed to itself")
        table[old] = (new, convert)

    def decorate(func: F) -> F:
        params = inspect.signature(func).parameters
        for old, (new, _) in table.items():
            if old in params:
                raise ValueError(f"renamed_kwargs: {_where(func)} still has a parameter {old!r}")
            if new not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                raise ValueError(f"renamed_kwargs: {_where(func)} has no parameter {new!r}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old in [k for k in kwargs if k in table]:
                new, convert = table[old]
                if new in kwargs:
                    raise TypeError(f"{_where(func)} got both {old}= (deprecated) and {new}=; "
                                    f"pass only {new}=")
                value = kwargs.pop(old)
                converted = value if convert is None else convert(value)
                note = "" if convert is None else f" ({old}={value!r} is {new}={converted!r})"
                warn_deprecated(f"{_where(func)}: {old}= is deprecated since genotok {since} and "
                                f"will be removed in {removed_in}; use {new}={note}")
                kwargs[new] = converted
            return func(*args, **kwargs)

        wrapper.__deprecated_kwargs__ = {o: n for o, (n, _) in table.items()}  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def is_path(obj: Any) -> bool:
    """True for what names a file: a ``str``, ``bytes`` or ``os.PathLike``.

    Examples
    --------
    >>> from pathlib import Path
    >>> is_path("a.gtok"), is_path(Path("a")), is_path([1, 2])
    (True, True, False)
    """
    return isinstance(obj, (str, bytes, os.PathLike))


def reordered_args(old_order: tuple[str, str], *,
                   is_old: Callable[[Any, Any], bool] | None = None,
                   since: str = SINCE, removed_in: str = REMOVED_IN) -> Callable[[F], F]:
    """Decorator: the first two positional arguments swapped; the old order kept one release.

    The decorated function has the new order. A call whose first two positional arguments are
    in ``old_order`` -- recognised by ``is_old(first, second)``, which must answer True only
    when the types leave no doubt -- warns :class:`DeprecationWarning` and is swapped. When the
    types cannot tell (both arguments path-like, say), the call is read in the new order.

    Parameters
    ----------
    old_order
        The two parameter names in their old order, e.g. ``("path", "ids")``: for the message.
    is_old
        ``is_old(first, second)``; default: the first names a file and the second does not
        (see :func:`is_path`) -- right for ``write_x(obj, out)`` whose ``obj`` is never a path.

    Examples
    --------
    >>> import warnings
    >>> @reordered_args(("path", "ids"))
    ... def write(ids, out):
    ...     return list(ids), out
    >>> write([1, 2], "a.gtok")
    ([1, 2], 'a.gtok')
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     write("a.gtok", [1, 2])
    ([1, 2], 'a.gtok')
    >>> print(w[0].message)
    write(path, ids) is deprecated since genotok 0.2 and will be removed in 0.3; use write(ids, out)
    """
    if is_old is None:
        def is_old(first, second):
            return is_path(first) and not is_path(second)

    def decorate(func: F) -> F:
        names = [p.name for p in inspect.signature(func).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(names) < 2:
            raise ValueError(f"reordered_args: {_where(func)} takes fewer than two positional "
                             f"arguments")
        offset = 1 if names[0] in ("self", "cls") else 0
        new_order = names[offset:offset + 2]
        name = func.__qualname__

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if len(args) >= offset + 2 and is_old(args[offset], args[offset + 1]):
                warn_deprecated(f"{name}({', '.join(old_order)}) is deprecated since genotok "
                                f"{since} and will be removed in {removed_in}; use "
                                f"{name}({', '.join(new_order)})")
                args = (*args[:offset], args[offset + 1], args[offset], *args[offset + 2:])
            return func(*args, **kwargs)

        wrapper.__deprecated_order__ = tuple(old_order)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_function(func: F, old_name: str, *, since: str = SINCE,
                     removed_in: str = REMOVED_IN) -> F:
    """The old name of a renamed function: an alias of ``func`` that warns when called.

    Assign it where the old name lived (and keep it in that module's ``__all__``). The alias
    carries ``__deprecated__`` (the message, as PEP 702's ``warnings.deprecated`` does) and
    ``__wrapped__`` (the new function), so tools and the API table can tell it apart.

    Parameters
    ----------
    func
        The function under its new name.
    old_name
        The old name (shown in the warning and as the alias' ``__name__``).

    Examples
    --------
    >>> import warnings
    >>> def write_universe(regions, out):
    ...     return out
    >>> save_universe = renamed_function(write_universe, "save_universe")
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     save_universe([], "u.bed")
    'u.bed'
    >>> print(w[0].message)
    save_universe() is deprecated since genotok 0.2 and will be removed in 0.3; use write_universe()
    """
    message = (f"{old_name}() is deprecated since genotok {since} and will be removed in "
               f"{removed_in}; use {func.__name__}()")

    @functools.wraps(func)
    def alias(*args, **kwargs):
        warn_deprecated(message)
        return func(*args, **kwargs)

    alias.__name__ = old_name
    owner, dot, _ = func.__qualname__.rpartition(".")
    alias.__qualname__ = f"{owner}{dot}{old_name}"
    alias.__doc__ = (f"Deprecated alias of :func:`{func.__name__}` (since {since}, removed in "
                     f"{removed_in}).\n\n" + (inspect.getdoc(func) or ""))
    alias.__deprecated__ = message  # type: ignore[attr-defined]
    return alias  # type: ignore[return-value]


def renamed_property(new: str, old: str, *, since: str = SINCE,
                     removed_in: str = REMOVED_IN) -> property:
    """The old name of a renamed property: reads the new one, and warns.

    Examples
    --------
    >>> import warnings
    >>> class Corpus:
    ...     special_token_ids = property(lambda self: {"unk": 4})
    ...     special_tokens = renamed_property("special_token_ids", "special_tokens")
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     Corpus().special_tokens
    {'unk': 4}
    >>> print(w[0].message)
    special_tokens is deprecated since genotok 0.2 and will be removed in 0.3; use special_token_ids
    """
    message = (f"{old} is deprecated since genotok {since} and will be removed in {removed_in}; "
               f"use {new}")

    def fget(self):
        warn_deprecated(message)
        return getattr(self, new)

    fget.__name__ = old
    fget.__deprecated__ = message  # type: ignore[attr-defined]
    return property(fget, doc=f"Deprecated alias of ``{new}`` (since {since}, removed in "
                              f"{removed_in}).")


def deprecated_value(func_name: str, param: str, old: Any, instead: str, *,
                     since: str = SINCE, removed_in: str = REMOVED_IN,
                     stacklevel: int = 3) -> None:
    """Warn that a *value* of a parameter is deprecated (``output="list"``), saying what to use.

    For options whose values go away while the parameter stays, or whose job moved to another
    function or method. Call it from the public function, before doing the old thing.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     deprecated_value("tokenize_anndata", "output", "list", "tokenize_anndata(...).to_list()",
    ...                      stacklevel=1)
    >>> print(w[0].message)
    tokenize_anndata(output='list') is deprecated since genotok 0.2 and will be removed in 0.3; use tokenize_anndata(...).to_list()
    """
    warn_deprecated(f"{func_name}({param}={old!r}) is deprecated since genotok {since} and will "
                    f"be removed in {removed_in}; use {instead}", stacklevel=stacklevel)


__all__ = ["REMOVED_IN", "SINCE", "deprecated_value", "is_path", "renamed_function",
           "renamed_kwargs", "renamed_property", "reordered_args", "warn_deprecated"]
