"""Running a pipeline run's batches in this process: each batch is written while the next one
is tokenized.

A batch's serial tail (its shard's records appended, the shard fsynced and renamed into place,
then the journal saved) runs in one writer thread while the main thread parses and tokenizes
the next batch, so both cores stay busy. The order that makes a run resumable after a kill -9
is kept: a batch enters the journal only after its shard is durably written, and batches are
written and journaled one at a time, in order. The steps themselves (staging, writing,
journaling a batch) are :mod:`genotok.pipeline.batch`'s; a Dask or Ray cluster runs the same
steps (:mod:`genotok.pipeline.dask`, :mod:`genotok.pipeline.ray`). :class:`SerialExecutor` is
this module's executor (:mod:`genotok.pipeline.job`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .batch import Staged
from .job import Executor, Job


class SerialExecutor(Executor):
    """The batches in this process, in order (the default executor): batch ``b + 1`` is parsed
    and tokenized while a writer thread writes batch ``b`` (:func:`run_serial`). ``n_threads``
    of the run are its threads.

    Examples
    --------
    >>> SerialExecutor()
    SerialExecutor()
    """

    name = "serial"

    def run(self, job: Job) -> None:
        run_serial(job)


def run_serial(job: Job) -> None:
    """Run the batches of ``job`` not yet done, in order, in this process:
    batch ``b + 1`` is parsed and tokenized (numba kernels, which release the GIL) while a
    writer thread writes and fsyncs batch ``b``'s shard and then records it in the journal, in
    that order, one batch at a time. A single-cell input runs whole in the writer thread (its
    kernels never run beside another batch's).

    Examples
    --------
    >>> import genotok, tempfile
    >>> from pathlib import Path
    >>> from genotok.formats.stores import get_store
    >>> from genotok.pipeline.batch import Batches
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())
    >>> batches = Batches(tok, paths, [[0, 1, 2], [3, 4]], Path(tempfile.mkdtemp()),
    ...                   get_store("corpus"), "fail", "sha256", genotok.CellSpec())
    >>> job = Job(batches, {"done": {}})
    >>> run_serial(job)
    >>> [(b, d["files"], d["records"]) for b, d in job.journal["done"].items()]
    [('0', ['shard-00000.gtokc'], 3), ('1', ['shard-00001.gtokc'], 2)]
    """
    batches = job.batches

    def commit(b: int, staged: Staged | None) -> None:
        job.record(b, batches.run(b, staged))  # journaled once durably in place

    pending = None
    with ThreadPoolExecutor(1, thread_name_prefix="genotok-writer") as writer:
        # on an error below, leaving the block still waits for the write in flight: what is
        # done stays done (the journal records it), a re-run resumes after it
        for b in job.pending():
            staged = None if batches.is_cells(b) else batches.stage(b)
            if pending is not None:
                pending.result()  # batch b - 1 written and journaled (or its error raised)
            pending = writer.submit(commit, b, staged)
            if staged is None:
                pending.result()
        if pending is not None:
            pending.result()
