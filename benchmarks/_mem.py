"""Memory of this process (VmRSS, VmHWM) from the standard library alone: the benchmarks'
children import it, so that an anchor's peak (gtars, SnapATAC2, an inflate) holds no numba
(``_common`` imports numba: ~67 MiB of peak before any data)."""

from __future__ import annotations

import resource


def _status_mib(key: str) -> float | None:
    """A memory line of /proc/self/status (``VmRSS``, ``VmHWM``) in MiB; None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB): VmHWM, else getrusage."""
    hwm = _status_mib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib() -> float:
    """Resident memory of this process now (MiB); the peak so far where /proc is missing."""
    rss = _status_mib("VmRSS")
    return rss if rss is not None else peak_rss_mib()
