"""Writing a pipeline run's batches while the next one is tokenized.

A batch's serial tail (its shard's records appended, the shard fsynced and renamed into place,
then the journal saved) runs in one writer thread while the main thread parses and tokenizes
the next batch, so both cores stay busy. The order that makes a run resumable after a kill -9
is kept: a batch enters the journal only after its shard is durably written, and batches are
written and journaled one at a time, in order (:mod:`genotok.pipeline.run` holds the rest).

A shard is written under a temporary name and then put in place only if no shard of that name
is there yet (:func:`genotok._io.place_once`): a run starts by removing the shards its journal
does not record, so a shard already in place is this run's, written from the same inputs. A
task that a Dask cluster runs again after a worker died (a recompute, possibly after the
manifest) therefore never replaces a shard the manifest records.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .._io import place_once, staging_name
from ..formats.stores import CorpusStore
from ..ragged import Ragged
from ..sink import write_records
from .plan import cell_class


class _Staged:
    """One batch tokenized, its writes not made yet: the records and sources of its part of
    the store (``part``: the corpus shard's path). It takes the calls a :class:`CorpusWriter`
    takes (and is a ``with`` block like it); :meth:`write` makes them and returns the batch's
    journal entry. Holds the batch's tokens (4 bytes each) until then."""

    def __init__(self, store, part: Path, tokenizer):
        self.store, self.part, self.tokenizer = store, part, tokenizer
        self.records: list[tuple] = []
        self.sources: list[tuple] = []
        self.entry: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def append_batch(self, rows: Ragged, **kw) -> None:
        self.records.append((rows, kw))

    def add_source(self, path: str, **kw) -> None:
        self.sources.append((path, kw))

    def write(self) -> dict:
        """Write the part (fsynced and renamed into place by the sink); the journal entry,
        with the names of the files written. A corpus shard is written under a staging name
        and put in place once (:func:`genotok._io.place_once`): a batch run again (Dask
        recomputes a finished task whose worker died) keeps the shard already recorded."""
        once = isinstance(self.store, CorpusStore)
        final = self.part.with_name(self.part.name + CorpusStore.suffix)
        part = staging_name(final) if once else self.part
        files = write_records(self.records, part, self.tokenizer, store=self.store,
                              sources=self.sources, metadata_columns=["source"],
                              overwrite=True)
        if once:
            place_once(part, final)
            files = [final.name]
        return {"files": files, **self.entry}


def _run_serial(run_batch: Callable[..., dict], stage_batch: Callable[..., _Staged],
                save_journal: Callable[[Path, dict], None],
                tokenizer, paths: list[Path], batches, out: Path, journal: dict, store,
                n_threads, on_error: str, algo: str, enc: dict, bar, read=None) -> None:
    """Run the batches not yet done, in order, in this process: batch ``b + 1`` is parsed and
    tokenized (numba kernels, which release the GIL) while a writer thread writes and fsyncs
    batch ``b``'s shard and then records it in the journal, in that order, one batch at a time.
    A single-cell input runs whole in the writer thread (its kernels never run beside
    another batch's). ``run_batch`` and ``save_journal``: the pipeline's batch runner (given
    ``staged``, it only writes) and journal writer."""

    def commit(b: int, batch: list[int], staged: _Staged | None) -> None:
        journal["done"][str(b)] = run_batch(tokenizer, [paths[i] for i in batch], out, b,
                                             store, n_threads, on_error, algo, enc, staged,
                                             read=read)
        save_journal(out, journal)  # only once the shard is durably in place

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
            staged = (None if len(files) == 1 and cell_class(files[0]) is not None else
                      stage_batch(tokenizer, files, out, b, store, n_threads, on_error, algo))
            if pending is not None:
                pending.result()  # batch b - 1 written and journaled (or its error raised)
            pending = writer.submit(commit, b, batch, staged)
            if staged is None:
                pending.result()
            if bar is not None:
                bar.update(len(batch))
        if pending is not None:
            pending.result()
