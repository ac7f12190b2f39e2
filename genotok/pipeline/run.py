"""Pre-tokenize many inputs once, into a store: a corpus, gtars ``.gtok`` files, Parquet or Arrow.

The output directory of a corpus run holds numbered shards (each written atomically by the
corpus writer), ``journal.json`` (which batches of inputs are done, updated atomically after
each shard) and, at the end, ``manifest.json``, which joins the shards into one corpus and
records everything needed to audit and reproduce it. A re-run after an interruption (Ctrl-C,
kill -9) reads the journal, skips the batches already done and finishes the rest, so no record
is lost or duplicated and the record order equals an uninterrupted run.

Safe against what it reads and against being killed (issue 19):

- one run at a time per directory, and a directory that resumes after a kill at any instant:
  see :mod:`genotok.pipeline.journal` (the lock, the journal, the clean-up of temporary files);
- record names that become file names (``gtok-dir``) are spelled by
  :func:`genotok._names.to_file_stem`: no barcode can name a path outside the directory;
- with ``on_error="skip"`` any input that cannot be read (corrupt gzip, malformed lines, a bad
  ``.h5ad``, a FIFO) is skipped and listed, with its error, in the manifest and the summary.

The plan (inputs, kinds, batches, settings) is :mod:`genotok.pipeline.plan`; on a Dask
cluster the batches run through :mod:`genotok.pipeline.dask`.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from .. import _config
from .._io import atomic_write, default_hash, file_digest, is_url, place_once, staging_name
from .._names import to_file_stem
from .._optional import require
from .._progress import progress
from ..errors import GenotokError
from ..formats.stores import CorpusStore, MemoryStore, Store, get_store
from ..ragged import Ragged
from ..regions import RegionSet
from ..sink import write_records
from .journal import (
    _clean_temp_files,
    _clean_unjournaled_shards,
    _journal_hash,
    _load_journal,
    _lock,
    _save_journal,
)
from ..params import InstanceOf, Integral, Interval, Options, Real, validate
from ..singlecell.reading import AnnDataOptions
from ..singlecell.spec import CellSpec
from . import remote
from .medians import _fit_medians
from .split import SplitStore
from .plan import (
    SKIPPABLE,
    PipelineError,
    _batches,
    _check_cells,
    _check_regular,
    _input_id,
    _message,
    _plan,
    cell_class,
    expand_inputs,
    input_kind,
    input_read,
    raise_machine_error,
    record_name,
)
from .writer import _run_serial, _Staged

__all__ = ["RunOptions", "RunSummary", "pretokenize"]


@dataclass
class RunSummary:
    """What a :func:`pretokenize` run did.

    Examples
    --------
    >>> import genotok, tempfile
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> s = pretokenize(genotok.examples_dir() / "peaks", tok, tempfile.mkdtemp(), progress=False)
    >>> s.n_inputs, s.n_records, s.failed
    (5, 5, [])
    """

    out: Path
    n_inputs: int
    n_records: int
    n_tokens: int
    seconds: float
    skipped_done: int = 0
    failed: list[dict] = field(default_factory=list)
    #: ``<unk>`` tokens, and records with no universe region at all (only ``<unk>``, or empty)
    n_unk_tokens: int = 0
    n_unk_records: int = 0

    @property
    def unk_share(self) -> float:
        """Share of all tokens that are ``<unk>``."""
        return self.n_unk_tokens / self.n_tokens if self.n_tokens else 0.0

    @property
    def hit_rate(self) -> float:
        """Share of records with at least one universe region (not only ``<unk>``)."""
        return 1.0 - self.n_unk_records / self.n_records if self.n_records else 0.0

    def __str__(self) -> str:
        failed = f", {len(self.failed)} failed (skipped)" if self.failed else ""
        resumed = f", {self.skipped_done} already done" if self.skipped_done else ""
        return (f"pre-tokenized {self.n_inputs} inputs into {self.n_records:,} records "
                f"({self.n_tokens:,} tokens, {self.unk_share:.1%} <unk>; {self.hit_rate:.1%} of "
                f"records hit the universe) in {self.seconds:.2f} s{resumed}{failed} -> {self.out}")

    def _repr_html_(self) -> str:
        from .._html import card

        fields = {"out": self.out, "inputs": f"{self.n_inputs:,}",
                  "records": f"{self.n_records:,}", "tokens": f"{self.n_tokens:,}",
                  "<unk> share": f"{self.unk_share:.1%}",
                  "records hitting the universe": f"{self.hit_rate:.1%}",
                  "seconds": f"{self.seconds:.2f}"}
        if self.skipped_done:
            fields["already done"] = f"{self.skipped_done:,}"
        if self.failed:
            fields["failed (skipped)"] = ", ".join(str(f.get("path")) for f in self.failed[:5]) \
                + (f", … (+{len(self.failed) - 5})" if len(self.failed) > 5 else "")
        return card("genotok.RunSummary", fields)


def _unk_counts(data: np.ndarray, offsets: np.ndarray, unk: int | None) -> tuple[int, int]:
    """``<unk>`` tokens, and rows holding no other token, of a flat ids + offsets pair."""
    known = np.zeros(data.size + 1, np.int64)
    np.cumsum(np.ones(data.size, bool) if unk is None else data != unk, out=known[1:])
    offsets = np.asarray(offsets, np.int64)
    per_row = known[offsets[1:]] - known[offsets[:-1]]
    return int(data.size - known[-1]), int(np.count_nonzero(per_row == 0))


def _warn_if_mostly_unknown(summary: RunSummary, tokenizer) -> None:
    """Most records without a single universe region: almost always the wrong universe."""
    n, bad = summary.n_records, summary.n_unk_records
    if n and bad * 2 > n:
        warnings.warn(
            f"{bad:,} of {n:,} records hit no region of the universe (only <unk>): is "
            f"{_vocab_source(tokenizer) or 'the universe'} the right universe for these inputs "
            "(same genome build, same chromosome names, e.g. 'chr1' vs '1')?",
            UserWarning, stacklevel=3)


def _vocab_source(tokenizer) -> str | None:
    """The file the vocabulary came from: a universe's, or a gene vocabulary's dictionary."""
    u = getattr(tokenizer, "universe", None)
    return u.source if u is not None else tokenizer.source


def _progress(total: int, show: bool, desc: str):
    return progress(total, desc, "file", enabled=show, tty_only=True)  # off on non-TTYs


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


@dataclass(frozen=True)
class RunOptions:
    """The rarely changed settings of a :func:`pretokenize` run.

    Parameters
    ----------
    files_per_shard
        BED inputs per shard (the unit of resumption; a single-cell input is a shard of its
        own).
    hash
        How inputs are fingerprinted in the manifest: ``"xxh3_128"`` (default when xxhash is
        installed; fast) or ``"sha256"`` (for comparing with ``sha256sum``), any hashlib name.
        A resumed run keeps the hash it started with.
    client
        A ``dask.distributed.Client``: batches are tokenized on its workers, each writing its
        own shard; the shards are joined by the manifest (see :mod:`genotok.pipeline.dask`).
    validation
        The share of records held out as a validation split (default 0: none), chosen by a
        hash of each record's name, so a record stays on its side when inputs are added
        (:mod:`genotok.pipeline.split`); written as a second output, ``out/validation/``,
        with its own manifest.
    storage_options
        fsspec's options (credentials, ``client_kwargs={"endpoint_url": …}``…) for the URLs
        of the run: an ``out`` or inputs such as ``s3://bucket/prefix`` (see
        :mod:`genotok.pipeline.remote`).
    read
        :class:`~genotok.AnnDataOptions`: how the ``.h5ad`` / ``.h5mu`` / 10x ``.h5`` inputs
        are read (a ``.h5mu``'s ``modality``, ``raw``, a ``layer``…), as
        ``tokenize_anndata(read=...)`` reads them; part of the plan (a resumed run reading
        otherwise is refused). Other inputs are read with their defaults.

    Examples
    --------
    >>> RunOptions(files_per_shard=16).files_per_shard
    16
    >>> RunOptions(files_per_shard=0)
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: RunOptions: files_per_shard must be an integer in [1, inf), got 0
    """

    files_per_shard: int = 64
    hash: str | None = None
    client: object = None
    validation: float = 0.0
    storage_options: dict | None = None
    read: AnnDataOptions | None = None

    CONSTRAINTS: ClassVar[dict] = {"files_per_shard": [Interval(Integral, 1, None)],
                                   "hash": [InstanceOf(str), None],
                                   "validation": [Interval(Real, 0, 1, closed="left")],
                                   "storage_options": [InstanceOf(dict), None],
                                   "read": [InstanceOf(AnnDataOptions), None]}

    def __post_init__(self):
        validate(self.__dict__, self.CONSTRAINTS, "RunOptions")
        object.__setattr__(self, "files_per_shard", int(self.files_per_shard))


#: what ``pretokenize`` checks its other keywords against (:mod:`genotok.params`)
_RUN_CONSTRAINTS = {"on_error": [Options("fail", "skip")],
                    "cells": [InstanceOf(CellSpec), None],
                    "options": [InstanceOf(RunOptions), None]}


def _check_first_args(inputs, tokenizer, out) -> None:
    """``pretokenize(inputs, tokenizer, out)``: catch swapped or mistaken arguments with a
    message that says what to pass instead."""
    from ..tokenizer import Tokenizer

    if isinstance(inputs, Tokenizer):
        raise TypeError("pretokenize: got a Tokenizer as `inputs`; did you swap them? "
                        "pretokenize(inputs, tokenizer, out)")
    if isinstance(tokenizer, (str, os.PathLike)):
        raise TypeError(f"pretokenize: got a {type(tokenizer).__name__} ({os.fspath(tokenizer)!r}"
                        ") where a Tokenizer is expected; make one first, e.g. "
                        "Tokenizer.from_bed(path) for a universe BED file")
    from ..genes import GeneTokenizer

    if not isinstance(tokenizer, (Tokenizer, GeneTokenizer)):
        raise TypeError(f"pretokenize: `tokenizer` must be a Tokenizer or GeneTokenizer, got "
                        f"{type(tokenizer).__name__}")
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"pretokenize: `out` must be a directory path or a URL, got "
                        f"{type(out).__name__}")


def pretokenize(inputs, tokenizer, out: str | os.PathLike, *, cells: CellSpec | None = None,
                format: str | Store = "corpus", n_threads: int | None = None,
                on_error: str = "fail",
                progress: bool = True, overwrite: bool = False,
                options: RunOptions | None = None) -> RunSummary:
    """Tokenize many region files once, for training to stream many times.

    Parameters
    ----------
    inputs
        Files, globs, directories, or ``@list.txt`` files of paths: BED, BED.gz, narrowPeak…
        (one record per file), ``.h5ad`` cells × peaks matrices and 10x fragment files
        (``.tsv[.gz]``; one record per cell, named by barcode, each file its own shard).
    tokenizer
        A :class:`~genotok.Tokenizer`.
    out
        Output directory. ``format="corpus"`` (default) writes shards + ``manifest.json`` that
        :meth:`Corpus.open` opens as one corpus; ``"gtok-dir"`` writes one gtars ``.gtok`` per input.
        A URL (``s3://bucket/prefix``, ``gs://…``) writes to an object store: the run is
        staged locally, then uploaded, the manifest last (:mod:`genotok.pipeline.remote`);
        inputs may be URLs too.
    format
        The store the records go to (:mod:`genotok.formats.stores`): ``"corpus"`` (default),
        ``"gtok-dir"``, ``"parquet"``, ``"arrow"``, another registered name, or a configured
        store such as ``ParquetStore(rows_per_shard=50_000)``. Part of the plan: a resumed
        run with another store is refused.
    cells
        What each cell of the ``.h5ad`` and fragment inputs becomes: a
        :class:`~genotok.CellSpec`, exactly as :func:`~genotok.tokenize_anndata` and
        :func:`~genotok.tokenize_fragments` take it (the same spec gives the same tokens and
        values). ``RankByMedian()`` without medians takes the medians over *all* inputs first
        (one streaming pass each; a fragment file is counted twice) and encodes every input
        with them, so the corpus has one encoding: the inputs must share their features
        (``.h5ad`` files the same ``var_names``; fragment files, whose features are the
        universe's tokens, not mixed with ``.h5ad`` files). The medians are kept in the
        journal (a resumed run reuses them). BED inputs are one record of their regions: a
        spec other than the default is refused with them; so are condition tokens with
        fragment inputs and ``values=True`` with ``format="gtok-dir"`` (ids only). The spec's
        JSON is part of the run's plan (a resumed run with another spec is refused), of the
        manifest and, with the medians, of each shard's header.
    n_threads
        Threads for parsing and for the overlap kernels (default: all).
    on_error
        ``"fail"`` (default): stop at the first bad input, with its error, keeping what is done
        (a re-run resumes). ``"skip"``: report it, skip it and list it in the manifest. Part
        of the plan: a resumed run with the other choice is refused.
    progress
        Show a progress bar (on a terminal) and print the run's summary line (default);
        ``False`` shows neither.
    overwrite
        Discard an earlier run in ``out`` (default: resume it).
    options
        The rarely changed settings: :class:`RunOptions` (inputs per shard, the input hash,
        a Dask client).

    Examples
    --------
    >>> import genotok, tempfile
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> run = pretokenize(genotok.examples_dir() / "peaks", tok, tempfile.mkdtemp(), progress=False)
    >>> len(genotok.Corpus.open(run.out))
    5
    """
    _check_first_args(inputs, tokenizer, out)
    validate({"on_error": on_error, "cells": cells, "options": options},
             _RUN_CONSTRAINTS, "pretokenize")
    opts = options or RunOptions()
    spec = cells if cells is not None else CellSpec()
    t0 = time.perf_counter()
    algo = opts.hash or default_hash()
    store = get_store(format)
    if isinstance(store, MemoryStore):
        raise PipelineError("pretokenize writes files: format='memory' keeps records in memory; "
                            "use tokenize_anndata / Tokenizer.encode_batch for that")
    url = os.fspath(out).rstrip("/") if is_url(os.fspath(out)) else None
    if url is not None:  # never Path(url): that is the local directory "s3:/bucket/..."
        out = remote.check_output(url, opts.storage_options, overwrite)
    paths = expand_inputs(remote.localize_inputs(inputs, opts.storage_options))
    _check_cells(paths, store, spec)
    if opts.validation:
        store = SplitStore(store, opts.validation)
    if store.per_record_files:
        counts = Counter(record_name(p) for p in paths)
        clash = sorted(n for n, k in counts.items() if k > 1)
        if clash:
            raise PipelineError(f"inputs share the record name(s) {clash[:5]}: their .gtok files "
                                "would overwrite each other; rename them or use format='corpus'")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise PipelineError(f"{out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    with _lock(out):
        _clean_temp_files(out)
        ids = [_input_id(p) for p in paths]
        batches = _batches(paths, opts.files_per_shard)
        if opts.hash is None and not overwrite:  # a resumed run keeps the hash it started with
            algo = _journal_hash(out) or algo
        if algo == "xxh3_128":  # (a resumed run's, or hash= given)
            require("xxhash", f"{out}: hashing the inputs with xxh3_128")
        plan = _plan(tokenizer, store.config(), opts.files_per_shard, ids, algo, spec, on_error,
                     opts.read)
        journal = _load_journal(out, plan, overwrite)
        _clean_unjournaled_shards(out, journal)  # a shard in place is then this run's (writer.py)
        resumed = sum(len(batches[int(b)]) for b in journal["done"])
        # the spec each input is tokenized with (RankByMedian(): the medians of all inputs)
        fitted = _fit_medians(spec, paths, out, journal, tokenizer, n_threads, batches,
                              on_error, read=opts.read)
        # (to an object store: each batch's files are uploaded once it is journaled)
        save = _save_journal if url is None else remote.uploading(url, opts.storage_options,
                                                                    _save_journal)
        if opts.client is not None:
            from .dask import run_batches

            run_batches(opts.client, _run_batch, save, tokenizer, paths, batches, out,
                        journal, store, on_error, algo, fitted, read=opts.read)
        else:
            bar = _progress(len(paths), progress, "pretokenize")
            _run_serial(_run_batch, _stage_batch, save, tokenizer, paths, batches, out,
                        journal, store, n_threads, on_error, algo, fitted, bar, read=opts.read)
            if bar is not None:
                bar.close()
        summary = _finish(out, journal, batches, paths, tokenizer, store, t0)
        summary.skipped_done = resumed
    if url is not None:  # shards, then the manifests; the staging directory goes
        remote.upload(out, url, opts.storage_options)
        summary.out = url
    if progress:
        print(summary)
    _warn_if_mostly_unknown(summary, tokenizer)
    return summary


def _run_cells(tokenizer, path: Path, out: Path, b: int, store: Store, n_threads, on_error,
               algo: str, spec: CellSpec | None = None, read=None) -> dict:
    """One cell source's file (.h5ad, fragments, ...): its cells become the records of part
    ``b`` of the store (the corpus: streamed into one shard; ``gtok-dir``: the files
    ``STEM@BARCODE.gtok``, both parts made safe by :func:`~genotok._names.to_file_stem`, so a
    barcode can never name a path outside ``out``; other stores: the cells in memory, then
    written)."""
    from ..singlecell.cells import tokenize_cells
    from ..singlecell.sources import open_source

    kind = input_kind(path)
    spec = spec if spec is not None else CellSpec()
    shard = out / (_part_name(b) + CorpusStore.suffix)
    staged = staging_name(shard)  # put in place once written, unless it is there (writer.py)
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
                stem = record_name(path)
                meta = {"keys": [f"{stem}/{x}" for x in names]}  # the held-out split's keys
                if store.per_record_files:
                    cell_files = _cell_files(path, names, on_error, failed)
                    keep = [i for i, f in enumerate(cell_files) if f is not None]
                    if len(keep) < len(cell_files):
                        flat = Ragged.from_list([flat[i] for i in keep], dtype=flat.data.dtype)
                        names = [names[i] for i in keep]
                    meta = {"files": [cell_files[i] for i in keep],
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


#: joins a file's stem and a cell's barcode in ``gtok-dir`` file names; never in a safe stem
CELL_SEP = "@"


def _cell_files(path: Path, names: list, on_error: str, failed: list) -> list[str | None]:
    """The ``.gtok`` file name of each cell of ``path``: ``STEM@BARCODE.gtok``. A barcode that
    cannot name a file, or one given twice (two cells, one file), is an error; with
    ``on_error="skip"`` that cell is left out (``None``) and listed in ``failed``."""
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


def _groups(sizes: list[int], budget: int = 500_000) -> list[list[int]]:
    """Consecutive indices grouped so that each group's total size stays near ``budget``."""
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


def _run_batch(tokenizer, paths: list[Path], out: Path, b: int, store: Store,
               n_threads: int | None, on_error: str, algo: str = "sha256",
               spec: CellSpec | None = None, staged: _Staged | None = None,
               read: AnnDataOptions | None = None) -> dict:
    """Tokenize one batch of inputs into shard ``b`` (or .gtok files); return its journal entry
    once the shard (or the files) is durably written. ``spec``: the cell spec of the
    single-cell inputs (medians fitted); ``staged``: the batch already tokenized by
    :func:`_stage_batch` (only its writes are left); ``read``: ``RunOptions.read``."""
    if len(paths) == 1 and cell_class(paths[0]) is not None:
        return _run_cells(tokenizer, paths[0], out, b, store, n_threads, on_error, algo, spec,
                          read)
    if staged is None:
        staged = _stage_batch(tokenizer, paths, out, b, store, n_threads, on_error, algo)
    return staged.write()


def _stage_batch(tokenizer, paths: list[Path], out: Path, b: int, store: Store,
                 n_threads: int | None, on_error: str, algo: str) -> _Staged:
    """Parse and tokenize one batch of BED inputs; what is left to write is in the result."""
    parsed = _parse_all(paths, tokenizer, n_threads, on_error, algo)
    if store.per_record_files:  # a name that cannot be a file is this input's error
        parsed = [r if r[2] is not None else _with_file(r, p, on_error)
                  for r, p in zip(parsed, paths)]
    ok = [k for k, (rs, _, err, _) in enumerate(parsed) if err is None]
    failed = [{"path": str(paths[k]), "error": parsed[k][2]} for k in range(len(paths)) if k not in ok]
    names = [record_name(paths[k]) for k in ok]
    n_tokens = 0
    unk_tokens = unk_records = 0
    with _Staged(store, out / _part_name(b), tokenizer) as w:
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


def _finish(out: Path, journal: dict, batches, paths, tokenizer, store: Store,
            t0: float) -> RunSummary:
    done = [journal["done"][str(b)] for b in range(len(batches))]
    failed = [f for d in done for f in d["failed"]]
    extra = {"genotok_run": {
        "fingerprint": tokenizer.fingerprint, "vocab_size": tokenizer.vocab_size,
        "settings": tokenizer.settings.as_dict(),
        "cells": journal["plan"]["cells"],  # the spec's JSON, as the plan has it
        "universe": _vocab_source(tokenizer),
        "inputs": [s for d in done for s in d["sources"]], "failed": failed,
        "n_records": sum(d["records"] for d in done), "n_tokens": sum(d["tokens"] for d in done),
        # absent from the entries of failed inputs: counted as 0
        "n_unk_tokens": sum(d.get("unk_tokens", 0) for d in done),
        "n_unk_records": sum(d.get("unk_records", 0) for d in done)}}
    stamps = {i["path"]: i for i in journal["plan"]["inputs"]}
    for src in extra["genotok_run"]["inputs"]:  # read twice (rank="median"), or hashed apart
        if src["path"] in stamps and _input_id(Path(src["path"])) != stamps[src["path"]]:
            raise PipelineError(f"{src['path']}: changed while the run read it (its size or "
                                "modification time differ from the run's start): its records "
                                "(and medians) may be of different versions of it; no manifest "
                                "is written: re-run with overwrite=True once the file is final")
    store.finish(out, [f for d in done for f in d["files"]], tokenizer, extra)
    run = extra["genotok_run"]
    return RunSummary(out, len(paths), run["n_records"], run["n_tokens"],
                      time.perf_counter() - t0, 0, failed, run["n_unk_tokens"],
                      run["n_unk_records"])
