"""The command line: every subcommand's success path and its error paths.

Errors are checked the same way everywhere: the exit code (2 usage, 1 failure, 130 interrupted),
exactly one line on stderr starting ``genotok: error:``, and no traceback. Most runs are
in-process through ``genotok.cli.main`` (fast); a few go through ``python -m genotok``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import genotok
from genotok import Corpus, Tokenizer
from genotok.cli.main import main
from genotok.formats.gtok import read_gtok, write_gtok

EX = genotok.examples_dir()
U = str(EX / "universe.bed")
PEAKS = str(EX / "peaks")
Q = str(EX / "peaks" / "sample0.narrowPeak")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(U)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("cli") / "corpus")
    assert main(["pretokenize", "-q", "--universe", U, "--out", out, PEAKS]) == 0
    return out


def run(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    cap = capsys.readouterr()
    # a kernel this call compiles says so (which ones depends on the test order and the cache:
    # under pytest-xdist a test may be the first of its process to need them); the notice has
    # its own tests (tests/test_warmup.py)
    err = "".join(line for line in cap.err.splitlines(True)
                  if not line.startswith("genotok: compiling "))
    return code, cap.out, err


def assert_error(result, code: int, *fragments: str) -> None:
    got, _, err = result
    assert got == code, err
    assert err.startswith("genotok: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err


def subprocess_genotok(*argv, timeout=120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("GENOTOK_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "genotok", *argv], env=env, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------ tokenize
def test_tokenize_ids_tokens_summary(tok, tmp_path, capsys):
    code, out, err = run(["tokenize", "--universe", U, Q], capsys)
    assert code == 0 and err == ""
    assert list(map(int, out.split())) == tok.encode(Q).tolist()
    code, out, _ = run(["tokenize", "--universe", U, "--tokens", Q], capsys)
    assert out.splitlines() == tok.tokenize(Q)
    code, out, _ = run(["tokenize", "--universe", U, "--summary", Q, Q], capsys)
    ids = tok.encode(Q)
    line = f"sample0.narrowPeak\t{ids.size} tokens\t{np.unique(ids).size} distinct regions\t0 special"
    assert out.splitlines() == [line, line]
    # inputs as pretokenize reads them: a directory gives its BED-like files, sorted
    code, out, _ = run(["tokenize", "--universe", U, "--summary", PEAKS], capsys)
    assert [r.split("\t")[0] for r in out.splitlines()] == sorted(os.listdir(PEAKS))


def test_tokenize_dash_reads_standard_input(tok, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-m", "genotok", "tokenize", "--universe", U,
                          "--summary", "-", Q], input=Path(Q).read_bytes(), env=env,
                         capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.decode().splitlines()
    assert lines[0].split("\t")[0] == "-"
    assert lines[0].split("\t")[1:] == lines[1].split("\t")[1:]  # the same file's figures
    with open(os.devnull, "rb") as devnull:  # no pipe: what stdin is is said, nothing waits
        res = subprocess.run([sys.executable, "-m", "genotok", "tokenize", "--universe", U,
                              "-"], stdin=devnull, env=env, capture_output=True, text=True,
                             timeout=300)
    assert res.returncode != 0 and "not a regular file" in res.stderr, res.stderr


def test_tokenize_dash_only_once(capsys):
    assert_error(run(["tokenize", "--universe", U, "-", "-"], capsys), 2, "'-'", "once")


def test_tokenize_flags_match_the_tokenizer_options(tmp_path, capsys):
    flags = ["--overlap", "best", "--min-overlap", "10", "--min-fraction", "0.25",
             "--fraction-of", "region", "--unknown", "region", "--order", "input"]
    code, out, _ = run(["tokenize", "--universe", U, *flags, Q], capsys)
    want = Tokenizer.from_bed(U, overlap="best", min_overlap=10, min_fraction=0.25,
                              fraction_of="region", unknown="region", order="input").encode(Q)
    assert code == 0 and list(map(int, out.split())) == want.tolist()
    assert want.tolist() != Tokenizer.from_bed(U).encode(Q).tolist()  # the flags changed something


def test_tokenize_config_and_flags_override_it(tmp_path, capsys):
    cfg = Tokenizer.from_bed(U, overlap="best").save_config(tmp_path / "tok.toml")
    code, out, _ = run(["tokenize", "--config", str(cfg), Q], capsys)
    assert list(map(int, out.split())) == Tokenizer.from_bed(U, overlap="best").encode(Q).tolist()
    code, out, _ = run(["tokenize", "--config", str(cfg), "--order", "unique", Q], capsys)
    want = Tokenizer.from_bed(U, overlap="best", order="unique").encode(Q)
    assert list(map(int, out.split())) == want.tolist()


def test_tokenize_needs_universe_or_config(capsys):
    """The universe is --universe (or --config): a first positional BED is a query, not the
    universe (its spelling before issue 21)."""
    assert_error(run(["tokenize", U, Q], capsys), 2, "--universe", "--config")
    assert_error(run(["tokenize", Q], capsys), 2, "--universe")


def test_tokenize_out_file_and_overwrite(tok, tmp_path, capsys):
    out = tmp_path / "ids.txt"
    assert run(["tokenize", "--universe", U, "-o", str(out), Q], capsys)[:2] == (0, "")
    assert list(map(int, out.read_text().split())) == tok.encode(Q).tolist()
    assert_error(run(["tokenize", "--universe", U, "--out", str(out), "--tokens", Q], capsys), 1,
                 f"{out} exists; add --overwrite")
    assert run(["tokenize", "--universe", U, "--out", str(out), "--tokens", "--overwrite", Q],
               capsys)[0] == 0
    assert out.read_text().splitlines() == tok.tokenize(Q)


# ------------------------------------------------------------------ pretokenize
def test_pretokenize_with_tokenizer_flags(tmp_path, capsys):
    out = tmp_path / "c"
    code, stdout, err = run(["pretokenize", "--universe", U, "-o", str(out), "--overlap", "best",
                             "--unknown", "drop", "--threads", "1", "--files-per-shard", "2",
                             PEAKS], capsys)
    assert code == 0 and "5 records" in err and stdout == ""  # a summary: stderr, as -q says
    c = Corpus.open(out)
    assert c.info()["settings"]["overlap"] == "best" and c.info()["shards"] == 3
    assert c[0].tolist() == Tokenizer.from_bed(U, overlap="best", unknown="drop").encode(Q).tolist()
    # a re-run with other settings is refused (the journal is another plan) unless --overwrite
    assert run(["pretokenize", "-q", "--universe", U, "-o", str(out), PEAKS], capsys)[0] == 1
    assert run(["pretokenize", "-q", "--overwrite", "--universe", U, "-o", str(out), PEAKS],
               capsys)[:3] == (0, "", "")
    assert Corpus.open(out).info()["settings"]["overlap"] == "all"


def test_pretokenize_config(tmp_path, capsys):
    cfg = Tokenizer.from_bed(U, min_fraction=0.5).save_config(tmp_path / "tok.toml")
    assert run(["pretokenize", "-q", "--config", str(cfg), "--out", str(tmp_path / "c"), PEAKS],
               capsys)[0] == 0
    assert Corpus.open(tmp_path / "c").info()["settings"]["min_fraction"] == 0.5


def test_pretokenize_interrupted_exits_130(tmp_path, capsys, monkeypatch):
    import genotok.pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(genotok.pipeline, "pretokenize", interrupted)
    code, _, err = run(["pretokenize", "--universe", U, "--out", str(tmp_path / "c"), PEAKS],
                       capsys)
    assert code == 130 and err == "genotok: interrupted; re-run the same command to resume\n"


# ------------------------------------------------------------------ info, verify
def test_info_corpus_and_gtok(corpus, tmp_path, capsys):
    code, out, _ = run(["info", corpus], capsys)
    assert code == 0 and any(line.split() == ["n_records", "5"] for line in out.splitlines())
    code, out, _ = run(["info", "--json", corpus], capsys)
    assert json.loads(out)["n_tokens"] == Corpus.open(corpus).n_tokens
    g = tmp_path / "x.gtok"
    write_gtok([1, 2, 3], g)
    code, out, _ = run(["info", "--json", str(g)], capsys)
    assert code == 0 and json.loads(out)["n_tokens"] == 3


def test_verify(corpus, capsys):
    code, out, _ = run(["verify", corpus], capsys)
    assert code == 0 and out.startswith(f"{corpus}: OK (5 records")
    assert "header and data checksums" in out
    assert run(["verify", "-q", corpus], capsys) == (0, "", "")


def test_verify_says_what_it_checked_of_another_store(tmp_path, capsys):
    """A JSON Lines output has no checksums of its own: verify says what it did check (was:
    "checksums match" for every store)."""
    out = str(tmp_path / "j")
    assert main(["pretokenize", "-q", "--universe", U, "--out", out, "--format", "jsonl",
                 PEAKS]) == 0
    code, said, _ = run(["verify", out], capsys)
    assert code == 0 and "jsonl store: each file's size and digest against the manifest" in said
    assert "checksums" not in said


def test_verify_an_unfinished_run_says_to_re_run_it(tmp_path, capsys, monkeypatch):
    """It suggested write_manifest, which a user of the pipeline never calls."""
    out = tmp_path / "c"
    out.mkdir()
    (out / "journal.json").write_text("{}")  # what an interrupted run leaves: no manifest yet
    assert_error(run(["verify", str(out)], capsys), 1, "has not finished",
                 "re-run the same pretokenize command")


def test_hash_help_says_the_real_default(capsys):
    code, out, _ = run(["pretokenize", "--help"], capsys)
    assert code == 0 and "sha256 (the default without it)" in " ".join(out.split())


def test_info_and_verify_errors(tmp_path, capsys):
    assert_error(run(["info", str(tmp_path / "nothing")], capsys), 1, "nothing")
    g = tmp_path / "x.gtok"
    write_gtok([1, 2, 3], g)
    assert_error(run(["verify", str(g)], capsys), 1, "bad magic")


# ------------------------------------------------------------------ decode
def test_decode_records_and_out_file(corpus, tok, tmp_path, capsys):
    code, out, _ = run(["decode", "--universe", U, corpus, "--record", "0"], capsys)
    rows = [line.split("\t") for line in out.splitlines()]
    ids = Corpus.open(corpus)[0]
    want = tok.universe.decode_regions(ids[ids < tok.universe.n_regions])
    assert code == 0 and [f"{c}:{s}-{e}" for c, s, e, _ in rows] == want.to_strings()
    assert {r[3] for r in rows} == {"sample0"}
    bed = tmp_path / "all.bed"
    assert run(["decode", "--universe", U, "-o", str(bed), corpus], capsys)[0] == 0
    assert len(bed.read_text().splitlines()) == Corpus.open(corpus).n_tokens  # no <unk> here
    assert_error(run(["decode", "--universe", U, "-o", str(bed), corpus], capsys), 1, "--overwrite")


def test_decode_a_gtok_with_special_tokens(tok, tmp_path, capsys):
    g = tmp_path / "x.gtok"
    write_gtok([0, 3, tok.unk_token_id], g)
    code, out, err = run(["decode", "--universe", U, str(g)], capsys)
    rows = [line.split("\t") for line in out.splitlines()]
    assert code == 0 and [f"{c}:{s}-{e}" for c, s, e in rows] == \
        tok.universe.decode_regions([0, 3]).to_strings()
    assert err == "genotok: 1 special token(s) (<unk>, <pad>, …) have no region and were not written\n"
    assert run(["decode", "-q", "--universe", U, str(g)], capsys)[2] == ""


def test_decode_refuses_ids_outside_the_vocabulary(tok, tmp_path, capsys):
    g = tmp_path / "big.gtok"
    write_gtok([1, tok.vocab_size + 5], g)
    assert_error(run(["decode", "--universe", U, str(g)], capsys), 1,
                 f"token id {tok.vocab_size + 5} is outside the vocabulary")


def test_decode_errors(corpus, tmp_path, capsys):
    assert_error(run(["decode", "--universe", U, corpus, "--record", "99"], capsys), 2,
                 "argument --record:", "has 5 records (0..4)")
    assert_error(run(["decode", "--universe", U, corpus, "--record", "-1"], capsys), 2,
                 "argument --record: must be at least 0")
    g = tmp_path / "x.gtok"
    write_gtok([1], g)
    assert_error(run(["decode", "--universe", U, str(g), "--record", "0"], capsys), 2,
                 "single .gtok list")
    other = tmp_path / "other.bed"
    other.write_text("chr1\t0\t100\n")
    assert_error(run(["decode", "--universe", str(other), corpus], capsys), 1,
                 "was tokenized with universe")
    assert_error(run(["decode", corpus], capsys), 2, "--universe", "--config")


# ------------------------------------------------------------------ export, import
@pytest.mark.parametrize("name", ["gtoks", "gtoks.d/"])
def test_export_gtok_dir_and_import_back(corpus, tmp_path, name, capsys):
    out = f"{tmp_path}{os.sep}{name}"
    code, _, err = run(["export", corpus, out], capsys)
    assert code == 0 and err.startswith("genotok: wrote 5 .gtok files")
    files = sorted(Path(out).glob("*.gtok"))
    assert [f.stem for f in files] == Corpus.open(corpus).names
    mask = os.umask(0)
    os.umask(mask)
    assert Path(out).stat().st_mode & 0o777 == 0o777 & ~mask  # a plain mkdir's (was 0o700)
    assert read_gtok(files[0]).tolist() == Corpus.open(corpus)[0].tolist()
    back = tmp_path / "back.gtokc"
    assert run(["import", "-q", "--universe", U, out, str(back)], capsys) == (0, "", "")
    assert Corpus.open(back).to_ragged() == Corpus.open(corpus).to_ragged()
    # a second export into the same non-empty directory needs --overwrite
    assert_error(run(["export", corpus, out], capsys), 1, "not empty", "--overwrite")
    assert run(["export", "-q", "--overwrite", corpus, "-o", out], capsys)[0] == 0
    assert len(list(Path(out).glob("*.gtok"))) == 5


def test_import_takes_the_columns_import_parquet_takes(tmp_path, capsys):
    """``--ids-column`` / ``--name-column`` are import_parquet's ``ids_column`` /
    ``name_column`` (was: the CLI read only input_ids and name), and an .arrow file is found by
    its suffix."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.feather as feather

    src = tmp_path / "theirs.arrow"
    feather.write_feather(pa.table({"tokens": [[1, 2], [3]], "sample": ["s1", "s2"]}), str(src),
                          compression="uncompressed")
    out = tmp_path / "c.gtokc"
    assert run(["import", "-q", "--universe", U, "--ids-column", "tokens", "--name-column",
                "sample", str(src), str(out)], capsys) == (0, "", "")
    c = Corpus.open(out)
    assert c.to_ragged().to_list() == [[1, 2], [3]] and c.names == ["s1", "s2"]
    assert_error(run(["import", "--universe", U, str(src), str(tmp_path / "d.gtokc")], capsys),
                 1, "no 'input_ids' column")
    assert_error(run(["import", "--universe", U, "--ids-column", "tokens", str(tmp_path),
                      str(tmp_path / "e.gtokc")], capsys), 2, "--ids-column")


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "jsonl", "gtok-dir", "corpus"])
def test_info_verify_export_import_take_any_stores_output(tok, tmp_path, fmt, capsys):
    """``genotok info/verify/export`` read any store's output; ``genotok import OUT`` of one
    gives a corpus equal to what ``Corpus.open(OUT)`` reads, names, values and metadata
    included, with no --universe needed (was: a Parquet/Arrow/JSONL/corpus output was taken for
    a .gtok directory, "no files match '*.gtok'"); a --universe of another vocabulary is
    refused."""
    if fmt in ("parquet", "arrow"):
        pytest.importorskip("pyarrow")
    ad = pytest.importorskip("anndata")
    out = tmp_path / "out"
    if fmt == "corpus":  # a run's corpus directory (tokenize_anndata writes one file)
        genotok.pretokenize(PEAKS, tok, out, progress=False)
    else:
        genotok.tokenize_anndata(ad.read_h5ad(EX / "pbmc.h5ad"), tok, out=(out, fmt),
                                 spec=genotok.CellSpec(values=fmt in ("parquet", "arrow")))
    n = len(Corpus.open(out))
    code, text, _ = run(["info", "--json", str(out)], capsys)
    assert code == 0 and json.loads(text)["n_records"] == n
    code, text, _ = run(["verify", str(out)], capsys)
    assert code == 0 and f"OK ({n} records" in text
    assert run(["export", "-q", str(out), str(tmp_path / "gtoks/")], capsys)[0] == 0
    assert len(list((tmp_path / "gtoks").glob("*.gtok"))) == n
    back = tmp_path / "back.gtokc"
    assert run(["import", "-q", str(out), str(back)], capsys) == (0, "", "")
    a, b = Corpus.open(out), Corpus.open(back)
    assert b.to_ragged(values=a.has_values) == a.to_ragged(values=a.has_values)
    assert (b.names, b.meta, b.fingerprint, b.settings) == (a.names, a.meta, a.fingerprint,
                                                            a.settings)
    other = tmp_path / "other.bed"
    other.write_text("chr1\t0\t10\n")
    assert_error(run(["import", "--universe", str(other), str(out), str(tmp_path / "x.gtokc")],
                     capsys), 1, "universe")


def test_export_parquet_and_import_back(corpus, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    pq = tmp_path / "tokens.parquet"
    code, _, err = run(["export", corpus, str(pq)], capsys)
    assert code == 0 and err == f"genotok: wrote {pq} (5 records, format parquet)\n"
    assert Corpus.open(pq).to_ragged() == Corpus.open(corpus).to_ragged()  # a store's output
    assert_error(run(["export", corpus, str(pq)], capsys), 1, f"{pq} exists; add --overwrite")
    assert run(["export", "-q", "--overwrite", corpus, str(pq)], capsys)[0] == 0
    weird = tmp_path / "tokens.bin"
    assert run(["export", "-q", "--format", "parquet", corpus, "-o", str(weird)], capsys)[0] == 0
    back = tmp_path / "back.gtokc"
    assert run(["import", "-q", str(pq), str(back)], capsys)[0] == 0
    assert Corpus.open(back).to_ragged() == Corpus.open(corpus).to_ragged()
    assert_error(run(["import", str(pq), str(back)], capsys), 1, "exists; add --overwrite")
    one = next(weird.glob("*.parquet"))  # a file of it alone: Parquet, its universe inside
    assert run(["import", "-q", "--overwrite", "--format", "parquet", "-o", str(back), str(one)],
               capsys)[0] == 0
    assert Corpus.open(back).to_ragged() == Corpus.open(corpus).to_ragged()
    assert_error(run(["import", "--format", "arrow", str(pq), str(tmp_path / "x.gtokc")], capsys),
                 2, "is a parquet output", "manifest.json")


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "jsonl", "corpus"])
def test_export_to_any_store_keeps_values_metadata_and_extra(tok, tmp_path, fmt, capsys):
    """``genotok export --format F`` takes every store that writes files (was: only gtok-dir and
    parquet, exit 2 for arrow or jsonl), writes through the store's own writer (was: a second
    Parquet writer that dropped the value channel and the header's extra), and ``import`` of
    that output (was: a corpus with extra {}) keeps the fitted medians, so ``RankByMedian``
    reads them from either."""
    if fmt in ("parquet", "arrow"):
        pytest.importorskip("pyarrow")
    ad = pytest.importorskip("anndata")
    src = tmp_path / "src.gtokc"
    genotok.tokenize_anndata(ad.read_h5ad(EX / "pbmc.h5ad"), tok, out=src,
                             spec=genotok.CellSpec(values=True, encoding=(genotok.RankByMedian(),)))
    out = tmp_path / "out"
    assert run(["export", "-q", "--format", fmt, str(src), str(out)], capsys)[0] == 0
    a, b = Corpus.open(src), Corpus.open(out)
    assert b.to_ragged(values=True) == a.to_ragged(values=True)
    assert (b.names, b.meta, b.fingerprint, b.settings) == (a.names, a.meta, a.fingerprint,
                                                            a.settings)
    assert b.header["extra"] == a.header["extra"] != {}  # (JSON Lines: its part's header file)
    want = genotok.RankByMedian(a).medians
    assert np.array_equal(genotok.RankByMedian(b).medians, want, equal_nan=True)
    back = tmp_path / "back.gtokc"
    assert run(["import", "-q", str(out), str(back)], capsys) == (0, "", "")
    assert Corpus.open(back).header["extra"] == a.header["extra"]
    assert np.array_equal(genotok.RankByMedian(Corpus.open(back)).medians, want, equal_nan=True)


def test_export_and_import_formats_come_from_the_registry(corpus, tmp_path, capsys, monkeypatch):
    """A plugin store is an ``export``/``import`` ``--format`` as it is a ``pretokenize`` one
    (the choices are the registry's); the memory store, which writes no files, is none."""
    from genotok.formats import stores as S
    from genotok.formats.jsonl import JsonlStore

    class Tab(JsonlStore):
        name = "tab-example"

    monkeypatch.setitem(S.STORES, Tab.name, Tab)
    out = tmp_path / "tab"
    assert run(["export", "-q", "--format", "tab-example", corpus, str(out)], capsys)[0] == 0
    assert json.loads((out / "manifest.json").read_text())["format"] == "genotok-tab-example"
    assert Corpus.open(out).to_ragged() == Corpus.open(corpus).to_ragged()
    assert run(["import", "-q", "--format", "tab-example", str(out), str(tmp_path / "b.gtokc")],
               capsys)[0] == 0
    assert_error(run(["export", "--format", "memory", corpus, str(tmp_path / "m")], capsys), 2,
                 "invalid choice: 'memory'")
    assert_error(run(["import", "--format", "jsonl", corpus + "/shard-00000.gtokc",
                      str(tmp_path / "j.gtokc")], capsys), 2, "has no manifest.json")


def test_export_format_comes_from_a_flag_or_a_known_suffix(corpus, tmp_path, capsys):
    out = tmp_path / "tokens.csv"
    assert_error(run(["export", corpus, str(out)], capsys), 2,
                 "cannot tell the output format of", ".parquet", ".arrow", "--format corpus|gtok-dir|")
    assert not out.exists()
    assert_error(run(["export", corpus], capsys), 2, "required: -o/--out")
    assert_error(run(["export", corpus, str(tmp_path / "a"), "-o", str(tmp_path / "b")], capsys),
                 2, "not both")
    assert_error(run(["export", "--format", "csv", corpus, str(tmp_path / "a")], capsys), 2,
                 "argument --format: invalid choice: 'csv'")


def test_export_parquet_without_pyarrow(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert_error(run(["export", corpus, str(tmp_path / "t.parquet")], capsys), 1,
                 "pyarrow", "pip install 'genotok[parquet]'")
    assert not (tmp_path / "t.parquet").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".t.parquet")]


def test_import_errors(tmp_path, capsys):
    d = tmp_path / "gtoks"
    d.mkdir()
    write_gtok([1, 2], d / "a.gtok")
    assert_error(run(["import", str(d), str(tmp_path / "c.gtokc")], capsys), 2,
                 "needs the universe", "--universe")
    f = tmp_path / "tokens.txt"
    f.write_text("1 2 3\n")
    assert_error(run(["import", str(f), str(tmp_path / "c.gtokc")], capsys), 2,
                 "cannot tell the format of")
    assert_error(run(["import", str(tmp_path / "missing"), str(tmp_path / "c.gtokc")], capsys), 1,
                 "missing: no such file")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    plain = tmp_path / "plain.parquet"  # not exported by genotok: no universe recorded
    pq.write_table(pa.table({"input_ids": [[1, 2], [3]]}), plain)
    assert_error(run(["import", str(plain), str(tmp_path / "p.gtokc")], capsys), 1,
                 "no genotok metadata", "give --universe U.bed or --config TOK.toml")
    assert run(["import", "-q", "--universe", U, str(plain), str(tmp_path / "p.gtokc")],
               capsys) == (0, "", "")
    assert Corpus.open(tmp_path / "p.gtokc").to_ragged().to_list() == [[1, 2], [3]]
    write_gtok([10**6], d / "b.gtok")
    assert_error(run(["import", "--universe", U, str(d), str(tmp_path / "c.gtokc")], capsys), 1,
                 "b.gtok: id 1000000 is outside the vocabulary")


# ------------------------------------------------------------------ universe
def test_universe_through_main(tmp_path, capsys):
    out = tmp_path / "u.bed"
    code, _, err = run(["universe", "merge", "--threads", "1", "-o", str(out), Q], capsys)
    assert code == 0 and "merge: 1 input(s)" in err and (tmp_path / "u.bed.json").exists()
    assert_error(run(["universe", "merge", "-o", str(out), Q], capsys), 1,
                 f"{out} exists; add --overwrite to replace it")
    assert run(["universe", "merge", "-q", "--overwrite", "--min-gap", "1000", "-o", str(out), Q],
               capsys) == (0, "", "")
    assert_error(run(["universe", "merge", "--threads", "0", "-o", str(out), Q], capsys), 2,
                 "argument --threads: must be at least 1, got 0", "genotok universe merge --help")
    assert_error(run(["universe"], capsys), 2, "METHOD")


def test_universe_inputs_are_read_as_pretokenize_reads_them(tmp_path, capsys):
    """Directories, globs and @list files (paths relative to the list) as in pretokenize."""
    out = tmp_path / "u.bed"
    assert run(["universe", "merge", "-q", "-o", str(out), PEAKS], capsys) == (0, "", "")
    report = json.loads((tmp_path / "u.bed.json").read_text())
    assert [Path(d["path"]).name for d in report["inputs"]] == sorted(os.listdir(PEAKS))
    lst = tmp_path / "inputs.txt"
    lst.write_text(f"# two of them\n{os.path.relpath(Q, tmp_path)}\n"
                   f"{os.path.relpath(EX / 'peaks' / 'sample1.narrowPeak', tmp_path)}\n")
    assert run(["universe", "consensus", "-q", "--overwrite", "--min-inputs", "2", "-o", str(out),
                f"@{lst}"], capsys)[0] == 0
    report = json.loads((tmp_path / "u.bed.json").read_text())
    assert [Path(d["path"]).name for d in report["inputs"]] == ["sample0.narrowPeak",
                                                                "sample1.narrowPeak"]
    assert_error(run(["universe", "merge", "-o", str(tmp_path / "v.bed"), Q, Q], capsys), 1,
                 "given twice")


# ------------------------------------------------------------------ usage errors and the handler
@pytest.mark.parametrize("argv, fragment", [
    (["pretokenize", "--universe", U, "--out", "o", "--threads", "0", PEAKS],
     "argument --threads: must be at least 1, got 0"),
    (["pretokenize", "--universe", U, "--out", "o", "--threads", "-3", PEAKS],
     "argument --threads: must be at least 1, got -3"),
    (["pretokenize", "--universe", U, "--out", "o", "--threads", "two", PEAKS],
     "argument --threads: 'two' is not an integer"),
    (["pretokenize", "--universe", U, "--out", "o", "--files-per-shard", "0", PEAKS],
     "argument --files-per-shard: must be at least 1, got 0"),
    (["pretokenize", "--universe", U, "--config", "t.toml", "--out", "o", PEAKS], "not allowed with"),
    (["pretokenize", "--universe", U, PEAKS], "required: -o/--out"),
    (["pretokenize", "--universe", U, "--out", "o", "--scheduler-timeout", "0", PEAKS],
     "argument --scheduler-timeout"),
    (["pretokenize", "--universe", U, "--out", "o", "--hash", "md6", PEAKS],
     "argument --hash: unknown hash 'md6'"),
    (["tokenize", "--universe", U, "--threads", "0", Q], "argument --threads"),
    (["tokenize", "--universe", U, "--min-fraction", "1.5", Q],
     "argument --min-fraction: must be within [0, 1], got 1.5"),
    (["tokenize", "--universe", U, "--min-overlap", "-1", Q], "argument --min-overlap"),
    (["tokenize", "--universe", U, "--overlap", "most", Q], "argument --overlap: invalid choice"),
    (["tokenize", "--universe", U, "--unknown", "keep", Q], "argument --unknown: invalid choice"),
    (["tokenize", "--universe", U, "--order", "random", Q], "argument --order: invalid choice"),
    (["tokenize", "--universe", U, "--tokens", "--summary", Q], "not allowed with"),
    (["tokenize", "--universe", U, "--no-such-flag", Q], "unrecognized option --no-such-flag"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "required: COMMAND"),
])
def test_usage_errors_exit_2_with_one_line(argv, fragment, capsys):
    assert_error(run(argv, capsys), 2, fragment, "--help")


@pytest.mark.parametrize("cmd", ["pretokenize", "tokenize", "info", "decode", "verify", "export",
                                 "import", "universe", "universe merge"])
def test_help_exits_0_with_examples(cmd, capsys):
    code, out, _ = run([*cmd.split(), "--help"], capsys)
    assert code == 0 and "examples:" in out


def test_version(capsys):
    assert run(["--version"], capsys) == (0, f"genotok {genotok.__version__}\n", "")


def test_failures_exit_1(tmp_path, capsys):
    assert_error(run(["tokenize", "--universe", U, str(tmp_path / "missing.bed")], capsys), 1,
                 "missing.bed: no such file")
    assert_error(run(["tokenize", "--universe", str(tmp_path / "nou.bed"), Q], capsys), 1,
                 "nou.bed")
    bad = tmp_path / "bad.toml"
    bad.write_text('universe = "u.bed"\n[genotok]\noverlap = "most"\n')
    (tmp_path / "u.bed").write_text("chr1\t0\t10\n")
    result = run(["tokenize", "--config", str(bad), Q], capsys)
    assert_error(result, 1, "overlap must be one of")
    assert "report it" not in result[2]  # a value the library checked, not a bug


def test_unexpected_errors_are_one_line_and_debug_shows_them(tmp_path, capsys, monkeypatch):
    import genotok.formats.corpus.reader

    def broken(*args, **kwargs):
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(genotok.formats.corpus.reader.Corpus, "open", broken)
    assert_error(run(["verify", str(tmp_path)], capsys), 1, "RuntimeError: a bug over two lines",
                 "--debug")
    with pytest.raises(RuntimeError, match="a bug"):
        main(["verify", "--debug", str(tmp_path)])
    monkeypatch.setenv("GENOTOK_DEBUG", "1")
    with pytest.raises(RuntimeError, match="a bug"):
        main(["verify", str(tmp_path)])


def test_missing_optional_package_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    assert_error(run(["pretokenize", "--universe", U, "--out", str(tmp_path / "c"),
                      "--scheduler", "tcp://127.0.0.1:9", PEAKS], capsys), 1,
                 "pip install 'genotok[dask]'")


# ------------------------------------------------------------------ through python -m genotok
def test_subprocess_usage_error_and_failure_have_no_traceback(tmp_path):
    res = subprocess_genotok("pretokenize", "--universe", U, "--out", str(tmp_path / "c"),
                             "--threads", "0", PEAKS)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("genotok: error: argument --threads: must be at least 1, got 0 "
                          "(see 'genotok pretokenize --help')\n")
    res = subprocess_genotok("decode", "--universe", U, str(tmp_path / "nothing"))
    assert res.returncode == 1 and res.stderr.startswith("genotok: error:")
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_subprocess_closed_stdout_stops_quietly(capsys):
    """`genotok tokenize … | head -1`: exit 0, nothing on stderr. The same call runs in this
    process first, so that the kernels it needs are in numba's cache: on a cold cache the
    child's first use would print the compile notice, which is not what this test checks."""
    assert main(["tokenize", "--universe", U, "--tokens", *[PEAKS] * 8]) in (0, None)
    capsys.readouterr()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "genotok", "tokenize", "--universe", U,
                             "--tokens", *[PEAKS] * 8], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("chr")
    proc.stdout.close()  # more than a pipe buffer is still to come
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0 and err == ""


def test_subprocess_unreachable_scheduler(tmp_path):
    pytest.importorskip("dask.distributed")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = subprocess_genotok("pretokenize", "-q", "--universe", U, "--out", str(tmp_path / "c"),
                             "--scheduler", f"tcp://127.0.0.1:{port}", "--scheduler-timeout", "1",
                             PEAKS)
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith("genotok: error:") and f"127.0.0.1:{port}" in res.stderr
    assert "Traceback" not in res.stderr


def test_subprocess_readme_first_command(tmp_path):
    out = str(tmp_path / "example")
    res = subprocess_genotok("pretokenize", "--overwrite", "--universe", U, "--out", out, PEAKS)
    assert res.returncode == 0, res.stderr
    res = subprocess_genotok("info", out)
    assert res.returncode == 0 and "n_records" in res.stdout


# ------------------------------------------------------------------ the same rule in the Python API
def test_python_writers_refuse_to_overwrite(tmp_path):
    from genotok.build import merge

    result = merge([Q])
    out = result.write(tmp_path / "u.bed")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        result.write(out)
    assert result.write(out, overwrite=True) == out


def test_single_cell_outputs_take_overwrite(tmp_path):
    anndata = pytest.importorskip("anndata")
    import pandas as pd
    import scipy.sparse as sp

    from genotok.singlecell import tokenize_anndata, tokenize_fragments

    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    a = anndata.AnnData(sp.csr_matrix(np.array([[1, 0], [1, 1]], dtype=np.float32)),
                        var=pd.DataFrame(index=["chr1:10-20", "chr1:150-160"]))
    out = tmp_path / "cells.gtokc"
    assert tokenize_anndata(a, tok, out=str(out)).to_ragged().to_list() == [[0], [0, 1]]
    with pytest.raises(FileExistsError, match="overwrite=True"):
        tokenize_anndata(a, tok, out=str(out))
    assert len(tokenize_anndata(a[:1], tok, out=str(out), overwrite=True)) == 1
    frag = tmp_path / "f.tsv"
    frag.write_text("chr1\t5\t20\tAAA-1\t2\n")
    fout = tmp_path / "frag.gtokc"
    assert len(tokenize_fragments(frag, tok, out=str(fout))) == 1
    with pytest.raises(FileExistsError, match="overwrite=True"):
        tokenize_fragments(frag, tok, out=str(fout))
    assert tokenize_fragments(frag, tok, out=str(fout),
                              overwrite=True).names == ["AAA-1"]


# ------------------------------------------------------------------ every subcommand, from the parser
def _leaf_commands(parser: argparse.ArgumentParser, prefix: tuple = ()) -> list[str]:
    """Every runnable command of the parser ("universe merge", …), read from argparse itself."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.extend(_leaf_commands(sub, (*prefix, name)))
            return out
    return [" ".join(prefix)]


def _sizes(t: Path) -> str:
    (t / "g.sizes").write_text("chr1\t25\n")
    return str(t / "g.sizes")


def _gtok_dir(t: Path) -> str:
    (t / "gtoks").mkdir()
    write_gtok([1, 2], t / "gtoks" / "a.gtok")
    return str(t / "gtoks")


def _run_file(t: Path, key: str = "tokenizer") -> str:
    (t / "run.toml").write_text(f'[run]\nout = "out"\n[[dataset]]\nname = "a"\n'
                                f'inputs = ["{Q}"]\n{key} = "{U}"\n')
    return str(t / "run.toml")


#: command -> (argv of a success, argv of a failure, its exit code, a fragment of its message);
#: each argv is a function of (a fresh directory, the module's corpus)
CASES = {
    "pretokenize": (lambda t, c: ["pretokenize", "-q", "--universe", U, "--out", str(t / "p"), Q],
                    lambda t, c: ["pretokenize", "--universe", U, "--out", str(t / "p"),
                                  str(t / "missing.bed")], 1, "missing.bed: no such file"),
    "run": (lambda t, c: ["run", "-q", _run_file(t)],
            lambda t, c: ["run", _run_file(t, "tokeniser")], 2, "did you mean 'tokenizer'"),
    "tokenize": (lambda t, c: ["tokenize", "--universe", U, "--summary", Q],
                 lambda t, c: ["tokenize", "--universe", U, "--order", "random", Q], 2,
                 "argument --order: invalid choice"),
    "info": (lambda t, c: ["info", c], lambda t, c: ["info", str(t / "nothing")], 1, "nothing"),
    "decode": (lambda t, c: ["decode", "--universe", U, c, "--record", "1"],
               lambda t, c: ["decode", "--universe", U, c, "--record", "99"], 2,
               "has 5 records (0..4)"),
    "verify": (lambda t, c: ["verify", "-q", c], lambda t, c: ["verify", str(t / "nothing")], 1,
               "nothing"),
    "export": (lambda t, c: ["export", "-q", c, str(t / "gtoks")],
               lambda t, c: ["export", c, str(t / "tokens.csv")], 2,
               "cannot tell the output format of"),
    "import": (lambda t, c: ["import", "-q", "--universe", U, _gtok_dir(t), str(t / "c.gtokc")],
               lambda t, c: ["import", _gtok_dir(t), str(t / "c.gtokc")], 2,
               "needs the universe"),
    "universe tile": (lambda t, c: ["universe", "tile", "-q", "--chrom-sizes", _sizes(t),
                                    "--size", "10", "-o", str(t / "u.bed")],
                      lambda t, c: ["universe", "tile", "--chrom-sizes", _sizes(t), "--size", "0",
                                    "-o", str(t / "u.bed")], 2, "argument --size"),
    "universe merge": (lambda t, c: ["universe", "merge", "-q", "-o", str(t / "u.bed"), Q],
                       lambda t, c: ["universe", "merge", "-o", str(t / "u.bed"),
                                     str(t / "missing.bed")], 1, "missing.bed"),
    "universe consensus": (lambda t, c: ["universe", "consensus", "-q", "--min-inputs", "1", "-o",
                                         str(t / "u.bed"), Q],
                           lambda t, c: ["universe", "consensus", "-o", str(t / "u.bed"), Q], 2,
                           "one of the arguments --min-inputs --min-input-fraction is required"),
    "universe top": (lambda t, c: ["universe", "top", "-q", "--candidate", U, "--max-regions",
                                   "10", "-o", str(t / "u.bed"), Q],
                     lambda t, c: ["universe", "top", "--candidate", str(t / "nothing.bed"),
                                   "--max-regions", "10", "-o", str(t / "u.bed"), Q], 1,
                     "nothing.bed"),
}


def test_every_subcommand_has_a_success_and_an_error_case():
    """A new subcommand fails here until it has its line in CASES."""
    from genotok.cli import build_parser

    assert sorted(_leaf_commands(build_parser())) == sorted(CASES)


@pytest.mark.parametrize("command", sorted(CASES))
def test_every_subcommand_succeeds_and_fails_cleanly(command, corpus, tmp_path, capsys):
    ok, bad, code, fragment = CASES[command]
    (tmp_path / "ok").mkdir()
    (tmp_path / "bad").mkdir()
    got, _, err = run(ok(tmp_path / "ok", corpus), capsys)
    assert got == 0, err
    assert_error(run(bad(tmp_path / "bad", corpus), capsys), code, fragment)


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return [leaf for sub in action.choices.values() for leaf in _leaf_parsers(sub)]
    return [parser]


def test_one_flag_vocabulary():
    """Every command spells a concept one way: -o/--out, -q/--quiet, --threads, --overwrite,
    --config; and no hidden flag (no old spelling kept behind --help)."""
    from genotok.cli import build_parser

    pairs = {"--out": ["-o", "--out"], "--quiet": ["-q", "--quiet"], "--threads": ["--threads"],
             "--overwrite": ["--overwrite"], "--config": ["--config"]}
    other = {"--output", "--force", "--n-threads", "--nthreads", "--jobs", "--progress",
             "--verbose", "--silent", "--toml"}
    for leaf in _leaf_parsers(build_parser()):
        for action in leaf._actions:
            if not action.option_strings:
                continue
            assert action.help != argparse.SUPPRESS, f"{leaf.prog}: hidden {action.option_strings}"
            long = action.option_strings[-1]
            assert long not in other, f"{leaf.prog}: {long}"
            if long in pairs:
                assert action.option_strings == pairs[long], f"{leaf.prog}: {action.option_strings}"
        assert "--quiet" in {s for a in leaf._actions for s in a.option_strings}, leaf.prog


def test_pretokenize_to_parquet_with_a_validation_split(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    out = tmp_path / "pq"
    code, _, err = run(["pretokenize", "-q", "--universe", U, "--out", str(out), PEAKS,
                        "--format", "parquet", "--validation", "0.4"], capsys)
    assert code == 0, err
    assert list(out.glob("*.parquet")) and list((out / "validation").glob("*.parquet"))
    assert (out / "manifest.json").is_file() and (out / "validation" / "manifest.json").is_file()
    assert_error(run(["pretokenize", "-q", "--universe", U, "--out", str(tmp_path / "x"), PEAKS,
                      "--validation", "1"], capsys), 1, "validation")


# ------------------------------------------------------------------ gene vocabularies
@pytest.fixture(scope="module")
def rna(tmp_path_factory):
    """A tiny raw-count RNA file (Ensembl ids, a duplicate id, a gene outside the vocabulary,
    obs n_counts and filter_pass) and Geneformer- / scGPT-format dictionaries as JSON."""
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    d = tmp_path_factory.mktemp("rna")
    rng = np.random.default_rng(5)
    X = rng.poisson(1.5, size=(23, 6)).astype(np.float32)
    ids = ["E3", "E1", "E2", "E1", "E9", "E4"]
    obs = pd.DataFrame({"n_counts": X.sum(axis=1) + 2,
                        "filter_pass": np.resize([1, 1, 0], 23)},
                       index=[f"cell{i}" for i in range(23)])
    var = pd.DataFrame({"ensembl_id": ids}, index=["S3", "S1", "S2", "S1b", "S9", "S4"])
    anndata.AnnData(sp.csr_matrix(X), obs=obs, var=var).write_h5ad(d / "rna.h5ad")
    tokens = {"<pad>": 0, "<mask>": 1, "E1": 2, "E2": 3, "E3": 4, "E4": 5,
              "<cls>": 6, "<eos>": 7}
    medians = {"E1": 1.5, "E2": 0.5, "E3": 2.0, "E4": 1.0}
    symbols = {"S1": 0, "S2": 1, "S3": 2, "<pad>": 3, "<cls>": 4, "<eoc>": 5}
    for name, obj in (("tokens", tokens), ("medians", medians), ("symbols", symbols)):
        (d / f"{name}.json").write_text(json.dumps(obj))
    return d


def _cells(path):
    c = Corpus.open(path)
    return c.names, [c[i].tolist() for i in range(len(c))], (
        c.to_ragged(values=True).values.tolist() if c.has_values else None)


@pytest.mark.parametrize("preset", ["geneformer", "geneformer-v2", "scgpt"])
def test_pretokenize_with_a_gene_preset_is_the_python_call(rna, preset, tmp_path, capsys):
    vocab = str(rna / ("symbols.json" if preset == "scgpt" else "tokens.json"))
    medians = [] if preset == "scgpt" else ["--medians", str(rna / "medians.json")]
    out = tmp_path / "cli"
    assert run(["pretokenize", "-q", "--preset", preset, "--vocab", vocab, *medians,
                "--out", str(out), str(rna / "rna.h5ad")], capsys)[0] == 0
    if preset == "scgpt":
        tok, spec = genotok.presets.scgpt(vocab)
    else:
        tok, spec = genotok.presets.geneformer(vocab, rna / "medians.json",
                                               version=2 if preset.endswith("v2") else 1)
    genotok.pretokenize([rna / "rna.h5ad"], tok, tmp_path / "py", cells=spec, progress=False)
    got, want = _cells(out), _cells(tmp_path / "py")
    assert got == want and len(got[0]) == (16 if preset != "scgpt" else 23)  # filter_pass
    Corpus.open(out, expect=tok)  # refuses a corpus of another vocabulary
    # the cell flags change the preset's fields
    assert run(["pretokenize", "-q", "--preset", preset, "--vocab", vocab, *medians,
                "--max-length", "2", "--out", str(tmp_path / "short"),
                str(rna / "rna.h5ad")], capsys)[0] == 0
    framing = {"geneformer": 0, "geneformer-v2": 2, "scgpt": 1}[preset]  # <cls>, <eos>
    assert max(map(len, _cells(tmp_path / "short")[1])) == 2 + framing


def test_pretokenize_with_a_vocab_and_a_cell_spec_file(rna, tmp_path, capsys):
    tok, spec = genotok.presets.geneformer(rna / "tokens.json", rna / "medians.json")
    (tmp_path / "cells.toml").write_text(spec.to_toml())
    tok.save_pretrained(tmp_path / "saved")
    for vocab in (rna / "tokens.json", tmp_path / "saved"):  # a file or a saved folder
        out = tmp_path / f"cli-{vocab.name}"
        assert run(["pretokenize", "-q", "--vocab", str(vocab), "--cells",
                    str(tmp_path / "cells.toml"), "--out", str(out), str(rna / "rna.h5ad")],
                   capsys)[0] == 0
        got = _cells(out)
        want = genotok.tokenize_anndata(rna / "rna.h5ad", tok, spec)
        assert got[1] == want.to_list() and len(got[0]) == 16
    # --cell-filter: the flag of CellSpec.cell_filter (here the only cell flag)
    for extra, n in (([], 23), (["--cell-filter", "filter_pass"], 16)):
        out = tmp_path / f"flag{n}"
        assert run(["pretokenize", "-q", "--vocab", str(rna / "tokens.json"), *extra,
                    "--out", str(out), str(rna / "rna.h5ad")], capsys)[0] == 0
        want = genotok.tokenize_anndata(rna / "rna.h5ad", tok,
                                        genotok.CellSpec(cell_filter="filter_pass" if extra
                                                         else None))
        assert _cells(out)[1] == want.to_list() and len(want) == n


@pytest.mark.parametrize("argv, message", [
    (["--preset", "geneformer"], "--vocab is required"),
    (["--medians", "m.json", "--universe", U], "give --vocab"),
    (["--preset", "geneformer", "--vocab", "{tokens}"], "needs Geneformer's"),
    (["--preset", "scgpt", "--vocab", "{symbols}", "--medians", "{medians}"], "takes none"),
    (["--vocab", "{tokens}", "--medians", "{medians}"], "give --preset geneformer"),
    (["--preset", "scgpt", "--vocab", "{symbols}", "--cells", "c.toml"], "not both"),
    (["--vocab", "{tokens}", "--overlap", "best"], "matches genes by id"),
    (["--vocab", "{tokens}", "--universe", U], "not allowed with argument"),
])
def test_gene_vocabulary_usage_errors(rna, argv, message, tmp_path, capsys):
    argv = [a.format(**{k: rna / f"{k}.json" for k in ("tokens", "medians", "symbols")})
            for a in argv]
    assert_error(run(["pretokenize", *argv, "--out", str(tmp_path / "o"),
                      str(rna / "rna.h5ad")], capsys), 2, message)
    assert not (tmp_path / "o").exists()
