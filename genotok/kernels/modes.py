"""The modes the kernels switch on, as ``IntEnum`` s shared by the Python side and the kernels.

numba reads ``IntEnum`` members as integer constants, and the Python side maps user-facing
strings (``unknown="set"``) to the same members, so a mode's number is written once, here.

Examples
--------
>>> Unknown.SET == 1 and Order.VALUE == 1
True
"""

from __future__ import annotations

from enum import IntEnum


class Unknown(IntEnum):
    """What a query (overlap) or a row (cells) without a region token gives.

    ``DROP``: nothing; ``SET``: one ``<unk>`` for a set (row) without any region token;
    ``REGION``: one ``<unk>`` per query (kept variable) without a region token.

    Examples
    --------
    >>> Unknown["REGION"].value
    2
    """

    DROP = 0
    SET = 1
    REGION = 2


class Order(IntEnum):
    """The order of a cell's tokens (:mod:`genotok.kernels.cells`): genomic, by value
    descending, or a seeded shuffle.

    Examples
    --------
    >>> int(Order.SHUFFLE)
    2
    """

    GENOMIC = 0
    VALUE = 1
    SHUFFLE = 2


class Truncate(IntEnum):
    """Which tokens a cell over ``max_tokens`` keeps: the largest values, or a seeded sample.

    Examples
    --------
    >>> Truncate(1).name
    'SAMPLE'
    """

    TOP = 0
    SAMPLE = 1


class Path(IntEnum):
    """How the cell kernel visits a row whose columns are not in genomic order (``AUTO`` picks
    per row; the others force one path, for tests and benchmarks).

    Examples
    --------
    >>> Path.BITMAP.value
    2
    """

    AUTO = 0
    KEYSORT = 1
    BITMAP = 2
