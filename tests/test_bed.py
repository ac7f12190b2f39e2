"""BED files read a block of lines at a time (``bed._read_file``): with blocks of a few bytes, so
that every line straddles blocks, a file parses exactly as its whole text does
(``bed._read_buffer``) and as the plain-Python oracle says, errors included (same class, line
and message), chromosome order included; and the blocks themselves (``_io.line_blocks``)."""

from __future__ import annotations

import gzip
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import genotok.bed as B
from genotok import BedParseError, RegionSet, Tokenizer, _io, _small

from . import naive_regions as naive
from .test_regions import BAD_LINES, REGION, SOUP, _kind, bed_texts

FIXTURE_OK = [HealthCheck.function_scoped_fixture]
BLOCK = st.one_of(st.integers(1, 16), st.integers(17, 300))


def _write(tmp_path, text: bytes, gz: bool, name: str = "x.bed"):
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def _outcome(read):
    """``("ok", names, codes, starts, ends)`` or ``("error", class, line, message)``."""
    try:
        names, codes, starts, ends = read()
    except BedParseError as exc:
        return "error", type(exc), exc.line, str(exc).split(": ", 1)[1]
    assert codes.dtype == np.int32 and starts.dtype == ends.dtype == np.int64
    return "ok", list(names), codes.tolist(), starts.tolist(), ends.tolist()


def _same_as_whole(path, text: bytes, block: int, allow_reversed: bool = False):
    """The blocked read equals the whole-buffer parse of the text; returns that outcome."""
    whole = _outcome(lambda: B._read_buffer(np.frombuffer(text, np.uint8), str(path),
                                           allow_reversed))
    blocked = _outcome(lambda: B._read_file(path, allow_reversed, block_bytes=block))
    assert blocked == whole, (text, block)
    return whole


def _agrees_with_oracle(outcome, text: bytes):
    try:
        expected = naive.parse(text)
    except naive.NaiveError as exc:
        assert outcome[0] == "error", (text, outcome)
        assert outcome[2] == exc.line and _kind(BedParseError("x", 1, outcome[3])) == exc.kind
        return
    assert outcome[0] == "ok", (text, outcome)
    names, codes, starts, ends = outcome[1:]
    assert [(names[c], s, e) for c, s, e in zip(codes, starts, ends)] == expected
    assert names == list(dict.fromkeys(c for c, _, _ in expected))  # order of first appearance


@pytest.fixture
def chunked(monkeypatch):
    """Blocks split into chunks too (as a large block is, on the numba threads)."""
    def use(on: bool):
        monkeypatch.setattr(B, "_parse_threads", (lambda n, floor=0: 3) if on else
                            B._parse_threads)
    return use


@settings(max_examples=200, deadline=None, suppress_health_check=FIXTURE_OK)
@given(bed_texts(), BLOCK, st.booleans(), st.booleans())
def test_dialects_in_blocks_parse_as_the_whole_text(tmp_path, chunked, case, block, gz, chunks):
    text, _ = case
    chunked(chunks)
    outcome = _same_as_whole(_write(tmp_path, text, gz), text, block)
    _agrees_with_oracle(outcome, text)


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(SOUP, BLOCK, st.booleans(), st.booleans())
def test_byte_soup_in_blocks_agrees(tmp_path, chunked, text, block, gz, chunks):
    chunked(chunks)
    outcome = _same_as_whole(_write(tmp_path, text, gz), text, block)
    _agrees_with_oracle(outcome, text)


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(REGION, min_size=1, max_size=30), st.sampled_from(BAD_LINES), st.data(), BLOCK)
def test_errors_in_later_blocks_name_the_file_line(tmp_path, regions, bad, data, block):
    line, _ = bad
    k = data.draw(st.integers(1, len(regions)))
    lines = [f"{c}\t{s}\t{e}" for c, s, e in regions]
    lines.insert(k, line)
    text = ("\n".join(lines) + "\n").encode("latin-1")
    outcome = _same_as_whole(_write(tmp_path, text, False), text, block)
    assert outcome[:3] == ("error", BedParseError, k + 1)
    _agrees_with_oracle(outcome, text)


@settings(max_examples=100, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(REGION, max_size=30), st.booleans(), BLOCK)
def test_allow_reversed_in_blocks(tmp_path, regions, swap, block):
    lines = [f"{c}\t{e}\t{s}" if swap and e > s else f"{c}\t{s}\t{e}" for c, s, e in regions]
    text = "".join(x + "\n" for x in lines).encode()
    path = _write(tmp_path, text, False)
    outcome = _same_as_whole(path, text, block, allow_reversed=True)
    assert outcome[0] == "ok" and len(outcome[2]) == len(regions)
    _same_as_whole(path, text, block)  # and refused alike without it


# ------------------------------------------------------------------------------ adversarial
@pytest.mark.parametrize("block", [1, 2, 7, 32, 300])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("chunks", [False, True])
def test_adversarial_files(tmp_path, chunked, block, gz, chunks):
    chunked(chunks)
    long = b"chr1\t5\t9\t" + b"n" * 1000 + b"\n"
    cases = {
        "line longer than the block": b"chr2\t1\t2\n" + long + b"chr1\t3\t4\r\n" + long[:-1],
        "only headers": b"# c\ntrack name=x\nbrowser position chr1\n\n#chrom\tstart\tend\n",
        "empty": b"",
        "blank lines": b"\n" * 300 + b"\r\n" * 40,
        "header after comments": b"#x\n" * 50 + b"chrom\tstart\tend\nchr1\t1\t2\n",
        "second header": b"chrom\tstart\tend\n" + b"#x\n" * 50 + b"chrom\tstart\tend\n",
        "header after data": b"chr1\t1\t2\n" + b"\n" * 40 + b"chrom\tstart\tend\n",
        # the header in a block's second chunk (the serial parse finds it), then another one
        # first in the next block (blocks of 32 in buffers of 64: the first ends after "chr1 0 1")
        "header after comments, twice": b"#x\n" * 13 + b"chrom\tstart\tend\nchr1\t0\t1\n"
                                        b"chrom\tstart\tend\nchr1\t1\t2\n",
        "CR before the cut": b"chr1\t1\t2\r\nchr2\t3\t4\r\n" * 20,
        "no final newline": b"chr1\t1\t2\nchr1\t3\t4",
        "bad name later": b"chr1\t1\t2\n" * 30 + b"chr\xe9\t1\t2\n",
        "bad name, then an earlier-line error": b"chr1\t1\t2\n" * 5 + b"chr\xe9\t1\t2\nchr1\t9\t1\n",
        "NUL after an error": b"chr1\t9\t1\n" + b"chr1\t1\t2\n" * 100 + b"chr1\t1\x00\t2\n",
        "NUL beyond 8 KiB": b"chr1\t9\t1\n" + b"chr1\t1\t2\n" * 1000 + b"chr1\t1\x00\t2\n",
        "comments first, then data": b"# " + b"x" * 300 + b"\n" + b"".join(
            f"c{i % 3}\t{i}\t{i + 1}\n".encode() for i in range(300)),
        "long lines first, then dense ones (the room grows)": b"".join(
            f"c1\t{i}\t{i + 1}\t".encode() + b"n" * 90 + b"\n" for i in range(20)) + b"".join(
            f"c2\t{i}\t{i + 1}\n".encode() for i in range(600)),
        "names in a new order each block": b"".join(
            f"c{(i * 7) % 13}\t{i}\t{i + 1}\n".encode() for i in range(200)),
    }
    for label, text in cases.items():
        path = _write(tmp_path, text, gz, name=label.replace(" ", "_"))
        outcome = _same_as_whole(path, text, block)
        _agrees_with_oracle(outcome, text)
        if label in ("only headers", "empty", "blank lines"):
            assert outcome == ("ok", [], [], [], [])
        if outcome[0] == "ok":  # arrays of the records' size, whatever room they had
            _, codes, starts, ends = B._read_file(path, block_bytes=block)
            assert codes.size == starts.size == ends.size == len(outcome[2])
            assert all(a.base is None for a in (codes, starts, ends)) or len(codes) == 0 or (
                block >= len(text))


@pytest.mark.parametrize("block", [3, 50, 4096])
def test_damaged_gzip_in_blocks_names_the_file(tmp_path, block):
    good = gzip.compress(b"".join(f"chr1\t{i}\t{i + 5}\n".encode() for i in range(3000)))
    (tmp_path / "trunc.bed.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(BedParseError, match="truncated gzip.*re-") as info:
        B._read_file(tmp_path / "trunc.bed.gz", block_bytes=block)
    assert info.value.path.endswith("trunc.bed.gz") and info.value.line is None
    corrupt = bytearray(good)
    corrupt[len(good) // 2:len(good) // 2 + 40] = bytes(40)
    (tmp_path / "bad.bed.gz").write_bytes(bytes(corrupt))
    with pytest.raises(BedParseError, match="gzip"):
        B._read_file(tmp_path / "bad.bed.gz", block_bytes=block)
    # a parse error blocks before the damage is reported as that line (its block is parsed
    # before the damage is read; the reader takes 512 KB of compressed bytes at a time)
    rng = np.random.default_rng(0)
    lines = (f"chr1\t{s}\t{s + 9}\tp{s}\n".encode() for s in rng.integers(0, 10**9, 400_000))
    early = gzip.compress(b"chr1\t9\t1\n" + b"".join(lines), compresslevel=1)
    assert len(early) > 3 << 20
    (tmp_path / "early.bed.gz").write_bytes(early[: len(early) // 2])
    with pytest.raises(BedParseError, match="early.bed.gz:1: end is before start"):
        B._read_file(tmp_path / "early.bed.gz", block_bytes=block)
    (tmp_path / "missing").mkdir()
    with pytest.raises(BedParseError, match="is a directory"):
        B._read_file(tmp_path / "missing", block_bytes=block)


@pytest.mark.parametrize("block", [1 << 30, 256])
def test_a_bgzf_file_cut_at_a_block_end_warns(tmp_path, block):
    """A BGZF file cut just after one of its blocks (a bgzip or copy that stopped) is a valid
    gzip stream of fewer members: it read as the regions of its whole blocks, silently. Its
    missing end-of-file block now warns (as htslib); the small path leaves it to that read."""
    from genotok.bgzf import write_bgzf

    text = b"".join(f"chr1\t{i}\t{i + 5}\n".encode() for i in range(200))
    path = tmp_path / "q.bed.gz"
    write_bgzf(path, text, block=512)
    raw = path.read_bytes()
    cut = raw.index(b"\x1f\x8b\x08\x04", len(raw) // 2)  # the start of a later block
    tok = Tokenizer(["chr1:0-100"])
    for data, warns in ((raw, False), (raw[:-28], True), (raw[:cut], True)):
        path.write_bytes(data)
        _io.BLOCK_BYTES, old = block, _io.BLOCK_BYTES
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                rs = RegionSet.from_bed(path)
        finally:
            _io.BLOCK_BYTES = old
        assert any("BGZF file without its end-of-file block" in str(w.message) for w in seen) \
            == warns
        assert len(rs) == gzip.decompress(data).count(b"\n") and (len(rs) < 200) == (
            data is not raw and len(data) < len(raw) - 28)
        assert (_small._python(tok, str(path)) is None) == warns


def test_from_bed_reads_in_blocks(tmp_path, monkeypatch):
    """``RegionSet.from_bed`` takes the blocked read: a file larger than a block gives the
    whole text's regions in arrays cut to their size."""
    lines = [f"chr{i % 5}\t{i}\t{i + 10}\tpeak{i}\t0\t.\n" for i in range(5000)]
    text = ("#c\n" + "".join(lines)).encode()
    path = _write(tmp_path, text, False)
    monkeypatch.setattr(_io, "BLOCK_BYTES", 4096)
    rs = RegionSet.from_bed(path)
    whole = RegionSet(*B._read_buffer(np.frombuffer(text, np.uint8), str(path)), source=str(path),
                      from_file=True)
    assert rs == whole and rs.chrom_names == whole.chrom_names and rs.from_file
    for a in (rs.codes, rs.starts, rs.ends):
        assert a.size == 5000 and a.base is None and a.flags.owndata  # cut to size


# ------------------------------------------------------------------------------ the blocks
@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE_OK)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       st.booleans(), st.integers(1, 100), st.booleans())
@example(lines=[b"\x1f\x8b", b"\x00" * 7], end_nl=False, size=1, gz=False)  # (found in CI)
def test_line_blocks_cover_the_file_in_whole_lines(tmp_path, lines, end_nl, size, gz):
    text = b"\n".join(lines) + (b"\n" if end_nl and lines else b"")
    path = _write(tmp_path, text, gz)
    if not gz and text[:2] == _io.GZIP_MAGIC:  # gzip's magic: read as gzip, whatever the name
        with pytest.raises(BedParseError, match=f"^{re.escape(str(path))}: .*gzip"):
            list(_io.line_blocks(path, block_bytes=size))
        return
    seen = {}
    for ahead in (False, True):
        blocks = seen[ahead] = [(b.tobytes(), e, last) for b, e, last in
                                _io.line_blocks(path, block_bytes=size, ahead=ahead)]
        assert b"".join(b for b, _, _ in blocks) == text
        assert [last for _, _, last in blocks] == [False] * (len(blocks) - 1) + [True]
        assert blocks[-1][1] == len(text)  # the last one knows the size
        for b, _, last in blocks[:-1]:
            assert b.endswith(b"\n") and b  # whole lines, never empty
            # a buffer grows (doubling) only to hold a line longer than a block
            assert len(b) <= 2 * (size + max(map(len, lines)) + 1)
    assert seen[True] == seen[False]


def test_line_blocks_stop_early_and_estimate_gzip(tmp_path):
    rng = np.random.default_rng(1)  # 4 MB compressed: the reader takes 512 KB at a time
    text = b"".join(f"chr1\t{s}\t{s + 5}\n".encode() for s in rng.integers(0, 10**9, 300_000))
    path = tmp_path / "x.bed.gz"
    path.write_bytes(gzip.compress(text, compresslevel=1))
    blocks = _io.line_blocks(path, block_bytes=1 << 20)
    _, expected, last = next(blocks)
    assert not last and 0.7 < expected / len(text) < 1.5  # from the compressed bytes read
    blocks.close()  # the reading thread stops; nothing is left behind
    small = _write(tmp_path, b"chr1\t1\t2\n", False, name="small.bed")
    assert [(b.tobytes(), last) for b, _, last in _io.line_blocks(small)] == [
        (b"chr1\t1\t2\n", True)]


def test_blocked_read_needs_the_output_and_two_blocks(tmp_path):
    """The memory bound, in bytes allocated (tracemalloc sees NumPy's buffers, the reading
    thread's too): the whole text (2.3 MB here) is never held, only the records' arrays (20
    bytes a record, allocated for the first block's records per byte plus 25%: address space,
    of which only the records are ever written) and two blocks."""
    import tracemalloc

    n, block = 120_000, 64 << 10
    text = b"".join(f"chr{i % 3}\t{n + i}\t{n + i + 5}\n".encode() for i in range(n))
    path = _write(tmp_path, text, False)  # lines of one length: the first block's guess holds
    B._read_file(path, block_bytes=block)  # compiled, threads started once
    tracemalloc.start()
    try:
        _, codes, starts, ends = B._read_file(path, block_bytes=block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = codes.nbytes + starts.nbytes + ends.nbytes
    assert codes.size == n and out == 20 * n
    assert peak < 1.3 * out + 3 * block + (256 << 10) < len(text) + out, (peak, out)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("block", [5, None])
def test_a_pipe_reads_like_its_file(tmp_path, gz, block):
    """A pipe (``<(zcat x.bed.gz)``, ``/dev/stdin``) has no size and cannot seek: read whole
    before blocks, it is read a block at a time like any file, gzip or not."""
    import os
    import threading

    text = b"".join(f"chr{i % 4}\t{i}\t{i + 3}\n".encode() for i in range(3000))
    data = gzip.compress(text) if gz else text
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        got = _outcome(lambda: B._read_file(f"/dev/fd/{r}", block_bytes=block))
    finally:
        writer.join()
        os.close(r)
    assert got == _outcome(lambda: B._read_buffer(np.frombuffer(text, np.uint8), "x.bed"))


def test_no_thread_outlives_a_read(tmp_path):
    """The read-ahead thread and the parse pool stop when the read ends, well or not."""
    import threading

    def ours():  # (other tests' long-lived pools, e.g. a remote corpus' prefetch, may exist)
        return {t for t in threading.enumerate() if t.name.startswith("genotok-")}

    before = ours()

    good = b"".join(f"chr1\t{i}\t{i + 1}\n".encode() for i in range(200_000))  # 2.7 MB
    for text in (good, good + b"chr1\t9\t1\n" + good):
        for gz in (False, True):
            path = _write(tmp_path, text, gz)
            try:  # blocks of 1 MiB: two chunks each, on the pool
                B._read_file(path, block_bytes=1 << 20)
            except BedParseError:
                pass
            assert {t.name for t in ours() - before} == set()


@pytest.mark.parametrize("small", [True, False], ids=["inflated-whole", "in-blocks"])
def test_a_one_line_gzip_bomb_is_refused_in_bounded_memory(tmp_path, monkeypatch, small):
    """Issue 32: the BED reader had no line-length cap (the fragment reader has 64 MiB): a small
    .gz of one huge line, as a universe or a pretokenize input, exhausted the memory."""
    import gzip

    from genotok import _io
    from genotok.bed import _read_file
    from genotok.errors import BedParseError

    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 2 << 20)  # the 64 MiB cap, scaled down
    monkeypatch.setattr(_io, "_WHOLE_MAX", 1 << 20)     # the 256 MiB whole-inflate bound, too
    p = tmp_path / "bomb.bed.gz"
    p.write_bytes(gzip.compress(b"chr1\t1\t2\n" + b"a" * (12 << 20)))  # ~12 KB compressed
    with pytest.raises(BedParseError, match="bomb.bed.gz: a line of more than 2 MiB"):
        _read_file(p, block_bytes=None if small else 1 << 12)
    ok = tmp_path / "ok.bed.gz"  # a compressible file over the whole-inflate bound still reads
    ok.write_bytes(gzip.compress(b"chr1\t1\t2\n" * 200_000))
    names, codes, starts, ends = _read_file(ok)
    assert names == ["chr1"] and starts.size == 200_000 and int(ends.sum()) == 400_000


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("block", [1, 5, None])
def test_bom_is_not_part_of_the_first_chromosome(tmp_path, gz, block):
    """Issue 32 item 15: a UTF-8 BOM (Excel, Notepad) made the first chromosome '\\ufeffchr1'."""
    path = _write(tmp_path, b"\xef\xbb\xbfchr1\t5\t9\nchr1\t1\t2\n", gz)
    names, codes, starts, _ = B._read_file(path, block_bytes=block)
    assert list(names) == ["chr1"] and codes.tolist() == [0, 0] and starts.tolist() == [5, 1]
    names = B._read_buffer(np.frombuffer(b"\xef\xbb\xbfchr2\t1\t2\n", np.uint8), "x.bed")[0]
    assert list(names) == ["chr2"]
    bad = _write(tmp_path, b"\xef\xbb\xbfchr1\t9\t5\n", gz, "bad.bed")
    with pytest.raises(BedParseError, match=r"bad.bed(.gz)?:1: end is before start"):
        B._read_file(bad, block_bytes=block)


GOOD = "chr1\t100\t200\nchr1\t300\t400\n"

# (name, file bytes, expected line or None, message pattern)
BED_CASES = [
    ("too_few_columns", b"chr1\t100\t200\nchr1\t300\n", 2, "too few columns"),
    ("non_integer", b"chr1\t100\t200\nchr1\tabc\t400\n", 2, "start is not a non-negative integer"),
    ("non_integer_end", b"chr1\t1\t2\nchr1\t100\t2e5\n", 2, "end is not"),
    ("negative", b"chr1\t-100\t200\n", 1, "negative coordinate"),
    ("overflow", b"chr1\t1\t123456789012345678901234\n", 1, "larger than"),
    ("end_before_start", b"chr1\t100\t200\nchr1\t500\t400\n", 2, "end is before start"),
    ("mixed_tab_space", b"chr1\t100\t200\nchr1 300\t400\n", 2, "mixed tab and space"),
    ("stray_header", b"chr1\t100\t200\nchrom\tstart\tend\n", 2, "start is not"),
    ("nul_byte", b"chr1\t100\t200\nchr1\t3\x0000\t400\n", 2, "binary data"),
    ("binary_junk", b"\x89PNG\r\n\x1a\n\x00\x00", 3, "binary data"),  # the first NUL
    ("non_utf8_name", b"chr1\t100\t200\nchr\xff\t1\t2\n", 2, "not valid UTF-8"),
    ("empty_name", b"\t100\t200\n", 1, "empty chromosome name"),
]


@pytest.mark.parametrize("name, data, line, pattern", BED_CASES, ids=[c[0] for c in BED_CASES])
def test_bad_bed(tmp_path, name, data, line, pattern):
    path = tmp_path / f"{name}.bed"
    path.write_bytes(data)
    with pytest.raises(BedParseError, match=pattern) as info:
        RegionSet.from_bed(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")
    # the same through the tokenizer, as a user meets it
    tok = Tokenizer(["chr1:0-1000"])
    if name == "end_before_start":  # a query file gtars tokenizes: the line hits nothing
        with pytest.warns(UserWarning, match=re.escape(
                f"{name}.bed:{line}: 1 line(s) with end before start (first: chr1:500-400) "
                "hit nothing")):
            assert tok.encode(str(path)).tolist() == [0]
        tok = Tokenizer(["chr1:0-1000"], strict=True)  # refuses it
    with pytest.raises(BedParseError, match=re.escape(f"{name}.bed:{line}:")):
        tok.encode(str(path))


@pytest.mark.parametrize("name, mutate, pattern", [
    ("truncated", lambda b: b[: len(b) // 2], "truncated gzip"),
    ("corrupt", lambda b: b[:12] + bytes(x ^ 0xFF for x in b[12:40]) + b[40:], "gzip"),
], ids=["truncated_gz", "corrupt_gz"])
def test_bad_gzip(tmp_path, name, mutate, pattern):
    path = tmp_path / f"{name}.bed.gz"
    path.write_bytes(mutate(gzip.compress(GOOD.encode() * 500)))
    with pytest.raises(BedParseError, match=pattern) as info:
        RegionSet.from_bed(path)
    assert str(path) in str(info.value)


def test_missing_and_directory(tmp_path):
    with pytest.raises(BedParseError, match=r"nope.bed: no such file"):
        RegionSet.from_bed(tmp_path / "nope.bed")
    with pytest.raises(BedParseError, match="is a directory"):
        RegionSet.from_bed(tmp_path)


@pytest.mark.parametrize("data", [b"", b"\n", b"#c\n", b"chr1\t1\t2\r\nchr1\t3\t4\r\n", b"chr1\t1\t2"],
                         ids=["empty", "blank", "comment_only", "crlf", "no_final_newline"])
def test_valid_edge_files(tmp_path, data):
    path = tmp_path / "x.bed"
    path.write_bytes(data)
    rs = RegionSet.from_bed(path)
    assert len(rs) == data.count(b"chr1")
