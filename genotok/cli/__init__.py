"""The ``genotok`` command line: one entry point, one error handler, one flag vocabulary."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
