"""The indexed corpus: layout, round trips, streaming writer, integrity, shards, interop."""

from __future__ import annotations

import json
import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import (
    Corpus,
    CorpusWriter,
    GenotokError,
    GtokFormatError,
    Ragged,
    Tokenizer,
    UniverseMismatchError,
    export_gtok_dir,
    export_store,
    import_gtok_dir,
    import_parquet,
    read_gtok,
    write_manifest,
)
from genotok.formats.corpus.layout import ALIGN, PREAMBLE, _host
from genotok.formats.corpus.reader import _gather_rows
from genotok.formats.stores import ParquetStore

FEW = settings(max_examples=40, deadline=None)


# ------------------------------------------------------------------ oracles
def naive_layout(raw: bytes) -> dict:
    """Oracle: decode a corpus file from the byte table in docs/formats.md with int.from_bytes."""
    le = lambda a, b: int.from_bytes(raw[a:b], "little")
    f = {"magic": raw[0:8], "major": le(8, 10), "minor": le(10, 12), "width": raw[12],
         "vcode": raw[13], "n": le(16, 24), "t": le(24, 32), "tok_off": le(32, 40),
         "val_off": le(40, 48), "off_off": le(48, 56), "json_off": le(56, 64),
         "json_len": le(64, 72), "rec_off": le(72, 80), "rec_len": le(80, 88)}
    w, n, t = f["width"], f["n"], f["t"]
    offs = [le(f["off_off"] + 8 * i, f["off_off"] + 8 * i + 8) for i in range(n + 1)]
    toks = [le(f["tok_off"] + w * i, f["tok_off"] + w * i + w) for i in range(t)]
    f["rows"] = [toks[offs[i]:offs[i + 1]] for i in range(n)]
    f["header"] = json.loads(raw[f["json_off"]:f["json_off"] + f["json_len"]])
    f["records"] = json.loads(raw[f["rec_off"]:f["rec_off"] + f["rec_len"]])
    return f


def naive_gather(rows: list[list[int]], idx) -> list[list[int]]:
    """Oracle for the corpus' row gather: pick rows one by one."""
    return [list(rows[i]) for i in idx]


def _ragged(rows, dtype=np.int64) -> Ragged:
    return Ragged.from_list(rows, dtype=dtype)


# ------------------------------------------------------------------ kernels vs oracle
@FEW
@given(st.lists(st.lists(st.integers(0, 65535), max_size=6), max_size=10), st.data())
def test_gather_rows_matches_oracle(rows, data):
    # the kernels themselves: tests/kernels/test_gather.py
    r = _ragged(rows, np.uint16)
    idx = np.array(data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)),
                                      max_size=12 if rows else 0)), dtype=np.int64)
    want = naive_gather(rows, idx)
    got, offs = _gather_rows(r.data, r.offsets, idx)
    assert Ragged(got, offs).to_list() == want


@pytest.mark.parametrize("offsets", [[0, 3, 2], [0, 2, 9], [-1, 1, 2], [0, 2**60, 2]])
def test_gather_refuses_offsets_outside_the_tokens(offsets):
    tokens = np.arange(3, dtype=np.uint16)
    with pytest.raises(GtokFormatError, match="x.gtokc: corrupt record offsets at record"):
        _gather_rows(tokens, np.array(offsets, np.int64), np.array([1, 0, 1]), "x.gtokc")


# ------------------------------------------------------------------ round trips
ids = st.one_of(st.integers(0, 70_000), st.sampled_from([0, 65_534, 65_535, 65_536]))
rows_st = st.lists(st.lists(ids, max_size=8), max_size=14)


@FEW
@given(rows_st, st.sampled_from([65_536, 65_537, 2**32]), st.sampled_from([None, "float32", "uint16"]),
       st.integers(1, 5), st.booleans())
def test_round_trip(rows, vocab, vdtype, batch, named):
    rows = [[min(x, vocab - 1) for x in r] for r in rows]
    flat = [x for r in rows for x in r]
    vals = [float(i % 300) for i in range(len(flat))]
    names = [f"r{i}" if i % 3 else None for i in range(len(rows))] if named else None
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.gtokc"
        with CorpusWriter(path, vocab_size=vocab, fingerprint="fp", values_dtype=vdtype) as w:
            pos = 0
            for a in range(0, len(rows), batch):  # ragged batches, then single records
                chunk = rows[a:a + batch]
                k = sum(map(len, chunk))
                v = None if vdtype is None else np.array(vals[pos:pos + k])
                if batch == 1 and chunk:
                    w.append(chunk[0], name=None if names is None else names[a], values=v)
                else:
                    w.append_batch(chunk, names=None if names is None else names[a:a + batch],
                                   values=v)
                pos += k
        raw = path.read_bytes()
        lay = naive_layout(raw)
        assert lay["rows"] == rows and lay["width"] == (2 if vocab <= 65536 else 4)
        assert all(lay[k] % ALIGN == 0 for k in ("tok_off", "val_off", "off_off", "json_off", "rec_off"))
        c = Corpus.open(path, verify=True)
        assert len(c) == len(rows) and c.lengths.tolist() == [len(r) for r in rows]
        assert [c[i].tolist() for i in range(len(rows))] == rows
        assert [r.tolist() for r in c] == rows and c.to_ragged().to_list() == rows
        assert c.names == (names if names is not None and any(names) else [None] * len(rows))
        assert [x for b in c.iter_batches(3) for x in b.to_list()] == rows
        if rows:
            idx = np.array([len(rows) - 1, 0, len(rows) // 2, -1, 0])
            assert c[idx].to_list() == naive_gather(rows, idx)
            assert c[1:].to_list() == rows[1:] and c[::2].to_list() == rows[::2]
            assert c[::-1].to_list() == rows[::-1]
            mask = np.arange(len(rows)) % 2 == 0
            assert c[mask].to_list() == [r for r, m in zip(rows, mask) if m]
        if vdtype is not None:
            assert c.to_ragged(values=True).values.tolist() == vals
            if rows:
                assert c.values(0).tolist() == vals[:len(rows[0])]
                got = c.get_batch([len(rows) - 1, 0], values=True)
                starts = np.cumsum([0] + [len(r) for r in rows])
                want = vals[starts[-2]:starts[-1]] + vals[:starts[1]]
                assert got.values.tolist() == want
        assert c.verify() == []
        del c


def test_record_views_are_zero_copy_memmaps(tmp_path):
    with CorpusWriter(tmp_path / "c", vocab_size=10, fingerprint="fp") as w:
        w.append_batch([[1, 2], [3, 4, 5]])
    c = Corpus.open(tmp_path / "c")
    r = c[1]
    assert isinstance(r, np.memmap) and not r.flags.writeable and r.tolist() == [3, 4, 5]
    assert np.shares_memory(c[0:2].data, c[0])  # a slice within one file is a view too
    assert np.shares_memory(c.to_ragged().data, c[0])
    assert pickle.loads(pickle.dumps(c))[1].tolist() == [3, 4, 5]  # pickled by path
    with pytest.raises(IndexError, match="record 2 out of range"):
        c[2]
    with pytest.raises(IndexError, match="out of range"):
        c.get_batch([0, 5])
    with pytest.raises(IndexError, match="integers"):
        c.get_batch([0.5])
    with pytest.raises(ValueError, match="no value channel"):
        c.values(0)


def test_empty_corpus(tmp_path):
    with CorpusWriter(tmp_path / "e", vocab_size=5, fingerprint="fp", values_dtype="float32"):
        pass
    c = Corpus.open(tmp_path / "e", verify=True)
    assert len(c) == 0 and c.to_ragged().to_list() == [] and list(c.iter_batches(4)) == []
    assert c.get_batch([]).to_list() == [] and c.names == [] and c.info()["n_tokens"] == 0
    assert c.to_ragged(values=True).values.size == 0


# ------------------------------------------------------------------ layout and metadata
def test_layout_and_metadata(tmp_path):
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    path = tmp_path / "c.gtokc"
    with CorpusWriter.for_tokenizer(path, tok, metadata_columns=["cell_type", "n"],
                                    values_dtype="uint16", extra={"study": "x"}) as w:
        w.append([0, 1], name="AAAC", values=[3, 1], meta={"cell_type": "B", "n": np.int64(2)})
        w.append_batch([[1]], names=np.array(["AAAG"]), values=np.array([2.0]),
                       meta={"cell_type": np.array(["T"]), "n": [float("nan")]})
        w.add_source("cells.h5ad", size=123, sha256="ab" * 32)
        w.add_source(path.parent / "nope.bed")
    lay = naive_layout(path.read_bytes())
    assert lay["magic"] == b"GTOKCORP" and (lay["major"], lay["minor"]) == (1, 0)
    assert lay["width"] == 2 and lay["vcode"] == 2 and lay["rows"] == [[0, 1], [1]]
    assert lay["records"] == {"names": ["AAAC", "AAAG"], "meta": {"cell_type": ["B", "T"],
                                                                  "n": [2, None]}}
    h = lay["header"]
    assert h["fingerprint"] == tok.fingerprint and h["vocab_size"] == tok.vocab_size
    assert h["meta_columns"] == ["cell_type", "n"] and "names" not in h and h["extra"] == {"study": "x"}
    assert set(h["checksums"]) == {"tokens", "offsets", "values", "records"}
    assert h["checksum"] == "blake2b_64" and h["created"].endswith("+00:00")
    c = Corpus.open(path, expect=tok)
    assert c.meta == {"cell_type": ["B", "T"], "n": [2, None]} and c.names == ["AAAC", "AAAG"]
    assert c.special_token_ids["pad"] == tok.pad_token_id and c.settings == tok.settings.as_dict()
    assert c.sources[0] == {"name": "cells.h5ad", "size": 123, "sha256": "ab" * 32}
    assert c.info()["length_max"] == 2 and c.info()["meta_columns"] == ["cell_type", "n"]
    assert c.to_ragged(values=True).values.tolist() == [3, 1, 2]
    assert "2 records" in repr(c) and "genotok.Corpus" in c._repr_html_()
    with pytest.raises(UniverseMismatchError, match="specific to their universe"):
        Corpus.open(path, expect=Tokenizer(["chr1:0-100"]))
    with pytest.raises(UniverseMismatchError):
        Corpus.open(path, expect="another")
    with pytest.raises(TypeError, match="fingerprint"):
        Corpus.open(path, expect=42)


def test_streaming_many_single_appends(tmp_path):
    rng = np.random.default_rng(1)
    rows = [rng.integers(0, 100, rng.integers(0, 4)).tolist() for _ in range(3000)]
    with CorpusWriter(tmp_path / "c", vocab_size=100, fingerprint="fp") as w:
        for i, r in enumerate(rows):
            w.append(r, name=f"cell{i}")
        assert w.n_records == 3000 and "3,000 records" in repr(w)
    c = Corpus.open(tmp_path / "c", verify=True)
    assert c.to_ragged().to_list() == rows and c.names[2999] == "cell2999"
    buf = np.array([1, 2], np.uint16)  # a caller reusing its buffer before the block is written
    with CorpusWriter(tmp_path / "d", vocab_size=100, fingerprint="fp", values_dtype="float32") as w:
        vals = np.array([1.0, 2.0], np.float32)
        w.append(buf, values=vals)
        buf[:] = 9
        vals[:] = 0
        w.append(buf, values=vals)
    d = Corpus.open(tmp_path / "d")
    assert d.to_ragged().to_list() == [[1, 2], [9, 9]] and d.values(0).tolist() == [1.0, 2.0]


# ------------------------------------------------------------------ writer refusals
@pytest.mark.parametrize("kwargs, call, pattern, exc", [
    ({}, lambda w: w.append_batch([[1], [2.5]]), r"record 1: token ids must be integers", GtokFormatError),
    ({}, lambda w: w.append([1.0]), "token ids must be integers", GtokFormatError),
    ({}, lambda w: (w.append([1, 2]), w.append([3, 10])), r"record 1 has id 10, outside", GtokFormatError),
    ({}, lambda w: w.append_batch(Ragged(np.array([1, -1]), np.array([0, 1, 2]))), r"record 1 has id -1",
     GtokFormatError),
    ({"values_dtype": "uint16"}, lambda w: w.append([1, 2], values=[1, 70000]),
     r"record 0 has value .*70000", GtokFormatError),
    ({"values_dtype": "uint16"}, lambda w: w.append([1], values=[1.5]), "whole number", GtokFormatError),
    ({"values_dtype": "float32"}, lambda w: w.append([1], values=np.array([1e300])), "overflows float32",
     GtokFormatError),
    ({"values_dtype": "float32"}, lambda w: w.append([1, 2], values=[1.0]), "aligned", ValueError),
    ({"values_dtype": "float32"}, lambda w: w.append([1]), "values must be given", ValueError),
    ({}, lambda w: w.append([1], values=[1.0]), "values must be given", ValueError),
    ({}, lambda w: w.append_batch([[1], [2]], names=["a"]), "1 names for 2 records", ValueError),
    ({}, lambda w: w.append([1], meta={"x": 1}), "unknown metadata column", ValueError),
    ({"metadata_columns": ["x"]}, lambda w: w.append([1], meta={"x": [1, 2]}), "not a JSON scalar",
     GtokFormatError),
    ({}, lambda w: w.append([[1, 2]]), "1-D", ValueError),
])
def test_writer_refusals_leave_nothing(tmp_path, kwargs, call, pattern, exc):
    with pytest.raises(exc, match=pattern):
        with CorpusWriter(tmp_path / "c.gtokc", vocab_size=10, fingerprint="fp", **kwargs) as w:
            call(w)
    assert list(tmp_path.iterdir()) == []


def test_writer_lifecycle(tmp_path):
    path = tmp_path / "c.gtokc"
    with pytest.raises(RuntimeError):
        with CorpusWriter(path, vocab_size=10, fingerprint="fp", values_dtype="float32") as w:
            w.append([1], values=[1.0])
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    w = CorpusWriter(path, vocab_size=10, fingerprint="fp")
    w.append([1])
    tmp_files = [p for p in tmp_path.iterdir()]
    assert len(tmp_files) == 1 and tmp_files[0].name.startswith(".")  # hidden temporary
    with pytest.raises(GtokFormatError, match="bad magic"):  # an interrupted write is not a corpus
        Corpus.open(tmp_files[0])
    w.abort()
    assert list(tmp_path.iterdir()) == []
    with CorpusWriter(path, vocab_size=10, fingerprint="fp") as w:
        w.append([1])
    with pytest.raises(FileExistsError, match="overwrite=True"):
        CorpusWriter(path, vocab_size=10, fingerprint="fp")
    with pytest.raises(ValueError, match="closed"):
        w.append([2])
    with CorpusWriter(path, vocab_size=10, fingerprint="fp", overwrite=True) as w:
        w.append([7])
    assert Corpus.open(path)[0].tolist() == [7]
    with pytest.raises(ValueError, match="values_dtype"):
        CorpusWriter(tmp_path / "x", vocab_size=10, fingerprint="fp", values_dtype="int8")
    with pytest.raises(ValueError, match="vocab_size"):
        CorpusWriter(tmp_path / "x", vocab_size=0, fingerprint="fp")
    with pytest.raises(ValueError, match="special_token_ids must map names to ids below"):
        CorpusWriter(tmp_path / "x", vocab_size=10, fingerprint="fp", special_token_ids={"pad": 10})
    with pytest.raises(TypeError):
        CorpusWriter(tmp_path / "x", vocab_size=10, fingerprint="fp", settings={"f": object()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.gtokc"]


class _FullDisk:
    """A file object on a full disk: every write and the final flush fail with ENOSPC."""

    def __init__(self, fh):
        self.fh = fh

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def write(self, data):
        raise OSError(28, "No space left on device")

    def close(self):
        self.fh.close()
        raise OSError(28, "No space left on device")


def test_writer_on_a_full_disk_removes_its_temp_file(tmp_path, monkeypatch):
    for attempt in range(3):  # retries leak nothing
        w = CorpusWriter(tmp_path / "c.gtokc", vocab_size=10, fingerprint="fp", values_dtype="float32")
        w.append([1, 2], values=[1.0, 2.0])
        w._fh = _FullDisk(w._fh)
        with pytest.raises(OSError, match="No space left"):
            w.close()  # the first error, once
        w.abort()  # never raises, even though closing the file fails too
        assert list(tmp_path.iterdir()) == []
    w = CorpusWriter(tmp_path / "c.gtokc", vocab_size=10, fingerprint="fp")
    w.append([1])

    def no_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_fsync)
    with pytest.raises(OSError, match="No space left"):
        w.close()
    assert list(tmp_path.iterdir()) == []
    w = CorpusWriter(tmp_path / "c.gtokc", vocab_size=10, fingerprint="fp")
    w._fh = _FullDisk(w._fh)
    w.abort()  # abort on its own, mid-write
    assert list(tmp_path.iterdir()) == []


def test_stale_temp_files_of_killed_writers_are_cleaned(tmp_path):

    dead = _dead_pid()
    stale = tmp_path / f".c.gtokc.writing-{_host()}-{dead}-x1.tmp"
    live = tmp_path / f".c.gtokc.writing-{_host()}-{os.getppid()}-x2.tmp"  # a running process
    other = tmp_path / f".c.gtokc.writing-otherhost-{dead}-x3.tmp"  # another machine's writer
    mine = tmp_path / f".c.gtokc.writing-{_host()}-{os.getpid()}-x4.tmp"  # this process's
    unrelated = tmp_path / f".d.gtokc.writing-{_host()}-{dead}-x5.tmp"
    for p in (stale, live, other, mine, unrelated):
        p.write_bytes(bytes(128))
    with CorpusWriter(tmp_path / "c.gtokc", vocab_size=10, fingerprint="fp") as w:
        w.append([1])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["c.gtokc", live.name, other.name, mine.name, unrelated.name])


# ------------------------------------------------------------------ integrity
def _small(tmp_path, name="c.gtokc", values=True):
    path = tmp_path / name
    with CorpusWriter(path, vocab_size=100, fingerprint="fp", metadata_columns=["k"],
                      values_dtype="float32" if values else None) as w:
        w.append_batch([[1, 2, 3], [4, 5], []], names=["a", "b", "c"], meta={"k": [1, 2, 3]},
                       values=np.arange(5, dtype=np.float32) if values else None)
    return path


def _detected(path: Path) -> bool:
    try:
        c = Corpus.open(path)
        problems = c.verify()
        c.names  # noqa: B018 - names and metadata are read lazily
        c.meta  # noqa: B018
    except GtokFormatError:
        return True
    return bool(problems)


def test_every_flipped_byte_is_detected(tmp_path):
    path = _small(tmp_path)
    raw = path.read_bytes()
    bad = tmp_path / "bad.gtokc"
    missed = []
    for pos in range(len(raw)):
        if pos in (10, 11):  # the minor version: readers accept any minor of their major
            continue
        for mask in (0x01, 0x80):
            b = bytearray(raw)
            b[pos] ^= mask
            bad.write_bytes(bytes(b))
            if not _detected(bad):
                missed.append((pos, mask))
    assert missed == []


def test_corruption_messages(tmp_path):
    path = _small(tmp_path)
    raw = path.read_bytes()
    f = PREAMBLE.unpack(raw[:PREAMBLE.size])

    def patched(name, at, data):
        b = bytearray(raw)
        b[at:at + len(data)] = data
        (tmp_path / name).write_bytes(bytes(b))
        return tmp_path / name

    (tmp_path / "t.gtokc").write_bytes(raw[:len(raw) // 2])
    with pytest.raises(GtokFormatError, match="t.gtokc: truncated or corrupt"):
        Corpus.open(tmp_path / "t.gtokc")
    p = patched("f.gtokc", f[8] + 1, b"\x07")
    assert any("tokens checksum mismatch" in x for x in Corpus.open(p).verify())
    with pytest.raises(GtokFormatError, match="f.gtokc: tokens checksum"):
        Corpus.open(p, verify=True)
    p = patched("o.gtokc", f[10], (5).to_bytes(8, "little"))
    with pytest.raises(GtokFormatError, match="o.gtokc: corrupt record offsets"):
        Corpus.open(p)
    p = patched("v.gtokc", 8, (9).to_bytes(2, "little"))
    with pytest.raises(GtokFormatError, match="format 9.0 is newer than this genotok"):
        Corpus.open(p)
    p = patched("h.gtokc", f[11] + raw[f[11]:].index(b'"fp"') + 1, b"q")
    with pytest.raises(GtokFormatError, match="h.gtokc: metadata header checksum mismatch"):
        Corpus.open(p)
    p = patched("r.gtokc", f[13] + raw[f[13]:].index(b'"a"') + 1, b"z")
    assert any("records checksum mismatch" in x for x in Corpus.open(p).verify())
    p = patched("z.gtokc", 0, bytes(PREAMBLE.size))
    with pytest.raises(GtokFormatError, match="bad magic"):
        Corpus.open(p)
    (tmp_path / "trail.gtokc").write_bytes(raw + b"\0")
    assert any("unexpected bytes" in x for x in Corpus.open(tmp_path / "trail.gtokc").verify())
    with pytest.raises(GtokFormatError, match="no such file"):
        Corpus.open(tmp_path / "missing.gtokc")


# ------------------------------------------------------------------ shards
def test_shards_joined_by_manifest(tmp_path):
    d = tmp_path / "shards"
    d.mkdir()
    parts = {"a": ([[1, 2], [3]], [1, 2, 3]), "b": ([[], [4, 5, 6], [7]], [4, 5, 6, 7])}
    for k, (rows, vals) in parts.items():
        with CorpusWriter(d / f"{k}.gtokc", vocab_size=10, fingerprint="fp", values_dtype="float32",
                          metadata_columns=["k"] if k == "a" else ["j"]) as w:
            w.append_batch(rows, names=[f"{k}{i}" for i in range(len(rows))],
                           values=np.array(vals, np.float32))
    before = sorted(os.listdir(d))
    write_manifest([d / "a.gtokc", d / "b.gtokc"], d, extra={"note": 1})
    assert sorted(os.listdir(d)) == sorted(before + ["manifest.json"])  # no data copied
    c = Corpus.open(d, verify=True)
    rows = parts["a"][0] + parts["b"][0]
    assert len(c) == 5 and [c[i].tolist() for i in range(5)] == rows
    idx = [4, 0, 2, 3, 0, -1]
    assert c[idx].to_list() == naive_gather(rows, idx)
    assert c.get_batch([3, 0], values=True).values.tolist() == [4, 5, 6, 1, 2]
    assert c.get_batch([1, 2], values=True).values.tolist() == [3]
    assert c[1:4].to_list() == rows[1:4]  # a slice across shards is gathered
    assert c.names == ["a0", "a1", "b0", "b1", "b2"] and c.lengths.tolist() == [2, 1, 0, 3, 1]
    assert c.meta == {"k": [None] * 5, "j": [None] * 5}
    batches = list(c.iter_batches(2, values=True))  # never across shards; views
    assert [b.to_list() for b in batches] == [[[1, 2], [3]], [[], [4, 5, 6]], [[7]]]
    assert batches[0].values.tolist() == [1, 2, 3] and np.shares_memory(batches[0].data, c[0])
    assert c.info()["shards"] == 2
    # a shard replaced after the manifest was written
    with CorpusWriter(d / "b.gtokc", vocab_size=10, fingerprint="fp", values_dtype="float32",
                      overwrite=True) as w:
        w.append([1], values=[1.0])
    with pytest.raises(GtokFormatError, match="replaced after the manifest"):
        Corpus.open(d)


def test_shards_must_agree(tmp_path):
    for name, fp, vocab in (("a", "fp", 10), ("b", "other", 10), ("c", "fp", 70_000)):
        with CorpusWriter(tmp_path / f"{name}.gtokc", vocab_size=vocab, fingerprint=fp) as w:
            w.append([1])
    with pytest.raises(UniverseMismatchError, match="b.gtokc"):
        write_manifest([tmp_path / "a.gtokc", tmp_path / "b.gtokc"], tmp_path)
    with pytest.raises(GtokFormatError, match="layout"):
        write_manifest([tmp_path / "a.gtokc", tmp_path / "c.gtokc"], tmp_path)
    with pytest.raises(GtokFormatError, match="is not inside"):  # a manifest names its own files
        write_manifest([tmp_path / "a.gtokc"], tmp_path / "m1")
    (tmp_path / "m3").mkdir()
    with pytest.raises(GtokFormatError, match="needs manifest.json"):
        Corpus.open(tmp_path / "m3")
    (tmp_path / "m3" / "manifest.json").write_text("{")
    with pytest.raises(GtokFormatError, match="corrupt manifest"):
        Corpus.open(tmp_path / "m3")


# ------------------------------------------------------------------ interop
def test_gtok_dir_round_trip(tmp_path):
    rows = [[1, 2], [], [70_000], [5], [6]]
    names = ["s1", "../escape", "a/b\x01", None, "é"]
    with CorpusWriter(tmp_path / "c.gtokc", vocab_size=70_001, fingerprint="fp") as w:
        w.append_batch(rows, names=names)
    files = export_gtok_dir(Corpus.open(tmp_path / "c.gtokc"), tmp_path / "dir")
    assert [f.name for f in files] == ["s1.gtok", "%2E.%2Fescape.gtok", "a%2Fb%01.gtok",
                                       "record_00000003.gtok", "%C3%A9.gtok"]
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == sorted(f.name for f in files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.gtokc", "dir"]  # nothing outside
    assert [read_gtok(f).tolist() for f in files] == rows
    assert [f.read_bytes()[4] for f in files] == [1, 1, 2, 1, 1]  # width per file, as gtars
    back = Corpus.open(import_gtok_dir(tmp_path / "dir", tmp_path / "back.gtokc",
                                       vocab_size=70_001, fingerprint="fp"))
    got = dict(zip(back.names, back.to_ragged().to_list()))
    assert got == {"s1": [1, 2], "../escape": [], "a/b\x01": [70_000], "record_00000003": [5],
                   "é": [6]}
    src = {s["name"]: s for s in back.sources}
    assert src["s1.gtok"]["size"] == 9 and len(src["s1.gtok"]["sha256"]) == 64
    with pytest.raises(GtokFormatError, match=r"a%2Fb%01.gtok: id 70000 is outside the vocabulary"):
        import_gtok_dir(tmp_path / "dir", tmp_path / "small.gtokc", vocab_size=100, fingerprint="fp")
    (tmp_path / "dir" / "zz.gtok").write_bytes(b"GTOK\x01\x01")
    with pytest.raises(GtokFormatError, match="zz.gtok: truncated"):
        import_gtok_dir(tmp_path / "dir", tmp_path / "t.gtokc", vocab_size=70_001, fingerprint="fp")
    (tmp_path / "none").mkdir()
    with pytest.raises(GtokFormatError, match="no files match"):
        import_gtok_dir(tmp_path / "none", tmp_path / "e.gtokc", vocab_size=9, fingerprint="fp")
    assert not (tmp_path / "small.gtokc").exists() and not (tmp_path / "t.gtokc").exists()
    with pytest.raises(FileExistsError, match="not an empty directory"):
        export_gtok_dir(back, tmp_path / "dir")
    export_gtok_dir(back, tmp_path / "none")  # an empty directory is filled
    assert len(list((tmp_path / "none").iterdir())) == 5


@pytest.mark.parametrize("names, pattern", [
    (["x", "x"], r"records 0 and 1 would both be written to x.gtok"),
    (["record_00000001", None], r"records 0 and 1 would both be written to record_00000001.gtok"),
    (["ok", ""], r"record 1: '' cannot name a file"),
])
def test_gtok_dir_export_refuses_collisions(tmp_path, names, pattern):
    with CorpusWriter(tmp_path / "c.gtokc", vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1], [2]], names=names)
    with pytest.raises(GenotokError, match=pattern):
        export_gtok_dir(Corpus.open(tmp_path / "c.gtokc"), tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.gtokc"]  # no directory, no temp


def test_interrupted_export_is_not_importable(tmp_path, monkeypatch):
    import genotok.formats.gtok as gtok_mod

    with CorpusWriter(tmp_path / "c.gtokc", vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1], [2], [3]], names=["a", "b", "c"])
    calls = {"n": 0}
    real = gtok_mod.write_gtok

    def dies(ids, out, width=None, *, atomic=True):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        real(ids, out, width, atomic=atomic)

    monkeypatch.setattr(gtok_mod, "write_gtok", dies)
    with pytest.raises(KeyboardInterrupt):
        export_gtok_dir(Corpus.open(tmp_path / "c.gtokc"), tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.gtokc"]
    # a SIGKILL leaves the temporary directory: import refuses it, the next export removes it
    monkeypatch.setattr(gtok_mod, "write_gtok", real)
    dead = _dead_pid()

    stale = tmp_path / f".out.exporting-{_host()}-{dead}-abc.tmp"
    stale.mkdir()
    (stale / "a.gtok").write_bytes(b"GTOK\x01\x01\x00")
    with pytest.raises(GtokFormatError, match="interrupted export"):
        import_gtok_dir(stale, tmp_path / "x.gtokc", vocab_size=9, fingerprint="fp")
    export_gtok_dir(Corpus.open(tmp_path / "c.gtokc"), tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.gtokc", "out"]


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_import_holds_one_copy_of_a_file(tmp_path):
    import tracemalloc

    from genotok import write_gtok

    d = tmp_path / "g"
    d.mkdir()
    ids = np.arange(4_000_000, dtype=np.uint32) % 60_000  # 8 MB as uint16
    write_gtok(ids, d / "big.gtok")
    size = (d / "big.gtok").stat().st_size
    tracemalloc.start()
    try:
        import_gtok_dir(d, tmp_path / "c.gtokc", vocab_size=60_000, fingerprint="fp")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * size  # the file is mapped, not read: one copy (the writer's block)
    assert Corpus.open(tmp_path / "c.gtokc")[0][-3:].tolist() == ids[-3:].tolist()


def test_import_streams_and_refuses_special_files(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    from genotok import write_gtok

    write_gtok(np.arange(1000) % 9, d / "a.gtok")
    os.mkfifo(d / "fifo.gtok")  # not a regular file: skipped by the listing, never opened
    c = Corpus.open(import_gtok_dir(d, tmp_path / "c.gtokc", vocab_size=9, fingerprint="fp"))
    assert c.names == ["a"] and c[0].tolist() == (np.arange(1000) % 9).tolist()
    with pytest.raises(GtokFormatError, match="is a FIFO"):
        read_gtok(d / "fifo.gtok")


def test_parquet_round_trip(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [[1, 2], [], [70_000, 3], [4]]
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=70_001, fingerprint="fp", metadata_columns=["kind", "n"],
                      settings={"overlap": "all"}) as w:
        w.append_batch(rows, names=["a", "b", None, "d"],
                       meta={"kind": [None, None, "z", "w"], "n": [1, 2, 3, None]})
    c = Corpus.open(path)
    out = export_store(c, tmp_path / "c", ParquetStore(rows_per_shard=2))  # nulls, then strings
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 2
    ttype = pq.ParquetFile(files[0]).schema_arrow.field("input_ids").type
    assert pa.types.is_list(ttype) and ttype.value_type == pa.int32()
    table = pa.concat_tables([pq.read_table(f) for f in files])
    assert table.column("input_ids").to_pylist() == rows
    assert table.column("name").to_pylist() == ["a", "b", None, "d"]
    assert table.column("kind").to_pylist() == [None, None, "z", "w"]
    assert Corpus.open(out, verify=True).meta == c.meta  # the store's output reads back
    back = Corpus.open(import_parquet(files, tmp_path / "back.gtokc"), verify=True)
    assert back.to_ragged().to_list() == rows and back.names == ["a", "b", None, "d"]
    assert back.meta == {"kind": [None, None, "z", "w"], "n": [1, 2, 3, None]}
    assert back.fingerprint == "fp" and back.settings == {"overlap": "all"}
    with pytest.raises(UniverseMismatchError):
        import_parquet(files, tmp_path / "x.gtokc", fingerprint="other")
    pd = pytest.importorskip("pandas")
    # a plain file as geniml's Region2VecDataset reads it: no genotok metadata
    pd.DataFrame({"input_ids": [[1, 2], [3]]}).to_parquet(tmp_path / "plain.parquet")
    with pytest.raises(GtokFormatError, match="give vocab_size= and fingerprint="):
        import_parquet(tmp_path / "plain.parquet", tmp_path / "p.gtokc")
    plain = Corpus.open(import_parquet(tmp_path / "plain.parquet", tmp_path / "p.gtokc",
                                       vocab_size=5, fingerprint="fp"))
    assert plain.to_ragged().to_list() == [[1, 2], [3]] and plain.names == [None, None]
    pd.DataFrame({"input_ids": ["x"]}).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(GtokFormatError, match="expected a list of integers"):
        import_parquet(tmp_path / "bad.parquet", tmp_path / "b.gtokc", vocab_size=5, fingerprint="fp")
    pd.DataFrame({"input_ids": [[1], None]}).to_parquet(tmp_path / "null.parquet")
    with pytest.raises(GtokFormatError, match="null"):
        import_parquet(tmp_path / "null.parquet", tmp_path / "n.gtokc", vocab_size=5, fingerprint="fp")
    with pytest.raises(GtokFormatError, match="not a readable Parquet"):
        import_parquet(path, tmp_path / "q.gtokc", vocab_size=5, fingerprint="fp")


def test_import_parquet_of_genimls_real_sample(tmp_path):
    """geniml's own ``tokens.parquet.sample`` (../shared/data/real): a ``tokens`` column of
    int32 lists and no genotok metadata, read as pyarrow reads it."""
    from .._shared import SHARED, shared

    pq = pytest.importorskip("pyarrow.parquet")
    path = shared(SHARED / "data" / "real" / "geniml" / "gtok_sample" / "tokens.parquet.sample")
    want = pq.read_table(path).column("tokens").to_pylist()
    with pytest.raises(GtokFormatError, match="no 'input_ids' column"):
        import_parquet(path, tmp_path / "a.gtokc")
    with pytest.raises(GtokFormatError, match="give vocab_size= and fingerprint="):
        import_parquet(path, tmp_path / "a.gtokc", ids_column="tokens")
    c = Corpus.open(import_parquet(path, tmp_path / "b.gtokc", vocab_size=max(map(max, want)) + 1,
                                   fingerprint="geniml", ids_column="tokens"), verify=True)
    assert c.to_ragged().to_list() == want and len(want) == 3


def test_parquet_empty_corpus(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    with CorpusWriter(tmp_path / "e", vocab_size=5, fingerprint="fp"):
        pass
    out = export_store(Corpus.open(tmp_path / "e"), tmp_path / "e.parquet", "parquet")
    files = sorted(out.glob("*.parquet"))
    assert sum(pq.read_table(f).num_rows for f in files) == 0 and len(Corpus.open(out)) == 0
    assert len(Corpus.open(import_parquet(files, tmp_path / "e2"))) == 0


def test_export_store_is_staged_and_refuses_what_it_cannot_write(tmp_path, monkeypatch):
    """:func:`export_store` writes through the registry's stores: the memory store (no files)
    is refused up front, a directory that is no genotok output is never replaced, an earlier
    export is with ``overwrite=True``, and a failure mid-write leaves nothing behind."""
    from genotok.formats.jsonl import JsonlStore
    from genotok.params import ParameterError

    with CorpusWriter(tmp_path / "c.gtokc", vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1, 2], [3]], names=["a", "b"])
    c = Corpus.open(tmp_path / "c.gtokc")
    with pytest.raises(ParameterError, match="'memory' writes no files"):
        export_store(c, tmp_path / "m", "memory")
    assert not (tmp_path / "m").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not an empty directory"):
        export_store(c, mine, "jsonl", overwrite=True)
    assert (mine / "notes.txt").read_text() == "keep me"
    out = export_store(c, tmp_path / "j", "jsonl")
    with pytest.raises(FileExistsError):
        export_store(c, out, "jsonl")
    export_store(c, out, "jsonl", overwrite=True)
    assert Corpus.open(out).names == ["a", "b"]

    def broken(self, batch, meta, a, b):
        raise OSError("disk full")

    monkeypatch.setattr(JsonlStore, "_write_rows", broken)
    with pytest.raises(OSError, match="disk full"):
        export_store(c, tmp_path / "k", "jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.gtokc", "j", "mine"]


# ------------------------------------------------------------------ one spelling
def test_old_spellings_are_refused(tmp_path):
    """genotok is unreleased: the corpus room's spellings before issue 21 are unknown keywords
    (no shim), and nothing is written by a refused call."""
    with CorpusWriter(tmp_path / "a.gtokc", vocab_size=9, fingerprint="fp",
                      special_token_ids={"unk": 8}) as w:
        w.append([1, 2])
    c = Corpus.open(tmp_path / "a.gtokc")
    assert c.special_token_ids == {"unk": 8} and not hasattr(c, "special_tokens")
    with pytest.raises(TypeError, match="special_tokens"):
        CorpusWriter(tmp_path / "b.gtokc", vocab_size=9, fingerprint="fp",
                     special_tokens={"unk": 8})
    shard = tmp_path / "a.gtokc"
    with pytest.raises(TypeError, match="directory"):
        write_manifest([shard], directory=tmp_path)
    with pytest.raises(TypeError, match="a sequence of shard paths"):  # the old order, too
        write_manifest(tmp_path, [shard])
    with pytest.raises(TypeError, match="a sequence of shard paths"):
        write_manifest(shard, tmp_path)
    with pytest.raises(TypeError, match="directory"):
        export_gtok_dir(c, directory=tmp_path / "g")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gtokc"]
    pytest.importorskip("pyarrow")
    with pytest.raises(TypeError, match="path"):
        export_store(c, path=tmp_path / "c.parquet")
    q = next(export_store(c, tmp_path / "c.parquet").glob("*.parquet"))
    with pytest.raises(TypeError, match="special_tokens"):  # passed on to the writer
        import_parquet(q, tmp_path / "back.gtokc", special_tokens={"unk": 7})
    assert not (tmp_path / "back.gtokc").exists()
    back = import_parquet(q, tmp_path / "back.gtokc", special_token_ids={"unk": 7})
    assert Corpus.open(back).special_token_ids == {"unk": 7}
    assert Corpus.open(import_parquet(q, tmp_path / "kept.gtokc")).special_token_ids == {"unk": 8}


def test_a_pickle_refuses_a_corpus_changed_since_it_was_opened(tmp_path):
    """Issue 32: a corpus pickled as its path only: a spawn-started worker unpickling after a
    rewrite read the new version under the parent's epoch plan."""
    import pickle

    from genotok.formats.corpus import write_manifest

    def write(path, rows):
        with CorpusWriter(path, vocab_size=10, fingerprint="fp", overwrite=True) as w:
            w.append_batch(rows)

    one = tmp_path / "c.gtokc"
    write(one, [[1, 2], [3]])
    d = tmp_path / "dir"
    d.mkdir()
    write(d / "s0.gtokc", [[1]])
    write_manifest([d / "s0.gtokc"], d)
    for path, rewrite in ((one, lambda: write(one, [[1, 2], [3], [4]])),
                          (d, lambda: (write(d / "s0.gtokc", [[5]]),
                                       write_manifest([d / "s0.gtokc"], d)))):
        c = Corpus.open(path)
        again = pickle.loads(pickle.dumps(c))  # unchanged: fine
        assert again.identity == c.identity and again.to_ragged().to_list() == \
            c.to_ragged().to_list()
        blob = pickle.dumps(c)
        rewrite()
        with pytest.raises(GtokFormatError, match="changed since it was opened"):
            pickle.loads(blob)


def test_infinite_metadata_is_refused_when_appended_not_at_close(tmp_path):
    """Issue 32: ±inf in corpus metadata failed at close(), after all the work."""
    w = CorpusWriter(tmp_path / "c.gtokc", vocab_size=9, fingerprint="fp",
                     metadata_columns=["score"])
    with pytest.raises(GtokFormatError, match="'score', record 1: inf is not a JSON number"):
        w.append_batch([[1], [2]], meta={"score": np.array([1.0, np.inf])})
    w.abort()


def test_corpus_writer_bad_id_leaves_nothing(tmp_path):
    with pytest.raises(GtokFormatError, match=r"record 0 has id 50"):
        with CorpusWriter(tmp_path / "c.gtokc", vocab_size=50, fingerprint="fp") as w:
            w.append([1, 50])
    assert list(tmp_path.iterdir()) == []
