"""The executors, found by name: ``"serial"`` (this process), ``"dask"``, ``"ray"``, and the
plugins of the entry point group ``genotok.executors`` (:mod:`genotok._plugins`).

An executor runs a run's batches somewhere and records each in the journal (the protocol:
:mod:`genotok.pipeline.job`). ``pretokenize(..., options=RunOptions(executor=...))`` takes an
instance; the run file (``executor = "ray"`` and a ``[run.ray]`` table) takes a name and the
keywords of its class, through :func:`get_executor`. A new engine is one class and one line,
``register_executor(MyExecutor)`` (or an entry point naming the class).
"""

from __future__ import annotations

from .. import _plugins
from ..params import InstanceOf, validated
from .dask import DaskExecutor
from .job import Executor
from .plan import PipelineError
from .ray import RayExecutor
from .writer import SerialExecutor

__all__ = ["EXECUTORS", "get_executor", "register_executor"]

#: name -> executor class (the plugins join on the first lookup)
EXECUTORS: dict[str, type[Executor]] = {c.name: c for c in (SerialExecutor, DaskExecutor,
                                                             RayExecutor)}


def register_executor(cls: type[Executor]) -> type[Executor]:
    """Add an executor class to :data:`EXECUTORS` under its ``name`` (a decorator too).

    Examples
    --------
    >>> class Mine(SerialExecutor):
    ...     name = "mine-example"
    >>> register_executor(Mine) is Mine, "mine-example" in executor_names()
    (True, True)
    >>> del EXECUTORS["mine-example"]
    """
    return _plugins.claim(EXECUTORS, cls, Executor, "name", "executor")


def executor_names() -> list[str]:
    """The registered executors' names (plugins included).

    >>> executor_names()[:3]
    ['dask', 'ray', 'serial']
    """
    _plugins.load("genotok.executors", register_executor)
    return sorted(EXECUTORS)


@validated({"executor": [InstanceOf(str), InstanceOf(Executor), None]})
def get_executor(executor: str | Executor | None = None, **options) -> Executor:
    """An executor: an instance as it is, ``None`` the serial one, a name with its class's
    keywords (``get_executor("ray", address="local", num_workers=2)``).

    Examples
    --------
    >>> get_executor(), get_executor("dask", address="local")
    (SerialExecutor(), DaskExecutor(address='local', n_workers=2, timeout=30.0))
    >>> get_executor("rey")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.pipeline.plan.PipelineError: unknown executor 'rey' (did you mean 'ray'?); ...
    """
    if isinstance(executor, Executor):
        if options:
            raise TypeError("get_executor: keywords go with a name, not an executor instance")
        return executor
    if executor is None:
        executor = "serial"
    names = executor_names()
    if executor not in EXECUTORS:
        import difflib

        close = difflib.get_close_matches(str(executor), names, 1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PipelineError(f"unknown executor {executor!r}{hint}; the executors are "
                            f"{', '.join(names)}")
    try:
        return EXECUTORS[executor](**options)
    except TypeError as exc:  # a keyword the class does not take
        raise PipelineError(f"executor {executor!r}: {exc}") from None
