"""Put on PYTHONPATH by tests/test_docs.py: a doc block runs with only the optional packages of
the extras it names. Every top-level module listed in ``GENOTOK_DOCS_HIDE`` (comma-separated)
is made unimportable, as if not installed (``import x`` raises ModuleNotFoundError,
``importlib.util.find_spec(x)`` is None), and a distribution of that name is absent from
``importlib.metadata`` (packages that probe an optional one by its metadata, as torchmetrics
probes matplotlib); without that variable this file does nothing."""

import os
import sys

_HIDDEN = set(filter(None, os.environ.get("GENOTOK_DOCS_HIDE", "").split(",")))
if _HIDDEN:
    import importlib.metadata as _md

    for _name in _HIDDEN:
        sys.modules.setdefault(_name, None)
    _distribution = _md.distribution

    def _hidden_distribution(name):
        if name.replace("-", "_").lower() in {h.lower() for h in _HIDDEN}:
            raise _md.PackageNotFoundError(name)
        return _distribution(name)

    _md.distribution = _hidden_distribution
