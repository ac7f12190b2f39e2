"""One registry: every numba kernel of ``genotok.kernels`` -> its oracle, its hypothesis
strategy and its benchmark sizes (numbagg's ``COMPARISONS``, STYLE.md).

Read by ``tests/kernels/test_registry.py`` (one parametrized hypothesis test over the entries
with a strategy, and a test that every kernel is here, so a new kernel without an oracle fails)
and by ``benchmarks/bench_registry.py`` (each kernel against its oracle at ``sizes``).

A kernel is a public function of a ``genotok.kernels`` module, compiled by numba or the Python
entry to its private numba functions (``warmup`` aside). Each entry is one of:

- **compared here**: ``oracle`` (plain Python/NumPy, same arguments), ``inputs`` (a strategy
  drawing the argument tuple) and ``make`` (benchmark arguments at size ``n``); ``call`` runs
  the kernel when it writes into an output argument or returns something to reshape;
- **compared in its own file**: a kernel whose inputs are a whole scenario (a universe and
  queries, a CSR matrix and a vocabulary): ``oracle`` names the reference and ``tested_in`` the
  test file that compares them (the test checks the file names the kernel);
- **covered by** another entry: a helper whose only contract is the entry it serves (the
  histogram table's steps, the SWAR tricks' ``non_digits``), checked through it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import genotok.kernels
from tests import naive_build, naive_cells, naive_fragments, naive_histogram, naive_overlap
from tests import naive_genes, naive_mixing, naive_packing, naive_regions, naive_tokenizer


@dataclass(frozen=True)
class Comparison:
    """One kernel's entry (see the module docstring)."""

    oracle: Callable | None = None
    inputs: Callable[[], st.SearchStrategy] | None = None
    call: Callable | None = None  #: ``call(kernel, *args)``; None: ``kernel(*args)``
    make: Callable[[int, np.random.Generator], tuple] | None = None
    sizes: tuple[int, ...] = ()
    tested_in: str | None = None
    via: str | None = None  #: the public call ``tested_in`` makes that runs the kernel
    covered_by: str | None = None

    def run(self, kernel, args):
        return self.call(kernel, *args) if self.call is not None else kernel(*args)


def kernel(name: str):
    """The kernel ``"module.function"`` of ``genotok.kernels``."""
    module, func = name.split(".")
    return getattr(importlib.import_module(f"genotok.kernels.{module}"), func)


def all_kernels() -> list[str]:
    """Every kernel of ``genotok.kernels`` (as ``"module.function"``), found by reading the
    modules: public functions defined there, numba-compiled or not, but ``warmup``."""
    from numba.core.registry import CPUDispatcher

    out = []
    for info in pkgutil.iter_modules(genotok.kernels.__path__):
        mod = importlib.import_module(f"genotok.kernels.{info.name}")
        for name, obj in vars(mod).items():
            func = obj.py_func if isinstance(obj, CPUDispatcher) else obj
            if (name.startswith("_") or name == "warmup" or isinstance(obj, type)
                    or not callable(obj) or getattr(func, "__module__", None) != mod.__name__):
                continue
            out.append(f"{info.name}.{name}")
    return sorted(out)


# --------------------------------------------------------------------------- strategies
def _tabix_body(n: int, rng: np.random.Generator):
    """``(raw, pos, n_ref, csi, pseudo)``: a tabix or CSI index' references (bins with their
    chunks, the pseudo-bin among them, a linear index for tabix) after a few header bytes,
    then often damaged: cut short, or one 32-bit word overwritten by a count that does not
    fit (negative or huge), as a truncated or corrupt index is."""
    import struct

    csi = bool(rng.integers(0, 2))
    pseudo = 37450 if not csi else 4681
    n_ref = int(rng.integers(0, 4))
    out = bytearray(rng.integers(0, 256, int(rng.integers(0, 5)), dtype=np.uint8).tobytes())
    pos = len(out)
    for _ in range(n_ref):
        n_bin = int(rng.integers(0, max(2, n // 20)))
        out += struct.pack("<i", n_bin)
        for _ in range(n_bin):
            b = pseudo if rng.random() < 0.1 else int(rng.integers(0, 40000))
            k = int(rng.integers(0, 4))
            out += struct.pack("<I", b)
            if csi:
                out += struct.pack("<Q", int(rng.integers(0, 2**40)))
            out += struct.pack("<i", k) + rng.integers(0, 2**62, 2 * k).astype("<u8").tobytes()
        if not csi:
            k = int(rng.integers(0, 5))
            out += struct.pack("<i", k) + rng.integers(0, 2**62, k).astype("<u8").tobytes()
    damage = int(rng.integers(0, 3))
    if damage == 1 and len(out) > pos:
        out = out[:int(rng.integers(pos, len(out)))]
    elif damage == 2 and len(out) >= pos + 4:
        at = pos + 4 * int(rng.integers(0, (len(out) - pos) // 4))
        out[at:at + 4] = struct.pack("<i", int(rng.choice([-1, -(2**31), 2**31 - 1, 2**20])))
    return np.frombuffer(bytes(out), np.uint8), pos, n_ref, csi, pseudo


ONES = np.uint64(0x0101010101010101)
HIGH = np.uint64(0x8080808080808080)
# bytes around every boundary the SWAR tricks care about (0x00, 0x1f/0x20, 0x7f/0x80, 0xff...)
BYTE = st.one_of(st.integers(0, 255), st.sampled_from([0, 1, 9, 10, 13, 31, 32, 33, 47, 48, 57,
                                                       58, 127, 128, 129, 159, 160, 255]))
WORD = st.lists(BYTE, min_size=8, max_size=8).map(
    lambda b: np.frombuffer(bytes(b), np.uint64)[0])


def _word_bytes(x) -> np.ndarray:
    return np.array([int(x)], np.uint64).view(np.uint8)


def _high_bits(mask) -> int:
    """The SWAR answer of a per-byte boolean mask: the high bit of each true byte."""
    return sum(0x80 << (8 * k) for k, b in enumerate(mask) if b)


def _sized(gen: Callable[[int, np.random.Generator], tuple], max_n: int = 300):
    """A strategy of ``gen(n, rng)`` over drawn sizes and seeds: NumPy builds the arrays."""
    return st.builds(lambda n, seed: gen(n, np.random.default_rng(seed)),
                     st.integers(0, max_n), st.integers(0, 2**32 - 1))


def _sorted_regions(n: int, rng: np.random.Generator, span: int = 1000):
    """``(codes int32, starts, ends int64)`` sorted by (code, start); touching, nested, empty."""
    codes = np.sort(rng.integers(0, 4, n)).astype(np.int32)
    starts = rng.integers(0, span, n).astype(np.int64)
    order = np.lexsort((starts, codes))
    starts = starts[order]
    ends = starts + rng.integers(0, span // 10 + 1, n)
    return codes, starts, ends


def _events(n: int, rng: np.random.Generator):
    codes = np.sort(rng.integers(0, 3, n)).astype(np.int32)
    pos = rng.integers(0, 50, n).astype(np.int64)
    order = np.lexsort((pos, codes))
    return codes, pos[order], rng.integers(-2, 3, n).astype(np.int64)


def _ragged(n: int, rng: np.random.Generator, dtype=np.uint32):
    lengths = rng.integers(0, 6, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(0, 2**31, int(offsets[-1])).astype(dtype)
    idx = rng.integers(0, max(n, 1), rng.integers(0, 2 * n + 1) if n else 0).astype(np.int64)
    out_offsets = np.zeros(idx.size + 1, np.int64)
    np.cumsum(lengths[idx] if n else np.zeros(0, np.int64), out=out_offsets[1:])
    return tokens, offsets, idx, out_offsets


def _csr_rows(n: int, rng: np.random.Generator):
    lengths = rng.integers(0, 5, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.concatenate([np.sort(rng.choice(20, k, replace=bool(rng.integers(0, 2))))
                              for k in lengths] or [np.zeros(0, np.int64)]).astype(np.int32)
    return indptr, indices


def _remap_rows(n: int, rng: np.random.Generator):
    """A chunk of rows, a column map (dropped, repeated and sink columns) and cell totals:
    ``remap_rows``' arguments (a bad value or a total below the kept counts now and then)."""
    indptr, indices = _csr_rows(n, rng)
    n_cols, k = 20, int(rng.integers(1, 8))
    col_new = rng.integers(-1, k + 1, n_cols).astype(np.int64)
    combos = REMAP_DTYPES if REMAP_DTYPES is not None else [
        (c, d, o, w) for c in (np.int32, np.int64) for d in (np.float32, np.float64)
        for o in (d, np.float64) for w in (np.int32, np.int64)]
    cols_t, data_t, out_t, new_t = combos[int(rng.integers(0, len(combos)))]
    has_totals = out_t == np.float64 and bool(rng.integers(0, 2))  # totals: float64 out
    data = rng.integers(0, 6, indices.size).astype(data_t)
    if data.size and rng.random() < 0.2:
        data[rng.integers(0, data.size)] = rng.choice([-1.0, np.nan, np.inf])
    totals = (rng.integers(-2, 40, n) + rng.random(n) * rng.integers(0, 2)).astype(np.float64)
    out = np.empty(0, out_t)
    return indptr, indices.astype(cols_t), data, col_new, k, totals, has_totals, out, \
        np.empty(0, new_t)


#: ``remap_rows``' dtype combinations (columns, values, output values, output columns) drawn by
#: the default suite: each dtype of each argument once, three compiled signatures of a parallel
#: kernel (each 5-8 CPU s to compile) instead of all twelve the features room can call;
#: ``None`` draws all twelve (tests/kernels/test_registry.py's slow test)
REMAP_DTYPES: list | None = [(np.int32, np.float32, np.float32, np.int32),
                             (np.int64, np.float64, np.float64, np.int64),
                             (np.int32, np.float32, np.float64, np.int64)]


def _rank_rows(n: int, rng: np.random.Generator):
    """``rank_rows``' arguments: rows whose new columns mostly increase (a column map that
    keeps the column order, dropped columns and the sink last), now and then a repeated or
    unsorted column, a bad value, a total below the kept counts, medians 0 or NaN, ties."""
    indptr, indices = _csr_rows(n, rng)
    if rng.random() < 0.8:  # canonical rows: each column once
        indices = np.concatenate([np.sort(rng.choice(20, b - a, replace=False)) for a, b in
                                  zip(indptr[:-1], indptr[1:])] or [indices]).astype(np.int32)
    n_cols, k = 20, int(rng.integers(1, 8))
    col_new = np.sort(rng.integers(0, k + 1, n_cols)).astype(np.int64)
    if rng.random() < 0.7:  # distinct new columns but the sink's
        col_new = np.minimum(np.arange(n_cols), k)
    col_new[rng.random(n_cols) < 0.2] = -1
    if rng.random() < 0.1:
        col_new = rng.permutation(col_new)
    has_totals = bool(rng.integers(0, 2))
    data = rng.integers(0, 6, indices.size).astype(np.float32 if rng.integers(0, 2) else
                                                   np.float64)
    if data.size and rng.random() < 0.1:
        data[rng.integers(0, data.size)] = rng.choice([-1.0, np.nan, np.inf])
    sums = np.add.reduceat(np.r_[data.astype(np.float64), 0], indptr[:-1]) if n else \
        np.zeros(0)
    totals = (np.where(np.diff(indptr) > 0, sums, 0) + rng.integers(-1 if rng.random() < 0.1
                                                                    else 0, 9, n)
              + rng.random(n) * rng.integers(0, 2)).astype(np.float64)
    med = rng.choice([0.0, np.nan, 0.5, 1.0, 2.0, 3.0], k + 1)
    col_ids = np.where(rng.random(k + 1) < 0.2, -1, rng.permutation(k + 1) + 10)
    col_ids[k] = -1  # the sink has no token
    return (indptr, indices if rng.integers(0, 2) else indices.astype(np.int64), data, col_new,
            k, totals, has_totals, float(rng.choice([1.0, 10.0, 1e4])), bool(rng.integers(0, 2)),
            med, col_ids.astype(np.int64), float(rng.choice([1e-300, 0.5])),
            int(rng.integers(0, 4)))


def _packed_rows(ids, vals, cap_off, lengths, general):
    """A fused value kernel's result as the oracle gives it: ``(True,)`` where it hands the chunk
    to the general path, else ``(False, ids, values)`` per row, the slots compacted."""
    from genotok.kernels.cells import compact

    if general:
        return (True,)
    compact(ids, vals, cap_off, lengths)
    off = np.concatenate([[0], np.cumsum(lengths)])
    return (False, [ids[a:b].tolist() for a, b in zip(off[:-1], off[1:])],
            [vals[a:b].tolist() for a, b in zip(off[:-1], off[1:])])


def _rank_call(kernel, indptr, cols, data, col_new, sink, totals, has_totals, target_sum, log1p,
               med, col_ids, keep_from, max_tokens):
    """``rank_rows`` with its buffers (slots of the rows' entries, cut), compacted, as lists."""
    cap = np.diff(indptr)
    if max_tokens:
        cap = np.minimum(cap, max_tokens)
    cap_off = np.concatenate([[0], np.cumsum(cap)]).astype(np.int64)
    ids, vals = np.empty(cap_off[-1], np.int64), np.empty(cap_off[-1], np.float32)
    blocks = np.unique(np.r_[0, np.arange(0, indptr.size - 1, 3), indptr.size - 1]).astype(
        np.int64)
    lengths, general = kernel(indptr, cols, data, col_new, sink, totals, has_totals, target_sum,
                              log1p, med, col_ids, keep_from, max_tokens, blocks, cap_off, ids,
                              vals)
    return _packed_rows(ids, vals, cap_off, lengths, general)


def _bin_rows(n: int, rng: np.random.Generator):
    """``bin_rows``' arguments: ``_quantile_rows``' values in columns a vocabulary keeps or
    drops (now and then a repeated or unsorted column, a bad value), token ids or none."""
    indptr, data, _, target_sum, log1p, grid, seed, row0, both = _quantile_rows(n, rng)
    cols = np.concatenate([np.sort(rng.choice(12, b - a, replace=b - a > 12 or
                                              rng.random() < 0.1))
                           for a, b in zip(indptr[:-1], indptr[1:])] or
                          [np.zeros(0, np.int64)]).astype(np.int32)
    col_new = np.where(rng.random(12) < 0.25, -1, np.arange(12))
    if rng.random() < 0.1:
        col_new = rng.permutation(col_new)
    if data.size and rng.random() < 0.1:
        data[rng.integers(0, data.size)] = rng.choice([-1.0, np.nan, np.inf])
    col_ids = np.where(rng.random(12) < 0.2, -1, rng.permutation(12) + 3).astype(np.int64)
    return (indptr, cols, data, col_new.astype(np.int64), target_sum, log1p, grid, seed, row0,
            both, col_ids, float(rng.choice([1e-300, 2.0])))


def _bin_call(kernel, indptr, cols, data, col_new, target_sum, log1p, grid, seed, row0, both,
              col_ids, keep_from):
    """``bin_rows`` with its buffers (a slot per stored entry), compacted, as lists."""
    cap_off = np.asarray(indptr, np.int64)
    ids, vals = np.empty(cap_off[-1], np.int64), np.empty(cap_off[-1], np.float32)
    blocks = np.unique(np.r_[0, np.arange(0, indptr.size - 1, 3), indptr.size - 1]).astype(
        np.int64)
    lengths, general = kernel(indptr, cols, data, col_new, target_sum, log1p, grid, seed, row0,
                              both, col_ids, keep_from, blocks, cap_off, ids, vals)
    return _packed_rows(ids, vals, cap_off, lengths, general)


def _quantile_rows(n: int, rng: np.random.Generator):
    """Rows of small counts (ties), normalised-looking reals and zeros; a bin grid."""
    indptr, _ = _csr_rows(n, rng)
    size = int(indptr[-1])
    if rng.random() < 0.5:  # counts: rows ranked by counting (some too large for it)
        data = rng.integers(0, 4, size).astype(np.float32 if rng.integers(0, 2) else np.float64)
        if size and rng.random() < 0.3:
            data[rng.integers(0, size)] = rng.choice([300.0, 5000.0])
    else:
        data = np.where(rng.random(size) < 0.5, rng.integers(0, 4, size).astype(np.float64),
                        np.log1p(rng.random(size) * 50))
    return (indptr, data, bool(rng.integers(0, 2)), float(rng.choice([1.0, 1e4])),
            bool(rng.integers(0, 2)), np.linspace(0, 1, int(rng.integers(2, 12))),
            int(rng.integers(0, 2**40)), int(rng.integers(0, 1000)), bool(rng.integers(0, 2)))


def _counts(n: int, rng: np.random.Generator):
    k1 = np.unique(rng.integers(0, 3 * n + 1, n)).astype(np.int64)
    k2 = np.unique(rng.integers(0, 3 * n + 1, n)).astype(np.int64)
    return (k1, rng.integers(1, 9, k1.size).astype(np.int64),
            k2, rng.integers(1, 9, k2.size).astype(np.int64))


# --------------------------------------------------------------------------- oracles
def _gather_oracle(tokens, offsets, idx, out_offsets):
    parts = [tokens[offsets[i]:offsets[i + 1]] for i in idx]
    return np.concatenate(parts) if parts else tokens[:0].copy()


def _gather_call(k, tokens, offsets, idx, out_offsets):
    out = np.full(int(out_offsets[-1]), 7, tokens.dtype)
    k(tokens, offsets, idx, out_offsets, out)
    return out


def _into(n_out: int, *dtypes):
    """``call`` for a kernel writing ``n_out`` output arrays and returning the rows written."""
    def call(k, *args):
        n = max(len(args[0]), 1) * 2
        outs = [np.zeros(n, d) for d in dtypes]
        m = k(*args, *outs)
        return [tuple(int(o[i]) for o in outs) for i in range(m)]
    return call


def _runs_at_least(codes, pos, delta, k, min_width):
    out, cov, cur, start = [], 0, None, 0
    for c, p, d in zip(codes.tolist(), pos.tolist(), delta.tolist()):
        if c != cur:
            cov, cur = 0, c
        before = cov >= k
        cov += d
        if cov >= k and not before:
            start = p
        elif before and cov < k and p - start >= min_width:
            out.append((c, start, p))
    return out


def _merge_counts(k1, n1, k2, n2):
    sums: dict = {}
    for k, n in zip([*k1.tolist(), *k2.tolist()], [*n1.tolist(), *n2.tolist()]):
        sums[k] = sums.get(k, 0) + n
    keys = sorted(sums)
    return np.array(keys, np.int64), np.array([sums[k] for k in keys], np.int64)


def _divide_by_median(values, indices, med):
    return np.array([v / med[i] if med[i] > 0 else 0.0 for v, i in zip(values, indices)],
                    np.float64)


def _translate(n: int, rng: np.random.Generator):
    table = rng.permutation(max(n, 1)).astype(np.int32)
    return table, rng.integers(0, table.size, n).astype(np.int32)


def _compact(n: int, rng: np.random.Generator):
    caps = rng.integers(0, 6, n)
    cap_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(caps, out=cap_offsets[1:])
    lengths = np.array([rng.integers(0, c + 1) for c in caps], np.int64)
    total = int(cap_offsets[-1])
    vals = rng.random(total if rng.random() < 0.8 else 0).astype(np.float32)  # empty: no values
    return rng.integers(0, 100, total).astype(np.int32), vals, cap_offsets, lengths


def _compact_call(k, ids, vals, cap_offsets, lengths):
    ids, vals = ids.copy(), vals.copy()
    k(ids, vals, cap_offsets, lengths)
    m = int(lengths.sum())
    return ids[:m].tolist(), vals[:m].tolist()


def _digit_word(n: int, rng: np.random.Generator):
    text = "".join(str(d) for d in rng.integers(0, 10, 8)).encode()
    k = int(rng.integers(1, 9))
    text = text[:k] + b"\t" * (8 - k)
    return np.frombuffer(text, np.uint64)[0], k


# --------------------------------------------------------------------------- the registry
SCENARIO = "compared on whole scenarios (universes and queries, matrices, files)"

COMPARISONS: dict[str, Comparison] = {
    # ---- bits: SWAR tricks on one 8-byte word, exact per byte
    "bits.eq_bytes": Comparison(
        oracle=lambda x, p: _high_bits(_word_bytes(x) == _word_bytes(p)[0]),
        inputs=lambda: st.tuples(WORD, BYTE.map(lambda v: ONES * np.uint64(v))),
        call=lambda k, x, p: int(k(x, p))),
    "bits.below_space": Comparison(
        oracle=lambda x: _high_bits(_word_bytes(x) < 32),
        inputs=lambda: st.tuples(WORD), call=lambda k, x: int(k(x))),
    "bits.count_high": Comparison(
        oracle=lambda t: bin(int(t)).count("1"),
        inputs=lambda: st.tuples(WORD.map(lambda x: x & HIGH))),
    "bits.lowest_byte": Comparison(
        oracle=lambda t: int(np.argmax(_word_bytes(t) >= 128)),
        inputs=lambda: st.tuples(WORD.map(lambda x: x & HIGH).filter(bool))),
    "bits.bit_index": Comparison(
        oracle=lambda x: int(x).bit_length() - 1,
        inputs=lambda: st.tuples(st.integers(0, 63).map(lambda k: np.uint64(1) << np.uint64(k)))),
    "bits.digits_value": Comparison(
        oracle=lambda x, n: int(_word_bytes(x)[:n].tobytes()),
        inputs=lambda: _sized(_digit_word, 0)),
    "bits.non_digits": Comparison(covered_by="bits.digits_value",
                                  tested_in="tests/kernels/test_bits.py"),
    # not numba-compiled: views and loads the compiled tricks use
    "bits.load_word": Comparison(covered_by="parse.run"),
    "bits.prefetch": Comparison(covered_by="monotone.mono_count"),
    "bits.specials64": Comparison(covered_by="fragscan.scan_fragments",
                                  tested_in="tests/kernels/test_bits.py"),
    "bits.newlines64": Comparison(covered_by="fragscan.scan_fragments",
                                  tested_in="tests/kernels/test_bits.py"),
    "bits.word_view": Comparison(covered_by="lines.scan", tested_in="tests/kernels/test_bits.py"),
    # ---- build: universe builders' array passes
    "build.is_sorted": Comparison(
        oracle=lambda c, p: bool(np.all(np.diff(np.lexsort((p, c))) > 0)) if c.size > 1 else True,
        inputs=lambda: _sized(lambda n, r: (r.integers(0, 3, n).astype(np.int32),
                                            r.integers(0, 4, n).astype(np.int64)), 8)),
    "build.merge_sorted": Comparison(
        oracle=lambda c, s, e, g: [tuple(r) for r in naive_build.merge_sorted(c, s, e, g)],
        inputs=lambda: st.builds(lambda regions, gap: (*regions, gap),
                                 _sized(_sorted_regions), st.integers(-5, 20)),
        call=_into(3, np.int32, np.int64, np.int64),
        make=lambda n, r: (*_sorted_regions(n, r, 10 * n + 10), 0), sizes=(10_000, 1_000_000)),
    "build.compact_events": Comparison(
        oracle=naive_build.compact_events, inputs=lambda: _sized(_events),
        call=_into(3, np.int32, np.int64, np.int64),
        make=_events, sizes=(10_000, 1_000_000)),
    "build.runs_at_least": Comparison(
        oracle=_runs_at_least,
        inputs=lambda: st.builds(lambda ev, k, w: (*ev, k, w), _sized(_events),
                                 st.integers(1, 3), st.integers(0, 5)),
        call=_into(3, np.int32, np.int64, np.int64)),
    "build.bed_line_lengths": Comparison(oracle=naive_build.bed_text, via="bed_bytes",
                                         tested_in="tests/build/test_build.py"),
    "build.fill_bed": Comparison(oracle=naive_build.bed_text, via="bed_bytes",
                                 tested_in="tests/build/test_build.py"),
    # ---- gather: rows of a ragged batch
    "gather.gather": Comparison(
        oracle=_gather_oracle, inputs=lambda: _sized(_ragged, 40), call=_gather_call,
        make=_ragged, sizes=(1_000, 100_000)),
    "gather.gather_parallel": Comparison(
        oracle=_gather_oracle, inputs=lambda: _sized(_ragged, 40), call=_gather_call,
        make=_ragged, sizes=(1_000, 100_000)),
    # ---- lines: the newline floor of a parse
    "lines.count_lines": Comparison(
        oracle=lambda buf: int(np.count_nonzero(buf == 10)),
        inputs=lambda: st.tuples(st.binary(max_size=200).map(lambda b: np.frombuffer(b, np.uint8))),
        make=lambda n, r: (r.choice(np.frombuffer(b"chr1\t10\t20\n", np.uint8), n),),
        sizes=(100_000, 10_000_000)),
    "lines.scan": Comparison(
        oracle=lambda buf: (np.flatnonzero(buf == 10),
                            bool(((buf < 32) & ~np.isin(buf, [9, 10, 13])).any())),
        inputs=lambda: st.tuples(st.binary(max_size=200).map(
            lambda b: np.frombuffer(b, np.uint8).copy())),
        make=lambda n, r: (r.choice(np.frombuffer(b"chr1\t10\t20\n", np.uint8), n),),
        sizes=(100_000, 10_000_000)),
    "lines.bound": Comparison(covered_by="parse.run"),
    # ---- sort: radix argsort and the gtars query order
    "sort.stable_argsort": Comparison(
        oracle=lambda keys: np.argsort(keys, kind="stable"),
        inputs=lambda: st.builds(
            lambda n, hi, seed: (np.random.default_rng(seed).integers(0, hi, n).astype(np.int64),),
            st.one_of(st.integers(0, 300), st.integers(1 << 16, 1 << 17)),  # both paths
            st.sampled_from([1, 3, 1000, 2**35, 2**62]), st.integers(0, 2**32 - 1)),
        make=lambda n, r: (r.integers(0, 2**35, n).astype(np.int64),),
        sizes=(100_000, 1_000_000)),
    "sort.sort_regions": Comparison(oracle=naive_overlap.build_sweep,
                                    tested_in="tests/kernels/test_sort.py"),
    "sort.sorted_runs": Comparison(covered_by="sort.runs_order",
                                   tested_in="tests/kernels/test_sort.py"),
    "sort.runs_order": Comparison(oracle=naive_overlap.build_sweep,
                                  tested_in="tests/kernels/test_sort.py"),
    # ---- names: chromosome names and region strings
    "names.translate_codes": Comparison(
        oracle=lambda table, codes: table[codes], inputs=lambda: _sized(_translate),
        make=_translate, sizes=(100_000, 10_000_000)),
    "names.intern_spans": Comparison(oracle=naive_regions.parse,
                                     tested_in="tests/kernels/test_names.py"),
    "names.parse_region_names": Comparison(oracle=naive_regions.parse_region_string,
                                           tested_in="tests/kernels/test_names.py"),
    "names.parse_names": Comparison(oracle=naive_regions.parse_region_string,
                                    tested_in="tests/kernels/test_names.py"),
    # ---- parse: BED bytes
    "parse.run": Comparison(oracle=naive_regions.parse, tested_in="tests/test_regions.py"),
    "parse.parse_into": Comparison(covered_by="parse.run", tested_in="tests/test_bed.py"),
    "parse.parse_bed": Comparison(covered_by="parse.run"),
    # ---- small: the tiny-input path (genotok._small); its oracles: the path's plain-Python
    # form and tests/naive_tokenizer.py, compared with both by hypothesis
    "small.hits": Comparison(oracle=naive_tokenizer.tokenize, tested_in="tests/test_small.py",
                             via="_compiled"),
    "small.scan": Comparison(covered_by="small.hits", tested_in="tests/test_small.py",
                             via="_compiled"),
    # ---- overlap: the sweep (universe x query sets)
    # the modes' names for users (constraints, the CLI): checked by their doctests and by the
    # tokenizer's tests through the overlap kernel, which takes the parsed mode
    "modes.name": Comparison(covered_by="overlap.overlap"),
    "modes.names": Comparison(covered_by="overlap.overlap"),
    "modes.parse": Comparison(covered_by="overlap.overlap"),
    "overlap.overlap": Comparison(oracle=naive_overlap.overlap,
                                  tested_in="tests/kernels/test_overlap.py"),
    "sweep.build_sweep_sorted": Comparison(oracle=naive_overlap.build_sweep,
                                           tested_in="tests/kernels/test_overlap.py"),
    "sweep.sort_order": Comparison(oracle=naive_overlap.build_sweep,
                                   tested_in="tests/kernels/test_overlap.py"),
    "setorder.sort_within_sets": Comparison(oracle=naive_overlap.sort_within_sets,
                                            tested_in="tests/kernels/test_overlap.py"),
    # ---- cells: AnnData rows -> tokens
    "cells.compact": Comparison(
        oracle=lambda ids, vals, cap, lengths: tuple(map(list, naive_cells.compact(
            ids.tolist(), vals.tolist(), cap.tolist(), lengths.tolist()))),
        inputs=lambda: _sized(_compact, 50), call=_compact_call),
    "cells.cell_tokens": Comparison(oracle=naive_cells.cells, via="tokenize_anndata",
                                    tested_in="tests/singlecell/test_anndata.py"),
    "cells.row_capacity": Comparison(covered_by="cells.cell_tokens"),
    "cells.check_csr": Comparison(oracle=naive_cells.csr_rows,
                                  tested_in="tests/singlecell/test_anndata.py"),
    # float32 values, and float64 (a gene vocabulary's rank: Geneformer's float64 stable
    # argsort); rows from RADIX_FROM tokens on by a radix sort (_radix_by_high32)
    "cells.value_order_rows": Comparison(oracle=naive_cells.value_order,
                                         tested_in="tests/kernels/test_cells.py"),
    # one token per variable (a gene vocabulary): fill, value order and cut in one pass
    "cells.value_rows": Comparison(oracle=naive_cells.value_rows,
                                   tested_in="tests/kernels/test_cells.py"),
    "cells.rng_seed": Comparison(oracle=naive_cells.cells,
                                 tested_in="tests/singlecell/test_anndata.py"),
    "cells.rng_below": Comparison(oracle=naive_cells.cells,
                                  tested_in="tests/singlecell/test_anndata.py"),
    "monotone.mono_count": Comparison(oracle=naive_cells.cells,
                                      tested_in="tests/singlecell/test_anndata.py"),
    "monotone.mono_fill": Comparison(covered_by="monotone.mono_count"),
    "monotone.pack_lut_word": Comparison(covered_by="monotone.mono_count"),
    "monotone.keep_threshold": Comparison(covered_by="monotone.mono_count"),
    # ---- values: value encodings
    "values.rows_increasing": Comparison(
        oracle=lambda indptr, indices: all(np.all(np.diff(indices[a:b]) > 0)
                                           for a, b in zip(indptr[:-1], indptr[1:])),
        inputs=lambda: _sized(_csr_rows, 30)),
    # a gene vocabulary's column remap: dropped ids, duplicate ids summed, the n_counts sink
    "values.remap_rows": Comparison(oracle=naive_cells.remap_rows,
                                    inputs=lambda: _sized(_remap_rows, 30)),
    # Geneformer's rank in one pass: remap, n_counts sink, normalise, medians, value order
    "values.rank_rows": Comparison(oracle=naive_genes.rank_rows,
                                   inputs=lambda: _sized(_rank_rows, 30), call=_rank_call),
    # scGPT's per-cell quantile bins (the edges as numpy.quantile computes them)
    # scGPT's rows in one pass: the vocabulary's columns, normalise, bins, the draw, ids
    "values.bin_rows": Comparison(oracle=naive_genes.bin_rows,
                                  inputs=lambda: _sized(_bin_rows, 30), call=_bin_call),
    "values.quantile_bins": Comparison(oracle=naive_genes.quantile_bins,
                                       inputs=lambda: _sized(_quantile_rows, 30),
                                       call=lambda k, *a: k(*a, np.full(a[1].size, np.nan))),
    "values.merge_counts": Comparison(
        oracle=_merge_counts, inputs=lambda: _sized(_counts, 60),
        make=_counts, sizes=(100_000, 1_000_000)),
    "values.divide_by_median": Comparison(
        oracle=_divide_by_median, call=lambda k, *a: k(*a, np.full(len(a[0]), np.nan)),
        inputs=lambda: _sized(lambda n, r: (r.random(n) * 100, r.integers(0, 10, n),
                                            np.where(r.random(10) < 0.3, np.nan,
                                                     r.random(10) * 5 - 1)), 100)),
    "values.normalize_rows": Comparison(oracle=naive_histogram.chunk_keys,
                                        tested_in="tests/singlecell/test_values.py"),
    "values.row_bins": Comparison(oracle=naive_histogram.chunk_keys,
                                  tested_in="tests/singlecell/test_values.py"),
    "values.normalize_divide": Comparison(covered_by="values.divide_by_median",
                                          tested_in="tests/kernels/test_histogram.py"),
    "values.normalize_bins": Comparison(covered_by="values.row_bins",
                                        tested_in="tests/kernels/test_histogram.py"),
    "values.bounded_scale": Comparison(covered_by="values.normalize_rows"),
    "values.unbounded_row": Comparison(covered_by="values.normalize_rows"),
    "values.midpoint": Comparison(covered_by="histogram.medians",
                                  tested_in="tests/singlecell/test_values.py"),
    # ---- histogram: the medians pass (a table per block of features)
    "histogram.chunk_keys": Comparison(oracle=naive_histogram.chunk_keys,
                                       tested_in="tests/kernels/test_histogram.py"),
    "histogram.medians": Comparison(oracle=naive_histogram.medians,
                                    tested_in="tests/kernels/test_histogram.py"),
    "histogram.count_blocks": Comparison(covered_by="histogram.medians"),
    "histogram.new_table": Comparison(covered_by="histogram.medians"),
    "histogram.grow": Comparison(covered_by="histogram.medians"),
    "histogram.add_block": Comparison(covered_by="histogram.medians"),
    "histogram.pairs": Comparison(covered_by="histogram.medians"),
    # ---- fragments: 10x fragment files
    "fragments.parse_fragments": Comparison(oracle=naive_fragments.parse_line,
                                            tested_in="tests/singlecell/test_fragments.py"),
    "fragments.add_pairs": Comparison(oracle=naive_cells.fragment_matrix,
                                      tested_in="tests/singlecell/test_fragmatrix.py"),
    "fragscan.scan_fragments": Comparison(oracle=naive_fragments.scan,
                                          tested_in="tests/kernels/test_fragscan.py"),
    "fragscan.add_names": Comparison(covered_by="fragscan.scan_fragments"),
    "fragscan.name_table": Comparison(covered_by="fragscan.scan_fragments"),
    "fragscan.merge_names": Comparison(oracle=naive_fragments.scan,
                                       tested_in="tests/singlecell/test_fragscan_pieces.py"),
    "tabix.index_bins": Comparison(
        oracle=naive_fragments.index_bins, inputs=lambda: _sized(_tabix_body),
        make=lambda n, rng: _tabix_body(n, rng), sizes=(10_000, 400_000)),
    # ---- packing and mixtures (training)
    "packing.greedy_place": Comparison(oracle=naive_packing.greedy, via="pack",
                                       tested_in="tests/test_packing.py"),
    "packing.first_fit": Comparison(oracle=naive_packing.ffd, via="pack",
                                    tested_in="tests/test_packing.py"),
    "packing.fill": Comparison(covered_by="packing.first_fit"),
    "mixing.interleave": Comparison(oracle=naive_mixing.interleave,
                                    tested_in="tests/training/test_mixture.py"),
}
