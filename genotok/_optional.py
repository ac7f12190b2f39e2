"""Optional dependencies: every import of one goes through here, with an install hint instead
of a bare ModuleNotFoundError.

Each optional feature has an extra in ``pyproject.toml``; :func:`require` names it;
:func:`optional` is for a package used only when it is present.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from .errors import GenotokError

#: top-level module -> (extra, what needs it)
EXTRAS = {
    "torch": "torch",
    "pyarrow": "parquet",
    "dask": "dask",
    "distributed": "dask",
    "matplotlib": "plot",
    "xxhash": "fast",
    "huggingface_hub": "hub",
    "fsspec": "remote",
    "s3fs": "remote",
    "lightning": "lightning",
    "datasets": "hf",
    "transformers": "hf",
    "accelerate": "hf",
    "mudata": "mudata",
    "zarr": "zarr",
    "tiledbsoma": "soma",
    "ray": "ray",
}


class MissingDependencyError(GenotokError, ModuleNotFoundError):
    """An optional dependency is not installed; the message says which extra brings it.

    Examples
    --------
    >>> err = MissingDependencyError("torch", "genotok.torch_data")
    >>> str(err)
    "genotok.torch_data needs torch: pip install 'genotok[torch]' (or pip install torch)"
    >>> isinstance(err, ImportError)
    True
    """

    def __init__(self, module: str, feature: str):
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        hint = (f"pip install 'genotok[{extra}]' (or pip install {top})" if extra
                else f"pip install {top}")
        super().__init__(f"{feature} needs {top}: {hint}", name=top)


def optional(module: str) -> ModuleType | None:
    """``import module``, or ``None`` when it is not installed (for a package used only when
    present, e.g. ``torch.distributed`` for the rank, xxhash for the default hash).

    Examples
    --------
    >>> optional("json").__name__, optional("no_such_module_xyz")
    ('json', None)
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] != module.split(".")[0]:
            raise  # the module is there but one of *its* dependencies is missing
        return None


def installed(module: str, feature: str) -> None:
    """Raise :func:`require`'s error when ``module`` is not installed, without importing it
    (an executor checks its engine when it is made, before a run writes anything; the
    engine is imported when it starts).

    >>> installed("json", "reading manifests")
    >>> installed("no_such_module_xyz", "this feature")
    Traceback (most recent call last):
    ...
    genotok._optional.MissingDependencyError: this feature needs no_such_module_xyz: pip install no_such_module_xyz
    """
    import importlib.util

    if module in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise MissingDependencyError(module, feature)


def require(module: str, feature: str) -> ModuleType:
    """``import module``, or raise :class:`MissingDependencyError` naming ``feature``'s extra.

    Examples
    --------
    >>> require("json", "reading manifests").__name__
    'json'
    >>> require("no_such_module_xyz", "this feature")
    Traceback (most recent call last):
    ...
    genotok._optional.MissingDependencyError: this feature needs no_such_module_xyz: pip install no_such_module_xyz
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise  # the module is there but one of *its* dependencies is missing
        raise MissingDependencyError(module, feature) from None
