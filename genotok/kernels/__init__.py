"""numba kernels: arrays in, arrays out; no I/O, no Python objects, no validation.

The callers (regions, universe, tokenizer, single cell, build, formats) validate every integer
that will index memory before a kernel sees it. Each kernel has a plain-Python or NumPy oracle in
``tests/`` (see ``docs/architecture.md``).
"""
