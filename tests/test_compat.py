"""genotok.compat: gtars' and geniml's calls run with genotok by changing the imports only, with
their return shapes and gtars' ids."""

from __future__ import annotations

from collections import Counter

import pytest

import genotok
from genotok.compat import (ITTokenizer, Region2VecDataset, Tokenizer, tokenize_fragment_file,
                            write_tokens_to_gtok)

EX = genotok.examples_dir()


def test_tokenize_fragment_file_equals_gtars_per_cell():
    gtars = pytest.importorskip("gtars.tokenizers")
    theirs = gtars.tokenize_fragment_file(str(EX / "fragments.tsv.gz"),
                                          gtars.Tokenizer.from_bed(str(EX / "universe.bed")))
    ours = tokenize_fragment_file(str(EX / "fragments.tsv.gz"),
                                  Tokenizer.from_bed(str(EX / "universe.bed")))
    assert set(ours) == set(theirs)
    assert all(Counter(ours[k]) == Counter(theirs[k]) for k in theirs)
    assert all(isinstance(v, list) and all(type(i) is int for i in v) for v in ours.values())


def test_geniml_pretokenization_tutorial(tmp_path):
    tok = ITTokenizer(str(EX / "universe.bed"))
    files = sorted((EX / "peaks").iterdir())
    for i, bed in enumerate(files):
        tokens = tok.tokenize(str(bed))
        (write_tokens_to_gtok(tokens.ids, tmp_path / f"{i}.gtok") if i % 2 else
         write_tokens_to_gtok(str(tmp_path / f"{i}.gtok"), tokens.to_ids()))
    ds = Region2VecDataset(tmp_path, shuffle=False)
    want = [genotok.Tokenizer.from_bed(EX / "universe.bed").encode(f).tolist() for f in files]
    assert list(ds) == want
    assert sorted(Region2VecDataset(tmp_path)[0]) == sorted(want[0])


def test_write_tokens_to_gtok_needs_one_path(tmp_path):
    with pytest.raises(genotok.GtokFormatError, match="a path and a list"):
        write_tokens_to_gtok([1], [2])


def test_region2vec_dataset_refuses_an_empty_folder(tmp_path):
    with pytest.raises(genotok.GtokFormatError, match="no .gtok files"):
        Region2VecDataset(tmp_path)
