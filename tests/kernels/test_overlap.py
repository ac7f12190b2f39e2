"""The overlap kernels against the brute-force oracles of ``naive_overlap``.

Random universes (nested, overlapping, touching and zero-length regions, exact repeats dropped
through ``keep_mask``, several chromosomes, ids above 65535) and random query sets (unsorted,
unknown chromosomes, zero-length queries, empty sets, random emission orders) under every
combination of options; thread counts and chunking must not change a single output.
"""

from __future__ import annotations

import bisect
import contextlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import RegionSet, Tokenizer, TokenizerSettings, _config
from genotok.kernels import overlap as K
from genotok.kernels import setorder
from genotok.kernels import sweep as SW
from tests import naive_overlap as naive
from tests import naive_tokenizer


def _sweep(codes, starts, ends, n_chroms, keep=None):
    """The sweep index as the universe builds it (sort, then lay out), over the rows ``keep``
    marks (all by default)."""
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    o = SW.sort_order(codes, starts, ends)
    o = np.arange(codes.size) if o is None else o
    if keep is not None:
        o = o[np.asarray(keep, bool)[o]]
    return SW.build_sweep_sorted(codes, starts, ends, o, n_chroms)


# ------------------------------------------------------------------ strategies

region = st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(0, 20))  # code, start, len


@st.composite
def universes(draw):
    """(codes, starts, ends, n_chroms, keep_mask): repeats of an earlier region are not kept."""
    n_chroms = draw(st.integers(1, 3))
    rows = draw(st.lists(region, min_size=1, max_size=30))
    if draw(st.booleans()):  # exact repeats
        rows += draw(st.lists(st.sampled_from(rows), max_size=5))
        rows = draw(st.permutations(rows))
    codes = np.array([c % n_chroms for c, _, _ in rows], np.int32)
    starts = np.array([s for _, s, _ in rows], np.int64)
    ends = starts + np.array([n for _, _, n in rows], np.int64)
    seen, keep = set(), []
    for r in zip(codes.tolist(), starts.tolist(), ends.tolist()):
        keep.append(r not in seen)
        seen.add(r)
    return codes, starts, ends, n_chroms, np.array(keep)


@st.composite
def queries(draw, n_chroms):
    """(codes, starts, ends, set_offsets, order): sets in a random emission order each."""
    sets = draw(st.lists(st.lists(st.tuples(st.integers(-1, n_chroms - 1), st.integers(0, 75),
                                            st.integers(0, 25)), max_size=10), max_size=6))
    flat = [q for s in sets for q in s]
    codes = np.array([c for c, _, _ in flat], np.int32)
    starts = np.array([s for _, s, _ in flat], np.int64)
    ends = starts + np.array([n for _, _, n in flat], np.int64)
    offsets = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    order = np.concatenate([np.zeros(0, np.int64)] + [
        np.array(draw(st.permutations(range(a, b))), np.int64)
        for a, b in zip(offsets[:-1], offsets[1:])])
    return codes, starts, ends, offsets, order


options = st.fixed_dictionaries({
    "min_overlap": st.sampled_from([0, 1, 4]),
    "frac_q": st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    "frac_r": st.sampled_from([0.0, 0.3, 1.0]),
    "best": st.booleans(),
    "unk_mode": st.integers(0, 2),
})

UNK = 4_000_000_000  # above int32: uint32 output must hold it


def _big_ids(sw, draw):
    """Replace the sweep's token ids by distinct ids above 65535 (order unrelated to rows)."""
    m = sw[4].size
    perm = np.array(draw(st.permutations(range(m))), np.int64)
    return (*sw[:4], (70_000 + 3 * perm).astype(np.int32))


def _assert_equal(got, want):
    for name, g, w in zip(("ids", "qidx", "overlap", "offsets"), got, want):
        assert g.dtype == w.dtype, name
        assert g.tolist() == w.tolist(), name


def _run(q, sw, o, details=True):
    return K.overlap(*q, *sw, o["min_overlap"], o["frac_q"], o["frac_r"], o["best"],
                     o["unk_mode"], UNK, details)


def _small_chunks(n, parts):
    """Replacement for ``_chunks``: many tiny chunks so chunk edges are crossed everywhere."""
    return np.unique(np.linspace(0, n, min(n, 7) + 1).astype(np.int64))


# ------------------------------------------------------------------ overlap

@settings(max_examples=200, deadline=None)
@given(universes(), st.data(), options, st.booleans())
def test_overlap_matches_oracle(u, data, opts, big_ids):
    codes, starts, ends, n_chroms, keep = u
    sw = _sweep(codes, starts, ends, n_chroms, keep)
    if big_ids:
        sw = _big_ids(sw, data.draw)
    q = data.draw(queries(n_chroms))
    want = naive.overlap(*q, *sw, opts["min_overlap"], opts["frac_q"], opts["frac_r"],
                         opts["best"], opts["unk_mode"], UNK)
    got = _run(q, sw, opts)
    _assert_equal(got, want)
    ids, qidx, bp, offs = _run(q, sw, opts, details=False)
    assert qidx is None and bp is None
    assert ids.tolist() == want[0].tolist() and offs.tolist() == want[3].tolist()


@settings(max_examples=100, deadline=None)
@given(universes(), st.data(), options, st.booleans())
def test_identity_order_and_int64_ids(u, data, opts, tiny):
    """``order=None`` (queries as given) equals the explicit identity, with the sweep taking
    its own sorted order when the queries are unsorted; ``ids_dtype=np.int64`` writes the same
    ids; chunk edges anywhere."""
    codes, starts, ends, n_chroms, keep = u
    sw = _sweep(codes, starts, ends, n_chroms, keep)
    qc, qs, qe, offs, _ = data.draw(queries(n_chroms))
    ident = np.arange(qc.size, dtype=np.int64)
    want = naive.overlap(qc, qs, qe, offs, ident, *sw, opts["min_overlap"], opts["frac_q"],
                         opts["frac_r"], opts["best"], opts["unk_mode"], UNK)
    with _tiny_chunks() if tiny else contextlib.nullcontext():
        _assert_equal(_run((qc, qs, qe, offs, None), sw, opts), want)
        ids, _, _, got_offs = K.overlap(qc, qs, qe, offs, None, *sw, opts["min_overlap"],
                                        opts["frac_q"], opts["frac_r"], opts["best"],
                                        opts["unk_mode"], UNK, False, np.int64)
    assert ids.dtype == np.int64 and ids.tolist() == want[0].tolist()
    assert got_offs.tolist() == want[3].tolist()


@settings(max_examples=100, deadline=None)
@given(universes(), st.data(), options)
def test_a_wrong_sweep_order_claim_costs_speed_not_results(u, data, opts):
    """``sweep_order=True`` skips checking that the order visits each chromosome's queries
    with starts ascending: on unsorted queries the outputs are still the oracle's."""
    codes, starts, ends, n_chroms, keep = u
    sw = _sweep(codes, starts, ends, n_chroms, keep)
    q = data.draw(queries(n_chroms))
    want = naive.overlap(*q, *sw, opts["min_overlap"], opts["frac_q"], opts["frac_r"],
                         opts["best"], opts["unk_mode"], UNK)
    for order in (q[4], None):
        qq = (*q[:4], order)
        if order is None:
            want = naive.overlap(*q[:4], np.arange(q[0].size, dtype=np.int64), *sw,
                                 opts["min_overlap"], opts["frac_q"], opts["frac_r"],
                                 opts["best"], opts["unk_mode"], UNK)
        got = K.overlap(*qq, *sw, opts["min_overlap"], opts["frac_q"], opts["frac_r"],
                        opts["best"], opts["unk_mode"], UNK, True, np.uint32, True)
        _assert_equal(got, want)


def test_sorted_queries_and_ids_dtype_checked():
    """A sorted set (the sweep order is the emission order) with unknown chromosomes, touching
    and duplicate queries; a bad ``ids_dtype`` is refused."""
    sw = _sweep(np.array([0, 0, 1], np.int32), np.array([100, 200, 0]),
                np.array([200, 300, 50]), 2)
    q = (np.array([-1, 0, 0, 0, 0, 1], np.int32), np.array([0, 150, 150, 200, 300, 10]),
         np.array([5, 200, 200, 250, 400, 20]), np.array([0, 6]), None)
    ids, qidx, bp, offs = K.overlap(*q, *sw, 0, 0.0, 0.0, False, 2, 9)
    assert ids.tolist() == [9, 0, 0, 1, 9, 2] and qidx.tolist() == [0, 1, 2, 3, 4, 5]
    assert bp.tolist() == [0, 50, 50, 50, 0, 10] and offs.tolist() == [0, 6]
    with pytest.raises(ValueError, match="ids_dtype"):
        K.overlap(*q, *sw, 0, 0.0, 0.0, False, 2, 9, False, np.int32)


@contextlib.contextmanager
def _tiny_chunks():
    """Make ``overlap`` run its sweep in many tiny chunks, so chunk edges fall everywhere, on
    the parallel kernels (small inputs otherwise take their serial twins, one chunk)."""
    saved = K._chunks, K.SERIAL_BELOW
    K._chunks, K.SERIAL_BELOW = _small_chunks, 0
    try:
        yield
    finally:
        K._chunks, K.SERIAL_BELOW = saved


@settings(max_examples=100, deadline=None)
@given(universes(), st.data(), options)
def test_chunks_and_threads_do_not_change_results(u, data, opts):
    codes, starts, ends, n_chroms, keep = u
    sw = _sweep(codes, starts, ends, n_chroms, keep)
    q = data.draw(queries(n_chroms))
    with _config.threads(1):
        ref = _run(q, sw, opts)
    with _tiny_chunks(), _config.threads(2):
        _assert_equal(_run(q, sw, opts), ref)


def _case(seed, n_u=4000, n_q=30_000, n_sets=9):
    """A random nested universe and a batch with one big set, small ones and an empty one."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, n_u).astype(np.int32)
    starts = rng.integers(0, 300_000, n_u)
    ends = starts + rng.integers(0, 5_000, n_u)
    keep = np.ones(n_u, bool)
    sw = _sweep(codes, starts, ends, 3, keep)
    qc = rng.integers(-1, 3, n_q).astype(np.int32)
    qs = rng.integers(0, 300_000, n_q)
    qe = qs + rng.integers(0, 2_000, n_q)
    sizes = np.r_[n_q // 2, 0, rng.multinomial(n_q - n_q // 2, np.ones(n_sets - 2) / (n_sets - 2))]
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    order = np.concatenate([a + rng.permutation(b - a) for a, b in zip(offsets[:-1], offsets[1:])])
    sorted_order = np.concatenate([a + np.lexsort((qs[a:b], qc[a:b]))
                                   for a, b in zip(offsets[:-1], offsets[1:])])
    return (qc, qs, qe, offsets, order.astype(np.int64)), (qc, qs, qe, offsets, sorted_order), sw


@pytest.mark.parametrize("opts", [
    dict(min_overlap=0, frac_q=0.0, frac_r=0.0, best=False, unk_mode=2),
    dict(min_overlap=10, frac_q=0.5, frac_r=0.0, best=True, unk_mode=1),
])
def test_large_batch_one_vs_two_threads(opts):
    shuffled, in_order, sw = _case(0)
    for q in (shuffled, in_order):  # the argsort path and the as-given path of the sweep
        with _config.threads(1):
            one = _run(q, sw, opts)
        with _config.threads(2):
            _assert_equal(_run(q, sw, opts), one)
    # both orders find the same hits per query
    a, b = _run(shuffled, sw, opts), _run(in_order, sw, opts)
    assert sorted(zip(a[1].tolist(), a[0].tolist())) == sorted(zip(b[1].tolist(), b[0].tolist()))


def test_large_batch_hit_count_matches_vectorised_anchor():
    (qc, qs, qe, offsets, order), _, sw = _case(1)
    ptr, starts, ends, _, _ = sw
    total = 0
    for c in range(3):  # per chromosome: rows with start < qe, minus rows with end <= qs
        s, e = starts[ptr[c]:ptr[c + 1]], np.sort(ends[ptr[c]:ptr[c + 1]])
        m = qc == c
        total += int((np.searchsorted(s, qe[m], "left") - np.searchsorted(e, qs[m], "right")).sum())
    # zero-length regions [x, x) with qs < x < qe are hits, counted above; zero-length queries
    # inside a region are hits too; the two-searchsorted identity holds for both
    ids, _, _, _ = _run((qc, qs, qe, offsets, order), sw,
                        dict(min_overlap=0, frac_q=0.0, frac_r=0.0, best=False, unk_mode=0))
    assert ids.size == total


@pytest.mark.parametrize("q, region, bp", [
    ((450, 450), (400, 500), 0),     # zero-length query strictly inside: a hit
    ((400, 400), (400, 500), None),  # zero-length query at the region start: no hit
    ((500, 500), (400, 500), None),  # ... and at its end
    ((300, 400), (400, 500), None),  # touching ends
    ((500, 600), (400, 500), None),
    ((399, 401), (400, 500), 1),
    ((300, 600), (450, 450), 0),     # zero-length region strictly inside the query
    ((450, 600), (450, 450), None),  # ... not when it sits on the query start
    ((300, 450), (450, 450), None),  # ... or end
])
def test_boundary_cases(q, region, bp):
    sw = _sweep(np.zeros(1, np.int32), np.array([region[0]]), np.array([region[1]]), 1)
    ids, qidx, got_bp, offs = K.overlap(np.zeros(1, np.int32), np.array([q[0]]), np.array([q[1]]),
                                        np.array([0, 1]), np.array([0]), *sw[:5],
                                        0, 0.0, 0.0, False, 2, 7)
    if bp is None:
        assert ids.tolist() == [7] and got_bp.tolist() == [0]
    else:
        assert ids.tolist() == [0] and got_bp.tolist() == [bp] and qidx.tolist() == [0]


def test_best_breaks_ties_by_lowest_id():
    # two regions with 50 bp each; the one with the lower id sorts later
    sw = _sweep(np.zeros(2, np.int32), np.array([150, 100]), np.array([250, 200]), 1)
    ids, _, bp, _ = K.overlap(np.zeros(1, np.int32), np.array([150]), np.array([200]),
                              np.array([0, 1]), np.array([0]), *sw[:5], 0, 0.0, 0.0, True, 0, 9)
    assert ids.tolist() == [0] and bp.tolist() == [50]


def test_unk_modes_place_unknowns():
    sw = _sweep(np.zeros(1, np.int32), np.array([100]), np.array([200]), 1)
    q = (np.array([0, -1, 0, 0], np.int32), np.array([150, 150, 900, 5]),
         np.array([160, 160, 950, 6]), np.array([0, 2, 2, 4]), np.array([1, 0, 3, 2]))
    res = {m: K.overlap(*q, *sw[:5], 0, 0.0, 0.0, False, m, 9) for m in (0, 1, 2)}
    assert res[0][0].tolist() == [0] and res[0][3].tolist() == [0, 1, 1, 1]
    assert res[1][0].tolist() == [0, 9, 9] and res[1][1].tolist() == [0, -1, -1]
    assert res[1][3].tolist() == [0, 1, 2, 3]
    assert res[2][0].tolist() == [9, 0, 9, 9] and res[2][1].tolist() == [1, 0, 3, 2]
    assert res[2][3].tolist() == [0, 2, 2, 4]


def test_empty_inputs():
    sw = _sweep(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64), 2)
    assert sw[0].tolist() == [0, 0, 0] and sw[4].size == 0
    e32, e64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    for offsets, unk in ((np.zeros(1, np.int64), []), (np.zeros(3, np.int64), [5, 5])):
        ids, qidx, bp, offs = K.overlap(e32, e64, e64, offsets, e64, *sw[:5],
                                        0, 0.0, 0.0, False, 1, 5)
        assert ids.tolist() == unk and qidx.tolist() == [-1] * len(unk)
        assert offs.tolist() == list(range(len(unk) + 1))
    q = (np.array([0, 1], np.int32), np.array([0, 5]), np.array([10, 5]), np.array([0, 2]),
         np.array([1, 0]))
    ids, qidx, _, _ = K.overlap(*q, *sw[:5], 0, 0.0, 0.0, False, 2, 5)
    assert ids.tolist() == [5, 5] and qidx.tolist() == [1, 0]


def test_concurrent_kernel_calls_from_threads():
    q, _, sw = _case(2, n_q=20_000)
    opts = dict(min_overlap=0, frac_q=0.0, frac_r=0.0, best=False, unk_mode=2)
    expected = _run(q, sw, opts)
    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(lambda _: _run(q, sw, opts), range(8)):
            _assert_equal(got, expected)


# ------------------------------------------------------------------ searches

@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=40), st.integers(-2, 32), st.data())
def test_gallop_and_advance_equal_bisect_from_any_start(values, x, data):
    a = np.array(sorted(values), dtype=np.int64)
    lo = data.draw(st.integers(0, a.size))
    hi = data.draw(st.integers(lo, a.size))
    guess = data.draw(st.integers(-3, a.size + 3))
    want = bisect.bisect_left(a.tolist(), x, lo, hi)
    assert K._gallop_left(a, lo, hi, x, guess) == want
    at = data.draw(st.integers(lo, hi))
    assert K._advance(a, lo, hi, x, at) == want


# ------------------------------------------------------------------ the sweep index

@settings(max_examples=300, deadline=None)
@given(universes(), st.booleans(), st.booleans())
def test_build_sweep_matches_oracle(u, random_keep, presorted):
    codes, starts, ends, n_chroms, keep = u
    if presorted:
        o = np.lexsort((ends, starts, codes))
        codes, starts, ends, keep = codes[o], starts[o], ends[o], keep[o]
    if random_keep:
        keep = np.random.default_rng(len(codes)).random(codes.size) < 0.7
    got = _sweep(codes, starts, ends, n_chroms, keep)
    want = naive.build_sweep(codes, starts, ends, n_chroms, keep)
    for name, g, w in zip(("chrom_ptr", "starts", "ends", "maxend", "ids"), got, want):
        assert g.dtype == w.dtype, name
        assert g.tolist() == w.tolist(), name


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**40), max_size=8), max_size=5), st.booleans())
def test_running_max_matches_oracle(chroms, wide):
    flat = [e if wide else e % 2**31 for c in chroms for e in c]
    ends = np.array(flat, np.int64 if wide else np.int32)  # the sweep's two coordinate types
    chrom_ptr = np.r_[0, np.cumsum([len(c) for c in chroms])].astype(np.int64)
    out = np.empty_like(ends)
    same = SW._running_max(ends, chrom_ptr, out)
    want = naive.running_max(ends.tolist(), chrom_ptr.tolist())
    assert out.tolist() == want and same == (want == ends.tolist())


def test_build_sweep_paths():
    # sorted, all kept: int32 copies; no region ends before an earlier one: maxend is ends
    codes = np.array([0, 0, 1], np.int32)
    starts, ends = np.array([1, 1, 0]), np.array([5, 9, 3])
    assert SW.sort_order(codes, starts, ends) is None
    sw = SW.build_sweep_sorted(codes, starts, ends, None, 2)
    assert sw[1].dtype == sw[2].dtype == np.int32 and sw[3] is sw[2]
    assert sw.ids.tolist() == [0, 1, 2]
    # a nested region: maxend is its own array
    sw = _sweep(codes, np.array([1, 2, 0]), np.array([9, 5, 3]), 2)
    assert sw[3] is not sw[2] and sw[2].tolist() == [9, 5, 3] and sw[3].tolist() == [9, 9, 3]
    # an end of 2^31 or more: int64 throughout
    sw = _sweep(codes, starts, np.array([5, 1 << 31, 3]), 2)
    assert sw[1].dtype == sw[2].dtype == sw[3].dtype == np.int64
    # coordinates too large for the packed key: the lexsort fallback
    big = np.array([1 << 41, 5, 1 << 41])
    sw = _sweep(codes, big, big + np.array([3, 1, 2]), 2)
    want = naive.build_sweep(codes, big, big + np.array([3, 1, 2]), 2)
    assert all(g.tolist() == w.tolist() for g, w in zip(sw, want))
    # ties on (code, start) longer than one row are ordered by end, then id
    s = np.array([7, 7, 7, 7, 2])
    e = np.array([9, 8, 9, 8, 3])
    sw = _sweep(np.zeros(5, np.int32), s, e, 1)
    assert sw[4].tolist() == [4, 1, 3, 0, 2]


# ------------------------------------------------------------------ sort_within_sets

@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 14), max_size=12), max_size=12), st.booleans(),
       st.booleans(), st.sampled_from([np.uint32, np.int64]))
def test_sort_within_sets(rows, unique, big, dtype):
    # ids 0..9 are regions (or 10 ids above 65535 when big); the rest are specials
    n_reg = 10
    rank = np.array([5, 3, 9, 0, 1, 2, 4, 6, 7, 8], dtype=np.int64)
    if big:
        rank = np.zeros(70_010, np.int64)
        rank[70_000:] = [5, 3, 9, 0, 1, 2, 4, 6, 7, 8]
        rows = [[x + 70_000 for x in r] for r in rows]  # specials become 70010..
    flat = np.array([x for r in rows for x in r], dtype=dtype)
    offs = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    for threads in (1, 2):
        with _config.threads(threads):
            ids, new = K.sort_within_sets(flat, offs, rank, unique)
        want_ids, want_offs = naive.sort_within_sets(flat, offs, rank, unique)
        assert ids.dtype == flat.dtype
        assert ids.tolist() == want_ids.tolist() and new.tolist() == want_offs.tolist()


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 9))
def test_size_groups_cover_every_set_once(sizes, parts):
    offs = np.cumsum([0] + sizes).astype(np.int64)
    g = setorder._size_groups(offs, parts)
    if not sizes:
        assert g.tolist() == [0]
        return
    assert g[0] == 0 and g[-1] == len(sizes) and np.all(np.diff(g) > 0)
    assert g.size - 1 <= parts


# ------------------------------------------------------------------ argument checks

# ------------------------------------------------------------------ through the Tokenizer

def _random_case(seed, n_u=3000, n_q=5000):
    rng = np.random.default_rng(seed)
    chroms = np.array(["chr1", "chr2", "chr3"])
    u = RegionSet.from_arrays(chroms[rng.integers(0, 3, n_u)], s := rng.integers(0, 200_000, n_u),
                              s + rng.integers(0, 5_000, n_u))  # nested and overlapping
    q = RegionSet.from_arrays(np.append(chroms, "chrZ")[rng.integers(0, 4, n_q)],
                              t := rng.integers(0, 200_000, n_q), t + rng.integers(0, 2_000, n_q))
    return u, q


def test_tokenizer_threads_do_not_change_results():
    u, q = _random_case(0)
    tok = Tokenizer(u, settings=TokenizerSettings(unknown="region"))
    one = tok.encode(q, n_threads=1)
    assert np.array_equal(one, tok.encode(q, n_threads=2))
    sets = [q.take(np.arange(k, q.codes.size, 7)) for k in range(7)]
    a = tok.encode_batch(sets, n_threads=1, ragged=True)
    assert a == tok.encode_batch(sets, n_threads=2, ragged=True)


def test_tokenizer_against_model_on_a_nested_universe():
    u, q = _random_case(1, n_u=400, n_q=300)
    ureg = list(zip([u.chrom_of(i) for i in range(len(u))], u.starts.tolist(), u.ends.tolist()))
    qreg = list(zip([q.chrom_of(i) for i in range(len(q))], q.starts.tolist(), q.ends.tolist()))
    for opts in ({}, {"overlap": "best"}, {"order": "unique"}, {"min_fraction": 0.5}):
        tok = Tokenizer(RegionSet.from_tuples(ureg), settings=TokenizerSettings(**opts))
        assert tok.encode(q).tolist() == naive_tokenizer.tokenize(ureg, qreg, **opts)


def test_warmup_runs():
    K.warmup()


def test_sort_within_sets_rejects_offsets_of_other_ids():
    with pytest.raises(ValueError, match="rise from 0 to len"):
        K.sort_within_sets(np.zeros(3, np.uint32), np.array([0, 2]), np.arange(4), False)
