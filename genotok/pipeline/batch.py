"""One batch of a :func:`~genotok.pipeline.pretokenize` run: its inputs parsed, hashed and
tokenized (a :class:`_Staged` batch), then written, and its journal entry.

A batch of BED inputs becomes one corpus shard (or its ``.gtok`` files); a single-cell input
(``.h5ad``, fragment file) is a batch of its own, its cells the shard's records. The steps are
here so that every way of running the batches imports them: in this process with a writer
thread (:mod:`genotok.pipeline.writer`) or on a Dask cluster (:mod:`genotok.pipeline.dask`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .. import _config
from .._io import file_digest
from .._names import to_file_stem
from ..errors import GenotokError
from ..formats.gtok import write_gtok
from ..ragged import Ragged
from ..regions import RegionSet
from ..singlecell.spec import CellSpec
from ..sink import write_records
from .plan import (
    SKIPPABLE,
    PipelineError,
    _check_regular,
    _message,
    input_kind,
    raise_machine_error,
    record_name,
)


class _Staged:
    """One batch tokenized, its writes not made yet: the records and sources of its corpus
    shard (``shard``), or its ``.gtok`` files. It takes the calls a :class:`CorpusWriter`
    takes (and is a ``with`` block like it); :meth:`write` makes them and returns the batch's
    journal entry. Holds the batch's tokens (4 bytes each) until then."""

    def __init__(self, shard: Path | None, tokenizer):
        self.shard, self.tokenizer = shard, tokenizer
        self.records: list[tuple] = []
        self.sources: list[tuple] = []
        self.files: list[tuple] = []
        self.entry: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def append_batch(self, rows: Ragged, **kw) -> None:
        self.records.append((rows, kw))

    def add_source(self, path: str, **kw) -> None:
        self.sources.append((path, kw))

    def write_gtok(self, ids, path: Path) -> None:
        self.files.append((path, ids))

    def write(self) -> dict:
        for path, ids in self.files:
            write_gtok(ids, path)
        if self.shard is not None:  # fsynced and renamed into place by the sink
            write_records(self.records, self.shard, self.tokenizer, sources=self.sources,
                          metadata_columns=["source"], overwrite=True)
        return self.entry


def _unk_counts(data: np.ndarray, offsets: np.ndarray, unk: int) -> tuple[int, int]:
    """``<unk>`` tokens, and rows holding no other token, of a flat ids + offsets pair."""
    known = np.zeros(data.size + 1, np.int64)
    np.cumsum(data != unk, out=known[1:])
    offsets = np.asarray(offsets, np.int64)
    per_row = known[offsets[1:]] - known[offsets[:-1]]
    return int(data.size - known[-1]), int(np.count_nonzero(per_row == 0))


def _shard_name(b: int) -> str:
    return f"shard-{b:05d}.gtokc"


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


def _run_cells(tokenizer, path: Path, out: Path, b: int, format: str, n_threads, on_error,
               algo: str, spec: CellSpec | None = None) -> dict:
    """One .h5ad or fragment file: its cells become the records of shard ``b`` (or, for
    ``gtok-dir``, the files ``STEM@BARCODE.gtok``, both parts made safe by
    :func:`~genotok._names.to_file_stem`: a barcode can never name a path outside ``out``)."""
    from ..singlecell import obs_names, tokenize_anndata, tokenize_fragments

    kind = input_kind(path)
    spec = spec if spec is not None else CellSpec()
    shard = out / _shard_name(b)
    shard.unlink(missing_ok=True)  # a shard of a killed run that never reached the journal
    failed: list[dict] = []
    try:
        _check_regular(path)
        digest = file_digest(path, algo)
        if format == "corpus":
            if kind == "h5ad":
                corpus = tokenize_anndata(path, tokenizer, spec, n_threads=n_threads, out=shard)
            else:
                corpus = tokenize_fragments(path, tokenizer, spec, n_threads=n_threads,
                                            out=shard)
            names, n_tokens, n = corpus.names, corpus.n_tokens, len(corpus)
            flat = corpus.to_ragged()
            unk = _unk_counts(flat.data, flat.offsets, tokenizer.unk_token_id)
        else:
            if kind == "h5ad":
                rows = list(tokenize_anndata(path, tokenizer, spec, n_threads=n_threads))
                names = obs_names(path)
            else:
                names, rows = tokenize_fragments(path, tokenizer, spec, n_threads=n_threads)
                rows = list(rows)
            files = _cell_files(path, names, on_error, failed)
            kept = [np.asarray(ids) for file, ids in zip(files, rows) if file is not None]
            for file, ids in zip(files, rows):
                if file is not None:
                    write_gtok(ids, out / file)
            n, n_tokens = len(kept), int(sum(r.size for r in kept))
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum([r.size for r in kept], out=offsets[1:])
            unk = _unk_counts(np.concatenate(kept) if kept else np.zeros(0, np.int64), offsets,
                              tokenizer.unk_token_id)
    except SKIPPABLE as exc:
        if on_error == "fail":
            raise
        shard.unlink(missing_ok=True)  # whatever of it was written: not part of the corpus
        raise_machine_error(exc, path)
        return {"shard": None, "records": 0, "tokens": 0, "sources": [],
                "failed": [{"path": str(path), "error": _message(exc, path)}]}
    return {"shard": shard.name if format == "corpus" else None, "records": n, "tokens": n_tokens,
            "unk_tokens": unk[0], "unk_records": unk[1], "failed": failed,
            "sources": [{"path": str(path), "size": path.stat().st_size, "hash": digest,
                         "hash_algorithm": algo, "records": n, "kind": kind}]}


def _stage_batch(tokenizer, paths: list[Path], out: Path, b: int, format: str,
                 n_threads: int | None, on_error: str, algo: str) -> _Staged:
    """Parse and tokenize one batch of BED inputs; what is left to write is in the result."""
    parsed = _parse_all(paths, tokenizer, n_threads, on_error, algo)
    if format == "gtok-dir":  # a name that cannot be a file is this input's error
        parsed = [r if r[2] is not None else _with_file(r, p, on_error)
                  for r, p in zip(parsed, paths)]
    ok = [k for k, (rs, _, err, _) in enumerate(parsed) if err is None]
    failed = [{"path": str(paths[k]), "error": parsed[k][2]} for k in range(len(paths)) if k not in ok]
    names = [record_name(paths[k]) for k in ok]
    n_tokens = 0
    unk_tokens = unk_records = 0
    with _Staged(out / _shard_name(b) if format == "corpus" else None, tokenizer) as w:
        for group in _groups([len(parsed[k][0]) for k in ok]):
            # groups of ~0.5M queries keep every scratch array under glibc's mmap threshold,
            # so it is reused from the heap instead of page-faulted in afresh for each shard
            rows = tokenizer.encode_prepared([parsed[ok[i]][0] for i in group],
                                             [parsed[ok[i]][3] for i in group],
                                             n_threads=n_threads, dtype=np.uint32)
            n_tokens += int(rows.data.size)
            u_t, u_r = _unk_counts(rows.data, rows.offsets, tokenizer.unk_token_id)
            unk_tokens, unk_records = unk_tokens + u_t, unk_records + u_r
            if format == "corpus":
                w.append_batch(rows, names=[names[i] for i in group],
                               meta={"source": [str(paths[ok[i]]) for i in group]})
            else:
                for i, ids in zip(group, rows):
                    w.write_gtok(ids, out / f"{to_file_stem(names[i])}.gtok")
        if format == "corpus":
            for k in ok:
                w.add_source(str(paths[k]), size=paths[k].stat().st_size,
                             hash=parsed[k][1], hash_algorithm=algo)
    w.entry = {"shard": _shard_name(b) if format == "corpus" else None,
               "records": len(ok), "tokens": n_tokens, "unk_tokens": unk_tokens,
               "unk_records": unk_records, "failed": failed,
               "sources": [{"path": str(paths[k]), "size": paths[k].stat().st_size,
                            "hash": parsed[k][1], "hash_algorithm": algo, "record": names[i]}
                           for i, k in enumerate(ok)]}
    return w


def _run_batch(tokenizer, paths: list[Path], out: Path, b: int, format: str,
               n_threads: int | None, on_error: str, algo: str = "sha256",
               spec: CellSpec | None = None, staged: _Staged | None = None) -> dict:
    """Tokenize one batch of inputs into shard ``b`` (or .gtok files); return its journal entry
    once the shard (or the files) is durably written. ``spec``: the cell spec of the
    single-cell inputs (medians fitted); ``staged``: the batch already tokenized by
    :func:`_stage_batch` (only its writes are left)."""
    if len(paths) == 1 and input_kind(paths[0]) != "bed":
        return _run_cells(tokenizer, paths[0], out, b, format, n_threads, on_error, algo, spec)
    if staged is None:
        staged = _stage_batch(tokenizer, paths, out, b, format, n_threads, on_error, algo)
    return staged.write()
