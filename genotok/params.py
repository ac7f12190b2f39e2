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
    as ``2.0`` is accepted) and anything a 64-bit integer cannot hold (``2**64``, ``1e300``):
    every integer ends in a NumPy array or a numba kernel; :class:`Real` refuses booleans,
    strings and NaN.
``Options(a, b, ...)``
    One of the listed values (compared by equality and type: ``True`` is not ``1``).
``Flag()``
    ``True`` or ``False`` (NumPy booleans and 0 / 1 too); ``"no"``, ``2`` and ``None`` are
    refused.
``None``
    ``None`` is allowed only where it is listed among a parameter's constraints.
``InstanceOf(type, ...)``
    An instance of one of the types.
``Unchecked(why)``
    Any value: data whose many forms a reader takes apart and refuses with its own message
    (a region input, an AnnData, a file's path read later); ``why`` says who checks it
    (scikit-learn's ``"no_validation"``). Declared all the same: never skipped by omission.
``HasAttr(name, ...)``
    An object with these attributes (a duck type).
``Each(constraint, ...)``
    A sequence (a list, a tuple, a 1-D array; a mapping's values) whose every item satisfies
    one of the constraints (``weights`` of positive numbers).

A parameter's constraints are a list: the value must satisfy one of them. Relations between
parameters are rules checked after every value passed its own constraints:
:class:`ExactlyOne` (``batch_size`` or ``max_tokens``), :class:`Below` (``rank < world_size``),
:class:`Needs` (``truncation`` needs ``max_length``) and :class:`SumAtMost` (probabilities that
share one draw). Every parameter is
declared: :func:`validate` refuses a value it has no constraints for (scikit-learn's
``validate_params`` rule), and a public function declares all of its parameters with
:func:`validated`, which ``tests/test_params.py`` finds by itself.

Values are validated **before** they are converted: ``int(1.7)`` is 1 and
``np.int64(2**64)`` overflows, so a conversion comes after the check that makes it exact.

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

import functools
import inspect
import math
import numbers
import os
from collections.abc import Iterator, Mapping

import numpy as np

from .errors import GenotokError


class ParameterError(GenotokError, ValueError, TypeError):
    """A parameter's value is not one its constraints allow (the message says which are): a
    ``ValueError`` and, as scikit-learn's ``InvalidParameterError``, a ``TypeError`` too (a
    value of the wrong type is refused by the same constraints).

    Examples
    --------
    >>> issubclass(ParameterError, ValueError), issubclass(ParameterError, TypeError)
    (True, True)
    """


#: the integers every :class:`Integral` lies within (a 64-bit signed integer's range)
INT64 = (-(2**63), 2**63 - 1)


class Integral:
    """The integers a 64-bit signed integer holds: ``int`` and NumPy integers, or an integral
    float; never a bool.

    Examples
    --------
    >>> Integral.accepts(3), Integral.accepts(2.0), Integral.accepts(True), Integral.accepts(1.5)
    (True, True, False, False)
    >>> Integral.accepts(2**64), Integral.accepts(1e300), Integral.accepts(np.uint64(2**63))
    (False, False, False)
    """

    @staticmethod
    def accepts(v) -> bool:
        if isinstance(v, (bool, np.bool_)):
            return False
        if isinstance(v, (numbers.Integral, np.integer)):
            return INT64[0] <= int(v) <= INT64[1]
        return (isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer()
                and INT64[0] <= v < 2.0**63)

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
            yield 2**64  # no 64-bit integer: it would overflow in NumPy or a kernel
            yield 1e300
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

    @classmethod
    def of(cls, mode, *more) -> "Options":
        """The lower-case member names of an enum of :mod:`genotok.kernels.modes` (the
        user-facing spelling of each mode), and ``more``.

        >>> from genotok.kernels.modes import Overlap
        >>> str(Options.of(Overlap))
        "one of 'all', 'best'"
        """
        return cls(*(m.name.lower() for m in mode), *more)

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
    """An instance of one of ``types``; ``hint`` is added to the message of a value refused
    (how to make one, the order of the arguments).

    Examples
    --------
    >>> str(InstanceOf(str, tuple))
    'a str or a tuple'
    """

    def __init__(self, *types, hint: str | None = None):
        self.types, self.hint = types, hint

    def accepts(self, v) -> bool:
        return isinstance(v, self.types)

    def __str__(self) -> str:
        return "a " + " or a ".join(t.__name__ for t in self.types)

    def invalid(self) -> Iterator:
        yield object()


class Unchecked:
    """Any value, checked by the reader named in ``why`` (data, not a setting).

    Examples
    --------
    >>> Unchecked("read by as_regions").accepts(object()), str(Unchecked("read by as_regions"))
    (True, 'given (read by as_regions)')
    """

    def __init__(self, why: str):
        self.why = why

    def accepts(self, v) -> bool:
        return True

    def __str__(self) -> str:
        return f"given ({self.why})"

    def invalid(self) -> Iterator:
        return iter(())


class HasAttr:
    """An object with the attributes ``names`` (a duck type: ``.fingerprint`` for a universe).

    Examples
    --------
    >>> HasAttr("real").accepts(1.5), str(HasAttr("fingerprint"))
    (True, 'an object with .fingerprint')
    """

    def __init__(self, *names: str):
        self.names = names

    def accepts(self, v) -> bool:
        return all(hasattr(v, n) for n in self.names)

    def __str__(self) -> str:
        return "an object with " + " and ".join(f".{n}" for n in self.names)

    def invalid(self) -> Iterator:
        yield object()


class Each:
    """A sequence whose every item satisfies one of ``constraints`` (``None`` among them:
    an item may be ``None``; a mapping: its values; a string is not a sequence of strings
    here); ``mapping``: a mapping only; ``sequence``: a sequence only (not a mapping);
    ``length``: exactly that many items (a pair, a triple); ``hint`` is added to the
    message of a value refused.

    Examples
    --------
    >>> positive = Each(Interval(Real, 0, math.inf, closed="neither"))
    >>> positive.accepts([0.5, 2]), positive.accepts({"a": 1}), positive.accepts([1, -1])
    (True, True, False)
    >>> str(positive)
    'a collection of (a number in (0, inf))'
    >>> pair = Each(Interval(Integral), None, sequence=True, length=2)
    >>> pair.accepts((4, None)), pair.accepts((4, -5, 1)), str(pair)
    (True, False, 'a sequence of 2 items of (an integer in (-inf, inf) or None)')
    """

    def __init__(self, *constraints, mapping: bool = False, sequence: bool = False,
                 length: int | None = None, hint: str | None = None):
        self.constraints, self.mapping, self.sequence = constraints, mapping, sequence
        self.length, self.hint = length, hint

    def accepts(self, v) -> bool:
        if (self.mapping and not isinstance(v, Mapping)) or \
                (self.sequence and isinstance(v, Mapping)):
            return False
        if isinstance(v, Mapping):
            v = list(v.values())
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or np.ndim(v) != 1:
            return False
        if self.length is not None and len(v) != self.length:
            return False
        return all(any((x is None) if c is None else (x is not None and c.accepts(x))
                       for c in self.constraints) for x in v)

    def __str__(self) -> str:
        kind = "a mapping" if self.mapping else "a sequence" if self.sequence else "a collection"
        if self.length is not None:
            kind += f" of {self.length} items"
        return f"{kind} of ({_describe(list(self.constraints))})"

    def invalid(self) -> Iterator:
        yield "x"
        if self.sequence:
            yield {"a": 1}
        fill = next((x for x in self._valid_items()), 0)
        n = 1 if self.length is None else self.length
        if self.length is not None:
            yield [fill] * (n + 1)
        for c in self.constraints:
            if c is not None:
                yield from ([x] + [fill] * (n - 1) for x in c.invalid())

    def _valid_items(self) -> Iterator:
        for x in (0, 1, "a", None):
            if any((x is None) if c is None else (x is not None and c.accepts(x))
                   for c in self.constraints):
                yield x


class Text:
    """A non-empty string without NUL (a name, a separator, a column, a token): ``""`` names
    nothing, and NUL separates names where they are joined (a fingerprint).

    Examples
    --------
    >>> Text.accepts("chrom"), Text.accepts(""), Text.accepts("a\\0b"), Text.accepts(b"x")
    (True, False, False, False)
    >>> str(Text())
    'a non-empty string without NUL'
    """

    @staticmethod
    def accepts(v) -> bool:
        return isinstance(v, str) and v != "" and "\0" not in v

    def __str__(self) -> str:
        return "a non-empty string without NUL"

    def invalid(self) -> Iterator:
        yield ""
        yield "a\0b"
        yield 1


class DType:
    """A NumPy dtype among ``allowed`` (a type, a ``numpy.dtype`` or its name; compared after
    ``numpy.dtype``, which only these kinds of value reach).

    Examples
    --------
    >>> DType(np.int64, np.int32).accepts("int32"), DType(np.int64).accepts(np.float64)
    (True, False)
    >>> str(DType(np.int64, np.int32, np.uint32))
    'int64, int32 or uint32'
    """

    def __init__(self, *allowed):
        self.allowed = tuple(np.dtype(a) for a in allowed)

    def accepts(self, v) -> bool:
        if not isinstance(v, (type, np.dtype, str)):
            return False
        try:
            return np.dtype(v) in self.allowed
        except TypeError:
            return False

    def __str__(self) -> str:
        *most, last = [d.name for d in self.allowed]
        return f"{', '.join(most)} or {last}" if most else last

    def invalid(self) -> Iterator:
        yield "float16"
        yield 3


class ExactlyOne:
    """A rule: exactly one of ``names`` is given (not ``None``).

    Examples
    --------
    >>> ExactlyOne("batch_size", "max_tokens").problem({"batch_size": 2, "max_tokens": 9})
    'give exactly one of batch_size and max_tokens, got batch_size=2, max_tokens=9'
    """

    def __init__(self, *names: str):
        self.names = names

    def problem(self, values: Mapping) -> str | None:
        if sum(values.get(n) is not None for n in self.names) == 1:
            return None
        got = ", ".join(f"{n}={values.get(n)!r}" for n in self.names)
        return f"give exactly one of {' and '.join(self.names)}, got {got}"


class Below:
    """A rule: ``values[a] < values[b]`` (``rank < world_size``); skipped when either is
    ``None``.

    Examples
    --------
    >>> Below("rank", "world_size").problem({"rank": 2, "world_size": 2})
    'rank must be in [0, world_size) = [0, 2), got 2'
    """

    def __init__(self, a: str, b: str):
        self.a, self.b = a, b

    def problem(self, values: Mapping) -> str | None:
        x, y = values.get(self.a), values.get(self.b)
        if x is None or y is None or x < y:
            return None
        return f"{self.a} must be in [0, {self.b}) = [0, {y}), got {x}"


class Needs:
    """A rule: when ``when(values)`` holds, ``name`` is given (not ``None``); ``why`` says
    when.

    Examples
    --------
    >>> r = Needs("max_length", lambda v: bool(v.get("truncation")), "truncation")
    >>> r.problem({"truncation": True, "max_length": None})
    'truncation needs max_length, got max_length=None'
    """

    def __init__(self, name: str, when, why: str):
        self.name, self.when, self.why = name, when, why

    def problem(self, values: Mapping) -> str | None:
        if values.get(self.name) is not None or not self.when(values):
            return None
        return f"{self.why} needs {self.name}, got {self.name}=None"


class SumAtMost:
    """A rule: ``sum(values[n] for n in names) <= limit`` (``replace_prob + random_prob <=
    1``).

    Examples
    --------
    >>> SumAtMost(("replace_prob", "random_prob"), 1).problem({"replace_prob": 0.8,
    ...                                                      "random_prob": 0.3})
    'replace_prob + random_prob must be at most 1, got 0.8 + 0.3'
    """

    def __init__(self, names: tuple, limit):
        self.names, self.limit = tuple(names), limit

    def problem(self, values: Mapping) -> str | None:
        got = [values.get(n) for n in self.names]
        if any(v is None for v in got) or sum(got) <= self.limit:
            return None
        return (f"{' + '.join(self.names)} must be at most {self.limit}, got "
                f"{' + '.join(repr(v) for v in got)}")


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
    shown = repr(value)
    if "\n" in shown:  # an AnnData, a data frame: its first line
        shown = shown.splitlines()[0].rstrip() + " ..."
    if len(shown) > 80:
        shown = shown[:77] + "..."
    note = ""
    if (isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value) and not INT64[0] <= value <= INT64[1]
            and any(getattr(c, "kind", None) is Integral for c in constraints)):
        note = " (integers are 64-bit: at most 2**63 - 1)"
    hints = [c.hint for c in constraints if getattr(c, "hint", None)]
    if hints:
        note += f" ({'; '.join(hints)})"
    raise error(f"{at}{name} must be {_describe(constraints)}, got {shown}{note}")


class UndeclaredParameter(TypeError):
    """A parameter without declared constraints: a mistake in genotok (or a plugin), not in
    the caller's input. The test suite finds every one (``tests/test_params.py``).

    Examples
    --------
    >>> issubclass(UndeclaredParameter, TypeError)
    True
    """


def validate(values: Mapping, constraints: Mapping[str, list], where: str = "", *,
             error: type[Exception] = ParameterError, rules=()) -> None:
    """Check every value of ``values`` against its constraints (see :func:`check`), then the
    ``rules`` relating them (:class:`ExactlyOne`, :class:`Below`, :class:`Needs`); a value
    ``constraints`` does not name is an :class:`UndeclaredParameter`, never skipped.

    Examples
    --------
    >>> validate({"n": 0}, {"n": [Interval(Integral, 1, None)]}, "f")
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: f: n must be an integer in [1, inf), got 0
    >>> validate({"m": 0}, {"n": [Interval(Integral, 1, None)]}, "f")
    Traceback (most recent call last):
    ...
    genotok.params.UndeclaredParameter: f: parameter 'm' has no declared constraints (declare it in f's CONSTRAINTS, genotok.params)
    """
    for name, value in values.items():
        allowed = constraints.get(name)
        if allowed is None:
            at = f"{where}: " if where else ""
            raise UndeclaredParameter(f"{at}parameter {name!r} has no declared constraints "
                                      f"(declare it in {where or 'the'}'s CONSTRAINTS, "
                                      "genotok.params)")
        check(name, value, allowed, where, error=error)
    for rule in rules:
        problem = rule.problem(values)
        if problem:
            raise error(f"{where}: {problem}" if where else problem)


def validate_fields(obj, where: str | None = None, *,
                    error: type[Exception] = ParameterError) -> None:
    """:func:`validate` the fields a dataclass ``obj`` is constructed with (its ``init``
    fields; working state set later is not a parameter) against ``type(obj).CONSTRAINTS``.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     n: int = 1
    ...     CONSTRAINTS = {"n": [Interval(Integral, 1, None)]}
    ...     def __post_init__(self):
    ...         validate_fields(self)
    >>> Demo(0)
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: Demo: n must be an integer in [1, inf), got 0
    """
    import dataclasses

    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
    validate(values, type(obj).CONSTRAINTS, where or type(obj).__name__, error=error,
             rules=getattr(type(obj), "RULES", ()))


def undeclared(fn, constraints: Mapping[str, list]) -> tuple[list[str], list[str]]:
    """``(parameters without constraints, constraints of no parameter)`` of callable ``fn``
    (``self``/``cls``, ``*args`` and ``**kwargs`` aside).

    Examples
    --------
    >>> undeclared(lambda a, b=1: 0, {"a": [Flag()], "c": [Flag()]})
    (['b'], ['c'])
    """
    sig = inspect.signature(fn)
    names = [n for n, p in sig.parameters.items() if n not in ("self", "cls")
             and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return [n for n in names if n not in constraints], [n for n in constraints if n not in names]


def validated(constraints: Mapping[str, list], where: str | None = None, *,
              error: type[Exception] = ParameterError, rules=()):
    """Declare the constraints of every parameter of a function; each call checks the
    arguments it is given before the function runs (defaults are declared values, checked
    once by the tests), then the ``rules`` on all of them, defaults included. The function
    keeps its signature and carries ``CONSTRAINTS`` (and ``RULES``). On ``__init__``, the
    class is the one to find: give it ``CONSTRAINTS = __init__.CONSTRAINTS``.

    Examples
    --------
    >>> @validated({"n": [Interval(Integral, 1, None)]})
    ... def twice(n):
    ...     return 2 * n
    >>> twice(3), sorted(twice.CONSTRAINTS)
    (6, ['n'])
    >>> twice(0)
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: twice: n must be an integer in [1, inf), got 0
    """
    def wrap(fn):
        sig = inspect.signature(fn)
        name = where or fn.__name__
        missing, stale = undeclared(fn, constraints)
        if missing or stale:  # a mistake in genotok: found at import, not at a call
            raise UndeclaredParameter(f"{name}: parameters without constraints {missing}, "
                                      f"constraints of no parameter {stale}")

        P = inspect.Parameter
        params = sig.parameters.values()
        takes = [p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)
                 and p.name not in ("self", "cls")]
        any_keyword = any(p.kind == P.VAR_KEYWORD for p in params)
        # the positional parameters, in order (``self``/``cls`` taken and dropped); every call
        # maps its arguments by position, without inspect's bind (a few µs per call)
        positional = [p.name for p in params if p.kind in (P.POSITIONAL_ONLY,
                                                            P.POSITIONAL_OR_KEYWORD)]
        has_star = any(p.kind == P.VAR_POSITIONAL for p in params)
        defaults = {p.name: p.default for p in params if p.default is not P.empty}

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if not any_keyword:  # a misspelt keyword first, with the one meant
                for k in kwargs:
                    if k not in takes:
                        from ._usage import unknown_keyword

                        raise unknown_keyword(f"{name}()", k, takes)
            if (len(args) > len(positional) and not has_star) or any(
                    k in kwargs for k in positional[:len(args)]):
                try:  # too many, or twice: inspect says which
                    sig.bind(*args, **kwargs)
                except TypeError as exc:
                    raise TypeError(f"{name}: {exc}") from None
            given = dict(zip(positional, args))
            given.pop("self", None)
            given.pop("cls", None)
            if any_keyword:  # **kwargs are the callee's to check
                given.update((k, v) for k, v in kwargs.items() if k in takes)
            else:
                given.update(kwargs)
            validate(given, constraints, name, error=error)
            if rules:
                values = {**defaults, **given}
                for rule in rules:
                    problem = rule.problem(values)
                    if problem:
                        raise error(f"{name}: {problem}")
            return fn(*args, **kwargs)

        call.CONSTRAINTS = constraints
        call.RULES = tuple(rules)
        return call

    return wrap


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
#: the universe a corpus must have been tokenized with: a fingerprint, or what has one (a
#: Tokenizer, a Universe); ``None``: any
EXPECT = [InstanceOf(str), HasAttr("fingerprint"), None]
#: a thread count (``None``: numba's setting)
N_THREADS = [Interval(Integral, 1, None), None]
#: the integer dtype of token ids in memory (a narrower one would wrap ids silently)
ID_DTYPE = [DType(np.int64, np.int32, np.uint32)]
#: a file's or a folder's path (opened, and refused with the path named, by the callee)
PATH = [InstanceOf(str, os.PathLike)]

__all__ = ["EXPECT", "ID_DTYPE", "INT64", "MEMORY_MB", "N_THREADS", "PATH", "Below", "DType", "Each",
           "ExactlyOne", "Flag", "HasAttr", "InstanceOf", "Integral", "Interval", "Needs",
           "Options", "ParameterError", "Real", "SumAtMost", "Text", "UndeclaredParameter",
           "Unchecked", "check", "invalid_values", "undeclared", "validate", "validate_fields",
           "validated"]
