"""Where a tokenizer comes from: configuration files, model directories, Hugging Face Hub repos.

:func:`_load` decides what ``Tokenizer(source)`` reads; :func:`_read_config` reads gtars' and
genotok's TOML configurations; the rest reads and writes pretrained model repos.

What a model repo holds, and what is looked for, in this order:

1. ``tokenizer.toml``: a tokenizer configuration (gtars' keys ``universe``,
   ``special_tokens``, ``tokenizer_type``; genotok's settings in a ``[genotok]`` table), with
   the universe file it names;
2. ``universe.bed.gz`` (Atacformer repos; the only file gtars' ``from_pretrained`` reads);
3. ``universe.bed`` (Region2Vec repos ``databio/r2v-*``, which gtars cannot load).

When the repo has a ``config.yaml`` or ``config.json`` with a ``vocab_size`` (the model's
embedding table), the tokenizer's vocabulary must have exactly that size.

Hub repos are fetched with ``huggingface_hub`` (``pip install 'genotok[hub]'``), which keeps
its standard cache (``models--org--name/snapshots/<revision>/...``) and its offline rules:
``HF_HUB_OFFLINE=1`` or ``local_files_only=True`` read the cache only.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import stat
from pathlib import Path

import tomli_w

from ._io import atomic_write, local_path, parse_toml, read_small
from ._optional import require
from .errors import (
    BedParseError,
    GenotokError,
    RegionParseError,
    UniverseError,
    UniverseMismatchError,
)
from typing import NamedTuple

from .kernels.modes import Backend, names
from .regions import parse_region_strings
from .universe import SPECIAL_NAMES, Universe

#: tokenizer files, by preference
TOKENIZER_FILES = ("tokenizer.toml", "universe.bed.gz", "universe.bed")
#: model configurations that may give ``vocab_size``
CONFIG_FILES = ("config.json", "config.yaml", "config.yml")
#: what is fetched from a Hub repo (never the model weights)
_HUB_PATTERNS = ["*.toml", "*.bed", "*.bed.gz", "config.json", "config.yaml", "config.yml"]
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
_FILE_SUFFIXES = (".bed", ".gz", ".toml", ".bgz", ".txt", ".tsv", ".narrowpeak", ".broadpeak")


def _looks_like_hub_id(name: str) -> bool:
    """True for ``org/name`` strings that are not file names (a Hub model id).

    Examples
    --------
    >>> _looks_like_hub_id("databio/atacformer-base-hg38"), _looks_like_hub_id("data/u.bed")
    (True, False)
    """
    return bool(_HUB_ID.fullmatch(name)) and not name.lower().endswith(_FILE_SUFFIXES)


def _snapshot(name_or_dir, *, revision: str | None = None, cache_dir=None,
             local_files_only: bool = False) -> Path:
    """A local directory holding the tokenizer files of ``name_or_dir``.

    A directory is returned as it is; anything else is a Hub model id, whose tokenizer files
    (never the weights) are fetched into (or, offline, found in) the Hub cache.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> _snapshot(d) == Path(d)
    True
    """
    if os.path.isdir(name_or_dir):
        return Path(name_or_dir)
    name = os.fspath(name_or_dir)
    if not _looks_like_hub_id(name):
        raise UniverseError(f"{name}: no such directory, and not a Hugging Face Hub model id "
                            "like 'databio/atacformer-base-hg38' either")
    if revision is not None and (not isinstance(revision, str) or ".." in revision
                                 or revision.startswith(("/", "\\")) or "\0" in revision):
        raise UniverseError(f"{name}: revision {str(revision)[:80]!r} is not a branch, tag or "
                            "commit name (no '..', no absolute path)")
    require("huggingface_hub", f"loading {name!r} from the Hugging Face Hub (a local directory "
            "needs nothing)")
    from huggingface_hub import constants, errors, snapshot_download
    try:
        path = snapshot_download(name, revision=revision, cache_dir=cache_dir,
                                 local_files_only=local_files_only, allow_patterns=_HUB_PATTERNS)
    except errors.LocalEntryNotFoundError:
        raise UniverseError(
            f"{name}: not in the Hugging Face cache ({cache_dir or constants.HF_HUB_CACHE}) "
            "and the Hub cannot be reached (offline: HF_HUB_OFFLINE=1 or local_files_only="
            "True?); download it once online, or give a local directory") from None
    except (errors.RepositoryNotFoundError, errors.RevisionNotFoundError) as exc:
        raise UniverseError(f"{name}: no such model repo or revision on the Hugging Face Hub "
                            f"({type(exc).__name__}); check the name and revision") from None
    # the snapshot must lie in the cache: a refs/main holding ../../.. or an absolute path
    # would make huggingface_hub return a directory outside it
    root = os.path.realpath(cache_dir or constants.HF_HUB_CACHE)
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root or real == root:
        raise UniverseError(f"{name}: the Hub cache points this repo's revision outside the "
                            f"cache ({root}): its refs file is damaged or planted; remove "
                            f"the repo's folder from the cache and download it again")
    return Path(path)


#: entries :func:`_contents` looks at, at most (an error message must not walk ``/usr``)
_LIST_MAX = 200


def _contents(directory: Path, name: str) -> list[str]:
    """File names in a repo's local directory, for an error message: never a call to the Hub
    (``local_files_only`` means no network), and at most :data:`_LIST_MAX` entries visited."""
    found: list[str] = []
    seen = 0
    for top, dirs, files in os.walk(directory):
        dirs.sort()
        for f in sorted(files):
            found.append(os.path.relpath(os.path.join(top, f), directory))
        seen += len(files) + len(dirs)
        if seen >= _LIST_MAX:
            found.append("…")
            break
    return found


def _find(directory: Path, name: str | None = None) -> tuple[Path, int | None, Path | None]:
    """``(tokenizer file, expected vocab_size or None, the config file that gave it)``.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.bed").write_text("chr1\\t0\\t10\\n")
    >>> _ = (d / "config.yaml").write_text("vocab_size: 8\\n")
    >>> tok_file, size, config = _find(d)
    >>> tok_file.name, size, config.name
    ('universe.bed', 8, 'config.yaml')
    """
    for f in TOKENIZER_FILES:
        if (directory / f).is_file():
            tok_file = directory / f
            break
    else:
        have = _contents(directory, name or str(directory))
        shown = ", ".join(have[:20]) + (f" and {len(have) - 20} more" if len(have) > 20 else "")
        raise UniverseError(
            f"{name or directory}: no tokenizer in this model repo (looked for "
            f"{', '.join(TOKENIZER_FILES)}); it holds: {shown or 'nothing'}")
    for f in CONFIG_FILES:
        if (directory / f).is_file():
            size = _vocab_size(directory / f)
            if size is not None:
                return tok_file, size, directory / f
    return tok_file, None, None


def _vocab_size(path: Path) -> int | None:
    """``vocab_size`` of a model's config.json / config.yaml (top level), or None."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UniverseError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UniverseError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if path.suffix == ".json":
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:  # (too deep: RecursionError)
            raise UniverseError(f"{path}: not valid JSON ({type(exc).__name__}: "
                                f"{str(exc)[:200]})") from None
        if not isinstance(doc, dict):
            raise UniverseError(f"{path}: not a JSON object")
        value = doc.get("vocab_size")
    else:
        try:
            import yaml
        except ImportError:  # PyYAML comes with huggingface_hub; a top-level key suffices
            m = re.search(r"^vocab_size\s*:\s*(\d+)\s*(#.*)?$", text, re.MULTILINE)
            value = int(m.group(1)) if m else None
        else:
            try:
                doc = yaml.safe_load(text)
            except (yaml.YAMLError, RecursionError) as exc:
                raise UniverseError(f"{path}: not valid YAML ({type(exc).__name__}: "
                                    f"{str(exc)[:200]})") from None
            value = doc.get("vocab_size") if isinstance(doc, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UniverseError(f"{path}: vocab_size is {value!r}, not an integer")
    return value


def _check_vocab_size(vocab_size: int, expected: int | None, config: Path | None,
                     n_extra: int = 0) -> None:
    """Refuse a tokenizer whose vocabulary is not the size the model was trained with.

    Examples
    --------
    >>> _check_vocab_size(32, 32, Path("config.json"))  # equal: nothing to say
    >>> _check_vocab_size(32, 40, Path("config.json"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.UniverseError: config.json: the model's vocab_size is 40 but the ...
    >>> _check_vocab_size(34, 40, Path("config.json"), n_extra=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    genotok.errors.UniverseError: ... 34 (25 regions + 7 special tokens + 2 extra tokens): ...
    """
    if expected is not None and expected != vocab_size:
        extra = f" + {n_extra:,} extra tokens" if n_extra else ""
        raise UniverseError(
            f"{config}: the model's vocab_size is {expected:,} but the tokenizer's is "
            f"{vocab_size:,} ({vocab_size - 7 - n_extra:,} regions + 7 special tokens{extra}): "
            "the universe does not belong to this model")


def _save(tokenizer, directory) -> Path:
    """Write ``universe.bed.gz`` and ``tokenizer.toml`` into ``directory`` (see
    :meth:`genotok.Tokenizer.save_pretrained`).

    Examples
    --------
    >>> import tempfile
    >>> from genotok import Tokenizer
    >>> sorted(p.name for p in _save(Tokenizer(["chr1:0-10"]), tempfile.mkdtemp()).iterdir())
    ['tokenizer.toml', 'universe.bed.gz']
    """
    directory = Path(directory)
    rs = tokenizer.universe.regions
    names = rs.chrom_names
    for name in names:  # what the BED reader takes for a comment or a header, or splits
        if name.startswith("#") or name in ("track", "browser") or any(c.isspace() for c in name):
            raise UniverseError(f"chromosome name {name[:80]!r} cannot be saved in a BED file "
                                "and read back (a comment, a track or browser line, or "
                                "whitespace); rename it before save_pretrained")
    directory.mkdir(parents=True, exist_ok=True)
    bed, toml = directory / "universe.bed.gz", directory / "tokenizer.toml"
    lines = (f"{names[c]}\t{s}\t{e}\n" for c, s, e in
             zip(rs.codes.tolist(), rs.starts.tolist(), rs.ends.tolist()))
    # both files are written in full first, then renamed into place: a failure while writing
    # leaves an earlier save whole (not a new universe beside an old configuration)
    staged = [directory / f".{bed.name}.{os.getpid()}.staged",
              directory / f".{toml.name}.{os.getpid()}.staged"]
    try:
        with atomic_write(staged[0], "wb") as raw:
            # mtime=0: the same universe gives the same bytes (a stable file hash on the Hub)
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
                for chunk in _batched(lines, 65536):
                    gz.write("".join(chunk).encode("utf-8"))
        tokenizer.save_config(staged[1], universe_path=bed)
        os.replace(staged[0], bed)
        os.replace(staged[1], toml)
    finally:
        for p in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
    return directory


def _write_config(tokenizer, out, universe_path=None) -> Path:
    """Write a TOML configuration of ``tokenizer`` gtars can read too (genotok settings in
    ``[genotok]``; see :meth:`genotok.Tokenizer.save_config`) to ``out``. Returns its path.

    ``universe_path`` defaults to the file the universe was loaded from; a universe built in
    memory is written next to the configuration as ``<name>.universe.bed``.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok import Tokenizer
    >>> p = _write_config(Tokenizer(["chr1:0-10"]), os.path.join(tempfile.mkdtemp(), "t.toml"))
    >>> p.read_text().splitlines()[0]
    'universe = "t.universe.bed"'
    """
    path = local_path(out, "a tokenizer configuration")
    if universe_path is None:
        if tokenizer.universe.source and os.path.isfile(tokenizer.universe.source):
            universe_path = Path(tokenizer.universe.source)
        else:
            universe_path = path.with_suffix(".universe.bed")
            tokenizer.universe.write_bed(universe_path)
    universe_path = Path(universe_path)
    try:
        ref = os.path.relpath(universe_path.resolve(), path.parent.resolve())
    except ValueError:  # another drive on Windows
        ref = str(universe_path.resolve())

    config = {"universe": ref, "tokenizer_type": tokenizer.tokenizer_type,
              "special_tokens": [{"name": k, "token": tokenizer.universe.special_tokens[k]}
                                 for k in SPECIAL_NAMES]}
    own = {k: v for k, v in tokenizer.settings.as_dict().items()
           if k != "tokenizer_type"}  # gtars' key, at the top
    if tokenizer.universe.extra_tokens:
        own["extra_tokens"] = list(tokenizer.universe.extra_tokens)
    if tokenizer.universe.duplicates == "lines" and tokenizer.universe.n_duplicates:
        own["duplicates"] = "lines"  # line-position ids: the universe file repeats lines
    own["fingerprint"] = tokenizer.universe.fingerprint
    config["genotok"] = own
    with atomic_write(path, "wb") as fh:
        tomli_w.dump(config, fh)
    return path


def _batched(it, n):
    batch = []
    for x in it:
        batch.append(x)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


# ------------------------------------------------------------------ tokenizer sources
class Loaded(NamedTuple):
    """What a tokenizer source holds (:func:`_load`): the vocabulary, the settings saved with
    it (a configuration's ``[genotok]`` table, as read: the tokenizer validates them against
    :class:`~genotok.tokenizer.TokenizerSettings`), the model's vocab check, and the
    configuration file that gave the settings (named by their errors).

    Examples
    --------
    >>> Loaded._fields
    ('universe', 'settings', 'check', 'config')
    """

    universe: Universe
    settings: dict
    check: tuple | None = None  #: (expected vocab_size or None, config file) of a model
    config: str | None = None   #: the configuration file the settings come from


def _is_region_string(s: str) -> bool:
    try:
        parse_region_strings([s])
    except RegionParseError:
        return False
    return True


def _load(source, special_tokens=None, strict: bool = False):
    """The :class:`Loaded` vocabulary and saved settings of any tokenizer source: what
    ``Tokenizer(source)`` decides (see :class:`genotok.Tokenizer`).

    Examples
    --------
    >>> universe, settings, check, config = _load(["chr1:0-100"])
    >>> universe.vocab_size, settings, check, config
    (8, {}, None, None)
    """
    if isinstance(source, Universe):
        if special_tokens is not None:
            raise ValueError("special_tokens can only be given with a universe source, "
                             "not with a ready Universe")
        return Loaded(source, {})
    if not isinstance(source, (str, os.PathLike)):
        return Loaded(Universe(source, special_tokens), {})  # regions in memory
    path = os.fspath(source)
    text = isinstance(source, str)
    if os.path.isdir(path):
        return _load_directory(Path(path), path, special_tokens, strict)
    if os.path.isfile(path):
        if text and _is_region_string(path):
            raise UniverseError(
                f"{path!r} is both a file and a region string: say which, with "
                f"Tokenizer.from_bed({path!r}) or Tokenizer([{path!r}])")
        if path.lower().endswith(".toml"):
            return Loaded(*_read_config(path, special_tokens, strict), None, path)
        return Loaded(Universe.from_bed(path, special_tokens, strict=strict), {})
    if text and _is_region_string(path):
        return Loaded(Universe([path], special_tokens), {})
    if text and _looks_like_hub_id(path):
        directory = _snapshot(path)
        return _load_directory(directory, path, special_tokens, strict)
    raise UniverseError(
        f"{path}: no such file or directory, not a region string (chr1:100-200) and not a "
        "Hugging Face Hub id (org/name); for a Hub repo whose name looks like a file, use "
        f"Tokenizer.from_pretrained({path!r})")


def _load_directory(directory: Path, name: str, special_tokens=None, strict: bool = False):
    """:func:`_load` of a model directory: its tokenizer file and the expected vocab size.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.bed").write_text("chr1\\t0\\t10\\n")
    >>> universe, settings, (expected, config), _ = _load_directory(d, "my-model")
    >>> universe.vocab_size, expected
    (8, None)
    """
    tok_file, expected, config = _find(directory, name)
    if tok_file.suffix == ".toml":
        universe, saved = _read_config(tok_file, special_tokens, strict, root=directory)
        return Loaded(universe, saved, (expected, config), str(tok_file))
    _confined(tok_file.name, directory, tok_file)
    with _named_by(tok_file, f"the model repo {name}"):
        universe = Universe.from_bed(tok_file, special_tokens, strict=strict)
    return Loaded(universe, {}, (expected, config))


def _roots(directory: Path) -> list[str]:
    """Where the files of a model directory may really be: inside it, and for a Hub snapshot
    (``…/snapshots/<revision>/``, whose files are links) in its repo's ``blobs`` too."""
    roots = [os.path.realpath(directory)]
    if directory.parent.name == "snapshots":
        roots.append(os.path.realpath(directory.parent.parent / "blobs"))
    return roots


def _regular(upath: Path, where: str) -> None:
    """Refuse a named file that is not a regular file: ``/dev/zero`` fills the memory, a FIFO
    or ``/dev/stdin`` blocks forever."""
    try:
        st = os.stat(upath)
    except FileNotFoundError:
        raise UniverseError(f"{where}: names {upath}, which does not exist") from None
    except OSError as exc:
        raise UniverseError(f"{where}: names {upath}, which cannot be read "
                            f"({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UniverseError(f"{where}: names {upath}, which is not a regular file (a device, "
                            "FIFO or directory); a universe is a BED file")


def _confined(ref: str, directory: Path, upath: Path, where: str | None = None) -> None:
    """A file named by a model directory (``ref``, as written in it) must be a regular file
    inside that directory: no absolute path, no ``..``, no link leading out of it."""
    where = where or str(directory)
    parts = ref.replace("\\", "/").split("/")
    if os.path.isabs(ref) or ref.startswith(("/", "\\")) or ".." in parts or "\0" in ref:
        raise UniverseError(f"{where}: names the universe {ref[:200]!r}, outside the model "
                            "directory; a model directory may only name files inside it")
    real = os.path.realpath(upath)
    if not any(os.path.commonpath([r, real]) == r for r in _roots(directory)):
        raise UniverseError(f"{where}: its universe {ref[:200]!r} is a link to a file outside "
                            "the model directory; a model directory may only name files inside it")
    _regular(upath, where)


@contextlib.contextmanager
def _named_by(upath: Path, by: str):
    """Errors reading a file named by a configuration or a model repo, not by the user: they
    name the file and the line but never quote its content (it may be a secret the
    configuration points at). One rule for every config-named file."""
    try:
        yield
    except GenotokError as exc:
        line = getattr(exc, "line", None)
        where = f"{upath}:{line}" if line is not None else str(upath)
        raise type(exc)(*_bare_args(exc, upath, line,
                                    f"{where}: not a usable universe ({type(exc).__name__}; "
                                    f"its content is not quoted because the file was named by "
                                    f"{by}, not given by you: inspect it yourself, e.g. with "
                                    f"Tokenizer.from_bed)")) from None


def _bare_args(exc: Exception, upath: Path, line, message: str) -> tuple:
    if isinstance(exc, BedParseError):
        return (str(upath), line, message.split(": ", 1)[1])
    return (message,)


#: the type each field of a tokenizer configuration must have (``[genotok]``'s settings are
#: checked by :class:`~genotok.tokenizer.TokenizerSettings`' constraints, in the tokenizer)
_FIELD_TYPES = {"special_tokens": (list, dict), "tokenizer_type": (str,), "genotok": (dict,)}
_GENOTOK_TYPES = {"fingerprint": (str,), "extra_tokens": (list,), "duplicates": (str,)}


def _known_keys(cfg: dict, path: Path) -> None:
    """A top-level key that is neither gtars' nor ``[genotok]`` is refused: a genotok setting
    written at the top (``min_overlap = 10``) was silently ignored."""
    from ._usage import did_you_mean

    known = [*_FIELD_TYPES, "universe"]
    unknown = [k for k in cfg if k not in known]
    if unknown:
        raise UniverseError(f"{path}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], known)}"
                            f"; the keys are {', '.join(known)} (genotok's settings go in a "
                            "[genotok] table: [genotok] min_overlap = 10)")


def _check_types(cfg: dict, path: Path) -> None:
    """Refuse a field of the wrong TOML type (a raw TypeError or AttributeError later)."""
    def one(table: dict, types: dict, prefix: str) -> None:
        for key, allowed in types.items():
            if key in table and not isinstance(table[key], allowed):
                want = " or ".join({"list": "an array", "dict": "a table",
                                    "str": "a string"}[t.__name__] for t in allowed)
                raise UniverseError(f"{path}: {prefix}{key} must be {want}, got "
                                    f"{type(table[key]).__name__} {str(table[key])[:80]!r}")

    one(cfg, _FIELD_TYPES, "")
    one(cfg.get("genotok", {}), _GENOTOK_TYPES, "[genotok] ")
    extra = cfg.get("genotok", {}).get("extra_tokens", [])
    if not all(isinstance(t, str) for t in extra):
        raise UniverseError(f"{path}: [genotok] extra_tokens must be strings, got "
                            f"{next(t for t in extra if not isinstance(t, str))!r}")
    special = cfg.get("special_tokens")
    if isinstance(special, dict) and not all(isinstance(v, str) for v in special.values()):
        raise UniverseError(f"{path}: special_tokens values must be strings (e.g. "
                            "unk = \"<unk>\")")


def _read_config(path, special_tokens=None, strict: bool = False, root: Path | None = None):
    """``(Universe, settings)`` of a TOML tokenizer configuration (gtars' or genotok's); the
    settings as the file has them (``Tokenizer`` validates them, naming the file).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "u.bed").write_text("chr1\\t0\\t10\\n")
    >>> _ = (d / "t.toml").write_text('universe = "u.bed"\\ntokenizer_type = "ailist"\\n')
    >>> universe, settings = _read_config(d / "t.toml")
    >>> universe.vocab_size, settings
    (8, {'tokenizer_type': 'ailist'})

    ``root``: the model directory the configuration came from; its universe must then be a
    regular file inside it. The universe is a regular file in every case, and errors reading
    it never quote its content (it is named by the configuration, not by the user).
    """
    path = Path(path)
    if root is not None:
        _confined(path.name, root, path)
    if not os.path.exists(path):
        raise UniverseError(f"{path}: no such tokenizer configuration file")
    # a configuration is a page; a universe is a file of its own
    raw = read_small(path, 1 << 20, UniverseError, "tokenizer configuration")
    cfg = parse_toml(raw, str(path), UniverseError)
    if "universe" not in cfg:
        raise UniverseError(f"{path}: the configuration names no universe "
                            "(expected a line like universe = \"universe.bed\")")
    _known_keys(cfg, path)
    ref = cfg["universe"]
    if not isinstance(ref, str) or not ref:
        raise UniverseError(f"{path}: universe must be a file name (a string), got "
                            f"{type(ref).__name__}")
    upath = Path(ref)
    if not upath.is_absolute():
        upath = path.parent / upath
    if root is not None:
        _confined(ref, root, upath, str(path))
    else:
        _regular(upath, str(path))
    _check_types(cfg, path)
    special = cfg.get("special_tokens")
    if isinstance(special, list):
        try:
            special = {d["name"]: d["token"] for d in special}
        except (KeyError, TypeError):
            raise UniverseError(f"{path}: special_tokens entries need 'name' and 'token' "
                                "(e.g. {name = \"unk\", token = \"<unk>\"})") from None
    if special_tokens is not None:
        special = {**(special or {}), **special_tokens}
    ttype = cfg.get("tokenizer_type", cfg.get("genotok", {}).get("tokenizer_type", "bits"))
    if ttype not in names(Backend):
        raise UniverseError(f"{path}: tokenizer_type must be one of {list(names(Backend))} "
                            f"(as in gtars), got {ttype!r}")
    ours = dict(cfg.get("genotok", {}))
    fingerprint = ours.pop("fingerprint", None)
    extra_tokens = ours.pop("extra_tokens", None)  # condition tokens (genotok.singlecell.conditions)
    duplicates = ours.pop("duplicates", "unique")  # "lines": saved from a line-position vocabulary
    with _named_by(upath, f"the configuration {path}"):
        universe = Universe.from_bed(upath, special, strict=strict, duplicates=duplicates)
    if extra_tokens:
        universe = universe.with_extra_tokens(extra_tokens)
    if fingerprint is not None and fingerprint != universe.fingerprint:
        raise UniverseMismatchError(
            f"{path}: universe {upath} has changed since this configuration was saved "
            f"(fingerprint {universe.fingerprint[:12]}…, expected {fingerprint[:12]}…)")
    return universe, {**ours, "tokenizer_type": ttype}
