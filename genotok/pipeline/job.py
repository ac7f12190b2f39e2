"""The executor seam: what an engine (this process, Dask, Ray, a plugin) sees of a run.

:func:`~genotok.pipeline.pretokenize` makes the plan, takes the output directory's lock, loads
the journal, then hands a :class:`Job` to an :class:`Executor`; once the executor returns, it
checks that every batch was recorded and writes the manifest. An executor only has to run the
job's :meth:`~Job.pending` batches somewhere and hand each result back to :meth:`Job.record`, in
this process (the driver), as each finishes::

    class MyExecutor(Executor):
        name = "mine"

        def run(self, job):
            tok = ship_once(job.tokenizer)           # the tokenizer, once per worker or node
            for b, entry in run_somewhere(job.task(b) for b in job.pending()):
                job.record(b, entry)                 # the journal: exactly once per batch

A :class:`BatchTask` is picklable and self-contained: ``task(tokenizer)`` tokenizes its batch and
writes its part of the store into the output directory (which the workers must see: a shared
file system, or the local staging directory of an ``s3://`` run on one machine), and returns the
batch's journal entry. The rules every executor keeps for free, because they live here and in
:mod:`genotok.pipeline.batch`:

- exactly once: :meth:`Job.record` refuses a batch recorded twice, and ``pretokenize`` refuses
  to write a manifest while a batch is unrecorded (an executor that lost one);
- place once: a batch run again (a worker killed after it wrote its shard, a task retried)
  never replaces a shard in place (:func:`genotok._io.place_once`);
- resumable: a batch is journaled only after its files are durably in place, so a driver killed
  at any instant leaves a directory the next run resumes.

``genotok.testing.check_executor`` checks an executor against these rules.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..formats.stores import Store
from ..singlecell.reading import AnnDataOptions
from ..singlecell.spec import CellSpec
from .batch import Batches, run_batch
from .plan import PipelineError

__all__ = ["BatchTask", "Executor", "Job"]


@dataclass(frozen=True)
class BatchTask:
    """One batch as a worker runs it: ``task(tokenizer)`` writes part ``b`` of the store into
    ``out`` and returns the batch's journal entry (with one numba thread per task unless
    ``n_threads`` says otherwise: the workers are the parallelism). Picklable; the tokenizer is
    passed apart so that an executor ships it once, not with every task.

    Examples
    --------
    >>> import genotok, tempfile
    >>> from genotok.formats.stores import get_store
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())[:2]
    >>> task = BatchTask(paths, Path(tempfile.mkdtemp()), 0, get_store("corpus"), "fail",
    ...                  "sha256", genotok.CellSpec())
    >>> task(tok)["files"], task.key
    (['shard-00000.gtokc'], 'genotok-batch-0')
    """

    inputs: list[Path]
    out: Path
    b: int
    store: Store
    on_error: str
    algo: str
    spec: CellSpec
    read: AnnDataOptions | None = None
    n_threads: int | None = 1

    @property
    def key(self) -> str:
        """A name for the task (an engine's task key, a log line)."""
        return f"genotok-batch-{self.b}"

    def __call__(self, tokenizer) -> dict:
        return run_batch(tokenizer, self.inputs, self.out, self.b, self.store, self.n_threads,
                         self.on_error, self.algo, self.spec, read=self.read)


class Job:
    """A run's batches, as an executor drives them: :meth:`pending` (the batches not yet in the
    journal), :meth:`task` (what a worker runs), :meth:`record` (the journal, in the driver).

    Examples
    --------
    >>> import genotok, tempfile
    >>> from genotok.formats.stores import get_store
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())
    >>> batches = Batches(tok, paths, [[0, 1], [2, 3, 4]], Path(tempfile.mkdtemp()),
    ...                   get_store("corpus"), "fail", "sha256", genotok.CellSpec())
    >>> job = Job(batches, {"done": {"0": {"files": ["shard-00000.gtokc"], "records": 2}}})
    >>> job.pending()
    [1]
    >>> job.record(1, job.task(1)(job.tokenizer))
    >>> job.pending(), job.journal["done"]["1"]["records"]
    ([], 3)
    >>> job.record(1, {"files": []})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.pipeline.plan.PipelineError: ...batch 1 was recorded twice...
    """

    def __init__(self, batches: Batches, journal: dict, bar=None):
        self.batches, self.journal, self.bar = batches, journal, bar
        #: the files the journal's batches wrote (a batch claiming one of them is refused)
        self._files = {f for d in journal["done"].values() for f in d.get("files") or ()}

    @property
    def tokenizer(self):
        """The run's tokenizer (ship it to the workers once)."""
        return self.batches.tokenizer

    @property
    def out(self) -> Path:
        """The output directory (local; the workers write into it)."""
        return self.batches.out

    def __len__(self) -> int:
        return len(self.batches.batches)

    def pending(self) -> list[int]:
        """The batches not yet in the journal, in order."""
        done = self.journal["done"]
        return [b for b in range(len(self)) if str(b) not in done]

    def task(self, b: int, n_threads: int | None = 1) -> BatchTask:
        """What a worker runs for batch ``b`` (picklable)."""
        j = self.batches
        return BatchTask(j.inputs(b), j.out, b, j.store, j.on_error, j.algo, j.spec, j.read,
                         n_threads)

    def record(self, b: int, entry: dict) -> None:
        """Batch ``b`` done (its files durably in place): its entry in the journal, saved, then
        its files uploaded (an object-store output). Call it in the driver, once per batch."""
        if not isinstance(b, int) or not 0 <= b < len(self):
            raise PipelineError(f"{self.out}: an executor recorded batch {b!r}, which this run "
                                f"does not have (0..{len(self) - 1})")
        if str(b) in self.journal["done"]:
            raise PipelineError(f"{self.out}: batch {b} was recorded twice (an executor must "
                                "record each batch exactly once)")
        if not isinstance(entry, dict) or not isinstance(entry.get("files"), list):
            raise PipelineError(f"{self.out}: an executor recorded batch {b} with an entry that "
                                f"is not a batch's result ({type(entry).__name__})")
        clash = sorted(self._files.intersection(entry["files"]))
        if clash:
            raise PipelineError(f"{self.out}: an executor recorded batch {b} with files another "
                                f"batch wrote ({clash[:3]}): each batch has parts of its own")
        self.batches.record(self.journal, b, entry)
        self._files.update(entry["files"])
        if self.bar is not None:
            self.bar.update(len(self.batches.batches[b]))

    def check_done(self, executor: Executor) -> None:
        """Every batch recorded (else the executor lost one: no manifest is written)."""
        left = self.pending()
        if left:
            raise PipelineError(f"{self.out}: executor {executor!r} returned with "
                                f"{len(left)} batch(es) not recorded (first: {left[:5]}); no "
                                "manifest is written; re-run to finish them")


class Executor(abc.ABC):
    """Runs a :class:`Job`'s pending batches and records each (:meth:`Job.record`, in this
    process). Subclasses set ``name`` (the registry's and the run file's ``executor = …``) and
    implement :meth:`run`; :meth:`options` returns the keywords that make an equal executor
    (``type(ex)(**ex.options())``, in another process too: the run file's ``[run.NAME]``
    table). An executor that starts an engine of its own (a local cluster) stops it in
    :meth:`close` (also a ``with`` block).

    Examples
    --------
    >>> class InOrder(Executor):
    ...     name = "in-order"
    ...     def run(self, job):
    ...         for b in job.pending():
    ...             job.record(b, job.task(b)(job.tokenizer))
    >>> with InOrder() as ex:
    ...     print(ex, ex.options())
    InOrder() {}
    """

    name: ClassVar[str] = ""

    @abc.abstractmethod
    def run(self, job: Job) -> None:
        """Run ``job.pending()`` and :meth:`Job.record` each batch, in this process, as it
        finishes."""

    def options(self) -> dict:
        return {}

    def close(self) -> None:
        """Stop what this executor started (nothing by default)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        kw = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({kw})"
