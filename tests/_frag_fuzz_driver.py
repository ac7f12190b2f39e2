"""Run by tests/test_frag_fuzz.py in a fresh interpreter, with NUMBA_BOUNDSCHECK=1 and no cache
(every kernel compiled with bounds checks) and without (the kernels users run). A differential
campaign for the parallel fragment scan (``genotok.singlecell.fragmatrix._scan_file``), which
``_bed_fuzz_driver.fuzz_fragments`` (inputs of <= 200 bytes) never reaches:

- the thresholds lowered through the module constants (``PIECE_BYTES``: every block cut into
  a piece per thread; ``SYNC_BYTES``: the read-ahead thread; ``bgzf.MAX_BLOCK``: many BGZF
  batches from a small file), block sizes down to one byte;
- containers: plain text, one gzip member, several members, BGZF written block by block with
  tiny and uneven blocks cut anywhere (inside a line too), empty blocks, with or without the
  EOF block; damaged BGZF (garbage after the last block, a truncated last block, a flipped
  byte) must raise a GenotokError naming the file;
- text: CRLF, ``#`` and blank lines, space-separated lines, lines around the 64-byte window
  of the fast reader, very long barcodes and extra columns, barcodes repeating across pieces,
  numbers of 15 to 20 digits; damaged lines (end < start, negatives, numbers beyond int64,
  missing columns, control and binary bytes, NUL, non-UTF-8 names) must raise a
  BedParseError at the oracle's line;
- every kernel call's buffer copied to the end of a page followed by a PROT_NONE page (with
  ``guard``): a read past a piece's last byte faults instead of reading the next piece (the
  word loads of the fast readers are not bounds-checked, even under NUMBA_BOUNDSCHECK).

Every valid result is compared with the plain-Python oracle (``tests/naive_fragments.py``)
and n_threads 1 with 2 and 4: the same cells in the same order, the same counts.

    python tests/_frag_fuzz_driver.py N [SEED]
"""

from __future__ import annotations

import ctypes
import gzip
import mmap
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import CellSpec, FragmentOptions, GenotokError, Tokenizer, Universe
from genotok import bgzf
from genotok.errors import BedParseError
from genotok.singlecell import fragmatrix as FM
from genotok.singlecell import tokenize_fragments
from genotok.singlecell.fragments import _counts

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests._fragment_text import line_mix  # noqa: E402
from tests.naive_fragments import parse_line, scan as oracle_scan  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 0
TMP = Path(tempfile.mkdtemp())
count = {"n": 0, "bad": 0, "ok": 0}

REGIONS = [("chr1", 0, 100), ("chr1", 100, 200), ("chr1", 150, 400), ("chr2", 0, 50),
           ("chr1", 100, 200), ("chr2", 40, 41), ("chr1", 1000, 1 << 40)]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    TOK = Tokenizer(Universe([f"{c}:{s}-{e}" for c, s, e in REGIONS], duplicates="lines"))
ENC = [(c.encode(), s, e) for c, s, e in REGIONS]
LONG = "ACGT" * 6
BARCODES = ["AAAC-1", "GGTT-1", "T", "zelle-\u00e4", "ACGTACGTACGTACGT-1", LONG[:23], LONG[:24],
            LONG + "-1", "#hash", "B" * 63, "C" * 300]
# numbers near the readers' limits: 15/16/17/18 digits are numbers, 19 and 20 are refused
NUMBERS = [0, 1, 5, 99, 150, 10 ** 14, 10 ** 15 - 1, 10 ** 16 - 1, 10 ** 17, 10 ** 18 - 1]

_BAD = [b"chr1\t20\t5\tAAAC-1\t1", b"chr1\t-5\t20\tAAAC-1\t1", b"chr1\t5\t-20\tAAAC-1\t1",
        b"chr1\t5\t20\tAAAC-1\tx", b"chr1\t5\t20\tAAAC-1\t-1", b"chr1\t5\t20\tAAAC-1\t",
        b"chr1\t5\t20\tAAAC-1\t1.0", b"chr1\t5 20\tAAAC-1\t1", b"chr1\t5\t20", b"chr1\t5",
        b"chr1", b"chr1\t5\t20\t\t1", b"\t5\t20\tAAAC-1\t1", b"chr1\t5\t20\tA\x00C\t1",
        b"chr1\t5\t20\tA\rC\t1", b"chr1\t5\t20\tA\x7fC\t1",
        b"chr1\t5\t9223372036854775807\tAAAC-1\t1", b"chr1\t5\t9223372036854775808\tA\t1",
        b"chr1\t5\t18446744073709551616\tA\t1",
        b"chr1\t1000000000000000000\t1000000000000000001\tA",
        b"chr1\t5\t20\tAAAC-1\t99999999999999999999", b"chr1\t5\t20\tAAAC-1\t2147483648x",
        b"chr1\t+5\t20\tA", b"chr1\t5\t2e1\tA", b"chr1\t0x5\t20\tA", b"chr1\t\xff\t20\tA",
        b"\x00\x00\x00\x00", b"\x1f\x8b\x08\x04", b"chr1\t5\t20\tA\xffB\t1",
        b"chr\xfe1\t5\t20\tA\t1", b"chr1\t5\t20\t\xc3\t1", b"chr1  5\t20 A"]
BOM = b"\xef\xbb\xbf"
_NEUTRAL = [b"", b"#", b"# a header\twith a tab", b"\r", b"#" + b"x" * 200]


@st.composite
def valid_line(draw):
    if draw(st.integers(0, 6)) == 0:  # a space-separated line (gtars' files)
        c = draw(st.sampled_from(["chr1", "chr2"]))
        s = draw(st.integers(0, 300))
        bc = draw(st.sampled_from(BARCODES[:4]))
        lead = draw(st.sampled_from(["", " "]))
        return f"{lead}{c}  {s} {s + draw(st.integers(0, 60))}   {bc} 2 ".encode()
    c = draw(st.sampled_from(["chr1", "chr1", "chr2", "chrX", "1", "chrUn_" + "x" * 40]))
    if draw(st.integers(0, 9)) == 0:
        s = draw(st.sampled_from(NUMBERS))
    else:
        s = draw(st.integers(0, 420))
    e = s + draw(st.sampled_from([0, 1, 2, 50, 300, 10 ** 15]))
    if e >= 10 ** 18:
        e = s
    bc = draw(st.sampled_from(BARCODES))
    if draw(st.integers(0, 30)) == 0:
        bc = draw(st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF,
                                        exclude_characters="\x7f"), min_size=1, max_size=90))
    fields = [c, str(s), str(e), bc]
    if draw(st.booleans()):
        fields.append(str(draw(st.sampled_from([0, 1, 3, 10 ** 17]))))
        k = draw(st.integers(0, 12))
        if k == 0:
            fields.append("extra")
        elif k == 1:
            fields.append("x" * draw(st.sampled_from([40, 100, 5000])))
    line = "\t".join(fields).encode()
    pad = draw(st.integers(0, 7))  # lengths around the fast reader's 64-byte window
    if pad == 0 and len(line) < 70 and len(fields) == 5:
        line += b"\t" + b"y" * max(0, draw(st.integers(50, 70)) - len(line) - 1)
    return line


@st.composite
def fragment_text(draw, bad=True):
    # one file in four may have a bad line
    text = draw(line_mix(valid_line(), _NEUTRAL, _BAD, 60, [17, 17, 17, 19] if bad else [17], 6))
    repeat = draw(st.sampled_from([1, 1, 1, 3, 40]))  # barcodes repeat across pieces
    if repeat > 1 and text and not text.endswith(b"\n"):
        text += b"\n"
    bom = BOM if draw(st.integers(0, 15)) == 0 else b""  # dropped in every container
    text = bom + text * repeat
    if bad and draw(st.integers(0, 3)) == 0:  # a few bytes anywhere: binary, NUL, digits, tabs
        b = bytearray(text)
        for at, ins in draw(st.lists(st.tuples(st.integers(0, 1 << 20), st.binary(max_size=4)
                                               | st.sampled_from([b"\t", b"\n", b"9", b" "])),
                                     max_size=4)):
            at %= len(b) + 1
            b[at:at + len(ins)] = ins
        text = bytes(b)
    return text


_bgzf_block = bgzf._block  # one BGZF block of ``raw``


_EOF = _bgzf_block(b"")


def container(text: bytes, kind: str, cuts: list[int], damage: str) -> bytes:
    """``text`` as ``kind``: plain, gzip (one member), members, or bgzf cut at ``cuts``
    (offsets into the text, anywhere; repeated offsets give empty blocks), with ``damage``."""
    if kind == "plain":
        return text
    if kind == "gzip":
        return gzip.compress(text)
    bounds = sorted({0, len(text), *[c % (len(text) + 1) for c in cuts]})
    if kind == "members":
        return b"".join(gzip.compress(text[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))
    out = bytearray()
    for a, b in zip(bounds[:-1], bounds[1:]):
        while b - a > FM.bgzf.MAX_BLOCK:  # a block holds at most MAX_BLOCK bytes
            out += _bgzf_block(text[a:a + FM.bgzf.MAX_BLOCK])
            a += FM.bgzf.MAX_BLOCK
        out += _bgzf_block(text[a:b])
        if len(cuts) % 3 == 0:
            out += _EOF  # an empty block inside the file
    if damage == "no-eof" or not text:
        pass
    else:
        out += _EOF
    if damage == "garbage":
        out += b"\x1f\x8b\x08\x04garbage"
    elif damage == "truncated":
        out = out[:-5]
    elif damage == "flip" and len(out) > 30:
        at = 20 + cuts[0] % (len(out) - 28) if cuts else 20
        out[at] ^= 0x41
    return bytes(out)


# --------------------------------------------------------------------------- guard pages

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PAGE = mmap.PAGESIZE
_KEEP: list = []


def guarded(buf: np.ndarray) -> np.ndarray:
    """A copy of ``buf`` ending at a page boundary before a page that cannot be read."""
    pages = -(-max(buf.size, 1) // _PAGE) + 1
    m = mmap.mmap(-1, pages * _PAGE)
    arr = np.frombuffer(m, np.uint8)
    end = (pages - 1) * _PAGE
    if _libc.mprotect(arr.ctypes.data + end, _PAGE, 0) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    out = arr[end - buf.size:end]
    out[:] = buf
    _KEEP.append((m, arr))
    return out


_scan = FM._Piece.scan


def _guarded_scan(self, buf, *args):
    return _scan(self, guarded(buf), *args)


# --------------------------------------------------------------------------- the campaign

def _utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def expected(text: bytes, mode: str, allow):
    text = text[3:] if text.startswith(BOM) else text
    pairs, nfrag, names, bad = oracle_scan(text, ENC, mode=mode, use_count=True, miss=True,
                                           repeats=False, allow=allow)
    for ln, raw in enumerate(text.split(b"\n")[:bad], start=1):  # a name that is no UTF-8
        got = parse_line(raw)  # is refused at its first line (the oracle reads bytes)
        if isinstance(got, tuple) and not all(_utf8(x) for x in (got[0], got[3])):
            return None, None, None, ln
    n = len(names) if allow is None else len(allow)
    X = np.zeros((n, len(REGIONS) + 1))
    for (cell, col), w in pairs.items():
        X[cell, col] += w
    names = [b if isinstance(b, str) else b.decode("utf-8", "replace") for b in names[:n]]
    return names, X, [nfrag.get(i, 0) for i in range(n)], bad


def run(path, mode, allow, n_threads, block):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the "1" vs "chr1" naming hint
            names, X, nfrag = _counts(path, TOK, barcodes=allow, min_fragments=0,
                                      block_bytes=block, n_threads=n_threads, mode=mode,
                                      shift=(0, 0), use_count=True)
    except GenotokError as exc:
        assert str(path) in str(exc), exc  # the file is named
        return exc
    return names, X.toarray(), nfrag.tolist()


def same(a, b) -> bool:
    if isinstance(a, Exception) or isinstance(b, Exception):
        return (isinstance(a, Exception) and isinstance(b, Exception)
                and type(a) is type(b) and getattr(a, "line", 0) == getattr(b, "line", 0))
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2] == b[2]


@settings(max_examples=N, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(text=fragment_text(), kind=st.sampled_from(["plain", "plain", "gzip", "members", "bgzf",
                                                   "bgzf", "bgzf"]),
       cuts=st.lists(st.integers(0, 1 << 20), max_size=12),
       damage=st.sampled_from(["none"] * 6 + ["no-eof", "garbage", "truncated", "flip"]),
       piece=st.sampled_from([1, 7, 64, 1000, 1 << 20]),
       block=st.sampled_from([1, 5, 64, 1000, 1 << 20]),
       max_block=st.sampled_from([64, 300, 1 << 16]), sync=st.booleans(), guard=st.booleans(),
       mode=st.sampled_from(FM.MODES), allow=st.sampled_from([None, None, ["T", "GGTT-1", "Z"]]),
       lines=st.sampled_from([1, 3, 1 << 18]))
def fuzz_parallel_scan(text, kind, cuts, damage, piece, block, max_block, sync, guard, mode,
                       allow, lines):
    count["n"] += 1
    if kind != "bgzf" or not text:  # (an empty file has no block to damage)
        damage = "none"
    FM.bgzf.MAX_BLOCK = max_block
    FM.PIECE_BYTES = piece
    FM.SYNC_BYTES = (4 << 20) if sync else 0
    FM._HIT_SLICE = lines  # the kernel called again every few lines
    FM._Piece.scan = _guarded_scan if guard else _scan
    try:
        path = TMP / ("f.tsv.gz" if kind != "plain" else "f.tsv")
        path.write_bytes(container(text, kind, cuts, damage))
        got = {t: run(path, mode, allow, t, block) for t in (1, 2, 4)}
    finally:
        FM.bgzf.MAX_BLOCK = 1 << 16
        FM.PIECE_BYTES = 1 << 20
        FM.SYNC_BYTES = 4 << 20
        FM._HIT_SLICE = 1 << 18
        FM._Piece.scan = _scan
        _KEEP.clear()
    assert same(got[1], got[2]) and same(got[1], got[4]), (got, text[:300])
    if damage in ("garbage", "truncated"):
        assert isinstance(got[1], GenotokError), (damage, got[1])
        return
    if damage == "flip":
        return  # an error, or the bytes a flip inside a stored length left valid
    if kind == "plain" and text[:2] == b"\x1f\x8b":
        return  # read as gzip by its magic: no text to compare
    want = expected(text, mode, allow)
    if isinstance(got[1], Exception):
        count["bad"] += 1
        assert isinstance(got[1], BedParseError), got[1]
        if got[1].line is None:  # not a line: only a damaged container may say so
            raise AssertionError(f"{got[1]} for a sound {kind} file")
        assert got[1].line == want[3], (got[1], want[3], text[:300])
        return
    count["ok"] += 1
    assert want[3] is None, f"no error; the oracle stops at line {want[3]}: {text[:300]!r}"
    names, X, nfrag = got[1]
    assert names == want[0], (names, want[0])
    assert nfrag == want[2], (nfrag, want[2])
    assert np.array_equal(X, want[1].astype(X.dtype)), (X, want[1])


@settings(max_examples=max(N // 50, 2), deadline=None, suppress_health_check=list(HealthCheck),
          database=None)
@given(text=fragment_text(bad=False), kind=st.sampled_from(["plain", "gzip", "bgzf"]),
       tail=st.sampled_from([b"", b"chr1\t9\t5\tA\n", b"chr1\t5\t9\tA\xff\n",
                             b"chr1\t5\t9\t" + b"L" * 3_000_000 + b"\n"]),
       mode=st.sampled_from(FM.MODES))
def fuzz_real_thresholds(text, kind, tail, mode):
    """Files of a few MB at the real thresholds (a block of 32 MiB cut into 1 MiB pieces or
    more, BGZF batches of 8 MiB, the read-ahead thread above 4 MiB), a bad line or a long one
    deep inside."""
    count["n"] += 1
    text = text.removeprefix(BOM)  # (a BOM repeated inside is a bad line)
    if not text.endswith(b"\n"):
        text += b"\n"
    if kind == "plain" and text[:2] == b"\x1f\x8b":
        text = b"#\n" + text
    if len(text) < 1000:  # (a shorter text would make too many lines for the oracle)
        text += b"".join(b"chr1\t%d\t%d\t%s\t1\n" % (i * 7, i * 7 + 60, BARCODES[i % 9].encode())
                         for i in range(40))
    reps = -(-(5 << 20) // len(text))
    half = text * (reps // 2)
    text = half + tail + half
    path = TMP / ("r.tsv.gz" if kind != "plain" else "r.tsv")
    if kind == "bgzf":
        bgzf.write_bgzf(path, text)
    else:
        path.write_bytes(gzip.compress(text, 1) if kind == "gzip" else text)
    got = {t: run(path, mode, None, t, 32 << 20) for t in (1, 2, 4)}
    count["big"] = count.get("big", 0) + 1
    assert same(got[1], got[2]) and same(got[1], got[4]), got
    want = expected(text, mode, None)
    if isinstance(got[1], Exception):
        assert got[1].line == want[3], (got[1], want[3])
        return
    assert want[3] is None
    assert got[1][0] == want[0] and got[1][2] == want[2]
    assert np.array_equal(got[1][1], want[1].astype(got[1][1].dtype))


@settings(max_examples=max(N // 4, 1), deadline=None, suppress_health_check=list(HealthCheck),
          database=None)
@given(text=fragment_text(), kind=st.sampled_from(["plain", "bgzf"]),
       cuts=st.lists(st.integers(0, 1 << 20), max_size=12), piece=st.sampled_from([1, 64]),
       n_threads=st.sampled_from([1, 2, 4]))
def fuzz_public_paths(text, kind, cuts, piece, n_threads):
    """tokenize_fragments (FragmentOptions, n_threads, spilled pairs) and the BGZF reader: a
    result equal to one thread's and ``line_blocks`` giving the text back in whole lines."""
    count["n"] += 1
    FM.bgzf.MAX_BLOCK = 300
    FM.PIECE_BYTES = piece
    try:
        path = TMP / ("p.tsv.gz" if kind == "bgzf" else "p.tsv")
        path.write_bytes(container(text, kind, cuts, "none"))
        if kind == "bgzf" and text:
            blocks = [b.tobytes() for b in bgzf.line_blocks(path, 1, n_threads=n_threads)]
            assert b"".join(blocks) == text
            assert all(b.endswith(b"\n") for b in blocks[:-1])
        outs = []
        for t in (1, n_threads):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    names, rows = tokenize_fragments(
                        path, TOK, CellSpec(values=True, use_count=True, unknown="region"),
                        read=FragmentOptions(block_bytes=64, min_fragments=1),
                        n_threads=t, memory_mb=1e-5 if t > 1 else None)
                outs.append((names, rows.to_list(), rows.values.tolist()))
            except BedParseError as exc:
                assert str(path) in str(exc)
                outs.append(exc.line)
        assert outs[0] == outs[1], outs
    finally:
        FM.bgzf.MAX_BLOCK = 1 << 16
        FM.PIECE_BYTES = 1 << 20


if __name__ == "__main__":
    import traceback

    from hypothesis import seed

    checked = os.environ.get("NUMBA_BOUNDSCHECK") == "1"
    failures = []
    for f in (fuzz_parallel_scan, fuzz_real_thresholds, fuzz_public_paths):
        try:
            seed(SEED)(f)()
        except Exception:
            lines = [ln[:400] for ln in traceback.format_exc().splitlines()]  # a long text
            failures.append(f"{f.__name__}:\n" + "\n".join(lines)[-6000:])
    print(f"fuzzed {count['n']} inputs ({'bounds-checked' if checked else 'plain'} kernels; "
          f"{count['ok']} counted, {count['bad']} refused)")
    if failures:
        print(f"{len(failures)} campaign(s) failed:\n" + "\n".join(failures), file=sys.stderr)
        sys.exit(1)
