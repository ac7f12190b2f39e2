"""Plugins: implementations other distributions declare in their metadata (entry points).

One group per seam: ``genotok.sources``, ``genotok.stores``, ``genotok.encodings``,
``genotok.executors``. A distribution declares, in its ``pyproject.toml``::

    [project.entry-points."genotok.stores"]
    mystore = "mypackage.stores:MyStore"

and each registry calls :func:`load` before it is read, so Python and the CLI see the same
implementations. Loading is lazy (the first lookup of that registry) and once per process; a
plugin that fails to import, or that ``register`` refuses, is a :class:`~genotok.errors.PluginError`
naming the group, the entry point and its distribution (raised when that registry is consulted,
not at ``import genotok``).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from .errors import PluginError

GROUPS = ("genotok.sources", "genotok.stores", "genotok.encodings", "genotok.executors")

_loaded: set[str] = set()


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The entry points declared for ``group`` by the installed distributions (and any
    distribution on ``sys.path``), in a stable order (by name, then value).

    >>> entry_points("genotok.no-such-group")
    []
    """
    return sorted(metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def load(group: str, register: Callable[[object], object]) -> None:
    """Load every plugin of ``group`` once and hand each loaded object to ``register``.

    A later call for the same group does nothing (:func:`reset` forgets, for tests).

    >>> load("genotok.no-such-group", print)
    """
    if group in _loaded:
        return
    _loaded.add(group)
    for ep in entry_points(group):
        dist = getattr(ep.dist, "name", None) or "an unknown distribution"
        try:
            obj = ep.load()
            register(obj)
        except Exception as exc:  # a plugin's own failure: name it, keep the cause
            _loaded.discard(group)
            raise PluginError(f"plugin {ep.name!r} ({ep.value}) of group {group!r}, from "
                              f"{dist}, cannot be used: {type(exc).__name__}: {exc}") from exc


def registrable(cls, base: type, key: str, what: str) -> None:
    """Refuse to register ``cls`` unless it is a concrete subclass of ``base`` naming itself
    by ``key``: every registry's check (sources, read options, encodings, stores, executors).

    >>> registrable(dict, int, "name", "number")
    Traceback (most recent call last):
    ...
    TypeError: a number class derives from int, got <class 'dict'>
    """
    a = "an" if what[:1] in "aeiou" else "a"
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError(f"{a} {what} class derives from {base.__name__}, got {cls!r}")
    if not isinstance(getattr(cls, key, None), str) or not getattr(cls, key):
        raise TypeError(f"{cls.__name__}: {a} {what} class names its {key} ({key} = '...')")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise TypeError(f"{cls.__name__}: {a} {what} class implements {', '.join(missing)} "
                        f"(see genotok.{base.__name__})")


def same_class(a: type, b: type) -> bool:
    """Whether ``a`` and ``b`` are one class: the same object, or the same module-qualified
    name (a module reloaded, a notebook cell run again, re-create their classes).

    >>> same_class(int, int), same_class(int, type("int", (), {}))
    (True, False)
    """
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def claim(registry: dict, cls, base: type, key: str, what: str) -> type:
    """:func:`registrable`, then ``registry[cls.<key>] = cls`` unless another class holds that
    name (:func:`same_class` takes it back: a reloaded module's). Returns ``cls``, for
    decorators.

    >>> class Two(int):
    ...     name = "two"
    >>> reg = {}
    >>> claim(reg, Two, int, "name", "number") is Two
    True
    >>> claim(reg, type("Two", (int,), {"name": "two", "__module__": "elsewhere"}), int,
    ...       "name", "number")
    Traceback (most recent call last):
    ...
    ValueError: Two: the number name 'two' is taken by genotok._plugins.Two
    """
    registrable(cls, base, key, what)
    name = getattr(cls, key)
    other = registry.get(name)
    if other is not None and not same_class(other, cls):
        raise ValueError(f"{cls.__name__}: the {what} name {name!r} is taken by "
                         f"{other.__module__}.{other.__qualname__}")
    registry[name] = cls
    return cls


def reset(group: str | None = None) -> None:
    """Forget that ``group`` (every group with ``None``) was loaded: the next :func:`load`
    reads the entry points again (tests that put a plugin distribution on ``sys.path``)."""
    if group is None:
        _loaded.clear()
    else:
        _loaded.discard(group)
