"""Corpus.open, the safe open: every damaged or crafted corpus is refused with a GtokFormatError
naming the file, never read out of bounds (issue 19: trust nothing that is read).

Every case must end in a :class:`~genotok.GenotokError` (or the correct result): no crash, no
hang, no read that returns another record's data. The campaigns live in
``tests/formats/_corpus_campaign.py``; a sample runs here in-process and in a fresh interpreter
with ``NUMBA_BOUNDSCHECK=1``; the full campaigns are marked ``slow``. ``verify`` has its own file
(test_corpus_verify.py), manifests theirs (test_corpus_manifest.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genotok import (
    Corpus,
    CorpusWriter,
    GtokFormatError,
    Tokenizer,
    UniverseMismatchError,
    read_gtok,
    write_manifest,
)
from genotok.formats.corpus.layout import MANIFEST, PREAMBLE

from ._corpus_campaign import Counts, _one, fields, make_corpus, no_hang, resign, run
from .test_corpus_verify import _header_case, _set


def _corpus(tmp_path, name="c.gtokc", vocab=100, fingerprint="fp"):
    path = tmp_path / name
    with CorpusWriter(path, vocab_size=vocab, fingerprint=fingerprint) as w:
        for i in range(20):
            w.append(np.arange(i % 7) + 1)
    return path


def _patch(path: Path, offset: int, data: bytes) -> Path:
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    out = path.with_name("bad_" + path.name)
    out.write_bytes(bytes(raw))
    return out


def _fields(path: Path):
    return PREAMBLE.unpack(path.read_bytes()[:PREAMBLE.size])


def test_corpus_offsets_out_of_bounds(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, _fields(p)[10] + 8 * 20, (10**9).to_bytes(8, "little"))
    with pytest.raises(GtokFormatError, match=rf"{re.escape(str(bad))}: corrupt record offsets"):
        Corpus.open(bad)


def test_corpus_offsets_decreasing(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, _fields(p)[10] + 8 * 5, (1).to_bytes(8, "little"))
    with pytest.raises(GtokFormatError, match="corrupt record offsets"):  # refused on open
        Corpus.open(bad)
    problems = Corpus.open(bad, trusted=True).verify()
    assert any("offsets decrease at record" in x and str(bad) in x for x in problems)


def test_corpus_ids_beyond_vocab(tmp_path):
    p = _corpus(tmp_path, vocab=7)
    bad = _patch(p, _fields(p)[8], (9).to_bytes(2, "little"))
    assert any("token id 9 >= vocab_size 7" in x for x in Corpus.open(bad).verify())


def test_corpus_checksum_mismatch(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, _fields(p)[8] + 4, b"\x05")
    with pytest.raises(GtokFormatError, match=rf"{re.escape(str(bad))}: tokens checksum mismatch"):
        Corpus.open(bad, verify=True)


def test_corpus_wrong_universe(tmp_path):
    p = _corpus(tmp_path)
    with pytest.raises(UniverseMismatchError, match=re.escape(str(p))):
        Corpus.open(p, expect=Tokenizer(["chr1:0-10"]))


def test_corpus_newer_version(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, 8, (2).to_bytes(2, "little"))
    with pytest.raises(GtokFormatError, match=r"format 2\.0 is newer"):
        Corpus.open(bad)


def test_corpus_truncated(tmp_path):
    p = _corpus(tmp_path)
    cut = p.with_name("cut.gtokc")
    cut.write_bytes(p.read_bytes()[:200])
    with pytest.raises(GtokFormatError, match=r"cut.gtokc: truncated or corrupt"):
        Corpus.open(cut)


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECRET = b"SECRET-TOKEN-0123456789"


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


# slow: the subprocess recompiles the corpus kernels with bounds checks and no cache on every
# run (37 s under load 13, beside 6 s for the same sample in-process, which stays in the
# default run); like the bounds-checked samples of test_reading, test_fragments, test_bed_fuzz
@pytest.mark.slow
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
