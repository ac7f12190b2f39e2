"""The ``genotok`` subcommands: each takes the parsed arguments and returns an exit code.

:mod:`genotok.cli` parses the command line and handles every error these raise; a
:class:`UsageError` is a command line that cannot be run as given (exit code 2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from .._optional import require
from ..errors import UniverseError

#: the tokenizer options every tokenizing subcommand takes (flag -> TokenizerSettings field)
TOKENIZER_FLAGS = ("overlap", "min_overlap", "min_fraction", "fraction_of", "unknown", "order")
#: the suffixes ``import`` reads as Parquet or Arrow IPC files (told apart by their first bytes)
TABLE_SUFFIXES = (".parquet", ".pq", ".arrow")


#: a CellSpec field's flag where ``--field-name`` would clash with a tokenizer flag
CELL_FLAG_NAMES = {"order": "--cell-order", "unknown": "--cell-unknown"}


def cell_flag(name: str) -> str:
    """The flag of the CellSpec field ``name``: ``--field-name`` (``_`` as ``-``), or
    :data:`CELL_FLAG_NAMES`' where that would clash with the tokenizer's flags."""
    return CELL_FLAG_NAMES.get(name, "--" + name.replace("_", "-"))


class UsageError(Exception):
    """A command line that cannot be run as given (exit code 2)."""


# ------------------------------------------------------------------------- helpers
def _say(args, message: str) -> None:
    """A summary line on stderr, unless --quiet."""
    if not args.quiet:
        print(f"genotok: {message}", file=sys.stderr)


def _tokenizer(args, required: bool = True):
    """The Tokenizer of --universe/--config with the tokenizer flags given (None if optional)."""
    from ..tokenizer import Tokenizer

    opts = {k: getattr(args, k) for k in TOKENIZER_FLAGS if getattr(args, k, None) is not None}
    if args.config:
        return Tokenizer.from_config(args.config, **opts)
    if args.universe:
        return Tokenizer.from_bed(args.universe, **opts)
    if required:
        raise UsageError(f"give --universe U.bed or --config TOK.toml (see '{args.prog} --help')")
    return None


def _out(args, positional: str | None = None) -> str:
    """The output path from -o/--out or the positional OUT (one of them, not both)."""
    if positional is not None and args.out is not None:
        raise UsageError(f"give the output once: as OUT or as -o/--out, not both "
                         f"(see '{args.prog} --help')")
    out = args.out if args.out is not None else positional
    if out is None:
        raise UsageError(f"the following arguments are required: -o/--out "
                         f"(see '{args.prog} --help')")
    return out


def _refuse_existing(path: str, overwrite: bool) -> None:
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; add --overwrite to replace it")


class _Sink:
    """Text output: stdout, or a file written atomically (-o/--out, --overwrite)."""

    def __init__(self, args):
        self.path = args.out
        if self.path is not None:
            _refuse_existing(self.path, args.overwrite)

    def __enter__(self):
        if self.path is None:
            return sys.stdout
        from .._io import atomic_write

        self._cm = atomic_write(self.path, "w")
        return self._cm.__enter__()

    def __exit__(self, *exc):
        if self.path is not None:
            return self._cm.__exit__(*exc)
        return False


def _open_any(path: str):
    """A corpus (file or directory) or a single .gtok list."""
    from ..formats.corpus import Corpus
    from ..formats.gtok import read_gtok

    p = Path(path)
    if p.is_file():
        with open(p, "rb") as fh:
            head = fh.read(8)
        if head[:4] == b"GTOK" and head != b"GTOKCORP":
            return None, read_gtok(p)
    return Corpus.open(p), None


# ------------------------------------------------------------------------- subcommands
def cmd_tokenize(args) -> int:
    from ..pipeline import expand_inputs

    inputs = list(args.inputs)
    # as pretokenize reads them, but a file may be given twice: one output line each
    if inputs.count("-") > 1:
        raise UsageError("'-' (standard input) can be given once: it is read once")
    # '-' is standard input (a pipe or a redirected file; a terminal is refused when read)
    inputs = ["/dev/stdin" if item == "-" else str(p) for item in inputs
              for p in ([item] if item == "-" else expand_inputs([item]))]
    sink = _Sink(args)  # an existing -o FILE is refused before any work
    tok = _tokenizer(args)
    rows = tok.encode_batch(inputs, n_threads=args.threads)
    n = tok.universe.n_regions
    with sink as out:
        for path, ids in zip(inputs, rows):
            if args.summary:
                regions = ids[ids < n]
                name = "-" if path == "/dev/stdin" else Path(path).name
                out.write(f"{name}\t{ids.size} tokens\t{np.unique(regions).size} "
                          f"distinct regions\t{ids.size - regions.size} special\n")
            elif args.tokens:
                out.write("".join(t + "\n" for t in tok.convert_ids_to_tokens(ids)))
            else:
                out.write(" ".join(map(str, ids.tolist())) + "\n")
    return 0


#: ``--preset``: the :mod:`genotok.presets` function and its keywords
PRESETS = {"geneformer": ("geneformer", {"version": 1}),
           "geneformer-v2": ("geneformer", {"version": 2}),
           "scgpt": ("scgpt", {})}


def _gene_run(args):
    """``(GeneTokenizer, CellSpec or None)`` of ``--vocab`` (and ``--preset`` /
    ``--medians``), or ``None``: no gene vocabulary asked."""
    from dataclasses import fields

    from .. import presets
    from ..genes import GeneTokenizer
    from ..singlecell.spec import CellSpec

    vocab, preset, medians = (getattr(args, k, None) for k in ("vocab", "preset", "medians"))
    if vocab is None:
        if preset is not None or medians is not None:
            raise UsageError(f"--preset and --medians go with a gene vocabulary: give --vocab "
                             f"(see '{args.prog} --help')")
        return None
    region_flags = [k for k in TOKENIZER_FLAGS if getattr(args, k, None) is not None]
    if region_flags:
        raise UsageError(f"--{region_flags[0].replace('_', '-')} is an overlap option of a "
                         "universe; a gene vocabulary matches genes by id")
    if preset is None:
        if medians is not None:
            raise UsageError("--medians are Geneformer's: give --preset geneformer (or "
                             "geneformer-v2), or the medians in --cells' RankByMedian")
        tok = (GeneTokenizer.from_pretrained(vocab) if os.path.isdir(vocab)
               else GeneTokenizer(vocab))
        return tok, _cell_spec(args)
    func, kw = PRESETS[preset]
    if func == "geneformer":
        if medians is None:
            raise UsageError(f"--preset {preset} needs Geneformer's gene_median_dictionary: "
                             "give --medians FILE")
        tok, spec = presets.geneformer(vocab, medians, n_threads=args.threads, **kw)
    else:
        if medians is not None:
            raise UsageError(f"--medians are Geneformer's; --preset {preset} takes none")
        tok, spec = presets.scgpt(vocab, n_threads=args.threads, **kw)
    if args.cells is not None:
        raise UsageError(f"--preset {preset} is the cell spec; give it or --cells, not both "
                         "(the cell flags change the preset's fields)")
    given = {f.name: getattr(args, f"cell_{f.name}") for f in fields(CellSpec)
             if hasattr(args, f"cell_{f.name}")}
    return tok, spec.replace(**given) if given else spec


def _cell_spec(args):
    """The run's :class:`~genotok.CellSpec`: ``--cells`` (TOML) and the field flags
    (``None``: neither given). A flag that contradicts the file is a usage error."""
    from dataclasses import fields

    from ..singlecell.spec import CellSpec

    given = {f.name: getattr(args, f"cell_{f.name}") for f in fields(CellSpec)
             if hasattr(args, f"cell_{f.name}")}
    if args.cells is None:
        return CellSpec(**given) if given else None
    spec = CellSpec.from_toml(args.cells)
    if given:
        merged = spec.replace(**given)
        for name in given:
            mine, theirs = getattr(merged, name), getattr(spec, name)
            if name == "encoding":
                mine, theirs = ([s.to_json() for s in x] for x in (mine, theirs))
            if mine != theirs:
                raise UsageError(f"{cell_flag(name)} {getattr(args, 'cell_' + name)!r} "
                                 f"disagrees with {args.cells}'s {name} = {theirs!r}; give "
                                 "one of them (or the same value)")
    return spec


def _read_options(args):
    """The run's read options: each ``--read JSON`` (any source's options by name, read by
    :func:`~genotok.singlecell.sources.read_options_from_json`) and ``--modality``/``--raw``/
    ``--layer`` as ``AnnDataOptions``; ``None``: none given, every input read with its
    defaults."""
    import json

    from ..params import ParameterError
    from ..singlecell.reading import AnnDataOptions
    from ..singlecell.sources import read_options_from_json

    given = []
    for text in args.read or ():
        try:
            given.append(read_options_from_json(json.loads(text)))
        except json.JSONDecodeError as exc:
            raise UsageError(f"--read {text!r} is not JSON ({exc.msg}); write it as "
                             '\'{"name": "fragments", "min_fragments": 10}\'') from None
        except (ParameterError, TypeError) as exc:
            raise UsageError(f"--read {text!r}: {exc}") from None
    if args.modality is not None or args.raw or args.layer is not None:
        if any(isinstance(r, AnnDataOptions) for r in given):
            raise UsageError("--modality/--raw/--layer and --read '{\"name\": \"anndata\", "
                             "...}' both set the AnnData options; give one of them")
        given.append(AnnDataOptions(modality=args.modality, raw=args.raw, layer=args.layer))
    if not given:
        return None
    return given[0] if len(given) == 1 else tuple(given)


def cmd_pretokenize(args) -> int:
    from ..pipeline import DaskExecutor, RunOptions, pretokenize

    genes = _gene_run(args)
    tok, cells = genes if genes is not None else (_tokenizer(args), _cell_spec(args))
    client = None
    if args.scheduler:
        Client = require("dask.distributed", "--scheduler").Client

        client = Client(args.scheduler, timeout=args.scheduler_timeout)
    # the run's summary is for the user, as every command's: on stderr (silenced by -q), with
    # the time of the whole command (loading the tokenizer and compiling kernels included)
    summary_to_stderr = contextlib.redirect_stdout(io.StringIO())
    summary_to_stderr.__enter__()
    try:
        summary = pretokenize(args.inputs, tok, args.out, cells=cells, format=args.format,
                    n_threads=args.threads, on_error=args.on_error, progress=not args.quiet,
                    overwrite=args.overwrite,
                    options=RunOptions(files_per_shard=args.files_per_shard, hash=args.hash,
                                       executor=None if client is None
                                       else DaskExecutor(client),
                                       validation=args.validation,
                                       read=_read_options(args)))
    finally:
        summary_to_stderr.__exit__(None, None, None)
        if client is not None:
            client.close()
    if not args.quiet:
        print(dataclasses.replace(summary, seconds=time.perf_counter() - args.started),
              file=sys.stderr)
    return 0


def cmd_run(args) -> int:
    from ..runfile import Pipeline, RunFileError

    try:
        pipeline = Pipeline.from_toml(args.file)
    except RunFileError as exc:  # the file is the command line's argument: a usage error
        raise UsageError(str(exc)) from None
    if args.dry_run:
        print(pipeline.plan())
        return 0
    summary_to_stderr = contextlib.redirect_stdout(sys.stderr)
    with summary_to_stderr:
        try:
            pipeline.run(overwrite=args.overwrite, progress=not args.quiet)
        except RunFileError as exc:  # another run file's run in out
            raise UsageError(str(exc)) from None
    return 0


def cmd_info(args) -> int:
    corpus, single = _open_any(args.path)
    if single is not None:
        info = {"path": args.path, "format": "gtok (gtars single list)", "dtype": str(single.dtype),
                "n_tokens": int(single.size)}
    else:
        info = corpus.info()
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        if "format_version" in info:  # one version line, not [1, 0] and 1.0
            info.pop("version", None)
        width = max(map(len, info))
        for k, v in info.items():
            if isinstance(v, (dict, list)) and k not in ("special_tokens", "settings"):
                v = f"{len(v)} {'entry' if len(v) == 1 else 'entries'}" if v else "none"
            print(f"{k:<{width}}  {v}")
    return 0


def cmd_decode(args) -> int:
    tok = _tokenizer(args)
    corpus, single = _open_any(args.path)
    if corpus is None:
        if args.record is not None:
            raise UsageError(f"argument --record: {args.path} is a single .gtok list, not a "
                             f"corpus of records (see '{args.prog} --help')")
        rows = [(None, single)]
    else:
        tok.universe.check_fingerprint(corpus.fingerprint, what=args.path)
        n = len(corpus)
        if args.record is not None and args.record >= n:
            have = f"{n} records (0..{n - 1})" if n else "no records"
            raise UsageError(f"argument --record: {args.path} has {have}, not record "
                             f"{args.record}")
        records = [args.record] if args.record is not None else range(len(corpus))
        rows = ((i, corpus[i]) for i in records)
    u = tok.universe
    n_special = 0
    with _Sink(args) as out:
        for i, ids in rows:
            ids = np.asarray(ids, dtype=np.int64)
            bad = (ids < 0) | (ids >= u.vocab_size)
            if bad.any():  # a wrong universe or a damaged file: never drop ids silently
                where = args.path if i is None else f"{args.path} record {i}"
                raise UniverseError(
                    f"{where}: token id {int(ids[bad][0])} is outside the vocabulary of the "
                    f"universe given (ids 0..{u.vocab_size - 1}); was it tokenized with another "
                    "universe?")
            region = ids < u.n_regions
            n_special += int(ids.size - region.sum())
            regions = u.decode_regions(ids[region])
            label = "" if i is None else f"\t{corpus.names[i] if corpus.names[i] is not None else i}"
            for c, s, e in zip(regions.codes, regions.starts, regions.ends):
                out.write(f"{regions.chrom_names[c]}\t{s}\t{e}{label}\n")
    if n_special:
        _say(args, f"{n_special:,} special token(s) (<unk>, <pad>, …) have no region and were "
                   "not written")
    return 0


def cmd_verify(args) -> int:
    from ..formats.corpus import Corpus

    corpus = Corpus.open(args.path)
    problems = corpus.verify()
    if problems:
        for p in problems:
            print(f"genotok: {p}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{args.path}: OK ({len(corpus):,} records, {corpus.n_tokens:,} tokens; checked: "
              f"{corpus.checks})")
    return 0


def file_stores() -> list[str]:
    """The registered stores that write files (plugins included): what ``export`` and
    ``import`` take as ``--format`` (``pretokenize --format`` too)."""
    from ..formats.stores import stores

    return [n for n, c in stores().items() if c.writes_files]


def _export_suffixes() -> dict[str, str]:
    """Output suffix -> store, from the registry: each store of numbered files by its suffix
    (``tokens.parquet`` -> ``parquet``), and ``.pq``."""
    from ..formats.stores import stores

    known = {c.suffix: n for n, c in stores().items()
             if c.writes_files and c.suffix and not c.per_record_files and n != "corpus"}
    return {**known, ".pq": "parquet"}


def _export_format(out: str, given: str | None) -> str:
    """--format, else the output's name: a directory of .gtok files (no suffix, a trailing
    '/'), else a store's output by its files' suffix (``tokens.parquet``)."""
    if given:
        return given
    if out.endswith(("/", os.sep)):
        return "gtok-dir"
    suffix = Path(out).suffix.lower()
    known = _export_suffixes()
    if suffix in known:  # (an earlier export there too: --overwrite replaces it)
        return known[suffix]
    if not suffix or os.path.isdir(out):
        return "gtok-dir"
    raise UsageError(f"cannot tell the output format of {out!r} from its name: known are a "
                     "directory of gtars .gtok files (a name without a suffix, or ending in '/') "
                     f"and a store's output named by its suffix ({', '.join(known)}); or give "
                     f"--format {'|'.join(file_stores())}")


def cmd_export(args) -> int:
    from ..formats.corpus import Corpus
    from ..formats.interop import export_gtok_dir, export_store
    from ..formats.stores import STORES

    out = _out(args, args.out_positional)
    fmt = _export_format(out, args.format)
    corpus = Corpus.open(args.corpus)
    p = Path(out)
    if fmt != "gtok-dir":  # any store's output, by its own writer (what pretokenize writes)
        if p.exists() and (not p.is_dir() or any(p.iterdir())) and not args.overwrite:
            raise FileExistsError(f"{out} exists; add --overwrite to replace it")
        export_store(corpus, out, fmt, overwrite=args.overwrite)
        keeps = STORES[fmt].supports
        lost = [what for what, has, key in (("the value channel", corpus.has_values, "values"),
                                            ("the metadata columns", corpus.meta, "metadata"))
                if has and key not in keeps]
        _say(args, f"wrote {out} ({len(corpus):,} records, format {fmt}"
                   + (f"; {' and '.join(lost)} not kept by it" if lost else "") + ")")
        return 0
    if p.exists() and not p.is_dir():
        raise FileExistsError(f"{out} exists and is not a directory")
    if p.is_dir() and any(p.iterdir()):
        if not args.overwrite:
            raise FileExistsError(f"{out} exists and is not empty; add --overwrite to replace "
                                  "its .gtok files")
        for f in p.glob("*.gtok"):  # records of an earlier export; other files are left alone
            f.unlink()
    files = export_gtok_dir(corpus, out)
    _say(args, f"wrote {len(files):,} .gtok files into {out}")
    return 0


def _manifest_format(source: str) -> str | None:
    """The store whose output ``source`` is, by its ``manifest.json`` (``None``: none)."""
    from ..formats.corpus import MANIFEST
    from ..formats.corpus.manifest import MANIFEST_FORMAT

    path = os.path.join(source, MANIFEST)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            fmt = json.load(fh).get("format")
    except (OSError, ValueError, AttributeError):
        return ""  # Corpus.open says what is wrong with it
    if fmt == MANIFEST_FORMAT:
        return "corpus"
    return fmt[len("genotok-"):] if isinstance(fmt, str) and fmt.startswith("genotok-") else ""


def cmd_import(args) -> int:
    from ..formats.interop import import_gtok_dir, import_parquet

    out = _out(args, args.out_positional)
    fmt, stored = args.format, _manifest_format(args.source)
    if stored is not None or fmt == "corpus":
        # a store's output (any format), or a corpus file: read as Corpus.open reads it
        if fmt is not None and stored and fmt != stored:
            raise UsageError(f"--format {fmt}: {args.source} is a {stored} output (its "
                             "manifest.json says so); leave --format out")
        if (args.ids_column, args.name_column) != ("input_ids", "name"):
            raise UsageError("--ids-column and --name-column are for Parquet/Arrow files; a "
                             "genotok output's manifest says its columns")
        _refuse_existing(out, args.overwrite)
        _import_output(args.source, out, _tokenizer(args, required=False), args.overwrite)
        _say(args, f"wrote {out}")
        return 0
    if fmt is None:
        if os.path.isdir(args.source):
            fmt = "gtok-dir"
        elif Path(args.source).suffix.lower() in TABLE_SUFFIXES:
            fmt = "parquet"  # Parquet or Arrow IPC, told apart by their first bytes
        elif not os.path.exists(args.source):
            raise FileNotFoundError(f"{args.source}: no such file or directory")
        else:
            raise UsageError(f"cannot tell the format of {args.source!r}: known are a store's "
                             "output (a directory with manifest.json), a directory of .gtok "
                             f"files, Parquet and Arrow files ({', '.join(TABLE_SUFFIXES)}); or "
                             "give --format gtok-dir|parquet")
    if fmt not in ("gtok-dir", "parquet", "arrow"):
        raise UsageError(f"--format {fmt}: {args.source} has no manifest.json; a {fmt} output "
                         "is read by its manifest (files of their own: gtok-dir, parquet, arrow)")
    _refuse_existing(out, args.overwrite)
    if fmt in ("parquet", "arrow"):
        kw = {}
        tok = _tokenizer(args, required=False)
        if tok is not None:
            kw = dict(vocab_size=tok.vocab_size, fingerprint=tok.fingerprint)
        import_parquet(args.source, out, overwrite=args.overwrite, ids_column=args.ids_column,
                       name_column=args.name_column, **kw)
    else:
        if (args.ids_column, args.name_column) != ("input_ids", "name"):
            raise UsageError("--ids-column and --name-column are for Parquet/Arrow sources; a "
                             ".gtok file holds ids only, named by its file")
        tok = _tokenizer(args, required=False)
        if tok is None:
            raise UsageError("importing .gtok files needs the universe their ids belong to: "
                             f"give --universe U.bed or --config TOK.toml (see '{args.prog} --help')")
        import_gtok_dir(args.source, out, vocab_size=tok.vocab_size,
                        fingerprint=tok.fingerprint, overwrite=args.overwrite,
                        special_token_ids=tok.universe.special_token_ids,
                        settings=tok.settings.as_dict())
    _say(args, f"wrote {out}")
    return 0


def _import_output(source: str, out: str, tok, overwrite: bool) -> None:
    """Any store's output into one corpus file, read as ``Corpus.open`` reads it: records,
    names, the value channel, metadata columns, the inputs, the header's extra (the cell spec,
    fitted medians) and the tokenizer's identity (which ``tok``, if given, must share)."""
    from ..errors import UniverseMismatchError
    from ..formats.corpus import Corpus, CorpusWriter

    src = Corpus.open(source)
    if tok is not None and src.fingerprint != tok.fingerprint:
        raise UniverseMismatchError(f"{source}: tokenized with universe {src.fingerprint[:12]}…, "
                                    f"not the one given ({tok.fingerprint[:12]}…); token ids "
                                    "are specific to their universe")
    meta, names, i = src.meta, src.names, 0
    with CorpusWriter(out, vocab_size=src.vocab_size, fingerprint=src.fingerprint,
                      special_token_ids=src.special_token_ids or None,
                      settings=src.settings or None, metadata_columns=list(meta),
                      values_dtype="float32" if src.has_values else None,
                      extra=src.header.get("extra") or None, overwrite=overwrite) as w:
        for batch in src.iter_batches(4096, values=src.has_values):
            j = i + len(batch)
            w.append_batch(batch, names=names[i:j], meta={c: v[i:j] for c, v in meta.items()})
            i = j
        for s in src.sources:
            w.add_source(**s)


def cmd_universe(args) -> int:
    from .. import build
    from ..pipeline import expand_inputs

    progress = not args.quiet and sys.stderr.isatty()
    hashing = not args.no_hash
    if args.method == "tile":
        result = build.tile(args.chrom_sizes, args.size, hash_inputs=hashing)
    else:
        inputs = [str(p) for p in expand_inputs(args.inputs)]  # as pretokenize reads them
        opts = dict(progress=progress, hash_inputs=hashing, n_threads=args.threads)
        if args.method == "merge":
            result = build.merge(inputs, args.min_gap, **opts)
        elif args.method == "consensus":
            result = build.coverage_cutoff(inputs, args.min_inputs,
                                           min_input_fraction=args.min_input_fraction,
                                           min_width=args.min_width, **opts)
        else:
            result = build.top_k(args.candidate, inputs, args.max_regions,
                                 min_inputs=args.min_inputs, **opts)
    out = result.write(args.out, overwrite=args.overwrite)
    r = result.report
    _say(args, f"{r.method}: {len(r.inputs)} input(s), {r.n_input_regions:,} regions -> "
               f"{r.n_regions:,} regions in {out} (report: {build.sidecar_path(out).name}, "
               f"{r.elapsed_s:.2f} s)")
    return 0
