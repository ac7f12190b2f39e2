"""BGZF fragment files: blocks inflated on threads, checked; tabix/CSI region reads.

Oracles: the same bytes inflated as one gzip stream (Python's ``gzip``), and a plain-Python
filter of the lines for region reads; pysam's tabix where it is installed.
"""

from __future__ import annotations

import gzip
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import FragmentOptions, Tokenizer, fragment_matrix, tokenize_fragments
from genotok.bgzf import (BGZF, Index, is_bgzf, keep_lines, line_blocks, parse_regions,
                           region_lines, write_bgzf)
from genotok._io import BGZF_EOF
from genotok.errors import BedParseError

from .._shared import SHARED, shared

REAL = SHARED / "data" / "real"
BGZF_FILES = ["signac/fragments.tsv.gz", "signac/fragments_header.tsv.gz",
              "muon/test_rna_atac_fragments.tsv.gz", "archr/PBSmall.tsv.gz"]


def _oracle_lines(raw: bytes, regions) -> bytes:
    """The lines of ``raw`` a region read keeps, by a plain loop."""
    want = parse_regions(regions)
    out = []
    for ln in raw.splitlines(keepends=True):
        if ln.startswith(b"#") or not ln.strip():
            continue
        spaced = 0 <= ln.find(b" ") < (ln.find(b"\t") % (len(ln) + 1))  # first separator
        c, s, e = (ln.split(b" ") if spaced else ln.split(b"\t"))[:3]
        s, e = int(s), max(int(e), int(s) + 1)
        if any(s < b and e > a for a, b in want.get(c.decode(), [])):
            out.append(ln)
    return b"".join(out)


def _fragments(n: int, seed: int = 0, chroms=("chr1", "chr2", "chr10")) -> bytes:
    rng = np.random.default_rng(seed)
    lines = [b"# a 10x header line\n"]
    for c in chroms:
        starts = np.sort(rng.integers(0, 3_000_000, n))
        for s in starts:
            e = s + int(rng.integers(20, 800))
            lines.append(f"{c}\t{s}\t{e}\tBC{int(rng.integers(0, 40))}-1\t"
                         f"{int(rng.integers(1, 4))}\n".encode())
    return b"".join(lines)


def _tok():
    return Tokenizer([f"{c}:{s}-{s + 25_000}" for c in ("chr1", "chr2", "chr10")
                      for s in range(0, 3_000_000, 25_000)])


def _same(a, b):
    assert a[0] == b[0]
    assert a[1].to_list() == b[1].to_list()
    assert a[1].values is None and b[1].values is None


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A BGZF fragment file of many small blocks, its tabix index and its plain copy."""
    d = tmp_path_factory.mktemp("bgzf")
    raw = _fragments(3000)
    p = write_bgzf(d / "f.tsv.gz", raw, index=True, block=1000)
    (d / "f.tsv").write_bytes(raw)
    return Path(p), d / "f.tsv", raw


def test_writer_is_bgzf_and_gzip(made):
    p, _, raw = made
    assert is_bgzf(p) and gzip.open(p).read() == raw
    assert not is_bgzf(made[1])
    with BGZF(p) as f:
        assert len(f.blocks(0)) > 100  # many blocks: the parallel path is exercised


@pytest.mark.parametrize("reuse", [False, True])
@pytest.mark.parametrize("block_bytes", [1, 5000, 1 << 20])
def test_line_blocks_are_whole_lines_in_order(made, block_bytes, reuse):
    p, _, raw = made
    # reused buffers: each block copied before the next is asked for
    blocks = [b.tobytes() for b in line_blocks(p, block_bytes, n_threads=2, reuse=reuse)]
    assert b"".join(blocks) == raw
    assert all(b.endswith(b"\n") for b in blocks)


@pytest.mark.parametrize("reuse", [False, True])
def test_lines_longer_than_a_batch_cross_reused_buffers(tmp_path, reuse):
    """A line spanning several batches (the rest carried over), a file without a final line
    end: the same bytes whether the batches inflate into fresh or reused buffers."""
    raw = b"".join(b"chr1\t%d\t%d\t" % (i, i + 9) + b"A" * (70000 * (i % 3)) + b"\n"
                   for i in range(12)) + b"chr2\t1\t2\tB"
    p = write_bgzf(tmp_path / "long.tsv.gz", raw)
    blocks = [b.tobytes() for b in line_blocks(p, 1 << 16, n_threads=2, reuse=reuse)]
    assert b"".join(blocks) == raw
    assert all(b.endswith(b"\n") for b in blocks[:-1])


def test_tokens_of_bgzf_equal_the_plain_file(made):
    p, plain, _ = made
    _same(tokenize_fragments(p, _tok(), n_threads=2), tokenize_fragments(plain, _tok()))
    a = fragment_matrix(p, _tok(), read=FragmentOptions(block_bytes=4096))
    b = fragment_matrix(plain, _tok())
    assert (a.X != b.X).nnz == 0 and a.obs_names.tolist() == b.obs_names.tolist()


REGIONS = [["chr1"], ["chr2:100000-900000"], ["chr10:0-5", "chr1:2999000-3000000"],
           ["chr2:100000-900000", "chr2:800000-1200000", "chr2"], ["chrUn"],
           ["chr10:1,000,000-2,000,000"]]


@pytest.mark.parametrize("regions", REGIONS)
def test_region_read_equals_the_filtered_lines(made, regions, tmp_path):
    p, plain, raw = made
    want = _oracle_lines(raw, regions)
    assert b"".join(b.tobytes() for b in region_lines(p, parse_regions(regions))) == want
    read = FragmentOptions(regions=regions)
    if not want:
        assert tokenize_fragments(p, _tok(), read=read)[0] == []
        return
    (tmp_path / "o.tsv").write_bytes(want)
    expect = tokenize_fragments(tmp_path / "o.tsv", _tok())
    _same(tokenize_fragments(p, _tok(), read=read), expect)  # through the index
    _same(tokenize_fragments(plain, _tok(), read=read), expect)  # a plain file: filtered
    os.rename(str(p) + ".tbi", tmp_path / "x.tbi")
    try:  # a BGZF file without its index: streamed whole and filtered
        _same(tokenize_fragments(p, _tok(), read=read), expect)
    finally:
        os.rename(tmp_path / "x.tbi", str(p) + ".tbi")


def test_region_read_inflates_only_the_region_blocks(made, monkeypatch):
    p, _, raw = made
    seen = []
    orig = BGZF.inflate

    def spy(self, blocks):
        seen.extend(blocks)
        return orig(self, blocks)

    monkeypatch.setattr(BGZF, "inflate", spy)
    list(region_lines(p, parse_regions(["chr2:100000-200000"])))
    with BGZF(p) as f:
        total = len(f.blocks(0))
    assert 0 < len(seen) < total / 10


def test_fragment_options_refuse_a_bad_region():
    with pytest.raises(ValueError, match="chr1:9-3"):
        FragmentOptions(regions=["chr1:9-3"])
    with pytest.raises(ValueError, match="neither"):
        FragmentOptions(regions=["chr1:a-b"])
    with pytest.raises(ValueError, match="regions must be a tuple or a list"):
        FragmentOptions(regions="chr1")  # a string is no list of regions


# --------------------------------------------------------------------------- damage

def _blocks_of(p):
    with BGZF(p) as f:
        return f.blocks(0)


@pytest.mark.parametrize("where", ["deflate", "crc", "isize", "bsize", "truncated"])
def test_a_damaged_block_names_the_file_and_offset(made, tmp_path, where):
    p, _, _ = made
    data = bytearray(Path(p).read_bytes())
    off, bsize, _ = _blocks_of(p)[7]
    if where == "deflate":
        data[off + 18:off + 30] = b"\xff" * 12
    elif where == "crc":
        data[off + bsize - 8] ^= 0xFF
    elif where == "isize":
        data[off + bsize - 4] ^= 0x01
    elif where == "bsize":
        data[off + 16:off + 18] = struct.pack("<H", 0xFFF0)
    else:
        data = data[:off + bsize // 2]
    bad = tmp_path / "bad.tsv.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(BedParseError, match=rf"bad\.tsv\.gz.*BGZF block at byte offset "
                                            rf"{off:,}"):
        tokenize_fragments(bad, _tok(), n_threads=2)


def test_a_bad_line_before_a_damaged_header_is_named_on_any_thread_count(tmp_path):
    """The headers are read as far ahead as the inflating threads go: a damaged one a few
    batches on was raised before the batches before it were scanned, so the error a file
    with a bad first line gave depended on ``n_threads`` (found by
    tests/_frag_fuzz_driver.py). The damaged header now raises in its batch's turn."""
    p = tmp_path / "f.tsv.gz"
    write_bgzf(p, b"chr1\t5\tx\tA\n" + b"chr1\t0\t9\tAAAC-1\t2\n" * 13000, block=1000)
    p.write_bytes(p.read_bytes() + b"\x1f\x8b\x08\x04garbage")
    for n_threads in (1, 2, 4):
        with pytest.raises(BedParseError, match=r"f\.tsv\.gz:1: end is not"):
            fragment_matrix(p, _tok(), read=FragmentOptions(block_bytes=1),
                            n_threads=n_threads)
    with pytest.raises(BedParseError, match="BGZF block at byte offset"):
        for _ in line_blocks(p, 1, n_threads=4):
            pass


def test_a_file_cut_at_a_block_end_warns_as_htslib(made, tmp_path):
    """A BGZF file cut at one of its blocks' ends is a valid stream of whole blocks: without
    its end-of-file block it is read with a warning (htslib's), as the BED reader does; the
    tokens are those of the whole blocks."""
    p, _, raw = made
    cut = tmp_path / "cut.tsv.gz"
    data = p.read_bytes()
    cut.write_bytes(data[:-len(BGZF_EOF)])
    assert data.endswith(BGZF_EOF)
    with pytest.warns(UserWarning, match=r"cut\.tsv\.gz: a BGZF file without its end-of-file"):
        got = tokenize_fragments(cut, _tok())
    _same(got, tokenize_fragments(p, _tok()))  # only the (empty) end block was cut


def test_a_plain_gzip_member_inside_bgzf_is_refused(made, tmp_path):
    p, _, _ = made
    bad = tmp_path / "mixed.tsv.gz"
    bad.write_bytes(Path(p).read_bytes()[:-28] + gzip.compress(b"chr1\t1\t2\tA\n"))
    with pytest.raises(BedParseError, match="without a BGZF block size"):
        tokenize_fragments(bad, _tok())


def _tbi_with(p, tmp_path, edit) -> Path:
    """A copy of the file with its index inflated, edited, written back (BGZF)."""
    q = tmp_path / "e.tsv.gz"
    q.write_bytes(Path(p).read_bytes())
    raw = bytearray(gzip.open(str(p) + ".tbi").read())
    raw = edit(raw)
    Path(str(q) + ".tbi").write_bytes(gzip.compress(bytes(raw)))
    return q


@pytest.mark.parametrize("edit, match", [
    (lambda r: r[:len(r) // 2], "ends early|past the end"),
    (lambda r: b"XXX\x01" + r[4:], "neither a tabix"),
    (lambda r: r[:4] + struct.pack("<i", 99) + r[8:], "ends early|names"),
])
def test_a_malformed_index_is_refused(made, tmp_path, edit, match):
    q = _tbi_with(made[0], tmp_path, edit)
    with pytest.raises(BedParseError, match=match):
        tokenize_fragments(q, _tok(), read=FragmentOptions(regions=["chr1"]))


def test_an_index_chunk_past_the_file_is_refused(made, tmp_path):
    def edit(r):
        l_nm = struct.unpack_from("<i", r, 32)[0]
        pos = 36 + l_nm + 4 + 4 + 4  # n_bin, first bin id, its n_chunk
        r[pos:pos + 8] = struct.pack("<Q", 1 << 60)
        return r

    q = _tbi_with(made[0], tmp_path, edit)
    with pytest.raises(BedParseError, match="outside the data file"):
        tokenize_fragments(q, _tok(), read=FragmentOptions(regions=["chr1"]))



def test_an_index_of_another_file_is_named(made, tmp_path):
    """Was: 'the file is damaged or truncated (re-download …)' of a sound data file whose
    index is another file's: the message now names the index too."""
    q = write_bgzf(tmp_path / "other.tsv.gz", _fragments(6000, seed=5), block=700)
    shutil.copy(str(made[0]) + ".tbi", q + ".tbi")
    with pytest.raises(BedParseError, match=r"other.tsv.gz: BGZF block .*or its index "
                       r".*other.tsv.gz.tbi is not this file's"):
        tokenize_fragments(q, _tok(), read=FragmentOptions(regions=["chr1", "chr2"]))


def test_the_bins_are_walked_in_one_kernel_call(made, monkeypatch, tmp_path):
    """Issue 33 item 3: the index' bins were walked in Python, one struct read each (~0.3 s
    for the 196k bins of a 2M-fragment file, the floor of a region read); one kernel call
    (genotok.kernels.tabix.index_bins) now walks them all, with the same chunks as the
    reference walk, and a count that runs past the index is still refused naming it."""
    import genotok.bgzf as gb
    from tests import naive_fragments

    calls = []
    real = gb.TX.index_bins

    def spy(*a):
        calls.append(a[2])
        got = real(*a)
        want = naive_fragments.index_bins(*a)
        for g, w in zip(got, want):
            assert np.array_equal(np.asarray(g), np.asarray(w))
        return got

    monkeypatch.setattr(gb.TX, "index_bins", spy)
    ix = Index.read(str(made[0]) + ".tbi", os.path.getsize(made[0]))
    assert calls == [len(ix.names)] and all(isinstance(b[0], np.ndarray) for b in ix.bins)
    assert sum(b[0].size for b in ix.bins) > 0

    def huge_bin_count(r):
        l_nm = struct.unpack_from("<i", r, 32)[0]
        r[36 + l_nm:40 + l_nm] = struct.pack("<i", 2**31 - 1)
        return r

    q = _tbi_with(made[0], tmp_path, huge_bin_count)
    with pytest.raises(BedParseError, match=r"e\.tsv\.gz\.tbi.*a bin count past the end"):
        Index.read(str(q) + ".tbi", os.path.getsize(q))


def test_inflated_batches_leave_the_resident_set(made, monkeypatch):
    """Issue 33 goal (50M fragments, peak memory): the mapped file's pages stayed resident
    once inflated, so reading a 632 MB BGZF file to its end added 632 MB to the peak RSS
    (a stream read adds none). Each batch's bytes are released once inflated, in order, the
    whole file covered, and the lines are unchanged."""
    p, _, raw = made
    seen = []
    real = BGZF.release

    def spy(self, start, stop):
        seen.append((start, stop))
        return real(self, start, stop)

    monkeypatch.setattr(BGZF, "release", spy)
    got = b"".join(b.tobytes() for b in line_blocks(p, 1 << 16, n_threads=2))
    assert got == raw and seen and seen[0][0] == 0
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:]))
    assert seen[-1][1] == os.path.getsize(p)  # the empty end-of-file block too


# --------------------------------------------------------------------------- oracles

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["chr1", "chr2", "chr1_x", "#c"]),
                          st.integers(0, 300), st.integers(0, 60),
                          st.sampled_from(["\t", " "])), max_size=30),
       st.lists(st.tuples(st.sampled_from(["chr1", "chr2", "chr3"]), st.integers(0, 300),
                          st.integers(1, 100)), min_size=1, max_size=4))
def test_keep_lines_equals_the_plain_filter(rows, regs):
    """Tab- and space-separated lines (gtars' test files) alike, mixed in one block."""
    raw = b"".join(f"{c}{t}{s}{t}{s + w}{t}A{t}1\n".encode() for c, s, w, t in rows)
    regions = [f"{c}:{s}-{s + w}" for c, s, w in regs]
    want = {c.encode(): v for c, v in parse_regions(regions).items()}
    got = keep_lines(np.frombuffer(raw, np.uint8), want).tobytes() if raw else b""
    assert got == _oracle_lines(raw, regions)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["chr1", "chr2"]), st.integers(0, 1 << 22),
                          st.integers(1, 5000)), min_size=1, max_size=120),
       st.sampled_from(["chr1", "chr2:0-1000000", "chr1:2000000-4000000", "chr2:5-6"]),
       st.integers(60, 2000))
def test_region_lines_equal_the_plain_filter(tmp_path_factory, rows, region, block):
    rows = sorted(rows, key=lambda r: (r[0], r[1]))
    raw = b"".join(f"{c}\t{s}\t{s + w}\tA\t1\n".encode() for c, s, w in rows)
    p = write_bgzf(tmp_path_factory.mktemp("h") / "f.gz", raw, index=True, block=block)
    got = b"".join(b.tobytes() for b in region_lines(p, parse_regions([region]), 2))
    assert got == _oracle_lines(raw, [region])


def test_pysam_reads_our_index_alike(made):
    pysam = pytest.importorskip("pysam", reason="pysam is not installed (the tabix oracle)")
    p, _, raw = made
    tbx = pysam.TabixFile(str(p))
    for reg in ("chr1", "chr2:100000-900000"):
        c, _, rng = reg.partition(":")
        a, b = (int(x) for x in rng.split("-")) if rng else (None, None)
        got = "".join(x + "\n" for x in tbx.fetch(c, a, b)).encode()
        assert got == _oracle_lines(raw, [reg])


# --------------------------------------------------------------------------- real files

@pytest.mark.parametrize("name", BGZF_FILES)
def test_real_bgzf_files(name, tmp_path):
    p = shared(REAL / name)
    assert is_bgzf(p)
    raw = gzip.open(p).read()
    plain = tmp_path / "plain.tsv"
    plain.write_bytes(raw)
    idx = Index.read(str(p) + ".tbi", os.path.getsize(p))
    chroms = [ln.split(b"\t")[0].decode() for ln in raw.splitlines()
              if ln and not ln.startswith(b"#")]
    tok = Tokenizer([f"{c}:{s}-{s + 100_000}" for c in dict.fromkeys(chroms)
                     for s in range(0, 250_000_000, 2_000_000)])
    _same(tokenize_fragments(p, tok, n_threads=2), tokenize_fragments(plain, tok))
    for regions in ([idx.names[0]], [idx.names[-1], f"{idx.names[0]}:0-1000000"]):
        assert (b"".join(b.tobytes() for b in region_lines(p, parse_regions(regions)))
                == _oracle_lines(raw, regions))


def test_a_whole_chromosome_asks_the_index_for_its_span_only():
    """A chromosome without a range asked reg2bins for 2^40 bases: 67M bin ids at the last
    level, minutes and GiB before the first block; the region is clipped to the index' span
    (2^29 for .tbi), as htslib does."""
    from genotok.bgzf import _region_bins

    bins = np.flatnonzero(_region_bins(np.arange(40_000), 0, 1 << 62, 14, 5))
    assert len(bins) == sum(8 ** k for k in range(6)) and max(bins) == 37448


def _reg2bins(beg, end, min_shift, depth):
    """htslib's reg2bins, every bin of the region listed (the oracle of _region_bins)."""
    span = 1 << (min_shift + depth * 3)
    beg, end = min(max(beg, 0), span - 1), min(max(end, beg + 1), span)
    end -= 1
    out, s, t = [], min_shift + depth * 3, 0
    for level in range(depth + 1):
        out.extend(range(t + (beg >> s), t + (end >> s) + 1))
        s -= 3
        t += 1 << (level * 3)
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 1 << 20), st.integers(0, 1 << 20))
def test_region_bins_are_htslibs_reg2bins(min_shift, depth, a, b):
    from genotok.bgzf import _region_bins

    ids = np.arange(((1 << (3 * depth + 3)) - 1) // 7 + 3)  # every bin, the pseudo-bin, more
    got = np.flatnonzero(_region_bins(ids, min(a, b), max(a, b), min_shift, depth)).tolist()
    assert got == _reg2bins(min(a, b), max(a, b), min_shift, depth)


def test_a_fine_csi_index_is_not_asked_for_every_bin_of_a_region():
    """A CSI index of min_shift=1, depth=11 (a span of 2^34): a region of 1 Gb listed 5*10^8
    bin ids (minutes, GiB); now only the index' own bins are asked."""
    from genotok.bgzf import _region_bins

    ids = np.array([0, 1, 9, (8 ** 11 - 1) // 7 + 5])
    assert _region_bins(ids, 0, 1_000_000_000, 1, 11).tolist() == [True, True, True, True]


def test_a_corpus_records_the_regions_read(made, tmp_path):
    from genotok import Corpus

    read = FragmentOptions(regions=["chr2:0-500000"], fragment_size=(None, 500))
    tokenize_fragments(made[0], _tok(), read=read, out=tmp_path / "c.gtokc")
    got = Corpus.open(tmp_path / "c.gtokc").header
    assert got["extra"]["fragments"]["regions"] == ["chr2:0-500000"]
    assert got["extra"]["fragments"]["fragment_size"] == [None, 500]


def test_an_endless_line_is_refused(tmp_path):
    p = write_bgzf(tmp_path / "one.gz", b"x" * 300_000)
    with pytest.raises(BedParseError, match="a line of more than 0 MiB"):
        list(line_blocks(p, 1 << 16, 2, max_line=100_000))
    assert sum(b.size for b in line_blocks(p, 1 << 16, 2)) == 300_000


# --------------------------------------------------------------------------- htslib's tabix
TABIX, BGZIP = shutil.which("tabix"), shutil.which("bgzip")
needs_tabix = pytest.mark.skipif(
    TABIX is None or BGZIP is None,
    reason="htslib's tabix and bgzip are not installed (Debian: apt-get install tabix)")


def _tabix(path, region: str, zero_based: bool = True) -> bytes:
    """What ``tabix path region`` prints for the lines of a BED-coordinates region
    (``chrom`` or ``chrom:start-end``, end exclusive), which tabix takes 1-based inclusive.
    An index made without ``-p bed``/``-0`` (``zero_based=False``) has tabix read the file's
    starts as 1-based too: a line ``[x, e)`` is then ``[x, e]`` to it, so the range asked
    ends a base earlier (a fragment file is BED whatever its index says, and genotok reads
    it so)."""
    c, _, rng = region.partition(":")
    if rng:
        a, b = (int(x.replace(",", "")) for x in rng.split("-"))
        region = f"{c}:{a + 1}-{b}" if zero_based else f"{c}:{a + 1}-{b - 1}"
        assert zero_based or b - a >= 2, "a 1-based index cannot say a one-base range"
    return subprocess.run([TABIX, str(path), region], capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def by_htslib(tmp_path_factory):
    """A fragment file compressed by htslib's ``bgzip`` and indexed by ``tabix -p bed`` (.tbi)
    and ``tabix -C -p bed`` (.csi, in a copy); its plain text; the lines of its chr2."""
    d = tmp_path_factory.mktemp("htslib")
    raw = _fragments(4000, seed=7)
    plain = d / "f.tsv"
    plain.write_bytes(raw)
    tbi, csi = d / "tbi.tsv.gz", d / "csi.tsv.gz"
    with open(tbi, "wb") as fh:
        subprocess.run([BGZIP, "-c", str(plain)], stdout=fh, check=True)
    shutil.copy(tbi, csi)
    subprocess.run([TABIX, "-p", "bed", str(tbi)], check=True)
    subprocess.run([TABIX, "-C", "-p", "bed", str(csi)], check=True)
    assert os.path.isfile(f"{tbi}.tbi") and os.path.isfile(f"{csi}.csi")
    assert not os.path.exists(f"{csi}.tbi")
    chr2 = [ln.split(b"\t") for ln in raw.splitlines() if ln.startswith(b"chr2\t")]
    return tbi, csi, raw, [(int(f[1]), int(f[2])) for f in chr2]


def _boundaries(lines):
    """Regions that touch a line at its ends: ending at its start (tabix and genotok leave it
    out), starting at its end (out), starting one base before its end (in), one base wide."""
    s, e = lines[len(lines) // 2]
    return [f"chr2:{s - 40}-{s}", f"chr2:{e}-{e + 40}", f"chr2:{e - 1}-{e + 40}",
            f"chr2:{s}-{s + 1}", f"chr2:{e - 1}-{e}"]


@needs_tabix
@pytest.mark.parametrize("kind", ["tbi", "csi"])
def test_region_reads_equal_htslib_tabix(by_htslib, kind, tmp_path):
    """Every region read through an index htslib wrote gives exactly the lines ``tabix``
    prints: whole chromosomes, ranges, a chromosome the file lacks, an empty range, the
    boundaries of a line; and the same tokens as the plain file of those lines."""
    tbi, csi, raw, chr2 = by_htslib
    p = tbi if kind == "tbi" else csi
    regions = ["chr1", "chr10", "chr2:1000000-1200000", "chrUn", "chr1:3500000-4000000",
               "chr10:0-5", *_boundaries(chr2)]
    for r in regions:
        want = _tabix(p, r)
        assert b"".join(b.tobytes() for b in region_lines(p, parse_regions([r]))) == want, r
        assert want == _oracle_lines(raw, [r]), r
    assert _tabix(p, "chrUn") == b"" and _tabix(p, "chr1:3500000-4000000") == b""
    assert any(_tabix(p, r) for r in _boundaries(chr2)[2:])
    for r in ("chr2:1000000-1200000", "chr10"):  # the public path: FragmentOptions(regions=)
        (tmp_path / "o.tsv").write_bytes(_tabix(p, r))
        _same(tokenize_fragments(p, _tok(), read=FragmentOptions(regions=[r]), n_threads=2),
              tokenize_fragments(tmp_path / "o.tsv", _tok()))
    several = ["chr2:1000000-1200000", "chr1:0-400000", "chr10"]  # disjoint: no line in two
    got = b"".join(b.tobytes() for b in region_lines(p, parse_regions(several)))
    assert sorted(got.splitlines()) == sorted(b"".join(_tabix(p, r) for r in several)
                                              .splitlines())


@needs_tabix
@pytest.mark.parametrize("name", BGZF_FILES)
def test_real_tbi_region_reads_equal_htslib_tabix(name):
    """The real files' own .tbi (10x, Signac, ArchR): each chromosome, a range in the first,
    the start of the last and a range ending where lines start give the lines ``tabix``
    prints. The muon file's .tbi was made without ``-p bed`` (1-based): tabix then counts a
    line starting at ``x`` as covering base ``x`` (1-based), one base more than the BED line
    does; genotok reads the file as the BED it is."""
    p = shared(REAL / name)
    idx = Index.read(str(p) + ".tbi", os.path.getsize(p))
    z = idx.zero_based
    assert z == (name != "muon/test_rna_atac_fragments.tsv.gz")
    first = _tabix(p, idx.names[0]).splitlines()
    s = int(first[len(first) // 2].split(b"\t")[1])
    regions = [*idx.names, f"{idx.names[0]}:{s}-{s + 200_000}", f"{idx.names[-1]}:0-5",
               f"{idx.names[0]}:{s - 50}-{s}", f"{idx.names[0]}:{s - 2}-{s + 1}", "chrNotThere"]
    for r in regions:
        assert b"".join(b.tobytes() for b in region_lines(p, parse_regions([r]))) == \
            _tabix(p, r, z), (name, r)
    if not z:  # asked as if the index were BED's, tabix adds the lines starting at the end
        r = f"{idx.names[0]}:{s - 50}-{s}"
        extra = set(_tabix(p, r).splitlines()) - set(_tabix(p, r, z).splitlines())
        assert extra and all(int(ln.split(b"\t")[1]) == s for ln in extra)


def test_the_batches_inflated_ahead_are_bounded_by_the_cores(tmp_path, monkeypatch):
    """n_threads + 1 batches inflate ahead of the scan: n_threads=10**6 (a caller's integer)
    inflated the whole file at once, on a thread per batch; a region read started a thread
    per chunk. Clipped to the cores."""
    import threading

    p = write_bgzf(tmp_path / "f.tsv.gz", b"chr1\t0\t9\tAAAC-1\t2\n" * 40000)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    most = 0
    for _ in line_blocks(p, 1, n_threads=10 ** 6):
        most = max(most, sum(t.name.startswith("genotok-bgzf") for t in threading.enumerate()))
    assert 1 <= most <= 2 and len(_blocks_of(p)) > 8
    made = tmp_path / "r.tsv.gz"  # a region read: a thread per chunk of the index, at most
    write_bgzf(made, b"".join(b"chr1\t%d\t%d\tA\t1\n" % (i * 20000, i * 20000 + 9)
                              for i in range(4000)), index=True, block=64)
    most = 0
    for _ in region_lines(made, parse_regions([f"chr1:{i * 4_000_000}-{i * 4_000_000 + 30}"
                                               for i in range(20)]), n_threads=10 ** 6):
        most = max(most, sum(t.name.startswith("genotok-bgzf") for t in threading.enumerate()))
    assert 1 <= most <= 2
