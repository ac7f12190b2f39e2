"""The .gtok formats: gtars-compatible single lists and the indexed corpus."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import (
    Corpus,
    CorpusWriter,
    GtokFormatError,
    Ragged,
    Tokenizer,
    UniverseMismatchError,
    export_gtok_dir,
    export_parquet,
    import_gtok_dir,
    import_parquet,
    read_gtok,
    write_gtok,
    write_manifest,
)
from genotok.corpus import PREAMBLE

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gtars_compat"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is not present")
FIXED = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# ------------------------------------------------------------------ single lists
@needs_shared
@pytest.mark.parametrize("name, expected", [
    ("small_u16.gtok", [0, 1, 4, 0, 1, 3]),
    ("big_u32.gtok", [1, 65535, 65536, 4294967295]),
    ("empty.gtok", []),
])
def test_reads_gtars_files(name, expected):
    for mmap in (True, False):
        assert read_gtok(SHARED / name, mmap=mmap).tolist() == expected


@needs_shared
def test_reads_gtars_query0_as_tokenized():
    ids = json.loads((SHARED / "expected.json").read_text())["expected_input_ids"]["query0.bed"]
    assert read_gtok(SHARED / "query0.gtok").tolist() == ids


@FIXED
@given(st.lists(st.integers(0, 2**32 - 1), max_size=50), st.sampled_from([None, 4]))
def test_gtok_round_trip(tmp_path, ids, width):
    p = tmp_path / "x.gtok"
    write_gtok(p, np.array(ids, dtype=np.int64), width=width)
    data = p.read_bytes()
    assert data[:4] == b"GTOK"
    expect_flag = 2 if (width == 4 or (ids and max(ids) > 65535)) else 1
    assert data[4] == expect_flag and len(data) == 5 + len(ids) * (2 if expect_flag == 1 else 4)
    arr = read_gtok(p)
    assert arr.tolist() == ids
    if ids:
        assert isinstance(arr, np.memmap) and not arr.flags.writeable


def test_gtok_width_boundary(tmp_path):
    write_gtok(tmp_path / "a.gtok", [65535])
    write_gtok(tmp_path / "b.gtok", [65536])
    assert (tmp_path / "a.gtok").read_bytes()[4] == 1
    assert (tmp_path / "b.gtok").read_bytes()[4] == 2
    with pytest.raises(GtokFormatError, match="uint16"):
        write_gtok(tmp_path / "c.gtok", [65536], width=2)
    with pytest.raises(GtokFormatError, match="within"):
        write_gtok(tmp_path / "d.gtok", [-1])


def test_gtok_refuses_what_gtars_accepts(tmp_path):
    write_gtok(tmp_path / "x.gtok", [1, 2, 3])
    good = (tmp_path / "x.gtok").read_bytes()
    (tmp_path / "trunc.gtok").write_bytes(good[:-1])
    with pytest.raises(GtokFormatError, match="trunc.gtok: truncated"):
        read_gtok(tmp_path / "trunc.gtok")
    (tmp_path / "flag.gtok").write_bytes(b"GTOK\x03" + good[5:])
    with pytest.raises(GtokFormatError, match="unknown width flag 0x03"):
        read_gtok(tmp_path / "flag.gtok")
    (tmp_path / "magic.gtok").write_bytes(b"GTOX\x01" + good[5:])
    with pytest.raises(GtokFormatError, match="bad magic"):
        read_gtok(tmp_path / "magic.gtok")
    (tmp_path / "short.gtok").write_bytes(b"GT")
    with pytest.raises(GtokFormatError, match="bad magic"):
        read_gtok(tmp_path / "short.gtok")
    with pytest.raises(GtokFormatError, match="no such file"):
        read_gtok(tmp_path / "missing.gtok")


def test_gtars_reads_what_we_write(tmp_path):
    gutils = pytest.importorskip("gtars.utils")
    for ids in ([0, 1, 2, 65535], [3, 70000, 4294967295], []):
        write_gtok(tmp_path / "x.gtok", ids)
        assert [int(x) for x in gutils.read_tokens_from_gtok(str(tmp_path / "x.gtok"))] == ids


# ------------------------------------------------------------------ corpus
rows_st = st.lists(st.lists(st.integers(0, 70_000), max_size=8), max_size=12)


def _write(path, rows, vocab_size=70_001, values=None, names=None, fingerprint="fp", **kw):
    with CorpusWriter(path, vocab_size=vocab_size, fingerprint=fingerprint,
                      values_dtype=None if values is None else "float32", **kw) as w:
        w.append_batch(Ragged.from_list(rows), names=names,
                       values=None if values is None else np.asarray(values, np.float32))
    return Corpus.open(path)


@FIXED
@given(rows_st, st.sampled_from([70_001, 65_536, 1_000_000]), st.booleans(), st.integers(1, 5))
def test_corpus_round_trip(tmp_path, rows, vocab, with_values, batch):
    rows = [[min(x, vocab - 1) for x in r] for r in rows]
    path = tmp_path / f"c{vocab}{with_values}{batch}.gtokc"
    if path.exists():
        path.unlink()
    flat = [x for r in rows for x in r]
    vals = [float(i) / 2 for i in range(len(flat))] if with_values else None
    with CorpusWriter(path, vocab_size=vocab, fingerprint="fp",
                      values_dtype="float32" if with_values else None) as w:
        pos = 0
        for a in range(0, len(rows), batch):  # appended in ragged batches
            chunk = rows[a:a + batch]
            k = sum(map(len, chunk))
            w.append_batch(chunk, names=[f"r{a + j}" for j in range(len(chunk))],
                           values=None if vals is None else np.array(vals[pos:pos + k], np.float32))
            pos += k
    c = Corpus.open(path, verify=True)
    assert len(c) == len(rows) and c.lengths.tolist() == [len(r) for r in rows]
    assert [c[i].tolist() for i in range(len(rows))] == rows
    assert [r.tolist() for r in c] == rows
    assert c.to_ragged().to_list() == rows
    assert c.names == [f"r{i}" for i in range(len(rows))]
    assert c._shards[0].dtype.itemsize == (2 if vocab <= 65536 else 4)
    if rows:
        idx = np.array([len(rows) - 1, 0, len(rows) // 2, -1])
        assert c[idx].to_list() == [rows[i] for i in idx]
        assert c[1:].to_list() == rows[1:]
        assert isinstance(c[0], np.memmap) or c[0].size == 0
    if with_values:
        got = c.to_ragged(values=True).values.tolist()
        assert got == vals
        if rows:
            assert c.values(0).tolist() == vals[:len(rows[0])]
    assert not c.verify()


def test_corpus_sections_aligned_and_metadata(tmp_path):
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    path = tmp_path / "c.gtokc"
    with CorpusWriter.for_tokenizer(path, tok, metadata_columns=["cell_type"],
                                    values_dtype="uint16") as w:
        w.append([0, 1], name="AAAC", values=[3, 1], meta={"cell_type": "B"})
        w.append([1], name="AAAG", values=[2], meta={"cell_type": "T"})
        w.add_source("cells.h5ad", size=123, sha256="ab" * 32)
    raw = path.read_bytes()
    fields = PREAMBLE.unpack(raw[:PREAMBLE.size])
    assert fields[0] == b"GTOKCORP" and all(off % 64 == 0 for off in fields[8:12] if off)
    c = Corpus.open(path, expect=tok)
    assert c.meta == {"cell_type": ["B", "T"]} and c.names == ["AAAC", "AAAG"]
    assert c.special_tokens["pad"] == tok.pad_token_id and c.settings["overlap"] == "all"
    assert c.sources[0]["name"] == "cells.h5ad" and c.info()["length_max"] == 2
    assert c.to_ragged(values=True).values.tolist() == [3, 1, 2]
    with pytest.raises(UniverseMismatchError, match="specific to their universe"):
        Corpus.open(path, expect=Tokenizer(["chr1:0-100"]))


def test_writer_refuses_bad_ids_and_leaves_nothing(tmp_path):
    path = tmp_path / "c.gtokc"
    with pytest.raises(GtokFormatError, match="record 1 has id 10"):
        with CorpusWriter(path, vocab_size=10, fingerprint="fp") as w:
            w.append([1, 2])
            w.append([3, 10])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError):
        with CorpusWriter(path, vocab_size=10, fingerprint="fp", values_dtype="float32") as w:
            w.append([1], values=[1.0])
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    _write(path, [[1]], vocab_size=10)
    with pytest.raises(FileExistsError):
        CorpusWriter(path, vocab_size=10, fingerprint="fp")


def test_corruption_is_detected(tmp_path):
    path = tmp_path / "c.gtokc"
    _write(path, [[1, 2, 3], [4, 5]] * 50, vocab_size=100)
    raw = bytearray(path.read_bytes())
    # truncated
    (tmp_path / "t.gtokc").write_bytes(bytes(raw[: len(raw) // 2]))
    with pytest.raises(GtokFormatError, match="t.gtokc: truncated or corrupt"):
        Corpus.open(tmp_path / "t.gtokc")
    # a flipped token byte: found by verify (checksum)
    tok_off = PREAMBLE.unpack(bytes(raw[:PREAMBLE.size]))[8]
    bad = bytearray(raw)
    bad[tok_off + 3] ^= 0x01
    (tmp_path / "f.gtokc").write_bytes(bytes(bad))
    c = Corpus.open(tmp_path / "f.gtokc")
    assert any("tokens checksum mismatch" in p for p in c.verify())
    with pytest.raises(GtokFormatError, match="checksum"):
        Corpus.open(tmp_path / "f.gtokc", verify=True)
    # corrupt offsets: caught on open
    off_off = PREAMBLE.unpack(bytes(raw[:PREAMBLE.size]))[10]
    bad = bytearray(raw)
    bad[off_off:off_off + 8] = (5).to_bytes(8, "little")
    (tmp_path / "o.gtokc").write_bytes(bytes(bad))
    with pytest.raises(GtokFormatError, match="corrupt record offsets"):
        Corpus.open(tmp_path / "o.gtokc")
    # newer major version
    bad = bytearray(raw)
    bad[8:10] = (9).to_bytes(2, "little")
    (tmp_path / "v.gtokc").write_bytes(bytes(bad))
    with pytest.raises(GtokFormatError, match="newer than this genotok"):
        Corpus.open(tmp_path / "v.gtokc")
    (tmp_path / "m.gtokc").write_bytes(b"NOTACORPUS" + bytes(raw[10:]))
    with pytest.raises(GtokFormatError, match="bad magic"):
        Corpus.open(tmp_path / "m.gtokc")


def test_shards_joined_by_manifest(tmp_path):
    rows_a, rows_b = [[1, 2], [3]], [[], [4, 5, 6], [7]]
    a = _write(tmp_path / "shards" / "a.gtokc", rows_a, vocab_size=10, names=["a0", "a1"],
               values=[1, 2, 3])
    b = _write(tmp_path / "shards" / "b.gtokc", rows_b, vocab_size=10, names=["b0", "b1", "b2"],
               values=[4, 5, 6, 7])
    assert a and b
    before = sorted(os.listdir(tmp_path / "shards"))
    write_manifest(tmp_path / "shards", [tmp_path / "shards" / "a.gtokc", tmp_path / "shards" / "b.gtokc"])
    assert sorted(os.listdir(tmp_path / "shards")) == sorted(before + ["manifest.json"])
    c = Corpus.open(tmp_path / "shards", verify=True)
    all_rows = rows_a + rows_b
    assert len(c) == 5 and [c[i].tolist() for i in range(5)] == all_rows
    assert c[[4, 0, 2, 3]].to_list() == [all_rows[i] for i in (4, 0, 2, 3)]
    assert c.get_batch([3, 0], values=True).values.tolist() == [4, 5, 6, 1, 2]
    assert c.names == ["a0", "a1", "b0", "b1", "b2"] and c.lengths.tolist() == [2, 1, 0, 3, 1]
    _write(tmp_path / "other.gtokc", [[1]], vocab_size=10, fingerprint="other")
    with pytest.raises(UniverseMismatchError):
        write_manifest(tmp_path / "mixed", [tmp_path / "shards" / "a.gtokc", tmp_path / "other.gtokc"])


def test_gtok_dir_round_trip(tmp_path):
    rows = [[1, 2], [], [70_000]]
    c = _write(tmp_path / "c.gtokc", rows, names=["s1", "s2", "s1"])
    files = export_gtok_dir(c, tmp_path / "dir")
    assert len(files) == 3 and len(set(files)) == 3  # repeated names do not overwrite
    back = Corpus.open(import_gtok_dir(tmp_path / "dir", tmp_path / "back.gtokc",
                                       vocab_size=70_001, fingerprint="fp"))
    assert sorted(map(tuple, back.to_ragged().to_list())) == sorted(map(tuple, rows))


def test_parquet_round_trip(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [[1, 2], [], [70_000, 3]]
    path = tmp_path / "c.gtokc"
    with CorpusWriter(path, vocab_size=70_001, fingerprint="fp", metadata_columns=["kind"]) as w:
        w.append_batch(rows, names=["a", "b", "c"], meta={"kind": ["x", "y", "z"]})
    c = Corpus.open(path)
    export_parquet(c, tmp_path / "c.parquet", row_group_size=2)
    table = pq.read_table(tmp_path / "c.parquet")
    assert table.column("tokens").to_pylist() == rows
    assert table.column("name").to_pylist() == ["a", "b", "c"]
    back = Corpus.open(import_parquet(tmp_path / "c.parquet", tmp_path / "back.gtokc"))
    assert back.to_ragged().to_list() == rows and back.meta == {"kind": ["x", "y", "z"]}
    assert back.fingerprint == "fp" and back.names == ["a", "b", "c"]


def test_iter_batches_are_views_per_shard(tmp_path):
    rows_a, rows_b = [[1, 2], [3], []], [[4, 5]]
    for name, rows in (("a", rows_a), ("b", rows_b)):
        with CorpusWriter(tmp_path / f"{name}.gtokc", vocab_size=9, fingerprint="fp",
                          values_dtype="float32") as w:
            w.append_batch(rows, values=[np.arange(len(r), dtype=np.float32) for r in rows])
    write_manifest(tmp_path / "m", [tmp_path / "a.gtokc", tmp_path / "b.gtokc"])
    c = Corpus.open(tmp_path / "m")
    batches = list(c.iter_batches(2, values=True))
    assert [b.to_list() for b in batches] == [[[1, 2], [3]], [[]], [[4, 5]]]
    assert batches[0].values.tolist() == [0, 1, 0]
    assert np.shares_memory(batches[0].data, c._shards[0].tokens)  # a view of the map, no copy
