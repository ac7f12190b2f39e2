"""Every public function and class carries a docstring with a runnable example."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = ["genotok", "genotok.regions", "genotok.universe", "genotok.tokenizer",
           "genotok.pretrained", "genotok.gtok",
           "genotok.corpus", "genotok.data", "genotok.pipeline", "genotok.anndata",
           "genotok.plot", "genotok.ragged", "genotok.build", "genotok.torch_data"]


@pytest.mark.parametrize("module", MODULES)
def test_public_api_has_examples(module):
    if module == "genotok.torch_data":
        pytest.importorskip("torch")
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
