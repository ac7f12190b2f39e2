"""pretokenize: equality with direct tokenization, resumption after kill -9, errors, the CLI."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import genotok
from genotok import BedParseError, CellSpec, Corpus, Normalize, RankByMedian, Tokenizer, read_gtok
from genotok.cli.main import main as cli
from genotok.formats.corpus import MANIFEST
from genotok.pipeline import (
    PipelineError,
    RunOptions,
    expand_inputs,
    medians,
    pretokenize,
    record_name,
)
from tests._shared import PBMC, needs_shared

EX = genotok.examples_dir()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(EX / "universe.bed")


def _many_files(tmp_path, n=12, lines=200, seed=0):
    rng = np.random.default_rng(seed)
    u = genotok.Universe.from_bed(EX / "universe.bed").regions
    d = tmp_path / "peaks"
    d.mkdir()
    for i in range(n):
        pick = rng.integers(0, len(u), lines)
        s = np.maximum(0, u.starts[pick] + rng.integers(-300, 300, lines))
        text = "".join(f"{u.chrom_names[c]}\t{a}\t{a + 200}\n" for c, a in zip(u.codes[pick], s))
        if i % 3 == 0:
            (d / f"f{i:02d}.bed.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (d / f"f{i:02d}.bed").write_text(text)
    return d


def test_corpus_equals_direct_tokenization(tmp_path, tok):
    run = pretokenize(EX / "peaks", tok, tmp_path / "out", progress=False,
                      options=RunOptions(files_per_shard=2))
    c = Corpus.open(run.out, expect=tok, verify=True)
    files = sorted((EX / "peaks").iterdir())
    assert c.names == [record_name(f) for f in files] == [f"sample{i}" for i in range(5)]
    for i, f in enumerate(files):
        assert c[i].tolist() == tok.encode(f).tolist()
    assert c.meta["source"] == [str(f) for f in files]
    manifest = json.loads((run.out / "manifest.json").read_text())["genotok_run"]
    algo = manifest["inputs"][0]["hash_algorithm"]
    assert [s["hash"] for s in manifest["inputs"]] == [genotok._io.file_digest(f, algo) for f in files]
    sha = pretokenize(EX / "peaks", tok, tmp_path / "sha", progress=False,
                      options=RunOptions(hash="sha256"))
    inputs = json.loads((sha.out / "manifest.json").read_text())["genotok_run"]["inputs"]
    assert inputs[0]["hash"] == genotok._io.file_digest(files[0], "sha256")
    assert manifest["settings"] == tok.settings.as_dict() and run.n_records == 5
    assert len(list(run.out.glob("shard-*.gtokc"))) == 3



def test_progress_prints_the_summary_and_quiet_is_refused(tmp_path, tok, capsys):
    """``progress=True`` (the default) prints the summary line, ``progress=False`` nothing;
    ``quiet=``, its spelling before issue 21, is an unknown keyword (no shim)."""
    run = pretokenize(EX / "peaks", tok, tmp_path / "a")
    assert str(run) in capsys.readouterr().out
    again = pretokenize(EX / "peaks", tok, tmp_path / "b", progress=False)
    assert capsys.readouterr().out == "" and again.n_records == run.n_records == 5
    with pytest.raises(TypeError, match="quiet"):
        pretokenize(EX / "peaks", tok, tmp_path / "c", quiet=True)
    assert not (tmp_path / "c").exists()

def test_gtok_dir_format(tmp_path, tok):
    pretokenize(EX / "peaks", tok, tmp_path / "g", format="gtok-dir", progress=False)
    for f in (EX / "peaks").iterdir():
        assert read_gtok(tmp_path / "g" / f"{record_name(f)}.gtok").tolist() == tok.encode(f).tolist()


def test_rerun_skips_done_and_refuses_foreign_plans(tmp_path, tok):
    out = tmp_path / "out"
    pretokenize(EX / "peaks", tok, out, progress=False, options=RunOptions(files_per_shard=2))
    again = pretokenize(EX / "peaks", tok, out, progress=False,
                        options=RunOptions(files_per_shard=2))
    assert again.skipped_done == 5
    with pytest.raises(PipelineError, match="other inputs or settings"):
        pretokenize(sorted((EX / "peaks").iterdir())[:2], tok, out, progress=False,
                    options=RunOptions(files_per_shard=2))
    with pytest.raises(genotok.UniverseMismatchError):
        pretokenize(EX / "peaks", Tokenizer(["chr1:0-10"]), out, progress=False,
                    options=RunOptions(files_per_shard=2))
    redo = pretokenize(sorted((EX / "peaks").iterdir())[:2], tok, out, progress=False, overwrite=True)
    assert len(Corpus.open(redo.out)) == 2
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    with pytest.raises(PipelineError, match="not empty"):
        pretokenize(EX / "peaks", tok, tmp_path / "foreign", progress=False)


def test_bad_input_fail_and_skip(tmp_path, tok):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.bed").write_text("chr1\t100\t200\n")
    (d / "b.bed").write_text("chr1\t300\t200\n")
    (d / "c.bed").write_text("chr1\t5\t9\n")
    with pytest.raises(genotok.BedParseError, match=r"b.bed:1: end is before start"):
        pretokenize(d, tok, tmp_path / "out", progress=False)
    assert not list((tmp_path / "out").glob("shard-*"))  # nothing partial
    with pytest.warns(UserWarning, match="2 of 2 records hit no region"):  # toy regions
        run = pretokenize(d, tok, tmp_path / "out2", progress=False, on_error="skip")
    c = Corpus.open(run.out)
    assert c.names == ["a", "c"] and run.failed[0]["path"].endswith("b.bed")
    assert "end is before start" in run.failed[0]["error"] and c.info()["failed_inputs"]


def test_expand_inputs(tmp_path):
    d = _many_files(tmp_path, n=3)
    (tmp_path / "list.txt").write_text("# my files\npeaks/f01.bed\n\npeaks/f00.bed.gz\n")
    assert [p.name for p in expand_inputs([f"@{tmp_path / 'list.txt'}"])] == ["f01.bed", "f00.bed.gz"]
    assert [p.name for p in expand_inputs(str(d / "*.bed"))] == ["f01.bed", "f02.bed"]
    assert len(expand_inputs(d)) == 3
    with pytest.raises(PipelineError, match="given twice"):
        expand_inputs([d / "f01.bed", d / "f01.bed"])
    with pytest.raises(PipelineError, match="no such file"):
        expand_inputs([tmp_path / "nope*.bed"])
    assert record_name(Path("x/s1.narrowPeak.gz")) == "s1" and record_name(Path("a.b.bed")) == "a.b"


def _cli_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _kill_and_resume(tmp_path, d, delay, tag):
    out = tmp_path / f"out_{tag}"
    cmd = [sys.executable, "-m", "genotok", "pretokenize", "--universe", str(EX / "universe.bed"),
           "--out", str(out), str(d), "--files-per-shard", "1", "--threads", "1", "--quiet"]
    proc = subprocess.Popen(cmd, env=_cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    res = subprocess.run(cmd, env=_cli_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return Corpus.open(out, verify=True)


@pytest.mark.parametrize("trial", range(3))
def test_kill_9_then_rerun_equals_uninterrupted(tmp_path, tok, trial):
    d = _many_files(tmp_path)
    ref = Corpus.open(pretokenize(d, tok, tmp_path / "ref", progress=False,
                                  options=RunOptions(files_per_shard=1)).out)
    got = _kill_and_resume(tmp_path, d, delay=[0.3, 1.0, 1.6][trial], tag=trial)
    assert got.names == ref.names and got.to_ragged() == ref.to_ragged()


# a run that SIGKILLs itself at an exact instant: inside the n-th write to a file the
# pipeline writes atomically (journal, manifest, a .gtok), or right after the n-th batch
KILL_AT = """
import os, signal, sys
from pathlib import Path
import genotok
import genotok.pipeline.batch as B
import genotok.pipeline.run as P

where, n, fmt = sys.argv[3], int(sys.argv[4]), sys.argv[5]
calls = {"n": 0}

def hit():
    calls["n"] += 1
    if calls["n"] == n:
        os.kill(os.getpid(), signal.SIGKILL)

if where == "batch":
    run_batch = B.run_batch
    def _run_batch(*a, **k):
        entry = run_batch(*a, **k)
        hit()  # the shard is in place, the journal does not know it yet
        return entry
    B.run_batch = _run_batch
else:
    import genotok.pipeline.journal as J
    real = J.atomic_write
    class Dying:
        def __init__(self, fh):
            self.fh = fh
        def write(self, data):
            half = len(data) // 2
            self.fh.write(data[:half])
            self.fh.flush()
            hit()  # half of the data is in the temp file
            return self.fh.write(data[half:]) + half
        def __getattr__(self, name):
            return getattr(self.fh, name)
    import contextlib
    @contextlib.contextmanager
    def atomic_write(path, mode="wb"):
        with real(path, mode) as fh:
            yield Dying(fh) if Path(path).name.endswith(where) else fh
    J.atomic_write = atomic_write
    import genotok.formats.corpus.manifest as C
    import genotok.formats.gtok as G
    C.atomic_write = G.atomic_write = atomic_write
tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
P.pretokenize(sys.argv[1], tok, sys.argv[2], progress=False,
              options=P.RunOptions(files_per_shard=2), format=fmt)
print("finished without being killed")
"""


def _killed_at(tmp_path, d, where: str, n: int, fmt: str = "corpus") -> Path:
    out = tmp_path / f"out_{where}_{n}_{fmt}"
    res = subprocess.run([sys.executable, "-c", KILL_AT, str(d), str(out), where, str(n), fmt],
                         env=_cli_env(), capture_output=True, text=True, check=False)
    assert res.returncode == -signal.SIGKILL, res.stdout + res.stderr
    return out


@pytest.mark.parametrize("where,n", [("journal.json", 1), ("journal.json", 2), ("batch", 1),
                                     ("journal.json", 4), ("manifest.json", 1)])
def test_killed_inside_a_save_resumes_and_cleans_its_temp_files(tmp_path, tok, where, n):
    """Issue 19: a SIGKILL inside the first journal save left ``.journal.json.*.tmp``, which
    the next run took for a foreign file and refused to resume."""
    d = _many_files(tmp_path, n=5)
    ref = Corpus.open(pretokenize(d, tok, tmp_path / "ref", progress=False,
                                  options=RunOptions(files_per_shard=2)).out)
    out = _killed_at(tmp_path, d, where, n)
    left = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert left == [] if where == "batch" else len(left) == 1
    first = not (out / "journal.json").exists()  # killed in the first save: no journal yet
    assert first == ((where, n) == ("journal.json", 1))
    if not first:  # (a foreign file in a directory without a journal is refused, rightly)
        (out / ".notes.tmp").write_text("a user's file: not ours to remove")
    got = Corpus.open(pretokenize(d, tok, out, progress=False,
                                  options=RunOptions(files_per_shard=2)).out, verify=True)
    assert got.names == ref.names and got.to_ragged() == ref.to_ragged()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == \
        ([] if first else [".notes.tmp"])


def test_killed_inside_a_gtok_write_resumes(tmp_path, tok):
    d = _many_files(tmp_path, n=5)
    pretokenize(d, tok, tmp_path / "ref", progress=False, format="gtok-dir",
                options=RunOptions(files_per_shard=2))
    out = _killed_at(tmp_path, d, ".gtok", 3, "gtok-dir")
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    pretokenize(d, tok, out, progress=False, format="gtok-dir",
                options=RunOptions(files_per_shard=2))
    names = sorted(p.name for p in (tmp_path / "ref").glob("*.gtok"))
    assert sorted(p.name for p in out.glob("*.gtok")) == names and len(names) == 5
    for name in names:
        assert read_gtok(out / name).tolist() == read_gtok(tmp_path / "ref" / name).tolist()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_foreign_files_are_never_cleaned(tmp_path, tok):
    out = tmp_path / "out"
    out.mkdir()
    for name in (".journal.json.tmp", ".journal.json.abc.tmp", "x.tmp", ".x.tmp",
                 ".journal.json.ABCDEFGH.tmp", ".shard-1.gtokc.abcdefgh.tmp"):
        (out / name).write_text("mine")
        with pytest.raises(PipelineError, match="not empty"):
            pretokenize(EX / "peaks", tok, out, progress=False)
        assert (out / name).read_text() == "mine"
        (out / name).unlink()
    (out / ".journal.json.abcdefgh.tmp").mkdir()  # ours by name, but a directory: left alone
    with pytest.raises(PipelineError, match="not empty"):
        pretokenize(EX / "peaks", tok, out, progress=False)


@pytest.mark.slow
def test_kill_9_at_every_save(tmp_path, tok):
    d = _many_files(tmp_path, n=9)
    ref = Corpus.open(pretokenize(d, tok, tmp_path / "ref", progress=False,
                                  options=RunOptions(files_per_shard=2)).out)
    for where, ns in (("journal.json", range(1, 7)), ("batch", range(1, 6)),
                      ("manifest.json", [1])):
        for n in ns:
            out = _killed_at(tmp_path, d, where, n)
            got = Corpus.open(pretokenize(d, tok, out, progress=False,
                                          options=RunOptions(files_per_shard=2)).out,
                              verify=True)
            assert got.names == ref.names and got.to_ragged() == ref.to_ragged()


@pytest.mark.slow
def test_kill_9_twenty_random_moments(tmp_path, tok):
    d = _many_files(tmp_path, n=20)
    ref = Corpus.open(pretokenize(d, tok, tmp_path / "ref", progress=False,
                                  options=RunOptions(files_per_shard=1)).out)
    rng = np.random.default_rng(1)
    for trial in range(20):
        got = _kill_and_resume(tmp_path, d, delay=float(rng.uniform(0.2, 2.5)), tag=f"s{trial}")
        assert got.names == ref.names and got.to_ragged() == ref.to_ragged()


# ------------------------------------------------------------------ command line
def test_cli_commands(tmp_path, capsys, tok):
    u = str(EX / "universe.bed")
    q = str(EX / "peaks" / "sample0.narrowPeak")
    assert cli(["tokenize", "--universe", u, q]) == 0
    ids = capsys.readouterr().out.split()
    assert list(map(int, ids)) == tok.encode(q).tolist()
    assert cli(["tokenize", "--tokens", "--universe", u, q]) == 0
    assert capsys.readouterr().out.splitlines() == tok.tokenize(q)
    assert cli(["pretokenize", "--universe", u, "--out", str(tmp_path / "c"), str(EX / "peaks"), "--quiet"]) == 0
    assert cli(["info", str(tmp_path / "c")]) == 0
    assert "n_records" in capsys.readouterr().out
    assert cli(["verify", str(tmp_path / "c")]) == 0
    assert "OK" in capsys.readouterr().out
    assert cli(["decode", "--universe", u, str(tmp_path / "c"), "--record", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t")[3] == "sample0" and len(lines) <= tok.encode(q).size
    assert cli(["export", str(tmp_path / "c"), str(tmp_path / "g")]) == 0
    assert cli(["import", "--universe", u, str(tmp_path / "g"), str(tmp_path / "back.gtokc")]) == 0
    capsys.readouterr()
    assert Corpus.open(tmp_path / "back.gtokc").n_tokens == Corpus.open(tmp_path / "c").n_tokens
    # errors: exit 1 with the message, no traceback
    assert cli(["tokenize", "--universe", u, str(tmp_path / "missing.bed")]) == 1
    assert "missing.bed: no such file" in capsys.readouterr().err
    assert cli(["verify", str(tmp_path / "g" / "sample0.gtok")]) == 1
    assert "bad magic" in capsys.readouterr().err
    assert cli(["pretokenize", "--out", "x", "y"]) == 2  # usage: exit 2, one line
    assert capsys.readouterr().err.startswith("genotok: error: one of the arguments --universe")


def test_python_m_genotok_help():
    res = subprocess.run([sys.executable, "-m", "genotok", "pretokenize", "--help"],
                         env=_cli_env(), capture_output=True, text=True)
    assert res.returncode == 0 and "examples:" in res.stdout


def test_h5ad_and_fragment_inputs(tmp_path, tok):
    ad = pytest.importorskip("anndata")
    pytest.importorskip("genotok.singlecell")
    import scipy.sparse as sp

    from genotok.singlecell import tokenize_anndata, tokenize_fragments

    u = tok.universe.regions
    pick = np.arange(0, 200, 2)
    var = {"chr": [u.chrom_of(i) for i in pick], "start": u.starts[pick], "end": u.ends[pick]}
    X = sp.random(12, pick.size, density=0.2, format="csr", random_state=0, dtype=np.float32)
    X.data[:] = 1
    import pandas as pd

    adata = ad.AnnData(X=X, var=pd.DataFrame(var, index=[f"p{i}" for i in pick]),
                       obs=pd.DataFrame(index=[f"cell{i}" for i in range(12)]))
    d = tmp_path / "in"
    d.mkdir()
    adata.write_h5ad(d / "cells.h5ad")
    frag = "".join(f"{u.chrom_of(i)}\t{u.starts[i]}\t{u.starts[i] + 50}\tBC{i % 3}\t1\n" for i in range(60))
    (d / "frags.tsv").write_text(frag)
    (d / "a.bed").write_text("chr1\t1000000\t1100000\n")
    run = pretokenize(d, tok, tmp_path / "out", progress=False)
    c = Corpus.open(run.out, expect=tok, verify=True)
    cells = tokenize_anndata(d / "cells.h5ad", tok).to_list()
    bcs, frows = tokenize_fragments(d / "frags.tsv", tok, CellSpec())
    assert c.names == ["a"] + [f"cell{i}" for i in range(12)] + list(bcs)
    assert c.to_ragged().to_list() == [tok.encode(d / "a.bed").tolist()] + cells + [r.tolist() for r in frows]
    assert len(list(run.out.glob("shard-*.gtokc"))) == 3


# ------------------------------------------------------------------ hostile names, bad inputs
def _fragments(u, barcodes) -> str:
    return "".join(f"{u.chrom_of(i)}\t{u.starts[i]}\t{u.starts[i] + 50}\t{bc}\t1\n"
                   for i in range(40) for bc in barcodes[i % len(barcodes):][:1])


def test_gtok_dir_barcodes_cannot_leave_out(tmp_path, tok):
    """Issue 19: a barcode ``./../X`` wrote outside ``--out``; one with ``/`` aborted the run."""
    from genotok._names import from_file_stem
    from genotok.pipeline.batch import CELL_SEP

    hostile = ["./../X", "a/b", "..", "/etc/x", "..%2F", "BC1", "\u00e9t\u00e9"]
    d = tmp_path / "in"
    d.mkdir()
    (d / "frags.tsv").write_text(_fragments(tok.universe.regions, hostile))
    (d / "a b.bed").write_text("chr1\t1000000\t1100000\n")
    out = tmp_path / "deep" / "out"
    run = pretokenize(d, tok, out, format="gtok-dir", progress=False)
    assert run.failed == []
    written = sorted(p.name for p in out.glob("*.gtok"))
    assert all(p.parent == out for p in tmp_path.rglob("*.gtok"))  # nothing escaped
    assert len(written) == len(hostile) + 1
    cells = {from_file_stem(n[:-5].split(CELL_SEP)[1]) for n in written if CELL_SEP in n}
    assert cells == set(hostile)
    assert "a%20b.gtok" in written  # a file stem is made safe the same way
    frows = dict(zip(*genotok.singlecell.tokenize_fragments(d / "frags.tsv", tok,
                                                            CellSpec())))
    for n in written:
        if CELL_SEP in n:
            bc = from_file_stem(n[:-5].split(CELL_SEP)[1])
            assert read_gtok(out / n).tolist() == frows[bc].tolist()
    # a control byte in a barcode is the file's error (the fragment reader refuses it at its
    # line): skipped and reported with --on-error skip, nothing of it written
    (d / "frags.tsv").write_text(_fragments(tok.universe.regions, ["ok", "ctl\x01"]))
    run = pretokenize(d / "frags.tsv", tok, tmp_path / "ctl", format="gtok-dir", progress=False,
                      on_error="skip")
    assert [f["path"] for f in run.failed] == [str(d / "frags.tsv")]
    assert "control byte" in run.failed[0]["error"]
    assert not list((tmp_path / "ctl").glob("*.gtok"))


def test_a_bad_or_duplicate_barcode_is_that_cells_error(tmp_path, tok):
    from genotok.pipeline.batch import cell_files

    failed: list = []
    files = cell_files(Path("d/x.tsv.gz"), ["A", "", "B", "A", "C" * 300], "skip", failed)
    assert files == ["x@A.gtok", None, "x@B.gtok", None, None]
    assert [f["record"] for f in failed] == ["", "A", "C" * 300]
    assert "share the barcode 'A'" in failed[1]["error"] and "too long" in failed[2]["error"]
    with pytest.raises(PipelineError, match="cells 0 and 3 share the barcode"):
        cell_files(Path("x.tsv"), ["A", "B", "C", "A"], "fail", [])
    # in a run: the long barcode is skipped and reported, the other cells are written
    d = tmp_path / "in"
    d.mkdir()
    (d / "f.tsv").write_text(_fragments(tok.universe.regions, ["BC1", "L" * 250]))
    run = pretokenize(d, tok, tmp_path / "out", format="gtok-dir", progress=False, on_error="skip")
    assert [f["record"] for f in run.failed] == ["L" * 250]
    assert [p.name for p in (tmp_path / "out").glob("*.gtok")] == ["f@BC1.gtok"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())["genotok_run"]
    assert manifest["failed"] == run.failed and run.n_records == 1
    with pytest.raises(genotok.GenotokError, match="too long"):
        pretokenize(d, tok, tmp_path / "out2", format="gtok-dir", progress=False)


def test_every_bad_input_is_skippable_and_reported(tmp_path, tok):
    """Corrupt gzip (BED and fragments), malformed fragments, a garbage .h5ad, a file that
    cannot be read: with on_error="skip" each is listed with its error, the rest is done."""
    u = tok.universe.regions
    d = tmp_path / "in"
    d.mkdir()
    good = _fragments(u, ["BC1", "BC2"]).encode()
    (d / "a.bed").write_text("chr1\t1000000\t1100000\n")
    (d / "b.bed.gz").write_bytes(gzip.compress(b"chr1\t1\t2\n" * 1000)[:-30])  # truncated
    (d / "c.tsv.gz").write_bytes(gzip.compress(good)[:-30])                  # truncated
    (d / "d.tsv").write_bytes(good + b"chr1\tx\t5\tBC1\t1\n")                 # malformed
    (d / "e.h5ad").write_bytes(b"not an HDF5 file" * 64)
    (d / "f.bed.gz").write_bytes(b"\x1f\x8b" + bytes(range(256)))             # not deflate
    (d / "g.tsv").write_bytes(good)
    bad = ["b.bed.gz", "c.tsv.gz", "d.tsv", "e.h5ad", "f.bed.gz"]
    pytest.importorskip("anndata")
    run = pretokenize(d, tok, tmp_path / "out", progress=False, on_error="skip",
                      options=RunOptions(files_per_shard=1))
    assert sorted(Path(f["path"]).name for f in run.failed) == bad
    assert all(f["error"] for f in run.failed)
    c = Corpus.open(run.out, verify=True)
    assert c.names == ["a", "BC1", "BC2"]
    manifest = json.loads((run.out / "manifest.json").read_text())["genotok_run"]
    assert manifest["failed"] == run.failed
    assert "5 failed (skipped)" in str(run)
    # the same inputs with on_error="fail": the first bad one stops the run
    with pytest.raises(Exception) as info:
        pretokenize(d, tok, tmp_path / "out2", progress=False,
                    options=RunOptions(files_per_shard=1))
    assert "b.bed.gz" in str(info.value)


def test_an_unreadable_input_is_skipped(tmp_path, tok, monkeypatch):
    import genotok.pipeline.batch as P

    d = tmp_path / "in"
    d.mkdir()
    for name in ("a", "b"):
        (d / f"{name}.bed").write_text("chr1\t1000000\t1100000\n")
    real = P.file_digest

    def digest(path, algo="sha256"):
        if Path(path).name == "b.bed":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, algo)

    monkeypatch.setattr(P, "file_digest", digest)
    run = pretokenize(d, tok, tmp_path / "out", progress=False, on_error="skip")
    assert [Path(f["path"]).name for f in run.failed] == ["b.bed"]
    assert "PermissionError" in run.failed[0]["error"] and "b.bed" in run.failed[0]["error"]
    assert Corpus.open(run.out).names == ["a"]


def test_a_fifo_or_device_input_is_refused_not_read(tmp_path, tok):
    """A FIFO would block the run forever, /dev/zero fill the memory: neither is read."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.bed").write_text("chr1\t1000000\t1100000\n")
    os.mkfifo(d / "pipe.bed")
    inputs = [d / "a.bed", d / "pipe.bed", "/dev/zero"]
    run = pretokenize(inputs, tok, tmp_path / "out", progress=False, on_error="skip")
    assert [f["path"] for f in run.failed] == [str(d / "pipe.bed"), "/dev/zero"]
    assert all("not a regular file" in f["error"] for f in run.failed)
    with pytest.raises(PipelineError, match="pipe.bed: not a regular file"):
        pretokenize(inputs, tok, tmp_path / "out2", progress=False)


def test_clean_up_matches_what_our_writers_name_their_temp_files(tmp_path):
    """The clean-up knows ``_io.make_temp``'s naming: if that changes, this fails (rather than
    temp files piling up, or a resume being refused)."""
    from genotok._io import make_temp
    from genotok._names import to_file_stem
    from genotok.pipeline.batch import CELL_SEP
    from genotok.pipeline.journal import clean_temp_files

    ours = ["journal.json", "manifest.json", "shard-00003.gtokc", "shard-123456.gtokc",
            f"{to_file_stem('../x y')}.gtok", f"s{CELL_SEP}{to_file_stem('AAAC-1/..')}.gtok"]
    made = []
    for name in ours * 3:
        fd, tmp = make_temp(tmp_path / name)
        os.close(fd)
        made.append(Path(tmp).name)
    keep = ["journal.json", "notes.tmp", ".hidden.tmp", ".journal.json.tmp", "x.gtok"]
    for name in keep:
        (tmp_path / name).write_text("keep")
    assert sorted(clean_temp_files(tmp_path)) == sorted(made)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


def test_a_run_resumes_with_the_hash_it_started_with(tmp_path, tok, monkeypatch):
    """Issue 20 (portable corpora): a run hashed with xxh3_128 where xxhash is installed resumes
    with that hash; without xxhash it says what to install instead of refusing the directory."""
    import sys

    from genotok._optional import MissingDependencyError
    from genotok.pipeline import run as pipeline

    inputs = genotok.examples_dir() / "peaks"
    out = tmp_path / "c"
    first = pretokenize(inputs, tok, out, progress=False, options=RunOptions(hash="xxh3_128"))
    monkeypatch.setattr(pipeline, "default_hash", lambda: "sha256")  # as where xxhash is missing
    again = pretokenize(inputs, tok, out, progress=False)  # no hash=: the journal's is kept
    assert again.n_records == first.n_records
    assert {s["hash_algorithm"] for s in genotok.Corpus.open(out).sources} == {"xxh3_128"}
    monkeypatch.setitem(sys.modules, "xxhash", None)
    with pytest.raises(MissingDependencyError, match="pip install 'genotok\\[fast\\]'"):
        pretokenize(inputs, tok, out, progress=False)


def test_a_full_disk_is_not_journaled_as_a_bad_input(tmp_path, tok, monkeypatch):
    """Issue 32: ENOSPC while writing the shard of a fragment input was recorded as that input
    being unreadable (on_error="skip"); the run finished and a re-run never retried it."""
    import errno

    from genotok.formats.corpus.writer import CorpusWriter

    d = tmp_path / "in"
    d.mkdir()
    (d / "a.bed").write_text("chr1\t1000000\t1100000\n")
    (d / "g.tsv").write_text(_fragments(tok.universe.regions, ["BC1", "BC2"]))
    real = CorpusWriter.append_batch

    def full(self, *args, **kwargs):
        if "g.tsv" in str(getattr(self, "path", "")) or "shard-00001" in str(self.path):
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CorpusWriter, "append_batch", full)
    with pytest.raises(PipelineError, match="g.tsv: the run stopped.*No space left.*not recorded"):
        pretokenize(d, tok, tmp_path / "out", progress=False, on_error="skip",
                    options=RunOptions(files_per_shard=1))
    monkeypatch.setattr(CorpusWriter, "append_batch", real)  # space freed: the re-run retries
    run = pretokenize(d, tok, tmp_path / "out", progress=False, on_error="skip",
                      options=RunOptions(files_per_shard=1))
    assert run.failed == [] and Corpus.open(run.out, verify=True).names == ["a", "BC1", "BC2"]


def test_memory_error_under_skip_stops_the_run_clearly(tmp_path, tok, monkeypatch):
    """Issue 32: a MemoryError escaped on_error="skip" as it was (untreated)."""
    import genotok.pipeline.batch as P

    d = tmp_path / "in"
    d.mkdir()
    for name in ("a", "b"):
        (d / f"{name}.bed").write_text("chr1\t1000000\t1100000\n")
    real = P.RegionSet.from_bed

    def from_bed(path, *a, **k):
        if Path(path).name == "b.bed":
            raise MemoryError
        return real(path, *a, **k)

    monkeypatch.setattr(P.RegionSet, "from_bed", from_bed)
    with pytest.raises(PipelineError, match="b.bed: the run stopped: out of memory"):
        pretokenize(d, tok, tmp_path / "out", progress=False, on_error="skip")


def test_gtok_dir_overwrite_removes_the_old_run_and_only_it(tmp_path, tok):
    """Issue 32: overwrite=True deleted the old journal and manifest but kept the old .gtok
    files: the directory mixed two runs and import_gtok_dir imported both."""
    d = tmp_path / "in"
    d.mkdir()
    for name in ("a", "b", "c"):
        (d / f"{name}.bed").write_text("chr1\t1000000\t1100000\n")
    out = tmp_path / "out"
    pretokenize([d / "a.bed", d / "b.bed"], tok, out, format="gtok-dir", progress=False)
    assert sorted(p.name for p in out.glob("*.gtok")) == ["a.gtok", "b.gtok"]
    pretokenize([d / "c.bed"], tok, out, format="gtok-dir", progress=False, overwrite=True)
    assert sorted(p.name for p in out.glob("*.gtok")) == ["c.gtok"]
    (out / "notes.txt").write_text("mine")  # a file no run wrote: never removed
    with pytest.raises(PipelineError, match="no run wrote .*notes.txt"):
        pretokenize([d / "a.bed"], tok, out, format="gtok-dir", progress=False, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine" and (out / "c.gtok").exists()


def test_resumed_run_with_other_on_error_is_refused(tmp_path):
    """on_error is part of the plan (issue 32 item 14): a resumed run with the other choice
    would journal failures the first run stopped at, or the reverse."""
    tok = Tokenizer.from_bed(EX / "universe.bed")
    out = tmp_path / "out"
    pretokenize(EX / "peaks", tok, out, progress=False, on_error="skip")
    with pytest.raises(PipelineError, match="other inputs or settings"):
        pretokenize(EX / "peaks", tok, out, progress=False, on_error="fail")
    assert json.loads((out / "journal.json").read_text())["plan"]["on_error"] == "skip"


def test_first_arguments_are_checked(tmp_path):
    tok = Tokenizer.from_bed(EX / "universe.bed")
    with pytest.raises(TypeError, match=r"tokenizer must be a Tokenizer or a GeneTokenizer, got "
                       r"PosixPath.*the order is pretokenize\(inputs, tokenizer, out\)"):
        pretokenize(tok, EX / "peaks", tmp_path / "a", progress=False)
    with pytest.raises(TypeError, match=r"tokenizer must be a Tokenizer.*Tokenizer.from_bed"):
        pretokenize(EX / "peaks", str(EX / "universe.bed"), tmp_path / "b", progress=False)
    with pytest.raises(genotok.params.ParameterError, match="files_per_shard must be"):
        RunOptions(files_per_shard=True)
    with pytest.raises(genotok.params.ParameterError, match="options must be a RunOptions or None"):
        pretokenize(EX / "peaks", tok, tmp_path / "c", progress=False, options={"hash": "md5"})
    assert not any((tmp_path / n).exists() for n in "abc")
def test_list_file_cycle_refused(tmp_path):
    """Issue 32 item 14: an @list.txt naming itself (or a cycle of lists) recursed until
    RecursionError."""
    (tmp_path / "a.bed").write_text("chr1\t1\t2\n")
    (tmp_path / "self.txt").write_text("a.bed\n@self.txt\n")
    with pytest.raises(PipelineError, match="self.txt: list file names itself"):
        expand_inputs([f"@{tmp_path / 'self.txt'}"])
    (tmp_path / "one.txt").write_text("@two.txt\n")
    (tmp_path / "two.txt").write_text("\ufeffa.bed\n@one.txt\n")
    with pytest.raises(PipelineError, match="one.txt: list file names itself"):
        expand_inputs([f"@{tmp_path / 'one.txt'}"])
    (tmp_path / "two.txt").write_text("\ufeffa.bed\n")  # (a BOM is not part of the name)
    assert [p.name for p in expand_inputs([f"@{tmp_path / 'one.txt'}"])] == ["a.bed"]
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(PipelineError, match="bin.txt: list file is not UTF-8"):
        expand_inputs([f"@{tmp_path / 'bin.txt'}"])


def test_non_regular_inputs_listed(tmp_path):
    """Issue 32 item 15: a FIFO (or a folder) named like an input inside an input directory was
    skipped without a word."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.bed").write_text("chr1\t1\t2\n")
    os.mkfifo(d / "pipe.bed")
    (d / "sub.bed").mkdir()
    (d / "notes.txt").mkdir()  # not named like an input: not an input
    with pytest.warns(UserWarning, match=r"2 input\(s\) skipped, not regular files: .*pipe.bed, "
                                         r".*sub.bed$"):
        assert [p.name for p in expand_inputs(d)] == ["a.bed"]
    with pytest.warns(UserWarning, match="pipe.bed"):
        assert [p.name for p in expand_inputs(str(d / "*.bed"))] == ["a.bed"]


GOOD = "chr1\t100\t200\nchr1\t300\t400\n"

def test_pipeline_bad_input_leaves_no_partial_shard(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.bed").write_text(GOOD)
    (d / "b.bed").write_bytes(b"chr1\t1\x00\t2\n")
    tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    with pytest.raises(BedParseError, match=r"b.bed:1: binary data"):
        pretokenize(d, tok, tmp_path / "out", progress=False)
    leftovers = [p.name for p in (tmp_path / "out").iterdir()]
    assert not [n for n in leftovers if n.endswith(".gtokc") or n.endswith(".tmp") or n == "manifest.json"]


# --------------------------------------------------------------------------- run summaries
def test_summary_gives_hit_rate_and_unk_share(tok, tmp_path):
    run = pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path / "c", progress=False)
    corpus = genotok.Corpus.open(run.out)
    flat = corpus.to_ragged().data
    assert run.n_unk_tokens == int((flat == tok.unk_token_id).sum())
    assert run.n_unk_records == 0 and run.hit_rate == 1.0
    assert 0 <= run.unk_share < 0.5
    text = str(run)
    assert f"{run.unk_share:.1%} <unk>" in text and "100.0% of records hit the universe" in text
    html = run._repr_html_()  # a notebook shows a table, not the dataclass' one long line
    assert "genotok.RunSummary" in html and "&lt;unk&gt; share" in html
    assert corpus.manifest["genotok_run"]["n_unk_tokens"] == run.n_unk_tokens
    info = corpus.info()  # what `genotok info` prints
    assert info["unk_share"] == f"{run.unk_share:.1%} of tokens are <unk>"
    assert info["hit_rate"] == "100.0% of records hit the universe"


def test_wrong_universe_warns_and_names_the_cause(tmp_path):
    # as if from another genome build: the same chromosomes, coordinates far off
    rows = [line.split("\t") for line in
            (genotok.examples_dir() / "universe.bed").read_text().splitlines()]
    (tmp_path / "u.bed").write_text("".join(f"{c}\t{int(s) + 10**8}\t{int(e) + 10**8}\n"
                                            for c, s, e in rows))
    wrong = genotok.Tokenizer.from_bed(tmp_path / "u.bed")
    with pytest.warns(UserWarning, match=r"5 of 5 records hit no region of the universe .*"
                                         r"genome build.*chromosome names"):
        run = pretokenize(genotok.examples_dir() / "peaks", wrong, tmp_path / "c", progress=False)
    assert run.hit_rate == 0.0 and run.unk_share == 1.0
    assert "0.0% of records hit the universe" in str(run)


@needs_shared
def test_pbmc_with_the_example_universe_is_not_silent(tok, tmp_path):
    # the reproducer: 19 of 20 cells came out [<unk>] and the run said nothing
    with pytest.warns(UserWarning, match=r"1\d of 20 records hit no region"):
        run = pretokenize(PBMC, tok, tmp_path / "x", progress=False)
    assert run.n_unk_records >= 17  # a few cells touch chr1:0-2M of the example
    info = genotok.Corpus.open(run.out).info()
    assert info["hit_rate"] == f"{run.hit_rate:.1%} of records hit the universe"


# an input that changes while pretokenize reads it: a fragment file read twice by
# rank="median" (its medians, then its tokens) must not give a corpus encoded with the medians
# of another version of it; the run fails naming the file and writes no manifest
def test_a_fragment_file_changed_between_the_two_passes_is_refused(tmp_path, monkeypatch):
    a, b = tmp_path / "a.fragments.tsv", tmp_path / "b.fragments.tsv"
    a.write_text("chr1\t5\t20\tAAA-1\t1\nchr1\t150\t160\tAAA-1\t1\nchr1\t50\t60\tCCC-1\t1\n")
    b.write_text("chr1\t5\t20\tGGG-1\t1\nchr1\t150\t160\tGGG-1\t1\n")
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    real = medians._medians_inputs

    def then_changed(*args):
        yield from real(*args)
        a.write_text("chr1\t5\t20\tAAA-1\t1\n" * 7 + "chr1\t150\t160\tTTT-1\t1\n")

    monkeypatch.setattr(medians, "_medians_inputs", then_changed)
    out = tmp_path / "out"
    with pytest.raises(PipelineError, match="a.fragments.tsv: changed while the run read it"):
        pretokenize([a, b], tok, out, progress=False,
                    cells=CellSpec(encoding=(Normalize(), RankByMedian()), values=True))
    assert not (out / MANIFEST).exists()
    monkeypatch.setattr(medians, "_medians_inputs", real)  # once final: the run as asked
    run = pretokenize([a, b], tok, out, progress=False,
                      overwrite=True,
                      cells=CellSpec(encoding=(Normalize(), RankByMedian()), values=True))
    assert run.n_records == 3


# ---- issue 43 round-4 campaign (tests/campaigns): a resume checks the journal it trusts
@pytest.mark.parametrize("how", ["not-utf8", "deep", "list", "done-key-text", "done-key-past",
                                 "files-absolute", "files-dotdot", "records-str", "failed-int"])
def test_a_tampered_journal_is_refused_naming_it(tok, tmp_path, how):
    out = tmp_path / "out"
    pretokenize(genotok.examples_dir() / "peaks", tok, out, progress=False,
                options=RunOptions(files_per_shard=2))
    (out / MANIFEST).unlink()  # as if the run had stopped before its manifest
    jpath = out / "journal.json"
    j = json.loads(jpath.read_text())
    raw = {"not-utf8": b"\xff\xfe", "deep": b"[" * 100_000 + b"]" * 100_000, "list": b"[]"}
    if how in raw:
        jpath.write_bytes(raw[how])
    else:
        e = j["done"]["0"]
        {"done-key-text": lambda: j["done"].update(x=e),
         "done-key-past": lambda: j["done"].update({"99": e}),
         "files-absolute": lambda: e.update(files=["/etc/passwd"]),
         "files-dotdot": lambda: e.update(files=["../x.gtokc"]),
         "records-str": lambda: e.update(records="1"),
         "failed-int": lambda: e.update(failed=3)}[how]()
        jpath.write_text(json.dumps(j))
    with pytest.raises(genotok.GenotokError, match="journal.json"):
        pretokenize(genotok.examples_dir() / "peaks", tok, out, progress=False,
                    options=RunOptions(files_per_shard=2))
