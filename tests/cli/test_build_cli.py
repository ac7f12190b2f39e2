"""`genotok universe …`: exit codes, outputs, sidecars and messages."""

from __future__ import annotations

import json

import pytest

from genotok import RegionSet
from genotok.cli import main
from tests import naive_build as naive

SETS = [[("chr2", 5, 9), ("chr1", 0, 4), ("chr1", 20, 30)],
        [("chr1", 3, 8), ("chrX", 1, 2), ("chr1", 25, 40)],
        [("chr1", 6, 7), ("chr1", 29, 31)]]


@pytest.fixture
def inputs(tmp_path):
    paths = []
    for i, s in enumerate(SETS):
        p = tmp_path / f"s{i}.bed"
        p.write_bytes(naive.bed_text(s))
        paths.append(str(p))
    return paths


def universe(argv: list[str]) -> int:
    """``genotok universe ARGV``."""
    return main(["universe", *argv])


def _read(path) -> list[str]:
    return RegionSet.from_bed(path).to_strings()


def test_merge(tmp_path, inputs, capsys):
    out = tmp_path / "union.bed"
    assert universe(["merge", "-o", str(out), *inputs]) == 0
    assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    report = json.loads((tmp_path / "union.bed.json").read_text())
    assert report["method"] == "merge" and len(report["inputs"]) == 3
    err = capsys.readouterr().err
    assert "merge: 3 input(s), 8 regions -> 4 regions" in err and "union.bed.json" in err
    # an existing universe is kept unless --overwrite
    assert universe(["merge", "--min-gap", "12", "-q", "-o", str(out), *inputs]) == 1
    assert capsys.readouterr().err == f"genotok: error: {out} exists; add --overwrite to replace it\n"
    assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    assert universe(["merge", "--min-gap", "12", "-q", "--overwrite", "-o", str(out), *inputs]) == 0
    assert _read(out) == ["chr1:0-40", "chr2:5-9", "chrX:1-2"]
    assert capsys.readouterr().err == ""


def test_consensus(tmp_path, inputs, capsys):
    out = tmp_path / "c.bed"
    assert universe(["consensus", "--min-inputs", "2", "-o", str(out), *inputs]) == 0
    assert _read(out) == [f"{c}:{s}-{e}" for c, s, e in naive.consensus(SETS, 2)]
    assert _read(out) == ["chr1:3-4", "chr1:6-7", "chr1:25-31"]
    assert universe(["consensus", "--min-input-fraction", "1", "--min-width", "2", "--overwrite",
                      "-o", str(out), *inputs]) == 0
    assert _read(out) == [f"{c}:{s}-{e}" for c, s, e in naive.consensus(SETS, 3, 2)]
    report = json.loads((tmp_path / "c.bed.json").read_text())
    assert report["params"] == {"min_count": None, "min_fraction": 1.0, "min_width": 2}
    assert report["stats"]["min_count"] == 3
    capsys.readouterr()
    assert universe(["consensus", "--min-inputs", "5", "--overwrite", "-o", str(out), *inputs]) == 0
    assert "genotok: warning: min_inputs 5 is more than the 3 inputs" in capsys.readouterr().err


def test_top_and_tile(tmp_path, inputs):
    cand = tmp_path / "cand.bed"
    cand.write_text("chr1\t0\t10\nchr1\t20\t30\nchr2\t0\t10\nchr9\t0\t5\n")
    out = tmp_path / "top.bed.gz"
    assert universe(["top", "--candidate", str(cand), "--max-regions", "2", "-q", "-o", str(out),
                      *inputs]) == 0
    assert _read(out) == ["chr1:0-10", "chr1:20-30"]
    sizes = tmp_path / "g.sizes"
    sizes.write_text("chr2\t15\nchr1\t10\n")
    tiles = tmp_path / "tiles.bed"
    assert universe(["tile", "--chrom-sizes", str(sizes), "--size", "10", "-q",
                      "-o", str(tiles)]) == 0
    assert _read(tiles) == ["chr1:0-10", "chr2:0-10", "chr2:10-15"]
    assert json.loads((tmp_path / "tiles.bed.json").read_text())["params"] == {"size": 10}


def test_inputs_from_a_file_list(tmp_path, inputs):
    lst = tmp_path / "inputs.txt"
    lst.write_text("\n".join(inputs) + "\n")
    out = tmp_path / "u.bed"
    assert universe(["merge", "-q", "--no-hash", "-o", str(out), f"@{lst}"]) == 0
    report = json.loads((tmp_path / "u.bed.json").read_text())
    assert [d["path"] for d in report["inputs"]] == inputs
    assert all("sha256" not in d for d in report["inputs"])


@pytest.mark.parametrize("method", [None, "tile", "merge", "consensus", "top"])
def test_help_has_examples(method, capsys):
    argv = ([method] if method else []) + ["--help"]
    assert universe(argv) == 0
    text = capsys.readouterr().out
    assert "examples:" in text and "genotok universe" in text


@pytest.mark.parametrize("argv", [
    [],
    ["merge", "a.bed"],                                            # no -o
    ["merge", "-o", "u.bed"],                                      # no inputs
    ["consensus", "-o", "u.bed", "a.bed"],                         # neither cutoff
    ["consensus", "--min-inputs", "2", "--min-input-fraction", "0.5", "-o", "u.bed", "a.bed"],
    ["consensus", "--min-inputs", "0", "-o", "u.bed", "a.bed"],
    ["consensus", "--min-input-fraction", "1.5", "-o", "u.bed", "a.bed"],
    ["tile", "--chrom-sizes", "g", "--size", "0", "-o", "u.bed"],
    ["tile", "--chrom-sizes", "g", "--size", "ten", "-o", "u.bed"],
    ["top", "--candidate", "c.bed", "-o", "u.bed", "a.bed"],       # no --max-regions
    ["frobnicate"],
])
def test_usage_errors_exit_2(argv, capsys):
    assert universe(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("genotok: error: ") and err.count("\n") == 1, err
    assert "genotok universe" in err and "Traceback" not in err


@pytest.mark.parametrize("old, argv", [
    ("--min-count", ["consensus", "--min-inputs", "2", "--min-count", "2", "-o", "u.bed", "a.bed"]),
    ("--min-fraction", ["consensus", "--min-inputs", "2", "--min-fraction", "0.5", "-o", "u.bed",
                        "a.bed"]),
    ("--min-hits", ["top", "--candidate", "c.bed", "--max-regions", "2", "--min-hits", "2",
                    "-o", "u.bed", "a.bed"]),
    ("--output", ["merge", "-o", "u.bed", "--output", "v.bed", "a.bed"]),
])
def test_old_flag_spellings_are_usage_errors(old, argv, capsys):
    """The flags before issue 21 are gone (genotok is unreleased): unknown, exit 2."""
    assert universe(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("genotok: error: unrecognized option ") and old in err, err
    assert err.count("\n") == 1


def test_out_flag_vocabulary(tmp_path, inputs, capsys):
    """-o and --out are the flag (``--output``, its spelling before issue 21, is refused above)."""
    for i, flag in enumerate(["-o", "--out"]):
        out = tmp_path / f"u{i}.bed"
        assert universe(["merge", "-q", flag, str(out), *inputs]) == 0
        assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    assert capsys.readouterr().err == ""


def test_threads_must_be_positive(tmp_path, inputs, capsys):
    for bad in ["0", "-3", "two"]:
        assert universe(["merge", "--threads", bad, "-o", str(tmp_path / "u.bed"), *inputs]) == 2
        err = capsys.readouterr().err
        assert err.startswith("genotok: error: argument --threads:") and err.count("\n") == 1
    assert not (tmp_path / "u.bed").exists()


def test_genotok_errors_exit_1_without_traceback(tmp_path, inputs, capsys):
    out = tmp_path / "u.bed"
    assert universe(["merge", "-o", str(out), str(tmp_path / "missing.bed")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("genotok: error:") and "missing.bed: no such file" in err
    assert "Traceback" not in err and not out.exists()
    sizes = tmp_path / "g.sizes"
    sizes.write_text("chr1\tten\n")
    assert universe(["tile", "--chrom-sizes", str(sizes), "--size", "5", "-o", str(out)]) == 1
    assert "g.sizes:1: length 'ten' of chr1 is not a non-negative integer" in capsys.readouterr().err
    assert universe(["merge", "-o", str(tmp_path / "no" / "dir" / "u.bed"), *inputs]) == 1
    err = capsys.readouterr().err
    assert err.startswith("genotok: error:") and "Traceback" not in err
