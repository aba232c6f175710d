"""Conversions between the Arrow data the core reads and writes and the libraries
analysts use: Awkward Array, NumPy, pandas and Polars.

Reading: Arrow arrays become Awkward layouts over the same buffers (numbers, offsets and
validity bitmaps are not copied; only Booleans, which Arrow packs into bits, are
unpacked). ``std::pair``/``std::tuple`` records and map entries become Awkward tuples,
as uproot shows them; optional fields become option types; variants become unions.

Writing: any supported input becomes a ``pyarrow.Table`` whose nullability can be
trusted: Awkward's option types, or, for pyarrow, pandas and Polars (which mark every
field nullable), the fields that hold nulls in any chunk.
"""

from __future__ import annotations

from typing import Any

import awkward as ak
import numpy as np
import pyarrow as pa

from ._extras import require
from .errors import InvalidArgumentError, UnsupportedError
from .selection import check_library, to_numpy_like_uproot

TYPE_NAME_KEY = b"rntuple.type"


# --- Arrow -> Awkward ---------------------------------------------------------------


def _type_name(field: pa.Field) -> str:
    meta = field.metadata or {}
    return meta.get(TYPE_NAME_KEY, b"").decode()


def _is_tuple(field: pa.Field) -> bool:
    """Whether an Arrow struct is a C++ pair or tuple, or a record of no C++ type whose
    two or more members are named ``_0``, ``_1``, ... as a tuple's (uproot writes Awkward
    tuples so; one member ``_0`` is what a projection of a pair keeps, a record), shown
    as an Awkward tuple."""
    name = _type_name(field)
    if name.startswith("std::pair<") or name.startswith("std::tuple<"):
        return True
    t = field.type
    return name == "" and t.num_fields > 1 and all(t.field(i).name == f"_{i}" for i in range(t.num_fields))


def _buffer(arr: pa.Array, i: int, dtype: Any, start: int, count: int) -> np.ndarray:
    """Elements ``start:start+count`` of buffer ``i`` of ``arr`` as a NumPy view."""
    buf = arr.buffers()[i]
    if buf is None or count == 0:
        return np.zeros(count, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype)[start : start + count]


def _index(values: np.ndarray) -> ak.index.Index:
    return ak.index.Index(values)


def _option(arr: pa.Array, content: ak.contents.Content) -> ak.contents.Content:
    """Wraps ``content`` in an Awkward option type with ``arr``'s validity."""
    n = len(arr)
    validity = arr.buffers()[0]
    if validity is None or arr.null_count == 0:
        return ak.contents.UnmaskedArray(content)
    if arr.offset % 8 == 0:
        mask = np.frombuffer(validity, dtype=np.uint8)[arr.offset // 8 : arr.offset // 8 + (n + 7) // 8]
        return ak.contents.BitMaskedArray(
            ak.index.IndexU8(mask), content, valid_when=True, length=n, lsb_order=True
        )
    mask = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.int8)
    return ak.contents.ByteMaskedArray(ak.index.Index8(mask), content, valid_when=True)


def _layout(arr: pa.Array, field: pa.Field, *, option: bool | None = None) -> ak.contents.Content:
    """The Awkward layout of one Arrow array (its field says nullability and C++ type)."""
    content = _content(arr, field)
    nullable = field.nullable if option is None else option
    if content.is_union or content.is_option:
        # A dense union has no validity bitmap of its own: a missing variant is a null in
        # an alternative, and every alternative is already an option type (Awkward allows
        # no option type around a union or another option type).
        return content
    return _option(arr, content) if nullable else content


def _content(arr: pa.Array, field: pa.Field) -> ak.contents.Content:
    t = arr.type
    n = len(arr)
    off = arr.offset
    if pa.types.is_boolean(t):
        buf = arr.buffers()[1]
        if buf is None or n == 0:
            return ak.contents.NumpyArray(np.zeros(n, dtype=np.bool_))
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
        return ak.contents.NumpyArray(bits[off : off + n].astype(np.bool_))
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return ak.contents.NumpyArray(_buffer(arr, 1, t.to_pandas_dtype(), off, n))
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        text = pa.types.is_string(t) or pa.types.is_large_string(t)
        offsets = _buffer(arr, 1, np.int64 if large else np.int32, off, n + 1)
        if n == 0:
            offsets = np.zeros(1, dtype=offsets.dtype)
        data = arr.buffers()[2]
        chars = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
        return ak.contents.ListOffsetArray(
            _index(offsets),
            ak.contents.NumpyArray(chars, parameters={"__array__": "char" if text else "byte"}),
            parameters={"__array__": "string" if text else "bytestring"},
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = _buffer(arr, 1, np.int64 if pa.types.is_large_list(t) else np.int32, off, n + 1)
        if n == 0:
            offsets = np.zeros(1, dtype=offsets.dtype)
        return ak.contents.ListOffsetArray(_index(offsets), _layout(arr.values, t.value_field))
    if pa.types.is_map(t):
        offsets = _buffer(arr, 1, np.int32, off, n + 1)
        if n == 0:
            offsets = np.zeros(1, dtype=np.int32)
        entries = arr.values
        key = _layout(entries.field(0), t.key_field)
        value = _layout(entries.field(1), t.item_field)
        pair = ak.contents.RecordArray([key, value], None, length=len(entries))
        return ak.contents.ListOffsetArray(_index(offsets), pair)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        values = arr.values.slice(off * size, n * size)
        return ak.contents.RegularArray(_layout(values, t.value_field), size, zeros_length=n)
    if pa.types.is_struct(t):
        contents = [_layout(arr.field(i), t.field(i)) for i in range(t.num_fields)]
        # A pair, a tuple and a class without members are Awkward tuples, as uproot shows them.
        tuple_like = _is_tuple(field) or t.num_fields == 0
        names = None if tuple_like else [t.field(i).name for i in range(t.num_fields)]
        return ak.contents.RecordArray(contents, names, length=n)
    if pa.types.is_union(t):
        if t.mode != "dense":
            raise UnsupportedError(f"field {field.name!r}: sparse unions are not supported")
        codes = list(t.type_codes)
        tags = _buffer(arr, 1, np.int8, off, n)
        if codes != list(range(len(codes))):
            lookup = np.zeros(128, dtype=np.int8)
            lookup[codes] = np.arange(len(codes), dtype=np.int8)
            tags = lookup[tags]
        index = _buffer(arr, 2, np.int32, off, n)
        # Every alternative is an option type: a variant's invalid state is a missing value
        # (Awkward allows no option type around a union).
        contents = [_layout(arr.field(i), t.field(i), option=True) for i in range(len(codes))]
        tags_index = ak.index.Index8(np.ascontiguousarray(tags))
        index_index = _index(np.ascontiguousarray(index))
        if len(contents) < 2:
            return ak.contents.UnionArray.simplified(tags_index, index_index, contents)
        # Not ``simplified``: it would merge numeric alternatives (``std::int32_t`` and
        # ``double`` into float64; 64-bit integers would lose precision).
        return ak.contents.UnionArray(tags_index, index_index, contents)
    if pa.types.is_null(t):
        return ak.contents.IndexedOptionArray(
            ak.index.Index64(np.full(n, -1, dtype=np.int64)), ak.contents.EmptyArray()
        )
    raise UnsupportedError(f"field {field.name!r}: no Awkward conversion for Arrow type {t}")


def _single_chunk(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return column.chunk(0)
        return column.combine_chunks() if column.num_chunks else pa.array([], type=column.type)
    return column


def to_awkward(table: pa.Table | pa.RecordBatch) -> ak.Array:
    """An Awkward Array of records, one field per column, over the Arrow buffers."""
    contents = [
        _layout(_single_chunk(table.column(i)), table.schema.field(i)) for i in range(table.num_columns)
    ]
    layout = ak.contents.RecordArray(contents, list(table.schema.names), length=table.num_rows)
    return ak.Array(layout)


# --- Arrow -> NumPy, pandas, Polars ------------------------------------------------


def indexed_options(layout: ak.contents.Content) -> ak.contents.Content:
    """``layout`` with every option node an ``IndexedOptionArray`` and every list but a
    string a packed ``ListOffsetArray`` of 64-bit offsets: one form whether a read holds
    a None or not (options without nulls are ``UnmaskedArray``s, others bit-masked), as
    a read of no entry, whose form stands for every read, must have."""
    if layout.is_option:
        indexed = layout.to_IndexedOptionArray64()
        return ak.contents.IndexedOptionArray(
            indexed.index, indexed_options(indexed.content), parameters=indexed.parameters
        )
    if layout.is_record or layout.is_union:
        return layout.copy(contents=[indexed_options(c) for c in layout.contents])
    if (
        layout.is_list
        and not layout.is_regular
        and layout.parameter("__array__") not in ("string", "bytestring")
    ):
        packed = layout.to_ListOffsetArray64(False)
        return ak.contents.ListOffsetArray(
            packed.offsets, indexed_options(packed.content), parameters=packed.parameters
        )
    if layout.is_indexed or layout.is_list or layout.is_regular:
        return layout.copy(content=indexed_options(layout.content))
    return layout


def to_numpy(table: pa.Table | pa.RecordBatch) -> dict[str, Any]:
    """A dict of NumPy arrays, one per top-level field, in the form uproot 5.7 gives for
    ``library="np"`` (see :func:`rntuple.selection.to_numpy_like_uproot`): flat fields
    as arrays over the read buffers, jagged fields as object arrays of per-entry views."""
    records = to_awkward(table)
    return {name: to_numpy_like_uproot(records[name]) for name in records.fields}


def to_pandas(columns: dict[str, Any], index: Any) -> Any:
    """A pandas DataFrame of NumPy columns (as :func:`to_numpy` makes them) with the
    given index (entry numbers, as uproot)."""
    pd = require("pandas", "library='pd'")
    return pd.DataFrame(columns, index=index)


def to_library(table: pa.Table, library: str, entry_start: int = 0) -> Any:
    """``table`` in the form ``library`` names: ``ak``, ``np``, ``pd``, ``pl``, ``arrow``
    (a pandas DataFrame is indexed by entry number from ``entry_start``)."""
    library = check_library(library)
    if library == "ak":
        return to_awkward(table)
    if library == "np":
        return to_numpy(table)
    if library == "arrow":
        return table
    if library == "pd":
        pd = require("pandas", "library='pd'")
        index = pd.RangeIndex(entry_start, entry_start + table.num_rows)
        return to_pandas(to_numpy(table), index)
    pl = require("polars", "library='pl'")
    return pl.from_arrow(table)


# --- inputs -> Arrow (writing) ------------------------------------------------------


def _awkward_to_arrow(array: ak.Array) -> pa.Array:
    return ak.to_arrow(array, extensionarray=False, list_to32=False, string_to32=False)


def _is_option(array: ak.Array) -> bool:
    return isinstance(ak.type(array).content, ak.types.OptionType)


def to_arrow_input(data: Any) -> pa.Table:
    """``data`` as a ``pyarrow.Table`` whose nullable fields are the ones to write as
    ``std::optional``: Awkward's option types, and for the other inputs the fields that
    hold nulls. Accepts an Awkward Array of records, a dict of NumPy/Awkward arrays or
    sequences, a ``pyarrow.Table``/``RecordBatch``, a pandas or Polars DataFrame, or any
    object with ``__arrow_c_stream__``."""
    if isinstance(data, ak.Array):
        if not ak.fields(data) or ak.type(data).content.__class__.__name__ != "RecordType":
            raise InvalidArgumentError(
                "an Awkward Array to write must be an array of records (one field per column)"
            )
        columns = {name: data[name] for name in ak.fields(data)}
        return _columns_table(columns)
    if isinstance(data, dict):
        return _columns_table(data)
    if isinstance(data, pa.Table):
        return _table_where_nulls(data)
    if isinstance(data, pa.RecordBatch):
        return _table_where_nulls(pa.Table.from_batches([data]))
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return _table_where_nulls(_pandas_table(data))
    if module == "polars":
        pl = require("polars", "writing a Polars DataFrame")

        return _table_where_nulls(data.to_arrow(compat_level=pl.CompatLevel.oldest()))
    if hasattr(data, "__arrow_c_stream__"):
        return _table_where_nulls(pa.table(data))
    raise InvalidArgumentError(
        f"cannot write a {type(data).__name__}: give an Awkward Array of records, a dict of "
        "arrays, a pyarrow Table, or a pandas or Polars DataFrame"
    )


def _columns_table(columns: dict[str, Any]) -> pa.Table:
    arrays = []
    fields = []
    length = None
    for name, value in columns.items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"column names must be strings, not {name!r}")
        try:
            arr, nullable = _column_array(value)
        except (pa.ArrowException, TypeError, ValueError) as e:
            if isinstance(e, InvalidArgumentError):
                raise
            raise UnsupportedError(f"column {name!r} cannot be written: {e}") from e
        if length is not None and len(arr) != length:
            raise InvalidArgumentError(
                f"column {name!r} has {len(arr)} entries but the columns before it have {length}"
            )
        length = len(arr)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type, nullable=nullable))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _column_array(value: Any) -> tuple[pa.Array | pa.ChunkedArray, bool]:
    """One column to write as an Arrow array, and whether it is optional."""
    if isinstance(value, ak.Array):
        arr = _awkward_to_arrow(value)
        nullable = _is_option(value)
    elif isinstance(value, np.ndarray) and value.ndim > 1:
        arr = pa.array(value.reshape(-1))
        for size in reversed(value.shape[1:]):
            item = pa.field("item", arr.type, nullable=False)
            arr = pa.FixedSizeListArray.from_arrays(arr, type=pa.list_(item, size))
        nullable = False
    elif isinstance(value, (pa.Array, pa.ChunkedArray)):
        # pyarrow marks every nested field nullable: optional only where nulls are.
        arr = value.cast(_type_where_nulls(value))
        nullable = value.null_count > 0
    else:
        array = ak.Array(value) if not isinstance(value, np.ndarray) else None
        if array is not None:
            arr = _awkward_to_arrow(array)
            nullable = _is_option(array)
        else:
            arr = pa.array(value)
            nullable = False
    return arr, nullable


def _type_where_nulls(arr: pa.Array | pa.ChunkedArray) -> pa.DataType:
    """``arr``'s type with its nested fields nullable only where ``arr`` holds nulls."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    t = arr.type

    def item(field: pa.Field, values: list[pa.Array]) -> pa.Field:
        child = pa.chunked_array(values, type=field.type)
        return pa.field(field.name, _type_where_nulls(child), child.null_count > 0, field.metadata)

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = item(t.value_field, [c.flatten() for c in chunks])
        return pa.large_list(values) if pa.types.is_large_list(t) else pa.list_(values)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(item(t.value_field, [c.flatten() for c in chunks]), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([item(t.field(i), [c.field(i) for c in chunks]) for i in range(t.num_fields)])
    return t


def _table_where_nulls(table: pa.Table) -> pa.Table:
    """``table`` with its fields nullable only where they hold nulls, in any chunk
    (pyarrow, pandas and Polars mark every field nullable)."""
    fields = []
    for i, field in enumerate(table.schema):
        column = table.column(i)
        fields.append(pa.field(field.name, _type_where_nulls(column), column.null_count > 0, field.metadata))
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return table if schema == table.schema else table.cast(schema)


def _pandas_table(df: Any) -> pa.Table:
    # pyarrow's from_pandas turns NaN into nulls; a physicist's NaN stays NaN. Pandas'
    # masked dtypes (Int64, boolean, Float64) keep their missing values (pd.NA) as nulls.
    arrays = []
    names = []
    for name in df.columns:
        series = df[name]
        try:
            if isinstance(series.dtype, np.dtype) and series.dtype.kind in "biuf":
                arrays.append(pa.array(series.to_numpy(), from_pandas=False))
            else:
                arrays.append(pa.array(series, from_pandas=True))
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise UnsupportedError(f"column {str(name)!r} cannot be written: {e}") from e
        names.append(str(name))
    return pa.Table.from_arrays(arrays, names=names)
