"""The tiny-input path of ``Tokenizer.encode`` (genotok._small): the same ids as the oracle
(``tests/naive_tokenizer.py``) and as the full path, for files, region strings and arrays, and
``None`` (the full path) for everything it does not take."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genotok import BedParseError, Tokenizer, _small, bed
from genotok._small import MAX_REGIONS, encode_small

from . import naive_tokenizer

CHROMS = ["chr1", "chr2", "chr10", "chrX"]


def _write(path, rows):
    path.write_text("".join(f"{c}\t{s}\t{e}\tpeak\t0\n" for c, s, e in rows))
    return path


def _region(chroms):
    return st.builds(lambda c, s, w: (c, s, s + w), st.sampled_from(chroms),
                     st.integers(0, 300), st.integers(0, 60))


_TOKS: dict = {}


def _tokenizer(tmp_path_factory, universe, **kw) -> Tokenizer:
    key = (tuple(universe), tuple(sorted(kw.items())))
    if key not in _TOKS:
        path = _write(tmp_path_factory.mktemp("u") / "u.bed", universe)
        _TOKS[key] = Tokenizer.from_bed(path, **kw)
    return _TOKS[key]


@pytest.mark.filterwarnings("ignore::UserWarning")  # duplicate or empty universe lines
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(universe=st.lists(_region(CHROMS[:3]), min_size=1, max_size=25),
       queries=st.lists(_region(CHROMS), min_size=1, max_size=12),
       unknown=st.sampled_from(["set", "region", "drop"]),
       order=st.sampled_from(["gtars", "input"]), form=st.sampled_from(["file", "strings",
                                                                       "arrays"]))
def test_the_small_path_equals_the_oracle(tmp_path_factory, universe, queries, unknown, order,
                                          form):
    tok = _tokenizer(tmp_path_factory, universe, unknown=unknown, order=order)
    if form == "file":
        arg = str(_write(tmp_path_factory.mktemp("q") / "q.bed", queries))
    elif form == "strings":
        arg = [f"{c}:{s}-{e}" for c, s, e in queries]
    else:
        arg = (np.array([c for c, _, _ in queries]), np.array([s for _, s, _ in queries]),
               np.array([e for _, _, e in queries]))
    known = {c for c, _, _ in universe}
    small = encode_small(tok, arg)
    if any(c in known for c, _, _ in queries):
        assert small is not None, "a plain small input takes the small path"
    want = naive_tokenizer.tokenize(universe, queries, from_file=form == "file",
                                    unknown=unknown, order=order)
    assert tok.encode(arg).tolist() == want
    if small is not None:
        assert small.dtype == np.int64 and small.tolist() == want
        full = tok._overlaps([tok._regions(arg)], None).ids
        assert full.tolist() == want
    # both forms of the path: the kernels (genotok.kernels.small) and plain Python
    for form_ids in (_small._compiled(tok, arg), _small._python(tok, arg)):
        if form_ids is not None:
            assert form_ids.dtype == np.int64 and form_ids.tolist() == want
    if any(c in known for c, _, _ in queries) and (form != "file" or order == "input" or
                                                   queries == sorted(queries, key=_gtars_key)):
        assert _small._compiled(tok, arg) is not None, "the kernels take a plain small input"


def _gtars_key(q):
    return q[0].encode(), q[1]


@pytest.mark.parametrize("text", [
    "track name=x\nchr1\t5\t10\n", "#c\nchr1\t5\t10\n", "chr1\t5\t10\n\nchr1\t6\t9\n",
    "chr1\t5\t10\r\n", "chr1\t10\t5\n", "chr1 5 10\n", "chr1\t5\n", "chr1\t-5\t10\n",
    "chr1\t5\t1e3\n", "\ufeffchr1\t5\t10\n", "chr1\t5\t10\x00\n", "chr9\t5\t10\n",
    "chr1\t5\t10\nchr1 \t5\t10\n", "\x1f\x8b\x08damaged",
    "chr1\t1234567890123456\t1234567890123457\n", "chr1\t5\t10\nchr1 \t5\t10\n",
    "\x1f\x8b\x08damaged"])
def test_anything_unusual_takes_the_full_path(tmp_path, text):
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", [("chr1", 0, 100)]))
    path = tmp_path / "q.bed"
    path.write_bytes(text.encode())
    assert encode_small(tok, str(path)) is None
    assert _small._compiled(tok, str(path)) is None and _small._python(tok, str(path)) is None


@pytest.mark.parametrize("byte", ["\x01", "\x0b", "\x0c", "\x1f", "\x00"])
def test_a_control_byte_in_any_column_is_left_to_the_parser(tmp_path, byte):
    """The parser refuses a control byte in any column (binary data); the small path looked
    at the first three only, so a short file with one in its fourth tokenized (both forms),
    and bed._cold_read gave its regions, where a longer or a warm read raised."""
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", [("chr1", 0, 100)]))
    path = tmp_path / "q.bed"
    path.write_bytes(f"chr1\t5\t10\tpeak{byte}\nchr1\t6\t9\n".encode())
    assert _small._compiled(tok, str(path)) is None and _small._python(tok, str(path)) is None
    assert bed._cold_read(str(path)) is None
    with pytest.raises(BedParseError, match=":1: binary data"):
        tok.encode(str(path))


def test_a_damaged_deflate_stream_is_left_to_the_full_path(tmp_path):
    """A short .gz file whose deflate data is damaged: Python's gzip raises zlib.error (no
    OSError), which the small path let through Tokenizer.encode instead of the full path's
    BedParseError naming the file."""
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", [("chr1", 0, 100)]))
    good = gzip.compress(b"".join(b"chr1\t%d\t%d\n" % (i, i + 5) for i in range(99)))
    for at in range(10, len(good) - 8):  # the first flip that breaks the deflate data itself
        raw = bytearray(good)
        raw[at] ^= 0xFF
        try:
            gzip.decompress(bytes(raw))
        except zlib.error:
            break
        except (OSError, EOFError):  # a CRC or length error only: Python's gzip says OSError
            pass
    else:
        raise AssertionError("no flip broke the deflate data")
    path = tmp_path / "q.bed.gz"
    path.write_bytes(bytes(raw))
    assert _small._python(tok, str(path)) is None and _small._compiled(tok, str(path)) is None
    assert bed._cold_read(str(path)) is None
    with pytest.raises(BedParseError, match="corrupt gzip data"):
        tok.encode(str(path))


def test_a_large_set_builds_no_small_keys(tmp_path):
    """The small path's keys (32 bytes a universe region) are built for an input it takes,
    not for one that takes the full path (30 MiB of a 1M-region universe's peak memory)."""
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", [("chr1", 0, 100), ("chr1", 50, 150)]))
    rows = [("chr1", i, i + 10) for i in range(_small.MAX_BYTES // 16)]  # past MAX_BYTES
    big = _write(tmp_path / "q.bed", rows)
    n = MAX_REGIONS + 1
    for arg in (str(big), big, [f"chr1:{s}-{e}" for _, s, e in rows[:n]], ["chr1:1,000-2,000"],
                (np.array(["chr1"] * n), np.arange(n), np.arange(n) + 10)):
        assert _small._compiled(tok, arg) is None
        assert getattr(tok.universe, "_small_keys", None) is None, arg
    assert len(tok.encode(str(big))) and getattr(tok.universe, "_small_keys", None) is None
    assert tok.encode(["chr1:5-10"]).tolist() == [0] and tok.universe._small_keys


def test_a_pipe_is_left_to_the_full_path(tmp_path):
    """A FIFO is read once: the small path must not consume it."""
    import os

    fifo = tmp_path / "q.fifo"
    os.mkfifo(fifo)
    assert _small.read_plain(str(fifo)) is None


def test_what_it_does_not_take(tmp_path):
    u = _write(tmp_path / "u.bed", [("chr1", 0, 100), ("chr1", 50, 150)])
    tok = Tokenizer.from_bed(u)
    assert encode_small(tok, ["chr1:5-10"]).tolist() == [0]
    assert encode_small(tok, ["chr1:5-10", "chr1:60-70"]).tolist() == [0, 0, 1]
    for arg in (["chr1:10-5"], ["chr1:1,000-2,000"], ["chr1_5_10"], ["chr1:5-10", 3], [],
                ["chr 1:5-10"], ["chr\t1:5-10"], ["chr1:5-10\n"], ["chré:5-10"], ["chr1:05-1e2"],
                ["chr1:5-10"] * (MAX_REGIONS + 1), [("chr1", 5, 10)],
                (np.array(["chr1"]), np.array([5.0]), np.array([10])),
                (np.array(["chr1"]), np.array([-1]), np.array([10])),
                ["chr1:5-10\nchr1:6-7"], ["chr1:5-10", ""], ["chr1:5-10", "chr1:5-10\n"],
                ["chr1:5-1099511627776"], ["chr1:5-10", "chr1:5-1099511627776"],
                "chr1:5-1099511627776", ["chr1:5-10", "chr1:-5-10"], ["chr1:5-10", "chr:1:5-10"],
                (np.array(["chr1"]), np.array([5]), np.array([1 << 40])),
                (np.array(["chr1"]), np.array([5], np.uint64), np.array([1 << 63], np.uint64)),
                (np.array(["chr1", "chr1"]), np.array([5, 7]), np.array([10, 6]))):
        assert encode_small(tok, arg) is None, arg
        assert _small._compiled(tok, arg) is None and _small._python(tok, arg) is None, arg
    for kw in ({"overlap": "best"}, {"min_overlap": 5}, {"order": "genomic"},
               {"tokenizer_type": "ailist"}):
        assert encode_small(Tokenizer.from_bed(u, **kw), ["chr1:5-10"]) is None, kw


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(_region(CHROMS + ["chrUn_KI270742v1", "HLA-A*01:01"]), min_size=1,
                     max_size=40), extra=st.sampled_from(["", "\tpeak\t0\t.", "\t"]),
       gz=st.booleans())
def test_the_cold_read_equals_the_parse_kernel(tmp_path_factory, rows, extra, gz):
    """While the parse kernel is not compiled, bed._read_file reads plain files in Python."""
    text = "".join(f"{c}\t{s}\t{e}{extra}\n" for c, s, e in rows).encode()
    path = tmp_path_factory.mktemp("c") / ("q.bed.gz" if gz else "q.bed")
    path.write_bytes(gzip.compress(text) if gz else text)
    cold = bed._cold_read(str(path))
    assert cold is not None
    names, codes, starts, ends = bed._read_file(path)  # the kernel (compiled by now)
    assert cold[0] == names
    for a, b in zip(cold[1:], (codes, starts, ends)):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_larger_sets_while_the_kernels_are_cold(tmp_path, monkeypatch):
    """A new install's first calls: up to COLD_REGIONS regions take the small path."""
    rng = np.random.default_rng(5)
    universe = [(str(c), int(s), int(s) + int(w)) for c, s, w in zip(
        rng.choice(CHROMS, 300), rng.integers(0, 5000, 300), rng.integers(1, 400, 300))]
    queries = [(str(c), int(s), int(s) + int(w)) for c, s, w in zip(
        rng.choice(CHROMS, 1500), rng.integers(0, 5000, 1500), rng.integers(0, 300, 1500))]
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", universe))
    path = str(_write(tmp_path / "q.bed", queries))
    assert encode_small(tok, path) is None  # warm: too many lines
    monkeypatch.setattr(_small._config, "group_ready", lambda group: False)
    monkeypatch.setattr(_small, "_WARM", False)
    monkeypatch.setattr(_small, "_COLD_UNTIL", 0.0)  # (restored after: no cold answer held)
    got = encode_small(tok, path)
    assert got is not None
    assert got.tolist() == naive_tokenizer.tokenize(universe, queries, from_file=True)
    batch = tok.encode_batch([path, ["chr1:5-500"]], n_threads=2)
    assert [b.tolist() for b in batch] == [got.tolist(),
                                           naive_tokenizer.tokenize(universe, [("chr1", 5, 500)])]


def test_encode_batch_takes_a_generator(tmp_path):
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", [("chr1", 0, 100), ("chr2", 0, 50)]))
    got = tok.encode_batch(s for s in (["chr1:5-10"], ["chr2:1-2", "chr1:3-4"]))
    assert [g.tolist() for g in got] == [[0], [1, 0]]


def test_a_coordinate_past_the_keys_is_not_read_as_another_chromosome(tmp_path):
    """Global keys are code << 40 | coordinate: an end from 2**40 on ran into the next
    chromosome's keys and hit chr2's region from a chr1 query (the Python form before)."""
    tok = Tokenizer.from_bed(_write(tmp_path / "u.bed", [("chr1", 0, 100), ("chr2", 0, 10)]))
    for arg in (["chr1:5-1099511627777"], ["chr1:5-1099511627777", "chr1:5-6"],
                (np.array(["chr1"]), np.array([5]), np.array([(1 << 40) + 1]))):
        assert tok.encode(arg).tolist() == tok._overlaps([tok._regions(arg)], None).ids.tolist()
        assert 1 not in tok.encode(arg).tolist()


def test_the_small_kernel_numbers_unknown_modes_as_the_enum():
    """kernels.small.hits reads ``unknown`` as kernels.modes.Unknown's members (was: a map of
    its own in _small, 1 for 'region' where the enum says SET)."""
    from genotok.kernels import small
    from genotok.kernels.modes import Unknown

    assert (small.UNK_SET, small.UNK_REGION) == (Unknown.SET, Unknown.REGION)
