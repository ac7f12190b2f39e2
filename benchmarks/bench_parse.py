"""BED parsing throughput: plain and gzipped, isal vs stdlib gzip, against parse limits.

Anchors measured in the same run, over the same (decompressed) bytes:
- line-count limit: a numba loop that only counts newlines (numba vectorises it: an upper bound
  far above any parser);
- byte-scan limit: a numba loop that carries a tiny state machine (the field number) over every
  byte and sums the chromosome-name lengths: the least work of a parser that finds fields.
Cold = the first parse in a fresh process (numba's on-disk cache load included); warm = best of
``--repeat`` calls. Also: the same narrowPeak with its lines shuffled (many chromosome changes),
and 200k region strings (``chr1:100-200``) through ``parse_region_strings``. Then
``RegionSet.from_bed`` of the narrowPeak cold and warm with 1 and 2 threads in fresh processes
(with RSS), and a size sweep (1/4, 1/2 and all of ``--n-query`` lines).

With ``--large N`` (or ``--large-file PATH``, and ``PATH.gz`` beside it when present): an
N-line narrowPeak, plain and gzipped, read whole as before blocks (``_io.read_bytes`` +
``bed._read_buffer``) and a block at a time (``bed._read_file``, with and without the read-ahead
thread), each in a fresh process, the modes alternating for ``--rounds`` rounds: wall and CPU
seconds, peak RSS and the peak above the process's RSS before the call, beside the output's own
size (the parsed arrays); and the floor: the blocks read (and inflated) with no parse.

    python benchmarks/bench_parse.py [--n-query 200000] [--n-universe 1000000] [--repeat 5]
                                     [--large 10000000 | --large-file q.narrowPeak] [--rounds 4]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import zlib
from pathlib import Path

import numpy as np
import _common
from _common import (
    best_of,
    cold_warm_section,
    data_option,
    in_subprocess,
    machine,
    query_file,
    scan_limit,
    sweep_section,
    table,
    universe_file,
)

import genotok
from genotok import _io
from genotok.kernels import parse as _parse
from genotok.regions import parse_region_strings

COLD = """
import json, time
t0 = time.perf_counter()
import genotok
t1 = time.perf_counter()
genotok.RegionSet.from_bed({p!r})
print(json.dumps(dict(imp=t1 - t0, first=time.perf_counter() - t1)))
"""


def _shuffled(path):
    out = _common.DATA / (path.stem + ".shuffled" + path.suffix)
    if not out.exists():
        lines = path.read_bytes().splitlines(keepends=True)
        order = np.random.default_rng(0).permutation(len(lines))
        out.write_bytes(b"".join(lines[i] for i in order))
    return out


LARGE = """
import json, resource, time
import numpy as np
import genotok
from genotok import _io, bed
mode, path = {mode!r}, {path!r}
if mode == "blocks, no read-ahead":
    _lines = _io.line_blocks
    _io.line_blocks = lambda p, b=None, ahead=True: _lines(p, b, False)
genotok.warmup()

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(x.split()[1]) / 1024 for x in fh if x.startswith(key + ":"))

before = status("VmRSS")
cpu = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
if mode == "whole":
    out = bed._read_buffer(_io.read_bytes(path), path)
elif mode == "blocks read, no parse (floor)":
    out = [[], *[np.zeros(0)] * 3]
    for _ in _io.line_blocks(path):
        pass
else:
    out = bed._read_file(path)
wall = time.perf_counter() - t
now = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps(dict(wall=wall, cpu=now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime,
                      peak=status("VmHWM"), before=before, n=int(out[1].size),
                      out=sum(a.nbytes for a in out[1:]) / 2**20)))
"""
LARGE_MODES = ("whole", "blocks", "blocks, no read-ahead", "blocks read, no parse (floor)")


def large_section(path: Path, rounds: int) -> str:
    """Whole-buffer against blocked reads of one large file, alternating fresh processes."""
    from genotok import _io

    files = [path] + [g for g in (Path(str(path) + ".gz"),) if g.exists()]
    runs: dict = {}
    for _ in range(rounds):
        for f in files:
            for mode in LARGE_MODES:
                r = json.loads(in_subprocess(LARGE.format(mode=mode, path=str(f))))
                runs.setdefault((f.name, mode), []).append(r)

    def span(values, fmt="{:.2f}"):
        lo, hi = min(values), max(values)
        return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
            f"{fmt.format(lo)}-{fmt.format(hi)}"

    rows = []
    for (name, mode), rs in runs.items():
        rows.append([name, mode, span([r["wall"] for r in rs]), span([r["cpu"] for r in rs]),
                     span([r["peak"] for r in rs], "{:.0f}"),
                     span([r["peak"] - r["before"] for r in rs], "{:.0f}"),
                     f"{rs[0]['out']:.0f}" if rs[0]["n"] else "", f"{rs[0]['n']:,}" if rs[0]["n"] else ""])
    head = (f"## Large files: {path.name} ({path.stat().st_size / 2**20:.0f} MiB of text), "
            "whole buffer vs blocks\n\n"
            f"{rounds} rounds, each a fresh process per file and mode, modes alternating; "
            f"ranges over the rounds. Blocks of {_io.BLOCK_BYTES >> 20} MiB.\n")
    return head + "\n" + table(rows, ["file", "read", "wall s", "CPU s", "peak RSS MiB",
                                      "peak above the RSS before the call MiB",
                                      "output MiB", "regions"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-query", type=int, default=200_000, help="lines of the narrowPeak query")
    ap.add_argument("--n-universe", type=int, default=1_000_000, help="lines of the BED3 universe")
    ap.add_argument("--repeat", type=int, default=5, help="warm timings are the best of this many")
    ap.add_argument("--large", type=int, default=0,
                    help="lines of a large narrowPeak read whole vs in blocks (0: skip)")
    ap.add_argument("--large-file", type=Path, help="an existing large BED file instead")
    ap.add_argument("--rounds", type=int, default=4, help="rounds of the large-file comparison")
    ap.add_argument("--large-only", action="store_true", help="only the large-file section")
    data_option(ap)
    args = ap.parse_args(argv)
    large = args.large_file
    if large is None and args.large:
        large = query_file(universe_file(args.n_universe), args.large)
        query_file(universe_file(args.n_universe), args.large, gz=True)  # beside it, .gz
    if args.large_only:
        if large is None:
            ap.error("--large-only needs --large or --large-file")
        print(large_section(large, args.rounds))
        return 0
    upath = universe_file(args.n_universe)
    qpath = query_file(upath, args.n_query)
    files = {"narrowPeak": qpath,
             "narrowPeak, lines shuffled": _shuffled(qpath),
             "narrowPeak.gz": query_file(upath, args.n_query, gz=True),
             "BED3 universe": upath}
    genotok.warmup()
    scan_limit(np.zeros(1, np.uint8))  # compile
    print(f"# BED parsing\n\nmachine: {machine()}; gzip: isal\n")
    rows, gz_rows = [], []
    for label, path in files.items():
        raw = path.read_bytes()
        buf = _io.read_bytes(path)
        mb = buf.size / 1e6
        t = best_of(lambda: genotok.RegionSet.from_bed(path), args.repeat)
        t_kernel = best_of(lambda: _parse.run(buf), args.repeat)
        t_count = best_of(lambda: _parse.count_lines(buf), args.repeat)
        t_scan = best_of(lambda: scan_limit(buf), args.repeat)
        cold = json.loads(in_subprocess(COLD.format(p=str(path))))
        rows.append([label, f"{mb:.1f}", f"{cold['first']:.3f}", f"{t:.3f}", f"{mb / t:.0f}",
                     f"{mb / t_kernel:.0f}", f"{mb / t_scan:.0f}", f"{t_scan / t_kernel:.2f}",
                     f"{mb / t_count:.0f}"])
        if raw[:2] == b"\x1f\x8b":
            t_std = best_of(lambda: gzip.decompress(raw), args.repeat)
            t_zlib = best_of(lambda: zlib.decompress(raw, wbits=31), args.repeat)
            gz_rows = [["stdlib gzip.decompress", f"{t_std:.3f}", f"{mb / t_std:.0f}", "1.00"],
                       ["zlib.decompress (one member only)", f"{t_zlib:.3f}", f"{mb / t_zlib:.0f}",
                        f"{t_std / t_zlib:.2f}"]]
            try:
                from isal import igzip

                t_isal = best_of(lambda: igzip.decompress(raw), args.repeat)
                gz_rows.append(["isal igzip.decompress", f"{t_isal:.3f}", f"{mb / t_isal:.0f}",
                                f"{t_std / t_isal:.2f}"])
            except ImportError:
                gz_rows.append(["isal igzip.decompress", "not installed", "", ""])
            gz_rows.append(["parse of the text (warm kernel, for scale)", f"{t_kernel:.3f}",
                            f"{mb / t_kernel:.0f}", ""])
    print(table(rows, ["file", "MB (text)", "cold first parse (s)", "warm from_bed (s)",
                       "MB/s from_bed", "MB/s kernel", "MB/s byte-scan limit",
                       "kernel / scan limit", "MB/s line-count limit"]))
    if gz_rows:
        print("\n## gzip decompression of the narrowPeak.gz (MB of text per second)\n")
        print(table(gz_rows, ["decompressor", "time (s)", "MB/s", "speed-up vs stdlib"]))
        print("\ngenotok decompresses with isal (a required dependency).")

    # region strings, as AnnData var_names
    rs = genotok.RegionSet.from_bed(qpath)
    strings = rs.to_strings()
    parse_region_strings(strings[:10])
    t_str = best_of(lambda: parse_region_strings(strings), args.repeat)
    t_loop = best_of(lambda: [s.rpartition(":") for s in strings], args.repeat)
    print("\n## region strings\n")
    print(table([[f"{len(strings):,} 'chr:start-end'", f"{t_str:.3f}", f"{t_loop:.3f}",
                  f"{t_str / t_loop:.2f}"]],
                ["input", "parse_region_strings (s)", "anchor: a bare str.rpartition loop (s)",
                 "ratio"]))
    print()

    setup = "import genotok\npath = {!r}".format
    call = "genotok.RegionSet.from_bed(path)"
    label = "RegionSet.from_bed (narrowPeak)"
    print(cold_warm_section(label, setup(str(qpath)), call, f"{args.n_query:,} lines"))
    sizes = {k: setup(str(query_file(upath, k))) for k in (args.n_query // 4, args.n_query // 2,
                                                          args.n_query)}
    print(sweep_section(label, sizes, call, "line"))
    if large is not None:
        print()
        print(large_section(large, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
