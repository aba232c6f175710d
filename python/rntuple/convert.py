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

from typing import Any, NamedTuple

import awkward as ak
import numpy as np
import pyarrow as pa

from .errors import InvalidArgumentError, UnsupportedError

TYPE_NAME_KEY = b"rntuple.type"


class JaggedArray(NamedTuple):
    """A jagged (variable-length) field as plain NumPy arrays, for ``library="np"``:
    entry ``i`` holds ``values[offsets[i]:offsets[i + 1]]``; ``offsets`` starts at 0 and
    has one element more than there are entries. ``values`` is itself a
    :class:`JaggedArray` for collections of collections."""

    offsets: np.ndarray
    values: np.ndarray | JaggedArray

    def __len__(self) -> int:
        return len(self.offsets) - 1


# --- Arrow -> Awkward ---------------------------------------------------------------


def _type_name(field: pa.Field) -> str:
    meta = field.metadata or {}
    return meta.get(TYPE_NAME_KEY, b"").decode()


def _is_tuple(field: pa.Field) -> bool:
    """Whether an Arrow struct is a C++ pair or tuple (shown as an Awkward tuple)."""
    name = _type_name(field)
    return name.startswith("std::pair<") or name.startswith("std::tuple<")


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
        names = None if _is_tuple(field) else [t.field(i).name for i in range(t.num_fields)]
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


# --- Arrow -> NumPy -----------------------------------------------------------------


def _numpy_column(name: str, arr: pa.Array, field: pa.Field, out: dict[str, Any]) -> None:
    t = arr.type
    if pa.types.is_struct(t) and arr.null_count == 0:
        for i in range(t.num_fields):
            child = t.field(i)
            _numpy_column(f"{name}.{child.name}", arr.field(i), child, out)
        return
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False))
        values = (
            arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])) if len(offsets) else arr.values
        )
        offsets = offsets - offsets[0] if len(offsets) else np.zeros(1, dtype=np.int64)
        if arr.null_count:
            raise UnsupportedError(
                f"field {name!r} has missing collections, which NumPy cannot show; "
                "use library='ak' or 'arrow'"
            )
        if pa.types.is_struct(values.type):
            inner: dict[str, Any] = {}
            _numpy_column(name, values, t.value_field, inner)
            for key, value in inner.items():
                out[key] = JaggedArray(offsets, value)
            return
        inner = {}
        _numpy_column(name, values, t.value_field, inner)
        out[name] = JaggedArray(offsets, inner[name])
        return
    if pa.types.is_fixed_size_list(t) and arr.null_count == 0:
        size = t.list_size
        inner = {}
        _numpy_column(name, arr.values.slice(arr.offset * size, len(arr) * size), t.value_field, inner)
        values = inner[name]
        if isinstance(values, np.ndarray):
            out[name] = values.reshape((len(arr), size, *values.shape[1:]))
            return
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    ):
        values = arr.to_numpy(zero_copy_only=False)
        if arr.null_count:
            mask = np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
            filled = arr.fill_null(pa.scalar(0 if not pa.types.is_string(t) else "", t))
            values = np.ma.masked_array(filled.to_numpy(zero_copy_only=False), mask=mask)
        out[name] = values
        return
    raise UnsupportedError(
        f"field {name!r} of Arrow type {t} has no NumPy form (maps, variants and missing "
        "records need library='ak' or 'arrow')"
    )


def to_numpy(table: pa.Table | pa.RecordBatch) -> dict[str, Any]:
    """A dict of NumPy arrays, one per leaf: records are flattened to ``a.b`` keys,
    fixed-size arrays become 2-D arrays, jagged fields :class:`JaggedArray`, strings
    object arrays, optional leaves masked arrays."""
    out: dict[str, Any] = {}
    for i in range(table.num_columns):
        field = table.schema.field(i)
        _numpy_column(field.name, _single_chunk(table.column(i)), field, out)
    return out


def to_library(table: pa.Table, library: str) -> Any:
    """``table`` in the form ``library`` names: ``ak``, ``np``, ``pd``, ``pl``, ``arrow``."""
    if library in ("ak", "awkward"):
        return to_awkward(table)
    if library in ("np", "numpy"):
        return to_numpy(table)
    if library in ("arrow", "pa", "pyarrow"):
        return table
    if library in ("pd", "pandas"):
        return table.to_pandas()
    if library in ("pl", "polars"):
        import polars as pl

        return pl.from_arrow(table)
    raise InvalidArgumentError(f"unknown library {library!r}: use 'ak', 'np', 'pd', 'pl' or 'arrow'")


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
        import polars as pl

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
