"""genotok.plot renders with the Agg backend, and every label fits in its figure."""

from __future__ import annotations

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import genotok  # noqa: E402
from genotok import plot  # noqa: E402


@pytest.fixture(scope="module")
def drawn():
    ex = genotok.examples_dir()
    tok = genotok.Tokenizer.from_bed(ex / "universe.bed")
    files = sorted((ex / "peaks").iterdir())
    rows = tok.encode_batch([str(f) for f in files], ragged=True)
    big = [np.tile(r, 400) for r in rows]  # counts in the thousands: separators show
    axes = {
        "lengths": plot.record_lengths(big),
        "frequency": plot.token_frequency(rows, tok),
        "frequency_big": plot.token_frequency(big, tok, top=50),
        "coverage": plot.universe_coverage(list(rows), tok),
        "overlaps": plot.overlap_counts(tok, str(files[0])),
    }
    yield axes
    for ax in axes.values():
        matplotlib.pyplot.close(ax.figure)


def test_plots_render_to_png(drawn, tmp_path):
    for name, ax in drawn.items():
        out = tmp_path / f"{name}.png"
        ax.figure.savefig(out)
        assert out.stat().st_size > 1000 and ax.get_title()


def _shown_ticks(axis):
    """Tick labels matplotlib draws: those of ticks within the view limits."""
    lo, hi = sorted(axis.get_view_interval())
    return [t.label1 for t in axis.get_major_ticks()
            if lo - 1e-9 <= t.get_loc() <= hi + 1e-9 and t.label1.get_visible()]


def _texts(ax):
    labels = [ax.xaxis.label, ax.yaxis.label, ax.title]
    return [t for t in labels + _shown_ticks(ax.xaxis) + _shown_ticks(ax.yaxis) if t.get_text()]


def test_every_label_fits_in_the_figure(drawn):
    # "tokens per record" and "queries" used to be cut off at the figure's edge
    for name, ax in drawn.items():
        fig = ax.figure
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        for t in _texts(ax):
            e = t.get_window_extent(renderer)
            assert (e.x0 >= box.x0 - 1 and e.y0 >= box.y0 - 1 and e.x1 <= box.x1 + 1
                    and e.y1 <= box.y1 + 1), f"{name}: {t.get_text()!r} is clipped ({e} vs {box})"
            assert t.get_fontsize() >= 7, f"{name}: {t.get_text()!r} is too small to read"


def test_token_frequency_ticks_do_not_overlap(drawn):
    for name in ("frequency", "frequency_big"):
        ax = drawn[name]
        ax.figure.canvas.draw()
        r = ax.figure.canvas.get_renderer()
        boxes = sorted((t.get_window_extent(r) for t in _shown_ticks(ax.yaxis) if t.get_text()),
                       key=lambda b: b.y0)
        assert len(boxes) > 5
        assert all(a.y1 <= b.y0 + 0.5 for a, b in zip(boxes, boxes[1:])), f"{name}: ticks overlap"


def test_counts_have_thousands_separators(drawn):
    ax = drawn["lengths"]
    ax.figure.canvas.draw()
    ticks = [t.get_text() for t in _shown_ticks(ax.xaxis) + _shown_ticks(ax.yaxis)]
    assert any("," in t for t in ticks), ticks


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(genotok.GenotokError, match=r"pip install 'genotok\[plot\]'"):
        plot.record_lengths([[1, 2]])


@pytest.mark.parametrize("draw", ["lengths", "overlaps"])
def test_count_axes_have_whole_number_ticks(draw):
    """Small counts gave ticks 0, 0.5, 1, …, shown as 0, 0, 1, 2, 2, 2, 3 (record_lengths) or
    as fractions on an integer axis (overlap_counts)."""
    tok = genotok.Tokenizer(["chr1:0-10", "chr1:10-20", "chr1:20-30"])
    ax = (plot.record_lengths([[1, 2], [3], [1, 2, 3]]) if draw == "lengths" else
          plot.overlap_counts(tok, ["chr1:5-15", "chr1:0-2", "chr2:0-5"]))
    ax.figure.canvas.draw()
    for axis in (ax.xaxis, ax.yaxis):
        values = [v for v in axis.get_majorticklocs()
                  if axis.get_view_interval()[0] <= v <= axis.get_view_interval()[1]]
        assert values and all(float(v).is_integer() for v in values), values
        labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
        assert len(labels) == len(set(labels)), labels
    matplotlib.pyplot.close(ax.figure)
