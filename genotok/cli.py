"""The ``genotok`` command line: an argparse front end over the library, with no logic of its own.

Exit codes: 0 success, 1 a genotok error (message on stderr, no traceback), 2 usage errors,
130 interrupted (Ctrl-C; a re-run resumes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .errors import GenotokError

EXAMPLES = {
    "pretokenize": """examples:
  genotok pretokenize --universe universe.bed --out corpus/ peaks/
  genotok pretokenize --config tokenizer.toml --out corpus/ 'peaks/*.bed.gz' --threads 2
  genotok pretokenize --universe u.bed --out gtoks/ --format gtok-dir @files.txt --on-error skip""",
    "tokenize": """examples:
  genotok tokenize universe.bed peaks.bed            # ids, one line per file
  genotok tokenize --tokens universe.bed peaks.bed   # region strings, one per line
  genotok tokenize --summary universe.bed a.bed b.bed.gz""",
    "info": "examples:\n  genotok info corpus/\n  genotok info --json corpus/shard-00000.gtokc\n  genotok info x.gtok",
    "decode": """examples:
  genotok decode --universe universe.bed corpus/ --record 0 > record0.bed
  genotok decode --universe universe.bed x.gtok""",
    "verify": "examples:\n  genotok verify corpus/",
    "export": "examples:\n  genotok export corpus/ gtoks/            # one gtars .gtok per record\n"
              "  genotok export corpus/ tokens.parquet    # Parquet, a row per record",
    "import": "examples:\n  genotok import --universe universe.bed gtoks/ corpus.gtokc\n"
              "  genotok import tokens.parquet corpus.gtokc",
}


def _tokenizer(args):
    from .tokenizer import Tokenizer

    if getattr(args, "config", None):
        return Tokenizer.from_config(args.config)
    if not getattr(args, "universe", None):
        raise SystemExit("genotok: error: give --universe U.bed or --config tok.toml")
    return Tokenizer.from_bed(args.universe)


def _cmd_tokenize(args) -> int:
    tok = _tokenizer(args)
    out = sys.stdout
    rows = tok.encode_batch(args.inputs, n_threads=args.threads)
    n = tok.universe.n_regions
    for path, ids in zip(args.inputs, rows):
        if args.summary:
            regions = ids[ids < n]
            out.write(f"{Path(path).name}\t{ids.size} tokens\t{np.unique(regions).size} distinct "
                      f"regions\t{ids.size - regions.size} special\n")
        elif args.tokens:
            out.write("".join(t + "\n" for t in tok.convert_ids_to_tokens(ids)))
        else:
            out.write(" ".join(map(str, ids.tolist())) + "\n")
    return 0


def _cmd_pretokenize(args) -> int:
    from .pipeline import pretokenize

    tok = _tokenizer(args)
    client = None
    if args.scheduler:
        try:
            from dask.distributed import Client
        except ImportError:
            raise SystemExit("genotok: error: --scheduler needs dask.distributed: "
                             "pip install 'genotok[dask]'") from None
        client = Client(args.scheduler)
    try:
        pretokenize(args.inputs, tok, args.out, format=args.format, n_threads=args.threads,
                    on_error=args.on_error, quiet=args.quiet, files_per_shard=args.files_per_shard,
                    overwrite=args.overwrite, client=client, hash=args.hash)
    finally:
        if client is not None:
            client.close()
    return 0


def _open_any(path: str):
    """A corpus (file or directory) or a single .gtok list."""
    from .corpus import Corpus
    from .gtok import read_gtok

    p = Path(path)
    if p.is_file():
        with open(p, "rb") as fh:
            head = fh.read(8)
        if head[:4] == b"GTOK" and head != b"GTOKCORP":
            return None, read_gtok(p)
    return Corpus.open(p), None


def _cmd_info(args) -> int:
    corpus, single = _open_any(args.path)
    if single is not None:
        info = {"path": args.path, "format": "gtok (gtars single list)", "dtype": str(single.dtype),
                "n_tokens": int(single.size)}
    else:
        info = corpus.info()
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        width = max(map(len, info))
        for k, v in info.items():
            if isinstance(v, (dict, list)) and k not in ("special_tokens", "settings", "version"):
                v = f"{len(v)} entries" if v else "none"
            print(f"{k:<{width}}  {v}")
    return 0


def _cmd_decode(args) -> int:
    tok = _tokenizer(args)
    corpus, single = _open_any(args.path)
    if corpus is not None:
        corpus_check = corpus.fingerprint
        tok.universe.check_fingerprint(corpus_check, what=args.path)
        records = [args.record] if args.record is not None else range(len(corpus))
        rows = [(i, corpus[i]) for i in records]
    else:
        rows = [(None, single)]
    u = tok.universe
    for i, ids in rows:
        ids = np.asarray(ids, dtype=np.int64)
        regions = u.decode_regions(ids[ids < u.n_regions])
        label = "" if i is None else f"\t{corpus.names[i] if corpus.names[i] is not None else i}"
        for c, s, e in zip(regions.codes, regions.starts, regions.ends):
            sys.stdout.write(f"{regions.chrom_names[c]}\t{s}\t{e}{label}\n")
    return 0


def _cmd_verify(args) -> int:
    from .corpus import Corpus

    corpus = Corpus.open(args.path)
    problems = corpus.verify()
    if problems:
        for p in problems:
            print(f"genotok: {p}", file=sys.stderr)
        return 1
    print(f"{args.path}: OK ({len(corpus):,} records, {corpus.n_tokens:,} tokens, checksums match)")
    return 0


def _cmd_export(args) -> int:
    from .corpus import Corpus, export_gtok_dir, export_parquet

    corpus = Corpus.open(args.corpus)
    if args.out.endswith(".parquet"):
        export_parquet(corpus, args.out)
        print(f"wrote {args.out} ({len(corpus):,} rows)")
    else:
        files = export_gtok_dir(corpus, args.out)
        print(f"wrote {len(files):,} .gtok files into {args.out}")
    return 0


def _cmd_import(args) -> int:
    from .corpus import import_gtok_dir, import_parquet

    if args.source.endswith(".parquet"):
        kw = {}
        if args.universe or args.config:
            tok = _tokenizer(args)
            kw = dict(vocab_size=tok.vocab_size, fingerprint=tok.fingerprint)
        import_parquet(args.source, args.out, **kw)
    else:
        tok = _tokenizer(args)
        import_gtok_dir(args.source, args.out, vocab_size=tok.vocab_size,
                        fingerprint=tok.fingerprint,
                        special_tokens=tok.universe.special_token_ids,
                        settings=tok.settings.as_dict())
    print(f"wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="genotok", description="Fast, gtars-compatible tokenization of genomic regions.",
        epilog="Run 'genotok COMMAND --help' for a command's options and examples.")
    from . import __version__

    p.add_argument("--version", action="version", version=f"genotok {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name, help_text, func):
        sp = sub.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES.get(name),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.set_defaults(func=func)
        return sp

    def tokenizer_args(sp, required=True):
        g = sp.add_mutually_exclusive_group(required=required)
        g.add_argument("--universe", metavar="U.bed", help="universe BED/BED.gz")
        g.add_argument("--config", metavar="TOK.toml", help="tokenizer configuration (genotok or gtars TOML)")

    t = cmd("pretokenize", "tokenize many region files once into a corpus (resumable)", _cmd_pretokenize)
    tokenizer_args(t)
    t.add_argument("--out", required=True, metavar="DIR", help="output directory")
    t.add_argument("inputs", nargs="+", help="files, directories, globs or @list.txt")
    t.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    t.add_argument("--format", choices=("corpus", "gtok-dir"), default="corpus")
    t.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                   help="stop at a bad input (default) or skip it and list it in the manifest")
    t.add_argument("--files-per-shard", type=int, default=64, help="inputs per shard (default 64)")
    t.add_argument("--overwrite", action="store_true", help="discard an earlier run in --out")
    t.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster (genotok[dask])")
    t.add_argument("--hash", default=None, metavar="ALGO",
                   help="input fingerprint in the manifest: xxh3_128 (default, fast) or sha256")
    t.add_argument("--quiet", action="store_true", help="no progress bar or summary")

    t = cmd("tokenize", "tokenize BED files against a universe; ids to stdout", _cmd_tokenize)
    t.add_argument("universe", help="universe BED/BED.gz (token id = line position)")
    t.add_argument("inputs", nargs="+", help="query BED/BED.gz files")
    mode = t.add_mutually_exclusive_group()
    mode.add_argument("--tokens", action="store_true", help="print region strings, one per line")
    mode.add_argument("--summary", action="store_true", help="print one summary line per file")
    t.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")

    t = cmd("info", "header, metadata, record count and length statistics", _cmd_info)
    t.add_argument("path", help="a corpus file or directory, or a .gtok file")
    t.add_argument("--json", action="store_true", help="print JSON")

    t = cmd("decode", "token ids back to BED regions", _cmd_decode)
    tokenizer_args(t)
    t.add_argument("path", help="a corpus or a .gtok file")
    t.add_argument("--record", type=int, default=None, help="only this record (default: all)")

    t = cmd("verify", "check a corpus: sizes, offsets, ids, checksums", _cmd_verify)
    t.add_argument("path")

    t = cmd("export", "corpus -> directory of gtars .gtok files, or a .parquet file", _cmd_export)
    t.add_argument("corpus")
    t.add_argument("out", help="a directory, or a path ending in .parquet")

    t = cmd("import", "directory of .gtok files, or a .parquet file -> corpus", _cmd_import)
    tokenizer_args(t, required=False)
    t.add_argument("source")
    t.add_argument("out", help="the corpus file to write")

    # listed for --help; main() hands `genotok universe …` to genotok.build.build_cli
    sub.add_parser("universe", help="build a universe from training data: tile, merge, consensus, "
                                    "top (see 'genotok universe --help')", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["universe"]:
        from .build import build_cli

        return build_cli(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except GenotokError as exc:
        print(f"genotok: error: {exc}", file=sys.stderr)
        return 1
    except (FileExistsError, FileNotFoundError, IsADirectoryError) as exc:
        print(f"genotok: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("genotok: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `genotok tokenize … | head`
        return 0
