"""The overlap kernels alone (arrays in, arrays out), against a NumPy anchor in the same run.

On a generated universe (1M regions; plain and ``--overlapping`` variants) and a 200k-line
narrowPeak query already loaded as arrays:

* ``build_sweep`` against ``np.lexsort`` over the four sort keys, on sorted and shuffled rows;
* the kernel: cold (first call in a fresh process: with numba's compile cache, and compiling),
  warm (best of ``--repeat``) with 1 and 2 threads, in file order and shuffled;
* the algorithm not chosen: a per-query binary search in emission order (two passes too);
* the anchor: a pure NumPy sort + searchsorted overlap (bioframe-style, all pairs as arrays);
  the number of overlaps must be equal, the ratio is anchor time / kernel time;
* a batch of sets (1 vs 2 threads) and a size sweep 1k -> 1M queries (time per query flat);
* the kernel cold and warm with 1 and 2 threads in fresh processes (numba's pool size), with RSS.

    python benchmarks/bench_kernels.py [--n-universe 1000000] [--n-query 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd
import _common
from _common import (
    best_of,
    cold_warm_section,
    data_option,
    in_subprocess,
    machine,
    query_file,
    ratio,
    table,
    universe_file,
)
from numba import njit, prange

from genotok import _config
from genotok.kernels import overlap as K
from genotok.kernels.sweep import build_sweep_sorted, sort_order


def build_sweep(codes, starts, ends, n_chroms):
    """The universe's sweep build: sort the rows (when they are not sorted), then the arrays."""
    return build_sweep_sorted(codes, starts, ends, sort_order(codes, starts, ends), n_chroms)


LOAD = """from genotok.kernels import overlap as K
from genotok.kernels.sweep import build_sweep_sorted, sort_order
a = dict(np.load({path!r}))"""
SWEEP = ('sw = build_sweep_sorted(a["u_codes"], a["u_starts"], a["u_ends"], '
         'sort_order(a["u_codes"], a["u_starts"], a["u_ends"]), int(a["n_chroms"]))')
OVERLAP = ('ids = K.overlap(a["q_codes"], a["q_starts"], a["q_ends"], a["offsets"], a["order"], '
           '*sw, 0, 0.0, 0.0, False, 0, 0, False)[0]')
COLD = f"""
import json, time
import numpy as np
t0 = time.perf_counter()
{LOAD}
t1 = time.perf_counter()
{SWEEP}
t2 = time.perf_counter()
{OVERLAP}
t3 = time.perf_counter()
print(json.dumps(dict(imp=t1 - t0, build=t2 - t1, first=t3 - t2, n=int(ids.size))))
"""


def read_bed3(path):
    """(chrom names, starts, ends) of a BED file: a small pandas reader for this benchmark."""
    df = pd.read_csv(path, sep="\t", header=None, usecols=[0, 1, 2], comment="#",
                     dtype={0: str, 1: np.int64, 2: np.int64})
    return df[0].to_numpy(), df[1].to_numpy(), df[2].to_numpy()


def load(upath, qpath):
    uc, us, ue = read_bed3(upath)
    qc, qs, qe = read_bed3(qpath)
    u_codes, names = pd.factorize(uc)
    lut = {n: i for i, n in enumerate(names)}
    q_codes = np.fromiter((lut.get(x, -1) for x in qc), np.int32, qc.size)
    return (u_codes.astype(np.int32), us, ue, len(names)), (q_codes, qs, qe)


# ------------------------------------------------------------------ the algorithm not chosen
@njit(**_config.NJIT_PARALLEL)
def _bisect_count(q_codes, q_starts, q_ends, order, chrom_ptr, starts, ends, maxend, lo, hi, cnt):
    for p in prange(order.size):
        q = order[p]
        c = q_codes[q]
        if c < 0:
            lo[q] = hi[q] = cnt[q] = 0
            continue
        h = K._bisect_left(starts, chrom_ptr[c], chrom_ptr[c + 1], q_ends[q])
        m = K._bisect_right(maxend, chrom_ptr[c], h, q_starts[q])
        k = 0
        for j in range(m, h):
            if ends[j] > q_starts[q]:
                k += 1
        lo[q], hi[q], cnt[q] = m, h, k


@njit(**_config.NJIT_PARALLEL)
def _bisect_fill(q_starts, order, ends, ids, lo, hi, pos, out):
    for p in prange(order.size):
        q = order[p]
        at = pos[p]
        for j in range(lo[q], hi[q]):
            if ends[j] > q_starts[q]:
                out[at] = ids[j]
                at += 1


def bisect_overlap(q_codes, q_starts, q_ends, order, chrom_ptr, starts, ends, maxend, ids):
    """Per-query binary searches in emission order, count then fill (one set, no options)."""
    n = order.size
    lo, hi, cnt = (np.empty(n, np.int64) for _ in range(3))
    _bisect_count(q_codes, q_starts, q_ends, order, chrom_ptr, starts, ends, maxend, lo, hi, cnt)
    pos = np.zeros(n + 1, np.int64)
    np.cumsum(cnt[order], out=pos[1:])
    out = np.empty(pos[-1], np.uint32)
    _bisect_fill(q_starts, order, ends, ids, lo, hi, pos, out)
    return out


# ------------------------------------------------------------------ the NumPy anchor
def _expand(lo, hi):
    """For rows i with ranges [lo_i, hi_i): (row index, position) of every element."""
    n = hi - lo
    rows = np.repeat(np.arange(lo.size), n)
    starts = np.repeat(lo - np.r_[0, np.cumsum(n)[:-1]], n)
    return rows, starts + np.arange(n.sum())


def numpy_overlap(u_codes, u_starts, u_ends, q_codes, q_starts, q_ends):
    """All (query, region) pairs with ``s < qe and e > qs``, bioframe-style sort + searchsorted.

    Split in two disjoint cases: the region starts inside ``[qs, qe)`` (search sorted region
    starts; keep ``e > qs``), or the query starts strictly inside the region (``s < qs < e``:
    search sorted query starts per region).
    """
    qi_all, ri_all = [], []
    uo = np.lexsort((u_starts, u_codes))
    qo = np.lexsort((q_starts, q_codes))
    u_bounds = np.searchsorted(u_codes[uo], np.arange(u_codes.max() + 2))
    q_bounds = np.searchsorted(q_codes[qo], np.arange(u_codes.max() + 2))
    for c in range(u_bounds.size - 1):
        ur = uo[u_bounds[c]:u_bounds[c + 1]]
        qr = qo[q_bounds[c]:q_bounds[c + 1]]
        if ur.size == 0 or qr.size == 0:
            continue
        us, ue, qs, qe = u_starts[ur], u_ends[ur], q_starts[qr], q_ends[qr]
        # case A: qs <= s < qe and e > qs
        rows, pos = _expand(np.searchsorted(us, qs, "left"), np.searchsorted(us, qe, "left"))
        ok = ue[pos] > qs[rows]
        qi_all.append(qr[rows[ok]])
        ri_all.append(ur[pos[ok]])
        # case B: s < qs < e
        rows, pos = _expand(np.searchsorted(qs, us, "right"), np.searchsorted(qs, ue, "left"))
        qi_all.append(qr[pos])
        ri_all.append(ur[rows])
    if not qi_all:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(qi_all), np.concatenate(ri_all)


# ------------------------------------------------------------------ the run
def ms(t):
    return f"{t * 1e3:.1f} ms"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-universe", type=int, default=1_000_000)
    ap.add_argument("--n-query", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="1000,10000,100000,1000000",
                    help="query counts of the size sweep (comma-separated)")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process timings")
    data_option(ap)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"# Overlap kernels: {args.n_universe:,}-region universe x {args.n_query:,} queries\n")
    print(f"machine: {machine()}\n")
    K.warmup()
    for overlapping in (False, True):
        upath = universe_file(args.n_universe, overlapping=overlapping)
        qpath = query_file(upath, args.n_query)
        (uc, us, ue, n_chroms), (qc, qs, qe) = load(upath, qpath)
        label = "overlapping" if overlapping else "plain"
        print(f"## universe {upath.name} ({label}), query {qpath.name}\n")

        # ---- build_sweep vs lexsort
        perm = rng.permutation(uc.size)
        rows = []
        for name, p in (("sorted file", np.arange(uc.size)), ("shuffled", perm)):
            c, s, e = uc[p], us[p], ue[p]
            ids = np.arange(c.size)
            t_ours = best_of(lambda: build_sweep(c, s, e, n_chroms), args.repeat)
            t_lex = best_of(lambda: np.lexsort((ids, e, s, c)), args.repeat)
            rows.append([name, ms(t_ours), ms(t_lex), ratio(t_lex, t_ours)])
        print(table(rows, ["build_sweep rows", "build_sweep", "np.lexsort (4 keys)", "ratio"]))
        print()

        sw = build_sweep(uc, us, ue, n_chroms)
        n = qc.size
        offsets = np.array([0, n], np.int64)
        orders = {"file order": np.arange(n, dtype=np.int64),
                  "shuffled": rng.permutation(n).astype(np.int64)}

        def run(order, details=False):
            return K.overlap(qc, qs, qe, offsets, order, *sw, 0, 0.0, 0.0, False, 0, 0, details)

        # ---- the anchor and the count check
        t_np = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            pq, pr = numpy_overlap(uc, us, ue, qc, qs, qe)
            t_np = min(t_np, time.perf_counter() - t0)
        ids, qidx, _, _ = run(orders["file order"], details=True)
        assert ids.size == pq.size, f"overlap count {ids.size} != NumPy anchor {pq.size}"
        key = lambda a, b: np.sort(a.astype(np.int64) * (1 << 32) + b)  # noqa: E731
        assert np.array_equal(key(qidx, ids), key(pq, pr)), "pairs differ from the NumPy anchor"

        # ---- cold
        rows, cold_warm_md = [], ""
        if not args.no_cold:
            path = _common.DATA / f"bench_kernels_{label}_{args.n_universe}_{args.n_query}.npz"
            np.savez(path, u_codes=uc, u_starts=us, u_ends=ue, n_chroms=n_chroms, q_codes=qc,
                     q_starts=qs, q_ends=qe, offsets=offsets, order=orders["file order"])
            for what, env in (("cold, cache loaded", {}),
                              ("cold, compiling", {"GENOTOK_NO_CACHE": "1"})):
                r = json.loads(in_subprocess(COLD.format(path=str(path)), env).strip())
                assert r["n"] == pq.size
                rows.append([what, "-", ms(r["first"]), f"(build_sweep {ms(r['build'])})", ""])
            setup = f"import numpy as np\n{LOAD.format(path=str(path))}\n{SWEEP}"
            cold_warm_md = cold_warm_section(f"overlap, {label} universe, file order", setup,
                                             OVERLAP, f"{n:,} queries", repeat=args.repeat)
            path.unlink()
        # ---- warm, threads, orders, the other algorithm
        for oname, order in orders.items():
            for th in (1, 2):
                with _config.threads(th):
                    t = best_of(lambda: run(order), args.repeat)
                    tb = best_of(lambda: bisect_overlap(qc, qs, qe, order, *sw), args.repeat)
                    assert bisect_overlap(qc, qs, qe, order, *sw).size == pq.size
                rows.append([f"warm, {oname}", th, ms(t), f"{n / t / 1e6:.1f} M queries/s",
                             f"{tb / t:.2f}x"])
                if oname == "file order" and th == 1:
                    t_ref = t
        print(table(rows, ["kernel run", "threads", "time", "throughput",
                           "per-query bisect / sweep"]))
        print(f"\nNumPy sort+searchsorted anchor: {ms(t_np)} for {pq.size:,} overlaps; "
              f"kernel (warm, file order, 1 thread) is {ratio(t_np, t_ref)} "
              "faster; counts and pairs equal.\n")
        print(cold_warm_md)

    # ---- a batch of sets, 1 vs 2 threads (last universe)
    sizes = np.minimum(rng.integers(1_000, 8_000, 50), max(1, n // 2))  # (a tiny --n-query)
    starts_in = rng.integers(0, n - sizes)
    parts = [np.arange(a, a + k) for a, k in zip(starts_in, sizes)]
    idx = np.concatenate(parts)
    b_off = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    b_order = np.arange(idx.size, dtype=np.int64)
    bq = (qc[idx], qs[idx], qe[idx], b_off, b_order)
    rank = np.arange(uc.size, dtype=np.int64)
    rows = []
    for th in (1, 2):
        with _config.threads(th):
            t = best_of(lambda: K.overlap(*bq, *sw, 0, 0.0, 0.0, False, 1, 0, False), args.repeat)
            b_ids, _, _, b_out = K.overlap(*bq, *sw, 0, 0.0, 0.0, False, 1, 0, False)
            ts = best_of(lambda: K.sort_within_sets(b_ids, b_out, rank, True), args.repeat)
        rows.append([th, ms(t), f"{idx.size / t / 1e6:.1f} M queries/s", ms(ts)])
    print(f"## batch: 50 sets of {sizes.min():,}-{sizes.max():,} queries ({idx.size:,} in all)\n")
    print(table(rows, ["threads", "overlap", "throughput", "sort_within_sets(unique)"]))

    # ---- size sweep
    print("\n## size sweep (file order: sorted by chromosome and start; 1 thread)\n")
    rows = []
    for size in map(int, args.sizes.split(",")):
        pick = np.sort(rng.integers(0, n, size))  # the query file is sorted: stays sorted
        c, s, e = qc[pick], qs[pick], qe[pick]
        o = np.arange(size, dtype=np.int64)
        off = np.array([0, size], np.int64)
        with _config.threads(1):
            t = best_of(lambda: K.overlap(c, s, e, off, o, *sw, 0, 0.0, 0.0, False, 0, 0, False),
                        args.repeat)
        t_np = best_of(lambda: numpy_overlap(uc, us, ue, c, s, e), 2)
        rows.append([f"{size:,}", ms(t), f"{t / size * 1e9:.0f} ns", ms(t_np), ratio(t_np, t)])
    print(table(rows, ["queries", "kernel", "per query", "NumPy anchor", "ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
