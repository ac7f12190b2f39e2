"""The plan of a :func:`~genotok.pipeline.pretokenize` run: its inputs (files, globs,
directories, ``@list.txt``), their kinds (BED, ``.h5ad``, fragment files), record names, the
batches (the unit of resumption) and the settings a resumed run must share (the plan is stored
in the journal, with the hash algorithm that fingerprints the inputs).
"""

from __future__ import annotations

import errno
import glob
import os
import stat
import zlib
from pathlib import Path

from .._usage import warn
from ..errors import GenotokError
from ..params import InstanceOf, Unchecked, validated
from ..singlecell import sources

__all__ = ["PipelineError", "cell_class", "expand_inputs", "input_kind", "input_read",
           "read_json", "read_tuple", "record_name"]

#: the pipeline's own inputs: one record of regions per file (every other input is a cell
#: source of the registry, :mod:`genotok.singlecell.sources`)
BED_SUFFIXES = (".bed", ".bed.gz", ".narrowpeak", ".narrowpeak.gz", ".broadpeak",
                ".broadpeak.gz", ".bedgraph", ".bedgraph.gz", ".bed.bgz")


class PipelineError(GenotokError):
    """A pre-tokenization run cannot start or continue (bad inputs, a locked or foreign output).

    Examples
    --------
    >>> issubclass(PipelineError, GenotokError)
    True
    """



def cell_class(path: str | os.PathLike):
    """The cell source class of an input (its cells become the records of a shard of its
    own), or ``None`` for a BED-like input (one record of its regions): a BED suffix decides
    first, then the registry (:func:`genotok.singlecell.sources.source_class`: the suffix,
    then the first bytes of an existing file); what nothing claims is read as BED.

    Examples
    --------
    >>> cell_class("a.narrowPeak.gz") is None, cell_class("pbmc.h5ad").__name__
    (True, 'H5adSource')
    """
    if os.fspath(path).lower().endswith(BED_SUFFIXES):
        return None
    return sources.source_class(path)


def input_read(path: str | os.PathLike, read):
    """The ``read=`` options an input is opened with: of the run's options
    (``RunOptions(read=...)``: one :class:`~genotok.ReadOptions`, or a tuple of them), the
    one its source class takes (a ``.h5mu`` modality for the HDF5 inputs, ``min_fragments``
    for fragment files…), else ``None`` (its defaults).

    Examples
    --------
    >>> from genotok import AnnDataOptions, FragmentOptions
    >>> input_read("a.h5mu", AnnDataOptions(modality="atac")).modality
    'atac'
    >>> input_read("fragments.tsv.gz", AnnDataOptions(modality="atac")) is None
    True
    >>> both = (AnnDataOptions(raw=True), FragmentOptions(min_fragments=5))
    >>> input_read("fragments.tsv.gz", both).min_fragments
    5
    """
    cls = cell_class(path)
    if read is None or cls is None:
        return None
    return next((r for r in (read if isinstance(read, tuple) else (read,))
                 if isinstance(r, cls.options)), None)


def read_tuple(read) -> tuple:
    """A sequence of read options as a tuple, each a :class:`~genotok.ReadOptions`, at most
    one of a class.

    >>> from genotok import FragmentOptions
    >>> read_tuple([FragmentOptions(), FragmentOptions()])
    Traceback (most recent call last):
    ...
    genotok.params.ParameterError: RunOptions: read holds two FragmentOptions; give one per kind of input
    """
    from ..params import ParameterError
    from ..singlecell.reading import ReadOptions

    out = tuple(read)
    seen = set()
    for r in out:
        if not isinstance(r, ReadOptions):
            raise ParameterError(f"RunOptions: read holds {r!r}, not read options "
                                 "(AnnDataOptions(), FragmentOptions(), ...)")
        if type(r) in seen:
            raise ParameterError(f"RunOptions: read holds two {type(r).__name__}; give one "
                                 "per kind of input")
        seen.add(type(r))
    return out


def read_json(read) -> dict | list | None:
    """The run's read options as the plan keeps them (a resumed run must read alike): each
    :meth:`~genotok.ReadOptions.to_json` (a list for a tuple), read back by
    :func:`~genotok.singlecell.sources.read_options_from_json`.

    Examples
    --------
    >>> from genotok import AnnDataOptions
    >>> read_json(AnnDataOptions(raw=True))["raw"], read_json(None)
    (True, None)
    """
    if read is None:
        return None
    if isinstance(read, tuple):
        return [r.to_json() for r in read]
    return read.to_json()


@validated({"path": [InstanceOf(str, os.PathLike)]})
def input_kind(path: str | os.PathLike) -> str:
    """The registry's name of an input's kind: ``"bed"`` (one record per file) or the
    ``kind`` of its cell source (``"h5ad"``, ``"h5mu"``, ``"10x"``, ``"fragments"``, …).

    Examples
    --------
    >>> input_kind("a.narrowPeak.gz"), input_kind("pbmc.h5ad"), input_kind("fragments.tsv.gz")
    ('bed', 'h5ad', 'fragments')
    """
    cls = cell_class(path)
    return "bed" if cls is None else cls.kind


def _suffixes() -> tuple[str, ...]:
    return BED_SUFFIXES + sources.suffixes()


def _is_input(path: str) -> bool:
    return path.lower().endswith(_suffixes())


@validated({"inputs": [Unchecked("paths, globs, folders or @lists, each checked as it is read")]})
def expand_inputs(inputs) -> list[Path]:
    """Files, globs, directories (their BED-like files, sorted) or ``@list.txt`` files → paths.

    A list file holds one path per line (relative to the list file; ``#`` comments allowed;
    ``@other.txt`` reads another list); a list that names itself, directly or through others,
    is refused. Entries of a directory (or
    a glob) with an input's suffix that are not regular files (FIFOs, sockets, broken links,
    folders) are skipped with a warning that lists them.

    Examples
    --------
    >>> import genotok
    >>> [p.name for p in expand_inputs(genotok.examples_dir() / "peaks")][:2]
    ['sample0.narrowPeak', 'sample1.narrowPeak']
    """
    out = _expand(inputs, ())
    seen, unique = set(), []
    for p in out:
        key = os.path.abspath(p)  # two names (links) for one file are two inputs
        if key in seen:
            raise PipelineError(f"{p}: given twice; each input must appear once")
        seen.add(key)
        unique.append(p)
    return unique


def _expand(inputs, lists: tuple) -> list[Path]:
    """``lists``: the list files being read (outermost first), to refuse a cycle."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out: list[Path] = []
    skipped: list[str] = []
    for item in inputs:
        s = os.fspath(item)
        if s.startswith("@"):
            lst = Path(s[1:])
            if not lst.is_file():
                raise PipelineError(f"{lst}: no such list file")
            key = os.path.realpath(lst)
            if key in lists:
                chain = " -> ".join(map(str, lists + (key,)))
                raise PipelineError(f"{lst}: list file names itself (through {chain})")
            try:
                text = lst.read_text(encoding="utf-8-sig")
            except UnicodeDecodeError as e:
                raise PipelineError(f"{lst}: list file is not UTF-8 text ({e})") from None
            for line in text.splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    at = "@" if line.startswith("@") else ""
                    p = Path(line[len(at):])
                    p = p if p.is_absolute() else lst.parent / p
                    out.extend(_expand([f"{at}{p}"], lists + (key,)))
        elif os.path.isdir(s) and sources.source_class(s) is not None:
            out.append(Path(s))  # a store or folder of cells (Zarr, SOMA, Cell Ranger) is one
        elif os.path.isdir(s):
            entries = [p for p in sorted(Path(s).iterdir()) if _is_input(p.name)]
            found = [p for p in entries if p.is_file()]
            skipped += [str(p) for p in entries if not p.is_file()]
            if not found:
                raise PipelineError(f"{s}: directory holds no BED-like files ({', '.join(BED_SUFFIXES[:4])}, …)")
            out.extend(found)
        elif os.path.exists(s):
            out.append(Path(s))
        else:
            matches = sorted(glob.glob(s))
            if not matches:
                raise PipelineError(f"{s}: no such file, directory or matching glob")
            out.extend(Path(m) for m in matches if os.path.isfile(m))
            skipped += [m for m in matches if not os.path.isfile(m) and _is_input(m)]
    if skipped:
        warn(f"{len(skipped)} input(s) skipped, not regular files: "
             f"{', '.join(skipped[:10])}{' …' if len(skipped) > 10 else ''}")
    return out


@validated({"path": [InstanceOf(str, os.PathLike)]})
def record_name(path: Path) -> str:
    """A record's name: the file name without BED-like suffixes (``a.narrowPeak.gz`` → ``a``).

    Examples
    --------
    >>> from pathlib import Path
    >>> record_name(Path("data/GSM123.narrowPeak.gz"))
    'GSM123'
    """
    name = path.name
    low = name.lower()
    for suf in sorted(_suffixes(), key=len, reverse=True):
        if low.endswith(suf):
            return name[: -len(suf)]
    return name


def _input_id(p: Path) -> dict:
    try:
        st = p.stat()
    except OSError:  # vanished since it was listed: its batch reports it (or fails)
        return {"path": str(p), "size": None, "mtime_ns": None}
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}



def _check_cells(paths: list[Path], format, spec) -> None:
    """Refuse a :class:`~genotok.CellSpec` its inputs cannot honour, before anything is read
    or written (the spec validated itself when it was made): a BED input is one record of its
    own regions (no cells, no values), only ``.h5ad`` inputs have ``obs`` columns for
    condition tokens, a store without values (``gtok-dir``) takes ids only, and the medians
    of ``RankByMedian()`` need one feature space for all inputs."""
    from ..singlecell.spec import CellSpec, RankByMedian

    if spec == CellSpec():
        return
    classes = [cell_class(p) for p in paths]
    bed = [p for p, c in zip(paths, classes) if c is None]
    if bed:  # (what the spec asks, written only here: a gene preset's has 5,000 medians)
        default = CellSpec().as_dict()
        asked = ", ".join(f"{k}={v!r}" for k, v in spec.as_dict().items() if v != default[k])
        raise PipelineError(f"{bed[0]}: the cell spec ({asked}) acts on the cells of .h5ad "
                            "and fragment inputs; a BED input is one record of its regions: "
                            "pre-tokenize the BED files in a run without cells=")
    if spec.prepend or spec.add_cls:
        other = [p for p, c in zip(paths, classes) if not c.has_obs]
        if other:
            raise PipelineError(f"{other[0]}: prepend and add_cls take cells from .h5ad inputs "
                                "(their obs columns); fragment inputs have none: pre-tokenize "
                                "them in a run without condition tokens")
    if spec.values and "values" not in format.supports:
        raise PipelineError(f"format={format.name!r} stores token ids only, not the values "
                            "(values=True); use format='corpus', 'parquet' or 'arrow'")
    fit = any(isinstance(s, RankByMedian) and s.medians is None for s in spec.encoding)
    if fit and len({c.features_are for c in classes}) > 1:
        raise PipelineError("RankByMedian() takes its medians over all inputs, so it needs "
                            "one feature space, but the .h5ad files' features are their var "
                            "(peaks) and the fragment files' the universe's tokens; "
                            "pre-tokenize them in two runs")


def _batches(paths: list[Path], files_per_shard: int) -> list[list[int]]:
    """BED files in groups of ``files_per_shard``; every single-cell file a batch of its own."""
    out: list[list[int]] = []
    run: list[int] = []
    for i, p in enumerate(paths):
        if cell_class(p) is not None:
            if run:
                out.append(run)
                run = []
            out.append([i])
            continue
        run.append(i)
        if len(run) == files_per_shard:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return out


def _plan(tokenizer, format: str, files_per_shard: int, ids: list[dict], algo: str,
          spec, on_error: str, read=None) -> dict:
    """What a run is: a resumed run must have the same plan (it is kept in the journal); the
    cell spec as its JSON (``CellSpec.to_json``), so the resume check compares serialised
    specs, and how the cell inputs are read (:func:`read_json`)."""
    import json

    return {"fingerprint": tokenizer.fingerprint, "settings": tokenizer.settings.as_dict(),
            "format": format, "files_per_shard": files_per_shard, "inputs": ids, "hash": algo,
            "on_error": on_error, "cells": json.loads(spec.to_json()), "read": read_json(read)}


#: what a bad input can raise: our errors, and what reading a damaged or vanished file raises
#: below them (a truncated gzip's EOFError, zlib's error, an unreadable file's OSError, an
#: HDF5 file's KeyError/ValueError). ``on_error="skip"`` records these and goes on.
#: MemoryError is caught too: :func:`raise_machine_error` stops the run with a clear error.
SKIPPABLE = (GenotokError, OSError, EOFError, zlib.error, ValueError, KeyError, MemoryError)


#: what the machine raises, not an input: a full disk or quota, a read-only or too-small output
#: file system, no file descriptors left. Never recorded as a bad input (a re-run retries).
MACHINE_ERRNOS = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EROFS,
                                       errno.EFBIG, errno.EMFILE, errno.ENFILE) if e is not None)


def raise_machine_error(exc: BaseException, path: Path) -> None:
    """Stop the run when ``exc`` (or an error it came from) is the machine's fault, not
    ``path``'s: one rule for every ``on_error="skip"`` handler, so that a full disk while
    writing the output of an input is never journaled as that input being unreadable.

    Examples
    --------
    >>> import errno
    >>> raise_machine_error(ValueError("bad line"), Path("a.bed"))  # the input's fault: None
    >>> raise_machine_error(OSError(errno.ENOSPC, "No space left on device"), Path("a.bed"))
    Traceback (most recent call last):
    ...
    genotok.pipeline.plan.PipelineError: a.bed: the run stopped while this input was processed: ...
    """
    if isinstance(exc, MemoryError):
        raise PipelineError(f"{path}: the run stopped: out of memory while this input was "
                            "read; it is not recorded as failed. Give the run more memory (or "
                            "fewer threads) and run pretokenize again: it resumes") from None
    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in MACHINE_ERRNOS:
            raise PipelineError(
                f"{path}: the run stopped while this input was processed: {e.strerror or e} "
                f"({errno.errorcode.get(e.errno, e.errno)}{', ' + str(e.filename) if e.filename else ''}). "
                "This is the machine's fault (disk or quota full, output read-only, too many open "
                "files), not the input's: it is not recorded as failed. Free space and run "
                "pretokenize again: it resumes and retries this input") from exc
        e = e.__cause__ or e.__context__


def _message(exc: BaseException, path: Path) -> str:
    """The error of a skipped input as the manifest records it: our errors as they are (they
    name the file), others with their type and the path."""
    if isinstance(exc, GenotokError):
        return str(exc)
    return f"{path}: {type(exc).__name__}: {exc}"


def _check_regular(path: Path) -> None:
    """Refuse what is not a regular file before reading it: a FIFO blocks the run forever and
    ``/dev/zero`` fills the memory (both pass an ``exists`` test)."""
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode) and sources.source_class(path) is not None:
        return  # a store or folder of cells, read by its source
    if not stat.S_ISREG(mode):
        raise PipelineError(f"{path}: not a regular file (a FIFO, socket or device); give "
                            "pretokenize files (copy a stream to a file first)")
