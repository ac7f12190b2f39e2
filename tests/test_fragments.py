"""Fragment files → per-cell token counts, against a plain-Python reader and loop."""

from __future__ import annotations

import gzip
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import BedParseError, Corpus, RegionSet, Tokenizer, Universe
from genotok import _cell_kernels as K
from genotok import _parse
from genotok import anndata as gad

from . import naive_cells as naive

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
GENDATA = SHARED / "tools" / "gendata.py"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not present")
UNIVERSE = [("chr1", 0, 100), ("chr1", 100, 200), ("chr1", 150, 400), ("chr2", 0, 50),
            ("chr1", 100, 200)]


def _tok(regs=UNIVERSE, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return Tokenizer(Universe(RegionSet.from_tuples(regs)), **kw)


def _write(path: Path, lines, gz=False, crlf=False):
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_bytes(text.encode())
    return path


def _expected(universe, frags, tok, *, barcodes=None, min_fragments=1, unknown="set",
              min_count=None, order="genomic", max_tokens=None, truncate="top", seed=0):
    names, rows, _ = naive.fragment_matrix(universe, frags, barcodes=barcodes,
                                           min_fragments=min_fragments)
    hits = [[t] for t in range(len(universe))] + [[]]  # column n_regions: fragments without a hit
    ids, vals = naive.cells(universe, None, [[(c, float(n)) for c, n in r] for r in rows],
                            hits=hits,
                            unk_id=tok.unk_token_id, unknown=unknown, min_count=min_count,
                            order=order, max_tokens=max_tokens, truncate=truncate, seed=seed)
    return names, ids, vals


@st.composite
def fragment_files(draw):
    frags = []
    for _ in range(draw(st.integers(0, 40))):
        c = draw(st.sampled_from(["chr1", "chr2", "chrM"]))
        s = draw(st.integers(0, 450))
        frags.append((c, s, s + draw(st.integers(0, 120)),
                      draw(st.sampled_from(["AAAC-1", "GGTT-1", "CATG-1", "T-2"])),
                      draw(st.integers(1, 4))))
    return frags


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fragment_files(), st.sampled_from(["set", "region", "drop"]),
       st.sampled_from([1, 9, 64, 1 << 20]),
       st.sampled_from([None, ["GGTT-1", "AAAC-1", "NNNN-1"]]), st.integers(0, 3),
       st.sampled_from(["genomic", "value"]), st.sampled_from([None, 2]))
def test_fragments_match_the_loop(tmp_path, frags, unknown, block, allow, min_frag, order,
                                  max_tokens):
    p = _write(tmp_path / "f.tsv", ["# comment"] + ["\t".join(map(str, f)) for f in frags])
    tok = _tok()
    names, rows = gad.tokenize_fragments(p, tok, barcodes=allow, min_fragments=min_frag,
                                         unknown=unknown, block_bytes=block, order=order,
                                         max_tokens=max_tokens)
    en, ei, ev = _expected(UNIVERSE, naive.read_fragments(p), tok, barcodes=allow,
                           min_fragments=min_frag, unknown=unknown, order=order,
                           max_tokens=max_tokens)
    assert names == en
    assert rows.to_list() == ei
    assert rows.values.tolist() == [v for r in ev for v in r]


def test_gzip_crlf_missing_count_and_outputs(tmp_path):
    lines = ["#h1", "#h2", "chr1\t5\t20\tAAA-1\t2", "chr1\t150\t160\tAAA-1", "",
             "chr9\t1\t2\tCCC-1\t1", "chr2\t0\t10\tAAA-1\t3"]
    tok = _tok(unknown="region")
    ref_names, ref = gad.tokenize_fragments(_write(tmp_path / "a.tsv", lines), tok)
    assert ref_names == ["AAA-1", "CCC-1"]
    # chr1:5-20 -> 0 (x2); chr1:150-160 -> 1, 2 (x1, no count column); chr2:0-10 -> 3 (x3)
    assert ref.to_list() == [[0, 1, 2, 3], [tok.unk_token_id]]
    assert ref.values.tolist() == [2.0, 1.0, 1.0, 3.0, 1.0]
    names, gz = gad.tokenize_fragments(_write(tmp_path / "a.tsv.gz", lines, gz=True, crlf=True),
                                       tok, block_bytes=7)
    assert names == ref_names and gz == ref and gz.values.tolist() == ref.values.tolist()
    ad = gad.tokenize_fragments(tmp_path / "a.tsv", tok, output="anndata")
    assert ad.shape == (2, tok.universe.n_regions)
    assert ad.obs["n_fragments"].tolist() == [3, 1]
    assert ad.obs["unknown_count"].tolist() == [0.0, 1.0]
    assert ad.X.toarray()[0].tolist() == [2.0, 1.0, 1.0, 3.0, 0.0]
    assert ad.var_names[0] == "chr1:0-100"
    c = gad.tokenize_fragments(tmp_path / "a.tsv", tok, output=tmp_path / "f.gtokc")
    assert isinstance(c, Corpus) and c.names == ref_names and c.has_values
    assert c.to_ragged().to_list() == ref.to_list()
    names, t = gad.tokenize_fragments(tmp_path / "a.tsv", tok, output="np", values=False)
    assert t["input_ids"].tolist() == [[0, 1, 2, 3], [tok.unk_token_id] + [tok.pad_token_id] * 3]


@pytest.mark.parametrize("line, problem", [
    ("chr1\t5\t20", "expected tab-separated"),
    ("chr1\tx\t20\tA\t1", "start is not"),
    ("chr1\t5\t-2\tA\t1", "end is not"),
    ("chr1\t5\t2\tA\t1", "end is before start"),
    ("chr1\t5\t9\tA\tmany", "count"),
    ("chr1\t5\t9\t\t1", "expected tab-separated"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, problem):
    p = _write(tmp_path / "bad.tsv", ["# header", "chr1\t1\t2\tA\t1", line])
    with pytest.raises(BedParseError, match=rf"bad.tsv:3: .*{problem}"):
        gad.tokenize_fragments(p, _tok(), block_bytes=5)


def test_parse_fragments_kernel_against_python():
    text = b"#x\nchr1\t1\t5\tAC\t2\r\nchrUn_1\t10\t10\tG-1\n\nchr2\t3\t4\tAC\t9\textra"
    cs, ce, st_, en, bs, be, cnt, status, bad, newlines = K.parse_fragments(np.frombuffer(text, np.uint8))
    assert (status, bad, newlines) == (K.FRAG_OK, -1, 4)
    got = [(text[a:b].decode(), int(s), int(e), text[x:y].decode(), int(n))
           for a, b, s, e, x, y, n in zip(cs, ce, st_, en, bs, be, cnt)]
    assert got == [("chr1", 1, 5, "AC", 2), ("chrUn_1", 10, 10, "G-1", 1), ("chr2", 3, 4, "AC", 9)]


def _intern_oracle(strings: list[bytes]) -> tuple[list[int], list[int]]:
    number: dict[bytes, int] = {}
    first: list[int] = []
    for i, x in enumerate(strings):
        if x not in number:
            number[x] = len(first)
            first.append(i)
    return [number[x] for x in strings], first


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=6).map(lambda b: b[:1] * 3 + b), max_size=300)
       | st.lists(st.sampled_from([b"", b"A", b"AA", b"chr1", b"chr1\t", b"\xff\x00", b"ACGT-1"]),
                  max_size=300),
       st.booleans(), st.booleans())
def test_intern_spans_against_a_dict(strings, collide, shuffle_layout):
    # spans laid out in order or reversed in the buffer (so neighbours in the list are not
    # neighbours in memory), with separators that never take part; with collide every hash
    # is equal and each probe must compare the bytes; >1024 distinct strings grow the tables
    if len(strings) < 200 and not collide:
        strings = strings + [b"%d" % i for i in range(1500)] + strings
    order = list(range(len(strings)))[::-1] if shuffle_layout else range(len(strings))
    buf, s, e = bytearray(), np.zeros(len(strings), np.int64), np.zeros(len(strings), np.int64)
    for i in order:
        buf += b"|"
        s[i] = len(buf)
        buf += strings[i]
        e[i] = len(buf)
    mask = np.uint64(0) if collide else np.uint64(0xFFFFFFFFFFFFFFFF)
    index, a, b = _parse.intern_spans(np.frombuffer(bytes(buf) + b"|", np.uint8), s, e, mask)
    want_index, want_first = _intern_oracle(strings)
    assert index.tolist() == want_index and a.tolist() == s[want_first].tolist()
    assert b.tolist() == e[want_first].tolist()


def test_missing_file():
    with pytest.raises(BedParseError, match="no such fragment file"):
        gad.tokenize_fragments("/nonexistent/f.tsv.gz", _tok())


@needs_shared
def test_gendata_fragments(tmp_path):
    u = tmp_path / "u.bed"
    subprocess.run([sys.executable, str(GENDATA), "universe", str(u), "--n", "300"], check=True)
    f = tmp_path / "frag.tsv.gz"
    subprocess.run([sys.executable, str(GENDATA), "fragments", str(u), str(f), "--cells", "12",
                    "--per-cell", "20"], check=True)
    tok = Tokenizer.from_bed(u)
    rs = RegionSet.from_bed(u)
    universe = list(zip(np.asarray(rs.chrom_names, dtype=object)[rs.codes].tolist(),
                        rs.starts.tolist(), rs.ends.tolist()))
    names, rows = gad.tokenize_fragments(f, tok, block_bytes=1000)
    en, ei, ev = _expected(universe, naive.read_fragments(f), tok)
    assert names == en and rows.to_list() == ei
    assert rows.values.tolist() == [v for r in ev for v in r]
