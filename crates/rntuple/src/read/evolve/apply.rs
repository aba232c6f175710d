//! Applying a plan: the arrays decoded as on disk converted to the types asked for, each
//! value that may not fit checked (or masked).

use super::numbers::int_range;
use super::plan::{Conversion, Member, Node};
use super::{DefaultValue, OnOverflow};
use crate::encoding::f64_to_f32;
use crate::error::{Error, Result};
use crate::schema::{primitive_of_data_type, PrimitiveType, TYPE_NAME_KEY};
use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, FixedSizeListArray, LargeListArray, MapArray,
    PrimitiveArray, StructArray, UInt64Array, UnionArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use std::sync::Arc;

/// Where a value is: the field, the first entry of the batch, and the lists above it, to
/// turn the index of a bad value into its entry.
#[derive(Clone)]
struct Place<'a> {
    path: &'a str,
    first_entry: u64,
    levels: Vec<Level>,
    mask: bool,
}

#[derive(Clone)]
enum Level {
    Offsets(Vec<i64>),
    Fixed(usize),
    /// The parent of each item (a variant's alternative: its values' rows).
    Parents(Vec<usize>),
}

impl Place<'_> {
    fn entry_of(&self, mut index: usize) -> u64 {
        for level in self.levels.iter().rev() {
            index = match level {
                // The list whose range holds the item: the last start at or before it.
                Level::Offsets(o) => o.partition_point(|&x| x <= index as i64).saturating_sub(1),
                Level::Fixed(n) => index / (*n).max(1),
                Level::Parents(p) => p.get(index).copied().unwrap_or(index),
            };
        }
        self.first_entry + index as u64
    }

    fn below(&self, level: Level) -> Place<'_> {
        let mut levels = self.levels.clone();
        levels.push(level);
        Place {
            path: self.path,
            first_entry: self.first_entry,
            levels,
            mask: self.mask,
        }
    }

    fn inexact(&self, index: usize, value: String, read_as: f64, target: &str) -> Error {
        Error::Inexact {
            field: self.path.to_string(),
            entry: self.entry_of(index),
            value,
            target: target.to_string(),
            read_as: format!("{read_as:?}"),
        }
    }

    fn out_of_range(&self, index: usize, value: String, target: &str) -> Error {
        Error::OutOfRange {
            field: self.path.to_string(),
            entry: self.entry_of(index),
            value,
            target: target.to_string(),
        }
    }
}

impl Conversion {
    /// The column `array` (decoded as on disk, its first row entry `first_entry`) as
    /// the type asked for.
    pub(crate) fn apply(&self, array: &ArrayRef, first_entry: u64) -> Result<ArrayRef> {
        let place = Place {
            path: &self.path,
            first_entry,
            levels: Vec::new(),
            mask: self.on_overflow == OnOverflow::Mask,
        };
        apply(&self.node, array, &self.field, &place)
    }
}

fn offsets_vec(o: &OffsetBuffer<i64>) -> Vec<i64> {
    o.iter().copied().collect()
}

/// What a step of [`apply`] converts: the array, the field it becomes, and where its
/// values are.
#[derive(Clone, Copy)]
struct At<'a> {
    array: &'a ArrayRef,
    out: &'a Field,
    place: &'a Place<'a>,
}

/// The error of an array that does not have the type its plan expects.
fn mismatch(array: &ArrayRef, place: &Place<'_>) -> Error {
    Error::corrupt(
        "schema evolution",
        format!(
            "field \"{}\": decoded array of type {} does not match the plan",
            place.path,
            array.data_type()
        ),
    )
}

/// `array` converted by `node` into an array of field `out`.
fn apply(node: &Node, array: &ArrayRef, out: &Field, place: &Place<'_>) -> Result<ArrayRef> {
    let at = At { array, out, place };
    Ok(match node {
        Node::Same => array.clone(),
        Node::Number(to) => convert_number(array, *to, out, place)?,
        Node::Nullable(inner) => apply(inner, array, out, place)?,
        Node::List(item, sort) => apply_list(item, *sort, at)?,
        Node::OptionalToList(item) => optional_to_list(item, at)?,
        Node::ArrayToList(item) => array_to_list(item, at)?,
        Node::Array(item) => apply_array(item, at)?,
        Node::MapToList(k, v) => map_to_list(k, v, at)?,
        Node::ListToMap(k, v, sort) => list_to_map(k, v, *sort, at)?,
        Node::Map(k, v) => apply_map(k, v, at)?,
        Node::Record(members) => apply_record(members, at)?,
        Node::Union(alts) => apply_union(alts, at)?,
    })
}

/// A list's items converted (and sorted per list when asked).
fn apply_list(item: &Node, sort: bool, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let list = array.as_list_opt::<i64>().ok_or_else(mismatch)?;
    let DataType::LargeList(item_field) = out.data_type() else {
        return Err(mismatch());
    };
    let below = place.below(Level::Offsets(offsets_vec(list.offsets())));
    let mut values = apply(item, list.values(), item_field, &below)?;
    if sort {
        values = sort_within(list.offsets(), &values, None)?;
    }
    Ok(Arc::new(LargeListArray::try_new(
        item_field.clone(),
        list.offsets().clone(),
        values,
        list.nulls().cloned(),
    )?))
}

/// A nullable value as a list of zero or one item.
fn optional_to_list(item: &Node, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let DataType::LargeList(item_field) = out.data_type() else {
        return Err(mismatch());
    };
    let n = array.len();
    let mut offsets = Vec::with_capacity(n + 1);
    let mut take = Vec::new();
    offsets.push(0i64);
    for i in 0..n {
        if array.is_valid(i) {
            take.push(i as u64);
        }
        offsets.push(take.len() as i64);
    }
    let present = arrow_select::take::take(array.as_ref(), &UInt64Array::from(take.clone()), None)?;
    let present = strip_nulls(&present)?;
    let below = place.below(Level::Offsets(offsets.clone()));
    let values = apply(item, &present, item_field, &below)?;
    Ok(Arc::new(LargeListArray::try_new(
        item_field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values,
        None,
    )?))
}

/// A fixed-size list as a list.
fn array_to_list(item: &Node, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let fixed = array.as_fixed_size_list_opt().ok_or_else(mismatch)?;
    let DataType::LargeList(item_field) = out.data_type() else {
        return Err(mismatch());
    };
    let size = fixed.value_length() as usize;
    let n = fixed.len();
    let values = fixed.values().slice(fixed.offset() * size, n * size);
    let below = place.below(Level::Fixed(size));
    let values = apply(item, &values, item_field, &below)?;
    let offsets: Vec<i64> = (0..=n).map(|i| (i * size) as i64).collect();
    Ok(Arc::new(LargeListArray::try_new(
        item_field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values,
        fixed.nulls().cloned(),
    )?))
}

/// A fixed-size list's items converted.
fn apply_array(item: &Node, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let fixed = array.as_fixed_size_list_opt().ok_or_else(mismatch)?;
    let DataType::FixedSizeList(item_field, size) = out.data_type() else {
        return Err(mismatch());
    };
    let n = fixed.len();
    let s = *size as usize;
    let values = fixed.values().slice(fixed.offset() * s, n * s);
    let values = apply(item, &values, item_field, &place.below(Level::Fixed(s)))?;
    Ok(Arc::new(FixedSizeListArray::try_new(
        item_field.clone(),
        *size,
        values,
        fixed.nulls().cloned(),
    )?))
}

/// A map as a list of pairs.
fn map_to_list(k: &Node, v: &Node, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let map = array.as_map_opt().ok_or_else(mismatch)?;
    let DataType::LargeList(pair_field) = out.data_type() else {
        return Err(mismatch());
    };
    let DataType::Struct(parts) = pair_field.data_type() else {
        return Err(mismatch());
    };
    let offsets: Vec<i64> = map.offsets().iter().map(|&o| i64::from(o)).collect();
    let below = place.below(Level::Offsets(offsets.clone()));
    let entries = map.entries();
    let keys = apply(k, entries.column(0), &parts[0], &below)?;
    let values = apply(v, entries.column(1), &parts[1], &below)?;
    let pairs = StructArray::try_new(parts.clone(), vec![keys, values], None)?;
    Ok(Arc::new(LargeListArray::try_new(
        pair_field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(pairs),
        map.nulls().cloned(),
    )?))
}

/// A list of pairs as a map (sorted by key when asked).
fn list_to_map(k: &Node, v: &Node, sort: bool, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let list = array.as_list_opt::<i64>().ok_or_else(mismatch)?;
    let DataType::Map(entries_field, sorted) = out.data_type() else {
        return Err(mismatch());
    };
    let DataType::Struct(parts) = entries_field.data_type() else {
        return Err(mismatch());
    };
    let pairs = list.values().as_struct_opt().ok_or_else(mismatch)?;
    let below = place.below(Level::Offsets(offsets_vec(list.offsets())));
    let keys = apply(k, pairs.column(0), &parts[0], &below)?;
    let values = apply(v, pairs.column(1), &parts[1], &below)?;
    let mut entries: ArrayRef = Arc::new(StructArray::try_new(
        parts.clone(),
        vec![keys.clone(), values],
        None,
    )?);
    if sort {
        entries = sort_within(list.offsets(), &entries, Some(&keys))?;
    }
    let offsets = list
        .offsets()
        .iter()
        .map(|&o| i32::try_from(o))
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| {
            Error::Unsupported(format!(
                "field \"{}\": a map of more than 2^31 items in one batch",
                place.path
            ))
        })?;
    Ok(Arc::new(MapArray::try_new(
        entries_field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        entries.as_struct().clone(),
        list.nulls().cloned(),
        *sorted,
    )?))
}

/// A map's keys and values converted.
fn apply_map(k: &Node, v: &Node, at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let map = array.as_map_opt().ok_or_else(mismatch)?;
    let DataType::Map(entries_field, sorted) = out.data_type() else {
        return Err(mismatch());
    };
    let DataType::Struct(parts) = entries_field.data_type() else {
        return Err(mismatch());
    };
    let offsets: Vec<i64> = map.offsets().iter().map(|&o| i64::from(o)).collect();
    let below = place.below(Level::Offsets(offsets));
    let entries = map.entries();
    let keys = apply(k, entries.column(0), &parts[0], &below)?;
    let values = apply(v, entries.column(1), &parts[1], &below)?;
    let entries = StructArray::try_new(parts.clone(), vec![keys, values], None)?;
    Ok(Arc::new(MapArray::try_new(
        entries_field.clone(),
        map.offsets().clone(),
        entries,
        map.nulls().cloned(),
        *sorted,
    )?))
}

/// Record members: each taken from a member on disk or added.
fn apply_record(members: &[Member], at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let record = array.as_struct_opt().ok_or_else(mismatch)?;
    let DataType::Struct(fields) = out.data_type() else {
        return Err(mismatch());
    };
    let n = record.len();
    let mut columns = Vec::with_capacity(members.len());
    for (m, f) in members.iter().zip(fields.iter()) {
        columns.push(match m {
            Member::Disk(i, node) => {
                let mut member_place = place.clone();
                let path = format!("{}.{}", place.path, f.name());
                member_place.path = &path;
                apply(node, record.column(*i), f, &member_place)?
            }
            Member::Added(None) => new_null_array(f.data_type(), n),
            Member::Added(Some(v)) => filled(v, f.data_type(), n)?,
        });
    }
    Ok(Arc::new(StructArray::try_new_with_length(
        fields.clone(),
        columns,
        record.nulls().cloned(),
        n,
    )?))
}

/// A variant's alternatives converted.
fn apply_union(alts: &[Node], at: At<'_>) -> Result<ArrayRef> {
    let At { array, out, place } = at;
    let mismatch = || mismatch(array, place);
    let union = array
        .as_any()
        .downcast_ref::<UnionArray>()
        .ok_or_else(mismatch)?;
    let DataType::Union(fields, _) = out.data_type() else {
        return Err(mismatch());
    };
    let mut children = Vec::new();
    for ((type_id, f), node) in fields.iter().zip(alts) {
        // The row of each value of this alternative, for messages.
        let mut parents = vec![0usize; union.child(type_id).len()];
        if let Some(offsets) = union.offsets() {
            for (row, (&t, &o)) in union.type_ids().iter().zip(offsets.iter()).enumerate() {
                if let Some(slot) = usize::try_from(o).ok().and_then(|o| parents.get_mut(o)) {
                    if t == type_id {
                        *slot = row;
                    }
                }
            }
        }
        let below = place.below(Level::Parents(parents));
        children.push(apply(node, union.child(type_id), f, &below)?);
    }
    let offsets = union.offsets().cloned();
    Ok(Arc::new(UnionArray::try_new(
        fields.clone(),
        union.type_ids().clone(),
        offsets,
        children,
    )?))
}

/// `array` without a validity bitmap (its values at nulls kept as they are).
fn strip_nulls(array: &ArrayRef) -> Result<ArrayRef> {
    if array.null_count() == 0 {
        return Ok(array.clone());
    }
    let data = array.to_data().into_builder().nulls(None).build()?;
    Ok(arrow_array::make_array(data))
}

/// An array of `n` copies of `v`.
fn filled(v: &DefaultValue, dt: &DataType, n: usize) -> Result<ArrayRef> {
    let bad = || Error::InvalidArgument(format!("default {v:?} is not a {dt}"));
    Ok(match (v, dt) {
        (DefaultValue::Bool(b), DataType::Boolean) => Arc::new(BooleanArray::from(vec![*b; n])),
        (DefaultValue::Int(i), dt) if dt.is_integer() => {
            let to = primitive_of_data_type(dt).ok_or_else(bad)?;
            ints_to(&vec![*i; n], to, None)?
        }
        (DefaultValue::Int(i), DataType::Float32) => {
            Arc::new(PrimitiveArray::<Float32Type>::from(vec![*i as f32; n]))
        }
        (DefaultValue::Int(i), DataType::Float64) => {
            Arc::new(PrimitiveArray::<Float64Type>::from(vec![*i as f64; n]))
        }
        (DefaultValue::Float(x), DataType::Float32) => {
            Arc::new(PrimitiveArray::<Float32Type>::from(vec![f64_to_f32(*x); n]))
        }
        (DefaultValue::Float(x), DataType::Float64) => {
            Arc::new(PrimitiveArray::<Float64Type>::from(vec![*x; n]))
        }
        (DefaultValue::Text(s), DataType::LargeUtf8) => {
            Arc::new(arrow_array::LargeStringArray::from(vec![s.as_str(); n]))
        }
        _ => return Err(bad()),
    })
}

/// The values of an integer or bool array, widened.
fn int_values(array: &dyn Array) -> Option<Vec<i128>> {
    macro_rules! widen {
        ($t:ty) => {
            array
                .as_primitive_opt::<$t>()
                .map(|a| a.values().iter().map(|&v| v as i128).collect())
        };
    }
    match array.data_type() {
        DataType::Boolean => {
            let b = array.as_boolean_opt()?;
            Some((0..b.len()).map(|i| i128::from(b.value(i))).collect())
        }
        DataType::Int8 => widen!(Int8Type),
        DataType::UInt8 => widen!(UInt8Type),
        DataType::Int16 => widen!(Int16Type),
        DataType::UInt16 => widen!(UInt16Type),
        DataType::Int32 => widen!(Int32Type),
        DataType::UInt32 => widen!(UInt32Type),
        DataType::Int64 => widen!(Int64Type),
        DataType::UInt64 => widen!(UInt64Type),
        _ => None,
    }
}

fn real_values(array: &dyn Array) -> Option<Vec<f64>> {
    match array.data_type() {
        DataType::Float32 => array
            .as_primitive_opt::<Float32Type>()
            .map(|a| a.values().iter().map(|&v| f64::from(v)).collect()),
        DataType::Float64 => array
            .as_primitive_opt::<Float64Type>()
            .map(|a| a.values().to_vec()),
        _ => None,
    }
}

/// Integers as an array of `to`, with validity `nulls`.
fn ints_to(values: &[i128], to: PrimitiveType, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    use PrimitiveType::*;
    macro_rules! narrow {
        ($t:ty, $n:ty) => {
            // Every value was checked to fit (or is masked: its slot is null).
            Arc::new(PrimitiveArray::<$t>::new(
                values
                    .iter()
                    .map(|&v| <$n>::try_from(v).unwrap_or_default())
                    .collect::<Vec<$n>>()
                    .into(),
                nulls,
            )) as ArrayRef
        };
    }
    Ok(match to {
        Bool => Arc::new(BooleanArray::new(
            BooleanBuffer::collect_bool(values.len(), |i| values[i] != 0),
            nulls,
        )),
        Char | Int8 => narrow!(Int8Type, i8),
        UInt8 | Byte => narrow!(UInt8Type, u8),
        Int16 => narrow!(Int16Type, i16),
        UInt16 => narrow!(UInt16Type, u16),
        Int32 => narrow!(Int32Type, i32),
        UInt32 => narrow!(UInt32Type, u32),
        Int64 => narrow!(Int64Type, i64),
        UInt64 => narrow!(UInt64Type, u64),
        Float32 => Arc::new(PrimitiveArray::<Float32Type>::new(
            values
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<f32>>()
                .into(),
            nulls,
        )),
        Float64 => Arc::new(PrimitiveArray::<Float64Type>::new(
            values
                .iter()
                .map(|&v| v as f64)
                .collect::<Vec<f64>>()
                .into(),
            nulls,
        )),
    })
}

/// Integers as reals of type `to`, each checked to read back exactly (masked, or the
/// first that does not is an error naming it and what it would read as).
fn ints_to_real(
    array: &dyn Array,
    ints: &[i128],
    to: PrimitiveType,
    target: &str,
    place: &Place<'_>,
) -> Result<ArrayRef> {
    // What each value reads as, as the real type rounds it; exact when it reads back
    // (the cast back saturates: a rounded value past the integer range never equals it).
    #[allow(clippy::cast_possible_truncation)]
    let read_as = |v: i128| -> (f64, bool) {
        if to == PrimitiveType::Float32 {
            let r = v as f32;
            (f64::from(r), r as i128 == v)
        } else {
            let r = v as f64;
            (r, r as i128 == v)
        }
    };
    let bad: Vec<usize> = (0..ints.len())
        .filter(|&i| !array.is_null(i) && !read_as(ints[i]).1)
        .collect();
    if let (Some(&first), false) = (bad.first(), place.mask) {
        return Err(place.inexact(
            first,
            ints[first].to_string(),
            read_as(ints[first]).0,
            target,
        ));
    }
    let nulls = validity(array, &bad, |i| ints[i].to_string(), target, place)?;
    ints_to(ints, to, nulls)
}

/// A `double` as a `float`, if the float keeps its class (ROOT's check: no overflow to
/// infinity, no underflow to zero, no normal number made subnormal).
fn narrow_real(x: f64) -> Option<f32> {
    let f = f64_to_f32(x);
    let fine = x.is_nan()
        || x.is_infinite()
        || x == 0.0
        || (f.is_finite() && f != 0.0 && !(x.is_normal() && f.is_subnormal()));
    fine.then_some(f)
}

/// Masks the values `bad` says (or fails on the first), and returns the validity.
fn validity(
    array: &dyn Array,
    bad: &[usize],
    show: impl Fn(usize) -> String,
    target: &str,
    place: &Place<'_>,
) -> Result<Option<NullBuffer>> {
    if bad.is_empty() {
        return Ok(array.nulls().cloned());
    }
    if !place.mask {
        return Err(place.out_of_range(bad[0], show(bad[0]), target));
    }
    let mut valid = BooleanBufferBuilder::new(array.len());
    valid.append_n(array.len(), true);
    if let Some(n) = array.nulls() {
        for i in 0..array.len() {
            if n.is_null(i) {
                valid.set_bit(i, false);
            }
        }
    }
    for &i in bad {
        valid.set_bit(i, false);
    }
    Ok(Some(NullBuffer::new(valid.finish())))
}

fn convert_number(
    array: &ArrayRef,
    to: PrimitiveType,
    out: &Field,
    place: &Place<'_>,
) -> Result<ArrayRef> {
    let target = out
        .metadata()
        .get(TYPE_NAME_KEY)
        .cloned()
        .unwrap_or_else(|| out.data_type().to_string());
    let is_null = |i: usize| array.is_null(i);
    if let Some(ints) = int_values(array.as_ref()) {
        if matches!(to, PrimitiveType::Float32 | PrimitiveType::Float64) {
            return ints_to_real(array.as_ref(), &ints, to, &target, place);
        }
        if to == PrimitiveType::Bool {
            return ints_to(&ints, to, array.nulls().cloned());
        }
        let (lo, hi) = int_range(to);
        let bad: Vec<usize> = (0..ints.len())
            .filter(|&i| !is_null(i) && !(lo..=hi).contains(&ints[i]))
            .collect();
        let nulls = validity(
            array.as_ref(),
            &bad,
            |i| ints[i].to_string(),
            &target,
            place,
        )?;
        let clamped: Vec<i128> = if bad.is_empty() {
            ints
        } else {
            ints.iter().map(|&v| v.clamp(lo, hi)).collect()
        };
        return ints_to(&clamped, to, nulls);
    }
    if let Some(reals) = real_values(array.as_ref()) {
        return Ok(match to {
            PrimitiveType::Float64 => Arc::new(PrimitiveArray::<Float64Type>::new(
                reals.into(),
                array.nulls().cloned(),
            )),
            PrimitiveType::Float32 => {
                let narrowed: Vec<Option<f32>> = reals.iter().map(|&x| narrow_real(x)).collect();
                let bad: Vec<usize> = (0..reals.len())
                    .filter(|&i| !is_null(i) && narrowed[i].is_none())
                    .collect();
                let nulls = validity(
                    array.as_ref(),
                    &bad,
                    |i| format!("{:e}", reals[i]),
                    &target,
                    place,
                )?;
                Arc::new(PrimitiveArray::<Float32Type>::new(
                    narrowed
                        .iter()
                        .map(|v| v.unwrap_or(0.0))
                        .collect::<Vec<f32>>()
                        .into(),
                    nulls,
                ))
            }
            _ => {
                return Err(Error::corrupt(
                    "schema evolution",
                    format!(
                        "field \"{}\": a real number planned as an integer",
                        place.path
                    ),
                ))
            }
        });
    }
    Err(Error::corrupt(
        "schema evolution",
        format!(
            "field \"{}\": {} values cannot be converted to numbers",
            place.path,
            array.data_type()
        ),
    ))
}

/// The items of each list (`offsets` into `values`) sorted by `keys` (the values
/// themselves by default), stably: an ordered multiset or multimap.
fn sort_within(
    offsets: &OffsetBuffer<i64>,
    values: &ArrayRef,
    keys: Option<&ArrayRef>,
) -> Result<ArrayRef> {
    let keys = keys.unwrap_or(values);
    #[derive(PartialEq, PartialOrd)]
    enum Key<'a> {
        Int(i128),
        Real(f64),
        Text(&'a str),
    }
    let ints = int_values(keys.as_ref());
    let reals = real_values(keys.as_ref());
    let texts = keys.as_string_opt::<i64>();
    let key = |i: usize| -> Option<Key<'_>> {
        if let Some(v) = &ints {
            return Some(Key::Int(v[i]));
        }
        if let Some(v) = &reals {
            return Some(Key::Real(v[i]));
        }
        texts.map(|t| Key::Text(t.value(i)))
    };
    if keys.is_empty() || key(0).is_none() {
        // Items without an order here (records, lists): kept as they are.
        return Ok(values.clone());
    }
    let mut order: Vec<u64> = Vec::with_capacity(values.len());
    for w in offsets.windows(2) {
        let a = usize::try_from(w[0]).unwrap_or(0);
        let b = usize::try_from(w[1]).unwrap_or(a);
        let mut idx: Vec<usize> = (a..b).collect();
        idx.sort_by(|&x, &y| {
            key(x)
                .partial_cmp(&key(y))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        order.extend(idx.into_iter().map(|i| i as u64));
    }
    let first = offsets
        .first()
        .and_then(|&o| usize::try_from(o).ok())
        .unwrap_or(0);
    let sorted = arrow_select::take::take(values.as_ref(), &UInt64Array::from(order), None)?;
    // The items before the first list (a sliced array) are not referenced: rebase.
    if first == 0 {
        return Ok(sorted);
    }
    let mut padded = vec![values.slice(0, first)];
    padded.push(sorted);
    let refs: Vec<&dyn Array> = padded.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_keep_their_class_as_floats() {
        assert_eq!(narrow_real(0.1), Some(0.1f32));
        assert_eq!(narrow_real(-0.0).map(f32::is_sign_negative), Some(true));
        assert!(narrow_real(f64::NAN).is_some_and(f32::is_nan));
        assert_eq!(narrow_real(f64::INFINITY), Some(f32::INFINITY));
        assert_eq!(narrow_real(3.5e38), None, "overflow to infinity");
        assert_eq!(narrow_real(1e-40), None, "normal made subnormal");
        assert_eq!(narrow_real(1e-46), None, "underflow to zero");
        assert_eq!(narrow_real(f64::from(f32::MAX)), Some(f32::MAX));
    }

    #[test]
    fn an_entry_is_found_through_lists() {
        let place = Place {
            path: "v",
            first_entry: 100,
            levels: vec![Level::Offsets(vec![0, 2, 2, 5]), Level::Fixed(3)],
            mask: false,
        };
        // Item 7 of arrays of 3: array 2, in list 1..? offsets [0,2,2,5]: array 2 is in
        // list 2 (items 2..5), entry 102.
        assert_eq!(place.entry_of(7), 102);
        assert_eq!(place.entry_of(0), 100);
        assert_eq!(place.entry_of(5), 100);
    }

    #[test]
    fn a_variant_value_is_found_at_its_row() {
        let place = Place {
            path: "var",
            first_entry: 10,
            levels: vec![Level::Parents(vec![1, 4, 6])],
            mask: false,
        };
        assert_eq!(place.entry_of(2), 16);
        assert_eq!(place.entry_of(0), 11);
    }
}
