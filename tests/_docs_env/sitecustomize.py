"""Put on PYTHONPATH by tests/test_docs.py: a doc block runs with only the optional packages of
the extras it names. Every top-level module listed in ``GENOTOK_DOCS_HIDE`` (comma-separated)
is made unimportable, as if not installed: ``import x`` raises ModuleNotFoundError,
``importlib.util.find_spec(x)`` is None, ``x`` is not in ``sys.modules`` (packages that test
``"IPython" in sys.modules``, as Ray does), and a distribution of that name is absent from
``importlib.metadata`` (packages that probe an optional one by its metadata, as torchmetrics
probes matplotlib); without that variable this file does nothing."""

import os
import sys

_HIDDEN = frozenset(filter(None, os.environ.get("GENOTOK_DOCS_HIDE", "").split(",")))
if _HIDDEN:
    import importlib.metadata as _md
    import importlib.util as _util

    def _hidden(name: str) -> bool:
        return name.partition(".")[0] in _HIDDEN

    class _Hide:
        """First on ``sys.meta_path``: a hidden module is not found anywhere."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            if _hidden(name):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _Hide())
    _find_spec = _util.find_spec

    def _find_spec_hidden(name, package=None):
        return None if _hidden(name) else _find_spec(name, package)

    _util.find_spec = _find_spec_hidden
    _distribution = _md.distribution
    _lower = {h.lower() for h in _HIDDEN}

    def _distribution_hidden(name):
        if name.replace("-", "_").lower() in _lower:
            raise _md.PackageNotFoundError(name)
        return _distribution(name)

    _md.distribution = _distribution_hidden
