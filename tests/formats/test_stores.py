"""Stores (genotok.formats.stores): the registry, Parquet / Arrow shards of a chosen size, what
datasets / polars / DuckDB read of them, atomicity, and the pipeline writing through them."""

from __future__ import annotations

from typing import ClassVar  # at module level: a dataclass reads ClassVar[...] names from here

import json
import os

import numpy as np
import pytest

import genotok
from genotok import Corpus, GenotokError, Tokenizer
from genotok.formats.stores import STORES, ArrowStore, ParquetStore, Store, get_store
from genotok.params import ParameterError
from genotok.pipeline import RunOptions, pretokenize
from genotok.ragged import Ragged
from genotok.sink import write_records


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


def _rows(n=10, seed=0):
    rng = np.random.default_rng(seed)
    rows = Ragged.from_list([rng.integers(0, 20, int(rng.integers(0, 30))) for _ in range(n)])
    rows.values = rng.random(rows.data.size).astype(np.float32)
    return rows


def test_registry_by_name_or_instance():
    assert set(STORES) == {"memory", "corpus", "gtok-dir", "parquet", "arrow"}
    s = ParquetStore(rows_per_shard=3)
    assert get_store(s) is s and isinstance(get_store("arrow"), ArrowStore)
    with pytest.raises(ParameterError, match="format must be one of"):
        get_store("csv")
    with pytest.raises(ParameterError, match="rows_per_shard"):
        ParquetStore(rows_per_shard=0)
    with pytest.raises(ParameterError, match="rows_per_shard"):
        ParquetStore(rows_per_shard=True)
    with pytest.raises(ParameterError, match="compression"):
        ArrowStore(compression="snappy")


def test_a_store_refuses_values_it_cannot_keep(tok, tmp_path):
    with pytest.raises(GenotokError, match="token ids only"):
        get_store("gtok-dir").open(tmp_path, "p", tok, values=True)


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("limit", [{"rows_per_shard": 3}, {"bytes_per_shard": 100}])
def test_table_shards_of_a_chosen_size_hold_every_record(tok, tmp_path, fmt, limit):
    pa = pytest.importorskip("pyarrow")
    rows = _rows(10)
    names = [f"r{i}" for i in range(10)]
    store = STORES[fmt](**limit)
    files = write_records([(rows[:4], {"names": names[:4], "meta": {"x": list(range(4))}}),
                           (rows[4:], {"names": names[4:], "meta": {"x": list(range(4, 10))}})],
                          tmp_path / "part", tok, store=store, values=True,
                          metadata_columns=["x"], extra={"cells": {"k": 1}})
    assert len(files) > 1 and sorted(os.listdir(tmp_path)) == sorted(files)  # no temp file left
    tables = [pa.ipc.open_file(str(tmp_path / f)).read_all() if fmt == "arrow" else
              __import__("pyarrow.parquet").parquet.read_table(tmp_path / f) for f in files]
    for t in tables:
        if "rows_per_shard" in limit:
            assert t.num_rows <= 3
        else:  # over the budget only when one record alone is
            per = [8 * len(r) for r in t.column("input_ids").to_pylist()]
            assert sum(per) <= 100 or len(per) == 1
    t = pa.concat_tables(tables)
    assert t.column("input_ids").to_pylist() == rows.to_list()
    assert t.column("name").to_pylist() == names and t.column("x").to_pylist() == list(range(10))
    got = np.concatenate([np.asarray(v, np.float32) for v in t.column("values").to_pylist()])
    np.testing.assert_array_equal(got, rows.values)
    meta = json.loads(tables[0].schema.metadata[b"genotok"])
    assert meta["fingerprint"] == tok.fingerprint and meta["vocab_size"] == tok.vocab_size
    assert meta["extra"] == {"cells": {"k": 1}}
    if fmt == "parquet":
        import pyarrow.parquet as pq

        assert pq.ParquetFile(tmp_path / files[0]).metadata.row_group(0).column(0).compression \
            == "ZSTD"


def test_an_aborted_part_leaves_nothing(tok, tmp_path):
    pytest.importorskip("pyarrow")

    def records():
        yield _rows(5), {}
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_records(records(), tmp_path / "p", tok, store=ParquetStore(rows_per_shard=2))
    assert os.listdir(tmp_path) == []


def test_urls_are_never_local_directories(tok, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for out in ("s3://bkt/c.gtokc", "gs://bkt/x/c.gtokc"):
        with pytest.raises(GenotokError, match="a URL"):
            write_records([(_rows(2), {})], out, tok)
        with pytest.raises(GenotokError, match="a URL"):
            genotok.CorpusWriter(out, vocab_size=9, fingerprint="fp")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_pretokenize_shards_read_as_they_are(tok, tmp_path, fmt):
    datasets = pytest.importorskip("datasets")
    peaks = genotok.examples_dir() / "peaks"
    run = pretokenize(peaks, tok, tmp_path / "o", format=fmt, progress=False,
                      options=RunOptions(files_per_shard=2))
    ref = Corpus.open(pretokenize(peaks, tok, tmp_path / "c", progress=False).out)
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["format"] == f"genotok-{fmt}" and len(manifest["files"]) == 3
    assert manifest["genotok_run"]["n_records"] == 5
    datasets.disable_progress_bars()
    ds = datasets.load_dataset(str(run.out), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds["input_ids"] == ref.to_ragged().to_list() and ds["name"] == ref.names
    glob = str(run.out / f"*.{fmt}")
    pl = pytest.importorskip("polars")
    df = pl.read_parquet(glob) if fmt == "parquet" else pl.read_ipc(glob)
    assert df["input_ids"].to_list() == ref.to_ragged().to_list()
    if fmt == "parquet":
        duckdb = pytest.importorskip("duckdb")
        [(n, total)] = duckdb.sql(f"select count(*), sum(len(input_ids)) from '{glob}'").fetchall()
        assert (n, total) == (5, ref.n_tokens)


def test_pretokenize_resumes_a_table_store_and_refuses_another_shard_size(tok, tmp_path):
    pytest.importorskip("pyarrow")
    peaks = genotok.examples_dir() / "peaks"
    store = ParquetStore(rows_per_shard=1)
    first = pretokenize(peaks, tok, tmp_path, format=store, progress=False)
    again = pretokenize(peaks, tok, tmp_path, format=store, progress=False)
    assert again.skipped_done == 5 and first.n_records == again.n_records
    assert sum(f.endswith(".parquet") for f in os.listdir(tmp_path)) == 5
    with pytest.raises(genotok.pipeline.PipelineError, match="other inputs or settings"):
        pretokenize(peaks, tok, tmp_path, format=ParquetStore(rows_per_shard=2), progress=False)


def test_adding_a_store_is_one_class_and_one_registry_line(tok, tmp_path):
    from dataclasses import dataclass

    from genotok.formats import stores

    @dataclass
    class Lines(Store):
        """One text line of ids per record."""
        name: ClassVar[str] = "lines"
        supports: ClassVar[frozenset] = frozenset()

        def _begin(self):
            self._fh = open(self.directory / f"{self.part}.txt", "w")

        def write(self, batch, meta):
            for ids in batch:
                self._fh.write(" ".join(map(str, ids)) + "\n")

        def commit(self):
            self._fh.close()
            return [f"{self.part}.txt"]

    stores.STORES[Lines.name] = Lines
    try:
        pretokenize(genotok.examples_dir() / "peaks", tok, tmp_path, format="lines",
                    progress=False)
    finally:
        del stores.STORES[Lines.name]
    assert (tmp_path / "shard-00000.txt").read_text().count("\n") == 5


@pytest.mark.parametrize("cls", [ParquetStore, ArrowStore])
def test_every_store_option_refuses_the_invalid_values_of_its_constraints(cls):
    from genotok.params import invalid_values

    for name, allowed in cls.CONSTRAINTS.items():
        for bad in invalid_values(allowed):
            with pytest.raises(ParameterError, match=name):
                cls(**{name: bad})


def test_run_options_refuse_the_invalid_values_of_their_constraints():
    from genotok.params import invalid_values

    for name, allowed in RunOptions.CONSTRAINTS.items():
        for bad in invalid_values(allowed):
            with pytest.raises(ParameterError, match=name):
                RunOptions(**{name: bad})


@pytest.mark.parametrize("fmt", ["parquet", "split-corpus"])
def test_cells_with_values_go_to_parquet_as_to_the_corpus(tok, tmp_path, fmt):
    """A .h5ad input's cells, values and spec reach a Parquet store as they reach the corpus
    (and, with a validation split, the corpus path through the same store)."""
    from genotok import CellSpec, Normalize

    h5ad = genotok.examples_dir() / "pbmc.h5ad"
    spec = CellSpec(encoding=(Normalize(100.0),), values=True)
    ref = Corpus.open(pretokenize(h5ad, tok, tmp_path / "c", cells=spec, progress=False).out)
    if fmt == "parquet":
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        out = pretokenize(h5ad, tok, tmp_path / "p", cells=spec, format="parquet",
                          progress=False).out
        t = pa.concat_tables([pq.read_table(p) for p in sorted(out.glob("*.parquet"))])
        meta = json.loads(t.schema.metadata[b"genotok"])
        assert json.loads(json.dumps(meta["extra"]["cells"])) == json.loads(spec.to_json())
        ids, vals, names = (t.column("input_ids").to_pylist(), t.column("values").to_pylist(),
                            t.column("name").to_pylist())
    else:  # the corpus through a split store: in memory, then written
        out = pretokenize(h5ad, tok, tmp_path / "s", cells=spec, progress=False,
                          options=RunOptions(validation=0.5)).out
        parts = [Corpus.open(out), Corpus.open(out / "validation")]
        rows = [c.to_ragged(values=True) for c in parts]
        ids = [r for x in rows for r in x.to_list()]
        vals = [x.values[x.offsets[i]:x.offsets[i + 1]] for x in rows for i in range(len(x))]
        names = [n for c in parts for n in c.names]
        assert 0 < len(parts[1]) < len(ref)
    order = {n: i for i, n in enumerate(ref.names)}
    want = ref.to_ragged(values=True)
    assert sorted(names, key=order.get) == ref.names
    for n, row in zip(names, ids):
        i = order[n]
        assert row == want.data[want.offsets[i]:want.offsets[i + 1]].tolist()
    for n, v in zip(names, vals):
        i = order[n]
        np.testing.assert_allclose(v, want.values[want.offsets[i]:want.offsets[i + 1]])


def test_a_killed_table_shard_leaves_a_temp_file_the_next_run_removes(tok, tmp_path):
    pytest.importorskip("pyarrow")
    peaks = genotok.examples_dir() / "peaks"
    pretokenize(peaks, tok, tmp_path, format="arrow", progress=False)
    junk = [tmp_path / ".shard-00001-000.arrow.ab12cd34.tmp",
            tmp_path / "validation" / ".shard-00000-000.arrow.zz99yy88.tmp"]
    junk[1].parent.mkdir()
    for j in junk:
        j.write_bytes(b"half a shard")
    pretokenize(peaks, tok, tmp_path, format="arrow", progress=False)
    assert not any(j.exists() for j in junk)
