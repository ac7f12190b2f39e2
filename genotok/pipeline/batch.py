"""What one batch of a :func:`~genotok.pipeline.pretokenize` run's inputs becomes: its part of
the store (a corpus shard, ``.gtok`` files, Parquet or Arrow files) and its journal entry.

A batch is either BED inputs (one record each: parsed and tokenized in threads by
:func:`stage_batch`, then written by :meth:`Staged.write`) or one cell source's file (its
cells become the records: :func:`run_batch` streams it through the one driver,
:func:`genotok.singlecell.tokenize_cells`). :class:`Batches` holds what every batch of a
run shares and records a finished batch in the journal (then uploads its files, to an object
store). The batches run in this process (:mod:`genotok.pipeline.writer`: the next batch is
tokenized while the last one is written) or on a Dask cluster (:mod:`genotok.pipeline.dask`),
both through these steps.

A corpus shard is written under a temporary name and then put in place only if no shard of
that name is there yet (:func:`genotok._io.place_once`): a run starts by removing the shards
its journal does not record, so a shard already in place is this run's, written from the same
inputs. A task that a Dask cluster runs again after a worker died (a recompute, possibly after
the manifest) therefore never replaces a shard the manifest records.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import _config
from .._io import file_digest, place_once, staging_name
from .._names import to_file_stem
from ..errors import GenotokError
from ..formats.stores import CorpusStore, Store
from ..ragged import Ragged
from ..regions import RegionSet
from ..singlecell.reading import ReadOptions
from ..singlecell.spec import CellSpec
from ..sink import write_records
from .journal import save_journal, stamps
from .plan import (
    SKIPPABLE,
    PipelineError,
    _check_regular,
    _message,
    cell_class,
    input_kind,
    input_read,
    raise_machine_error,
    record_name,
)

if TYPE_CHECKING:
    from .remote import Upload

__all__ = ["CELL_SEP", "Batches", "Staged", "cell_files", "run_batch", "stage_batch"]

#: joins a file's stem and a cell's barcode in ``gtok-dir`` file names; never in a safe stem
CELL_SEP = "@"


@dataclass(frozen=True)
class Batches:
    """The batches of one run and what they share: ``batches[b]`` indexes ``paths``; batch
    ``b`` becomes part ``b`` of ``store`` in ``out``. ``spec``: the cell spec of the
    single-cell inputs (medians fitted); ``upload``: an object store the files of each
    journaled batch are sent to (:mod:`genotok.pipeline.remote`), or ``None``.

    Examples
    --------
    >>> import genotok
    >>> from genotok.formats.stores import get_store
    >>> ex = genotok.examples_dir()
    >>> tok = genotok.Tokenizer.from_bed(ex / "universe.bed")
    >>> job = Batches(tok, [ex / "peaks" / "sample0.narrowPeak", ex / "pbmc.h5ad"], [[0], [1]],
    ...               Path("out"), get_store("corpus"), "fail", "sha256", genotok.CellSpec())
    >>> [p.name for p in job.inputs(1)], job.is_cells(0), job.is_cells(1)
    (['pbmc.h5ad'], False, True)
    """

    tokenizer: object
    paths: list[Path]
    batches: list[list[int]]
    out: Path
    store: Store
    on_error: str
    algo: str
    spec: CellSpec
    n_threads: int | None = None
    upload: Upload | None = None
    read: ReadOptions | tuple | None = None  # RunOptions.read: how the cell inputs are read

    def inputs(self, b: int) -> list[Path]:
        """The input files of batch ``b``."""
        return [self.paths[i] for i in self.batches[b]]

    def is_cells(self, b: int) -> bool:
        """Batch ``b`` is one cell source's file (it runs whole, never staged)."""
        files = self.inputs(b)
        return len(files) == 1 and cell_class(files[0]) is not None

    def stage(self, b: int) -> Staged:
        """Batch ``b`` (BED inputs) parsed and tokenized; its writes are left."""
        return stage_batch(self.tokenizer, self.inputs(b), self.out, b, self.store,
                           self.n_threads, self.on_error, self.algo)

    def run(self, b: int, staged: Staged | None = None) -> dict:
        """Batch ``b`` written (from ``staged`` when given); its journal entry."""
        return run_batch(self.tokenizer, self.inputs(b), self.out, b, self.store, self.n_threads,
                         self.on_error, self.algo, self.spec, staged, self.read)

    def record(self, journal: dict, b: int, entry: dict) -> None:
        """Batch ``b`` done: its entry in the journal, saved (only ever once its files are
        durably in place), then its files uploaded (to an object store)."""
        journal["done"][str(b)] = {**entry, "stamps": stamps(self.out, entry["files"])}
        save_journal(self.out, journal)
        if self.upload is not None:
            self.upload.journaled(self.out, journal)


def run_batch(tokenizer, paths: list[Path], out: Path, b: int, store: Store,
              n_threads: int | None, on_error: str, algo: str = "sha256",
              spec: CellSpec | None = None, staged: Staged | None = None,
              read: ReadOptions | tuple | None = None) -> dict:
    """Tokenize one batch of inputs into part ``b`` of ``store`` (a shard, or .gtok files);
    return its journal entry once the part is durably written. ``spec``: the cell spec of the
    single-cell inputs (medians fitted); ``staged``: the batch already tokenized by
    :func:`stage_batch` (only its writes are left); ``read``: ``RunOptions.read``. Picklable, with its arguments: a Dask
    worker runs it (:mod:`genotok.pipeline.dask`).

    Examples
    --------
    A cell source's file is a batch of its own, one record a cell:

    >>> import genotok, tempfile
    >>> from genotok.formats.stores import get_store
    >>> ex = genotok.examples_dir()
    >>> entry = run_batch(genotok.Tokenizer.from_bed(ex / "universe.bed"), [ex / "pbmc.h5ad"],
    ...                   Path(tempfile.mkdtemp()), 3, get_store("corpus"), 1, "fail")
    >>> entry["files"], entry["sources"][0]["kind"], entry["records"]
    (['shard-00003.gtokc'], 'h5ad', 20)
    """
    if len(paths) == 1 and cell_class(paths[0]) is not None:
        return _run_cells(tokenizer, paths[0], out, b, store, n_threads, on_error, algo, spec,
                          read)
    if staged is None:
        staged = stage_batch(tokenizer, paths, out, b, store, n_threads, on_error, algo)
    return staged.write()


class Staged:
    """One batch tokenized, its writes not made yet: the records and sources of its part of
    the store (``part``: the corpus shard's path). It takes the calls a :class:`CorpusWriter`
    takes (and is a ``with`` block like it); :meth:`write` makes them and returns the batch's
    journal entry. Holds the batch's tokens (4 bytes each) until then.

    Examples
    --------
    >>> import genotok, tempfile
    >>> from genotok.formats.stores import get_store
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> w = Staged(get_store("corpus"), Path(tempfile.mkdtemp()) / "shard-00000", tok)
    >>> w.append_batch(genotok.Ragged.from_list([[0, 1], [2]]), names=["a", "b"],
    ...                meta={"source": ["a.bed", "b.bed"]})
    >>> w.write()
    {'files': ['shard-00000.gtokc']}
    """

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


def stage_batch(tokenizer, paths: list[Path], out: Path, b: int, store: Store,
                n_threads: int | None, on_error: str, algo: str) -> Staged:
    """Parse and tokenize one batch of BED inputs; what is left to write is in the result.

    Examples
    --------
    >>> import genotok, tempfile
    >>> from genotok.formats.stores import get_store
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> paths = sorted((genotok.examples_dir() / "peaks").iterdir())[:3]
    >>> out = Path(tempfile.mkdtemp())
    >>> staged = stage_batch(tok, paths, out, 0, get_store("corpus"), 1, "fail", "sha256")
    >>> staged.entry["records"], list(out.iterdir())   # tokenized, nothing written yet
    (3, [])
    >>> staged.write()["files"]
    ['shard-00000.gtokc']
    """
    parsed = _parse_all(paths, tokenizer, n_threads, on_error, algo)
    if store.per_record_files:  # a name that cannot be a file is this input's error
        parsed = [r if r[2] is not None else _with_file(r, p, on_error)
                  for r, p in zip(parsed, paths)]
    ok = [k for k, (rs, _, err, _) in enumerate(parsed) if err is None]
    failed = [{"path": str(paths[k]), "error": parsed[k][2]} for k in range(len(paths)) if k not in ok]
    names = [record_name(paths[k]) for k in ok]
    n_tokens = 0
    unk_tokens = unk_records = 0
    with Staged(store, out / _part_name(b), tokenizer) as w:
        for group in _groups([len(parsed[k][0]) for k in ok]):
            # groups of ~0.5M queries keep every scratch array under glibc's mmap threshold,
            # so it is reused from the heap instead of page-faulted in afresh for each shard
            rows = tokenizer.encode_prepared([parsed[ok[i]][0] for i in group],
                                             [parsed[ok[i]][3] for i in group],
                                             n_threads=n_threads, dtype=np.uint32)
            n_tokens += int(rows.data.size)
            u_t, u_r = _unk_counts(rows.data, rows.offsets, tokenizer.unk_token_id)
            unk_tokens, unk_records = unk_tokens + u_t, unk_records + u_r
            w.append_batch(rows, names=[names[i] for i in group],
                           meta={"source": [str(paths[ok[i]]) for i in group]})
        for k in ok:
            w.add_source(str(paths[k]), size=paths[k].stat().st_size,
                         hash=parsed[k][1], hash_algorithm=algo)
    w.entry = {"records": len(ok), "tokens": n_tokens, "unk_tokens": unk_tokens,
               "unk_records": unk_records, "failed": failed,
               "sources": [{"path": str(paths[k]), "size": paths[k].stat().st_size,
                            "hash": parsed[k][1], "hash_algorithm": algo, "record": names[i]}
                           for i, k in enumerate(ok)]}
    return w


def _parse_all(paths: list[Path], tokenizer, n_threads: int | None, on_error: str, algo: str):
    """Parse files in threads (the numba parser releases the GIL); hash them and prepare them
    for the kernels (codes, order) alongside, so that work is not serial in the main thread."""

    def work(p: Path):
        try:
            _check_regular(p)
            rs = RegionSet.from_bed(p)
            with _config.threads(1):  # the workers already run one file each
                prepared = tokenizer.prepare(rs)
            return rs, file_digest(p, algo), None, prepared
        except SKIPPABLE as exc:
            if on_error == "fail":
                raise
            raise_machine_error(exc, p)
            return None, None, _message(exc, p), None

    workers = max(1, min(len(paths), n_threads or _config.max_threads()))
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(work, paths))


def _with_file(parsed: tuple, path: Path, on_error: str) -> tuple:
    """``parsed`` unchanged when the record name of ``path`` can name a ``.gtok`` file, else
    marked failed (or raising, with ``on_error="fail"``)."""
    try:
        to_file_stem(record_name(path), f"{path}: file name")
    except GenotokError as exc:
        if on_error == "fail":
            raise
        return None, None, str(exc), None
    return parsed


def _groups(sizes: list[int], budget: int = 500_000) -> list[list[int]]:
    """Consecutive indices grouped so that each group's total size stays near ``budget``.

    Examples
    --------
    >>> _groups([300_000, 300_000, 10, 600_000]), _groups([])
    ([[0], [1, 2], [3]], [[]])
    """
    groups: list[list[int]] = []
    cur: list[int] = []
    total = 0
    for i, n in enumerate(sizes):
        if cur and total + n > budget:
            groups.append(cur)
            cur, total = [], 0
        cur.append(i)
        total += n
    if cur or not groups:
        groups.append(cur)
    return groups


def _part_name(b: int) -> str:
    """Part ``b``'s name: the store names its files after it (``shard-00000.gtokc``,
    ``shard-00000-000.parquet``…)."""
    return f"shard-{b:05d}"


def _unk_counts(data: np.ndarray, offsets: np.ndarray, unk: int | None) -> tuple[int, int]:
    """``<unk>`` tokens, and rows holding no other token, of a flat ids + offsets pair.

    Examples
    --------
    >>> _unk_counts(np.array([7, 1, 7, 7]), np.array([0, 2, 3, 4, 4]), 7)
    (3, 3)
    >>> _unk_counts(np.array([1, 2]), np.array([0, 0, 2]), None)
    (0, 1)
    """
    offsets = np.asarray(offsets, np.int64)
    if unk is None or not np.any(data == unk):  # no <unk>: no pass over the ids (a gene
        return 0, int(np.count_nonzero(offsets[1:] == offsets[:-1]))  # vocabulary's cells)
    known = np.zeros(data.size + 1, np.int64)
    np.cumsum(data != unk, out=known[1:])
    per_row = known[offsets[1:]] - known[offsets[:-1]]
    return int(data.size - known[-1]), int(np.count_nonzero(per_row == 0))


def _run_cells(tokenizer, path: Path, out: Path, b: int, store: Store, n_threads, on_error,
               algo: str, spec: CellSpec | None = None, read=None) -> dict:
    """One cell source's file (.h5ad, fragments, ...): its cells become the records of part
    ``b`` of the store (the corpus: streamed into one shard; ``gtok-dir``: the files
    ``STEM@BARCODE.gtok``, both parts made safe by :func:`~genotok._names.to_file_stem`, so a
    barcode can never name a path outside ``out``; other stores: the cells in memory, then
    written)."""
    from ..singlecell.cells import kept_cells, tokenize_cells
    from ..singlecell.sources import open_source

    kind = input_kind(path)
    spec = spec if spec is not None else CellSpec()
    shard = out / (_part_name(b) + CorpusStore.suffix)
    staged = staging_name(shard)  # put in place once written, unless it is there (Staged.write)
    failed: list[dict] = []
    try:
        _check_regular(path)
        digest = file_digest(path, algo)
        streamed = isinstance(store, CorpusStore)  # memory stays flat in the cells
        with open_source(path, input_read(path, read), tokenizer=tokenizer,
                         n_threads=n_threads, spec=spec,
                         out=staged if streamed else None) as source:
            if streamed:
                corpus = tokenize_cells(source, tokenizer, spec, n_threads=n_threads,
                                        out=staged)
                n, n_tokens, files = len(corpus), corpus.n_tokens, [shard.name]
                flat = corpus.to_ragged()
                place_once(staged, shard)
            else:
                flat = tokenize_cells(source, tokenizer, spec, n_threads=n_threads)
                names = [str(x) for x in source.names()]
                kept = kept_cells(source, spec.cell_filter)  # the cells the spec keeps
                if kept is not None:
                    names = [names[i] for i in kept.tolist()]
                stem = record_name(path)
                meta = {"keys": [f"{stem}/{x}" for x in names]}  # the held-out split's keys
                if store.per_record_files:
                    files_of = cell_files(path, names, on_error, failed)
                    keep = [i for i, f in enumerate(files_of) if f is not None]
                    if len(keep) < len(files_of):
                        flat = Ragged.from_list([flat[i] for i in keep], dtype=flat.data.dtype)
                        names = [names[i] for i in keep]
                    meta = {"files": [files_of[i] for i in keep],
                            "keys": [meta["keys"][i] for i in keep]}
                files = write_records([(flat, {"names": names, "meta": meta})],
                                      out / _part_name(b), tokenizer, store=store,
                                      values=spec.values, overwrite=True,
                                      extra={"cells": json.loads(spec.to_json())},
                                      sources=[(path.name, {"size": path.stat().st_size})])
                n, n_tokens = len(flat), int(flat.data.size)
        unk = _unk_counts(flat.data, flat.offsets, tokenizer.unk_token_id)
    except SKIPPABLE as exc:
        if on_error == "fail":
            raise
        staged.unlink(missing_ok=True)  # whatever of it was written: not part of the corpus
        raise_machine_error(exc, path)
        return {"files": [], "records": 0, "tokens": 0, "sources": [],
                "failed": [{"path": str(path), "error": _message(exc, path)}]}
    return {"files": files, "records": n, "tokens": n_tokens,
            "unk_tokens": unk[0], "unk_records": unk[1], "failed": failed,
            "sources": [{"path": str(path), "size": path.stat().st_size, "hash": digest,
                         "hash_algorithm": algo, "records": n, "kind": kind}]}


def cell_files(path: Path, names: list, on_error: str, failed: list) -> list[str | None]:
    """The ``.gtok`` file name of each cell of ``path``: ``STEM@BARCODE.gtok``. A barcode that
    cannot name a file, or one given twice (two cells, one file), is an error; with
    ``on_error="skip"`` that cell is left out (``None``) and listed in ``failed``.

    Examples
    --------
    >>> failed = []
    >>> cell_files(Path("d/x.tsv.gz"), ["A", "B", "A"], "skip", failed), len(failed)
    (['x@A.gtok', 'x@B.gtok', None], 1)
    """
    stem = to_file_stem(record_name(path), f"{path}: file name")
    files: list[str | None] = []
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        try:
            file = f"{stem}{CELL_SEP}{to_file_stem(str(name), f'{path}: cell {i} barcode')}.gtok"
            if file in seen:
                raise PipelineError(f"{path}: cells {seen[file]} and {i} share the barcode "
                                    f"{name!r}; their .gtok files would overwrite each other "
                                    "(make the barcodes unique, or use format='corpus')")
        except GenotokError as exc:
            if on_error == "fail":
                raise
            failed.append({"path": str(path), "record": str(name), "error": str(exc)})
            files.append(None)
            continue
        seen[file] = i
        files.append(file)
    return files
