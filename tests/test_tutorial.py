"""docs/tutorial.ipynb runs top to bottom, shows its figures, and is committed without outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorial.ipynb"


def _run(timeout: float = 180) -> list:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "strip outputs"
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def _quiet(outputs: list) -> None:
    """No cell shows a warning or anything on stderr (red in Jupyter), and the compile notes
    are one line at most for the whole notebook."""
    stderr = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, stderr
    notes = [o.text for o in outputs if o.output_type == "stream" and "compiling" in o.text]
    assert sum(t.count("\n") for t in notes) <= 1, notes


def test_tutorial_runs_and_is_stripped():
    outputs = _run()
    assert not [o for o in outputs if o.output_type == "error"]
    _quiet(outputs)
    assert any("genotok-repr" in str(o.get("data", {})) for o in outputs)  # the HTML reprs show
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) >= 3, "the tutorial's plots must display (no Agg backend in a notebook)"


def test_each_plot_is_introduced_as_what_it_plots():
    """The text before the last two plots said "the cells" while one plotted the peak corpus:
    the markdown before a plot cell names what each of its plot calls draws."""
    import json
    import re

    cells = json.loads(NOTEBOOK.read_text())["cells"]
    text = ""
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            text = source
            continue
        for data in re.findall(r"plot\.\w+\((\w+)", source):
            assert data in text, (data, text)


@pytest.mark.slow
def test_tutorial_on_a_cold_kernel_cache_is_quiet(tmp_path, monkeypatch):
    """A first run compiles every kernel the tutorial uses: one tidy line, no warning."""
    monkeypatch.setenv("GENOTOK_KERNEL_CACHE", str(tmp_path / "kernels"))
    outputs = _run(timeout=900)
    assert not [o for o in outputs if o.output_type == "error"]
    _quiet(outputs)
