"""The table of the public API in ``docs/api/names.md`` lists every public name, as it is.

The public names are read with :mod:`inspect`:

- ``genotok.__all__`` and the ``__all__`` of each room's package (``genotok.build``,
  ``genotok.formats.corpus``, ``genotok.singlecell``, ``genotok.pipeline``, ``genotok.cli``):
  how a package lays out its modules inside is not public;
- the public functions and classes defined by the rooms that are single modules (``genotok.data``,
  ``genotok.tokenizer``, ``genotok.formats.gtok`` …), as ``tests/test_docs.py`` finds them;
- the public methods, class methods and properties of every public class.

Each object gets one row, under its shortest public path (``genotok.Corpus``, not
``genotok.formats.corpus.Corpus``). The kernels, the exception classes' internals and the
private modules are not public.

Run as a script, it prints the table of the code as it is (to paste between the markers)::

    python tests/test_api_names.py
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMES_MD = ROOT / "docs" / "api" / "names.md"
BEGIN = "<!-- api-table: begin -->"
END = "<!-- api-table: end -->"

#: packages whose ``__all__`` is their public API (their inner modules are layout)
PACKAGES = ("genotok", "genotok.build", "genotok.cli", "genotok.formats.corpus",
            "genotok.pipeline", "genotok.singlecell")
#: never public: numba kernels (arrays in, arrays out), the exception module (its classes are
#: exported by ``genotok``), the CLI's handlers (``genotok --help``)
NOT_PUBLIC = ("genotok.kernels", "genotok.errors", "genotok.cli.", "genotok.__main__")


#: the kinds of row (no "deprecated alias": genotok keeps no old spellings)
KINDS = ("function", "class", "exception", "method", "classmethod", "staticmethod", "property",
         "constant")


@dataclass(frozen=True)
class Row:
    name: str       # the shortest public path
    kind: str       # function, class, exception, method, classmethod, staticmethod, property,
    #                 constant
    signature: str  # parameters without annotations, "" for properties, type name for constants
    room: str       # the room's package or module, e.g. "formats.corpus", "tokenizer"

    def line(self) -> str:
        sig = self.signature.replace("|", "\\|")
        return f"| `{self.name}` | {self.kind} | `{sig}` | {self.room} |" if sig else \
            f"| `{self.name}` | {self.kind} | | {self.room} |"


# --------------------------------------------------------------------------- reading the code
def _import(name: str):
    sys.path.insert(0, str(ROOT))  # this checkout's genotok, also when run as a script
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT))


def _module_rooms() -> list[str]:
    """Public modules that no package of ``PACKAGES`` (but the root) covers."""
    genotok = _import("genotok")
    out = []
    for info in pkgutil.walk_packages(genotok.__path__, "genotok."):
        name = info.name
        if (any(part.startswith("_") for part in name.split(".")[1:]) or name in PACKAGES
                or name.startswith(NOT_PUBLIC)
                or any(name.startswith(p + ".") for p in PACKAGES if p != "genotok")
                or info.ispkg):
            continue
        out.append(name)
    return sorted(out)


def _room(module: str) -> str:
    """``genotok.formats.corpus.reader`` -> ``formats.corpus``; ``genotok.data`` -> ``data``."""
    parts = module.split(".")[1:]
    if parts and parts[0].startswith("_"):  # examples_dir, warmup: the root's own helpers
        return "genotok"
    for pkg in sorted(PACKAGES, key=len, reverse=True):
        p = pkg.split(".")[1:]
        if p and parts[:len(p)] == p:
            return ".".join(p)
    return ".".join(parts) or "genotok"


def _default(value) -> str:
    if isinstance(value, type):
        return f"{value.__module__.replace('numpy', 'np')}.{value.__name__}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def signature(obj) -> str:
    """Parameters without annotations; ``self``/``cls`` dropped."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()
              if p.name not in ("self", "cls")]
    params = [p.replace(default=_Shown(_default(p.default)))
              if p.default is not inspect.Parameter.empty else p for p in params]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


class _Shown:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    return "function" if callable(obj) else "constant"


def _members(cls, prefix: str, room: str) -> list[Row]:
    rows = []
    if issubclass(cls, BaseException):
        return rows
    # a public class's members include those of its private bases inside genotok
    # (e.g. a mixin of shared methods)
    bases = [cls] + [b for b in cls.__mro__[1:] if b.__name__.startswith("_")
                     and b.__module__.startswith("genotok")]
    members: dict = {}
    for base in bases:
        for attr, raw in vars(base).items():
            members.setdefault(attr, raw)
    for attr, raw in members.items():
        if attr.startswith("_"):
            continue
        name = f"{prefix}.{attr}"
        if isinstance(raw, property):
            rows.append(Row(name, "property", "", room))
        elif isinstance(raw, classmethod):
            rows.append(Row(name, "classmethod", signature(getattr(cls, attr)), room))
        elif isinstance(raw, staticmethod):
            rows.append(Row(name, "staticmethod", signature(raw.__func__), room))
        elif inspect.isfunction(raw):
            rows.append(Row(name, "method", signature(raw), room))
    return rows


#: rooms whose optional dependency is not installed here (their rows are skipped)
UNAVAILABLE: set[str] = set()


def inventory() -> list[Row]:
    """Every public name of the package, one row each, in a stable order."""
    seen: dict[int, str] = {}
    rows: list[Row] = []

    def add(path: str, obj, room: str):
        if id(obj) in seen:
            return
        seen[id(obj)] = path
        kind = _kind(obj)
        if kind == "constant":
            rows.append(Row(path, kind, type(obj).__name__, room))
            return
        rows.append(Row(path, kind, signature(obj) if kind != "exception" else "", room))
        if inspect.isclass(obj):
            rows.extend(_members(obj, path, room))

    for pkg in PACKAGES:
        mod = _import(pkg)
        for name in mod.__all__:
            obj = getattr(mod, name)
            module = getattr(obj, "__module__", None) or pkg
            add(f"{pkg}.{name}", obj, _room(module) if pkg == "genotok" else _room(pkg))
    for modname in _module_rooms():
        try:
            mod = _import(modname)
        except ImportError as exc:  # an optional dependency (torch, lightning) missing
            if (exc.name or "").split(".")[0] == "genotok":
                raise
            UNAVAILABLE.add(_room(modname))
            continue
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n, o in vars(mod).items()
                     if not n.startswith("_") and getattr(o, "__module__", None) == modname
                     and (inspect.isfunction(o) or inspect.isclass(o))]
        for name in names:
            add(f"{modname}.{name}", getattr(mod, name), _room(modname))
    return rows


# --------------------------------------------------------------------------- reading the table
def table_rows(text: str | None = None) -> list[Row]:
    text = NAMES_MD.read_text(encoding="utf-8") if text is None else text
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = []
    for line in body.splitlines():
        m = re.match(r"^\| `([^`]+)` \| ([^|]+?) \| (?:`(.*)`)? ?\| ([^|]+?) \|$", line.strip())
        if m:
            rows.append(Row(m[1], m[2], (m[3] or "").replace("\\|", "|"), m[4]))
    return rows


# --------------------------------------------------------------------------- the tests
TABLE = {r.name: r for r in table_rows()} if NAMES_MD.exists() else {}
CODE = {r.name: r for r in inventory()}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_table_row_matches_the_code(name):
    row = TABLE[name]
    if row.room in UNAVAILABLE:
        pytest.skip(f"{row.room} needs an optional dependency that is not installed")
    assert name in CODE, f"docs/api/names.md lists {name}, which the package does not have"
    code = CODE[name]
    assert (row.kind, row.signature, row.room) == (code.kind, code.signature, code.room), (
        f"docs/api/names.md is out of date for {name}:\n  table: {row.line()}\n"
        f"  code:  {code.line()}")


def test_every_public_name_is_in_the_table():
    missing = [CODE[n].line() for n in sorted(CODE) if n not in TABLE]
    assert not missing, ("public names missing from docs/api/names.md (add these rows, between "
                         "the api-table markers):\n" + "\n".join(missing))


def test_the_page_lists_todays_names_only():
    """genotok is unreleased: no rename tables, no deprecated aliases (issue 31)."""
    text = NAMES_MD.read_text(encoding="utf-8")
    assert "## Renamed" not in text and "deprecated alias" not in text
    assert not [n for n, o in CODE.items() if o.kind not in KINDS], "a kind of row not listed"


if __name__ == "__main__":
    print(BEGIN)
    print("| name | kind | signature / type | room |")
    print("|---|---|---|---|")
    for r in inventory():
        print(r.line())
    print(END)
