"""Fixtures shared by the training room's tests."""

from __future__ import annotations

import numpy as np
import pytest

from genotok import CorpusWriter


@pytest.fixture(scope="session")
def valued_corpus(tmp_path_factory):
    """``make(records, vocab_size)``: a corpus file (fingerprint ``"fp"``, a float32 value
    channel) of ``(ids, value, name)`` records, each record's values all ``value``."""
    def make(records, vocab_size: int):
        path = tmp_path_factory.mktemp("corpus") / "c.gtokc"
        with CorpusWriter(path, vocab_size=vocab_size, fingerprint="fp",
                          values_dtype="float32") as w:
            for ids, value, name in records:
                w.append(ids, name=name, values=np.full(len(ids), value, np.float32))
        return path
    return make
