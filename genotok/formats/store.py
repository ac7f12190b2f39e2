"""The store protocol, and the rules every store shares, in one place.

A store is configured once (``ParquetStore(rows_per_shard=50_000)``) and then opened for each
part of an output: ``open(directory, part, tokenizer, ...)`` gives a writing copy that takes
``write(batch, meta)`` calls and ends with ``commit()`` (the files durably in place, their
names returned) or ``abort()`` (nothing of the part left). ``finish(directory, files, ...)``
joins the parts of a run: it reads every file back through the store's own reader, checks the
counts against the run's, and writes ``manifest.json`` last. A store registers its reader
beside its writer: :meth:`Store.read_output` (the files of a manifest as shards), so that
:meth:`genotok.Corpus.open` opens any store's output by its manifest's format.

The shared rules (one place, every store inherits them; ``genotok.testing.check_store`` tests
them on every registered store):

* ``overwrite=False`` refuses a part whose files exist; ``overwrite=True`` removes them first
  (:class:`ShardedStore`: the numbered files ``PART-000.SUFFIX`` …);
* every file is written under a temporary name, fsynced and renamed into place;
* ``abort()`` removes every file of the part;
* ``finish`` re-reads what a resumed run trusts (each file listed by the journal) and refuses a
  file that is missing, unreadable, or holds other counts than the run wrote;
* the manifest records each file's records, tokens and size, and a digest of itself: a reader
  refuses a file truncated, replaced or dropped after it was written.

:class:`ArrayShard` is the in-memory form a reader gives: the arrays
:class:`~genotok.formats.corpus.Corpus` gathers from, so every store reads back through the one
reader API (records, names, value channel, metadata).
"""

from __future__ import annotations

import abc
import contextlib
import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from .._io import CanonicalJSON, atomic_write, file_digest as _file_digest, local_path, make_temp
from ..errors import GenotokError, GtokFormatError
from ..params import PATH, ParameterError, Integral, Interval, Unchecked, validate_fields, validated
from ..ragged import Ragged
from .corpus.layout import MANIFEST, _is_int, _token_dtype
from .corpus.manifest import rel_problem

#: the part a run whose every input failed writes (an empty, valid output)
EMPTY = "shard-empty"
#: the version of a store's manifest (``format: genotok-<store name>``)
STORE_MANIFEST_VERSION = [1, 0]
#: header keys a reader needs, and their types
#: the largest vocabulary a store's header may declare (a corpus's 32-bit token ids)
MAX_VOCAB = 1 << 32
_HEADER_TYPES = {"fingerprint": str, "vocab_size": int, "special_tokens": dict,
                 "settings": dict, "extra": dict, "sources": list}


def _check_header(h, where) -> dict:
    """A store's header (a file's schema metadata, or a manifest's ``header``) checked: a
    JSON object with the keys a reader needs, of the right types; a clear
    :class:`~genotok.GtokFormatError` naming ``where`` otherwise.

    Examples
    --------
    >>> _check_header({"fingerprint": "fp", "vocab_size": 9}, "x.parquet")["special_tokens"]
    {}
    >>> _check_header({"fingerprint": "fp", "vocab_size": "9"}, "x.parquet")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.GtokFormatError: x.parquet: corrupt genotok metadata: vocab_size is str, ...
    """
    def bad(why: str) -> GtokFormatError:
        return GtokFormatError(f"{where}: corrupt genotok metadata: {why}; the file was edited "
                               "or damaged: re-create it")

    if isinstance(h, (bytes, str)):
        try:
            h = json.loads(h)
        except (ValueError, RecursionError):  # not UTF-8, not JSON, too deep, a huge int
            raise bad("not JSON (or nested too deeply)") from None
    if not isinstance(h, dict):
        raise bad(f"a {type(h).__name__}, not a JSON object")
    out = {"special_tokens": {}, "settings": {}, "extra": {}, "sources": [], **h}
    for key, typ in _HEADER_TYPES.items():
        v = out.get(key)
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise bad(f"{key} is {type(v).__name__}, expected {typ.__name__}")
    if not 1 <= out["vocab_size"] <= MAX_VOCAB or not out["fingerprint"]:
        raise bad(f"vocab_size outside [1, {MAX_VOCAB}] or an empty fingerprint")
    if not all(isinstance(k, str) and _is_int(v) and 0 <= v < out["vocab_size"]
               for k, v in out["special_tokens"].items()):
        raise bad("special_tokens is not a mapping of names to ids in the vocabulary")
    if not all(isinstance(s, dict) for s in out["sources"]):
        raise bad("sources is not a list of objects")
    return out


class ArrayShard:
    """One file (or one output) of a store, read back as arrays: what
    :class:`~genotok.formats.corpus.Corpus` gathers from (the interface of a corpus shard).

    ``tokens`` and ``offsets`` are checked here (offsets from 0, non-decreasing, ending at the
    token count; ``values`` one per token); ids against the vocabulary by :meth:`verify`.

    Examples
    --------
    >>> import numpy as np
    >>> s = ArrayShard("x", np.array([1, 2, 3]), np.array([0, 2, 3]), None,
    ...                {"fingerprint": "fp", "vocab_size": 9}, ["a", "b"], {})
    >>> s.n, s.t, s.tokens.dtype.name, s.bounds(1), s.verify()
    (2, 3, 'uint16', (2, 3), [])
    """

    version = (1, 0)
    trusted = False

    def __init__(self, path, tokens, offsets, values, header: dict, names, meta: dict):
        self.path = path
        self.header = _check_header(header, path)
        vocab = self.header["vocab_size"]
        self.dtype = _token_dtype(vocab)
        tokens = np.asarray(tokens)
        if tokens.dtype.kind not in "iu" and tokens.size:
            raise GtokFormatError(f"{path}: token ids of dtype {tokens.dtype}, expected integers")
        if tokens.size and tokens.dtype.kind == "i" and int(tokens.min()) < 0:
            raise GtokFormatError(f"{path}: negative token id {int(tokens.min())}: the file is "
                                  "corrupt")
        if tokens.size and int(tokens.max()) >= vocab:
            raise GtokFormatError(f"{path}: token id {int(tokens.max())} >= vocab_size {vocab}: "
                                  "the file is corrupt or of another universe")
        self.tokens = tokens.astype(self.dtype, copy=False)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.n, self.t = self.offsets.size - 1, int(self.tokens.size)
        o = self.offsets
        if self.n < 0 or o[0] != 0 or o[-1] != self.t or np.any(o[1:] < o[:-1]):
            raise GtokFormatError(f"{path}: corrupt record offsets: the file is corrupt")
        self.values = None if values is None else np.ascontiguousarray(values, np.float32)
        if self.values is not None and self.values.size != self.t:
            raise GtokFormatError(f"{path}: {self.values.size} values for {self.t} tokens: "
                                  "the value channel must hold one value per token")
        self.values_dtype = None if self.values is None else self.values.dtype
        names = list(names) if names is not None else [None] * self.n
        if len(names) != self.n or any(m is not None and len(m) != self.n for m in meta.values()):
            raise GtokFormatError(f"{path}: names or metadata columns do not have one entry "
                                  f"per record ({self.n})")
        self.header["meta_columns"] = list(meta)
        self.records = {"names": names, "meta": {k: list(v) for k, v in meta.items()}}
        h = hashlib.blake2b(digest_size=8)
        h.update(f"{path}:{self.n}:{self.t}:{self.header['fingerprint']}".encode())
        self.head_sum = h.digest()

    @property
    def meta_columns(self) -> list[str]:
        return list(self.records["meta"])

    def bounds(self, j: int) -> tuple[int, int]:
        return int(self.offsets[j]), int(self.offsets[j + 1])

    def check_offsets(self, ja: int, jb: int) -> None:
        """Checked on open: nothing to do."""

    def verify(self) -> list[str]:
        """Nothing left to check: ids, offsets and values were checked when read."""
        return []


@validated({"lists": [Unchecked("the records read from a file, each checked here")],
            "path": PATH})
def ragged_of(lists, path) -> tuple[np.ndarray, np.ndarray]:
    """Flat ids and offsets of a list of integer lists (a JSON reader's records).

    Examples
    --------
    >>> [a.tolist() for a in ragged_of([[1, 2], [], [3]], "x.jsonl")]
    [[1, 2, 3], [0, 2, 2, 3]]
    """
    lengths = np.fromiter((len(x) for x in lists), np.int64, len(lists))
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = [v for x in lists for v in x]
    if not all(_is_int(v) for v in flat):
        raise GtokFormatError(f"{path}: input_ids holds a value that is not a whole number")
    try:
        return np.asarray(flat, np.int64), offsets
    except OverflowError:
        raise GtokFormatError(f"{path}: input_ids holds an id beyond 64 bits") from None


@dataclass
class Store(abc.ABC):
    """The protocol (and the bookkeeping every store shares). Subclasses set ``name``,
    ``supports`` and ``suffix``, and implement :meth:`_begin`, :meth:`write`, :meth:`commit`,
    :meth:`abort` and :meth:`read_file` (``docs/architecture.md`` adds one).

    ``supports`` says what a store keeps: ``"values"`` (the value channel), ``"names"``,
    ``"metadata"`` (per-record columns, any name but ``names``: one named like a store's own
    column reads back under its own name), ``"sources"`` (the inputs, per file), ``"extra"``
    (``open(extra=)``, a run's cell spec and fitted medians, read back as the output's
    ``header["extra"]``).

    :meth:`write`, :meth:`commit` and :meth:`read_file` are abstract: a store that forgets
    one cannot be made (``TypeError`` naming it; :func:`genotok.testing.check_store` says so).

    Examples
    --------
    >>> from genotok.formats.stores import STORES
    >>> sorted(STORES["corpus"].supports), STORES["gtok-dir"].per_record_files
    (['extra', 'metadata', 'names', 'sources', 'values'], True)
    """

    name: ClassVar[str] = ""
    supports: ClassVar[frozenset] = frozenset()
    suffix: ClassVar[str] = ""
    #: one file per record, named by the record (a name that cannot be a file is an error)
    per_record_files: ClassVar[bool] = False
    #: whether the store writes files (the memory store does not)
    writes_files: ClassVar[bool] = True
    CONSTRAINTS: ClassVar[dict] = {}

    directory: Path | None = field(default=None, init=False, repr=False, compare=False)
    part: str = field(default="", init=False, repr=False, compare=False)
    tokenizer: object = field(default=None, init=False, repr=False, compare=False)
    values: bool = field(default=False, init=False, repr=False, compare=False)
    columns: tuple = field(default=(), init=False, repr=False, compare=False)
    extra: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    sources: list = field(default_factory=list, init=False, repr=False, compare=False)
    overwrite: bool = field(default=True, init=False, repr=False, compare=False)

    def __post_init__(self):
        validate_fields(self)

    def config(self) -> dict:
        """What the store was configured with (part of a run's plan: a resumed run with
        another store is refused)."""
        return {"name": self.name, **{k: getattr(self, k) for k in self.CONSTRAINTS}}

    def open(self, directory, part: str, tokenizer, *, values: bool = False, columns=(),
             extra: dict | None = None, sources=(), overwrite: bool = True) -> Store:
        """A writing copy of this store for ``part`` of ``directory``: ``values`` keeps the
        value channel, ``columns`` the metadata columns, ``extra`` goes to the header (or
        schema metadata), ``sources`` are ``(name, keywords)`` pairs of the inputs;
        ``overwrite=False`` refuses a part that exists."""
        if values and "values" not in self.supports:
            raise GenotokError(f"format={self.name!r} stores token ids only, not the values "
                               "(values=True); use format='corpus', 'parquet' or 'arrow'")
        if "names" in columns:  # ``write``'s meta holds the record names under this key
            raise ParameterError("a metadata column may not be called 'names': write()'s meta "
                                 "holds the record names under that key; rename the column "
                                 "(e.g. obs_columns=[...] of another name)")
        s = copy.copy(self)
        s.directory = None if directory is None else local_path(directory, "a store's part")
        s.part, s.tokenizer, s.values = part, tokenizer, bool(values)
        s.columns = tuple(columns) if "metadata" in self.supports else ()
        s.extra, s.sources = dict(extra or {}), list(sources)
        s.overwrite = bool(overwrite)
        s._begin()
        return s

    def _begin(self) -> None:
        """Prepare the part (called by :meth:`open` on the copy)."""

    @abc.abstractmethod
    def write(self, batch: Ragged, meta: dict) -> None:
        """Write ``batch`` (consecutive records) with its ``meta`` (``{"names": [...],
        column: [...]}``) into the part."""

    @abc.abstractmethod
    def commit(self) -> list[str]:
        """Put the part's files durably in place; their names (relative to the directory)."""

    def abort(self) -> None:
        """Leave nothing of the part behind."""

    def _header(self) -> dict:
        """The tokenizer's identity and the part's extra, for a file's own metadata."""
        t = self.tokenizer
        return {"fingerprint": t.fingerprint, "vocab_size": t.vocab_size,
                "special_tokens": t.universe.special_token_ids,
                "settings": t.settings.as_dict(), "extra": self.extra,
                "sources": [{"name": n, "size": None, "sha256": None, **kw}
                            for n, kw in self.sources]}

    # -- reading back (the reader registered beside the writer)
    @classmethod
    @abc.abstractmethod
    def read_file(cls, path: Path, header: dict) -> ArrayShard:
        """One file of this store as an :class:`ArrayShard` (``header``: the manifest's, for
        files that carry none; a file's own metadata wins). Damage is a
        :class:`~genotok.GtokFormatError` naming the file."""

    @classmethod
    def read_output(cls, directory: Path, files: list[Path], header: dict) -> list[ArrayShard]:
        """The files of an output as shards (one per file; a store of one file per record
        joins them)."""
        return [cls.read_file(f, header) for f in files]

    # -- joining a run's parts
    def finish(self, directory: Path, files: list[str], tokenizer, extra: dict) -> None:
        """Join a run's parts: every file is read back (a file a resumed run trusted but that
        was truncated, replaced or deleted since is refused here, before any manifest), the
        counts checked against the run's, then ``manifest.json`` written last."""
        directory = Path(directory)
        if not files and not self.per_record_files:
            files = self.open(directory, EMPTY, tokenizer).commit()
        header, counted = self.check_files(directory, files, tokenizer, extra)
        n, t = sum(c[1] for c in counted), sum(c[2] for c in counted)
        entries = [{"path": f, "n_records": fn, "n_tokens": ft,
                    "bytes": (directory / f).stat().st_size, "digest": file_digest(directory / f)}
                   for f, fn, ft in counted]
        manifest = {"format": f"genotok-{self.name}", "version": STORE_MANIFEST_VERSION,
                    "store": self.config(), "header": header, "n_records": n, "n_tokens": t,
                    "files": files, "shards": entries, **extra}
        body = CanonicalJSON(manifest)  # encoded once: the digest's text and the file's
        with atomic_write(directory / MANIFEST, "w") as fh:
            fh.write(body.lines({"digest": _body_digest(body)}))

    def check_files(self, directory: Path, files: list[str], tokenizer, extra: dict):
        """``(header, [(file, records, tokens)…])`` of a run's files, each read back (a file
        a resumed run trusted but that was truncated, replaced or deleted since is refused),
        their totals checked against the run's (``extra["genotok_run"]``)."""
        directory = Path(directory)
        header = {"fingerprint": tokenizer.fingerprint, "vocab_size": tokenizer.vocab_size,
                  "special_tokens": tokenizer.special_token_ids,  # (a GeneTokenizer's too)
                  "settings": tokenizer.settings.as_dict()}
        for f in files:
            if not (directory / f).is_file():
                raise GtokFormatError(f"{directory / f}: a file the run wrote is missing (deleted "
                                      "after its batch was journaled); re-run with "
                                      "overwrite=True to write the output again")
        counted = list(self.count_files(directory, files, header))  # one file at a time
        # the run's totals (a split output's two halves share them: each checks its files only)
        run = {} if "split" in extra else (extra.get("genotok_run") or {})
        n, t = sum(c[1] for c in counted), sum(c[2] for c in counted)
        if (_is_int(run.get("n_records")) and run["n_records"] != n) or (
                _is_int(run.get("n_tokens")) and run["n_tokens"] != t):
            raise GtokFormatError(f"{directory}: its files hold {n} records and {t} tokens, the "
                                  f"run wrote {run.get('n_records')} and {run.get('n_tokens')}: a "
                                  "file was truncated, replaced or deleted after its batch was "
                                  "journaled; re-run with overwrite=True")
        return header, counted

    def count_files(self, directory: Path, files: list[str], header: dict):
        """``(file, records, tokens)`` of each file, read back one at a time through the
        store's reader (so damage is found; a store may count more cheaply)."""
        for f in files:
            s = self.read_file(Path(directory) / f, header)
            yield f, s.n, s.t


@validated({"path": PATH})
def file_digest(path) -> str:
    """The blake2b-64 digest of a file's bytes (hex), read in blocks.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp(), "x")
    >>> _ = p.write_bytes(b"abc")
    >>> file_digest(p)
    'd8bb14d833d59559'
    """
    return _file_digest(path, "blake2b_64", chunk=8 << 20)


def _digest(manifest: dict) -> str:
    """A manifest's digest: blake2b-64 of its canonical JSON, the ``digest`` key left out."""
    return _body_digest(CanonicalJSON({k: v for k, v in manifest.items() if k != "digest"}))


def _body_digest(body: CanonicalJSON) -> str:
    return hashlib.blake2b(body.text.encode(), digest_size=8).hexdigest()


def _open_output(store: type[Store], directory: Path, manifest: dict, *,
                trusted: bool = False) -> list[ArrayShard]:
    """The shards of a store's output, every file checked against its manifest entry
    (inside the directory, same size and counts) and the manifest against its digest.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from genotok import Tokenizer
    >>> from genotok.formats.jsonl import JsonlStore
    >>> d, tok = Path(tempfile.mkdtemp()), Tokenizer(["chr1:0-10"])
    >>> w = JsonlStore().open(d, "part", tok)
    >>> w.write(Ragged.from_list([[0], [0, 0]]), {"names": ["a", "b"]})
    >>> JsonlStore().finish(d, w.commit(), tok, {})
    >>> [s.n for s in _open_output(JsonlStore, d, json.loads((d / MANIFEST).read_text()))]
    [0, 2]
    """
    mpath = Path(directory) / MANIFEST

    def corrupt(why: str) -> GtokFormatError:
        return GtokFormatError(f"{mpath}: corrupt manifest ({why}); re-create the output")

    if manifest.get("digest") != _digest(manifest):
        raise GtokFormatError(f"{mpath}: manifest digest mismatch: the manifest was edited after "
                              "it was written; re-create the output")
    entries, header = manifest.get("shards"), manifest.get("header")
    if not isinstance(entries, list) or not isinstance(header, dict):
        raise corrupt("shards or header missing")
    header = _check_header(header, mpath)
    paths = []
    for k, e in enumerate(entries):
        if not isinstance(e, dict) or not all(_is_int(e.get(x)) for x in
                                              ("n_records", "n_tokens", "bytes")):
            raise corrupt(f"entry {k} is not an object with counts")
        why = rel_problem(e.get("path"))
        if why:
            raise corrupt(f"entry {k}: path {str(e.get('path'))[:200]!r} {why}")
        p = Path(directory) / e["path"]
        if p.is_symlink() or not p.is_file():
            raise GtokFormatError(f"{p}: listed by {mpath} but missing (or not a regular file): "
                                  "the output is incomplete; re-create it")
        if p.stat().st_size != e["bytes"]:
            raise GtokFormatError(f"{p}: {p.stat().st_size} bytes, the manifest says {e['bytes']}: "
                                  "truncated or replaced after it was written; re-create it")
        if not trusted and e.get("digest") != file_digest(p):  # (trusted: the cheap open)
            raise GtokFormatError(f"{p}: its content differs from what was written (blake2b-64 "
                                  f"digest {file_digest(p)}, the manifest says "
                                  f"{str(e.get('digest'))[:20]}): damaged or edited; re-create it")
        paths.append(p)
    shards = store.read_output(Path(directory), paths, header)
    got = [(p, sh.n, sh.t) for p, sh in zip(paths, shards)]
    want = [(e["n_records"], e["n_tokens"]) for e in entries]
    if len(shards) != len(entries):  # files joined into one shard (a file per record)
        got = [(Path(directory), sum(g[1] for g in got), sum(g[2] for g in got))]
        want = [(sum(w[0] for w in want), sum(w[1] for w in want))]
    for (p, n, t), (wn, wt) in zip(got, want):
        if (n, t) != (wn, wt):
            raise GtokFormatError(f"{p}: {n} records and {t} tokens, the manifest says {wn} and "
                                  f"{wt}: replaced after it was written; re-create it")
    for sh in shards:
        if sh.header["fingerprint"] != header["fingerprint"]:
            raise GtokFormatError(f"{sh.path}: tokenized with another universe than {mpath} says")
    return shards


@dataclass
class ShardedStore(Store):
    """A store whose part is one or more numbered files ``PART-000.SUFFIX`` … of at most
    ``rows_per_shard`` records and about ``bytes_per_shard`` bytes of tokens (and values):
    the splitting, the temporary names, the ``overwrite`` rule and ``abort`` for every such
    store. Subclasses implement :meth:`_open_writer`, :meth:`_write_rows` and
    :meth:`_close_writer` (and :meth:`Store.read_file`).

    Examples
    --------
    >>> import tempfile
    >>> from genotok import Tokenizer
    >>> from genotok.formats.jsonl import JsonlStore  # one of them
    >>> w = JsonlStore(rows_per_shard=1).open(tempfile.mkdtemp(), "p", Tokenizer(["chr1:0-10"]))
    >>> w.write(Ragged.from_list([[0], [0]]), {"names": ["a", "b"]})
    >>> w.commit()  # (and the part's header: JSON Lines has no room for it)
    ['p.header.json', 'p-000.jsonl', 'p-001.jsonl']
    """

    CONSTRAINTS: ClassVar[dict] = {"rows_per_shard": [Interval(Integral, 1, None)],
                                   "bytes_per_shard": [Interval(Integral, 1, None)]}
    rows_per_shard: int = 100_000
    bytes_per_shard: int = 256 << 20

    def _begin(self) -> None:
        stem, dot, ext = self.part.rpartition(".")
        stem = stem if dot and f".{ext}" in (self.suffix, ".gtokc") else self.part
        self._stem = stem
        for old in self.directory.glob(f"{stem}-[0-9][0-9][0-9]{self.suffix}"):
            if not self.overwrite:
                raise FileExistsError(f"{old} exists; pass overwrite=True to replace it")
            old.unlink()  # a part of a killed run that never reached the journal
        self._files: list[str] = []
        self._writer = self._tmp = None
        self._rows = self._bytes = 0

    def write(self, batch: Ragged, meta: dict) -> None:
        n, offsets = len(batch), np.asarray(batch.offsets, np.int64)
        per_row = np.diff(offsets) * (8 if self.values else 4)
        a = 0
        while a < n:
            if self._writer is None:
                self._new_file(meta)
            room = self.rows_per_shard - self._rows
            cum = np.cumsum(per_row[a:a + room])
            fit = int(np.searchsorted(cum, self.bytes_per_shard - self._bytes, side="right"))
            b = a + max(fit, 1 if self._rows == 0 else 0)
            b = min(b, a + room, n)
            if b > a:
                self._write_rows(batch, meta, a, b)
                self._rows += b - a
                self._bytes += int(per_row[a:b].sum())
                a = b
            if a < n:
                self._close_file()

    def _new_file(self, meta: dict) -> None:
        final = self.directory / f"{self._stem}-{len(self._files):03d}{self.suffix}"
        fd, self._tmp = make_temp(final)
        self._final = final
        self._fh = os.fdopen(fd, "wb")
        self._writer = self._open_writer(self._fh, meta, first=not self._files)
        self._rows = self._bytes = 0

    def _close_file(self) -> None:
        self._close_writer()
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self._final)
        self._files.append(self._final.name)
        self._writer = self._tmp = None

    def commit(self) -> list[str]:
        if self._writer is None and not self._files:  # no records: one empty file
            self._new_file({})
        if self._writer is not None:
            self._close_file()
        return self._files

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._close_writer()
            self._fh.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._tmp)
            self._writer = None
        for f in self._files:
            (self.directory / f).unlink(missing_ok=True)

    @abc.abstractmethod
    def _open_writer(self, fh, meta: dict, first: bool):
        """A writer of one file on the open binary ``fh`` (``first``: the part's first file)."""

    @abc.abstractmethod
    def _write_rows(self, batch: Ragged, meta: dict, a: int, b: int) -> None:
        """Records ``a:b`` of ``batch`` through ``self._writer``."""

    @abc.abstractmethod
    def _close_writer(self) -> None:
        """Finish the file ``self._writer`` writes (its footer; the base closes ``fh``)."""


__all__ = ["EMPTY", "ArrayShard", "ShardedStore", "Store", "file_digest", "ragged_of"]
