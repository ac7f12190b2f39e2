"""BED parsing, region strings and every in-memory input, against plain-Python oracles."""

from __future__ import annotations

import gzip
import hashlib
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import genotok.bed as B
import genotok.regions as R
from genotok import BedParseError, RegionParseError, RegionSet, _io, as_regions
from genotok._io import atomic_write, file_digest, read_bytes
from genotok.regions import parse_region_strings

from . import naive_regions as naive

FIXTURE_OK = [HealthCheck.function_scoped_fixture]

# contig names as they come: `_ - : . *` inside, digits, one letter; never '#' first or blank
NAMES = st.one_of(
    st.sampled_from(["chr1", "chr2", "chrX", "chrUn_KI270742v1", "chr1_KI270706v1_random",
                     "HLA-A*01:01", "scaffold.7", "1", "chrM"]),
    st.text("abcXY019_-:.*", min_size=1, max_size=10),
)
COORD = st.one_of(st.integers(0, 1000), st.integers(0, 2**62))
REGION = st.tuples(NAMES, COORD, st.one_of(st.just(0), st.integers(0, 5000), COORD)).map(
    lambda t: (t[0], t[1], min(t[1] + t[2], 2**62)))

# kernel message -> oracle kind
KINDS = {"too few columns": "columns", "start is not": "start", "end is not": "end",
         "negative": "negative", "larger than": "overflow", "end is before start": "order",
         "binary": "binary", "empty chromosome": "empty", "mixed tab": "mixed", "UTF-8": "utf8"}


def _kind(err: BedParseError) -> str:
    return next(k for m, k in KINDS.items() if m in err.problem)


def _write(tmp_path, text: bytes, gz: bool = False, name: str = "x.bed"):
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def _parse_text(tmp_path, text: bytes, gz: bool = False) -> RegionSet:
    return RegionSet.from_bed(_write(tmp_path, text, gz))


def _tuples(rs: RegionSet):
    return [(rs.chrom_names[c], int(s), int(e)) for c, s, e in zip(rs.codes, rs.starts, rs.ends)]


def _first_seen(regions):
    return list(dict.fromkeys(c for c, _, _ in regions))


# ------------------------------------------------------------------------------ BED dialects
@st.composite
def bed_texts(draw):
    regions = draw(st.lists(REGION, max_size=40))
    sep = draw(st.sampled_from(["\t", " ", "   "]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    extra = draw(st.sampled_from(["", "{s}peak{s}0{s}.", "{s}.{s}.{s}+{s}1.5{s}2{s}3{s}50",
                                  "{s}name with\ttabs"])).format(s=sep)
    if sep != "\t" and "\t" in extra:
        extra = ""
    lines = []
    for _ in range(draw(st.integers(0, 2))):
        lines.append(draw(st.sampled_from(["# comment", "track name=x", "browser position chr1",
                                           "", "  ", "\t"])))
    if draw(st.booleans()):
        lines.append(sep.join(["chrom", "start", "end"]) + (extra and sep + "name"))
    for c, s, e in regions:
        lines.append(sep.join([c, str(s), str(e)]) + extra)
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["# comment", "track name=x", "browser position chr1",
                                               "", "  ", "#chrom\tstart\tend"])))
    text = eol.join(lines)
    if draw(st.booleans()):
        text += eol
    return text.encode(), regions


@settings(max_examples=200, deadline=None, suppress_health_check=FIXTURE_OK)
@given(bed_texts(), st.booleans())
def test_bed_dialects_parse_back_exactly(tmp_path, case, gz):
    text, regions = case
    rs = _parse_text(tmp_path, text, gz)
    assert _tuples(rs) == regions == naive.parse(text)
    assert rs.from_file and rs.source.endswith(".gz" if gz else ".bed")
    assert list(rs.chrom_names) == _first_seen(regions)  # codes in order of first appearance
    assert rs.codes.dtype == np.int32 and rs.starts.dtype == rs.ends.dtype == np.int64


BAD_LINES = [
    ("chr1\t100", "columns"),
    ("chr1", "columns"),
    ("chr1\t100\t", "columns"),
    ("chr1\tabc\t200", "start"),
    ("chr1\t\t200", "start"),
    ("chr1\t100\t2x0", "end"),
    ("chr1\t100\t2e5", "end"),
    ("chr1\t-5\t200", "negative"),
    ("chr1\t100\t-200", "negative"),
    ("chr1\t100\t99999999999999999999", "overflow"),
    ("chr1\t46116860184273879040\t5", "overflow"),  # wraps int64 if the parser is careless
    (f"chr1\t0\t{2**62 + 1}", "overflow"),
    ("chr1\t300\t200", "order"),
    ("chr1\t100\x00\t200", "binary"),
    ("chr1\t100\t200\x01", "binary"),
    ("chr1\x1f\t100\t200", "binary"),
    ("\t100\t200", "empty"),
    (" chr1 100 200", "empty"),
    ("chr1 100\t200", "mixed"),
    ("chr1\t100 200\t300", "mixed"),
    ("chr1 100 200\t300", "mixed"),
    ("chrom\tstart\tend", "start"),  # a header after data
    ("chr\xe9\t1\t2", "utf8"),
]


@settings(max_examples=120, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(REGION, min_size=1, max_size=20), st.sampled_from(BAD_LINES), st.data())
def test_malformed_line_reports_its_line(tmp_path, regions, bad, data):
    line, kind = bad
    k = data.draw(st.integers(1, len(regions)))  # after at least one data line
    lines = [f"{c}\t{s}\t{e}" for c, s, e in regions]
    lines.insert(k, line)
    text = ("\n".join(lines) + data.draw(st.sampled_from(["\n", ""]))).encode("latin-1")
    with pytest.raises(BedParseError) as info:
        _parse_text(tmp_path, text)
    assert info.value.line == k + 1 and _kind(info.value) == kind
    assert f"x.bed:{k + 1}: " in str(info.value)
    if kind != "utf8":  # the offending line is shown, repr'd
        assert repr(line.encode("latin-1"))[2:-1][:60] in str(info.value)
    with pytest.raises(naive.NaiveError) as oracle:
        naive.parse(text)
    assert (oracle.value.line, oracle.value.kind) == (k + 1, kind)


# random byte soup: the kernel and the oracle agree on every input, good or bad
_FIELD = st.text("c1-+09x,#\x00", max_size=4)
_LINE = st.one_of(
    st.text("c1 \t\t\t-+09#x\r\x00,", max_size=14),  # anything
    st.tuples(st.lists(_FIELD, max_size=5), st.sampled_from(["\t", " ", "  ", " \t", "\t "]),
              st.sampled_from(["", "\r", " "])).map(lambda t: t[1].join(t[0]) + t[2]),  # fields
)
# lines the parser's one-pass fast path takes, and near misses it must leave to the full rules
_NEAR = st.tuples(
    st.sampled_from(["chr1", "c", "t", "b", "track", "browser", "trackX", "tr", "b1", "#c", "c\r"]),
    st.sampled_from(["\t", " ", "\t\t"]),
    st.sampled_from(["0", "7", "+7", "-7", "007", "1" * 17, "9" * 18, "1" * 19, "", "4x"]),
    st.sampled_from(["\t", " "]),
    st.sampled_from(["8", "7", "6", "9" * 18, "1" * 19, "", "8x", "8 ", "8\r", "8\r\r", "8\rx"]),
    st.sampled_from(["", "\t", "\tname\t0\t.", "\tx\x00y", "\tx\x1fy", "\tx\ry", "\t\x7f\xc3\xa9"]),
).map("".join)
SOUP = st.lists(st.one_of(_LINE, _NEAR), max_size=8).map(lambda lines: "\n".join(lines).encode())


def _assert_parse_equals(tmp_path, text, expected):
    """The parser's records equal the oracle's, or both refuse the text at the same line for
    the same reason."""
    try:
        got = _parse_text(tmp_path, text)
    except BedParseError as exc:
        assert isinstance(expected, naive.NaiveError), (text, exc)
        assert (exc.line, _kind(exc)) == (expected.line, expected.kind), (text, exc)
    else:
        assert not isinstance(expected, naive.NaiveError), (text, expected)
        assert _tuples(got) == expected


@settings(max_examples=400, deadline=None, suppress_health_check=FIXTURE_OK)
@given(SOUP, st.booleans())
def test_byte_soup_agrees_with_oracle(tmp_path, text, parallel):
    try:
        expected = naive.parse(text)
    except naive.NaiveError as exc:
        expected = exc
    old = B._parse_threads
    B._parse_threads = (lambda n: 3) if parallel else old
    try:
        _assert_parse_equals(tmp_path, text, expected)
    finally:
        B._parse_threads = old


def test_header_rules(tmp_path):
    header_first = b"# c\ntrack x\n\nchrom\tstart\tend\tname\nchr1\t1\t2\tx\n"
    assert _tuples(_parse_text(tmp_path, header_first)) == [("chr1", 1, 2)]
    assert _tuples(_parse_text(tmp_path, b"chrom start end\nchr1 1 2\n")) == [("chr1", 1, 2)]
    # one bad coordinate on the first line is a broken data line, not a header
    with pytest.raises(BedParseError, match=r"x.bed:1: end is not") as info:
        _parse_text(tmp_path, b"chr1\t1\tx\nchr1\t1\t2\n")
    assert "'chr1\\t1\\tx'" in str(info.value)
    with pytest.raises(BedParseError, match=r"x.bed:3: start is not"):  # only one header
        _parse_text(tmp_path, b"chrom\tstart\tend\nchr1\t1\t2\nchrom\tstart\tend\n")
    with pytest.raises(BedParseError, match=r"x.bed:2: start is not"):
        _parse_text(tmp_path, b"chrom\tstart\tend\nchrom\tstart\tend\n")


def test_coordinate_limits_and_signs(tmp_path):
    top = 2**62
    assert _tuples(_parse_text(tmp_path, f"chr1\t{top}\t{top}\n".encode())) == [("chr1", top, top)]
    assert _tuples(_parse_text(tmp_path, b"chr1\t+5\t007\n")) == [("chr1", 5, 7)]
    assert _tuples(_parse_text(tmp_path, b"chr1\t0000000000000000000000005\t6\n")) == [("chr1", 5, 6)]
    with pytest.raises(BedParseError, match="larger than 2"):
        _parse_text(tmp_path, f"chr1\t0\t{top + 1}\n".encode())
    with pytest.raises(BedParseError, match="end is not"):  # digits then junk: not a number
        _parse_text(tmp_path, b"chr1\t0\t99999999999999999999999x\n")


def test_long_lines_are_shown_truncated(tmp_path):
    line = "chr1\t5\t1\t" + "x" * 500
    with pytest.raises(BedParseError) as info:
        _parse_text(tmp_path, line.encode())
    shown = str(info.value).split(": ", 2)[-1]
    assert shown.startswith("'chr1\\t5\\t1\\txxx") and shown.endswith("...'") and len(shown) < 100


def test_empty_inputs(tmp_path):
    for text in (b"", b"\n\n", b"\r\n", b"# only a comment\n", b"track name=x\n", b"browser x"):
        for gz in (False, True):
            rs = _parse_text(tmp_path, text, gz)
            assert len(rs) == 0 and rs.chrom_names == () and rs.codes.dtype == np.int32
    (tmp_path / "zero.bed.gz").write_bytes(b"")  # a 0-byte file named .gz: not gzip, empty
    assert len(RegionSet.from_bed(tmp_path / "zero.bed.gz")) == 0
    for empty in ([], (), np.array([], dtype=str), {"chrom": [], "start": [], "end": []}):
        rs = as_regions(empty)
        assert len(rs) == 0 and rs == RegionSet.empty()
    assert len(parse_region_strings([])) == 0 and len(RegionSet.from_tuples([])) == 0


def test_crlf_and_no_final_newline(tmp_path):
    rs = _parse_text(tmp_path, b"chr1\t1\t2\r\nchr2\t3\t4")
    assert _tuples(rs) == [("chr1", 1, 2), ("chr2", 3, 4)]
    assert _tuples(_parse_text(tmp_path, b"chr1 1 2\r")) == [("chr1", 1, 2)]


# ------------------------------------------------------------------------------ files and gzip
def test_file_errors(tmp_path):
    with pytest.raises(BedParseError, match="no such file") as info:
        RegionSet.from_bed(tmp_path / "missing.bed")
    assert info.value.line is None and info.value.path.endswith("missing.bed")
    with pytest.raises(BedParseError, match="is a directory"):
        RegionSet.from_bed(tmp_path)
    good = gzip.compress(b"chr1\t1\t2\n" * 1000)
    (tmp_path / "trunc.bed.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(BedParseError, match="truncated gzip.*re-"):
        RegionSet.from_bed(tmp_path / "trunc.bed.gz")
    (tmp_path / "header_only.bed.gz").write_bytes(good[:5])
    with pytest.raises(BedParseError, match="gzip"):
        RegionSet.from_bed(tmp_path / "header_only.bed.gz")
    corrupt = bytearray(good)
    corrupt[12:40] = bytes(x ^ 0xFF for x in corrupt[12:40])
    (tmp_path / "bad.bed.gz").write_bytes(bytes(corrupt))
    with pytest.raises(BedParseError, match="gzip"):
        RegionSet.from_bed(tmp_path / "bad.bed.gz")
    crc = bytearray(good)
    crc[-6] ^= 0xFF  # the CRC32 of the trailer
    (tmp_path / "crc.bed.gz").write_bytes(bytes(crc))
    with pytest.raises(BedParseError, match="gzip"):
        RegionSet.from_bed(tmp_path / "crc.bed.gz")
    (tmp_path / "junk.bed").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(BedParseError, match="binary data") as info:
        RegionSet.from_bed(tmp_path / "junk.bed")
    assert info.value.line == 1
    (tmp_path / "latin.bed").write_bytes(b"chr1\t1\t2\nchr\xe9\t1\t2\n")
    with pytest.raises(BedParseError, match=r"latin.bed:2: .*UTF-8"):
        RegionSet.from_bed(tmp_path / "latin.bed")
    # the earliest problem wins, whether the parser or the UTF-8 check finds it
    (tmp_path / "both.bed").write_bytes(b"chr\xe9\t1\t2\nchr1\t5\t1\n")
    with pytest.raises(BedParseError, match=r"both.bed:1: .*UTF-8"):
        RegionSet.from_bed(tmp_path / "both.bed")
    (tmp_path / "both2.bed").write_bytes(b"chr1\t5\t1\nchr\xe9\t1\t2\n")
    with pytest.raises(BedParseError, match=r"both2.bed:1: end is before start"):
        RegionSet.from_bed(tmp_path / "both2.bed")


def test_gzip_detected_by_magic_not_name(tmp_path):
    (tmp_path / "plain_name.bed").write_bytes(gzip.compress(b"chr1\t1\t2\n"))
    assert _tuples(RegionSet.from_bed(tmp_path / "plain_name.bed")) == [("chr1", 1, 2)]
    (tmp_path / "not_gz.bed.gz").write_bytes(b"chr1\t1\t2\n")
    assert _tuples(RegionSet.from_bed(tmp_path / "not_gz.bed.gz")) == [("chr1", 1, 2)]
    # multi-member streams (BGZF is one): every member is read, an empty member too
    members = gzip.compress(b"chr1\t1\t2\n") + gzip.compress(b"") + gzip.compress(b"chr2\t3\t4\n")
    (tmp_path / "multi.bed.gz").write_bytes(members)
    assert _tuples(RegionSet.from_bed(tmp_path / "multi.bed.gz")) == [("chr1", 1, 2), ("chr2", 3, 4)]
    buf = read_bytes(tmp_path / "multi.bed.gz")
    assert buf.dtype == np.uint8 and buf.tobytes() == b"chr1\t1\t2\nchr2\t3\t4\n"


def test_file_digest(tmp_path):
    p = tmp_path / "d.bin"
    data = os.urandom(3 << 20 | 17)
    p.write_bytes(data)
    assert file_digest(p) == hashlib.sha256(data).hexdigest()
    assert file_digest(p, "md5", chunk=1000) == hashlib.md5(data).hexdigest()


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
    with pytest.raises(KeyboardInterrupt):  # an old file survives a failed rewrite untouched
        with atomic_write(target, "wb") as fh:
            fh.write(b"new")
            raise KeyboardInterrupt
    assert target.read_text() == "done" and len(list(tmp_path.iterdir())) == 1


def test_many_contigs(tmp_path):
    n = 120_000  # scaffold assemblies: the name table grows past its first sizes
    text = "".join(f"scaffold_{i}\t{i}\t{i + 10}\n" for i in range(n)).encode()
    rs = _parse_text(tmp_path, text)
    assert len(rs.chrom_names) == n and rs.chrom_names[77_777] == "scaffold_77777"
    assert rs.codes.tolist() == list(range(n))
    shuffled = np.random.default_rng(0).permutation(n)  # many chromosome changes, revisits
    text = "".join(f"s{i % 997}\t{i}\t{i + 1}\n" for i in shuffled).encode()
    rs = _parse_text(tmp_path, text)
    assert _tuples(rs) == naive.parse(text)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(bed_texts(), st.integers(1, 4))
def test_parallel_parse_equals_serial(tmp_path, case, k):
    text, regions = case
    old = B._parse_threads
    try:
        B._parse_threads = lambda n: k  # force k chunks even for tiny inputs
        rs = _parse_text(tmp_path, text)
    finally:
        B._parse_threads = old
    assert _tuples(rs) == regions
    assert list(rs.chrom_names) == _first_seen(regions)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20_000), st.booleans()), max_size=8), st.integers(1, 5))
def test_split_lines_cuts_after_the_first_newline_at_or_past_each_target(lines, k):
    # lines longer than the first 4 KiB search window, and a last line without a newline
    text = b"".join(b"x" * n + (b"\n" if nl else b"") for n, nl in lines)
    buf = np.frombuffer(text, np.uint8)
    ranges = B._split_lines(buf, k)
    assert ranges[0][0] == 0 and ranges[-1][1] == buf.size
    assert all(b == c and a < b for (a, b), (c, _) in zip(ranges, ranges[1:]))
    newlines = np.flatnonzero(buf == 10)
    for a, b in ranges[:-1]:
        assert buf[b - 1] == 10
    want, at = [], 0
    for i in range(1, k):  # the first newline at or after each target, within 1 MiB
        target = max(at, i * buf.size // k)
        nl = newlines[(newlines >= target) & (newlines < target + (1 << 20))]
        if nl.size == 0:
            break
        at = int(nl[0]) + 1
        want.append(at)
    assert [b for _, b in ranges[:-1]] == [c for c in want if c < buf.size]


@pytest.mark.parametrize("bad_at", [1, 500, 999])
def test_parallel_parse_reports_the_first_error_line(tmp_path, bad_at):
    lines = [f"chr{i % 3}\t{i}\t{i + 5}" for i in range(1000)]
    lines[bad_at - 1] = "chr1\t9\t1"
    lines[-1] = "chr1\t9\t2"  # a second error later: the first must be reported
    (tmp_path / "x.bed").write_text("\n".join(lines) + "\n")
    old = B._parse_threads
    try:
        B._parse_threads = lambda n: 3
        with pytest.raises(BedParseError, match=rf"x.bed:{bad_at}: end is before start"):
            RegionSet.from_bed(tmp_path / "x.bed")
        # a header can only be the file's first data line, even when it lands in a later chunk
        (tmp_path / "h.bed").write_text("#c\n" * 2000 + "chrom\tstart\tend\n" + "chr1\t1\t2\n" * 5)
        assert len(RegionSet.from_bed(tmp_path / "h.bed")) == 5
    finally:
        B._parse_threads = old


# ------------------------------------------------------------------------------ region strings
@settings(max_examples=150, deadline=None)
@given(st.lists(REGION, max_size=20), st.sampled_from([None, ":", "-", "_"]))
def test_strings_round_trip(regions, sep):
    rs = RegionSet.from_tuples(regions)
    strings = rs.to_strings()
    if sep in ("-", "_"):
        strings = [f"{c}{sep}{s}{sep}{e}" for c, s, e in regions]
    back = RegionSet.from_strings(strings, sep=sep)
    assert back == rs and back.chrom_names == rs.chrom_names
    assert np.array_equal(back.codes, rs.codes)
    assert as_regions(strings) == rs
    assert [naive.parse_region_string(x, sep) for x in strings] == regions


STRING_SOUP = st.text("c1_-:,09\n ", max_size=12)


@settings(max_examples=400, deadline=None)
@given(st.lists(STRING_SOUP, min_size=1, max_size=6), st.sampled_from([None, ":", "-", "_"]))
def test_region_strings_agree_with_oracle(strings, sep):
    expected = [naive.parse_region_string(x, sep) for x in strings]
    bad = [i for i, x in enumerate(expected) if x is None]
    if bad:
        with pytest.raises(RegionParseError) as info:
            parse_region_strings(strings, sep=sep)
        listed = [int(i) for i in re.findall(r"\[(\d+)\] ", str(info.value))]
        assert listed == bad[:5] and str(info.value).startswith(f"{len(bad)} of {len(strings)} ")
        assert R._region_strings_kernel(strings, sep) is None
        return
    if any(e < s for _, s, e in expected):
        with pytest.raises(RegionParseError, match="end is before start"):
            parse_region_strings(strings, sep=sep)
        return
    rs = parse_region_strings(strings, sep=sep)
    assert _tuples(rs) == expected and list(rs.chrom_names) == _first_seen(expected)
    # the numba path and the regular-expression path give identical arrays
    names, codes, starts, ends = R._region_strings_kernel(strings, sep)
    ref = R._region_strings_reference(strings, R._pattern(sep), sep)
    assert names == ref[0] and np.array_equal(codes, ref[1])
    assert np.array_equal(starts, ref[2]) and np.array_equal(ends, ref[3])


def test_string_conventions():
    rs = RegionSet.from_strings(["chr1:1,000-2,000", "chrUn_KI270742v1-5-10", "HLA-A*01:01_1_10",
                                 "chrUn_KI270742v1:5-10", "HLA-A*01:01-1-10"])
    assert _tuples(rs) == [("chr1", 1000, 2000), ("chrUn_KI270742v1", 5, 10), ("HLA-A*01:01", 1, 10),
                           ("chrUn_KI270742v1", 5, 10), ("HLA-A*01:01", 1, 10)]
    assert rs.chrom_names == ("chr1", "chrUn_KI270742v1", "HLA-A*01:01")
    assert _tuples(RegionSet.from_strings(["chr1:101-200"], one_based=True)) == [("chr1", 100, 200)]
    assert _tuples(RegionSet.from_strings(["chr1_5_10"], sep="_")) == [("chr1", 5, 10)]
    assert _tuples(parse_region_strings(np.array(["chrX-1-2"]))) == [("chrX", 1, 2)]
    assert _tuples(parse_region_strings(["chr\u00e9:1-2", "\u67d3\u8272\u4f53:3-4"])) == [
        ("chr\u00e9", 1, 2), ("\u67d3\u8272\u4f53", 3, 4)]
    with pytest.raises(RegionParseError, match=r"2 of 3 .*\[0\] 'nope'.*\[2\] 'chr1:5'"):
        RegionSet.from_strings(["nope", "chr1:1-2", "chr1:5"])
    with pytest.raises(RegionParseError, match=r"7 of 7 .*\[4\].* and 2 more"):
        RegionSet.from_strings(["x"] * 7)
    with pytest.raises(RegionParseError, match=r"\[0\] 'chr1:1,00-2'"):  # bad thousands groups
        RegionSet.from_strings(["chr1:1,00-2"])
    with pytest.raises(RegionParseError, match=r"larger than 2\^62"):
        RegionSet.from_strings(["chr1:99999999999999999999-1"])
    with pytest.raises(RegionParseError, match=r"\[1\] 'chr1:1-2\\n'"):  # no trailing newline
        RegionSet.from_strings(["chr1:1-2", "chr1:1-2\n"])
    with pytest.raises(RegionParseError, match=r"\[1\] None"):
        RegionSet.from_strings(["chr1:1-2", None])
    with pytest.raises(RegionParseError, match=r"chrom_start_end: \[0\] 'chr1:1-2'"):
        RegionSet.from_strings(["chr1:1-2"], sep="_")
    with pytest.raises(RegionParseError, match=r"\[0\] 'chr1:10-5': end is before start"):
        RegionSet.from_strings(["chr1:10-5"])
    with pytest.raises(RegionParseError, match=r"1-based start must be >= 1"):
        RegionSet.from_strings(["chr1:0-5"], one_based=True)
    with pytest.raises(ValueError, match="sep must be"):
        RegionSet.from_strings(["chr1:1-2"], sep="|")


# ------------------------------------------------------------------------------ in memory
@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(REGION, max_size=20))
def test_every_input_type_gives_identical_arrays(tmp_path, regions):
    chroms = [c for c, _, _ in regions]
    starts = [s for _, s, _ in regions]
    ends = [e for _, _, e in regions]
    path = _write(tmp_path, "".join(f"{c}\t{s}\t{e}\n" for c, s, e in regions).encode())
    ways = [RegionSet.from_tuples(regions),
            RegionSet.from_arrays(np.array(chroms, dtype=object), starts, np.array(ends, np.int64)),
            RegionSet.from_arrays([c.encode() for c in chroms], starts, ends),
            RegionSet.from_frame({"Chrom": chroms, "chromStart": starts, "chromEnd": ends}),
            RegionSet.from_strings([f"{c}:{s}-{e}" for c, s, e in regions]),
            RegionSet.from_bed(path), as_regions(str(path)), as_regions(regions),
            as_regions((chroms, starts, ends))]
    ref = ways[0]
    for rs in ways:
        assert rs.chrom_names == tuple(_first_seen(regions))
        assert np.array_equal(rs.codes, ref.codes) and np.array_equal(rs.starts, ref.starts)
        assert np.array_equal(rs.ends, ref.ends) and rs == ref


def test_frames_and_dispatch():
    a = RegionSet.from_tuples([("chr2", 10, 20), ("chr1", 5, 6), ("chr2", 1, 2)])
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"seqnames": ["chr2", "chr1", "chr2"], "START": [10, 5, 1],
                       "end": [20.0, 6.0, 2.0], "score": [1, 2, 3]})
    assert as_regions(df) == a and RegionSet.from_frame(df) == a
    df2 = pd.DataFrame({"chromosome": pd.Categorical(["chr2", "chr1", "chr2"]),
                        "chromStart": np.array([10, 5, 1], np.uint32), "chromEnd": [20, 6, 2]})
    assert as_regions(df2) == a
    assert as_regions(pd.Series(["chr2:10-20", "chr1:5-6", "chr2:1-2"])) == a
    assert as_regions(x for x in a.to_strings()) == a
    assert as_regions(np.array(a.to_strings(), dtype=object)) == a
    # three region tuples are not three columns
    assert as_regions((("chr2", 10, 20), ("chr1", 5, 6), ("chr2", 1, 2))) == a
    assert as_regions((["chr2", "chr1", "chr2"], (10, 5, 1), (20, 6, 2))) == a
    assert as_regions(a) is a
    # Ensembl names read as numbers
    ens = RegionSet.from_frame({"chr": np.array([1, 2, 1]), "start": [0, 0, 5], "end": [1, 1, 6]})
    assert ens.chrom_names == ("1", "2") and ens.codes.tolist() == [0, 1, 0]
    mixed = RegionSet.from_arrays(np.array([1, "X", "1"], dtype=object), [0, 0, 0], [1, 1, 1])
    assert mixed.chrom_names == ("1", "X") and mixed.codes.tolist() == [0, 1, 0]


@pytest.mark.parametrize("make, pattern", [
    (lambda: RegionSet.from_frame({"chrom": ["chr1"], "begin": [1], "end": [2]}), "no start column"),
    (lambda: RegionSet.from_arrays(["chr1", "chr1"], [1, 1.5], [2, 2]), r"start\[1\] = 1.5 is not an integer"),
    (lambda: RegionSet.from_arrays(["chr1"], [np.nan], [2]), r"start\[0\] = nan"),
    (lambda: RegionSet.from_arrays(["chr1"], [True], [2]), "booleans"),
    (lambda: RegionSet.from_arrays(["chr1"], [1], ["2x"]), r"end\[0\] = '2x' is not an integer"),
    (lambda: RegionSet.from_arrays(["chr1", "chr2"], [1], [2]), "differ in length"),
    (lambda: RegionSet.from_arrays(["chr1"], [[1]], [2]), "one-dimensional"),
    (lambda: RegionSet.from_arrays(np.array([1.5]), [1], [2]), "must be strings"),
    (lambda: RegionSet.from_arrays(np.array(["chr1", None], dtype=object), [1, 1], [2, 2]),
     r"chromosome \[1\] is None"),
    (lambda: RegionSet.from_arrays(["chr1", ""], [1, 1], [2, 2]), r"chromosome \[1\] is an empty name"),
    (lambda: RegionSet.from_arrays([b"chr1", b"\xff"], [1, 1], [2, 2]), r"\[1\] b'\\xff' is not valid UTF-8"),
    (lambda: RegionSet.from_tuples([("chr1", 1, 2), ("chr1", -1, 2)]), r"region 1 \(chr1:-1-2\): negative start"),
    (lambda: RegionSet.from_tuples([("chr1", 1, 2), ("chr1", 5, 2)]), r"region 1 .*end is before start"),
    (lambda: RegionSet.from_tuples([("chr1", 1.5, 3)]), r"start\[0\] = 1.5"),
    (lambda: RegionSet.from_tuples([("chr1", 1, 2**63)]), r"end\[0\]"),
    (lambda: RegionSet.from_tuples([("chr1", 0, 2**62 + 1)]), r"end\[0\]"),
    (lambda: RegionSet.from_arrays(["chr1"], [0], np.array([2**62 + 1])), "larger than 2"),
    (lambda: RegionSet.from_arrays(["chr1"], [0], np.array([2**63], np.uint64)), "larger than 2"),
    (lambda: RegionSet.from_tuples([("chr1", 1)]), r"region 0 .* is not a .chrom, start, end. tuple"),
    (lambda: as_regions([("chr1", 1, 2), "chr1:1-2"]), "a string among"),
    (lambda: as_regions(42), "cannot read regions"),
    (lambda: as_regions("chr1:1-2-no-file.bed"), "no such file, and not a region string"),
])
def test_in_memory_errors_name_the_element(make, pattern):
    with pytest.raises(RegionParseError, match=pattern):
        make()


def test_access_and_repr():
    rs = RegionSet.from_strings(["chr1:100-200", "chr2:5-6", "chr1:0-0", "chrX:7-9"])
    assert len(rs) == 4 and rs.chrom_of(1) == "chr2"
    assert rs.to_strings() == ["chr1:100-200", "chr2:5-6", "chr1:0-0", "chrX:7-9"]
    sub = rs.take([3, 0])
    assert sub.to_strings() == ["chrX:7-9", "chr1:100-200"] and sub.chrom_names == rs.chrom_names
    masked = rs.take(rs.codes == 0)
    assert masked.to_strings() == ["chr1:100-200", "chr1:0-0"]
    assert rs != sub and rs == RegionSet.from_strings(rs.to_strings()) and rs != "chr1:100-200"
    assert "4 regions on 3 chromosomes" in repr(rs) and "chr1:100-200" in repr(rs) and "…" in repr(rs)
    assert "0 regions" in repr(RegionSet.empty())
    # equality compares names, not code tables
    other = RegionSet(("chrX", "chr1"), np.array([1], np.int32), np.array([0]), np.array([1]))
    assert other == RegionSet.from_tuples([("chr1", 0, 1)])


def test_parse_into_checks_what_numba_would_not():
    from genotok.kernels import parse as _parse

    buf = np.frombuffer(b"chr1\t1\t2\nchr1\t3\t4", np.uint8)  # two lines, the last unterminated
    need, binary = _parse.bound(buf)
    assert (need, binary) == (2, False)
    ok = (np.empty(2, np.int32), np.empty(2, np.int64), np.empty(2, np.int64))
    assert _parse.parse_into(buf, binary, *ok)[1].tolist() == [1, 3]
    with pytest.raises(ValueError, match="room for 1 records"):  # the kernel stops at the end
        _parse.parse_into(buf, binary, np.empty(1, np.int32), np.empty(1, np.int64),
                          np.empty(1, np.int64))
    for bad in ((ok[0].astype(np.int64), *ok[1:]),                     # wrong dtype
                (ok[0], np.empty(4, np.int64)[::2], ok[2]),            # not contiguous
                (ok[0], ok[1], np.empty(3, np.int64))):                # sizes differ
        with pytest.raises(ValueError, match="parse output"):
            _parse.parse_into(buf, binary, *bad)


# ------------------------------------------------------------------------------ resource bounds
def _record_lines(text: bytes) -> int:
    """Oracle of ``_parse.bound``: lines whose first byte is not a newline, tab, space or ``#``,
    nor a CR that ends the line (the lines that may hold a record)."""
    count = 0
    for k in range(len(text)):
        if k == 0 or text[k - 1] == 10:
            b = text[k]
            if b == 13:
                count += k + 1 < len(text) and text[k + 1] != 10
            else:
                count += b not in (10, 9, 32, 35)
    return count


# short lines of the bytes that matter to the bound: newlines, CRs, separators, '#', controls
BOUND_SOUP = st.lists(st.one_of(st.text("\n\r\t #c1\x00", max_size=12),
                                st.sampled_from(["\n" * 17, "\r\n" * 9, "#\n" * 5, "\r"])),
                      max_size=12).map(lambda parts: "".join(parts).encode())


@settings(max_examples=400, deadline=None)
@given(BOUND_SOUP, st.integers(0, 15))
def test_bound_counts_the_lines_that_may_hold_a_record(text, shift):
    from genotok.kernels import parse as _parse

    # a shifted view moves where the eight-byte words start (head, words, tail byte loops)
    buf = np.frombuffer(b"x" * shift + text, np.uint8)[shift:]
    assert _parse.bound(buf) == (_record_lines(text), any(b < 32 and b not in (9, 10, 13)
                                                           for b in text))
    try:
        rs = _parse_text_bytes(buf)
    except BedParseError:
        return
    assert len(rs) <= _record_lines(text)


def _parse_text_bytes(buf, path: str = "x.bed") -> RegionSet:
    """A BED text in memory parsed as ``RegionSet.from_bed`` parses a file's."""
    return RegionSet(*B._read_buffer(buf, path), source=path, from_file=True, validate=False)


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(st.one_of(_LINE, _NEAR, st.sampled_from(["", "", "\r"])), max_size=12),
       st.sampled_from([1, 2, 3, 5, 8, 9, 16]))
def test_newline_blocks_of_any_size_parse_the_same(tmp_path, lines, block):
    """The parser finds newlines ``_parse.BLOCK`` at a time: blocks that end anywhere (inside
    runs of blank lines too) give the oracle's records or error."""
    from genotok.kernels import parse as _parse

    text = "\n".join(lines).encode()
    try:
        expected = naive.parse(text)
    except naive.NaiveError as exc:
        expected = exc
    old = _parse.BLOCK
    _parse.BLOCK = block
    try:
        _assert_parse_equals(tmp_path, text, expected)
    finally:
        _parse.BLOCK = old


@pytest.mark.parametrize("filler", [b"\n", b"\r\n", b"#\n", b" \n", b"\t\r\n"])
def test_blank_and_comment_lines_take_no_memory(filler):
    """Issue 19: a .bed.gz of blank lines took 8 bytes per newline (2.5 GB for 255 KB). Now the
    parse allocates for the lines that may hold a record, whatever else the file holds."""
    import tracemalloc

    from genotok.kernels import parse as _parse

    _parse_text_bytes(np.frombuffer(b"chr1\t1\t2\n", np.uint8), "warm")  # compiled
    text = filler * (2_000_000 // len(filler)) + b"chr1\t5\t9\n" + filler * 1000
    buf = np.frombuffer(text, np.uint8)
    assert _parse.bound(buf) == (1, False)
    tracemalloc.start()
    try:
        rs = _parse_text_bytes(buf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _tuples(rs) == [("chr1", 5, 9)]
    assert rs.codes.base is None or rs.codes.base.size <= 1
    assert peak < 100_000, peak  # the old line index: 16 MB for these 2M blank lines


@pytest.mark.parametrize("block", [2, 9, 4096])
def test_long_lines_and_crlf_cross_newline_blocks(tmp_path, monkeypatch, block):
    from genotok.kernels import parse as _parse

    monkeypatch.setattr(_parse, "BLOCK", block)
    lines = [f"chr{i % 3}\t{i}\t{i + 7}\t" + "n" * (i * 997 % 5000) for i in range(40)]
    lines[7:7] = [""] * 30 + ["#c"] * 3 + [""] * 11  # runs of empty lines across blocks
    text = ("\r\n".join(lines) + "\r\n\r\n\n#x\r\n").encode()
    assert _tuples(_parse_text(tmp_path, text)) == naive.parse(text)
    text = text.replace(b"\r\n", b"\n")
    assert _tuples(_parse_text(tmp_path, text)) == naive.parse(text)


def test_bad_region_strings_report_positions():
    with pytest.raises(RegionParseError, match=r"\[1\] 'chr1:x-5'"):
        RegionSet.from_strings(["chr1:1-5", "chr1:x-5"])
