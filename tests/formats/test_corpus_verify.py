"""Corpus.verify cannot be bypassed: a malformed header, a missing digest, the CLI's verify that
reports instead of a traceback (issue 19)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genotok import Corpus, GtokFormatError

from ._corpus_campaign import fields, make_corpus, resign

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# ------------------------------------------------------------------ verify cannot be bypassed
def _header_case(tmp_path, change):
    p = tmp_path / "c.gtokc"
    make_corpus(p)
    p.write_bytes(resign(p.read_bytes(), header=change))
    return p


def _set(key, value):
    return lambda h: h.__setitem__(key, value)


@pytest.mark.parametrize("change, pattern", [
    (lambda h: h.pop("checksums"), "integrity section"),
    (_set("checksums", None), "integrity section"),
    (_set("checksums", []), "integrity section"),
    (lambda h: h["checksums"].pop("tokens"), "checksums.tokens is missing"),
    (lambda h: h["checksums"].__setitem__("offsets", 7), "checksums.offsets"),
    (lambda h: h["checksums"].__setitem__("records", None), "checksums.records"),
    (lambda h: h["checksums"].__setitem__("values", None), "checksums.values"),
    (_set("vocab_size", float("nan")), "vocab_size nan"),
    (_set("vocab_size", float("inf")), "vocab_size inf"),
    (_set("vocab_size", "300"), "vocab_size 300 is not"),
    (_set("vocab_size", True), "vocab_size True"),
    (_set("vocab_size", 0), "vocab_size 0"),
    (_set("vocab_size", 2**40), "vocab_size"),
    (lambda h: h.pop("vocab_size"), "vocab_size None"),
    (_set("fingerprint", 5), "fingerprint"),
    (_set("n_records", "12"), "header counts"),
    (_set("n_tokens", 1.5), "header counts"),
    (_set("version", [1, 7]), "version"),
    (_set("version", "1.0"), "version"),
    (_set("format", "other"), "format"),
    (_set("special_tokens", {"pad": 10**6}), "special_tokens"),
    (_set("special_tokens", []), "special_tokens"),
    (_set("meta_columns", [1]), "meta_columns"),
    (_set("settings", "x"), "settings"),
    (_set("checksum", "md5"), "checksum algorithm"),
    (_set("created", 5), "created is not a string"),
    (_set("sources", ["x"]), "sources holds"),
    (_set("extra", []), "extra is not a JSON object"),
])
def test_malformed_header_is_refused(tmp_path, change, pattern):
    p = _header_case(tmp_path, change)
    with pytest.raises(GtokFormatError, match=pattern):
        Corpus.open(p)
    with pytest.raises(GtokFormatError, match=pattern):
        Corpus.open(p, trusted=True)


def test_verify_fails_without_a_header_digest(tmp_path):
    p = tmp_path / "c.gtokc"
    make_corpus(p)
    raw = bytearray(p.read_bytes())
    raw[88:96] = bytes(8)  # zero the header digest ...
    p.write_bytes(bytes(raw))
    assert any("no digest" in x for x in Corpus.open(p).verify())
    # ... then change every token and recompute the section checksums: verify still fails
    f = fields(bytes(raw))
    raw[f["tok_off"]:f["tok_off"] + 2 * f["t"]] = np.full(f["t"], 7, "<u2").tobytes()
    p.write_bytes(resign(bytes(raw)))
    raw = bytearray(p.read_bytes())
    raw[88:96] = bytes(8)
    p.write_bytes(bytes(raw))
    problems = Corpus.open(p).verify()
    assert problems and any("no digest" in x for x in problems)
    with pytest.raises(GtokFormatError, match="no digest"):
        Corpus.open(p, verify=True)


def test_cli_verify_reports_instead_of_a_traceback(tmp_path):
    p = _header_case(tmp_path, _set("vocab_size", float("nan")))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "genotok", "verify", str(p)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "vocab_size nan" in proc.stderr
