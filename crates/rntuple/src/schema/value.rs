//! One field's value in one entry, for reading and writing entry by entry, and its
//! conversion to and from the Arrow arrays the reader and writer work with.

use crate::arrow_map::dense_union;
use crate::encoding::f64_to_f32;
use crate::error::{Error, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, UnionFields, UnionMode};
use std::sync::Arc;

/// A value of one field in one entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An empty `std::optional`/`std::unique_ptr`, or a variant holding no alternative.
    Null,
    /// `bool`.
    Bool(bool),
    /// A signed integer (any width; checked against the field's type when written).
    Int(i64),
    /// An unsigned integer (any width; checked when written).
    UInt(u64),
    /// `float` or `double`.
    Float(f64),
    /// `std::string`.
    String(String),
    /// The raw bytes of a streamer field.
    Bytes(Vec<u8>),
    /// A sequence: vector, RVec, the set family, `std::array`, and the bits of a
    /// `std::bitset` (bit 0 first).
    List(Vec<Value>),
    /// A record's members in field order: class members (bases first), pair, tuple.
    Record(Vec<Value>),
    /// A map's (key, value) pairs.
    Map(Vec<(Value, Value)>),
    /// A variant: the index of the active alternative (from 0) and its value.
    Variant(usize, Box<Value>),
}

fn wrong(field: &Field, v: &Value) -> Error {
    Error::InvalidArgument(format!(
        "value {v:?} does not fit field \"{}\" ({})",
        field.name(),
        field.data_type()
    ))
}

fn int_of(field: &Field, v: &Value) -> Result<i128> {
    match v {
        Value::Int(i) => Ok(*i as i128),
        Value::UInt(u) => Ok(*u as i128),
        Value::Bool(b) => Ok(*b as i128),
        _ => Err(wrong(field, v)),
    }
}

fn ints<T: ArrowPrimitiveType>(field: &Field, values: &[&Value]) -> Result<ArrayRef>
where
    T::Native: TryFrom<i128>,
{
    let out = values
        .iter()
        .map(|v| {
            let i = int_of(field, v)?;
            T::Native::try_from(i).map_err(|_| wrong(field, v))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(PrimitiveArray::<T>::new(out.into(), None)))
}

fn float_of(field: &Field, v: &Value) -> Result<f64> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::UInt(u) => Ok(*u as f64),
        _ => Err(wrong(field, v)),
    }
}

/// Flattens the items of sequence values, with the Arrow offsets of each entry.
fn flatten<'a>(field: &Field, values: &[&'a Value]) -> Result<(Vec<&'a Value>, Vec<i64>)> {
    let mut items = Vec::new();
    let mut offsets = vec![0i64];
    for v in values {
        match v {
            Value::List(xs) => items.extend(xs.iter()),
            _ => return Err(wrong(field, v)),
        }
        offsets.push(items.len() as i64);
    }
    Ok((items, offsets))
}

/// The Arrow array of `values` for an Arrow field of the reader's mapping.
pub fn values_to_array(field: &Field, values: &[&Value]) -> Result<ArrayRef> {
    // Nulls of optionals: build the present values, then spread them with nulls.
    let is_union = matches!(field.data_type(), DataType::Union(..));
    if field.is_nullable() && !is_union && values.iter().any(|v| matches!(v, Value::Null)) {
        return with_nulls(field, values);
    }
    Ok(match field.data_type() {
        DataType::Boolean => Arc::new(BooleanArray::from(
            values
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Ok(*b),
                    other => Ok(int_of(field, other)? != 0),
                })
                .collect::<Result<Vec<bool>>>()?,
        )),
        DataType::Int8 => ints::<Int8Type>(field, values)?,
        DataType::Int16 => ints::<Int16Type>(field, values)?,
        DataType::Int32 => ints::<Int32Type>(field, values)?,
        DataType::Int64 => ints::<Int64Type>(field, values)?,
        DataType::UInt8 => ints::<UInt8Type>(field, values)?,
        DataType::UInt16 => ints::<UInt16Type>(field, values)?,
        DataType::UInt32 => ints::<UInt32Type>(field, values)?,
        DataType::UInt64 => ints::<UInt64Type>(field, values)?,
        DataType::Float32 => Arc::new(Float32Array::from(
            values
                .iter()
                .map(|v| float_of(field, v).map(f64_to_f32))
                .collect::<Result<Vec<_>>>()?,
        )),
        DataType::Float64 => Arc::new(Float64Array::from(
            values
                .iter()
                .map(|v| float_of(field, v))
                .collect::<Result<Vec<_>>>()?,
        )),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(
            values
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.as_str()),
                    other => Err(wrong(field, other)),
                })
                .collect::<Result<Vec<_>>>()?,
        )),
        DataType::LargeBinary => Arc::new(LargeBinaryArray::from(
            values
                .iter()
                .map(|v| match v {
                    Value::Bytes(b) => Ok(b.as_slice()),
                    other => Err(wrong(field, other)),
                })
                .collect::<Result<Vec<_>>>()?,
        )),
        DataType::LargeList(item) => {
            let (items, offsets) = flatten(field, values)?;
            let child = values_to_array(item, &items)?;
            Arc::new(LargeListArray::try_new(
                item.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                child,
                None,
            )?)
        }
        DataType::FixedSizeList(item, n) => {
            let (items, offsets) = flatten(field, values)?;
            if offsets.windows(2).any(|w| w[1] - w[0] != *n as i64) {
                return Err(Error::InvalidArgument(format!(
                    "field \"{}\" takes exactly {n} items per entry",
                    field.name()
                )));
            }
            let child = values_to_array(item, &items)?;
            Arc::new(FixedSizeListArray::try_new(item.clone(), *n, child, None)?)
        }
        DataType::Struct(fields) => records_array(field, fields, values)?,
        DataType::Map(entries, sorted) => maps_array(field, entries, *sorted, values)?,
        DataType::Union(fields, UnionMode::Dense) => variants_array(field, fields, values)?,
        other => {
            return Err(Error::Unsupported(format!(
                "Arrow type {other} in the row API"
            )))
        }
    })
}

/// The array of a nullable field's `values`, some null: the present values' array, with
/// the nulls spread in.
fn with_nulls(field: &Field, values: &[&Value]) -> Result<ArrayRef> {
    let present: Vec<&Value> = values
        .iter()
        .copied()
        .filter(|v| !matches!(v, Value::Null))
        .collect();
    let inner = values_to_array(&field.clone().with_nullable(false), &present)?;
    let mut next = 0u64;
    let indices: UInt64Array = values
        .iter()
        .map(|v| {
            (!matches!(v, Value::Null)).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect();
    Ok(arrow_select::take::take(inner.as_ref(), &indices, None)?)
}

/// The struct array of records `values` (of field `field`, members `fields`).
fn records_array(field: &Field, fields: &Fields, values: &[&Value]) -> Result<ArrayRef> {
    let mut columns = Vec::with_capacity(fields.len());
    for (k, f) in fields.iter().enumerate() {
        let members = values
            .iter()
            .map(|v| match v {
                Value::Record(m) if m.len() == fields.len() => Ok(&m[k]),
                other => Err(wrong(field, other)),
            })
            .collect::<Result<Vec<_>>>()?;
        columns.push(values_to_array(f, &members)?);
    }
    Ok(if fields.is_empty() {
        Arc::new(StructArray::new_empty_fields(values.len(), None))
    } else {
        Arc::new(StructArray::try_new(fields.clone(), columns, None)?)
    })
}

/// The map array of maps `values` (of field `field`, entries `entries`).
fn maps_array(
    field: &Field,
    entries: &FieldRef,
    sorted: bool,
    values: &[&Value],
) -> Result<ArrayRef> {
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(wrong(field, &Value::Null));
    };
    let mut keys = Vec::new();
    let mut vals = Vec::new();
    let mut offsets = vec![0i32];
    for v in values {
        match v {
            Value::Map(pairs) => {
                for (k, x) in pairs {
                    keys.push(k);
                    vals.push(x);
                }
            }
            other => return Err(wrong(field, other)),
        }
        offsets.push(i32::try_from(keys.len()).map_err(|_| wrong(field, v))?);
    }
    let columns = vec![
        values_to_array(&kv[0], &keys)?,
        values_to_array(&kv[1], &vals)?,
    ];
    let entries_array = StructArray::try_new(kv.clone(), columns, None)?;
    Ok(Arc::new(MapArray::try_new(
        entries.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        entries_array,
        None,
        sorted,
    )?))
}

/// The dense union array of variants `values` (of field `field`, alternatives `fields`).
fn variants_array(field: &Field, fields: &UnionFields, values: &[&Value]) -> Result<ArrayRef> {
    let alternatives: Vec<(i8, Arc<Field>)> =
        fields.iter().map(|(id, f)| (id, f.clone())).collect();
    let mut per_alt: Vec<Vec<&Value>> = vec![Vec::new(); alternatives.len()];
    let mut type_ids = Vec::with_capacity(values.len());
    let mut offsets = Vec::with_capacity(values.len());
    for v in values {
        let (k, inner) = match v {
            // No alternative: a null in the first one.
            Value::Null => (0, &Value::Null),
            Value::Variant(k, inner) if *k < alternatives.len() => (*k, inner.as_ref()),
            other => return Err(wrong(field, other)),
        };
        type_ids.push(alternatives[k].0);
        offsets.push(i32::try_from(per_alt[k].len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "field \"{}\": more than 2^31 - 1 values of variant alternative {k}",
                field.name()
            ))
        })?);
        per_alt[k].push(inner);
    }
    let children = alternatives
        .iter()
        .zip(&per_alt)
        .map(|((_, f), vs)| values_to_array(f, vs))
        .collect::<Result<Vec<_>>>()?;
    dense_union(fields.clone(), type_ids, offsets, children)
}

/// The value at `row` of `array` (an array of the reader's mapping).
pub fn array_value(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    let list = |values: ArrayRef| {
        Value::List(
            (0..values.len())
                .map(|i| array_value(values.as_ref(), i))
                .collect(),
        )
    };
    match array.data_type() {
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        DataType::Int8 => Value::Int(array.as_primitive::<Int8Type>().value(row) as i64),
        DataType::Int16 => Value::Int(array.as_primitive::<Int16Type>().value(row) as i64),
        DataType::Int32 => Value::Int(array.as_primitive::<Int32Type>().value(row) as i64),
        DataType::Int64 => Value::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::UInt(array.as_primitive::<UInt8Type>().value(row) as u64),
        DataType::UInt16 => Value::UInt(array.as_primitive::<UInt16Type>().value(row) as u64),
        DataType::UInt32 => Value::UInt(array.as_primitive::<UInt32Type>().value(row) as u64),
        DataType::UInt64 => Value::UInt(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float32 => Value::Float(array.as_primitive::<Float32Type>().value(row) as f64),
        DataType::Float64 => Value::Float(array.as_primitive::<Float64Type>().value(row)),
        DataType::LargeUtf8 => Value::String(array.as_string::<i64>().value(row).to_string()),
        DataType::LargeBinary => Value::Bytes(array.as_binary::<i64>().value(row).to_vec()),
        DataType::LargeList(_) => list(array.as_list::<i64>().value(row)),
        DataType::FixedSizeList(_, _) => list(array.as_fixed_size_list().value(row)),
        DataType::Struct(_) => Value::Record(
            array
                .as_struct()
                .columns()
                .iter()
                .map(|c| array_value(c.as_ref(), row))
                .collect(),
        ),
        DataType::Map(_, _) => {
            let e = array.as_map().value(row);
            Value::Map(
                (0..e.len())
                    .map(|i| {
                        (
                            array_value(e.column(0).as_ref(), i),
                            array_value(e.column(1).as_ref(), i),
                        )
                    })
                    .collect(),
            )
        }
        DataType::Union(fields, _) => {
            let u = array.as_union();
            let t = u.type_id(row);
            let offset = u.value_offset(row);
            match fields.iter().position(|(id, _)| id == t) {
                Some(k) => {
                    let child = u.child(t);
                    if child.is_null(offset) {
                        return Value::Null;
                    }
                    Value::Variant(k, Box::new(array_value(child.as_ref(), offset)))
                }
                None => Value::Null,
            }
        }
        _ => Value::Null,
    }
}
