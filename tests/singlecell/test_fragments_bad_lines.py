"""Adversarial fragment files: valid lines mixed with every kind of bad one, read in random
block sizes, plain or gzipped, counted in memory or spilled to disk, written to ``out=`` or
not. Each public path gives the plain-Python oracle's answer (``tests/naive_fragments.py``)
or a :class:`BedParseError` naming the file and the oracle's line, and leaves nothing behind:
no ``out`` file, no spill directory in ``TMPDIR``."""

from __future__ import annotations

import gzip
import os
import tempfile
import warnings

import anndata
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from genotok import CellSpec, FragmentOptions, Tokenizer, Universe, tokenize_fragments
from genotok.errors import BedParseError, GenotokError
from genotok.formats.h5ad import write_h5ad_rows
from genotok.singlecell import fragmatrix, fragment_counts
from genotok.singlecell.matrix import fragment_matrix

from ..kernels.test_names import _colliding_names
from .._fragment_text import line_mix
from ..naive_fragments import scan as oracle_scan

REGIONS = [("chr1", 0, 100), ("chr1", 100, 200), ("chr1", 150, 400), ("chr2", 0, 50),
           ("chr1", 100, 200), ("chr2", 40, 41)]
BARCODES = ["AAAC-1", "GGTT-1", "T", "zelle-\u00e4"]


def _tok():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the repeated universe region warns
        return Tokenizer(Universe([f"{c}:{s}-{e}" for c, s, e in REGIONS], duplicates="lines"))


TOK = _tok()


@st.composite
def _valid(draw):
    c = draw(st.sampled_from(["chr1", "chr2", "chrX", "1"]))
    s = draw(st.integers(0, 420))
    e = s + draw(st.sampled_from([0, 1, 2, 50, 300]))
    bc = draw(st.sampled_from(BARCODES))
    fields = [c, str(s), str(e), bc]
    if draw(st.booleans()):
        fields.append(str(draw(st.integers(0, 5))))
    if draw(st.integers(0, 9)) == 0:
        fields.append("extra")
    return "\t".join(fields).encode()


_BAD = [b"chr1\t20\t5\tAAAC-1\t1",            # end before start
        b"chr1\t-5\t20\tAAAC-1\t1",           # negative start
        b"chr1\t5\t-20\tAAAC-1\t1",           # negative end
        b"chr1\t5\t20\tAAAC-1\tx",            # not a count
        b"chr1\t5\t20\tAAAC-1\t-1",           # negative count
        b"chr1\t5\t20\tAAAC-1\t",             # empty count
        b"chr1\t5\t20\tAAAC-1\t1.0",
        b"chr1\t5 20\tAAAC-1\t1",             # tabs and spaces mixed
        b"chr1\t5\t20",                        # three columns
        b"chr1\t5\t20\t\t1",                   # empty barcode
        b"\t5\t20\tAAAC-1\t1",                 # empty chromosome
        b"chr1\t5\t20\tA\x00C\t1",             # NUL in the barcode
        b"chr1\t5\t20\tA\rC\t1",               # CR inside the barcode
        b"chr1\t5\t9223372036854775807\tAAAC-1\t1",  # 19 digits: beyond the parser
        b"chr1\t4611686018427387904\t4611686018427387905\tAAAC-1\t1",
        b"chr1\t5\t20\tAAAC-1\t99999999999999999999"]
_NEUTRAL = [b"", b"#", b"# a header\twith a tab", b"\r"]


def fragment_bytes():
    """Two files in three have no bad line; the last line may lack its newline."""
    return line_mix(_valid(), _NEUTRAL, _BAD, 25, [17, 17, 19], 5)


def _oracle(text, *, mode, shift=(0, 0), use_count, allow, repeats=True):
    regs = [(c.encode(), s, e) for c, s, e in REGIONS]
    pairs, nfrag, names, bad = oracle_scan(text, regs, mode=mode, left=shift[0], right=shift[1],
                                           use_count=use_count, miss=True, repeats=repeats,
                                           allow=allow)
    n = len(names) if allow is None else len(allow)
    X = np.zeros((n, len(REGIONS) + 1))
    for (cell, col), w in pairs.items():
        X[cell, col] += w
    names = [b.decode() if isinstance(b, bytes) else b for b in names[:n]]
    return names, X, np.array([nfrag.get(i, 0) for i in range(n)], np.int64), bad


def _kept(want, min_fragments):
    names, X, nfrag, _ = want
    keep = np.flatnonzero(nfrag >= min_fragments)
    return [names[i] for i in keep], X[keep], nfrag[keep]


def _write(tmp, text, gz, member):
    p = tmp / ("f.tsv.gz" if gz else "f.tsv")
    if gz:  # several members when asked (BGZF-like)
        cut = member % (len(text) + 1)
        p.write_bytes(gzip.compress(text[:cut]) + gzip.compress(text[cut:]))
    else:
        p.write_bytes(text)
    return p


def _counted_or_refused(call, path, want, out, spill_dir):
    """``call()``'s result with the spill files under ``spill_dir`` (none may outlive it), or
    ``None`` when it raised the BedParseError the oracle expects: at its line, no ``out`` left."""
    old, tempfile.tempdir = tempfile.tempdir, str(spill_dir)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the "1" vs "chr1" naming hint
            result = call()
    except BedParseError as exc:
        event("a bad line")
        assert want[3] is not None, str(exc)
        assert (exc.path, exc.line) == (str(path), want[3])
        assert out is None or not out.exists()
        return None
    finally:
        tempfile.tempdir = old
        assert list(spill_dir.iterdir()) == []
    assert want[3] is None, f"no error; the oracle stops at line {want[3]}"
    event("counted")
    return result


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=fragment_bytes(), gz=st.booleans(), member=st.integers(0, 400),
       block=st.sampled_from([1, 2, 3, 7, 13, 64, 1 << 20]),
       mode=st.sampled_from(["insertion", "paired-insertion", "fragment"]),
       shift=st.sampled_from([(0, 0), (4, -5)]), use_count=st.booleans(),
       allow=st.sampled_from([None, ["GGTT-1", "NNNN-1", "zelle-\u00e4"]]),
       min_fragments=st.integers(0, 2), memory_mb=st.sampled_from([None, 1e-6]),
       to_file=st.booleans())
def test_matrix_equals_the_oracle_or_names_the_bad_line(tmp_path_factory, text, gz, member,
                                                        block, mode, shift, use_count, allow,
                                                        min_fragments, memory_mb, to_file):
    tmp = tmp_path_factory.mktemp("frag")
    spill_dir = tmp / "spill"
    spill_dir.mkdir()
    path = _write(tmp, text, gz, member)
    want = _oracle(text, mode=mode, shift=shift if mode != "fragment" else (0, 0),
                   use_count=use_count, allow=allow)
    out = tmp / "m.h5ad" if to_file else None
    m = _counted_or_refused(lambda: fragment_matrix(path, TOK,
                                                    read=FragmentOptions(barcodes=allow, min_fragments=min_fragments, mode=mode, shift=shift, block_bytes=block),
                                                    use_count=use_count, memory_mb=memory_mb,
                                                    out=out),
        path, want, out, spill_dir)
    if m is None:
        return
    if to_file:
        m = anndata.read_h5ad(out)
    names, X, nfrag = _kept(want, min_fragments)
    assert m.obs_names.tolist() == names
    np.testing.assert_array_equal(m.X.toarray(), X[:, :-1].astype(np.float32))
    np.testing.assert_array_equal(m.obs["n_fragments"].to_numpy(), nfrag)
    np.testing.assert_array_equal(m.obs["unknown_count"].to_numpy(), X[:, -1])


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=fragment_bytes(), gz=st.booleans(), block=st.sampled_from([1, 5, 64, 1 << 20]),
       allow=st.sampled_from([None, ["T", "AAAC-1"]]), min_fragments=st.integers(0, 2),
       memory_mb=st.sampled_from([None, 1e-6]), to_file=st.booleans())
def test_counts_and_tokens_equal_the_oracle_or_name_the_bad_line(tmp_path_factory, text, gz,
                                                                 block, allow, min_fragments,
                                                                 memory_mb, to_file):
    tmp = tmp_path_factory.mktemp("frag")
    spill_dir = tmp / "spill"
    spill_dir.mkdir()
    path = _write(tmp, text, gz, len(text) // 2)
    want = _oracle(text, mode="fragment", use_count=True, allow=allow, repeats=False)
    out = tmp / "c.gtokc" if to_file else None
    kw = {"barcodes": allow, "min_fragments": min_fragments, "block_bytes": block}
    both = _counted_or_refused(lambda: (fragment_counts(path, TOK, use_count=True, **kw),
                                        tokenize_fragments(
        path, TOK, CellSpec(unknown="region", values=True, use_count=True),
        read=FragmentOptions(**kw), memory_mb=memory_mb, out=out)),
        path, want, out, spill_dir)
    if both is None:
        return
    counted, got = both
    names, X, nfrag = _kept(want, min_fragments)
    assert counted[0] == names
    np.testing.assert_array_equal(counted[1].toarray(), X.astype(np.float32))
    np.testing.assert_array_equal(counted[2], nfrag)
    tok_names, rows = (got.names, got.to_ragged()) if to_file else got
    assert list(tok_names) == names
    u = TOK.universe
    expect = [sorted(list(np.flatnonzero(r[:-1])) + ([u.unk_token_id] if r[-1] else []))
              for r in X]
    assert [sorted(r) for r in rows.to_list()] == expect


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_a_directory_or_fifo_is_refused_as_what_it_is(tmp_path, kind):
    p = tmp_path / "frags.tsv"
    if kind == "dir":
        p.mkdir()
    else:
        os.mkfifo(p)
    for call in (lambda: fragment_matrix(p, TOK), lambda: fragment_counts(p, TOK, use_count=True),
                 lambda: tokenize_fragments(p, TOK, CellSpec(values=True, use_count=True))):
        with pytest.raises(BedParseError, match="frags.tsv: is a directory" if kind == "dir"
                           else "frags.tsv: not a regular file"):
            call()


def test_a_barcode_file_with_a_byte_order_mark_keeps_its_first_barcode(tmp_path):
    """A list saved by a Windows editor starts with a UTF-8 BOM: it is not part of the first
    barcode (which then matched no fragment and its cell was silently dropped)."""
    frags = tmp_path / "f.tsv"
    frags.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\nchr1\t5\t20\tGGTT-1\t1\n")
    allow = tmp_path / "barcodes.tsv"
    allow.write_bytes(b"\xef\xbb\xbfGGTT-1\r\nAAAC-1\r\n")
    m = fragment_matrix(frags, TOK, read=FragmentOptions(barcodes=allow))
    assert m.obs_names.tolist() == ["GGTT-1", "AAAC-1"]
    assert m.obs["n_fragments"].tolist() == [1, 1]


@pytest.mark.parametrize("content, line, problem", [
    (b"\xef\xbb\xbfAAAC-1\nGGTT-1\nA\xe9\n", 3, "not valid UTF-8"),
    (b"AAAC-1\n\nGGTT-1\r\nAAAC-1\n", 4, "'AAAC-1' repeats line 1"),
])
def test_a_bad_barcode_file_is_named_with_its_line(tmp_path, content, line, problem):
    """A barcode list that is not UTF-8 was reported as "corrupt gzip data" (of a plain text
    file); a repeated barcode in a file as a ValueError naming neither file nor line."""
    frags = tmp_path / "f.tsv"
    frags.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\n")
    allow = tmp_path / "barcodes.txt"
    allow.write_bytes(content)
    with pytest.raises(BedParseError, match=f"barcodes.txt:{line}: .*{problem}") as exc:
        fragment_matrix(frags, TOK, read=FragmentOptions(barcodes=allow))
    assert (exc.value.path, exc.value.line) == (str(allow), line)


def test_an_allow_list_of_bytes_is_read_as_the_barcodes_text(tmp_path):
    """Barcodes read with h5py come as bytes: str(b"AAAC-1") is "b'AAAC-1'", which matched
    no fragment, so every allow-listed cell came out empty and misnamed, silently."""
    frags = tmp_path / "f.tsv"
    frags.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\nchr1\t5\t20\tGGTT-1\t1\nchr1\t9\t30\tGGTT-1\t1\n")
    for allow in ([b"GGTT-1", b"AAAC-1"], np.array([b"GGTT-1", b"AAAC-1"])):
        m = fragment_matrix(frags, TOK, read=FragmentOptions(barcodes=allow))
        assert m.obs_names.tolist() == ["GGTT-1", "AAAC-1"]
        assert m.obs["n_fragments"].tolist() == [2, 1]


def test_an_out_path_that_cannot_be_written_is_refused_before_the_count(tmp_path, monkeypatch):
    """out= in a folder that does not exist raised a bare FileNotFoundError, and only after
    the whole file was counted (hours for a large one); out= naming a folder failed there too."""
    frags = tmp_path / "f.tsv"
    frags.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\n")
    counted = []
    real = fragmatrix._count
    monkeypatch.setattr(fragmatrix, "_count", lambda *a, **k: counted.append(1) or real(*a, **k))
    with pytest.raises(GenotokError, match="no-such-folder/m.h5ad: its folder does not exist"):
        fragment_matrix(frags, TOK, out=tmp_path / "no-such-folder" / "m.h5ad")
    with pytest.raises(GenotokError, match="is a directory"):
        fragment_matrix(frags, TOK, out=tmp_path, overwrite=True)
    assert counted == []
    with pytest.raises(GenotokError, match="m.h5ad: writing the .h5ad failed"):
        write_h5ad_rows(tmp_path / "no-such-folder" / "m.h5ad", [], obs=pd.DataFrame(),
                        var=pd.DataFrame())


def test_crafted_barcodes_do_not_collide_in_the_name_table(tmp_path):
    """A file of crafted barcodes used to put every one on one hash: each new barcode probed
    all the others (16,000 of them: 0.9 s, 65,536: 13.7 s, and unbounded with longer names).
    The table's key is random and its mixing not linear: they spread; the counts stay right."""
    from genotok.kernels import fragscan as FS

    names = _colliding_names(4096, 0)
    buf = np.frombuffer(b"".join(names), np.uint8)
    bounds = np.arange(len(names) + 1, dtype=np.int64) * 16
    t = FS.add_names(buf, bounds, *FS.name_table())
    assert t[-1] == len(names)
    assert np.unique(t[2][:len(names), 0]).size == len(names)  # one hash each
    again = FS.add_names(buf, bounds, *FS.name_table())  # another table, another key
    assert (again[2][:len(names), 0] != t[2][:len(names), 0]).any()
    frags = tmp_path / "f.tsv"
    frags.write_bytes(b"".join(b"chr1\t5\t20\t" + b + b"\t1\n" for b in names[:500]) * 2)
    m = fragment_matrix(frags, TOK, read=FragmentOptions(block_bytes=4096))
    assert m.obs_names.tolist() == [b.decode() for b in names[:500]]
    assert m.obs["n_fragments"].tolist() == [2] * 500


def test_a_line_beyond_the_bound_is_refused_at_its_line(tmp_path, monkeypatch):
    """A .gz of one endless line (a 1.5 MB file of 1.5 GB of 'A') inflated into memory until
    it ran out (MemoryError after 30 s, or the process killed); a line beyond
    MAX_LINE_BYTES is refused at its line number, and a long line that fits is read whole,
    its buffer doubling (it was copied once per block: quadratic with small blocks)."""
    monkeypatch.setattr(fragmatrix, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "f.tsv.gz"
    p.write_bytes(gzip.compress(b"#h\nchr1\t5\t20\tAAAC-1\t1\n" + b"A" * 5000 + b"\nchr1\t1\t2\tB\n"))
    for block in (1, 64, 1000):  # (a line within one larger block is the kernel's to judge)
        with pytest.raises(BedParseError, match=r"f.tsv.gz:3: a line of more than"):
            fragment_matrix(p, TOK, read=FragmentOptions(block_bytes=block))
    monkeypatch.undo()
    long = "G" * 100_000
    q = tmp_path / "long.tsv"
    q.write_text(f"chr1\t5\t20\t{long}\t1\nchr1\t5\t20\tT\t1\nchr1\t5\t20\t{long}\t1\n")
    m = fragment_matrix(q, TOK, read=FragmentOptions(block_bytes=1))
    assert m.obs_names.tolist() == [long, "T"] and m.obs["n_fragments"].tolist() == [2, 1]


@pytest.mark.parametrize("line, problem", [
    (b"chr1\t5\t9223372036854775807\tA\t1", "end is not a non-negative integer .of at most 18"),
    (b"chr1\t4611686018427387904\t4611686018427387905\tA\t1", "start is not .* at most 18"),
    (b"chr1\t5\t9\tA\t99999999999999999999", "count .* at most 18 digits"),
])
def test_a_number_beyond_the_parser_says_why(tmp_path, line, problem):
    """2**63 - 1 is a non-negative integer: "is not a non-negative integer" alone sent the
    user looking for a sign or a typo; the message says the limit."""
    p = tmp_path / "f.tsv"
    p.write_bytes(b"chr1\t5\t20\tA\t1\n" + line + b"\n")
    with pytest.raises(BedParseError, match=f"f.tsv:2: {problem}"):
        fragment_matrix(p, TOK)


def test_an_existing_corpus_is_refused_before_the_count(tmp_path, monkeypatch):
    """tokenize_fragments(out=an existing corpus) counted the whole file (hours, and GBs
    spilled, for a large one) before the writer refused it; fragment_matrix checked first."""
    from genotok.singlecell import fragments

    frags = tmp_path / "f.tsv"
    frags.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\n")
    out = tmp_path / "c.gtokc"
    tokenize_fragments(frags, TOK, CellSpec(values=True, use_count=True), out=out)
    counted = []
    real = fragments._counts
    monkeypatch.setattr(fragments, "_counts", lambda *a, **k: counted.append(1) or real(*a, **k))
    with pytest.raises(FileExistsError, match="c.gtokc exists; pass overwrite=True"):
        tokenize_fragments(frags, TOK, CellSpec(values=True, use_count=True), out=out)
    assert counted == []
    assert len(tokenize_fragments(frags, TOK, CellSpec(values=True, use_count=True), out=out,
                                  overwrite=True)) == 1


@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_non_utf8_barcode_is_refused_before_its_pairs_are_spilled(tmp_path, monkeypatch,
                                                                   n_threads):
    """A barcode that is no UTF-8 is found when the block's new names are decoded; its piece's
    pairs were still added and, spilling (``memory_mb``), folded over the decoded cells only:
    an AssertionError ("a (cell, column) key is out of range") instead of the file's line
    (found by tests/_frag_fuzz_driver.py). Nothing of the bad line's piece is counted now."""
    p = tmp_path / "f.tsv"
    p.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\n" + b"chr1\t5\t20\tA\xffB\t1\n"
                  + b"chr1\t0\t9\tGGTT-1\t2\n" * 5)
    monkeypatch.setattr(fragmatrix, "PIECE_BYTES", 1)
    for memory_mb in (None, 1e-6):
        with pytest.raises(BedParseError, match=r"f\.tsv:2: the barcode b'A\\xffB' is not"):
            fragment_matrix(p, TOK, read=FragmentOptions(block_bytes=1 << 20),
                            memory_mb=memory_mb, n_threads=n_threads)


def test_a_byte_order_mark_is_dropped_in_every_container(tmp_path):
    """A plain or gzip file's BOM was dropped, a BGZF file's kept: its first chromosome was
    '\\ufeffchr1' and that line's fragment silently hit nothing (found by
    tests/_frag_fuzz_driver.py)."""
    from genotok.bgzf import write_bgzf

    text = b"\xef\xbb\xbfchr1\t5\t20\tA\t1\nchr1\t5\t20\tB\t1\n"
    (tmp_path / "a.tsv").write_bytes(text)
    (tmp_path / "b.tsv.gz").write_bytes(gzip.compress(text))
    write_bgzf(tmp_path / "c.tsv.gz", text)
    for name in ("a.tsv", "b.tsv.gz", "c.tsv.gz"):
        m = fragment_matrix(tmp_path / name, TOK, read=FragmentOptions(mode="fragment"))
        assert m.obs_names.tolist() == ["A", "B"], name
        assert m.X.toarray()[:, 0].tolist() == [1.0, 1.0], name


@pytest.mark.parametrize("block", [1 << 40, 2 ** 63 - 1])
def test_a_huge_block_size_reads_as_the_default(tmp_path, block):
    """block_bytes is a caller's integer sizing a buffer: 1 TiB raised MemoryError and
    2**63 - 1 a BedParseError calling the file's gzip data corrupt; blocks are at most
    MAX_BLOCK_BYTES."""
    p = tmp_path / "f.tsv"
    p.write_bytes(b"chr1\t5\t20\tAAAC-1\t1\n")
    for path in (p, tmp_path / "f.tsv.gz"):
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(p.read_bytes()))
        m = fragment_matrix(path, TOK, read=FragmentOptions(block_bytes=block))
        assert m.obs_names.tolist() == ["AAAC-1"]
