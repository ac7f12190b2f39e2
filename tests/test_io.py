"""genotok._io: what is not a regular file (a FIFO, a device) is refused, not waited on; an
anonymous pipe is read; a binary file gets a short excerpt in its error."""

from __future__ import annotations

import os

import pytest

from genotok import BedParseError, RegionSet, Tokenizer, Universe

GOOD = "chr1\t100\t200\nchr1\t300\t400\n"


# ------------------------------------------------------------------ not regular files
@pytest.fixture
def alarm():
    """Fail (not hang) if a read blocks: opening a FIFO with no writer waits forever."""
    import signal

    def hung(*_):
        raise AssertionError("blocked reading a FIFO")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


_READERS = {
    "RegionSet.from_bed": lambda p: RegionSet.from_bed(p),
    "Universe.from_bed": lambda p: Universe.from_bed(p),
    "Tokenizer.from_bed": lambda p: Tokenizer.from_bed(p),
    "tok.encode": lambda p: Tokenizer(["chr1:0-100"]).encode(p),
    "tok.encode_batch": lambda p: Tokenizer(["chr1:0-100"]).encode_batch([p]),
}


@pytest.mark.parametrize("reader", list(_READERS))
def test_a_fifo_is_refused_not_waited_on(tmp_path, alarm, reader):
    fifo = tmp_path / "pipe.bed"
    os.mkfifo(fifo)
    with pytest.raises(BedParseError, match=r"pipe.bed: is a named pipe \(FIFO\), not a regular "
                                            r"file.*'-' for standard input"):
        _READERS[reader](fifo)


@pytest.mark.parametrize("reader", list(_READERS))
def test_a_device_is_refused_not_read(alarm, reader):
    with pytest.raises(BedParseError, match=r"/dev/zero: is a character device, not a regular "
                                            r"file"):
        _READERS[reader]("/dev/zero")


def test_an_anonymous_pipe_is_read(tmp_path, alarm):
    """``<(zcat x.bed.gz)`` in bash is /dev/fd/N, an anonymous pipe: read, as before."""
    r, w = os.pipe()
    try:
        os.write(w, GOOD.encode())
        os.close(w)
        assert RegionSet.from_bed(f"/dev/fd/{r}").to_strings() == ["chr1:100-200",
                                                                   "chr1:300-400"]
    finally:
        os.close(r)


def test_a_binary_file_gets_a_short_excerpt(tmp_path):
    """A PNG, a BAM… given as BED quoted ~80 escaped bytes (four characters each) in its
    error."""
    p = tmp_path / "image.bed"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(BedParseError, match="binary data") as info:
        RegionSet.from_bed(p)
    assert len(str(info.value)) < len(str(p)) + 150, str(info.value)
    q = tmp_path / "ctrl.bed"
    q.write_bytes(b"chr1\t1\t2\x01" + b"\x02\x03\x04\x05" * 40 + b"\n")
    with pytest.raises(BedParseError, match="binary") as info:
        RegionSet.from_bed(q)
    assert len(str(info.value)) < len(str(q)) + 150, str(info.value)


def test_a_caller_s_mistake_inside_a_read_is_not_called_damaged_data(tmp_path):
    """``_io.reading`` names damaged gzip data; a ``ValueError`` of the caller's own code (a bad
    argument, a bug) passes through as it is, never as "corrupt gzip data"."""
    import gzip

    from genotok import _io

    p = tmp_path / "f.bed.gz"
    p.write_bytes(gzip.compress(b"chr1\t1\t2\n"))
    with pytest.raises(ValueError, match="^the caller's own$"):
        with _io.reading(p), _io.open_binary(p) as fh:
            fh.read()
            raise ValueError("the caller's own")
    data = gzip.compress(b"chr1\t1\t2\n" * 500)
    p.write_bytes(data[:-8] + bytes(8))  # a wrong CRC-32 and length
    with pytest.raises(BedParseError, match="corrupt gzip data"):
        with _io.reading(p), _io.open_binary(p) as fh:
            fh.read()
