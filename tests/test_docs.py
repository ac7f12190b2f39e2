"""The documentation runs: every public name has a docstring example, and every ```python and
```bash block of README.md and docs/**/*.md runs as a user pastes it.

Each block runs ALONE, in a fresh empty folder, in a subprocess: a python block as a plain script
(``python block.py``, no ``if __name__ == "__main__":`` guard), a bash block with ``bash -euo
pipefail``; then it runs a second time in the same folder, so a block that writes must re-run
(``overwrite=True`` / ``--overwrite``). A block finds the bundled data itself
(``genotok.examples_dir()``, or ``$(python -c "import genotok; print(genotok.examples_dir())")``
in bash) and makes every other file it reads. A block that needs a package the lean ``[test]``
extra lacks (torch, pyarrow, …) skips, naming it, where that package is not installed.

Markers, on the line before a block's fence:

- ``<!-- docs-test: skip (REASON) -->``: the block does not run here; the reason is required and
  must say what it needs that a test cannot have (the network: the Hub, s3, a package index).
  :func:`test_opted_out_blocks_are_listed` lists every such block.
- ``<!-- docs-test: raises GtokFormatError -->``: the block shows an error; it fails unless it
  raises that exception (or a subclass) on both runs.
- ``<!-- docs-test: slow (REASON) -->``: the block runs as the others do, in the slow step only
  (``pytest -m slow tests/test_docs.py``): a recipe of several processes (DDP, Lightning ``ddp``,
  a Dask cluster of worker processes) that takes more than a few seconds.

A block that is not meant to run (an excerpt, pseudo-code, output) is tagged ``text``.

Run as a script, this file runs the blocks of every page, or of the pages named, and says which
fail::

    python tests/test_docs.py              # every page
    python tests/test_docs.py README.md    # some
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_MARK = re.compile(r"<!--\s*docs-test:\s*skip\b\s*(?P<reason>.*?)\s*-->")
RAISES_MARK = re.compile(r"<!--\s*docs-test:\s*raises\s+(\w+)\s*-->")
SLOW_MARK = re.compile(r"<!--\s*docs-test:\s*slow\b\s*(?P<reason>.*?)\s*-->")
#: packages outside the lean ``[test]`` extra: a block needing one skips where it is absent
OPTIONAL = {"torch", "pyarrow", "dask", "distributed", "ray", "matplotlib", "tqdm", "xxhash", "lightning",
            "datasets", "huggingface_hub", "fsspec", "s3fs", "transformers", "mudata",
            "tiledbsoma", "zarr", "ray", "psutil", "accelerate", "polars", "duckdb", "scanpy"}
#: what a block's language tag says about how it runs
LANGS = {"python": "python", "py": "python", "python3": "python", "bash": "bash", "sh": "bash",
         "shell": "bash"}
#: what an opt-out may need: only what a test cannot have
NETWORK = re.compile(r"network|hub|s3|package index|internet", re.IGNORECASE)

#: rooms whose names are internal or self-describing: the numba kernels (arrays in, arrays out),
#: the CLI's handlers (documented by ``genotok --help`` and docs/cli.md) and the exception classes
NO_EXAMPLES = ("genotok.kernels", "genotok.cli", "genotok.errors")
#: modules the redesign made visible to this test, whose examples are being written (emptied
#: before the redesign lands)
PENDING_EXAMPLES: set[str] = set()


def _public_modules() -> list[str]:
    """Every module of the package whose dotted name has no private part, but NO_EXAMPLES."""
    import pkgutil

    import genotok

    names = ["genotok"]
    for info in pkgutil.walk_packages(genotok.__path__, "genotok."):
        if (not any(part.startswith("_") for part in info.name.split(".")[1:])
                and not info.name.startswith(NO_EXAMPLES) and info.name not in PENDING_EXAMPLES):
            names.append(info.name)
    return sorted(names)


MODULES = _public_modules()


@pytest.mark.parametrize("module", MODULES)
def test_public_api_has_examples(module):
    if module in ("genotok.torch_data", "genotok.lightning"):
        pytest.importorskip("torch")
    if module == "genotok.lightning":
        pytest.importorskip("lightning")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            pytest.skip(f"{module} is not part of this checkout")
        raise
    missing = [name for name, obj in vars(mod).items()
               if not name.startswith("_") and getattr(obj, "__module__", None) == module
               and (inspect.isfunction(obj) or inspect.isclass(obj))
               and ">>>" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{module}: public names without a docstring example: {missing}"


# --------------------------------------------------------------------------- the snippets
@dataclass
class Block:
    page: str      # path relative to the repository
    number: int    # 1-based, among the page's python and bash blocks
    line: int      # line of the opening fence
    lang: str      # "python" or "bash"
    code: str
    raises: str | None = None  # the exception class (or base class) name it must raise
    skip: str | None = None    # why it does not run here (the marker's reason), if it does not
    slow: bool = False         # runs in the slow step only (several processes)

    @property
    def where(self) -> str:
        return f"{self.page} block {self.number} (line {self.line})"

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")


def blocks(path: Path) -> list[Block]:
    """The python and bash blocks of a Markdown file (indented ones too), opted-out ones included."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, lang = m["indent"], m["ticks"], m["lang"].lower()
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(ticks)
                                      and lines[j].strip().strip(ticks[0]) == ""):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        prev = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
        if lang in LANGS:
            raises, skip = RAISES_MARK.fullmatch(prev), SKIP_MARK.fullmatch(prev)
            reason = skip["reason"].strip("()").strip() if skip else None
            out.append(Block(page, len(out) + 1, i + 1, LANGS[lang], "\n".join(body) + "\n",
                             raises[1] if raises else None, reason,
                             SLOW_MARK.fullmatch(prev) is not None))
        i = j + 1
    return out


def pages() -> list[Path]:
    found = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in found if p.is_file() and blocks(p)]


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


# --------------------------------------------------------------------------- extras per block
#: a block's first line names the extras it needs: ``# needs the [torch,lightning] extras``
NEEDS = re.compile(r"^#\s*needs the \[(?P<extras>[\w,-]+)\] extras?\b")


@functools.cache
def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _closure(requirements: list[str]) -> set[str]:
    """The installed distributions (normalised names) these requirement strings bring, with
    what they depend on, recursively (markers evaluated; ``genotok[x]`` expands extra x)."""
    extras = _pyproject()["optional-dependencies"]
    seen: set[str] = set()
    todo = [(r, frozenset()) for r in requirements]
    while todo:
        text, with_extras = todo.pop()
        req, name = _requirement(text)
        if req.marker is not None and not any(
                req.marker.evaluate({"extra": e}) for e in (with_extras or {""})):
            continue
        if name == "genotok":
            todo += [(r, frozenset()) for e in req.extras for r in extras.get(e, [])]
            continue
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        todo += [(r, frozenset(req.extras)) for r in _requires(name)]
    return {k.split("[")[0] for k in seen}


@functools.cache
def _requirement(text: str):
    """A requirement string parsed, and its distribution's normalised name."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    req = Requirement(text)
    return req, canonicalize_name(req.name)


@functools.cache
def _requires(name: str) -> tuple[str, ...]:
    """The requirement strings of installed distribution ``name`` (none if not installed)."""
    from importlib import metadata

    try:
        return tuple(metadata.requires(name) or [])
    except metadata.PackageNotFoundError:
        return ()


@functools.cache
def _owners() -> dict[str, list[str]]:
    """Each installed top-level module's distributions (normalised names): read once, as it
    scans every installed distribution's file list."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    return {mod: [canonicalize_name(d) for d in owners]
            for mod, owners in metadata.packages_distributions().items()}


def _modules(dists: set[str]) -> set[str]:
    """The top-level modules these installed distributions provide."""
    return {mod for mod, owners in _owners().items()
            if any(d in dists for d in owners) and not mod.startswith("_")}


def needs(b: "Block") -> list[str]:
    """The extras a block names on its first line (``# needs the [torch] extra``)."""
    first = b.code.lstrip().splitlines()[0] if b.code.strip() else ""
    m = NEEDS.match(first)
    return m["extras"].split(",") if m else []


def _vendored(dists: set[str]) -> set[str]:
    """Top-level modules these distributions ship for themselves and put on ``sys.path`` (Ray's
    ``thirdparty_files``: psutil, colorama): a user of the package has them."""
    return set().union(*map(_vendored_by, dists))


@functools.cache
def _vendored_by(name: str) -> frozenset[str]:
    from importlib import metadata

    try:
        files = metadata.files(name) or []
    except metadata.PackageNotFoundError:
        return frozenset()
    return frozenset(f.parts[f.parts.index("thirdparty_files") + 1].split(".")[0]
                     for f in files if "thirdparty_files" in f.parts[:-1])


def hidden_modules(extras: list[str]) -> set[str]:
    """What a user who installed genotok with exactly ``extras`` does not have: the modules of
    every optional extra's packages, less those of the core and of ``extras``."""
    return set(_hidden_modules(tuple(sorted(set(extras)))))


@functools.cache
def _hidden_modules(extras: tuple[str, ...]) -> frozenset[str]:
    """:func:`hidden_modules`, computed once per set of extras (it reads every installed
    distribution's metadata: seconds)."""
    project = _pyproject()
    optional = [r for e, reqs in project["optional-dependencies"].items() if e != "test"
                for r in reqs]
    kept = _closure(project["dependencies"] + [f"genotok[{e}]" for e in extras])
    return frozenset(_modules(_closure(optional) - kept) - _modules(kept) - _vendored(kept)
                     - set(sys.stdlib_module_names))


def _env(hide: set[str] = frozenset()) -> dict:
    """The user's environment, with this checkout importable and this Python first on PATH;
    the modules in ``hide`` made unimportable (tests/_docs_env/sitecustomize.py)."""
    env = dict(os.environ, MPLBACKEND="Agg", GENOTOK_DOCS_HIDE=",".join(sorted(hide)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tests" / "_docs_env"), str(ROOT),
                                                      env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join(filter(None, [str(Path(sys.executable).parent), env.get("PATH")]))
    return env


def _python_script(b: Block) -> str:
    if not b.raises:
        return b.code
    body = "".join("    " + ln if ln.strip() else ln for ln in b.code.splitlines(True))
    return (f"try:\n{body}except Exception as _exc:\n"
            f"    assert {b.raises!r} in {{c.__name__ for c in type(_exc).__mro__}}, _exc\n"
            f"else:\n    raise AssertionError({b.where + ': should raise ' + b.raises!r})\n")


def run_block(b: Block, folder: Path, timeout: float = 600) -> str | None:
    """Run one block in ``folder`` as a user pastes it; ``None``, or what failed.

    A python block is written to a script outside ``folder`` (the folder holds only what the
    block makes) and run with ``python script.py``; a bash block with ``bash -euo pipefail -c``.
    """
    with tempfile.TemporaryDirectory() as scripts:
        if b.lang == "python":
            script = Path(scripts) / f"{Path(b.page).stem}_block{b.number}.py"
            script.write_text(_python_script(b), encoding="utf-8")
            cmd = [sys.executable, str(script)]
        else:
            cmd = ["bash", "-euo", "pipefail", "-c", b.code]
        run = subprocess.run(cmd, cwd=folder, env=_env(hidden_modules(needs(b))),
                             capture_output=True, text=True, timeout=timeout)
    if run.returncode == 0:
        return None
    at = ""
    if b.lang == "python":
        lines = re.findall(r'File "[^"]*_block\d+\.py", line (\d+)', run.stderr)
        if lines:
            at = f", its line {int(lines[-1]) - (1 if b.raises else 0)}"
    last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}"
    return f"{b.where}{at}: {last}\n--- stderr ---\n{run.stderr[-3000:]}\n--- the block ---\n{b.code}"


_MISSING = re.compile(r"No module named '([\w.]+)'|needs (?:the optional package )?([\w.]+): "
                      r"pip install|import of ([\w.]+) halted")


def missing_optional(problem: str | None) -> str | None:
    """The optional package a failure names, if it is not installed here (the block then skips)."""
    for m in _MISSING.finditer(problem or ""):
        name = (m[1] or m[2] or m[3]).split(".")[0].lower()
        if name in OPTIONAL and importlib.util.find_spec(name) is None:
            return name
    return None


def unnamed_extra(b: Block, problem: str | None) -> str | None:
    """A package the block needs, installed here but hidden because the block names no extra
    that brings it: what the block must say (``None`` when the failure is something else)."""
    for m in _MISSING.finditer(problem or ""):
        name = (m[1] or m[2] or m[3]).split(".")[0]
        if name in hidden_modules(needs(b)) and importlib.util.find_spec(name) is not None:
            declared = _pyproject()["optional-dependencies"]
            extras = sorted((e for e in declared if e not in ("test", "test-all")
                             and name not in hidden_modules([e])),
                            key=lambda e: (not any(r.startswith(name) for r in declared[e]),
                                           len(_closure([f"genotok[{e}]"]))))
            return (f"{b.where} imports {name}, which none of the extras it names "
                    f"({needs(b) or 'none'}) brings: start it with '# needs the [{extras[0] if extras else '?'}]"
                    f" extra' (extras that bring {name}: {extras})")
    return None


def not_installed(extras: list[str]) -> str | None:
    """A package of these extras that is not installed here, if any (a block naming the extra
    would only fail on importing it)."""
    from importlib import metadata

    declared = _pyproject()["optional-dependencies"]
    for text in (r for e in extras for r in declared.get(e, [])):
        req, name = _requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            try:
                metadata.distribution(name)
            except metadata.PackageNotFoundError:
                return req.name
    return None


def run_twice(b: Block, folder: Path) -> str | None:
    """Run ``b`` alone in ``folder`` with only the extras it names, then again in the same folder;
    ``None`` or what failed. A block naming an extra whose package is not installed skips
    without a run."""
    if (name := not_installed(needs(b))) is not None:
        pytest.skip(f"{b.where} needs {name}, which is not installed")
    for attempt in ("first run", "second run, in the same folder"):
        problem = run_block(b, folder)
        if problem is not None:
            name = missing_optional(problem)
            if name:
                pytest.skip(f"{b.where} needs {name}, which is not installed")
            return unnamed_extra(b, problem) or f"{attempt}: {problem}"
    return None


RUNNABLE = [b for b in all_blocks() if b.skip is None]


@pytest.mark.parametrize("block", [pytest.param(b, marks=pytest.mark.slow) if b.slow else b
                                   for b in RUNNABLE], ids=lambda b: b.id)
def test_block_runs_alone_and_again(block, tmp_path):
    problem = run_twice(block, tmp_path)
    assert problem is None, problem


def test_opted_out_blocks_are_listed():
    """The blocks that do not run here, each with its reason: they need the network."""
    opted = [b for b in all_blocks() if b.skip is not None]
    listing = "\n".join(f"  {b.where}: {b.skip}" for b in opted)
    print(f"opted-out doc blocks ({len(opted)}):\n{listing}")
    unreasoned = [b.where for b in opted if not NETWORK.search(b.skip or "")]
    assert not unreasoned, ("a block may opt out only for the network (the Hub, s3, a package "
                            f"index), with the reason in its marker: {unreasoned}")


def test_runner_reports_page_block_and_line(tmp_path):
    md = tmp_path / "page.md"
    md.write_text("# t\n\n```python\nx = 1\n```\n\n<!-- docs-test: skip (needs the Hub) -->\n"
                  "```python\nnot python at all\n```\n\n- a list\n\n    ```bash\n    echo hi\n"
                  "    false\n    echo unreached\n    ```\n\n```python\ny = 1\nz = x + 1\n```\n\n"
                  "<!-- docs-test: raises LookupError -->\n```python\n{}[1]\n```\n\n"
                  "```text\nnot run\n```\n")
    found = blocks(md)
    assert [(b.number, b.line, b.lang, b.skip) for b in found] == [
        (1, 3, "python", None), (2, 8, "python", "needs the Hub"), (3, 14, "bash", None),
        (4, 20, "python", None), (5, 26, "python", None)]
    assert found[4].raises == "LookupError"
    work = tmp_path / "work"
    work.mkdir()
    assert run_block(found[0], work) is None
    problem = run_block(found[2], work)  # bash -e: stops at `false`
    assert problem.startswith(f"{found[2].where}: exit 1"), problem
    problem = run_block(found[3], work)  # alone: x is not defined
    assert problem.startswith(f"{found[3].where}, its line 2: NameError: name 'x'"), problem
    assert run_block(found[4], work) is None  # KeyError is a LookupError: the error it shows
    found[4].code = "x = 2\n"
    assert "should raise LookupError" in run_block(found[4], work)
    assert list(work.iterdir()) == []  # the scripts live outside the folder


def test_a_block_that_cannot_rerun_fails(tmp_path):
    md = tmp_path / "page.md"
    md.write_text("```python\nfrom pathlib import Path\nPath('out.txt').touch(exist_ok=False)\n```\n"
                  "```python\nimport no_such_package_genotok\n```\n")
    once, missing = blocks(md)
    problem = run_twice(once, tmp_path)
    assert problem.startswith("second run") and "FileExistsError" in problem, problem
    assert missing_optional(run_block(missing, tmp_path)) is None  # not optional: a failure
    assert missing_optional("No module named 'torch'") == (
        None if importlib.util.find_spec("torch") else "torch")


def test_installation_is_stated_truthfully():
    # genotok is not on a package index: `pip install genotok` fails; `pip install .` (or -e .,
    # or the extras '.[torch]') from a checkout works
    index = re.compile(r"pip install +(?:-U +)?genotok(?![\w\[/.-])")
    found = [f"{p.relative_to(ROOT)}:{k}" for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
             for k, line in enumerate(p.read_text().splitlines(), 1) if index.search(line)]
    assert not found, f"'pip install genotok' (from an index) at {found}"


def test_editable_installs_are_compat_mode():
    """setuptools' default (strict) editable finder runs after Python's path search, so the
    folder holding the clone (or a genotok/ folder left in site-packages) was imported as an
    empty namespace package; compat mode puts the checkout on sys.path (tried with pip 23.2 and
    setuptools 65 in a throwaway venv)."""
    editable = re.compile(r"pip install +-e ")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = [f"{p.relative_to(ROOT)}:{k}" for p in pages
           for k, line in enumerate(p.read_text().splitlines(), 1)
           if editable.search(line) and "editable_mode=compat" not in line]
    assert not bad, f"'pip install -e' without --config-settings editable_mode=compat at {bad}"


def test_extras_are_installed_beside_the_editable_install():
    """``pip install '.[torch]'`` replaced the README's editable install with a copy (and every
    kernel compiled again): an extra from the checkout is installed with ``-e``."""
    plain = re.compile(r"pip install +(?:-U +|--upgrade +)?['\"]?\.(?:\[|['\"]?(?:\s|$))")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = [f"{p.relative_to(ROOT)}:{k}" for p in pages
           for k, line in enumerate(p.read_text().splitlines(), 1)
           if plain.search(re.sub(r"(?:plain|earlier) `pip install [^`]*`", "", line))]
    assert not bad, f"'pip install .' or '.[extra]' without -e at {bad}"


def test_every_named_extra_exists():
    extras = set(_pyproject()["optional-dependencies"])
    unknown = {(b.where, e) for b in all_blocks() for e in needs(b) if e not in extras}
    assert not unknown, f"blocks naming extras pyproject.toml does not declare: {unknown}"


def test_hidden_packages_are_what_a_user_lacks():
    """The doc blocks run with only the extras they name: torch is hidden from a block that
    names none, visible to one that names [torch]; the core's packages are never hidden."""
    assert {"numpy", "numba", "scipy", "h5py", "anndata"}.isdisjoint(hidden_modules([]))
    if importlib.util.find_spec("torch") is not None:
        assert "torch" in hidden_modules([]) and "torch" not in hidden_modules(["torch"])
    b = Block("x.md", 1, 1, "python", "# needs the [torch,hf] extras\nimport torch\n")
    assert needs(b) == ["torch", "hf"]


# --------------------------------------------------------------------------- the rendered site
@pytest.mark.slow
def test_site_builds_strict_and_renders_cleanly(tmp_path):
    # `mkdocs build --strict`; no numpydoc role shown literally (":class:" 71 times before), a page
    # for every public module, highlighted code
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("torch")  # the torch_data page imports it
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    site = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    roles = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):")
    shown = {str(p.relative_to(site)): len(roles.findall(p.read_text())) for p in site.rglob("*.html")}
    assert not {k: v for k, v in shown.items() if v}, shown
    pages = {"tokenizer": "tokenizer", "regions": "regions", "corpus": "formats.corpus.reader",
             "pipeline": "pipeline", "data": "data", "torch_data": "torch_data", "plot": "plot",
             "errors": "errors"}
    for page_name, module in pages.items():
        page = (site / "api" / page_name / "index.html").read_text()
        assert f'id="genotok.{module}"' in page, module
    assert 'class="highlight"' in (site / "index.html").read_text()
    # each parameter with its own type and default ("min_fraction, fraction_of" gave fraction_of
    # min_fraction's float and 0.0)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (site / "api" / "tokenizer" / "index.html")
                                      .read_text()))
    assert re.search(r"fraction_of str .{0,200}?\"query\"", text), "fraction_of documented as a str"
    assert not re.search(r"fraction_of float", text)


def test_license_file_matches_the_declared_license():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "genotok developers" in text
    assert 'license = "BSD-3-Clause"' in (ROOT / "pyproject.toml").read_text()


def main(argv: list[str]) -> int:
    chosen = [Path(a).resolve() for a in argv] or pages()
    failed = 0
    for page in chosen:
        for b in blocks(page):
            if b.skip is not None:
                print(f"skip {b.where}: {b.skip}")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    problem = run_twice(b, Path(tmp))
                except pytest.skip.Exception as exc:
                    print(f"skip {exc}")
                    continue
            print(f"{'ok  ' if problem is None else 'FAIL'} {b.where}")
            if problem is not None:
                failed += 1
                print("    " + problem.replace("\n", "\n    "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
