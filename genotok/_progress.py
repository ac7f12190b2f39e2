"""One progress bar for every long-running loop (pipeline, single cell, universe builds).

tqdm draws it (a required dependency): a widget in a Jupyter kernel that has ipywidgets, a text
bar elsewhere. genotok chooses the class itself, when the first bar is made, instead of
importing :mod:`tqdm.auto`, which warns (a red ``TqdmWarning`` in the cell) at
``import genotok`` in a notebook without ipywidgets.
:func:`progress` only adds genotok's two switches: ``enabled`` and ``tty_only``.
"""

from __future__ import annotations

import importlib.util
import sys

from ._config import in_notebook


def _notebook_bar() -> bool:
    """Whether bars are Jupyter widgets: a notebook kernel with ipywidgets installed."""
    return in_notebook() and importlib.util.find_spec("ipywidgets") is not None


def _tqdm():
    if _notebook_bar():
        from tqdm.notebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def progress(total: int | None, desc: str, unit: str = "it", *, enabled: bool = True,
             tty_only: bool = False):
    """A tqdm bar (``update(n)``, ``set_postfix_str(s)``, ``close()``), shown only when asked.

    Parameters
    ----------
    total
        Expected count (``None`` when unknown).
    desc, unit
        The label and the unit (``"file"``, ``"cell"``).
    enabled
        ``False`` gives a bar that shows nothing.
    tty_only
        Show nothing unless stderr is a terminal or the bar is a notebook widget (for bars that
        are on by default, so logs of batch jobs stay clean).

    Examples
    --------
    >>> bar = progress(5, "work", enabled=False)
    >>> bar.update(5); bar.close()
    >>> bar.disable
    True
    """
    if not enabled:
        disable = True
    elif tty_only and not _notebook_bar():
        isatty = getattr(sys.stderr, "isatty", None)
        disable = sys.stderr is None or isatty is None or not isatty()
    else:
        disable = False
    return _tqdm()(total=total, desc=desc, unit=unit, leave=False, disable=disable)
