"""BED parsing, region strings and every in-memory input, against a plain-Python oracle."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import BedParseError, RegionParseError, RegionSet, as_regions
from genotok._io import atomic_write, read_bytes

from . import naive_regions as naive

NAMES = st.sampled_from(["chr1", "chr2", "chrX", "chrUn_KI270742v1", "chr1_KI270706v1_random",
                         "HLA-A*01:01", "scaffold.7", "1"])
REGION = st.tuples(NAMES, st.integers(0, 10**12), st.integers(0, 5000)).map(
    lambda t: (t[0], t[1], t[1] + t[2]))


def _parse_text(tmp_path, text: bytes, gz=False) -> RegionSet:
    path = tmp_path / ("x.bed.gz" if gz else "x.bed")
    path.write_bytes(gzip.compress(text) if gz else text)
    return RegionSet.from_bed(path)


def _tuples(rs: RegionSet):
    return [(rs.chrom_names[c], int(s), int(e)) for c, s, e in zip(rs.codes, rs.starts, rs.ends)]


@st.composite
def bed_texts(draw):
    regions = draw(st.lists(REGION, max_size=40))
    sep = draw(st.sampled_from(["\t", " ", "  "]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    extra = draw(st.sampled_from(["", "\tpeak\t0\t.", "\t.\t.\t+\t1.5\t2\t3\t50"]))
    lines = []
    if draw(st.booleans()):
        lines.append("chrom\tstart\tend")
    for c, s, e in regions:
        lines.append(sep.join([c, str(s), str(e)]) + (extra if sep == "\t" else ""))
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["# comment", "track name=x", "browser position chr1",
                                               "", "  ", "#chrom\tstart\tend"])))
    text = eol.join(lines)
    if draw(st.booleans()):
        text += eol
    return text.encode(), regions


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bed_texts(), st.booleans())
def test_bed_dialects_parse_back_exactly(tmp_path, case, gz):
    text, regions = case
    rs = _parse_text(tmp_path, text, gz)
    assert _tuples(rs) == regions == naive.parse(text)
    assert rs.from_file and rs.source.endswith(".gz" if gz else ".bed")
    # codes in order of first appearance, names decode back
    seen = list(dict.fromkeys(c for c, _, _ in regions))
    assert list(rs.chrom_names) == seen


BAD_LINES = [
    ("chr1\t100", "too few columns"),
    ("chr1\tabc\t200", "start is not"),
    ("chr1\t100\t2x0", "end is not"),
    ("chr1\t-5\t200", "negative"),
    ("chr1\t100\t-200", "negative"),
    ("chr1\t100\t99999999999999999999", "larger than"),
    ("chr1\t300\t200", "end is before start"),
    ("chr1\t100\x00\t200", "binary"),
    ("\t100\t200", "empty chromosome name"),
    ("chr1 100\t200", "mixed tab and space"),
    ("chr1\t100 200\t300", "mixed tab and space"),
    ("chrom\tstart\tend", "start is not"),  # a header after data
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(REGION, min_size=1, max_size=20), st.data())
def test_malformed_line_reports_its_line(tmp_path, regions, data):
    bad, msg = data.draw(st.sampled_from(BAD_LINES))
    k = data.draw(st.integers(1, len(regions)))  # after at least one data line
    lines = [f"{c}\t{s}\t{e}" for c, s, e in regions]
    lines.insert(k, bad)
    text = ("\n".join(lines) + "\n").encode()
    with pytest.raises(BedParseError, match=msg) as info:
        _parse_text(tmp_path, text)
    assert info.value.line == k + 1
    assert f"x.bed:{k + 1}:" in str(info.value)
    with pytest.raises(naive.NaiveError) as oracle:
        naive.parse(text)
    assert oracle.value.line == k + 1


def test_header_only_first(tmp_path):
    rs = _parse_text(tmp_path, b"chrom\tstart\tend\tname\nchr1\t1\t2\tx\n")
    assert _tuples(rs) == [("chr1", 1, 2)]


def test_empty_inputs(tmp_path):
    for text in (b"", b"\n\n", b"# only a comment\n", b"track name=x\n"):
        assert len(_parse_text(tmp_path, text)) == 0
        assert len(_parse_text(tmp_path, text, gz=True)) == 0
    assert len(as_regions([])) == 0


def test_crlf_and_no_final_newline(tmp_path):
    rs = _parse_text(tmp_path, b"chr1\t1\t2\r\nchr2\t3\t4")
    assert _tuples(rs) == [("chr1", 1, 2), ("chr2", 3, 4)]


def test_file_errors(tmp_path):
    with pytest.raises(BedParseError, match="no such file"):
        RegionSet.from_bed(tmp_path / "missing.bed")
    with pytest.raises(BedParseError, match="is a directory"):
        RegionSet.from_bed(tmp_path)
    good = gzip.compress(b"chr1\t1\t2\n" * 1000)
    (tmp_path / "trunc.bed.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(BedParseError, match="truncated gzip"):
        RegionSet.from_bed(tmp_path / "trunc.bed.gz")
    corrupt = bytearray(good)
    corrupt[20:30] = b"\xff" * 10
    (tmp_path / "bad.bed.gz").write_bytes(bytes(corrupt))
    with pytest.raises(BedParseError, match="gzip"):
        RegionSet.from_bed(tmp_path / "bad.bed.gz")
    (tmp_path / "junk.bed").write_bytes(os.urandom(64) + b"\x00")
    with pytest.raises(BedParseError):
        RegionSet.from_bed(tmp_path / "junk.bed")
    (tmp_path / "latin.bed").write_bytes(b"chr1\t1\t2\nchr\xe9\t1\t2\n")
    with pytest.raises(BedParseError, match=r"latin.bed:2: .*UTF-8"):
        RegionSet.from_bed(tmp_path / "latin.bed")


def test_gzip_detected_by_magic_not_name(tmp_path):
    (tmp_path / "plain_name.bed").write_bytes(gzip.compress(b"chr1\t1\t2\n"))
    assert _tuples(RegionSet.from_bed(tmp_path / "plain_name.bed")) == [("chr1", 1, 2)]
    # BGZF-like multi-member streams
    (tmp_path / "multi.bed.gz").write_bytes(gzip.compress(b"chr1\t1\t2\n") + gzip.compress(b"chr2\t3\t4\n"))
    assert len(RegionSet.from_bed(tmp_path / "multi.bed.gz")) == 2
    assert read_bytes(tmp_path / "multi.bed.gz").dtype == np.uint8


def test_many_contigs(tmp_path):
    n = 120_000  # scaffold assemblies: the name table grows past its first sizes
    text = "".join(f"scaffold_{i}\t{i}\t{i + 10}\n" for i in range(n)).encode()
    rs = _parse_text(tmp_path, text)
    assert len(rs.chrom_names) == n and rs.chrom_names[77_777] == "scaffold_77777"
    assert rs.codes.tolist() == list(range(n))


@settings(max_examples=100, deadline=None)
@given(st.lists(REGION, max_size=20), st.sampled_from([None, ":", "-", "_"]))
def test_strings_round_trip(regions, sep):
    rs = RegionSet.from_tuples(regions)
    strings = rs.to_strings()
    if sep in ("-", "_"):
        strings = [f"{c}{sep}{s}{sep}{e}" for c, s, e in regions]
    assert RegionSet.from_strings(strings, sep=sep) == rs
    assert as_regions(strings) == rs


def test_string_conventions():
    rs = RegionSet.from_strings(["chr1:1,000-2,000", "chrUn_KI270742v1-5-10", "HLA-A*01:01_1_10"])
    assert _tuples(rs) == [("chr1", 1000, 2000), ("chrUn_KI270742v1", 5, 10), ("HLA-A*01:01", 1, 10)]
    assert _tuples(RegionSet.from_strings(["chr1:101-200"], one_based=True)) == [("chr1", 100, 200)]
    with pytest.raises(RegionParseError, match=r"2 of 3 .*\[0\] 'nope'.*\[2\] 'chr1:5'"):
        RegionSet.from_strings(["nope", "chr1:1-2", "chr1:5"])
    with pytest.raises(RegionParseError, match="end is before start"):
        RegionSet.from_strings(["chr1:10-5"])


def test_tuples_arrays_frames_agree():
    regs = [("chr2", 10, 20), ("chr1", 5, 6), ("chr2", 1, 2)]
    a = RegionSet.from_tuples(regs)
    b = RegionSet.from_arrays(np.array(["chr2", "chr1", "chr2"]), [10, 5, 1], np.array([20, 6, 2]))
    c = as_regions((np.array([b"chr2", b"chr1", b"chr2"], dtype=object), [10, 5, 1], [20, 6, 2]))
    d = RegionSet.from_frame({"Chrom": ["chr2", "chr1", "chr2"], "chromStart": [10, 5, 1], "chromEnd": [20, 6, 2]})
    for x in (b, c, d):
        assert x == a and x.chrom_names == a.chrom_names and np.array_equal(x.codes, a.codes)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"seqnames": ["chr2", "chr1", "chr2"], "start": [10, 5, 1], "end": [20.0, 6.0, 2.0]})
    assert as_regions(df) == a
    with pytest.raises(RegionParseError, match="no start column"):
        RegionSet.from_frame({"chrom": ["chr1"], "begin": [1], "end": [2]})
    with pytest.raises(RegionParseError, match="not an integer"):
        RegionSet.from_arrays(["chr1"], [1.5], [2])
    with pytest.raises(RegionParseError, match="negative start"):
        RegionSet.from_tuples([("chr1", -1, 2)])
    with pytest.raises(RegionParseError, match="not a .chrom, start, end. tuple"):
        RegionSet.from_tuples([("chr1", 1)])
    with pytest.raises(RegionParseError, match="cannot read regions"):
        as_regions(42)


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_write(target, "w") as fh:
            fh.write("partial")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []
    with atomic_write(target, "w") as fh:
        fh.write("done")
    assert target.read_text() == "done" and len(list(tmp_path.iterdir())) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bed_texts(), st.integers(1, 4))
def test_parallel_parse_equals_serial(tmp_path, case, k):
    import genotok.regions as R

    text, regions = case
    old = R._parse_threads
    try:
        R._parse_threads = lambda n: k  # force k chunks even for tiny inputs
        rs = _parse_text(tmp_path, text)
    finally:
        R._parse_threads = old
    assert _tuples(rs) == regions
    assert list(rs.chrom_names) == list(dict.fromkeys(c for c, _, _ in regions))


@pytest.mark.parametrize("bad_at", [1, 500, 999])
def test_parallel_parse_reports_the_first_error_line(tmp_path, bad_at):
    import genotok.regions as R

    lines = [f"chr{i % 3}\t{i}\t{i + 5}" for i in range(1000)]
    lines[bad_at - 1] = "chr1\t9\t1"
    lines[-1] = "chr1\t9\t2"  # a second error later: the first must be reported
    (tmp_path / "x.bed").write_text("\n".join(lines) + "\n")
    old = R._parse_threads
    try:
        R._parse_threads = lambda n: 3
        with pytest.raises(BedParseError, match=rf"x.bed:{bad_at}: end is before start"):
            RegionSet.from_bed(tmp_path / "x.bed")
        # a header can only be the file's first data line, even when it lands in a later chunk
        (tmp_path / "h.bed").write_text("#c\n" * 2000 + "chrom\tstart\tend\n" + "chr1\t1\t2\n" * 5)
        assert len(RegionSet.from_bed(tmp_path / "h.bed")) == 5
    finally:
        R._parse_threads = old
