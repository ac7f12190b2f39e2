"""Corpora to and from other formats: a directory of gtars ``.gtok`` files (one per record), any
registered store's output (:func:`export_store`: Parquet, Arrow, JSON Lines… through the
store's own writer, so it reads back with :meth:`~genotok.Corpus.open`), and Parquet or Arrow
files of any origin (:func:`import_parquet`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import local_path, make_temp_dir
from .._optional import require
from .._names import from_file_stem, to_file_stem
from ..errors import GtokFormatError, UniverseMismatchError
from ..params import PATH, Flag, HasAttr, InstanceOf, ParameterError, validated
from ..ragged import Ragged
from . import gtok
from .corpus.layout import _COPY_BLOCK, _EXPORTING, MANIFEST, _clean_stale, _host
from .corpus.reader import Corpus
from .corpus.writer import CorpusWriter
from .store import Store
from .stores import get_store, stores


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
    with _staged(out, "a .gtok directory") as tmp:
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
    return [Path(out) / f"{stem}.gtok" for stem in stems]


@contextlib.contextmanager
def _staged(out, what: str, replace: bool = False):
    """A hidden temporary directory beside ``out``, renamed into place once the body is done
    (removed if it fails): an interrupted export leaves no directory a reader takes. ``out``
    must not exist, or be empty; ``replace``: a genotok output there (its ``manifest.json``)
    is replaced whole, once the new one is complete."""
    directory = local_path(out, what)
    old = directory.is_dir() and not directory.is_symlink() and any(directory.iterdir())
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()) or (
            old and not (replace and (directory / MANIFEST).is_file())):
        raise FileExistsError(f"{directory} exists and is not an empty directory; export into a "
                              "new directory" + (" (overwrite=True replaces only a genotok "
                                                 "output: a directory with its manifest.json)"
                                                 if replace else ""))
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{directory.name}{_EXPORTING}"
    _clean_stale(parent, prefix)
    tmp = make_temp_dir(directory, prefix=f"{prefix}{_host()}-{os.getpid()}-")
    try:
        yield tmp
        _fsync_path(tmp)
        if old:  # the old output aside (a stale name the next export removes), the new in place
            trash = make_temp_dir(directory, prefix=f"{prefix}{_host()}-{os.getpid()}-")
            os.rename(directory, trash)
            os.rename(tmp, directory)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp, directory)  # replaces an empty directory; atomic on POSIX
        _fsync_path(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@dataclass(frozen=True)
class _Identity:
    """A corpus' tokenizer identity in the shape a store reads it from a tokenizer
    (``fingerprint``, ``vocab_size``, ``special_token_ids``, ``universe.special_token_ids``,
    ``settings.as_dict()``): an export writes through the stores' own writers without the
    tokenizer that made the corpus.

    >>> i = _Identity("fp", 9, {"unk": 8}, {"overlap": "any"})
    >>> i.universe.special_token_ids, i.settings.as_dict()
    ({'unk': 8}, {'overlap': 'any'})
    """

    fingerprint: str
    vocab_size: int
    special_token_ids: dict
    saved: dict

    @property
    def universe(self) -> _Identity:
        return self

    @property
    def settings(self) -> _Identity:
        return self

    def as_dict(self) -> dict:
        return dict(self.saved)


@validated({"corpus": CORPUS, "out": PATH, "format": [InstanceOf(str, Store)],
            "overwrite": [Flag()]})
def export_store(corpus: Corpus, out: str | os.PathLike, format: str | Store = "parquet", *,
                 overwrite: bool = False) -> Path:
    """Write a corpus as the output of the store ``format`` (a registered name, plugins
    included, or a configured :class:`~genotok.formats.store.Store`): the directory ``out``
    with the store's files and ``manifest.json``, written by the store's own writer as
    ``pretokenize(..., format=format)`` writes it, so :meth:`~genotok.Corpus.open` reads it
    back. Names, the value channel, the metadata columns and the inputs are kept as the
    store's ``supports`` says; the tokenizer's identity and the header's extra (the cell spec,
    fitted medians) always.

    Written into a hidden temporary directory beside ``out`` and renamed into place: an
    interrupted export leaves no output. ``out`` must not exist, or be empty;
    ``overwrite=True`` replaces a genotok output there (a directory with its manifest), once
    the new one is whole. A store that writes no files (``"memory"``) is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> d = tempfile.mkdtemp()
    >>> with CorpusWriter(os.path.join(d, "c.gtokc"), vocab_size=9, fingerprint="fp",
    ...                   values_dtype="float32", extra={"spec": {"max_length": 2}}) as w:
    ...     w.append([1, 2], name="s1", values=[0.5, 2.0])
    >>> c = Corpus.open(export_store(Corpus.open(os.path.join(d, "c.gtokc")),
    ...                              os.path.join(d, "out"), "arrow"))
    >>> c.to_ragged(values=True).values.tolist(), c.names, c.header["extra"]
    ([0.5, 2.0], ['s1'], {'spec': {'max_length': 2}})
    """
    store = get_store(format)
    if not store.writes_files:
        raise ParameterError(f"format={store.name!r} writes no files; export to one of "
                             f"{', '.join(n for n, c in stores().items() if c.writes_files)}")
    values = corpus.has_values and "values" in store.supports
    meta, names = corpus.meta, corpus.names
    extra = dict(corpus.header.get("extra") or {})
    ident = _Identity(corpus.fingerprint, corpus.vocab_size, corpus.special_token_ids,
                      corpus.settings)
    sources = [(s.get("name"), {k: v for k, v in s.items() if k != "name"})
               for s in corpus.sources]
    with _staged(out, f"a {store.name} output", replace=overwrite) as tmp:
        w = store.open(tmp, "shard-00000", ident, values=values, columns=list(meta),
                       extra=extra, sources=sources)
        try:
            i = 0
            for batch in corpus.iter_batches(4096, values=values):
                j = i + len(batch)
                w.write(batch, {"names": names[i:j], **{c: v[i:j] for c, v in meta.items()}})
                i = j
        except BaseException:
            w.abort()
            raise
        store.finish(tmp, w.commit(), ident, extra)
    return Path(out)


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


@validated({"paths": [InstanceOf(str, os.PathLike, list, tuple)], "out": PATH,
            "vocab_size": [*CorpusWriter.CONSTRAINTS["vocab_size"], None],
            "fingerprint": [*CorpusWriter.CONSTRAINTS["fingerprint"], None],
            "ids_column": [InstanceOf(str)], "name_column": [InstanceOf(str), None]})
def import_parquet(paths, out: str | os.PathLike, *, vocab_size: int | None = None,
                   fingerprint: str | None = None, ids_column: str = "input_ids",
                   name_column: str | None = "name", **kwargs) -> Path:
    """Pack Parquet or Arrow IPC files (one, or a list: told apart by their first bytes) with
    a ``list<int>`` token ids column (``input_ids``, as every genotok store and
    :func:`export_store` write it) into one corpus.

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
    >>> q = next(export_store(Corpus.open(p), p + ".parquet", "parquet").glob("*.parquet"))
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
