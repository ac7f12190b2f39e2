"""Universe files: BED3 text of a region set (formatted by a numba kernel) and the name of the
report written next to it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..kernels import build as _bk
from ..params import PATH, InstanceOf, validated
from ..regions import RegionSet

__all__ = ["bed_bytes", "sidecar_path"]

@validated({"path": PATH})
def sidecar_path(path: str | os.PathLike) -> Path:
    """The report written next to a universe BED: ``<path>.json`` (``u.bed`` -> ``u.bed.json``).

    Examples
    --------
    >>> sidecar_path("u.bed").name
    'u.bed.json'
    """
    p = Path(path)
    return p.with_name(p.name + ".json")


@validated({"regions": [InstanceOf(RegionSet)]})
def bed_bytes(regions: RegionSet) -> bytes:
    """BED3 text of ``regions`` in row order (formatted by a numba kernel).

    Examples
    --------
    >>> from genotok import RegionSet
    >>> bed_bytes(RegionSet.from_strings(["chr1:5-10"]))
    b'chr1\\t5\\t10\\n'
    """
    rs = regions
    if len(rs) == 0:
        return b""
    encoded = [n.encode("utf-8") for n in rs.chrom_names]
    name_len = np.array([len(b) for b in encoded], dtype=np.int64)
    name_off = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(name_len, out=name_off[1:])
    joined = b"".join(encoded)
    names = np.frombuffer(joined, dtype=np.uint8) if joined else np.zeros(1, np.uint8)
    lens = np.empty(len(rs), dtype=np.int64)
    _bk.bed_line_lengths(rs.codes, rs.starts, rs.ends, name_len, lens)
    line_off = np.zeros(len(rs) + 1, dtype=np.int64)
    np.cumsum(lens, out=line_off[1:])
    buf = np.empty(int(line_off[-1]), dtype=np.uint8)
    _bk.fill_bed(rs.codes, rs.starts, rs.ends, names, name_off, line_off, buf)
    return buf.tobytes()
