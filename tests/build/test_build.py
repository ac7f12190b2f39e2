"""Building universes (tile, merge, coverage cutoff, top-k) vs plain-Python oracles and bedtools."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import BedParseError, GenotokError, RegionSet, UniverseError, build
from genotok.build import streaming
from tests import naive_build as naive


def quietly(builder, *args, **kwargs):
    """A builder call with its warnings (``UserWarning``) ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return builder(*args, **kwargs)

CHROMS = ["chr1", "chr2", "chr10", "chrX", "chrM", "1", "MT", "scaffold_7", "chrUn_KI270742v1"]
REGION = st.tuples(st.sampled_from(CHROMS[:5] + ["scaffold_7"]), st.integers(0, 60),
                   st.integers(0, 15)).map(lambda t: (t[0], t[1], t[1] + t[2]))
SETS = st.lists(st.lists(REGION, max_size=12), max_size=6)
FOLD_AT = st.sampled_from([1, 5, 1 << 20])  # tiny values exercise the streaming folds
SETTINGS = settings(max_examples=120, deadline=None)


def tuples(rs: RegionSet):
    return [(rs.chrom_names[c], int(s), int(e)) for c, s, e in zip(rs.codes, rs.starts, rs.ends)]


def as_sets(sets, kind: str, tmp_path=None):
    """The same region sets as tuples lists, RegionSets (own chrom tables) or BED files."""
    if kind == "tuples":
        return [list(s) for s in sets]
    if kind == "regionsets":
        return [RegionSet.from_tuples(s[::-1]) for s in sets]  # reversed: other code order
    paths = []
    for i, s in enumerate(sets):
        p = tmp_path / f"in{i}.bed{'.gz' if i % 2 else ''}"
        text = naive.bed_text(s)
        p.write_bytes(gzip.compress(text) if i % 2 else text)
        paths.append(p)
    return paths


@contextlib.contextmanager
def folding_at(rows: int):
    """Run with streaming._MIN_FOLD = rows (small values fold after every input), then restore it."""
    old = streaming._MIN_FOLD
    streaming._MIN_FOLD = rows
    try:
        yield
    finally:
        streaming._MIN_FOLD = old


# ---------------------------------------------------------------------------- order and tiles
def test_natural_chrom_order():
    names = ["chrUn_KI270742v1", "chrM", "chr10", "chrY", "chr2", "chrX", "chr1", "HLA-A*01:01",
             "chr1_KI270706v1_random", "chrEBV", "chr22"]
    expected = ["chr1", "chr2", "chr10", "chr22", "chrX", "chrY", "chrM", "HLA-A*01:01",
                "chr1_KI270706v1_random", "chrEBV", "chrUn_KI270742v1"]
    assert sorted(names, key=build.chrom_sort_key) == expected
    assert sorted(["MT", "X", "2", "1", "chr1"], key=build.chrom_sort_key) == [
        "1", "chr1", "2", "X", "MT"]
    assert sorted(names + ["1", "MT"], key=build.chrom_sort_key) == sorted(names + ["1", "MT"],
                                                                           key=naive.natural_key)


@given(sizes=st.dictionaries(st.sampled_from(CHROMS), st.integers(0, 200), max_size=6),
       size=st.integers(1, 70))
@SETTINGS
def test_tile_matches_oracle_and_covers_every_chromosome_exactly(sizes, size):
    rs, report = build.tile(sizes, size)
    got = tuples(rs)
    assert got == naive.tile(sizes, size)
    for chrom, length in sizes.items():
        mine = [(s, e) for c, s, e in got if c == chrom]
        covered = np.zeros(length, np.int64)
        for s, e in mine:
            covered[s:e] += 1
        assert (covered == 1).all()  # every base exactly once: no gap, no overlap
        assert all(e - s == size for s, e in mine[:-1])
        assert not mine or mine[-1][1] == length
    assert report.method == "tile" and report.n_regions == len(rs)
    assert report.stats["genome_size"] == sum(sizes.values())


def test_tile_from_chrom_sizes_file(tmp_path):
    p = tmp_path / "hg.chrom.sizes"
    p.write_text("# comment\nchr2\t25\n\nchr10\t5\textra\nchr1 20\n")
    rs, report = build.tile(p, 10)
    assert rs.to_strings() == ["chr1:0-10", "chr1:10-20", "chr2:0-10", "chr2:10-20", "chr2:20-25",
                               "chr10:0-5"]
    assert report.inputs[0]["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert report.n_input_regions == 0
    assert build.read_chrom_sizes(p) == [("chr2", 25), ("chr10", 5), ("chr1", 20)]


@pytest.mark.parametrize("text, line, what", [
    ("chr1\t10\nchr2\n", 2, "expected 'name<TAB>length'"),
    ("chr1\t10\nchr2\t-5\n", 2, "not a non-negative integer"),
    ("chr1\t1e6\n", 1, "not a non-negative integer"),
    ("chr1\t\u00b2\n", 1, "not a non-negative integer"),
    ("chr1\t10\nchr2\t3\nchr1\t7\n", 3, "listed twice (first on line 1)"),
    # a length past 2^62 raised numpy's OverflowError (past 4,300 digits int()'s ValueError)
    ("chr1\t10\nchr2\t99999999999999999999999\n", 2, "larger than 2^62"),
    ("chr1\t4611686018427387905\n", 1, "larger than 2^62"),
    ("chr1\t" + "9" * 5000 + "\n", 1, "larger than 2^62"),
    # splitlines() split at the form feed: the error was on line 4
    ("chr1\t10\n\x0cchr2\t5\nchr3\tz\n", 3, "not a non-negative integer"),
])
def test_chrom_sizes_errors_name_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "bad.sizes"
    p.write_text(text)
    with pytest.raises(BedParseError) as info:
        build.tile(p, 10)
    assert info.value.line == line and what in str(info.value) and "bad.sizes" in str(info.value)


@pytest.mark.parametrize("name", ["hg19.chrom.sizes", "hg38.chrom.sizes"])
def test_tile_real_chrom_sizes(name):
    """UCSC's chrom.sizes files (../shared/data/real/chromsizes): every chromosome read, and
    1 Mb tiles number ceil(length / 1 Mb) per chromosome, the last one clipped."""
    from .._shared import SHARED, shared

    path = shared(SHARED / "data" / "real" / "chromsizes" / name)
    sizes = dict(ln.split("\t") for ln in path.read_text().splitlines() if ln)
    pairs = build.read_chrom_sizes(path)
    assert dict(pairs) == {c: int(n) for c, n in sizes.items()}
    regions = build.tile(path, 1_000_000, hash_inputs=False).regions
    assert len(regions) == sum(-(-int(n) // 1_000_000) for n in sizes.values())
    last = {regions.chrom_names[c]: int(e) for c, e in zip(regions.codes, regions.ends)}
    assert last == {c: int(n) for c, n in sizes.items()}


def test_tile_errors():
    with pytest.raises(UniverseError, match=r"tile: size must be an integer in \[1, inf\), got 0"):
        build.tile({"chr1": 10}, 0)
    with pytest.raises(UniverseError, match="more than token ids can hold"):
        build.tile({"chr1": 3 * 10**9}, 1)
    with pytest.raises(UniverseError, match=r"length of chr1 must be an integer in \[0, inf\), got -1"):
        build.tile({"chr1": -1}, 5)
    with pytest.raises(UniverseError, match="without whitespace"):
        build.tile({"chr 1": 10}, 5)
    with pytest.raises(UniverseError, match="chrom.sizes path"):
        build.tile([("chr1", 10, 3)], 5)
    with pytest.raises(BedParseError, match="no such file"):
        build.tile("/nonexistent/hg38.chrom.sizes", 5)


# ---------------------------------------------------------------------------- merge
@given(sets=SETS, min_gap=st.integers(-4, 6), kind=st.sampled_from(["tuples", "regionsets"]),
       fold=FOLD_AT, threads=st.sampled_from([1, 2]))
@SETTINGS
def test_merge_matches_oracle(sets, min_gap, kind, fold, threads):
    with folding_at(fold):
        rs, report = build.merge(as_sets(sets, kind), min_gap, n_threads=threads)
    assert tuples(rs) == naive.merge(sets, min_gap)
    assert report.n_input_regions == sum(map(len, sets)) and len(report.inputs) == len(sets)
    assert report.params == {"min_gap": min_gap}


@given(sets=SETS, fold=FOLD_AT)
@SETTINGS
def test_union_is_coverage_at_least_one(sets, fold):
    """merge(min_gap=0) is exactly the maximal runs of coverage >= 1 (zero-length regions aside)."""
    with folding_at(fold):
        rs, _ = build.merge(as_sets(sets, "tuples"))
    union = [r for r in tuples(rs) if r[2] > r[1]]
    assert union == naive.runs(naive.coverage(sets), 1)


def test_merge_touching_nested_duplicate_and_zero_length():
    sets = [[("chr1", 0, 5), ("chr1", 5, 10), ("chr1", 2, 3), ("chr1", 2, 3)],
            [("chr1", 12, 12), ("chr1", 20, 30), ("chr1", 30, 30), ("chr1", 31, 40)]]
    assert build.merge(sets).regions.to_strings() == [
        "chr1:0-10", "chr1:12-12", "chr1:20-30", "chr1:31-40"]
    assert build.merge(sets, 1).regions.to_strings() == ["chr1:0-10", "chr1:12-12", "chr1:20-40"]
    assert build.merge(sets, 2).regions.to_strings() == ["chr1:0-12", "chr1:20-40"]
    assert build.merge(sets, -1).regions.to_strings() == [
        "chr1:0-5", "chr1:5-10", "chr1:12-12", "chr1:20-30", "chr1:30-30", "chr1:31-40"]
    # a negative gap with equal starts: shortest first, so the order of the input is irrelevant
    for regions in ([("chr1", 0, 1), ("chr1", 0, 0)], [("chr1", 0, 0), ("chr1", 0, 1)]):
        assert build.merge([regions], -1).regions.to_strings() == ["chr1:0-0", "chr1:0-1"]


def test_merge_files_gz_generators_and_one_path(tmp_path):
    sets = [[("chr2", 5, 9), ("chr1", 0, 4)], [("chr1", 3, 8), ("chrX", 1, 2)], []]
    paths = as_sets(sets, "files", tmp_path)
    rs, report = build.merge(p for p in paths)  # a generator: read once
    assert tuples(rs) == [("chr1", 0, 8), ("chr2", 5, 9), ("chrX", 1, 2)]
    assert rs.chrom_names == ("chr1", "chr2", "chrX")
    assert [d["path"] for d in report.inputs] == [str(p) for p in paths]
    for d, p in zip(report.inputs, paths):
        assert d["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        assert d["size"] == p.stat().st_size
    assert [d["n_regions"] for d in report.inputs] == [2, 2, 0]
    single = build.merge(str(paths[0]), hash_inputs=False)
    assert tuples(single.regions) == [("chr1", 0, 4), ("chr2", 5, 9)]
    assert "sha256" not in single.report.inputs[0]
    assert len(build.merge([]).regions) == 0


def test_merge_huge_coordinates_use_the_lexsort_path():
    big = 2**41
    sets = [[("chr1", big + 10, big + 20), ("chr1", 5, 6)], [("chr1", big, big + 10)]]
    assert build.merge(sets).regions.to_strings() == [f"chr1:5-6", f"chr1:{big}-{big + 20}"]


def test_merge_errors(tmp_path):
    with pytest.raises(UniverseError, match="min_gap must be an integer"):
        build.merge([], 1.5)
    with pytest.raises(UniverseError, match="iterable of region sets"):
        build.merge(42)
    bad = tmp_path / "bad.bed"
    bad.write_text("chr1\t5\t10\nchr1\t20\t10\n")
    with pytest.raises(BedParseError, match=r"bad\.bed:2"):
        build.merge([bad])
    with pytest.raises(BedParseError, match="no such file"):
        build.merge([tmp_path / "missing.bed"], n_threads=2)


# ---------------------------------------------------------------------------- coverage cutoff
@given(sets=SETS, k=st.integers(1, 4), min_width=st.integers(0, 6), fold=FOLD_AT,
       kind=st.sampled_from(["tuples", "regionsets"]))
@SETTINGS
def test_coverage_cutoff_matches_base_pair_coverage(sets, k, min_width, fold, kind):
    with folding_at(fold):
        rs, report = quietly(build.coverage_cutoff, as_sets(sets, kind), k, min_width=min_width)
    assert tuples(rs) == naive.consensus(sets, k, min_width)
    cov = naive.coverage(sets)
    assert report.stats["max_coverage"] == max((int(a.max()) for a in cov.values()), default=0)


@given(sets=SETS, fraction=st.sampled_from([0.1, 0.2, 0.25, 1 / 3, 0.5, 0.7, 1.0]))
@SETTINGS
def test_min_input_fraction_is_ceil_of_fraction_times_inputs(sets, fraction):
    rs, report = quietly(build.coverage_cutoff, sets, min_input_fraction=fraction)
    k = naive.fraction_count(fraction, len(sets))
    assert report.stats["min_count"] == k
    assert tuples(rs) == naive.consensus(sets, k)


def test_min_input_fraction_uses_the_decimal_written():
    sets = [[("chr1", 0, 10)]] + [[("chr1", 5, 10)]] + [[] for _ in range(8)]
    cut = build.coverage_cutoff
    assert cut(sets, min_input_fraction=0.1).report.stats["min_count"] == 1
    assert cut(sets, min_input_fraction=0.1).regions.to_strings() == ["chr1:0-10"]
    assert cut(sets, min_input_fraction=0.3).report.stats["min_count"] == 3


def test_coverage_counts_sets_not_regions():
    one_set = [[("chr1", 0, 10), ("chr1", 0, 10), ("chr1", 5, 15)]]
    assert len(quietly(build.coverage_cutoff, one_set, 2).regions) == 0
    two = one_set + [[("chr1", 9, 12), ("chr1", 14, 20)]]
    assert build.coverage_cutoff(two, 2).regions.to_strings() == ["chr1:9-12", "chr1:14-15"]
    # touching runs of coverage >= k join; coverage 2 then 3 is one run
    three = [[("chr1", 0, 10)], [("chr1", 0, 10)], [("chr1", 5, 20)], [("chr1", 10, 20)]]
    assert build.coverage_cutoff(three, 2).regions.to_strings() == ["chr1:0-20"]


def test_coverage_cutoff_errors_and_warnings():
    with pytest.raises(UniverseError, match="exactly one of min_inputs"):
        build.coverage_cutoff([], 2, min_input_fraction=0.5)
    with pytest.raises(UniverseError, match="exactly one of min_inputs"):
        build.coverage_cutoff([])
    with pytest.raises(UniverseError, match=r"min_inputs must be an integer in \[1, inf\) or None"):
        build.coverage_cutoff([], 0)
    for bad in (0, 1.5, -0.1, float("nan")):
        with pytest.raises(UniverseError,
                           match=r"min_input_fraction must be a number in \(0, 1\] or None"):
            build.coverage_cutoff([], min_input_fraction=bad)
    with pytest.raises(UniverseError, match="min_input_fraction must be a number in"):
        build.coverage_cutoff([], min_input_fraction="half")
    with pytest.raises(UniverseError, match=r"min_width must be an integer in \[0, inf\)"):
        build.coverage_cutoff([], 1, min_width=-1)
    with pytest.warns(UserWarning, match="min_inputs 3 is more than the 2 inputs") as rec:
        rs, _ = build.coverage_cutoff([[("chr1", 0, 5)], [("chr1", 0, 5)]], 3)
    assert len(rs) == 0
    assert rec[0].filename == __file__  # the warning points at the caller's line


# ---------------------------------------------------------------------------- top-k
CAND = st.lists(REGION, max_size=15)


@given(cand=CAND, sets=SETS, max_regions=st.integers(1, 12), min_inputs=st.integers(0, 2),
       threads=st.sampled_from([1, 2]))
@SETTINGS
def test_top_k_matches_brute_force(cand, sets, max_regions, min_inputs, threads):
    if not cand:
        with pytest.raises(UniverseError, match="candidate universe has no regions"):
            build.top_k(cand, sets, max_regions)
        return
    rs, report = quietly(build.top_k, cand, sets, max_regions, min_inputs=min_inputs,
                         n_threads=threads)
    expected, counts = naive.top_k(cand, sets, max_regions, min_inputs)
    assert tuples(rs) == expected
    assert report.stats["cutoff_hits"] == (min(counts) if counts else 0)
    assert report.stats["n_candidates"] == len(set(cand))


def test_top_k_ties_by_position_and_unknown_chromosomes():
    cand = ["chr2:0-10", "chr1:50-60", "chr1:0-10", "chr10:0-10", "chr1:0-10"]
    sets = [["chr1:5-6", "chr2:5-6", "chr10:5-6", "chr9:0-100"], ["chr10:9-10"], ["chr1:55-55"]]
    rs, report = build.top_k(cand, sets, 2)
    # chr10 (2 hits) first; then chr1:0-10, chr1:50-60 and chr2 tie at 1: chr1:0-10 wins by position
    assert rs.to_strings() == ["chr1:0-10", "chr10:0-10"]
    assert report.stats == {"n_inputs": 3, "n_candidates": 4, "n_eligible": 4, "cutoff_hits": 1,
                            "max_hits": 2}
    with pytest.warns(UserWarning, match="the candidates hold 4 distinct regions: the vocabulary has 4 regions, not 10") as rec:
        assert len(build.top_k(cand, sets, 10).regions) == 4
    assert rec[0].filename == __file__  # the warning points at the caller's line
    assert len(quietly(build.top_k, cand, sets, 10, min_inputs=2).regions) == 1


def test_top_k_counts_sets_not_regions():
    cand = ["chr1:0-100", "chr1:200-300"]
    sets = [["chr1:1-2", "chr1:3-4", "chr1:5-6", "chr1:7-8"], ["chr1:250-260"], ["chr1:210-220"]]
    assert build.top_k(cand, sets, 1).regions.to_strings() == ["chr1:200-300"]


def test_top_k_errors():
    with pytest.raises(UniverseError, match=r"top_k: max_regions must be an integer in \[1, inf\)"):
        build.top_k(["chr1:0-5"], [], 0)
    with pytest.raises(UniverseError, match=r"top_k: min_inputs must be an integer in \[0, inf\)"):
        build.top_k(["chr1:0-5"], [], 1, min_inputs=-1)


# ---------------------------------------------------------------------------- output
def test_write_universe_bed_and_sidecar(tmp_path):
    paths = as_sets([[("chr2", 5, 9), ("chr1", 0, 4)], [("chr1", 3, 8)]], "files", tmp_path)
    result = build.merge(paths)
    out = result.write(tmp_path / "u.bed")
    assert out.read_text() == "chr1\t0\t8\nchr2\t5\t9\n"
    assert RegionSet.from_bed(out) == result.regions
    side = json.loads((tmp_path / "u.bed.json").read_text())
    assert side["method"] == "merge" and side["params"] == {"min_gap": 0}
    assert side["chrom_order"] == "natural" and side["n_regions"] == 2
    assert side["output"] == {"path": "u.bed", "n_regions": 2,
                              "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
    assert side["inputs"][1]["sha256"] == hashlib.sha256(paths[1].read_bytes()).hexdigest()
    again = build.BuildReport.read(out)
    assert again.as_dict() == result.report.as_dict()
    assert "merge(min_gap=0): 2 inputs" in repr(again)
    gz = build.write_universe(result.regions, tmp_path / "u.bed.gz")
    assert gzip.decompress(gz.read_bytes()) == out.read_bytes()
    assert not (tmp_path / "u.bed.gz.json").exists()  # no report, no sidecar
    build.write_universe(result, tmp_path / "r.bed")  # a BuildResult carries its report
    assert (tmp_path / "r.bed.json").exists()


def test_write_universe_into_a_missing_folder_leaves_nothing(tmp_path):
    with pytest.raises(OSError):
        build.write_universe(["chr1:0-5"], tmp_path / "no" / "u.bed")
    assert list(tmp_path.iterdir()) == []


def test_write_universe_refuses_names_bed_cannot_hold(tmp_path):
    with pytest.raises(UniverseError, match="contains whitespace"):
        build.write_universe([("chr 1", 0, 5)], tmp_path / "u.bed")
    assert list(tmp_path.iterdir()) == []


def test_bad_report_file(tmp_path):
    (tmp_path / "u.bed.json").write_text("{not json")
    with pytest.raises(UniverseError, match="not a readable universe build report"):
        build.BuildReport.read(tmp_path / "u.bed")


@given(regions=st.lists(st.tuples(st.sampled_from(CHROMS + ["HLA-A*01:01", "ñ"]),
                                  st.integers(0, 2**62), st.integers(0, 10**6)), max_size=20))
@settings(max_examples=60, deadline=None)
def test_bed_bytes_matches_python_formatting(regions):
    regions = [(c, s, s + w) for c, s, w in regions if s + w <= 2**62]
    rs = RegionSet.from_tuples(regions) if regions else RegionSet.empty()
    assert build.bed_bytes(rs) == naive.bed_text(regions)


def test_straight_into_a_tokenizer():
    result = build.merge([["chr1:0-10", "chr2:0-10"], ["chr1:5-20", "chr1:100-200"]])
    tok = result.tokenizer()
    assert tok.universe.n_regions == 3
    assert tok.encode(["chr1:150-160", "chr2:1-2"]).tolist() == [1, 2]
    assert result.universe().regions == result.regions


def test_progress_bar_runs_without_warnings(capsys):
    rs, _ = build.merge([["chr1:0-5"], ["chr1:3-9"]], progress=True)
    assert rs.to_strings() == ["chr1:0-9"]
    build.coverage_cutoff([["chr1:0-5"]], 1, progress=True)
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------------------- errors
# (the kernels merge_sorted, compact_events, runs_at_least, is_sorted are compared with their
# oracles in tests/kernel_registry.py)
def test_every_error_is_a_genotok_error():
    for call in (lambda: build.tile({}, -5), lambda: build.merge(3),
                 lambda: build.top_k([], [], 0), lambda: build.coverage_cutoff([])):
        with pytest.raises(GenotokError):
            call()


# ---------------------------------------------------------------------------- bedtools
BEDTOOLS = shutil.which("bedtools")
needs_bedtools = pytest.mark.skipif(BEDTOOLS is None, reason="bedtools is not installed")


def _random_sets(rng, n_sets, n, chroms=("chr1", "chr2", "chr10")):
    """Random sets without zero-length regions (bedtools widens those when merging)."""
    out = []
    for _ in range(n_sets):
        c = rng.choice(chroms, n)
        s = rng.integers(0, 5000, n)
        e = s + rng.integers(1, 300, n)
        out.append(list(zip(c.tolist(), s.tolist(), e.tolist())))
    return out


def _bedtools(args, stdin: bytes | None = None) -> list[tuple]:
    res = subprocess.run([BEDTOOLS, *args], input=stdin, capture_output=True, check=True)
    rows = [line.split("\t") for line in res.stdout.decode().splitlines() if line]
    return rows


def _sorted_bed(path, regions):
    path.write_bytes(naive.bed_text(sorted(regions, key=lambda r: (r[0], r[1], r[2]))))
    return path


@needs_bedtools
@pytest.mark.parametrize("d", [0, 1, 25, -1, -10])
def test_merge_equals_bedtools_merge(tmp_path, d):
    sets = _random_sets(np.random.default_rng(d + 100), 5, 200)
    allr = _sorted_bed(tmp_path / "all.bed", [r for s in sets for r in s])
    rows = _bedtools(["merge", "-i", str(allr), "-d", str(d)])
    expected = naive.genomic([(c, int(s), int(e)) for c, s, e in rows])
    assert tuples(build.merge(sets, d).regions) == expected


@needs_bedtools
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_consensus_equals_bedtools_multiinter_and_genomecov(tmp_path, k):
    sets = _random_sets(np.random.default_rng(k), 6, 150)
    files = [str(_sorted_bed(tmp_path / f"s{i}.bed", s)) for i, s in enumerate(sets)]
    ours = tuples(quietly(build.coverage_cutoff, files, k).regions)
    # multiinter: intervals with the number of files covering them (column 4)
    multi = [(c, int(s), int(e)) for c, s, e, n, *_ in _bedtools(["multiinter", "-i", *files])
             if int(n) >= k]
    assert ours == naive.merge([multi], 0)
    # genomecov over the per-set merged inputs: depth = number of sets
    merged = [r for s in sets for r in naive.merge([s], 0)]
    cat = _sorted_bed(tmp_path / "cat.bed", merged)
    genome = tmp_path / "g.sizes"
    genome.write_text("chr1\t10000\nchr10\t10000\nchr2\t10000\n")
    cov = [(c, int(s), int(e)) for c, s, e, depth in
           _bedtools(["genomecov", "-i", str(cat), "-g", str(genome), "-bg"]) if int(depth) >= k]
    assert ours == naive.merge([cov], 0)
    # and the union is bedtools' coverage >= 1
    union = [(c, int(s), int(e)) for c, s, e, n, *_ in _bedtools(["multiinter", "-i", *files])]
    assert tuples(build.merge(files).regions) == naive.merge([union], 0)


# ---------------------------------------------------------------------------- one spelling
def test_old_keywords_are_refused(tmp_path):
    """genotok is unreleased: the spellings before issue 21 (``min_count=``, ``min_fraction=``,
    ``min_hits=``, ``quiet=``, ``path=``) are plain unknown keywords, not shims."""
    sets = [[("chr1", 0, 10)], [("chr1", 5, 10)]]
    for call in (lambda: build.coverage_cutoff(sets, min_count=2),
                 lambda: build.coverage_cutoff(sets, min_fraction=1.0),
                 lambda: build.top_k(["chr1:0-10"], sets, 1, min_hits=2),
                 lambda: build.merge(sets, quiet=True),
                 lambda: build.write_universe(build.merge(sets), path=tmp_path / "a.bed"),
                 lambda: build.merge(sets).write(path=tmp_path / "b.bed")):
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            call()
    assert not list(tmp_path.iterdir())


def test_builder_warnings_point_at_the_callers_line():
    sets = [[("chr1", 0, 10)], [("chr1", 5, 10)]]
    with pytest.warns(UserWarning, match="more than the 2 inputs") as rec:
        build.coverage_cutoff(sets, 3)
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="candidate regions are hit") as rec:
        build.top_k(["chr1:0-10", "chr1:20-30"], sets, 2)
    assert rec[0].filename == __file__
