"""The one declarative parameter validator (scikit-learn's ``_param_validation`` in miniature).

An object or a function declares what each parameter accepts, once, as constraints; one
function checks a mapping of values against them and raises a :class:`ParameterError` naming
the parameter, what it received and what it allows. The invalid values of the tests are
generated from the same constraints (:func:`invalid_values`), so ``True`` for an integer or
``"no"`` for a flag is refused everywhere a constraint says so.

Constraints
-----------
``Interval(type, lo, hi, closed=...)``
    A number of ``type`` (:class:`Integral` or :class:`Real`) within the bounds (``None``: no
    bound). :class:`Integral` refuses ``True``/``False`` and ``1.5`` (an integral float such
    as ``2.0`` is accepted); :class:`Real` refuses booleans, strings and NaN.
``Options(a, b, ...)``
    One of the listed values (compared by equality and type: ``True`` is not ``1``).
``Flag()``
    ``True`` or ``False`` (NumPy booleans and 0 / 1 too); ``"no"``, ``2`` and ``None`` are
    refused.
``None``
    ``None`` is allowed only where it is listed among a parameter's constraints.
``InstanceOf(type, ...)``
    An instance of one of the types.

A parameter's constraints are a list: the value must satisfy one of them.

Examples
--------
>>> CONSTRAINTS = {"max_length": [Interval(Integral, 1, None), None], "log1p": [Flag()]}
>>> validate({"max_length": 8, "log1p": False}, CONSTRAINTS, "demo")
>>> validate({"max_length": True, "log1p": False}, CONSTRAINTS, "demo")
Traceback (most recent call last):
...
genotok.params.ParameterError: demo: max_length must be an integer in [1, inf) or None, got True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping

import numpy as np

from .errors import GenotokError


class ParameterError(GenotokError, ValueError):
    """A parameter's value is not one its constraints allow (the message says which are).

    Examples
    --------
    >>> issubclass(ParameterError, ValueError)
    True
    """


class Integral:
    """The integers: ``int`` and NumPy integers, or an integral float; never a bool.

    Examples
    --------
    >>> Integral.accepts(3), Integral.accepts(2.0), Integral.accepts(True), Integral.accepts(1.5)
    (True, True, False, False)
    """

    @staticmethod
    def accepts(v) -> bool:
        if isinstance(v, (bool, np.bool_)):
            return False
        if isinstance(v, (numbers.Integral, np.integer)):
            return True
        return isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer()

    word = "an integer"


class Real:
    """The real numbers (ints and floats), never a bool, a string or NaN.

    Examples
    --------
    >>> Real.accepts(0.5), Real.accepts(float("nan")), Real.accepts(False)
    (True, False, False)
    """

    @staticmethod
    def accepts(v) -> bool:
        return (not isinstance(v, (bool, np.bool_)) and isinstance(v, (numbers.Real, np.number))
                and not (isinstance(v, (float, np.floating)) and math.isnan(v)))

    word = "a number"


class Interval:
    """A number of ``kind`` (:class:`Integral` or :class:`Real`) between ``lo`` and ``hi``
    (``None``: unbounded); ``closed`` is ``"both"``, ``"left"``, ``"right"`` or
    ``"neither"``.

    Examples
    --------
    >>> str(Interval(Real, 0, 1, closed="left")), Interval(Integral, 1).accepts(0)
    ('a number in [0, 1)', False)
    """

    def __init__(self, kind, lo=None, hi=None, *, closed: str = "both"):
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}")
        self.kind, self.lo, self.hi, self.closed = kind, lo, hi, closed

    def accepts(self, v) -> bool:
        if not self.kind.accepts(v):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.lo is not None and not (v >= self.lo if left else v > self.lo):
            return False
        return self.hi is None or (v <= self.hi if right else v < self.hi)

    def __str__(self) -> str:
        lo = "-inf" if self.lo is None else self.lo
        hi = "inf" if self.hi is None else self.hi
        a = "[" if self.closed in ("both", "left") and self.lo is not None else "("
        b = "]" if self.closed in ("both", "right") and self.hi is not None else ")"
        return f"{self.kind.word} in {a}{lo}, {hi}{b}"

    def invalid(self) -> Iterator:
        yield True
        yield "1"
        if self.kind is Integral:
            yield 1.5
        else:
            yield float("nan")
        if self.lo is not None:
            yield self.lo - 1 if self.kind is Integral else self.lo - 1.0
        if self.hi is not None:
            yield self.hi + 1


class Options:
    """One of ``values`` (equality and type: ``True`` does not stand for ``1``).

    Examples
    --------
    >>> Options("top", "sample").accepts("top"), Options(1, 2).accepts(True)
    (True, False)
    """

    def __init__(self, *values):
        self.values = values

    def accepts(self, v) -> bool:
        return any(isinstance(v, type(o)) and isinstance(v, (bool, np.bool_)) == isinstance(
            o, bool) and v == o for o in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.values)

    def invalid(self) -> Iterator:
        yield "<not an option>"
        yield 1.5
        yield True


class Flag:
    """``True`` or ``False`` (NumPy booleans, and the integers 0 and 1, too): a string such as
    ``"no"`` is non-empty, so truthy, and ``2`` or ``None`` are not answers.

    Examples
    --------
    >>> [Flag.accepts(v) for v in (True, 0, "no", 2, None)]
    [True, True, False, False, False]
    """

    @staticmethod
    def accepts(v) -> bool:
        return isinstance(v, (bool, np.bool_)) or (
            isinstance(v, (int, np.integer)) and v in (0, 1))

    def __str__(self) -> str:
        return "True or False"

    def invalid(self) -> Iterator:
        yield "no"
        yield 2
        yield 0.5


class InstanceOf:
    """An instance of one of ``types``.

    Examples
    --------
    >>> str(InstanceOf(str, tuple))
    'a str or a tuple'
    """

    def __init__(self, *types):
        self.types = types

    def accepts(self, v) -> bool:
        return isinstance(v, self.types)

    def __str__(self) -> str:
        return "a " + " or a ".join(t.__name__ for t in self.types)

    def invalid(self) -> Iterator:
        yield object()


def _describe(constraints: list) -> str:
    words = [str(c) for c in constraints if c is not None]
    if None in constraints:
        words.append("None")
    return " or ".join(words)


def check(name: str, value, constraints: list, where: str = "", *,
          error: type[Exception] = ParameterError):
    """Raise ``error`` unless ``value`` satisfies one of ``constraints``; returns ``value``.

    Examples
    --------
    >>> check("seed", 3, [Interval(Integral, 0, None)])
    3
    """
    for c in constraints:
        if (value is None) if c is None else (value is not None and c.accepts(value)):
            return value
    at = f"{where}: " if where else ""
    raise error(f"{at}{name} must be {_describe(constraints)}, got {value!r}")


def validate(values: Mapping, constraints: Mapping[str, list], where: str = "", *,
             error: type[Exception] = ParameterError) -> None:
    """Check every value of ``values`` that ``constraints`` names (see :func:`check`).

    Examples
    --------
    >>> validate({"n": 0}, {"n": [Interval(Integral, 1, None)]}, "f")
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: f: n must be an integer in [1, inf), got 0
    """
    for name, allowed in constraints.items():
        if name in values:
            check(name, values[name], allowed, where, error=error)


def invalid_values(constraints: list) -> list:
    """Values that none of ``constraints`` accepts (generated from them, for the tests).

    Examples
    --------
    >>> invalid_values([Flag()])
    ['no', 2, 0.5, None]
    >>> True in invalid_values([Interval(Integral, 1, None), None])
    True
    """
    out = []
    for c in constraints:
        if c is not None:
            out.extend(c.invalid())
    if None not in constraints:
        out.append(None)
    return [v for v in out if not any((v is None) if c is None else
                                      (v is not None and c.accepts(v)) for c in constraints)]


#: the memory budget in MiB of every call that reads in chunks (NaN, 0 and bools refused)
MEMORY_MB = [Interval(Real, 0, None, closed="neither")]

__all__ = ["MEMORY_MB", "Flag", "InstanceOf", "Integral", "Interval", "Options", "ParameterError",
           "Real", "check", "invalid_values", "validate"]
