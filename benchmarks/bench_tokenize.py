"""Tokenizing BED files: genotok vs gtars and bedtools, in one run.

On a generated 1M-region universe and a 200k-line narrowPeak query: time per file (cold = a
fresh process, compile-cache load included; warm = best of several calls), the ratio to gtars
and to ``bedtools intersect`` (plain and ``-sorted``), and equality of the ids; ``encode`` of
the file cold and warm with 1 and 2 threads in fresh processes (with RSS). Then 50 files
through ``encode_batch`` with 1 and 2 threads, and a size sweep (1k → 1M queries, in memory)
showing that cost grows linearly. The parse limit (a numba loop that only counts newlines over
the same bytes) shows how close the whole path gets to reading the file at all.

    python benchmarks/bench_tokenize.py [--n-universe 1000000] [--n-query 200000] [--files 50]

With ``--peers`` it times instead, compute-only on the same in-memory arrays, genotok's
``encode`` of a parsed set against other overlap engines (ncls, bioframe, superintervals,
polars-bio, and ruranges and pyranges1 from a Python >= 3.12 venv: ``--peers-python``), at 200k
and 1M queries (``--large``: also 10M), coordinate-sorted and shuffled, after checking that
each finds genotok's (query, region) pairs (benchmarks/_peers.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import _peers
import numpy as np
import _common
from _common import (
    best_of,
    best_of_each,
    cold_warm_section,
    data_option,
    gendata,
    goal,
    in_subprocess,
    machine,
    parse_floor,
    query_file,
    ratio,
    scan_limit,
    table,
    universe_file,
)

import genotok
from genotok import _io
from genotok.kernels import parse as _parse

COLD = """
import json, time
t0 = time.perf_counter()
import genotok
tok = genotok.Tokenizer.from_bed({u!r})
t1 = time.perf_counter()
ids = tok.encode({q!r})
print(json.dumps(dict(first=time.perf_counter() - t1, n=int(ids.size))))
"""


def _bedtools(u, q, sorted_inputs=False):
    args = ["bedtools", "intersect", "-a", str(q), "-b", str(u), "-wa", "-wb"]
    if sorted_inputs:
        args.append("-sorted")
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, check=True).stdout
    return time.perf_counter() - t0, out.count(b"\n")


def _floor_section(tok, qpath, buf, t_limit, t_parse, warm, warm1, repeat) -> float:
    """Print what any tokenizer of this file must spend, step by step, next to genotok's own
    steps; return the floor with every step split perfectly over two threads (seconds)."""
    rs = genotok.RegionSet.from_bed(qpath)
    codes = tok.universe.map_codes(rs)
    sw = tok.universe.sweep
    known = codes >= 0
    # one search per query: its end among the universe starts, both keyed (chromosome, position)
    ukey = (np.repeat(np.arange(sw.chrom_ptr.size - 1, dtype=np.int64), np.diff(sw.chrom_ptr))
            << 32) | sw.starts.astype(np.int64)
    qkey = (codes[known].astype(np.int64) << 32) | rs.ends[known]
    pf = parse_floor(buf, repeat)
    t = best_of_each({"read": lambda: _io.read_bytes(qpath),
                      "search": lambda: np.searchsorted(ukey, qkey),
                      "overlap": lambda: tok.encode(rs),
                      "overlap1": lambda: tok.encode(rs, n_threads=1)}, max(2, (repeat + 1) // 2))
    one = t["read"] + pf["parse"] + t["search"]
    ms = lambda x: f"{x * 1e3:.2f}"  # noqa: E731
    rows = [["read the file", ms(t["read"]), ms(t["read"])],
            ["list the newlines (vectorised / 8 bytes at a time)", ms(pf["newlines"]), ""],
            ["read two numbers a line, given the newlines", ms(pf["fields"]), ""],
            ["read two numbers a line, skipping to each newline", ms(pf["skip"]), ""],
            ["parse (the cheaper way above; genotok: from_bed less the read, 2 threads)",
             ms(pf["parse"]), ms(max(0.0, t_parse - t["read"]))],
            ["one search per query (np.searchsorted; genotok: encode of the parsed set)",
             ms(t["search"]), f"{ms(t['overlap1'])} (1 thread), {ms(t['overlap'])} (2)"],
            ["all of it, one thread", ms(one), ms(warm1)],
            ["all of it split perfectly over 2 threads", ms(one / 2), ms(warm)],
            ["the parse limit (read + count newlines, 1 thread)", ms(t_limit), ""]]
    print("## The floor under the parse-limit goal\n")
    print("What any tokenizer of this file must spend, with nothing checked (no validation, no "
          "chromosome names, no output) and one search per query, in ms:\n")
    print(table(rows, ["step", "floor", "genotok"]))
    print(f"\nfloor with both threads: {one / 2 / t_limit:.1f}x the parse limit; genotok: "
          f"{warm / t_limit:.1f}x. A goal of 2x would need the parse and the search to cost "
          "less than a vectorised newline count on each core; where the floor itself is above "
          "2x, no parser that reads every line can meet it on this machine.\n")
    return one / 2


PEERS_PYTHON = os.environ.get("GENOTOK_PEERS_PYTHON", "/work/venv-peers/bin/python")


def _worker_peers(q, u, ref, repeat, python) -> dict:
    """``{name: (seconds or None, note)}`` of the peers that need their own Python."""
    if not os.path.exists(python):
        return {n: (None, f"no Python >= 3.12 at {python} (--peers-python)") for n in _peers.WORKER}
    with tempfile.TemporaryDirectory() as d:
        _peers.save(d, q, u, ref)
        out = subprocess.run([python, _peers.__file__, d, *_peers.WORKER, "--repeat", str(repeat)],
                             capture_output=True, text=True, check=False)
    if out.returncode:
        return {n: (None, f"worker failed: {out.stderr[-300:]}") for n in _peers.WORKER}
    return {r["name"]: (r["seconds"], r["note"]) for r in map(json.loads, out.stdout.splitlines())}


def peers_section(n_universe, sizes, repeat, python) -> None:
    """genotok's compute-only call against the peers of benchmarks/_peers.py, on the same arrays."""
    upath = universe_file(n_universe)
    tok = genotok.Tokenizer.from_bed(upath)
    ur = tok.universe.regions
    code_of = {name: c for c, name in enumerate(tok.universe.chrom_names)}
    u = {"c": ur.codes.astype(np.int64), "s": ur.starts, "e": ur.ends}
    print(f"# Peers, compute only ({n_universe:,}-region universe, best of {repeat})\n")
    print(f"machine: {machine()}\n")
    print("genotok: `tok.encode(regions)` of a parsed RegionSet (query order sort included when "
          "shuffled). Peers: the query call on int64 arrays in memory, their index or frames "
          "built beforehand; each peer first must find exactly genotok's (query, region) pairs "
          "(half-open: `s < qe and e > qs`; superintervals is given [s, e - 1], polars-bio "
          "1-based [s + 1, e], both closed, which is the same set). In-process peers are timed "
          "interleaved with genotok; ruranges and pyranges1 in a Python 3.12 worker right after.\n")
    rows = []
    for n in sizes:
        for order in ("sorted", "shuffled"):
            extra = ["--shuffle"] if order == "shuffled" else []
            qpath = gendata("query", f"query_{upath.stem}_{n}_s2_{order}.bed", "--n", str(n),
                            "--seed", "2", *extra, inputs=(upath,))
            rs = genotok.RegionSet.from_bed(qpath)
            q = {"c": tok.universe.map_codes(rs).astype(np.int64), "s": rs.starts, "e": rs.ends}
            ov = tok.overlaps([rs])
            hit = ov.ids < tok.universe.n_regions
            ref = _peers.pair_key(ov.query[hit], ov.ids[hit], len(ur))
            fns, notes = {"genotok": lambda rs=rs: tok.encode(rs)}, {}
            for name in _peers.IN_PROCESS:
                run, notes[name] = _peers.prepare(name, q, u, ref)
                if run:
                    fns[name] = run
            t = {k: (v, "") for k, v in best_of_each(fns, repeat, inner=1).items()}
            t.update({k: (None, v) for k, v in notes.items() if v})
            t.update(_worker_peers(q, u, ref, repeat, python))
            # whole file: genotok's call on the path; a peer's is at least the fastest reader's
            # time (the same arrays, checked) plus its compute-only time
            read = _peers.read_bed(qpath, code_of)
            if not all(np.array_equal(read[k], q[k]) for k in "cse"):
                raise SystemExit(f"{qpath}: pyarrow's read differs from genotok's parse")
            w = best_of_each({"genotok": lambda p=qpath: tok.encode(p),
                              "read": lambda p=qpath: _peers.read_bed(p, code_of)}, repeat,
                             inner=1)
            g, gw = t["genotok"][0], w["genotok"]
            for name, (sec, note) in t.items():
                if "MISMATCH" in note:
                    print(f"**{name}, {n:,} {order}: {note}; its time is not reported**\n")
                whole = gw if name == "genotok" else (sec + w["read"] if sec else None)
                peer = sec and name != "genotok"
                rows.append([f"{n:,}", order, name, f"{ref.size:,}" if sec else note,
                             f"{sec * 1e3:.1f}" if sec else "", f"{sec / n * 1e9:.0f}" if sec else "",
                             f"{sec / g:.2f}" if peer else "",
                             f"{whole * 1e3:.1f}" if whole else "",
                             f"{whole / gw:.2f}" if peer else ""])
            rows.append([f"{n:,}", order, "(pyarrow read)", "", "", "", "",
                         f"{w['read'] * 1e3:.1f}", ""])
    print(table(rows, ["queries", "order", "tool", "same pairs", "compute ms", "ns / query",
                       "peer / genotok", "whole file ms", "peer / genotok, whole file"]))
    print("\npeer / genotok above 1: genotok is faster. Whole file: genotok's `tok.encode(path)` "
          "(parse, order, kernels); a peer's is its compute time plus the read of the same file "
          "into the same arrays by pyarrow's multi-threaded CSV reader (the pyarrow read row), a "
          "lower bound of what its user pays.\n")


def _shuffled_section(tok, gt, upath, n_query: int, repeat: int) -> None:
    """The same whole call on a file in random order (ENCODE-style narrowPeak files are sorted
    by signal): genotok against gtars, best of ``repeat`` each, interleaved."""
    qpath = query_file(upath, n_query, shuffle=True)
    ids = tok.encode(qpath)
    same = list(gt(str(qpath))["input_ids"]) == ids.tolist()
    t = best_of_each({"genotok": lambda: tok.encode(qpath),
                      "gtars": lambda: gt(str(qpath))["input_ids"]}, max(2, (repeat + 1) // 2))
    print(f"\n## The same file in random order ({n_query:,} lines, shuffled)\n")
    print(table([["genotok, 2 threads", f"{t['genotok']:.3f}", f"{ratio(t['gtars'], t['genotok'])}"
                  " vs gtars", "yes" if same else "NO"],
                 ["gtars (from_bed + __call__)", f"{t['gtars']:.3f}", "", ""]],
                ["tool", "warm (s)", "speed-up", "same ids"]))
    goal(f"a shuffled {n_query:,}-line file -> ids, warm", ">= 8x gtars",
         f"{t['gtars'] / t['genotok']:.1f}x", t["gtars"] / t["genotok"] >= 8)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-universe", type=int, default=1_000_000)
    ap.add_argument("--n-query", type=int, default=200_000)
    ap.add_argument("--files", type=int, default=50, help="files for the batch scaling test")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true",
                    help="the one-file table and the shuffled file only (run_all --scale quick)")
    ap.add_argument("--peers", action="store_true", help="time the peers instead (compute only)")
    ap.add_argument("--large", action="store_true", help="with --peers: also 10M queries")
    ap.add_argument("--peer-sizes", default="",
                    help="with --peers: these query counts instead (comma-separated)")
    ap.add_argument("--peers-python", default=PEERS_PYTHON,
                    help="a Python >= 3.12 with ruranges and pyranges1 (env GENOTOK_PEERS_PYTHON)")
    data_option(ap)
    args = ap.parse_args(argv)
    if args.peers:
        genotok.warmup()
        sizes = (200_000, 1_000_000, 10_000_000) if args.large else (200_000, 1_000_000)
        if args.peer_sizes:
            sizes = tuple(int(x) for x in args.peer_sizes.split(","))
        peers_section(args.n_universe, sizes, args.repeat, args.peers_python)
        return 0
    upath = universe_file(args.n_universe)
    qpath = query_file(upath, args.n_query)
    print(f"# Tokenize one BED file ({args.n_universe:,}-region universe, {args.n_query:,} queries)\n")
    print(f"machine: {machine()}\n")
    genotok.warmup()
    tok = genotok.Tokenizer.from_bed(upath)
    ids = tok.encode(qpath)
    cold = json.loads(in_subprocess(COLD.format(u=str(upath), q=str(qpath))))
    buf = _io.read_bytes(qpath)
    _parse.count_lines(buf)
    scan_limit(buf[:16])
    # every timing in turn, best of --repeat: ratios compare calls made seconds apart
    fns = {"warm": lambda: tok.encode(qpath), "warm1": lambda: tok.encode(qpath, n_threads=1),
           "parse": lambda: genotok.RegionSet.from_bed(qpath),
           "limit": lambda: _parse.count_lines(_io.read_bytes(qpath)),
           "scan": lambda: scan_limit(_io.read_bytes(qpath))}
    try:
        from gtars.tokenizers import Tokenizer as GT

        gt = GT.from_bed(str(upath))
        gids = list(gt(str(qpath))["input_ids"])
        fns["gtars"] = lambda: gt(str(qpath))["input_ids"]
    except ImportError:
        print("gtars not installed (pip install gtars): no gtars anchor")
    t = best_of_each(fns, max(2, (args.repeat + 1) // 2))
    warm, warm1, t_parse = t["warm"], t["warm1"], t["parse"]
    t_limit, t_scan = t["limit"], t["scan"]
    mb = buf.size / 1e6
    rows = [["genotok, 2 threads", f"{cold['first']:.3f}", f"{warm:.3f}", f"{mb / warm:.0f}", "", str(ids.size)],
            ["genotok, 1 thread", "", f"{warm1:.3f}", f"{mb / warm1:.0f}", "", ""],
            ["parse only (RegionSet.from_bed)", "", f"{t_parse:.3f}", f"{mb / t_parse:.0f}", "", ""],
            ["parse limit (read + count newlines)", "", f"{t_limit:.3f}", f"{mb / t_limit:.0f}", "", ""]]
    if "gtars" in t:
        t_g = t["gtars"]
        same = "yes" if gids == ids.tolist() else "NO"
        rows.append(["gtars (from_bed + __call__)", "", f"{t_g:.3f}", f"{mb / t_g:.0f}", same, str(len(gids))])
        rows[0][4] = f"{ratio(t_g, warm)} vs gtars"
    if shutil.which("bedtools"):
        t_b, n_b = _bedtools(upath, qpath)
        sq, su = _common.DATA / "q.sorted.bed", _common.DATA / "u.sorted.bed"
        subprocess.run(f"sort -k1,1 -k2,2n {qpath} > {sq}; sort -k1,1 -k2,2n {upath} > {su}", shell=True, check=True)
        t_bs, _ = _bedtools(su, sq, True)
        n_hits = int(np.count_nonzero(tok.encode(qpath) < tok.universe.n_regions))
        rows.append(["bedtools intersect -wa -wb", "", f"{t_b:.3f}", f"{mb / t_b:.0f}",
                     "yes" if n_b == n_hits else f"NO ({n_b} pairs vs {n_hits})", str(n_b)])
        rows.append(["bedtools intersect -sorted (pre-sorted input)", "", f"{t_bs:.3f}", "", "", ""])
        rows[1][4] = f"{ratio(t_b, warm)} vs bedtools, {ratio(t_bs, warm)} vs -sorted"
    else:
        print("bedtools not installed (apt-get install bedtools): no bedtools anchor")
    print(table(rows, ["tool", "cold (s)", "warm (s)", "MB/s", "speed-up / same ids", "ids"]))
    print(f"\nwithin {warm / t_limit:.1f}x of the parse limit (read + count newlines; goal: <= 2x) "
          f"and {warm / t_scan:.1f}x of the byte-scan limit (read + one pass with the field state "
          f"a parser must carry, {mb / t_scan:.0f} MB/s); goal: >= 8x gtars warm\n")
    floor = _floor_section(tok, qpath, buf, t_limit, t_parse, warm, warm1, args.repeat)
    if len(rows) > 4 and "gtars" in rows[4][0]:
        goal("one BED file -> ids, warm", ">= 8x gtars", f"{t_g / warm:.1f}x", t_g / warm >= 8)
    else:
        goal("one BED file -> ids, warm", ">= 8x gtars", "", None)
    goal("one BED file -> ids, warm", "within 2x of the parse limit",
         f"{warm / t_limit:.1f}x the line count, {warm / t_scan:.1f}x the byte scan; the floor "
         f"of any parse + search is {floor / t_limit:.1f}x", warm / t_limit <= 2)
    if "gtars" in t:
        _shuffled_section(tok, gt, upath, args.n_query, args.repeat)
    if args.quick:
        return 0
    print(cold_warm_section("Tokenizer.encode (file)", f"import genotok\ntok = genotok.Tokenizer."
                            f"from_bed({str(upath)!r})\nq = {str(qpath)!r}", "tok.encode(q)",
                            f"{args.n_query:,} lines"))

    # many files, 1 vs 2 threads
    files = [query_file(upath, args.n_query // 4, seed=100 + k) for k in range(min(args.files, 8))]
    files = (files * (args.files // len(files) + 1))[:args.files]
    sets = [genotok.RegionSet.from_bed(f) for f in files]
    tok.encode_batch(sets[:2])
    tb = best_of_each({1: lambda: tok.encode_batch(sets, n_threads=1),
                       2: lambda: tok.encode_batch(sets, n_threads=2)}, 3)
    t1, t2 = tb[1], tb[2]
    print(f"## {len(files)} files ({args.n_query // 4:,} lines each) through encode_batch (parsed)\n")
    print(table([["1 thread", f"{t1:.3f}", ""], ["2 threads", f"{t2:.3f}", f"{t1 / t2:.2f}x"]],
                ["threads", "time (s)", "scaling"]))
    print("\ngoal: 2 threads >= 1.7x one\n")

    # size sweep, in memory
    big = genotok.RegionSet.from_bed(qpath)
    reps = int(np.ceil(1_000_000 / len(big)))
    allq = genotok.RegionSet(big.chrom_names, np.tile(big.codes, reps), np.tile(big.starts, reps),
                             np.tile(big.ends, reps), validate=False)
    out = []
    for n in (1_000, 10_000, 100_000, 1_000_000):
        sub = allq.take(np.arange(n))
        t = best_of(lambda: tok.encode(sub), 3)
        out.append([f"{n:,}", f"{t * 1e3:.2f}", f"{t / n * 1e9:.0f}"])
    print("## size sweep (in-memory queries)\n")
    print(table(out, ["queries", "time (ms)", "ns / query"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
