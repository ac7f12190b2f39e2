"""Every kernel of ``tests/kernel_registry.py`` that has benchmark sizes, against its oracle.

The sizes and the inputs come from the registry (numbagg's ``COMPARISONS``): a kernel's
entry says how big its benchmark is, and the same entry's oracle is what its test compares it
with. Warm times (best of a few calls after one compiling call), one row per kernel and size;
the oracle is timed only at the smallest size (it is plain Python or NumPy).

    python benchmarks/bench_registry.py [--scale 0.1] [--only gather.]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import best_of  # noqa: E402

from tests.kernel_registry import COMPARISONS, kernel  # noqa: E402


def rows(scale: float = 1.0, only: str = "", repeat: int = 3) -> list[tuple]:
    out = []
    for name, entry in sorted(COMPARISONS.items()):
        if not entry.sizes or not name.startswith(only):
            continue
        func = kernel(name)
        for i, size in enumerate(entry.sizes):
            n = max(1, int(size * scale))
            args = entry.make(n, np.random.default_rng(0))
            entry.run(func, args)  # compile (or load from the cache) outside the timing
            t = best_of(lambda: entry.run(func, args), repeat)
            t_oracle = best_of(lambda: entry.oracle(*args), 1) if i == 0 else None
            out.append((name, n, t, t_oracle))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size by this")
    ap.add_argument("--only", default="", help="kernels whose name starts with this")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    print("| kernel | n | kernel (ms) | oracle (ms) |\n|---|---:|---:|---:|")
    for name, n, t, t_oracle in rows(a.scale, a.only, a.repeat):
        oracle = f"{t_oracle * 1e3:.2f}" if t_oracle is not None else ""
        print(f"| `{name}` | {n:,} | {t * 1e3:.3f} | {oracle} |")


if __name__ == "__main__":
    main()
