"""Every universe-like BED in ``../shared/data/real/`` against gtars: the same vocabulary
(``get_vocab()``, ``vocab_size``), and for the query files there the same tokens.

geniml's ``universe.bed`` repeats 55 lines: gtars' vocabulary on it is the distinct regions in
order of first appearance, and so is genotok's; gtars' *tokenization* on such a file is wrong
(its ids decode to other regions), so there the tokens are compared with gtars' on the same
universe without its repeated lines, where gtars is right (same vocabulary, so same ids).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from genotok import RegionSet, Tokenizer, Universe, UniverseError
from genotok.errors import BedParseError

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"
if not REAL.is_dir():
    pytest.skip(f"the real files are not here ({REAL}: clone the project beside ../shared)",
                allow_module_level=True)
gtars_tok = pytest.importorskip("gtars.tokenizers",
                                reason="gtars is the reference (pip install gtars)")
GTokenizer = gtars_tok.Tokenizer

#: BED files gtars loads as a universe (narrowPeak, BED3..BED12, gzip or not); fragment files
#: and the 1.7 MB liver fragments are not universes
UNIVERSES = sorted(
    str(p.relative_to(REAL)) for pattern in ("*.bed", "*.bed.gz", "*.narrowPeak", "*.narrowPeak.gz")
    for p in REAL.rglob(pattern) if "fragments" not in p.name and "fragments" not in p.parent.name)
QUERIES = sorted(str(p.relative_to(REAL)) for p in [
    *REAL.glob("geniml/to_tokenize*.bed"), *REAL.glob("geniml/to_tokenize/*.bed"),
    *REAL.glob("geniml/hg38_sample/*.bed"), REAL / "gtars" / "to_tokenize.bed",
    REAL / "gtars" / "tokenizers" / "peaks.scored.bed", REAL / "gtars" / "dummy.narrowPeak"])
REVERSED_QUERY = "gtars/tokenizers/peaks.scored.bed"  # its line 25 has end < start


def _quiet(make):
    """``make()`` with genotok's warnings about the file (repeated and reversed lines) off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return make()


def _gtars(path: Path):
    try:
        return GTokenizer.from_bed(str(path))
    except BaseException as exc:  # a Rust panic is a BaseException
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None


def _lines(path: Path) -> list[str]:
    rs = _quiet(lambda: RegionSet.from_bed(path, reversed="keep"))
    return rs.to_strings()


def test_the_files_are_found():
    assert "geniml/universe.bed" in UNIVERSES and len(UNIVERSES) >= 20
    assert REVERSED_QUERY in QUERIES and len(QUERIES) >= 12


@pytest.mark.parametrize("name", UNIVERSES)
def test_vocabulary_is_gtars(name):
    path = REAL / name
    ref = _gtars(path)
    if ref is None:
        pytest.skip(f"gtars does not load {name} as a universe")
    tok = _quiet(lambda: Tokenizer.from_bed(path))
    assert tok.vocab_size == ref.vocab_size == len(ref.get_vocab())
    assert tok.get_vocab() == ref.get_vocab()
    assert tok.special_tokens_map == ref.special_tokens_map
    assert tok.unk_token_id == ref.unk_token_id and tok.sep_token_id == ref.sep_token_id
    vocab = ref.get_vocab()
    regions = sorted(vocab, key=vocab.get)[:tok.universe.n_regions]
    assert tok.convert_tokens_to_ids(regions) == ref.convert_tokens_to_ids(regions)
    ids = list(range(tok.vocab_size))
    assert tok.decode(ids) == sorted(vocab, key=vocab.get)  # each id its region in the vocabulary
    if tok.universe.n_duplicates == 0:  # gtars decodes by line position (wrong on repeats)
        assert tok.decode(ids) == ref.decode(ids)


def test_geniml_universe_with_repeated_lines(tmp_path):
    path = REAL / "geniml" / "universe.bed"
    lines = _lines(path)
    assert len(lines) == 2433 and len(set(lines)) == 2378  # 55 repeated lines
    with pytest.warns(UserWarning, match=r"universe.bed:134: 55 duplicate line\(s\) .* the first "
                                         r"repeats line 133, chr1:194583954-194584474"):
        tok = Tokenizer.from_bed(path)
    assert tok.vocab_size == 2385 == GTokenizer.from_bed(str(path)).vocab_size
    assert tok.universe.line_ids.size == 2433 and tok.universe.n_duplicates == 55
    assert tok.convert_ids_to_tokens(tok.universe.line_ids.tolist()) == lines  # each line its id
    # the same regions written once each: the same vocabulary and fingerprint
    uniq = tmp_path / "uniq.bed"
    uniq.write_text("".join(s.replace(":", "\t").replace("-", "\t") + "\n"
                            for s in dict.fromkeys(lines)))
    assert Tokenizer.from_bed(uniq).universe == tok.universe
    # the line-position vocabulary is an option, and "error" refuses
    with pytest.warns(UserWarning, match="ids stay line positions"):
        assert Tokenizer.from_bed(path, duplicates="lines").vocab_size == 2433 + 7
    with pytest.raises(Exception, match=r"universe.bed:134: 55 duplicate"):
        Tokenizer.from_bed(path, duplicates="error")


def _deduped(path: Path, tmp_path: Path) -> Path:
    """``path``'s regions, each once, in order of first appearance: where gtars is right."""
    lines = _lines(path)
    if len(set(lines)) == len(lines):
        return path
    out = tmp_path / "deduped.bed"
    out.write_text("".join(s.replace(":", "\t").replace("-", "\t") + "\n"
                           for s in dict.fromkeys(lines)))
    return out


@pytest.mark.parametrize("uname", UNIVERSES)
def test_query_files_give_gtars_tokens(tmp_path, uname):
    upath = REAL / uname
    ref = _gtars(_deduped(upath, tmp_path))
    if ref is None:
        pytest.skip(f"gtars does not load {uname} as a universe")
    tok = _quiet(lambda: Tokenizer.from_bed(upath))
    assert tok.get_vocab() == ref.get_vocab()  # so ids compare too
    for qname in QUERIES:
        qpath = str(REAL / qname)
        if qname == REVERSED_QUERY:
            with pytest.warns(UserWarning, match=r"peaks.scored.bed:25: 1 line\(s\) with end "
                                                 r"before start .* hit nothing"):
                got = tok(qpath)["input_ids"]
        else:
            got = tok(qpath)["input_ids"]
        assert got == ref(qpath)["input_ids"], (uname, qname)
        assert tok.decode(got) == ref.tokenize(qpath), (uname, qname)


def test_a_reversed_query_line_hits_nothing_and_strict_refuses():
    upath, qpath = REAL / "gtars" / "tokenizers" / "peaks.bed", REAL / REVERSED_QUERY
    ref = GTokenizer.from_bed(str(upath))
    tok = Tokenizer.from_bed(upath)
    with pytest.warns(UserWarning, match="peaks.scored.bed:25: "):
        assert tok.tokenize(str(qpath)) == ref.tokenize(str(qpath))
    with pytest.raises(BedParseError, match=r"peaks.scored.bed:25: end is before start"):
        Tokenizer.from_bed(upath, strict=True).encode(str(qpath))
    with pytest.raises(BedParseError, match=r"peaks.scored.bed:25: end is before start"):
        RegionSet.from_bed(qpath)  # a plain read refuses; reversed="drop" is the tokenizer's


def test_gtok_files_of_a_universe_with_repeated_lines_are_gtars(tmp_path):
    """A `.gtok` of geniml's universe holds the ids of gtars' vocabulary: byte-identical to
    what gtars writes for the same hits (on the universe without repeats, where its ids are
    right), and decoded back to the regions really hit."""
    from genotok import read_gtok, write_gtok

    gutils = pytest.importorskip("gtars.utils")
    upath = REAL / "geniml" / "universe.bed"
    tok = _quiet(lambda: Tokenizer.from_bed(upath))
    ref = GTokenizer.from_bed(str(_deduped(upath, tmp_path)))
    qpath = str(REAL / "geniml" / "to_tokenize2.bed")
    ids = tok(qpath)["input_ids"]
    write_gtok(ids, tmp_path / "ours.gtok")
    gutils.write_tokens_to_gtok(str(tmp_path / "theirs.gtok"), ref(qpath)["input_ids"])
    assert (tmp_path / "ours.gtok").read_bytes() == (tmp_path / "theirs.gtok").read_bytes()
    assert tok.decode(read_gtok(tmp_path / "ours.gtok").tolist()) == ref.tokenize(qpath)


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


@pytest.mark.parametrize("gz", [False, True])
def test_a_duplicate_line_is_named_by_the_parsers_line_numbers(tmp_path, gz):
    """A CR inside a line is text to the parser; the duplicate's line was found by reading
    the file in text mode, where a lone CR also ends a line: the numbers were one too high."""
    import gzip

    path = tmp_path / "u.bed.gz" if gz else tmp_path / "u.bed"
    text = b"chr1\t1\t2\tna\rme\nchr1\t5\t6\r\nchr1\t5\t6\n"
    path.write_bytes(gzip.compress(text) if gz else text)
    with pytest.raises(UniverseError, match=r"u\.bed(\.gz)?:3: 1 duplicate line.*repeats line 2"):
        Universe.from_bed(path, duplicates="error")


@pytest.mark.parametrize("text", [b"chr1\t+5\t006\nchr1\t5\t6\nchr1\t5\t6\n",
                                  b"chr1 5 6 x\ty\nchr1\t5\t6\nchr1\t5\t6\n"])
def test_a_duplicate_of_a_line_spelled_otherwise_is_named_rightly(tmp_path, text):
    """Coordinates the parser reads as the same number (``+5``, ``006``) and a space-separated
    line with a tab in a later column were not recognised, and a later line was named."""
    path = tmp_path / "u.bed"
    path.write_bytes(text)
    with pytest.raises(UniverseError, match=r"u\.bed:2: 2 duplicate line.*repeats line 1"):
        Universe.from_bed(path, duplicates="error")


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
