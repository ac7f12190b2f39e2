"""Round 4 of "trust nothing" (issue 43), surfaces S1 (local stores) and S3 (tampered Parquet /
Arrow files): every registered store written by ``pretokenize``, crashed mid-part in a killed
subprocess and resumed, its committed parts damaged (truncated, deleted, renamed, replaced,
flipped, an extra file) before the resume or after the run, its manifest tampered field by field
(with and without a recomputed digest), overwritten both ways, and read back through
``Corpus.open``, ``verify``, ``genotok info`` / ``verify``, ``export_store`` and
``import_parquet``; tables with mutated ``genotok`` schema metadata and wrong column types read
by every reader. The oracle (:mod:`tests.campaigns._oracle`): the records written, or a
``GenotokError`` naming the file.

Run with ``python -m pytest -m slow -p no:xdist tests/campaigns``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import genotok
from genotok import Corpus, GenotokError, RunOptions, Tokenizer, pretokenize
from genotok.formats.store import _digest as store_digest
from genotok.formats.store import file_digest
from genotok.pipeline.journal import JOURNAL

from ._oracle import ROOT, known_defects, refused_any, right_or_refused

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.slow

STORES = ["corpus", "gtok-dir", "parquet", "arrow", "jsonl"]
PEAKS = genotok.examples_dir() / "peaks"

#: attacks that hit a defect not fixed yet (strict xfails; each names the defect)
KNOWN: dict = {}


@pytest.fixture(autouse=True)
def _known(request):
    known_defects(request, KNOWN)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")


def records(out) -> list:
    """``(name, ids)`` of every record of an output (and of its validation half), sorted."""
    got = []
    for d in (Path(out), Path(out) / "validation"):
        if (d / "manifest.json").is_file():
            c = Corpus.open(d)
            assert c.verify() == []
            got += [(n, c[i].tolist()) for i, n in enumerate(c.names)]
    return sorted(got)


@pytest.fixture(scope="module")
def truth(tok, tmp_path_factory):
    out = tmp_path_factory.mktemp("truth")
    pretokenize(PEAKS, tok, out, progress=False)
    return records(out)


@pytest.fixture(scope="module")
def finished(tok, tmp_path_factory):
    """A finished run of every store (and of every store with a validation split)."""
    made = {}
    for store in STORES:
        for split in (0, 0.4):
            d = tmp_path_factory.mktemp(f"done-{store}-{split}")
            pretokenize(PEAKS, tok, d, format=store, progress=False,
                        options=RunOptions(files_per_shard=2, validation=split))
            made[store, split] = d
    return made


CRASH = """
import os, signal, sys
from pathlib import Path
import genotok
from genotok import RunOptions, Tokenizer, pretokenize
from genotok.pipeline import batch
from genotok.formats import stores
store, split, mode, out = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
calls = [0]
if mode == "journal":  # the third part committed, killed before its batch is journaled
    real = batch.Batches.record
    def record(self, journal, b, entry):
        calls[0] += 1
        if calls[0] == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, journal, b, entry)
    batch.Batches.record = record
else:  # killed in the middle of writing the third part
    cls = stores.get_store(store).__class__
    real = cls.write
    def write(self, b, meta):
        calls[0] += 1
        if calls[0] == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, b, meta)
    cls.write = write
tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
pretokenize(genotok.examples_dir() / "peaks", tok, out, format=store, progress=False,
            options=RunOptions(files_per_shard=1, validation=split))
"""


def crash(store: str, split: float, mode: str, out: Path) -> None:
    r = subprocess.run([sys.executable, "-c", CRASH, store, str(split), mode, str(out)],
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                       text=True, timeout=180)
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """A run of every store killed after its third part was committed, not journaled."""
    made = {}
    for store in STORES:
        d = tmp_path_factory.mktemp(f"crash-{store}")
        crash(store, 0, "journal", d)
        made[store] = d
    return made


def copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "out"
    shutil.copytree(src, dst)
    return dst


# --------------------------------------------------------------- S1: crash, then resume
@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("mode", ["journal", "write"])
@pytest.mark.parametrize("split", [0, 0.4], ids=["whole", "split"])
def test_killed_mid_part_resumes_to_the_same_records(store, mode, split, tok, truth, tmp_path):
    out = tmp_path / "out"
    crash(store, split, mode, out)
    assert not (out / "manifest.json").exists()
    pretokenize(PEAKS, tok, out, format=store, progress=False,
                options=RunOptions(files_per_shard=1, validation=split))
    assert records(out) == truth


def _journaled(out: Path) -> list[str]:
    j = json.loads((out / JOURNAL).read_text())
    return sorted(f for d in j["done"].values() for f in d["files"])


DAMAGE = ["truncate", "delete", "flip", "rename", "swap", "empty", "extra-part", "extra-file",
          "symlink", "directory"]


def damage(out: Path, files: list[str], how: str) -> str:
    """Damage the first of ``files`` (committed parts) the way ``how`` says; the file named."""
    p = out / files[0]
    if how == "truncate":
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    elif how == "delete":
        p.unlink()
    elif how == "flip":
        b = bytearray(p.read_bytes())
        b[len(b) // 2] ^= 0x55
        p.write_bytes(bytes(b))
    elif how == "rename":
        p.rename(p.with_name("renamed-" + p.name))
    elif how == "swap":  # another part's bytes under this part's name
        p.write_bytes((out / files[-1]).read_bytes())
    elif how == "empty":
        p.write_bytes(b"")
    elif how == "extra-part":  # a copy of a part under a part's name no run wrote
        shutil.copy(p, out / (p.name.replace("0000", "0009") if "0000" in p.name
                              else "x" + p.name))
    elif how == "extra-file":
        (out / "notes.txt").write_text("not a part")
    elif how == "symlink":
        data = p.read_bytes()
        p.unlink()
        (out / "elsewhere.bin").write_bytes(data)
        p.symlink_to(out / "elsewhere.bin")
    elif how == "directory":
        p.unlink()
        p.mkdir()
    return p.name


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("how", DAMAGE)
def test_a_resume_rechecks_the_parts_it_trusts(store, how, crashed, tok, truth, tmp_path):
    out = copy(crashed[store], tmp_path)
    name = damage(out, _journaled(out), how)
    right_or_refused(lambda: (pretokenize(PEAKS, tok, out, format=store, progress=False,
                                          options=RunOptions(files_per_shard=1)),
                              records(out))[1], truth, name, out)


@pytest.mark.parametrize("store,how", [(STORES[(k + j) % 5], h) for k, h in enumerate(DAMAGE)
                                      for j in (0, 2)])
def test_damage_after_the_run_is_found_on_open(store, how, finished, truth, tmp_path):
    out = copy(finished[store, 0], tmp_path)
    files = json.loads((out / "manifest.json").read_text()).get("files") or \
        [e["path"] for e in json.loads((out / "manifest.json").read_text())["shards"]]
    name = damage(out, sorted(files), how)
    right_or_refused(lambda: records(out), [t for t in truth if t[0] in
                                            Corpus.open(finished[store, 0]).names], name, out)


# ------------------------------------------------------------- S1: tampered journals
JOURNALS = {  # what a resume trusts most: the journal of the crashed run
    "not-json": b"{", "not-utf8": b"\xff\xfe", "list": b"[]", "deep": b"[" * 100_000 + b"]" * 100_000,
    "empty-object": b"{}",
    "plan-list": lambda j: j.update(plan=[1]), "done-list": lambda j: j.update(done=[1]),
    "done-key-text": lambda j: j["done"].update(x=j["done"]["0"]),
    "done-key-past": lambda j: j["done"].update({"99": j["done"]["0"]}),
    "done-key-negative": lambda j: j["done"].update({"-1": j["done"]["0"]}),
    "entry-list": lambda j: j["done"].update({"0": [1]}),
    "files-int": lambda j: j["done"]["0"].update(files=[7]),
    "files-str": lambda j: j["done"]["0"].update(files="shard-00000.gtokc"),
    "files-dotdot": lambda j: j["done"]["0"].update(files=["../../outside.gtokc"]),
    "files-absolute": lambda j: j["done"]["0"].update(files=["/etc/passwd"]),
    "files-missing": lambda j: j["done"]["0"].pop("files"),
    "files-other-part": lambda j: j["done"]["0"].update(files=j["done"]["1"]["files"]),
    "records-huge": lambda j: j["done"]["0"].update(records=2**70),
    "records-negative": lambda j: j["done"]["0"].update(records=-1),
    "records-str": lambda j: j["done"]["0"].update(records="1"),
    "tokens-float": lambda j: j["done"]["0"].update(tokens=1.5),
    "failed-int": lambda j: j["done"]["0"].update(failed=3),
    "sources-int": lambda j: j["done"]["0"].update(sources=3),
}


@pytest.mark.parametrize("store,how", [(STORES[k % 5], h) for k, h in enumerate(JOURNALS)])
def test_a_tampered_journal_is_refused_or_harmless(store, how, crashed, tok, truth, tmp_path):
    out = copy(crashed[store], tmp_path)
    jpath = out / JOURNAL
    attack = JOURNALS[how]
    if isinstance(attack, bytes):
        jpath.write_bytes(attack)
    else:
        j = json.loads(jpath.read_text())
        attack(j)
        jpath.write_text(json.dumps(j))
    (tmp_path / "outside.gtokc").write_bytes(b"mine")
    right_or_refused(lambda: (pretokenize(PEAKS, tok, out, format=store, progress=False,
                                          options=RunOptions(files_per_shard=1)),
                              records(out))[1], truth, jpath, out)
    assert (tmp_path / "outside.gtokc").read_bytes() == b"mine"


# ------------------------------------------------------------- S1: tampered manifests
FIELDS = ["format", "version", "store", "header", "n_records", "n_tokens", "files", "shards",
          "digest", "genotok_run", "shards.0.path", "shards.0.n_records", "shards.0.n_tokens",
          "shards.0.bytes", "shards.0.digest", "header.vocab_size", "header.fingerprint"]
MUTATIONS = {"str": "x", "huge": 2**70, "negative": -1, "missing": KeyError, "list": [1],
             "null": None}
FIELDS_EXTRA = "extra"


def _mutate(m: dict, field: str, value) -> None:
    *parents, key = field.split(".")
    for k in parents:
        m = m[int(k)] if isinstance(m, list) else m[k]
    if isinstance(m, list):
        key = int(key)
    if value is KeyError:
        if isinstance(m, list):
            m.pop(key)
        else:
            m.pop(key, None)
    else:
        m[key] = value


def _resign(m: dict, store: str) -> None:
    if store == "corpus":
        from genotok.formats.corpus.manifest import _manifest_digest
        m["digest"] = _manifest_digest(m, m.get("checksum", "blake2b_64"))
    else:
        m["digest"] = store_digest(m)


MANIFEST_ATTACKS = [(STORES[(k + j) % 5], f, m) for k, f in enumerate(FIELDS)
                    for j, m in enumerate((("str", "missing"), ("huge", "null"),
                                           ("negative", "list"))[k % 3])] + \
    [(s, "extra", "str") for s in STORES]


@pytest.mark.parametrize("store,field,mutation", MANIFEST_ATTACKS)
def test_a_tampered_manifest_is_refused_or_harmless(store, field, mutation, finished, tmp_path):
    if store == "corpus" and field in ("files", "shards.0.bytes", "shards.0.digest", "store",
                                       "genotok_run"):
        store = "jsonl"  # not fields of a corpus manifest: attacked on another store
    out = copy(finished[store, 0], tmp_path)
    mpath = out / "manifest.json"
    m = json.loads(mpath.read_text())
    try:
        if field == "extra":
            m["unexpected"] = {"a": [1, 2]}
        else:
            _mutate(m, field, MUTATIONS[mutation])
    except (KeyError, IndexError, TypeError):
        pytest.skip(f"{store}'s manifest has no {field}")
    if field != "digest":
        _resign(m, store)
    mpath.write_text(json.dumps(m))
    want = records(finished[store, 0])
    right_or_refused(lambda: records(out), want, mpath, out)


# ------------------------------------------------------------- S1: overwrite True / False
@pytest.mark.parametrize("first,second", [(f, ("parquet", "corpus")[k % 2])
                                          for k, f in enumerate(STORES)])
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_second_run_over_a_finished_one(first, second, overwrite, finished, tok, truth,
                                          tmp_path):
    out = copy(finished[first, 0], tmp_path)
    run = lambda: (pretokenize(PEAKS, tok, out, format=second, progress=False,  # noqa: E731
                               overwrite=overwrite, options=RunOptions(files_per_shard=3)),
                   records(out))[1]
    if overwrite:
        assert run() == truth
        files = set(os.listdir(out)) - {"manifest.json", JOURNAL}
        listed = json.loads((out / "manifest.json").read_text())
        keep = set(listed.get("files") or [e["path"] for e in listed["shards"]])
        assert files == keep, f"the old run's files remain: {sorted(files - keep)}"
    else:  # another plan (files per shard, or store) in the directory: refused
        refused_any(run, out)


@pytest.mark.parametrize("target", ["file", "foreign-dir", "fifo-input"])
def test_an_output_that_is_not_ours(target, tok, tmp_path):
    out = tmp_path / "out"
    inputs = PEAKS
    if target == "file":
        out.write_text("x")
    elif target == "foreign-dir":
        out.mkdir()
        (out / "thesis.tex").write_text("mine")
    else:
        inputs = tmp_path / "in.bed"
        os.mkfifo(inputs)
    right_or_refused(lambda: (pretokenize(inputs, tok, out, progress=False), "ran")[1],
                     "ran" if target == "foreign-dir" else None, out, inputs)
    if target == "foreign-dir":
        assert (out / "thesis.tex").read_text() == "mine"


# -------------------------------------------------- S1: read back through every reader
@pytest.mark.parametrize("store,split,reader", [
    (s, (0, 0.4)[(k + j) % 2], r) for k, s in enumerate(STORES)
    for j, r in enumerate((("info", "export-import"), ("verify", "export-gtok-dir"))[k % 2])])
def test_every_reader_reads_every_store(store, split, reader, finished, truth, tmp_path):
    out = finished[store, split]
    if reader in ("info", "verify"):
        r = subprocess.run([sys.executable, "-m", "genotok", reader, str(out)],
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-1000:]
        assert "unexpected" not in r.stderr
        return
    c = Corpus.open(out)
    want = sorted((n, c[i].tolist()) for i, n in enumerate(c.names))
    if reader == "export-import":
        p = genotok.export_store(c, tmp_path / "x.parquet", "parquet")
        back = Corpus.open(genotok.import_parquet(sorted(p.glob("*.parquet")),
                                                  tmp_path / "back.gtokc"))
    else:
        genotok.export_gtok_dir(c, tmp_path / "g")
        back = Corpus.open(genotok.import_gtok_dir(tmp_path / "g", tmp_path / "back.gtokc",
                                                   vocab_size=c.vocab_size,
                                                   fingerprint=c.fingerprint))
    assert sorted((n, back[i].tolist()) for i, n in enumerate(back.names)) == want


# --------------------------------------------------- S3: tampered Parquet / Arrow files
def _table_file(finished, store: str, tmp_path: Path) -> tuple[Path, pa.Table]:
    src = sorted(Path(finished[store, 0]).glob(f"*.{store}"))[0]
    table = pq.read_table(src) if store == "parquet" else \
        pa.ipc.open_file(pa.memory_map(str(src))).read_all()
    return src, table


def _write(table, store: str, path: Path) -> Path:
    if store == "parquet":
        pq.write_table(table, path)
    else:
        with pa.ipc.new_file(str(path), table.schema) as w:
            w.write_table(table)
    return path


def _header(table) -> dict:
    return json.loads(table.schema.metadata[b"genotok"])


META = {
    "not-json": b"{not json",
    "not-utf8": b"\xff\xfe\x00",
    "list": b"[1, 2]",
    "string": b'"x"',
    "null": b"null",
    "number": b"7",
    "no-vocab": lambda h: h.pop("vocab_size"),
    "vocab-str": lambda h: h.update(vocab_size="2007"),
    "vocab-float": lambda h: h.update(vocab_size=2007.0),
    "vocab-zero": lambda h: h.update(vocab_size=0),
    "vocab-negative": lambda h: h.update(vocab_size=-5),
    "vocab-huge": lambda h: h.update(vocab_size=2**70),
    "vocab-bool": lambda h: h.update(vocab_size=True),
    "vocab-small": lambda h: h.update(vocab_size=3),
    "fingerprint-int": lambda h: h.update(fingerprint=5),
    "fingerprint-empty": lambda h: h.update(fingerprint=""),
    "special-list": lambda h: h.update(special_tokens=[1]),
    "special-out": lambda h: h.update(special_tokens={"<pad>": 10**9}),
    "special-str": lambda h: h.update(special_tokens={"<pad>": "0"}),
    "settings-list": lambda h: h.update(settings=[1]),
    "sources-dicts": lambda h: h.update(sources=[1, 2]),
    "extra-str": lambda h: h.update(extra="x"),
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


def _meta_table(table, how):
    if isinstance(how, bytes):
        raw = how
    else:
        h = _header(table)
        how(h)
        raw = json.dumps(h).encode()
    return table.replace_schema_metadata({**(table.schema.metadata or {}), b"genotok": raw})


def _resigned_output(finished, store: str, table, tmp_path: Path) -> Path:
    """A copy of the output whose first file is ``table``, its manifest re-signed to match
    (an adversary who recomputes every digest)."""
    out = copy(finished[store, 0], tmp_path)
    m = json.loads((out / "manifest.json").read_text())
    e = m["shards"][0]
    p = _write(table, store, out / e["path"])
    e["bytes"], e["digest"] = p.stat().st_size, file_digest(p)
    m["digest"] = store_digest(m)
    (out / "manifest.json").write_text(json.dumps(m))
    return out


def _as_read(table) -> list:
    """What a reader must give for an untampered table: its ``(name, ids)`` rows."""
    return sorted(zip(table.column("name").to_pylist(), table.column("input_ids").to_pylist()))


READERS = ["import_parquet", "Corpus.open", "read_file"]


def _read(reader: str, store: str, path: Path, out: Path | None, tmp_path: Path):
    if reader == "import_parquet":
        c = Corpus.open(genotok.import_parquet(path, tmp_path / "imp.gtokc"), verify=True)
        return sorted((n, c[i].tolist()) for i, n in enumerate(c.names))
    if reader == "Corpus.open":
        c = Corpus.open(out)
        c.verify(raise_on_error=True)
        return sorted((n, c[i].tolist()) for i, n in enumerate(c.names))
    from genotok.formats.stores import get_store
    sh = get_store(store).read_file(path, None)
    return sorted((n, sh.tokens[a:b].tolist()) for n, a, b in
                  zip(sh.records["names"], sh.offsets[:-1], sh.offsets[1:]))


@pytest.mark.parametrize("store,how,reader", [
    (("parquet", "arrow")[k % 2], h, READERS[(k + j) % 3]) for k, h in enumerate(META)
    for j in (0, 1)])
def test_tampered_genotok_metadata(store, how, reader, finished, tmp_path):
    src, table = _table_file(finished, store, tmp_path)
    bad = _meta_table(table, META[how])
    path = _write(bad, store, tmp_path / f"bad.{store}")
    out = _resigned_output(finished, store, bad, tmp_path) if reader == "Corpus.open" else None
    where = out / src.name if out else path
    whole = sorted(records(finished[store, 0]))
    want = whole if reader == "Corpus.open" else _as_read(table)
    right_or_refused(lambda: _read(reader, store, where, out, tmp_path), want, where)


def _ids_col(values, type_=None):
    return pa.array(values, type=type_)


COLUMNS = {
    "float-ids": lambda t: _ids_col([[1.0, 2.7]] * len(t), pa.list_(pa.float64())),
    "negative-ids": lambda t: _ids_col([[-1, 2]] * len(t), pa.list_(pa.int32())),
    "ids-past-vocab": lambda t: _ids_col([[2007]] * len(t), pa.list_(pa.int32())),
    "ids-int64-huge": lambda t: _ids_col([[2**40]] * len(t), pa.list_(pa.int64())),
    "ids-uint64-top": lambda t: _ids_col([[2**63 + 5]] * len(t), pa.list_(pa.uint64())),
    "nested-depth-2": lambda t: _ids_col([[[1], [2]]] * len(t), pa.list_(pa.list_(pa.int32()))),
    "flat-ints": lambda t: _ids_col([1] * len(t), pa.int32()),
    "null-row": lambda t: _ids_col([None] * len(t), pa.list_(pa.int32())),
    "null-id": lambda t: _ids_col([[1, None]] * len(t), pa.list_(pa.int32())),
    "string-ids": lambda t: _ids_col([["1"]] * len(t), pa.list_(pa.string())),
    "large-list": lambda t: _ids_col([[1, 2]] * len(t), pa.large_list(pa.int64())),
    "bool-ids": lambda t: _ids_col([[True]] * len(t), pa.list_(pa.bool_())),
    "dictionary": lambda t: pa.array([["a"]] * len(t)).cast(pa.list_(pa.string())),
}


def _want_ids(how: str, table) -> list | None:
    if how == "large-list":
        return sorted((n, [1, 2]) for n in table.column("name").to_pylist())
    return None  # every other column must be refused


@pytest.mark.parametrize("store,how,reader", [
    (s, h, READERS[(k + j) % 3]) for k, h in enumerate(COLUMNS)
    for j, s in enumerate(("parquet", "arrow"))])
def test_wrong_id_columns(store, how, reader, finished, tmp_path):
    src, table = _table_file(finished, store, tmp_path)
    bad = table.set_column(table.column_names.index("input_ids"), "input_ids", COLUMNS[how](table))
    path = _write(bad, store, tmp_path / f"bad.{store}")
    out = _resigned_output(finished, store, bad, tmp_path) if reader == "Corpus.open" else None
    where = out / src.name if out else path
    want = _want_ids(how, table)
    if want is not None and reader == "Corpus.open":
        pytest.skip("the manifest's token counts differ: refused by count, as it should")
    if want is None:
        refused_any(lambda: _read(reader, store, where, out, tmp_path), where)
    else:
        assert _read(reader, store, where, out, tmp_path) == want


OTHER = {
    "empty-file": lambda p, t, s: p.write_bytes(b""),
    "one-byte": lambda p, t, s: p.write_bytes(b"P"),
    "magic-only": lambda p, t, s: p.write_bytes(b"PAR1PAR1" if s == "parquet" else b"ARROW1\0\0"),
    "zero-rows": lambda p, t, s: _write(t.slice(0, 0), s, p),
    "no-ids-column": lambda p, t, s: _write(t.drop_columns(["input_ids"]), s, p),
    "names-ints": lambda p, t, s: _write(t.set_column(t.column_names.index("name"), "name",
                                                      pa.array(range(len(t)))), s, p),
    "values-short": lambda p, t, s: _write(t.append_column("values", pa.array(
        [[1.0]] * len(t), pa.list_(pa.float32()))), s, p),
    "values-strings": lambda p, t, s: _write(t.append_column("values", pa.array(
        [["a"]] * len(t))), s, p),
    "huge-footer-size": lambda p, t, s: _huge_footer(p, t, s),
    "directory": lambda p, t, s: p.mkdir(),
}


def _huge_footer(p: Path, t, s: str) -> None:
    _write(t, s, p)
    b = bytearray(p.read_bytes())
    if s == "parquet":  # the footer length before the closing magic: 2 GiB
        b[-8:-4] = (2**31 - 1).to_bytes(4, "little")
    else:  # an IPC file's footer size before its closing magic
        b[-10:-6] = (2**31 - 1).to_bytes(4, "little")
    p.write_bytes(bytes(b))


@pytest.mark.parametrize("store,how,reader", [
    (s, h, ("import_parquet", "read_file")[(k + j) % 2]) for k, h in enumerate(OTHER)
    for j, s in enumerate(("parquet", "arrow"))])
def test_other_damaged_tables(store, how, reader, finished, tmp_path):
    _, table = _table_file(finished, store, tmp_path)
    path = tmp_path / f"bad.{store}"
    OTHER[how](path, table, store)
    want = [] if how == "zero-rows" else None
    if want is None:
        refused_any(lambda: _read(reader, store, path, None, tmp_path), path)
    else:
        assert _read(reader, store, path, None, tmp_path) == want


# ------------------------------------------------------ S3: tampered JSON Lines records
JSONL = {
    "float-id": '{"input_ids": [1.0, 2]}', "float-frac": '{"input_ids": [1.5]}',
    "bool": '{"input_ids": [true]}', "huge": '{"input_ids": [1180591620717411303424]}',
    "negative": '{"input_ids": [-1]}', "past-vocab": '{"input_ids": [2007]}',
    "nested": '{"input_ids": [[1]]}', "null-id": '{"input_ids": [null]}',
    "ids-null": '{"input_ids": null}', "name-int": '{"input_ids": [1], "name": 3}',
    "values-short": '{"input_ids": [1, 2], "values": [1.0]}',
    "values-text": '{"input_ids": [1], "values": ["a"]}', "exp-id": '{"input_ids": [1e2]}',
    "meta-deep": '{"input_ids": [1], "m": ' + "[" * 50000 + "]" * 50000 + "}",
    "empty-line": "", "int-5000-digits": '{"input_ids": [' + "9" * 5000 + "]}",
    "not-utf8": "\udcff", "array": "[1, 2]",
}


@pytest.mark.parametrize("how,reader", [(h, ("read_file", "Corpus.open")[k % 2])
                                        for k, h in enumerate(JSONL)])
def test_tampered_jsonl_records(how, reader, finished, tmp_path):
    from genotok.formats.jsonl import JsonlStore

    line = JSONL[how]
    raw = line.encode("utf-8", "surrogateescape") + b"\n"
    if reader == "read_file":
        p = tmp_path / "bad.jsonl"
        p.write_bytes(raw)
        refused_any(lambda: JsonlStore.read_file(p, {"fingerprint": "fp", "vocab_size": 2007}), p)
        return
    out = copy(finished["jsonl", 0], tmp_path)
    m = json.loads((out / "manifest.json").read_text())
    e = m["shards"][0]
    p = out / e["path"]
    p.write_bytes(p.read_bytes() + raw)  # one more record, the manifest re-signed to match
    e["bytes"], e["digest"] = p.stat().st_size, file_digest(p)
    e["n_records"] += 1
    m["n_records"] += 1
    m["digest"] = store_digest(m)
    (out / "manifest.json").write_text(json.dumps(m))
    refused_any(lambda: records(out), p)
