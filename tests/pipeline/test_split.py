"""The held-out split of pretokenize (RunOptions(validation=...)): chosen by a hash of the
record name, stable when inputs are added, written as out/validation/, in the manifests."""

from __future__ import annotations

import json
import shutil

import pytest

import genotok
from genotok import Corpus, Tokenizer
from genotok.params import ParameterError
from genotok.pipeline import PipelineError, RunOptions, pretokenize
from genotok.pipeline.split import draw, held_out


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


@pytest.fixture
def inputs(tmp_path):
    """Twelve BED inputs (copies of the bundled peaks under new names)."""
    src = sorted((genotok.examples_dir() / "peaks").iterdir())
    d = tmp_path / "in"
    d.mkdir()
    for i in range(12):
        shutil.copy(src[i % len(src)], d / f"GSM{i:03d}.narrowPeak")
    return d


def test_held_out_is_a_hash_of_the_name_alone():
    keys = [f"cell{i}" for i in range(2000)]
    mask = held_out(keys, 0.1)
    assert 0.07 < mask.mean() < 0.13
    assert held_out(keys[::-1], 0.1)[::-1].tolist() == mask.tolist()  # order does not matter
    assert not held_out(keys, 0.0).any() and held_out(keys, 1.0).all()
    assert (held_out(keys, 0.2) | ~mask).all()  # a larger share holds out a superset


@pytest.mark.parametrize("fmt", ["corpus", "gtok-dir"])
def test_validation_split_is_written_beside_and_recorded(tok, inputs, tmp_path, fmt):
    run = pretokenize(inputs, tok, tmp_path / "o", format=fmt, progress=False,
                      options=RunOptions(validation=0.4, files_per_shard=5))
    names = [f"GSM{i:03d}" for i in range(12)]
    want = {n for n, h in zip(names, held_out(names, 0.4)) if h}
    assert 0 < len(want) < 12
    out = run.out
    manifest = json.loads((out / "manifest.json").read_text())
    held = json.loads((out / "validation" / "manifest.json").read_text())
    assert manifest["split"]["name"] == "train" and held["split"]["name"] == "validation"
    assert manifest["split"]["fraction"] == held["split"]["fraction"] == 0.4
    if fmt == "corpus":
        assert set(Corpus.open(out / "validation").names) == want
        assert set(Corpus.open(out).names) == set(names) - want
    else:
        assert {p.stem for p in (out / "validation").glob("*.gtok")} == want
        assert {p.stem for p in out.glob("*.gtok")} == set(names) - want
    # resumable, and another fraction is another run
    assert pretokenize(inputs, tok, tmp_path / "o", format=fmt, progress=False,
                       options=RunOptions(validation=0.4, files_per_shard=5)).skipped_done == 12
    with pytest.raises(PipelineError, match="other inputs or settings"):
        pretokenize(inputs, tok, tmp_path / "o", format=fmt, progress=False,
                    options=RunOptions(validation=0.6, files_per_shard=5))
    again = pretokenize(inputs, tok, tmp_path / "o", format=fmt, progress=False, overwrite=True,
                        options=RunOptions(files_per_shard=5))
    assert not (again.out / "validation").exists()


def test_a_record_stays_on_its_side_when_inputs_are_added(tok, inputs, tmp_path):
    few = sorted(inputs.iterdir())[:6]
    a = pretokenize(few, tok, tmp_path / "a", progress=False, options=RunOptions(validation=0.4))
    b = pretokenize(inputs, tok, tmp_path / "b", progress=False, options=RunOptions(validation=0.4))
    held_a = set(Corpus.open(a.out / "validation").names)
    held_b = set(Corpus.open(b.out / "validation").names)
    assert held_a == held_b & {p.name.split(".")[0] for p in few}


def test_the_validation_share_is_checked():
    for bad in (-0.1, 1.0, True, "0.1"):
        with pytest.raises(ParameterError, match="validation"):
            RunOptions(validation=bad)


def test_a_parquet_split_reads_as_two_splits(tok, inputs, tmp_path):
    datasets = pytest.importorskip("datasets")
    out = pretokenize(inputs, tok, tmp_path / "o", format="parquet", progress=False,
                      options=RunOptions(validation=0.4)).out
    datasets.disable_progress_bars()
    ds = datasets.load_dataset("parquet", cache_dir=str(tmp_path / "hf"), data_files={
        "train": str(out / "*.parquet"), "validation": str(out / "validation" / "*.parquet")})
    names = [f"GSM{i:03d}" for i in range(12)]
    assert sorted(ds["validation"]["name"]) == sorted(
        n for n, h in zip(names, held_out(names, 0.4)) if h)
    assert ds["train"].num_rows + ds["validation"].num_rows == 12
    assert draw("GSM000") == draw("GSM000")
