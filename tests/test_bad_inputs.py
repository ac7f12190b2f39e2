"""A catalogue of bad inputs: each gets its own exception, a message that names the file (and
the line, for text) and the problem, and leaves nothing partial behind."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import numpy as np
import pytest

import genotok
from genotok import (
    BedParseError,
    Corpus,
    CorpusWriter,
    GtokFormatError,
    RegionParseError,
    RegionSet,
    Tokenizer,
    Universe,
    UniverseError,
    UniverseMismatchError,
    read_gtok,
    write_gtok,
)
from genotok.formats.corpus.layout import PREAMBLE
from genotok.pipeline.run import pretokenize
from genotok import AnnDataOptions

GOOD = "chr1\t100\t200\nchr1\t300\t400\n"

# (name, file bytes, expected line or None, message pattern)
BED_CASES = [
    ("too_few_columns", b"chr1\t100\t200\nchr1\t300\n", 2, "too few columns"),
    ("non_integer", b"chr1\t100\t200\nchr1\tabc\t400\n", 2, "start is not a non-negative integer"),
    ("non_integer_end", b"chr1\t1\t2\nchr1\t100\t2e5\n", 2, "end is not"),
    ("negative", b"chr1\t-100\t200\n", 1, "negative coordinate"),
    ("overflow", b"chr1\t1\t123456789012345678901234\n", 1, "larger than"),
    ("end_before_start", b"chr1\t100\t200\nchr1\t500\t400\n", 2, "end is before start"),
    ("mixed_tab_space", b"chr1\t100\t200\nchr1 300\t400\n", 2, "mixed tab and space"),
    ("stray_header", b"chr1\t100\t200\nchrom\tstart\tend\n", 2, "start is not"),
    ("nul_byte", b"chr1\t100\t200\nchr1\t3\x0000\t400\n", 2, "binary data"),
    ("binary_junk", b"\x89PNG\r\n\x1a\n\x00\x00", 3, "binary data"),  # the first NUL
    ("non_utf8_name", b"chr1\t100\t200\nchr\xff\t1\t2\n", 2, "not valid UTF-8"),
    ("empty_name", b"\t100\t200\n", 1, "empty chromosome name"),
]


@pytest.mark.parametrize("name, data, line, pattern", BED_CASES, ids=[c[0] for c in BED_CASES])
def test_bad_bed(tmp_path, name, data, line, pattern):
    path = tmp_path / f"{name}.bed"
    path.write_bytes(data)
    with pytest.raises(BedParseError, match=pattern) as info:
        RegionSet.from_bed(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")
    # the same through the tokenizer, as a user meets it
    tok = Tokenizer(["chr1:0-1000"])
    if name == "end_before_start":  # a query file gtars tokenizes: the line hits nothing
        with pytest.warns(UserWarning, match=re.escape(
                f"{name}.bed:{line}: 1 line(s) with end before start (first: chr1:500-400) "
                "hit nothing")):
            assert tok.encode(str(path)).tolist() == [0]
        tok = Tokenizer(["chr1:0-1000"], strict=True)  # refuses it
    with pytest.raises(BedParseError, match=re.escape(f"{name}.bed:{line}:")):
        tok.encode(str(path))


@pytest.mark.parametrize("name, mutate, pattern", [
    ("truncated", lambda b: b[: len(b) // 2], "truncated gzip"),
    ("corrupt", lambda b: b[:12] + bytes(x ^ 0xFF for x in b[12:40]) + b[40:], "gzip"),
], ids=["truncated_gz", "corrupt_gz"])
def test_bad_gzip(tmp_path, name, mutate, pattern):
    path = tmp_path / f"{name}.bed.gz"
    path.write_bytes(mutate(gzip.compress(GOOD.encode() * 500)))
    with pytest.raises(BedParseError, match=pattern) as info:
        RegionSet.from_bed(path)
    assert str(path) in str(info.value)


def test_missing_and_directory(tmp_path):
    with pytest.raises(BedParseError, match=r"nope.bed: no such file"):
        RegionSet.from_bed(tmp_path / "nope.bed")
    with pytest.raises(BedParseError, match="is a directory"):
        RegionSet.from_bed(tmp_path)


@pytest.mark.parametrize("data", [b"", b"\n", b"#c\n", b"chr1\t1\t2\r\nchr1\t3\t4\r\n", b"chr1\t1\t2"],
                         ids=["empty", "blank", "comment_only", "crlf", "no_final_newline"])
def test_valid_edge_files(tmp_path, data):
    path = tmp_path / "x.bed"
    path.write_bytes(data)
    rs = RegionSet.from_bed(path)
    assert len(rs) == data.count(b"chr1")


def test_empty_universe(tmp_path):
    path = tmp_path / "u.bed"
    path.write_text("# nothing\n")
    with pytest.raises(UniverseError, match=rf"{re.escape(str(path))}: the universe has no regions"):
        Universe.from_bed(path)


def test_duplicate_universe_policy(tmp_path):
    path = tmp_path / "u.bed"
    path.write_text("chr1\t1\t2\nchr1\t1\t2\n")
    with pytest.raises(UniverseError, match=rf"{re.escape(str(path))}:2: 1 duplicate line"):
        Universe.from_bed(path, duplicates="error")
    with pytest.warns(UserWarning, match="duplicate"):
        assert Universe.from_bed(path).vocab_size == 8  # gtars' vocabulary: one region
    with pytest.warns(UserWarning, match="duplicate"):
        assert Universe.from_bed(path, duplicates="lines").vocab_size == 9


def test_scaffold_assembly_and_big_coordinates(tmp_path):
    path = tmp_path / "u.bed"
    path.write_text("".join(f"scaffold{i}\t{2**33 + i}\t{2**33 + i + 5}\n" for i in range(100_500)))
    tok = Tokenizer.from_bed(path)
    assert tok.encode([("scaffold100499", 2**33 + 100_500, 2**33 + 100_501)]).tolist() == [100_499]


def test_chromosome_naming_mismatch_warns_with_the_fix(tmp_path):
    tok = Tokenizer(["chr1:0-100"])
    q = tmp_path / "ensembl.bed"
    q.write_text("1\t10\t20\n")
    with pytest.warns(UserWarning, match=r"ensembl.bed: .*'chr' prefix.*'1' vs 'chr1'"):
        tok.encode(str(q))


def test_bad_region_strings_report_positions():
    with pytest.raises(RegionParseError, match=r"\[1\] 'chr1:x-5'"):
        RegionSet.from_strings(["chr1:1-5", "chr1:x-5"])


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


def _corpus(tmp_path, name="c.gtokc", vocab=100, fingerprint="fp"):
    path = tmp_path / name
    with CorpusWriter(path, vocab_size=vocab, fingerprint=fingerprint) as w:
        for i in range(20):
            w.append(np.arange(i % 7) + 1)
    return path


def _patch(path: Path, offset: int, data: bytes) -> Path:
    raw = bytearray(path.read_bytes())
    raw[offset:offset + len(data)] = data
    out = path.with_name("bad_" + path.name)
    out.write_bytes(bytes(raw))
    return out


def _fields(path: Path):
    return PREAMBLE.unpack(path.read_bytes()[:PREAMBLE.size])


def test_corpus_offsets_out_of_bounds(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, _fields(p)[10] + 8 * 20, (10**9).to_bytes(8, "little"))
    with pytest.raises(GtokFormatError, match=rf"{re.escape(str(bad))}: corrupt record offsets"):
        Corpus.open(bad)


def test_corpus_offsets_decreasing(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, _fields(p)[10] + 8 * 5, (1).to_bytes(8, "little"))
    with pytest.raises(GtokFormatError, match="corrupt record offsets"):  # refused on open
        Corpus.open(bad)
    problems = Corpus.open(bad, trusted=True).verify()
    assert any("offsets decrease at record" in x and str(bad) in x for x in problems)


def test_corpus_ids_beyond_vocab(tmp_path):
    p = _corpus(tmp_path, vocab=7)
    bad = _patch(p, _fields(p)[8], (9).to_bytes(2, "little"))
    assert any("token id 9 >= vocab_size 7" in x for x in Corpus.open(bad).verify())


def test_corpus_checksum_mismatch(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, _fields(p)[8] + 4, b"\x05")
    with pytest.raises(GtokFormatError, match=rf"{re.escape(str(bad))}: tokens checksum mismatch"):
        Corpus.open(bad, verify=True)


def test_corpus_wrong_universe(tmp_path):
    p = _corpus(tmp_path)
    with pytest.raises(UniverseMismatchError, match=re.escape(str(p))):
        Corpus.open(p, expect=Tokenizer(["chr1:0-10"]))


def test_corpus_newer_version(tmp_path):
    p = _corpus(tmp_path)
    bad = _patch(p, 8, (2).to_bytes(2, "little"))
    with pytest.raises(GtokFormatError, match=r"format 2\.0 is newer"):
        Corpus.open(bad)


def test_corpus_truncated(tmp_path):
    p = _corpus(tmp_path)
    cut = p.with_name("cut.gtokc")
    cut.write_bytes(p.read_bytes()[:200])
    with pytest.raises(GtokFormatError, match=r"cut.gtokc: truncated or corrupt"):
        Corpus.open(cut)


def test_corpus_writer_bad_id_leaves_nothing(tmp_path):
    with pytest.raises(GtokFormatError, match=r"record 0 has id 50"):
        with CorpusWriter(tmp_path / "c.gtokc", vocab_size=50, fingerprint="fp") as w:
            w.append([1, 50])
    assert list(tmp_path.iterdir()) == []


def test_gtok_write_refuses_negative_ids(tmp_path):
    with pytest.raises(GtokFormatError, match="x.gtok"):
        write_gtok([-1], tmp_path / "x.gtok")
    assert list(tmp_path.iterdir()) == []


def test_pipeline_bad_input_leaves_no_partial_shard(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.bed").write_text(GOOD)
    (d / "b.bed").write_bytes(b"chr1\t1\x00\t2\n")
    tok = Tokenizer.from_bed(genotok.examples_dir() / "universe.bed")
    with pytest.raises(BedParseError, match=r"b.bed:1: binary data"):
        pretokenize(d, tok, tmp_path / "out", progress=False)
    leftovers = [p.name for p in (tmp_path / "out").iterdir()]
    assert not [n for n in leftovers if n.endswith(".gtokc") or n.endswith(".tmp") or n == "manifest.json"]


def test_bad_config(tmp_path):
    (tmp_path / "t.toml").write_text("universe = [unclosed\n")
    with pytest.raises(UniverseError, match=r"t.toml: not valid TOML"):
        Tokenizer.from_config(tmp_path / "t.toml")
    with pytest.raises(UniverseError, match=r"missing.toml: no such"):
        Tokenizer.from_config(tmp_path / "missing.toml")


# ------------------------------------------------------------------ AnnData / .h5ad
def _h5ad(tmp_path, var_names=None, X=None, name="cells.h5ad"):
    ad = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp

    var_names = var_names or ["chr1:0-100", "chr1:100-200", "chr2:0-50"]
    X = sp.csr_matrix(np.array([[1, 0, 2], [0, 3, 0]], dtype=np.float32)) if X is None else X
    path = tmp_path / name
    ad.AnnData(X=X, var=pd.DataFrame(index=var_names)).write_h5ad(path)
    return path


TOK3 = ["chr1:0-100", "chr1:100-200", "chr2:0-50"]


def test_anndata_without_region_information(tmp_path):
    from genotok import AnnDataError, tokenize_anndata

    path = _h5ad(tmp_path, var_names=["geneA", "geneB", "geneC"])
    with pytest.raises(AnnDataError, match=r"cells.h5ad.*(region|chr)") as info:
        tokenize_anndata(path, Tokenizer(TOK3))
    assert "geneA" in str(info.value)  # says what was found


def test_anndata_unparsable_var_names_listed(tmp_path):
    from genotok import AnnDataError, GenotokError, tokenize_anndata

    path = _h5ad(tmp_path, var_names=["chr1:0-100", "chr1:oops", "chr2:0-50"])
    with pytest.raises(GenotokError, match=r"chr1:oops") as info:
        tokenize_anndata(path, Tokenizer(TOK3))
    assert isinstance(info.value, (AnnDataError, RegionParseError))


def test_anndata_negative_counts(tmp_path):
    import scipy.sparse as sp

    from genotok import AnnDataError, tokenize_anndata

    path = _h5ad(tmp_path, X=sp.csr_matrix(np.array([[1, 0, -2], [0, 3, 0]], dtype=np.float32)))
    with pytest.raises(AnnDataError, match=r"cells.h5ad.*negative"):
        tokenize_anndata(path, Tokenizer(TOK3))


def test_anndata_non_numeric_matrix(tmp_path):
    h5py = pytest.importorskip("h5py")
    from genotok import AnnDataError, GenotokError, tokenize_anndata

    path = _h5ad(tmp_path)
    with h5py.File(path, "r+") as f:
        n = f["X/data"].shape[0]
        del f["X/data"]
        f["X/data"] = np.array([b"x"] * n)
    with pytest.raises(GenotokError, match=r"cells.h5ad") as info:
        tokenize_anndata(path, Tokenizer(TOK3))
    assert isinstance(info.value, AnnDataError)


def test_anndata_backed_matrix_neither_csr_nor_csc(tmp_path):
    h5py = pytest.importorskip("h5py")
    from genotok import AnnDataError, tokenize_anndata

    path = _h5ad(tmp_path)
    with h5py.File(path, "r+") as f:
        f["X"].attrs["encoding-type"] = "coo_matrix"
    with pytest.raises(AnnDataError, match=r"cells.h5ad.*coo_matrix"):
        tokenize_anndata(path, Tokenizer(TOK3))


def test_anndata_corpus_output_leaves_nothing_on_error(tmp_path):
    import scipy.sparse as sp

    from genotok import AnnDataError, tokenize_anndata

    path = _h5ad(tmp_path, X=sp.csr_matrix(np.array([[1, 0, 2], [0, -3, 0]], dtype=np.float32)))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(AnnDataError):
        tokenize_anndata(path, Tokenizer(TOK3), read=AnnDataOptions(chunk_rows=1),
                         out=out / "c.gtokc")
    assert list(out.iterdir()) == []


# ------------------------------------------------------------------ matrices in memory (issue 19)
_M = np.array([[1, 0, 2], [0, 3, 0], [1, 1, 1], [0, 0, 5]], dtype=np.float32)


def _poke(X, name, fn):
    """Change one array of a scipy matrix behind scipy's back, as a caller can."""
    setattr(X, name, fn(getattr(X, name).copy()))
    return X


def _set_at(pos, value, dtype=None):
    def fn(a):
        a = a.astype(dtype or a.dtype)
        a[pos] = value
        return a
    return fn


# (name, format, array, change, message pattern)
MEMORY_CASES = [
    ("csr_indptr_starts_at_1", "csr", "indptr", _set_at(0, 1), r"indptr .*starts at 1"),
    ("csr_indptr_shortened", "csr", "indptr", lambda a: a[:-1],
     r"indptr .*has 4 entries, expected 5"),
    ("csr_indptr_past_nnz", "csr", "indptr", _set_at(-1, 99), r"indptr .*ends at 99"),
    ("csr_indptr_decreasing", "csr", "indptr", _set_at(2, 1), r"indptr .*decreases at entry"),
    ("csr_index_out_of_range", "csr", "indices", _set_at(0, 3), r"column index is outside"),
    ("csr_index_negative", "csr", "indices", _set_at(0, -1), r"row 0, .*column -1"),
    ("csr_index_float", "csr", "indices", lambda a: a.astype(np.float64),
     r"must hold integers, got dtype float64"),
    ("csr_indptr_float", "csr", "indptr", lambda a: a.astype(np.float32),
     r"must hold integers, got dtype float32"),
    ("csr_data_short", "csr", "data", lambda a: a[:-1], r"data has shape \(6,\), expected"),
    ("csr_data_strings", "csr", "data", lambda a: a.astype("S3"), r"must be numeric"),
    ("csr_data_2d", "csr", "data", lambda a: a.reshape(-1, 1), r"data has shape \(7, 1\)"),
    ("csc_indices_2d", "csc", "indices", lambda a: a.reshape(-1, 1), r"must be one-dimensional"),
    ("csc_row_1e9", "csc", "indices", _set_at(0, 10**9, np.int64),
     r"row index 1000000000 at position 0 is out of range \[0, 4\)"),
    ("csc_row_5_of_4", "csc", "indices", _set_at(0, 5), r"row index 5 .* \[0, 4\)"),
    ("csc_row_minus_1000", "csc", "indices", _set_at(0, -1000), r"row index -1000"),
    ("csc_indptr_decreasing", "csc", "indptr", _set_at(2, 1),
     r"indptr \(CSC, per column\) decreases"),
    ("coo_row_1e9", "coo", "row", _set_at(0, 10**9, np.int64), r"row index 1000000000"),
    ("coo_col_negative", "coo", "col", _set_at(1, -4), r"column index -4"),
    ("coo_data_short", "coo", "data", lambda a: a[:-1], r"data has 6 entries, expected 7"),
    ("bsr_index_5", "bsr", "indices", _set_at(0, 5), r"column index 5 .* \[0, 3\)"),
    ("lil_rows_short", "lil", "rows", lambda a: a[:2], r"lil rows has 2 entries, expected 4"),
]


@pytest.mark.parametrize("name, fmt, array, change, pattern", MEMORY_CASES,
                         ids=[c[0] for c in MEMORY_CASES])
def test_bad_matrices_in_memory(name, fmt, array, change, pattern):
    """Arrays that would index memory are checked before scipy converts them or a kernel
    reads them: scipy's tocsr() on a CSC row index of 10**9 segfaulted; a CSR indptr starting
    at 1 shifted every cell; a shortened indptr silently dropped cells."""
    import scipy.sparse as sp

    from genotok import AnnDataError
    from genotok.singlecell.sources import _MemorySource

    X = _poke(sp.csr_matrix(_M).asformat(fmt), array, change)
    with pytest.raises(AnnDataError, match=pattern):
        _MemorySource(X, "X")


# values do not index memory: the kernels check them, with the row and the stored entry
VALUE_CASES = [
    ("csr_data_nan", "csr", "data", _set_at(0, np.nan), r"NaN or infinite value at row 0"),
    ("csr_data_inf", "csr", "data", _set_at(3, np.inf), r"NaN or infinite value at row 2"),
    ("csc_data_negative", "csc", "data", _set_at(1, -2), r"negative value .* at row 2"),
]
ANNDATA_CASES = [c for c in MEMORY_CASES if c[1] in ("csr", "csc")] + VALUE_CASES


@pytest.mark.parametrize("name, fmt, array, change, pattern", ANNDATA_CASES,
                         ids=[c[0] for c in ANNDATA_CASES])
def test_bad_matrices_in_an_anndata(name, fmt, array, change, pattern):
    """The same, through tokenize_anndata on an in-memory AnnData (the message names X)."""
    anndata = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp

    from genotok import AnnDataError, tokenize_anndata

    a = anndata.AnnData(sp.csr_matrix(_M).asformat(fmt),
                        var=pd.DataFrame(index=["chr1:0-100", "chr1:100-200", "chr2:0-50"]))
    _poke(a.X, array, change)
    with pytest.raises(AnnDataError, match=rf"^X: .*{pattern}"):
        tokenize_anndata(a, Tokenizer(TOK3))


def test_a_lying_shape_is_refused_before_scipy_sizes_a_conversion_by_it():
    """A CSC matrix claiming 10**12 rows: tocsr() would allocate a 10**12-entry indptr."""
    anndata = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp

    from genotok import AnnDataError, tokenize_anndata

    a = anndata.AnnData(sp.csc_matrix(_M),
                        var=pd.DataFrame(index=["chr1:0-100", "chr1:100-200", "chr2:0-50"]))
    a.X._shape = (10**12, 3)
    with pytest.raises(AnnDataError, match=r"X: 1000000000000 matrix rows but 4 cells in obs"):
        tokenize_anndata(a, Tokenizer(TOK3))


def test_every_sparse_format_gives_the_same_cells():
    import scipy.sparse as sp

    from genotok.singlecell.sources import _MemorySource

    ref = _MemorySource(sp.csr_matrix(_M), "X")
    for fmt in ("csc", "coo", "bsr", "lil", "dia", "dok"):
        src = _MemorySource(sp.csr_matrix(_M).asformat(fmt), "X")
        got = sp.csr_matrix((src.data, src.indices, src.indptr), shape=_M.shape)
        assert (got != sp.csr_matrix((ref.data, ref.indices, ref.indptr))).nnz == 0, fmt
    dense = _MemorySource(_M, "X")
    assert dense.kind == "dense" and (dense.n_rows, dense.n_cols) == _M.shape


@pytest.mark.parametrize("shape, pattern", [
    ((4, 3, 1), "expected a 2-D matrix"), ((12,), "expected a 2-D matrix"),
])
def test_dense_matrices_of_the_wrong_shape(shape, pattern):
    from genotok import AnnDataError
    from genotok.singlecell.sources import _MemorySource

    with pytest.raises(AnnDataError, match=pattern):
        _MemorySource(_M.reshape(shape), "X")


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
