"""Tokenizer: every mode, policy and order against the brute-force model; gtars compatibility."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import genotok
from genotok import RegionSet, Tokenizer, TokenizerSettings, Universe
from genotok.params import ParameterError

from . import naive_tokenizer as naive

from ._shared import GTARS_COMPAT as SHARED
from ._shared import needs_shared

CHROMS = ["chr1", "chr2", "chr10", "chr1_KI270706v1_random"]


@st.composite
def region_lists(draw, chroms=CHROMS, max_size=25, max_coord=400):
    n = draw(st.integers(0, max_size))
    out = []
    for _ in range(n):
        c = draw(st.sampled_from(chroms))
        s = draw(st.integers(0, max_coord))
        w = draw(st.one_of(st.just(0), st.integers(0, 120)))
        out.append((c, s, s + w))
    return out


@st.composite
def universes(draw):
    regs = draw(region_lists(max_size=30).filter(bool))
    if regs and draw(st.booleans()):  # duplicates and nested copies
        k = draw(st.integers(0, len(regs) - 1))
        c, s, e = regs[k]
        regs.append((c, s, e))
        regs.append((c, s + (e - s) // 4, e - (e - s) // 4))
    if draw(st.booleans()):  # sorted universes take the no-sort fast path
        regs.sort()
    return regs


SETTINGS = st.fixed_dictionaries({
    "overlap": st.sampled_from(["all", "best"]),
    "min_overlap": st.sampled_from([0, 0, 1, 30]),
    "min_fraction": st.sampled_from([0.0, 0.0, 0.5, 1.0]),
    "fraction_of": st.sampled_from(["query", "region"]),
    "unknown": st.sampled_from(["set", "region", "drop"]),
    "order": st.sampled_from(["gtars", "input", "genomic", "unique"]),
})


def _universe(regs, duplicates="unique"):
    with pytest.warns(UserWarning) if len(set(regs)) < len(regs) else _nullcontext():
        return Universe(RegionSet.from_tuples(regs), duplicates=duplicates)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _write_bed(path, regs):
    path.write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in regs))
    return path


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(universes(), region_lists(chroms=CHROMS + ["chrUnknown"]), SETTINGS,
       st.sampled_from(["unique", "lines"]))
def test_encode_equals_model_in_memory(ureg, qreg, opts, duplicates):
    tok = Tokenizer(_universe(ureg, duplicates), settings=TokenizerSettings(**opts))
    got = tok.encode(RegionSet.from_tuples(qreg)).tolist()
    assert got == naive.tokenize(ureg, qreg, from_file=False, duplicates=duplicates, **opts)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(universes(), region_lists(chroms=CHROMS + ["chrUnknown"]), SETTINGS,
       st.lists(st.tuples(st.integers(0, 30), st.sampled_from(CHROMS), st.integers(1, 400),
                          st.integers(1, 400)), max_size=2))
def test_encode_equals_model_from_file(tmp_path, ureg, qreg, opts, reversed_lines):
    """Lines with end before start (inserted at random places) warn and hit nothing, as in
    gtars: the model never sees them."""
    tok = Tokenizer(_universe(ureg), settings=TokenizerSettings(**opts))
    lines = list(qreg)
    for at, c, s, w in reversed_lines:
        lines.insert(min(at, len(lines)), (c, s, max(0, s - w)))
    path = _write_bed(tmp_path / "q.bed", lines)
    with pytest.warns(UserWarning, match="q.bed:.*end before start") if reversed_lines \
            else _nullcontext():
        got = tok.encode(str(path)).tolist()
    assert got == naive.tokenize(ureg, qreg, from_file=True, **opts)
    if reversed_lines:
        with pytest.raises(genotok.BedParseError, match="end is before start"):
            Tokenizer(tok.universe, strict=True, settings=TokenizerSettings(**opts)).encode(str(path))


@pytest.mark.parametrize("path", ["buckets", "radix"])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(universes(), region_lists(chroms=CHROMS + ["chrUnknown"]), SETTINGS)
def test_gtars_order_by_radix_sort_equals_model(tmp_path, path, ureg, qreg, opts):
    """The sorts of the gtars file order on every size: the bucket sort with ends as payload
    (normally from 524,288 queries) and the radix argsort below it (from 65,536 queries)."""
    from genotok.kernels import sort as _sort

    saved = _sort.MIN_RADIX, _sort.MIN_BUCKET
    _sort.MIN_RADIX, _sort.MIN_BUCKET = (1, 1) if path == "buckets" else (1, 1 << 62)
    try:
        tok = Tokenizer(_universe(ureg), settings=TokenizerSettings(**opts))
        bed = _write_bed(tmp_path / "q.bed", qreg)
        assert tok.encode(str(bed)).tolist() == naive.tokenize(ureg, qreg, from_file=True, **opts)
        # and the query index of each output (the sort's permutation, mapped back)
        rs = RegionSet.from_bed(bed)
        ov = tok.overlaps([rs])
        ref = tok.overlaps([RegionSet(rs.chrom_names, rs.codes, rs.starts, rs.ends,
                                      validate=False)])  # in memory: input order, no sort
        if ov.query is not None:  # (the genomic and unique orders report none)
            hit = ov.query >= 0
            assert sorted(zip(ov.query[hit].tolist(), ov.ids[hit].tolist())) == \
                sorted(zip(ref.query[ref.query >= 0].tolist(), ref.ids[ref.query >= 0].tolist()))
    finally:
        _sort.MIN_RADIX, _sort.MIN_BUCKET = saved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(universes(), st.lists(region_lists(chroms=CHROMS + ["chrZ"], max_size=12), max_size=6),
       SETTINGS, st.sampled_from([1, 2]))
def test_encode_batch_equals_encode(ureg, sets, opts, n_threads):
    tok = Tokenizer(_universe(ureg), settings=TokenizerSettings(**opts))
    rsets = [RegionSet.from_tuples(s) for s in sets]
    batch = tok.encode_batch(rsets, n_threads=n_threads)
    assert [b.tolist() for b in batch] == [naive.tokenize(ureg, s, **opts) for s in sets]
    ragged = tok.encode_batch(rsets, ragged=True)
    assert ragged.to_list() == [b.tolist() for b in batch]


def test_large_ids_above_uint16():
    n = 70_000
    regs = [("chr1", 10 * i, 10 * i + 10) for i in range(n)]
    tok = Tokenizer(RegionSet.from_tuples(regs))
    assert tok.vocab_size == n + 7
    assert tok.encode([("chr1", 10 * 66_000 + 5, 10 * 66_001 + 1)]).tolist() == [66_000, 66_001]


def test_zero_length_and_touching():
    tok = Tokenizer(["chr1:400-500", "chr1:500-600"])
    assert tok.encode(["chr1:450-450"]).tolist() == [0]      # strictly inside counts
    # at 500: [400,500) ends there, and s < qe fails for [500,600): half-open hits nothing
    assert tok.encode(["chr1:500-500"]).tolist() == [tok.unk_token_id]
    assert tok.encode(["chr1:500-501"]).tolist() == [1]
    assert tok.encode(["chr1:600-700"]).tolist() == [tok.unk_token_id]  # touching end
    assert tok.encode(["chr1:300-400"]).tolist() == [tok.unk_token_id]  # touching start


def test_unknown_policies():
    u = ["chr1:0-100"]
    q = ["chr1:10-20", "chr2:0-5", "chr1:500-600"]
    assert Tokenizer(u).encode(q).tolist() == [0]
    assert Tokenizer(u,
                     settings=TokenizerSettings(unknown="region")).encode(q).tolist() == [0, 1, 1]
    assert Tokenizer(u,
                     settings=TokenizerSettings(unknown="drop")).encode(["chr2:0-5"]).tolist() == []
    assert Tokenizer(u).encode(["chr2:0-5"]).tolist() == [1]
    assert Tokenizer(u).encode([]).tolist() == [1]  # an empty set is [<unk>], as gtars


def test_best_mode_ties_to_lowest_id():
    tok = Tokenizer(["chr1:100-200", "chr1:0-150", "chr1:150-400"],
                    settings=TokenizerSettings(overlap="best"))
    assert tok.encode(["chr1:140-160"]).tolist() == [0]  # 20 bp each for 0 and 2, 10 for 1
    assert tok.encode(["chr1:100-150"]).tolist() == [0]  # tie 50/50 between 0 and 1 -> 0


def test_duplicates_policy():
    regs = ["chr1:0-100", "chr1:50-80", "chr1:0-100", "chr2:5-9", "chr1:0-100"]
    # default: gtars' vocabulary, the distinct regions in order of first appearance
    with pytest.warns(UserWarning, match=r"2 duplicate region\(s\); the first is region 2 "
                                         r"\(chr1:0-100\), which repeats region 0"):
        u = Universe(regs)
    assert u.n_regions == 3 and u.vocab_size == 10 and u.unk_token_id == 3
    assert u.get_vocab() == {"chr1:0-100": 0, "chr1:50-80": 1, "chr2:5-9": 2, "<unk>": 3,
                             "<pad>": 4, "<mask>": 5, "<cls>": 6, "<eos>": 7, "<bos>": 8,
                             "<sep>": 9}
    assert u.line_ids.tolist() == [0, 1, 0, 2, 0] and u.duplicate_of.tolist() == [0, 1, 2]
    assert u == Universe(list(dict.fromkeys(regs)))  # the fingerprint follows the vocabulary
    tok = Tokenizer(u)
    assert tok.encode(["chr1:10-20", "chr2:0-6"]).tolist() == [0, 2]  # a thrice-listed region: once
    assert tok.decode([0, 2, 3]) == ["chr1:0-100", "chr2:5-9", "<unk>"]
    assert tok.convert_tokens_to_ids(["chr2:5-9", "<sep>"]) == [2, 9]
    # "lines": every line keeps its position as its id; hits report the first line's id
    with pytest.warns(UserWarning, match="ids stay line positions"):
        u = Universe(regs, duplicates="lines")
    assert u.vocab_size == 12 and u.unk_token_id == 5 and u.line_ids.tolist() == [0, 1, 2, 3, 4]
    assert u.duplicate_of.tolist() == [0, 1, 0, 3, 0]
    assert Tokenizer(u).encode(["chr1:10-20", "chr2:0-6"]).tolist() == [0, 3]
    assert u.convert_ids_to_tokens([2]) == ["chr1:0-100"]
    assert u.get_vocab()["chr2:5-9"] == 3
    with pytest.raises(genotok.UniverseError, match="duplicate"):
        Universe(["chr1:0-100", "chr1:0-100"], duplicates="error")
    with pytest.raises(ValueError, match="'first'"):
        Universe(regs, duplicates="first")


@pytest.mark.parametrize("regs", [["chr1:0-100", "chr1:50-80", "chr2:5-9"],  # sorted
                                  ["chr2:5-9", "chr1:50-80", "chr1:0-100"]])  # unsorted
def test_a_universe_without_repeats_keeps_no_identity_arrays(regs):
    """Each id its own: ``line_ids``, ``duplicate_of`` and the sweep's ``first`` are made on
    request, not kept (8 bytes a region each: 24 MB of a 1M-region universe's peak memory)."""
    u = Universe(regs)
    assert u._line_ids is None and u._first is None and u._dup_sorted is None
    assert u.sweep.first_map is None
    assert u.line_ids.tolist() == u.duplicate_of.tolist() == u.sweep.first.tolist() == [0, 1, 2]
    want = sorted(range(3), key=lambda i: (u.regions.codes[i], u.regions.starts[i]))
    assert u.sweep.rank.tolist() == [want.index(i) for i in range(3)]
    tok = Tokenizer(u, settings=TokenizerSettings(order="genomic"))
    assert tok.encode(["chr1:60-70", "chr2:0-6"]).tolist() == sorted(
        Tokenizer(u).encode(["chr1:60-70", "chr2:0-6"]).tolist(), key=want.index)


def test_duplicates_in_a_file_name_the_line_and_follow_into_saved_tokenizers(tmp_path):
    bed = tmp_path / "u.bed"
    bed.write_text("# a comment\nchr1\t0\t100\nchr1\t5\t9\nchr2\t0\t5\nchr1\t5\t9\t.\t0\n")
    with pytest.warns(UserWarning, match=r"u.bed:5: 1 duplicate line\(s\) .*the first repeats "
                                         r"line 3, chr1:5-9"):
        tok = Tokenizer.from_bed(bed)
    assert tok.vocab_size == 10 and tok.encode(["chr1:6-7"]).tolist() == [0, 1]
    with pytest.warns(UserWarning, match="u.bed:5: 1 duplicate"):
        lines = Tokenizer.from_bed(bed, duplicates="lines")
    assert lines.vocab_size == 11 and lines.unk_token_id == 4
    with pytest.raises(genotok.UniverseError, match=r"u.bed:5: 1 duplicate"):
        Tokenizer.from_bed(bed, duplicates="error")
    # saved and loaded: each keeps its vocabulary (and fingerprint)
    for t in (tok, lines):
        d = t.save_pretrained(tmp_path / t.universe.duplicates)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the saved "lines" universe repeats
            back = Tokenizer.from_pretrained(d)
            again = Tokenizer.from_config(t.save_config(tmp_path / f"{t.universe.duplicates}.toml"))
        assert back.universe == t.universe == again.universe
        assert back.get_vocab() == t.get_vocab()


def test_from_bed_takes_duplicates_as_the_docs_say(tmp_path):
    """docs/concepts.md documents ``duplicates="error"``; from_bed passed it to the settings,
    a TypeError naming the private ``Tokenizer._setup``."""
    p = tmp_path / "u.bed"
    p.write_text("chr1\t0\t100\nchr1\t0\t100\n")
    with pytest.raises(genotok.UniverseError, match="duplicate"):
        Tokenizer.from_bed(p, duplicates="error")
    with pytest.warns(UserWarning, match="1 duplicate line"):
        assert Tokenizer.from_bed(p, duplicates="lines").vocab_size == 9
    with pytest.warns(UserWarning, match="1 duplicate line"):
        assert Tokenizer.from_bed(p).vocab_size == 8  # gtars' vocabulary: one token a region


@pytest.mark.parametrize("given", ["x.bed", Path("x.bed"), b"x.bed"])
def test_encode_batch_refuses_one_path_for_a_list(given):
    """A str was iterated character by character ("/: is a directory")."""
    tok = Tokenizer(["chr1:0-100"])
    with pytest.raises(genotok.RegionParseError, match=r"encode_batch takes a list of region sets.*got the "
                                        r"single .*x\.bed.*encode\("):
        tok.encode_batch(given)


def test_vocabulary_api():
    tok = Tokenizer(["chr1:0-100", "chr2:5-10"])
    assert tok.vocab_size == len(tok) == 9
    ids = [tok.universe.unk_token_id, tok.universe.pad_token_id]
    assert tok.convert_ids_to_tokens(ids) == ["<unk>", "<pad>"]
    assert tok.decode(1) == ["chr2:5-10"]  # gtars: a list, also for one id
    assert tok.convert_tokens_to_ids(["chr2:5-10", "<eos>", "nope"]) == [1, 6, 2]
    vocab = tok.get_vocab()
    assert vocab["chr1:0-100"] == 0 and vocab["<sep>"] == 8 and len(vocab) == 9
    u = tok.universe
    assert [u.unk_token_id, u.pad_token_id, u.mask_token_id, u.cls_token_id, u.eos_token_id,
            u.bos_token_id, u.sep_token_id] == list(range(2, 9))
    with pytest.raises(genotok.UniverseError, match="outside"):
        tok.decode([99])


def test_fingerprint_stable_and_sensitive(tmp_path):
    regs = [("chr1", 0, 100), ("chr2", 5, 10)]
    a = Universe(RegionSet.from_tuples(regs))
    b = Universe(str(_write_bed(tmp_path / "u.bed", regs)))
    assert a.fingerprint == b.fingerprint
    assert Universe(RegionSet.from_tuples(regs[::-1])).fingerprint != a.fingerprint
    assert Universe(RegionSet.from_tuples(regs), {"unk": "[UNK]"}).fingerprint != a.fingerprint
    assert Universe(RegionSet.from_tuples([("chr1", 0, 101), regs[1]])).fingerprint != a.fingerprint


def test_call_padding_truncation_tensors():
    tok = Tokenizer(["chr1:0-100", "chr1:100-200", "chr1:200-300"])
    sets = [["chr1:50-250"], ["chr1:10-20"], []]
    out = tok(sets)
    assert out["input_ids"] == [[0, 1, 2], [0], [3]]  # an empty set is [<unk>]
    out = tok(sets, padding=True, return_tensors="np")
    pad = tok.universe.pad_token_id
    assert out["input_ids"].tolist() == [[0, 1, 2], [0, pad, pad], [3, pad, pad]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0], [1, 0, 0]]
    out = tok(sets, padding="max_length", truncation=True, max_length=2, return_tensors="np")
    assert out["input_ids"].tolist() == [[0, 1], [0, pad], [3, pad]]
    single = tok(["chr1:50-250"], return_tensors="np")  # tensors keep the batch dimension, as HF
    assert single["input_ids"].tolist() == [[0, 1, 2]] and single["attention_mask"].shape == (1, 3)
    assert tok(["chr1:50-250"])["input_ids"] == [0, 1, 2]  # lists: the one row, as HF
    with pytest.raises(ValueError, match="padding=True"):
        tok(sets, return_tensors="np")
    with pytest.raises(ValueError, match="max_length"):
        tok(sets, truncation=True)


def test_call_on_list_of_files(tmp_path):
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    f1 = _write_bed(tmp_path / "a.bed", [("chr1", 150, 160)])
    f2 = _write_bed(tmp_path / "b.bed", [("chr1", 10, 20), ("chr1", 90, 110)])
    assert tok([str(f1), str(f2)])["input_ids"] == [[1], [0, 0, 1]]


def test_settings_validated():
    with pytest.raises(ValueError, match="overlap"):
        Tokenizer(["chr1:0-1"], settings=TokenizerSettings(overlap="some"))
    with pytest.raises(ValueError, match="min_fraction"):
        Tokenizer(["chr1:0-1"], settings=TokenizerSettings(min_fraction=2))
    with pytest.raises(ValueError, match="n_threads"):
        Tokenizer(["chr1:0-10"]).encode(["chr1:0-5"], n_threads=0)


def test_config_round_trip_and_gtars_toml(tmp_path):
    upath = _write_bed(tmp_path / "u.bed", [("chr1", 0, 100), ("chr1", 50, 150)])
    tok = Tokenizer.from_bed(upath, overlap="best", unknown="region", min_overlap=5)
    cfg = tok.save_config(tmp_path / "tok.toml")
    again = Tokenizer.from_config(cfg)
    assert again.settings == tok.settings and again.fingerprint == tok.fingerprint
    (tmp_path / "gtars.toml").write_text(
        'universe = "u.bed"\ntokenizer_type = "bits"\n'
        'special_tokens = [{ name = "unk", token = "<UNK>" }]\n')
    g = Tokenizer.from_config(tmp_path / "gtars.toml")
    assert g.universe.unk_token == "<UNK>" and g.vocab_size == 9
    upath.write_text("chr1\t0\t100\n")  # the universe changed after the config was saved
    with pytest.raises(genotok.UniverseMismatchError, match="changed"):
        Tokenizer.from_config(cfg)
    with pytest.raises(genotok.UniverseError, match="no universe"):
        (tmp_path / "bad.toml").write_text("x = 1\n")
        Tokenizer.from_config(tmp_path / "bad.toml")


def test_in_memory_universe_config_writes_bed(tmp_path):
    tok = Tokenizer(["chr1:0-100", "chr2:0-10"])
    cfg = tok.save_config(tmp_path / "t.toml")
    assert Tokenizer.from_config(cfg).fingerprint == tok.fingerprint


def test_naming_mismatch_warns():
    tok = Tokenizer(["chr1:0-100"])
    with pytest.warns(UserWarning, match="'chr' prefix"):
        assert tok.encode([("1", 10, 20)]).tolist() == [tok.unk_token_id]


def test_inputs_of_every_kind_agree(tmp_path):
    tok = Tokenizer(["chr1:0-100", "chr2:0-100"])
    regs = [("chr2", 10, 20), ("chr1", 5, 6)]
    expected = [1, 0]
    assert tok.encode(regs).tolist() == expected
    assert tok.encode(["chr2:10-20", "chr1:5-6"]).tolist() == expected
    assert tok.encode((np.array(["chr2", "chr1"]), np.array([10, 5]), np.array([20, 6]))).tolist() == expected
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"chrom": ["chr2", "chr1"], "start": [10, 5], "end": [20, 6]})
    assert tok.encode(df).tolist() == expected
    # a file is sorted by (chromosome name bytes, start) first, as gtars does
    assert tok.encode(str(_write_bed(tmp_path / "q.bed", regs))).tolist() == [0, 1]
    by_input = Tokenizer(tok.universe, settings=TokenizerSettings(order="input"))
    assert by_input.encode(str(tmp_path / "q.bed")).tolist() == expected


@needs_shared
@pytest.mark.parametrize("k", range(6))
def test_equals_gtars_expected_ids(k):
    expected = json.loads((SHARED / "expected.json").read_text())
    tok = Tokenizer.from_bed(SHARED / "universe.bed")
    assert tok.vocab_size == expected["vocab_size"]
    for name, i in expected["special_tokens"].items():
        assert getattr(tok.universe, f"{name}_token_id") == i
    assert tok.encode(str(SHARED / f"query{k}.bed")).tolist() == expected["expected_input_ids"][f"query{k}.bed"]


@needs_shared
def test_equals_gtars_package_on_random_queries(tmp_path):
    gtars = pytest.importorskip("gtars.tokenizers")
    ours = Tokenizer.from_bed(SHARED / "universe.bed")
    theirs = gtars.Tokenizer.from_bed(str(SHARED / "universe.bed"))
    rng = np.random.default_rng(0)
    u = ours.universe.regions
    for trial in range(20):
        k = int(rng.integers(1, 40))  # gtars refuses an empty file; genotok gives [<unk>]
        pick = rng.integers(0, len(u), size=k)
        shift = rng.integers(-400, 400, size=k)
        starts = np.maximum(0, u.starts[pick] + shift)
        ends = starts + rng.integers(0, 800, size=k)
        names = [u.chrom_names[c] for c in u.codes[pick]]
        if k and trial % 3 == 0:
            names[0] = "chrNotThere"
        path = tmp_path / f"q{trial}.bed"
        path.write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in zip(names, starts, ends)))
        assert ours.encode(str(path)).tolist() == list(theirs(str(path))["input_ids"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(universes(), region_lists(chroms=CHROMS + ["chrUnknown"]), st.permutations(CHROMS + ["chrUnknown"]))
def test_grouped_files_take_the_run_path(tmp_path, ureg, qreg, chrom_order):
    # files laid out one sorted run per chromosome, in any chromosome order (natural, as gendata
    # writes them, or other): gtars order rearranges whole runs; must equal the model
    rank = {c: i for i, c in enumerate(chrom_order)}
    qreg = sorted(qreg, key=lambda r: (rank[r[0]], r[1]))
    tok = Tokenizer(_universe(ureg))
    path = _write_bed(tmp_path / "q.bed", qreg)
    assert tok.encode(str(path)).tolist() == naive.tokenize(ureg, qreg, from_file=True)


# ------------------------------------------------------------------ public steps (prepare / encode_prepared)
@pytest.mark.parametrize("opts", [{}, {"order": "unique"}, {"unknown": "region"},
                                  {"overlap": "best"}, {"tokenizer_type": "ailist"}])
def test_prepare_then_encode_prepared_is_encode_batch(tmp_path, opts):
    tok = Tokenizer(["chr1:0-100", "chr1:50-150", "chr2:5-50"], settings=TokenizerSettings(**opts))
    bed = tmp_path / "q.bed"
    bed.write_text("chr2\t1\t9\nchr1\t60\t70\nchr1\t10\t20\n")  # a file: the gtars order sorts
    sets = [RegionSet.from_bed(bed), RegionSet.from_strings(["chr9:0-5", "chr1:90-95"]),
            RegionSet.empty()]
    want = tok.encode_batch(sets, ragged=True)
    got = tok.encode_prepared(sets, [tok.prepare(s) for s in sets])
    assert got == want
    assert tok.encode_prepared(sets, dtype=np.uint32).data.dtype == np.uint32
    with pytest.raises(ValueError, match="one prepare"):
        tok.encode_prepared(sets, [tok.prepare(sets[0])])


_CODES = np.array([1, 0], np.int32)  # chr2, chr1: the set below in the universe's code space


@pytest.mark.parametrize("prepared,match", [
    ((np.array([5, 0], np.int32),), r"codes: 5 is outside \[-1, 2\)"),
    ((np.array([1], np.int32),), "codes must be a 1-D integer array of 2 items"),
    ((np.array([1.0, 0.0]),), "codes must be a 1-D integer array"),
    ((_CODES, np.array([7, 0])), r"order: 7 is outside \[0, 2\)"),
    ((_CODES, np.array([-1, 0])), r"order: -1 is outside"),
    ((_CODES, np.array([0, 0])), "order must be a permutation"),
    ((_CODES, None, np.array([1, 2, 3]), None), "starts must be a 1-D integer array of 2"),
    ((_CODES, None, None, None, np.array([0, 9])), r"perm: 9 is outside"),
])
def test_a_caller_s_prepared_set_is_checked_before_a_kernel_indexes_with_it(prepared, match):
    """``encode_prepared`` takes codes and orders from the caller's own mapping: they index the
    kernels' memory (numba checks nothing), so a bad one is refused, naming the set and field."""
    tok = Tokenizer(["chr1:0-100", "chr2:5-50"])
    sets = [["chr2:10-20", "chr1:5-9"]]
    assert tok.encode_prepared(sets, [(_CODES, np.array([1, 0]))]).to_list() == [[0, 1]]
    with pytest.raises(ParameterError, match=match):
        tok.encode_prepared(sets, [prepared])


@pytest.mark.parametrize("n_sets", [1, 40])  # the tiny-input path and the kernels'
def test_encode_batch_gives_the_dtype_asked_and_refuses_one_that_wraps_ids(n_sets):
    tok = Tokenizer([f"chr1:{i * 10}-{i * 10 + 10}" for i in range(300)])
    sets = [["chr1:2995-2999", "chr1:5-6"]] * n_sets
    for dtype in (np.int64, np.int32, np.uint32, "int32"):
        got = tok.encode_batch(sets, dtype=dtype, ragged=True)
        assert got.data.dtype == np.dtype(dtype) and got.to_list()[0] == [299, 0]
        assert all(a.dtype == np.dtype(dtype) for a in tok.encode_batch(sets, dtype=dtype))
    for bad in (np.int8, np.float64, "int16"):  # 299 would wrap to 43 in int8
        with pytest.raises(ParameterError, match="dtype must be int64, int32 or uint32"):
            tok.encode_batch(sets, dtype=bad)
    with pytest.raises(ParameterError, match="ragged must be"):
        tok.encode_batch(sets, ragged="no")


def test_old_destination_keywords_are_refused(tmp_path):
    """The spellings before issue 21 (``path=``/``directory=``; now ``out=``, HF's
    ``save_directory=``) are unknown keywords: no shim, nothing written."""
    tok = Tokenizer(["chr1:0-10", "chr1:20-30"])
    with pytest.raises(TypeError, match="path"):
        tok.universe.write_bed(path=tmp_path / "u.bed")
    with pytest.raises(TypeError, match="path"):
        tok.save_config(path=tmp_path / "t.toml")
    with pytest.raises(TypeError, match="directory"):
        tok.save_pretrained(directory=tmp_path / "hf")
    assert not list(tmp_path.iterdir())
    tok.save_pretrained(save_directory=tmp_path / "hf2")
    tok.universe.write_bed(out=tmp_path / "u2.bed")
    tok.save_config(out=tmp_path / "t2.toml")
    assert Tokenizer.from_config(tmp_path / "t2.toml").fingerprint == tok.fingerprint


def test_one_set_as_torch_tensors_has_a_batch_dimension():
    torch = pytest.importorskip("torch")
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    out = tok(["chr1:50-150"], return_tensors="pt")
    assert out["input_ids"].shape == (1, 2) and out["input_ids"].dtype == torch.int64
    assert out["attention_mask"].tolist() == [[1, 1]]


def test_model_inputs_have_a_notebook_repr():
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    html = tok([["chr1:50-150"], ["chr1:10-20"]], padding=True, return_tensors="np")._repr_html_()
    assert "input_ids" in html and "(2, 2) int64" in html and "attention_mask" in html
    assert "2 list(s) of 1-2" in tok([["chr1:50-150"], ["chr1:10-20"]])._repr_html_()


def test_decoding_a_corpus_record_with_another_universe_is_refused(tmp_path):
    """A corpus opened without expect= and decoded with the wrong tokenizer gave the wrong
    regions, silently (issue 36)."""
    from genotok.pipeline.run import pretokenize

    (tmp_path / "a.bed").write_text("chr1\t10\t20\nchr1\t150\t160\n")
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    other = Tokenizer(["chr2:0-100", "chr2:100-200"])
    corpus = genotok.Corpus.open(pretokenize([tmp_path / "a.bed"], tok, tmp_path / "c",
                                             progress=False).out)
    assert tok.decode(corpus[0]) == ["chr1:0-100", "chr1:100-200"]
    assert tok.batch_decode([corpus[0]]) == [["chr1:0-100", "chr1:100-200"]]
    for call in (lambda: other.decode(corpus[0]), lambda: other.decode(corpus[0][1:]),
                 lambda: other.batch_decode([corpus[0]])):
        with pytest.raises(genotok.UniverseMismatchError, match="wrong regions"):
            call()
    assert other.decode(np.array(corpus[0])) == ["chr2:0-100", "chr2:100-200"]  # a copy: ids


@pytest.mark.parametrize("given, says", [(None, "got a NoneType"), (5, "got a int"),
                                         ("frame", "got a DataFrame"), ("set", "got a RegionSet")])
def test_encode_batch_names_what_it_got(given, says):
    tok = Tokenizer(["chr1:0-100"])
    if given == "frame":
        pd = pytest.importorskip("pandas")
        given = pd.DataFrame({"chrom": ["chr1"], "start": [1], "end": [2]})
    elif given == "set":
        given = genotok.as_regions(["chr1:1-2"])
    with pytest.raises(TypeError, match=f"encode_batch takes a list of region sets.*{says}"):
        tok.encode_batch(given)


def test_from_bed_names_what_it_got():
    tok = Tokenizer(["chr1:0-100"])
    with pytest.raises(TypeError, match=r"from_bed takes the path .*got a Tokenizer \(it is a "
                                        r"tokenizer already\)"):
        Tokenizer.from_bed(tok)
    with pytest.raises(TypeError, match="got a NoneType"):
        Tokenizer.from_bed(None)


def test_a_special_token_spelled_like_a_region_is_refused():
    """Issue 32: extra tokens spelled like a region were refused, special tokens were not."""
    import pytest

    from genotok import Tokenizer
    from genotok.errors import UniverseError

    with pytest.raises(UniverseError, match="spelled like a region"):
        Tokenizer(["chr1:0-100"], special_tokens={"unk": "chr1:0-100"})


class _GtarsStyle(Tokenizer):
    """gtars' subclassing pattern, whose __init__ never calls Tokenizer.__init__."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        self.note = "ready"


def test_construction_takes_one_explicit_path():
    """Issue 40 #9: no __new__/__getattr__ deferral on Tokenizer and no patched __signature__:
    a gtars-style subclass (one defining __new__) is built in __new__ (BuiltInNew), any other
    class by __init__, whose signature is the real one."""
    import inspect
    import pickle

    assert "__getattr__" not in vars(Tokenizer) and "__new__" not in vars(Tokenizer)
    assert "__signature__" not in vars(Tokenizer.__init__)
    assert list(inspect.signature(Tokenizer).parameters)[:2] == ["source", "settings"]
    tok = _GtarsStyle(["chr1:0-100", "chr1:100-200"])
    assert tok.note == "ready" and tok.encode(["chr1:150-160"]).tolist() == [1]
    again = pickle.loads(pickle.dumps(tok))
    assert type(again) is _GtarsStyle and again.encode(["chr1:0-10"]).tolist() == [0]
    with pytest.raises(AttributeError):
        Tokenizer.__new__(Tokenizer).vocab_size  # a bare instance: nothing was built
    with pytest.raises(TypeError, match=r"'overlapp': did you mean overlap="):
        Tokenizer(["chr1:0-10"], overlapp="best")
    with pytest.raises(TypeError, match=r"'overlapp': did you mean overlap="):
        Tokenizer.from_bed(genotok.examples_dir() / "universe.bed", overlapp="best")


def test_the_overlap_mode_is_an_enum_shared_with_the_kernels():
    """Issue 40 #7: one name per mode, in genotok.kernels.modes."""
    from genotok.kernels.modes import Overlap, names

    s = TokenizerSettings(overlap="best", min_fraction=0.5)
    assert names(Overlap) == ("all", "best") and s.kernel_args() == (0, 0.5, 0.0, Overlap.BEST)
    assert str(TokenizerSettings.CONSTRAINTS["overlap"][0]) == "one of 'all', 'best'"
