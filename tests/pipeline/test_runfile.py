"""``genotok run FILE.toml`` / ``Pipeline``: each dataset equals pretokenize's output, the
mixture and the packed rows read back, the file is validated whole before anything is written,
a resume with another file is refused (issue 41)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import genotok
from genotok import Corpus, Tokenizer, mix
from genotok.cli import main
from genotok.pipeline import RunOptions, pretokenize
from genotok.runfile import Pipeline, RunFileError, read_packed

EXAMPLE = """
[run]
out = "runs/demo"
executor = "serial"
threads = 2

[[dataset]]
name = "peaks"
inputs = ["peaks/*.narrowPeak*"]
tokenizer = "universe.bed"
format = "corpus"

[[dataset]]
name = "cells"
inputs = ["pbmc.h5ad"]
tokenizer = "universe.bed"
format = "corpus"
[dataset.cells]
order = "value"
max_length = 64

[mixture]
weights = { peaks = 0.6, cells = 0.4 }
seed = 7

[pack]
seq_length = 512
strategy = "ffd"
format = "corpus"
"""


@pytest.fixture()
def demo(tmp_path):
    folder = tmp_path / "demo"
    shutil.copytree(genotok.examples_dir(), folder)
    (folder / "pipeline.toml").write_text(EXAMPLE)
    return folder


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


def test_the_example_gives_pretokenize_records_a_mixture_and_packed_rows(demo, tok, tmp_path):
    results = Pipeline.from_toml(demo / "pipeline.toml").run(progress=False)
    out = demo / "runs" / "demo"
    ref_peaks = pretokenize(sorted((demo / "peaks").glob("*.narrowPeak*")), tok,
                            tmp_path / "p", progress=False)
    ref_cells = pretokenize([demo / "pbmc.h5ad"], tok, tmp_path / "c", progress=False,
                            cells=genotok.CellSpec(order="value", max_length=64))
    for name, ref in (("peaks", ref_peaks), ("cells", ref_cells)):
        got, want = Corpus.open(out / name, verify=True), Corpus.open(ref.out)
        assert got.names == want.names and got.to_ragged() == want.to_ragged(), name
        assert results[name].n_records == ref.n_records
    # the mixture on disk draws what mix(paths, weights, seed) draws
    m, m2 = mix(out), mix([out / "peaks", out / "cells"], [0.6, 0.4], seed=7)
    assert len(m) == len(m2) and m.get_batch(range(len(m))) == m2.get_batch(range(len(m2)))
    # the packed rows: every token of the epoch once, segments and positions recoverable
    report = results["pack"]
    assert report.fill >= 0.95 and report.n_rows == len(Corpus.open(out / "packed"))
    p = read_packed(out / "packed")
    assert p["input_ids"].shape[1] == 512 and (p["attention_mask"].sum(1) <= 512).all()
    draws = np.zeros(len(m), np.int64)
    for k in range(p["draw"].size):
        row, d, off, n = p["row"][k], p["draw"][k], p["offset"][k], p["length"][k]
        start = np.flatnonzero(p["segment_ids"][row] == np.unique(
            p["segment_ids"][row][p["segment_ids"][row] > 0])[sum(p["row"][:k] == row)])[0]
        assert p["input_ids"][row, start:start + n].tolist() == m[d][off:off + n].tolist()
        assert p["position_ids"][row, start:start + n].tolist() == list(range(n))
        draws[d] += n
    assert draws.tolist() == [len(m[i]) for i in range(len(m))]
    assert set(p["weight"].round(6)) <= {0.6, 0.4}
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["content"] == EXAMPLE and manifest["done"] is True


def _refused(demo, capsys, text, *match):
    (demo / "pipeline.toml").write_text(text)
    assert main(["run", str(demo / "pipeline.toml")]) == 2
    err = capsys.readouterr().err
    for m in ("pipeline.toml", *match):
        assert m in err, err
    assert not (demo / "runs").exists()  # nothing written


def test_a_bad_file_is_refused_before_anything_runs(demo, capsys):
    _refused(demo, capsys, EXAMPLE.replace("seq_length", "seq_lenght"),
             "[pack].seq_lenght", "did you mean 'seq_length'")
    _refused(demo, capsys, EXAMPLE.replace("threads = 2", 'threads = "2"'),
             "[run].threads", "must be an integer")
    _refused(demo, capsys, EXAMPLE.replace('"pbmc.h5ad"', '"pbcm.h5ad"'),
             "'cells'", ".inputs", "pbcm.h5ad")
    _refused(demo, capsys, EXAMPLE.replace('"peaks/*', '"nopeaks/*'), "matches no file")
    _refused(demo, capsys, EXAMPLE.replace('executor = "serial"', 'executor = "rey"'),
             "did you mean 'ray'")
    _refused(demo, capsys, EXAMPLE.replace("cells = 0.4", "cels = 0.4"), "[mixture].weights")
    _refused(demo, capsys, EXAMPLE.replace('order = "value"', 'order = "valu"'),
             ".cells", "order")
    _refused(demo, capsys, EXAMPLE.replace('format = "corpus"\n[dataset',
                                           'format = "parqet"\n[dataset'),
             "did you mean 'parquet'")
    _refused(demo, capsys, EXAMPLE + "\n[run.ray]\nnum_workers = 2\n", "[run.ray]")
    _refused(demo, capsys, "[run\nout=1", "not a valid TOML")
    _refused(demo, capsys, EXAMPLE.replace('inputs = ["pbmc.h5ad"]',
                                           'inputs = ["pbmc.h5ad", "peaks"]'),
             "'cells'.cells", "a BED input is one record")


def test_pack_stores_come_from_the_registry(demo, capsys, monkeypatch):
    """``[pack].format`` takes every store that keeps values and metadata, a plugin's too (was:
    a literal list); one that keeps neither (gtok-dir, memory) is refused, naming the list."""
    from genotok.formats import stores as S
    from genotok.formats.tables import ArrowStore
    from genotok.runfile import pack_stores

    class Feather(ArrowStore):
        name = "feather-example"

    monkeypatch.setitem(S.STORES, Feather.name, Feather)
    assert pack_stores() == ("corpus", "parquet", "arrow", "jsonl", "feather-example")
    toml = demo / "pipeline.toml"
    for fmt in ("feather-example", "gtok-dir", "memory"):
        toml.write_text(EXAMPLE.replace('strategy = "ffd"\nformat = "corpus"',
                                        f'strategy = "ffd"\nformat = "{fmt}"'))
        if fmt == "feather-example":
            assert main(["run", str(toml), "--dry-run"]) == 0
            capsys.readouterr()
        else:
            _refused(demo, capsys, toml.read_text(), "[pack].format", "feather-example")


def test_dry_run_prints_the_plan_and_writes_nothing(demo, capsys, tok):
    assert main(["run", str(demo / "pipeline.toml"), "--dry-run"]) == 0
    text = capsys.readouterr().out
    for word in ("peaks: 5 input(s)", "cells: 1 input(s)", tok.fingerprint[:16],
                 str(demo / "runs" / "demo" / "peaks"), "mixture", "pack"):
        assert word in text, text
    assert not (demo / "runs").exists()


def test_a_resume_with_another_file_is_refused(demo, capsys):
    small = EXAMPLE.split("[[dataset]]\nname = \"cells\"")[0].replace("peaks = 0.6, ", "")
    small = small + '[mixture]\nweights = { peaks = 1.0 }\n'
    (demo / "pipeline.toml").write_text(small)
    assert main(["run", "-q", str(demo / "pipeline.toml")]) == 0
    assert main(["run", "-q", str(demo / "pipeline.toml")]) == 0  # the same file: resumes
    (demo / "pipeline.toml").write_text(small.replace("threads = 2", "threads = 1"))
    assert main(["run", "-q", str(demo / "pipeline.toml")]) == 2
    assert "another run file" in capsys.readouterr().err
    assert main(["run", "-q", "--overwrite", str(demo / "pipeline.toml")]) == 0


def test_a_killed_run_resumes_per_dataset(tmp_path, tok):
    """The driver killed while the second dataset runs: the re-run keeps the first dataset as
    it is and completes the second, equal to an uninterrupted run."""
    from .test_pipeline import _many_files

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = _many_files(tmp_path / "a", n=4), _many_files(tmp_path / "b", n=24, lines=400)
    text = f"""[run]
out = "out"
files_per_shard = 1
[[dataset]]
name = "a"
inputs = ["{a}"]
tokenizer = "{genotok.examples_dir() / 'universe.bed'}"
[[dataset]]
name = "b"
inputs = ["{b}"]
tokenizer = "{genotok.examples_dir() / 'universe.bed'}"
"""
    (tmp_path / "run.toml").write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(os.path.dirname(os.path.dirname(genotok.__file__))), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "genotok", "run", "-q",
                             str(tmp_path / "run.toml")], env=env)
    journal = tmp_path / "out" / "b" / "journal.json"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if json.loads(journal.read_text())["done"]:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    killed = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    a_manifest = (tmp_path / "out" / "a" / "manifest.json").read_bytes()
    if killed:
        assert not (tmp_path / "out" / "b" / "manifest.json").exists()
    results = Pipeline.from_toml(tmp_path / "run.toml").run(progress=False)
    assert (tmp_path / "out" / "a" / "manifest.json").read_bytes() != b"" and \
        Corpus.open(tmp_path / "out" / "a").to_ragged() == Corpus.open(
            pretokenize(a, tok, tmp_path / "ra", progress=False,
                        options=RunOptions(files_per_shard=1)).out).to_ragged()
    assert a_manifest  # (written by the killed run, before the second dataset)
    ref = pretokenize(b, tok, tmp_path / "rb", progress=False, options=RunOptions(files_per_shard=1))
    assert Corpus.open(results["b"].out, verify=True).to_ragged() == \
        Corpus.open(ref.out).to_ragged()


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning",
                            "ignore::UserWarning",
                            "ignore::pytest.PytestUnraisableExceptionWarning")
def test_executor_dask_gives_the_serial_records(demo):
    pytest.importorskip("dask.distributed")
    serial = Pipeline.from_toml(demo / "pipeline.toml")
    serial.run(progress=False)
    text = EXAMPLE.replace('executor = "serial"', 'executor = "dask"').replace(
        "threads = 2", 'threads = 2\nfiles_per_shard = 1\n[run.dask]\naddress = "local"\n'
        "n_workers = 2").replace("runs/demo", "runs/dask")
    (demo / "dask.toml").write_text(text)
    Pipeline.from_toml(demo / "dask.toml").run(progress=False)
    for name in ("peaks", "cells"):
        assert Corpus.open(demo / "runs" / "dask" / name).to_ragged() == \
            Corpus.open(demo / "runs" / "demo" / name).to_ragged()
    assert read_packed(demo / "runs" / "dask" / "packed")["input_ids"].tolist() == \
        read_packed(demo / "runs" / "demo" / "packed")["input_ids"].tolist()


def test_pipeline_errors_are_run_file_errors(tmp_path):
    (tmp_path / "r.toml").write_text('[run]\nout = "o"\n')
    with pytest.raises(RunFileError, match=r"r\.toml: dataset: missing \(required\)"):
        Pipeline.from_toml(tmp_path / "r.toml")
    (tmp_path / "r.toml").write_text('[run]\nout = "o"\ndataset = 3\n[[dataset]]\n')
    with pytest.raises(RunFileError, match=r"r\.toml: \[run\]\.dataset: unknown key"):
        Pipeline.from_toml(tmp_path / "r.toml")
    with pytest.raises(RunFileError, match="cannot read"):
        Pipeline.from_toml(tmp_path / "missing.toml")
