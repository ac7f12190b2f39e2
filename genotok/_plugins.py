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


def reset(group: str | None = None) -> None:
    """Forget that ``group`` (every group with ``None``) was loaded: the next :func:`load`
    reads the entry points again (tests that put a plugin distribution on ``sys.path``)."""
    if group is None:
        _loaded.clear()
    else:
        _loaded.discard(group)
