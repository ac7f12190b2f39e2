"""The gather kernels (genotok.kernels.gather): compiled by warmup. Both are compared with
their NumPy oracle in ``tests/kernel_registry.py`` (``tests/kernels/test_registry.py``)."""

from __future__ import annotations

from genotok.kernels import gather as _gather


def test_warmup_compiles_both_kernels():
    _gather.warmup()
    assert _gather.gather.signatures and _gather.gather_parallel.signatures
