"""The value encodings' contract: :func:`check_encoding`.

An encoding (:class:`~genotok.Encoding`) rewrites the values of a cell x feature matrix, a
:class:`~genotok.Chunk` of whole rows at a time, before the cells become tokens. What every
encoding, built in or plugged in, must do:

- **be registered** by its ``name`` (:func:`~genotok.register_encoding`, or a
  ``genotok.encodings`` entry point), so a spec read from JSON finds it;
- **round-trip its JSON**: ``to_json()`` is plain JSON naming the class, ``from_json`` of it
  (after ``json.dumps``/``loads``) is equal, and so is a :class:`~genotok.CellSpec` holding it;
- **keep shapes**: one finite value ``>= 0`` (what the cell kernels accept) per stored entry,
  also for a chunk without rows or without entries;
- **not touch its input**: the chunk's arrays are equal after ``encode``, and ``encode`` works
  on read-only arrays (the driver hands it views of the input's own);
- **be deterministic** and **independent of chunking**: the same chunk gives the same values,
  and the rows split into two chunks (``row0`` telling where the second starts) give the values
  of the whole;
- **run in the driver**: a spec with the encoding, after a built-in head, tokenizes a matrix.
"""

from __future__ import annotations

import inspect
import json

import numpy as np

__all__ = ["check_encoding"]

#: the columns of the test chunks (an instance with per-column state, say medians, is made
#: for this many)
N_COLS = 6


def _chunks() -> list:
    """Test chunks: counts and real values, empty rows, a chunk without rows, one without
    entries, a chunk starting at row 5 (``row0``)."""
    from ..singlecell.chunks import Chunk

    rng = np.random.default_rng(0)
    out = []
    for n_rows, row0, real in ((7, 0, False), (5, 5, True), (0, 0, False), (3, 2, False)):
        rows = []
        for r in range(n_rows):
            k = 0 if (r == 1 or n_rows == 3) else int(rng.integers(1, N_COLS + 1))
            cols = np.sort(rng.choice(N_COLS, k, replace=False))
            vals = rng.gamma(2.0, 3.0, k) if real else rng.integers(1, 9, k).astype(float)
            rows.append((cols, vals))
        indptr = np.zeros(n_rows + 1, np.int64)
        np.cumsum([c.size for c, _ in rows], out=indptr[1:])
        idx = np.concatenate([c for c, _ in rows]).astype(np.int32) if rows else \
            np.zeros(0, np.int32)
        data = np.concatenate([v for _, v in rows]) if rows else np.zeros(0)
        out.append(Chunk(row0, indptr, idx, data.astype(np.float64), N_COLS))
    return out


def _fail(enc, rule: str, detail: str = "") -> AssertionError:
    return AssertionError(f"check_encoding({type(enc).__name__}): {rule}"
                          + (f": {detail}" if detail else ""))


def _encode(enc, ch) -> np.ndarray:
    try:
        return np.asarray(enc.encode(ch))
    except ValueError as exc:
        if "read-only" in str(exc):
            raise _fail(enc, "encode() writes into its input chunk (its arrays are the "
                        "input's own; return new values instead)", str(exc)) from None
        raise


def _read_only(ch):
    from ..singlecell.chunks import Chunk

    def ro(a):
        v = np.array(a, copy=True)
        v.flags.writeable = False
        return v
    return Chunk(ch.row0, ro(ch.indptr), ro(ch.indices), ro(ch.data), ch.n_cols)


def check_encoding(encoding) -> None:
    """Check that a value encoding keeps the contract of the seam (module documentation);
    raise ``AssertionError`` naming the rule it breaks.

    Parameters
    ----------
    encoding
        An :class:`~genotok.Encoding` subclass (checked with its defaults) or an instance (an
        encoding that needs arguments, such as ``RankByMedian(medians)``; per-column state
        is for :data:`N_COLS` columns).

    Examples
    --------
    >>> import numpy as np
    >>> from genotok import Bins, RankByMedian
    >>> check_encoding(Bins)
    >>> check_encoding(RankByMedian(np.ones(N_COLS)))
    """
    from ..singlecell.chunks import Chunk
    from ..singlecell.spec import CellSpec, Encoding, Normalize, encodings

    if isinstance(encoding, type) and issubclass(encoding, Encoding) and \
            inspect.isabstract(encoding):
        raise AssertionError(f"check_encoding({encoding.__name__}): implements every abstract "
                             "method of Encoding: "
                             f"{', '.join(sorted(encoding.__abstractmethods__))} missing")
    enc = encoding() if isinstance(encoding, type) else encoding
    cls = type(enc)
    if not isinstance(enc, Encoding):
        raise AssertionError(f"check_encoding: {cls.__name__} is not a genotok.Encoding")
    # ----- registered by its name, and its JSON
    if not cls.name or encodings().get(cls.name) is not cls:
        raise _fail(enc, f"not registered by its name {cls.name!r} (register_encoding(cls) "
                    "or a genotok.encodings entry point)")
    d = enc.to_json()
    if not isinstance(d, dict) or d.get("name") != cls.name:
        raise _fail(enc, "to_json() is a dict whose 'name' is the class's name", repr(d))
    try:
        text = json.dumps(d, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _fail(enc, "to_json() is plain JSON", str(exc)) from None
    if cls.from_json(json.loads(text)) != enc:
        raise _fail(enc, "from_json(to_json()) gives an equal encoding", text[:200])
    for steps in ((enc,), (Normalize(10.0), enc)):
        try:
            spec = CellSpec(encoding=steps)
        except Exception as exc:  # noqa: BLE001 - a spec that refuses it is reported below
            if steps[0] is enc:
                raise _fail(enc, "a CellSpec takes it", str(exc)) from None
            continue  # a step that must come first (a head of its own) is fine
        if CellSpec.from_json(spec.to_json()) != spec:
            raise _fail(enc, "a CellSpec holding it round-trips its JSON")
    # ----- shapes, values, no mutation, determinism, chunking
    for ch in _chunks():
        before = (ch.indptr.copy(), ch.indices.copy(), ch.data.copy())
        try:
            out = _encode(enc, ch)
        finally:  # also when it failed halfway (a frozen chunk refuses a new attribute)
            if not all(np.array_equal(a, b) for a, b in zip(before, (ch.indptr, ch.indices,
                                                                       ch.data))):
                raise _fail(enc, "encode() changed its input chunk (return new values "
                            "instead)")
        if out.shape != ch.data.shape or out.dtype.kind not in "biuf":
            raise _fail(enc, "encode() returns one number per stored entry",
                        f"{out.dtype} of shape {out.shape} for {ch.data.size} entries")
        if out.size and not (np.isfinite(out).all() and out.min() >= 0):
            raise _fail(enc, "encoded values are finite and >= 0 (what the cell kernels take)",
                        f"rows from {ch.row0}: {out[~(np.isfinite(out) & (out >= 0))][:3]}")
        again = _encode(enc, _read_only(ch))
        if not np.array_equal(out, again):
            raise _fail(enc, "encode() is deterministic (the same chunk, the same values)")
        if ch.n_rows >= 2:  # two chunks, the second starting at its own row0
            k = ch.n_rows // 2
            b = int(ch.indptr[k])
            first = Chunk(ch.row0, ch.indptr[:k + 1].copy(), ch.indices[:b].copy(),
                          ch.data[:b].copy(), ch.n_cols)
            second = Chunk(ch.row0 + k, ch.indptr[k:] - b, ch.indices[b:].copy(),
                           ch.data[b:].copy(), ch.n_cols)
            split = np.concatenate([_encode(enc, first), _encode(enc, second)])
            if not np.allclose(split, out, rtol=1e-12, atol=0, equal_nan=True):
                raise _fail(enc, "values do not depend on chunking (rows split in two chunks, "
                            "row0 telling where each starts, give the whole's values)")
    _check_in_driver(enc)


def _check_in_driver(enc) -> None:
    """The encoding after a built-in head tokenizes a small matrix, values and all."""
    import scipy.sparse as sp

    from ..singlecell.cells import tokenize_cells
    from ..singlecell.sources import AnnDataSource
    from ..singlecell.spec import CellSpec, Normalize
    from ..tokenizer import Tokenizer

    try:
        import anndata
        import pandas as pd
    except ImportError:  # pragma: no cover - the single-cell extra
        return
    regions = [f"chr1:{100 * i}-{100 * i + 50}" for i in range(N_COLS)]
    X = sp.csr_matrix(np.array([[1, 0, 3, 0, 0, 2], [0, 0, 0, 0, 0, 0], [5, 1, 0, 0, 4, 1]],
                               dtype=np.float32))
    adata = anndata.AnnData(X, var=pd.DataFrame(index=regions))
    for steps in ((enc,), (Normalize(10.0), enc)):
        try:
            spec = CellSpec(encoding=steps, values=True)
        except Exception:  # noqa: BLE001 - a step of the head only (checked above)
            continue
        rows = tokenize_cells(AnnDataSource.open(adata), Tokenizer(regions), spec)
        if len(rows) != X.shape[0]:
            raise _fail(enc, "a spec with it tokenizes every cell",
                        f"{len(rows)} rows of {X.shape[0]}")
