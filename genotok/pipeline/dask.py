"""Running :func:`genotok.pipeline.pretokenize` on a Dask cluster (``pip install 'genotok[dask]'``).

Each batch of inputs is tokenized on a worker, which writes its own shard straight into the
output directory (a filesystem every worker sees: NFS, Lustre, a cloud mount); the client only
records finished batches in the journal. The shards are then joined by the manifest, exactly as
in a single-machine run, so both give the same corpus record for record.

The client holds the output directory's lock (an OS ``flock``, see :func:`genotok.pipeline.run._lock`)
for the whole run; workers only write shards whose numbers the client gave them. A worker killed
mid-shard leaves a temporary file that the next run removes before it resumes.

Security: Dask sends tasks and results as pickles, and unpickling runs code. A scheduler that
anyone on the network can reach runs anyone's code on your workers: keep it on a private network
or start it with TLS and authentication (``distributed.security.Security``), and never point
``client=`` at a scheduler you do not control.
"""

from __future__ import annotations

from pathlib import Path


def run_batches(client, tokenizer, paths: list[Path], batches: list[list[int]], out: Path,
                journal: dict, format: str, on_error: str, algo: str,
                enc: dict | None = None) -> None:
    """Submit the batches not yet in the journal; record each as it finishes."""
    try:
        from dask.distributed import as_completed
    except ImportError:
        raise ImportError("running on a Dask cluster needs dask.distributed: "
                          "pip install 'genotok[dask]'") from None
    from .run import _run_batch, _save_journal

    todo = [b for b in range(len(batches)) if str(b) not in journal["done"]]
    if not todo:
        return
    tok = client.scatter(tokenizer, broadcast=True)
    futures = {client.submit(_run_batch, tok, [paths[i] for i in batches[b]], out, b, format, 1,
                             on_error, algo, enc, key=f"genotok-batch-{b}-{tokenizer.fingerprint[:8]}"): b
               for b in todo}
    try:
        for fut in as_completed(futures):
            journal["done"][str(futures[fut])] = fut.result()  # re-raises a worker's error
            _save_journal(out, journal)
    finally:
        for fut in futures:
            fut.cancel()
