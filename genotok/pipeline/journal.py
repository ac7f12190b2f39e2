"""The journal and the lock of a :func:`~genotok.pipeline.pretokenize` output directory.

- one run at a time per directory: an OS lock (filelock's ``flock`` on ``.genotok.lock``), held
  for the whole run and released by the kernel however the holder ends, so it is never stale; a
  second run is told ``locked by host:pid since …``;
- ``journal.json``: the plan and which batches are done, rewritten atomically after each shard;
- a kill at any instant leaves a directory that resumes: every file is written to a temporary
  name and renamed, and the next run first removes the temporary files of ours it finds
  (``.journal.json.XXXXXXXX.tmp`` …; never another name).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
from pathlib import Path

import filelock

from .._io import DEFAULT_HASHES, atomic_write, default_hash, file_digest
from ..errors import GtokFormatError, UniverseMismatchError
from ..formats.corpus import MANIFEST
from ..formats.corpus.manifest import rel_problem
from .plan import PipelineError
from .split import VALIDATION

JOURNAL = "journal.json"
LOCK = ".genotok.lock"
#: the temporary files of our writers (``_io.make_temp``: ``.NAME.`` + 8 random characters +
#: ``.tmp``) for the names a run writes; a killed run leaves them, the next run removes them
_TEMP = re.compile(r"\.(?:journal\.json|manifest\.json"
                   r"|\.?shard-\d{5,}\.gtokc(?:\.[a-z0-9_]{8}\.tmp)?"  # a staged shard (batch.py)
                   r"|shard-(?:\d{5,}|empty)(?:\.gtokc|-\d{3,}\.[a-z0-9][a-z0-9.]*)"
                   r"|[A-Za-z0-9_%-][A-Za-z0-9_%.@-]*\.gtok)"
                   # the sink's temporary name, or a corpus writer's (``.writing-HOST-PID-….tmp``)
                   r"\.(?:[a-z0-9_]{8}|writing-[A-Za-z0-9_.-]+)\.tmp")


@contextlib.contextmanager
def lock(directory: Path):
    """Hold the output directory's lock for the body: filelock's exclusive ``flock`` on
    ``.genotok.lock``, released by the kernel when the holder exits, however it exits (kill -9
    too), so no lock is ever stale. The file records who holds it (host, pid, since when) for
    the message a second writer gets; it is removed (still locked) on release. On NFS, Linux maps
    ``flock`` to the server's byte-range locks, which other hosts see; a file system without
    locks is refused with a clear error (never filelock's fallback to a lock by existence, which
    a killed run would leave stale).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> with lock(d):
    ...     try:
    ...         with lock(d):
    ...             pass
    ...     except PipelineError as exc:
    ...         print("refused:", "locked by" in str(exc))
    refused: True
    """
    path = directory / LOCK
    held = filelock.FileLock(path, blocking=False, thread_local=False, fallback_to_soft=False,
                             on_acquired=_record_holder)
    try:
        held.acquire()
    except filelock.Timeout:
        raise PipelineError(f"{directory}: {_holder(path)} (another genotok run is writing "
                            "here); wait for it to finish or choose another --out") from None
    except (PermissionError, FileNotFoundError, NotADirectoryError):
        raise  # the directory, not the locking: as any other write there would fail
    except OSError as exc:
        raise PipelineError(f"{directory}: the file system cannot lock files "
                            f"({exc.strerror or exc}), so two runs writing here could not be "
                            "kept apart; write to a local directory (and move it), or mount "
                            "with locking enabled") from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # while still locked: whoever waited on this file takes a new one
        held.release()


def _record_holder(fd: int) -> None:
    """Write who holds the lock into the lock file (filelock calls it once the lock is held)."""
    info = {"host": socket.gethostname(), "pid": os.getpid(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "time": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)


def _holder(path: Path) -> str:
    """``locked by host:pid since …`` from the lock file's record (written just after the
    holder took the lock: it may be missing for an instant)."""
    try:
        with open(path, "rb") as fh:
            info = json.loads(fh.read(4096).decode())
        return f"locked by {info['host']}:{info['pid']} since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "locked by another process"


def clean_temp_files(out: Path) -> list[str]:
    """Remove the temporary files a killed run left in ``out``: only names that our own
    writers make (``.journal.json.XXXXXXXX.tmp``, ``.shard-00003.gtokc.XXXXXXXX.tmp`` and the
    sink's temporary file of it, ``..shard-00003.gtokc.XXXXXXXX.tmp.XXXXXXXX.tmp`` or
    ``..shard-00003.gtokc.XXXXXXXX.tmp.writing-HOST-PID-XXXXXXXX.tmp``,
    ``.NAME.gtok.XXXXXXXX.tmp``, ``.manifest.json.XXXXXXXX.tmp``), never anything else.
    Called with the directory's lock held, so no live run owns them.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / ".journal.json.abcd1234.tmp").write_text("{"), (d / "notes.tmp").write_text("")
    >>> clean_temp_files(d), sorted(p.name for p in d.iterdir())
    (['.journal.json.abcd1234.tmp'], ['notes.tmp'])
    """
    removed = []
    held = out / VALIDATION  # the held-out split's part of the run (pipeline.split)
    for p in [*out.iterdir(), *(held.iterdir() if held.is_dir() and not held.is_symlink()
                                else ())]:
        if _TEMP.fullmatch(p.name) and p.is_file() and not p.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
            removed.append(p.name)
    return removed


def clean_unjournaled_shards(out: Path, journal: dict) -> list[str]:
    """Remove the shards in ``out`` that no entry of ``journal`` records (written by a killed
    run before its batch was journaled). Called with the directory's lock held, before any
    batch runs: a shard that is in place afterwards was written by this run, from the same
    inputs, and a repeated write of it keeps it (:func:`genotok._io.place_once`).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = [(d / f"shard-0000{b}.gtokc").write_bytes(b"") for b in (0, 1)]
    >>> clean_unjournaled_shards(d, {"done": {"0": {"files": ["shard-00000.gtokc"]}}})
    ['shard-00001.gtokc']
    """
    kept = {f for d in journal["done"].values() for f in d.get("files") or ()}
    removed = []
    for p in out.iterdir():
        if _SHARD.fullmatch(p.name) and p.name not in kept and p.is_file() and not p.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
            removed.append(p.name)
    return removed


def journal_hash(out: Path) -> str | None:
    """The input hash of the run journaled in ``out`` (None when there is none to resume), so
    a run started where xxhash is installed resumes with the same hash, or says what is missing,
    instead of refusing the directory as another run.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> print(journal_hash(d))
    None
    >>> save_journal(d, {"plan": {"hash": "sha256"}, "done": {}})
    >>> journal_hash(d)
    'sha256'
    """
    try:
        algo = json.loads((out / JOURNAL).read_text()).get("plan", {}).get("hash")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return algo if algo in DEFAULT_HASHES else None


def load_journal(out: Path, plan: dict, overwrite: bool, n_batches: int | None = None) -> dict:
    """The journal of the run in ``out`` with this ``plan`` (a run resumes), or a new one
    (saved): a run of another plan or universe there is refused; ``overwrite`` first removes
    the earlier run (only the files a run wrote). A resume trusts the journal, so it is
    checked first (:func:`_check_journal`; ``n_batches``: the run's batches).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> load_journal(d, {"fingerprint": "f"}, False)
    {'plan': {'fingerprint': 'f'}, 'done': {}}
    >>> load_journal(d, {"fingerprint": "f", "hash": "sha256"}, False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.pipeline.plan.PipelineError: ...: holds a run with other inputs or settings; ...
    """
    jpath = out / JOURNAL
    if jpath.exists() and not overwrite:
        try:
            journal = json.loads(jpath.read_text())
        except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deeply
            raise PipelineError(f"{jpath}: corrupt journal; remove {out} or use --overwrite") from None
        _check_journal(journal, jpath, None)  # its shape; its batches once its plan is this
        if journal.get("plan", {}).get("fingerprint") != plan["fingerprint"]:
            raise UniverseMismatchError(f"{out}: was written with another universe; use another "
                                        "--out or --overwrite")
        if journal.get("plan") != plan:
            raise PipelineError(f"{out}: holds a run with other inputs or settings; use another "
                                "--out, or --overwrite to start again")
        _check_journal(journal, jpath, n_batches)
        return journal
    if overwrite:
        _remove_run(out)
    elif any(p.name != LOCK for p in out.iterdir()):  # (temp files of killed runs are gone)
        raise PipelineError(f"{out}: is not empty and holds no genotok run; choose an empty or "
                            "new directory")
    journal = {"plan": plan, "done": {}}
    save_journal(out, journal)
    return journal


def stamps(out: Path, files: list[str]) -> dict:
    """``{file: [bytes, "ALGORITHM:digest"]}`` of a batch's files as it commits them (the
    journal keeps them: a resumed run re-checks what it trusts, :func:`check_stamps`). The
    digest is ``xxh3_128`` when xxhash is installed, else ``sha256`` (``_io.default_hash``):
    it finds a part damaged, replaced or edited since, as the store's checksums do; it is no
    signature.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "p.jsonl").write_text('{"input_ids": [1]}\\n')
    >>> stamps(d, ["p.jsonl"])["p.jsonl"][0]
    19
    """
    gone = [f for f in files if not (out / f).is_file()]
    if gone:
        raise PipelineError(f"{out}: a batch was recorded with files that are not there "
                            f"({gone[:3]}); an executor records a batch once its files are "
                            "written")
    algo = default_hash()
    return {f: [(out / f).stat().st_size, f"{algo}:{file_digest(out / f, algo)}"]
            for f in files}


def check_stamps(out: Path, journal: dict) -> None:
    """Every file of a done batch is as it was committed: there, of its size and digest
    (any store's, a split output's halves too), else a :class:`~genotok.GtokFormatError`
    naming it and no manifest.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "p.jsonl").write_text('{"input_ids": [1]}\\n')
    >>> j = {"done": {"0": {"files": ["p.jsonl"], "stamps": stamps(d, ["p.jsonl"])}}}
    >>> check_stamps(d, j)
    >>> _ = (d / "p.jsonl").write_text('{"input_ids": [2]}\\n')  # same size, other bytes
    >>> check_stamps(d, j)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.GtokFormatError: .../p.jsonl: not the file batch 0 committed (...
    """
    for b, entry in sorted(journal["done"].items(), key=lambda kv: int(kv[0])):
        for f, (size, digest) in (entry.get("stamps") or {}).items():
            p = out / f
            if p.is_symlink() or not p.is_file():
                raise GtokFormatError(f"{p}: a file batch {b} committed is missing (deleted "
                                      "after its batch was journaled); re-run with "
                                      "overwrite=True to write the output again")
            now = p.stat().st_size
            algo, _, hexdigest = digest.partition(":")
            if now != size or file_digest(p, algo) != hexdigest:
                raise GtokFormatError(f"{p}: not the file batch {b} committed ({now} bytes, "
                                      f"committed {size}; truncated, replaced or edited since); "
                                      "re-run with overwrite=True to write the output again")


def _check_journal(journal, jpath: Path, n_batches: int | None) -> None:
    """A journal read back, checked before a resume trusts it: an object with a ``plan`` and
    a ``done`` object whose keys are batch numbers (below ``n_batches``) and whose entries
    list the files a batch wrote (names inside the output: no absolute path, no ``..``) with
    their counts, sources and failed inputs. A :class:`PipelineError` naming it otherwise."""
    def corrupt(why: str) -> PipelineError:
        return PipelineError(f"{jpath}: corrupt journal ({why}); remove {jpath.parent} or use "
                             "--overwrite")

    if not isinstance(journal, dict) or not isinstance(journal.get("plan"), dict) or \
            not isinstance(journal.get("done"), dict):
        raise corrupt("not an object with a 'plan' and a 'done' object")
    for b, e in journal["done"].items():
        if not (b.isdecimal() and b.isascii()) or (n_batches is not None and int(b) >= n_batches):
            raise corrupt(f"batch {str(b)[:20]!r} is not one of the run's batches")
        if not isinstance(e, dict) or not isinstance(e.get("files"), list) or \
                not all(isinstance(e.get(k, []), list) for k in ("sources", "failed")):
            raise corrupt(f"batch {b}: not an entry with a list of files, sources and failures")
        for f in e["files"]:
            why = rel_problem(f)
            if why:
                raise corrupt(f"batch {b}: file {str(f)[:80]!r} {why}")
        if not all(_is_count(e.get(k, 0)) for k in ("records", "tokens", "unk_tokens",
                                                    "unk_records")):
            raise corrupt(f"batch {b}: its counts are not whole numbers >= 0")
        st = e.get("stamps", {})
        if not isinstance(st, dict) or not all(
                isinstance(f, str) and not rel_problem(f) and isinstance(v, list) and len(v) == 2
                and _is_count(v[0]) and isinstance(v[1], str)
                and v[1].partition(":")[0] in DEFAULT_HASHES for f, v in st.items()):
            raise corrupt(f"batch {b}: its stamps are not {{file: [bytes, 'ALGORITHM:digest']}} "
                          f"(ALGORITHM one of {', '.join(DEFAULT_HASHES)})")


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63


#: the parts a run writes: corpus shards, the numbered files of any other store (Parquet,
#: Arrow, JSON Lines, a plugin's: ``shard-00000-000.SUFFIX``, see genotok.formats.store)
_SHARD = re.compile(r"shard-(?:\d{5,}|empty)(?:\.gtokc|-\d{3,}\.[a-z0-9][a-z0-9.]*)")


def _journaled_files(out: Path) -> set[str]:
    """The files the journal of ``out`` says its run wrote (any store's), relative to ``out``."""
    try:
        done = json.loads((out / JOURNAL).read_text()).get("done", {})
        return {f for d in done.values() for f in d.get("files", [])}
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):
        return set()


def _remove_run(out: Path, had_run: bool | None = None, written: set | None = None) -> None:
    """``overwrite=True``: remove everything an earlier run wrote in ``out`` (its shards, its
    ``.gtok`` files, journal and manifest, its ``validation/`` split), so that no file of it
    is mixed into the new run; refuse a directory that holds anything else (a file no run
    wrote is never removed). ``.gtok`` files count as the run's only when its journal is
    there to prove a run, and so do the files its journal lists (a store's own names)."""
    had_run = (out / JOURNAL).is_file() if had_run is None else had_run
    written = _journaled_files(out) if written is None else written
    owned, foreign = [], []
    for p in sorted(out.iterdir()):
        name = p.name
        if name == LOCK or _TEMP.fullmatch(name):
            continue
        if name == VALIDATION and had_run and p.is_dir() and not p.is_symlink():
            prefix = f"{VALIDATION}/"
            _remove_run(p, had_run, {f[len(prefix):] for f in written if f.startswith(prefix)})
            p.rmdir()
            continue
        ours = name in (JOURNAL, MANIFEST) or name in written or _SHARD.fullmatch(name) or (
            had_run and name.endswith(".gtok"))
        if ours and p.is_file() and not p.is_symlink():
            owned.append(p)
        else:
            foreign.append(name)
    if foreign:
        shown = ", ".join(repr(n) for n in foreign[:5]) + (" …" if len(foreign) > 5 else "")
        raise PipelineError(f"{out}: overwrite would replace a genotok run, but the directory also "
                            f"holds {len(foreign)} file(s) no run wrote ({shown}); it removes "
                            "nothing it did not write: choose another directory, or move them")
    for p in owned:
        p.unlink(missing_ok=True)


def save_journal(out: Path, journal: dict) -> None:
    """Write ``journal`` to ``out/journal.json`` atomically (a kill leaves the old one whole).

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> save_journal(out, {"done": {"0": {"files": ["shard-00000.gtokc"]}}})
    >>> json.loads((out / JOURNAL).read_text())["done"]
    {'0': {'files': ['shard-00000.gtokc']}}
    """
    with atomic_write(out / JOURNAL, "w") as fh:
        fh.write(json.dumps(journal))  # one shot: C encoder (json.dump streams it in Python)
