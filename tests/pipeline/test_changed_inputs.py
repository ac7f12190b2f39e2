"""An input that changes while pretokenize reads it: a fragment file read twice by
``rank="median"`` (its medians, then its tokens) must not give a corpus encoded with the
medians of another version of it; the run fails naming the file and writes no manifest."""

from __future__ import annotations

import pytest

from genotok import CellSpec, Normalize, RankByMedian, Tokenizer
from genotok.formats.corpus import MANIFEST
from genotok.pipeline import PipelineError, medians, pretokenize


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
