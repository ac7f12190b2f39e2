"""A tiny plugin distribution for the plugin tests of every seam (stores, sources, encodings,
executors): a ``*.dist-info`` with ``METADATA`` and ``entry_points.txt`` beside its modules, in
a folder that is put on ``sys.path`` (Python) or ``PYTHONPATH`` (a CLI subprocess), exactly as
``pip install`` would leave it in site-packages.

    site = plugin_dist(tmp_path, "genotok-demo", {"genotok.stores": {"tsv": "demo:TsvStore"}},
                       {"demo.py": SOURCE})
    with on_sys_path(site, "genotok.stores"):
        ...  # the registry sees the plugin
    subprocess.run([sys.executable, "-m", "genotok", ...], env=cli_env(site))
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def plugin_dist(tmp_path: Path, dist: str, groups: dict[str, dict[str, str]],
                modules: dict[str, str], version: str = "0.1") -> Path:
    """Write distribution ``dist`` into ``tmp_path/site``: ``groups`` maps an entry point
    group to ``{name: "module:object"}``, ``modules`` a file name (``demo.py`` or
    ``pkg/__init__.py``) to its source. Returns the folder to put on the path."""
    site = tmp_path / "site"
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in eps.items()) + "\n"
        for group, eps in groups.items()))
    for name, source in modules.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return site


@contextlib.contextmanager
def on_sys_path(site: Path, *groups: str):
    """``site`` on ``sys.path`` (and genotok's plugin groups forgotten, so the next lookup
    loads them again) for the block; after it, the path, the plugin's modules and the groups'
    loaded state as before (the caller removes what its registry kept)."""
    from genotok import _plugins

    before = set(sys.modules)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    for g in groups:
        _plugins.reset(g)
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        importlib.invalidate_caches()
        for name in set(sys.modules) - before:
            if getattr(sys.modules[name], "__file__", None) and \
                    str(sys.modules[name].__file__).startswith(str(site)):
                del sys.modules[name]
        for g in groups:
            _plugins.reset(g)


def cli_env(site: Path) -> dict[str, str]:
    """The environment of a CLI subprocess that sees the plugin (and this checkout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), env.get("PYTHONPATH", "")])
    return env
