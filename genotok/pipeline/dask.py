"""Running :func:`genotok.pipeline.pretokenize` on a Dask cluster (``pip install 'genotok[dask]'``):
:class:`DaskExecutor`.

Each batch of inputs is tokenized on a worker, which writes its own shard straight into the
output directory (a filesystem every worker sees: NFS, Lustre, a cloud mount); the client only
records finished batches in the journal. The shards are then joined by the manifest, exactly as
in a single-machine run, so both give the same corpus record for record.

The client holds the output directory's lock (an OS ``flock``, see :mod:`genotok.pipeline.journal`)
for the whole run; workers only write shards whose numbers the client gave them. A worker killed
mid-shard leaves a temporary file that the next run removes before it resumes. A finished task
that Dask runs again (its worker died while the scheduler still wanted its result) writes its
shard again, possibly after ``manifest.json``: that write never replaces the shard in place (the
first stays, see :mod:`genotok.pipeline.batch`), and a task is released as soon as it is
journaled, so the scheduler has no reason to run it again.

Security: Dask sends tasks and results as pickles, and unpickling runs code. A scheduler that
anyone on the network can reach runs anyone's code on your workers: keep it on a private network
or start it with TLS and authentication (``distributed.security.Security``), and never point
an executor at a scheduler you do not control. ``DaskExecutor(address="local")`` starts a
``LocalCluster`` bound to 127.0.0.1, with no dashboard.
"""

from __future__ import annotations

import uuid

from .._optional import installed, require
from ..params import HasAttr, InstanceOf, Integral, Interval, Real, validate
from .job import Executor, Job

__all__ = ["DaskExecutor"]


class DaskExecutor(Executor):
    """The batches on a Dask cluster: ``client`` (a ``dask.distributed.Client``), or
    ``address``: a scheduler's (``"tcp://host:8786"``), or ``"local"`` (the default) for a ``LocalCluster``
    of ``n_workers`` processes (one thread each) on 127.0.0.1, started at the first run and
    stopped by :meth:`close`. A client given is the caller's to close.

    Examples
    --------
    >>> DaskExecutor(address="local", n_workers=2)
    DaskExecutor(address='local', n_workers=2, timeout=30.0)
    >>> from types import SimpleNamespace
    >>> client = SimpleNamespace(submit=print)  # stands for a dask.distributed.Client
    >>> DaskExecutor(client, address="local")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.pipeline.plan.PipelineError: DaskExecutor: give a client or an address, not both
    """

    name = "dask"
    CONSTRAINTS = {"client": [HasAttr("submit"), None],  # a dask.distributed.Client
                   "address": [InstanceOf(str), None],
                   "n_workers": [Interval(Integral, 1, None)],
                   "timeout": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, client=None, *, address: str | None = None, n_workers: int = 2,
                 timeout: float = 30.0):
        from .plan import PipelineError

        validate({"client": client, "address": address, "n_workers": n_workers,
                  "timeout": timeout}, self.CONSTRAINTS, "DaskExecutor")
        if client is not None and address is not None:
            raise PipelineError("DaskExecutor: give a client or an address, not both")
        if client is None and address is None:
            address = "local"
        if client is None:  # now, before a run writes anything
            installed("dask.distributed", "executor='dask'")
        self._client, self.address = client, address
        self.n_workers, self.timeout = int(n_workers), float(timeout)
        self._cluster = self._own = None

    def options(self) -> dict:
        if self.address is None:
            return {"address": self._client.scheduler.address}
        return {"address": self.address, "n_workers": self.n_workers, "timeout": self.timeout}

    @property
    def client(self):
        """The client (connected, or its local cluster started, on first use)."""
        if self._client is None:
            distributed = require("dask.distributed", "executor='dask'")
            if self.address == "local":
                self._cluster = distributed.LocalCluster(
                    n_workers=self.n_workers, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None)
                self._client = distributed.Client(self._cluster, timeout=self.timeout)
            else:
                self._client = distributed.Client(self.address, timeout=self.timeout)
            self._own = self._client
        return self._client

    def run(self, job: Job) -> None:
        run_batches(self.client, job)

    def close(self) -> None:
        if self._own is not None:
            self._own.close()
            self._own = self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def run_batches(client, job: Job) -> None:
    """Submit the pending batches of ``job`` to ``client``; record each as it finishes.

    A worker runs the batch's :class:`~genotok.pipeline.job.BatchTask` (with one numba
    thread: the workers are the parallelism) and returns its journal entry; the client records
    it (:meth:`~genotok.pipeline.job.Job.record`: the journal saved, the files uploaded
    to an object store), in the order the batches finish. A worker's error is raised here,
    after the batches that finished are recorded. The tokenizer is scattered to every worker
    once.

    Examples
    --------
    A run restarted after its first batch: the workers write the second batch's shard.

    >>> import genotok, tempfile, warnings
    >>> from pathlib import Path
    >>> from dask.distributed import Client
    >>> from genotok.formats.stores import get_store
    >>> from genotok.pipeline.batch import Batches
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())
    >>> batches = Batches(tok, paths, [[0, 1], [2, 3, 4]], Path(tempfile.mkdtemp()),
    ...                   get_store("corpus"), "fail", "sha256", genotok.CellSpec())
    >>> job = Job(batches, {"done": {"0": {"files": ["shard-00000.gtokc"], "records": 2}}})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")   # dask's own start-up warnings
    ...     with Client(processes=False, n_workers=1, dashboard_address=None) as client:
    ...         run_batches(client, job)
    >>> job.journal["done"]["1"]["files"], job.journal["done"]["1"]["records"]
    (['shard-00001.gtokc'], 3)
    >>> sorted(p.name for p in job.out.iterdir())
    ['journal.json', 'shard-00001.gtokc']
    """
    as_completed = require("dask.distributed", "running on a Dask cluster").as_completed

    todo = job.pending()
    if not todo:
        return
    # a key of its own (hash=False): a run right after another would reuse the key of the same
    # tokenizer while the scheduler still forgets the first run's copy, and its tasks then
    # failed with "lost dependencies" (seen in the kill loop of tests/pipeline/test_recompute.py)
    tok = client.scatter(job.tokenizer, broadcast=True, hash=False)
    # task keys of this run's own: a driver killed and started again submits the same batches
    # while the scheduler may still hold the killed client's tasks under their keys (then
    # cancelled under the new client's feet when the old client is removed)
    run = uuid.uuid4().hex[:12]
    futures = {}
    for b in todo:
        task = job.task(b)
        futures[client.submit(task, tok, key=f"{task.key}-{run}")] = b
    try:
        for fut in as_completed(futures):
            b = futures.pop(fut)
            job.record(b, fut.result())  # re-raises a worker's error
            # journaled: let the scheduler forget the task, so that it is not run again when
            # the worker holding its result dies (a run again that does start, before this,
            # keeps the shard in place: genotok._io.place_once)
            fut.release()
    finally:
        for fut in futures:
            fut.cancel()
