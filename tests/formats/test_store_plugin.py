"""A store from a plugin distribution (entry point group ``genotok.stores``) is picked up by
Python and by the CLI alike; the plugin is the one ``docs/architecture.md`` shows."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import genotok
from genotok.formats import stores
from tests._plugin_dist import ROOT, cli_env, on_sys_path, plugin_dist

MARK = "# -- end of the plugin module"


def _example_module() -> str:
    """The plugin module of docs/architecture.md's example (its python block, to the mark)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    end = text.index(MARK)
    start = text.rindex("```python\n", 0, end) + len("```python\n")
    return text[start:end]


@pytest.fixture
def site(tmp_path):
    return plugin_dist(tmp_path, "genotok-tsv", {"genotok.stores": {"tsv": "genotok_tsv:TsvStore"}},
                       {"genotok_tsv.py": _example_module()})


def test_python_finds_a_plugin_store(site, tmp_path):
    assert "tsv" not in stores.stores()
    with on_sys_path(site, "genotok.stores"):
        try:
            assert "tsv" in stores.stores()
            tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
            run = genotok.pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "o",
                                      format="tsv", progress=False)
            c = genotok.Corpus.open(run.out)
            assert len(c) == 5 and c.names[0] == "sample0"
        finally:
            stores.STORES.pop("tsv", None)


def test_the_cli_finds_a_plugin_store(site, tmp_path):
    out = tmp_path / "o"
    ex = genotok.examples_dir()
    cmd = [sys.executable, "-m", "genotok", "pretokenize", "-q", "--universe",
           str(ex / "universe.bed"), "--out", str(out), "--format", "tsv", str(ex / "peaks")]
    done = subprocess.run(cmd, env=cli_env(site), capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.glob("*.tsv"))
    info = subprocess.run([sys.executable, "-m", "genotok", "info", "--json", str(out)],
                          env=cli_env(site), capture_output=True, text=True, cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["n_records"] == 5
    # without the plugin the CLI refuses the format (exit 2), naming the choices
    bare = subprocess.run(cmd, env=cli_env(tmp_path / "nothing"), capture_output=True, text=True,
                          cwd=tmp_path)
    assert bare.returncode == 2 and "jsonl" in bare.stderr


def test_a_broken_plugin_is_an_error_naming_its_distribution(tmp_path):
    site = plugin_dist(tmp_path, "genotok-broken", {"genotok.stores": {"bad": "nosuchmod:X"}}, {})
    with on_sys_path(site, "genotok.stores"):
        with pytest.raises(genotok.errors.PluginError, match="genotok-broken"):
            stores.get_store("parquet")
