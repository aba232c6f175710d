"""rntuple: read and write CERN ROOT's RNTuple format without ROOT.

Reading::

    import rntuple
    with rntuple.open("events.root") as f:
        events = f["Events"].arrays(["Jet_pt", "Muon_*"])  # an awkward.Array

Writing::

    with rntuple.recreate("out.root") as f:
        f["Events"] = {"x": numpy_array, "jets": awkward_array}
        f["Events"].extend(more)

The Rust core decodes pages on all cores with the GIL released and hands Arrow buffers
to Awkward, NumPy, pyarrow, pandas and Polars without copies; an RNTuple also speaks the
Arrow PyCapsule stream protocol (``pyarrow.table(nt)``, ``polars.from_arrow(nt)``,
DuckDB).
"""

from __future__ import annotations

from ._core import __version__
from .convert import JaggedArray
from .dask import dask
from .errors import (
    ChecksumError,
    FormatError,
    InvalidArgumentError,
    NotFoundError,
    RemoteError,
    RNTupleError,
    UnsupportedError,
)
from .reading import ReadOnlyFile, RNTuple, concatenate, iterate, open
from .writing import WritableFile, WritableRNTuple, recreate

__all__ = [
    "ChecksumError",
    "FormatError",
    "InvalidArgumentError",
    "JaggedArray",
    "NotFoundError",
    "RNTuple",
    "RNTupleError",
    "ReadOnlyFile",
    "RemoteError",
    "UnsupportedError",
    "WritableFile",
    "WritableRNTuple",
    "__version__",
    "concatenate",
    "dask",
    "iterate",
    "open",
    "recreate",
]
