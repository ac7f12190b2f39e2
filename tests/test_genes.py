"""genotok.genes: vocabularies of named features (load, save, fingerprint, specials, errors)."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

from genotok import GeneSettings, GeneTokenizer
from genotok.genes import VocabularyError, read_mapping
from genotok.params import ParameterError

from ._shared import SHARED, shared

V1 = {"<pad>": 0, "<mask>": 1, "ENSG3": 2, "ENSG1": 3, "ENSG2": 4}


def test_specials_at_the_models_ids_and_none_forced():
    tok = GeneTokenizer(V1)
    assert tok.special_token_ids == {"pad": 0, "mask": 1}
    assert tok.cls_token_id is None and tok.eos_token_id is None and tok.unk_token_id is None
    tok2 = GeneTokenizer({**V1, "<cls>": 77, "<eos>": 5})
    assert (tok2.cls_token_id, tok2.eos_token_id, tok2.vocab_size) == (77, 5, 78)


def test_feature_ids_exclude_specials_and_unknowns():
    tok = GeneTokenizer(V1)
    assert tok.feature_ids(["ENSG1", "<pad>", "nope", "ENSG3"]).tolist() == [3, -1, -1, 2]


@pytest.mark.parametrize("fmt", ["json", "toml", "pkl"])
def test_dictionary_files(tmp_path, fmt):
    p = tmp_path / f"v.{fmt}"
    if fmt == "json":
        p.write_text(json.dumps(V1))
    elif fmt == "toml":
        p.write_text("[tokens]\n" + "".join(f'"{k}" = {v}\n' for k, v in V1.items()))
    else:
        p.write_bytes(pickle.dumps(V1))
    tok = GeneTokenizer.from_file(p)
    assert tok.get_vocab() == V1
    assert tok.fingerprint == GeneTokenizer(V1).fingerprint


def test_a_pickle_that_runs_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    p = tmp_path / "evil.pkl"
    p.write_bytes(pickle.dumps({"A": Evil()}))
    with pytest.raises(VocabularyError, match="evil.pkl.*refused"):
        read_mapping(p)


@pytest.mark.parametrize("vocab, match", [
    ({"A": 0, "B": 0}, "share id 0"),
    ({"A": -1}, "ids are integers"),
    ({"A": 1.5}, "ids are integers"),
    ({"A": True}, "ids are integers"),
    ({"A": 2**31}, "ids are integers"),
    ({}, "non-empty mapping"),
])
def test_bad_vocabularies(vocab, match):
    with pytest.raises(VocabularyError, match=match):
        GeneTokenizer(vocab)


def test_bad_files_name_the_file(tmp_path):
    p = tmp_path / "v.json"
    p.write_text("[1, 2]")
    with pytest.raises(VocabularyError, match="v.json: holds a list"):
        GeneTokenizer(p)
    p.write_text("{not json")
    with pytest.raises(VocabularyError, match="v.json: not a JSON"):
        GeneTokenizer(p)
    with pytest.raises(VocabularyError, match="special token.*<cls>"):
        GeneTokenizer(V1, special_tokens={"cls": "<cls>"})


def test_settings_are_validated():
    from genotok.params import ParameterError

    with pytest.raises(ParameterError):
        GeneSettings(unknown_features="keep")
    with pytest.raises(ParameterError, match="id_column must be a str or None, got 3"):
        GeneSettings(id_column=3)


def test_save_pretrained_round_trip(tmp_path):
    tok = GeneTokenizer({**V1, "<cls>": 9}, special_tokens={"pad": "<pad>", "cls": "<cls>"},
                        settings=GeneSettings("gene_ids", "drop"))
    d = tok.save_pretrained(tmp_path / "m")
    back = GeneTokenizer.from_pretrained(d)
    assert back.get_vocab() == tok.get_vocab()
    assert back.special_tokens == tok.special_tokens
    assert back.settings == tok.settings
    assert back.fingerprint == tok.fingerprint
    vocab = json.loads((d / "vocab.json").read_text())
    vocab["ENSG1"] = 99  # changed since: refused
    (d / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(VocabularyError, match="changed since"):
        GeneTokenizer.from_pretrained(d)


def test_fingerprint_depends_on_ids_and_specials():
    a = GeneTokenizer(V1).fingerprint
    assert GeneTokenizer(dict(reversed(list(V1.items())))).fingerprint == a  # order of the file
    assert GeneTokenizer({**V1, "ENSG1": 7}).fingerprint != a
    assert GeneTokenizer(V1, special_tokens={"pad": "<pad>"}).fingerprint != a


def test_decode_and_pad():
    tok = GeneTokenizer(V1)
    assert tok.decode([3, 0, 2], skip_special_tokens=True) == ["ENSG1", "ENSG3"]
    out = tok.pad([np.array([2, 3]), np.array([4])], padding=True, return_tensors="np")
    assert out["input_ids"].tolist() == [[2, 3], [4, 0]]
    for bad, match in [([99], "token id 99 is not in this vocabulary"),
                       ([2.5], "must be integers")]:
        with pytest.raises(ParameterError, match=match):
            tok.decode(bad)
    with pytest.raises(ParameterError, match="skip_special_tokens"):
        tok.decode([2], skip_special_tokens="no")


def test_geneformer_v1_dictionary():
    d = shared(SHARED / "data" / "real" / "geneformer" / "token_dictionary.json")
    tok = GeneTokenizer(d)
    assert len(tok) == 25_426 and tok.special_token_ids == {"pad": 0, "mask": 1}


def _laughs(levels: int) -> bytes:
    """A pickle of a few hundred bytes whose ``str(...)`` is 10**levels strings long."""
    out = bytearray(b"\x80\x02cbuiltins\nstr\n]X\x01\x00\x00\x00aa")
    for i in range(levels):
        out += b"q" + bytes([i]) + b"0](" + (b"h" + bytes([i])) * 10 + b"e"
    return bytes(out + b"\x85R.")


def _dtype_fields(levels: int) -> bytes:
    """A pickle whose ``numpy.dtype(...)`` converts a field list 10**levels times."""
    class Fields:
        def __reduce__(self):
            fields = [("a", "f8")]
            for _ in range(levels):
                fields = [(f"f{i}", fields) for i in range(10)]
            return (np.dtype, (fields,))

    return pickle.dumps({"A": Fields()}, protocol=2)


@pytest.mark.parametrize("raw, match", [
    (_laughs(9), "refused builtins.str"),           # was minutes and gigabytes of str()
    (_dtype_fields(8), "refused numpy.dtype"),        # was minutes in numpy.dtype
    (pickle.dumps({"A": 1})[:-1] + b"}\x94a.", "AttributeError"),  # was a bare AttributeError
    (b"\x80\x04\x95" + b"\xff" * 8 + b".", "not a JSON, TOML or pickled"),  # a FRAME past the end
], ids=["str-of-shared-lists", "dtype-of-shared-fields", "append-to-a-dict", "huge-frame"])
def test_a_pickle_that_amplifies_or_breaks_is_refused(tmp_path, raw, match):
    p = tmp_path / "bomb.pkl"
    p.write_bytes(raw)
    with pytest.raises(VocabularyError, match=f"bomb.pkl.*{match}"):
        read_mapping(p)


def test_a_numpy_scalar_pickle_still_reads(tmp_path):
    p = tmp_path / "np.pkl"
    p.write_bytes(pickle.dumps({"A": np.int64(3), "B": np.float32(2.5), "C": 4}))
    assert read_mapping(p) == {"A": 3, "B": 2.5, "C": 4}


def test_keys_that_are_one_name_are_refused(tmp_path):
    p = tmp_path / "k.pkl"
    p.write_bytes(pickle.dumps({1: 0, "1": 1}))  # was {'1': 1}: the id 0 silently lost
    with pytest.raises(VocabularyError, match="k.pkl.*'1' is listed twice"):
        GeneTokenizer(p)


def test_an_endless_or_deep_dictionary_file_is_refused(tmp_path, monkeypatch):
    import genotok.genes as genes

    monkeypatch.setattr(genes, "MAX_DICTIONARY_BYTES", 1 << 16)
    with pytest.raises(VocabularyError, match="/dev/zero: more than"):  # was: read forever
        read_mapping("/dev/zero")
    p = tmp_path / "deep.json"
    p.write_text("[" * 20_000 + "]" * 20_000)  # was a bare RecursionError
    with pytest.raises(VocabularyError, match="deep.json: not a JSON"):
        read_mapping(p)
