"""``genotok.warmup()``: compile every numba kernel ahead of first use (a top-level helper: it
reaches every room, like the package root)."""


def warmup() -> None:
    """Compile every numba kernel now (on tiny inputs) instead of on first use.

    With numba's on-disk cache (on by default) this takes well under a second after the
    first run on a machine.

    Examples
    --------
    >>> warmup()  # later first calls skip compilation
    """
    from .formats.corpus import reader
    from .kernels import build, overlap, parse, sort
    from .singlecell import cells, values

    for room in (parse, overlap, sort, build, cells, values, reader):
        room.warmup()
