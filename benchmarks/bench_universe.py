"""Universe load: genotok vs gtars on a generated 1M-region universe, cold and warm.

Cold = a fresh interpreter (import + parse + index + first tokenization compile excluded/included
as labelled); warm = best of several loads in one process. Also peak RSS of a fresh process that
loads the universe and tokenizes one 200k-line narrowPeak file. Then the load alone, cold and
warm, with 1 and 2 threads in fresh processes, and a size sweep (1/4, 1/2 and all of ``--n``).

    python benchmarks/bench_universe.py [--n 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys

from _common import (HERE, best_of, cold_warm_section, data_option, goal, in_subprocess, machine,
                     query_file, ratio, sweep_section, table, universe_file)

LOAD_OURS = """
import time, json
t0 = time.perf_counter()
import genotok
t1 = time.perf_counter()
tok = genotok.Tokenizer.from_bed({path!r})
tok.universe.sweep; tok.fingerprint
t2 = time.perf_counter()
ids = tok.encode({query!r})
t3 = time.perf_counter()
import sys
sys.path.insert(0, {here!r})
from _common import peak_rss_mib  # VmHWM (ru_maxrss keeps the parent's peak)
print(json.dumps(dict(imp=t1 - t0, load=t2 - t1, first=t3 - t2, n=int(ids.size),
                      rss=peak_rss_mib())))
"""

LOAD_GTARS = """
import time, json
t0 = time.perf_counter()
from gtars.tokenizers import Tokenizer
t1 = time.perf_counter()
tok = Tokenizer.from_bed({path!r})
t2 = time.perf_counter()
ids = tok({query!r})["input_ids"]
t3 = time.perf_counter()
import sys
sys.path.insert(0, {here!r})
from _common import peak_rss_mib  # VmHWM (ru_maxrss keeps the parent's peak)
print(json.dumps(dict(imp=t1 - t0, load=t2 - t1, first=t3 - t2, n=len(ids), rss=peak_rss_mib())))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="universe regions")
    ap.add_argument("--queries", type=int, default=200_000, help="query lines for the RSS check")
    ap.add_argument("--repeat", type=int, default=5)
    data_option(ap)
    args = ap.parse_args(argv)
    import json

    import genotok

    upath = universe_file(args.n)
    qpath = query_file(upath, args.queries)
    print(f"# Universe load ({args.n:,} regions)\n\nmachine: {machine()}\n")

    def load_ours():
        u = genotok.Universe.from_bed(upath)
        u.sweep
        u.fingerprint

    genotok.warmup()
    warm_ours = best_of(load_ours, args.repeat)
    cold_ours = json.loads(in_subprocess(LOAD_OURS.format(path=str(upath), query=str(qpath), here=str(HERE))))
    rows = [["genotok", f"{cold_ours['load']:.3f}", f"{warm_ours:.3f}", f"{cold_ours['imp']:.2f}",
             f"{cold_ours['first']:.3f}", f"{cold_ours['rss']:.0f}", "", ""]]
    try:
        from gtars.tokenizers import Tokenizer as GT

        warm_g = best_of(lambda: GT.from_bed(str(upath)), max(2, args.repeat // 2))
        cold_g = json.loads(in_subprocess(LOAD_GTARS.format(path=str(upath), query=str(qpath), here=str(HERE))))
        rows.append(["gtars", f"{cold_g['load']:.3f}", f"{warm_g:.3f}", f"{cold_g['imp']:.2f}",
                     f"{cold_g['first']:.3f}", f"{cold_g['rss']:.0f}", "", ""])
        rows[0][6] = ratio(cold_g["load"], cold_ours["load"]) + " / " + ratio(warm_g, warm_ours)
        rows[0][7] = f"{cold_ours['rss'] / cold_g['rss']:.2f}x"
        if cold_ours["n"] != cold_g["n"]:
            print(f"WARNING: id counts differ: genotok {cold_ours['n']} vs gtars {cold_g['n']}")
    except ImportError:
        print("gtars not installed: `pip install gtars` for the anchor")
    print(table(rows, ["tool", "load cold (s)", "load warm (s)", "import (s)",
                       "first file (s)", "peak RSS (MiB)", "speed-up cold / warm", "RSS vs gtars"]))
    print("\ngoal: >= 10x faster than gtars; peak RSS (1M universe + one file) <= 0.5x gtars\n")
    if len(rows) > 1:
        sw, sc = warm_g / warm_ours, cold_g["load"] / cold_ours["load"]
        rss = cold_ours["rss"] / cold_g["rss"]
        goal(f"universe load, {args.n:,} regions", ">= 10x gtars",
             f"{sw:.1f}x warm ({sc:.1f}x cold: numba cache load)", sw >= 10)
        goal("peak RSS, universe + one file", "<= 0.5x gtars", f"{rss:.2f}x", rss <= 0.5)
    else:
        goal(f"universe load, {args.n:,} regions", ">= 10x gtars", "", None)

    setup = "import genotok\npath = {!r}".format
    call = "u = genotok.Universe.from_bed(path); u.sweep; u.fingerprint"
    label = "Universe.from_bed + sweep + fingerprint"
    print(cold_warm_section(label, setup(str(upath)), call, f"{args.n:,} regions"))
    sizes = {k: setup(str(universe_file(k))) for k in (args.n // 4, args.n // 2, args.n)}
    print(sweep_section(label, sizes, call, "region"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
