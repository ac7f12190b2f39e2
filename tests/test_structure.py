"""The house's structure (docs/architecture.md).

import-linter checks the layering from the contracts in ``pyproject.toml``
(``[tool.importlinter]``): imports run down the floors, no circle between siblings, private
modules stay in their package. This file runs it, shows that a breach is caught, and checks what
import-linter cannot say:

- no module over ``MAX_LINES`` lines (a soft limit: one concept per module, never split by count);
- no private name (``_x``) imported from another room, nor read as ``module._x`` through an
  imported module of another room (the plumbing room, ``genotok._io``, ``genotok._config``…, is
  the shared exception: that is its job).

The rooms are the layers of the contract: ``"a : b"`` is one room, ``"a | b"`` two.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "genotok"
PYPROJECT = ROOT / "pyproject.toml"
MAX_LINES = 1000
PLUMBING = "plumbing"

LINT = ("import sys; from importlinter.cli import lint_imports_command; "
        "sys.argv[0] = 'lint-imports'; lint_imports_command()")


def contracts() -> list[dict]:
    return tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]


def rooms() -> dict[str, str]:
    """Module prefix -> room name, from the layers contract (its last layer is plumbing)."""
    (layers,) = [c["layers"] for c in contracts() if c["type"] == "layers"]
    out = {"genotok": "root"}  # the package itself and the top layer: the root room
    for i, layer in enumerate(layers):
        independent = "|" in layer
        for tail in (t.strip() for t in layer.replace("|", ":").split(":")):
            room = ("root" if i == 0 else PLUMBING if i == len(layers) - 1
                    else tail if independent else layer)
            out[f"genotok.{tail}"] = room
    return out


ROOMS = rooms()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}
PACKAGES = {module_name(p) for p in PKG.rglob("__init__.py")}


def room_of(mod: str) -> str:
    return ROOMS[max((pre for pre in ROOMS if mod == pre or mod.startswith(pre + ".")), key=len)]


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if mod in PACKAGES else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dotted(node) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` (None for anything but names and attributes)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else head + [node.attr]
    return None


def _module_of(parts: list[str], bound: dict) -> str | None:
    """The genotok module ``parts`` (a dotted expression's names) ends on, if any."""
    if parts[0] not in bound:
        return None
    name = ".".join([bound[parts[0]], *parts[1:]])
    return name if name in MODULES else None


def private_names() -> list[str]:
    """Every private name one room takes from another (anywhere in a module: lazy imports too):
    imported by name (``from genotok.x import _y``), a private module of another room
    (``from genotok import _m``, ``from genotok._m import y``), or read as an attribute of a
    module of another room (``x._y``, ``genotok.x._y`` after ``import genotok.x``)."""
    return [f for mod, path in MODULES.items()
            for f in private_in(mod, path.read_text(), path.relative_to(ROOT))]


def private_in(mod: str, text: str, rel) -> list[str]:
    """The private names of other rooms module ``mod`` (source ``text``) takes."""
    found = []
    room = room_of(mod)
    tree = ast.parse(text, str(rel))
    bound = {}  # local name -> genotok module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update({a.asname: a.name for a in node.names
                          if a.asname and a.name.startswith("genotok")})
            found += [f"{rel}:{node.lineno}: imports {a.name}, a private module of the "
                      f"{room_of(a.name)} room" for a in node.names
                      if a.name.split(".")[0] == "genotok" and a.name in MODULES
                      and any(_private(p) for p in a.name.split(".")[1:])
                      and room_of(a.name) not in (room, PLUMBING)]
            if any(a.asname is None and a.name.split(".")[0] == "genotok"
                   for a in node.names):  # import genotok.x: the name genotok
                bound["genotok"] = "genotok"
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node)
            if target.split(".")[0] != "genotok":
                continue
            hidden = [p for p in target.split(".")[1:] if _private(p)]
            if hidden and room_of(target) not in (room, PLUMBING):
                found.append(f"{rel}:{node.lineno}: imports from {target}, a private module "
                             f"of the {room_of(target)} room")
            for a in node.names:
                if f"{target}.{a.name}" in MODULES:  # "from . import reader": a module
                    bound[a.asname or a.name] = f"{target}.{a.name}"
                    target_room = room_of(f"{target}.{a.name}")
                else:
                    target_room = room_of(target)
                if _private(a.name) and target_room not in (room, PLUMBING):
                    found.append(f"{rel}:{node.lineno}: imports {a.name} from {target} "
                                 f"({target_room} room)")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        parts = _dotted(node.value)
        owner = _module_of(parts, bound) if parts else None
        if owner is not None and room_of(owner) not in (room, PLUMBING):
            found.append(f"{rel}:{node.lineno}: reads {'.'.join(parts)}.{node.attr}, "
                         f"private to {owner}")
    return found


def lint(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` over the package under ``root`` with the project's contracts."""
    env = {"PYTHONPATH": str(root), "PATH": "", "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache", "--no-logo",
                           str(PYPROJECT)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_import_linter_contracts_are_kept():
    run = lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(contracts())} kept, 0 broken" in run.stdout


@pytest.mark.parametrize("module, line, broken", [
    # a kernel reaching up to the tokenizer, lazily (imports inside functions count)
    ("kernels/bits.py", "def _up():\n    from ..tokenizer import Tokenizer\n", "rooms"),
    # two rooms of one floor
    ("build/report.py", "from ..singlecell import cells\n", "rooms"),
    # a circle inside a room
    ("formats/gtok.py", "from . import interop\n", "no circle"),
])
def test_import_linter_catches_a_breach(tmp_path, module, line, broken):
    shutil.copytree(PKG, tmp_path / "genotok",
                    ignore=shutil.ignore_patterns("__pycache__", "examples"))
    with open(tmp_path / "genotok" / module, "a") as fh:
        fh.write("\n" + line)
    run = lint(tmp_path)
    assert run.returncode != 0
    assert broken in run.stdout.split("Broken contracts")[-1], run.stdout


def test_modules_stay_readable():
    long = [f"{p.relative_to(ROOT)}: {n} lines (about {MAX_LINES} at most: one concept per "
            "module; never split by line count)"
            for p in MODULES.values() if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, "\n".join(long)


def test_no_private_name_crosses_rooms():
    found = private_names()
    assert not found, f"{len(found)} private name(s) across rooms (make them public):\n" + \
        "\n".join(found)


@pytest.mark.parametrize("line", [
    "from ..formats.store import _digest",             # a private name
    "from .. import _bgzf_private",                    # (a private module is one too, below)
    "from ..formats.corpus import layout as L\nL._is_int(1)",    # through a bound module
    "import genotok.formats.store\ngenotok.formats.store._digest",  # through the package
    "import genotok.formats.store as S\nS._digest",
    "from ..kernels._hidden import x",                 # from a private module
    "import genotok.kernels._hidden as h",
])
def test_the_private_name_check_catches_a_breach(line, monkeypatch):
    """Each way of taking another room's private name is found (a breach planted in a
    single-cell module), and the same line inside its own room is not."""
    monkeypatch.setitem(MODULES, "genotok._bgzf_private", PKG / "_bgzf_private.py")
    monkeypatch.setitem(MODULES, "genotok.kernels._hidden", PKG / "kernels" / "_hidden.py")
    monkeypatch.setitem(ROOMS, "genotok._bgzf_private", "domain")
    assert private_in("genotok.singlecell.cells", line + "\n", "cells.py")
    assert not private_in("genotok.singlecell.cells", "from .chunks import _Source\n", "cells.py")


def test_optional_packages_are_imported_through_the_helper():
    """Every optional package is first imported by ``_optional.require`` (which names its extra)
    or ``_optional.optional``; a module may import its submodules after that, never bare."""
    from genotok._optional import EXTRAS

    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras), "an install hint names an extra that is gone"
    found = []
    for mod, path in MODULES.items():
        if mod == "genotok._optional":
            continue
        tree = ast.parse(path.read_text(), str(path))
        helped = {node.args[0].value.split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("require", "optional") and node.args
                  and isinstance(node.args[0], ast.Constant)}
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                top = name.split(".")[0]
                if top in EXTRAS and top not in helped:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {name} "
                                 "without genotok._optional.require/optional")
    assert not found, "\n".join(found)


def lazy_imports_of(mod: str, target: str) -> list[tuple[int, bool, str]]:
    """Every import of ``target`` in ``mod``: ``(line, inside a function, source line)``."""
    path = MODULES[mod]
    text = path.read_text()
    tree = ast.parse(text, str(path))
    lines = text.splitlines()
    functions = [f for f in ast.walk(tree)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inside = {id(n) for f in functions for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve(mod, node)
            hits = base == target or any(f"{base}.{a.name}" == target for a in node.names)
        elif isinstance(node, ast.Import):
            hits = any(a.name == target for a in node.names)
        else:
            continue
        if hits:
            out.append((node.lineno, id(node) in inside, lines[node.lineno - 1]))
    return out


def test_each_ignored_import_is_a_commented_lazy_import():
    """An import the acyclic contract ignores breaks a real cycle: it is inside a function and
    says so in a comment on its line (docs/architecture.md, "Lazy imports")."""
    ignored = [i for c in contracts() for i in c.get("ignore_imports", [])]
    problems = []
    for item in ignored:
        mod, target = (s.strip() for s in item.split("->"))
        found = lazy_imports_of(mod, target)
        if not found:
            problems.append(f"{item}: no such import (drop it from ignore_imports)")
        for line, lazy, source in found:
            if not lazy or "# lazy" not in source:
                problems.append(f"{mod}:{line}: {source.strip()!r} must be inside a function "
                                "with a '# lazy: why' comment (it breaks a cycle)")
    assert not problems, "\n".join(problems)
