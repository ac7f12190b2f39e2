"""The package root's lazy names (PEP 562): ``genotok.Tokenizer`` imports
:mod:`genotok.tokenizer` when first asked for, not at ``import genotok``.

The table is read from the root's ``if TYPE_CHECKING:`` block (its ``from .module import
names`` lines), so that a name is written once, where type checkers and readers look for it.
"""

from __future__ import annotations

import ast
import importlib


def lazy_names(package: str, path: str, namespace: dict):
    """``(__getattr__, __dir__)`` for ``package``, whose ``__init__`` at ``path`` lists its lazy
    names in an ``if TYPE_CHECKING:`` block; ``namespace``: the package's globals (a resolved
    name is stored there: the next access costs nothing)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    table: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 1:
                    for alias in imp.names:
                        name = alias.asname or alias.name
                        if imp.module is None:  # from . import presets: a submodule
                            table[name] = ("." + alias.name, None)
                        else:
                            table[name] = ("." + imp.module, alias.name)

    def __getattr__(name: str):
        try:
            module, attr = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        mod = importlib.import_module(module, package)
        value = mod if attr is None else getattr(mod, attr)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
