"""Cold first use: each README snippet and ``genotok.warmup()`` in a fresh process with an empty
kernel cache, one at a time (wall and CPU seconds, user+sys, of the child), plus the kernels each
compiles and how long each took (numba's ``numba:compile`` events), split into LLVM's part (CPU
while llvmlite's lock is held: parsing, optimising, emitting machine code) and numba's own
(bytecode analysis, type inference, IR inlining, lowering to LLVM IR); a kernel's figures
include the callees compiled inside it.

    python benchmarks/bench_first_use.py            # every case
    python benchmarks/bench_first_use.py quickstart # one case
    python benchmarks/bench_first_use.py warmups    # warmup() with its helper and in one process
    python benchmarks/bench_first_use.py --cache DIR  # every case on that (warm) kernel cache
                                                      # instead of an empty one: a smoke run

Time on a shared box is noisy: CPU seconds are the steadier figure. Goals (issue 36): the
README's first snippet <= 5 s, ``warmup()`` <= 30 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: run in the child before the snippet: records every compile of one of genotok's kernels
_PROBE = r'''
import json, os, time
from numba.core import event as _ev
_log, _stack, _llvm = [], [], [0, 0.0, 0.0]  # LLVM lock: depth, since, CPU s held so far
class _L(_ev.Listener):
    def on_start(self, ev):
        _stack.append((time.perf_counter(), time.process_time(), _llvm[2]))
    def on_end(self, ev):
        t, c, l = _stack.pop()
        d = (ev.data or {}).get("dispatcher")
        f = getattr(d, "py_func", None)
        if not _stack and f is not None and (f.__module__ or "").startswith("genotok"):
            _log.append((f.__module__[len("genotok."):].replace("kernels.", "") + "."
                         + f.__qualname__, round(time.perf_counter() - t, 2),
                         round(time.process_time() - c, 2), round(_llvm[2] - l, 2)))
class _LLVM(_ev.Listener):  # llvmlite's lock: held while LLVM parses, optimises, emits code
    def on_start(self, ev):
        if _llvm[0] == 0:
            _llvm[1] = time.process_time()
        _llvm[0] += 1
    def on_end(self, ev):
        _llvm[0] -= 1
        if _llvm[0] == 0:
            _llvm[2] += time.process_time() - _llvm[1]
_ev.register("numba:compile", _L())
_ev.register("numba:llvm_lock", _LLVM())
import atexit
atexit.register(lambda: open(os.environ["_BENCH_LOG"], "w").write(json.dumps(_log)))
'''


def readme_snippets() -> dict[str, str]:
    """The README's Quick start block (``quickstart``) and the blocks needing only it."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    quick = blocks[0]
    return {"quickstart": quick, "import": "import genotok\n"}


def run(code: str, cache: str | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT), _BENCH_LOG=os.path.join(tmp, "log.json"),
                   GENOTOK_KERNEL_CACHE=cache or os.path.join(tmp, "cache"),
                   NUMBA_CACHE_DIR=cache or os.path.join(tmp, "cache"))
        env.pop("GENOTOK_NO_CACHE", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", _PROBE + code], env=env, cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        log = json.loads(Path(env["_BENCH_LOG"]).read_text())
    return {"wall": wall, "cpu": cpu, "compiled": log}


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", nargs="*", help="quickstart, import, warmup, warmups, ...")
    ap.add_argument("--cache", default=None,
                    help="a kernel cache for every case instead of an empty one (nothing "
                         "compiles when it is warm: the figures then mean nothing)")
    a = ap.parse_args(argv)
    argv, cache = a.case, a.cache
    cases = dict(readme_snippets())
    cases["warmup"] = "import genotok\ngenotok.warmup()\n"
    # the same in one process (no helper: the warmup before issue 44), for the same run's ratio
    cases["warmup, one process"] = ("import os\nos.environ['GENOTOK_WARMUP_SERIAL'] = '1'\n"
                                    + cases["warmup"])
    with tempfile.TemporaryDirectory() as shared_cache:
        # after warmup(), the Quick start must compile nothing (same cache dir)
        cases_after = {"quickstart after warmup":
                       ("import genotok\ngenotok.warmup()\n", cases["quickstart"])}
        wanted = [c for a in argv for c in ([k for k in cases if k.startswith("warmup")]
                                            if a == "warmups" else [a])] or [*cases, *cases_after]
        rows = []
        for name in wanted:
            if name in cases:
                r = run(cases[name], cache)
            else:
                first, then = cases_after[name]
                run(first, cache or shared_cache)
                r = run(then, cache or shared_cache)
            rows.append((name, r))
            print(f"{name:28} wall {r['wall']:6.1f} s  cpu {r['cpu']:6.1f} s  "
                  f"{len(r['compiled'])} top-level compiles, "
                  f"{sum(c for _, _, c, _ in r['compiled']):.1f} cpu s "
                  f"({sum(x for *_, x in r['compiled']):.1f} in LLVM)", flush=True)
            groups: dict[str, float] = {}
            for kernel, _, c, _ in r["compiled"]:
                g = kernel.rsplit(".", 1)[0]
                groups[g] = groups.get(g, 0) + c
            print("    by group (cpu s): " + ", ".join(
                f"{g} {c:.1f}" for g, c in sorted(groups.items(), key=lambda x: -x[1])))
            for kernel, w, c, x in sorted(r["compiled"], key=lambda x: -x[2]):
                print(f"    {c:6.2f} cpu s ({x:5.2f} LLVM, {c - x:5.2f} numba) {w:6.2f} wall s  "
                      f"{kernel}")
            if name == "warmup":
                print("    (the per-kernel list is this process's: the helper process's compiles"
                      " count in the CPU seconds only)")
            limit = {"quickstart": 5, "warmup": 30}.get(name)
            if limit:
                print(f"GOAL\t{name}, empty kernel cache\t<= {limit} s wall\t{r['wall']:.1f} s "
                      f"wall, {r['cpu']:.1f} s CPU (load {os.getloadavg()[0]:.1f})\t"
                      f"{'met' if r['wall'] <= limit else 'NOT met'}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
