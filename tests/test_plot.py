"""genotok.plot renders with the Agg backend."""

from __future__ import annotations

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import genotok  # noqa: E402
from genotok import plot  # noqa: E402


def test_plots_render_to_png(tmp_path):
    ex = genotok.examples_dir()
    tok = genotok.Tokenizer.from_bed(ex / "universe.bed")
    files = sorted((ex / "peaks").iterdir())
    rows = tok.encode_batch([str(f) for f in files], ragged=True)
    for name, ax in {
        "lengths": plot.record_lengths(rows),
        "frequency": plot.token_frequency(rows, tok),
        "coverage": plot.universe_coverage(list(rows), tok),
        "overlaps": plot.overlap_counts(tok, str(files[0])),
    }.items():
        out = tmp_path / f"{name}.png"
        ax.figure.savefig(out)
        assert out.stat().st_size > 1000 and ax.get_title()
        matplotlib.pyplot.close(ax.figure)
