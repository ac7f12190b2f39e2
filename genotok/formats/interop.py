"""Corpora to and from other formats: a directory of gtars ``.gtok`` files (one per record) and
Parquet (one row per record: what geniml, pandas, DuckDB and Hugging Face datasets read)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from .._io import atomic_write, local_path, make_temp_dir
from .._optional import require
from .._names import from_file_stem, to_file_stem
from ..errors import GtokFormatError, UniverseMismatchError
from ..params import PATH, HasAttr, InstanceOf, Integral, Interval, validated
from ..ragged import Ragged
from . import gtok
from .corpus.layout import _COPY_BLOCK, _EXPORTING, _clean_stale, _host
from .corpus.reader import Corpus
from .corpus.writer import CorpusWriter


#: a corpus to export: any corpus object (its records and names are read)
CORPUS = [HasAttr("fingerprint", "names")]


@validated({"corpus": CORPUS, "out": PATH})
def export_gtok_dir(corpus: Corpus, out: str | os.PathLike) -> list[Path]:
    """Write every record as a gtars ``.gtok`` file (named by record name, else its index).

    A record name becomes a file name through :func:`genotok._names.to_file_stem` (a safe,
    reversible spelling: never a path separator, never ``..``, no control bytes), so every
    file lands inside ``out``; two records that would share a file name are an error.
    Unnamed records are ``record_00000042.gtok``. The width is chosen per file as gtars does.

    The files are written into a hidden temporary directory beside ``out``, renamed into
    place once all are written: an interrupted export leaves no directory that
    :func:`import_gtok_dir` accepts. ``out`` must not exist, or be empty.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    ...     w.append([3], name="a/b")
    >>> [f.name for f in export_gtok_dir(Corpus.open(p), os.path.join(os.path.dirname(p), "g"))]
    ['s1.gtok', 'a%2Fb.gtok']
    """
    directory = local_path(out, "a .gtok directory")
    if directory.is_symlink() or (directory.exists() and (not directory.is_dir()
                                                          or any(directory.iterdir()))):
        raise FileExistsError(f"{directory} exists and is not an empty directory; export into a "
                              "new directory")
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{directory.name}{_EXPORTING}"
    _clean_stale(parent, prefix)
    tmp = make_temp_dir(directory, prefix=f"{prefix}{_host()}-{os.getpid()}-")
    try:
        names = corpus.names
        used: dict[str, int] = {}
        stems = []
        for i, name in enumerate(names):
            stem = (f"record_{i:08d}" if name is None
                    else to_file_stem(name, where=f"{corpus.path}: record {i}"))
            if stem in used:
                raise GtokFormatError(f"{corpus.path}: records {used[stem]} and {i} would both be "
                                      f"written to {stem}.gtok (the same record name); give the "
                                      "records unique names before exporting")
            used[stem] = i
            stems.append(stem)
        for stem, rec in zip(stems, corpus):
            gtok.write_gtok(rec, tmp / f"{stem}.gtok", atomic=False)  # looked up here: tests patch it
        _fsync_path(tmp)
        os.rename(tmp, directory)  # replaces an empty directory; atomic on POSIX
        _fsync_path(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [directory / f"{stem}.gtok" for stem in stems]


def _fsync_path(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@validated({"directory": PATH, "out": PATH, "vocab_size": CorpusWriter.CONSTRAINTS["vocab_size"],
            "fingerprint": CorpusWriter.CONSTRAINTS["fingerprint"], "pattern": [InstanceOf(str)]})
def import_gtok_dir(directory: str | os.PathLike, out: str | os.PathLike, *, vocab_size: int,
                    fingerprint: str, pattern: str = "*.gtok", **kwargs) -> Path:
    """Pack a directory of gtars ``.gtok`` files into one corpus (record name = file stem).

    Files are taken in sorted name order; a stem written by :func:`export_gtok_dir` is
    decoded back to the record name (``a%2Fb`` -> ``a/b``). Each file is memory-mapped and
    streamed into the writer (never held twice in memory); its size and sha256 are kept as a
    source. Only regular files are read (a FIFO or device is refused, never waited on). A
    truncated or damaged file raises :class:`~genotok.GtokFormatError` naming it, and an id
    outside the vocabulary names the record. A hidden ``.<name>.exporting-….tmp`` directory
    (an interrupted export) is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> from genotok.formats.gtok import write_gtok
    >>> d = tempfile.mkdtemp()
    >>> write_gtok([1, 2], os.path.join(d, "a.gtok"))
    >>> c = Corpus.open(import_gtok_dir(d, os.path.join(d, "c.gtokc"), vocab_size=9, fingerprint="fp"))
    >>> c.names, c[0].tolist()
    (['a'], [1, 2])
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise GtokFormatError(f"{directory}: not a directory of .gtok files")
    if directory.name.startswith(".") and _EXPORTING in directory.name \
            and directory.name.endswith(".tmp"):
        raise GtokFormatError(f"{directory}: is the temporary directory of an interrupted export; "
                              "export again (it is removed by the next export to the same place)")
    files = sorted(f for f in directory.glob(pattern) if f.is_file())
    if not files:
        raise GtokFormatError(f"{directory}: no files match {pattern!r}")
    with CorpusWriter(out, vocab_size=vocab_size, fingerprint=fingerprint, **kwargs) as w:
        for f in files:
            fd, st = gtok.open_regular(f, ".gtok file")
            with os.fdopen(fd, "rb") as fh:
                dtype, n = gtok._check(os.pread(fd, gtok.HEADER_SIZE, 0), st.st_size, str(f))
                raw = np.memmap(fh, dtype=np.uint8, mode="r", shape=(st.st_size,))
                sha = hashlib.sha256()
                for i in range(0, raw.size, _COPY_BLOCK):
                    sha.update(raw[i:i + _COPY_BLOCK])
                ids = raw[gtok.HEADER_SIZE:gtok.HEADER_SIZE + n * dtype.itemsize].view(dtype)
                if ids.size and int(ids.max()) >= w.vocab_size:
                    raise GtokFormatError(f"{f}: id {int(ids.max())} is outside the vocabulary "
                                          f"(0..{w.vocab_size - 1}); was it tokenized with another "
                                          "universe?")
                try:
                    name = from_file_stem(f.stem)
                except (UnicodeError, ValueError):  # not a stem genotok wrote: keep it as is
                    name = f.stem
                w.append(ids, name=name)  # copied into the writer's block
                del ids, raw
            w.add_source(f.name, size=st.st_size, sha256=sha.hexdigest())
    return Path(out)


def _pyarrow():
    return (require("pyarrow", "Parquet export/import"),
            require("pyarrow.parquet", "Parquet export/import"))


def _row_groups(lengths: np.ndarray, max_rows: int, max_tokens: int) -> list[tuple[int, int]]:
    """Split records into consecutive groups of <= max_rows records and <= max_tokens tokens."""
    out, a, n = [], 0, lengths.size
    cum = np.concatenate([[0], np.cumsum(lengths)])
    while a < n:
        b = min(n, a + max_rows)
        b = max(a + 1, min(b, int(np.searchsorted(cum, cum[a] + max_tokens, side="right")) - 1))
        out.append((a, b))
        a = b
    return out


@validated({"corpus": CORPUS, "out": PATH, "row_group_size": [Interval(Integral, 1, None)]})
def export_parquet(corpus: Corpus, out: str | os.PathLike, *, row_group_size: int = 65536) -> Path:
    """One row per record: ``input_ids`` (list<int32>), ``name`` and the metadata columns.

    The column names are the stores' (:mod:`genotok.formats.tables`); pandas, DuckDB and Hugging Face
    datasets open. Streamed in row groups of up to ``row_group_size`` records (and under 2**31
    tokens, the limit of a list<int32> column's offsets); written atomically. The universe
    fingerprint, vocabulary size, special tokens and settings ride along in the schema metadata
    (key ``genotok``), so :func:`import_parquet` restores them.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    >>> import pyarrow.parquet as pq
    >>> pq.read_table(export_parquet(Corpus.open(p), p + ".parquet")).column("input_ids").to_pylist()
    [[1, 2]]
    """
    pa, pq = _pyarrow()
    if corpus.vocab_size > 2**31:
        raise GtokFormatError(f"{corpus.path}: vocab_size {corpus.vocab_size} does not fit the "
                              "list<int32> input_ids column")
    names, meta = corpus.names, corpus.meta
    info = json.dumps({k: corpus.header.get(k) for k in
                       ("fingerprint", "vocab_size", "special_tokens", "settings")}).encode()
    # one type per column for the whole file (a column may start with nulls)
    fields = [pa.field("input_ids", pa.list_(pa.int32())), pa.field("name", pa.string())]
    for k, v in meta.items():
        t = pa.array(v).type
        fields.append(pa.field(k, pa.string() if pa.types.is_null(t) else t))
    schema = pa.schema(fields, metadata={b"genotok": info})
    with atomic_write(out, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
        for a, b in _row_groups(corpus.lengths, max(1, int(row_group_size)), 2**31 - 1):
            batch = corpus[a:b]
            tokens = pa.ListArray.from_arrays(pa.array(batch.offsets.astype(np.int32)),
                                              pa.array(np.asarray(batch.data).astype(np.int32)))
            cols = [tokens, pa.array(names[a:b], type=pa.string())]
            cols += [pa.array(meta[f.name][a:b], type=f.type) for f in fields[2:]]
            writer.write_table(pa.Table.from_arrays(cols, schema=schema))
    return Path(out)


@validated({"paths": [InstanceOf(str, os.PathLike, list, tuple)], "out": PATH,
            "vocab_size": [*CorpusWriter.CONSTRAINTS["vocab_size"], None],
            "fingerprint": [*CorpusWriter.CONSTRAINTS["fingerprint"], None],
            "ids_column": [InstanceOf(str)], "name_column": [InstanceOf(str), None]})
def import_parquet(paths, out: str | os.PathLike, *, vocab_size: int | None = None,
                   fingerprint: str | None = None, ids_column: str = "input_ids",
                   name_column: str | None = "name", **kwargs) -> Path:
    """Pack Parquet or Arrow IPC files (one, or a list: told apart by their first bytes) with
    a ``list<int>`` token ids column (``input_ids``, as every genotok store and
    :func:`export_parquet` write it) into one corpus.

    A ``values`` column (a list of numbers per record) becomes the value channel; every other
    column a metadata column (``name_column`` gives the record names). The universe
    fingerprint, vocabulary size, special tokens and settings come from each file's genotok
    metadata when it has some (a genotok output), else they must be given; a fingerprint
    that differs from a stored one raises :class:`~genotok.UniverseMismatchError`, tampered
    metadata a :class:`~genotok.GtokFormatError` naming the file.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
    ...     w.append([1, 2], name="s1")
    >>> q = export_parquet(Corpus.open(p), p + ".parquet")
    >>> Corpus.open(import_parquet([q, q], p + ".back")).to_ragged().to_list()
    [[1, 2], [1, 2]]
    """
    from .tables import IDS, NAME, VALUES, _read_any_table, _shard_of_table

    pa = require("pyarrow", "Parquet / Arrow import")
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise ValueError("import_parquet needs at least one file")
    given = None
    if vocab_size is not None and fingerprint is not None:
        given = {"fingerprint": fingerprint, "vocab_size": vocab_size}
    shards = []
    for path in paths:
        table = _read_any_table(path)
        if ids_column not in table.column_names:
            raise GtokFormatError(f"{path}: no {ids_column!r} column (have {table.column_names})")
        if ids_column != IDS:
            table = table.drop_columns([c for c in (IDS,) if c in table.column_names])
            table = table.rename_columns([IDS if c == ids_column else c
                                          for c in table.column_names])
        if name_column != NAME:
            table = table.drop_columns([c for c in (NAME,) if c in table.column_names])
            if name_column in table.column_names:
                table = table.rename_columns([NAME if c == name_column else c
                                              for c in table.column_names])
        try:
            sh = _shard_of_table(table, path, given)
        except pa.ArrowInvalid as exc:
            raise GtokFormatError(f"{path}: not a readable table ({exc})") from None
        if fingerprint is not None and sh.header["fingerprint"] != fingerprint:
            raise UniverseMismatchError(f"{path}: tokenized with universe "
                                        f"{sh.header['fingerprint'][:12]}…, but fingerprint "
                                        f"{fingerprint[:12]}… was given; token ids are specific "
                                        "to their universe")
        if shards and sh.header["fingerprint"] != shards[0].header["fingerprint"]:
            raise UniverseMismatchError(f"{path}: tokenized with another universe than "
                                        f"{paths[0]}")
        shards.append(sh)
    head = shards[0].header
    cols = list(dict.fromkeys(c for sh in shards for c in sh.meta_columns))
    kwargs.setdefault("special_token_ids", head.get("special_tokens") or None)
    kwargs.setdefault("settings", head.get("settings") or None)
    has_values = any(sh.values is not None for sh in shards)
    if has_values and not all(sh.values is not None for sh in shards):
        raise GtokFormatError(f"{paths[0]}: some files have a {VALUES!r} column and others not")
    with CorpusWriter(out, vocab_size=vocab_size or head["vocab_size"],
                      fingerprint=fingerprint or head["fingerprint"], metadata_columns=cols,
                      values_dtype="float32" if has_values else None, **kwargs) as w:
        for path, sh in zip(paths, shards):
            meta = sh.records["meta"]
            w.append_batch(Ragged(sh.tokens, sh.offsets, sh.values), names=sh.records["names"],
                           meta={c: meta.get(c) or [None] * sh.n for c in cols})
            w.add_source(Path(path).name, size=os.path.getsize(path))
    return Path(out)
