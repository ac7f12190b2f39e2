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

This module composes the run: the plan (inputs, kinds, batches, settings:
:mod:`genotok.pipeline.plan`), then the batches (what each becomes:
:mod:`genotok.pipeline.batch`; run by an executor, :mod:`genotok.pipeline.executors`: in this
process, on Dask or on Ray), then the manifest and the summary.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from .._io import default_hash, is_url
from .._optional import require
from .._progress import progress
from .._usage import keywords, warn
from ..formats.stores import MemoryStore, Store, get_store
from ..genes import GeneTokenizer
from ..params import (N_THREADS, Flag, InstanceOf, Integral, Interval, Options, Real, Unchecked,
                      validate_fields, validated)
from ..tokenizer import Tokenizer
from ..singlecell.reading import ReadOptions
from ..singlecell.spec import CellSpec, fields_elsewhere
from . import remote
from .batch import Batches
from .executors import get_executor
from .journal import (
    check_stamps,
    clean_temp_files,
    clean_unjournaled_shards,
    journal_hash,
    load_journal,
    lock,
)
from .medians import fit_medians
from .plan import (
    PipelineError,
    _batches,
    _check_cells,
    _input_id,
    _plan,
    expand_inputs,
    read_tuple,
    record_name,
)
from .job import Executor, Job
from .split import SplitStore

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


def _warn_if_mostly_unknown(summary: RunSummary, tokenizer) -> None:
    """Most records without a single universe region: almost always the wrong universe."""
    n, bad = summary.n_records, summary.n_unk_records
    if n and bad * 2 > n:
        warn(
            f"{bad:,} of {n:,} records hit no region of the universe (only <unk>): is "
            f"{_vocab_source(tokenizer) or 'the universe'} the right universe for these inputs "
            "(same genome build, same chromosome names, e.g. 'chr1' vs '1')?")


def _vocab_source(tokenizer) -> str | None:
    """The file the vocabulary came from: a universe's, or a gene vocabulary's dictionary."""
    u = getattr(tokenizer, "universe", None)
    return u.source if u is not None else tokenizer.source


def _progress(total: int, show: bool, desc: str):
    return progress(total, desc, "file", enabled=show, tty_only=True)  # off on non-TTYs


#: the input hashes a run can use: xxhash's, and hashlib's of a fixed length (an unknown name
#: was refused only when the first input was hashed, after the output folder was made)
HASHES = ("xxh3_128", *sorted(a for a in hashlib.algorithms_available
                              if not a.startswith("shake")))


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
    executor
        Where the batches run (:mod:`genotok.pipeline.executors`): ``None`` or ``"serial"``
        (this process, the default), an executor such as ``DaskExecutor(client)`` or
        ``RayExecutor(address="local", num_workers=4)``, or a registered name (made with its
        defaults, and closed at the end of the run). Every executor gives the same output,
        record for record; not part of the plan (a run may resume on another engine).
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
        How the cell inputs are read: any source's read options (a
        :class:`~genotok.ReadOptions`: :class:`~genotok.AnnDataOptions` for the ``.h5ad`` /
        ``.h5mu`` / 10x ``.h5`` inputs, :class:`~genotok.FragmentOptions` for fragment files,
        a registered source's own), or a tuple of them, one per kind; each input whose source
        takes one of them is read with it, as ``tokenize_cells(read=...)`` reads it, the
        others with their defaults. Part of the plan (a resumed run reading otherwise is
        refused).

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
    executor: Executor | str | None = None
    validation: float = 0.0
    storage_options: dict | None = None
    read: ReadOptions | tuple | None = None

    CONSTRAINTS: ClassVar[dict] = {"files_per_shard": [Interval(Integral, 1, None)],
                                   "hash": [Options(*HASHES), None],
                                   "validation": [Interval(Real, 0, 1, closed="left")],
                                   "executor": [InstanceOf(Executor), InstanceOf(str), None],
                                   "storage_options": [InstanceOf(dict), None],
                                   "read": [InstanceOf(ReadOptions), InstanceOf(tuple, list),
                                            None]}

    def __post_init__(self):
        validate_fields(self)
        object.__setattr__(self, "files_per_shard", int(self.files_per_shard))
        if isinstance(self.read, (tuple, list)):
            object.__setattr__(self, "read", read_tuple(self.read))

    def __repr__(self) -> str:
        # storage_options hold credentials: their keys are shown, never their values
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.storage_options is not None:
            shown["storage_options"] = _Masked(self.storage_options)
        return f"RunOptions({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


class _Masked:
    """A mapping shown by its keys only: ``{'key': ***, 'secret': ***}``."""

    def __init__(self, mapping: dict):
        self.keys = list(mapping)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: ***" for k in self.keys) + "}"


#: what ``pretokenize`` accepts (:mod:`genotok.params`)
PRETOKENIZE = {
    "inputs": [Unchecked("paths, globs, folders or @lists, expanded by expand_inputs")],
    "tokenizer": [InstanceOf(Tokenizer, GeneTokenizer, hint=(
        "make one first, e.g. Tokenizer.from_bed(path) for a universe BED file; the order is "
        "pretokenize(inputs, tokenizer, out)"))],
    "out": [InstanceOf(str, os.PathLike, hint="a directory path or a URL")],
    "cells": [InstanceOf(CellSpec), None], "format": [InstanceOf(str, Store)],
    "n_threads": N_THREADS, "on_error": [Options("fail", "skip")], "progress": [Flag()],
    "overwrite": [Flag()], "options": [InstanceOf(RunOptions), None]}


@keywords(elsewhere=fields_elsewhere("pretokenize", "inputs, tokenizer, out, cells=CellSpec({f}=...)"))
@validated(PRETOKENIZE)
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
        the executor: this process, Dask, Ray…).

    Examples
    --------
    >>> import genotok, tempfile
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> run = pretokenize(genotok.examples_dir() / "peaks", tok, tempfile.mkdtemp(), progress=False)
    >>> len(genotok.Corpus.open(run.out))
    5
    """
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
    with lock(out):
        clean_temp_files(out)
        ids = [_input_id(p) for p in paths]
        batches = _batches(paths, opts.files_per_shard)
        if opts.hash is None and not overwrite:  # a resumed run keeps the hash it started with
            algo = journal_hash(out) or algo
        if algo == "xxh3_128":  # (a resumed run's, or hash= given)
            require("xxhash", f"{out}: hashing the inputs with xxh3_128")
        plan = _plan(tokenizer, store.config(), opts.files_per_shard, ids, algo, spec, on_error,
                     opts.read)
        journal = load_journal(out, plan, overwrite, len(batches))
        check_stamps(out, journal)  # a resumed run trusts its done parts: as committed?
        clean_unjournaled_shards(out, journal)  # a shard in place is then this run's (batch.py)
        resumed = sum(len(batches[int(b)]) for b in journal["done"])
        # the spec each input is tokenized with (RankByMedian(): the medians of all inputs)
        fitted = fit_medians(spec, paths, out, journal, tokenizer, n_threads, batches,
                              on_error, read=opts.read)
        batches_ = Batches(tokenizer, paths, batches, out, store, on_error, algo, fitted,
                           n_threads,
                           # to an object store: each batch's files are uploaded once journaled
                           None if url is None else remote.Upload(url, opts.storage_options),
                           opts.read)
        _run_batches(batches_, journal, opts.executor, progress, resumed)
        summary = _finish(out, journal, batches, paths, tokenizer, store, t0)
        summary.skipped_done = resumed
    if url is not None:  # shards, then the manifests; the staging directory goes
        remote.upload(out, url, opts.storage_options)
        summary.out = url
    if progress:
        print(summary)
    _warn_if_mostly_unknown(summary, tokenizer)
    return summary


def _run_batches(batches: Batches, journal: dict, executor, show: bool, resumed: int) -> None:
    """The pending batches run by the executor; every batch recorded once it returns. An
    executor made here from a name is closed here."""
    ex = get_executor(executor)
    bar = _progress(len(batches.paths), show, "pretokenize")
    if bar is not None and resumed:
        bar.update(resumed)
    job = Job(batches, journal, bar)
    try:
        ex.run(job)
    finally:
        if bar is not None:
            bar.close()
        if ex is not executor:
            ex.close()
    job.check_done(ex)


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
    check_stamps(out, journal)  # every part as committed (a split output's halves too)
    store.finish(out, [f for d in done for f in d["files"]], tokenizer, extra)
    run = extra["genotok_run"]
    return RunSummary(out, len(paths), run["n_records"], run["n_tokens"],
                      time.perf_counter() - t0, 0, failed, run["n_unk_tokens"],
                      run["n_unk_records"])
