"""numba kernels: arrays in, arrays out; no I/O, no Python objects, no validation.

The callers (regions, universe, tokenizer, single cell, build, formats) validate every integer
that will index memory before a kernel sees it. Each kernel has a plain-Python or NumPy oracle in
``tests/`` (see ``docs/architecture.md``).

An output that can be large (one entry per stored value, per line or per fragment) is allocated
by the caller with NumPy and passed in (``out=``-style, as ``values.rank_rows`` takes ``ids``
and ``vals``): NumPy asks Linux for transparent huge pages for blocks of 4 MiB and more,
numba's runtime does not, and a fresh 62 MB array written by the kernel that allocated it took
6x the time of one passed in (page faults; ``benchmarks/RESULTS.md``, section genes).
"""
