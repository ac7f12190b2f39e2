"""gtars-compatible ``.gtok`` single lists: byte compatibility, round trips, refusals."""

from __future__ import annotations

import json
import re
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genotok import GtokFormatError, read_gtok, write_gtok

from .._shared import GTARS_COMPAT as SHARED
from .._shared import needs_shared

KNOWN = {"small_u16.gtok": [0, 1, 4, 0, 1, 3], "big_u32.gtok": [1, 65535, 65536, 4294967295],
         "empty.gtok": []}


def naive_decode(raw: bytes) -> list[int]:
    """Oracle: the gtars layout decoded with struct, one id at a time (no numpy)."""
    assert raw[:4] == b"GTOK"
    fmt, width = {1: ("<H", 2), 2: ("<I", 4)}[raw[4]]
    return [struct.unpack(fmt, raw[i:i + width])[0] for i in range(5, len(raw), width)]


def naive_encode(ids: list[int], width: int | None = None) -> bytes:
    """Oracle: the bytes gtars writes for ``ids`` (uint16 when every id fits)."""
    if width is None:
        width = 2 if all(x <= 0xFFFF for x in ids) else 4
    fmt, flag = ("<H", 1) if width == 2 else ("<I", 2)
    return b"GTOK" + bytes([flag]) + b"".join(struct.pack(fmt, x) for x in ids)


# ------------------------------------------------------------------ files gtars wrote
@needs_shared
def test_reads_every_gtars_file():
    files = sorted(SHARED.glob("*.gtok"))
    assert {f.name for f in files} >= set(KNOWN)
    expected = json.loads((SHARED / "expected.json").read_text())["expected_input_ids"]
    for f in files:
        want = KNOWN[f.name] if f.name in KNOWN else expected[f.stem + ".bed"]
        assert naive_decode(f.read_bytes()) == want  # the fixture is what the spec says
        for mmap in (True, False):
            assert read_gtok(f, mmap=mmap).tolist() == want


def _real_gtoks():
    from .._shared import SHARED as ROOT

    real = ROOT / "data" / "real"
    if not real.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared is absent"))]
    return sorted(str(p.relative_to(real)) for p in real.rglob("*.gtok"))


@pytest.mark.parametrize("rel", _real_gtoks())
def test_reads_every_real_gtok_as_gtars_does(tmp_path, rel):
    """The .gtok files of ../shared/data/real (geniml's and gtars' test data): genotok reads
    the ids gtars' ``read_tokens_from_gtok`` reads, and writes the same bytes back."""
    from .._shared import SHARED as ROOT
    from .._shared import shared

    utils = pytest.importorskip("gtars.utils", reason="gtars is not installed (the reference)")
    path = shared(ROOT / "data" / "real" / rel)
    ids = read_gtok(path).tolist()
    assert ids == list(utils.read_tokens_from_gtok(str(path))) == naive_decode(path.read_bytes())
    write_gtok(ids, tmp_path / "x.gtok")
    assert (tmp_path / "x.gtok").read_bytes() == path.read_bytes()


@needs_shared
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_writes_the_bytes_gtars_wrote(tmp_path, name):
    write_gtok(KNOWN[name], tmp_path / name)
    assert (tmp_path / name).read_bytes() == (SHARED / name).read_bytes()


# ------------------------------------------------------------------ round trips
ids_st = st.lists(st.one_of(st.integers(0, 70_000), st.sampled_from([65_535, 65_536]),
                            st.integers(0, 2**32 - 1)), max_size=40)


@settings(max_examples=80, deadline=None)
@given(ids_st, st.sampled_from([None, 2, 4]), st.sampled_from([np.int64, np.uint32, np.uint64]))
def test_round_trip_matches_oracle(ids, width, dtype):
    if width == 2 and any(x > 0xFFFF for x in ids):
        width = None
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.gtok"
        write_gtok(np.array(ids, dtype=dtype), p, width=width)
        raw = p.read_bytes()
        assert raw == naive_encode(ids, width)
        arr = read_gtok(p)
        assert arr.tolist() == ids and not arr.flags.writeable
        if ids:
            assert isinstance(arr, np.memmap)
        copy = read_gtok(p, mmap=False)
        assert copy.tolist() == ids and not isinstance(copy, np.memmap)
        del arr


def test_width_boundary_and_forced_width(tmp_path):
    write_gtok([65535], tmp_path / "a.gtok")
    write_gtok([65536], tmp_path / "b.gtok")
    write_gtok([1], tmp_path / "c.gtok", width=4)
    assert [(tmp_path / n).read_bytes()[4] for n in ("a.gtok", "b.gtok", "c.gtok")] == [1, 2, 2]
    assert read_gtok(tmp_path / "c.gtok").dtype == np.dtype("<u4")
    with pytest.raises(GtokFormatError, match="uint16"):
        write_gtok([65536], tmp_path / "d.gtok", width=2)
    with pytest.raises(ValueError, match="width must be one of 2, 4 or None, got 3"):
        write_gtok([1], tmp_path / "d.gtok", width=3)


@pytest.mark.parametrize("ids, pattern", [
    ([-1], "within"), ([2**32], "within"), ([1.5], "integers"), (np.array([True]), "integers"),
])
def test_write_refuses_bad_ids_and_leaves_nothing(tmp_path, ids, pattern):
    with pytest.raises(GtokFormatError, match=rf"x.gtok: .*{pattern}"):
        write_gtok(ids, tmp_path / "x.gtok")
    assert list(tmp_path.iterdir()) == []


def test_gtars_reads_what_we_write(tmp_path):
    gutils = pytest.importorskip("gtars.utils")
    for ids in ([0, 1, 2, 65535], [3, 70000, 4294967295], [], [65536]):
        write_gtok(ids, tmp_path / "x.gtok")
        assert [int(x) for x in gutils.read_tokens_from_gtok(str(tmp_path / "x.gtok"))] == ids


@settings(max_examples=25, deadline=None)
@given(ids_st)
def test_we_read_what_gtars_writes(ids):
    gutils = pytest.importorskip("gtars.utils")
    with tempfile.TemporaryDirectory() as d:
        p = str(Path(d) / "g.gtok")
        gutils.write_tokens_to_gtok(p, ids)
        assert read_gtok(p).tolist() == ids
        assert Path(p).read_bytes() == naive_encode(ids)


# ------------------------------------------------------------------ refusals
def test_refuses_what_gtars_accepts(tmp_path):
    write_gtok([1, 2, 3], tmp_path / "x.gtok")
    good = (tmp_path / "x.gtok").read_bytes()
    cases = {"trunc.gtok": (good[:-1], "trunc.gtok: truncated"),
             "flag.gtok": (b"GTOK\x03" + good[5:], "flag.gtok: unknown width flag 0x03"),
             "zero.gtok": (b"GTOK\x00", "zero.gtok: unknown width flag 0x00"),
             "magic.gtok": (b"GTOX\x01" + good[5:], "magic.gtok: not a .gtok file .*bad magic"),
             "short.gtok": (b"GT", "short.gtok: not a .gtok file"),
             "nothing.gtok": (b"", "nothing.gtok: not a .gtok file"),
             "u32.gtok": (b"GTOK\x02\x01\x00\x00\x00\x02", "u32.gtok: truncated")}
    for name, (data, pattern) in cases.items():
        (tmp_path / name).write_bytes(data)
        for mmap in (True, False):
            with pytest.raises(GtokFormatError, match=pattern):
                read_gtok(tmp_path / name, mmap=mmap)
    with pytest.raises(GtokFormatError, match="missing.gtok: no such file"):
        read_gtok(tmp_path / "missing.gtok")
    with pytest.raises(GtokFormatError, match="is a directory"):
        read_gtok(tmp_path)


def test_old_argument_order_is_refused(tmp_path):
    """``write_gtok(path, ids)`` (and ``path=``), the spelling before issue 21, is not read as
    the new one: no shim guesses the order, and no file is written."""
    with pytest.raises(TypeError, match="path"):
        write_gtok([3], path=tmp_path / "b.gtok")
    with pytest.raises(TypeError, match=r"out must be a str or a PathLike, got \[1, 2\] "
                       r"\(write_gtok takes \(ids, path\)"):
        write_gtok(tmp_path / "a.gtok", [1, 2])  # gtars' order: said so (issue 42)
    assert not list(tmp_path.iterdir())


def _gtok(tmp_path, data: bytes) -> Path:
    p = tmp_path / "x.gtok"
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("data, pattern", [
    (b"GTOX\x01\x00\x00", "bad magic"),
    (b"GTOK\x07\x00\x00", "unknown width flag"),
    (b"GTOK\x02\x01\x00\x00", "truncated"),
], ids=["gtok_bad_magic", "gtok_unknown_flag", "gtok_truncated"])
def test_bad_gtok(tmp_path, data, pattern):
    p = _gtok(tmp_path, data)
    with pytest.raises(GtokFormatError, match=rf"{re.escape(str(p))}: .*{pattern}"):
        read_gtok(p)

def test_gtok_write_refuses_negative_ids(tmp_path):
    with pytest.raises(GtokFormatError, match="x.gtok"):
        write_gtok([-1], tmp_path / "x.gtok")
    assert list(tmp_path.iterdir()) == []
