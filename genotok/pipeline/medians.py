"""The medians of a :func:`~genotok.pipeline.pretokenize` run over single-cell inputs: for
a cell spec with ``RankByMedian()``, the medians pass
over all inputs before any is encoded (kept in the journal, so a resumed run reuses them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .journal import save_journal
from .plan import (
    SKIPPABLE,
    PipelineError,
    _check_regular,
    _message,
    cell_class,
    input_read,
    raise_machine_error,
)


def fit_medians(spec, paths: list[Path], out: Path, journal: dict, tokenizer, n_threads,
                 batches: list[list[int]], on_error: str, read=None):
    """The cell spec every input is tokenized with: ``spec`` itself, or, when it holds
    ``RankByMedian()`` without medians, ``spec`` with the medians of all inputs (kept in the
    journal, so a resumed run encodes its remaining inputs with the medians its first inputs
    got).

    With ``on_error="skip"``, an input the medians pass cannot read is left out of the
    medians and skipped as the tokenizing pass skips one: its batch (a single-cell input is a
    batch of its own) is journaled as done with the error, saved with the medians, so it is
    listed in the manifest and a resumed run neither reads it nor encodes with other medians.
    An input failing halfway through its read is left out by a new pass over the others (no
    half of it counts).

    Examples
    --------
    >>> from genotok import CellSpec, RankByMedian
    >>> spec = CellSpec()
    >>> fit_medians(spec, [], Path("out"), {"done": {}}, None, None, [], "fail") is spec
    True
    >>> fixed = CellSpec(encoding=(RankByMedian([1.0, 2.0]),))   # medians given: nothing to fit
    >>> fit_medians(fixed, [], Path("out"), {"done": {}}, None, None, [], "fail") is fixed
    True
    """
    from ..singlecell.spec import RankByMedian

    at = [i for i, s in enumerate(spec.encoding) if isinstance(s, RankByMedian)
          and s.medians is None]
    if not at:
        return spec
    encoding = spec.encoding_kwargs()
    if "medians" not in journal:
        from ..singlecell import feature_medians

        failed: dict[int, str] = {}  # input index -> its error, as the manifest lists it
        _check_same_var(paths, on_error, failed, read)
        while True:
            left, reached = [i for i in range(len(paths)) if i not in failed], []
            if not left:  # nothing readable: every batch is a skipped one, nothing to encode
                medians, method = np.zeros(0), "exact"
                break
            try:
                medians, method = feature_medians(
                    _medians_inputs(paths, left, reached, tokenizer, n_threads, spec, read),
                    normalize=encoding["normalize"], target_sum=encoding["target_sum"],
                    log1p=encoding["log1p"])
                break
            except SKIPPABLE as exc:  # the input being read when it was raised
                if on_error == "fail" or not reached:
                    raise
                raise_machine_error(exc, paths[reached[-1]])
                failed[reached[-1]] = _message(exc, paths[reached[-1]])
        journal["medians"] = {"medians": [None if not np.isfinite(x) else x
                                          for x in medians.tolist()], "method": method}
        for b, batch in enumerate(batches):
            if batch[0] in failed:
                journal["done"][str(b)] = {"files": [], "records": 0, "tokens": 0,
                                           "sources": [], "failed": [
                                               {"path": str(paths[batch[0]]),
                                                "error": failed[batch[0]]}]}
        save_journal(out, journal)
    stored = journal["medians"]
    medians = np.array([np.nan if x is None else x for x in stored["medians"]], np.float64)
    steps = list(spec.encoding)
    steps[at[0]] = RankByMedian((medians, stored["method"]))
    return spec.replace(encoding=tuple(steps))


def _medians_inputs(paths: list[Path], indices: list[int], reached: list[int], tokenizer,
                    n_threads, spec, read=None):
    """Each input's cell source for the medians pass, one at a time, opened as the
    tokenizing pass opens it (a fragment file is counted with its memory bound: beyond it
    the counts spill to disk and are read back a bucket of cells at a time), and closed when
    the next is asked for. ``reached`` gets each input's index before it is read."""
    from ..singlecell.fragments import SPILL_MB
    from ..singlecell.sources import open_source

    for i in indices:
        p = paths[i]
        reached.append(i)
        _check_regular(p)
        with open_source(p, input_read(p, read), tokenizer=tokenizer, n_threads=n_threads,
                         spec=spec,
                         memory_mb=SPILL_MB) as source:  # spec: counted as tokenized
            yield source.value_input()[0]  # what feature_medians reads of it


def _check_same_var(paths: list[Path], on_error: str = "fail",
                    failed: dict[int, str] | None = None, read=None) -> None:
    """``.h5ad`` inputs share one list of features (``var_names``, in order), or their
    medians would mix different peaks. With ``on_error="skip"``, an input whose features
    cannot be read goes into ``failed`` (index -> error) instead."""
    from ..singlecell.sources import open_source

    first = None
    for i, p in enumerate(paths):
        cls = cell_class(p)
        if cls is None or cls.features_are != "var":
            continue
        try:
            _check_regular(p)
            with open_source(p, input_read(p, read)) as source:
                names = source.feature_names()
        except SKIPPABLE as exc:
            if on_error == "fail" or failed is None:
                raise
            raise_machine_error(exc, p)
            failed[i] = _message(exc, p)
            continue
        if first is None:
            first = (p, names)
        elif names != first[1]:
            raise PipelineError(f"{p}: its var_names differ from {first[0]}'s; RankByMedian() "
                                "takes one median per feature over all inputs, so the .h5ad "
                                "inputs must have the same features in the same order")
