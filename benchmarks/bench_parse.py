"""BED parse throughput: plain and gzipped, isal vs stdlib gzip, against the parse limit.

The parse limit is a numba loop that only counts newlines over the same (decompressed) bytes.
Cold = first call in a fresh process (numba's cache load included).

    python benchmarks/bench_parse.py [--n-query 200000] [--n-universe 1000000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import zlib

import numpy as np
from _common import best_of, in_subprocess, machine, query_file, table, universe_file

import genotok
from genotok import _io, _parse

COLD = """
import json, time
t0 = time.perf_counter()
import genotok
t1 = time.perf_counter()
genotok.RegionSet.from_bed({p!r})
print(json.dumps(dict(imp=t1 - t0, first=time.perf_counter() - t1)))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-query", type=int, default=200_000)
    ap.add_argument("--n-universe", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    upath = universe_file(args.n_universe)
    files = {"narrowPeak": query_file(upath, args.n_query),
             "narrowPeak.gz": query_file(upath, args.n_query, gz=True),
             "BED3 universe": upath}
    genotok.warmup()
    print(f"# BED parsing\n\nmachine: {machine()}; gzip backend: {_io.GZIP_BACKEND}\n")
    rows = []
    for label, path in files.items():
        raw = path.read_bytes()
        buf = _io.read_bytes(path)
        mb = buf.size / 1e6
        t = best_of(lambda: genotok.RegionSet.from_bed(path), args.repeat)
        t_kernel = best_of(lambda: _parse.run(buf), args.repeat)
        t_limit = best_of(lambda: _parse.count_lines(buf), args.repeat)
        cold = json.loads(in_subprocess(COLD.format(p=str(path))))
        rows.append([label, f"{mb:.1f}", f"{cold['first']:.3f}", f"{t:.3f}", f"{mb / t:.0f}",
                     f"{mb / t_kernel:.0f}", f"{mb / t_limit:.0f}"])
        if raw[:2] == b"\x1f\x8b":
            t_std = best_of(lambda: gzip.decompress(raw), args.repeat)
            t_zlib = best_of(lambda: zlib.decompress(raw, wbits=31), args.repeat)
            t_isal = None
            try:
                from isal import igzip

                t_isal = best_of(lambda: igzip.decompress(raw), args.repeat)
            except ImportError:
                pass
            gz_rows = [["stdlib gzip.decompress", f"{t_std:.3f}", f"{mb / t_std:.0f}"],
                       ["zlib (one member)", f"{t_zlib:.3f}", f"{mb / t_zlib:.0f}"]]
            if t_isal:
                gz_rows.append(["isal igzip.decompress", f"{t_isal:.3f}", f"{mb / t_isal:.0f}  ({t_std / t_isal:.1f}x stdlib)"])
    print(table(rows, ["file", "MB (text)", "cold first parse (s)", "warm parse (s)", "MB/s end to end",
                       "MB/s kernel only", "MB/s line-count limit"]))
    print("\n## gzip decompression of the narrowPeak.gz (MB of text per second)\n")
    print(table(gz_rows, ["decompressor", "time (s)", "MB/s"]))
    print("\ngenotok uses isal when it is installed (pip install 'genotok[fast]'), else stdlib gzip.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
