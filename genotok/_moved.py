"""Module paths of genotok 0.1 that moved into rooms in 0.2 keep working for one release.

``import genotok.corpus`` (or ``from genotok.anndata import tokenize_anndata``) still imports, as
the module's new home, with a ``DeprecationWarning`` that names the new path; so does the
attribute ``genotok.corpus``. The old paths go in 0.3. The names exported by ``genotok`` itself
never moved.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "genotok.anndata": "genotok.singlecell",
    "genotok.cellvalues": "genotok.singlecell.values",
    "genotok.conditions": "genotok.singlecell.conditions",
    "genotok.fragmatrix": "genotok.singlecell.fragmatrix",
    "genotok.corpus": "genotok.formats.corpus",
    "genotok.remote": "genotok.formats.corpus.remote",
    "genotok.gtok": "genotok.formats.gtok",
    "genotok.hf": "genotok.formats.hf",
}


def _warn(old: str, stacklevel: int) -> None:
    warnings.warn(f"{old} moved to {MOVED[old]} in genotok 0.2 (import it from there, or the "
                  "public names from genotok); the old path goes in 0.3",
                  DeprecationWarning, stacklevel=stacklevel)


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and hands the import system the module at its new path."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        _warn(spec.name, stacklevel=2)
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # its own spec, put back by exec_module
        return module

    def exec_module(self, module):
        """Nothing to run (the module ran at its new path); only undo the import system's
        ``module.__spec__ = <the old path's spec>``, which would break the module's own
        relative imports."""
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (called by ``genotok/__init__``)."""
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())  # before any finder that might hold a stale copy


def attribute(name: str):
    """``genotok.<name>`` for an old module name (the package's ``__getattr__``)."""
    old = f"genotok.{name}"
    if old not in MOVED:
        raise AttributeError(f"module 'genotok' has no attribute {name!r}")
    _warn(old, stacklevel=3)
    return importlib.import_module(MOVED[old])
