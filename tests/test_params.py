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
from genotok.ragged import Ragged
from genotok.sampling import BatchPlan
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
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__ \
                    or getattr(obj, "__name__", name) != name:  # an alias: found by its name
                continue
            if isinstance(getattr(obj, "CONSTRAINTS", None), dict) and callable(obj) \
                    and not inspect.isabstract(obj):  # an abstract base's: its subclasses'
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


def test_the_public_settings_classes_are_found_by_the_walk():
    """Every settings class (a dataclass) of the public API is found by the walk above, so
    the invalid-value test below runs on it (the public functions: the test at the end)."""
    found = {obj for _, obj in DECLARED}
    public = [getattr(genotok, n) for n in genotok.__all__]
    records = (genotok.Chunk,)  # data handed between steps, not settings: no parameters
    settings = [o for o in public if inspect.isclass(o) and dataclasses.is_dataclass(o)
                and o not in records]
    assert settings and not [o for o in settings if o not in found]


def test_the_walk_finds_the_declared_methods():
    """A method declaring its parameters (``@validated``) is found and tested like a
    function: the invalid-value test below covers it without a list of objects."""
    names = {n for n, _ in METHODS}
    assert {"genotok.sampling.BatchPlan.schedule", "genotok.tokenizer.Tokenizer.__call__",
            "genotok.formats.corpus.reader.Corpus.open"} <= names


def test_an_undeclared_parameter_is_an_error_not_skipped():
    with pytest.raises(UndeclaredParameter, match="parameter 'n_thread' has no declared"):
        validate({"n_thread": 2}, {"n_threads": [Interval(Integral, 1, None)]}, "demo")

    def f(a, b=1):
        return a, b

    assert undeclared(f, {"a": [Flag()]}) == (["b"], [])
    # a function declaring some of its parameters is refused when it is defined (at import)
    with pytest.raises(UndeclaredParameter, match=r"f: parameters without constraints \['b'\]"):
        validated({"a": [Flag()]})(f)
    with pytest.raises(UndeclaredParameter, match=r"constraints of no parameter \['c'\]"):
        validated({"a": [Flag()], "b": [Flag()], "c": [Flag()]})(f)


# a valid call of each declared object with required parameters (the invalid value of one
# parameter goes on top of these): a newly declared object with required parameters needs
# a line here, the test says so
_FRAGMENTS = Path(__file__).parent.parent / "genotok" / "examples" / "fragments.tsv.gz"
REQUIRED = {
    "genotok.bgzf.write_bgzf": {"path": "/nonexistent/x.gz", "data": b"chr1\t1\t2\n"},
    "genotok.batching.truncate": {"ids": np.arange(10), "max_length": 3},
    "genotok.batching.pad_batch": {"rows": [[1, 2]], "pad_token_id": 0},
    "genotok.batching.as_tensors": {"batch": {}, "return_tensors": "np"},
    "genotok.batching.make_batch": {"rows": [[1, 2, 3]], "pad_token_id": 0, "max_length": 2,
                                    "truncation": "head"},
    "genotok.batching.pad_inputs": {"rows": [[1, 2, 3]], "pad_token_id": 0},
    "genotok.mixture.Mixture": {"corpora": [], "weights": []},
    # refused before any corpus is opened: the run folder is never read
    "genotok.mixture.mix": {"corpora": "/nonexistent/run"},
    "genotok.mixture.write_mixture": {"run_folder": "/nonexistent/run", "datasets": {"a": "x"},
                                      "weights": [1]},
    "genotok.sampling.BatchPlan": {"batch_size": 2},
    "genotok.sampling.BatchSampler": {"plan": None},
    "genotok.sampling.chunk_bounds": {"n": 4},
    "genotok.sampling.epoch_order": {"n": 4, "seed": 0, "epoch": 0, "shuffle": "block"},
    "genotok.sampling.token_budget_batches": {"order": np.arange(3), "lengths": np.ones(3, int),
                                              "max_tokens": 4},
    "genotok.data.PretokenizedDataset": {"source": "/nonexistent/c.gtokc"},
    "genotok.data.shuffle_tokens": {"ids": np.arange(3), "rng": np.random.default_rng(0)},
    "genotok.data.wrap": {"ids": [1, 2]},
    "genotok.data.mlm_mask": {"input_ids": np.arange(3), "n_regions": 4, "mask_token_id": 5,
                              "rng": np.random.default_rng(0)},
    "genotok.data.rtd_replace": {"input_ids": np.arange(3), "n_regions": 4,
                                 "rng": np.random.default_rng(0)},
    "genotok.sampling.padding_waste": {"lengths": [1, 2], "seq": [0, 1], "bounds": [0, 2]},
    "genotok.sampling.shuffle_quality": {"order": [0, 1]},
    "genotok.sampling.plan_for": {"corpus": [0, 1], "batch_size": 1},
    "genotok.sampling.shard_starts": {"corpus": [0, 1]},
    "genotok.singlecell.sources.register_source": {"source": None},
    "genotok.singlecell.sources.unregister_source": {"source": None},
    "genotok.singlecell.sources.open_source": {"obj": "/nonexistent/a.h5ad"},
    "genotok.sink.concat": {"batches": []},
    "genotok.sink.collect": {"batches": []},
    "genotok.sink.json_scalars": {"values": [1]},
    # refused before anything is read or written
    "genotok.sink.write_records": {"records": [], "out": "/nonexistent/o",
                                   "tokenizer": lambda: _tokenizer()},
    "genotok.sink.write_corpus": {"path": "/nonexistent/c.gtokc", "batches": [],
                                  "tokenizer": lambda: _tokenizer()},
    "genotok.pipeline.plan.input_kind": {"path": "a.bed"},
    "genotok.pipeline.plan.expand_inputs": {"inputs": []},
    "genotok.pipeline.plan.record_name": {"path": "a.bed"},
    "genotok.torch_data.safe_context": {"num_workers": 0},
    "genotok.torch_data.worker_init": {"worker_id": 0},
    "genotok.formats.stores.get_store": {"format": "corpus"},
    "genotok.build.builders.read_chrom_sizes": {"chrom_sizes": {"chr1": 10}},
    "genotok.build.streaming.chrom_sort_key": {"name": "chr1"},
    "genotok.genes.read_mapping": {"path": "/nonexistent/m.json"},
    "genotok.runfile.read_packed": {"path": "/nonexistent/p"},
    "genotok.mixture.read_mixture": {"run_folder": "/nonexistent/run"},
    "genotok.data.worker_slice": {"order": np.arange(5), "rank": 0, "world_size": 2},
    "genotok.sink.output_kind": {"output": "np"},
    "genotok.sink.shape": {"rows": None},
    "genotok.pipeline.tiles.tile_tokenizer": {"chrom_sizes": {"chr1": 1000}},
    # refused before anything is read or written
    "genotok.pipeline.run.pretokenize": {"inputs": ["/nonexistent/a.bed"], "out": "/nonexistent/o",
                                         "tokenizer": lambda: _tokenizer()},
    "genotok.regions.as_regions": {"obj": ["chr1:0-10"]},
    "genotok.formats.gtok.write_gtok": {"ids": [1], "out": "/nonexistent/a.gtok"},
    "genotok.formats.gtok.read_gtok": {"path": "/nonexistent/a.gtok"},
    "genotok.formats.interop.export_gtok_dir": {"corpus": lambda: _corpus(), "out": "/nonexistent/d"},
    "genotok.formats.interop.export_store": {"corpus": lambda: _corpus(), "out": "/nonexistent/d"},
    "genotok.formats.interop.import_gtok_dir": {"directory": "/nonexistent/d", "out": "/nonexistent/c",
                                                "vocab_size": 9, "fingerprint": "fp"},
    "genotok.formats.interop.import_parquet": {"paths": "/nonexistent/p", "out": "/nonexistent/c"},
    "genotok.singlecell.varnames.var_regions": {"adata": "/nonexistent/a.h5ad"},
    "genotok.bgzf.BGZF": {"path": "/nonexistent/f.gz"},
    "genotok.bgzf.is_bgzf": {"path": "/nonexistent/f.gz"},
    "genotok.bgzf.has_index": {"path": "/nonexistent/f.gz"},
    "genotok.bgzf.line_blocks": {"path": "/nonexistent/f.gz", "block_bytes": 1 << 16},
    "genotok.bgzf.region_lines": {"path": "/nonexistent/f.gz", "want": {}},
    "genotok.bgzf.parse_regions": {"regions": ["chr1"]},
    "genotok.bgzf.keep_lines": {"buf": np.zeros(0, np.uint8), "want": None},
    "genotok.build.bedfile.sidecar_path": {"path": "u.bed"},
    "genotok.build.bedfile.bed_bytes": {"regions": lambda: genotok.RegionSet.__new__(
        genotok.RegionSet)},
    "genotok.compat.tokenize_fragment_file": {
        "path": "/nonexistent/f.tsv", "tokenizer": lambda: _tokenizer()},
    "genotok.compat.write_tokens_to_gtok": {"a": "/nonexistent/a.gtok", "b": [1]},
    "genotok.compat.ITTokenizer": {"universe": ["chr1:0-10"]},
    "genotok.compat.Region2VecDataset": {"path": "/nonexistent/d"},
    "genotok.formats.corpus.reader.check_expected": {"fingerprint": "fp", "expect": None,
                                                     "where": "c"},
    "genotok.formats.corpus.remote.open_corpus": {"url": "memory://nonexistent/c"},
    "genotok.formats.gtok.open_regular": {"path": "/nonexistent/a", "what": "a file"},
    "genotok.formats.h5ad.write_h5ad_rows": {"out": "/nonexistent/m.h5ad", "chunks": [],
                                             "obs": lambda: _frame(), "var": lambda: _frame()},
    "genotok.formats.hf.arrow_table": {"corpus": lambda: _corpus()},
    "genotok.formats.hf.to_hf_dataset": {"corpus": lambda: _corpus()},
    "genotok.formats.store.ragged_of": {"lists": [[1]], "path": "x.jsonl"},
    "genotok.formats.store.file_digest": {"path": "/nonexistent/x"},
    "genotok.singlecell.sources.obs_names": {"adata": "/nonexistent/a.h5ad"},
    "genotok.singlecell.sources.var_names": {"adata": "/nonexistent/a.h5ad"},
    "genotok.singlecell.sources.memory_matrix": {"X": np.zeros((1, 1))},
    "genotok.singlecell.sources.source_class": {"obj": "/nonexistent/a.h5ad"},
    "genotok.singlecell.containers.open_container": {"path": "/nonexistent/a.h5ad"},
    "genotok.singlecell.fragments.fragment_counts": {
        "path": "/nonexistent/f.tsv", "tokenizer": lambda: _tokenizer()},
    "genotok.singlecell.fragments.fragment_count_chunks": {
        "path": "/nonexistent/f.tsv", "tokenizer": lambda: _tokenizer()},
    "genotok.singlecell.fragments.tokenize_fragments": {
        "path": "/nonexistent/f.tsv", "tokenizer": lambda: _tokenizer()},
    "genotok.singlecell.matrix.fragment_matrix": {"path": "/nonexistent/f.tsv",
                                                  "regions": ["chr1:0-10"]},
    "genotok.singlecell.values.feature_medians": {"adata": "/nonexistent/a.h5ad"},
    "genotok.build.report.write_universe": {"regions": ["chr1:0-10"], "out": "/nonexistent/u.bed"},
    "genotok.formats.corpus.manifest.write_manifest": {"shards": [], "out": "/nonexistent/d"},
    "genotok.formats.corpus.writer.json_scalars": {"values": [1]},
    "genotok.singlecell.conditions.condition_ids": {
        "obs": {}, "tokenizer": lambda: _tokenizer(), "prepend": []},
    "genotok.singlecell.spill.RowSpill": {"n_cols": 4},
    "genotok.singlecell.conditions.condition_tokens": {"adata": {}, "columns": ["batch"]},
    "genotok.torch_data.Collator": {"pad_token_id": 0},
    "genotok.torch_data.MLMCollator": {"collator": lambda: _torch_data().Collator(0),
                                       "n_regions": 4, "mask_token_id": 1},
    "genotok.torch_data.RTDCollator": {"collator": lambda: _torch_data().Collator(0),
                                       "n_regions": 4},
    "genotok.torch_data.PackingCollator": {"seq_len": 4, "pad_token_id": 0},
    # refused before the corpus is opened
    "genotok.torch_data.CorpusDataset": {"corpus": "/nonexistent/c.gtokc"},
    "genotok.torch_data.CorpusIterableDataset": {"corpus": "/nonexistent/c.gtokc",
                                                 "plan": BatchPlan(batch_size=2),
                                                 "collate": lambda: _torch_data().Collator(0)},
    "genotok.torch_data.ResumableLoader": {"dataset": None},
    "genotok.lightning.CorpusDataModule": {"corpus": "/nonexistent/c.gtokc",
                                           "plan": BatchPlan(batch_size=2),
                                           "collate": lambda: _torch_data().Collator(0)},
    "genotok.singlecell.cells.tokenize_anndata": {
        "adata": "/nonexistent/a.h5ad", "tokenizer": lambda: _tokenizer()},
    "genotok.singlecell.cells.tokenize_cells": {
        "source": "/nonexistent/a.h5ad", "tokenizer": lambda: _tokenizer()},
    "genotok.regions.parse_region_strings": {"strings": ["chr1:0-10"]},
    "genotok.pipeline.tiles.tile_matrix": {"path": _FRAGMENTS, "chrom_sizes": {"chr1": 1000}},
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
    # methods (found by the walk too; their instance: INSTANCES)
    "genotok.sampling.BatchPlan.schedule": {"epoch": 0},
    "genotok.sampling.BatchPlan.resume": {"state": {}},
    "genotok.regions.RegionSet.from_bed": {"path": "/nonexistent/a.bed"},
    "genotok.formats.corpus.reader.Corpus.open": {"path": "/nonexistent/c.gtokc"},
    "genotok.singlecell.matrix.FragmentMatrix.from_fragments": {"path": "/nonexistent/f.tsv",
                                                                "regions": ["chr1:0-10"]},
    "genotok.tokenizer.Tokenizer.__call__": {"regions": ["chr1:0-10"]},
    "genotok.data.PretokenizedDataset.set_epoch": {"epoch": 0},
    "genotok.mixture.Mixture.set_epoch": {"epoch": 0},
    "genotok.universe.Universe.with_extra_tokens": {"tokens": ["<a>"]},
    "genotok.sampling.BatchSampler.set_epoch": {"epoch": 0},
    "genotok.torch_data.CorpusIterableDataset.set_epoch": {"epoch": 0},
    "genotok.torch_data.CorpusIterableDataset.load_state_dict": {"state": {}},
    "genotok.tokenizer.Tokenizer.decode": {"ids": [0]},
    "genotok.tokenizer.Tokenizer.batch_decode": {"sequences": [[0]]},
    "genotok.genes.GeneTokenizer.decode": {"ids": [0]},
}


def _tokenizer():
    """A Tokenizer that is not built (``__new__`` alone): it passes the ``tokenizer``
    constraints, and no case gets further than the parameter it refuses, so no universe is
    made and no kernel compiled (a first Tokenizer compiles the names and sweep kernels)."""
    return genotok.Tokenizer.__new__(genotok.Tokenizer)


def _corpus():
    """A small corpus (made once)."""
    import tempfile

    from genotok import Corpus, CorpusWriter

    p = Path(tempfile.mkdtemp()) / "c.gtokc"
    with CorpusWriter(p, vocab_size=9, fingerprint="fp") as w:
        w.append_batch([[1, 2]])
    return Corpus.open(p)


def _frame():
    import pandas as pd

    return pd.DataFrame(index=["a"])


def _torch_data():
    from genotok import torch_data

    return torch_data


def _required(name, obj) -> dict:
    """The valid call of ``REQUIRED`` (a lambda there makes its value: an object to build)."""
    kw = {k: v() if getattr(v, "__name__", "") == "<lambda>" else v
          for k, v in REQUIRED.get(name, {}).items()}
    if name == "genotok.pipeline.split.SplitStore":
        from genotok.formats.stores import CorpusStore

        kw["inner"] = CorpusStore()
    if name == "genotok.sampling.BatchSampler":
        kw["plan"] = BatchPlan(batch_size=2)
    if name == "genotok.sink.shape":
        kw["rows"] = Ragged.from_list([[1, 2]])
    sig = inspect.signature(obj)
    needed = [n for n, p in sig.parameters.items() if p.default is p.empty
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n not in kw
              and n not in ("self", "cls")]
    assert not needed, f"{name}: add a valid call to REQUIRED in tests/test_params.py ({needed})"
    return kw


def _methods():
    """``(name, class, attribute, function)`` of every method of a declared class (or of a
    public class of genotok) that declares its parameters with ``@validated`` (``__init__``
    aside: the class is the one called): found by the walk, not listed."""
    out = {}
    for mod in _modules():
        for cname, cls in vars(mod).items():
            if cname.startswith("_") or not inspect.isclass(cls) or \
                    cls.__module__ != mod.__name__ or inspect.isabstract(cls):
                continue
            for attr, raw in vars(cls).items():
                fn = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
                if attr != "__init__" and inspect.isfunction(fn) and \
                        isinstance(getattr(fn, "CONSTRAINTS", None), dict):
                    out.setdefault(f"{mod.__name__}.{cname}.{attr}", (cls, attr, raw, fn))
    return sorted(out.items())


METHODS = _methods()

#: an instance to call the methods of a class on, where the class's valid call of
#: ``REQUIRED`` does not make one that can (a corpus to read, a plan bound to a length)
INSTANCES = {
    "genotok.tokenizer.Tokenizer": lambda: _tokenizer(),
    "genotok.universe.Universe": lambda: genotok.Universe.__new__(genotok.Universe),  # unbuilt
    "genotok.data.PretokenizedDataset": lambda: genotok.data.PretokenizedDataset(_corpus()),
    "genotok.mixture.Mixture": lambda: genotok.mixture.Mixture([_corpus()], [1.0]),
    "genotok.formats.corpus.reader.Corpus": lambda: _corpus(),
    "genotok.sampling.BatchPlan": lambda: BatchPlan(batch_size=2).bind(6),
    "genotok.sampling.BatchSampler": lambda: genotok.sampling.BatchSampler(
        BatchPlan(batch_size=2).bind(6)),
    "genotok.torch_data.CorpusIterableDataset": lambda: _torch_data().CorpusIterableDataset(
        _corpus(), BatchPlan(batch_size=2), _torch_data().Collator(0)),
}


def _bound(name: str, cls, attr: str, raw):
    """What to call method ``name`` on: the class (a class or static method), else an
    instance (:data:`INSTANCES`, else the class's valid call)."""
    if isinstance(raw, (classmethod, staticmethod)):
        return getattr(cls, attr)
    owner = name.rsplit(".", 1)[0]
    make = INSTANCES.get(owner)
    return getattr(make() if make else cls(**_required(owner, cls)), attr)


def _constrained():
    """(name, constraints, call(value)) of every declared parameter, of the declared
    functions and classes and of the declared methods."""
    for name, obj in DECLARED:
        for param, allowed in obj.CONSTRAINTS.items():
            yield f"{name}.{param}", allowed, \
                lambda v, o=obj, n=name, p=param: o(**{**_required(n, o), p: v})
    for name, (cls, attr, raw, fn) in METHODS:
        for param, allowed in fn.CONSTRAINTS.items():
            yield f"{name}.{param}", allowed, \
                lambda v, n=name, c=cls, a=attr, r=raw, f=fn, p=param: _bound(n, c, a, r)(
                    **{**_required(n, f), p: v})


def _cases() -> list:
    """``(name, invalid value, call)``: every invalid value of a constraint the first time it
    is met; a parameter whose constraints read as an earlier one's (the same description,
    so the same ``check``) gets the first of them only: it shows the parameter is checked,
    the rest would test the same constraint again."""
    out, seen = [], set()
    for name, allowed, call in _constrained():
        values = invalid_values(allowed)
        key = repr([str(c) for c in allowed])
        out.extend((name, v, call) for v in (values[:1] if key in seen else values))
        seen.add(key)
    return out


CASES = _cases()


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
    with pytest.raises(ParameterError, match="max_length must be an integer"):
        batching.truncate(np.arange(5), True)
    tok = _tokenizer()  # refused before the tokenizer is used
    with pytest.raises(ParameterError, match="max_length must be an integer"):
        tok(["chr1:50-150"], truncation=True, max_length=True)


# ------------------------------------------------------------- every public callable declared
#: public callables whose parameters are not a caller's settings, so have no constraints:
#: by module (prefix) or by name, each with its reason
EXEMPT = {
    # the validator itself: its arguments are constraints and rules, its own vocabulary
    "genotok.params.": "the declarations' own vocabulary",
    # the conformance suites take the implementation under test and check it themselves
    "genotok.testing.": "the implementation under test is their argument",
    # argparse declares the CLI's arguments (types, choices, ranges)
    "genotok.cli.": "argparse declares them",
    # records genotok makes and hands out (results, reports, chunks, tasks): read by a
    # caller, never made from a caller's settings
    "genotok.build.BuildReport": "a record", "genotok.build.BuildResult": "a record",
    "genotok.pipeline.RunSummary": "a record", "genotok.Chunk": "a record",
    "genotok.runfile.PackReport": "a record", "genotok.sampling.Schedule": "a record",
    "genotok.pretrained.Loaded": "a record", "genotok.tokenizer.PreparedSet": "a record",
    "genotok.packing.Packed": "a record", "genotok.formats.store.ArrayShard": "a record",
    "genotok.batching.Encoding": "a record", "genotok.singlecell.FragmentMatrix": "a record",
    "genotok.singlecell.Container": "a record", "genotok.compat.TokenizedRegion": "a record",
    "genotok.pipeline.BatchTask": "a record", "genotok.pipeline.Job": "a record",
    "genotok.singlecell.CountMatrix": "an output the driver fills (made by fragment_matrix)",
    # plots: a figure of records, drawn by matplotlib, which checks its own arguments
    "genotok.plot.": "matplotlib's",
    # objects a reader or a classmethod makes from what it read and checked (Corpus.open,
    # RegionSet.from_*, a source's open(read=...) with validated read options, a run file's
    # reader naming the file and key): their constructor is not the way in
    "genotok.Corpus": "made by Corpus.open", "genotok.formats.corpus.RemoteCorpus": "made by Corpus.open",
    "genotok.RegionSet": "made by its from_* readers and as_regions",
    "genotok.Ragged": "a container of arrays, its structure checked by itself",
    "genotok.Pipeline": "made by Pipeline.read from a run file",
    "genotok.singlecell.AnnDataSource": "made by open()", "genotok.singlecell.H5adSource":
    "made by open()", "genotok.singlecell.H5muSource": "made by open()",
    "genotok.singlecell.TenxH5Source": "made by open()", "genotok.singlecell.MtxSource":
    "made by open()", "genotok.singlecell.SomaSource": "made by open()",
    "genotok.singlecell.ZarrSource": "made by open()", "genotok.singlecell.FragmentSource":
    "made by open()",
    "genotok.bgzf.Index": "made by Index.read and Index.find from the index file",
    "genotok.compat.TokenizedRegionSet": "a record (ITTokenizer.tokenize's answer)",
}

def _public_callables() -> dict:
    """``{shortest public path: object}`` of every public function and class with parameters
    (the inventory of ``docs/api/names.md``, tests/test_api_names.py), exceptions aside."""
    from tests import test_api_names

    out = {}
    for row in test_api_names.inventory():
        if row.kind not in ("function", "class"):
            continue
        parts = row.name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        try:
            params = [n for n, p in inspect.signature(obj).parameters.items()
                      if n not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL,
                                                                      p.VAR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        if params:
            out[row.name] = obj
    return out


def test_every_public_callable_declares_its_parameters():
    """scikit-learn's rule for the whole public API: every public function and class with
    parameters declares their constraints (``@validated``, a class's ``CONSTRAINTS``), unless
    :data:`EXEMPT` says why not."""
    found = _public_callables()
    undeclared = {n for n, o in found.items()
                  if not isinstance(getattr(o, "CONSTRAINTS", None), dict)
                  and not any(n == e or (e.endswith(".") and n.startswith(e)) for e in EXEMPT)}
    assert not undeclared, ("public callables without declared constraints "
                            f"(genotok.params): {sorted(undeclared)}")


def test_relations_between_parameters_are_declared_rules():
    """The rules of genotok.params (ExactlyOne, Below, Needs, SumAtMost) replace the
    hand-written relation checks, with messages naming both parameters and the values."""
    from genotok.data import mlm_mask

    with pytest.raises(ParameterError, match="give exactly one of batch_size and max_tokens, "
                                             "got batch_size=None, max_tokens=None"):
        BatchPlan()
    plan = BatchPlan(batch_size=2).bind(6)
    with pytest.raises(ParameterError, match=r"rank must be in \[0, world_size\) = \[0, 2\), got 2"):
        plan.schedule(0, rank=2, world_size=2)
    with pytest.raises(ParameterError, match="truncation or padding='max_length' needs max_length"):
        batching.pad_inputs([[1, 2]], 0, truncation=True)
    with pytest.raises(ParameterError, match=r"replace_prob \+ random_prob must be at most 1, "
                                             r"got 0.8 \+ 0.3"):
        mlm_mask(np.arange(3), n_regions=4, mask_token_id=5, rng=np.random.default_rng(0),
                 random_prob=0.3)


def test_values_are_validated_before_they_are_converted():
    """int(1.7) is 1 and str(5) is "5": such values were converted, then used."""
    from genotok.sampling import BatchSampler, epoch_order
    from genotok.universe import Universe

    with pytest.raises(ParameterError, match=r"epoch must be an integer in \[0, inf\), got 1.5"):
        BatchSampler(BatchPlan(batch_size=2).bind(4)).set_epoch(1.5)
    with pytest.raises(genotok.UniverseError, match="special_tokens must be a mapping of"):
        Universe(["chr1:0-10"], special_tokens={"pad": 5})
    with pytest.raises(ParameterError, match=r"seed must be an integer in \[0, inf\), got 2.5"):
        epoch_order(4, 2.5, 0)


def test_a_misspelt_keyword_names_the_one_meant():
    from genotok.sampling import epoch_order

    with pytest.raises(TypeError, match="got an unexpected keyword argument 'windw': did you "
                                        "mean window="):
        epoch_order(4, 0, 0, windw=2)


def test_a_tokenizer_call_checks_its_settings_before_reading_regions():
    """tok(path, padding="left") read (and tokenized) the file, then refused the padding."""
    tok = _tokenizer()  # refused before the tokenizer is used
    with pytest.raises(ParameterError, match="Tokenizer: padding must be one of"):
        tok("/nonexistent/q.bed", padding="left")
    with pytest.raises(ParameterError, match="truncation or padding='max_length' needs max_length"):
        tok("/nonexistent/q.bed", truncation=True)


def test_the_parallel_inflate_checks_its_thread_count_before_int(tmp_path):
    """read_range(n_threads=1.5) ran on int(1.5) = 1 thread."""
    h5py = pytest.importorskip("h5py")
    from genotok._inflate import read_range

    with h5py.File(tmp_path / "x.h5", "w") as f:
        d = f.create_dataset("x", data=np.arange(100, dtype=np.int32), chunks=(16,),
                             compression="gzip")
        with pytest.raises(ParameterError, match=r"n_threads must be an integer in \[1, inf\)"):
            read_range(d, 0, 50, n_threads=1.5)
        assert read_range(d, 3, 6, n_threads=2).tolist() == [3, 4, 5]
