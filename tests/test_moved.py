"""0.1's module paths still import for one release, as their new homes, with a warning."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import genotok
from genotok._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_imports_the_new_module_and_warns(old):
    sys.modules.pop(old, None)
    with pytest.deprecated_call(match=MOVED[old].replace(".", r"\.")):
        mod = importlib.import_module(old)
    assert mod is importlib.import_module(MOVED[old])
    assert mod.__spec__.name == mod.__name__ == MOVED[old]  # its own relative imports still work


def test_old_attribute_warns_and_unknown_attribute_raises(monkeypatch):
    monkeypatch.delattr(genotok, "corpus", raising=False)  # set by an import of the old path
    with pytest.deprecated_call(match="genotok.formats.corpus"):
        assert genotok.corpus.Corpus is genotok.Corpus
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        genotok.nonsense  # noqa: B018


def test_old_from_import_in_a_plain_script(tmp_path):
    script = tmp_path / "old.py"
    script.write_text("import warnings\nwarnings.simplefilter('always')\n"
                      "from genotok.corpus import Corpus\nfrom genotok.anndata import tokenize_anndata\n"
                      "import genotok\nassert Corpus is genotok.Corpus\n"
                      "assert tokenize_anndata is genotok.tokenize_anndata\nprint('ok')\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok\n"
    assert "genotok.corpus moved to genotok.formats.corpus" in out.stderr
