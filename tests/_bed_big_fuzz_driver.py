"""Run by tests/test_bed_big_fuzz.py in a fresh interpreter (bounds-checked kernels with
``NUMBA_BOUNDSCHECK=1 GENOTOK_NO_CACHE=1``, and the kernels users run): the BED read paths at
sizes ``_bed_fuzz_driver.py`` (inputs of at most 200 bytes) never reaches.

Files of thousands to a few hundred thousand bytes, built from adversarial line mixes: runs of
blank lines of about 4096 and its multiples (the parser's newline block), lines padded so their
newline lands on an 8- or 64-byte word edge or at the end of the file (with and without a final
newline), CRLF, very long lines, comment/track/browser/header lines, hundreds of chromosome
names (the name table grows), unsorted, duplicate, nested and touching intervals; written plain,
gzipped, as gzip members cut anywhere and as BGZF, read from the file or through a pipe. Each is
read with the block reader's sizes shrunk (blocks of a few KiB,
parallel chunks from a few KiB on up to four numba threads, newline blocks of 1 to 4097) so the
block refills, the carried lines, the chunk joins and the capacity guesses (``bound``, the
outputs sized from the first block) all run, and compared with ``tests/naive_regions.py``;
clean files are tokenized and compared with ``tests/naive_tokenizer.py``, through the full path
and the small-input path (both forms, and ``bed._cold_read``), and by ``pretokenize``; universes
loaded from files of up to 200k lines are checked id by id (``line_ids``, ``duplicate_of``).
The text is also parsed whole against a guard page (tests/_guard.py: the word and vector loads
are intrinsics NUMBA_BOUNDSCHECK does not see). Damaged files (binary bytes, NUL, control bytes
in any column, huge or negative integers, end < start, missing fields, mixed separators, empty
or non-UTF-8 names, random edits of small files) must raise a ``GenotokError`` naming the file
and the oracle's line, and the small path must leave them to it; damaged gzip and BGZF streams
(cut, flipped bits, bytes after the end) raise one or read as the oracle's records. STATS,
printed at the end, counts what the cases reached.

Found by it: the small path's control-byte and zlib.error holes, and a BGZF file cut at a block's
end reading silently as its whole blocks (it warns now: no end-of-file block).

    python tests/_bed_big_fuzz_driver.py N [SEED]
"""

from __future__ import annotations

import gzip
import os
import random
import sys
import tempfile
import threading
import traceback
import warnings
from pathlib import Path

import numpy as np

from genotok import GenotokError, RegionSet, Tokenizer, TokenizerSettings, Universe
from genotok import _io, _small
from genotok import bed as _bed
from genotok.bgzf import write_bgzf
from genotok.kernels import parse as _parse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests import naive_regions as naive  # noqa: E402
from tests import naive_tokenizer  # noqa: E402
from tests._guard import guarded  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 40
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 0
TMP = Path(tempfile.mkdtemp())
NEWLINE_BLOCKS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 4095, 4096, 4097]
# (block bytes of the reader, chunking floor of a parallel parse): small enough that a file of
# a few KiB is many blocks of several chunks
READER = [(1 << 30, 1 << 30), (4096, 1 << 30), (4096, 2048), (1 << 14, 4096), (777, 256),
          (1 << 16, 1 << 12), (1 << 30, 4096)]
EDITS = [b"\t", b" ", b"\r", b"\n", b"\r\n", b"#", b"\x00", b"\x01", b"\x7f", b"\xff", b"-",
         b"+", b"0", b"9" * 16, b":", b"track", b"browser", b"track\t", _io.BOM, b"\xc3\xa9", b""]
STATS: dict = {}  # what the cases reached (printed: a campaign that reaches nothing shows)
DAMAGE = ["nul", "ctrl", "ctrl_tail", "huge", "negative", "reversed", "one_field", "two_fields",
          "mixed", "empty_name", "utf8", "bad_start", "bad_end", "late_header", "plus_only"]


def _names(rng: random.Random) -> list[str]:
    k = rng.choice([1, 3, 30, 700])
    pool = [f"chr{i}" for i in range(1, 23)] + ["chrX", "chrY", "chrM"]
    pool += [f"chrUn_KI{i:06d}v1" for i in range(k)] + ["c", "x" * 40, "chr1_random", "ñame"]
    return rng.sample(pool, min(len(pool), k + 2))


def _data(rng: random.Random, names: list[str], prev, big: bool = True) -> tuple[str, int, int]:
    """A record near the previous one (nested, touching, duplicate) or anywhere."""
    r = rng.random()
    if prev is not None and r < 0.15:
        return prev  # duplicate
    if prev is not None and r < 0.3:
        c, s, e = prev
        return c, e, e + rng.randint(0, 50)  # touching
    if prev is not None and r < 0.45:
        c, s, e = prev
        a = rng.randint(s, e)
        return c, a, rng.randint(a, e)  # nested
    s = rng.choice([0, 1, rng.randint(0, 1000), rng.randint(0, 10**9)]
                   + ([10**15 - 1, 2**40] if big else []))
    return rng.choice(names), s, s + rng.choice([0, 1, rng.randint(0, 500), rng.randint(0, 10**6)])


def _fmt(rng: random.Random, rec) -> bytes:
    c, s, e = rec
    style = rng.random()
    if style < 0.7:
        line = f"{c}\t{s}\t{e}"
    elif style < 0.8:
        line = f"{c} {s}{' ' * rng.randint(1, 3)}{e}"
    elif style < 0.85:
        line = f"{c}\t+{s}\t{e}"
    else:
        line = f"{c}\t{s}\t{e}\t{rng.choice(['peak', '.', 'x' * rng.randint(1, 300)])}\t0\t+"
    return line.encode()


def _filler(rng: random.Random) -> bytes:
    """A line that is no record: comment, track, browser, blank, separators only."""
    return rng.choice([b"#", b"# comment", b"track name=x", b"browser position chr1", b"",
                       b"   ", b"\t", b"\t \t", b"#" + b"z" * rng.randint(0, 200), b"track",
                       b"browser"])


def _pad_to(out: bytearray, rng: random.Random, modulus: int) -> bytes:
    """A comment whose newline lands on the last byte of a ``modulus``-byte word."""
    at = len(out) + 1  # after '#'
    need = (modulus - 1 - at) % modulus
    return b"#" + b"p" * need


def _damaged(rng: random.Random, kind: str, rec) -> bytes:
    c, s, e = rec
    return {
        "nul": f"{c}\t{s}\t{e}\x00x".encode(),
        "ctrl": f"{c}\t{s}\x01\t{e}".encode(),
        "ctrl_tail": f"{c}\t{s}\t{e}\tpeak".encode() + rng.choice([b"\x01", b"\x0b", b"\x1f"]),
        "huge": f"{c}\t{s}\t{'9' * rng.choice([19, 20, 40])}".encode(),
        "negative": f"{c}\t-{s + 1}\t{e}".encode(),
        "reversed": f"{c}\t{e + 5}\t{e}".encode(),
        "one_field": c.encode(),
        "two_fields": f"{c}\t{s}".encode(),
        "mixed": f"{c}\t{s} {e}".encode(),
        "empty_name": f"\t{s}\t{e}".encode(),
        "utf8": b"chr\xff\xfe\t1\t2",
        "bad_start": f"{c}\tx{s}\t{e}".encode(),
        "bad_end": f"{c}\t{s}\t{e}y".encode(),
        "late_header": b"chrom\tstart\tend",
        "plus_only": f"{c}\t+\t{e}".encode(),
    }[kind]


def make_text(rng: random.Random, target: int, damage: str | None = None) -> bytes:
    """BED text of about ``target`` bytes from an adversarial mix of lines."""
    names = _names(rng)
    eol = rng.choice([b"\n", b"\n", b"\r\n", None])  # None: each line picks
    out = bytearray()
    if rng.random() < 0.1:
        out += _io.BOM
    if rng.random() < 0.3:
        out += rng.choice([b"chrom\tstart\tend", b"#h\ntrack x\nchrom start end"]) + b"\n"
    if rng.random() < 0.15:  # a sparse head (the outputs, sized from the first block's
        out += rng.choice([b"#" + b"s" * rng.randint(3000, 40000) + b"\n",  # records per
                           b"\n" * rng.randint(3000, 40000)])  # byte, must grow for the rest)
    prev = None
    lines = out.count(b"\n")
    damage_at = rng.randint(0, max(1, target // 30)) if damage else -1
    while len(out) < target:
        r = rng.random()
        if 0 <= damage_at <= lines:
            line = _damaged(rng, damage, prev or _data(rng, names, None))
            damage_at = -1
        elif r < 0.03:  # a run of empty lines about a newline block long
            k = rng.choice([1, 2, 3]) * 4096 + rng.randint(-9, 9)
            out += b"\n" * k
            lines += k
            continue
        elif r < 0.06:
            out += (b"\r\n" if rng.random() < 0.5 else b"\n") * rng.randint(1, 70)
            lines += 1  # (counted only for damage_at's sake)
            continue
        elif r < 0.1:
            line = _pad_to(out, rng, rng.choice([8, 64, 4096]))
        elif r < 0.2:
            line = _filler(rng)
        elif r < 0.205:  # a very long line
            line = rng.choice([b"#", b"chr1\t1\t2\t"]) + b"L" * rng.randint(5000, 70000)
        else:
            prev = _data(rng, names, prev if rng.random() < 0.8 else None)
            line = _fmt(rng, prev)
        out += line + (eol if eol is not None else rng.choice([b"\n", b"\r\n"]))
        lines += 1
    if damage_at >= 0:  # the damage at the end, maybe without its newline
        out += _damaged(rng, damage, prev or _data(rng, names, None)) + b"\n"
    tail = rng.random()
    if tail < 0.3 and out.endswith(b"\n"):
        out = out[:-1]  # no final newline
        if out.endswith(b"\r"):
            out = out[:-1]
    elif tail < 0.45:  # the last newline at a word's last byte, or just after one
        out += _pad_to(out, rng, rng.choice([8, 64])) + rng.choice([b"\n", b"\n\n", b""])
    return bytes(out)


def write(data: bytes, kind: str, rng: random.Random) -> Path:
    p = TMP / f"f.{kind}.bed{'.gz' if kind != 'plain' else ''}"
    if kind == "plain":
        p.write_bytes(data)
    elif kind == "gzip":
        p.write_bytes(gzip.compress(data, compresslevel=1))
    elif kind == "members":  # gzip members cut anywhere, even inside a line
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(1, 5))))
        p.write_bytes(b"".join(gzip.compress(data[a:b], compresslevel=1)
                               for a, b in zip([0, *cuts], [*cuts, len(data)])))
    else:
        write_bgzf(p, data, block=rng.choice([512, 4000, 0xFF00]))
    return p


def _records(rs: RegionSet) -> list:
    names = rs.chrom_names
    return list(zip([names[c] for c in rs.codes.tolist()], rs.starts.tolist(), rs.ends.tolist()))


def check_guarded(data: bytes, expected) -> None:
    """The whole-buffer parse (chunks on threads, as a block of a file is) of text that ends
    or starts at a guard page, against the oracle; the line scans and the small-input scan too."""
    for at_end in (True, False):
        buf = guarded(data, at_end)
        _parse.bound(buf)
        _parse.scan(buf)
        _parse.count_lines(buf)
        try:
            names, codes, starts, ends = _bed._read_buffer(buf, "guarded.bed")
        except GenotokError as exc:
            assert isinstance(expected, naive.NaiveError), (exc, "the oracle parses it")
            assert exc.line == expected.line, (exc, expected)
        else:
            assert not isinstance(expected, naive.NaiveError), f"no error; oracle: {expected}"
            got = list(zip([names[c] for c in codes.tolist()], starts.tolist(), ends.tolist()))
            assert got == expected, "guarded buffer"
        if len(data) <= _small.MAX_BYTES:
            _small._kernels().scan(buf, 0)
    _count("guarded")


def _count(what: str) -> None:
    STATS[what] = STATS.get(what, 0) + 1


def _expected(data: bytes):
    try:
        return naive.parse(data)
    except naive.NaiveError as exc:
        return exc


def _from_pipe(p: Path) -> tuple[RegionSet, str]:
    """The file read through an anonymous pipe (``<(cat f.bed)``: no size, no seeking)."""
    r, w = os.pipe()

    def feed() -> None:
        try:
            with open(w, "wb") as fh:
                fh.write(p.read_bytes())
        except BrokenPipeError:  # the reader stopped at an error
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        return RegionSet.from_bed(f"/dev/fd/{r}")
    finally:
        os.close(r)
        t.join()


def check_parse(data: bytes, p: Path, expected, rng: random.Random,
                pipe: bool = False) -> list | None:
    """The file read as the public reader reads it (or through a pipe), with the reader's
    sizes shrunk, against the oracle: its records, or a GenotokError naming the file and the
    oracle's line."""
    block_bytes, floor = rng.choice(READER)
    _io.BLOCK_BYTES, _bed.PARALLEL_BLOCK_BYTES, _bed.PARALLEL_PARSE_BYTES = (
        block_bytes, floor, floor)
    _io._CARRY_ROOM = rng.choice([1, 64, 1 << 16])
    _io._INFLATE_PIECE = rng.choice([1000, 1 << 20])
    _parse.BLOCK = rng.choice(NEWLINE_BLOCKS)
    blocks = _io.line_blocks(p)
    n_blocks = sum(1 for _ in blocks)
    _count("blocks>1" if n_blocks > 1 else "one block")
    try:
        rs = _from_pipe(p) if pipe else RegionSet.from_bed(p)
    except GenotokError as exc:
        _count(f"error {getattr(expected, 'kind', 'none')}")
        assert isinstance(expected, naive.NaiveError), (exc, "the oracle parses it")
        assert getattr(exc, "line", None) == expected.line, (exc, expected)
        assert ("/dev/fd/" if pipe else str(p)) in str(exc), exc
        return None
    assert not isinstance(expected, naive.NaiveError), f"no error; the oracle: {expected}"
    got = _records(rs)
    if got != expected:
        first = next(i for i, (a, b) in enumerate(zip(got + [None] * len(expected),
                                                      expected + [None] * len(got))) if a != b)
        raise AssertionError(f"{len(got)} records, the oracle {len(expected)}; first "
                             f"difference at record {first}: {got[first:first + 2]} vs "
                             f"{expected[first:first + 2]}")
    text = np.frombuffer(data[3:] if data.startswith(_io.BOM) else data, np.uint8)
    assert len(rs) <= _parse.bound(text)[0]
    assert rs.codes.flags.c_contiguous and rs.starts.dtype == np.int64
    return got


def check_tokens(p: Path, records: list, universe: list, tok: Tokenizer) -> None:
    """Token ids of the file (gtars order: sorted by name bytes, start) against the oracle, the
    full path and, for a short file, the small-input path in both forms."""
    if not records or len(records) > 20000:
        return
    want = naive_tokenizer.tokenize(universe, records, from_file=True)
    got = tok.encode(p)
    _count("tokens")
    assert got.tolist() == want, ("encode", len(records))
    for form in (_small._python, _small._compiled):
        ids = form(tok, str(p))
        assert ids is None or ids.tolist() == want, (form.__name__, len(records))
        _count(f"{form.__name__} {'declined' if ids is None else 'taken'}")
    cold = _bed._cold_read(str(p))
    if cold is not None:
        names, codes, starts, ends = cold
        assert list(zip([names[c] for c in codes.tolist()], starts.tolist(),
                        ends.tolist())) == records, "_cold_read"


def check_universe(data: bytes, p: Path, expected, rng: random.Random) -> None:
    """A big file as a universe: the ids of its distinct regions in order of first appearance
    (``unique``) or its lines (``lines``), and a few queries against the oracle."""
    if isinstance(expected, naive.NaiveError) or not expected:
        return
    dups = rng.choice(["unique", "lines"])
    _count("universe")
    u = Universe.from_bed(p, duplicates=dups)
    rows = list(dict.fromkeys(expected)) if dups == "unique" else expected
    assert u.n_regions == len(rows), (u.n_regions, len(rows))
    assert u.n_duplicates == len(expected) - len(set(expected))
    toks = u.convert_ids_to_tokens(np.arange(u.n_regions))
    assert toks == [f"{c}:{s}-{e}" for c, s, e in rows], "universe ids"
    first = {}
    for i, r in enumerate(expected):
        first.setdefault(r, i)
    if dups == "unique":
        index = {r: k for k, r in enumerate(rows)}
        assert u.line_ids.tolist() == [index[r] for r in expected], "line ids"
    else:
        assert u.duplicate_of.tolist() == [first[r] for r in expected], "duplicate_of"
    if len(expected) > 30000 or any(e < s for _, s, e in expected):
        return  # (lines with end < start are inert ids: the oracle would hit them)
    queries = [rng.choice(expected) for _ in range(8)]
    queries += [(c, max(0, s - 3), e + 3) for c, s, e in queries[:4]]
    queries += [(c, s, s) for c, s, e in queries[:2]]
    want = naive_tokenizer.tokenize(expected, queries, order="input", duplicates=dups)
    tok = Tokenizer(u, settings=TokenizerSettings(order="input"))
    got = tok.encode(RegionSet.from_tuples(queries))
    assert got.tolist() == want, "universe queries"


def check_pretokenize(data: bytes, expected, universe: list, tok: Tokenizer,
                      rng: random.Random) -> None:
    """The pipeline's parse (files in threads, each in blocks of chunks): a corpus record per
    clean file with the oracle's tokens; a damaged file skipped, the others kept."""
    from genotok import Corpus, pretokenize

    if isinstance(expected, naive.NaiveError) or len(expected) > 20000:
        return
    folder = TMP / f"in{rng.randint(0, 1 << 30)}"
    folder.mkdir()
    for kind in ("plain", "gzip", "bgzf"):
        write(data, kind, rng).rename(folder / f"{kind}.bed{'.gz' if kind != 'plain' else ''}")
    (folder / "bad.bed").write_bytes(data + b"\nchr1\t5\n")
    run = pretokenize(sorted(folder.iterdir()), tok, TMP / f"out{folder.name}",
                      progress=False, on_error="skip", n_threads=rng.choice([1, 2, 4]))
    corpus = Corpus.open(run.out)
    want = naive_tokenizer.tokenize(universe, expected, from_file=True)
    assert sorted(corpus.names) == ["bgzf", "gzip", "plain"], corpus.names
    for i in range(len(corpus)):
        assert np.asarray(corpus[i]).tolist() == want, corpus.names[i]
    _count("pretokenize")


def check_damaged_gzip(data: bytes, expected, rng: random.Random, universe=None) -> None:
    """A big gzip or BGZF file cut short, with flipped bytes, or with bytes after its end,
    read in blocks (the next inflated on a thread): a GenotokError naming the file, or (bytes
    flipped where they change nothing, a tail the reader ignores) the oracle's records;
    never a partial set, a crash or another exception."""
    p = write(data, rng.choice(["gzip", "bgzf"]), rng)
    raw = bytearray(p.read_bytes())
    how = rng.choice(["cut", "flip", "tail"])
    if how == "cut":
        raw = raw[:rng.randint(2, len(raw) - 1)]
    elif how == "flip":
        for _ in range(rng.randint(1, 3)):
            raw[rng.randrange(2, len(raw))] ^= 1 << rng.randrange(8)
    else:
        raw += rng.choice([b"\0" * rng.randint(1, 600), b"garbage\n", b"\x1f\x8b\x08"])
    p.write_bytes(bytes(raw))
    _io.BLOCK_BYTES = rng.choice([1024, 4096, 1 << 16])
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            rs = RegionSet.from_bed(p)
    except GenotokError as exc:
        assert str(p) in str(exc), exc
        _count(f"damaged gzip {how}: error")
        if universe is not None:  # the small path (Python's gzip) must leave it to the error
            tok = Tokenizer(RegionSet.from_tuples(universe))
            assert _small._python(tok, str(p)) is None, "small path read a damaged gzip"
            assert _small._compiled(tok, str(p)) is None, "small kernel read a damaged gzip"
        return
    if universe is not None:
        tok = Tokenizer(RegionSet.from_tuples(universe))
        want = naive_tokenizer.tokenize(universe, _records(rs), from_file=True)
        for form in (_small._python, _small._compiled):
            ids = form(tok, str(p))
            assert ids is None or ids.tolist() == want, (form.__name__, "damaged gzip")
    if how == "cut":  # only a BGZF file cut at a block's end, whose blocks are whole gzip
        # members: it reads as the text of those blocks, with a warning (no end-of-file block)
        assert _records(rs) == naive.parse(gzip.decompress(bytes(raw))), "a cut stream parsed"
        assert any("without its end-of-file block" in str(w.message) for w in seen), \
            "a BGZF file cut at a block's end read without a warning"
        _count("damaged gzip cut at a member's end: parsed")
        return
    assert _records(rs) == expected, f"damaged gzip ({how}) parsed to other records"
    _count(f"damaged gzip {how}: parsed")


def big_universe_case(k: int) -> None:
    """A universe file of 30k-200k lines, unsorted, most of them repeats of others, over
    hundreds of chromosomes, plain or gzipped: ids, line ids and duplicates as the oracle."""
    rng = random.Random(SEED * 1_000_003 + 7 * k + 3)
    names = [f"chr{i}" for i in range(rng.choice([1, 30, 900]))]
    pool = [(rng.choice(names), s, s + rng.randint(0, 3)) for s in
            (rng.randint(0, 10**rng.choice([2, 4, 9])) for _ in range(rng.randint(10, 20000)))]
    rows = [rng.choice(pool) for _ in range(rng.randint(30000, 200000))]
    if rng.random() < 0.3:
        rows.sort()
    data = "".join(f"{c}\t{s}\t{e}\n" for c, s, e in rows).encode()
    p = write(data, rng.choice(["plain", "gzip"]), rng)
    _io.BLOCK_BYTES, _bed.PARALLEL_BLOCK_BYTES = rng.choice([(1 << 16, 1 << 14), (1 << 30,) * 2])
    check_universe(data, p, rows, rng)


def one_case(k: int) -> None:
    rng = random.Random(SEED * 1_000_003 + k)
    size = rng.choice([3000, 9000, 40000, 120000, 300000])
    damage = rng.choice(DAMAGE) if rng.random() < 0.35 else None
    data = make_text(rng, size, damage)
    expected = _expected(data)
    universe = [("chr1", 0, 100), ("chr1", 50, 200), ("chr1", 100, 101), ("chr2", 0, 10**9),
                ("chrX", 5, 8), ("c", 0, 2**40 - 1), ("chr1", 0, 10**6), ("chr1", 50, 200)]
    tok = Tokenizer(RegionSet.from_tuples(universe))
    if rng.random() < 0.3:
        check_guarded(data, expected)
    for kind in rng.sample(["plain", "gzip", "bgzf", "members"], rng.choice([1, 2, 3])):
        p = write(data, kind, rng)
        pipe = rng.random() < 0.15
        _count("pipe" if pipe else kind)
        got = check_parse(data, p, expected, rng, pipe)
        if got is not None:
            check_tokens(p, got, universe, tok)
        if kind == "plain" and rng.random() < 0.3:
            check_universe(data, p, expected, rng)
    if rng.random() < 0.1 and not isinstance(expected, naive.NaiveError) and data:
        check_damaged_gzip(data, expected, rng)
    if rng.random() < 0.05:
        check_pretokenize(data, expected, universe, tok, rng)


def small_case(k: int) -> None:
    """Files the small-input path takes (at most 256 plain lines): its two forms and the full
    path against the oracle, with word-edge newlines, no final newline, names out of order."""
    rng = random.Random(SEED * 1_000_003 + 7 * k + 1)
    names = rng.sample(["chr1", "chr2", "chrX", "c", "chr10", "chr1_x"], rng.randint(1, 4))
    lines, prev = [], None
    for _ in range(rng.randint(1, 256)):
        prev = _data(rng, names, prev, big=rng.random() < 0.02)
        c, s, e = prev
        extra = rng.choice(["", "", "\tpeak", "\t" + "y" * rng.randint(0, 70)])
        lines.append(f"{c}\t{s}\t{e}{extra}".encode())
    if rng.random() < 0.3:
        lines.insert(rng.randint(0, len(lines)), _damaged(rng, rng.choice(DAMAGE), prev))
    data = b"\n".join(lines) + rng.choice([b"", b"\n"])
    if rng.random() < 0.4:  # bytes the small path must read as the parser does, anywhere
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(b))
            b[at:at + rng.randint(0, 2)] = rng.choice(EDITS)
        data = bytes(b)
    expected = _expected(data)
    universe = [("chr1", 0, 100), ("chr1", 50, 200), ("chr2", 0, 10**9), ("chrX", 5, 8),
                ("c", 0, 2**40 - 1), ("chr10", 1, 2)]
    check_guarded(data, expected)
    if rng.random() < 0.2 and not isinstance(expected, naive.NaiveError):
        check_damaged_gzip(data, expected, rng, universe)
    for kind in rng.sample(["plain", "gzip"], rng.choice([1, 2])):
        p = write(data, kind, rng)
        got = check_parse(data, p, expected, rng)
        if got is None:  # damaged: the small path must leave it to the parser's error
            tok = Tokenizer(RegionSet.from_tuples(universe))
            assert _small._python(tok, str(p)) is None, "small path took a damaged file"
            assert _small._compiled(tok, str(p)) is None, "small kernel took a damaged file"
            assert _bed._cold_read(str(p)) is None, "cold read took a damaged file"
            try:
                tok.encode(p)
            except GenotokError as exc:  # (a query file's end < start lines are dropped:
                assert exc.line == expected.line or (  # a later line's error is the news)
                    expected.kind == "order" and exc.line > expected.line), (exc, expected)
            else:  # (a query's end before its start hits nothing, as in gtars)
                assert expected.kind == "order", f"encode took a damaged file: {expected}"
            continue
        for order in ("gtars", "input"):
            for unk in ("set", "region", "drop"):
                tok = Tokenizer(RegionSet.from_tuples(universe),
                                settings=TokenizerSettings(order=order, unknown=unk))
                want = naive_tokenizer.tokenize(universe, got, from_file=True, order=order,
                                                unknown=unk)
                assert tok.encode(p).tolist() == want, (order, unk)
                for form in (_small._python, _small._compiled):
                    ids = form(tok, str(p))
                    assert ids is None or ids.tolist() == want, (form.__name__, order, unk)
                    _count(f"small {form.__name__} {'declined' if ids is None else 'taken'}")


if __name__ == "__main__":
    checked = os.environ.get("NUMBA_BOUNDSCHECK") == "1"
    warnings.simplefilter("ignore")
    failures = []
    for k in range(N):
        for case in (one_case, small_case) + ((big_universe_case,) if k % 25 == 0 else ()):
            try:
                case(k)
            except Exception:  # noqa: BLE001 (every case runs; each failure is reported)
                failures.append(f"{case.__name__}({k}) seed {SEED}:\n"
                                f"{traceback.format_exc()[-2500:]}")
    print(sorted(STATS.items()))
    print(f"fuzzed {N} big and {N} small files ({'bounds-checked' if checked else 'plain'} "
          "kernels)")
    if failures:
        print(f"{len(failures)} case(s) failed:\n" + "\n".join(failures[:10]), file=sys.stderr)
        sys.exit(1)
