//! Shredding: an Arrow array of a field into the values of the field's columns, the
//! inverse of the reader's assembly. Collection offsets become cluster-local end indices.

use crate::encoding::{ColumnType, ColumnValues};
use crate::error::{to_usize, Error, Result};
use crate::schema::{Descriptor, FieldKind};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, UInt64Array};
use arrow_schema::DataType;

/// Receives the values shredded from arrays, per physical column, and keeps the
/// cluster-local counters collections and variants need.
pub(crate) trait ColumnSink {
    /// Appends values to column `id`.
    fn append(&mut self, id: u32, values: ColumnValues) -> Result<()>;
    /// The cluster-local count of items written so far into collection field `id`,
    /// advanced by `by`; returns the count before.
    fn advance_items(&mut self, id: u32, by: u64) -> u64;
    /// The cluster-local count of entries written so far as variant alternative `id` (a
    /// variant's subfield), advanced by `by`; returns the count before.
    fn advance_alternative(&mut self, id: u32, by: u64) -> u64;
}

fn unsupported(desc: &Descriptor, id: u32, array: &dyn Array) -> Error {
    Error::InvalidArgument(format!(
        "field \"{}\" of type {} cannot be written from an Arrow {} array",
        desc.qualified_name(id),
        desc.field(id).type_name(),
        array.data_type()
    ))
}

/// Integers of any Arrow integer array, widened to i128 (Booleans as 0/1).
fn ints(array: &dyn Array) -> Option<Vec<i128>> {
    macro_rules! collect {
        ($t:ty) => {
            array
                .as_primitive::<$t>()
                .values()
                .iter()
                .map(|&v| v as i128)
                .collect()
        };
    }
    Some(match array.data_type() {
        DataType::Int8 => collect!(Int8Type),
        DataType::Int16 => collect!(Int16Type),
        DataType::Int32 => collect!(Int32Type),
        DataType::Int64 => collect!(Int64Type),
        DataType::UInt8 => collect!(UInt8Type),
        DataType::UInt16 => collect!(UInt16Type),
        DataType::UInt32 => collect!(UInt32Type),
        DataType::UInt64 => collect!(UInt64Type),
        DataType::Boolean => array
            .as_boolean()
            .iter()
            .map(|b| b.unwrap_or(false) as i128)
            .collect(),
        _ => return None,
    })
}

/// Reals of any Arrow float array as f64.
fn reals(array: &dyn Array) -> Option<Vec<f64>> {
    Some(match array.data_type() {
        DataType::Float16 => array
            .as_primitive::<Float16Type>()
            .values()
            .iter()
            .map(|v| v.to_f64())
            .collect(),
        DataType::Float32 => array
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .map(|&v| v as f64)
            .collect(),
        DataType::Float64 => array.as_primitive::<Float64Type>().values().to_vec(),
        _ => return None,
    })
}

fn narrow<T: TryFrom<i128>>(values: Vec<i128>, what: &str) -> Result<Vec<T>> {
    values
        .into_iter()
        .map(|v| {
            T::try_from(v).map_err(|_| {
                Error::InvalidArgument(format!("value {v} does not fit the {what} column"))
            })
        })
        .collect()
}

/// The values of a leaf array whose Arrow type is the column's in-memory type: copied as
/// they are, without the widening and range checks other types need.
fn same_type_values(column_type: ColumnType, array: &dyn Array) -> Option<ColumnValues> {
    use ColumnType as C;
    macro_rules! copy {
        ($t:ty) => {
            array.as_primitive::<$t>().values().to_vec()
        };
    }
    Some(match (column_type, array.data_type()) {
        (C::Bit, DataType::Boolean) if array.null_count() == 0 => {
            ColumnValues::Bool(array.as_boolean().values().iter().collect())
        }
        (C::Byte | C::UInt8 | C::Char, DataType::UInt8) => ColumnValues::U8(copy!(UInt8Type)),
        (C::Int8, DataType::Int8) => ColumnValues::I8(copy!(Int8Type)),
        (C::Int16 | C::SplitInt16, DataType::Int16) => ColumnValues::I16(copy!(Int16Type)),
        (C::UInt16 | C::SplitUInt16, DataType::UInt16) => ColumnValues::U16(copy!(UInt16Type)),
        (C::Int32 | C::SplitInt32, DataType::Int32) => ColumnValues::I32(copy!(Int32Type)),
        (C::UInt32 | C::SplitUInt32, DataType::UInt32) => ColumnValues::U32(copy!(UInt32Type)),
        (C::Int64 | C::SplitInt64, DataType::Int64) => ColumnValues::I64(copy!(Int64Type)),
        (C::UInt64 | C::SplitUInt64, DataType::UInt64) => ColumnValues::U64(copy!(UInt64Type)),
        (
            C::Real16 | C::SplitReal16 | C::Real32 | C::SplitReal32 | C::Real32Trunc,
            DataType::Float32,
        ) => ColumnValues::F32(copy!(Float32Type)),
        (C::Real64 | C::SplitReal64, DataType::Float64) => ColumnValues::F64(copy!(Float64Type)),
        _ => return None,
    })
}

/// The values of a leaf array in the in-memory form of `column_type`.
pub(crate) fn leaf_values(
    column_type: ColumnType,
    array: &dyn Array,
) -> Option<Result<ColumnValues>> {
    use ColumnType as C;
    if let Some(values) = same_type_values(column_type, array) {
        return Some(Ok(values));
    }
    let name = column_type.name();
    Some(match column_type {
        C::Bit => {
            let bools = match array.data_type() {
                DataType::Boolean => array
                    .as_boolean()
                    .iter()
                    .map(|b| b.unwrap_or(false))
                    .collect(),
                _ => ints(array)?.into_iter().map(|v| v != 0).collect(),
            };
            Ok(ColumnValues::Bool(bools))
        }
        // C++ `char` is signed here; its Char column stores the byte as is.
        C::Char => ints(array)?
            .into_iter()
            .map(|v| match v {
                // In range by the match: the byte of a signed or unsigned char.
                #[allow(clippy::cast_possible_truncation)]
                -128..=255 => Ok(v as u8),
                _ => Err(Error::InvalidArgument(format!(
                    "value {v} does not fit the Char column"
                ))),
            })
            .collect::<Result<Vec<u8>>>()
            .map(ColumnValues::U8),
        C::Byte | C::UInt8 => narrow(ints(array)?, name).map(ColumnValues::U8),
        C::Int8 => narrow(ints(array)?, name).map(ColumnValues::I8),
        C::Int16 | C::SplitInt16 => narrow(ints(array)?, name).map(ColumnValues::I16),
        C::UInt16 | C::SplitUInt16 => narrow(ints(array)?, name).map(ColumnValues::U16),
        C::Int32 | C::SplitInt32 => narrow(ints(array)?, name).map(ColumnValues::I32),
        C::UInt32 | C::SplitUInt32 => narrow(ints(array)?, name).map(ColumnValues::U32),
        C::Int64 | C::SplitInt64 => narrow(ints(array)?, name).map(ColumnValues::I64),
        C::UInt64 | C::SplitUInt64 => narrow(ints(array)?, name).map(ColumnValues::U64),
        C::Real16 | C::SplitReal16 | C::Real32 | C::SplitReal32 | C::Real32Trunc => {
            Ok(ColumnValues::F32(
                reals(array)?
                    .into_iter()
                    .map(crate::encoding::f64_to_f32)
                    .collect(),
            ))
        }
        // Quantization works on the field's own precision: a float field's values are
        // floats, a double field's doubles.
        C::Real32Quant => Ok(match array.data_type() {
            DataType::Float32 => {
                ColumnValues::F32(array.as_primitive::<Float32Type>().values().to_vec())
            }
            _ => ColumnValues::F64(reals(array)?),
        }),
        C::Real64 | C::SplitReal64 => Ok(ColumnValues::F64(reals(array)?)),
        _ => return None,
    })
}

/// Arrow list-like offsets as (start, end) pairs per entry.
pub(crate) fn offsets_of(array: &dyn Array) -> Option<Vec<(usize, usize)>> {
    fn pairs<O: Copy + TryInto<usize>>(o: &[O]) -> Vec<(usize, usize)> {
        o.windows(2)
            .map(|w| (w[0].try_into().unwrap_or(0), w[1].try_into().unwrap_or(0)))
            .collect()
    }
    Some(match array.data_type() {
        DataType::LargeList(_) => pairs(array.as_list::<i64>().value_offsets()),
        DataType::List(_) => pairs(array.as_list::<i32>().value_offsets()),
        DataType::LargeUtf8 => pairs(array.as_string::<i64>().value_offsets()),
        DataType::Utf8 => pairs(array.as_string::<i32>().value_offsets()),
        DataType::LargeBinary => pairs(array.as_binary::<i64>().value_offsets()),
        DataType::Binary => pairs(array.as_binary::<i32>().value_offsets()),
        DataType::Map(_, _) => pairs(array.as_map().value_offsets()),
        _ => return None,
    })
}

/// The items all entries cover together: from the first entry's start to the last's end.
pub(crate) fn item_span(offsets: &[(usize, usize)]) -> (usize, usize) {
    (
        offsets.first().map_or(0, |o| o.0),
        offsets.last().map_or(0, |o| o.1),
    )
}

/// The child values of a list-like array (the whole buffer; offsets index into it).
pub(crate) fn list_values(array: &dyn Array) -> Option<ArrayRef> {
    Some(match array.data_type() {
        DataType::LargeList(_) => array.as_list::<i64>().values().clone(),
        DataType::List(_) => array.as_list::<i32>().values().clone(),
        DataType::Map(_, _) => std::sync::Arc::new(array.as_map().entries().clone()),
        _ => return None,
    })
}

/// The bytes of a string or binary array (the whole buffer; offsets index into it).
fn byte_values(array: &dyn Array) -> Option<&[u8]> {
    Some(match array.data_type() {
        DataType::LargeUtf8 => array.as_string::<i64>().values().as_slice(),
        DataType::Utf8 => array.as_string::<i32>().values().as_slice(),
        DataType::LargeBinary => array.as_binary::<i64>().values().as_slice(),
        DataType::Binary => array.as_binary::<i32>().values().as_slice(),
        _ => return None,
    })
}

/// Appends the index column values of a collection with these per-entry item counts.
/// Appends the index column of items spanning `offsets` (start, end per entry) and
/// returns the span of items they cover.
fn append_items(
    sink: &mut dyn ColumnSink,
    index_column: u32,
    counter_field: u32,
    offsets: &[(usize, usize)],
) -> Result<(usize, usize)> {
    let counts = offsets.iter().map(|&(a, b)| (b - a) as u64);
    append_index(sink, index_column, counter_field, counts)?;
    Ok(item_span(offsets))
}

fn append_index(
    sink: &mut dyn ColumnSink,
    index_column: u32,
    counter_field: u32,
    counts: impl Iterator<Item = u64>,
) -> Result<u64> {
    let mut ends = Vec::with_capacity(counts.size_hint().0);
    let mut added = 0u64;
    for n in counts {
        let before = sink.advance_items(counter_field, n);
        ends.push(before + n);
        added += n;
    }
    sink.append(index_column, ColumnValues::Index(ends))?;
    Ok(added)
}

/// Writes `array` (one item per element) into the columns of field `id` with its
/// `columns` (the field's written representation).
pub(crate) fn shred(
    desc: &Descriptor,
    columns_of: &dyn Fn(u32) -> Vec<u32>,
    sink: &mut dyn ColumnSink,
    id: u32,
    array: &dyn Array,
) -> Result<()> {
    let cols = columns_of(id);
    let col = |i: usize| -> Result<u32> {
        cols.get(i).copied().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "field \"{}\" lacks column {i}",
                desc.qualified_name(id)
            ))
        })
    };
    let column_type = |c: u32| -> Result<ColumnType> {
        let code = desc.column(c).record.column_type;
        ColumnType::from_u16(code)
            .ok_or_else(|| Error::Unsupported(format!("column type {code:#x}")))
    };
    let kind = desc.field_kind(id);
    // Only optional fields hold missing values (a variant's nulls are its invalid state,
    // in the alternatives' arrays); a null anywhere else would be written as whatever
    // the array's buffer holds there.
    if array.null_count() > 0
        && !matches!(
            kind,
            FieldKind::Optional(_) | FieldKind::Variant(_) | FieldKind::Cardinality(_)
        )
    {
        return Err(Error::InvalidArgument(format!(
            "field \"{}\" of type {} holds {} missing (null) values, but only optional fields \
             (std::optional<T>) can store them",
            desc.qualified_name(id),
            desc.field(id).type_name(),
            array.null_count()
        )));
    }
    match kind {
        FieldKind::Primitive(_) => {
            let c = col(0)?;
            let values = leaf_values(column_type(c)?, array)
                .ok_or_else(|| unsupported(desc, id, array))??;
            sink.append(c, values)
        }
        FieldKind::String | FieldKind::Streamer => {
            let offsets = offsets_of(array).ok_or_else(|| unsupported(desc, id, array))?;
            let bytes = byte_values(array).ok_or_else(|| unsupported(desc, id, array))?;
            let (first, last) = append_items(sink, col(0)?, id, &offsets)?;
            sink.append(col(1)?, ColumnValues::U8(bytes[first..last].to_vec()))
        }
        FieldKind::List(child) | FieldKind::Map(child) => {
            let offsets = offsets_of(array).ok_or_else(|| unsupported(desc, id, array))?;
            let values = list_values(array).ok_or_else(|| unsupported(desc, id, array))?;
            let (first, last) = append_items(sink, col(0)?, id, &offsets)?;
            let items = values.slice(first, last - first);
            shred(desc, columns_of, sink, child, items.as_ref())
        }
        FieldKind::Optional(child) => {
            let valid: Vec<bool> = match array.logical_nulls() {
                Some(nulls) => nulls.iter().collect(),
                None => vec![true; array.len()],
            };
            append_index(sink, col(0)?, id, valid.iter().map(|&v| v as u64))?;
            let present = BooleanArray::from(valid);
            let items = arrow_select::filter::filter(array, &present)?;
            shred(desc, columns_of, sink, child, items.as_ref())
        }
        FieldKind::Record(_, children) => {
            let DataType::Struct(_) = array.data_type() else {
                return Err(unsupported(desc, id, array));
            };
            let s = array.as_struct();
            if s.num_columns() != children.len() {
                return Err(unsupported(desc, id, array));
            }
            for (k, &c) in children.iter().enumerate() {
                shred(desc, columns_of, sink, c, s.column(k).as_ref())?;
            }
            Ok(())
        }
        FieldKind::Array(child, n) => {
            let DataType::FixedSizeList(_, size) = array.data_type() else {
                return Err(unsupported(desc, id, array));
            };
            if *size as u64 != n {
                return Err(unsupported(desc, id, array));
            }
            let list = array.as_fixed_size_list();
            let n = to_usize(n, "items of a fixed-size array")?;
            let items = list.values().slice(list.offset() * n, list.len() * n);
            shred(desc, columns_of, sink, child, items.as_ref())
        }
        FieldKind::Bitset(n) => {
            let DataType::FixedSizeList(_, size) = array.data_type() else {
                return Err(unsupported(desc, id, array));
            };
            if *size as u64 != n {
                return Err(unsupported(desc, id, array));
            }
            let list = array.as_fixed_size_list();
            let n = to_usize(n, "bits of a bitset")?;
            let bits = list.values().slice(list.offset() * n, list.len() * n);
            let values = leaf_values(ColumnType::Bit, bits.as_ref())
                .ok_or_else(|| unsupported(desc, id, array))??;
            sink.append(col(0)?, values)
        }
        FieldKind::Variant(children) => {
            shred_variant(desc, columns_of, sink, id, col(0)?, &children, array)
        }
        FieldKind::Wrapper(child) => shred(desc, columns_of, sink, child, array),
        FieldKind::Cardinality(_) => Ok(()),
        FieldKind::Unknown(why) => Err(Error::Unsupported(why)),
    }
}

fn shred_variant(
    desc: &Descriptor,
    columns_of: &dyn Fn(u32) -> Vec<u32>,
    sink: &mut dyn ColumnSink,
    id: u32,
    switch_column: u32,
    children: &[u32],
    array: &dyn Array,
) -> Result<()> {
    let DataType::Union(fields, _) = array.data_type() else {
        return Err(unsupported(desc, id, array));
    };
    let union = array.as_union();
    let ids: Vec<i8> = fields.iter().map(|(t, _)| t).collect();
    if ids.len() != children.len() {
        return Err(unsupported(desc, id, array));
    }
    let mut picks: Vec<Vec<u64>> = vec![Vec::new(); children.len()];
    let mut index = Vec::with_capacity(array.len());
    let mut tag = Vec::with_capacity(array.len());
    for row in 0..array.len() {
        let type_id = union.type_id(row);
        let k = ids
            .iter()
            .position(|&t| t == type_id)
            .ok_or_else(|| unsupported(desc, id, array))?;
        let offset = union.value_offset(row);
        let child = union.child(type_id);
        if child.is_null(offset) {
            // The invalid state: no alternative.
            index.push(0);
            tag.push(0);
            continue;
        }
        index.push(picks[k].len() as u64);
        // `k` indexes the alternatives: at most 125 (MAX_VARIANT_ALTERNATIVES).
        #[allow(clippy::cast_possible_truncation)]
        tag.push(k as u32 + 1);
        picks[k].push(offset as u64);
    }
    // Switch indices are cluster-local positions in each alternative's column.
    let mut base = vec![0u64; children.len()];
    for (k, &c) in children.iter().enumerate() {
        base[k] = sink.advance_alternative(c, picks[k].len() as u64);
    }
    for (i, t) in index.iter_mut().zip(&tag) {
        if *t > 0 {
            *i += base[*t as usize - 1];
        }
    }
    sink.append(switch_column, ColumnValues::Switch { index, tag })?;
    for (k, &c) in children.iter().enumerate() {
        if picks[k].is_empty() {
            continue;
        }
        let taken = arrow_select::take::take(
            union.child(ids[k]).as_ref(),
            &UInt64Array::from(std::mem::take(&mut picks[k])),
            None,
        )?;
        shred(desc, columns_of, sink, c, taken.as_ref())?;
    }
    Ok(())
}
