"""Every kernel against its oracle, from one registry (``tests/kernel_registry.py``), and every
kernel of ``genotok.kernels`` in that registry: a new kernel without an oracle fails here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from tests.kernel_registry import COMPARISONS, all_kernels, kernel

ROOT = Path(__file__).resolve().parents[2]
COMPARED = sorted(name for name, c in COMPARISONS.items() if c.inputs is not None)


def assert_same(got, want) -> None:
    if isinstance(want, tuple) and isinstance(got, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    else:
        assert got == want


@pytest.mark.parametrize("name", COMPARED)
def test_kernel_equals_its_oracle(name):
    entry, func = COMPARISONS[name], kernel(name)

    @settings(max_examples=80, deadline=None)
    @given(entry.inputs())
    def check(args):
        assert_same(entry.run(func, args), entry.oracle(*args))

    check()


def test_every_kernel_is_in_the_registry():
    missing = sorted(set(all_kernels()) - set(COMPARISONS))
    assert not missing, (f"kernels without an entry in tests/kernel_registry.py: {missing}; "
                         "give each an oracle (and a strategy), or say which entry covers it")
    stale = sorted(set(COMPARISONS) - set(all_kernels()))
    assert not stale, f"tests/kernel_registry.py names kernels that no longer exist: {stale}"


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_every_entry_says_how_its_kernel_is_checked(name):
    entry = COMPARISONS[name]
    if entry.covered_by is not None:
        assert entry.covered_by in COMPARISONS and entry.covered_by != name
        assert COMPARISONS[entry.covered_by].covered_by is None, "cover with a checked entry"
    else:
        assert entry.oracle is not None, f"{name}: no oracle"
        assert entry.inputs is not None or entry.tested_in is not None, (
            f"{name}: an oracle but neither a strategy nor the test file that compares them")
    if entry.tested_in is not None:
        path = ROOT / entry.tested_in
        assert path.is_file(), f"{name}: {entry.tested_in} does not exist"
        func = name.split(".")[1]
        cover = entry.covered_by.split(".")[1] if entry.covered_by else func
        text = path.read_text(encoding="utf-8")
        called = [func, cover] + ([entry.via] if entry.via else [])
        assert any(c in text for c in called), f"{entry.tested_in} never calls {name}"
    if entry.sizes:
        assert entry.make is not None, f"{name}: benchmark sizes but no way to make inputs"


@pytest.mark.slow
def test_remap_rows_in_every_dtype_combination(monkeypatch):
    """The default suite draws three of ``remap_rows``' twelve dtype combinations (each
    compiles a parallel kernel); this one draws all twelve."""
    from tests import kernel_registry

    monkeypatch.setattr(kernel_registry, "REMAP_DTYPES", None)
    test_kernel_equals_its_oracle("values.remap_rows")
