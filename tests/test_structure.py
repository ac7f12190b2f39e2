"""The house's structure, checked from the package's own imports (docs/architecture.md).

- no module over ``MAX_LINES`` lines;
- no import from a lower room to a higher one, nor between two rooms of the same floor;
- no circle between modules (imports inside functions count: a lazy import is still a
  dependency);
- no private name (``_x``) imported from another room, nor read as ``module._x`` through an
  imported module of another room, and no private module of another room imported (the plumbing
  room's ``genotok._io``, ``genotok._config``… are the shared exception: that is their job).

Each failure names the file and line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "genotok"
MAX_LINES = 600

#: (room, floor, module prefixes): a module belongs to the room of its longest matching prefix
ROOMS = [
    ("plumbing", 0, ["genotok._version", "genotok._config", "genotok.errors", "genotok._validate",
                     "genotok._progress", "genotok._io", "genotok._inflate", "genotok._optional",
                     "genotok._names",
                     "genotok._html", "genotok._examples", "genotok.params"]),
    ("kernels", 1, ["genotok.kernels"]),
    ("domain", 2, ["genotok.ragged", "genotok.regions", "genotok.bed", "genotok.universe",
                   "genotok.settings", "genotok.vocab", "genotok.tokenizer",
                   "genotok.pretrained", "genotok.batching"]),
    ("formats", 3, ["genotok.formats"]),
    ("sink", 4, ["genotok.sink"]),
    ("singlecell", 5, ["genotok.singlecell"]),
    ("build", 5, ["genotok.build"]),
    ("pipeline", 6, ["genotok.pipeline"]),
    ("training", 7, ["genotok.data", "genotok.sampling", "genotok.torch_data",
                     "genotok.lightning", "genotok.plot"]),
    ("cli", 8, ["genotok.cli"]),
    ("root", 9, ["genotok", "genotok.__main__", "genotok._warmup"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}
PACKAGES = {module_name(p) for p in PKG.rglob("__init__.py")}


def room_of(mod: str) -> tuple[str, int]:
    best = None
    for room, floor, prefixes in ROOMS:
        for pre in prefixes:
            if (mod == pre or mod.startswith(pre + ".")) and (best is None or len(pre) > best[0]):
                best = (len(pre), room, floor)
    if best is None:
        raise AssertionError(f"{mod} is in no room: add it to ROOMS in {__file__}")
    return best[1], best[2]


@dataclass
class Edge:
    src: str
    dst: str
    line: int
    names: tuple[str, ...]   # the names imported ("from X import a, b"); () for "import X"


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if mod in PACKAGES else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def edges_of(mod: str, path: Path) -> tuple[list[Edge], dict[str, str], ast.Module]:
    """Every genotok import of a module (anywhere in it), and the local names bound to modules."""
    tree = ast.parse(path.read_text(), str(path))
    edges, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "genotok":
                    edges.append(Edge(mod, a.name, node.lineno, ()))
                    if a.asname:
                        bound[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node)
            if target.split(".")[0] != "genotok":
                continue
            plain = []
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:      # "from . import reader": an import of a module
                    edges.append(Edge(mod, sub, node.lineno, ()))
                    bound[a.asname or a.name] = sub
                else:
                    plain.append(a.name)
            if plain:
                edges.append(Edge(mod, target, node.lineno, tuple(plain)))
    return edges, bound, tree


def _private_module(mod: str) -> bool:
    return any(part.startswith("_") and part != "__main__" for part in mod.split(".")[1:])


def problems() -> dict[str, list[str]]:
    found = {"size": [], "upward": [], "private": [], "circle": []}
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    where: dict[tuple[str, str], str] = {}
    for mod, path in MODULES.items():
        rel = path.relative_to(PKG.parent)
        n = len(path.read_text().splitlines())
        if n > MAX_LINES:
            found["size"].append(f"{rel}: {n} lines (at most {MAX_LINES}: split the room)")
        room, floor = room_of(mod)
        edges, bound, tree = edges_of(mod, path)
        for e in edges:
            if e.dst not in MODULES:
                continue
            graph[mod].add(e.dst)
            where.setdefault((mod, e.dst), f"{rel}:{e.line}")
            droom, dfloor = room_of(e.dst)
            if droom == room or droom == "plumbing" and room != "plumbing":
                if droom == "plumbing" or not e.names:
                    continue
            if droom != room:
                if dfloor >= floor:
                    found["upward"].append(f"{rel}:{e.line}: {room} (floor {floor}) imports "
                                           f"{e.dst} ({droom}, floor {dfloor})")
                if droom != "plumbing" and _private_module(e.dst):
                    found["private"].append(f"{rel}:{e.line}: imports {e.dst}, a private module "
                                            f"of the {droom} room")
                for name in e.names:
                    if name.startswith("_") and name != "__version__":
                        found["private"].append(f"{rel}:{e.line}: imports {name} from {e.dst} "
                                                f"({droom} room)")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                target = bound[node.value.id]
                if room_of(target)[0] != room:
                    found["private"].append(f"{rel}:{node.lineno}: reads {node.value.id}."
                                            f"{node.attr}, private to {target}")
    found["circle"] = [" -> ".join(c) + f"  (first edge at {where[(c[0], c[1])]})"
                       for c in _cycles(graph)]
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(_one_cycle(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _one_cycle(graph, comp):
    start = min(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return sorted(comp)


FOUND = problems()

#: problems the redesign is mending, as (rule, file): a ratchet that only shrinks. A problem not
#: listed fails; a listed one that is gone fails too (delete its line). Empty when it lands.
KNOWN = {
}


def _file(problem: str) -> str:
    return problem.split("first edge at ")[-1].split(":")[0] if "first edge at " in problem \
        else problem.split(":")[0]


@pytest.mark.parametrize("rule", sorted(FOUND))
def test_structure(rule):
    new = [p for p in FOUND[rule] if (rule, _file(p)) not in KNOWN]
    assert not new, f"{len(new)} {rule} problem(s):\n" + "\n".join(new)


def test_known_problems_still_exist():
    gone = sorted(k for k in KNOWN if not any(_file(p) == k[1] for p in FOUND[k[0]]))
    assert not gone, f"mended, so delete from KNOWN: {gone}"


def test_every_module_has_a_room():
    for mod in MODULES:
        room_of(mod)
