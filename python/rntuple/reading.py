"""Reading: open a ROOT file, pick an RNTuple, read fields into Awkward, NumPy, Arrow,
pandas or Polars, at once or in cluster-aligned batches.

The reading API in one place, kept where it always was; it lives in modules named for
what they hold: :mod:`rntuple.file` (opening files), :mod:`rntuple.ntuple` (an RNTuple
and its fields), :mod:`rntuple.plan` (what a read takes), :mod:`rntuple.chain` (many
files read as one) and :mod:`rntuple.options` (the options reads share)."""

from __future__ import annotations

from .chain import OPEN_AHEAD, concatenate, iterate, open_rntuples
from .file import ReadOnlyFile, expand_files, open, open_chain_member, split_object_path
from .ntuple import Field, RNTuple
from .options import FieldSelection, StepSize, entry_range, parse_size
from .plan import ReadPlan

__all__ = [
    "OPEN_AHEAD",
    "Field",
    "FieldSelection",
    "RNTuple",
    "ReadOnlyFile",
    "ReadPlan",
    "StepSize",
    "concatenate",
    "entry_range",
    "expand_files",
    "iterate",
    "open",
    "open_chain_member",
    "open_rntuples",
    "parse_size",
    "split_object_path",
]
