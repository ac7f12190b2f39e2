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

from genotok import BedParseError, CellSpec, Corpus, FragmentOptions, RegionSet, Tokenizer, TokenizerSettings, Universe
from genotok.kernels import cells as K
from genotok.errors import SourceError
from genotok.params import ParameterError
from genotok.kernels import parse as _parse
import genotok.singlecell as gad
from tests import naive_cells as naive

from .._shared import GENDATA, SHARED, needs_shared, shared

UNIVERSE = [("chr1", 0, 100), ("chr1", 100, 200), ("chr1", 150, 400), ("chr2", 0, 50),
            ("chr1", 100, 200)]


def _tok(regs=UNIVERSE, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return Tokenizer(Universe(RegionSet.from_tuples(regs), duplicates="lines"),
                         settings=TokenizerSettings(**kw))


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
    names, rows, _ = naive.fragment_matrix(universe, frags, barcodes=barcodes,  # a column a line
                                           min_fragments=min_fragments, duplicates="lines")
    hits = [[t] for t in range(len(universe))] + [[]]  # column n_regions: fragments without a hit
    ids, vals = naive.cells(universe, None, [[(c, float(n)) for c, n in r] for r in rows],
                            hits=hits,
                            unk_id=tok.unk_token_id, unknown=unknown, min_count=min_count,
                            order=order, max_tokens=max_tokens, truncate=truncate, seed=seed,
                            duplicates="lines")
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
    spec = CellSpec(unknown=unknown, order=order, max_length=max_tokens, values=True,
                    use_count=True)
    read = FragmentOptions(barcodes=allow, min_fragments=min_frag, block_bytes=block)
    names, rows = gad.tokenize_fragments(p, tok, spec, read=read)
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
    ref_names, ref = gad.tokenize_fragments(_write(tmp_path / "a.tsv", lines), tok,
                                            CellSpec(values=True, use_count=True))
    assert ref_names == ["AAA-1", "CCC-1"]
    # chr1:5-20 -> 0 (x2); chr1:150-160 -> 1, 2 (x1, no count column); chr2:0-10 -> 3 (x3)
    assert ref.to_list() == [[0, 1, 2, 3], [tok.unk_token_id]]
    assert ref.values.tolist() == [2.0, 1.0, 1.0, 3.0, 1.0]
    names, gz = gad.tokenize_fragments(_write(tmp_path / "a.tsv.gz", lines, gz=True, crlf=True),
                                       tok, CellSpec(values=True, use_count=True),
                                       read=FragmentOptions(block_bytes=7))
    assert names == ref_names and gz == ref and gz.values.tolist() == ref.values.tolist()
    fm = gad.fragment_matrix(tmp_path / "a.tsv", tok, read=FragmentOptions(mode="fragment"),
                             use_count=True)
    assert fm.X.toarray()[0, :4].tolist() == [2.0, 1.0, 1.0, 3.0]
    assert fm.obs["n_fragments"].tolist() == [3, 1]
    c = gad.tokenize_fragments(tmp_path / "a.tsv", tok, CellSpec(values=True, use_count=True),
                               out=tmp_path / "f.gtokc")
    assert isinstance(c, Corpus) and c.names == ref_names and c.has_values
    assert c.to_ragged().to_list() == ref.to_list()
    names, r = gad.tokenize_fragments(tmp_path / "a.tsv", tok,
                                      CellSpec(values=False, use_count=True))
    t = tok.pad(r, padding=True, return_tensors="np")
    assert t["input_ids"].tolist() == [[0, 1, 2, 3], [tok.unk_token_id] + [tok.pad_token_id] * 3]
    _, cut = gad.tokenize_fragments(tmp_path / "a.tsv", tok,
                                    CellSpec(max_length=2, truncation="top", use_count=True))
    assert cut.to_list() == [[0, 3], [tok.unk_token_id]]  # the top counts, genomic order


@pytest.mark.parametrize("line, problem", [
    ("chr1\t5\t20", "expected chrom, start, end, barcode"),
    ("chr1\tx\t20\tA\t1", "start is not"),
    ("chr1\t5\t-2\tA\t1", "end is not"),
    ("chr1\t5\t2\tA\t1", "end is before start"),
    ("chr1\t5\t9\tA\tmany", "count"),
    ("chr1 5 9 A many", "count"),
    ("chr1\t5 9\tA\t1", "mixes tabs and spaces"),
    ("chr1 5 9\tA\t1", "mixes tabs and spaces"),
    ("chr1\t5\t9\tAAAC 1\t1", "mixes tabs and spaces"),  # a barcode holding a space
    ("chr1\t5\t9\t\t1", "expected chrom, start, end, barcode"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, problem):
    p = _write(tmp_path / "bad.tsv", ["# header", "chr1\t1\t2\tA\t1", line])
    with pytest.raises(BedParseError, match=rf"bad.tsv:3: .*{problem}"):
        gad.tokenize_fragments(p, _tok(), CellSpec(values=True, use_count=True),
                               read=FragmentOptions(block_bytes=5))


def test_parse_fragments_kernel_against_python():
    text = b"#x\nchr1\t1\t5\tAC\t2\r\nchrUn_1\t10\t10\tG-1\n\nchr2\t3\t4\tAC\t9\textra"
    cs, ce, st_, en, bs, be, cnt, status, bad, newlines = K.parse_fragments(np.frombuffer(text, np.uint8))
    assert (status, bad, newlines) == (K.FRAG_OK, -1, 4)
    got = [(text[a:b].decode(), int(s), int(e), text[x:y].decode(), int(n))
           for a, b, s, e, x, y, n in zip(cs, ce, st_, en, bs, be, cnt)]
    assert got == [("chr1", 1, 5, "AC", 2), ("chrUn_1", 10, 10, "G-1", 1), ("chr2", 3, 4, "AC", 9)]


def test_space_separated_lines_read_as_their_tab_twins(tmp_path):
    """Runs of spaces separate columns as one tab does (gtars splits fragment lines on
    whitespace): leading and trailing spaces, a CR, a 6th column and a 4-column line too."""
    lines = ["chr1\t1\t5\tAC\t2\t.", "chr1\t40\t60\tG-1", "chr2\t3\t4\tAC\t9"]
    spaced = ["  chr1   1 5  AC 2 .  ", "chr1 40 60 G-1\r", "chr2 3   4 AC 9"]
    want = gad.tokenize_fragments(_write(tmp_path / "tab.tsv", lines), _tok(),
                                  CellSpec(values=True, use_count=True))
    got = gad.tokenize_fragments(_write(tmp_path / "space.tsv", spaced), _tok(),
                                 CellSpec(values=True, use_count=True))
    assert got[0] == want[0] and got[1].to_list() == want[1].to_list()
    assert got[1].row_values(0).tolist() == want[1].row_values(0).tolist()


@pytest.mark.parametrize("sep, found", [("\t", True), ("  ", True), (" \t", False)])
def test_a_fragment_file_of_another_suffix_is_sniffed_by_its_five_columns(tmp_path, sep, found):
    """A gzip whose first line has the five fragment columns, separated by tabs or by runs of
    spaces (as the parser reads them), is a fragment file whatever its suffix."""
    from genotok.singlecell import FragmentSource
    from genotok.singlecell.sources import source_class

    p = _write(tmp_path / "f.bed.gz", [sep.join(["chr1", "5", "9", "AAAC-1", "1"])], gz=True)
    assert (source_class(p) is FragmentSource) is found


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
        gad.tokenize_fragments("/nonexistent/f.tsv.gz", _tok(),
                               CellSpec(values=True, use_count=True))


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
    names, rows = gad.tokenize_fragments(f, tok, CellSpec(values=True, use_count=True),
                                         read=FragmentOptions(block_bytes=1000))
    en, ei, ev = _expected(universe, naive.read_fragments(f), tok)
    assert names == en and rows.to_list() == ei
    assert rows.values.tolist() == [v for r in ev for v in r]


# ---------------------------------------------------------------------------------- damaged input
def _gz_body(n=3000) -> bytes:
    return b"".join(b"chr1\t%d\t%d\tBC%d-1\t1\n" % (i % 400, i % 400 + 30, i % 11)
                    for i in range(n))


def _damaged(kind: str) -> bytes:
    gz = gzip.compress(_gz_body())
    if kind == "truncated":
        return gz[:len(gz) // 2]
    if kind == "tail_cut":
        return gz[:-4]
    if kind == "deflate_flip":
        return gz[:60] + bytes([gz[60] ^ 0xFF]) + gz[61:]
    if kind == "crc_flip":
        return gz[:-8] + bytes([gz[-8] ^ 1]) + gz[-7:]
    if kind == "flags_flip":
        return gz[:3] + b"\xff" + gz[4:]
    if kind == "magic_only":
        return gz[:2]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "tail_cut", "deflate_flip", "crc_flip",
                                  "flags_flip", "magic_only"])
@pytest.mark.parametrize("output", ["counts", "list", "corpus", "anndata"])
def test_corrupt_gzip_is_a_bed_parse_error_naming_the_file(tmp_path, kind, output):
    """A damaged .gz raised a raw EOFError / zlib.error / BadGzipFile (issue 19)."""
    p = tmp_path / f"{kind}.tsv.gz"
    p.write_bytes(_damaged(kind))
    with pytest.raises(BedParseError, match=rf"{kind}.tsv.gz: (truncated|corrupt) gzip") as info:
        if output == "counts":
            gad.fragment_counts(p, _tok(), block_bytes=997, use_count=True)
        elif output == "corpus":
            gad.tokenize_fragments(p, _tok(), CellSpec(values=True, use_count=True),
                                   out=tmp_path / "c.gtokc")
        elif output == "anndata":
            gad.fragment_matrix(p, _tok(), read=FragmentOptions(mode="fragment"), use_count=True)
        else:
            gad.tokenize_fragments(p, _tok(), CellSpec(values=True, use_count=True))
    assert info.value.path == str(p)
    assert not (tmp_path / "c.gtokc").exists()


def test_corrupt_fragments_are_skipped_by_pretokenize(tmp_path):
    from genotok.pipeline.run import pretokenize

    d = tmp_path / "in"
    d.mkdir()
    (d / "good.tsv.gz").write_bytes(gzip.compress(_gz_body(50)))
    (d / "bad.tsv.gz").write_bytes(_damaged("truncated"))
    (d / "ctrl.tsv").write_bytes(b"chr1\t1\t5\tA\x1b[31m\t1\n")
    with pytest.raises(BedParseError, match="truncated gzip|control byte"):
        pretokenize(d, _tok(), tmp_path / "fail", progress=False)
    summary = pretokenize(d, _tok(), tmp_path / "out", progress=False, on_error="skip")
    failed = {Path(f["path"]).name: f["error"] for f in summary.failed}
    assert set(failed) == {"bad.tsv.gz", "ctrl.tsv"}
    assert "truncated gzip" in failed["bad.tsv.gz"]
    assert "ctrl.tsv:1:" in failed["ctrl.tsv"]
    assert summary.n_records == 11  # the good file's cells


@pytest.mark.parametrize("barcode", [b"A\x00B", b"AC\x1b[0m", b"A\x7fB", b"\x01", b"A\rB"])
def test_control_bytes_in_barcodes_name_file_and_line(tmp_path, barcode):
    p = tmp_path / "ctrl.tsv"
    p.write_bytes(b"#h\nchr1\t1\t5\tGOOD\t1\nchr1\t1\t5\t" + barcode + b"\t1\n")
    with pytest.raises(BedParseError, match=r"ctrl.tsv:3: the barcode .*control byte"):
        gad.fragment_counts(p, _tok(), use_count=True)


@pytest.mark.parametrize("block", [3, 1 << 20])
def test_invalid_utf8_barcodes_are_refused_never_merged(tmp_path, block):
    """Decoded with replacement characters, b"A\\xff" and b"A\\xfe" both became "A\\ufffd":
    two cells merged into one. They are refused at their first line instead."""
    p = tmp_path / "utf.tsv"
    p.write_bytes(b"chr1\t1\t5\tOK-1\t1\nchr1\t1\t5\tA\xff\t1\nchr1\t9\t15\tA\xfe\t1\n")
    with pytest.raises(BedParseError, match=r"utf.tsv:2: the barcode b'A\\xff' is not valid "
                                            r"UTF-8"):
        gad.fragment_counts(p, _tok(), block_bytes=block, use_count=True)
    q = tmp_path / "chrom.tsv"
    q.write_bytes(b"chr1\t1\t5\tOK-1\t1\n\nchr\xc3\t1\t5\tOK-1\t1\n")
    with pytest.raises(BedParseError, match=r"chrom.tsv:3: the chromosome name"):
        gad.fragment_counts(q, _tok(), block_bytes=block, use_count=True)
    good = tmp_path / "good.tsv"  # valid UTF-8 barcodes stay distinct cells
    good.write_bytes("chr1\t1\t5\tzelle-ä\t1\nchr1\t1\t5\tzelle-ö\t2\n".encode())
    names, X, _ = gad.fragment_counts(good, _tok(), use_count=True)
    assert names == ["zelle-ä", "zelle-ö"] and X.sum() == 3


_SEED = b"#h\nchr1\t5\t20\tAAAC-1\t2\nchr2\t0\t9\tGGTT-1\nchr1\t150\t160\tAAAC-1\t1\r\n"


@st.composite
def _fuzzed_fragment_bytes(draw):
    if draw(st.booleans()):
        data = draw(st.binary(max_size=300))
    else:
        b = bytearray(_SEED * draw(st.integers(1, 3)))
        for _ in range(draw(st.integers(0, 6))):
            pos = draw(st.integers(0, len(b)))
            b[pos:pos + draw(st.integers(0, 3))] = draw(st.binary(max_size=4))
        data = bytes(b)
    if draw(st.booleans()):  # gzip it, then maybe damage the stream
        data = gzip.compress(data)
        if draw(st.booleans()):
            pos = draw(st.integers(0, len(data) - 1))
            cut = draw(st.sampled_from([None, pos]))
            data = data[:cut] if cut is not None else (
                data[:pos] + bytes([data[pos] ^ draw(st.integers(1, 255))]) + data[pos + 1:])
    return data


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_fuzzed_fragment_bytes(), st.sampled_from([1, 7, 64, 1 << 20]))
def test_fuzzed_fragment_files_give_a_result_or_a_bed_parse_error(tmp_path, data, block):
    """Crash and hang freedom of the fragment reader: random and mutated (gzipped, damaged)
    bytes give a count matrix consistent with itself or a BedParseError, nothing else."""
    p = tmp_path / "fuzz.tsv.gz"
    p.write_bytes(data)
    tok = _tok()
    try:
        with warnings.catch_warnings():  # e.g. a fuzzed "1" for "chr1": the naming hint
            warnings.simplefilter("ignore", UserWarning)
            names, X, nfrag = gad.fragment_counts(p, tok, block_bytes=block, use_count=True)
            again = gad.fragment_counts(p, tok, block_bytes=1 << 20, use_count=True)
    except BedParseError as exc:
        assert exc.path == str(p)
        return
    assert len(names) == len(set(names)) == X.shape[0] == nfrag.size
    assert X.shape[1] == tok.universe.n_regions + 1
    assert (nfrag >= 1).all() and (X.data >= 0).all()
    assert again[0] == names and (again[1] != X).nnz == 0  # the block size changes nothing


_BOUNDSCHECKED_FUZZ = """
import gzip, sys, tempfile
from pathlib import Path
import numpy as np
from genotok import BedParseError, Tokenizer
import genotok.singlecell as gad
seed = {seed!r}
rng = np.random.default_rng(0)
tok = Tokenizer(["chr1:0-100", "chr1:100-200", "chr2:0-50"])
p = Path(tempfile.mkdtemp()) / "f.tsv.gz"
n_ok = n_err = 0
for i in range({n}):
    b = bytearray(seed * int(rng.integers(1, 4)))
    for _ in range(int(rng.integers(0, 6))):
        pos = int(rng.integers(0, len(b) + 1))
        b[pos:pos + int(rng.integers(0, 3))] = rng.integers(0, 256, int(rng.integers(0, 4)),
                                                             dtype=np.uint8).tobytes()
    data = bytes(b)
    if i % 3 == 0:
        data = gzip.compress(data)
        if i % 2:
            data = data[:int(rng.integers(0, len(data)))]
    p.write_bytes(data)
    try:
        gad.fragment_counts(p, tok, block_bytes=int(rng.choice([7, 64, 1 << 20])))
        n_ok += 1
    except BedParseError:
        n_err += 1
print(n_ok, n_err)
"""


# slow: every kernel recompiled with bounds checks in a subprocess (~20 s on a cold cache);
# the default run keeps the unchecked hypothesis campaigns (test_fragments_bad_lines.py)
@pytest.mark.slow
def test_fuzzed_fragment_files_with_bounds_checked_kernels():
    """The same fuzz in a fresh interpreter whose kernels check every index (an out-of-bounds
    access raises instead of reading garbage; a segfault is a negative return code)."""
    from .test_reading import ROOT, _boundscheck_env

    code = _BOUNDSCHECKED_FUZZ.format(seed=_SEED, n=200)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_boundscheck_env(),
                         capture_output=True, text=True, timeout=1200, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    n_ok, n_err = map(int, res.stdout.split())
    assert n_ok + n_err == 200 and n_ok > 0 and n_err > 0


@pytest.mark.parametrize("lines", ["", "chr1\t5\t20\tA\t1\n"])
def test_no_cells_with_rank_by_median(tmp_path, lines):
    """Issue 32 item 14: an empty fragment file (or one whose cells are all filtered out) with
    a RankByMedian encoding raised a raw ValueError ('feature_medians needs at least one
    matrix') when written to a corpus; it gives an empty corpus, as without the encoding."""
    from genotok import RankByMedian

    path = tmp_path / "f.tsv"
    path.write_text(lines)
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    spec = CellSpec(encoding=RankByMedian(), values=True)
    read = FragmentOptions(min_fragments=2)
    c = gad.tokenize_fragments(path, tok, spec, read=read, out=tmp_path / "c.gtokc")
    assert len(c) == 0 and c.has_values
    names, rows = gad.tokenize_fragments(path, tok, spec, read=read)
    assert names == [] and len(rows) == 0


# ----------------------------------------------------------- the real files, against gtars
REAL_FRAGMENTS = ["archr/PBSmall.tsv.gz", "macs3/test.fragments.tsv.gz",
                  "maestro/test.fragments.tsv.gz",
                  "scframework/homo_sapiens_liver_fragments_sorted_test.bed",
                  "scframework/mm10_atac_fragments.bed", "signac/fragments.tsv.gz",
                  "signac/fragments_header.tsv.gz"]
#: hundreds of thousands of lines each: the slow step
REAL_FRAGMENTS_LARGE = ["macs3/yeast_500k_SRR1822137.frag.gz",
                        "muon/test_rna_atac_fragments.tsv.gz"]
#: gtars' own fragment test files separate their columns by runs of spaces: read as gtars
#: reads them (split on runs of spaces; issue 33)
REAL_FRAGMENTS_SPACED = [*(f"gtars/fragments/fragsplit/fragments{i}.bed.gz" for i in (1, 2, 3)),
                         *(f"gtars/fragments/region_scoring/fragments{i}.bed.gz" for i in (1, 2))]


@pytest.mark.parametrize("rel", [
    *REAL_FRAGMENTS, *REAL_FRAGMENTS_SPACED,
    *(pytest.param(r, marks=pytest.mark.slow) for r in REAL_FRAGMENTS_LARGE)])
def test_real_fragment_files_count_as_gtars(tmp_path, rel):
    """Every real fragment file of ../shared: each cell's token counts equal gtars'
    ``tokenize_fragment_file`` (one token per fragment hit, ``<unk>`` aside) against a universe
    of 20 kb regions every 50 kb over the chromosomes the file names."""
    import collections

    gt = pytest.importorskip("gtars.tokenizers", reason="gtars is not installed (the reference)")
    path = shared(SHARED / "data" / "real" / rel)
    ends: dict[str, int] = {}
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as fh:
        for line in fh:
            if not line.startswith("#"):
                chrom, _, end = line.split()[:3]
                ends[chrom] = max(ends.get(chrom, 0), int(end))
    bed = tmp_path / "u.bed"
    bed.write_text("".join(f"{c}\t{s}\t{s + 20_000}\n" for c, e in ends.items()
                           for s in range(0, e, 50_000)))
    tok = Tokenizer.from_bed(bed)
    names, cells = gad.tokenize_fragments(path, tok, CellSpec(values=True))
    mine = {n: dict(zip(r, cells.row_values(i).tolist()))
            for i, (n, r) in enumerate(zip(names, cells.to_list()))}
    theirs = gt.tokenize_fragment_file(str(path), gt.Tokenizer(str(bed)))
    theirs = {n: collections.Counter(i for i in ids if i != tok.unk_token_id)
              for n, ids in theirs.items()}
    mine = {n: {t: c for t, c in row.items() if t != tok.unk_token_id} for n, row in mine.items()}
    assert {n: r for n, r in mine.items() if r} == {n: dict(r) for n, r in theirs.items() if r}
    assert set(names) == set(theirs)


@pytest.mark.parametrize("frag,barcodes", [
    ("macs3/test.fragments.tsv.gz", "macs3/barcodes.txt"),
    ("maestro/test.fragments.tsv.gz", "maestro/test.barcode.txt.gz"),
    pytest.param("macs3/yeast_500k_SRR1822137.frag.gz", "macs3/yeast_500k_SRR1822137.barcode.txt",
                 marks=pytest.mark.slow)])
def test_real_barcode_lists_select_and_order_the_cells(frag, barcodes):
    """The allow-lists shipped beside the real fragment files (MACS3's, MAESTRO's gzipped one
    with '#' inside the barcodes): the cells come in the list's order, each with the tokens it
    has in the unfiltered run."""
    real = SHARED / "data" / "real"
    frag, barcodes = shared(real / frag), shared(real / barcodes)
    with (gzip.open if barcodes.suffix == ".gz" else open)(barcodes, "rt") as fh:
        listed = [ln.strip() for ln in fh if ln.strip()]
    tok = Tokenizer([f"chr{c}:{s}-{s + 10_000}" for c in [*range(1, 23), "X", "Y"]
                     for s in range(0, 250_000_000, 1_000_000)]
                    + [f"{c}:0-3000000" for c in ("I", "II", "III", "IV", "V", "VI", "VII",
                                                  "VIII", "IX", "X", "XI", "XII", "XIII", "XIV",
                                                  "XV", "XVI")])
    names, cells = gad.tokenize_fragments(frag, tok, read=FragmentOptions(barcodes=barcodes))
    all_names, all_cells = gad.tokenize_fragments(frag, tok)
    everything = dict(zip(all_names, all_cells.to_list()))
    assert names == [b for b in listed if b in everything] and names
    assert cells.to_list() == [everything[b] for b in names]
@pytest.mark.parametrize("mode", ["insertion", "paired-insertion", "fragment"])
def test_a_repeated_universe_line_is_one_token_in_every_mode(mode, tmp_path):
    """With ``duplicates="lines"`` a repeated region is the token of its first occurrence:
    in the insertion modes the count matrix also filled the repeat's column, whose token the
    driver maps to the first occurrence again, so each cut site counted twice."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = Tokenizer(Universe(["chr1:0-10", "chr1:10-100", "chr1:0-10"], duplicates="lines"))
    p = tmp_path / "f.tsv"
    p.write_text("chr1\t2\t50\tA-1\t1\n")
    names, rows = gad.tokenize_fragments(p, tok, CellSpec(values=True),
                                         read=FragmentOptions(mode=mode))
    assert rows.to_list()[0] == [0, 1] and rows.values.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("first", ["tokenizer", "spec", "number"])
def test_a_first_argument_no_source_reads_names_the_order(first):
    tok = Tokenizer(["chr1:0-100"])
    path = {"tokenizer": tok, "spec": CellSpec(), "number": 3}[first]
    with pytest.raises(ParameterError,
                       match=r"the order is tokenize_fragments\(path, tokenizer, spec\)") as e:
        gad.tokenize_fragments(path, tok)
    assert ("did you swap them?" in str(e.value)) == (first == "tokenizer")


def test_an_anndata_object_for_fragments_says_what_reads_it():
    anndata = pytest.importorskip("anndata")
    sp = pytest.importorskip("scipy.sparse")
    ad = anndata.AnnData(sp.csr_matrix(np.ones((2, 1), np.float32)))
    with pytest.raises(SourceError, match="AnnData is a .* input .*read it with tokenize_cells"):
        gad.tokenize_fragments(ad, Tokenizer(["chr1:0-100"]))
