"""Conformance suites, one per seam (scikit-learn's ``check_estimator`` pattern).

Every implementation of a seam, built in or plugged in, must pass its suite:
``check_store(StoreClass)``, ``check_source(SourceClass, example)``,
``check_encoding(EncodingClass)``, ``check_executor(executor)``. Each raises
``AssertionError`` naming the rule an implementation broke; genotok's own test suite runs each on
every registered implementation and on planted broken ones that must fail.
"""

from .encodings import check_encoding
from .executors import check_executor
from .sources import check_source
from .stores import check_store

__all__ = ["check_encoding", "check_executor", "check_source", "check_store"]
