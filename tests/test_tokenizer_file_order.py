"""BED files laid out to take each path from a file to the kernels, against gtars and the oracle.

A file in the gtars order (chromosome name by bytes, then start, stably) reaches the kernels by
one of these paths (``Tokenizer._query_order``): whole chromosome runs moved
(``kernels.sort.runs_order``; ``sorted_runs`` fills up to 255 run bounds in one pass, a second
pass beyond), a stable sort (``sort_regions``: NumPy below ``MIN_BUCKET`` rows, the bucket radix
sort above) when a chromosome is split over two runs or a run steps back, and chromosome codes
translated by ``kernels.names.translate_codes`` from 65,536 rows on. The shapes here come from a
differential campaign of genotok against gtars 0.10 on random files of these layouts; gtars'
checks skip when it is not installed, the oracle's (``tests/naive_tokenizer.py``) always run.
"""

from __future__ import annotations

import numpy as np
import pytest

from genotok import Tokenizer, TokenizerSettings

from . import naive_tokenizer


def _write(path, rows):
    path.write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in rows))
    return path


def _gtars():
    return pytest.importorskip("gtars.tokenizers", reason="gtars is not installed")


# ---------------------------------------------------------------------------------- regressions
def test_ailist_on_a_sorted_file_with_at_most_one_id(tmp_path):
    """tokenizer_type="ailist", a file that takes the sort path and yields 0 or 1 ids: the
    query indices of the sorted rows were mapped back through a permutation that was not kept
    (IndexError)."""
    _write(tmp_path / "u.bed", [("chr1", 100, 200), ("chr1", 150, 300), ("chr2", 0, 50)])
    (tmp_path / "a.toml").write_text('universe = "u.bed"\ntokenizer_type = "ailist"\n')
    tok = Tokenizer(str(tmp_path / "a.toml"))
    one = _write(tmp_path / "one.bed", [("chr1", 250, 260), ("chr1", 10, 20)])
    none = _write(tmp_path / "none.bed", [("chr2", 60, 70), ("chr1", 10, 20)])
    assert tok.encode(str(one)).tolist() == [1]
    assert tok.encode(str(none)).tolist() == [tok.unk_token_id]
    assert [a.tolist() for a in tok.encode_batch([str(one), str(none)])] == [[1], [3]]


# ---------------------------------------------------------------------------------- the shapes
NATURAL = [f"chr{i}" for i in range(1, 23)] + ["chrX", "chrY", "chrM"]
SCAFFOLDS = [f"chrUn_KI{270300 + i}v1" if i % 3 else f"chr{1 + i % 22}_KI{270300 + i}v1_random"
             for i in range(700)]
IN_MAIN = NATURAL + SCAFFOLDS[:150]  # the chromosomes of the main universe
EVERY = NATURAL + SCAFFOLDS + ["chrZ", "chr23", "Chr1"]
ABSENT = EVERY[len(IN_MAIN):]  # in no universe below


def _universe_rows(rng, chroms, per):
    rows = []
    for c in chroms:
        s = rng.integers(0, 20_000, per)
        e = s + rng.choice([1, 5, 50, 300, 2000], per)
        rr = [(c, int(a), int(b)) for a, b in zip(s, e)]
        rr += [(c, b, b + 40) for _, _, b in rr[: max(1, per // 3)]]           # touching
        rr += [(c, a + 1, max(a + 2, b - 1)) for _, a, b in rr[: per // 3]]   # nested
        rr += [(c, a, b + 7) for _, a, b in rr[: per // 3]]                   # same start
        rows += rr
    rows = [rows[i] for i in rng.permutation(len(rows))]  # a universe in no particular order
    return list(dict.fromkeys(rows))  # gtars corrupts its vocabulary on duplicate lines


def _queries(rng, chrom, m, by_chrom):
    """m queries on chrom: random, zero-length, touching either end, copies, equal starts."""
    s = rng.integers(0, 21_000, m)
    q = [(chrom, int(a), int(a + w)) for a, w in zip(s, rng.choice([0, 1, 10, 100, 3000], m))]
    mine = by_chrom.get(chrom, [])
    for k in range(min(m // 2, len(mine) * 3)):
        _, a, b = mine[int(rng.integers(len(mine)))]
        q[k] = [(chrom, b, b + 10), (chrom, max(0, a - 10), a), (chrom, a, b), (chrom, a, a),
                (chrom, b - 1, b), (chrom, b, b)][k % 6]
    for k in range(m // 4):  # equal starts, other ends: the file order must hold among them
        i, j = rng.integers(m, size=2)
        q[j] = (chrom, q[i][1], q[i][1] + int(rng.integers(0, 3000)))
    return q


def _runs(rng, chroms, sizes, by_chrom):
    """One run per chromosome, in the order given, each sorted by start (stably)."""
    out = []
    for c, m in zip(chroms, sizes):
        out.append(sorted(_queries(rng, c, int(m), by_chrom), key=lambda r: r[1]))
    return out


def _flat(runs):
    return [r for run in runs for r in run]


def _shapes(rng, by_chrom):
    """name -> rows of a query file, for the layouts that pick the paths to the kernels."""
    def pick(pool, k):
        return [str(c) for c in rng.choice(pool, k, replace=False)]

    def sizes(k, n):
        return rng.multinomial(n - k, np.ones(k) / k) + 1

    byte = sorted(NATURAL, key=str.encode)
    shapes = {
        "natural": _flat(_runs(rng, NATURAL, sizes(25, 250), by_chrom)),  # chr1, chr2, ... chr10
        "byte": _flat(_runs(rng, byte, sizes(25, 250), by_chrom)),        # already gtars' order
        "reverse": _flat(_runs(rng, byte[::-1], sizes(25, 250), by_chrom)),
        "random_with_absent": _flat(_runs(rng, pick(NATURAL, 20) + ABSENT[:5], sizes(25, 250),
                                          by_chrom)),
        "runs255": _flat(_runs(rng, pick(EVERY, 255), sizes(255, 300), by_chrom)),
        "runs256": _flat(_runs(rng, pick(EVERY, 256), sizes(256, 300), by_chrom)),
        "runs700": _flat(_runs(rng, pick(EVERY, 700), sizes(700, 700), by_chrom)),
        "absent_only": _flat(_runs(rng, ABSENT[:3], [5, 1, 3], by_chrom)),
        "single": [("chr2", 0, 30_000)],
        "empty": [],
    }
    runs = _runs(rng, pick(NATURAL, 12), sizes(12, 250), by_chrom)
    r = runs[3]
    runs[3], tail = r[len(r) // 2:], r[:len(r) // 2]  # chr* split: the later run starts lower
    shapes["split_back"] = _flat(runs + [tail])
    runs = _runs(rng, pick(NATURAL, 12), sizes(12, 250), by_chrom)
    r = runs[0]
    runs[0], tail = r[:len(r) // 2], r[len(r) // 2:]  # split, each start >= the last one's
    shapes["split_rising"] = _flat(runs[:1] + runs[5:] + [tail] + runs[1:5])
    runs = _runs(rng, pick(EVERY, 255), sizes(255, 300), by_chrom)
    shapes["split_256_runs"] = _flat(runs + [runs[7][:1]])  # 256 runs, 255 chromosomes
    runs = _runs(rng, pick(NATURAL, 12), sizes(12, 250), by_chrom)
    runs[5] = runs[5][::-1]  # one run per chromosome, one of them descending
    shapes["descending"] = _flat(runs)
    rows = _flat(_runs(rng, NATURAL, sizes(25, 300), by_chrom))
    shapes["shuffled"] = [rows[i] for i in rng.permutation(len(rows))]
    ties = [("chr1", 100 * int(s), 100 * int(s) + int(e)) for s, e in
            zip(rng.integers(0, 60, 200), rng.integers(0, 5000, 200))]
    ties += [("chr10", a, b) for _, a, b in ties[:100]]
    shapes["ties_shuffled"] = ties  # many equal starts, file order among them
    shapes["ties_sorted"] = sorted(ties, key=lambda r: (r[0] != "chr10", r[1]))
    return shapes


class Campaign:
    """Two universes (a main one over 175 chromosome names, a tiny one for the files of more
    than 65,536 lines, which the oracle walks row by row) and their query files."""

    def __init__(self, d):
        rng = np.random.default_rng(2026)
        main = _universe_rows(rng, NATURAL, 3) + _universe_rows(rng, SCAFFOLDS[:150], 1)
        self.universes = {"main": main,
                          "tiny": _universe_rows(rng, ["chr1", "chr2", "chr10"], 2)}
        self.paths, self.rows, self.of = {}, {}, {}
        for name, rows in self.universes.items():
            self.paths[name] = _write(d / f"{name}.bed", rows)
        by_chrom = {}
        for c, s, e in main:
            by_chrom.setdefault(c, []).append((c, s, e))
        for name, rows in _shapes(rng, by_chrom).items():
            self.add(d, name, rows, "main")
        tiny = {}
        for c, s, e in self.universes["tiny"]:
            tiny.setdefault(c, []).append((c, s, e))
        chroms = ["chr2", "chr10", "chrZ", "chr1", "chrUn_x"]  # chr10 < chr1 < chr2 in bytes
        rows = _flat(_runs(rng, chroms, [30_000, 20_000, 5_000, 15_000, 1_000], tiny))
        self.add(d, "big_sorted", rows, "tiny")  # 71,000 lines: codes via translate_codes
        self.add(d, "big_shuffled", [rows[i] for i in rng.permutation(len(rows))], "tiny")

    def add(self, d, name, rows, universe):
        self.paths[name] = _write(d / f"{name}.bed", rows)
        self.rows[name] = rows
        self.of[name] = universe


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return Campaign(tmp_path_factory.mktemp("file_order"))


SHAPES = ["natural", "byte", "reverse", "random_with_absent", "runs255", "runs256", "runs700",
          "absent_only", "single", "empty", "split_back", "split_rising", "split_256_runs",
          "descending", "shuffled", "ties_shuffled", "ties_sorted", "big_sorted", "big_shuffled"]
SMALL = [s for s in SHAPES if not s.startswith("big")]
SORTING = ["split_back", "split_rising", "split_256_runs", "descending", "shuffled",
           "ties_shuffled"]


def test_the_shapes_take_the_paths_they_are_named_for(campaign):
    """Guard the campaign against drifting: each layout reaches the kernels as intended."""
    tok = Tokenizer(str(campaign.paths["main"]))

    def prepared(name):
        return tok.prepare(str(campaign.paths[name]))

    for name in ["natural", "reverse", "random_with_absent", "runs255", "runs256", "runs700",
                 "ties_sorted"]:
        p = prepared(name)
        assert p.sweep and p.starts is None and p.order is not None, name  # runs moved
    assert prepared("byte").order is None and prepared("byte").sweep  # already in order
    for name in SORTING:
        assert prepared(name).starts is not None, name  # sorted
    assert len(campaign.rows["big_sorted"]) >= 1 << 16


# ---------------------------------------------------------------------------------- the oracle
_ORACLE: dict = {}


def _oracle(campaign, name, **kw):
    key = (name, tuple(sorted(kw.items())))
    if key not in _ORACLE:
        u = campaign.universes[campaign.of[name]]
        if kw.get("unknown") == "drop":  # the oracle drops when the policy is neither
            kw = {**kw, "unknown": "none"}
        _ORACLE[key] = naive_tokenizer.tokenize(u, campaign.rows[name], from_file=True, **kw)
    return _ORACLE[key]


@pytest.mark.parametrize("min_bucket", [None, 1])
def test_encode_equals_the_oracle(campaign, monkeypatch, min_bucket):
    """Every shape; with min_bucket=1 the sorted files take the bucket radix sort that files
    of more than MIN_BUCKET (524,288) lines take."""
    from genotok.kernels import sort as sort_kernels

    if min_bucket is not None:
        monkeypatch.setattr(sort_kernels, "MIN_BUCKET", min_bucket)
    toks = {u: Tokenizer(str(campaign.paths[u])) for u in campaign.universes}
    for name in SHAPES:
        got = toks[campaign.of[name]].encode(str(campaign.paths[name])).tolist()
        assert got == _oracle(campaign, name), name


@pytest.mark.parametrize("kw", [{"order": "genomic"}, {"order": "unique"}, {"overlap": "best"},
                                {"unknown": "region"}, {"unknown": "drop"},
                                {"min_overlap": 5},
                                {"min_fraction": 0.5, "fraction_of": "region"}],
                         ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_other_settings_equal_the_oracle(campaign, monkeypatch, kw):
    """genotok's own settings (gtars has none of them) on the layouts that take the sort path
    and on runs moved whole, with the bucket radix sort on one of two calls."""
    from genotok.kernels import sort as sort_kernels

    tok = Tokenizer(str(campaign.paths["main"]), settings=TokenizerSettings(**kw))
    names = ["split_back", "split_256_runs", "ties_shuffled", "natural", "runs256", "empty"]
    for name in names:
        assert tok.encode(str(campaign.paths[name])).tolist() == _oracle(campaign, name, **kw), name
    monkeypatch.setattr(sort_kernels, "MIN_BUCKET", 1)
    got = tok.encode_batch([str(campaign.paths[n]) for n in names])
    assert [g.tolist() for g in got] == [_oracle(campaign, n, **kw) for n in names]


def test_encode_batch_equals_the_oracle(campaign):
    """Sorted, split, shuffled, single-line and empty files in one call, in a mixed order."""
    tok = Tokenizer(str(campaign.paths["main"]))
    names = [SMALL[i] for i in np.random.default_rng(3).permutation(len(SMALL))]
    got = tok.encode_batch([str(campaign.paths[n]) for n in names])
    assert [g.tolist() for g in got] == [_oracle(campaign, n) for n in names]
    tiny = Tokenizer(str(campaign.paths["tiny"]))
    big = ["big_shuffled", "big_sorted"]
    got = tiny.encode_batch([str(campaign.paths[n]) for n in big], ragged=True)
    assert got.to_list() == [_oracle(campaign, n) for n in big]


def test_huge_coordinates_fall_back_to_the_wide_sort(tmp_path):
    """Starts near 2**61 on hundreds of chromosomes: the packed (rank, start) key is too wide
    for the radix sort (gtars reads u32 coordinates: the oracle only)."""
    rng = np.random.default_rng(9)
    chroms = NATURAL + SCAFFOLDS[:300]
    base = 1 << 61
    u = [(c, base + 100 * k, base + 100 * k + 150) for c in chroms[::7] for k in range(3)]
    q = [(str(c), base + int(s), base + int(s) + int(w)) for c, s, w in
         zip(rng.choice(chroms, 400), rng.integers(0, 400, 400), rng.integers(0, 100, 400))]
    tok = Tokenizer(str(_write(tmp_path / "u.bed", u)))
    path = str(_write(tmp_path / "q.bed", q))
    assert tok.encode(path).tolist() == naive_tokenizer.tokenize(u, q, from_file=True)


# ---------------------------------------------------------------------------------- gtars
def _gtars_ids(g, path):
    return list(g(str(path))["input_ids"])


@pytest.fixture(scope="module")
def gtars_tokenizers(campaign):
    """gtars' tokenizers for our configurations: bits, ailist, renamed specials."""
    gt = _gtars()
    d = campaign.paths["main"].parent
    (d / "ailist.toml").write_text('universe = "main.bed"\ntokenizer_type = "ailist"\n')
    (d / "specials.toml").write_text(
        'universe = "main.bed"\nspecial_tokens = [{name="unk", token="<UNKNOWN>"}]\n')
    out = {}
    for cfg in ["main.bed", "ailist.toml", "specials.toml", "tiny.bed"]:
        out[cfg] = (Tokenizer(str(d / cfg)), gt.Tokenizer(str(d / cfg)))
    return out


@pytest.mark.parametrize("cfg", ["main.bed", "ailist.toml", "specials.toml"])
def test_encode_equals_gtars(campaign, gtars_tokenizers, cfg):
    tok, ref = gtars_tokenizers[cfg]
    want = {}
    for name in SMALL:
        got = tok.encode(str(campaign.paths[name])).tolist()
        if name == "empty":  # gtars refuses an empty file ("0 regions found"); genotok: [<unk>]
            assert got == [tok.unk_token_id]
            want[name] = got
            continue
        want[name] = _gtars_ids(ref, campaign.paths[name])
        assert got == want[name], name
    got = tok.encode_batch([str(campaign.paths[n]) for n in SMALL[::-1]])
    assert [g.tolist() for g in got] == [want[n] for n in SMALL[::-1]]


def test_files_of_more_than_65536_lines_equal_gtars(campaign, gtars_tokenizers):
    tok, ref = gtars_tokenizers["tiny.bed"]
    for name in ["big_sorted", "big_shuffled"]:
        got = tok.encode(str(campaign.paths[name])).tolist()
        assert got == _gtars_ids(ref, campaign.paths[name]), name


def test_the_oracle_agrees_with_gtars_on_the_shapes(campaign, gtars_tokenizers):
    """The oracle tests above stand in for gtars where it is not installed: check they may."""
    _, ref = gtars_tokenizers["main.bed"]
    for name in SMALL:
        if name != "empty":
            assert _oracle(campaign, name) == _gtars_ids(ref, campaign.paths[name]), name
