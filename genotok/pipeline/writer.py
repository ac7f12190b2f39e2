"""Running a pipeline run's batches in this process: each batch is written while the next one
is tokenized.

A batch's serial tail (its shard's records appended, the shard fsynced and renamed into place,
then the journal saved) runs in one writer thread while the main thread parses and tokenizes
the next batch, so both cores stay busy. The order that makes a run resumable after a kill -9
is kept: a batch enters the journal only after its shard is durably written, and batches are
written and journaled one at a time, in order. The steps themselves (staging, writing,
journaling a batch) are :mod:`genotok.pipeline.batch`'s; a Dask cluster runs the same steps
(:mod:`genotok.pipeline.dask`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .batch import Batches, Staged


def run_serial(job: Batches, journal: dict, bar=None) -> None:
    """Run the batches of ``job`` not yet done (in ``journal``), in order, in this process:
    batch ``b + 1`` is parsed and tokenized (numba kernels, which release the GIL) while a
    writer thread writes and fsyncs batch ``b``'s shard and then records it in the journal, in
    that order, one batch at a time. A single-cell input runs whole in the writer thread (its
    kernels never run beside another batch's). ``bar``: a progress bar, advanced by the
    inputs of each batch.

    Examples
    --------
    >>> import genotok, tempfile
    >>> from pathlib import Path
    >>> from genotok.formats.stores import get_store
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())
    >>> job = Batches(tok, paths, [[0, 1, 2], [3, 4]], Path(tempfile.mkdtemp()),
    ...               get_store("corpus"), "fail", "sha256", genotok.CellSpec())
    >>> journal = {"done": {}}
    >>> run_serial(job, journal)
    >>> [(b, d["files"], d["records"]) for b, d in journal["done"].items()]
    [('0', ['shard-00000.gtokc'], 3), ('1', ['shard-00001.gtokc'], 2)]
    """

    def commit(b: int, staged: Staged | None) -> None:
        job.record(journal, b, job.run(b, staged))  # journaled once durably in place

    pending = None
    with ThreadPoolExecutor(1, thread_name_prefix="genotok-writer") as writer:
        # on an error below, leaving the block still waits for the write in flight: what is
        # done stays done (the journal records it), a re-run resumes after it
        for b, batch in enumerate(job.batches):
            if str(b) in journal["done"]:
                if bar is not None:
                    bar.update(len(batch))
                continue
            staged = None if job.is_cells(b) else job.stage(b)
            if pending is not None:
                pending.result()  # batch b - 1 written and journaled (or its error raised)
            pending = writer.submit(commit, b, staged)
            if staged is None:
                pending.result()
            if bar is not None:
                bar.update(len(batch))
        if pending is not None:
            pending.result()
