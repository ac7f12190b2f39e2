"""Slow, obviously-correct model of the single-cell adapter (the geniml-style per-cell loop).

For every cell: its non-zero columns → their regions → brute-force overlap against the
universe (``naive_tokenizer``) → the documented rules of :mod:`genotok.singlecell.cells` applied with
plain Python lists. Also a plain fragment-file reader.
"""

from __future__ import annotations

import gzip
import math

import numpy as np

from . import naive_tokenizer

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """SplitMix64 stream of one cell, as documented in ``genotok.kernels.cells``."""

    def __init__(self, seed: int, row: int):
        self.state = _mix((seed * GOLDEN + row) & M64)

    def below(self, n: int) -> int:
        self.state = (self.state + GOLDEN) & M64
        x = _mix(self.state)
        return int(float(x >> 11) * (1.0 / 9007199254740992.0) * n)


def vocabulary(universe, duplicates="unique"):
    """The universe's regions in id order: each distinct region once, in order of first
    appearance (``"unique"``, gtars' vocabulary), or every line (``"lines"``)."""
    if duplicates == "unique":
        return list(dict.fromkeys(tuple(r) for r in universe))
    return list(universe)


def genomic_rank(universe, duplicates="unique"):
    """id -> rank in (chromosome first appearance, start, end, id) order (first occurrences)."""
    universe = vocabulary(universe, duplicates)
    code = {}
    for c, _, _ in universe:
        code.setdefault(c, len(code))
    order = sorted(range(len(universe)),
                   key=lambda i: (code[universe[i][0]], universe[i][1], universe[i][2], i))
    rank = [0] * len(universe)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


def var_hits(universe, variables, *, overlap="all", min_overlap=0, min_fraction=0.0,
             fraction_of="query", duplicates="unique"):
    """Token ids of every variable, brute force, ascending genomic rank."""
    return [naive_tokenizer.tokenize(universe, [v], overlap=overlap, min_overlap=min_overlap,
                                     min_fraction=min_fraction, fraction_of=fraction_of,
                                     unknown="drop", order="genomic", duplicates=duplicates)
            for v in variables]


def cells(universe, variables, rows, *, unk_id, overlap="all", min_overlap=0, min_fraction=0.0,
          fraction_of="query", min_count=None, unique=True, unknown="set", max_tokens=None,
          truncate="top", order="genomic", seed=0, hits=None, duplicates="unique"):
    """Token ids and values per cell.

    ``rows`` is a list (one per cell) of ``(column, value)`` stored entries in storage order.
    ``hits`` (optional) gives the token ids of every column directly instead of ``variables``.
    Returns ``(ids, values)``: two lists of lists.
    """
    if hits is None:
        hits = var_hits(universe, variables, overlap=overlap, min_overlap=min_overlap,
                        min_fraction=min_fraction, fraction_of=fraction_of, duplicates=duplicates)
    rank = genomic_rank(universe, duplicates)
    big = float("inf")
    vkey = [rank[h[0]] if h else big for h in hits]
    out_ids, out_vals = [], []
    for g, row in enumerate(rows):
        kept = [(c, float(v), j) for j, (c, v) in enumerate(row)
                if v > 0 and (min_count is None or v >= min_count)]
        total = 0.0
        for _, v, _ in kept:
            total += v
        toks, misses = [], []
        for c, v, j in kept:
            if hits[c]:
                toks += [((rank[t], vkey[c], c, j, k), t, v) for k, t in enumerate(hits[c])]
            else:
                misses.append(v)  # storage order
        toks.sort()
        ids = [t for _, t, _ in toks]
        vals = [v for _, _, v in toks]
        if unique:
            mi, mv = [], []
            for t, v in zip(ids, vals):
                if mi and mi[-1] == t:
                    mv[-1] += v
                else:
                    mi.append(t)
                    mv.append(v)
            ids, vals = mi, mv
        if unknown == "region":
            ids += [unk_id] * len(misses)
            vals += misses
        elif unknown == "set" and not ids:
            ids, vals = [unk_id], [total]
        rng = Rng(seed, g)
        n = len(ids)
        if max_tokens is not None and n > max_tokens:
            if truncate == "top":
                sel = sorted(range(n), key=lambda i: (-vals[i], i))[:max_tokens]
            else:
                perm = list(range(n))
                for i in range(max_tokens):
                    j = i + rng.below(n - i)
                    perm[i], perm[j] = perm[j], perm[i]
                sel = perm[:max_tokens]
            sel.sort()
            ids, vals = [ids[i] for i in sel], [vals[i] for i in sel]
            n = max_tokens
        if order == "value":
            o = sorted(range(n), key=lambda i: (-vals[i], i))
            ids, vals = [ids[i] for i in o], [vals[i] for i in o]
        elif order == "shuffle" and n > 1:
            for i in range(n - 1, 0, -1):
                j = rng.below(i + 1)
                ids[i], ids[j] = ids[j], ids[i]
                vals[i], vals[j] = vals[j], vals[i]
        out_ids.append(ids)
        out_vals.append(vals)
    return out_ids, out_vals


def dense_rows(X):
    """``(column, value)`` entries of every row of a dense 2-D array (zeros left out)."""
    return [[(j, x) for j, x in enumerate(r) if x != 0] for r in X]


def csr_rows(X):
    """Stored entries of every row of a scipy CSR matrix, in storage order."""
    return [[(int(X.indices[j]), X.data[j]) for j in range(X.indptr[i], X.indptr[i + 1])]
            for i in range(X.shape[0])]


def read_fragments(path):
    """``[(chrom, start, end, barcode, count)]`` of a fragment file, plain Python."""
    opener = gzip.open if str(path).endswith(".gz") else open
    out = []
    with opener(path, "rt") as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            f = line.split("\t")
            out.append((f[0], int(f[1]), int(f[2]), f[3], int(f[4]) if len(f) > 4 else 1))
    return out


def fragment_matrix(universe, fragments, *, barcodes=None, min_fragments=1, **hit_kw):
    """Cells (first appearance or allow-list order) and their ``{column: count}`` rows.

    Column ``len(vocabulary(universe, duplicates))`` holds the count of fragments that hit
    nothing.
    """
    universe = vocabulary(universe, hit_kw.get("duplicates", "unique"))
    hit_kw["duplicates"] = "lines"  # already the vocabulary
    names, rows, nfrag = [], {}, {}
    if barcodes is not None:
        names = list(barcodes)
        rows = {b: {} for b in names}
        nfrag = {b: 0 for b in names}
    cache = {}
    for c, s, e, b, n in fragments:
        if barcodes is not None and b not in rows:
            continue
        if b not in rows:
            names.append(b)
            rows[b] = {}
            nfrag[b] = 0
        nfrag[b] += 1
        key = (c, s, e)
        if key not in cache:
            cache[key] = var_hits(universe, [key], **hit_kw)[0]
        hit = cache[key] or [len(universe)]
        for t in hit:
            rows[b][t] = rows[b].get(t, 0) + n
    kept = [b for b in names if nfrag[b] >= min_fragments]
    return kept, [sorted(rows[b].items()) for b in kept], [nfrag[b] for b in kept]


def compact(ids, vals, cap_offsets, lengths):
    """``cells.compact``: each row's first ``lengths[r]`` items of its slot, rows packed in
    order, as new lists (the kernel moves them in place); empty ``vals``: ids only."""
    out_ids, out_vals = [], []
    for r, n in enumerate(lengths):
        a = cap_offsets[r]
        out_ids += list(ids[a:a + n])
        if len(vals):
            out_vals += list(vals[a:a + n])
    return out_ids, out_vals



def value_order(offsets, ids, vals, max_tokens):
    """``cells.value_order_rows`` (float32 or float64 values): each row by value, descending, ties
    in fill order (a stable sort on the values as Python floats, so float64 values that
    float32 would make equal keep their order), cut to ``max_tokens`` (``0``: no cut).
    Returns ``(ids per row, values per row, row lengths)``, as lists."""
    out_ids, out_vals, lengths = [], [], []
    for a, z in zip(offsets[:-1], offsets[1:]):
        o = sorted(range(a, z), key=lambda i: -vals[i])
        if max_tokens:
            o = o[:max_tokens]
        out_ids.append([ids[i] for i in o])
        out_vals.append([vals[i] for i in o])
        lengths.append(len(o))
    return out_ids, out_vals, lengths


def value_rows(indptr, indices, data, col_ids, keep_from, max_tokens):
    """``cells.value_rows``: per row the kept entries (``keep_from <= v < inf``) whose column
    has a token (``col_ids[c] >= 0``), by value descending (Python floats), ties in storage
    order, cut to ``max_tokens`` (``0``: no cut). Returns ``(ids per row, values per row)``, as
    lists."""
    out_ids, out_vals = [], []
    for a, z in zip(indptr[:-1], indptr[1:]):
        kept = [j for j in range(a, z)
                if keep_from <= data[j] < math.inf and col_ids[indices[j]] >= 0]
        kept = sorted(kept, key=lambda j: -data[j])
        if max_tokens:
            kept = kept[:max_tokens]
        out_ids.append([col_ids[indices[j]] for j in kept])
        out_vals.append([data[j] for j in kept])
    return out_ids, out_vals


def remap_rows(indptr, cols, data, col_new, sink, totals, has_totals, out_proto, new_proto):
    """Plain-Python oracle of ``kernels.values.remap_rows``: each row's entries in new columns
    (dropped below 0; with totals, the sink's entries dropped and one sink entry of the
    cell's total minus its kept values appended), a repeated column summed in storage order
    (the row then sorted by column) unless the row holds a negative or non-finite value."""
    typ = np.dtype(out_proto.dtype).type
    ptr, new, vals, first_bad = [0], [], [], -1
    for r in range(len(indptr) - 1):
        row, known = [], 0.0
        for k in range(int(indptr[r]), int(indptr[r + 1])):
            c = int(col_new[int(cols[k])])
            if c < 0 or (has_totals and c == sink):
                continue
            row.append((c, typ(data[k])))
            known += float(data[k])
        columns = [c for c, _ in row]
        if len(set(columns)) < len(columns) and all(0 <= v < math.inf for _, v in row):
            merged: dict = {}
            for c, v in row:
                merged[c] = merged[c] + v if c in merged else v
            row = sorted(merged.items())
        if has_totals:
            rest = float(totals[r]) - known
            if not rest >= 0:
                first_bad = r if first_bad < 0 else first_bad
            elif rest > 0:
                row.append((sink, typ(rest)))
        new += [c for c, _ in row]
        vals += [v for _, v in row]
        ptr.append(len(new))
    return (np.array(ptr, np.int64), np.array(new, new_proto.dtype),
            np.array(vals, out_proto.dtype), first_bad)
