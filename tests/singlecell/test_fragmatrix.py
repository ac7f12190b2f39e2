"""fragments → cells × regions matrices: a plain-Python oracle always, SnapATAC2 where installed."""

from __future__ import annotations

import gzip
import os
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import CellSpec, FragmentOptions, RankByMedian, Tokenizer, Universe
from genotok.errors import BedParseError
from genotok.singlecell import FragmentMatrix
from genotok.singlecell.fragmatrix import read_barcodes
from genotok.singlecell.matrix import fragment_matrix
from tests._cellspec import spec_of

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "genotok", "examples")


# ------------------------------------------------------------------------------------ oracle
def oracle(lines, regions, *, mode="insertion", shift=(0, 0), use_count=False, barcodes=None,
           min_fragments=1):
    """Count fragments line by line against every region: obviously correct, slow."""
    cells: dict[str, dict[int, float]] = {}
    nfrag: dict[str, int] = {}
    order = list(barcodes) if barcodes is not None else []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        chrom, a, b, bc = f[0], int(f[1]), int(f[2]), f[3]
        w = int(f[4]) if use_count and len(f) > 4 else 1
        if barcodes is not None and bc not in barcodes:
            continue
        if bc not in nfrag:
            nfrag[bc] = 0
            cells[bc] = {}
            if barcodes is None:
                order.append(bc)
        nfrag[bc] += 1
        row = cells[bc]
        for j, (c, s, e) in enumerate(regions):
            if c != chrom:
                continue
            if mode == "fragment":
                hit = (s < b and a < e) if b > a else (s < a < e)
                n = 1 if hit else 0
            else:
                sites = [a + shift[0], b - 1 + shift[1]]
                n = sum(1 for p in sites if p >= 0 and s <= p < e)
                if mode == "paired-insertion":
                    n = min(n, 1)
            if n:
                row[j] = row.get(j, 0) + n * w
    keep = [bc for bc in order if nfrag.get(bc, 0) >= min_fragments]
    X = np.zeros((len(keep), len(regions)))
    for i, bc in enumerate(keep):
        for j, v in cells.get(bc, {}).items():
            X[i, j] = v
    return keep, X, np.array([nfrag.get(bc, 0) for bc in keep], np.int64)


def _write(lines, gz=False):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "frags.tsv.gz" if gz else "frags.tsv")
    data = "".join(lines).encode()
    if gz:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        with open(path, "wb") as fh:
            fh.write(data)
    return path


def _tok(regions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repeated universe regions warn
        return Tokenizer(Universe([f"{c}:{s}-{e}" for c, s, e in regions], duplicates="lines"))


def _check(lines, regions, gz=False, block_bytes=32 << 20, **kw):
    path = _write(lines, gz)
    read = {k: kw[k] for k in ("mode", "shift", "barcodes", "min_fragments") if k in kw}
    got = FragmentMatrix.from_fragments(
        path, _tok(regions), read=FragmentOptions(block_bytes=block_bytes, **read),
        **{k: v for k, v in kw.items() if k not in read})
    names, X, n = oracle(lines, regions, **kw)
    assert got.barcodes == names
    assert got.X.shape == (len(names), len(regions))
    np.testing.assert_array_equal(got.X.toarray(), X)
    np.testing.assert_array_equal(got.n_fragments, n)
    return got


# ------------------------------------------------------------------------------------ tests
region = st.tuples(st.sampled_from(["chr1", "chr2"]), st.integers(0, 60), st.integers(1, 30)).map(
    lambda t: (t[0], t[1], t[1] + t[2]))
fragment = st.tuples(st.sampled_from(["chr1", "chr2", "chrX"]), st.integers(0, 70),
                     st.integers(0, 30), st.sampled_from(["AAA-1", "CCC-1", "GGG-1", "TTT-1"]),
                     st.integers(1, 4))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regions=st.lists(region, min_size=1, max_size=12),
       frags=st.lists(fragment, max_size=30),
       mode=st.sampled_from(["insertion", "paired-insertion", "fragment"]),
       shift=st.sampled_from([(0, 0), (4, -5)]),
       use_count=st.booleans(),
       allow=st.one_of(st.none(), st.lists(st.sampled_from(["CCC-1", "AAA-1", "NNN-1"]),
                                            unique=True)),
       min_fragments=st.integers(0, 3),
       block_bytes=st.sampled_from([7, 64, 1 << 20]),
       header=st.booleans(), gz=st.booleans())
def test_matches_oracle(regions, frags, mode, shift, use_count, allow, min_fragments,
                        block_bytes, header, gz):
    lines = (["# id=test\n", "#\n"] if header else [])
    lines += [f"{c}\t{a}\t{a + n}\t{b}\t{k}\n" for c, a, n, b, k in frags]
    _check(lines, regions, gz=gz, block_bytes=block_bytes, mode=mode, shift=shift,
           use_count=use_count, barcodes=allow, min_fragments=min_fragments)


def test_cut_sites_and_counts_by_hand():
    regions = [("chr1", 0, 10), ("chr1", 10, 100), ("chr1", 5, 20), ("chr1", 0, 10)]
    lines = ["chr1\t5\t20\tA\t7\n",     # cuts 5 and 19
             "chr1\t19\t20\tA\t1\n",    # a 1 bp fragment: both cuts at 19
             "chr1\t100\t101\tB\t1\n"]  # cut at 100 is past region 1 (half-open)
    got = _check(lines, regions)
    # region 3 repeats region 0: same counts; 2 cuts of one fragment in one region count 2
    assert got.X.toarray().tolist() == [[1, 3, 4, 1], [0, 0, 0, 0]]
    assert _check(lines, regions, mode="paired-insertion").X.toarray().tolist() == [
        [1, 2, 2, 1], [0, 0, 0, 0]]
    frag = _check(lines, regions, mode="fragment")
    assert frag.X.toarray().tolist() == [[1, 2, 2, 1], [0, 0, 0, 0]]
    assert _check(lines, regions, use_count=True).X.toarray()[0].tolist() == [7, 9, 16, 7]


def test_shift_drops_negative_sites():
    got = _check(["chr1\t2\t3\tA\t1\n"], [("chr1", 0, 10)], shift=(4, -5))
    # left cut 2 + 4 = 6 counts; right cut 2 - 5 < 0 is not counted
    assert got.X.toarray().tolist() == [[1]]


def test_anndata_output_and_whitelist_file(tmp_path):
    anndata = pytest.importorskip("anndata")
    allow = tmp_path / "bc.txt"
    allow.write_text("# kept cells\nCCC-1\nAAA-1\tother column\n\n")
    lines = ["chr1\t5\t20\tAAA-1\t1\n", "chr1\t30\t40\tCCC-1\t1\n", "chr1\t1\t2\tZZZ-1\t1\n"]
    ad = fragment_matrix(_write(lines), ["chr1:0-10", "chr1:10-100"],
                         read=FragmentOptions(barcodes=allow))
    assert isinstance(ad, anndata.AnnData)
    assert list(ad.obs_names) == ["CCC-1", "AAA-1"]
    assert ad.obs["n_fragments"].tolist() == [1, 1]
    assert list(ad.var_names) == ["chr1:0-10", "chr1:10-100"]
    assert ad.var["start"].tolist() == [0, 10] and ad.var["end"].tolist() == [10, 100]
    assert ad.X.toarray().tolist() == [[0, 2], [1, 1]]


def test_bundled_example_matches_oracle():
    path = os.path.join(EXAMPLES, "fragments.tsv.gz")
    with gzip.open(path, "rt") as fh:
        lines = fh.readlines()
    regions = []
    with open(os.path.join(EXAMPLES, "universe.bed")) as fh:
        for ln in fh:
            c, s, e = ln.split("\t")[:3]
            regions.append((c, int(s), int(e)))
    tok = _tok(regions)
    for mode in ("insertion", "paired-insertion", "fragment"):
        got = FragmentMatrix.from_fragments(path, tok,
                                            read=FragmentOptions(mode=mode, block_bytes=4096))
        names, X, n = oracle(lines, regions, mode=mode)
        assert got.barcodes == names
        np.testing.assert_array_equal(got.X.toarray(), X)
        np.testing.assert_array_equal(got.n_fragments, n)
        assert X.sum() > 0


def test_counting_parameters_are_declared():
    """The counter's own arguments go through genotok.params: a bool is no count, a string
    no shift, each named."""
    from genotok.params import ParameterError
    from genotok.singlecell.fragments import fragment_counts

    good = _write(["chr1\t5\t20\tA\t1\n"])
    tok = Tokenizer(["chr1:0-10"])
    for kw, name in ((dict(min_fragments=True), "min_fragments"),
                     (dict(min_fragments=-1), "min_fragments"),
                     (dict(block_bytes=0), "block_bytes"), (dict(block_bytes=1.5), "block_bytes")):
        with pytest.raises(ParameterError, match=name):
            fragment_counts(good, tok, **kw)
    for shift in ((1,), ("4", 0), (4, 2 ** 41)):
        with pytest.raises(ParameterError, match="shift"):
            fragment_matrix(good, tok, read=FragmentOptions(mode="insertion", shift=shift))


def test_errors(tmp_path):
    path = _write(["chr1\t5\t20\tA\t1\n", "chr1\tx\t20\tA\t1\n"])
    with pytest.raises(BedParseError, match=":2:"):
        fragment_matrix(path, ["chr1:0-10"])
    good = _write(["chr1\t5\t20\tA\t1\n"])
    with pytest.raises(ValueError, match="mode"):
        fragment_matrix(good, ["chr1:0-10"], read=FragmentOptions(mode="cuts"))
    with pytest.raises(ValueError, match="shift"):
        fragment_matrix(good, ["chr1:0-10"], read=FragmentOptions(shift=4))
    with pytest.raises(ValueError, match="repeats 'A'"):
        fragment_matrix(good, ["chr1:0-10"], read=FragmentOptions(barcodes=["A", "B", "A"]))
    with pytest.raises(ValueError, match="min_fragments"):
        fragment_matrix(good, ["chr1:0-10"], read=FragmentOptions(min_fragments=-1))
    with pytest.raises(BedParseError, match="no such"):
        fragment_matrix(str(tmp_path / "missing.tsv"), ["chr1:0-10"])
    with pytest.raises(FileNotFoundError):
        read_barcodes(tmp_path / "missing.txt")


def test_damaged_names_and_files_are_refused(tmp_path):
    """Issue 19 holds here too: two different invalid-UTF-8 barcodes are never merged into one
    cell, a control byte in a barcode is refused at its line, a damaged .gz names the file."""
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"chr1\t5\t20\tA\t1\nchr1\t5\t20\tB\xff\t1\nchr1\t5\t20\tB\xfe\t1\n")
    with pytest.raises(BedParseError, match=r"bad.tsv:2: the barcode .* not valid UTF-8"):
        fragment_matrix(bad, ["chr1:0-10"])
    ctl = tmp_path / "ctl.tsv"
    ctl.write_bytes(b"chr1\t5\t20\tA\x01\t1\n")
    with pytest.raises(BedParseError, match=r"ctl.tsv:1: .*control byte"):
        fragment_matrix(ctl, ["chr1:0-10"])
    gz = tmp_path / "cut.tsv.gz"
    gz.write_bytes(gzip.compress(b"chr1\t5\t20\tA\t1\n" * 1000)[:-20])
    with pytest.raises(BedParseError, match="cut.tsv.gz"):
        fragment_matrix(gz, ["chr1:0-10"])


# --------------------------------------------------------------------------- SnapATAC2 parity
def _snapatac2_matrix(frag_path, peaks, chrom_sizes, mode):
    snap = pytest.importorskip("snapatac2")
    ad = snap.pp.import_fragments(frag_path, chrom_sizes=chrom_sizes, min_num_fragments=0,
                                  sorted_by_barcode=False, chrM=[], n_jobs=1)
    pm = snap.pp.make_peak_matrix(ad, use_rep=peaks, counting_strategy=mode)
    return list(pm.obs_names), pm.X.toarray(), list(pm.var_names)


@pytest.mark.parametrize("mode", ["insertion", "paired-insertion", "fragment"])
def test_equals_snapatac2(mode, tmp_path):
    pytest.importorskip("snapatac2")
    rng = np.random.default_rng(7)
    sizes = {"chr1": 5000, "chr2": 3000}
    lines = []
    for _ in range(3000):
        c = "chr1" if rng.random() < 0.6 else "chr2"
        a = int(rng.integers(0, sizes[c] - 400))
        b = a + int(rng.integers(20, 400))
        lines.append((c, a, b, f"BC{int(rng.integers(0, 40)):02d}-1", int(rng.integers(1, 4))))
    lines.sort(key=lambda t: (t[0], t[1], t[2], t[3]))
    path = tmp_path / "frags.tsv.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(f"{c}\t{a}\t{b}\t{bc}\t{k}\n" for c, a, b, bc, k in lines)
    peaks = []
    for c, n in (("chr1", 25), ("chr2", 15)):
        starts = np.sort(rng.choice(np.arange(0, sizes[c] - 200, 150), n, replace=False))
        peaks += [f"{c}:{int(s)}-{int(s) + int(rng.integers(50, 149))}" for s in starts]
    names, X, var = _snapatac2_matrix(str(path), peaks, sizes, mode)
    ours = fragment_matrix(path, peaks, read=FragmentOptions(mode=mode))
    ours = ours[names]  # SnapATAC2's cell order
    assert var == list(ours.var_names)
    np.testing.assert_array_equal(ours.X.toarray(), X)


# ------------------------------------------------------------- tokens the ATAC way (tokenize_fragments)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regions=st.lists(region, min_size=1, max_size=10, unique=True),
       frags=st.lists(fragment, max_size=25), shift=st.sampled_from([(0, 0), (4, -5)]))
def test_tokenize_fragments_insertion_mode(regions, frags, shift):
    from genotok import tokenize_fragments

    regions = sorted(regions)
    lines = [f"{c}\t{a}\t{a + n}\t{b}\t{k}\n" for c, a, n, b, k in frags]
    path = _write(lines)
    tok = _tok(regions)
    names, X, _ = oracle(lines, regions, shift=shift)
    got_names, rows = tokenize_fragments(path, tok, CellSpec(unknown="region", values=True),
                                         read=FragmentOptions(mode="insertion", shift=shift))
    assert got_names == names
    unk = tok.universe.unk_token_id
    for i, bc in enumerate(names):
        cols = np.flatnonzero(X[i])
        missed = 0  # fragments none of whose cut sites is in a region: one <unk> per cell
        for line in lines:
            c, a, b, cell = line.split("\t")[:4]
            if cell != bc:
                continue
            sites = [int(a) + shift[0], int(b) - 1 + shift[1]]
            if not any(p >= 0 and rc == c and s <= p < e for p in sites for rc, s, e in regions):
                missed += 1
        want = cols.tolist() + ([unk] if missed else [])
        assert rows[i].tolist() == want
        assert rows.row_values(i).tolist() == X[i, cols].tolist() + ([missed] if missed else [])


def test_tokenize_fragments_encodings_equal_matrix_path(tmp_path):
    from genotok import tokenize_anndata, tokenize_fragments

    rng = np.random.default_rng(5)
    regions = [("chr1", s, s + 100) for s in range(0, 2000, 100)]  # every site hits a region
    lines = [f"chr1\t{a}\t{a + int(rng.integers(1, 300))}\tBC{int(rng.integers(0, 6))}\t1\n"
             for a in rng.integers(0, 1600, 200)]
    path = _write(lines)
    tok = _tok(regions)
    ad = fragment_matrix(path, tok)
    for kw in ({"bins": 7}, {"normalize": "total", "rank": "median", "order": "value"}):
        spec = spec_of(values=True, **kw)
        _, rows = tokenize_fragments(path, tok, spec, read=FragmentOptions(mode="insertion"))
        assert rows == tokenize_anndata(ad, tok, spec)
        np.testing.assert_allclose(rows.values, tokenize_anndata(ad, tok, spec).values)


@pytest.mark.parametrize("mode", ["insertion", "paired-insertion", "fragment"])
def test_bundled_example_equals_snapatac2(mode):
    pytest.importorskip("snapatac2")
    path = os.path.join(EXAMPLES, "fragments.tsv.gz")
    bed = os.path.join(EXAMPLES, "universe.bed")
    with open(bed) as fh:
        peaks = [f"{c}:{s}-{e}" for c, s, e in (ln.split()[:3] for ln in fh)]
    sizes: dict[str, int] = {}
    with gzip.open(path, "rt") as fh:
        for ln in fh:
            if not ln.startswith("#"):
                c, _, e = ln.split("\t")[:3]
                sizes[c] = max(sizes.get(c, 0), int(e) + 1)
    for p in peaks:
        c, rest = p.rsplit(":", 1)
        sizes[c] = max(sizes.get(c, 0), int(rest.split("-")[1]) + 1)
    names, X, var = _snapatac2_matrix(path, peaks, sizes, mode)
    ours = fragment_matrix(path,
                           _tok([(p.rsplit(":", 1)[0], *map(int, p.rsplit(":", 1)[1]
                                                                 .split("-"))) for p in peaks]),
                           read=FragmentOptions(mode=mode))[names]
    assert var == list(ours.var_names)
    np.testing.assert_array_equal(ours.X.toarray(), X)
    assert X.sum() > 0


def test_tokenize_fragments_with_given_medians():
    from genotok import tokenize_fragments

    lines = ["chr1\t5\t20\tA\t1\n", "chr1\t50\t60\tA\t1\n", "chr1\t5\t60\tB\t1\n"]
    path = _write(lines)
    tok = _tok([("chr1", 0, 10), ("chr1", 10, 100)])
    _, rows = tokenize_fragments(path, tok,
                                 CellSpec(unknown="drop", order="value", values=True, encoding=RankByMedian(np.array([2.0, 4.0, 1.0]))),
                                 read=FragmentOptions(mode="insertion"))
    # A: region 0 has 1 cut (1/2), region 1 has 3 cuts (3/4); B: 1/2 and 1/4
    assert rows.to_list() == [[1, 0], [0, 1]]
    np.testing.assert_allclose(rows.values, [0.75, 0.5, 0.5, 0.25])


def _add_pairs_oracle(indptr, indices, data, keys, weights, n_rows, n_cols):
    """The counter's former reduction: every key sorted by ``np.unique``, counts summed by
    ``np.bincount`` (old pairs first, then the new ones, as the kernel sums them)."""
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    all_keys = np.concatenate([rows * n_cols + indices, keys]).astype(np.int64)
    all_w = np.concatenate([data, weights]).astype(np.float64)
    uk, inv = np.unique(all_keys, return_inverse=True)
    sums = np.bincount(inv.ravel(), weights=all_w, minlength=uk.size)
    ptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(uk // max(n_cols, 1), minlength=n_rows), out=ptr[1:])
    return ptr, uk % max(n_cols, 1), sums


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(1, 9), st.data())
def test_add_pairs_kernel_matches_oracle(n_rows, n_cols, data):
    from genotok.kernels.fragments import add_pairs

    n_old = data.draw(st.integers(0, n_rows))
    key = st.integers(0, max(n_old * n_cols - 1, 0))
    old_keys = np.array(data.draw(st.lists(key, max_size=20 if n_old else 0)), np.int64)
    old_w = np.array(data.draw(st.lists(st.integers(0, 5), min_size=old_keys.size,
                                        max_size=old_keys.size)), np.float64)
    empty = np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0)
    ptr, idx, dat = _add_pairs_oracle(*empty, old_keys, old_w, n_old, n_cols)
    keys = np.array(data.draw(st.lists(st.integers(0, n_rows * n_cols - 1), max_size=40)),
                    np.int64)
    w = np.array(data.draw(st.lists(st.integers(0, 5), min_size=keys.size, max_size=keys.size)),
                 np.float64)
    want = _add_pairs_oracle(ptr, idx, dat, keys, w, n_rows, n_cols)
    got_ptr, got_idx, got_dat, n = add_pairs(ptr, idx, dat, keys, w, n_rows, n_cols)
    np.testing.assert_array_equal(got_ptr, want[0])
    np.testing.assert_array_equal(got_idx[:n], want[1])
    np.testing.assert_array_equal(got_dat[:n], want[2])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regions=st.lists(region, min_size=1, max_size=12),
       frags=st.lists(fragment, max_size=30),
       mode=st.sampled_from(["insertion", "paired-insertion", "fragment"]),
       use_count=st.booleans(), hit_slice=st.sampled_from([1, 2, 5]))
def test_search_in_slices_matches_oracle(regions, frags, mode, use_count, hit_slice):
    """A block's fragments searched a few at a time (``_HIT_SLICE``) count as in one go."""
    from genotok.singlecell import fragmatrix

    lines = [f"{c}\t{a}\t{a + n}\t{b}\t{k}\n" for c, a, n, b, k in frags]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fragmatrix, "_HIT_SLICE", hit_slice)
        _check(lines, regions, gz=False, block_bytes=1 << 20, mode=mode, shift=(0, 0),
               use_count=use_count, barcodes=None, min_fragments=0)


def test_name_tables_grow_across_blocks_and_calls():
    """Thousands of barcodes and hundreds of chromosome names (most unknown to the universe)
    in blocks of a few lines and kernel calls of 7 lines: the name tables, their byte arenas
    and the per-cell counters grow many times over, and the counts equal the oracle's."""
    from genotok.singlecell import fragmatrix

    rng = np.random.default_rng(5)
    regions = [("chr1", 0, 40), ("chr1", 30, 90), ("chr2", 10, 20), ("chr1", 30, 90)]
    chroms = ["chr1", "chr2"] + [f"scaffold_{i}_{'x' * (i % 40)}" for i in range(300)]
    lines = []
    for i in range(3000):
        c = chroms[int(rng.integers(0, len(chroms)))] if i % 3 else "chr1"
        a = int(rng.integers(0, 90))
        bc = f"{'ACGT'[i % 4] * int(rng.integers(1, 30))}-{int(rng.integers(0, 1500))}"
        lines.append(f"{c}\t{a}\t{a + int(rng.integers(1, 40))}\t{bc}\t{int(rng.integers(1, 5))}\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fragmatrix, "_HIT_SLICE", 7)
        for mode in ("insertion", "paired-insertion", "fragment"):
            _check(lines, regions, block_bytes=300, mode=mode, use_count=mode == "fragment",
                   min_fragments=0)


def test_barcode_lists_10x_csv_and_hash_barcodes(tmp_path):
    """Issue 32 items 14, 15: 10x's singlecell.csv given as an allow-list matched no barcode
    (each whole CSV line was taken for one), silently giving 0 cells; a barcode starting with
    '#' was dropped from a list file though fragment files accept it."""
    frag = _write(["chr1\t5\t20\tAAA-1\t1\n", "chr1\t5\t20\tCCC-1\t1\n", "chr1\t5\t20\t#G-1\t1\n"])
    csv = tmp_path / "singlecell.csv"
    csv.write_text("barcode,total,is__cell_barcode\nNO_BARCODE,9,0\nCCC-1,4,1\nGGG-1,2,0\n"
                   "AAA-1,3,1\n")
    assert read_barcodes(csv) == ["CCC-1", "AAA-1"]
    m = FragmentMatrix.from_fragments(frag, ["chr1:0-100"], read=FragmentOptions(barcodes=csv))
    assert m.barcodes == ["CCC-1", "AAA-1"]
    plain = tmp_path / "plain.csv"
    plain.write_text("\ufeffbarcode,x\nAAA-1,1\n")
    assert read_barcodes(plain) == ["AAA-1"]
    bad = tmp_path / "bad.csv"
    bad.write_text("cell,total\nAAA-1,3\n")
    with pytest.raises(BedParseError, match=r"bad.csv:1: a CSV barcode list needs a 'barcode'"):
        read_barcodes(bad)
    short = tmp_path / "short.csv"
    short.write_text("barcode,total\nAAA-1\n")
    with pytest.raises(BedParseError, match=r"short.csv:2: 1 CSV fields"):
        read_barcodes(short)
    hashed = tmp_path / "hashed.txt"
    hashed.write_text("# cells of sample 1\n#\n#G-1\nAAA-1\n")
    assert read_barcodes(hashed) == ["#G-1", "AAA-1"]
    m = FragmentMatrix.from_fragments(frag, ["chr1:0-100"],
                                      read=FragmentOptions(barcodes=hashed))
    assert m.barcodes == ["#G-1", "AAA-1"] and m.n_fragments.tolist() == [1, 1]


@pytest.mark.parametrize("gz", [False, True])
def test_bom_is_not_part_of_the_first_chromosome(gz):
    """Issue 32 item 15: a UTF-8 BOM at the start of a fragment file made its first chromosome
    '\\ufeffchr1', so its first fragments hit nothing."""
    frag = _write(["\ufeffchr1\t5\t20\tA\t1\n", "chr1\t30\t40\tA\t1\n"], gz=gz)
    m = FragmentMatrix.from_fragments(frag, ["chr1:0-100"], read=FragmentOptions(mode="fragment"))
    assert m.X.toarray().tolist() == [[2.0]]
    tiny = _write(["\ufeff"], gz=gz)  # (a BOM alone: an empty file)
    assert FragmentMatrix.from_fragments(tiny, ["chr1:0-100"]).barcodes == []


def test_the_universe_is_paid_for_once(monkeypatch, tmp_path):
    """Issue 33 item 4: a small file against a large universe paid per call for what depends
    on the universe alone (fragment_matrix's var frame: 2.5 s a call against 616k tiles; the
    tokens' var map): each is now made once per universe."""
    import genotok.singlecell.matrix as fm
    import genotok.singlecell.cells as cc
    import genotok.singlecell.fragments as ff

    calls = {"frame": 0, "map": 0}
    frame, vmap = fm._var_frame, cc._var_map_from_hits

    def count_frame(u):
        calls["frame"] += 1
        return frame(u)

    def count_map(*a):
        calls["map"] += 1
        return vmap(*a)

    monkeypatch.setattr(fm, "_var_frame", count_frame)
    monkeypatch.setattr(cc, "_var_map_from_hits", count_map)  # the driver's universe columns
    frag = tmp_path / "f.tsv"
    frag.write_text("chr1\t5\t20\tA-1\t1\nchr1\t150\t160\tB-1\t1\n")
    tok = Tokenizer([f"chr1:{s}-{s + 100}" for s in range(0, 5000, 100)])
    first = fragment_matrix(frag, tok)
    first.var["start"] = -1  # a caller's edit of its AnnData stays in it
    for _ in range(3):
        m = fragment_matrix(frag, tok)
        gad_tokens = ff.tokenize_fragments(frag, tok)
    assert calls == {"frame": 1, "map": 1}
    assert m.var["start"].tolist()[:2] == [0, 100] and gad_tokens[0] == ["A-1", "B-1"]


def test_names_decode_in_one_go_and_one_by_one(tmp_path):
    """The barcodes a block adds are decoded in one go when all ASCII (8,029 liver barcodes
    cost 40 ms one by one), else one by one: both give every name, in order, and a name that
    is not UTF-8 is still refused at its line."""
    frag = tmp_path / "f.tsv"
    frag.write_bytes(b"chr1\t5\t20\tAAA-1\t1\nchr1\t6\t20\tB\xc3\xa9-1\t1\n"
                     b"chr1\t7\t20\tCC-1\t1\n")
    m = FragmentMatrix.from_fragments(frag, ["chr1:0-100"])
    assert m.barcodes == ["AAA-1", "B\u00e9-1", "CC-1"]
    frag.write_bytes(b"chr1\t5\t20\tAAA-1\t1\nchr1\t6\t20\tDD-1\t1\n")
    assert FragmentMatrix.from_fragments(frag, ["chr1:0-100"]).barcodes == ["AAA-1", "DD-1"]
    frag.write_bytes(b"chr1\t5\t20\tAAA-1\t1\nchr1\t6\t20\tB\xff-1\t1\n")
    with pytest.raises(BedParseError, match=r"f\.tsv:2: the barcode .* is not valid UTF-8"):
        FragmentMatrix.from_fragments(frag, ["chr1:0-100"])


def test_a_small_file_is_read_without_a_thread_and_a_large_one_with_one(monkeypatch, tmp_path):
    """Issue 33 goal (small input, large universe): the read-ahead thread's start and
    hand-over cost ~40-60 ms per call on a busy box, more than the 750 KB liver file's whole
    parse; a file of at most SYNC_BYTES is now read on the calling thread, a larger one still
    one block ahead. The blocks (np.empty buffers, not zeroed 32 MiB bytearrays) are the
    same either way."""
    import genotok.singlecell.fragmatrix as fm

    lines = [f"chr1\t{i}\t{i + 50}\tC{i % 7}-1\t1\n" for i in range(0, 4000, 3)]
    frag = _write(lines)
    regions = ["chr1:0-100", "chr1:2000-2100"]
    whole = FragmentMatrix.from_fragments(frag, regions, read=FragmentOptions(block_bytes=997))
    started = []
    real = fm._prefetched

    def spy(blocks):
        started.append(1)
        return real(blocks)

    monkeypatch.setattr(fm, "_prefetched", spy)
    small = b"".join(b.tobytes() for b in fm._lines(frag, 1000, None, None))
    assert started == [] and small == "".join(lines).encode()
    monkeypatch.setattr(fm, "SYNC_BYTES", 100)
    big = b"".join(b.tobytes() for b in fm._lines(frag, 1000, None, None))
    assert started == [1] and big == small
    ahead = FragmentMatrix.from_fragments(frag, regions, read=FragmentOptions(block_bytes=997))
    assert (ahead.X != whole.X).nnz == 0 and ahead.barcodes == whole.barcodes
def test_fragment_matrix_runs_on_the_one_driver(monkeypatch, tmp_path):
    """Issue 31 item 4: fragment_matrix and tile_matrix are thin over tokenize_cells (their
    rows are the driver's token rows, valued with their counts, made a CSR by CountMatrix),
    the in-memory result and the streamed .h5ad alike; before, fragment_matrix counted
    through its own call of the counter and never reached the driver."""
    import genotok.singlecell.matrix as mx
    from genotok.pipeline.tiles import tile_matrix

    seen = []
    driver = mx.tokenize_cells

    def counting(source, tokenizer, spec=None, **kw):
        seen.append((type(source).__name__, type(kw.get("out")).__name__, spec))
        return driver(source, tokenizer, spec, **kw)

    monkeypatch.setattr(mx, "tokenize_cells", counting)
    regions = [("chr1", 0, 10), ("chr1", 10, 100), ("chr1", 5, 20), ("chr1", 0, 10)]
    lines = ["chr1\t5\t20\tA\t7\n", "chr1\t19\t20\tA\t1\n", "chr1\t300\t400\tA\t1\n",
             "chr1\t100\t101\tB\t1\n", "chr2\t1\t9\tC\t2\n"]
    path = _write(lines)
    for kw in ({}, {"read": FragmentOptions(mode="fragment")}, {"use_count": True}):
        m = fragment_matrix(path, _tok(regions), **kw)
        names, X, n = oracle(lines, regions, **({"mode": "fragment"} if "read" in kw else
                                                {"use_count": True} if kw else {}))
        assert m.obs_names.tolist() == names and m.X.has_sorted_indices
        np.testing.assert_array_equal(m.X.toarray(), X)
        np.testing.assert_array_equal(m.obs["n_fragments"], n)
    assert m.obs["unknown_count"].tolist() == [1, 1, 2]  # use_count: C's line weighs 2
    h5 = fragment_matrix(path, _tok(regions), out=tmp_path / "m.h5ad", memory_mb=1e-6)
    np.testing.assert_array_equal(h5.X[:].toarray(), oracle(lines, regions)[1])
    assert h5.obs["unknown_count"].tolist() == [1, 1, 1]
    h5.file.close()
    tile_matrix(path, {"chr1": 1000}, 100)
    assert [s[:2] for s in seen] == [("FragmentSource", "CountMatrix")] * 5
    assert all(s[2].values and s[2].unknown == "region" for s in seen)
    assert [s[2].use_count for s in seen] == [False, False, True, False, False]


@pytest.mark.parametrize("frag, allow", [
    ("macs3/test.fragments.tsv.gz", "macs3/barcodes.txt"),
    ("macs3/yeast_500k_SRR1822137.frag.gz", "macs3/yeast_500k_SRR1822137.barcode.txt"),
    ("maestro/test.fragments.tsv.gz", "maestro/test.barcode.txt.gz")])
def test_real_barcode_lists_choose_the_rows(frag, allow):
    """The real allow-lists (MACS3's plain list, MAESTRO's gzipped one of barcodes with a
    '#'): the cells come in the list's order, each row the unfiltered matrix's row (a listed
    cell without fragments: an empty row)."""
    from genotok.pipeline.tiles import tile_tokenizer
    from tests._shared import SHARED, shared

    real = SHARED / "data" / "real"
    fpath, bpath = shared(real / frag), shared(real / allow)
    cells = read_barcodes(bpath)
    raw = gzip.open(fpath).read()
    sizes: dict = {}
    for ln in raw.splitlines():
        if ln and not ln.startswith(b"#"):
            c, _, e = ln.split(b"\t")[:3]
            sizes[c.decode()] = max(sizes.get(c.decode(), 0), int(e) + 1)
    tok = tile_tokenizer(sizes, 5000, ())
    full = fragment_matrix(fpath, tok)
    m = fragment_matrix(fpath, tok, read=FragmentOptions(barcodes=bpath, min_fragments=0))
    assert m.obs_names.tolist() == cells and len(cells) > 0
    row = {b: i for i, b in enumerate(full.obs_names)}
    got = m.X.toarray()
    for i, b in enumerate(cells):
        want = full.X[row[b]].toarray()[0] if b in row else np.zeros(m.n_vars)
        np.testing.assert_array_equal(got[i], want)
    assert sum(b in row for b in cells) > 0
