"""Trust nothing that is read: crafted corpora, manifests and ``.gtok`` files (issue 19).

Every case must end in a :class:`~genotok.GenotokError` (or the correct result): no crash, no
hang, no read that returns another record's data, no damaged file that ``verify`` calls OK.
The campaigns live in ``tests/formats/_corpus_campaign.py``; a sample runs here in-process and in a
fresh interpreter with ``NUMBA_BOUNDSCHECK=1``; the full campaigns are marked ``slow``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from genotok import (
    Corpus,
    CorpusWriter,
    GenotokError,
    GtokFormatError,
    UniverseMismatchError,
    read_gtok,
    write_manifest,
)
from genotok.formats.corpus import manifest as manifest_mod
from genotok.formats.corpus.layout import MANIFEST
from genotok.formats.corpus.manifest import _manifest_digest

from ._corpus_campaign import Counts, _one, fields, make_corpus, resign, run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECRET = b"SECRET-TOKEN-0123456789"


@contextmanager
def no_hang(seconds: int = 20):
    """Fail (instead of hanging the suite) when the body blocks, e.g. on a FIFO."""
    def fire(signum, frame):
        raise TimeoutError(f"hung for {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _clean(counts: Counts) -> None:
    assert (counts["silent"], counts["wrong"], counts["crashes"]) == (0, 0, 0), counts["failures"]


# ------------------------------------------------------------------ the campaigns
def test_campaign_sample_in_process():
    counts = run(40, seed=0)
    _clean(counts)
    assert counts["cases"] >= 120 and counts["refused"] and counts["accepted"]


def _campaign_subprocess(cases: int, seed: int, boundscheck: bool) -> Counts:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if boundscheck:
        env.update(NUMBA_BOUNDSCHECK="1", GENOTOK_NO_CACHE="1")
    proc = subprocess.run([sys.executable, str(HERE / "_corpus_campaign.py"), str(cases), str(seed)],
                          capture_output=True, text=True, env=env, timeout=1800, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode} (negative: killed by a signal)\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_campaign_sample_with_boundscheck():
    counts = _campaign_subprocess(40, seed=3, boundscheck=True)
    _clean(counts)


@pytest.mark.slow
@pytest.mark.parametrize("boundscheck", [False, True])
def test_campaign_full(boundscheck):
    counts = _campaign_subprocess(2500, seed=11, boundscheck=boundscheck)
    _clean(counts)
    assert counts["cases"] > 8000


def _sweep(tmp_path, step: int, masks=(0x01,)) -> Counts:
    src = tmp_path / "src.gtokc"
    rows = make_corpus(src, 5)
    raw = src.read_bytes()
    counts = Counts()
    for pos in range(0, len(raw), step):
        if pos in (10, 11):
            continue
        for mask in masks:
            b = bytearray(raw)
            b[pos] ^= mask
            _one(counts, tmp_path / "x.gtokc", bytes(b), f"byte {pos} ^ {mask:#x}", damaged=True,
                 original_lengths=[len(r) for r in rows])
    return counts


def test_every_seventh_byte_flipped(tmp_path):
    counts = _sweep(tmp_path, 7)
    _clean(counts)


@pytest.mark.slow
def test_every_byte_flipped_every_bit(tmp_path):
    counts = _sweep(tmp_path, 1, masks=tuple(1 << k for k in range(8)))
    _clean(counts)


# ------------------------------------------------------------------ open: offsets and sizes
def test_a_moved_boundary_is_refused_on_open(tmp_path):
    """A flipped offset that stays monotone is caught by the offsets checksum, on open."""
    p = tmp_path / "c.gtokc"
    with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        w.append_batch([[1, 2], [3, 4], [5]])
    raw = bytearray(p.read_bytes())
    f = fields(bytes(raw))
    raw[f["off_off"] + 8] ^= 0x01  # offsets [0, 2, 4, 5] -> [0, 3, 4, 5]: still monotone
    p.write_bytes(bytes(raw))
    with pytest.raises(GtokFormatError, match="offsets checksum mismatch"):
        Corpus.open(p)
    c = Corpus.open(p, trusted=True)  # the cheap open reads what the file says ...
    assert c[0].tolist() == [1, 2, 3]
    assert any("offsets checksum mismatch" in x for x in c.verify())  # ... and verify says so


@pytest.mark.parametrize("offsets, pattern", [
    ([0, 2, 1, 5], "decreases at entry 2"),
    ([0, 2, 4, 2**40], "ends at 1099511627776"),
    ([0, -(2**40), 4, 5], "decreases at entry 1"),
    ([3, 2, 4, 5], "starts at 3"),
])
def test_crafted_offsets_with_recomputed_checksums(tmp_path, offsets, pattern):
    p = tmp_path / "c.gtokc"
    with CorpusWriter(p, vocab_size=10, fingerprint="fp", values_dtype="uint16") as w:
        w.append_batch([[1, 2], [3, 4], [5]], values=[1, 2, 3, 4, 5])
    p.write_bytes(resign(p.read_bytes(), offsets=np.array(offsets)))
    with pytest.raises(GtokFormatError, match=pattern):
        Corpus.open(p)
    try:
        c = Corpus.open(p, trusted=True)
    except GtokFormatError:  # the cheap check (first and last offset) refused it
        return
    for read in (lambda: c.get_batch([0, 1, 2]), lambda: c.to_ragged(), lambda: c[0:3],
                 lambda: [c[i] for i in range(3)], lambda: list(c), lambda: c.lengths,
                 lambda: list(c.iter_batches(2, values=True)), lambda: c.get_batch([2, 1], values=True),
                 lambda: [c.values(i) for i in range(3)]):
        with pytest.raises(GtokFormatError, match="corrupt record offsets"):
            read()


def test_torch_dataset_reads_through_the_safe_open(tmp_path):
    torch_data = pytest.importorskip("genotok.torch_data")
    p = tmp_path / "c.gtokc"
    with CorpusWriter(p, vocab_size=10, fingerprint="fp") as w:
        w.append_batch([[1, 2], [3, 4], [5]])
    p.write_bytes(resign(p.read_bytes(), offsets=np.array([0, 2**50, 4, 5])))
    with pytest.raises(GtokFormatError):
        torch_data.CorpusDataset(p)
    ds = torch_data.CorpusDataset(Corpus.open(p, trusted=True))
    with pytest.raises(GtokFormatError, match="corrupt record offsets"):
        ds[0]
    assert ds[2].tolist() == [5]


def test_truncated_file_is_refused_on_open(tmp_path):
    p = tmp_path / "c.gtokc"
    make_corpus(p)
    raw = p.read_bytes()
    for cut in (len(raw) - 1, fields(raw)["json_off"], fields(raw)["off_off"] + 3, 130, 127, 0):
        (tmp_path / "cut.gtokc").write_bytes(raw[:cut])
        with pytest.raises(GtokFormatError, match="truncated or corrupt|not a genotok corpus"):
            Corpus.open(tmp_path / "cut.gtokc", trusted=True)


def test_special_files_are_refused_without_hanging(tmp_path):
    fifo = tmp_path / "fifo.gtokc"
    os.mkfifo(fifo)
    with no_hang():
        with pytest.raises(GtokFormatError, match="is a FIFO"):
            Corpus.open(fifo)
        with pytest.raises(GtokFormatError, match="is a FIFO"):
            read_gtok(fifo)
        if os.path.exists("/dev/zero"):
            with pytest.raises(GtokFormatError, match="is a character device"):
                Corpus.open("/dev/zero")
            with pytest.raises(GtokFormatError, match="is a character device"):
                read_gtok("/dev/zero", mmap=False)


def test_errors_never_quote_the_bytes_of_a_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET + b"\n")
    for call in (lambda: Corpus.open(secret), lambda: read_gtok(secret)):
        with pytest.raises(GtokFormatError) as info:
            call()
        assert b"SECRET" not in str(info.value).encode() and "0123" not in str(info.value)
    d = tmp_path / "d"
    d.mkdir()
    (d / MANIFEST).write_bytes(b'{"format": ' + SECRET + b"}")
    with pytest.raises(GtokFormatError) as info:
        Corpus.open(d)
    assert "SECRET" not in str(info.value)
    (d / MANIFEST).write_bytes(b"\xff\xfe" + SECRET)
    with pytest.raises(GtokFormatError, match="not UTF-8") as info:
        Corpus.open(d)
    assert "SECRET" not in str(info.value) and "xff" not in str(info.value)


# ------------------------------------------------------------------ verify cannot be bypassed
def _header_case(tmp_path, change):
    p = tmp_path / "c.gtokc"
    make_corpus(p)
    p.write_bytes(resign(p.read_bytes(), header=change))
    return p


def _set(key, value):
    return lambda h: h.__setitem__(key, value)


@pytest.mark.parametrize("change, pattern", [
    (lambda h: h.pop("checksums"), "integrity section"),
    (_set("checksums", None), "integrity section"),
    (_set("checksums", []), "integrity section"),
    (lambda h: h["checksums"].pop("tokens"), "checksums.tokens is missing"),
    (lambda h: h["checksums"].__setitem__("offsets", 7), "checksums.offsets"),
    (lambda h: h["checksums"].__setitem__("records", None), "checksums.records"),
    (lambda h: h["checksums"].__setitem__("values", None), "checksums.values"),
    (_set("vocab_size", float("nan")), "vocab_size nan"),
    (_set("vocab_size", float("inf")), "vocab_size inf"),
    (_set("vocab_size", "300"), "vocab_size 300 is not"),
    (_set("vocab_size", True), "vocab_size True"),
    (_set("vocab_size", 0), "vocab_size 0"),
    (_set("vocab_size", 2**40), "vocab_size"),
    (lambda h: h.pop("vocab_size"), "vocab_size None"),
    (_set("fingerprint", 5), "fingerprint"),
    (_set("n_records", "12"), "header counts"),
    (_set("n_tokens", 1.5), "header counts"),
    (_set("version", [1, 7]), "version"),
    (_set("version", "1.0"), "version"),
    (_set("format", "other"), "format"),
    (_set("special_tokens", {"pad": 10**6}), "special_tokens"),
    (_set("special_tokens", []), "special_tokens"),
    (_set("meta_columns", [1]), "meta_columns"),
    (_set("settings", "x"), "settings"),
    (_set("checksum", "md5"), "checksum algorithm"),
    (_set("created", 5), "created is not a string"),
    (_set("sources", ["x"]), "sources holds"),
    (_set("extra", []), "extra is not a JSON object"),
])
def test_malformed_header_is_refused(tmp_path, change, pattern):
    p = _header_case(tmp_path, change)
    with pytest.raises(GtokFormatError, match=pattern):
        Corpus.open(p)
    with pytest.raises(GtokFormatError, match=pattern):
        Corpus.open(p, trusted=True)


def test_verify_fails_without_a_header_digest(tmp_path):
    p = tmp_path / "c.gtokc"
    make_corpus(p)
    raw = bytearray(p.read_bytes())
    raw[88:96] = bytes(8)  # zero the header digest ...
    p.write_bytes(bytes(raw))
    assert any("no digest" in x for x in Corpus.open(p).verify())
    # ... then change every token and recompute the section checksums: verify still fails
    f = fields(bytes(raw))
    raw[f["tok_off"]:f["tok_off"] + 2 * f["t"]] = np.full(f["t"], 7, "<u2").tobytes()
    p.write_bytes(resign(bytes(raw)))
    raw = bytearray(p.read_bytes())
    raw[88:96] = bytes(8)
    p.write_bytes(bytes(raw))
    problems = Corpus.open(p).verify()
    assert problems and any("no digest" in x for x in problems)
    with pytest.raises(GtokFormatError, match="no digest"):
        Corpus.open(p, verify=True)


def test_cli_verify_reports_instead_of_a_traceback(tmp_path):
    p = _header_case(tmp_path, _set("vocab_size", float("nan")))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "genotok", "verify", str(p)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "vocab_size nan" in proc.stderr


# ------------------------------------------------------------------ portable checksums
def _hide_xxhash(monkeypatch):
    monkeypatch.setitem(sys.modules, "xxhash", None)  # `import xxhash` raises ImportError


def test_new_corpora_use_a_stdlib_checksum(tmp_path, monkeypatch):
    _hide_xxhash(monkeypatch)
    p = tmp_path / "c.gtokc"
    make_corpus(p)
    c = Corpus.open(p, verify=True)
    assert c.header["checksum"] == "blake2b_64" and c.verify() == []
    write_manifest([p], tmp_path)
    assert json.loads((tmp_path / MANIFEST).read_text())["checksum"] == "blake2b_64"
    assert Corpus.open(tmp_path).verify() == []


def test_a_corpus_without_a_records_section_is_refused(tmp_path):
    """Only development versions wrote corpora without a records section (names and metadata
    in the header): genotok reads no such file."""
    p = _header_case(tmp_path, lambda h: (h["checksums"].pop("records"), h.update(names=None,
                                                                                 meta={})))
    raw = bytearray(p.read_bytes())
    raw[72:88] = bytes(16)  # rec_off, rec_len
    p.write_bytes(bytes(raw))
    with pytest.raises(GtokFormatError, match="the records section .* is missing"):
        Corpus.open(p)


def test_an_xxh3_64_corpus_is_refused(tmp_path):
    """Only development versions wrote ``xxh3_64`` corpora: genotok reads no such file (its
    checksum algorithm is unknown), with or without xxhash installed."""
    p = _header_case(tmp_path, _set("checksum", "xxh3_64"))
    with pytest.raises(GtokFormatError, match="checksum algorithm 'xxh3_64' is missing or unknown"):
        Corpus.open(p)


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
