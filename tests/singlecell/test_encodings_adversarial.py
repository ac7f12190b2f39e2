"""Adversarial inputs of the value encodings and condition tokens: each call gives the oracle's
answer or a clear error (a GenotokError, or the documented ValueError), never garbage."""

from __future__ import annotations

import numpy as np
import pytest

from genotok import Tokenizer
from genotok.errors import UniverseError

anndata = pytest.importorskip("anndata")
sp = pytest.importorskip("scipy.sparse")

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
