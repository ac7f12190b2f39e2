"""Tile matrices straight from fragment files, against a plain-Python oracle of SnapATAC2's
``add_tile_matrix`` counting (and SnapATAC2 itself where it is installed)."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genotok import FragmentOptions, tokenize_fragments
from genotok.bgzf import write_bgzf
from genotok.errors import UniverseError
from genotok.pipeline.tiles import EXCLUDE, header_chrom_sizes, tile_matrix, tile_tokenizer

from .._shared import SHARED, shared

REAL = SHARED / "data" / "real"


def oracle(raw: bytes, sizes: dict, b: int, mode: str, exclude=EXCLUDE, fsize=None):
    """{barcode: Counter(bin name -> count)}, SnapATAC2's way, by a plain loop."""
    out: dict = defaultdict(Counter)
    for ln in raw.splitlines():
        if not ln or ln.startswith(b"#"):
            continue
        c, s, e, bc = ln.decode().split("\t")[:4]
        s, e = int(s), int(e)
        if fsize is not None and not ((fsize[0] is None or e - s >= fsize[0])
                                      and (fsize[1] is None or e - s <= fsize[1])):
            continue
        row = out[bc]
        if c in exclude or c not in sizes:
            continue
        n = sizes[c]
        # a position at or past the chromosome's end is in no bin (SnapATAC2 refuses such a
        # file: "Position 4321 is out of range for chromosome chr2", a panic)
        if mode == "fragment":
            bins = range(s // b, (min(e, n) - 1) // b + 1) if s < n else []
        else:
            bins = [p // b for p in (s, e - 1) if p < n]
            if mode == "paired-insertion":
                bins = sorted(set(bins))
        for k in bins:
            row[f"{c}:{k * b}-{min(k * b + b, n)}"] += 1
    return out


def as_rows(m) -> dict:
    X = m.X.tocsr()
    names = np.asarray(m.var_names)
    return {bc: Counter({names[j]: v for j, v in zip(X[i].indices, X[i].data)})
            for i, bc in enumerate(m.obs_names)}


def check(m, expect):
    got = as_rows(m)
    assert set(got) == set(expect)
    for bc in got:
        assert got[bc] == +expect[bc], bc


SIZES = {"chr1": 10_000, "chr2": 4_321, "chrM": 500, "chrY": 3_000}


def _raw(rows) -> bytes:
    return b"".join(f"{c}\t{s}\t{s + w}\tB{k}-1\t{k + 1}\n".encode() for c, s, w, k in rows)


rows_st = st.lists(st.tuples(st.sampled_from(["chr1", "chr2", "chrM", "chrY", "chr9"]),
                             st.integers(0, 11_000), st.integers(1, 3_000),
                             st.integers(0, 5)), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None)
@given(rows_st, st.sampled_from([1, 7, 500, 5000]),
       st.sampled_from(["paired-insertion", "insertion", "fragment"]),
       st.sampled_from([None, (50, None), (None, 400), (100, 900)]))
@example(rows=[("chr2", 4321, 1, 0), ("chr2", 4320, 2, 1)], b=7, mode="paired-insertion",
         fsize=None)  # at and past chr2's end (4,321): in no bin (found by hypothesis)
@example(rows=[("chr2", 4321, 1, 0), ("chr2", 4320, 2, 1)], b=7, mode="fragment", fsize=None)
@example(rows=[("chr2", 4321, 1, 0), ("chr2", 4320, 2, 1)], b=7, mode="insertion", fsize=None)
def test_tile_matrix_equals_the_oracle(tmp_path_factory, rows, b, mode, fsize):
    raw = _raw(rows)
    p = tmp_path_factory.mktemp("t") / "f.tsv"
    p.write_bytes(raw)
    expect = oracle(raw, SIZES, b, mode, fsize=fsize)
    if not expect:
        return
    m = tile_matrix(p, SIZES, b, read=FragmentOptions(mode=mode, fragment_size=fsize))
    check(m, expect)


def test_defaults_are_snapatac2s(tmp_path):
    raw = _raw([("chr1", 10, 400, 0), ("chrM", 5, 100, 0), ("chr1", 499, 1, 1)])
    p = tmp_path / "f.tsv"
    p.write_bytes(raw)
    m = tile_matrix(p, SIZES)  # bin 500, paired-insertion, chrM/chrY excluded
    assert m.var_names[0] == "chr1:0-500" and "chrM:0-500" not in set(m.var_names)
    check(m, oracle(raw, SIZES, 500, "paired-insertion"))
    assert as_rows(m)["B0-1"] == Counter({"chr1:0-500": 1})


def test_tiles_are_made_once_and_tokenize_cells(tmp_path):
    tok = tile_tokenizer(SIZES, 1000)
    assert tile_tokenizer(dict(SIZES), 1000) is tok
    assert tok.universe.n_regions == 10 + 5
    p = tmp_path / "f.tsv"
    p.write_bytes(_raw([("chr2", 4300, 10, 0)]))
    names, rows = tokenize_fragments(p, tok)
    assert names == ["B0-1"] and tok.convert_ids_to_tokens(rows.to_list()[0]) == ["chr2:4000-4321"]


def test_bad_tile_arguments():
    with pytest.raises(ValueError, match="bin_size"):
        tile_tokenizer(SIZES, 0)
    with pytest.raises(UniverseError, match="excluded"):
        tile_tokenizer({"chrM": 10}, 5)
    with pytest.raises(ValueError, match="fragment_size"):
        FragmentOptions(fragment_size=(1, 2, 3))
    with pytest.raises(ValueError, match="fragment_size"):
        FragmentOptions(fragment_size=(-1, None))


def test_bgzf_regions_and_tiles(tmp_path):
    raw = _raw([("chr1", s, 300, s % 3) for s in range(0, 9000, 37)]
               + [("chr2", s, 200, s % 2) for s in range(0, 4000, 41)])
    p = write_bgzf(tmp_path / "f.tsv.gz", raw, index=True, block=500)
    m = tile_matrix(p, SIZES, 1000, read=FragmentOptions(regions=["chr2"]))
    only2 = b"".join(ln + b"\n" for ln in raw.splitlines() if ln.startswith(b"chr2"))
    check(m, oracle(only2, SIZES, 1000, "paired-insertion"))


def test_chrom_sizes_from_a_contig_header(tmp_path):
    """``##contig=<ID=…,length=…>`` lines give the sizes: ``tile_matrix(path)`` needs none."""
    raw = _raw([("chr1", s, 300, s % 3) for s in range(0, 9000, 37)]
               + [("chr2", s, 200, s % 2) for s in range(0, 4000, 41)])
    head = "".join(f"##contig=<ID={c},length={n},assembly=toy>\n" for c, n in SIZES.items())
    p = tmp_path / "f.tsv"
    p.write_bytes(head.encode() + raw)
    assert header_chrom_sizes(p) == list(SIZES.items())
    m, want = tile_matrix(p, bin_size=1000), tile_matrix(p, SIZES, 1000)
    assert m.var_names.tolist() == want.var_names.tolist() and (m.X != want.X).nnz == 0
    check(m, oracle(raw, SIZES, 1000, "paired-insertion"))
    q = write_bgzf(tmp_path / "f.tsv.gz", head.encode() + raw, index=True, block=500)
    assert header_chrom_sizes(q) == list(SIZES.items())



def test_a_header_of_a_huge_contig_is_refused_before_any_bin(tmp_path):
    """Issue 43 item 18: a 57-byte file whose header declares one 10-Gb contig took memory
    until the box ran out (20M bins, each a region, a name and a var row); a genome of more
    bins than MAX_TILES is refused, naming the file, before any is made."""
    import resource

    from genotok.errors import UniverseError
    from genotok.pipeline.tiles import MAX_TILES

    p = tmp_path / "f.tsv"
    p.write_bytes(b"##contig=<ID=chr1,length=10000000000>\nchr1\t5\t9\tA-1\t1\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(UniverseError, match=r"f\.tsv: its header's 1 chromosome\(s\) of "
                                            r"10,000,000,000 bp make 20,000,000 bins of 500"):
        tile_matrix(p)
    with pytest.raises(UniverseError, match=rf"chrom_sizes: .* above the {MAX_TILES:,}"):
        tile_tokenizer({"chr1": 1 << 40}, 500)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB
    assert tile_matrix(p, {"chr1": 1000}, 500).X.sum() == 1  # real sizes: counted


@pytest.mark.parametrize("head, match", [
    (b"##contig=<ID=chr1,length=1000>\n##contig=<ID=chr1,length=2000>\n",
     r"f.tsv(.gz)?:2: contig chr1 is listed twice"),  # was both sizes, then an error naming no file
    (b"##contig=<ID=chr1,length=99999999999999999999>\n",
     r"f.tsv(.gz)?:1: contig chr1 has length 99,999,999,999,999,999,999"),  # an OverflowError
    (b"#" + b"\xff" * (2 << 20) + b"\n", r"f.tsv(.gz)?:1: a '#' header line of more than"),
], ids=["twice", "absurd-length", "a-huge-line"])  # the last was read whole (a bomb's: all)
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "bgzf"])
def test_a_damaged_contig_header_is_refused_by_line(tmp_path, head, match, gz):
    from genotok.errors import BedParseError

    raw = head + b"chr1\t5\t20\tA-1\t1\n"
    p = (write_bgzf(tmp_path / "f.tsv.gz", raw) if gz else tmp_path / "f.tsv")
    if not gz:
        p.write_bytes(raw)
    with pytest.raises(BedParseError, match=match):
        header_chrom_sizes(p)
    with pytest.raises(BedParseError, match=match):
        tile_matrix(p, bin_size=500)


def _real_hg38():
    sizes_file = shared(REAL / "chromsizes" / "hg38.chrom.sizes")
    return [(ln.split()[0], int(ln.split()[1])) for ln in sizes_file.read_text().splitlines()
            if ln.strip()]


def test_a_cell_ranger_header_without_lengths_asks_for_chrom_sizes():
    """The real 10x header (Signac's copy of a cellranger-atac file) names its contigs
    (``primary_contig=``) and its reference folder, not their lengths: refused, saying so; a
    file without a header likewise."""
    p = shared(REAL / "signac" / "fragments_header.tsv.gz")
    with pytest.raises(UniverseError, match=r"fragments_header.tsv.gz: no chromosome sizes: "
                       r"its header names \d+ contigs \(primary_contig=chr1 …\) without "
                       r"lengths, and its reference_path /mnt/\S+ has no fasta/genome.fa.fai "
                       r"here; give chrom_sizes="):
        tile_matrix(p)
    q = shared(REAL / "signac" / "fragments.tsv.gz")
    with pytest.raises(UniverseError, match="fragments.tsv.gz: no chromosome sizes: it has no "
                                            "'#' header; give chrom_sizes="):
        tile_matrix(q, bin_size=5000)


def test_a_cell_ranger_header_with_its_reference_here(tmp_path):
    """The real 10x header pointing at a reference folder that is on this machine: its
    ``fasta/genome.fa.fai`` gives the sizes, of the primary contigs only."""
    import gzip

    hg38 = _real_hg38()
    raw = gzip.open(shared(REAL / "signac" / "fragments_header.tsv.gz")).read()
    ref = tmp_path / "refdata-cellranger-arc-GRCh38-2020-A-2.0.0"
    (ref / "fasta").mkdir(parents=True)
    (ref / "fasta" / "genome.fa.fai").write_text(
        "".join(f"{c}\t{n}\t{i * 100}\t60\t61\n" for i, (c, n) in enumerate(
            hg38 + [("not_primary_1", 5000)])))
    lines = [f"# reference_path={ref}".encode() if ln.startswith(b"# reference_path=") else ln
             for ln in raw.splitlines()]
    p = tmp_path / "fragments.tsv"
    p.write_bytes(b"\n".join(lines) + b"\n")
    primary = {ln[len(b"# primary_contig="):].decode() for ln in lines
               if ln.startswith(b"# primary_contig=")}
    got = header_chrom_sizes(p)
    assert got == [(c, n) for c, n in hg38 if c in primary] and "chr1" in dict(got)
    want = tile_matrix(p, dict(got), 5000)
    m = tile_matrix(p, bin_size=5000)
    assert m.var_names.tolist() == want.var_names.tolist() and (m.X != want.X).nnz == 0
    assert m.n_obs > 0 and m.X.sum() > 0


def test_real_liver_fragments_5kb_tiles():
    frag = shared(REAL / "scframework" / "homo_sapiens_liver_fragments_sorted_test.bed")
    sizes_file = shared(REAL / "chromsizes" / "hg38.chrom.sizes")
    sizes = {ln.split()[0]: int(ln.split()[1]) for ln in sizes_file.read_text().splitlines()
             if ln.strip()}
    m = tile_matrix(frag, sizes_file, 5000)
    check(m, oracle(frag.read_bytes(), sizes, 5000, "paired-insertion"))


def test_against_snapatac2(tmp_path):
    snap = pytest.importorskip("snapatac2", reason="snapatac2 is not installed (the reference)")
    raw = _raw([("chr1", s, 150 + s % 400, s % 7) for s in range(0, 9500, 13)])
    p = tmp_path / "f.tsv"
    p.write_bytes(raw)
    d = snap.pp.import_fragments(str(p), chrom_sizes={"chr1": 10_000}, min_num_fragments=0,
                                 sorted_by_barcode=False)
    snap.pp.add_tile_matrix(d, bin_size=500)
    ref = {bc: Counter({n: v for n, v in zip(d.var_names, row) if v})
           for bc, row in zip(d.obs_names, d.X[:].toarray())}
    check(tile_matrix(p, {"chr1": 10_000}, 500), ref)


#: every fragment file of ../shared/data/real (10x, Signac, ArchR, MACS3, MAESTRO, muon,
#: SC-Framework): plain text, plain gzip and BGZF, with and without '#' headers
REAL_FRAGMENTS = ["archr/PBSmall.tsv.gz", "macs3/test.fragments.tsv.gz",
                  "macs3/yeast_500k_SRR1822137.frag.gz", "maestro/test.fragments.tsv.gz",
                  "muon/test_rna_atac_fragments.tsv.gz", "scframework/mm10_atac_fragments.bed",
                  "signac/fragments.tsv.gz", "signac/fragments_header.tsv.gz"]


@pytest.mark.parametrize("name", REAL_FRAGMENTS)
def test_every_real_fragment_file_tiles_as_the_oracle(name):
    """Issue 33's "each real file is exercised": each real fragment file counted into 5-kb
    tiles (sizes from its own lines) equals the plain-Python oracle of SnapATAC2's counting."""
    import gzip

    path = shared(REAL / name)
    raw = gzip.open(path).read() if path.read_bytes()[:2] == b"\x1f\x8b" else path.read_bytes()
    sizes: dict = {}
    for ln in raw.splitlines():
        if ln and not ln.startswith(b"#"):
            c, _, e = ln.split(b"\t")[:3]
            sizes[c.decode()] = max(sizes.get(c.decode(), 0), int(e) + 1)
    m = tile_matrix(path, sizes, 5000)
    check(m, oracle(raw, sizes, 5000, "paired-insertion"))
    assert m.n_obs > 0 and m.X.sum() > 0


@pytest.mark.parametrize("name", [
    *(f"gtars/fragments/fragsplit/fragments{i}.bed.gz" for i in (1, 2, 3)),
    *(f"gtars/fragments/region_scoring/fragments{i}.bed.gz" for i in (1, 2))])
def test_gtars_space_separated_fragment_files_tile_as_their_tab_twins(tmp_path, name):
    """gtars' own test fragments separate their columns by runs of spaces, not tabs (10x's
    format): read as gtars reads them, the same tiles as the file with tabs."""
    import gzip
    import re

    path = shared(REAL / name)
    raw = gzip.open(path).read()
    assert b"\t" not in raw and b"  " in raw
    tabbed = tmp_path / "tabs.tsv"
    tabbed.write_bytes(re.sub(rb" +", b"\t", raw))
    sizes = shared(REAL / "chromsizes" / "hg38.chrom.sizes")
    m = tile_matrix(path, sizes, 5000)
    want = tile_matrix(tabbed, sizes, 5000)
    assert list(m.obs_names) == list(want.obs_names) and m.X.sum() > 0
    assert (m.X != want.X).nnz == 0


def test_hg19_tiles_of_the_archr_fragments():
    """ArchR's PBSmall is hg19 (its tests use hg19test2): hg19's chrom.sizes from
    ../shared tile it as the oracle counts, chrM/chrY left out."""
    frag = shared(REAL / "archr" / "PBSmall.tsv.gz")
    sizes_file = shared(REAL / "chromsizes" / "hg19.chrom.sizes")
    sizes = {ln.split()[0]: int(ln.split()[1]) for ln in sizes_file.read_text().splitlines()
             if ln.strip()}
    import gzip

    m = tile_matrix(frag, sizes_file, 50_000)
    check(m, oracle(gzip.open(frag).read(), sizes, 50_000, "paired-insertion"))
    assert "chrY:0-50000" not in set(m.var_names) and m.X.sum() > 0
