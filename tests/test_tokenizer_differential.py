"""Differential checks: genotok vs `bedtools intersect -wa -wb` and vs gtars on random inputs."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from collections import Counter
import numpy as np
import pytest

from genotok import RegionSet, Tokenizer, TokenizerSettings

N_CASES = 40


def _random_sets(rng, n_u, n_q):
    chroms = np.array(["chr1", "chr2", "chr10", "chrUn_KI270742v1"])
    us = rng.integers(0, 20_000, n_u)
    u = list(zip(chroms[rng.integers(0, 4, n_u)], us, us + rng.integers(1, 3_000, n_u)))
    u += u[: n_u // 10]  # duplicates
    u += [(c, s + 10, max(s + 11, e - 10)) for c, s, e in u[: n_u // 5]]  # nested
    qs = rng.integers(0, 20_000, n_q)
    q = list(zip(np.append(chroms, "chrZ")[rng.integers(0, 5, n_q)], qs, qs + rng.integers(1, 2_000, n_q)))
    q += [(c, e, e + 50) for c, s, e in u[:20]]  # touching ends
    return [(str(c), int(s), int(e)) for c, s, e in u], [(str(c), int(s), int(e)) for c, s, e in q]


@pytest.mark.skipif(shutil.which("bedtools") is None, reason="bedtools is not installed")
def test_pairs_equal_bedtools(tmp_path):
    rng = np.random.default_rng(0)
    for case in range(N_CASES):
        u, q = _random_sets(rng, int(rng.integers(1, 300)), int(rng.integers(0, 300)))
        (tmp_path / "u.bed").write_text("".join(f"{c}\t{s}\t{e}\t{i}\n" for i, (c, s, e) in enumerate(u)))
        (tmp_path / "q.bed").write_text("".join(f"{c}\t{s}\t{e}\t{i}\n" for i, (c, s, e) in enumerate(q)))
        out = subprocess.run(["bedtools", "intersect", "-a", str(tmp_path / "q.bed"), "-b",
                              str(tmp_path / "u.bed"), "-wa", "-wb"], capture_output=True,
                             text=True, check=True).stdout
        first = {}  # gtars' vocabulary: unique regions in order of first appearance
        for r in u:
            first.setdefault(r, len(first))
        # bedtools reports every duplicate line; genotok reports a duplicated region once
        theirs = Counter((int(f[3]), first[(f[4], int(f[5]), int(f[6]))])
                         for f in (line.split("\t") for line in out.splitlines()))
        theirs = Counter(dict.fromkeys(theirs, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            tok = Tokenizer(RegionSet.from_tuples(u), settings=TokenizerSettings(unknown="drop"))
        ov = tok.overlaps([RegionSet.from_tuples(q)])
        ours = Counter(zip(ov.query.tolist(), ov.ids.tolist()))
        assert ours == theirs, f"case {case}"


def test_ids_equal_gtars_on_random_universes(tmp_path):
    gtars = pytest.importorskip("gtars.tokenizers")
    rng = np.random.default_rng(1)
    for case in range(N_CASES):
        u, q = _random_sets(rng, int(rng.integers(1, 300)), int(rng.integers(1, 300)))
        u = list(dict.fromkeys(u))  # gtars corrupts its vocabulary on duplicates (a known defect)
        (tmp_path / "u.bed").write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in u))
        (tmp_path / "q.bed").write_text("".join(f"{c}\t{s}\t{e}\n" for c, s, e in q))
        ours = Tokenizer.from_bed(tmp_path / "u.bed").encode(str(tmp_path / "q.bed")).tolist()
        theirs = list(gtars.Tokenizer.from_bed(str(tmp_path / "u.bed"))(str(tmp_path / "q.bed"))["input_ids"])
        assert ours == theirs, f"case {case}"
