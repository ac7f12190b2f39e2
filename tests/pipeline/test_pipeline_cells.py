"""pretokenize with value encodings (normalize, log1p, rank="median", bins) of single-cell inputs:
the corpus equals tokenize_anndata / tokenize_fragments with the same settings and the medians
of all the inputs; a resumed run with other settings is refused; the CLI flags round trip."""

from __future__ import annotations

import shutil

import anndata
import numpy as np
import pytest

import genotok
from genotok import Corpus, Tokenizer, feature_medians, tokenize_anndata, tokenize_fragments
from genotok.cli.main import main
from genotok.pipeline import PipelineError, pretokenize
from genotok import Bins, CellSpec, Normalize, RankByMedian
from genotok.params import ParameterError
from tests._cellspec import spec_of


def cells(**kw) -> CellSpec:
    """The spec of flat keywords, with the values stored when they are encoded."""
    return spec_of(values=any(k in kw for k in ("normalize", "log1p", "rank", "bins")), **kw)

EX = genotok.examples_dir()
U = str(EX / "universe.bed")


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(U)


@pytest.fixture(scope="module")
def h5ads(tmp_path_factory):
    """pbmc.h5ad and a second file with the same features but other cells (every third, in
    reverse), so the medians of both differ from either file's own."""
    d = tmp_path_factory.mktemp("h5ad")
    shutil.copy(EX / "pbmc.h5ad", d / "a.h5ad")
    a = anndata.read_h5ad(d / "a.h5ad")
    a[::-3].copy().write_h5ad(d / "b.h5ad")
    return [d / "a.h5ad", d / "b.h5ad"]


def expected(files, tok, **kw):
    """The corpus pretokenize should write: each file by tokenize_anndata, in order, with
    the medians of all files when rank="median"."""
    if kw.get("rank") == "median":
        kw["rank"] = feature_medians(files, normalize=kw.get("normalize"),
                                     target_sum=kw.get("target_sum", 1e4),
                                     log1p=kw.get("log1p", False))
    return [tokenize_anndata(f, tok, spec_of(values=True, **kw)) for f in files]


def assert_corpus_equals(corpus, parts):
    got = corpus.to_ragged(values=True)
    ids = [r for p in parts for r in p.to_list()]
    assert got.to_list() == ids
    want = np.concatenate([p.values for p in parts])
    np.testing.assert_allclose(got.values, want.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("kw", [
    {"normalize": "total"},
    {"normalize": "total", "target_sum": 100.0, "log1p": True},
    {"rank": "median"},
    {"normalize": "total", "rank": "median"},
    {"normalize": "total", "log1p": True, "bins": 5},
], ids=["total", "log1p", "rank", "total-rank", "bins"])
def test_equals_tokenize_anndata_with_corpus_medians(tmp_path, tok, h5ads, kw):
    run = pretokenize(h5ads, tok, tmp_path / "c", progress=False, cells=cells(**kw))
    corpus = Corpus.open(run.out)
    assert corpus.has_values
    assert_corpus_equals(corpus, expected(h5ads, tok, **kw))
    stored = corpus.header["extra"]["anndata"]["values_encoding"]
    assert stored["normalize"] == kw.get("normalize") and stored["bins"] == kw.get("bins")
    if kw.get("rank"):
        med, method = feature_medians(h5ads, normalize=kw.get("normalize"))
        own, _ = feature_medians(h5ads[0], normalize=kw.get("normalize"))
        assert not np.allclose(med, own, equal_nan=True)  # the test checks the corpus' medians
        assert stored["median_method"] == method  # the real method, not "given"
        assert stored["rank"] == "median"
        np.testing.assert_array_equal(np.array(stored["medians"], dtype=float), med)
        # every shard holds the same medians; a later tokenization reuses them (rank=corpus)
        again = tokenize_anndata(h5ads[1], tok, spec_of(values=True, **{**kw, "rank": corpus}))
        assert again.to_list() == expected(h5ads, tok, **kw)[1].to_list()


def test_fragments_encoded(tmp_path, tok):
    frag = EX / "fragments.tsv.gz"
    for kw in ({"bins": 4}, {"normalize": "total", "rank": "median"}):
        run = pretokenize(frag, tok, tmp_path / str(len(kw)), progress=False, cells=cells(**kw))
        corpus = Corpus.open(run.out)
        _, ref = tokenize_fragments(frag, tok, spec_of(values=True, **kw))
        assert_corpus_equals(corpus, [ref])
        assert corpus.header["extra"]["fragments"]["values_encoding"]["bins"] == kw.get("bins")


def test_fragment_medians_read_a_bucket_of_cells_at_a_time(tmp_path, tok, monkeypatch):
    """The medians pass counts a fragment file with the tokenizing pass' memory bound and
    reads the counts back a bucket of cells at a time (here 7 cells a bucket, and a bound
    that spills at once): the medians are those of the whole matrix, the spill files go."""
    from genotok.singlecell import fragmatrix, fragment_counts
    from genotok.singlecell.spill import RowSpill

    frag = EX / "fragments.tsv.gz"
    whole = anndata.AnnData(fragment_counts(frag, tok)[1])  # each line once, as tokenized
    assert whole.n_obs > 2 * 7  # several buckets, the last one partial
    monkeypatch.setattr(fragmatrix, "SPILL_ROWS", 7)
    monkeypatch.setattr("genotok.singlecell.fragments.SPILL_MB", 1e-6)
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setenv("TMPDIR", str(spills))
    monkeypatch.setattr("tempfile.tempdir", None)
    read = []  # the buckets read back (the medians pass', then the tokenizing pass')
    matrix = RowSpill.matrix
    monkeypatch.setattr(RowSpill, "matrix", lambda self, b, *a: read.append(b) or matrix(
        self, b, *a))
    run = pretokenize(frag, tok, tmp_path / "c", progress=False,
                      cells=CellSpec(encoding=(Normalize(), RankByMedian()), values=True))
    assert read == [0, 1, 2] * 2
    stored = Corpus.open(run.out).header["extra"]["fragments"]["values_encoding"]
    med, method = feature_medians(whole, normalize="total")
    np.testing.assert_array_equal(np.array(stored["medians"], dtype=float), med)
    assert stored["median_method"] == method
    assert list(spills.iterdir()) == []


def test_fragment_medians_count_as_the_tokens_do(tmp_path, tok):
    """With ``use_count=True`` the medians pass counts each fragment by its column 5, as the
    tokenizing pass does (it counted each line once: the medians of other counts than those
    it encoded), so the corpus equals ``tokenize_fragments`` with the same spec."""
    from genotok.singlecell import fragment_counts

    frag = EX / "fragments.tsv.gz"
    spec = CellSpec(encoding=(Normalize(), RankByMedian()), values=True, use_count=True)
    run = pretokenize(frag, tok, tmp_path / "c", progress=False, cells=spec)
    stored = Corpus.open(run.out).header["extra"]["fragments"]["values_encoding"]
    weighted = anndata.AnnData(fragment_counts(frag, tok, use_count=True)[1])
    np.testing.assert_array_equal(np.array(stored["medians"], dtype=float),
                                  feature_medians(weighted, normalize="total")[0])
    _, ref = tokenize_fragments(frag, tok, spec)
    np.testing.assert_array_equal(Corpus.open(run.out).to_ragged(values=True).values,
                                  ref.values)


def test_resumed_run_with_other_settings_is_refused(tmp_path, tok, h5ads):
    out = tmp_path / "c"
    pretokenize(h5ads, tok, out, progress=False, cells=CellSpec(encoding=(Bins(5),), values=True))
    pretokenize(h5ads, tok, out, progress=False,
                cells=CellSpec(encoding=(Bins(5),), values=True))  # the same: resumes (all done)
    for kw in ({"bins": 7}, {}, {"normalize": "total", "bins": 5}, {"rank": "median"}):
        with pytest.raises(PipelineError, match="other inputs or settings"):
            pretokenize(h5ads, tok, out, progress=False, cells=cells(**kw))


def test_medians_survive_resumption(tmp_path, tok, h5ads, monkeypatch):
    """Killed after the first input: the resumed run encodes the rest with the journaled
    medians of all inputs, and the corpus equals an uninterrupted run's."""
    import genotok.pipeline.batch as P

    out = tmp_path / "c"
    real = P.run_batch
    calls = []

    def flaky(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(P, "run_batch", flaky)
    with pytest.raises(KeyboardInterrupt):
        pretokenize(h5ads, tok, out, progress=False,
                    cells=CellSpec(encoding=(RankByMedian(),), values=True))
    monkeypatch.setattr(P, "run_batch", real)
    run = pretokenize(h5ads, tok, out, progress=False,
                      cells=CellSpec(encoding=(RankByMedian(),), values=True))
    assert run.skipped_done == 1
    assert_corpus_equals(Corpus.open(out), expected(h5ads, tok, rank="median"))



@pytest.mark.parametrize("where", ["garbage", "truncated"])
def test_unreadable_input_is_skipped_by_the_medians_pass(tmp_path, tok, h5ads, where):
    """Issue 24: with on_error="skip", an .h5ad the medians pass cannot read (garbage bytes;
    or a file whose features read but whose matrix does not) is skipped and reported like the
    tokenizing pass reports one, the medians are those of the good inputs alone, and a
    resumed run keeps it skipped."""
    bad = tmp_path / "bad.h5ad"
    if where == "garbage":
        bad.write_bytes(b"not an HDF5 file at all\n" * 100)
    else:  # the header and var_names read; the matrix' indices are cut short
        import h5py

        shutil.copy(h5ads[0], bad)
        with h5py.File(bad, "r+") as f:
            x = f["X"]
            idx = x["indices"][:]
            del x["indices"]
            x["indices"] = idx[: idx.size // 2]
    inputs = [h5ads[0], bad, h5ads[1]]
    with pytest.raises(Exception):  # noqa: B017 (the default stops at it, as before)
        pretokenize(inputs, tok, tmp_path / "fail", progress=False,
                    cells=CellSpec(encoding=(RankByMedian(),), values=True))
    out = tmp_path / "c"
    run = pretokenize(inputs, tok, out, progress=False, on_error="skip",
                      cells=CellSpec(encoding=(RankByMedian(),), values=True))
    assert [f["path"] for f in run.failed] == [str(bad)]
    assert str(bad) in run.failed[0]["error"]
    corpus = Corpus.open(out)
    assert [f["path"] for f in corpus.manifest["genotok_run"]["failed"]] == [str(bad)]
    assert_corpus_equals(corpus, expected(h5ads, tok, rank="median"))
    stored = corpus.header["extra"]["anndata"]["values_encoding"]
    np.testing.assert_array_equal(np.array(stored["medians"], dtype=float),
                                  feature_medians(h5ads)[0])
    again = pretokenize(inputs, tok, out, progress=False, on_error="skip",
                        cells=CellSpec(encoding=(RankByMedian(),), values=True))
    assert again.skipped_done == 3 and [f["path"] for f in again.failed] == [str(bad)]

def test_refused_inputs(tmp_path, tok, h5ads):
    bed = EX / "peaks" / "sample0.narrowPeak"
    with pytest.raises(PipelineError, match="a BED input is one record"):
        pretokenize([h5ads[0], bed], tok, tmp_path / "a", progress=False,
                    cells=CellSpec(encoding=(Normalize(),), values=True))
    with pytest.raises(PipelineError, match="stores token ids only"):
        pretokenize(h5ads, tok, tmp_path / "b", progress=False, format="gtok-dir",
                    cells=CellSpec(encoding=(Bins(3),), values=True))
    with pytest.raises(PipelineError, match="one feature space"):
        pretokenize([h5ads[0], EX / "fragments.tsv.gz"], tok, tmp_path / "c", progress=False,
                    cells=CellSpec(encoding=(RankByMedian(),), values=True))
    a = anndata.read_h5ad(h5ads[0])
    a[:, ::-1].copy().write_h5ad(tmp_path / "rev.h5ad")
    with pytest.raises(PipelineError, match="var_names differ"):
        pretokenize([h5ads[0], tmp_path / "rev.h5ad"], tok, tmp_path / "d", progress=False,
                    cells=CellSpec(encoding=(RankByMedian(),), values=True))
    with pytest.raises(ParameterError, match="cells must be a CellSpec or None"):
        pretokenize(h5ads, tok, tmp_path / "e", progress=False, cells={"bins": 5})
    assert not (tmp_path / "e").exists()


def test_cli_flags_round_trip(tmp_path, tok, h5ads, capsys):
    out = tmp_path / "cli"
    argv = ["pretokenize", "-q", "--universe", U, "--out", str(out), "--encoding",
            "normalize:target_sum=100:log1p=true,bins:n=6", "--values", *map(str, h5ads)]
    assert main(argv) == 0
    assert_corpus_equals(Corpus.open(out), expected(h5ads, tok, normalize="total",
                                                    target_sum=100.0, log1p=True, bins=6))
    out2 = tmp_path / "cli2"
    assert main(["pretokenize", "-q", "--universe", U, "--out", str(out2), "--encoding",
                 "rank_by_median", "--values", *map(str, h5ads)]) == 0
    assert_corpus_equals(Corpus.open(out2), expected(h5ads, tok, rank="median"))
    # a resumed run with other flags: a failure (exit 1), one line
    assert main(argv[:-2] + ["--encoding", "bins:n=7", *map(str, h5ads)]) == 1
    assert "other inputs or settings" in capsys.readouterr().err


@pytest.mark.parametrize("flags, fragment", [
    (["--encoding", "bins:n=1"], "argument --encoding: 'bins:n=1': Bins: n must be"),
    (["--encoding", "normalize:target_sum=0"], "argument --encoding"),
    (["--encoding", "median"], "argument --encoding: unknown encoding 'median'"),
    (["--encoding", "bins:5"], "name:field=value"),
    (["--cell-order", "values"], "argument --cell-order: invalid choice"),
    (["--max-length", "x"], "argument --max-length: invalid int value"),
])
def test_cli_rejects_bad_values_with_exit_2(tmp_path, h5ads, flags, fragment, capsys):
    code = main(["pretokenize", "--universe", U, "--out", str(tmp_path / "o"), *flags,
                 str(h5ads[0])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err and not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def tok_c(h5ads):
    from genotok.singlecell.conditions import condition_tokens

    return Tokenizer.from_bed(U, extra_tokens=condition_tokens(anndata.read_h5ad(h5ads[0]),
                                                               ["cell_type"]))


@pytest.mark.parametrize("format", ["corpus", "gtok-dir"])
def test_condition_tokens(tmp_path, tok_c, h5ads, format):
    kw = {"prepend": ["cell_type"], "add_cls": True}
    run = pretokenize(h5ads, tok_c, tmp_path / "c", progress=False, format=format,
                      cells=cells(**kw))
    want = [r for f in h5ads for r in tokenize_anndata(f, tok_c, spec_of(**kw)).to_list()]
    if format == "corpus":
        corpus = Corpus.open(run.out)
        assert corpus.to_ragged().to_list() == want
        assert corpus.header["extra"]["anndata"]["prepend"] == ["cell_type"]
    else:
        from genotok.formats.gtok import read_gtok
        from genotok.pipeline import record_name

        names = [f"{record_name(f)}@{n}" for f in h5ads for n in genotok.singlecell.obs_names(f)]
        got = [read_gtok(run.out / f"{n}.gtok").tolist() for n in names]
        assert got == want
    assert want[0][0] == tok_c.universe.cls_token_id
    assert tok_c.decode(want[0][1:2])[0].startswith("<cell_type=")
    with pytest.raises(PipelineError, match="other inputs or settings"):
        pretokenize(h5ads, tok_c, tmp_path / "c", progress=False, format=format,
                    cells=CellSpec(add_cls=True))
    with pytest.raises(PipelineError, match="fragment inputs have none"):
        pretokenize([h5ads[0], EX / "fragments.tsv.gz"], tok_c, tmp_path / "d", progress=False,
                    cells=cells(**kw))
    # a string is one column, as in tokenize_anndata (it was a TypeError)
    one = pretokenize(h5ads, tok_c, tmp_path / "e", progress=False, format=format,
                      cells=CellSpec(prepend="cell_type"))
    assert one.n_records == sum(len(genotok.singlecell.obs_names(f)) for f in h5ads)


def test_cli_condition_flags(tmp_path, tok_c, h5ads):
    cfg = tok_c.save_config(tmp_path / "tok.toml", universe_path=U)
    out = tmp_path / "c"
    assert main(["pretokenize", "-q", "--config", str(cfg), "--out", str(out), "--prepend",
                 "cell_type", "--add-cls", "--condition-unknown", "error", "--encoding",
                 "bins:n=4", "--values",
                 *map(str, h5ads)]) == 0
    kw = {"prepend": ["cell_type"], "add_cls": True, "condition_unknown": "error", "bins": 4}
    assert_corpus_equals(Corpus.open(out), [tokenize_anndata(f, tok_c, spec_of(values=True, **kw))
                                            for f in h5ads])


# ------------------------------------------------------------------------ per-cell settings
GENEFORMER = {"normalize": "total", "rank": "median", "order": "value", "max_length": 50}


@pytest.mark.parametrize("kw", [
    GENEFORMER,
    {"order": "value"},
    {"order": "shuffle", "seed": 3, "max_length": 20, "truncation": "sample"},
    {"min_count": 2.0, "bins": 4},
], ids=["geneformer", "value", "shuffle-sample", "min-count"])
def test_per_cell_settings_equal_tokenize_anndata(tmp_path, tok, h5ads, kw):
    """The Geneformer corpus in one call: medians of all inputs, each cell's tokens by
    value / median, descending, cut to max_length, as tokenize_anndata makes them."""
    run = pretokenize(h5ads, tok, tmp_path / "c", progress=False, cells=cells(**kw))
    corpus = Corpus.open(run.out)
    want = expected(h5ads, tok, **kw)
    encoded = any(k in kw for k in ("normalize", "rank", "bins"))
    assert corpus.has_values == encoded  # values are stored when encoded, as before
    if encoded:
        assert_corpus_equals(corpus, want)
    else:
        assert corpus.to_ragged().to_list() == [r for p in want for r in p.to_list()]
    if kw.get("max_length"):
        assert max(len(r) for p in want for r in p.to_list()) == kw["max_length"]
    if kw.get("order") == "value" and encoded:  # descending within each cell
        got = corpus.to_ragged(values=True)
        for a, b in zip(got.offsets[:-1], got.offsets[1:]):
            assert np.all(np.diff(got.values[a:b]) <= 0)
    # part of the plan: a resumed run with other per-cell settings is refused
    with pytest.raises(PipelineError, match="other inputs or settings"):
        pretokenize(h5ads, tok, tmp_path / "c", progress=False,
                    cells=cells(**{**kw, "seed": kw.get("seed", 0) + 1}))


@pytest.mark.parametrize("format", ["corpus", "gtok-dir"])
def test_per_cell_settings_of_fragments(tmp_path, tok, format):
    frag = EX / "fragments.tsv.gz"
    kw = {"order": "value", "max_length": 3}
    run = pretokenize(frag, tok, tmp_path / "c", progress=False, format=format, cells=cells(**kw))
    names, ref = tokenize_fragments(frag, tok, spec_of(**kw))
    if format == "corpus":
        assert Corpus.open(run.out).to_ragged().to_list() == ref.to_list()
    else:
        from genotok.formats.gtok import read_gtok
        from genotok.pipeline import record_name

        got = [read_gtok(run.out / f"{record_name(frag)}@{n}.gtok").tolist() for n in names]
        assert got == ref.to_list()
    assert max(len(r) for r in ref.to_list()) == 3


def test_per_cell_settings_refused_with_bed_and_checked(tmp_path, tok, h5ads):
    bed = EX / "peaks" / "sample0.narrowPeak"
    with pytest.raises(PipelineError,
                       match=r"cell spec \(order='value', max_length=5\) acts on the cells"):
        pretokenize([bed], tok, tmp_path / "a", progress=False,
                    cells=CellSpec(order="value", max_length=5))
    assert not (tmp_path / "a").exists()
    pretokenize([bed], tok, tmp_path / "b", progress=False, cells=CellSpec())  # the defaults


def test_cli_per_cell_flags(tmp_path, tok, h5ads):
    out = tmp_path / "c"
    assert main(["pretokenize", "-q", "--universe", U, "--out", str(out), "--encoding",
                 "normalize,rank_by_median", "--values", "--cell-order", "value",
                 "--max-length", "50",
                 *map(str, h5ads)]) == 0
    assert_corpus_equals(Corpus.open(out), expected(h5ads, tok, **GENEFORMER))


# ------------------------------------------------- one CellSpec: in memory, pretokenize, CLI
@pytest.mark.parametrize("spec", [
    CellSpec(encoding=(Normalize(1e4, log1p=True), Bins(5)), values=True, max_length=40),
    CellSpec(order="shuffle", seed=7, max_length=20, truncation="sample", min_count=1.0),
], ids=["binned-values", "shuffle-sample"])
@pytest.mark.parametrize("kind", ["h5ad", "fragments"])
def test_same_spec_same_tokens_three_ways(tmp_path, tok, h5ads, spec, kind, capsys):
    """The same CellSpec gives the same tokens and values in memory
    (tokenize_anndata / tokenize_fragments), through pretokenize(cells=spec) and through
    `genotok pretokenize --cells spec.toml`; the plan, the manifest and the shard header
    carry the spec's JSON; a resumed run with a changed spec is refused."""
    import dataclasses
    import json

    src = h5ads[0] if kind == "h5ad" else EX / "fragments.tsv.gz"
    if kind == "h5ad":
        mem = tokenize_anndata(src, tok, spec)
    else:
        mem = tokenize_fragments(src, tok, spec)[1]
    run = pretokenize(src, tok, tmp_path / "api", progress=False, cells=spec)
    (tmp_path / "spec.toml").write_text(spec.to_toml())
    assert main(["pretokenize", "-q", "--universe", U, "--out", str(tmp_path / "cli"),
                 "--cells", str(tmp_path / "spec.toml"), str(src)]) == 0
    for out in (run.out, tmp_path / "cli"):
        corpus = Corpus.open(out)
        assert corpus.to_ragged().to_list() == mem.to_list()
        assert corpus.has_values == spec.values
        if spec.values:
            np.testing.assert_array_equal(corpus.to_ragged(values=True).values,
                                          mem.values.astype(np.float32))
        key = "anndata" if kind == "h5ad" else "fragments"
        assert CellSpec.from_json(corpus.header["extra"][key]["cells"]) == spec
        journal = json.loads((out / "journal.json").read_text())
        assert journal["plan"]["cells"] == json.loads(spec.to_json())
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["genotok_run"]["cells"] == json.loads(spec.to_json())
    # the resume check compares the serialised specs: the same TOML resumes (all done), a
    # changed one is refused by the CLI and by the API, and the corpus is left as it was
    argv = ["pretokenize", "-q", "--universe", U, "--out", str(tmp_path / "cli"),
            "--cells", str(tmp_path / "spec.toml"), str(src)]
    assert main(argv) == 0
    changed = dataclasses.replace(spec, max_length=spec.max_length + 1)
    (tmp_path / "spec.toml").write_text(changed.to_toml())
    capsys.readouterr()
    assert main(argv) == 1
    assert "other inputs or settings" in capsys.readouterr().err
    with pytest.raises(PipelineError, match="other inputs or settings"):
        pretokenize(src, tok, run.out, progress=False, cells=changed)
    for out in (run.out, tmp_path / "cli"):
        assert Corpus.open(out).to_ragged().to_list() == mem.to_list()


def test_cli_cells_file_and_flags(tmp_path, tok, h5ads, capsys):
    spec = CellSpec(max_length=30, order="value")
    (tmp_path / "s.toml").write_text(spec.to_toml())
    base = ["pretokenize", "-q", "--universe", U, "--cells", str(tmp_path / "s.toml")]
    # a flag repeating the file's value is fine; one contradicting it is a usage error (2)
    assert main([*base, "--out", str(tmp_path / "a"), "--max-length", "30",
                 str(h5ads[0])]) == 0
    assert Corpus.open(tmp_path / "a").to_ragged().to_list() == \
        tokenize_anndata(h5ads[0], tok, spec).to_list()
    assert main([*base, "--out", str(tmp_path / "b"), "--max-length", "31",
                 str(h5ads[0])]) == 2
    assert "--max-length 31 disagrees with" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
    (tmp_path / "bad.toml").write_text("max_lenght = 3\n")
    assert main(["pretokenize", "-q", "--universe", U, "--cells", str(tmp_path / "bad.toml"),
                 "--out", str(tmp_path / "c"), str(h5ads[0])]) == 1
    assert "bad.toml: CellSpec: unknown field(s) ['max_lenght']" in capsys.readouterr().err


def test_cli_flags_are_generated_from_the_spec_fields():
    """One flag per CellSpec field: a new field gets its flag without a hand-written line."""
    from dataclasses import fields

    from genotok.cli.main import build_parser, cell_flag

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["pretokenize"]
    flags = {o for a in sub._actions for o in a.option_strings}
    assert {cell_flag(f.name) for f in fields(CellSpec)} <= flags


# ------------------------------------------------------------------ how the cell inputs are read
def _three_paths(tmp_path, path, tok, bed, read, flags):
    """The tokens of ``path`` read as ``read`` says by tokenize_anndata, pretokenize
    (``RunOptions(read=)``) and the CLI (``flags``), each as lists."""
    from genotok import AnnDataOptions
    from genotok.pipeline import RunOptions

    assert isinstance(read, AnnDataOptions)
    direct = tokenize_anndata(path, tok, read=read).to_list()
    run = pretokenize([path], tok, tmp_path / "api", progress=False,
                      options=RunOptions(read=read))
    api = Corpus.open(run.out, expect=tok)
    out = str(tmp_path / "cli")
    assert main(["pretokenize", "-q", "--universe", str(bed), "--out", out, *flags,
                 str(path)]) == 0
    cli = Corpus.open(out, expect=tok)
    assert api.names == cli.names
    return direct, api.to_ragged().to_list(), cli.to_ragged().to_list()


def _bed(tmp_path, regions):
    bed = tmp_path / "u.bed"
    bed.write_text("".join(r.replace(":", "\t").replace("-", "\t") + "\n" for r in regions))
    return bed, Tokenizer.from_bed(bed)


def test_modality_and_raw_through_pretokenize_and_the_cli(tmp_path):
    """AnnDataOptions(modality=, raw=) reached tokenize_anndata only: pretokenize read every
    .h5mu's default modality and every .h5ad's X, and the CLI had no flag. Now RunOptions(read=)
    and --modality/--raw give the same tokens as tokenize_anndata(read=), and the plan keeps
    them: a resumed run reading otherwise is refused."""
    import h5py
    import pandas as pd
    import scipy.sparse as sp

    from genotok import AnnDataOptions
    from genotok.pipeline import RunOptions

    try:
        from anndata.io import write_elem
    except ImportError:  # anndata < 0.11
        from anndata.experimental import write_elem

    peaks = ["chr1:10-20", "chr1:150-160", "chr2:10-20", "chr1:350-360", "chr9:0-10",
             "chr2:200-210"]
    bed, tok = _bed(tmp_path, ["chr1:0-100", "chr1:100-200", "chr1:300-400", "chr2:0-100",
                               "chr2:150-250"])
    X = sp.random(7, 6, density=0.5, format="csr", random_state=3, dtype=np.float32)
    X.data[:] = np.arange(1, X.nnz + 1)
    obs = pd.DataFrame(index=[f"c{i}" for i in range(7)])
    full = anndata.AnnData(X, var=pd.DataFrame(index=peaks), obs=obs)
    other = anndata.AnnData(X[:, ::-1].tocsr(), var=pd.DataFrame(index=peaks[::-1]), obs=obs)
    mu = tmp_path / "two.h5mu"  # two modalities of regions: atac is the default
    with h5py.File(mu, "w") as f:
        write_elem(f, "mod/atac", full[:, :3].copy())
        write_elem(f, "mod/peaks", other)
        write_elem(f, "obs", obs)
    read = AnnDataOptions(modality="peaks")
    a, b, c = _three_paths(tmp_path / "mu", mu, tok, bed, read, ["--modality", "peaks"])
    assert a == b == c == tokenize_anndata(other, tok).to_list()
    assert a != tokenize_anndata(mu, tok).to_list()  # the default modality: another matrix
    with pytest.raises(PipelineError):  # the plan holds how the inputs were read
        pretokenize([mu], tok, tmp_path / "mu" / "api", progress=False)
    raw_in = full[:, :4].copy()  # X: the first four peaks; raw: all six
    raw_in.raw = full
    h5 = tmp_path / "raw.h5ad"
    raw_in.write_h5ad(h5)
    a, b, c = _three_paths(tmp_path / "raw", h5, tok, bed, AnnDataOptions(raw=True), ["--raw"])
    assert a == b == c == tokenize_anndata(full, tok).to_list()
    assert a != tokenize_anndata(h5, tok).to_list()
    frag = tmp_path / "f.tsv"  # a fragment input of the same run is read with its defaults
    frag.write_text("chr1\t5\t20\tAAA-1\t1\n")
    run = pretokenize([h5, frag], tok, tmp_path / "mixed", progress=False,
                      options=RunOptions(read=AnnDataOptions(raw=True)))
    assert Corpus.open(run.out).names[-1] == "AAA-1"


def test_modality_of_the_real_h5mu_through_the_three_paths(tmp_path):
    """The real muon .h5mu (rna and atac): --modality atac by the three paths equals muon's
    own reading of mod/atac."""
    from genotok import AnnDataOptions
    from genotok.singlecell import var_regions
    from tests._shared import SHARED, shared

    path = shared(SHARED / "data" / "real" / "muon" / "test_rna_atac.h5mu")
    regions = var_regions(path).to_strings()  # the default modality: atac
    bed, tok = _bed(tmp_path, regions[::2])
    a, b, c = _three_paths(tmp_path, path, tok, bed, AnnDataOptions(modality="atac"),
                           ["--modality", "atac"])
    assert a == b == c and len(a) == 1000 and any(len(r) > 1 for r in a)
    mudata = pytest.importorskip("mudata", reason="mudata reads .h5mu in memory")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = mudata.read_h5mu(path)["atac"]
    assert a == tokenize_anndata(mem, tok).to_list()
