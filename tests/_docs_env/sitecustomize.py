"""Put on PYTHONPATH by tests/test_docs.py: a doc block runs with only the optional packages of
the extras it names. Every top-level module listed in ``GENOTOK_DOCS_HIDE`` (comma-separated)
is made unimportable, as if not installed (``import x`` raises ModuleNotFoundError,
``importlib.util.find_spec(x)`` is None); without that variable this file does nothing."""

import os
import sys

for _name in filter(None, os.environ.get("GENOTOK_DOCS_HIDE", "").split(",")):
    sys.modules.setdefault(_name, None)
