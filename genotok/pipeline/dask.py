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
first stays, see :mod:`genotok.pipeline.writer`), and a task is released as soon as it is
journaled, so the scheduler has no reason to run it again.

Security: Dask sends tasks and results as pickles, and unpickling runs code. A scheduler that
anyone on the network can reach runs anyone's code on your workers: keep it on a private network
or start it with TLS and authentication (``distributed.security.Security``), and never point
``client=`` at a scheduler you do not control.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .._optional import require


def run_batches(client, run_batch: Callable[..., dict], save_journal: Callable[[Path, dict], None],
                tokenizer, paths: list[Path], batches: list[list[int]], out: Path,
                journal: dict, format: str, on_error: str, algo: str,
                enc: dict | None = None, read=None) -> None:
    """Submit the batches not yet in the journal to ``client``; record each as it finishes.

    The pipeline hands in its own steps, so this module imports nothing of it:
    ``run_batch(tokenizer, paths, out, b, format, n_threads, on_error, algo, enc, read=read)
    -> entry``
    tokenizes batch ``b`` on a worker (with one numba thread: the workers are the parallelism)
    and returns its journal entry; ``save_journal(out, journal)`` is called on the client after
    each entry is recorded in ``journal["done"]``, in the order the batches finish. A worker's
    error is raised here, after the batches that finished are recorded.

    Parameters
    ----------
    client
        A ``dask.distributed.Client``.
    run_batch, save_journal
        The pipeline's batch runner and journal writer (picklable: ``run_batch`` is sent to
        the workers).
    tokenizer
        The :class:`~genotok.Tokenizer`, scattered to every worker once.
    paths, batches
        The inputs, and the indices into ``paths`` of each batch.
    out, journal
        The output directory and the journal (its ``"done"`` maps batch numbers, as strings,
        to entries; batches already there are not submitted).
    format, on_error, algo, enc, read
        Passed on to ``run_batch`` (``read``: the run's ``AnnDataOptions``).

    Examples
    --------
    >>> import genotok, tempfile, warnings
    >>> from pathlib import Path
    >>> from dask.distributed import Client
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> def count_files(tok, paths, out, b, *rest, **kw):  # a stand-in for the pipeline's runner
    ...     return {"files": len(paths)}
    >>> saved = []
    >>> journal = {"done": {"0": {"files": 2}}}   # batch 0 was done before a restart
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")   # dask's own start-up warnings
    ...     with Client(processes=False, n_workers=1, dashboard_address=None) as client:
    ...         run_batches(client, count_files, lambda out, j: saved.append(len(j["done"])),
    ...                     tok, [Path("a.bed"), Path("b.bed"), Path("c.bed")], [[0, 1], [2]],
    ...                     Path(tempfile.mkdtemp()), journal, "corpus", "fail", "sha256")
    >>> journal["done"], saved
    ({'0': {'files': 2}, '1': {'files': 1}}, [2])
    """
    as_completed = require("dask.distributed", "running on a Dask cluster").as_completed

    todo = [b for b in range(len(batches)) if str(b) not in journal["done"]]
    if not todo:
        return
    # a key of its own (hash=False): a run right after another would reuse the key of the same
    # tokenizer while the scheduler still forgets the first run's copy, and its tasks then
    # failed with "lost dependencies" (seen in the kill loop of tests/pipeline/test_recompute.py)
    tok = client.scatter(tokenizer, broadcast=True, hash=False)
    futures = {client.submit(run_batch, tok, [paths[i] for i in batches[b]], out, b, format, 1,
                             on_error, algo, enc, read=read, key=f"genotok-batch-{b}-{tokenizer.fingerprint[:8]}"): b
               for b in todo}
    try:
        for fut in as_completed(futures):
            b = futures.pop(fut)
            journal["done"][str(b)] = fut.result()  # re-raises a worker's error
            save_journal(out, journal)
            # journaled: let the scheduler forget the task, so that it is not run again when
            # the worker holding its result dies (a run again that does start, before this,
            # keeps the shard in place: genotok._io.place_once)
            fut.release()
    finally:
        for fut in futures:
            fut.cancel()
