"""One progress bar for every long-running loop (pipeline, single cell, universe builds).

:func:`progress` returns a tqdm bar when tqdm is installed (``pip install 'genotok[progress]'``)
and otherwise a plain line on stderr rewritten in place (:class:`LineBar`), so progress never
needs an optional dependency. In Jupyter, tqdm's widget bar needs ipywidgets; without it
``tqdm.auto`` shows nothing useful, so the text bar of ``tqdm.std`` is used there instead.
"""

from __future__ import annotations

import sys
import time


class NoBar:
    """A bar that shows nothing (``enabled=False``).

    Examples
    --------
    >>> with NoBar() as bar:
    ...     bar.update(3)
    """

    n = 0

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LineBar(NoBar):
    """``desc: 3/10 files (30%)`` on one stderr line, rewritten at most every ``interval`` s.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with LineBar(10, "pretokenize", "file", file=out, interval=0) as bar:
    ...     bar.update(3)
    >>> out.getvalue().splitlines()[-1].strip()
    'pretokenize: 3/10 files (30%)'
    """

    def __init__(self, total: int | None, desc: str, unit: str = "it", *, file=None,
                 interval: float = 0.2):
        self.total, self.desc, self.unit = total, desc, unit
        self.file = file if file is not None else sys.stderr
        self.interval = interval
        self.n = 0
        self.postfix = ""
        self._last = 0.0
        self._width = 0
        self._closed = False
        self._draw()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.interval or (self.total is not None and self.n >= self.total):
            self._draw(now)

    def set_postfix_str(self, s: str) -> None:
        self.postfix = s

    def _draw(self, now: float | None = None) -> None:
        self._last = time.monotonic() if now is None else now
        units = self.unit if self.n == 1 and self.total in (None, 1) else f"{self.unit}s"
        if self.total:
            text = f"{self.desc}: {self.n:,}/{self.total:,} {units} ({self.n / self.total:.0%})"
        else:
            text = f"{self.desc}: {self.n:,} {units}"
        if self.postfix:
            text += f", {self.postfix}"
        pad = " " * max(0, self._width - len(text))
        self._width = len(text)
        try:
            self.file.write(f"\r{text}{pad}")
            self.file.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is not worth a crash
            self._closed = True

    def close(self) -> None:
        if self._closed:
            return
        self._draw()
        self._closed = True
        try:
            self.file.write("\n")
            self.file.flush()
        except (OSError, ValueError):
            pass


def in_notebook() -> bool:
    """Whether we run inside a Jupyter kernel (where stderr is not a terminal but is shown)."""
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    try:
        shell = ipython.get_ipython()
    except AttributeError:  # pragma: no cover - a partial IPython
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _has_ipywidgets() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def progress(total: int | None, desc: str, unit: str = "it", *, enabled: bool = True,
             tty_only: bool = False):
    """A progress bar with ``update(n)``, ``set_postfix_str(s)`` and ``close()``.

    Parameters
    ----------
    total
        Expected count (``None`` when unknown).
    desc, unit
        The label and the unit (``"file"``, ``"cell"``).
    enabled
        ``False`` gives a bar that shows nothing.
    tty_only
        Show nothing unless stderr is a terminal or this is a notebook (for bars that are on by
        default, so logs of batch jobs stay clean).

    Examples
    --------
    >>> bar = progress(5, "work", enabled=False)
    >>> bar.update(5); bar.close()
    """
    if not enabled:
        return NoBar()
    notebook = in_notebook()
    if tty_only and not notebook:
        isatty = getattr(sys.stderr, "isatty", None)
        if sys.stderr is None or isatty is None or not isatty():
            return NoBar()
    try:
        if notebook and _has_ipywidgets():
            from tqdm.notebook import tqdm
        else:
            from tqdm.std import tqdm
    except ImportError:
        return LineBar(total, desc, unit)
    return tqdm(total=total, desc=desc, unit=unit, leave=False)
