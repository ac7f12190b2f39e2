"""BED files laid out to take each path from a file to the kernels, against gtars and the oracle.

A file in the gtars order (chromosome name by bytes, then start, stably) reaches the kernels by
one of these paths (``Tokenizer._query_order``): whole chromosome runs moved
(``kernels.sort.runs_order``; ``sorted_runs`` fills up to 255 run bounds in one pass, a second
pass beyond), a stable sort (``sort_regions``: NumPy below ``MIN_BUCKET`` rows, the bucket radix
sort above) when a chromosome is split over two runs or a run steps back, and chromosome codes
translated by ``kernels.names.translate_codes`` from 65,536 rows on. The shapes here come from a
differential campaign of genotok against gtars 0.10 on random files of these layouts; gtars'
checks skip when it is not installed, the oracle's (``tests/naive_tokenizer.py``) always run.
"""

from __future__ import annotations

import numpy as np
import pytest

from genotok import Tokenizer

from . import naive_tokenizer


def _write(path, rows):
    path.write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in rows))
    return path


def _gtars():
    return pytest.importorskip("gtars.tokenizers", reason="gtars is not installed")


# ---------------------------------------------------------------------------------- regressions
def test_ailist_on_a_sorted_file_with_at_most_one_id(tmp_path):
    """tokenizer_type="ailist", a file that takes the sort path and yields 0 or 1 ids: the
    query indices of the sorted rows were mapped back through a permutation that was not kept
    (IndexError)."""
    _write(tmp_path / "u.bed", [("chr1", 100, 200), ("chr1", 150, 300), ("chr2", 0, 50)])
    (tmp_path / "a.toml").write_text('universe = "u.bed"\ntokenizer_type = "ailist"\n')
    tok = Tokenizer(str(tmp_path / "a.toml"))
    one = _write(tmp_path / "one.bed", [("chr1", 250, 260), ("chr1", 10, 20)])
    none = _write(tmp_path / "none.bed", [("chr2", 60, 70), ("chr1", 10, 20)])
    assert tok.encode(str(one)).tolist() == [1]
    assert tok.encode(str(none)).tolist() == [tok.unk_token_id]
    assert [a.tolist() for a in tok.encode_batch([str(one), str(none)])] == [[1], [3]]
