"""Writing a pipeline run's batches while the next one is tokenized.

A batch's serial tail (its shard's records appended, the shard fsynced and renamed into place,
then the journal saved) runs in one writer thread while the main thread parses and tokenizes
the next batch, so both cores stay busy. The order that makes a run resumable after a kill -9
is kept: a batch enters the journal only after its shard is durably written, and batches are
written and journaled one at a time, in order (:mod:`genotok.pipeline.run` holds the rest).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .batch import _run_batch, _stage_batch, _Staged
from .journal import _save_journal
from .plan import input_kind


def _run_serial(tokenizer, paths: list[Path], batches, out: Path, journal: dict, format: str,
                n_threads, on_error: str, algo: str, enc: dict, bar) -> None:
    """Run the batches not yet done, in order, in this process: batch ``b + 1`` is parsed and
    tokenized (numba kernels, which release the GIL) while a writer thread writes and fsyncs
    batch ``b``'s shard and then records it in the journal, in that order, one batch at a time.
    A single-cell input runs whole in the writer thread (its kernels never run beside
    another batch's). The batch steps are :mod:`genotok.pipeline.batch`'s (given ``staged``,
    :func:`~genotok.pipeline.batch._run_batch` only writes)."""

    def commit(b: int, batch: list[int], staged: _Staged | None) -> None:
        journal["done"][str(b)] = _run_batch(tokenizer, [paths[i] for i in batch], out, b,
                                              format, n_threads, on_error, algo, enc, staged)
        _save_journal(out, journal)  # only once the shard is durably in place

    pending = None
    with ThreadPoolExecutor(1, thread_name_prefix="genotok-writer") as writer:
        # on an error below, leaving the block still waits for the write in flight: what is
        # done stays done (the journal records it), a re-run resumes after it
        for b, batch in enumerate(batches):
            if str(b) in journal["done"]:
                if bar is not None:
                    bar.update(len(batch))
                continue
            files = [paths[i] for i in batch]
            staged = (None if len(files) == 1 and input_kind(files[0]) != "bed" else
                      _stage_batch(tokenizer, files, out, b, format, n_threads, on_error, algo))
            if pending is not None:
                pending.result()  # batch b - 1 written and journaled (or its error raised)
            pending = writer.submit(commit, b, batch, staged)
            if staged is None:
                pending.result()
            if bar is not None:
                bar.update(len(batch))
        if pending is not None:
            pending.result()
