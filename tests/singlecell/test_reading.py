"""Crafted ``.h5ad`` files through every read mode: an AnnDataError or the correct result, never
a crash, never a silent wrong result (issue 19).

Each case writes a small valid file with anndata, then damages it with h5py (index arrays out
of range, decreasing or lying row pointers, wrong dtypes and lengths, lying shape and encoding
attributes, missing datasets, non-HDF5 bytes). Each read mode then tokenizes it: the path
(``list``, ``ragged`` and corpus outputs), a backed AnnData and a view of it, an AnnData read in
memory, and an in-memory AnnData whose matrix object carries the crafted arrays (what a caller
can build without anndata's checks). anndata may refuse a file itself when it reads it: that
counts as refused, not as a failure. A fast sample runs in-process; the same sample in a fresh
interpreter with ``NUMBA_BOUNDSCHECK=1`` (a segfault shows as a negative return code) and the
full campaigns are marked ``slow``.

Below them, the named cases: an AnnData without region information, unparsable var_names,
negative or non-numeric counts, and matrices in memory whose arrays lie (each format, each
lie), all refused with an AnnDataError before numba or scipy sees them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from genotok import AnnDataOptions, RegionParseError, Tokenizer

ROOT = Path(__file__).resolve().parents[2]

UNIVERSE = ["chr1:0-100", "chr1:100-200", "chr2:0-50", "chr3:0-10"]
VAR_NAMES = ["chr1:10-20", "chr1:150-160", "chr2:0-40", "chr9:0-5"]
DENSE = np.array([[1, 0, 2, 0], [0, 3, 0, 1], [1, 1, 1, 0], [0, 0, 5, 0], [2, 0, 0, 4]],
                 np.float32)
N_OBS, N_VARS = DENSE.shape


@dataclass(frozen=True)
class Case:
    name: str
    base: str     # "csr", "csc" or "dense"
    expect: str   # "error": must be refused; "same": the clean result; "any": either


def _rewrite(g, name, values) -> None:
    del g[name]
    g[name] = values


def _set(name, fn):
    def mutate(f):
        g = f["X"]
        a = g[name][:]
        _rewrite(g, name, fn(a))
    return mutate


def _edit(name, pos, value, dtype=np.int64):
    def fn(a):
        a = a.astype(dtype)
        a[pos] = value
        return a
    return _set(name, fn)


def _attr(key, value):
    def mutate(f):
        if value is None:
            del f["X"].attrs[key]
        else:
            f["X"].attrs[key] = value
    return mutate


def _drop(path):
    def mutate(f):
        del f[path]
    return mutate


def _to_group(name):
    def mutate(f):
        del f["X"][name]
        f["X"].create_group(name)
    return mutate


def _declared_huge(f):
    """indices and data declared with 10**11 entries in unallocated chunked datasets (a tiny
    file), the last row pointing at all of them: reading them would take 1.2 TB."""
    g = f["X"]
    n = 10**11
    for name, dtype in (("indices", np.int64), ("data", np.float32)):
        del g[name]
        g.create_dataset(name, shape=(n,), dtype=dtype, chunks=(1 << 16,))
    ptr = g["indptr"][:].astype(np.int64)
    ptr[-1] = n
    _rewrite(g, "indptr", ptr)


def _swap_encoding(f):
    enc = f["X"].attrs["encoding-type"]
    f["X"].attrs["encoding-type"] = "csc_matrix" if enc == "csr_matrix" else "csr_matrix"


def _dense(fn):
    def mutate(f):
        a = f["X"][:]
        del f["X"]
        f["X"] = fn(a)
    return mutate


def _dense_edit(value, dtype=np.float32):
    def fn(a):
        a = a.astype(dtype)
        a[1, 1] = value
        return a
    return _dense(fn)


def _mutations(fmt: str) -> dict:
    """name -> (mutate(h5py.File), expect) for a sparse matrix stored as ``fmt``."""
    n_minor = N_VARS if fmt == "csr" else N_OBS
    return {
        "idx_1e9": (_edit("indices", 0, 10**9), "error"),
        "idx_one_past": (_edit("indices", 0, n_minor), "error"),
        "idx_5_of_4": (_edit("indices", 0, 5), "error"),
        "idx_minus_1000": (_edit("indices", 0, -1000), "error"),
        "idx_minus_1": (_edit("indices", -1, -1), "error"),
        "idx_float": (_set("indices", lambda a: a.astype(np.float64)), "error"),
        "idx_bytes": (_set("indices", lambda a: a.astype("S3")), "error"),
        "idx_uint16": (_set("indices", lambda a: a.astype(np.uint16)), "same"),
        "idx_2d": (_set("indices", lambda a: a.reshape(-1, 1)), "error"),
        "ptr_decreasing": (_set("indptr", lambda a: np.r_[a[:2], a[1] - 1, a[3:]]), "error"),
        "ptr_swap": (_set("indptr", lambda a: a[[0, 2, 1] + list(range(3, a.size))]), "error"),
        "ptr_first_1": (_edit("indptr", 0, 1), "error"),
        "ptr_end_past": (_set("indptr", lambda a: np.r_[a[:-1], a[-1] + 3]), "error"),
        "ptr_end_short": (_set("indptr", lambda a: np.r_[a[:-1], a[-1] - 1]), "error"),
        "ptr_shortened": (_set("indptr", lambda a: a[:-1]), "error"),
        "ptr_lengthened": (_set("indptr", lambda a: np.r_[a, a[-1]]), "error"),
        "ptr_2_62": (_edit("indptr", -2, 2**62), "error"),
        "ptr_uint64_2_63": (_edit("indptr", 1, 2**63 + 5, np.uint64), "error"),
        "ptr_uint64": (_set("indptr", lambda a: a.astype(np.uint64)), "same"),
        "ptr_float": (_set("indptr", lambda a: a.astype(np.float64)), "error"),
        "data_nan": (_edit("data", 0, np.nan, np.float32), "error"),
        "data_inf": (_edit("data", 1, np.inf, np.float64), "error"),
        "data_negative": (_edit("data", 2, -3, np.float32), "error"),
        "data_bytes": (_set("data", lambda a: a.astype("S4")), "error"),
        "data_int8": (_set("data", lambda a: a.astype(np.int8)), "same"),
        "data_short": (_set("data", lambda a: a[:-1]), "error"),
        "data_long": (_set("data", lambda a: np.r_[a, a[:1]]), "error"),
        "declared_huge": (_declared_huge, "error"),
        "no_indices": (_drop("X/indices"), "error"),
        "no_data": (_drop("X/data"), "error"),
        "no_indptr": (_drop("X/indptr"), "error"),
        "indices_group": (_to_group("indices"), "error"),
        "shape_rows_plus_1": (_attr("shape", (N_OBS + 1, N_VARS)), "error"),
        "shape_cols_plus_1": (_attr("shape", (N_OBS, N_VARS + 1)), "error"),
        "shape_rows_minus_1": (_attr("shape", (N_OBS - 1, N_VARS)), "error"),
        "shape_huge": (_attr("shape", (10**12, 10**12)), "error"),
        "shape_rows_huge": (_attr("shape", (10**12, N_VARS)), "error"),
        "shape_cols_huge": (_attr("shape", (N_OBS, 10**12)), "error"),
        "shape_negative": (_attr("shape", (-1, N_VARS)), "error"),
        "shape_3d": (_attr("shape", (N_OBS, N_VARS, 1)), "error"),
        "shape_float": (_attr("shape", (float(N_OBS), float(N_VARS))), "error"),
        "shape_string": (_attr("shape", "5x4"), "error"),
        "shape_missing": (_attr("shape", None), "error"),
        "encoding_swapped": (_swap_encoding, "error"),
        "encoding_coo": (_attr("encoding-type", "coo_matrix"), "error"),
        "encoding_array": (_attr("encoding-type", "array"), "error"),
        "encoding_missing": (_attr("encoding-type", None), "error"),
        "no_X": (_drop("X"), "error"),
    }


DENSE_MUTATIONS = {
    "dense_1d": (_dense(lambda a: a.ravel()), "error"),
    "dense_3d": (_dense(lambda a: a[:, :, None]), "error"),
    "dense_bytes": (_dense(lambda a: a.astype("S4")), "error"),
    "dense_nan": (_dense_edit(np.nan), "error"),
    "dense_inf": (_dense_edit(-np.inf, np.float64), "error"),
    "dense_negative": (_dense_edit(-1), "error"),
    "dense_int16": (_dense(lambda a: a.astype(np.int16)), "same"),
    "dense_wide": (_dense(lambda a: np.c_[a, a[:, :1]]), "error"),
    "dense_tall": (_dense(lambda a: np.r_[a, a[:1]]), "error"),
    "dense_says_csr": (lambda f: f["X"].attrs.__setitem__("encoding-type", "csr_matrix"), "any"),
}


def _whole_file(kind: str):
    def mutate(path: Path):
        raw = path.read_bytes()
        if kind == "not_hdf5":
            path.write_bytes(b"this is not an HDF5 file\n" * 40)
        elif kind == "truncated":
            path.write_bytes(raw[:len(raw) // 2])
        elif kind == "zeroed_middle":
            b = bytearray(raw)
            b[len(b) // 3:len(b) // 3 + 512] = bytes(512)
            path.write_bytes(bytes(b))
    return mutate


FILE_MUTATIONS = {k: (_whole_file(k), "error") for k in ("not_hdf5", "truncated")}
FILE_MUTATIONS["zeroed_middle"] = (_whole_file("zeroed_middle"), "any")
OTHER_MUTATIONS = {
    "no_obs": (_drop("obs"), "error"),
    "no_var": (_drop("var"), "error"),
}


def all_cases() -> list[Case]:
    out = []
    for fmt in ("csr", "csc"):
        out += [Case(n, fmt, e) for n, (_, e) in _mutations(fmt).items()]
    out += [Case(n, "dense", e) for n, (_, e) in DENSE_MUTATIONS.items()]
    out += [Case(n, "csr", e) for n, (_, e) in {**FILE_MUTATIONS, **OTHER_MUTATIONS}.items()]
    return out


#: the reproducers of issue 19 and a spread of the rest (the default, fast run)
SAMPLE = {("idx_1e9", "csc"), ("idx_5_of_4", "csc"), ("idx_minus_1000", "csc"),
          ("ptr_decreasing", "csc"), ("ptr_first_1", "csr"), ("ptr_shortened", "csr"),
          ("ptr_end_past", "csr"), ("idx_one_past", "csr"), ("declared_huge", "csr"),
          ("idx_float", "csc"), ("ptr_uint64", "csr"), ("data_nan", "csr"), ("data_short", "csc"),
          ("shape_rows_plus_1", "csc"), ("shape_huge", "csr"), ("shape_float", "csr"),
          ("encoding_swapped", "csr"), ("no_indptr", "csc"), ("dense_nan", "dense"),
          ("dense_tall", "dense"), ("dense_int16", "dense"), ("truncated", "csr"),
          ("no_obs", "csr")}
#: (case, mode) pairs not run: anndata itself would read 1.2 TB or size an indptr by a lying
#: shape (7 TiB) there, before genotok sees the file (refused only where the OS refuses)
NOT_RUN = {("declared_huge", "memory"), ("declared_huge", "matrix"), ("shape_huge", "memory"),
           ("shape_rows_huge", "memory"), ("shape_cols_huge", "memory")}
MODES = ("path-list", "path-ragged", "path-corpus", "backed", "backed-view", "memory", "matrix")
FAST_MODES = ("path-list", "path-corpus", "backed", "backed-view", "memory", "matrix")


def _write_base(path: Path, fmt: str) -> None:
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    X = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "dense": np.asarray}[fmt](DENSE)
    obs = pd.DataFrame(index=[f"cell{i}" for i in range(N_OBS)])
    anndata.AnnData(X, obs=obs, var=pd.DataFrame(index=VAR_NAMES)).write_h5ad(path)


def make_file(case: Case, folder: Path) -> Path:
    import h5py

    path = folder / f"{case.name}.{case.base}.h5ad"
    _write_base(path, case.base)
    table = {**(DENSE_MUTATIONS if case.base == "dense" else _mutations(case.base)),
             **OTHER_MUTATIONS}
    if case.name in FILE_MUTATIONS:
        FILE_MUTATIONS[case.name][0](path)
    else:
        with h5py.File(path, "r+") as f:
            table[case.name][0](f)
    return path


def _tokenizer():
    from genotok import Tokenizer

    return Tokenizer(UNIVERSE)


def reference() -> list[list[int]]:
    import anndata
    import pandas as pd

    from genotok import tokenize_anndata

    a = anndata.AnnData(DENSE, var=pd.DataFrame(index=VAR_NAMES))
    return tokenize_anndata(a, _tokenizer()).to_list()


class Refused(Exception):
    """anndata (not genotok) refused to read the file: fine, nothing reached a kernel."""


def _crafted_matrix(path: Path, base: Path):
    """An in-memory AnnData of the clean file whose matrix object carries the crafted arrays
    (assigned behind anndata's and scipy's back, as a caller can)."""
    import anndata
    import h5py

    a = anndata.read_h5ad(base)
    try:
        with h5py.File(path, "r") as f:
            node = f["X"]
            if isinstance(node, h5py.Dataset):
                X = node[()]
                a._X = X  # crafted on purpose: no shape check
                return a
            arrays = {k: node[k][()] for k in ("data", "indices", "indptr")}
            shape = node.attrs["shape"]
    except (OSError, KeyError) as exc:
        raise Refused(str(exc)) from None
    X = a.X if node.attrs.get("encoding-type") != "csc_matrix" else a.X.tocsc()
    X = X.copy()
    for k, v in arrays.items():
        setattr(X, k, v)
    try:
        X._shape = tuple(int(x) for x in shape)
    except (TypeError, ValueError):
        pass
    a._X = X
    return a


def run_one(case: Case, mode: str, folder: Path, ref: list) -> tuple[str, str]:
    """``(outcome, detail)``: outcome is ``same``, ``different``, ``error`` (a GenotokError),
    ``refused`` (by anndata while reading) or ``crash:<type>`` (anything else from genotok)."""
    import anndata

    from genotok import Corpus, GenotokError, tokenize_anndata

    path = make_file(case, folder)
    tok = _tokenizer()
    view = slice(None)
    try:
        if mode.startswith("path"):
            obj = path
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if mode == "matrix":
                        clean = folder / f"clean.{case.base}.h5ad"
                        if not clean.exists():
                            _write_base(clean, case.base)
                        obj = _crafted_matrix(path, clean)
                    elif mode == "memory":
                        obj = anndata.read_h5ad(path)
                    else:
                        obj = anndata.read_h5ad(path, backed="r")
                        if mode == "backed-view":
                            view = slice(1, 4)
                            obj = obj[view]
            except Refused as exc:
                return "refused", str(exc)
            except Exception as exc:  # noqa: BLE001 - anndata's own refusal, any type
                return "refused", f"{type(exc).__name__}: {exc}"
        try:
            if mode == "path-list":
                got = [list(map(int, r)) for r in tokenize_anndata(obj, tok)]
            elif mode == "path-corpus":
                out = folder / f"{case.name}.{case.base}.gtokc"
                c = tokenize_anndata(obj, tok, out=out)
                assert isinstance(c, Corpus)
                got = [list(map(int, c[i])) for i in range(len(c))]
                del c
            else:
                got = tokenize_anndata(obj, tok).to_list()
        finally:
            f = getattr(obj, "file", None)
            if f is not None and getattr(obj, "isbacked", False):
                f.close()
    except GenotokError as exc:
        return "error", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - what the campaign looks for
        return f"crash:{type(exc).__name__}", str(exc)
    return ("same" if got == ref[view] else "different"), str(got)


def verdict(case: Case, mode: str, outcome: str, detail: str) -> str | None:
    """``None`` when the outcome is acceptable, else what went wrong."""
    if outcome.startswith("crash"):
        return f"{outcome}: {detail}"
    if outcome == "refused":
        return None if not mode.startswith("path") else "refused on the path mode"
    if outcome == "different" and case.expect != "any":
        return f"silent wrong result {detail}"
    # what memory and matrix modes see of a file is anndata's reading of it (which may turn a
    # float shape into ints) or, for "matrix", only the crafted arrays; a view may not reach a
    # damaged value: there, the correct result is as right as an error
    seen = (mode in ("path-list", "path-ragged", "path-corpus", "backed")
            or case.name.split("_")[0] in ("idx", "ptr", "data", "dense"))
    if outcome == "same" and case.expect == "error" and seen and mode != "backed-view":
        return "silently accepted"
    if outcome == "error" and case.expect == "same":
        return f"refused a valid file: {detail}"
    if (outcome == "error" and mode in ("path-list", "path-ragged", "path-corpus", "backed")
            and f"{case.name}.{case.base}.h5ad" not in detail):
        return f"the message does not name the file: {detail}"
    return None


def campaign(cases: list[Case], modes, folder: Path) -> dict:
    """Run every case in every mode; returns counts of outcomes and the failures."""
    ref = reference()
    counts: dict[str, int] = {}
    failures = []
    for case in cases:
        for mode in modes:
            if (case.name, mode) in NOT_RUN:
                continue
            outcome, detail = run_one(case, mode, folder, ref)
            counts[outcome] = counts.get(outcome, 0) + 1
            why = verdict(case, mode, outcome, detail)
            if why is not None:
                failures.append(f"{case.name} [{case.base}] {mode}: {why}")
    return {"runs": sum(counts.values()), "counts": counts, "failures": failures}


def _sample() -> list[Case]:
    return [c for c in all_cases() if (c.name, c.base) in SAMPLE]


def test_every_case_is_listed_once():
    cases = all_cases()
    assert len({(c.name, c.base) for c in cases}) == len(cases)
    assert {(c.name, c.base) for c in _sample()} == SAMPLE


def test_crafted_sample_in_process(tmp_path):
    res = campaign(_sample(), FAST_MODES, tmp_path)
    assert res["failures"] == []
    assert res["counts"].get("error", 0) > 0 and res["counts"].get("same", 0) > 0


def _boundscheck_env() -> dict:
    """Environment of a bounds-checked interpreter. Its kernels are cached in a directory of
    their own (never shared with unchecked builds, private to the user), so only the first
    run pays the ~40 s of compilation; without such a directory, nothing is cached."""
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cache = Path.home() / ".cache" / "genotok-tests" / "numba-boundscheck"
    try:
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
        usable = os.access(cache, os.W_OK) and cache.stat().st_uid == os.getuid()
    except OSError:
        usable = False
    if usable:
        env["NUMBA_CACHE_DIR"] = str(cache)
        env.pop("GENOTOK_NO_CACHE", None)
    else:
        env["GENOTOK_NO_CACHE"] = "1"
    return env


def _in_subprocess(sample: bool, folder: Path) -> dict:
    env = _boundscheck_env()
    code = ("import json, sys; from pathlib import Path; import tests.singlecell.test_reading as m; "
            f"print(json.dumps(m.main({sample!r}, Path(sys.argv[1]))))")
    res = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=3000, check=False)
    assert res.returncode == 0, (f"return code {res.returncode} (negative: killed by a "
                                 f"signal, e.g. a segfault)\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(sample: bool, folder: Path) -> dict:
    """The campaign as the subprocess runs it (bounds-checked kernels)."""
    warnings.simplefilter("ignore")
    return campaign(_sample() if sample else all_cases(), FAST_MODES if sample else MODES,
                    folder)


# slow: recompiles the kernels with bounds checks in a subprocess (~13 s); the in-process
# sample stays in the default run
@pytest.mark.slow
def test_crafted_sample_bounds_checked(tmp_path):
    res = _in_subprocess(True, tmp_path)
    assert res["failures"] == []
    not_run = sum(1 for c in _sample() for m in FAST_MODES if (c.name, m) in NOT_RUN)
    assert res["runs"] == len(SAMPLE) * len(FAST_MODES) - not_run


@pytest.mark.parametrize("fmt", ["corpus", "gtok-dir"])
def test_pretokenize_skips_crafted_files(tmp_path, fmt):
    """Inside pretokenize, a segfault could not be skipped; now the crafted file is an
    AnnDataError, skipped with --on-error skip and reported with its error."""
    from genotok.pipeline.run import pretokenize

    d = tmp_path / "in"
    d.mkdir()
    _write_base(d / "good.h5ad", "csr")
    for name, base in (("idx_1e9", "csc"), ("ptr_decreasing", "csc"), ("ptr_first_1", "csr"),
                       ("truncated", "csr")):
        make_file(Case(name, base, "error"), d)
    summary = pretokenize(d, _tokenizer(), tmp_path / "out", format=fmt, progress=False,
                          on_error="skip")
    failed = {Path(f["path"]).name: f["error"] for f in summary.failed}
    assert sorted(failed) == ["idx_1e9.csc.h5ad", "ptr_decreasing.csc.h5ad",
                              "ptr_first_1.csr.h5ad", "truncated.csr.h5ad"]
    assert "row index 1000000000" in failed["idx_1e9.csc.h5ad"]
    assert summary.n_records == N_OBS


@pytest.mark.slow
def test_crafted_campaign_in_process(tmp_path):
    res = campaign(all_cases(), MODES, tmp_path)
    assert res["failures"] == [], "\n".join(res["failures"])


@pytest.mark.slow
def test_crafted_campaign_bounds_checked(tmp_path):
    res = _in_subprocess(False, tmp_path)
    assert res["failures"] == [], "\n".join(res["failures"])
    not_run = sum(1 for c in all_cases() for m in MODES if (c.name, m) in NOT_RUN)
    assert res["runs"] == len(all_cases()) * len(MODES) - not_run


if __name__ == "__main__":  # pragma: no cover - python -m tests.singlecell.test_reading [--all]
    full = "--all" in sys.argv
    result = main(not full, Path(tempfile.mkdtemp()))
    print(json.dumps(result, indent=1))


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


def test_anndata_options_take_the_separators_the_region_parser_takes():
    """AnnDataOptions(var_names_sep=) took any text, var_regions and parse_region_strings
    only ':', '-', '_' (a KeyError deep in the parser for '|'): one declared constraint now."""
    from genotok.params import ParameterError
    from genotok.singlecell.varnames import var_regions

    for sep in (":", "-", "_", None):
        assert AnnDataOptions(var_names_sep=sep).var_names_sep == sep
    for call in (lambda: AnnDataOptions(var_names_sep="|"),
                 lambda: var_regions(["chr1|1|2"], var_names_sep="|")):
        with pytest.raises(ParameterError, match="var_names_sep must be one of"):
            call()
