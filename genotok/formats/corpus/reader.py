"""Reading a corpus: :class:`Corpus`, one memory-mapped file or a sharded directory
(``docs/formats.md``). Records are zero-copy views; batches are gathered by the numba kernels of
:mod:`genotok.kernels.gather`.

Remote corpora (``s3://``…) are :class:`~genotok.formats.corpus.remote.RemoteCorpus`, a
subclass: :meth:`Corpus.open` reaches them through the opener that :mod:`.remote` registers
when the package imports it, so this module never imports remote.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ... import _validate
from ..._html import card, preview
from ..._io import is_url
from ...errors import GtokFormatError, UniverseMismatchError
from ...kernels import gather as _kernels
from ...params import EXPECT, PATH, Flag, InstanceOf, Integral, Interval, check, validated
from ...ragged import Ragged
from .layout import _is_count
from .manifest import MANIFEST_FORMAT, _open_manifest
from .shard import _check_shards, _Shard

#: below this many tokens a batch is gathered on one thread (thread start-up costs more)
PARALLEL_GATHER_MIN = 1 << 21

#: how :meth:`Corpus.open` opens a URL: ``remote.open_corpus``, registered by :mod:`.remote`
#: (imported by the package) with :func:`_set_url_opener`
_url_opener: Callable | None = None


def _set_url_opener(opener: Callable) -> None:
    global _url_opener
    _url_opener = opener


def _gather_rows(tokens: np.ndarray, offsets: np.ndarray, idx: np.ndarray, where: str = "corpus",
                 check: bool = True):
    """Rows ``idx`` of a (tokens, offsets) ragged pair as a new flat array + offsets.

    ``idx`` must already be within ``0..len(offsets) - 2`` (the caller validates). With
    ``check`` the rows' offsets are checked here (one vectorised pass over the batch) before
    the kernel copies: a corpus opened with ``trusted=True`` may hold any offsets, and numba
    checks no bounds. Offsets validated on open need no second look (``check=False``).
    """
    starts, ends = offsets[idx], offsets[idx + 1]
    lengths = ends - starts
    if check and idx.size and (starts.min() < 0 or lengths.min() < 0
                               or ends.max() > tokens.shape[0]):
        bad = int(np.flatnonzero((starts < 0) | (lengths < 0) | (ends > tokens.shape[0]))[0])
        raise GtokFormatError(f"{where}: corrupt record offsets at record {int(idx[bad])} "
                              f"([{int(starts[bad])}, {int(ends[bad])}) for {tokens.shape[0]} "
                              "tokens): the file is corrupt; run verify()")
    out_offsets = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=tokens.dtype)
    if out.size:
        kernel = _kernels.gather_parallel if out.size >= PARALLEL_GATHER_MIN else _kernels.gather
        kernel(np.asarray(tokens), np.asarray(offsets), idx, out_offsets, out)
    return out, out_offsets


@validated({"fingerprint": [InstanceOf(str)], "expect": EXPECT,
            "where": [InstanceOf(str, os.PathLike)]})
def check_expected(fingerprint: str, expect, where) -> None:
    """Refuse a corpus whose universe ``fingerprint`` is not ``expect``'s (a fingerprint string,
    or a Tokenizer / Universe); ``None`` checks nothing. Shared by local and remote corpora.

    Examples
    --------
    >>> check_expected("ab12", "ab12", "corpus/")  # the same universe: nothing to say
    >>> check_expected("ab12", "cd34", "corpus/")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.UniverseMismatchError: corpus/: tokenized with universe ab12…, but ...
    """
    if expect is None:
        return
    want = expect if isinstance(expect, str) else expect.fingerprint
    if fingerprint != want:
        raise UniverseMismatchError(
            f"{where}: tokenized with universe {fingerprint[:12]}…, but the given "
            f"tokenizer/universe is {want[:12]}…; token ids are specific to their universe")


class Corpus(Sequence):
    """A read-only, memory-mapped corpus of token lists (one file or a sharded directory).

    ``corpus[i]`` is an O(1) zero-copy view of record ``i``; ``corpus[a:b]`` and
    ``corpus[[i, j, ...]]`` (or :meth:`get_batch`) give many records as a :class:`Ragged`.

    Open with :meth:`open`.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
    ...     w.append_batch([[1, 2], [3]], names=["a", "b"])
    >>> c = Corpus.open(p, expect="fp")
    >>> c[1].tolist(), c.get_batch([1, 0]).to_list(), c.lengths.tolist()
    ([3], [[3], [1, 2]], [2, 1])
    """

    def __init__(self, shards: list[_Shard], path: Path, manifest: dict | None = None,
                 manifest_problems: Sequence[str] = ()):
        self.manifest = manifest
        self._manifest_problems = list(manifest_problems)
        _check_shards(shards, path)
        self.path = path
        self._shards = shards
        first = shards[0]
        counts = np.array([s.n for s in shards], dtype=np.int64)
        self._starts = np.zeros(len(shards) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._starts[1:])
        self.header = first.header
        self._offsets = first.offsets if len(shards) == 1 else None
        self._names: list | None = None
        self._meta: dict | None = None
        self._lengths: np.ndarray | None = None

    # -- opening
    @classmethod
    @validated({"path": PATH, "expect": EXPECT, "verify": [Flag()], "trusted": [Flag()]},
               "Corpus.open")
    def open(cls, path: str | os.PathLike, *, expect=None, verify: bool = False,
             trusted: bool = False, **remote) -> Corpus:
        """Open a corpus file or a sharded corpus directory (with ``manifest.json``).

        Opening is safe by default: the files must be regular files, each section must lie
        inside its file (a truncated file is refused here, not with SIGBUS later), the header
        is type-checked against its digest, and *every* record offset is checked (in bounds,
        non-decreasing, matching its checksum), so no read returns another record's data.
        A manifest may only name files inside its directory. docs/formats.md lists exactly
        what is checked.

        Parameters
        ----------
        path
            A ``.gtokc`` file or a directory with ``manifest.json``.
        expect
            A fingerprint string or an object with ``.fingerprint`` (a Tokenizer or Universe):
            a corpus tokenized with a different universe raises
            :class:`~genotok.UniverseMismatchError`.
        verify
            Run the full :meth:`verify` (checksums, every id) before returning.
        trusted
            Skip the pass over the record offsets (the cheap open, for files you wrote
            yourself): reads stay memory-safe, but a corrupt offset may give wrong records.
        **remote
            For a URL (``s3://``, ``gs://``, ``https://``…): ``cache_dir``, ``cache_limit``,
            ``prefetch``, ``storage_options`` of :func:`genotok.formats.corpus.remote.open_corpus`.

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append([4, 5])
        >>> Corpus.open(p, expect="fp", verify=True)[0].tolist()
        [4, 5]
        """
        if is_url(path):
            if _url_opener is None:  # pragma: no cover - the package registers it on import
                raise ImportError("genotok.formats.corpus.remote is not imported")
            return _url_opener(path, expect=expect, verify=verify, **remote)  # through a cache
        if remote:
            raise TypeError(f"{', '.join(sorted(remote))}: options of remote corpora (s3://, "
                            "gs://, https://…) only")
        path = Path(path)
        if path.is_dir():
            shards, manifest, later = _open_manifest(path, bool(trusted))
        else:
            shards, manifest, later = [_Shard(path, trusted=bool(trusted))], None, []
        corpus = cls(shards, path, manifest, later)
        corpus._trusted = bool(trusted)
        check_expected(corpus.fingerprint, expect, path)
        if verify:
            corpus.verify(raise_on_error=True)
        return corpus

    def __reduce__(self):
        # pickled by path (e.g. into DataLoader workers): re-mapped there, never copied; with
        # its identity, so that a worker never reads another version under the parent's plan
        return (_reopen, (self.path, getattr(self, "_trusted", False), self.identity))

    @property
    def identity(self) -> str:
        """What this corpus is: its manifest's digest, else a digest of its shards' header digests
        (which cover every section's checksum) and counts. Pickles and loader states carry it.

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append([4, 5])
        >>> len(Corpus.open(p).identity)
        16
        """
        digest = (self.manifest or {}).get("digest")
        if isinstance(digest, str):
            return digest
        h = hashlib.blake2b(digest_size=8)
        for sh in self._shards:
            h.update(f"{sh.head_sum.hex()}:{sh.n}:{sh.t};".encode())
        return h.hexdigest()

    # -- metadata
    @property
    def fingerprint(self) -> str:
        """The universe fingerprint the tokens were written with."""
        return self.header["fingerprint"]

    @property
    def vocab_size(self) -> int:
        """Vocabulary size of that universe (every id is below it)."""
        return int(self.header["vocab_size"])

    @property
    def special_token_ids(self) -> dict:
        """Special token ids (``{"unk": id, "pad": id, ...}``), as ``Universe.special_token_ids``.

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=9, fingerprint="fp", special_token_ids={"unk": 8}) as w:
        ...     w.append([1])
        >>> Corpus.open(p).special_token_ids
        {'unk': 8}
        """
        return dict(self.header.get("special_tokens", {}))  # the header key is the file format

    @property
    def settings(self) -> dict:
        """The tokenizer settings the corpus was written with."""
        return dict(self.header.get("settings", {}))

    @property
    def names(self) -> list:
        """Record names (file names, cell barcodes), ``None`` where unnamed (read once)."""
        if self._names is None:
            out: list = []
            for s in self._shards:
                out.extend(s.records["names"] or [None] * s.n)
            self._names = out
        return self._names

    @property
    def meta(self) -> dict[str, list]:
        """Per-record metadata columns (``None`` where a shard lacks a column; read once)."""
        if self._meta is None:
            cols = list(dict.fromkeys(k for s in self._shards for k in s.meta_columns))
            self._meta = {k: [] for k in cols}
            for s in self._shards:
                m = s.records["meta"]
                for k in cols:
                    self._meta[k].extend(m.get(k) or [None] * s.n)
        return self._meta

    @property
    def sources(self) -> list[dict]:
        """The inputs the corpus was made from (name, size, hash)."""
        return [src for s in self._shards for src in s.header.get("sources", [])]

    @property
    def has_values(self) -> bool:
        """Whether the corpus has a value channel (one value per token)."""
        return self._shards[0].values_dtype is not None

    @property
    def n_tokens(self) -> int:
        """Total number of tokens."""
        return sum(s.t for s in self._shards)

    @property
    def lengths(self) -> np.ndarray:
        """Number of tokens of every record (int64)."""
        if self._lengths is None:
            for s in self._shards:
                s.check_offsets(0, s.n)
            self._lengths = np.concatenate([np.diff(s.offsets) for s in self._shards])
        return self._lengths

    def info(self) -> dict:
        """Header, counts and length statistics (what ``genotok info`` prints).

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1, 2], [3]])
        >>> Corpus.open(p).info()["length_max"]
        2
        """
        lens = self.lengths
        h = {k: v for k, v in self.header.items() if k not in ("names", "meta")}
        h.update(path=str(self.path), shards=len(self._shards), n_records=len(self),
                 n_tokens=self.n_tokens, token_dtype=str(self._shards[0].dtype),
                 values_dtype=None if not self.has_values else str(self._shards[0].values_dtype),
                 meta_columns=list(dict.fromkeys(k for s in self._shards for k in s.meta_columns)),
                 format_version=".".join(map(str, self._shards[0].version)),
                 length_min=int(lens.min()) if lens.size else 0,
                 length_mean=float(lens.mean()) if lens.size else 0.0,
                 length_max=int(lens.max()) if lens.size else 0)
        run = (self.manifest or {}).get("genotok_run")
        if isinstance(run, dict):  # a run description written by pretokenize (shape checked)
            inputs, failed = run.get("inputs"), run.get("failed")
            if isinstance(inputs, list):
                h.update(inputs=len(inputs))
            if isinstance(failed, list):
                h.update(failed_inputs=[f.get("path") for f in failed if isinstance(f, dict)])
            unk_t, unk_r = run.get("n_unk_tokens"), run.get("n_unk_records")
            if _is_count(unk_t) and _is_count(unk_r) and len(self) and self.n_tokens:
                h.update(unk_share=f"{unk_t / self.n_tokens:.1%} of tokens are <unk>",
                         hit_rate=f"{1 - unk_r / len(self):.1%} of records hit the universe")
        return h

    # -- access
    def __len__(self) -> int:
        return int(self._starts[-1])

    def _locate(self, i: int) -> tuple[_Shard, int]:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"record {i} out of range for a corpus of {n} records")
        k = int(np.searchsorted(self._starts, i, side="right")) - 1
        return self._shards[k], i - int(self._starts[k])

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step == 1:
                return self._range(start, max(start, stop))
            return self.get_batch(np.arange(start, stop, step))
        if isinstance(i, (list, tuple, np.ndarray)):
            a = np.asarray(i)
            if a.dtype == bool:
                if a.shape != (len(self),):
                    raise IndexError(f"boolean mask of shape {a.shape} for {len(self)} records")
                a = np.flatnonzero(a)
            return self.get_batch(a)
        s, j = self._locate(int(i))
        a, b = s.bounds(j)
        return s.tokens[a:b]

    def values(self, i: int) -> np.ndarray:
        """The value channel of record ``i`` (a zero-copy view).

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp", values_dtype="uint16") as w:
        ...     w.append([1, 2], values=[5, 1])
        >>> Corpus.open(p).values(0).tolist()
        [5, 1]
        """
        s, j = self._locate(int(i))
        if s.values is None:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        a, b = s.bounds(j)
        return s.values[a:b]

    def _range(self, a: int, b: int, *, values: bool = False) -> Ragged:
        """Records ``a:b``: zero-copy views when they lie in one shard."""
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        k = int(np.searchsorted(self._starts, a, side="right")) - 1
        if a == b or (k < len(self._shards) and b <= self._starts[k + 1]):
            if a == b:
                return Ragged(np.zeros(0, self._shards[0].dtype), np.zeros(1, np.int64),
                              np.zeros(0, self._shards[0].values_dtype) if values else None)
            s = self._shards[k]
            ja, jb = a - int(self._starts[k]), b - int(self._starts[k])
            s.check_offsets(ja, jb)
            lo, hi = int(s.offsets[ja]), int(s.offsets[jb])
            return Ragged(s.tokens[lo:hi], s.offsets[ja:jb + 1] - lo,
                          s.values[lo:hi] if values else None)
        return self.get_batch(np.arange(a, b), values=values)

    def get_batch(self, indices, *, values: bool = False) -> Ragged:
        """Many records at once, in the order asked (a vectorised gather into one buffer).

        This is the fast path for random access: millions of records per second.

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1, 2], [3], [4, 5, 6]])
        >>> Corpus.open(p).get_batch([2, 0, 2]).to_list()
        [[4, 5, 6], [1, 2], [4, 5, 6]]
        """
        if values is not False and values is not True:  # (the fast path: no call's overhead)
            check("values", values, [Flag()], "Corpus.get_batch")
        idx = _validate.rows(indices, len(self), "record", "a corpus of {n} records")
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        if len(self._shards) == 1:
            s = self._shards[0]
            data, offs = _gather_rows(s.tokens, s.offsets, idx, str(s.path), s.trusted)
            vals = _gather_rows(s.values, s.offsets, idx, str(s.path), s.trusted)[0] if values else None
            return Ragged(data, offs, vals)
        # several shards: gather per shard (in shard order), then put rows back in asked order
        shard_of = np.searchsorted(self._starts, idx, side="right") - 1
        perm = np.argsort(shard_of, kind="stable")
        sorted_shard = shard_of[perm]
        bounds = np.searchsorted(sorted_shard, np.arange(len(self._shards) + 1))
        datas, valss, lens = [], [], []
        for k in range(len(self._shards)):
            if bounds[k] == bounds[k + 1]:
                continue
            s = self._shards[k]
            local = idx[perm[bounds[k]:bounds[k + 1]]] - self._starts[k]
            d, o = _gather_rows(s.tokens, s.offsets, local, str(s.path), s.trusted)
            datas.append(d)
            lens.append(np.diff(o))
            if values:
                valss.append(_gather_rows(s.values, s.offsets, local, str(s.path), s.trusted)[0])
        coffs = np.zeros(idx.size + 1, np.int64)
        if lens:
            np.cumsum(np.concatenate(lens), out=coffs[1:])
        inv = np.empty(idx.size, np.int64)
        inv[perm] = np.arange(idx.size)
        dtype = self._shards[0].dtype
        data, offs = _gather_rows(np.concatenate(datas) if datas else np.zeros(0, dtype), coffs, inv,
                                  check=False)
        vals = None
        if values:
            vdt = self._shards[0].values_dtype
            vals = _gather_rows(np.concatenate(valss) if valss else np.zeros(0, vdt), coffs, inv,
                                check=False)[0]
        return Ragged(data, offs, vals)

    def __iter__(self) -> Iterator[np.ndarray]:
        for s in self._shards:
            toks = s.tokens
            for j in range(s.n):
                a, b = s.bounds(j)
                yield toks[a:b]

    @validated({"batch_size": [Interval(Integral, 1, None)], "values": [Flag()]},
               "Corpus.iter_batches")
    def iter_batches(self, batch_size: int = 1024, *, values: bool = False) -> Iterator[Ragged]:
        """Consecutive records in batches of up to ``batch_size``: zero-copy views.

        A batch never spans two shards (the last batch of a shard may be shorter).

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1], [2, 3], [4]])
        >>> [b.to_list() for b in Corpus.open(p).iter_batches(2)]
        [[[1], [2, 3]], [[4]]]
        """
        check("batch_size", batch_size, [Interval(Integral, 1, None)], "Corpus.iter_batches")
        if values and not self.has_values:
            raise ValueError(f"{self.path}: this corpus has no value channel")
        for k in range(len(self._shards)):
            lo, hi = int(self._starts[k]), int(self._starts[k + 1])
            for a in range(lo, hi, int(batch_size)):
                yield self._range(a, min(a + int(batch_size), hi), values=values)

    @validated({"values": [Flag()]}, "Corpus.to_ragged")
    def to_ragged(self, *, values: bool = False) -> Ragged:
        """The whole corpus as one :class:`Ragged` (views for a single file, else a copy).

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append_batch([[1], [2, 3]])
        >>> Corpus.open(p).to_ragged().to_list()
        [[1], [2, 3]]
        """
        return self._range(0, len(self), values=values)

    def to_hf_dataset(self, **kwargs):
        """A Hugging Face ``datasets.Dataset`` over the tokens, not copied (:mod:`genotok.formats.hf`)."""
        from ..hf import to_hf_dataset

        return to_hf_dataset(self, **kwargs)

    # -- integrity
    def verify(self, raise_on_error: bool = False) -> list[str]:
        """Check offsets, ids < vocab_size, names/metadata and every checksum; list the problems.

        A missing integrity record is itself a problem: a header without its digest, or a
        manifest without its digest. An empty list means every byte was checked.

        Examples
        --------
        >>> import tempfile, os
        >>> from genotok.formats.corpus import CorpusWriter
        >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
        >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        ...     w.append([1, 2])
        >>> c = Corpus.open(p)
        >>> c.verify(), c.checks
        ([], 'header and data checksums, offsets, ids and records of every shard')
        """
        problems = list(self._manifest_problems)
        problems += [p for s in self._shards for p in s.verify()]
        if problems and raise_on_error:
            raise GtokFormatError("; ".join(problems))
        return problems

    @property
    def checks(self) -> str:
        """What opening the corpus untrusted and :meth:`verify` check, in words (what
        ``genotok verify`` says): a corpus file carries checksums of its header and data;
        another store's files are measured against the sizes and digests its manifest
        recorded when the run committed them (example: :meth:`verify`'s)."""
        fmt = str((self.manifest or {}).get("format", MANIFEST_FORMAT))
        if fmt == MANIFEST_FORMAT:
            return "header and data checksums, offsets, ids and records of every shard"
        return (f"{fmt.removeprefix('genotok-')} store: each file's size and digest against the "
                "manifest, its records and tokens counted, offsets and ids")

    def _repr_html_(self) -> str:
        lens = self.lengths
        names = self.names
        fields = {"records": f"{len(self):,}", "tokens": f"{self.n_tokens:,}",
                  "length min / mean / max": (f"{lens.min()} / {lens.mean():.1f} / {lens.max()}"
                                              if lens.size else "-"),
                  "vocab_size": f"{self.vocab_size:,}", "shards": len(self._shards),
                  "values": str(self._shards[0].values_dtype) if self.has_values else "none",
                  "fingerprint": self.fingerprint[:16] + "…", "path": str(self.path)}
        fields.update({f"setting: {k}": v for k, v in self.settings.items()})
        samples = [(str(names[i] if names[i] is not None else i),
                    preview([str(x) for x in self[i].tolist()])) for i in range(min(3, len(self)))]
        return card("genotok.Corpus", fields, samples)

    def __repr__(self) -> str:
        return (f"Corpus({len(self):,} records, {self.n_tokens:,} tokens, "
                f"vocab_size={self.vocab_size:,}, shards={len(self._shards)}, "
                f"fingerprint={self.fingerprint[:12]}, path={str(self.path)!r})")


def _reopen(path, trusted, identity=None):
    return check_identity(Corpus.open(path, trusted=trusted), identity)


def check_identity(corpus: Corpus, identity: str | None) -> Corpus:
    """``corpus`` when it is the one a pickle (or a state) was made of, else a clear error.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import CorpusWriter
    >>> p = os.path.join(tempfile.mkdtemp(), "c.gtokc")
    >>> with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
    ...     w.append([4, 5])
    >>> c = Corpus.open(p)
    >>> check_identity(c, c.identity) is c
    True
    """
    if identity is not None and corpus.identity != identity:
        raise GtokFormatError(
            f"{corpus.path}: the corpus changed since it was opened in the parent process "
            f"(identity {corpus.identity}, expected {identity}: rewritten or re-uploaded); a "
            "worker would read another version under the parent's plan: restart the run")
    return corpus


def warmup() -> None:
    """Compile the corpus gather kernels on a tiny input (part of :func:`genotok.warmup`).

    Examples
    --------
    >>> warmup()
    """
    _kernels.warmup()
