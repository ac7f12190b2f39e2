"""The modes the kernels switch on, as ``IntEnum`` s shared by the Python side and the kernels.

numba reads ``IntEnum`` members as integer constants, and the Python side maps user-facing
strings (``unknown="set"``) to the same members, so a mode's number is written once, here.
A mode's user-facing name is its member's name in lower case (:func:`parse`): the parameter
constraints (``Options.of(Overlap)``), the kernels and the CLI's choices (:func:`names`) all
read it from here.

Examples
--------
>>> Unknown.SET == 1 and Order.VALUE == 1
True
"""

from __future__ import annotations

from enum import IntEnum


def name(member: IntEnum) -> str:
    """The user-facing name of one member (lower case, ``-`` for ``_``): what :func:`parse`
    reads back, and what a module that compares settings' strings spells once at import.

    >>> name(Counting.PAIRED_INSERTION), parse(Counting, name(Counting.PAIRED_INSERTION))
    ('paired-insertion', <Counting.PAIRED_INSERTION: 1>)
    """
    return member.name.lower().replace("_", "-")


def names(mode: type[IntEnum]) -> tuple[str, ...]:
    """The user-facing names of a mode's members, in order (lower case, ``-`` for ``_``).

    >>> names(Overlap), names(Counting)[1]
    (('all', 'best'), 'paired-insertion')
    """
    return tuple(name(m) for m in mode)


def parse(mode: type[IntEnum], name: str) -> IntEnum:
    """The member of ``mode`` a user-facing name stands for (already validated).

    >>> int(parse(Overlap, "best")), int(parse(Counting, "paired-insertion"))
    (1, 1)
    """
    return mode[name.upper().replace("-", "_")]


class Overlap(IntEnum):
    """Which universe regions a query gives (:mod:`genotok.kernels.overlap`): every one it
    overlaps (gtars), or the one with the largest overlap (ties: the lowest id).

    >>> Overlap.BEST.value
    1
    """

    ALL = 0
    BEST = 1


class Counting(IntEnum):
    """What a fragment adds to the regions it hits (:mod:`genotok.kernels.fragscan`,
    ``FragmentOptions.mode``): 1 per Tn5 cut site, 1 per fragment with a cut site in the
    region (SnapATAC2's ``paired-insertion``), or 1 per region the whole fragment overlaps.

    >>> names(Counting)
    ('insertion', 'paired-insertion', 'fragment')
    """

    INSERTION = 0
    PAIRED_INSERTION = 1
    FRAGMENT = 2


class FractionOf(IntEnum):
    """What ``min_fraction`` is a fraction of: the query (bedtools' ``-f``) or the universe
    region.

    >>> FractionOf.REGION.value
    1
    """

    QUERY = 0
    REGION = 1


class HitOrder(IntEnum):
    """The order of a tokenized set's ids (``TokenizerSettings.order``).

    >>> names(HitOrder)
    ('gtars', 'input', 'genomic', 'unique')
    """

    GTARS = 0
    INPUT = 1
    GENOMIC = 2
    UNIQUE = 3


class Backend(IntEnum):
    """gtars' overlap backend (``tokenizer_type``): the same hits, each backend's order of
    one query's several hits.

    >>> names(Backend)
    ('bits', 'ailist')
    """

    BITS = 0
    AILIST = 1


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
