"""The fragment block kernel (``genotok.kernels.fragscan``) against its plain-Python oracle
(``tests/naive_fragments.py``): random fragment text fed in blocks that split lines and in
calls of a few lines, name tables kept across them, every search mode; and the thresholds
of a tokenizer against its own ``region_hits``."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import Tokenizer, TokenizerSettings, Universe
from genotok.kernels import fragscan as FS
from genotok.kernels.modes import Counting, Overlap, names, parse

from ..naive_fragments import scan as oracle_scan


def _tok(regions, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repeated universe regions warn
        u = Universe([f"{c}:{s}-{e}" for c, s, e in regions], duplicates="lines")  # a column a line
        return Tokenizer(u, settings=TokenizerSettings(**kw))


def _table(names):
    enc = [x.encode() for x in names]
    bounds = np.zeros(len(enc) + 1, np.int64)
    np.cumsum([len(x) for x in enc], out=bounds[1:])
    return FS.add_names(np.frombuffer(b"".join(enc) or b"\0", np.uint8), bounds,
                        *FS.name_table())


def run_kernel(text: bytes, tok, cuts, max_lines, *, mode, left=0, right=0, use_count=False,
               miss=False, allow=None):
    """Feed ``text`` as ``_count`` does: blocks cut after the last newline before each cut,
    the rest carried over, each block in calls of ``max_lines`` lines. Returns the oracle's
    ``(pairs, nfrag, barcodes, error_line)``."""
    u, s = tok.universe, tok.settings
    sw = u.sweep
    n_cols = u.n_regions + 1
    ctab = _table(list(u.chrom_names))
    btab = _table([] if allow is None else allow)
    nfrag = np.zeros(1, np.int64)
    missed = np.zeros((2, 1))
    cursors = np.tile(sw.chrom_ptr[:-1], (2, 1)).astype(np.int64)
    pairs: Counter = Counter()
    line, rest, at = 1, b"", 0
    blocks = []
    for cut in sorted(cuts) + [len(text)]:
        chunk = rest + text[at:cut]
        at = max(at, cut)
        end = chunk.rfind(b"\n") + 1
        if end:
            blocks.append(chunk[:end])
        rest = chunk[end:]
    blocks.append(rest)
    for blk in blocks:
        buf = np.frombuffer(blk, np.uint8) if blk else np.zeros(0, np.uint8)
        pos = 0
        while pos < buf.size:
            keys, w, m, ctab, btab, nfrag, missed, pos, line, status = FS.scan_fragments(
                buf, pos, line, max_lines, np.empty(1, np.int64), np.empty(1), 0, ctab, btab,
                len(u.chrom_names),
                -1 if allow is None else len(allow), nfrag, missed, cursors, sw.chrom_ptr, sw.starts,
                sw.ends, sw.maxend, sw.ids, int(s.min_overlap), 0.0, 0.0, int(Overlap.ALL),
                int(parse(Counting, mode)), left, right, use_count, u.n_regions if miss else -1,
                n_cols)
            for k, x in zip(keys[:m].tolist(), w[:m].tolist()):
                pairs[divmod(k, n_cols)] += x
            if status != FS.FRAG_OK:
                return _with_missed(pairs, missed, n_cols), _nfrag(nfrag), _names(btab), line
    return _with_missed(pairs, missed, n_cols), _nfrag(nfrag), _names(btab), None


def _with_missed(pairs, missed, n_cols):
    for cell in np.flatnonzero(missed[0]).tolist():
        pairs[(cell, n_cols - 1)] += float(missed[1, cell])
    return pairs


def _nfrag(nfrag):
    return Counter({i: int(x) for i, x in enumerate(nfrag.tolist()) if x})


def _names(tab):
    _, off, _, arena, _, n = tab
    return [arena[off[i]:off[i + 1]].tobytes() for i in range(n)]


chrom = st.sampled_from(["chr1", "chr2", "chrX", "1"])
LONG = "ACGT" * 6
#: a line's separators ``(before the first column, between columns, after the last)``: one
#: tab, or runs of spaces (gtars' test files), which may also lead and trail the line
runs = st.sampled_from([" ", "  ", "   "])
sep = st.one_of(st.just(("", ["\t"] * 5, "")),
                st.tuples(st.sampled_from(["", " ", "  "]), st.lists(runs, min_size=5, max_size=5),
                          st.sampled_from(["", " ", "  "])))


def _line(t):
    c, s, n, bc, cnt, cr, (lead, gap, trail), sixth = t
    text = f"{lead}{c}{gap[0]}{s}{gap[1]}{s + n}{gap[2]}{bc}"
    if cnt is not None:
        text += f"{gap[3]}{cnt}" + (f"{gap[4]}." if sixth else "")
    return text + trail + cr + "\n"


line = st.one_of(
    st.tuples(chrom, st.integers(0, 70), st.integers(0, 30),
              st.sampled_from(["AAA-1", "CCC-1", "GGG-1", "TTT-1", "ACGTACGTACGTACGT-1",
                               # around the 24 bytes the name table keeps beside the hash
                               LONG[:23], LONG[:24], LONG + "-1", LONG + "-2"]),
              st.one_of(st.none(), st.integers(0, 4)), st.sampled_from(["", "\r"]), sep,
              st.booleans()).map(_line),
    st.sampled_from(["# header\n", "\n", "#\n"]))
region = st.tuples(st.sampled_from(["chr1", "chr2"]), st.integers(0, 60),
                   st.integers(1, 30)).map(lambda t: (t[0], t[1], t[1] + t[2]))
bad = st.sampled_from(["chr1\t5\n", "chr1\tx\t5\tA\n", "chr1\t9\t5\tA\n",
                       "chr1\t1\t99999999999999999999\tA\n", "chr1\t1\t5\tA\t-1\n",
                       "chr1\t1\t5\tA\x01B\n", "\t1\t5\tA\n",
                       # a tab and a space among the first five columns: refused ("mixed")
                       "chr1\t1 5\tA\n", "chr1 1 5\tA\n", "chr1\t1\t5\tA B\t1\n",
                       "chr1\t1\t5\tA\t1 \n", "chr 1\t1\t5\tA\n", "chr1 1 5 A\t1\n",
                       "chr1 1  \n", " \n", "chr1 1 5 A many\n"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regions=st.lists(region, min_size=1, max_size=10), lines=st.lists(line, max_size=30),
       dup=st.booleans(), mode=st.sampled_from(names(Counting)), shift=st.sampled_from([(0, 0), (4, -5)]),
       use_count=st.booleans(), miss=st.booleans(),
       allow=st.one_of(st.none(), st.lists(st.sampled_from(["CCC-1", "AAA-1", "NNN-1"]),
                                            unique=True)),
       cuts=st.lists(st.integers(0, 600), max_size=6), max_lines=st.sampled_from([1, 3, 1000]),
       bad_line=st.one_of(st.none(), st.tuples(st.integers(0, 30), bad)))
def test_scan_matches_the_oracle(regions, lines, dup, mode, shift, use_count, miss, allow, cuts,
                                 max_lines, bad_line):
    if dup:  # a universe line repeated (a hit counts at its first occurrence)
        regions = regions + regions[:1]
    if bad_line is not None:
        lines = lines[:bad_line[0]] + [bad_line[1]] + lines[bad_line[0]:]
    text = "".join(lines).encode()
    tok = _tok(regions)
    kw = dict(mode=mode, left=shift[0], right=shift[1], use_count=use_count, miss=miss,
              allow=allow)
    got = run_kernel(text, tok, cuts, max_lines, **kw)
    enc = [(c.encode(), s, e) for c, s, e in regions]
    want = oracle_scan(text, enc, repeats=False, **kw)  # a hit is its first line's id
    assert got[3] == want[3]  # the bad line, if any
    assert got[2] == want[2]  # the barcode table, in order
    assert got[1] == want[1]
    assert +got[0] == +want[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regions=st.lists(region, min_size=1, max_size=10),
       frags=st.lists(st.tuples(st.sampled_from(["chr1", "chr2"]), st.integers(0, 70),
                                st.integers(1, 30)), max_size=30),
       opts=st.sampled_from([dict(overlap="best"), dict(min_overlap=5),
                             dict(min_fraction=0.5, fraction_of="region"),
                             dict(min_fraction=0.6, fraction_of="query")]))
def test_thresholds_match_region_hits(regions, frags, opts):
    """Whole-fragment search under a tokenizer's thresholds and ``overlap="best"``: the same
    hits as :meth:`Tokenizer.region_hits` of the fragments."""
    tok = _tok(regions, **opts)
    text = "".join(f"{c}\t{a}\t{a + n}\tA\n" for c, a, n in frags).encode()
    u, s = tok.universe, tok.settings
    sw = u.sweep
    keys, w, m, *_ = FS.scan_fragments(
        np.frombuffer(text or b"\n", np.uint8), 0, 1, 1 << 20, np.empty(3, np.int64),
        np.empty(3), 0, _table(list(u.chrom_names)),
        _table([]), len(u.chrom_names), -1, np.zeros(1, np.int64), np.zeros((2, 1)),
        np.tile(sw.chrom_ptr[:-1], (2, 1)).astype(np.int64), sw.chrom_ptr, sw.starts,
        sw.ends, sw.maxend, sw.ids, int(s.min_overlap),
        float(s.min_fraction) if s.fraction_of == "query" else 0.0,
        float(s.min_fraction) if s.fraction_of == "region" else 0.0,
        int(parse(Overlap, s.overlap)), int(Counting.FRAGMENT), 0, 0, False, -1, u.n_regions + 1)
    got = Counter(keys[:m].tolist())
    hits = tok.region_hits([(c, a, a + n) for c, a, n in frags]) if frags else None
    want = Counter(hits.data.tolist()) if frags else Counter()
    assert got == want


def test_the_counting_modes_are_one_enum():
    """``mode=`` of the fragment readers, their constraint and the kernel's constants all come
    from kernels.modes.Counting (was: a name tuple, a literal Options list and 0/1/2 written
    apart), and the kernel takes the overlap mode as the Overlap enum, not a bool."""
    from genotok.singlecell import fragmatrix
    from genotok.singlecell.reading import FragmentOptions

    assert fragmatrix.MODES == names(Counting) == ("insertion", "paired-insertion", "fragment")
    assert (FS.MODE_INSERTION, FS.MODE_PAIRED, FS.MODE_FRAGMENT) == tuple(Counting)
    assert FS.OVERLAP_BEST == Overlap.BEST
    assert FragmentOptions.CONSTRAINTS["mode"][0].values == names(Counting)
