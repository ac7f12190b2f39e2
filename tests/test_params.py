"""The one parameter validator (genotok.params) and the invalid values it generates: every
constrained object refuses every value its constraints do not allow (``True`` for an
integer, ``"no"`` for a flag, ``1.5`` for a count), with a message naming the parameter."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import genotok
from genotok import batching
from genotok.params import (Flag, Integral, Interval, Options, ParameterError, Real,
                            UndeclaredParameter, check, invalid_values, undeclared, validate,
                            validated)


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


def _modules():
    """Every module of genotok (those needing an absent optional package aside)."""
    out = []
    for info in pkgutil.walk_packages(genotok.__path__, "genotok."):
        if info.name.endswith("__main__"):
            continue
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:
            continue
    return out


def _declared():
    """``(name, object)`` of every class and function of genotok that declares its
    parameters' constraints: a class's ``CONSTRAINTS``, a :func:`~genotok.params.validated`
    function's. Found by walking the package: nothing is listed by hand."""
    seen = {}
    for mod in _modules():
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if isinstance(getattr(obj, "CONSTRAINTS", None), dict) and callable(obj):
                seen.setdefault(f"{mod.__name__}.{name}", obj)
    return sorted(seen.items())


DECLARED = _declared()


def _parameters(obj) -> list[str]:
    """What ``obj`` is called with: a dataclass's init fields, else its signature's."""
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        return [f.name for f in dataclasses.fields(obj) if f.init]
    return [n for n, p in inspect.signature(obj).parameters.items()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("name,obj", DECLARED, ids=[n for n, _ in DECLARED])
def test_every_parameter_has_declared_constraints(name, obj):
    """scikit-learn's ``validate_params`` rule: a parameter without constraints is an error
    (and a constraint of no parameter is a stale one)."""
    params = _parameters(obj)
    missing = [p for p in params if p not in obj.CONSTRAINTS]
    stale = [p for p in obj.CONSTRAINTS if p not in params]
    assert not missing and not stale, (name, missing, stale)


def test_the_public_settings_classes_and_presets_declare_their_parameters():
    """Every settings class (a dataclass) of the public API, and the functions of the modules
    that declare theirs, are found by the walk above."""
    found = {obj for _, obj in DECLARED}
    public = [getattr(genotok, n) for n in genotok.__all__]
    records = (genotok.Chunk,)  # data handed between steps, not settings: no parameters
    settings = [o for o in public if inspect.isclass(o) and dataclasses.is_dataclass(o)
                and o not in records]
    from genotok import build, packing, presets, windows

    functions = [presets.geneformer, presets.scgpt, packing.pack, windows.windows, build.tile,
                 build.merge, build.coverage_cutoff, build.top_k, genotok.Tokenizer]
    assert settings and not [o for o in settings + functions if o not in found]


def test_an_undeclared_parameter_is_an_error_not_skipped():
    with pytest.raises(UndeclaredParameter, match="parameter 'n_thread' has no declared"):
        validate({"n_thread": 2}, {"n_threads": [Interval(Integral, 1, None)]}, "demo")

    @validated({"a": [Flag()]})
    def f(a, b=1):
        return a, b

    assert undeclared(f, f.CONSTRAINTS) == (["b"], [])
    with pytest.raises(UndeclaredParameter, match="'b'"):
        f(True, b=2)


# a valid call of each declared object with required parameters (the invalid value of one
# parameter goes on top of these): a newly declared object with required parameters needs
# a line here, the test says so
_LENGTHS = np.ones(6, np.int64)
REQUIRED = {
    "genotok.packing.pack": {"rows": [[1, 2]], "seq_len": 4, "pad_token_id": 0},
    "genotok.windows.windows": {"corpus": object(), "context_length": 2, "batch_size": 1},
    "genotok.presets.geneformer": {"token_dictionary": {"<pad>": 0, "G": 1},
                                   "gene_median_dictionary": {"G": 1.0}},
    "genotok.presets.scgpt": {"vocab": {"<pad>": 0, "<cls>": 1, "G": 2}},
    "genotok.build.builders.tile": {"chrom_sizes": {"chr1": 100}, "size": 10},
    "genotok.build.builders.merge": {"inputs": [["chr1:0-10"]]},
    "genotok.build.builders.coverage_cutoff": {"inputs": [["chr1:0-10"]], "min_inputs": 1},
    "genotok.build.builders.top_k": {"candidate": ["chr1:0-5"], "inputs": [["chr1:0-10"]],
                                     "max_regions": 1},
    "genotok.tokenizer.Tokenizer": {"source": ["chr1:0-10"]},
    "genotok.genes.GeneTokenizer": {"vocab": {"<pad>": 0, "G": 1}},
    "genotok.universe.Universe": {"regions": ["chr1:0-10"]},
    # refused before the file is made: the path is never written
    "genotok.formats.corpus.writer.CorpusWriter": {"path": "/nonexistent/c.gtokc",
                                                   "vocab_size": 9, "fingerprint": "fp"},
    "genotok.pipeline.split.SplitStore": {"inner": None, "fraction": 0.1},
    "genotok.torch_data.Collator": {"pad_token_id": 0},
    "genotok.torch_data.PackingCollator": {"seq_len": 4, "pad_token_id": 0},
    "genotok.torch_data.MLMCollator": {"collator": None, "n_regions": 5, "mask_token_id": 6},
    "genotok.torch_data.RTDCollator": {"collator": None, "n_regions": 5},
}


def _required(name, obj) -> dict:
    kw = dict(REQUIRED.get(name, {}))
    if name == "genotok.pipeline.split.SplitStore":
        from genotok.formats.stores import CorpusStore

        kw["inner"] = CorpusStore()
    if name in ("genotok.torch_data.MLMCollator", "genotok.torch_data.RTDCollator"):
        from genotok.torch_data import Collator

        kw["collator"] = Collator(pad_token_id=0)
    sig = inspect.signature(obj)
    needed = [n for n, p in sig.parameters.items() if p.default is p.empty
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in kw]
    assert not needed, f"{name}: add a valid call to REQUIRED in tests/test_params.py ({needed})"
    return kw


def _constrained():
    """(name, constraints, call(value)) of every declared parameter, then the objects whose
    constraints are not (yet) declared on them (the training room's, see _undeclared_yet)."""
    for name, obj in DECLARED:
        for param, allowed in obj.CONSTRAINTS.items():
            yield f"{name}.{param}", allowed, \
                lambda v, o=obj, n=name, p=param: o(**{**_required(n, o), p: v})
    yield from _undeclared_yet()


def _undeclared_yet():
    """Functions whose constraints live in a module table rather than on the function (the
    batching helpers, the training room's mixture and batch plan, the tiles): called here one
    by one until they are declared with :func:`~genotok.params.validated`."""
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
    from genotok import mixture
    from genotok.pipeline import tiles
    from genotok.sampling import PLAN_CONSTRAINTS, BatchPlan

    for name, allowed in mixture.CONSTRAINTS.items():  # refused before any corpus is read
        yield f"mix.{name}", allowed, lambda v, n=name: mixture.Mixture([], [], **{n: v})
    for name, allowed in PLAN_CONSTRAINTS.items():
        args = {} if name in ("batch_size", "max_tokens") else {"batch_size": 2}
        yield f"BatchPlan.{name}", allowed, \
            lambda v, n=name, a=args: BatchPlan(**{**a, n: v}).bind(_LENGTHS)
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
    with pytest.raises(ValueError, match=name.split(".")[-1].replace("[", "\\[")):
        call(value)


def test_max_length_true_is_not_a_length():
    """``max_length=True`` cut every row to one token (True == 1); it is refused now."""
    from genotok import Tokenizer

    with pytest.raises(ParameterError, match="max_length must be an integer"):
        batching.truncate(np.arange(5), True)
    tok = Tokenizer(["chr1:0-100", "chr1:100-200"])
    with pytest.raises(ParameterError, match="max_length must be an integer"):
        tok(["chr1:50-150"], truncation=True, max_length=True)
