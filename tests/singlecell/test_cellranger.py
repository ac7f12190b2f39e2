"""Cell Ranger matrix folders (genotok.singlecell.cellranger): ATAC's
``filtered_peak_bc_matrix/`` and ARC's ``filtered_feature_bc_matrix/``, gzipped or not, entries
in any order, give the tokens of the same matrix in memory and of ``scanpy.read_10x_mtx``;
a region tokenizer reads the Peaks rows, a gene vocabulary the Gene Expression rows; a
malformed file is an AnnDataError naming file:line."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sp = pytest.importorskip("scipy.sparse")
pytest.importorskip("anndata")

from genotok import CellSpec, Corpus, GeneTokenizer, MtxOptions, Tokenizer, pretokenize
from genotok.errors import AnnDataError
from genotok.singlecell import MtxSource, open_source, tokenize_anndata, tokenize_cells
from tests.singlecell._cells import UNIVERSE, adata, counts, rows

SPEC = CellSpec(values=True)
GENES = ["ENSG01", "ENSG02", "ENSG03"]


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(UNIVERSE)


def _text(path, text: str, gz: bool):
    path = str(path) + (".gz" if gz else "")
    with (gzip.open(path, "wt") if gz else open(path, "w")) as fh:
        fh.write(text)


def write_folder(folder, a, *, layout="arc", gz=True, order="barcode", genes=None, seed=0,
                 field="integer"):
    """``a`` (cells x peaks AnnData) as a Cell Ranger folder; ``genes``: an extra cells x genes
    matrix for ARC's Gene Expression rows (written first, as ARC does)."""
    os.makedirs(folder, exist_ok=True)
    X = sp.csr_matrix(a.X)
    peaks = list(a.var_names)
    if genes is not None:
        X = sp.hstack([sp.csr_matrix(genes), X]).tocsr()
    M = X.T.tocoo()  # features x barcodes
    r, c, v = M.row + 1, M.col + 1, M.data
    key = {"barcode": np.lexsort((r, c)), "feature": np.lexsort((c, r)),
           "shuffled": np.random.default_rng(seed).permutation(r.size)}[order]
    fmt = "{} {} {:g}\n" if field != "pattern" else "{} {}\n"
    body = "".join(fmt.format(*e) if field != "pattern" else fmt.format(*e[:2])
                   for e in zip(r[key], c[key], v[key]))
    head = (f"%%MatrixMarket matrix coordinate {field} general\n%metadata_json: {{}}\n"
            f"{M.shape[0]} {M.shape[1]} {r.size}\n")
    _text(os.path.join(folder, "matrix.mtx"), head + body, gz)
    _text(os.path.join(folder, "barcodes.tsv"), "".join(f"{b}\n" for b in a.obs_names), gz)
    if layout == "atac":
        _text(os.path.join(folder, "peaks.bed"),
              "".join(f"{p.split(':')[0]}\t{p.split(':')[1].replace('-', chr(9))}\n"
                      for p in peaks), gz)
    else:
        lines = [f"{g}\tGENE{i}\tGene Expression\tchr5\t{i}\t{i + 9}\n"
                 for i, g in enumerate(GENES[:0 if genes is None else genes.shape[1]])]
        lines += [f"{p}\t{p}\tPeaks\t{p.split(':')[0]}\t"
                  f"{p.split(':')[1].replace('-', chr(9))}\n" for p in peaks]
        _text(os.path.join(folder, "features.tsv"), "".join(lines), gz)
    return str(folder)


def _same(got, want):
    assert rows(got) == rows(want)
    if want.values is not None:
        np.testing.assert_array_equal(got.values, want.values)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(0, 9), m=st.integers(1, 8), density=st.sampled_from([0.0, 0.3, 0.8]),
       dense=st.booleans(), layout=st.sampled_from(["atac", "arc"]), gz=st.booleans(),
       order=st.sampled_from(["barcode", "feature", "shuffled"]), seed=st.integers(0, 99))
def test_round_trip_equals_memory(tmp_path_factory, tok, n, m, density, dense, layout, gz,
                                  order, seed):
    a = adata(counts(n, m, density, seed, dense=dense))
    genes = counts(n, 2, 0.5, seed + 1) if layout == "arc" else None
    folder = write_folder(tmp_path_factory.mktemp("f") / "filtered_bc_matrix", a,
                          layout=layout, gz=gz, order=order, genes=genes, seed=seed)
    want = tokenize_anndata(a, tok, SPEC)
    for memory_mb in (0.0005, 256):  # many chunks (and blocks), or one
        _same(tokenize_anndata(folder, tok, SPEC, memory_mb=memory_mb), want)
    with open_source(folder) as src:
        assert isinstance(src, MtxSource) and src.names() == list(a.obs_names)
        assert src.n_cols == m
        _same(tokenize_cells(src, tok, SPEC, memory_mb=0.0005), want)


def test_scanpy_anchor_peaks_and_genes(tmp_path, tok):
    sc = pytest.importorskip("scanpy")
    a = adata(counts(20, 7, 0.4, 3))
    g = counts(20, 3, 0.6, 4)
    folder = write_folder(tmp_path / "filtered_feature_bc_matrix", a, genes=g, order="feature")
    ref = sc.read_10x_mtx(folder, var_names="gene_ids", gex_only=False)
    peaks = ref[:, ref.var.feature_types == "Peaks"].copy()
    _same(tokenize_anndata(folder, tok, SPEC), tokenize_anndata(peaks, tok, SPEC))
    vocab = GeneTokenizer({x: i + 10 for i, x in enumerate(GENES[:2])})
    gex = sc.read_10x_mtx(folder, var_names="gene_ids")  # gex_only
    spec = CellSpec(order="value", values=True)
    _same(tokenize_anndata(folder, vocab, spec), tokenize_anndata(gex, vocab, spec))
    with open_source(folder, MtxOptions(feature_type="Gene Expression")) as src:
        assert list(src.features().index) == GENES
    with pytest.raises(AnnDataError, match="no feature of type 'ADT'"):
        open_source(folder, MtxOptions(feature_type="ADT"))


def test_duplicates_summed_as_scanpy(tmp_path, tok):
    sc = pytest.importorskip("scanpy")
    a = adata(counts(4, 7, 0.5, 9))
    folder = write_folder(tmp_path / "dup", a, gz=True)
    p = os.path.join(folder, "matrix.mtx.gz")
    lines = gzip.open(p, "rt").read().splitlines()
    n_f, n_b, nnz = lines[2].split()
    lines[2] = f"{n_f} {n_b} {int(nnz) + 1}"
    lines.append(lines[3])  # the first entry twice
    with gzip.open(p, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    ref = sc.read_10x_mtx(folder, var_names="gene_ids", gex_only=False)
    _same(tokenize_anndata(folder, tok, SPEC), tokenize_anndata(ref, tok, SPEC))


BAD = [  # (what is done to matrix.mtx, the message: file and line)
    (lambda t: t.replace("coordinate", "array"), r"matrix\.mtx:1: genotok reads"),
    (lambda t: t.replace("%%MatrixMarket", "%%Matrix"), r"matrix\.mtx:1: not a MatrixMarket"),
    (lambda t: _line(t, 3, "7 x 5"), r"matrix\.mtx:3: the size line"),
    (lambda t: _line(t, 5, "99 1 1"), r"matrix\.mtx:5: feature index 99 is outside \[1, 7\]"),
    (lambda t: _line(t, 4, "1 0 1"), r"matrix\.mtx:4: barcode index 0 is outside"),
    (lambda t: _line(t, 6, "1 two 1"), r"matrix\.mtx:6: barcode index .*not an integer"),
    (lambda t: _line(t, 5, "1.5 1 1"), r"matrix\.mtx:5: feature index .*not an integer"),
    (lambda t: _line(t, 4, "1 1 x"), r"matrix\.mtx:4: value .*not a number"),
    (lambda t: _line(t, 5, "1 1 1 1"), r"matrix\.mtx:5: not a line of 3 numbers"),
    (lambda t: _line(t, 5, "1 1"), r"matrix\.mtx:5: value"),
    (lambda t: "\n".join(t.splitlines()[:-1]) + "\n", r"matrix\.mtx: \d+ entry lines, but"),
    (lambda t: t + "1 1 1\n", r"matrix\.mtx:\d+: more entries than"),
]


def _line(text: str, k: int, new: str) -> str:
    lines = text.splitlines()
    lines[k - 1] = new
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("damage,message", BAD)
def test_malformed_matrix_names_file_and_line(tmp_path, tok, damage, message):
    a = adata(counts(5, 7, 0.9, 1))
    folder = write_folder(tmp_path / "m", a, layout="atac", gz=False)
    p = os.path.join(folder, "matrix.mtx")
    with open(p) as fh:
        text = fh.read()
    with open(p, "w") as fh:
        fh.write(damage(text))
    with pytest.raises(AnnDataError, match=message):
        tokenize_anndata(folder, tok)


def test_malformed_companions(tmp_path, tok):
    a = adata(counts(5, 7, 0.9, 1))
    folder = write_folder(tmp_path / "m", a, layout="atac", gz=True)
    with gzip.open(os.path.join(folder, "barcodes.tsv.gz"), "wt") as fh:
        fh.write("only\n")
    with pytest.raises(AnnDataError, match=r"barcodes\.tsv\.gz: 1 barcodes, but the matrix"):
        open_source(folder)
    folder = write_folder(tmp_path / "p", a, layout="atac", gz=False)
    with open(os.path.join(folder, "peaks.bed"), "a") as fh:
        fh.write("chr1\t5\n")
    with pytest.raises(AnnDataError, match=r"peaks\.bed: 8 features"):
        open_source(folder)
    folder = write_folder(tmp_path / "q", a, layout="atac", gz=False)
    with open(os.path.join(folder, "peaks.bed"), "r+") as fh:
        text = fh.read().replace("\t10\t", "\tten\t", 1)
        fh.seek(0)
        fh.write(text)
    with pytest.raises(AnnDataError, match=r"peaks\.bed:1: coordinate 'ten'"):
        open_source(folder)
    folder = write_folder(tmp_path / "z", a, layout="arc", gz=True)
    p = os.path.join(folder, "matrix.mtx.gz")
    with open(p, "r+b") as fh:
        fh.seek(os.path.getsize(p) - 12)
        fh.write(b"\xff" * 12)  # a damaged gzip trailer (CRC)
    with pytest.raises(AnnDataError, match=r"matrix\.mtx\.gz: cannot read it"):
        tokenize_anndata(folder, tok)


def test_pretokenize_and_cli(tmp_path, tok):
    a = adata(counts(12, 7, 0.4, 2))
    folder = write_folder(tmp_path / "filtered_peak_bc_matrix", a, layout="atac", gz=False,
                          order="shuffled")
    pretokenize([folder], tok, tmp_path / "run", progress=False)
    run = Corpus.open(tmp_path / "run")
    assert [list(run[i]) for i in range(len(run))] == rows(tokenize_anndata(a, tok))
    assert list(run.names) == list(a.obs_names)
    (tmp_path / "u.bed").write_text("".join(
        f"{r.split(':')[0]}\t{r.split(':')[1].replace('-', chr(9))}\n" for r in UNIVERSE))
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run([sys.executable, "-m", "genotok", "pretokenize", "--universe",
                           str(tmp_path / "u.bed"), "--out", str(tmp_path / "cli"), "--quiet",
                           folder], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    cli = Corpus.open(tmp_path / "cli")
    assert [list(cli[i]) for i in range(len(cli))] == [list(run[i]) for i in range(len(run))]


@pytest.mark.parametrize("layout,order", [("atac", "feature"), ("arc", "barcode")])
def test_check_source(tmp_path, layout, order):
    from genotok.testing import check_source

    a = adata(counts(7, 6, 0.5, 3))
    folder = write_folder(tmp_path / "filtered_bc_matrix", a, layout=layout, order=order,
                          gz=layout == "arc")
    check_source(MtxSource, folder)
