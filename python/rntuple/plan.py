"""Read plans: what one read of a file takes (fields as they are, expressions, a cut,
aliases, the types), how the plan is made from uproot's selection arguments
(:func:`plan_selection`), and how what it read becomes the caller's library's form."""

from __future__ import annotations

import re
from typing import Any, Protocol

import awkward as ak
import numpy as np
import pyarrow as pa

from ._extras import require
from .libraries import to_awkward, to_library
from .selection import (
    Compiled,
    Evaluator,
    to_numpy_like_uproot,
    zip_jagged,
)


class TableSource(Protocol):
    """What a plan reads from: an RNTuple (:class:`rntuple.RNTuple`), named by its file
    and path, read over entry ranges as tables or streams of batches."""

    @property
    def file_path(self) -> str:
        """The file the RNTuple is read from."""

    @property
    def path(self) -> str:
        """The RNTuple's path in its file."""

    def _read_table(self, paths: list[str], start: int, stop: int, types: Any = None) -> pa.Table: ...

    def _stream(
        self, paths: list[str], ranges: list[tuple[int, int]], decode_ahead: bool, types: Any = None
    ) -> Any: ...


def descend(records: ak.Array, path: str) -> ak.Array:
    """The values at a field path of records read with that path (through lists)."""
    value = records
    for segment in path.split("."):
        if segment not in value.fields and re.fullmatch(r"_[0-9]+", segment) and value.is_tuple:
            segment = segment[1:]  # a tuple's member "_0" is Awkward's field "0"
        value = value[segment]
    return value


def _group(columns: dict[str, Any], how: Any) -> Any:
    """``columns`` as ``how`` asks: a dict, tuple or list (None is handled by the caller)."""
    if how is dict:
        return dict(columns)
    if how is tuple:
        return tuple(columns.values())
    return list(columns.values())


def awkward_records(columns: dict[str, Any], length: int) -> ak.Array:
    """``columns`` as Awkward records of ``length`` entries (no column: empty records)."""
    if not columns:
        return ak.Array(ak.contents.RecordArray([], [], length=length))
    return ak.Array(columns)


class ReadPlan:
    """What one :meth:`RNTuple.arrays` call reads and computes: fields read as they are
    (``selection``), results named by their expressions, the cut, the aliases used."""

    def __init__(self) -> None:
        #: Field paths read as they are, each output as its top-level record.
        self.selection: list[str] = []
        #: Output names in order, with the compiled expression (None for a selection).
        self.outputs: dict[str, Compiled | None] = {}
        self.cut: Compiled | None = None
        self.aliases: dict[str, Compiled] = {}
        #: The field paths the expressions, cut and aliases use.
        self.inputs: list[str] = []
        #: The types fields are read as (the core's parsed ``types=``), or None.
        self.types: Any = None
        #: The chain (:class:`rntuple.unify.ChainReading`) this file is read as a part
        #: of, and the file's index in it; None for a file read alone.
        self.chain: Any = None
        self.chain_index = 0

    def select(self, paths: list[str]) -> None:
        """Reads ``paths`` as they are; each is output as its top-level record."""
        for path in paths:
            if path not in self.selection:
                self.selection.append(path)
            self.outputs.setdefault(path.split(".")[0], None)

    def compute(self, name: str, compiled: Compiled) -> None:
        """Outputs the value of ``compiled`` as ``name``."""
        self.outputs.setdefault(name, compiled)

    def compiled(self) -> list[Compiled]:
        """Every compiled expression: the outputs', the cut's and the aliases'."""
        out = [c for c in self.outputs.values() if c is not None]
        return [*out, *([self.cut] if self.cut is not None else []), *self.aliases.values()]

    @property
    def computes(self) -> bool:
        """Whether anything is evaluated (an expression or a cut)."""
        return self.cut is not None or any(c is not None for c in self.outputs.values())

    @property
    def read_paths(self) -> list[str]:
        """Every field path read: the selection's and the expressions' inputs."""
        return list(dict.fromkeys([*self.selection, *self.inputs]))

    def table(self, nt: TableSource, paths: list[str], start: int, stop: int) -> pa.Table:
        """``paths`` over ``start:stop`` read with the plan's types (as the chain's schema
        for a file of a chain: the one place both paths read a table)."""
        if self.chain is None:
            return nt._read_table(paths, start, stop, self.types)
        return self.chain.read_table(nt, self.chain_index, paths, start, stop, self.types)

    def stream(
        self, nt: TableSource, paths: list[str], ranges: list[tuple[int, int]], decode_ahead: bool
    ) -> Any:
        """The record batches of ``paths`` over each of ``ranges``, in turn, as
        :meth:`table` reads them (``close()`` stops the stream)."""
        if self.chain is None:
            return nt._stream(paths, ranges, decode_ahead, self.types)
        return self.chain.stream(nt, self.chain_index, paths, ranges, decode_ahead, self.types)

    def present(self, paths: list[str]) -> list[str]:
        """The paths of ``paths`` the file has (a file of a chain may lack some)."""
        return paths if self.chain is None else self.chain.present(self.chain_index, paths)

    def read(self, nt: TableSource, start: int, stop: int, library: str, how: Any) -> Any:
        """The results over ``start:stop`` in ``library``'s form, grouped as ``how``."""
        if not self.computes:
            return self.convert(self.table(nt, self.selection, start, stop), start, library, how)
        return self.finish(*self.evaluate(nt, start, stop), library, how)

    def evaluate(self, nt: TableSource, start: int, stop: int) -> tuple[dict[str, Any], np.ndarray]:
        """The output columns over ``start:stop`` (Awkward or NumPy, the cut applied)
        and the entry numbers they hold."""
        return self.evaluate_tables(
            self.table(nt, self.selection, start, stop) if self.selection else None,
            self.table(nt, self.inputs, start, stop) if self.inputs else None,
            start,
            stop,
        )

    def evaluate_tables(
        self, selected_table: pa.Table | None, inputs_table: pa.Table | None, start: int, stop: int
    ) -> tuple[dict[str, Any], np.ndarray]:
        """:meth:`evaluate` of tables already read over ``start:stop``: the selection's
        (None when nothing is selected as it is) and the expressions' inputs' (None
        when they use no field)."""
        selected = to_awkward(selected_table) if selected_table is not None else None
        inputs = to_awkward(inputs_table) if inputs_table is not None else None
        evaluator = Evaluator({p: descend(inputs, p) for p in self.inputs}, self.aliases)
        length = stop - start
        columns: dict[str, Any] = {}
        for name, compiled in self.outputs.items():
            if compiled is None:
                assert selected is not None
                columns[name] = selected[name]
                continue
            value = evaluator.evaluate(compiled)
            if not isinstance(value, ak.Array) and np.ndim(value) == 0:
                value = np.full(length, value)  # a constant: one value per entry
            columns[name] = value
        index = np.arange(start, stop)
        if self.cut is not None:
            mask = evaluator.evaluate(self.cut)
            if isinstance(mask, ak.Array):
                mask = mask != 0
                if mask.ndim == 1:
                    mask = ak.to_numpy(ak.fill_none(mask, False))
            else:
                mask = np.asarray(mask) != 0
            columns = {name: value[mask] for name, value in columns.items()}
            if isinstance(mask, np.ndarray) and mask.ndim == 1:
                index = index[mask]
        return columns, index

    def convert(self, table: pa.Table, start: int, library: str, how: Any) -> Any:
        """A table read as it is in ``library``'s form, grouped as ``how``."""
        if library == "arrow" and how is None:
            return table
        if library == "arrow":
            return _group({n: table.column(n) for n in table.column_names}, how)
        if library == "pl":
            pl = to_library(table, "pl")
            return pl if how is None else _group({n: pl[n] for n in pl.columns}, how)
        if library == "ak" and how is None:
            return to_awkward(table)
        records = to_awkward(table)
        columns = {name: records[name] for name in records.fields}
        return self.finish(columns, np.arange(start, start + table.num_rows), library, how)

    @staticmethod
    def finish(columns: dict[str, Any], index: np.ndarray, library: str, how: Any) -> Any:
        """Output ``columns`` of the entries ``index`` in ``library``'s form, grouped as
        ``how``."""
        length = len(index)
        if library == "ak":
            columns = {n: v if isinstance(v, ak.Array) else ak.Array(v) for n, v in columns.items()}
            if how is None:
                return awkward_records(columns, length)
            return zip_jagged(columns) if how == "zip" else _group(columns, how)
        if library in ("arrow", "pl"):
            table = ak.to_arrow_table(
                awkward_records(columns, length), extensionarray=False, list_to32=False, string_to32=False
            )
            converted = to_library(table, library)
            if how is None:
                return converted
            if library == "arrow":
                return _group({n: table.column(n) for n in table.column_names}, how)
            return _group({n: converted[n] for n in converted.columns}, how)
        arrays = {n: to_numpy_like_uproot(v) for n, v in columns.items()}
        if library == "np":
            return arrays if how is None else _group(arrays, how)
        pandas = require("pandas", "library='pd'")
        pandas_index = _pandas_index(pandas, index)
        arrays = {n: _pandas_column(pandas, v) for n, v in arrays.items()}
        if how is None:
            return pandas.DataFrame(arrays, index=pandas_index)
        return _group({n: pandas.Series(v, index=pandas_index, name=n) for n, v in arrays.items()}, how)


def _pandas_column(pandas: Any, array: np.ndarray) -> Any:
    """A NumPy column (uproot's form) as pandas holds it, of one dtype whatever the
    entries: an optional integer or bool as pandas' nullable ``Int64``, ``boolean``, ...
    (every value exact, None as ``pd.NA``: ``float64`` would round integers past 2**53);
    an n-D block (jagged entries that happen to have one shape) as one array per entry."""
    if array.ndim > 1:
        rows = np.empty(len(array), dtype=object)
        for i, row in enumerate(array):
            rows[i] = row
        return rows
    if isinstance(array, np.ma.MaskedArray) and array.dtype.names:
        # records with optional members: each a tuple, None where a member is
        rows = np.empty(len(array), dtype=object)
        masks = np.ma.getmaskarray(array).tolist()
        for i, (values, masked) in enumerate(zip(array.data.tolist(), masks, strict=True)):
            rows[i] = tuple(None if m else v for v, m in zip(values, masked, strict=True))
        return rows
    if isinstance(array, np.ma.MaskedArray) and array.dtype.kind in "iub":
        mask = np.ma.getmaskarray(array)
        data = np.asarray(array.data)
        if array.dtype.kind == "b":
            return pandas.arrays.BooleanArray(data, mask)
        return pandas.arrays.IntegerArray(data, mask)
    return array


def _pandas_index(pandas: Any, entries: np.ndarray) -> Any:
    """Entry numbers as a pandas index (a ``RangeIndex`` when contiguous, as uproot)."""
    if len(entries) == 0:
        return pandas.RangeIndex(0, 0)
    if entries[-1] - entries[0] == len(entries) - 1:
        return pandas.RangeIndex(int(entries[0]), int(entries[-1]) + 1)
    return pandas.Index(entries)
