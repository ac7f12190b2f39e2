"""Running :func:`genotok.pipeline.pretokenize` on a Dask cluster (``pip install 'genotok[dask]'``).

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
``client=`` at a scheduler you do not control.
"""

from __future__ import annotations

from .._optional import require
from .batch import Batches, run_batch


def run_batches(client, job: Batches, journal: dict) -> None:
    """Submit the batches of ``job`` not yet in ``journal`` to ``client``; record each as it
    finishes.

    A worker runs :func:`~genotok.pipeline.batch.run_batch` on its batch (with one numba
    thread: the workers are the parallelism) and returns its journal entry; the client records
    it (:meth:`~genotok.pipeline.batch.Batches.record`: the journal saved, the files uploaded
    to an object store), in the order the batches finish. A worker's error is raised here,
    after the batches that finished are recorded.

    Parameters
    ----------
    client
        A ``dask.distributed.Client``.
    job
        The run's batches and what they share; its tokenizer is scattered to every worker once.
    journal
        The run's journal (its ``"done"`` maps batch numbers, as strings, to entries; batches
        already there are not submitted).

    Examples
    --------
    A run restarted after its first batch: the workers write the second batch's shard.

    >>> import genotok, tempfile, warnings
    >>> from pathlib import Path
    >>> from dask.distributed import Client
    >>> from genotok.formats.stores import get_store
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())
    >>> job = Batches(tok, paths, [[0, 1], [2, 3, 4]], Path(tempfile.mkdtemp()),
    ...               get_store("corpus"), "fail", "sha256", genotok.CellSpec())
    >>> journal = {"done": {"0": {"files": ["shard-00000.gtokc"], "records": 2}}}
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")   # dask's own start-up warnings
    ...     with Client(processes=False, n_workers=1, dashboard_address=None) as client:
    ...         run_batches(client, job, journal)
    >>> journal["done"]["1"]["files"], journal["done"]["1"]["records"]
    (['shard-00001.gtokc'], 3)
    >>> sorted(p.name for p in job.out.iterdir())
    ['journal.json', 'shard-00001.gtokc']
    """
    as_completed = require("dask.distributed", "running on a Dask cluster").as_completed

    todo = [b for b in range(len(job.batches)) if str(b) not in journal["done"]]
    if not todo:
        return
    # a key of its own (hash=False): a run right after another would reuse the key of the same
    # tokenizer while the scheduler still forgets the first run's copy, and its tasks then
    # failed with "lost dependencies" (seen in the kill loop of tests/pipeline/test_recompute.py)
    tok = client.scatter(job.tokenizer, broadcast=True, hash=False)
    futures = {client.submit(run_batch, tok, job.inputs(b), job.out, b, job.store, 1,
                             job.on_error, job.algo, job.spec, read=job.read,
                             key=f"genotok-batch-{b}-{job.tokenizer.fingerprint[:8]}"): b
               for b in todo}
    try:
        for fut in as_completed(futures):
            b = futures.pop(fut)
            job.record(journal, b, fut.result())  # re-raises a worker's error
            # journaled: let the scheduler forget the task, so that it is not run again when
            # the worker holding its result dies (a run again that does start, before this,
            # keeps the shard in place: genotok._io.place_once)
            fut.release()
    finally:
        for fut in futures:
            fut.cancel()
