"""Manifests that lie: write_manifest and the open of a sharded corpus refuse symlinks, hard
links, FIFOs, duplicated or replaced shards, and manifests of any shape (issue 19)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from genotok import (
    Corpus,
    CorpusWriter,
    GenotokError,
    GtokFormatError,
    UniverseMismatchError,
    write_manifest,
)
from genotok.formats.corpus import manifest as manifest_mod
from genotok.formats.corpus.layout import MANIFEST
from genotok.formats.corpus.manifest import _manifest_digest

from ._corpus_campaign import make_corpus, no_hang, resign


# ------------------------------------------------------------------ manifests that lie
def _two_shards(tmp_path) -> tuple[Path, dict]:
    d = tmp_path / "corpus"
    d.mkdir()
    make_corpus(d / "a.gtokc", 1, n=4)
    make_corpus(d / "b.gtokc", 2, n=5)
    write_manifest([d / "a.gtokc", d / "b.gtokc"], d)
    other = tmp_path / "other"
    other.mkdir()
    make_corpus(other / "x.gtokc", 3, n=4)
    return d, json.loads((d / MANIFEST).read_text())


def _entry(m, k, key, value):
    m["shards"][k][key] = value


def _symlink(d, m, target):
    os.symlink(target, d / "link.gtokc")
    m["shards"][0]["path"] = "link.gtokc"


def _dir_symlink(d, m):
    os.symlink(d.parent / "other", d / "sub")
    m["shards"][0]["path"] = "sub/x.gtokc"


def _hardlink(d, m):
    os.link(d / "a.gtokc", d / "a2.gtokc")
    m["shards"][1] = dict(m["shards"][0], path="a2.gtokc", index=1)
    m["n_records"], m["n_tokens"] = 8, 2 * m["shards"][0]["n_tokens"]


def _fifo(d, m):
    os.mkfifo(d / "pipe.gtokc")
    m["shards"][0]["path"] = "pipe.gtokc"


def _duplicate(d, m):
    m["shards"][1] = dict(m["shards"][0], index=1)
    m["n_records"], m["n_tokens"] = 8, 2 * m["shards"][0]["n_tokens"]


def _replace_shard(d, m):
    raw = (d / "b.gtokc").read_bytes()  # the same counts, another file (another header)
    (d / "b.gtokc").write_bytes(resign(raw, header=lambda h: h.__setitem__("created", "2000")))


# each case: (edit of the manifest dict (and directory), re-sign the manifest?, expected error)
MANIFEST_CASES = {
    "absolute path": (lambda d, m: _entry(m, 0, "path", str(d / "a.gtokc")), True, "is absolute"),
    "dot-dot outside": (lambda d, m: _entry(m, 0, "path", "../other/x.gtokc"), True, "leaves the"),
    "dot-dot inside": (lambda d, m: _entry(m, 0, "path", "z/../a.gtokc"), True, "leaves the"),
    "symlink outside": (lambda d, m: _symlink(d, m, d.parent / "other" / "x.gtokc"), True,
                        "symbolic link"),
    "symlink inside": (lambda d, m: _symlink(d, m, d / "b.gtokc"), True, "symbolic link"),
    "symlink /dev/zero": (lambda d, m: _symlink(d, m, "/dev/zero"), True, "symbolic link"),
    "dir symlink": (_dir_symlink, True, "resolves outside"),
    "fifo shard": (_fifo, True, "is a FIFO"),
    "directory shard": (lambda d, m: ((d / "sub").mkdir(), _entry(m, 0, "path", "sub")), True,
                        "is a directory"),
    "missing shard": (lambda d, m: _entry(m, 0, "path", "nope.gtokc"), True, "no such file"),
    "backslash": (lambda d, m: _entry(m, 0, "path", "..\\a.gtokc"), True, "backslash"),
    "nul byte": (lambda d, m: _entry(m, 0, "path", "a.gtokc\0x"), True, "NUL"),
    "empty path": (lambda d, m: _entry(m, 0, "path", ""), True, "non-empty string"),
    "int path": (lambda d, m: _entry(m, 0, "path", 3), True, "non-empty string"),
    "duplicated entry": (_duplicate, True, "are the same file"),
    "hard-linked duplicate": (_hardlink, True, "hard link"),
    "dropped entry": (lambda d, m: m["shards"].pop(), False, "digest mismatch"),
    "dropped entry, n_shards stale": (lambda d, m: m["shards"].pop(), True, "n_shards is 2"),
    "dropped entry, totals stale": (lambda d, m: (m["shards"].pop(), m.pop("n_shards")), True,
                                    "totals"),
    "reordered": (lambda d, m: m["shards"].reverse(), False, "digest mismatch"),
    "reordered, re-signed": (lambda d, m: m["shards"].reverse(), True, "reordered"),
    "entry count wrong": (lambda d, m: _entry(m, 0, "n_records", 3), True, "disagree with the entries"),
    "entry count missing": (lambda d, m: m["shards"][0].pop("n_records"), True, "n_records is missing"),
    "entry count string": (lambda d, m: _entry(m, 0, "n_tokens", "5"), True, "n_tokens is missing"),
    "entry count bool": (lambda d, m: _entry(m, 0, "n_records", True), True, "n_records is missing"),
    "header digest wrong": (lambda d, m: _entry(m, 1, "header_digest", "0" * 16), True,
                            "replaced after"),
    "header digest malformed": (lambda d, m: _entry(m, 1, "header_digest", "xyz"), True,
                                "header_digest is not"),
    "shard replaced": (_replace_shard, False, "replaced after"),
    "total wrong": (lambda d, m: m.__setitem__("n_records", 1), True, "totals"),
    "total missing": (lambda d, m: m.pop("n_records"), True, "n_records .the total. is missing"),
    "total nan": (lambda d, m: m.__setitem__("n_records", float("nan")), True, "not a whole number"),
    "format": (lambda d, m: m.__setitem__("format", "x"), True, "format 'x'"),
    "newer version": (lambda d, m: m.__setitem__("version", [2, 0]), True, "newer than this"),
    "version string": (lambda d, m: m.__setitem__("version", "1.1"), True, "not .major, minor."),
    "no shards": (lambda d, m: m.__setitem__("shards", []), True, "non-empty list"),
    "shards object": (lambda d, m: m.__setitem__("shards", {"a": 1}), True, "non-empty list"),
    "entry not object": (lambda d, m: m["shards"].__setitem__(0, "a.gtokc"), True, "not a JSON object"),
    "not an object": (lambda d, m: (m.clear(), m.update(shards=[])), True, "format 'None'"),
    "fingerprint": (lambda d, m: m.__setitem__("fingerprint", "zz"), True, "universe differs"),
    "extra edited": (lambda d, m: m.__setitem__("note", 2), False, "digest mismatch"),
    "digest malformed": (lambda d, m: m.__setitem__("digest", "xyz"), False, "digest or checksum"),
    "checksum unknown": (lambda d, m: m.__setitem__("checksum", "md5"), False, "digest or checksum"),
}


@pytest.mark.parametrize("name", list(MANIFEST_CASES))
def test_manifest_that_lies(tmp_path, name):
    edit, sign, pattern = MANIFEST_CASES[name]
    d, m = _two_shards(tmp_path)
    edit(d, m)
    if sign and "checksum" in m:
        m["digest"] = _manifest_digest(m, m["checksum"])
    (d / MANIFEST).write_text(json.dumps(m))
    with no_hang(), pytest.raises(GenotokError, match=pattern):
        Corpus.open(d)


def test_manifest_without_digest_opens_but_fails_verify(tmp_path):
    d, m = _two_shards(tmp_path)
    del m["digest"]
    (d / MANIFEST).write_text(json.dumps(m))
    c = Corpus.open(d)
    assert len(c) == 9
    assert any("manifest has no digest" in x for x in c.verify())
    m["shards"] = m["shards"][:1]  # without a digest, a consistent edit cannot be detected ...
    m.update(n_records=4, n_tokens=m["shards"][0]["n_tokens"], n_shards=1)
    (d / MANIFEST).write_text(json.dumps(m))
    assert any("no digest" in x for x in Corpus.open(d).verify())  # ... but verify says so


@pytest.mark.parametrize("run_info, failed", [
    (5, None), ({"inputs": 3, "failed": [1, {"path": "x"}]}, ["x"]), ({"failed": None}, None)])
def test_manifest_run_description_of_any_shape(tmp_path, run_info, failed):
    d = tmp_path / "d"
    d.mkdir()
    make_corpus(d / "a.gtokc")
    write_manifest([d / "a.gtokc"], d, extra={"genotok_run": run_info})
    info = Corpus.open(d).info()  # never a TypeError from a crafted run description
    assert info["n_records"] == 12 and info.get("failed_inputs") == failed


@pytest.mark.parametrize("kind", ["fifo", "dev-zero link", "directory", "too large", "deep"])
def test_manifest_file_itself(tmp_path, monkeypatch, kind):
    d, m = _two_shards(tmp_path)
    (d / MANIFEST).unlink()
    if kind == "fifo":
        os.mkfifo(d / MANIFEST)
        pattern = "is a FIFO"
    elif kind == "dev-zero link":
        os.symlink("/dev/zero", d / MANIFEST)
        pattern = "symbolic link"
    elif kind == "directory":
        (d / MANIFEST).mkdir()
        pattern = "is a directory"
    elif kind == "too large":
        monkeypatch.setattr(manifest_mod, "MANIFEST_MAX_BYTES", 100)
        (d / MANIFEST).write_text(json.dumps(m))
        pattern = "larger than a manifest may be"
    else:
        (d / MANIFEST).write_text("[" * 100_000)
        pattern = "not valid JSON"
    with no_hang(), pytest.raises(GtokFormatError, match=pattern):
        Corpus.open(d)


def test_write_manifest_refuses_what_open_would(tmp_path):
    d, _ = _two_shards(tmp_path)
    with pytest.raises(GtokFormatError, match="is not inside"):
        write_manifest([d / "a.gtokc", tmp_path / "other" / "x.gtokc"], d)
    with pytest.raises(GtokFormatError, match="listed twice"):
        write_manifest([d / "a.gtokc", d / "a.gtokc"], d)
    with pytest.raises(ValueError, match="own keys"):
        write_manifest([d / "a.gtokc"], d, extra={"n_records": 5})
    with pytest.raises(UniverseMismatchError):
        with CorpusWriter(d / "u.gtokc", vocab_size=300, fingerprint="other") as w:
            w.append([1])
        write_manifest([d / "a.gtokc", d / "u.gtokc"], d)
    m = json.loads((d / MANIFEST).read_text())  # the earlier manifest is untouched
    assert m["version"] == [1, 1] and [e["index"] for e in m["shards"]] == [0, 1]
    assert m["n_shards"] == 2 and m["n_records"] == 9 and len(m["digest"]) == 16
