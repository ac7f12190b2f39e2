"""One file describes a run: ``genotok run FILE.toml`` and :class:`Pipeline`.

A run file names the run's output folder and executor (``[run]``), its datasets (``[[dataset]]``:
inputs, tokenizer, store, cell spec), an optional weighted mixture of them (``[mixture]``,
written as ``out/mixture.json``, which ``genotok.mix(out)`` opens) and an optional pack stage
(``[pack]``: the mixture packed into rows of at most ``seq_length`` tokens, ``out/packed/``)::

    [run]
    out = "runs/demo"            # relative paths: from this file's folder
    executor = "serial"          # "serial" | "dask" | "ray" (or a plugin's name)
    threads = 2
    [run.ray]                    # the executor's keywords (RayExecutor(address=…, …))
    address = "local"

    [[dataset]]
    name = "peaks"
    inputs = ["peaks/*.narrowPeak*"]
    tokenizer = "universe.bed"
    format = "parquet"

    [mixture]
    weights = { peaks = 1.0 }
    seed = 7

    [pack]
    seq_length = 512
    strategy = "ffd"

Each dataset is one :func:`~genotok.pipeline.pretokenize` run into ``out/<name>/`` (the same
output, record for record, as a call with the same settings; resumed the same way after a
kill). The whole file is checked before anything runs: an unknown key (with a "did you mean"),
a value of the wrong type or a missing input is a :class:`RunFileError` naming the file and the
key, and nothing is written. ``out/run.json`` records the file's content: a run resumed with
another file is refused.

The module composes the pipeline and the training room (the mixture), so it sits on a floor of
its own between the training room and the CLI (``docs/architecture.md``).
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._io import atomic_write, is_url, parse_toml, read_small
from .errors import GenotokError
from .formats.stores import get_store, stores
from .mixture import SEED, WEIGHTS, mix, write_mixture
from .packing import pack
from .params import N_THREADS, InstanceOf, ParameterError, check, validated
from .pipeline import (RunOptions, RunSummary, expand_inputs, get_executor, input_kind,
                       pretokenize)
from .pipeline.executors import executor_names
from .ragged import Ragged
from .singlecell.spec import CellSpec
from .sink import write_records

__all__ = ["PackReport", "Pipeline", "RunFileError", "read_packed"]

RUN_MANIFEST = "run.json"
PACKED = "packed"
_MAX_BYTES = 1 << 20  # a run file is a page of TOML, not a data file


class RunFileError(GenotokError, ValueError):
    """A run file that cannot run: not TOML, an unknown key, a wrong type, a missing input;
    the message names the file and the key (``genotok run`` exits with 2).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "run.toml"
    >>> _ = f.write_text('[run]\\nout = "o"\\nexecutr = "ray"\\n[[dataset]]\\n')
    >>> try:
    ...     Pipeline.from_toml(f)
    ... except RunFileError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    [run].executr: unknown key (did you mean 'executor'?); the keys are out, executor, threads, files_per_shard, hash, on_error, validation, storage_options
    """


# ------------------------------------------------------------------------------ the schema
#: key -> (types, required); a value of another type is refused naming the key
_RUN = {"out": ((str,), True), "executor": ((str,), False), "threads": ((int,), False),
        "files_per_shard": ((int,), False), "hash": ((str,), False),
        "on_error": ((str,), False), "validation": ((float, int), False),
        "storage_options": ((dict,), False)}
_DATASET = {"name": ((str,), True), "inputs": ((list, str), True), "tokenizer": ((str,), True),
            "format": ((str,), False), "cells": ((dict,), False)}
_MIXTURE = {"weights": ((dict,), True), "seed": ((int,), False)}
_PACK = {"seq_length": ((int,), True), "strategy": ((str,), False), "format": ((str,), False)}
_TOP = {"run": ((dict,), True), "dataset": ((list,), True), "mixture": ((dict,), False),
        "pack": ((dict,), False)}
#: what a pack stage's store must keep: the segment ids (values) and the segments' table
_PACK_KEEPS = frozenset({"values", "metadata"})
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", list: "an array",
               dict: "a table", bool: "true or false"}


@dataclass
class Dataset:
    """One ``[[dataset]]``: its inputs found, its tokenizer's source, store and cell spec.

    >>> Dataset("peaks", ["a.bed"], "universe.bed").format
    'corpus'
    """

    name: str
    inputs: list
    tokenizer: str
    format: str = "corpus"
    cells: CellSpec | None = None
    patterns: list = field(default_factory=list)


@dataclass
class PackReport:
    """What the pack stage wrote: rows, tokens, and their fill (tokens over rows × seq_length).

    >>> print(PackReport(Path("packed"), 2, 1000, 512, "ffd"))
    packed 1,000 tokens into 2 rows of at most 512 (ffd, fill 97.7%) -> packed
    """

    out: Path
    n_rows: int
    n_tokens: int
    seq_length: int
    strategy: str

    @property
    def fill(self) -> float:
        room = self.n_rows * self.seq_length
        return self.n_tokens / room if room else 1.0

    def __str__(self) -> str:
        return (f"packed {self.n_tokens:,} tokens into {self.n_rows:,} rows of at most "
                f"{self.seq_length} ({self.strategy}, fill {self.fill:.1%}) -> {self.out}")


class Pipeline:
    """A run file, checked: :meth:`from_toml` reads and validates it (nothing is written),
    :meth:`plan` says what would run, :meth:`run` runs it.

    Examples
    --------
    >>> import genotok, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> ex = genotok.examples_dir()
    >>> _ = (folder / "run.toml").write_text(f'''
    ... [run]
    ... out = "out"
    ... [[dataset]]
    ... name = "peaks"
    ... inputs = ["{ex}/peaks/*.narrowPeak*"]
    ... tokenizer = "{ex}/universe.bed"
    ... ''')
    >>> p = Pipeline.from_toml(folder / "run.toml")
    >>> [d.name for d in p.datasets], len(p.datasets[0].inputs), p.executor_name
    (['peaks'], 5, 'serial')
    >>> results = p.run(progress=False)
    >>> results["peaks"].n_records, sorted(x.name for x in p.out.iterdir())
    (5, ['peaks', 'run.json'])
    """

    def __init__(self, doc: dict, source: str | os.PathLike, text: str = ""):
        self.source = Path(source)
        self.text = text
        self.doc = doc
        self._validate()

    # ----------------------------------------------------------------------- reading
    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> Pipeline:
        """The run file at ``path``, validated (a :class:`RunFileError` names the key)."""
        path = Path(path)
        raw = read_small(path, _MAX_BYTES, RunFileError, "run file")
        doc = parse_toml(raw, str(path), RunFileError, "run file")
        return cls(doc, path, raw.decode("utf-8"))

    def _err(self, key: str, why: str) -> RunFileError:
        return RunFileError(f"{self.source}: {key}: {why}")

    def _checked(self, where: str, name: str, value, constraints: list):
        """``value`` checked against the constraints the callable it feeds declares (one
        validator for the run file and the Python call), refused as an error at ``where``."""
        try:
            return check(name, value, constraints)
        except ParameterError as exc:
            raise self._err(where, str(exc)) from None

    def _check_table(self, table, schema: dict, where: str) -> None:
        for key in table:
            if key not in schema:
                close = difflib.get_close_matches(key, list(schema), 1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise self._err(f"{where}.{key}" if where else key,
                                f"unknown key{hint}; the keys are {', '.join(schema)}")
        for key, (types, required) in schema.items():
            name = f"{where}.{key}" if where else key
            if key not in table:
                if required:
                    raise self._err(name, "missing (required)")
                continue
            v = table[key]
            if isinstance(v, bool) or not isinstance(v, types):
                want = " or ".join(_TYPE_NAMES[t] for t in types)
                raise self._err(name, f"must be {want}, got {type(v).__name__} {v!r}"[:300])

    def _path(self, p: str) -> str:
        """A path of the file, relative to its folder (URLs as they are)."""
        if is_url(p):
            return p
        q = Path(os.path.expanduser(p))
        return os.path.abspath(q if q.is_absolute() else self.source.parent / q)

    def _validate(self) -> None:
        doc = self.doc
        self._check_table(doc, _TOP, "")
        run = dict(doc["run"])
        executors = executor_names()
        sub = {k: v for k, v in run.items() if k in executors and isinstance(v, dict)}
        self._check_table({k: v for k, v in run.items() if k not in sub}, _RUN, "[run]")
        self.executor_name = run.get("executor", "serial")
        if self.executor_name not in executors:
            close = difflib.get_close_matches(self.executor_name, executors, 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self._err("[run].executor", f"unknown executor {self.executor_name!r}{hint}; "
                            f"the executors are {', '.join(executors)}")
        for name in sub:
            if name != self.executor_name:
                raise self._err(f"[run.{name}]", f"a table for executor {name!r}, but the run's "
                                f"executor is {self.executor_name!r}")
        self.executor_options = dict(sub.get(self.executor_name, {}))
        try:  # its keywords checked now (an engine starts only when the run does)
            get_executor(self.executor_name, **self.executor_options)
        except (GenotokError, TypeError, ValueError, ImportError) as exc:
            raise self._err(f"[run.{self.executor_name}]", str(exc)) from None
        if is_url(run["out"]):
            raise self._err("[run].out", "a folder on this machine (the datasets' inputs may "
                            "be URLs)")
        self.out = Path(self._path(run["out"]))
        self.threads = run.get("threads")
        try:
            self.options = RunOptions(files_per_shard=run.get("files_per_shard", 64),
                                      hash=run.get("hash"),
                                      validation=run.get("validation", 0.0),
                                      storage_options=run.get("storage_options"))
            check("threads", self.threads, N_THREADS)
        except (GenotokError, ValueError) as exc:
            raise self._err("[run]", str(exc)) from None
        self.on_error = self._checked("[run]", "on_error", run.get("on_error", "fail"),
                                      pretokenize.CONSTRAINTS["on_error"])
        self.datasets = [self._dataset(i, d) for i, d in enumerate(doc["dataset"])]
        if not self.datasets:
            raise self._err("[[dataset]]", "the run has no dataset")
        names = [d.name for d in self.datasets]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise self._err("[[dataset]].name", f"given twice: {twice}")
        self.mixture = self._mixture(doc.get("mixture"), names)
        self.pack = self._pack(doc.get("pack"))

    def _dataset(self, i: int, d) -> Dataset:
        where = f"[[dataset]] #{i + 1}"
        if not isinstance(d, dict):
            raise self._err(where, "must be a table")
        if isinstance(d.get("name"), str):
            where = f"[[dataset]] {d['name']!r}"
        self._check_table(d, _DATASET, where)
        name = d["name"]
        if not name or name in (PACKED, RUN_MANIFEST, "mixture.json") or \
                not all(c.isalnum() or c in "_.-" for c in name) or name[0] in ".-":
            raise self._err(f"{where}.name", f"{name!r} names the folder out/{name}/: letters, "
                            "digits, '_', '.', '-' (not first), and not 'packed'")
        patterns = [d["inputs"]] if isinstance(d["inputs"], str) else d["inputs"]
        if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise self._err(f"{where}.inputs", "must be a non-empty array of paths, globs or "
                            "URLs")
        inputs: list = []
        for p in patterns:
            full = self._path(p)
            if is_url(full):
                inputs.append(full)
            elif glob.has_magic(full):
                found = sorted(glob.glob(full))
                if not found:
                    raise self._err(f"{where}.inputs", f"{p!r} matches no file (in "
                                    f"{Path(full).parent})")
                inputs += found
            elif not Path(full).exists():
                raise self._err(f"{where}.inputs", f"{p!r}: no such file or folder ({full})")
            else:
                inputs.append(full)
        fmt = d.get("format", "corpus")
        on_disk = sorted(n for n, c in stores().items() if c.writes_files)
        if fmt not in on_disk:
            close = difflib.get_close_matches(fmt, on_disk, 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self._err(f"{where}.format", f"unknown store {fmt!r}{hint}; the stores are "
                            f"{', '.join(on_disk)}")
        cells = None
        if "cells" in d:
            try:
                cells = CellSpec.from_json(d["cells"])
            except (GenotokError, TypeError, ValueError, AttributeError) as exc:
                raise self._err(f"{where}.cells", str(exc)) from None
        local = [p for p in inputs if not is_url(p)]
        try:  # folders and @lists to their files, as pretokenize will read them
            found = expand_inputs(local)
        except GenotokError as exc:
            raise self._err(f"{where}.inputs", str(exc)) from None
        if cells is not None and cells != CellSpec():
            bed = [p for p in found if input_kind(p) == "bed"]
            if bed:
                raise self._err(f"{where}.cells", f"{bed[0].name}: a BED input is one record of "
                                "its regions; the cell spec acts on the cells of .h5ad and "
                                "fragment inputs: put the BED files in a dataset of their own")
        inputs = [str(p) for p in found] + [p for p in inputs if is_url(p)]
        tok = d["tokenizer"]
        full = self._path(tok)
        if _looks_like_path(tok) and not Path(full).exists():
            raise self._err(f"{where}.tokenizer", f"{tok!r}: no such file or folder ({full})")
        return Dataset(name, inputs, full if Path(full).exists() else tok, fmt, cells, patterns)

    def _mixture(self, m, names: list) -> dict | None:
        if m is None:
            return None
        self._check_table(m, _MIXTURE, "[mixture]")
        weights = m["weights"]
        unknown = sorted(set(weights) - set(names))
        if unknown or not weights:
            raise self._err("[mixture].weights", f"names {unknown or 'no dataset'}; the "
                            f"datasets are {names}")
        for k, w in weights.items():  # (mix's own constraints: one validator)
            self._checked("[mixture].weights", k, w, list(WEIGHTS[0].constraints))
        seed = self._checked("[mixture]", "seed", m.get("seed", 0), SEED)
        return {"weights": dict(weights), "seed": seed}

    def _pack(self, p) -> dict | None:
        if p is None:
            return None
        self._check_table(p, _PACK, "[pack]")
        if self.mixture is None and len(self.datasets) != 1:
            raise self._err("[pack]", "packs the mixture: add a [mixture] section (or run one "
                            "dataset)")
        self._checked("[pack]", "seq_length", p["seq_length"], pack.CONSTRAINTS["seq_len"])
        strategy = self._checked("[pack]", "strategy", p.get("strategy", "ffd"),
                                 pack.CONSTRAINTS["strategy"])
        fmt = p.get("format", "corpus")
        packs = pack_stores()
        if fmt not in packs:
            raise self._err("[pack].format", f"must be one of {packs} (a store that keeps "
                            f"the segment ids), got {fmt!r}")
        return {"seq_length": p["seq_length"], "strategy": strategy, "format": fmt}

    # ----------------------------------------------------------------------- the plan
    def tokenizer(self, source: str):
        """The tokenizer a dataset names: a BED file, a configuration (``.toml``), a
        pretrained folder, or a Hub id (loaded once per run)."""
        cache = self.__dict__.setdefault("_tokenizers", {})
        if source not in cache:
            from .tokenizer import Tokenizer

            p = Path(source)
            if p.is_dir() or not p.exists():
                cache[source] = Tokenizer.from_pretrained(source)
            elif p.suffix == ".toml":
                cache[source] = Tokenizer.from_config(p)
            else:
                cache[source] = Tokenizer.from_bed(p)
        return cache[source]

    def plan(self) -> str:
        """What :meth:`run` would do, as text: the datasets, the inputs found, the tokenizers'
        fingerprints, the outputs (the tokenizers are loaded; nothing is written)."""
        lines = [f"run file {self.source}", f"out      {self.out}",
                 f"executor {self.executor_name}"
                 + (f" {self.executor_options}" if self.executor_options else "")]
        for d in self.datasets:
            tok = self.tokenizer(d.tokenizer)
            shown = ", ".join(Path(p).name if not is_url(p) else p for p in d.inputs[:3])
            more = f", … (+{len(d.inputs) - 3})" if len(d.inputs) > 3 else ""
            lines += [f"dataset  {d.name}: {len(d.inputs)} input(s) ({shown}{more})",
                      f"         tokenizer {d.tokenizer} (fingerprint {tok.fingerprint[:16]}…, "
                      f"{tok.vocab_size:,} tokens)",
                      f"         format {d.format} -> {self.out / d.name}"]
        if self.mixture:
            w = ", ".join(f"{k} {v}" for k, v in self.mixture["weights"].items())
            lines.append(f"mixture  {w}; seed {self.mixture['seed']} -> "
                         f"{self.out / 'mixture.json'}")
        if self.pack:
            p = self.pack
            lines.append(f"pack     seq_length {p['seq_length']}, {p['strategy']}, "
                         f"{p['format']} -> {self.out / PACKED}")
        return "\n".join(lines)

    # ----------------------------------------------------------------------- running
    def _config(self) -> dict:
        return json.loads(json.dumps(self.doc, default=str))

    def _claim(self, overwrite: bool) -> None:
        """Make ``out`` this run's: a new folder, or one holding this run (a resume)."""
        manifest = self.out / RUN_MANIFEST
        if self.out.exists() and not self.out.is_dir():
            raise RunFileError(f"{self.source}: [run].out: {self.out} exists and is not a folder")
        if manifest.exists() and not overwrite:
            try:
                had = json.loads(manifest.read_text())["config"]
            except (OSError, ValueError, KeyError, TypeError):
                raise RunFileError(f"{manifest}: corrupt run manifest; use another [run].out or "
                                   "--overwrite") from None
            if had != self._config():
                raise RunFileError(f"{self.source}: [run].out: {self.out} holds a run of another "
                                   "run file (its run.json records that file's content); use "
                                   "another out, or --overwrite to start again")
        elif self.out.is_dir() and any(self.out.iterdir()) and not manifest.exists():
            raise RunFileError(f"{self.source}: [run].out: {self.out} is not empty and holds no "
                               "genotok run; choose a new or empty folder")
        self.out.mkdir(parents=True, exist_ok=True)
        self._save({"done": False})

    def _save(self, status: dict) -> None:
        with atomic_write(self.out / RUN_MANIFEST, "w") as fh:
            json.dump({"format": "genotok-run", "version": 1, "file": str(self.source),
                       "content": self.text, "config": self._config(), **status}, fh, indent=1)

    def run(self, *, overwrite: bool = False, progress: bool = True) -> dict:
        """Run the file: each dataset (resumed where a run stopped), then the mixture, then the
        pack stage. Returns ``{dataset name: RunSummary}`` (and ``"pack"``: a
        :class:`PackReport`)."""
        tokenizers = {d.name: self.tokenizer(d.tokenizer) for d in self.datasets}  # fail early
        executor = get_executor(self.executor_name, **self.executor_options)
        try:
            self._claim(overwrite)
        except BaseException:
            executor.close()
            raise
        results: dict = {}
        try:
            for d in self.datasets:
                opts = RunOptions(files_per_shard=self.options.files_per_shard,
                                  hash=self.options.hash, executor=executor,
                                  validation=self.options.validation,
                                  storage_options=self.options.storage_options)
                results[d.name] = pretokenize(d.inputs, tokenizers[d.name], self.out / d.name,
                                              cells=d.cells, format=d.format,
                                              n_threads=self.threads, on_error=self.on_error,
                                              progress=progress, overwrite=overwrite,
                                              options=opts)
        finally:
            executor.close()
        if self.mixture:
            names = [n for n in self.mixture["weights"]]
            write_mixture(self.out, {n: self.out / n for n in names},
                          {n: self.mixture["weights"][n] for n in names}, self.mixture["seed"])
        if self.pack:
            folder = self.out if self.mixture else self.out / self.datasets[0].name
            report = pack_mixture(folder, tokenizers[self.datasets[0].name], self.out / PACKED,
                                  **self.pack, mixture=self.mixture is not None)
            results["pack"] = report
            if progress:
                print(report)
        self._save({"done": True, "datasets": {
            n: {"path": n, "records": s.n_records, "tokens": s.n_tokens}
            for n, s in results.items() if isinstance(s, RunSummary)}})
        return results


def _looks_like_path(s: str) -> bool:
    """A tokenizer given as a path (not a Hub id such as ``"org/model"``)."""
    return s.startswith((".", "/", "~")) or s.endswith((".bed", ".bed.gz", ".toml", ".gz")) \
        or os.sep in s and s.count("/") != 1


# ------------------------------------------------------------------------------ the pack stage
_CHUNK = 1 << 16  # records packed at a time (a row never spans two chunks)


def pack_stores() -> tuple[str, ...]:
    """The registered stores (plugins included) a pack stage can write: those that write files
    and keep the value channel (the segment ids) and metadata (the segments' table).

    >>> pack_stores()
    ('corpus', 'parquet', 'arrow', 'jsonl')
    """
    return tuple(n for n, c in stores().items() if c.writes_files and _PACK_KEEPS <= c.supports)


def pack_mixture(folder: Path, tokenizer, out: Path, *, seq_length: int, strategy: str = "ffd",
                 format: str = "corpus", mixture: bool = True) -> PackReport:
    """Pack the records of one epoch of the mixture of ``folder`` (``mixture=False``: of the
    dataset ``folder``, in order) into rows of at most ``seq_length`` tokens, written to the
    store ``format`` in ``out`` (replaced whole, through a temporary folder). Each row keeps
    its segment ids as its value channel, and a ``segments`` column lists, per segment, the
    draw, the dataset, the record, the offset in the record and the length: the records'
    weights and positions are recoverable (:func:`read_packed`).

    Examples
    --------
    >>> import genotok, tempfile
    >>> tok = genotok.Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    >>> d = Path(tempfile.mkdtemp())
    >>> run = genotok.pretokenize(genotok.examples_dir() / "peaks", tok, d / "peaks",
    ...                           progress=False)
    >>> report = pack_mixture(d / "peaks", tok, d / "packed", seq_length=256, mixture=False)
    >>> report.n_tokens == run.n_tokens, report.n_rows, report.fill > 0.95
    (True, 13, True)
    >>> p = read_packed(d / "packed")
    >>> p["input_ids"].shape, sorted(set(p["record"].tolist()))
    ((13, 256), [0, 1, 2, 3, 4])
    """
    from .formats.corpus import Corpus

    source = mix(folder) if mixture else Corpus.open(folder)
    n = len(source)
    names = list(getattr(source, "dataset_names", None) or [folder.name])
    weights = [float(w) for w in getattr(source, "weights", [1.0])]
    rows, segments, values = [], [], []
    n_tokens = 0
    for start in range(0, n, _CHUNK):
        idx = np.arange(start, min(n, start + _CHUNK))
        batch = source.get_batch(idx)
        if mixture:
            ds, rec = (np.asarray(a) for a in source.sources(idx))
        else:
            ds, rec = np.zeros(idx.size, np.int64), idx
        lengths = np.diff(np.asarray(batch.offsets))
        packed = pack(batch, seq_length, 0, strategy=strategy)
        # the same placement (it depends on the lengths only) of each token's record and offset
        offsets = np.asarray(batch.offsets, np.int64)
        who = pack(Ragged(np.repeat(np.arange(idx.size, dtype=np.int64), lengths), offsets),
                   seq_length, -1, strategy=strategy)["input_ids"]
        off = pack(Ragged(_offsets_within(lengths), offsets), seq_length, -1,
                   strategy=strategy)["input_ids"]
        n_tokens += packed.n_tokens
        for r in range(packed["input_ids"].shape[0]):
            used = int(packed["attention_mask"][r].sum())
            seg = packed["segment_ids"][r, :used]
            rows.append(packed["input_ids"][r, :used])
            values.append(seg.astype(np.float32))
            starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
            ends = np.r_[starts[1:], used]
            segments.append(json.dumps([[int(start + who[r, s]), int(ds[who[r, s]]),
                                         int(rec[who[r, s]]), int(off[r, s]), int(e - s)]
                                        for s, e in zip(starts, ends)]))
    extra = {"genotok_pack": {"seq_length": seq_length, "strategy": strategy,
                              "datasets": names, "weights": weights,
                              "segments": ["draw", "dataset", "record", "offset", "length"],
                              "n_rows": len(rows), "n_tokens": n_tokens}}
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ragged = Ragged.from_list(rows, dtype=np.uint32)
    ragged = Ragged(ragged.data, ragged.offsets,
                    np.concatenate(values) if values else np.zeros(0, np.float32))
    store = get_store(format)
    files = write_records([(ragged, {"names": [f"row{r:09d}" for r in range(len(rows))],
                                     "meta": {"segments": segments}})],
                          tmp / "shard-00000", tokenizer, store=store,
                          metadata_columns=["segments"], values=True, overwrite=True,
                          extra=extra)
    store.finish(tmp, files, tokenizer, extra)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return PackReport(out, len(rows), n_tokens, seq_length, strategy)


def _offsets_within(lengths: np.ndarray) -> np.ndarray:
    """``0..n-1`` for each record of ``n`` tokens, end to end.

    >>> _offsets_within(np.array([2, 0, 3])).tolist()
    [0, 1, 0, 1, 2]
    """
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - starts


@validated({"path": [InstanceOf(str, os.PathLike)]})
def read_packed(path) -> dict:
    """The packed rows of a run's ``out/packed/`` as arrays: ``input_ids`` (padded with
    ``pad_token_id``, default 0), ``segment_ids``, ``position_ids``, ``attention_mask``
    (``rows × seq_length``), and per segment ``draw``, ``dataset``, ``record``, ``offset``,
    ``length``, ``row`` and ``weight`` (its dataset's weight in the mixture).

    Examples
    --------
    >>> read_packed(Path("no-such-folder"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.GenotokError: no-such-folder: not the output of a pack stage ...
    """
    from .formats.corpus import Corpus

    path = Path(path)
    try:
        info = json.loads((path / "manifest.json").read_text())["genotok_pack"]
    except (OSError, ValueError, KeyError, TypeError):
        raise GenotokError(f"{path}: not the output of a pack stage (its manifest.json has no "
                           "genotok_pack)") from None
    c = Corpus.open(path)
    seq = int(info["seq_length"])
    r = c.to_ragged(values=True)
    n = len(r)
    ids = np.zeros((n, seq), np.int64)
    seg = np.zeros((n, seq), np.int32)
    pos = np.zeros((n, seq), np.int32)
    table = []
    for i in range(n):
        a, b = int(r.offsets[i]), int(r.offsets[i + 1])
        ids[i, :b - a] = r.data[a:b]
        seg[i, :b - a] = r.values[a:b]
        at = 0
        for s in json.loads(c.meta["segments"][i]):
            pos[i, at:at + s[4]] = np.arange(s[4])
            at += s[4]
            table.append([*s, i])
    t = np.array(table, np.int64).reshape(-1, 6)
    w = np.asarray(info["weights"], np.float64)
    return {"input_ids": ids, "segment_ids": seg, "position_ids": pos,
            "attention_mask": (seg > 0).astype(np.int64), "draw": t[:, 0], "dataset": t[:, 1],
            "record": t[:, 2], "offset": t[:, 3], "length": t[:, 4], "row": t[:, 5],
            "weight": w[t[:, 1]] if t.size else np.zeros(0), "datasets": info["datasets"]}

