"""The adversarial corpus campaigns: byte flips, crafted offsets, crafted ``.gtok`` files.

Imported by tests/formats/test_corpus_reader.py (a fast sample in-process) and run as a script
in a fresh interpreter (optionally with ``NUMBA_BOUNDSCHECK=1`` and no numba cache, so an
out-of-bounds access in a kernel raises instead of reading garbage):

    python tests/formats/_corpus_campaign.py CASES SEED

prints one JSON line of counts: ``cases``, ``refused`` (a GenotokError on open),
``accepted`` (opened, every read agreed with the oracle), ``silent`` (a damaged file that
open *and* verify accepted), ``wrong`` (a read that disagreed with the oracle) and
``crashes`` (any exception that is not a GenotokError), with the first few failures.
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

if __name__ == "__main__":  # run as a script: the worktree's genotok, like the tests
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from genotok import Corpus, CorpusWriter, GenotokError, GtokFormatError, write_manifest
from genotok.formats.corpus.layout import PREAMBLE, _digest
from genotok.formats.gtok import read_gtok

# ------------------------------------------------------------------ building and re-signing


def make_corpus(path: Path, seed: int = 0, n: int = 12, values: bool = True) -> list[list[int]]:
    """A small corpus with names, a metadata column and (optionally) values; its rows."""
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, 300, rng.integers(0, 6)).tolist() for _ in range(n)]
    flat = sum(len(r) for r in rows)
    with CorpusWriter(path, vocab_size=300, fingerprint="fp", metadata_columns=["k"],
                      values_dtype="float32" if values else None) as w:
        w.append_batch(rows, names=[f"r{i}" for i in range(n)], meta={"k": list(range(n))},
                       values=np.arange(flat, dtype=np.float32) if values else None)
    return rows


def fields(raw: bytes) -> dict:
    names = ("magic", "major", "minor", "width", "vcode", "res", "n", "t", "tok_off", "val_off",
             "off_off", "json_off", "json_len", "rec_off", "rec_len", "head_sum")
    return dict(zip(names, PREAMBLE.unpack(raw[:PREAMBLE.size])))


def resign(raw: bytes, *, offsets: np.ndarray | None = None, header=None) -> bytes:
    """Rewrite a corpus as an adversary who recomputes digests would: new offsets and/or a
    header changed by ``header(dict)``, with the offsets checksum and header digest redone."""
    f = fields(raw)
    b = bytearray(raw)
    h = json.loads(raw[f["json_off"]:f["json_off"] + f["json_len"]])
    algo = h["checksum"]
    if offsets is not None:
        ob = np.asarray(offsets, dtype="<i8").tobytes()
        assert len(ob) == (f["n"] + 1) * 8
        b[f["off_off"]:f["off_off"] + len(ob)] = ob
        h["checksums"]["offsets"] = _digest(ob, algo).hex()
    if header is not None:
        header(h)
    jb = json.dumps(h, separators=(",", ":")).encode()
    b = b[:f["json_off"]] + jb
    pre = PREAMBLE.pack(f["magic"], f["major"], f["minor"], f["width"], f["vcode"], f["res"],
                        f["n"], f["t"], f["tok_off"], f["val_off"], f["off_off"], f["json_off"],
                        len(jb), f["rec_off"], f["rec_len"], _digest(jb, algo))
    b[:PREAMBLE.size] = pre
    return bytes(b)


def oracle(raw: bytes) -> tuple[list[int], list[int], list[float] | None]:
    """Decode tokens, offsets and values with int.from_bytes, as docs/formats.md describes."""
    f = fields(raw)
    le = lambda a, k: int.from_bytes(raw[a:a + k], "little", signed=k == 8)
    w = f["width"]
    toks = [le(f["tok_off"] + w * i, w) for i in range(f["t"])]
    offs = [le(f["off_off"] + 8 * i, 8) for i in range(f["n"] + 1)]
    vals = None
    if f["vcode"] == 1:
        vals = np.frombuffer(raw, "<f4", f["t"], f["val_off"]).tolist()
    return toks, offs, vals


# ------------------------------------------------------------------ reading everything


class Wrong(AssertionError):
    """A read returned something other than what the file's bytes say."""


def _row(toks, offs, i):
    a, b = offs[i], offs[i + 1]
    if not 0 <= a <= b <= len(toks):
        return None  # an invalid row: a read must refuse it
    return toks[a:b]


def _eq(got, want) -> bool:
    return np.array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64), equal_nan=True)


def read_everything(c: Corpus, raw: bytes) -> None:
    """Every read path; raises Wrong when one disagrees with the oracle, GenotokError when refused.

    A read that returns must return exactly the rows the file's offsets and tokens say.
    """
    toks, offs, vals = oracle(raw)
    n = len(c)

    def same(got, i):
        want = _row(toks, offs, i)
        if want is None or list(np.asarray(got).tolist()) != want:
            raise Wrong(f"record {i}: got {np.asarray(got).tolist()[:8]}, the file says {want}")

    for i in range(n):
        same(c[i], i)
        if c.has_values and not _eq(c.values(i), vals[offs[i]:offs[i + 1]]):
            raise Wrong(f"values of record {i}")
    for i, r in enumerate(c):
        same(r, i)
    perm = np.random.default_rng(n).permutation(n)
    batch = c.get_batch(perm, values=c.has_values)
    for k, i in enumerate(perm):
        same(batch[k], int(i))
    if c.has_values and not _eq(batch.values, [x for i in perm for x in vals[offs[i]:offs[i + 1]]]):
        raise Wrong("get_batch values")
    k = 0
    for b in c.iter_batches(3, values=c.has_values):
        for r in b:
            same(r, k)
            k += 1
    whole = c.to_ragged(values=c.has_values)
    for i in range(n):
        same(whole[i], i)
    if c.lengths.tolist() != [offs[i + 1] - offs[i] for i in range(n)]:
        raise Wrong("lengths")
    for i, r in enumerate(c[1:n - 1]):
        same(r, i + 1)
    for k, r in enumerate(c[::2]):
        same(r, 2 * k)
    try:  # names and metadata are parsed and type-checked on first use (not on open)
        c.names  # noqa: B018
        c.meta  # noqa: B018
    except GtokFormatError as exc:
        if "records section" not in str(exc):
            raise


# ------------------------------------------------------------------ the campaigns


class Counts(dict):
    def __init__(self):
        super().__init__(cases=0, refused=0, accepted=0, silent=0, wrong=0, crashes=0, failures=[])

    def fail(self, kind: str, what: str) -> None:
        self[kind] += 1
        if len(self["failures"]) < 10:
            self["failures"].append(f"{kind}: {what}")


def _one(counts: Counts, path: Path, raw: bytes, label: str, *, damaged: bool,
         original_lengths: list[int] | None) -> bool:
    """Open a (crafted) file safely and trusted, read everything, classify; True when the
    safe open accepted the file."""
    path.write_bytes(raw)
    counts["cases"] += 1
    accepted = False
    for trusted in (False, True):
        try:
            c = Corpus.open(path, trusted=trusted)
        except GenotokError:
            if not trusted:
                counts["refused"] += 1
            continue
        except Exception as exc:  # noqa: BLE001 - the campaign counts every escape
            counts.fail("crashes", f"{label} open(trusted={trusted}): {type(exc).__name__}: {exc}")
            continue
        try:
            read_everything(c, raw)
            if not trusted:
                if original_lengths is not None and c.lengths.tolist() != original_lengths:
                    counts.fail("wrong", f"{label}: record boundaries moved and open accepted it")
                    continue
                counts["accepted"] += 1
                accepted = True
                if damaged and not c.verify():
                    counts.fail("silent", f"{label}: open and verify accepted a damaged file")
        except Wrong as exc:
            counts.fail("wrong", f"{label} trusted={trusted}: {exc}")
        except GenotokError as exc:
            if not trusted:  # a safe open promised these reads work
                counts.fail("wrong", f"{label}: a read failed after a safe open: {exc}")
        except Exception as exc:  # noqa: BLE001
            counts.fail("crashes", f"{label} trusted={trusted}: {type(exc).__name__}: {exc}")
        del c
    return accepted


def flips(counts: Counts, tmp: Path, n_cases: int, seed: int) -> None:
    """Flip 1-3 random bits of a small corpus; every flip must be refused or caught by verify."""
    rng = np.random.default_rng(seed)
    src = tmp / "src.gtokc"
    rows = make_corpus(src, seed)
    raw = src.read_bytes()
    lengths = [len(r) for r in rows]
    for case in range(n_cases):
        b = bytearray(raw)
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(0, len(b)))
            if pos in (10, 11):  # the minor version: any minor of the major is read
                continue
            b[pos] ^= 1 << int(rng.integers(0, 8))
        _one(counts, tmp / "flip.gtokc", bytes(b), f"flip case {case}", damaged=bytes(b) != raw,
             original_lengths=lengths)


def crafted_offsets(counts: Counts, tmp: Path, n_cases: int, seed: int) -> None:
    """Offsets an adversary chooses (checksums recomputed): refused unless they are valid."""
    rng = np.random.default_rng(seed + 1)
    src = tmp / "src2.gtokc"
    make_corpus(src, seed + 1)
    raw = src.read_bytes()
    f = fields(raw)
    n, t = f["n"], f["t"]
    good = np.frombuffer(raw, "<i8", n + 1, f["off_off"]).copy()
    big = np.iinfo(np.int64)
    for case in range(n_cases):
        o = good.copy()
        kind = case % 7
        k = int(rng.integers(0, n + 1))
        if kind == 0:
            o[k] = rng.integers(big.min, big.max)
        elif kind == 1:
            o[k] += int(rng.integers(-3, 4))
        elif kind == 2:
            o = rng.integers(-5, t + 5, n + 1)
        elif kind == 3:
            o = np.sort(rng.integers(0, t + 1, n + 1))
            o[0], o[-1] = 0, t
        elif kind == 4:
            o[k] = rng.choice([-1, t + 1, 2**40, -(2**40), big.max, big.min])
        elif kind == 5:
            j = int(rng.integers(0, n + 1))
            o[k], o[j] = o[j], o[k]
        else:
            o[1:-1] = rng.integers(0, t + 1, n - 1)
        valid = o[0] == 0 and o[-1] == t and bool(np.all(np.diff(o) >= 0))
        if _one(counts, tmp / "offs.gtokc", resign(raw, offsets=o), f"offsets case {case} ({kind})",
                damaged=False, original_lengths=None) and not valid:
            counts.fail("silent", f"offsets case {case}: invalid offsets {o.tolist()} accepted")


def crafted_gtok(counts: Counts, tmp: Path, n_cases: int, seed: int) -> None:
    """Random ``.gtok`` files: refused, or read exactly as the gtars layout says."""
    rng = np.random.default_rng(seed + 2)
    for case in range(n_cases):
        head = rng.choice([b"GTOK", b"GTOX", b"", b"GT"])
        flag = bytes([int(rng.choice([0, 1, 2, 3, 255]))]) if rng.random() < 0.95 else b""
        body = rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8).tobytes()
        data = bytes(head) + flag + body
        p = tmp / "x.gtok"
        p.write_bytes(data)
        counts["cases"] += 1
        want = None
        if data[:4] == b"GTOK" and len(data) >= 5 and data[4] in (1, 2):
            w = 2 if data[4] == 1 else 4
            if (len(data) - 5) % w == 0:
                want = [int.from_bytes(data[i:i + w], "little") for i in range(5, len(data), w)]
        for how in ("mmap", "read"):
            try:
                got = (read_gtok(p) if how == "mmap" else read_gtok(p, mmap=False)).tolist()
            except GtokFormatError:
                if want is not None:
                    counts.fail("wrong", f"gtok case {case}: a valid file was refused")
                else:
                    counts["refused"] += 1
                continue
            except Exception as exc:  # noqa: BLE001
                counts.fail("crashes", f"gtok case {case}: {type(exc).__name__}: {exc}")
                continue
            if got != want:
                counts.fail("wrong" if want is not None else "silent",
                            f"gtok case {case}: read {got[:6]}, the layout says {want}")
            else:
                counts["accepted"] += 1


def sharded(counts: Counts, tmp: Path, n_cases: int, seed: int) -> None:
    """Byte flips in one shard of a two-shard corpus (reads cross the shards)."""
    rng = np.random.default_rng(seed + 3)
    d = tmp / "sharded"
    d.mkdir(exist_ok=True)
    rows_a = make_corpus(d / "a.gtokc", seed, n=5)
    rows_b = make_corpus(d / "b.gtokc", seed + 7, n=6)
    write_manifest([d / "a.gtokc", d / "b.gtokc"], d)
    lengths = [len(r) for r in rows_a + rows_b]
    raw_b = (d / "b.gtokc").read_bytes()
    for case in range(n_cases):
        b = bytearray(raw_b)
        pos = int(rng.integers(0, len(b)))
        if pos in (10, 11):
            continue
        b[pos] ^= 1 << int(rng.integers(0, 8))
        (d / "b.gtokc").write_bytes(bytes(b))
        counts["cases"] += 1
        try:
            c = Corpus.open(d)
        except GenotokError:
            counts["refused"] += 1
            continue
        except Exception as exc:  # noqa: BLE001
            counts.fail("crashes", f"shard case {case}: {type(exc).__name__}: {exc}")
            continue
        try:
            got = c.get_batch(np.arange(len(c))[::-1])
            if c.lengths.tolist() != lengths or got.lengths.tolist() != lengths[::-1]:
                counts.fail("wrong", f"shard case {case}: record boundaries moved")
            elif not c.verify():
                counts.fail("silent", f"shard case {case}: a damaged shard passed verify")
            else:
                counts["accepted"] += 1
        except GenotokError:
            counts.fail("wrong", f"shard case {case}: a read failed after a safe open")
        except Exception as exc:  # noqa: BLE001
            counts.fail("crashes", f"shard case {case}: {type(exc).__name__}: {exc}")
    (d / "b.gtokc").write_bytes(raw_b)


def run(n_cases: int, seed: int) -> Counts:
    counts = Counts()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        flips(counts, tmp, n_cases, seed)
        crafted_offsets(counts, tmp, n_cases, seed)
        crafted_gtok(counts, tmp, n_cases, seed)
        sharded(counts, tmp, max(1, n_cases // 4), seed)
    return counts


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


if __name__ == "__main__":
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print(json.dumps(run(cases, seed)))
