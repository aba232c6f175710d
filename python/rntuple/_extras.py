"""Optional dependencies: importing one that is missing raises
:class:`rntuple.errors.MissingDependencyError` naming the ``pip install`` command."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError

#: The extra of ``rntuple`` that installs each optional module (top-level name).
EXTRA_OF_MODULE: dict[str, str] = {
    "pandas": "pandas",
    "polars": "polars",
    "dask": "dask",
    "dask_awkward": "dask",
    "distributed": "dask",
    "coffea": "coffea",
    "matplotlib": "plot",
}


def install_command(module: str) -> str:
    """The command that installs the extra providing ``module``."""
    return f"pip install 'rntuple[{EXTRA_OF_MODULE[module.split('.')[0]]}]'"


def require(module: str, feature: str) -> ModuleType:
    """Imports ``module`` (e.g. ``"pandas"``, ``"matplotlib.pyplot"``) for ``feature``
    (what the user asked for, e.g. ``"library='pd'"``), or raises
    :class:`MissingDependencyError` with the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        top = module.split(".")[0]
        raise MissingDependencyError(
            f"{feature} needs {top}, which is not installed: {install_command(top)}"
        ) from err
