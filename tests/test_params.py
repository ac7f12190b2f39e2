"""The one parameter validator (genotok.params) and the invalid values it generates: every
constrained object refuses every value its constraints do not allow (``True`` for an
integer, ``"no"`` for a flag, ``1.5`` for a count), with a message naming the parameter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from genotok import batching
from genotok.params import (Flag, Integral, Interval, Options, ParameterError, Real, check,
                            invalid_values)
from genotok.tokenizer import TokenizerSettings


def test_constraints_accept_and_refuse():
    ints = [Interval(Integral, 1, None), None]
    for ok in (1, 7, np.int64(3), 2.0, None):
        check("n", ok, ints)
    for bad in (True, False, 1.5, 0, "3", float("nan")):
        with pytest.raises(ParameterError, match="n must be an integer in \\[1, inf\\) or None"):
            check("n", bad, ints)
    for bad in ("no", "false", 2, None, 0.5, -1):
        with pytest.raises(ParameterError, match="must be True or False"):
            check("flag", bad, [Flag()])
    for ok in (np.bool_(True), True, False, 0, 1):
        check("flag", ok, [Flag()])
    assert Options("a", "b").accepts("a") and not Options(1).accepts(True)
    assert not Interval(Real, 0, 1, closed="left").accepts(1)
    assert not Real.accepts(float("nan"))


def test_invalid_values_are_refused_by_their_constraints():
    for constraints in ([Flag()], [Interval(Integral, 1, 5)], [Options("x"), None],
                        [Interval(Real, 0, None, closed="neither")]):
        bad = invalid_values(constraints)
        assert bad
        for v in bad:
            with pytest.raises(ParameterError):
                check("p", v, constraints)


def _constrained():
    """(name, constraints, call(value)) of every object declaring constraints."""
    for name, allowed in TokenizerSettings.CONSTRAINTS.items():
        yield f"TokenizerSettings.{name}", allowed, lambda v, n=name: TokenizerSettings(**{n: v})
    from genotok import AnnDataOptions, Bins, CellSpec, FragmentOptions, Normalize

    for cls in (CellSpec, Normalize, Bins, AnnDataOptions, FragmentOptions):
        for name, allowed in cls.CONSTRAINTS.items():
            yield f"{cls.__name__}.{name}", allowed, lambda v, c=cls, n=name: c(**{n: v})
    ids = np.arange(10)
    yield "truncate.max_length", batching.CONSTRAINTS["max_length"][:1], \
        lambda v: batching.truncate(ids, v)
    yield "truncate.truncation", batching.CONSTRAINTS["truncation"], \
        lambda v: batching.truncate(ids, 3, v)
    yield "pad_inputs.max_length", batching.CONSTRAINTS["max_length"], \
        lambda v: batching.pad_inputs([[1, 2, 3]], 0, max_length=v)
    yield "pad_inputs.truncation", batching.CONSTRAINTS["pad_truncation"], \
        lambda v: batching.pad_inputs([[1, 2, 3]], 0, truncation=v, max_length=2)
    yield "pad_inputs.padding", batching.CONSTRAINTS["padding"], \
        lambda v: batching.pad_inputs([[1, 2, 3]], 0, padding=v)
    yield "make_batch.max_length", batching.CONSTRAINTS["max_length"], \
        lambda v: batching.make_batch([[1, 2, 3]], pad_token_id=0, max_length=v)
    yield "make_batch.truncation", batching.CONSTRAINTS["batch_truncation"], \
        lambda v: batching.make_batch([[1, 2, 3]], pad_token_id=0, truncation=v, max_length=2)
    from genotok import mixture, packing, windows

    for name, allowed in packing.CONSTRAINTS.items():
        args = {"seq_len": 4, "pad_token_id": 0}
        yield f"pack.{name}", allowed, lambda v, n=name, a=args: packing.pack([[1, 2]], **{**a, n: v})
    for name, allowed in mixture.CONSTRAINTS.items():  # refused before any corpus is read
        yield f"mix.{name}", allowed, lambda v, n=name: mixture.Mixture([], [], **{n: v})
    for name, allowed in windows.CONSTRAINTS.items():
        args = {"context_length": 2, "batch_size": 1, "seed": 0, "step": 0}
        yield f"windows.{name}", allowed, \
            lambda v, n=name, a=args: windows.windows(None, **{**a, n: v})

    yield from _more_constrained()


def _more_constrained():
    """The run options, gene settings, quantile bins, stores, batch plan, builders and tiles."""
    from genotok import GeneSettings, QuantileBins, RunOptions, build
    from genotok.formats.stores import ArrowStore, CorpusStore, ParquetStore
    from genotok.pipeline import tiles
    from genotok.pipeline.split import SplitStore
    from genotok.sampling import PLAN_CONSTRAINTS, BatchPlan

    for cls in (RunOptions, GeneSettings, QuantileBins, ParquetStore, ArrowStore):
        for name, allowed in cls.CONSTRAINTS.items():
            yield f"{cls.__name__}.{name}", allowed, lambda v, c=cls, n=name: c(**{n: v})
    for name, allowed in SplitStore.CONSTRAINTS.items():
        args = {"inner": CorpusStore(), "fraction": 0.1}
        yield f"SplitStore.{name}", allowed, lambda v, n=name, a=args: SplitStore(**{**a, n: v})
    lengths = np.ones(6, np.int64)
    for name, allowed in PLAN_CONSTRAINTS.items():
        args = {} if name in ("batch_size", "max_tokens") else {"batch_size": 2}
        yield f"BatchPlan.{name}", allowed, \
            lambda v, n=name, a=args: BatchPlan(**{**a, n: v}).bind(lengths)
    sets = [["chr1:0-10"]]
    calls = {"tile": lambda kw: build.tile({"chr1": 100}, **{"size": 10, **kw}),
             "merge": lambda kw: build.merge(sets, **kw),
             "coverage_cutoff": lambda kw: build.coverage_cutoff(sets, **{"min_inputs": 1, **kw}),
             "top_k": lambda kw: build.top_k(["chr1:0-5"], sets, **{"max_regions": 1, **kw})}
    for builder, constraints in build.builders.CONSTRAINTS.items():
        for name, allowed in constraints.items():
            yield f"{builder}.{name}", allowed, \
                lambda v, f=calls[builder], n=name: f({n: v})
    yield "tile_tokenizer.bin_size", tiles.CONSTRAINTS["bin_size"], \
        lambda v: tiles.tile_tokenizer({"chr1": 1000}, v)
    frag = Path(__file__).parent.parent / "genotok" / "examples" / "fragments.tsv.gz"
    yield "tile_matrix.bin_size", tiles.CONSTRAINTS["bin_size"], \
        lambda v: tiles.tile_matrix(frag, {"chr1": 1000}, v)


CASES = [(name, value, call) for name, allowed, call in _constrained()
         for value in invalid_values(allowed)]


def _case_id(name: str, value) -> str:
    """A test id that is the same in every process (pytest-xdist compares them): an object's
    default repr holds its address, so such a value is named by its type."""
    text = repr(value)
    return f"{name}=<{type(value).__name__}>" if " at 0x" in text else f"{name}={text}"


@pytest.mark.parametrize("name,value,call", CASES, ids=[_case_id(n, v) for n, v, _ in CASES])
def test_every_constrained_parameter_refuses_invalid_values(name, value, call):
    with pytest.raises(ValueError, match=name.split(".")[-1]):
        call(value)


def test_max_length_true_is_not_a_length():
    """``max_length=True`` cut every row to one token (True == 1); it is refused now."""
    from genotok import Tokenizer

    with pytest.raises(ParameterError, match="max_length must be an integer"):
        batching.truncate(np.arange(5), True)
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    with pytest.raises(ParameterError, match="max_length must be an integer"):
        tok(["chr1:50-150"], truncation=True, max_length=True)
