"""The ``genotok`` command line: an argparse front end over the library, with no logic of its own.

Exit codes: 0 success, 1 a genotok error (message on stderr, no traceback), 2 usage errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .errors import GenotokError


def _tokenizer(args):
    from .tokenizer import Tokenizer

    if getattr(args, "config", None):
        return Tokenizer.from_config(args.config)
    return Tokenizer.from_bed(args.universe)


def _cmd_tokenize(args) -> int:
    tok = _tokenizer(args)
    out = sys.stdout
    rows = tok.encode_batch(args.inputs, n_threads=args.threads)
    for path, ids in zip(args.inputs, rows):
        if args.summary:
            known = int(np.count_nonzero(ids < tok.universe.n_regions))
            out.write(f"{Path(path).name}\t{ids.size} tokens\t{np.unique(ids[ids < tok.universe.n_regions]).size} "
                      f"distinct regions\t{ids.size - known} special\n")
        elif args.tokens:
            out.write("\n".join(tok.convert_ids_to_tokens(ids)) + ("\n" if ids.size else ""))
        else:
            out.write(" ".join(map(str, ids.tolist())) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="genotok", description="Fast, gtars-compatible tokenization of genomic regions.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    t = sub.add_parser("tokenize", help="tokenize BED files against a universe; ids to stdout",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  genotok tokenize universe.bed peaks.bed\n"
                              "  genotok tokenize --tokens universe.bed peaks.bed.gz\n"
                              "  genotok tokenize --summary universe.bed a.bed b.bed")
    t.add_argument("universe", help="universe BED/BED.gz (token id = line position)")
    t.add_argument("inputs", nargs="+", help="query BED/BED.gz files")
    t.add_argument("--tokens", action="store_true", help="print region strings, one per line")
    t.add_argument("--summary", action="store_true", help="print one summary line per file")
    t.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    t.set_defaults(func=_cmd_tokenize)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except GenotokError as exc:
        print(f"genotok: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `genotok tokenize … | head`
        return 0
