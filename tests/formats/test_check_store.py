"""``genotok.testing.check_store`` on every registered store, local and in an S3 server (moto on
127.0.0.1), and on planted broken stores that must fail it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from genotok.formats.jsonl import JsonlStore
from genotok.formats.store import ShardedStore
from genotok.formats.stores import ParquetStore, stores
from genotok.testing import check_store

pytest.importorskip("pyarrow")


@pytest.mark.parametrize("name", sorted(stores()))
def test_every_registered_store_keeps_the_contract(name):
    check_store(stores()[name])


@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from tests._s3 import moto_s3

    with moto_s3("contract") as (endpoint, _):
        yield ("s3://contract/check", {"key": "testing", "secret": "testing",
                                       "client_kwargs": {"endpoint_url": endpoint,
                                                         "region_name": "us-east-1"}})


@pytest.mark.parametrize("name", sorted(n for n, c in stores().items() if c.writes_files))
def test_every_store_keeps_the_overwrite_rules_in_an_object_store(name, s3, tmp_path,
                                                                  monkeypatch):
    from genotok.testing.stores import check_overwrite

    monkeypatch.setenv("GENOTOK_CACHE", str(tmp_path / "cache"))
    check_overwrite(stores()[name](), tmp_path, s3)


# -- planted broken stores: each must fail the rule it breaks


@dataclass
class DropsARecord(ParquetStore):
    """Loses the last record of every batch."""

    def write(self, batch, meta):
        keep = len(batch) - 1
        super().write(batch[:keep], {k: None if v is None else v[:keep] for k, v in meta.items()})


@dataclass
class AcceptsDamage(ParquetStore):
    """Joins whatever files are still readable: a damaged part goes unnoticed."""

    def finish(self, directory, files, tokenizer, extra):
        good = []
        for f in files:
            try:
                self.read_file(directory / f, None)
                good.append(f)
            except Exception:
                pass
        extra = {k: v for k, v in extra.items() if k != "genotok_run"}
        super().finish(directory, good, tokenizer, extra)


@dataclass
class LeavesStaleFiles(ParquetStore):
    """Opens a part over the files of an earlier one without removing them."""

    def _begin(self):
        self._pa = __import__("pyarrow")
        self._types = None
        stem, dot, ext = self.part.rpartition(".")
        self._stem = stem if dot and f".{ext}" == self.suffix else self.part
        self._files, self._writer, self._tmp, self._rows, self._bytes = [], None, None, 0, 0


@dataclass
class WritesInPlace(ParquetStore):
    """Writes each file under its final name (no temporary name renamed into place): a killed
    run leaves a half file that a glob read takes for output."""

    def _new_file(self, meta):
        final = self.directory / f"{self._stem}-{len(self._files):03d}{self.suffix}"
        self._final = self._tmp = final
        self._fh = open(final, "wb")  # noqa: SIM115 - closed by _close_file
        self._writer = self._open_writer(self._fh, meta, first=not self._files)
        self._rows = self._bytes = 0


@dataclass
class MixesMetadataWithItsKeys(JsonlStore):
    """Writes a metadata column under its own name, whatever it is (what JSON Lines did): a
    column called ``name`` takes the place of the record names and vanishes from the metadata."""

    def _write_rows(self, batch, meta, a, b):
        lines = []
        for i in range(a, b):
            lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
            rec = {"name": meta["names"][i], "input_ids": batch.data[lo:hi].tolist()}
            if self.values:
                rec["values"] = batch.values[lo:hi].tolist()
            rec.update({c: meta[c][i] for c in self.columns})
            lines.append(json.dumps(rec))
        self._writer.write(("\n".join(lines) + "\n").encode())


@dataclass
class DropsTheExtra(JsonlStore):
    """Writes no part header (what JSON Lines did): the run's cell spec and medians are lost."""

    def commit(self):
        return ShardedStore.commit(self)


@pytest.mark.parametrize("broken, rule", [(DropsARecord, "read back"),
                                          (MixesMetadataWithItsKeys, "read back"),
                                          (DropsTheExtra, "read back: the header's extra"),
                                          (AcceptsDamage, "damage"),
                                          (LeavesStaleFiles, "overwrite"),
                                          (WritesInPlace, "atomic")])
def test_a_planted_broken_store_fails_the_rule_it_breaks(broken, rule):
    with pytest.raises(AssertionError, match=rule):
        check_store(broken)


def test_check_store_refuses_what_is_not_a_store():
    with pytest.raises(TypeError, match="Store subclass"):
        check_store(dict)


def test_a_store_missing_a_protocol_method_cannot_be_made_and_fails_the_suite():
    """The protocol's methods are abstract: a plugin that forgets one (here the reader) fails
    when it is made, and check_store names what is missing (was: a NotImplementedError stub
    raised deep inside a run)."""
    from genotok.formats.store import ShardedStore

    @dataclass
    class NoReader(ShardedStore):
        name = "no-reader"
        suffix = ".txt"

        def _open_writer(self, fh, meta, first):
            return fh

        def _write_rows(self, batch, meta, a, b):
            pass

        def _close_writer(self):
            pass

    with pytest.raises(TypeError, match="read_file"):
        NoReader()
    with pytest.raises(AssertionError, match=r"check_store\(NoReader.*read_file missing"):
        check_store(NoReader)
