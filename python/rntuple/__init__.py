"""rntuple: read and write CERN ROOT's RNTuple format without ROOT.

Reading::

    import rntuple
    with rntuple.open("events.root") as f:
        events = f["Events"].arrays(["Jet_pt", "Muon_*"])  # an awkward.Array

Writing::

    with rntuple.recreate("out.root") as f:
        f["Events"] = {"x": numpy_array, "jets": awkward_array}
        f["Events"].extend(more)

    with rntuple.recreate_parallel("out.root", "Events", schema) as w:
        ...  # per thread: with w.fill_context() as ctx: ctx.extend(batch)

The Rust core decodes pages on all cores with the GIL released and hands Arrow buffers
to Awkward, NumPy, pyarrow, pandas and Polars without copies; an RNTuple also speaks the
Arrow PyCapsule stream protocol (``pyarrow.table(nt)``, ``polars.from_arrow(nt)``,
DuckDB).

Converting TTrees::

    rntuple.convert("nanoaod.root:Events", "events.root")          # one file
    rntuple.convert_files("in/*.root", "out/", client=client)       # on a Dask cluster

Merging RNTuples (as ``hadd``, pages copied where they can be)::

    rntuple.merge(["job1.root", "job2.root"], "merged.root")

Joining a friend (by entry number, or on key fields)::

    events = rntuple.join("events.root:Events", "calib.root:Calib", on=["run", "event"])
    events.arrays(["x", "Calib.z"])  # records with a field Calib: None without a match
"""

from __future__ import annotations

from . import errors
from ._core import __version__
from .cache import Cache
from .dask import convert_files, dask
from .errors import *  # noqa: F403  (the error classes, as errors.__all__ names them)
from .inspection import Inspection, PageSizeHistogram
from .join import Join, join
from .merge import MergeResult, MergeWarning, merge
from .reading import Field, ReadOnlyFile, RNTuple, concatenate, iterate, open
from .ttree import ConvertResult, convert
from .writing import FillContext, ParallelWriter, WritableFile, WritableRNTuple, recreate, recreate_parallel

__all__ = [
    "Cache",
    "ConvertResult",
    "Field",
    "FillContext",
    "Inspection",
    "Join",
    "MergeResult",
    "MergeWarning",
    "PageSizeHistogram",
    "ParallelWriter",
    "RNTuple",
    "ReadOnlyFile",
    "WritableFile",
    "WritableRNTuple",
    "__version__",
    "concatenate",
    "convert",
    "convert_files",
    "dask",
    "iterate",
    "join",
    "merge",
    "open",
    "recreate",
    "recreate_parallel",
]
__all__ += errors.__all__
