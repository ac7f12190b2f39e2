"""The parallel fragment scan (``fragmatrix._scan_file``): each block cut at line ends into
pieces scanned on threads with tables of their own, merged in the pieces' order. Whatever
the cut (lines split across blocks, empty pieces, a barcode first seen in a later piece, a
bad line or a bad name in any piece), the result equals the serial scan's and the oracle's
(``tests/naive_fragments.py``): the same cells in the same order, the same counts, the same
bad line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok.errors import BedParseError
from genotok.kernels import fragscan as FS
from genotok.singlecell import fragmatrix as FM

from ..kernels.test_fragscan import _tok, bad, line, region
from ..naive_fragments import scan as oracle_scan


def _run(path, tok, n_threads, block, **kw):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the "1" vs "chr1" naming hint
            names, X, nfrag = FM._count(path, tok, shift=(0, 0), use_count=True,
                                        min_fragments=0, block_bytes=block,
                                        n_threads=n_threads, **kw)
    except BedParseError as exc:
        return exc.line
    return names, X.toarray(), nfrag.tolist()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(regions=st.lists(region, min_size=1, max_size=6), lines=st.lists(line, max_size=40),
       mode=st.sampled_from(FM.MODES), block=st.sampled_from([1, 7, 40, 1 << 20]),
       n_threads=st.integers(2, 4),
       allow=st.one_of(st.none(), st.just(["CCC-1", "AAA-1", "NNN-1"])),
       bad_line=st.one_of(st.none(), st.tuples(st.integers(0, 40), bad)),
       non_utf8=st.one_of(st.none(), st.integers(0, 40)))
def test_pieces_scan_as_one_thread(tmp_path, monkeypatch, regions, lines, mode, block,
                                   n_threads, allow, bad_line, non_utf8):
    if bad_line is not None:
        lines = lines[:bad_line[0]] + [bad_line[1]] + lines[bad_line[0]:]
    text = "".join(lines).encode()
    if non_utf8 is not None:  # a barcode that is no UTF-8, in whichever piece
        cut = text.split(b"\n")
        at = min(non_utf8, len(cut) - 1)
        cut.insert(at, b"chr1\t1\t5\tA\xff-1\t1")
        text = b"\n".join(cut)
    path = tmp_path / "f.tsv"
    path.write_bytes(text)
    tok = _tok(regions)
    kw = dict(mode=mode, barcodes=allow)
    serial = _run(path, tok, 1, 1 << 20, **kw)
    monkeypatch.setattr(FM, "PIECE_BYTES", 1)  # every block cut, down to empty pieces
    assert _run(path, tok, n_threads, block, **kw) == _eq(serial)
    enc = [(c.encode(), s, e) for c, s, e in regions]
    pairs, nfrag, names, bad_at = oracle_scan(text, enc, mode=mode, use_count=True, miss=True,
                                              repeats=False, allow=allow)
    if isinstance(serial, int) or serial is None:
        assert serial is not None and (bad_at is None or serial <= bad_at)
        return
    assert bad_at is None
    got_names = [x.encode() for x in serial[0]]
    assert got_names == [n if isinstance(n, bytes) else n.encode()
                         for n in names[:len(got_names)]]
    assert serial[2] == [nfrag.get(i, 0) for i in range(len(got_names))]
    want = np.zeros_like(serial[1])
    for (cell, col), w in pairs.items():
        want[cell, col] += w
    assert (serial[1] == want).all()


class _eq:
    """Equal to a ``_run`` result: the cells, the matrix and the counters (or the bad line)."""

    def __init__(self, want):
        self.want = want

    def __eq__(self, got):
        w = self.want
        if not isinstance(w, tuple) or not isinstance(got, tuple):
            return got == w
        return got[0] == w[0] and np.array_equal(got[1], w[1]) and got[2] == w[2]

    def __repr__(self):
        return repr(self.want)


@given(text=st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"")),
       n=st.integers(1, 6))
def test_cuts_fall_at_line_ends(text, n):
    buf = np.frombuffer(text, np.uint8)
    cuts = FM._cut(buf, n)
    assert len(cuts) == n + 1 and cuts[0] == 0 and cuts[-1] == len(text)
    assert cuts == sorted(cuts)
    for c in cuts[1:-1]:  # after a newline, or at the end (a piece may be empty)
        assert c == len(text) or text[c - 1:c] == b"\n"


def test_a_barcode_first_seen_in_a_later_piece_keeps_its_file_order(tmp_path, monkeypatch):
    """Piece 2 sees B then C, piece 1 sees C later than B: ids by first line in the file."""
    rows = ["chr1\t1\t5\tA-1\t1"] * 3 + ["chr1\t1\t5\tB-1\t1", "chr1\t1\t5\tC-1\t1"] + \
        ["chr1\t1\t5\tC-1\t1", "chr1\t1\t5\tD-1\t1", "chr1\t1\t5\tB-1\t1"]
    path = tmp_path / "f.tsv"
    path.write_text("\n".join(rows) + "\n")
    tok = _tok([("chr1", 0, 10)])
    monkeypatch.setattr(FM, "PIECE_BYTES", 1)
    names, X, nfrag = FM._count(path, tok, mode="fragment", shift=(0, 0), use_count=False,
                                barcodes=None, min_fragments=1, block_bytes=1 << 20,
                                n_threads=4)
    assert names == ["A-1", "B-1", "C-1", "D-1"]
    assert nfrag.tolist() == [3, 2, 2, 1]
    assert X.toarray()[:, 0].tolist() == [3, 2, 2, 1]


def test_the_bad_line_of_a_later_piece_is_named_by_its_file_line(tmp_path, monkeypatch):
    path = tmp_path / "f.tsv"
    path.write_text("chr1\t1\t5\tA-1\t1\n" * 50 + "chr1\tx\t5\tA-1\t1\n" + "chr1\t1\t5\tA-1\n" * 9)
    monkeypatch.setattr(FM, "PIECE_BYTES", 1)
    with pytest.raises(BedParseError, match=r"f\.tsv:51"):
        FM._count(path, _tok([("chr1", 0, 10)]), mode="fragment", shift=(0, 0),
                  use_count=False, barcodes=None, min_fragments=1, block_bytes=1 << 20,
                  n_threads=3)


def test_merge_names_adds_the_missing_in_order():
    a = FS.add_names(np.frombuffer(b"XYZ", np.uint8), np.array([0, 1, 2, 3]), *FS.name_table())
    a[4][:] = [7, 8, 9] + [0] * (a[4].size - 3)
    b = FS.add_names(np.frombuffer(b"Y", np.uint8), np.array([0, 1]), *FS.name_table())
    t, ids = FS.merge_names(a[3], a[1], a[4], 1, 3, 100, *b)
    assert ids.tolist() == [0, 1] and t[-1] == 2 and t[4][1] == 109
    t, ids = FS.merge_names(a[3], a[1], a[4], 0, 0, 0, *t)
    assert ids.tolist() == [] and t[-1] == 2


def test_pieces_are_made_as_blocks_need_them(tmp_path, monkeypatch):
    """A piece (its tables, counters and pair buffers) was made for each of n_threads up
    front: n_threads=10**6 made a million for a file of two lines. Pieces are made as a
    block is cut into more, starting from the file's names so far (the same ids)."""
    made = []
    real = FM._Piece

    class Counted(real):
        def __init__(self, *a):
            made.append(1)
            super().__init__(*a)

    monkeypatch.setattr(FM, "_Piece", Counted)
    path = tmp_path / "f.tsv"
    path.write_text("chr1\t1\t5\tA-1\t1\nchr1\t1\t5\tB-1\t1\n")
    names, X, _ = FM._count(path, _tok([("chr1", 0, 10)]), mode="fragment", shift=(0, 0),
                            use_count=False, barcodes=None, min_fragments=1,
                            block_bytes=1 << 20, n_threads=10 ** 6)
    assert names == ["A-1", "B-1"] and len(made) == 1
    long = "C" * 400  # a block of one line of 400 bytes is cut into 4 pieces, the others not
    path.write_text("chr1\t1\t5\tA-1\t1\n" * 9 + f"chr1\t1\t5\t{long}\t1\n" +
                    "chr1\t1\t5\tB-1\t1\nchr1\t1\t5\tA-1\t1\n" * 40)
    monkeypatch.setattr(FM, "PIECE_BYTES", 100)
    made.clear()
    names, X, nfrag = FM._count(path, _tok([("chr1", 0, 10)]), mode="fragment", shift=(0, 0),
                                use_count=False, barcodes=None, min_fragments=1,
                                block_bytes=40, n_threads=4)
    assert names == ["A-1", long, "B-1"] and nfrag.tolist() == [49, 1, 40] and len(made) == 4
