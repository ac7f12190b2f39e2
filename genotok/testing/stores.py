"""``check_store``: the contract every store keeps, built in or plugged in.

Each rule is a function taking the store (an instance, configured) and a scratch directory;
:func:`check_store` runs them all and raises :class:`AssertionError` naming the store and the
rule it broke. The rules:

* **read back**: records written through ``open``/``write``/``commit`` and joined by ``finish``
  read back through :meth:`genotok.Corpus.open` equal (ids; names, values, metadata columns,
  the header's ``extra`` and the inputs as ``supports`` says; the tokenizer's fingerprint,
  vocabulary, special tokens and settings always); metadata columns named like a store's own
  (``name``, ``input_ids``, ``values``) read back under their names, the names unharmed;
* **resume**: a run killed in the middle of a part (its ``abort`` never ran) and run again
  gives the records of an uninterrupted run, none lost, none doubled;
* **damage**: a committed part truncated or deleted before the resume is refused with a
  :class:`~genotok.GenotokError`, and no manifest is written;
* **overwrite**: ``overwrite=False`` refuses an existing part and an existing run; after
  ``overwrite=True`` no file of the old part or run is left (the directory, or with
  ``remote=``, the object store prefix, holds the new output's files only);
* **abort**: ``abort()`` leaves nothing of the part;
* **atomic**: a file takes a name a reader takes (no leading dot) only once it is whole: while a
  part is written, every such file is one its ``commit`` names, with the bytes it has then (a
  killed writer leaves no half file that a glob read, ``pyarrow.dataset`` or ``datasets``, would
  take for output).

Examples
--------
>>> [rule.__name__[6:] for rule in RULES]
['read_back', 'abort', 'atomic', 'overwrite', 'resume', 'damage']
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import inspect
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .._examples import examples_dir
from ..errors import GenotokError
from ..formats.corpus import MANIFEST, Corpus
from ..formats.stores import Store, stores
from ..pipeline import RunOptions, pretokenize
from ..ragged import Ragged
from ..tokenizer import Tokenizer

#: files a run keeps beside its output's (its journal and lock, the manifest)
_RUN_FILES = {MANIFEST, "journal.json", ".genotok.lock"}


class _Kill(BaseException):
    """A kill in the middle of a part (the store's ``abort`` does not run)."""


def _tokenizer() -> Tokenizer:
    return Tokenizer.from_bed(examples_dir() / "universe.bed")


def _inputs() -> list[Path]:
    return sorted((examples_dir() / "peaks").iterdir())


def _fail(store: Store, rule: str, why: str):
    raise AssertionError(f"check_store({type(store).__name__}, name={store.name!r}): {rule}: {why}")


def _small(store: Store) -> Store:
    """The store with parts split into files of one record, where it splits (more files: more
    to lose, double or leave behind)."""
    if dataclasses.is_dataclass(store) and "rows_per_shard" in {
            f.name for f in dataclasses.fields(store)}:
        return dataclasses.replace(store, rows_per_shard=1)
    return store


def _rows(tok: Tokenizer, n: int, seed: int) -> Ragged:
    rng = np.random.default_rng(seed)
    rows = Ragged.from_list([rng.integers(0, tok.vocab_size, int(rng.integers(0, 12))).tolist()
                             for _ in range(n)])
    rows.values = rng.random(rows.data.size).astype(np.float32)
    return rows


def _listed(out: Path, manifest: dict) -> set[str]:
    """The files an output's manifest names (a corpus' shards, another store's files)."""
    files = manifest.get("files") or [e.get("path") for e in manifest.get("shards", [])]
    return {f for f in files if isinstance(f, str)}


def _on_disk(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*")
            if p.is_file() and p.name not in _RUN_FILES}


#: the metadata columns the read-back rule writes: one of its own name, and some named like a
#: store's own columns (a flat record's ``name``, ``input_ids``, ``values``) or like its escape
#: (``meta.``), which must read back under their own names, the records' names unharmed
META_COLUMNS = ("x", "name", "input_ids", "values", "meta.x")
#: what the read-back rule gives ``open(extra=)``: a run's cell spec and medians, read back
#: as the output's ``header["extra"]`` by a store that ``supports`` ``"extra"``
EXTRA = {"cells": {"order": "value", "values_encoding": {"medians": [0.5, 2.0, None]}}}


def check_read_back(store: Store, tmp: Path) -> None:
    """Write two batches (names, values, metadata columns, a header's extra, an input), read
    them back.

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_read_back(JsonlStore(), Path(tempfile.mkdtemp()))
    """
    tok = _tokenizer()
    values = "values" in store.supports
    rows = [_rows(tok, 3, 0), _rows(tok, 4, 1)]
    names = [f"r{i}" for i in range(7)]
    meta = {c: [k * 100 + i for i in range(7)] for k, c in enumerate(META_COLUMNS)}
    w = _small(store).open(tmp, "part", tok, values=values, columns=META_COLUMNS, extra=EXTRA,
                           sources=[("a.bed", {"size": 3})], overwrite=False)
    try:
        w.write(rows[0], {"names": names[:3], **{c: v[:3] for c, v in meta.items()}})
        w.write(rows[1], {"names": names[3:], **{c: v[3:] for c, v in meta.items()}})
    except BaseException:
        w.abort()
        raise
    files = w.commit()
    want = rows[0].to_list() + rows[1].to_list()
    if not store.writes_files:  # a store in memory: what it holds once committed
        held = getattr(w, "ragged", None)
        if held is None or held.to_list() != want or ("names" in store.supports
                                                      and list(w.names) != names):
            _fail(store, "read back", "the records (or names) it holds differ from those written")
        return
    try:
        store.finish(tmp, files, tok, {})
        c = Corpus.open(tmp)
    except GenotokError as exc:
        _fail(store, "read back", f"its output (metadata columns {META_COLUMNS}) is not joined "
                                  f"or does not open: {exc}")
    got = c.to_ragged().to_list()
    if got != want:
        _fail(store, "read back", f"{len(got)} records read, {len(want)} written, or their ids "
                                  "differ")
    if "names" in store.supports and c.names != names:
        _fail(store, "read back", f"names {c.names[:3]}… instead of {names[:3]}… (with "
                                  f"metadata columns {META_COLUMNS})")
    if values:
        v = c.to_ragged(values=True).values
        if v is None or not np.allclose(v, np.concatenate([r.values for r in rows])):
            _fail(store, "read back", "the value channel differs")
    if "metadata" in store.supports and c.meta != meta:
        _fail(store, "read back", f"metadata columns {META_COLUMNS} read back as {c.meta}: a "
                                  "column named like a store's own must keep its name and values")
    if "extra" in store.supports and c.header.get("extra") != EXTRA:
        _fail(store, "read back", f"the header's extra (a run's cell spec and medians) reads back "
                                  f"as {c.header.get('extra')}, not {EXTRA}")
    if "sources" in store.supports and [s.get("name") for s in c.sources] != ["a.bed"]:
        _fail(store, "read back", f"the inputs read back are {c.sources}")
    want_header = (tok.fingerprint, tok.vocab_size, tok.universe.special_token_ids,
                   tok.settings.as_dict())
    if (c.fingerprint, c.vocab_size, c.special_token_ids, c.settings) != want_header:
        _fail(store, "read back", "the fingerprint, vocabulary size, special tokens or settings "
                                  "differ from the tokenizer's")


def _crashing(store: Store, after: int) -> Store:
    """``store`` killed at its ``after``-th write of the run (its abort never runs)."""
    calls = {"n": 0}

    class Killed(type(store)):
        def write(self, batch, meta):
            calls["n"] += 1
            if calls["n"] != after:
                return super().write(batch, meta)
            half = len(batch) // 2  # half the batch written, then the process dies
            super().write(batch[:half], {k: None if v is None else v[:half]
                                         for k, v in meta.items()})
            raise _Kill

        def abort(self):  # killed: nothing cleans up
            pass

    Killed.__name__ = type(store).__name__
    return _as(Killed, store)


def _as(cls, store: Store) -> Store:
    s = cls.__new__(cls)
    s.__dict__.update(store.__dict__)
    return s


def _killed_run(store: Store, out: Path, inputs, validation: float | None = None) -> None:
    """A run of ``store`` killed in the middle of its second part: what a kill leaves (the
    files it had open are closed as the process would be, nothing else)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            # (split: a batch writes each half, so the 3rd write is past the first batch)
            _run(_crashing(store, 3 if validation else 2), out, inputs, validation=validation)
        except _Kill:
            pass
        else:
            _fail(store, "resume", "the planted kill did not happen")
        gc.collect()


def _reference(tmp: Path, inputs) -> Corpus:
    return Corpus.open(pretokenize(inputs, _tokenizer(), tmp / "reference", progress=False).out)


def _run(store: Store, out, inputs, *, overwrite=False, storage_options=None, validation=None):
    return pretokenize(inputs, _tokenizer(), out, format=store, progress=False,
                       overwrite=overwrite,
                       options=RunOptions(files_per_shard=2, storage_options=storage_options,
                                          validation=validation or 0.0))


def _same(store: Store, rule: str, got: Corpus, ref: Corpus) -> None:
    a, b = got.to_ragged().to_list(), ref.to_ragged().to_list()
    if a != b:
        _fail(store, rule, f"{len(a)} records read back where an uninterrupted run has {len(b)} "
                           "(lost, doubled or changed)")
    if "names" in store.supports and got.names != ref.names:
        _fail(store, rule, "record names differ from an uninterrupted run's")


def check_resume(store: Store, tmp: Path) -> None:
    """A run killed in the middle of a part, then resumed: every record once.

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_resume(JsonlStore(), Path(tempfile.mkdtemp()))
    """
    store = _small(store)
    inputs = _inputs()
    out = tmp / "out"
    _killed_run(store, out, inputs)
    _run(store, out, inputs)
    _same(store, "resume", Corpus.open(out), _reference(tmp, inputs))


def check_damage(store: Store, tmp: Path) -> None:
    """A committed part truncated, deleted, or replaced by another readable file of the run
    (damage only the sizes and digests recorded at commit can tell) before the resume:
    refused; in a split output (``validation=``) too. And the store's own ``finish`` refuses
    a part truncated or deleted since its commit (it reads every file back: the pipeline's
    journal is not its only guard).

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_damage(JsonlStore(), Path(tempfile.mkdtemp()))
    """
    store = _small(store)
    inputs = _inputs()
    for how, validation in (("truncated", None), ("deleted", None), ("replaced", None),
                            ("replaced", 0.4)):
        out = tmp / f"{how}-{validation}"
        _killed_run(store, out, inputs, validation)
        journal = json.loads((out / "journal.json").read_text())
        files = journal["done"]["0"]["files"]
        victim = out / max(files, key=lambda f: (out / f).stat().st_size)
        if how == "deleted":
            victim.unlink()
        elif how == "truncated":
            os.truncate(victim, victim.stat().st_size // 2)
        else:  # another file of the run, readable, in its place
            others = [out / f for d in journal["done"].values() for f in d["files"]
                      if (out / f).read_bytes() != victim.read_bytes()]
            if not others:
                continue
            victim.write_bytes(min(others, key=lambda p: p.stat().st_size).read_bytes())
        if validation:
            how += " (a split output)"
        try:
            _run(store, out, inputs, validation=validation)
        except GenotokError:
            if (out / MANIFEST).exists():
                _fail(store, "damage", f"a {how} part was refused, but a manifest was written")
            continue
        _fail(store, "damage", f"a run resumed over a committed part {how} since "
                               f"({victim.name}) was accepted")
    _check_finish_refuses_damage(_small(store), tmp / "finish")


def _check_finish_refuses_damage(store: Store, tmp: Path) -> None:
    tok = _tokenizer()
    rows = _rows(tok, 4, 2)
    for how in ("truncated", "deleted"):
        out = tmp / how
        out.mkdir(parents=True)
        w = store.open(out, "part", tok)
        w.write(rows, {"names": [f"r{i}" for i in range(len(rows))]})
        files = w.commit()
        victim = out / max(files, key=lambda f: (out / f).stat().st_size)
        if how == "deleted":
            victim.unlink()
        else:
            os.truncate(victim, victim.stat().st_size // 2)
        run = {"n_records": len(rows), "n_tokens": int(rows.data.size)}
        try:
            store.finish(out, files, tok, {"genotok_run": run})
        except GenotokError:
            continue
        _fail(store, "damage", f"finish() joined a part {how} since its commit "
                               f"({victim.name})")


def check_overwrite(store: Store, tmp: Path, remote: tuple[str, dict] | None = None) -> None:
    """``overwrite=False`` refuses, ``overwrite=True`` leaves no stale file: a part, a run
    (local), and a run in an object store (``remote``: a URL prefix and storage options).

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_overwrite(JsonlStore(), Path(tempfile.mkdtemp()))
    """
    tok = _tokenizer()
    small = _small(store)
    if not store.per_record_files:  # (a file per record: its part has no files of its own)
        _check_part_overwrite(small, tok, tmp / "part")
    inputs = _inputs()
    runs = [(tmp / "run", None)]
    if remote is not None:
        runs.append((f"{remote[0].rstrip('/')}/{store.name}-{os.getpid()}", remote[1]))
    for out, so in runs:
        _run(small, out, inputs, storage_options=so)
        try:
            _run(small, out, inputs[:2], storage_options=so)
        except GenotokError:
            pass
        else:
            _fail(store, "overwrite", f"overwrite=False replaced the run in {out}")
        _run(small, out, inputs[:2], overwrite=True, storage_options=so)
        c = Corpus.open(out, **({} if so is None else {"storage_options": so,
                                                          "cache_dir": str(tmp / "cache")}))
        if len(c) != 2:
            _fail(store, "overwrite", f"{len(c)} records after overwrite=True with 2 inputs")
        left = _leftovers(out, so)
        if left:
            _fail(store, "overwrite", f"overwrite=True left {sorted(left)[:5]} of the old run "
                                      f"in {out}")
    killed = tmp / "killed"  # what a killed run leaves is the run's, removed by overwrite=True
    _killed_run(small, killed, inputs)
    try:
        _run(small, killed, inputs[:2], overwrite=True)
    except GenotokError as exc:
        _fail(store, "overwrite", f"overwrite=True refused the output of a killed run: {exc}")
    left = _leftovers(killed, None)
    if left:
        _fail(store, "overwrite", f"overwrite=True left {sorted(left)[:5]} of a killed run")


def _check_part_overwrite(store: Store, tok: Tokenizer, part: Path) -> None:
    """One part written twice: refused without ``overwrite``, no old file left with it."""
    part.mkdir()
    w = store.open(part, "p", tok, overwrite=False)
    w.write(_rows(tok, 3, 2), {"names": ["a", "b", "c"]})
    w.commit()
    before = _on_disk(part)
    try:
        store.open(part, "p", tok, overwrite=False)
    except (GenotokError, FileExistsError):
        pass
    else:
        _fail(store, "overwrite", "overwrite=False accepted a part that exists")
    w = store.open(part, "p", tok, overwrite=True)
    w.write(_rows(tok, 1, 3), {"names": ["d"]})
    files = w.commit()
    if _on_disk(part) != set(files):
        _fail(store, "overwrite", f"overwrite=True left {sorted(before - set(files))} of the "
                                  "old part")


def _leftovers(out, so) -> set[str]:
    """Files in ``out`` (a directory or a URL) that its manifest does not name."""
    if so is None:
        out = Path(out)
        names = _on_disk(out)
        m = json.loads((out / MANIFEST).read_text())
        if (out / "validation").is_dir():
            names -= {n for n in names if n.startswith("validation/")}
        return names - _listed(out, m)
    from .._io import url_fs

    fs, root = url_fs(out, so)
    fs.invalidate_cache()
    names = {p[len(root) + 1:] for p in fs.find(root)}
    m = json.loads(fs.cat_file(f"{root}/{MANIFEST}"))
    return names - _listed(Path("."), m) - _RUN_FILES


def check_abort(store: Store, tmp: Path) -> None:
    """``abort()`` leaves nothing of the part.

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_abort(JsonlStore(), Path(tempfile.mkdtemp()))
    """
    tok = _tokenizer()
    w = _small(store).open(tmp, "p", tok, overwrite=False)
    for seed in range(3):
        w.write(_rows(tok, 3, seed), {"names": [f"{seed}-{i}" for i in range(3)]})
    w.abort()
    left = [p.name for p in tmp.rglob("*")]
    if left:
        _fail(store, "abort", f"abort() left {left[:5]}")


def check_atomic(store: Store, tmp: Path) -> None:
    """A file is under a name a reader takes (no leading dot: ``_io.make_temp`` gives the
    temporary ones) only once whole: every such file seen between the writes of a part is one
    its ``commit`` names, with the same bytes (never a file still being written, in place).

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_atomic(JsonlStore(), Path(tempfile.mkdtemp()))
    """
    tok = _tokenizer()
    for k, small in enumerate((_small(store), store)):  # a file per record (they close
        out = tmp / f"part-{k}"                          # mid-part), and the store as given
        out.mkdir()
        w = small.open(out, "p", tok, overwrite=False)
        seen: dict[str, bytes] = {}
        try:
            for seed in range(3):
                w.write(_rows(tok, 3, seed), {"names": [f"{seed}-{i}" for i in range(3)]})
                for p in out.rglob("*"):
                    name = p.relative_to(out).as_posix()
                    if not p.is_file() or any(s.startswith(".") for s in name.split("/")):
                        continue
                    data = p.read_bytes()
                    if seen.setdefault(name, data) != data:
                        _fail(store, "atomic", f"{name} changed after it took its final name "
                                               "(a file written in place)")
        except BaseException:
            w.abort()
            raise
        files = set(w.commit())
        for name, data in seen.items():
            if name not in files or (out / name).read_bytes() != data:
                _fail(store, "atomic", f"{name} was under its final name before it was whole "
                                       "(written in place, not renamed into place)")


#: every rule, in the order :func:`check_store` runs them
RULES = (check_read_back, check_abort, check_atomic, check_overwrite, check_resume, check_damage)


def check_store(store: type[Store] | Store, *, remote: tuple[str, dict] | None = None) -> None:
    """Run every rule of the store contract on ``store`` (a :class:`~genotok.formats.stores.Store`
    subclass, or a configured instance); :class:`AssertionError` names the first rule broken.

    ``remote``: ``(url_prefix, storage_options)`` of a writable object store (an S3 server such
    as moto's on 127.0.0.1): the overwrite rules are checked there too.

    Examples
    --------
    >>> from genotok.formats.jsonl import JsonlStore
    >>> check_store(JsonlStore(gzip=True))
    """
    if isinstance(store, type) and issubclass(store, Store) and inspect.isabstract(store):
        raise AssertionError(f"check_store({store.__name__}, name={store.name!r}): implements "
                             "every abstract method of its base: "
                             f"{', '.join(sorted(store.__abstractmethods__))} missing")
    s = store() if isinstance(store, type) else store
    if not isinstance(s, Store):
        raise TypeError(f"check_store takes a Store subclass or instance, got {store!r}")
    rules = RULES if s.writes_files else (check_read_back,)
    with _registered(type(s)):
        for rule in rules:
            tmp = Path(tempfile.mkdtemp(prefix=f"check-store-{s.name}-"))
            try:
                if rule is check_overwrite:
                    rule(s, tmp, remote)
                else:
                    rule(s, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _registered(cls: type[Store]):
    """``cls`` is the registry's store of its name for the block (its output is read back by
    its own reader, registered or not), the registry as it was after."""
    registry = stores()
    before = registry.get(cls.name)
    registry[cls.name] = cls
    try:
        yield
    finally:
        if before is None:
            del registry[cls.name]
        else:
            registry[cls.name] = before


__all__ = ["RULES", "check_abort", "check_atomic", "check_damage", "check_overwrite",
           "check_read_back", "check_resume", "check_store"]
