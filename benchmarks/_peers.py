"""Other overlap engines on the same arrays, for ``bench_tokenize.py --peers``.

Every peer gets the queries and the universe as int64 arrays (``c`` chromosome code in the
universe's code space, ``s`` start, ``e`` end; half-open, 0-based) and answers with the pair
arrays ``(query index, universe row)``. A peer's ``setup(q, u)`` does the untimed part (building
its index or frames, as genotok's tokenizer holds its sweep index) and returns the timed call.

Peers that need another Python (ruranges, pyranges1 need >= 3.12) run in a worker process:
``python _peers.py DIR NAME... --repeat N`` loads ``DIR/{q,u}_{c,s,e}.npy`` and ``DIR/ref.npy``
(genotok's sorted pair keys), and prints one JSON line per peer.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np


def pair_key(qi, ui, n_u: int) -> np.ndarray:
    """The pair set as sorted int64 keys ``qi * n_u + ui``: two tools agree when these do."""
    return np.sort(np.asarray(qi, np.int64) * n_u + np.asarray(ui, np.int64))


def _by_chrom(q, u):
    """``(code, query rows, universe rows)`` for each chromosome both sides have."""
    for c in np.intersect1d(q["c"], u["c"]):
        yield c, np.flatnonzero(q["c"] == c), np.flatnonzero(u["c"] == c)


def ncls(q, u):
    from ncls import NCLS  # half-open, as genotok

    parts = [(NCLS(u["s"][ur], u["e"][ur], ur), q["s"][qr], q["e"][qr], qr)
             for _, qr, ur in _by_chrom(q, u)]

    def run():
        hits = [t.all_overlaps_both(s, e, qr) for t, s, e, qr in parts]
        return np.concatenate([h[0] for h in hits]), np.concatenate([h[1] for h in hits])
    return run


def superintervals(q, u):
    from superintervals import IntervalMap  # closed [s, e]: we pass [s, e - 1] on both sides

    parts = []
    for _, qr, ur in _by_chrom(q, u):
        im = IntervalMap()
        for a, b in zip(u["s"][ur].tolist(), (u["e"][ur] - 1).tolist()):
            im.add(a, b)
        im.build()
        # its batch query takes int32 (C int) coordinates
        parts.append((im, ur, q["s"][qr].astype(np.int32), (q["e"][qr] - 1).astype(np.int32), qr))

    def run():
        qi, ui = [], []
        for im, ur, s, e, qr in parts:
            hits = im.search_idxs_batch(s, e)
            n = np.fromiter(map(len, hits), np.int64, len(hits))
            qi.append(np.repeat(qr, n))
            ui.append(ur[np.fromiter((i for h in hits for i in h), np.int64, int(n.sum()))])
        return np.concatenate(qi), np.concatenate(ui)
    return run


def bioframe(q, u):
    import bioframe as bf  # half-open
    import pandas as pd

    dq, du = (pd.DataFrame({"chrom": x["c"].astype(str), "start": x["s"], "end": x["e"]})
              for x in (q, u))

    def run():
        o = bf.overlap(dq, du, how="inner", return_input=False, return_index=True)
        return o["index"].to_numpy(), o["index_"].to_numpy()
    return run


def polars_bio(q, u):
    import polars as pl
    import polars_bio as pb  # 1-based closed by default: [s + 1, e] on both sides

    # frames without its metadata are taken as 1-based, and it says so on every call
    warnings.filterwarnings("ignore", message="Coordinate system metadata is missing")

    dq, du = (pl.DataFrame({"chrom": x["c"].astype(str), "start": x["s"] + 1, "end": x["e"],
                            "i": np.arange(x["s"].size)}) for x in (q, u))

    def run():
        o = pb.overlap(dq, du, output_type="polars.DataFrame")
        return o["i_1"].to_numpy(), o["i_2"].to_numpy()
    return run


def ruranges(q, u):
    from ruranges.numpy import overlaps  # half-open

    qc, uc = q["c"].astype(np.uint32), u["c"].astype(np.uint32)
    return lambda: overlaps(starts=q["s"], ends=q["e"], starts2=u["s"], ends2=u["e"],
                            groups=qc, groups2=uc, sort_output=False)


def pyranges1(q, u):
    import pandas as pd
    import pyranges1 as pr  # half-open

    rq, ru = (pr.PyRanges(pd.DataFrame({"Chromosome": x["c"].astype(str), "Start": x["s"],
                                        "End": x["e"], "i": np.arange(x["s"].size)}))
              for x in (q, u))

    def run():
        o = rq.join_overlaps(ru)
        return o["i"].to_numpy(), o["i_b"].to_numpy()
    return run


IN_PROCESS = {"ncls": ncls, "bioframe": bioframe, "superintervals": superintervals,
              "polars-bio": polars_bio}
WORKER = {"ruranges": ruranges, "pyranges1": pyranges1}  # need Python >= 3.12


def prepare(name, q, u, ref) -> tuple[object, str]:
    """``(timed call, "")`` when the peer installs and finds genotok's pairs ``ref``;
    ``(None, why not)`` otherwise."""
    try:
        run = {**IN_PROCESS, **WORKER}[name](q, u)
        qi, ui = run()
    except ImportError as exc:
        return None, f"not installed ({exc.name})"
    except Exception as exc:  # noqa: BLE001 - a peer's own error: reported in the table, the others still run
        return None, f"FAILED: {type(exc).__name__}: {str(exc)[:200]}"
    key = pair_key(qi, ui, u["s"].size)
    if key.size != ref.size or not np.array_equal(key, ref):
        return None, (f"MISMATCH: {key.size:,} pairs vs genotok's {ref.size:,}, "
                      f"{np.setdiff1d(key, ref).size:,} not in genotok's, "
                      f"{np.setdiff1d(ref, key).size:,} missing")
    return run, ""


def read_bed(path, code_of: dict) -> dict:
    """A BED file's first three columns as the peers' query arrays, by the fastest general
    reader here (pyarrow's multi-threaded CSV parser; gzip inflated by pyarrow too), chromosome
    names mapped to the universe's codes (``-1``: absent). What a peer's user must do before
    the peer's query call, so a peer's whole-file time is at least this plus its compute time.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    tab = csv.read_csv(
        path, read_options=csv.ReadOptions(autogenerate_column_names=True),
        parse_options=csv.ParseOptions(delimiter="\t"),
        convert_options=csv.ConvertOptions(
            include_columns=["f0", "f1", "f2"],
            column_types={"f0": pa.dictionary(pa.int32(), pa.string()), "f1": pa.int64(),
                          "f2": pa.int64()}))
    chrom = tab.column("f0").combine_chunks()
    lut = np.array([code_of.get(n, -1) for n in chrom.dictionary.to_pylist()], np.int64)
    codes = lut[chrom.indices.to_numpy(zero_copy_only=False)]
    return {"c": codes, "s": pc.cast(tab.column("f1"), pa.int64()).to_numpy(),
            "e": pc.cast(tab.column("f2"), pa.int64()).to_numpy()}


def save(dirname, q, u, ref) -> None:
    for side, x in (("q", q), ("u", u)):
        for k, a in x.items():
            np.save(f"{dirname}/{side}_{k}.npy", a)
    np.save(f"{dirname}/ref.npy", ref)


def _worker(argv) -> None:
    dirname, names, repeat = argv[0], argv[1:-2], int(argv[-1])
    q, u = ({k: np.load(f"{dirname}/{side}_{k}.npy") for k in "cse"} for side in "qu")
    ref = np.load(f"{dirname}/ref.npy")
    for name in names:
        run, note = prepare(name, q, u, ref)
        best = float("inf")
        for _ in range(repeat if run else 0):
            t0 = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t0)
        print(json.dumps({"name": name, "seconds": best if run else None, "note": note}), flush=True)


if __name__ == "__main__":
    _worker(sys.argv[1:])
