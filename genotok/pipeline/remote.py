"""A :func:`~genotok.pipeline.pretokenize` run with an object store (``s3://``, ``gs://``…)
as its output or its inputs, through fsspec (``pip install 'genotok[remote]'``).

Output: the run happens in a local staging directory, one per URL, under genotok's cache
(``$GENOTOK_CACHE`` or ``~/.cache/genotok``, then ``staging/``), with its lock and journal as
any local run; each batch's files are uploaded once the batch is journaled (while the next
batches are tokenized), and when the run is done the rest, the manifests last, so a reader
never sees a manifest before its shards. A crash (or a lost connection) at any point is
resumed by running the same command again: the journal skips the batches already staged, and
the files already uploaded (recorded beside the staging directory) are not sent again. The
staging directory is removed once everything is uploaded. ``overwrite=True`` first deletes
the store's manifests, so an earlier corpus is never half replaced under a manifest. With a
Dask client the workers write into the staging directory, so they must see it (as they must
see a local ``out``): workers on this machine, or a ``GENOTOK_CACHE`` on a shared file
system.

Inputs and universes: a URL is copied to the cache first (:func:`genotok._io.fetch_url`); a
copy of the same size is reused, so a resumed run sees the same input.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._io import atomic_write, cache_root, fetch_url, is_url, url_fs
from ..formats.corpus import MANIFEST
from .journal import JOURNAL, LOCK
from .plan import PipelineError

#: schemes fsspec can read but not write
READ_ONLY = ("http", "https", "ftp")


def _key(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def staging_dir(url: str) -> Path:
    """The local directory a run to ``url`` is staged in (one per URL).

    Examples
    --------
    >>> staging_dir("s3://bkt/run").parent.name
    'staging'
    """
    return cache_root() / "staging" / _key(url)


def check_output(url: str, storage_options: dict | None, overwrite: bool) -> Path:
    """Refuse an output URL that cannot be written, before any work, as a local output would
    be refused: a read-only scheme, a bucket that does not exist, or (``overwrite=False``) a
    prefix holding a run this machine is not resuming. With ``overwrite``, every object an
    earlier run wrote there is deleted first (its shards too, so a glob read never mixes two
    runs), and a prefix holding objects no run wrote is refused. Returns the staging directory.

    Examples
    --------
    >>> check_output("https://example.org/run", None, False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.pipeline.plan.PipelineError: https://example.org/run: https:// is read-only; ...
    """
    scheme = url.split("://", 1)[0].lower()
    if scheme in READ_ONLY:
        raise PipelineError(f"{url}: {scheme}:// is read-only; write the corpus to a local "
                            "directory or an object store (s3://, gs://, az://…)")
    fs, root = url_fs(url, storage_options)
    root = root.rstrip("/")
    if scheme in BUCKETS:
        bucket = root.split("/", 1)[0]
        try:
            there = fs.exists(bucket)
        except (OSError, PermissionError, ValueError) as exc:
            raise PipelineError(f"{url}: the bucket {bucket!r} cannot be reached "
                                f"({type(exc).__name__}: {exc})") from None
        if not there:
            raise PipelineError(f"{url}: the bucket {bucket!r} does not exist; create it first "
                                "(nothing was tokenized)")
    stage = staging_dir(url)
    objects = _objects(fs, root)
    if overwrite:
        _remove_remote_run(fs, root, url, objects)
        _record(stage).unlink(missing_ok=True)
    elif objects and not (stage / JOURNAL).is_file():
        what = ("holds a finished genotok run" if MANIFEST in objects else
                "holds a genotok run this machine is not resuming" if _ours(objects, set())
                else "is not empty and holds no genotok run")
        raise PipelineError(f"{url}: {what}; pass overwrite=True to replace it, or choose "
                            "another prefix")
    stage.mkdir(parents=True, exist_ok=True)
    return stage


#: the schemes whose first path component is a bucket, checked before any work
BUCKETS = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")


def _objects(fs, root: str) -> list[str]:
    """Every object under ``root``, relative to it."""
    with contextlib.suppress(Exception):
        fs.invalidate_cache(root)  # a listing cached before this run's (or another's) writes
    try:
        found = fs.find(root)
    except FileNotFoundError:
        return []
    return sorted(p[len(root) + 1:] for p in found if p.startswith(root + "/"))


def _ours(objects: list[str], listed: set[str]) -> list[str]:
    """The objects a genotok run wrote: its manifests and journal, the files a manifest lists,
    and files named as a run's parts."""
    return [o for o in objects if o.rsplit("/", 1)[-1] in (MANIFEST, JOURNAL) or o in listed
            or _PART.fullmatch(o.rsplit("/", 1)[-1])]


#: the files a run's parts are named (``shard-00000.gtokc``, ``shard-00000-000.parquet``…)
_PART = re.compile(r"shard-(?:\d{5,}|empty)(?:\.gtokc|-\d{3,}\.[a-z.]+)")


def _remove_remote_run(fs, root: str, url: str, objects: list[str]) -> None:
    """``overwrite=True`` on an object store: delete every object of the earlier run (the
    manifests first, so a reader never sees a manifest without its files); refuse a prefix
    that holds objects no run wrote (nothing is deleted then), as a local directory is."""
    listed: set[str] = set()
    for m in (o for o in objects if o.rsplit("/", 1)[-1] == MANIFEST):
        try:
            files = json.loads(fs.cat_file(f"{root}/{m}")).get("files") or []
        except (OSError, ValueError, AttributeError, RecursionError):
            files = []
        base = m[:-len(MANIFEST)]
        listed.update(f"{base}{f}" for f in files if isinstance(f, str))
        listed.update(f"{base}{e['path']}" for e in _shards_of(fs, f"{root}/{m}"))
    ours = _ours(objects, listed)
    foreign = sorted(set(objects) - set(ours))
    if foreign:
        shown = ", ".join(repr(n) for n in foreign[:5]) + (" …" if len(foreign) > 5 else "")
        raise PipelineError(f"{url}: overwrite would replace a genotok run, but the prefix also "
                            f"holds {len(foreign)} object(s) no run wrote ({shown}); it deletes "
                            "nothing it did not write: choose another prefix, or move them")
    for o in sorted(ours, key=lambda o: o.rsplit("/", 1)[-1] != MANIFEST):
        fs.rm(f"{root}/{o}")


def _shards_of(fs, murl: str) -> list[dict]:
    """The entries of a corpus manifest (``shards``), or none."""
    try:
        entries = json.loads(fs.cat_file(murl)).get("shards") or []
    except (OSError, ValueError, AttributeError, RecursionError):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)]


def _record(stage: Path) -> Path:
    return stage.with_name(stage.name + ".uploaded.json")


def _put(fs, local: Path, url: str) -> None:
    """One file to the store (a test replaces this to cut the connection)."""
    fs.put_file(os.fspath(local), url)


def _send(stage: Path, url: str, storage_options: dict | None, files: list[Path]) -> None:
    """``files`` of ``stage`` to ``url``, skipping those sent before (same size and
    modification time; a manifest is always sent), each recorded once sent."""
    fs, root = url_fs(url, storage_options)
    rec = _record(stage)
    sent = json.loads(rec.read_text()) if rec.is_file() else {}
    for p in files:
        rel = p.relative_to(stage).as_posix()
        st = p.stat()
        stamp = [st.st_size, st.st_mtime_ns]
        if p.name != MANIFEST and sent.get(rel) == stamp:
            continue
        _put(fs, p, f"{root}/{rel}")
        sent[rel] = stamp
        with atomic_write(rec, "w") as fh:
            json.dump(sent, fh)


@dataclass(frozen=True)
class Upload:
    """An object store a run's output goes to: each batch's files are sent once the batch is
    journaled (:meth:`genotok.pipeline.batch.Batches.record`: its files are final then).

    Examples
    --------
    >>> import fsspec, tempfile
    >>> stage = Path(tempfile.mkdtemp())
    >>> _ = (stage / "shard-00000.gtokc").write_bytes(b"x")
    >>> Upload("memory://progressive").journaled(stage, {"done": {"0": {"files": ["shard-00000.gtokc"]}}})
    >>> fsspec.filesystem("memory").exists("/progressive/shard-00000.gtokc")
    True
    """

    url: str
    storage_options: dict | None = None

    def journaled(self, stage: Path, journal: dict) -> None:
        """The files of the batches ``journal`` records as done (those sent before skipped)."""
        files = sorted({f for d in journal["done"].values() for f in d.get("files", [])})
        _send(stage, self.url, self.storage_options, [stage / f for f in files])


def upload(stage: Path, url: str, storage_options: dict | None) -> None:
    """Every file of ``stage`` to ``url`` (the lock and temporary files excepted), each
    manifest last; files sent before (same size and modification time) are skipped. Then the
    staging directory is removed.

    Examples
    --------
    >>> import fsspec, tempfile
    >>> stage = Path(tempfile.mkdtemp())
    >>> _ = (stage / "shard-00000.gtokc").write_bytes(b"x"), (stage / MANIFEST).write_text("{}")
    >>> upload(stage, "memory://upload-example", None)
    >>> sorted(p.rsplit("/", 1)[1] for p in fsspec.filesystem("memory").ls("/upload-example",
    ...                                                                   detail=False))
    ['manifest.json', 'shard-00000.gtokc']
    """
    files = sorted(p for p in stage.rglob("*") if p.is_file() and p.name != LOCK
                   and not p.name.startswith("."))
    last = sorted((p for p in files if p.name == MANIFEST), key=lambda p: -len(p.parts))
    _send(stage, url, storage_options, [p for p in files if p.name != MANIFEST] + last)
    shutil.rmtree(stage, ignore_errors=True)
    _record(stage).unlink(missing_ok=True)


def localize_inputs(inputs, storage_options: dict | None):
    """``inputs`` with every URL replaced by a local copy (a URL with ``*``/``?``/``[`` is a
    glob of the store: each match is copied).

    Examples
    --------
    >>> import fsspec
    >>> with fsspec.open("memory://in-example/a.bed", "w") as fh:
    ...     _ = fh.write("chr1 0 10")
    >>> [Path(p).read_text() for p in localize_inputs("memory://in-example/*.bed", None)]
    ['chr1 0 10']
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out = []
    for item in inputs:
        if not is_url(item):
            out.append(item)
            continue
        if any(c in item for c in "*?["):
            fs, pattern = url_fs(item, storage_options)
            scheme = item.split("://", 1)[0]
            matches = sorted(fs.glob(pattern))
            if not matches:
                raise PipelineError(f"{item}: no remote file matches")
            out.extend(fetch_url(f"{scheme}://{m}", storage_options) for m in matches)
        else:
            out.append(fetch_url(item, storage_options))
    return out
