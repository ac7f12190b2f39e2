"""`genotok universe …`: exit codes, outputs, sidecars and messages (and the deprecated
`genotok.build.build_cli` alias)."""

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


def build_cli(argv: list[str]) -> int:
    """``genotok universe ARGV`` (what the deprecated ``genotok.build.build_cli`` runs)."""
    return main(["universe", *argv])


def test_build_cli_is_a_deprecated_alias(tmp_path, inputs):
    from genotok.build import build_cli as old

    out = tmp_path / "u.bed"
    with pytest.warns(DeprecationWarning, match="build_cli is deprecated"):
        assert old(["merge", "-q", "-o", str(out), *inputs]) == 0
    assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    with pytest.warns(DeprecationWarning):
        assert old(["merge", "-q", "-o", str(out), *inputs]) == 1  # exists: the cli's error


def _read(path) -> list[str]:
    return RegionSet.from_bed(path).to_strings()


def test_merge(tmp_path, inputs, capsys):
    out = tmp_path / "union.bed"
    assert build_cli(["merge", "-o", str(out), *inputs]) == 0
    assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    report = json.loads((tmp_path / "union.bed.json").read_text())
    assert report["method"] == "merge" and len(report["inputs"]) == 3
    err = capsys.readouterr().err
    assert "merge: 3 input(s), 8 regions -> 4 regions" in err and "union.bed.json" in err
    # an existing universe is kept unless --overwrite
    assert build_cli(["merge", "--min-gap", "12", "-q", "-o", str(out), *inputs]) == 1
    assert capsys.readouterr().err == f"genotok: error: {out} exists; add --overwrite to replace it\n"
    assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    assert build_cli(["merge", "--min-gap", "12", "-q", "--overwrite", "-o", str(out), *inputs]) == 0
    assert _read(out) == ["chr1:0-40", "chr2:5-9", "chrX:1-2"]
    assert capsys.readouterr().err == ""


def test_consensus(tmp_path, inputs, capsys):
    out = tmp_path / "c.bed"
    assert build_cli(["consensus", "--min-inputs", "2", "-o", str(out), *inputs]) == 0
    assert _read(out) == [f"{c}:{s}-{e}" for c, s, e in naive.consensus(SETS, 2)]
    assert _read(out) == ["chr1:3-4", "chr1:6-7", "chr1:25-31"]
    assert build_cli(["consensus", "--min-input-fraction", "1", "--min-width", "2", "--overwrite",
                      "-o", str(out), *inputs]) == 0
    assert _read(out) == [f"{c}:{s}-{e}" for c, s, e in naive.consensus(SETS, 3, 2)]
    report = json.loads((tmp_path / "c.bed.json").read_text())
    assert report["params"] == {"min_count": None, "min_fraction": 1.0, "min_width": 2}
    assert report["stats"]["min_count"] == 3
    capsys.readouterr()
    assert build_cli(["consensus", "--min-inputs", "5", "--overwrite", "-o", str(out), *inputs]) == 0
    assert "genotok: warning: min_inputs 5 is more than the 3 inputs" in capsys.readouterr().err


def test_top_and_tile(tmp_path, inputs):
    cand = tmp_path / "cand.bed"
    cand.write_text("chr1\t0\t10\nchr1\t20\t30\nchr2\t0\t10\nchr9\t0\t5\n")
    out = tmp_path / "top.bed.gz"
    assert build_cli(["top", "--candidate", str(cand), "--max-regions", "2", "-q", "-o", str(out),
                      *inputs]) == 0
    assert _read(out) == ["chr1:0-10", "chr1:20-30"]
    sizes = tmp_path / "g.sizes"
    sizes.write_text("chr2\t15\nchr1\t10\n")
    tiles = tmp_path / "tiles.bed"
    assert build_cli(["tile", "--chrom-sizes", str(sizes), "--size", "10", "-q",
                      "-o", str(tiles)]) == 0
    assert _read(tiles) == ["chr1:0-10", "chr2:0-10", "chr2:10-15"]
    assert json.loads((tmp_path / "tiles.bed.json").read_text())["params"] == {"size": 10}


def test_inputs_from_a_file_list(tmp_path, inputs):
    lst = tmp_path / "inputs.txt"
    lst.write_text("\n".join(inputs) + "\n")
    out = tmp_path / "u.bed"
    assert build_cli(["merge", "-q", "--no-hash", "-o", str(out), f"@{lst}"]) == 0
    report = json.loads((tmp_path / "u.bed.json").read_text())
    assert [d["path"] for d in report["inputs"]] == inputs
    assert all("sha256" not in d for d in report["inputs"])


@pytest.mark.parametrize("method", [None, "tile", "merge", "consensus", "top"])
def test_help_has_examples(method, capsys):
    argv = ([method] if method else []) + ["--help"]
    assert build_cli(argv) == 0
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
    ["consensus", "--min-count", "2", "--min-inputs", "2", "-o", "u.bed", "a.bed"],  # old + new
    ["consensus", "--min-count", "0", "-o", "u.bed", "a.bed"],                       # old, checked
    ["tile", "--chrom-sizes", "g", "--size", "0", "-o", "u.bed"],
    ["tile", "--chrom-sizes", "g", "--size", "ten", "-o", "u.bed"],
    ["top", "--candidate", "c.bed", "-o", "u.bed", "a.bed"],       # no --max-regions
    ["frobnicate"],
])
def test_usage_errors_exit_2(argv, capsys):
    assert build_cli(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("genotok: error: ") and err.count("\n") == 1, err
    assert "genotok universe" in err and "Traceback" not in err


def test_out_flag_vocabulary(tmp_path, inputs, capsys):
    """-o and --out are the flag; --output (the old spelling) still works, with a warning."""
    for i, flag in enumerate(["-o", "--out", "--output"]):
        out = tmp_path / f"u{i}.bed"
        assert build_cli(["merge", "-q", flag, str(out), *inputs]) == 0
        assert _read(out) == ["chr1:0-8", "chr1:20-40", "chr2:5-9", "chrX:1-2"]
    assert capsys.readouterr().err == ""  # -q: no warnings either
    assert build_cli(["merge", "--output", str(tmp_path / "u3.bed"), *inputs]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "genotok: warning: --output is deprecated; use -o/--out"
    assert err[1].startswith("genotok: merge: 3 input(s)") and len(err) == 2


@pytest.mark.parametrize("method, old, new, value", [
    ("consensus", "--min-count", "--min-inputs", "2"),
    ("consensus", "--min-fraction", "--min-input-fraction", "0.5"),
    ("top", "--min-hits", "--min-inputs", "2"),
])
def test_old_cutoff_flags_still_work(tmp_path, inputs, capsys, method, old, new, value):
    """The flags before genotok 0.2 work until 0.3: hidden from --help, a note on stderr."""
    extra = ["--candidate", str(inputs[0]), "--max-regions", "3"] if method == "top" else []
    want, got = tmp_path / "new.bed", tmp_path / "old.bed"
    assert build_cli([method, "-q", new, value, *extra, "-o", str(want), *inputs]) == 0
    capsys.readouterr()
    assert build_cli([method, old, value, *extra, "-o", str(got), *inputs]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"genotok: warning: {old} is deprecated; use {new}"
    assert _read(got) == _read(want)
    assert build_cli([method, "--help"]) == 0
    text = capsys.readouterr().out
    assert new in text and old not in text


def test_threads_must_be_positive(tmp_path, inputs, capsys):
    for bad in ["0", "-3", "two"]:
        assert build_cli(["merge", "--threads", bad, "-o", str(tmp_path / "u.bed"), *inputs]) == 2
        err = capsys.readouterr().err
        assert err.startswith("genotok: error: argument --threads:") and err.count("\n") == 1
    assert not (tmp_path / "u.bed").exists()


def test_genotok_errors_exit_1_without_traceback(tmp_path, inputs, capsys):
    out = tmp_path / "u.bed"
    assert build_cli(["merge", "-o", str(out), str(tmp_path / "missing.bed")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("genotok: error:") and "missing.bed: no such file" in err
    assert "Traceback" not in err and not out.exists()
    sizes = tmp_path / "g.sizes"
    sizes.write_text("chr1\tten\n")
    assert build_cli(["tile", "--chrom-sizes", str(sizes), "--size", "5", "-o", str(out)]) == 1
    assert "g.sizes:1: length 'ten' of chr1 is not a non-negative integer" in capsys.readouterr().err
    assert build_cli(["merge", "-o", str(tmp_path / "no" / "dir" / "u.bed"), *inputs]) == 1
    err = capsys.readouterr().err
    assert err.startswith("genotok: error:") and "Traceback" not in err
