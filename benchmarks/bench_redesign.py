"""One workload of the redesign's before/after comparison (issue 31), timed in this process.

Runs ONE workload against whichever genotok is importable and prints its time, so the same
script times the code before the redesign and after it, each in fresh processes::

    PYTHONPATH=/path/to/old/tree python benchmarks/bench_redesign.py anndata-genomic
    PYTHONPATH=/path/to/new/tree python benchmarks/bench_redesign.py anndata-genomic

The two trees' APIs differ (before: keyword arguments such as ``tokenize_anndata(path, tok,
order="value", rank="median")``; after: ``spec=CellSpec(...)``, ``read=...``); the small shim
below picks the call by what the package has (``hasattr(genotok, "CellSpec")``) and asks
both for the same work. For the fragment file, the old default weighed each line by its
column-5 count; the new default counts each line once, so the new call asks
``CellSpec(values=True, use_count=True)`` to do the old work.

Workloads (data from ``../shared/tools/gendata.py``; paths by option, or under ``$BENCH31_DATA``
(default /tmp/b31); never committed):

- ``encode``: ``Tokenizer.from_bed`` of a 1M-region universe + ``encode`` of a 200k-line
  narrowPeak file;
- ``pretokenize``: 20 narrowPeak files into a corpus (the tokenizer built from the universe);
- ``anndata-genomic``: ``tokenize_anndata`` of a 10k-cell ``.h5ad`` by path, genomic order;
- ``anndata-rank``: the same with Geneformer's rank-by-median value order;
- ``fragments``: ``tokenize_fragments`` of a fragment file (counts as values).

The whole process (imports, compile-cache load, tokenizer build) is what the comparison
times from outside; the line printed is the workload's own wall and CPU time, and a digest of
the result so the two trees can be checked to agree.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import genotok
from genotok import Tokenizer

NEW = hasattr(genotok, "CellSpec")
DATA = os.environ.get("BENCH31_DATA", "/tmp/b31")


# ---- the shim: one call per tree --------------------------------------------------------------

def _anndata(path, tok, rank: bool):
    if NEW:
        from genotok import CellSpec, RankByMedian

        spec = CellSpec(encoding=RankByMedian(), order="value") if rank else CellSpec()
        return genotok.tokenize_anndata(path, tok, spec)
    if rank:
        return genotok.tokenize_anndata(path, tok, rank="median", order="value")
    return genotok.tokenize_anndata(path, tok, order="genomic")


def _fragments(path, tok):
    if NEW:
        from genotok import CellSpec

        return genotok.tokenize_fragments(path, tok, CellSpec(values=True, use_count=True))
    return genotok.tokenize_fragments(path, tok, values=True)


def _pretokenize(files, tok, out):
    return genotok.pretokenize(files, tok, out, progress=False, overwrite=True)


# ---- digests so the trees can be compared -----------------------------------------------------

def _digest(*arrays) -> str:
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.shape).encode())
        h.update(a.astype(a.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()[:12]


def _ragged_digest(r) -> str:
    parts = [np.asarray(r.data, dtype=np.int64), np.asarray(r.offsets, dtype=np.int64)]
    if getattr(r, "values", None) is not None:
        parts.append(np.asarray(r.values, dtype=np.float32))
    return _digest(*parts)


# ---- workloads --------------------------------------------------------------------------------

def run(workload: str, args) -> str:
    if workload == "encode":
        tok = Tokenizer.from_bed(args.universe)
        ids = tok.encode(args.query)
        return f"{len(ids)} ids {_digest(np.asarray(ids, dtype=np.int64))}"
    tok = Tokenizer.from_bed(args.universe)
    if workload == "pretokenize":
        files = sorted(os.path.join(args.peaks, f) for f in os.listdir(args.peaks))
        out = tempfile.mkdtemp(prefix="bench31-")
        try:
            s = _pretokenize(files, tok, os.path.join(out, "corpus"))
            c = genotok.Corpus.open(os.path.join(out, "corpus"))
            n = len(c)
            toks = sum(len(c[i]) for i in range(n))
        finally:
            shutil.rmtree(out, ignore_errors=True)
        return f"{len(files)} files {n} records {toks} tokens ({type(s).__name__})"
    if workload in ("anndata-genomic", "anndata-rank"):
        r = _anndata(args.h5ad, tok, rank=workload == "anndata-rank")
        return f"{len(r)} cells {len(r.data)} tokens {_ragged_digest(r)}"
    if workload == "fragments":
        names, r = _fragments(args.fragments, tok)
        return f"{len(names)} cells {len(r.data)} tokens {_ragged_digest(r)}"
    raise SystemExit(f"unknown workload {workload!r}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=["encode", "pretokenize", "anndata-genomic",
                                        "anndata-rank", "fragments"])
    p.add_argument("--universe", default=os.path.join(DATA, "u1m.bed"))
    p.add_argument("--query", default=os.path.join(DATA, "q200k.narrowPeak"))
    p.add_argument("--peaks", default=os.path.join(DATA, "peaks20"))
    p.add_argument("--h5ad", default=os.path.join(DATA, "cells10k.h5ad"))
    p.add_argument("--fragments", default=os.path.join(DATA, "frags.tsv.gz"))
    args = p.parse_args(argv)
    w0, c0 = time.perf_counter(), time.process_time()
    what = run(args.workload, args)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    tree = "after" if NEW else "before"
    print(f"{args.workload} [{tree} {os.path.dirname(os.path.dirname(genotok.__file__))}] "
          f"wall {wall:.3f}s cpu {cpu:.3f}s: {what}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
