"""Tests' shorthand: a CellSpec from flat keywords (the value encodings as ``normalize=``,
``target_sum=``, ``log1p=``, ``rank=``, ``bins=``), so parametrised cases stay one dict."""

from __future__ import annotations

from genotok import Bins, CellSpec, Log1p, Normalize, RankByMedian


def spec_of(*, normalize=None, target_sum=1e4, log1p=False, rank=None, bins=None,
            **fields) -> CellSpec:
    steps = []
    if normalize is not None:
        steps.append(Normalize(target_sum, log1p=log1p))
    elif log1p:
        steps.append(Log1p())
    if rank is not None:
        steps.append(RankByMedian(None if isinstance(rank, str) and rank == "median" else rank))
    if bins is not None:
        steps.append(Bins(bins))
    return CellSpec(encoding=tuple(steps), **fields)


def kernel_options(tokenizer, min_count=None, order="genomic", seed=0, max_tokens=None,
                   truncate="top", unique=True, unknown=None, values=True):
    """The cell kernels' options of the CellSpec with these fields (the kernel tests drive
    ``cells._stream``/``_run_chunk`` directly)."""
    from genotok.singlecell import cells

    spec = CellSpec(min_count=min_count, order=order, seed=seed, max_length=max_tokens,
                    truncation=truncate, unique=unique, unknown=unknown, values=values)
    return cells._kernel_options(tokenizer, spec, order, unique)
