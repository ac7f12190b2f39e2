"""Condition tokens: vocabulary after the specials, save/load/corpus round trips, prepending."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import AnnDataOptions, CellSpec, Tokenizer
from genotok.errors import AnnDataError, UniverseError, UniverseMismatchError
from genotok.formats.corpus.reader import Corpus
from genotok.ragged import Ragged
from genotok.singlecell import tokenize_anndata
from genotok.singlecell.conditions import condition_ids, condition_tokens, prepend_ids

anndata = pytest.importorskip("anndata")
sp = pytest.importorskip("scipy.sparse")

PEAKS = ["chr1:0-100", "chr1:200-300", "chr2:0-50"]


def _adata():
    X = sp.csr_matrix(np.array([[1, 0, 2], [0, 3, 0], [0, 0, 0], [4, 4, 0]], np.float32))
    obs = pd.DataFrame({"batch": pd.Categorical(["d2", "d1", "d2", "d3"],
                                                categories=["d2", "d1", "d3"]),
                        "assay": ["ATAC", "ATAC", "multiome", np.nan]},
                       index=[f"c{i}" for i in range(4)])
    return anndata.AnnData(X, obs=obs, var=pd.DataFrame(index=PEAKS))


def test_builder_orders_and_skips_missing(tmp_path):
    a = _adata()
    want = ["<assay=ATAC>", "<assay=multiome>", "<batch=d2>", "<batch=d1>", "<batch=d3>"]
    assert condition_tokens(a, ["assay", "batch"]) == want
    assert condition_tokens(a.obs, ["assay", "batch"]) == want
    a.write_h5ad(tmp_path / "a.h5ad")
    assert condition_tokens(tmp_path / "a.h5ad", ["assay", "batch"]) == want
    assert condition_tokens(a, "batch", template="[{column}:{value}]")[0] == "[batch:d2]"
    with pytest.raises(AnnDataError, match="no column 'donor'"):
        condition_tokens(a, ["donor"])
    with pytest.raises(ValueError, match="repeat"):
        condition_tokens(a, ["batch", "batch"])


def test_vocabulary_after_specials():
    plain = Tokenizer(PEAKS)
    tok = Tokenizer(PEAKS, extra_tokens=["<batch=d1>", "<batch=d2>"])
    assert tok.vocab_size == plain.vocab_size + 2
    assert tok.universe.special_token_ids == plain.universe.special_token_ids
    assert tok.encode(["chr1:50-60", "chr2:10-20"]).tolist() == [0, 2]
    assert tok.decode([0, 3, 10, 11]) == ["chr1:0-100", "<unk>", "<batch=d1>", "<batch=d2>"]
    assert tok.universe.convert_tokens_to_ids(["<batch=d2>", "<batch=zz>"]) == [11, 3]
    assert tok.universe.fingerprint != plain.universe.fingerprint
    assert Tokenizer(PEAKS, extra_tokens=[]).universe.fingerprint == plain.universe.fingerprint
    for bad in (["<unk>"], ["a", "a"], [""]):
        with pytest.raises(UniverseError):
            Tokenizer(PEAKS, extra_tokens=bad)


def test_save_load_round_trip_and_fingerprint(tmp_path):
    tok = Tokenizer(PEAKS, extra_tokens=["<batch=d1>", "<assay=ATAC>"])
    d = tok.save_pretrained(tmp_path / "model")
    back = Tokenizer.from_pretrained(d)
    assert back.universe.extra_tokens == ("<batch=d1>", "<assay=ATAC>")
    assert back.universe.fingerprint == tok.universe.fingerprint
    assert back.decode([11]) == ["<assay=ATAC>"]
    cfg = tmp_path / "model" / "tokenizer.toml"
    cfg.write_text(cfg.read_text().replace("<assay=ATAC>", "<assay=RNA>"))
    with pytest.raises(UniverseMismatchError):  # an edited condition vocabulary is refused
        Tokenizer.from_pretrained(d)


def oracle(a, tok, prepend, unknown_id):
    """Plain tokens of each cell with its condition ids in front (value 0)."""
    rows = tokenize_anndata(a, tok, CellSpec(values=True))
    vocab = tok.universe.get_vocab()
    out_ids, out_vals = [], []
    for i in range(len(rows)):
        head = []
        for c in prepend:
            v = a.obs[c].iloc[i]
            head.append(unknown_id if pd.isna(v) else vocab.get(f"<{c}={v}>", unknown_id))
        out_ids.append(head + rows[i].tolist())
        out_vals += [0.0] * len(head) + rows.row_values(i).tolist()
    return out_ids, np.asarray(out_vals, np.float32)


def test_prepend_memory_backed_corpus(tmp_path):
    a = _adata()
    train = a[:3]
    tok = Tokenizer(PEAKS, extra_tokens=condition_tokens(train, ["assay", "batch"]))
    prepend = ["assay", "batch"]
    want_ids, want_vals = oracle(a, tok, prepend, tok.universe.unk_token_id)
    got = tokenize_anndata(a, tok, CellSpec(prepend=prepend, values=True))
    assert got.to_list() == want_ids
    np.testing.assert_array_equal(got.values, want_vals)
    # the unseen batch d3 and the missing assay of c3 became <unk>
    assert tok.decode(got[3][:2]) == ["<unk>", "<unk>"]
    path = tmp_path / "a.h5ad"
    a.write_h5ad(path)
    assert tokenize_anndata(path, tok, CellSpec(prepend=prepend, values=True),
                            read=AnnDataOptions(chunk_rows=1)) == got
    c = tokenize_anndata(path, tok, CellSpec(prepend=prepend, values=True),
                         read=AnnDataOptions(chunk_rows=3), out=tmp_path / "c.gtokc")
    assert c.to_ragged(values=True) == got
    assert c.header["extra"]["anndata"]["condition_tokens"] == list(tok.universe.extra_tokens)
    assert c.header["extra"]["anndata"]["prepend"] == prepend
    Corpus.open(tmp_path / "c.gtokc", expect=tok.universe)
    other = Tokenizer(PEAKS, extra_tokens=["<batch=d1>"])
    with pytest.raises(UniverseMismatchError):
        Corpus.open(tmp_path / "c.gtokc", expect=other.universe)


def test_unknown_condition_error_and_options():
    a = _adata()
    tok = Tokenizer(PEAKS, extra_tokens=condition_tokens(a[:3], ["batch"]))
    with pytest.raises(AnnDataError, match="'d3' has no condition token"):
        tokenize_anndata(a, tok, CellSpec(prepend=["batch"], condition_unknown="error"))
    with pytest.raises(ValueError, match="condition_unknown"):
        tokenize_anndata(a, tok, CellSpec(prepend=["batch"], condition_unknown="skip"))
    # a region token string is not a condition token (nor a column's tokens)
    with pytest.raises(AnnDataError, match="no condition token of column 'x'"):
        condition_ids({"x": ["chr1"]}, tok, ["x"], template="{value}:0-100")


def test_prepend_ids_by_hand():
    rows = Ragged(np.array([5, 6, 7], np.uint32), np.array([0, 2, 2, 3]),
                  np.array([1.0, 2.0, 3.0], np.float32))
    out = prepend_ids(rows, np.array([[9, 8], [9, 9], [1, 2]]))
    assert out.to_list() == [[9, 8, 5, 6], [9, 9], [1, 2, 7]]
    assert out.values.tolist() == [0, 0, 1, 2, 0, 0, 0, 0, 3]
    assert out.data.dtype == np.uint32
    with pytest.raises(ValueError, match="rows"):
        prepend_ids(rows, np.zeros((2, 1), np.int64))



category = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "zz"]))


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(category, min_size=1, max_size=8), seen=st.sets(st.sampled_from("abc"), min_size=1),
       assay=st.sampled_from(["ATAC", "multiome"]), order=st.booleans())
def test_prepend_random_obs_matches_oracle(batch, seen, assay, order):
    n = len(batch)
    rng = np.random.default_rng(n)
    X = sp.csr_matrix((rng.random((n, 3)) < 0.5).astype(np.float32))
    obs = pd.DataFrame({"batch": np.array(batch, dtype=object), "assay": [assay] * n},
                       index=[f"c{i}" for i in range(n)])
    a = anndata.AnnData(X, obs=obs, var=pd.DataFrame(index=PEAKS))
    extra = [f"<batch={v}>" for v in sorted(seen)] + ["<assay=ATAC>"]
    tok = Tokenizer(PEAKS, extra_tokens=extra)
    prepend = ["assay", "batch"] if order else ["batch", "assay"]
    want_ids, want_vals = oracle(a, tok, prepend, tok.universe.unk_token_id)
    got = tokenize_anndata(a, tok, CellSpec(prepend=prepend, values=True))
    assert got.to_list() == want_ids
    np.testing.assert_array_equal(got.values, want_vals)
    decoded = tok.batch_decode(got)
    for i, v in enumerate(batch):
        want = f"<batch={v}>" if v in seen else "<unk>"
        assert decoded[i][prepend.index("batch")] == want


def test_cls_before_conditions(tmp_path):
    a = _adata()
    tok = Tokenizer(PEAKS, extra_tokens=condition_tokens(a, ["batch"]))
    plain = tokenize_anndata(a, tok)
    got = tokenize_anndata(a, tok, CellSpec(prepend=["batch"], add_cls=True))
    cls = tok.universe.cls_token_id
    batch_ids = condition_ids(a.obs, tok, ["batch"])[:, 0]
    assert got.to_list() == [[cls, int(b)] + row.tolist() for b, row in zip(batch_ids, plain)]
    only = tokenize_anndata(a, tok, CellSpec(add_cls=True), out=tmp_path / "c.gtokc")
    assert only.to_ragged().to_list() == [[cls] + row.tolist() for row in plain]
    assert only.header["extra"]["anndata"]["add_cls"] is True


def test_one_spelling_for_every_path_and_dtype(tmp_path):
    """Issue 32: nullable Int64 with a missing value, datetime64 and bytes obs columns became
    <unk> for every cell in memory (condition_tokens and prepend= spelled them differently),
    while the .h5ad path was right."""
    import anndata
    import pandas as pd

    from genotok import Tokenizer
    from genotok.singlecell.conditions import condition_ids, condition_tokens
    from genotok.singlecell.sources import _obs_reader

    obs = pd.DataFrame({"n": pd.array([1, None, 2], dtype="Int64"),
                        "d": pd.to_datetime(["2020-01-01", "2021-05-02", "2020-01-01"]),
                        "b": [b"x", b"y", b"x"]}, index=["c0", "c1", "c2"])
    a = anndata.AnnData(np.zeros((3, 1), np.float32), obs=obs)
    cols = ["n", "d", "b"]
    toks = condition_tokens(a, cols)
    assert toks == ["<n=1>", "<n=2>", "<d=2020-01-01 00:00:00>", "<d=2021-05-02 00:00:00>",
                    "<b=x>", "<b=y>"]
    tok = Tokenizer(["chr1:0-100"], extra_tokens=toks)
    want = [[8, 10, 12], [tok.unk_token_id, 11, 13], [9, 10, 12]]  # only the NA is <unk>
    assert condition_ids(a.obs, tok, cols).tolist() == want
    assert condition_ids(_obs_reader(a, None, cols)(0, 3)[1], tok, cols).tolist() == want
    p = tmp_path / "a.h5ad"
    anndata.AnnData(np.zeros((3, 1), np.float32), obs=obs[["n"]]).write_h5ad(p)  # (no dates)
    assert condition_tokens(str(p), ["n"]) == toks[:2]


def test_spellings_do_not_collide_across_columns():
    """Issue 32 item 14: column 'assay' with value 'x=1' and column 'assay=x' with value '1'
    were both '<assay=x=1>', so one token meant two conditions. '%', '=', '<', '>' are escaped
    in values and column names."""
    obs = pd.DataFrame({"assay": ["x=1", "a<b>"], "assay=x": [1, 1]}, index=["c0", "c1"])
    toks = condition_tokens(obs, ["assay", "assay=x"])
    assert toks == ["<assay=a%3Cb%3E>", "<assay=x%3D1>", "<assay%3Dx=1>"]
    assert len(set(toks)) == len(toks)
    tok = Tokenizer(PEAKS, extra_tokens=toks)
    ids = condition_ids(obs, tok, ["assay", "assay=x"], unknown="error")
    assert tok.decode(ids[0].tolist()) == ["<assay=x%3D1>", "<assay%3Dx=1>"]
    assert condition_tokens(pd.DataFrame({"p": ["5%3D", "5="]}), ["p"]) == ["<p=5%253D>",
                                                                          "<p=5%3D>"]


def test_prepend_without_condition_tokens_refused():
    """Issue 32 item 14: CellSpec(prepend=...) with a tokenizer made without its condition
    tokens gave every cell <unk>, silently."""
    a = _adata()
    with pytest.raises(AnnDataError, match=r"no condition token of column 'batch'.*"
                                           r"extra_tokens=condition_tokens\(adata, \['batch'\]\)"):
        tokenize_anndata(a, Tokenizer(PEAKS), spec=CellSpec(prepend=["batch"]))
    half = Tokenizer(PEAKS, extra_tokens=condition_tokens(a, ["assay"]))
    with pytest.raises(AnnDataError, match="column 'batch'"):
        condition_ids(a.obs, half, ["assay", "batch"])
    unseen = Tokenizer(PEAKS, extra_tokens=["<batch=d9>"])  # a column's tokens, none seen: <unk>
    assert condition_ids(a.obs, unseen, ["batch"]).ravel().tolist() == [unseen.unk_token_id] * 4


VAR = ["chr1:0-100", "chr1:100-200", "chr1:200-300"]


# ------------------------------------------------------------------------- condition tokens
def test_control_characters_in_condition_tokens_round_trip(tmp_path):
    """A category with a newline (or another control character) made a tokenizer.toml that
    could not be read back."""
    toks = ["<c=new\nline>", "<c=tab\there>", "<c=cr\r>", "<c=del\x7f>", '<c=q"\\>', "<c=ünï 😀>"]
    tok = Tokenizer(VAR, extra_tokens=toks)
    tok.save_pretrained(tmp_path / "t")
    back = Tokenizer.from_pretrained(tmp_path / "t")
    assert back.universe.extra_tokens == tuple(toks)
    assert back.universe.fingerprint == tok.universe.fingerprint
    ids = list(range(len(VAR) + 7, len(VAR) + 7 + len(toks)))
    assert back.decode(ids) == toks


def test_nul_in_an_extra_token_is_refused():
    """NUL joins the extra tokens in the fingerprint: ["a\\0b", "c"] and ["a", "b\\0c"] had the
    same fingerprint (and vocabulary size) with other ids."""
    with pytest.raises(UniverseError, match="NUL"):
        Tokenizer(VAR, extra_tokens=["<c=a>\0<c=b>", "<c=c>"])
    assert Tokenizer(VAR, extra_tokens=["<c=a>"]).vocab_size == len(VAR) + 8


def test_extra_tokens_given_as_one_string_are_refused(tmp_path):
    """extra_tokens="<batch=a>" (or the same in a hand-written tokenizer.toml) became five
    one-character tokens '<', 'b', ... silently."""
    with pytest.raises(UniverseError, match="a list of strings"):
        Tokenizer(VAR, extra_tokens="<batch=a>")
    tok = Tokenizer(VAR, extra_tokens=["<batch=a>"])
    p = tok.save_config(tmp_path / "t.toml")
    text = p.read_text()
    assert 'extra_tokens = [\n    "<batch=a>",\n]' in text  # as tomli-w writes it
    p.write_text(text.replace('extra_tokens = [\n    "<batch=a>",\n]', 'extra_tokens = "<batch=a>"'))
    with pytest.raises(UniverseError, match="extra_tokens must be an array, got str"):
        Tokenizer.from_config(p)


def test_prepend_as_one_string_is_one_column(tmp_path):
    """prepend="batch" was read as the columns 'b', 'a', 't', 'c', 'h' (condition_tokens
    takes a string as one column); condition_unknown was checked only at the first cell."""
    import pandas as pd

    a = anndata.AnnData(sp.csr_matrix(np.ones((2, 3))),
                        obs=pd.DataFrame({"batch": ["x", "y"]}, index=["c0", "c1"]),
                        var=pd.DataFrame(index=VAR))
    tok = Tokenizer(VAR, extra_tokens=condition_tokens(a, "batch"))
    want = tokenize_anndata(a, tok, CellSpec(prepend=["batch"]))
    assert [r[0] for r in want.to_list()] == [10, 11]
    assert tokenize_anndata(a, tok, CellSpec(prepend="batch")) == want
    c = tokenize_anndata(a, tok, CellSpec(prepend="batch"), out=tmp_path / "c.gtokc")
    assert c.to_ragged() == want
    assert c.header["extra"]["anndata"]["prepend"] == ["batch"]
    with pytest.raises(ValueError, match="condition_unknown must be one of"):
        tokenize_anndata(a[:0], tok, CellSpec(prepend="batch", condition_unknown="skip"))
    with pytest.raises(ValueError, match="the columns repeat"):
        tokenize_anndata(a, tok, CellSpec(prepend=["batch", "batch"]), out=tmp_path / "d.gtokc")
    assert not (tmp_path / "d.gtokc").exists()


def test_an_extra_token_named_like_a_region_is_refused():
    """An extra token 'chr1:0-100' took the region's string in the vocabulary: the region's
    name then converted to the extra id (convert_tokens_to_ids(convert_ids_to_tokens([0])))."""
    with pytest.raises(UniverseError, match="'chr1:0-100' is the name of a region"):
        Tokenizer(VAR, extra_tokens=["<b=x>", "chr1:0-100"])
    tok = Tokenizer(VAR, extra_tokens=["chr1:0-101", "<b=chr1:0-100>"])  # not region names
    assert tok.convert_tokens_to_ids(tok.convert_ids_to_tokens([0, 10, 11])) == [0, 10, 11]
