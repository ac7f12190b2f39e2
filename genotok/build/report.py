"""How a universe was built, and writing it: :class:`BuildReport` (the ``.json`` sidecar),
:class:`BuildResult` (``(regions, report)``, what every builder returns) and
:func:`write_universe` (the BED and its sidecar, atomically).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .. import _io
from .._version import __version__
from ..errors import UniverseError
from ..params import Flag, InstanceOf, Unchecked, validated
from ..regions import RegionSet, as_regions
from ..universe import Universe
from .bedfile import bed_bytes, sidecar_path

__all__ = ["BuildReport", "BuildResult", "write_universe"]

# ---------------------------------------------------------------------------- report and result
@dataclass
class BuildReport:
    """How a universe was built: written next to the BED as a ``.json`` sidecar.

    Attributes
    ----------
    method
        ``"tile"``, ``"merge"``, ``"coverage_cutoff"`` or ``"top_k"``.
    params
        The parameters of the call (``min_gap``, ``min_count``, ``max_regions`` …).
    inputs
        One dict per input, in the order read: ``path`` (``None`` for in-memory regions),
        ``size`` in bytes and ``sha256`` of the file (when hashed), ``n_regions``.
    n_regions
        Regions in the universe.
    n_input_regions
        Regions read from all inputs together.
    stats
        Method-specific figures (``max_coverage``, ``cutoff_hits``, ``genome_size`` …).
    chrom_order
        Always ``"natural"`` (see :func:`chrom_sort_key`).
    genotok_version, created, elapsed_s
        Version that built it, UTC time (ISO 8601) and wall time of the build.

    Examples
    --------
    >>> from genotok.build import merge
    >>> res = merge([["chr1:0-10", "chr1:5-20"], ["chr2:0-5"]])
    >>> res.report.method, res.report.as_dict()["params"]["min_gap"]
    ('merge', 0)
    """

    method: str
    params: dict[str, Any]
    inputs: list[dict[str, Any]]
    n_regions: int
    n_input_regions: int
    stats: dict[str, Any] = field(default_factory=dict)
    chrom_order: str = "natural"
    genotok_version: str = ""
    created: str = ""
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    def to_json(self) -> str:
        """The report as indented JSON text."""
        return json.dumps(self.as_dict(), indent=2) + "\n"

    @classmethod
    def read(cls, path: str | os.PathLike) -> BuildReport:
        """Read a sidecar written by :func:`write_universe` (a ``.json`` path or the BED path)."""
        p = Path(path)
        if p.suffix != ".json":
            p = sidecar_path(p)
        try:
            d = json.loads(p.read_text())
            known = {f for f in cls.__dataclass_fields__}
            return cls(**{k: v for k, v in d.items() if k in known})
        except (OSError, ValueError, TypeError) as exc:
            raise UniverseError(f"{p}: not a readable universe build report ({exc})") from None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items()
                           if not isinstance(v, (dict, list)))
        return (f"BuildReport({self.method}({params}): {len(self.inputs)} inputs, "
                f"{self.n_input_regions:,} input regions -> {self.n_regions:,} regions, "
                f"{self.elapsed_s:.2f} s)")


class BuildResult(NamedTuple):
    """A built universe: ``regions`` (genomic order) and the ``report`` of how it was built.

    Unpacks as a pair: ``regions, report = merge(files)``.

    Examples
    --------
    >>> from genotok.build import merge
    >>> regions, report = merge([["chr1:0-10", "chr1:10-20"]])
    >>> regions.to_strings(), report.method
    (['chr1:0-20'], 'merge')
    """

    regions: RegionSet
    report: BuildReport

    def write(self, out: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the BED (``.gz`` compresses) and its ``<out>.json`` sidecar.

        An existing file is refused unless ``overwrite=True``. See :func:`write_universe`.
        """
        return write_universe(self.regions, out, self.report, overwrite=overwrite)

    def universe(self, **kwargs) -> Universe:
        """A :class:`~genotok.universe.Universe` over the regions (id = genomic rank)."""
        return Universe(self.regions, **kwargs)

    def tokenizer(self, **kwargs):
        """A :class:`~genotok.tokenizer.Tokenizer` over the regions (``kwargs`` go to it; the
        :class:`~genotok.TokenizerSettings` fields among them as its ``settings``)."""
        from ..tokenizer import Tokenizer, TokenizerSettings

        special = kwargs.pop("special_tokens", None)
        fields = {f.name for f in dataclasses.fields(TokenizerSettings)}
        settings = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
        if settings:
            kwargs["settings"] = TokenizerSettings(**settings)
        return Tokenizer(self.universe(special_tokens=special), **kwargs)


def _report(method: str, params: dict, inputs: list, rs: RegionSet, t0: float,
            stats: dict | None = None) -> BuildReport:
    return BuildReport(
        method=method, params=params, inputs=inputs, n_regions=len(rs),
        n_input_regions=int(sum(d.get("n_regions", 0) for d in inputs)),
        stats=stats or {}, genotok_version=__version__,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        elapsed_s=round(time.perf_counter() - t0, 4))



# ---------------------------------------------------------------------------- output
@validated({"regions": [Unchecked("a region input, read by as_regions")],
            "out": [InstanceOf(str, os.PathLike)],
            "report": [InstanceOf(BuildReport, Mapping), None], "overwrite": [Flag()]})
def write_universe(regions, out: str | os.PathLike,
                   report: BuildReport | Mapping | None = None, *,
                   overwrite: bool = False) -> Path:
    """Write a universe as BED3 (row order = token ids) and, with a report, a JSON sidecar.

    Both files are written atomically (a temporary name in the same folder, then renamed). A
    path ending in ``.gz`` is gzip-compressed. The sidecar ``<out>.json`` holds the report plus
    an ``output`` entry with the BED's name, region count and sha256.

    Parameters
    ----------
    regions
        A :class:`~genotok.regions.RegionSet` (or anything ``as_regions`` accepts), or a
        :class:`BuildResult` (its report is used when ``report`` is not given).
    out
        The BED file to write.
    report
        A :class:`BuildReport` or a JSON-ready mapping; ``None`` writes no sidecar.
    overwrite
        Replace an existing BED (and sidecar); by default an existing one raises
        :class:`FileExistsError`, as the corpus writers do.

    Returns
    -------
    pathlib.Path
        The BED path.

    Examples
    --------
    >>> import tempfile, os
    >>> from genotok.build import tile
    >>> out = os.path.join(tempfile.mkdtemp(), "tiles.bed")
    >>> write_universe(tile({"chr1": 15}, 10), out).name
    'tiles.bed'
    >>> Path(out).read_text()
    'chr1\\t0\\t10\\nchr1\\t10\\t15\\n'
    """
    if isinstance(regions, BuildResult):
        regions, report = regions.regions, (report if report is not None else regions.report)
    rs = as_regions(regions)
    bad = [n for n in rs.chrom_names if not n or any(ch.isspace() for ch in n)]
    if bad:
        raise UniverseError(f"chromosome name {bad[0]!r} is empty or contains whitespace and "
                            "cannot be written as BED; rename it")
    path = _io.local_path(out, "a universe BED file")
    if not overwrite:
        for p in (path, sidecar_path(path)) if report is not None else (path,):
            if os.path.lexists(p):
                raise FileExistsError(f"{p} exists; pass overwrite=True to replace it")
    payload = bed_bytes(rs)
    if path.name.endswith(".gz"):
        payload = _io.compress(payload)
    with _io.atomic_write(path, "wb") as fh:
        fh.write(payload)
    if report is not None:
        d = report.as_dict() if isinstance(report, BuildReport) else dict(report)
        d["output"] = {"path": path.name, "n_regions": len(rs),
                       "sha256": hashlib.sha256(payload).hexdigest()}
        with _io.atomic_write(sidecar_path(path), "w") as fh:
            fh.write(json.dumps(d, indent=2) + "\n")
    return path


