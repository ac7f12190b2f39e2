"""One progress bar for every long-running loop (pipeline, single cell, universe builds).

tqdm draws it (a required dependency): :mod:`tqdm.auto` gives a widget in Jupyter (with
ipywidgets installed; tqdm warns and draws text without them) and a text bar in a terminal.
:func:`progress` only adds genotok's two switches: ``enabled`` and ``tty_only``.
"""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


def _notebook_bar() -> bool:
    """Whether :mod:`tqdm.auto` chose the Jupyter widget (a notebook kernel with ipywidgets)."""
    return any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)


def progress(total: int | None, desc: str, unit: str = "it", *, enabled: bool = True,
             tty_only: bool = False) -> tqdm:
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
    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=disable)
