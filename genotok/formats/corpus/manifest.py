"""Sharded corpora: ``manifest.json`` read (size cap, digest, every shard path kept inside its
directory) and written (:func:`write_manifest`), and the shards it names opened and checked
against it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..._io import CanonicalJSON, atomic_write, local_path
from ...errors import GtokFormatError, UniverseMismatchError
from ...params import InstanceOf, validated
from ..gtok import open_regular
from . import layout
from .layout import (
    CHECKSUMS,
    MANIFEST,
    _digest,
    _is_hex_digest,
    _is_int,
    _json_load,
)
from .shard import _check_shards, _Shard

#: the largest manifest read (a manifest is ~100 bytes per shard plus a run description)
MANIFEST_MAX_BYTES = 256 << 20
MANIFEST_FORMAT = "genotok-corpus-manifest"
#: manifest 1.1 adds per-shard index and header digest, totals and a digest of the manifest
MANIFEST_VERSION = (1, 1)
#: how a directory whose manifest names another store is opened: ``stores._open_store_output``,
#: registered by :mod:`genotok.formats.stores`, which the ``genotok.formats`` package imports
#: (so it is set however this package is reached; this package never imports it)
_store_opener = None


def _set_store_opener(opener) -> None:
    """Register the opener of other stores' outputs (``opener(directory, manifest, trusted)``
    gives their shards)."""
    global _store_opener
    _store_opener = opener


_MANIFEST_CORE = ("format", "version", "fingerprint", "checksum", "n_shards", "n_records",
                  "n_tokens", "shards", "digest")


def _manifest_digest(manifest: dict, algo: str) -> str:
    """Digest of the whole manifest but its ``digest`` key (its canonical JSON)."""
    return _body_digest(CanonicalJSON({k: v for k, v in manifest.items() if k != "digest"}), algo)


def _body_digest(body: CanonicalJSON, algo: str) -> str:
    return _digest(body.text.encode(), algo).hex()


def _read_manifest(mpath: Path) -> dict:
    """Read and parse ``manifest.json``: a regular file (no symlink), at most the size cap."""
    fd, st = open_regular(mpath, "manifest", nofollow=True)
    try:
        if st.st_size > MANIFEST_MAX_BYTES:
            raise GtokFormatError(f"{mpath}: {st.st_size:,} bytes is larger than a manifest may be "
                                  f"({MANIFEST_MAX_BYTES:,}; genotok.formats.corpus.manifest.MANIFEST_MAX_BYTES)")
        chunks, total = [], 0
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
            total += len(block)
            if total > MANIFEST_MAX_BYTES:  # grew while read
                raise GtokFormatError(f"{mpath}: larger than a manifest may be "
                                      f"({MANIFEST_MAX_BYTES:,} bytes)")
    finally:
        os.close(fd)
    return _json_load(b"".join(chunks), "manifest", mpath)


def rel_problem(rel, remote: bool = False) -> str | None:
    """Why ``rel`` is not a path inside its manifest's directory (local or remote), or None.

    In a URL, ``%2e%2e`` is ``..`` once an HTTP client normalises it, and ``?``/``#`` cut the
    path: a remote manifest's paths may hold none of them (no decoding to get wrong).

    Examples
    --------
    >>> rel_problem("shard-00000.gtokc") is None, rel_problem("../x"), rel_problem("/etc/x")
    (True, 'leaves the directory (..)', 'is absolute')
    """
    if not isinstance(rel, str) or not rel:
        return "is not a non-empty string"
    if remote and any(c in rel for c in "%?#"):
        return "holds %, ? or # (a URL would decode or cut it; a remote shard name may not)"
    if "\0" in rel or "\\" in rel:
        return "holds a NUL byte or a backslash"
    if rel.startswith("/") or os.path.isabs(rel):
        return "is absolute"
    parts = [x for x in rel.split("/") if x not in ("", ".")]
    if not parts or ".." in parts:
        return "leaves the directory (..)"
    return None


def _shard_path(directory: Path, rel, mpath: Path, k: int) -> Path:
    """The file of manifest entry ``k``: relative, inside ``directory``, no ``..``, no symlink."""
    def bad(why: str) -> GtokFormatError:
        return GtokFormatError(f"{mpath}: shard {k}: path {str(rel)[:200]!r} {why}; a manifest "
                               "names files inside its directory (re-run write_manifest)")

    why = rel_problem(rel)
    if why:
        raise bad(why)
    full = directory.joinpath(*[x for x in rel.split("/") if x not in ("", ".")])
    if full.is_symlink():
        raise bad("is a symbolic link")
    root = os.path.realpath(directory)
    real = os.path.realpath(full)
    if os.path.commonpath([root, real]) != root:
        raise bad("resolves outside the corpus directory")
    return full


def _check_manifest(m, mpath, *, remote: bool) -> tuple[list, list[str]]:
    """The checks of a parsed manifest that need no shard: its shape, version, digest and
    entries (for a local and a remote corpus alike); its entries, and what :meth:`Corpus.verify`
    must report. A remote corpus needs every digest (it cannot be trusted otherwise)."""
    def corrupt(why: str) -> GtokFormatError:
        return GtokFormatError(f"{mpath}: corrupt manifest ({why})")

    if not isinstance(m, dict):
        raise corrupt("not a JSON object")
    if m.get("format") != MANIFEST_FORMAT:
        raise corrupt(f"format {str(m.get('format'))[:40]!r}, expected {MANIFEST_FORMAT!r}")
    v = m.get("version")
    if not (isinstance(v, list) and len(v) == 2 and all(_is_int(x) for x in v)):
        raise corrupt(f"version {str(v)[:40]} is not [major, minor]")
    if v[0] > MANIFEST_VERSION[0]:
        raise GtokFormatError(f"{mpath}: manifest format {v[0]}.{v[1]} is newer than this genotok "
                              f"reads ({MANIFEST_VERSION[0]}.{MANIFEST_VERSION[1]}); upgrade genotok")
    if v[0] < 1:
        raise corrupt(f"version {v[0]}.{v[1]}")
    if not isinstance(m.get("fingerprint"), str):
        raise corrupt("fingerprint is missing or not a string")
    entries = m.get("shards")
    if not isinstance(entries, list) or not entries:
        raise corrupt("shards is not a non-empty list")
    if remote and (m.get("checksum") not in CHECKSUMS or not _is_hex_digest(m.get("digest"))):
        raise GtokFormatError(f"{mpath}: a remote corpus needs a manifest with a digest this install "
                              "can check (manifest 1.1, blake2b_64): re-run write_manifest")
    later = []  # what verify() reports: the manifest opens, but its integrity is not proven
    digest = m.get("digest")
    if digest is None:
        later.append(f"{mpath}: the manifest has no digest (manifest format 1.0, or the digest "
                     "was erased): its entries cannot be proven; re-run write_manifest")
    else:
        algo = m.get("checksum")
        if algo not in CHECKSUMS or not _is_hex_digest(digest):
            raise corrupt("digest or checksum algorithm is malformed")
        if _manifest_digest(m, algo) != digest:
            raise GtokFormatError(f"{mpath}: manifest digest mismatch: the manifest was edited after "
                                  "it was written (entries added, dropped, reordered or changed); "
                                  "re-run write_manifest")
    for key in ("n_records", "n_tokens", "n_shards"):
        if key in m and (not _is_int(m[key]) or m[key] < 0):
            raise corrupt(f"{key} is not a whole number")
    if not _is_int(m.get("n_records")):
        raise corrupt("n_records (the total) is missing")
    if "n_shards" in m and m["n_shards"] != len(entries):
        raise corrupt(f"n_shards is {m['n_shards']} but {len(entries)} shards are listed: an entry "
                      "was added or dropped")
    for k, e in enumerate(entries):
        if not isinstance(e, dict):
            raise corrupt(f"shard {k} is not a JSON object")
        for key in ("n_records", "n_tokens"):
            if not _is_int(e.get(key)) or e[key] < 0:
                raise corrupt(f"shard {k}: {key} is missing or not a whole number")
        if "index" in e and e["index"] != k:
            raise corrupt(f"shard {k} carries index {str(e['index'])[:20]}: entries were reordered")
        if ("header_digest" in e or remote) and not _is_hex_digest(e.get("header_digest")):
            raise corrupt(f"shard {k}: header_digest is not a 16-digit hex digest")
        why = rel_problem(e.get("path"), remote=True) if remote else None
        if why:
            raise corrupt(f"shard {k}: path {str(e.get('path'))[:200]!r} {why}")
    # one check for local and remote corpora: no shard twice, totals that add up
    seen: dict[str, int] = {}
    for k, e in enumerate(entries):
        rel = e.get("path")
        key = "/".join(x for x in rel.split("/") if x not in ("", ".")) if isinstance(rel, str) \
            else None
        if key in seen:
            raise corrupt(f"shards {seen[key]} and {k} are the same file {str(rel)[:200]!r}")
        if key is not None:
            seen[key] = k
    n = sum(e["n_records"] for e in entries)
    t = sum(e["n_tokens"] for e in entries)
    if m["n_records"] != n or m.get("n_tokens", t) != t:
        raise corrupt(f"totals {m['n_records']} records, {m.get('n_tokens')} tokens disagree with "
                      f"the entries' {n} and {t}: an entry was added or dropped")
    return entries, later


def _open_manifest(directory: Path, trusted: bool) -> tuple[list, dict, list[str]]:
    """Shards of a directory corpus, its manifest, and what :meth:`Corpus.verify` must report."""
    mpath = directory / MANIFEST
    if not os.path.lexists(mpath):
        if os.path.lexists(directory / "journal.json"):  # pipeline.journal.JOURNAL
            raise GtokFormatError(f"{directory}: a pretokenize run that has not finished (its "
                                  f"journal is here, its {MANIFEST} not yet): re-run the same "
                                  "pretokenize command to resume and finish it")
        raise GtokFormatError(f"{directory}: a directory corpus needs {MANIFEST} "
                              "(write one with write_manifest)")
    m = _read_manifest(mpath)
    if isinstance(m, dict) and m.get("format") != MANIFEST_FORMAT and _store_opener is not None:
        return _store_opener(directory, m, trusted), m, []  # a Parquet, Arrow… store's output
    entries, later = _check_manifest(m, mpath, remote=False)

    def corrupt(why: str) -> GtokFormatError:
        return GtokFormatError(f"{mpath}: corrupt manifest ({why})")

    paths, seen = [], {}
    for k, e in enumerate(entries):
        full = _shard_path(directory, e.get("path"), mpath, k)
        key = os.path.normcase(str(full))
        if key in seen:
            raise corrupt(f"shards {seen[key]} and {k} are the same file {e['path'][:200]!r}")
        seen[key] = k
        paths.append(full)
    shards, files = [], {}
    for k, (e, full) in enumerate(zip(entries, paths)):
        s = _Shard(full, trusted=trusted, nofollow=True)
        if s.ident in files:
            raise corrupt(f"shards {files[s.ident]} and {k} are the same file (a hard link)")
        files[s.ident] = k
        if e["n_records"] != s.n or e["n_tokens"] != s.t or \
                e.get("header_digest", s.head_sum.hex()) != s.head_sum.hex():
            raise GtokFormatError(
                f"{mpath}: shard {e['path'][:200]!r} has {s.n} records and {s.t} tokens (header "
                f"digest {s.head_sum.hex()}), the manifest says {e['n_records']} and {e['n_tokens']} "
                f"({e.get('header_digest', '-')}): the shard was replaced after the manifest was "
                "written; re-run write_manifest")
        shards.append(s)
    n, t = sum(s.n for s in shards), sum(s.t for s in shards)
    if m["n_records"] != n or m.get("n_tokens", t) != t:
        raise corrupt(f"totals {m['n_records']} records, {m.get('n_tokens')} tokens disagree with "
                      f"the shards' {n} and {t}: an entry was added or dropped")
    if m["fingerprint"] != shards[0].header["fingerprint"]:
        raise UniverseMismatchError(f"{mpath}: the manifest's universe differs from its "
                                    "shards'; re-run write_manifest")
    return shards, m, later


@validated({"shards": [InstanceOf(list, tuple, hint="a sequence of shard paths, not one path")],
            "out": [InstanceOf(str, os.PathLike)], "extra": [InstanceOf(dict), None]})
def write_manifest(shards: Sequence[str | os.PathLike], out: str | os.PathLike,
                   extra: dict | None = None) -> Path:
    """Join shard files into one corpus by writing ``out/manifest.json`` (no data copied).

    Every shard must lie inside the directory ``out`` (its path is stored relative to it); all
    shards must share one universe and layout (checked here). Each entry records the shard's record
    and token counts and its header digest (which covers its section checksums), and the
    manifest carries a digest of itself, so :meth:`Corpus.open` detects a replaced shard and
    an added, dropped, reordered or edited entry. Shards written by separate processes or
    machines are merged this way.

    ``shards`` is a sequence of paths; a lone path is refused (:class:`TypeError`).

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.formats.corpus import Corpus, CorpusWriter
    >>> d = tempfile.mkdtemp()
    >>> for k in range(2):
    ...     with CorpusWriter(os.path.join(d, f"s{k}.gtokc"), vocab_size=9, fingerprint="fp") as w:
    ...         w.append([k])
    >>> _ = write_manifest([os.path.join(d, "s0.gtokc"), os.path.join(d, "s1.gtokc")], d)
    >>> Corpus.open(d).to_ragged().to_list()
    [[0], [1]]
    """
    directory = local_path(out, "a manifest")
    directory.mkdir(parents=True, exist_ok=True)
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(_MANIFEST_CORE))
    if clash:
        raise ValueError(f"extra may not set the manifest's own keys {clash}")
    root = os.path.realpath(directory)
    rels = []
    for sh in shards:
        real = os.path.realpath(sh)
        if os.path.commonpath([root, real]) != root or real == root:
            raise GtokFormatError(f"{sh}: is not inside {directory}; a manifest only names files "
                                  "in its directory (write or move the shards there)")
        rels.append(Path(os.path.relpath(real, root)).as_posix())
    if len(set(rels)) != len(rels):
        raise GtokFormatError(f"{directory}: a shard is listed twice ({rels})")
    opened = [_Shard(Path(real)) for real in (os.path.join(root, r) for r in rels)]
    _check_shards(opened, directory)  # same universe, same layout
    entries = [{"index": k, "path": rel, "n_records": sh.n, "n_tokens": sh.t,
                "header_digest": sh.head_sum.hex()} for k, (rel, sh) in enumerate(zip(rels, opened))]
    manifest = {"format": MANIFEST_FORMAT, "version": list(MANIFEST_VERSION),
                "fingerprint": opened[0].header["fingerprint"], "checksum": layout.CHECKSUM,
                "n_shards": len(entries), "n_records": sum(e["n_records"] for e in entries),
                "n_tokens": sum(e["n_tokens"] for e in entries), "shards": entries, **extra}
    # encoded once: the digest's canonical text (as _manifest_digest reads it) and the file's lines;
    # a NaN is refused (another JSON reader could not parse it)
    body = CanonicalJSON(manifest, allow_nan=False)
    with atomic_write(directory / MANIFEST, "w") as fh:
        fh.write(body.lines({"digest": _body_digest(body, manifest["checksum"])}))
    return directory / MANIFEST


