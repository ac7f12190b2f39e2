"""The ``genotok`` command line: an argparse front end over the library, with no logic of its own.

One parser holds every subcommand (``genotok universe …`` included), one flag vocabulary
(``-o/--out``, ``-q/--quiet``, ``--threads``, ``--overwrite``, ``--universe``/``--config`` and
the tokenizer options) and one error handler, :func:`main`:

- exit 0 on success;
- exit 2 on a usage error: a bad flag or value (``--threads 0``), a missing argument, an
  output format that cannot be told from its name, a record number out of range;
- exit 1 on a failure: a :class:`~genotok.errors.GenotokError`, a file error, a missing
  optional package;
- exit 130 on Ctrl-C.

Each error is one line on stderr starting ``genotok: error:``; ``--debug`` (or the environment
variable ``GENOTOK_DEBUG=1``) shows the traceback instead. The subcommands themselves are in
:mod:`genotok.cli.commands`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
import warnings

from .._optional import EXTRAS
from ..errors import GenotokError
from . import commands as C
from .commands import UsageError, cell_flag

EXAMPLES = {
    "pretokenize": """examples:
  genotok pretokenize --universe universe.bed --out corpus/ peaks/
  genotok pretokenize --config tokenizer.toml --out corpus/ 'peaks/*.bed.gz' --threads 2
  genotok pretokenize --universe u.bed --overlap best --unknown region --out corpus/ peaks/
  genotok pretokenize --universe u.bed --out gtoks/ --format gtok-dir @files.txt --on-error skip
  genotok pretokenize --universe u.bed --out cells/ --cells cells.toml a.h5ad b.h5ad
  genotok pretokenize --preset geneformer --vocab token_dictionary.json \\
      --medians gene_median_dictionary.json --out geneformer/ rna.h5ad
  genotok pretokenize --vocab vocab.json --cells cells.toml --out genes/ rna.h5ad
  genotok pretokenize --universe u.bed --out cells/ --encoding normalize,rank_by_median \\
      --cell-order value --max-length 2048 a.h5ad b.h5ad""",
    "tokenize": """examples:
  genotok tokenize --universe universe.bed peaks.bed            # ids, one line per file
  genotok tokenize --universe universe.bed --tokens peaks.bed   # region strings, one per line
  genotok tokenize --config tokenizer.toml --summary a.bed b.bed.gz
  genotok tokenize --universe universe.bed --min-fraction 0.5 -o ids.txt peaks.bed""",
    "info": "examples:\n  genotok info corpus/\n  genotok info --json corpus/shard-00000.gtokc\n"
            "  genotok info x.gtok",
    "decode": """examples:
  genotok decode --universe universe.bed corpus/ --record 0 > record0.bed
  genotok decode --universe universe.bed -o x.bed x.gtok""",
    "verify": "examples:\n  genotok verify corpus/",
    "run": "examples:\n  genotok run pipeline.toml --dry-run\n  genotok run pipeline.toml"
           "\n  genotok run pipeline.toml --overwrite   # start again (default: resume)"
           "\n(the schema: docs/run.md)",
    "export": """examples:
  genotok export corpus/ gtoks/                 # one gtars .gtok per record (a directory)
  genotok export corpus/ tokens.parquet         # Parquet shards, a row per record (a directory)
  genotok export --format arrow -o tokens/ corpus/   # any store's output, read by Corpus.open""",
    "import": """examples:
  genotok import --universe universe.bed gtoks/ corpus.gtokc
  genotok import tokens.parquet corpus.gtokc
  genotok import --overwrite -o corpus.gtokc tokens.parquet
  genotok import --ids-column tokens --name-column sample theirs.arrow corpus.gtokc""",
    "tile": """examples:
  genotok universe tile --chrom-sizes hg38.chrom.sizes --size 1000 -o tiles1k.bed
  genotok universe tile --chrom-sizes hg38.chrom.sizes --size 5000 -o tiles5k.bed.gz""",
    "merge": """examples:
  genotok universe merge -o union.bed peaks/*.narrowPeak
  genotok universe merge --min-gap 100 -o union.bed a.bed b.bed.gz
  genotok universe merge -o union.bed @inputs.txt    # one path per line""",
    "consensus": """examples:
  genotok universe consensus --min-inputs 3 -o consensus.bed peaks/*.bed
  genotok universe consensus --min-input-fraction 0.1 --min-width 50 -o cons.bed peaks/*.bed""",
    "top": """examples:
  genotok universe top --candidate union.bed --max-regions 100000 -o vocab.bed peaks/*.bed
  genotok universe top --candidate tiles1k.bed --max-regions 500000 --min-inputs 2 -o vocab.bed @train.txt""",
}

#: advice in the library's messages that names Python keywords, and the same said in flags
ADVICE = {"pass overwrite=True": "add --overwrite",
          "overwrite=True": "--overwrite",
          "give vocab_size= and fingerprint= (e.g. from the Tokenizer that made the tokens)":
              "give --universe U.bed or --config TOK.toml (the universe the ids belong to)"}


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised (as :class:`UsageError`) for :func:`main` to report; an
    unknown option is named first, with the one that was meant (argparse reported a missing
    required option instead, and never said that ``--output`` is not an option)."""

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _unknown_option(self, given: list[str] | None = None) -> str | None:
        known = sorted(self._option_string_actions)
        commands = next((a.choices for a in self._actions
                         if isinstance(a, argparse._SubParsersAction)), {})
        given = getattr(self, "_given", []) if given is None else given
        for i, arg in enumerate(given):
            if arg == "--":
                break
            if arg in commands:  # the options after it are the command's
                return commands[arg]._unknown_option(given[i + 1:])
            flag = arg.split("=", 1)[0]
            if not flag.startswith("-") or flag in known or _is_number(flag):
                continue
            if any(k.startswith(flag) for k in known if k.startswith("--") and
                   flag.startswith("--")):  # an abbreviation argparse accepts
                continue
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
            return (f"unrecognized option {flag}" +
                    (f": did you mean {close[0]}?" if close else "") +
                    f" (see '{self.prog} --help')")
        return None

    def error(self, message):
        raise UsageError(self._unknown_option() or f"{message} (see '{self.prog} --help')")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------- argument types
def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {v}")
        return v

    parse.__name__ = "integer"
    return parse


_positive = _int_at_least(1)
_n_bins = _int_at_least(2)  # bin 0 is the zero bin
_non_negative = _int_at_least(0)


def _float_in(low: float, high: float, low_open: bool = False):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (low < v <= high if low_open else low <= v <= high):
            raise argparse.ArgumentTypeError(
                f"must be within {'(' if low_open else '['}{low:g}, {high:g}], got {text}")
        return v

    parse.__name__ = "number"
    return parse


_seconds = _float_in(0.0, float("inf"), low_open=True)
_target_sum = _float_in(0.0, float("inf"), low_open=True)


def _hash_name(text: str) -> str:
    import hashlib

    if text == "xxh3_128" or text in hashlib.algorithms_available:
        return text
    raise argparse.ArgumentTypeError(f"unknown hash {text!r}: use xxh3_128, sha256 or another "
                                     "hashlib name")


# ------------------------------------------------------------------------- the cell spec
def _encoding_steps(text: str) -> tuple:
    """``--encoding``: comma-separated steps, each a registry name with optional
    ``:field=value`` parts (values as JSON, else text): ``normalize:target_sum=100,bins:n=5``."""
    import json

    from ..params import ParameterError
    from ..singlecell.spec import encodings

    known = encodings()  # the built-in steps and the genotok.encodings plugins
    steps = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, *kvs = part.split(":")
        if name not in known:
            raise argparse.ArgumentTypeError(f"unknown encoding {name!r}; known: "
                                             f"{', '.join(sorted(known))}")
        d = {"name": name}
        for kv in kvs:
            key, eq, value = kv.partition("=")
            if not eq:
                raise argparse.ArgumentTypeError(f"{part!r}: give a step's fields as "
                                                 "name:field=value")
            try:
                d[key] = json.loads(value)
            except ValueError:
                d[key] = value
        try:
            steps.append(known[name].from_json(d))
        except (ParameterError, TypeError) as exc:
            raise argparse.ArgumentTypeError(f"{part!r}: {exc}") from None
    return tuple(steps)


def cell_spec_args(parser) -> None:
    """``--cells cells.toml`` and one flag per :class:`~genotok.CellSpec` field, generated
    from the spec's fields and constraints (a new field gets its flag here, unwritten)."""
    from dataclasses import fields

    from ..params import Flag, InstanceOf, Integral, Interval, Options
    from ..singlecell.spec import CellSpec

    g = parser.add_argument_group(
        "what each cell of .h5ad and fragment inputs becomes: a CellSpec (see docs/cli.md)")
    g.add_argument("--cells", metavar="TOML", help="a CellSpec as TOML (CellSpec.to_toml); "
                   "the flags below may repeat its fields, not contradict them")
    for f in fields(CellSpec):
        allowed = [c for c in CellSpec.CONSTRAINTS[f.name] if c is not None]
        kw = {"dest": f"cell_{f.name}", "default": argparse.SUPPRESS}
        c = allowed[0]
        if f.name == "encoding":
            kw.update(type=_encoding_steps, metavar="STEPS",
                      help="value encodings, e.g. normalize,rank_by_median or "
                           "normalize:target_sum=100:log1p=true,bins:n=51")
        elif f.name == "prepend":
            kw.update(action="append", metavar="COLUMN",
                      help="an obs column whose condition token starts each cell (repeat)")
        elif isinstance(c, Flag):
            kw.update(action=argparse.BooleanOptionalAction, help=f"CellSpec.{f.name}")
        elif isinstance(c, Options):
            kw.update(choices=c.values, help=f"CellSpec.{f.name}")
        elif isinstance(c, Interval):
            kw.update(type=int if c.kind is Integral else float, metavar="N" if c.kind is
                      Integral else "X", help=f"CellSpec.{f.name}: {c}")
        elif isinstance(c, InstanceOf) and c.types == (str,):
            kw.update(metavar="COLUMN", help=f"CellSpec.{f.name}: an obs column")
        else:  # pragma: no cover - a new kind of field needs its flag's kind here
            raise TypeError(f"CellSpec.{f.name}: no flag for {c}")
        g.add_argument(cell_flag(f.name), **kw)


# ------------------------------------------------------------------------- the parser
def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``genotok`` subcommand (``universe`` and its methods included)."""
    from .._version import __version__

    p = _Parser(prog="genotok", description="Fast, gtars-compatible tokenization of genomic "
                "regions.", epilog="Run 'genotok COMMAND --help' for a command's options and "
                "examples. Exit codes: 0 success, 1 failure, 2 usage error, 130 interrupted.")
    p.add_argument("--version", action="version", version=f"genotok {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = _Parser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar, warnings or summary on stderr")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show a traceback on error")

    def cmd(parent, name, help_text, func, *, epilog_key=None, **kw):
        sp = parent.add_parser(name, help=help_text, description=help_text, parents=[common],
                               epilog=EXAMPLES.get(epilog_key or name),
                               formatter_class=argparse.RawDescriptionHelpFormatter, **kw)
        sp.set_defaults(func=func, prog=sp.prog)
        return sp

    def universe_args(sp, required=True, genes=False):
        g = sp.add_mutually_exclusive_group(required=required)
        g.add_argument("--universe", metavar="U.bed", help="universe BED/BED.gz")
        g.add_argument("--config", metavar="TOK.toml",
                       help="tokenizer configuration (genotok or gtars TOML); the flags below "
                            "override its settings")
        if genes:
            g.add_argument("--vocab", metavar="FILE",
                           help="a gene vocabulary instead of a universe: {gene id: token id} "
                                "as JSON, TOML or the model's pickle (Geneformer's "
                                "token_dictionary), or a GeneTokenizer.save_pretrained folder")

    def gene_args(sp):
        g = sp.add_argument_group("gene vocabularies (RNA foundation models; with --vocab)")
        g.add_argument("--preset", choices=tuple(C.PRESETS),
                       help="the model's recipe (genotok.presets): its tokenizer from --vocab "
                            "and its CellSpec; the cell flags (above) change its fields")
        g.add_argument("--medians", metavar="FILE",
                       help="Geneformer's gene_median_dictionary (JSON, TOML or pickle); "
                            "with --preset geneformer / geneformer-v2")

    def tokenizer_args(sp, required=True, genes=False):
        from ..kernels.modes import FractionOf, HitOrder, Overlap, Unknown, names

        universe_args(sp, required, genes)
        g = sp.add_argument_group("tokenizer options (default: gtars behaviour, or the --config)")
        g.add_argument("--overlap", choices=names(Overlap),
                       help="every overlapped universe region (all), or the one with the largest "
                            "overlap per query (best)")
        g.add_argument("--min-overlap", type=_non_negative, metavar="BP",
                       help="minimum overlap in bp for a hit (default 0: any overlap)")
        g.add_argument("--min-fraction", type=_float_in(0.0, 1.0), metavar="F",
                       help="minimum overlap as a fraction of the query (or see --fraction-of)")
        g.add_argument("--fraction-of", choices=names(FractionOf),
                       help="what --min-fraction is a fraction of (default query)")
        g.add_argument("--unknown", choices=names(Unknown),
                       help="<unk> once per set without hits (set, gtars), once per query "
                            "without a hit (region), or never (drop)")
        g.add_argument("--order", choices=names(HitOrder),
                       help="token order (default gtars)")

    def threads(sp):
        sp.add_argument("--threads", type=_positive, default=None, metavar="N",
                        help="threads (default: all cores)")

    def overwrite(sp, what="replace an existing output"):
        sp.add_argument("--overwrite", action="store_true", help=what)

    def out_flag(sp, metavar, help_text, required=False):
        sp.add_argument("-o", "--out", metavar=metavar, required=required, help=help_text)

    t = cmd(sub, "pretokenize", "tokenize many region files once into a corpus (resumable)",
            C.cmd_pretokenize)
    tokenizer_args(t, genes=True)
    out_flag(t, "DIR", "output directory, or a URL (s3://bucket/prefix; genotok[remote])",
             required=True)
    t.add_argument("inputs", nargs="+", help="files, directories, globs or @list.txt")
    threads(t)
    t.add_argument("--format", choices=C.file_stores(), default="corpus",
                   help="a corpus (default), one gtars .gtok file per "
                   "input, Parquet / Arrow IPC shards (genotok[parquet]), JSON Lines, or a "
                   "plugin's store (the registry: genotok.formats.stores.stores())")
    t.add_argument("--validation", type=_float_in(0.0, 1.0), default=0.0, metavar="FRACTION",
                   help="hold out this share of the records (by a hash of their names) as a "
                        "validation split in DIR/validation/ (default 0: none)")
    t.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                   help="stop at a bad input (default) or skip it and list it in the manifest")
    t.add_argument("--files-per-shard", type=_positive, default=64, metavar="N",
                   help="inputs per shard, the unit of resumption (default 64)")
    overwrite(t, "discard an earlier run in --out (default: resume it)")
    t.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster (genotok[dask])")
    t.add_argument("--scheduler-timeout", type=_seconds, default=30.0, metavar="SECONDS",
                   help="give up connecting to --scheduler after this long (default 30)")
    t.add_argument("--hash", type=_hash_name, default=None, metavar="ALGO",
                   help="input fingerprint in the manifest: xxh3_128 (fast; the default when "
                        "xxhash is installed) or sha256 (the default without it)")
    r = t.add_argument_group("how the cell inputs are read (AnnDataOptions, FragmentOptions, …)")
    r.add_argument("--modality", metavar="NAME", help="the .h5mu modality (mod/NAME; default "
                   "atac, else the only one whose features are regions)")
    r.add_argument("--raw", action="store_true", help="read raw/X and raw/var instead of X "
                   "and var")
    r.add_argument("--layer", metavar="NAME", help="read layers/NAME instead of X")
    r.add_argument("--read", action="append", metavar="JSON",
                   help="any cell source's read options as JSON, by name: "
                        "'{\"name\": \"fragments\", \"min_fragments\": 10}' (repeat it, one "
                        "per kind of input)")
    cell_spec_args(t)
    gene_args(t)

    t = cmd(sub, "tokenize", "tokenize BED files against a universe; ids to stdout",
            C.cmd_tokenize)
    tokenizer_args(t)
    t.add_argument("inputs", nargs="+", metavar="FILE",
                   help="query BED/BED.gz files, directories, globs or @list.txt; '-' "
                        "reads standard input")
    mode = t.add_mutually_exclusive_group()
    mode.add_argument("--tokens", action="store_true", help="print region strings, one per line")
    mode.add_argument("--summary", action="store_true", help="print one summary line per file")
    out_flag(t, "FILE", "write to FILE instead of stdout")
    overwrite(t)
    threads(t)

    t = cmd(sub, "info", "header, metadata, record count and length statistics", C.cmd_info)
    t.add_argument("path", help="a corpus file or directory, or a .gtok file")
    t.add_argument("--json", action="store_true", help="print JSON")

    t = cmd(sub, "decode", "token ids back to BED regions (stdout)", C.cmd_decode)
    universe_args(t)
    t.add_argument("path", help="a corpus or a .gtok file")
    t.add_argument("--record", type=_non_negative, default=None, metavar="I",
                   help="only record I (default: all)")
    out_flag(t, "FILE", "write to FILE instead of stdout")
    overwrite(t)

    t = cmd(sub, "run", "run a run file: its datasets, mixture and pack stage (resumable)",
            C.cmd_run)
    t.add_argument("file", metavar="FILE.toml", help="the run file (docs/run.md)")
    t.add_argument("--dry-run", action="store_true",
                   help="print the plan (datasets, inputs, tokenizers, outputs); write nothing")
    overwrite(t, "discard an earlier run in the file's [run].out (default: resume it)")

    t = cmd(sub, "verify", "check a corpus: sizes, offsets, ids, checksums", C.cmd_verify)
    t.add_argument("path", help="a corpus file or directory")

    t = cmd(sub, "export", "corpus -> directory of gtars .gtok files, or any store's output",
            C.cmd_export)
    t.add_argument("corpus", help="a corpus file or directory")
    t.add_argument("out_positional", nargs="?", metavar="OUT",
                   help="a directory: of .gtok files (no suffix, or ending in '/'), or a store's "
                   "output (named by its suffix: tokens.parquet, tokens.arrow…)")
    out_flag(t, "OUT", "the same as OUT")
    t.add_argument("--format", choices=C.file_stores(),
                   help="a directory of gtars .gtok files (gtok-dir), or any store's output, "
                   "written by its writer (default: from OUT's name)")
    overwrite(t)

    t = cmd(sub, "import", "any store's output, a directory of .gtok files, or a Parquet file "
            "-> corpus", C.cmd_import)
    universe_args(t, required=False)
    t.add_argument("source", help="an output of pretokenize (any --format: its manifest.json "
                   "says which), a directory of .gtok files or a *.parquet file")
    t.add_argument("out_positional", nargs="?", metavar="OUT", help="the corpus file to write")
    out_flag(t, "OUT", "the same as OUT")
    t.add_argument("--format", choices=C.file_stores(),
                   help="the source's format (default: its manifest.json, a directory of .gtok "
                   "files, or from its suffix; parquet and arrow read either)")
    t.add_argument("--ids-column", default="input_ids", metavar="COLUMN",
                   help="Parquet/Arrow: the list<int> column of token ids (default: input_ids)")
    t.add_argument("--name-column", default="name", metavar="COLUMN",
                   help="Parquet/Arrow: the column of record names (default: name)")
    overwrite(t)

    _universe_parsers(sub, cmd, threads, overwrite)
    return p


def _universe_parsers(sub, cmd, threads, overwrite) -> None:
    """``genotok universe {tile,merge,consensus,top}``: build a universe from training data."""
    u = sub.add_parser(
        "universe", help="build a universe from training data: tile, merge, consensus, top",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build a universe (the tokenizer's vocabulary) from training region sets. "
                    "Writes a BED in genomic order (chr1, chr2, …, chrX, chrY, chrM, then other "
                    "contigs alphabetically) and a <OUT>.json sidecar saying how it was built.",
        epilog="\n\n".join(EXAMPLES[k] for k in ("tile", "merge", "consensus", "top")))
    methods = u.add_subparsers(dest="method", required=True, metavar="METHOD")

    def method(name, help_text, inputs=True):
        sp = cmd(methods, name, help_text, C.cmd_universe)
        sp.add_argument("-o", "--out", metavar="OUT.bed", required=True,
                        help="universe BED to write (.gz compresses); the report goes to "
                             "OUT.bed.json")
        overwrite(sp, "replace an existing OUT.bed and its report")
        sp.add_argument("--no-hash", action="store_true",
                        help="do not record the sha256 of every input file in the report")
        if inputs:
            threads(sp)
            sp.add_argument("inputs", nargs="+", metavar="INPUT",
                            help="BED/BED.gz/narrowPeak files, directories, globs or @list.txt")
        return sp

    t = method("tile", "genome-wide fixed-width bins (the last bin of a chromosome is clipped)",
               inputs=False)
    t.add_argument("--chrom-sizes", required=True, metavar="FILE",
                   help="chrom.sizes file: 'name<TAB>length' per line")
    t.add_argument("--size", required=True, type=_positive, metavar="N", help="bin width (bp)")

    m = method("merge", "the union of all input regions, merged like `bedtools merge -d N`")
    m.add_argument("--min-gap", type=_non_negative, default=0, metavar="N",
                   help="merge regions at most N bp apart (default 0: overlapping or touching)")

    c = method("consensus", "regions covered by at least K input sets (coverage cutoff)")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--min-inputs", type=_positive, metavar="K",
                   help="minimum number of input sets")
    g.add_argument("--min-input-fraction", type=_float_in(0.0, 1.0, low_open=True), metavar="F",
                   help="minimum fraction of the input sets: K = ceil(F * n_inputs)")
    c.add_argument("--min-width", type=_non_negative, default=0, metavar="W",
                   help="drop consensus regions narrower than W bp")

    k = method("top", "keep the N candidate regions hit by the most input sets (vocabulary size)")
    k.add_argument("--candidate", required=True, metavar="U.bed", help="candidate universe BED")
    k.add_argument("--max-regions", required=True, type=_positive, metavar="N",
                   help="number of regions to keep (ties broken by genomic position)")
    k.add_argument("--min-inputs", type=_non_negative, default=1, metavar="H",
                   help="never keep regions hit by fewer than H input sets (default 1)")


# ------------------------------------------------------------------------- the error handler
def _message(exc: BaseException) -> tuple[int, str]:
    """(exit code, message) for an exception; the library's Python advice said in flags."""
    if isinstance(exc, UsageError):
        return 2, str(exc)
    if isinstance(exc, ImportError):
        name = (exc.name or "").partition(".")[0]
        if name in EXTRAS:
            return 1, (f"this needs the optional package {name}: "
                       f"pip install 'genotok[{EXTRAS[name]}]' (or pip install {name})")
        return 1, str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, FileExistsError) and exc.filename \
            and exc.strerror:
        return 1, f"{exc.filename}: {exc.strerror}"
    if isinstance(exc, MemoryError):
        return 1, "out of memory"
    if isinstance(exc, (GenotokError, OSError, ValueError)):  # ValueError: a checked value
        text = str(exc)
        for python, flags in ADVICE.items():
            text = text.replace(python, flags)
        return 1, text
    return 1, (f"{type(exc).__name__}: {exc} (an unexpected error: re-run with --debug for the "
               "traceback, and please report it)")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    text = " ".join(str(message).split())
    print(f"genotok: warning: {text}", file=sys.stderr)


def _one_line(text: str) -> str:
    return " ".join(text.split("\n")).strip()


def main(argv: list[str] | None = None) -> int:
    """Run ``genotok ARGS``; returns the exit code (0, 1 failure, 2 usage, 130 interrupted).

    Examples
    --------
    >>> import genotok
    >>> ex = genotok.examples_dir()
    >>> main(["tokenize", "--universe", str(ex / "universe.bed"), "--summary",
    ...       str(ex / "peaks" / "sample0.narrowPeak")])  # doctest: +NORMALIZE_WHITESPACE
    sample0.narrowPeak 530 tokens 464 distinct regions 0 special
    0
    """
    started = time.perf_counter()
    argv = sys.argv[1:] if argv is None else [os.fspath(a) for a in argv]
    debug = "--debug" in argv or os.environ.get("GENOTOK_DEBUG", "") not in ("", "0")
    args = None
    try:
        with warnings.catch_warnings():
            # the warnings meant for users, once each; libraries' notices to developers
            # (about their own APIs) are not for the command line
            warnings.simplefilter("ignore")
            warnings.simplefilter("default", UserWarning)
            warnings.simplefilter("default", RuntimeWarning)
            warnings.showwarning = _show_warning
            args = build_parser().parse_args(argv)
            args.started = started
            if args.quiet:
                warnings.simplefilter("ignore")
            return args.func(args)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        hint = "; re-run the same command to resume" if getattr(args, "command", "") == \
            "pretokenize" else ""
        print(f"genotok: interrupted{hint}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `genotok tokenize … | head`: stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0
    except Exception as exc:
        code, text = _message(exc)
        if debug and code != 2:
            raise
        print(f"genotok: error: {_one_line(text)}", file=sys.stderr)
        return code

