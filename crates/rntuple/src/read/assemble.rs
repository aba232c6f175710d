//! Assembling one field's Arrow array for an entry range of one cluster, recursively
//! through its subfields.

use super::convert::{to_boolean, to_f32, to_f64, to_ints, to_offsets};
use super::RNTupleReader;
use crate::encoding::ColumnValues;
use crate::error::{Error, Location, Result};
use crate::schema::arrow_field_kept;
use crate::schema::{ClusterDescriptor, FieldKind, PrimitiveType};
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use std::ops::Range;
use std::sync::Arc;

/// Where a field's elements live: `Some(k)` when the field has exactly `k` elements per
/// entry (top-level fields, record members, fixed-size array items), `None` inside
/// collections and variants.
type PerEntry = Option<u64>;

/// The record members to assemble (all when `None`): the fields on the paths of a
/// projection such as `Jet.pt`, and everything below the selected members.
pub(crate) type Keep<'a> = Option<&'a std::collections::HashSet<u32>>;

impl RNTupleReader {
    /// The Arrow array of field `id` for its elements `range` (local to `cluster`).
    pub(crate) fn assemble(
        &self,
        cluster: &ClusterDescriptor,
        id: u32,
        name: &str,
        range: Range<u64>,
        per_entry: PerEntry,
        keep: Keep<'_>,
    ) -> Result<ArrayRef> {
        self.assemble_inner(cluster, id, name, range, per_entry, keep)
            .map_err(|e| match e {
                Error::At { .. } => e,
                other => other.at(Location {
                    field: Some(self.descriptor().qualified_name(id)),
                    cluster: Some(cluster.id),
                    ..Default::default()
                }),
            })
    }

    /// The columns of field `id` used in `cluster`: the representation that is not
    /// suppressed there (the first one when the field has a single representation or
    /// none is listed, as for deferred columns).
    fn active_columns(&self, cluster: &ClusterDescriptor, id: u32) -> Vec<u32> {
        let reps = self.descriptor().representations(id);
        if reps.len() > 1 {
            for rep in &reps {
                if let Some(&first) = rep.first() {
                    if cluster.column(first).is_some_and(|cp| !cp.is_suppressed()) {
                        return rep.clone();
                    }
                }
            }
        }
        reps.into_iter().next().unwrap_or_default()
    }

    fn expect_columns(&self, id: u32, cols: &[u32], n: usize) -> Result<()> {
        if cols.len() != n {
            return Err(Error::corrupt(
                "schema",
                format!(
                    "field \"{}\" has {} columns per representation, expected {n}",
                    self.descriptor().qualified_name(id),
                    cols.len()
                ),
            ));
        }
        Ok(())
    }

    /// Reads a collection's offsets for entries `range`: the start of the first item and
    /// each entry's end, both local to the cluster, checked to never decrease.
    fn read_offsets(
        &self,
        cluster: &ClusterDescriptor,
        column: u32,
        range: Range<u64>,
        per_entry: PerEntry,
    ) -> Result<(u64, Vec<u64>)> {
        let total = scaled(per_entry, cluster.n_entries, "cluster entry count")?;
        let first = range.start.saturating_sub(1);
        let values = self.read_column(cluster, column, first..range.end, total)?;
        let mut all = to_offsets(&values)?;
        let start = if range.start == 0 { 0 } else { all.remove(0) };
        let mut prev = start;
        for &e in &all {
            if e < prev {
                return Err(Error::corrupt(
                    "collection offsets",
                    format!("offset {e} follows {prev} in column {column}"),
                ));
            }
            prev = e;
        }
        Ok((start, all))
    }

    fn assemble_inner(
        &self,
        cluster: &ClusterDescriptor,
        id: u32,
        name: &str,
        range: Range<u64>,
        per_entry: PerEntry,
        keep: Keep<'_>,
    ) -> Result<ArrayRef> {
        let desc = self.descriptor();
        let total = scaled(per_entry, cluster.n_entries, "cluster entry count")?;
        let len = (range.end - range.start) as usize;
        let cols = self.active_columns(cluster, id);
        Ok(match desc.field_kind(id) {
            FieldKind::Primitive(p) => {
                self.expect_columns(id, &cols, 1)?;
                let values = self.read_column(cluster, cols[0], range, total)?;
                primitive_array(p, &values)?
            }
            FieldKind::String => {
                self.expect_columns(id, &cols, 2)?;
                let (start, ends) = self.read_offsets(cluster, cols[0], range, per_entry)?;
                let end = ends.last().copied().unwrap_or(start);
                let chars = self.read_column(cluster, cols[1], start..end, None)?;
                let ColumnValues::U8(bytes) = chars else {
                    return Err(Error::corrupt(
                        "schema",
                        "string characters are not a Char column",
                    ));
                };
                let offsets = arrow_offsets(start, &ends);
                let array = LargeStringArray::try_new(offsets, bytes.into(), None)
                    .map_err(|e| Error::corrupt("string data", format!("not valid UTF-8: {e}")))?;
                Arc::new(array)
            }
            FieldKind::Streamer => {
                self.expect_columns(id, &cols, 2)?;
                let (start, ends) = self.read_offsets(cluster, cols[0], range, per_entry)?;
                let end = ends.last().copied().unwrap_or(start);
                let ColumnValues::U8(bytes) =
                    self.read_column(cluster, cols[1], start..end, None)?
                else {
                    return Err(Error::corrupt(
                        "schema",
                        "streamer bytes are not a Byte column",
                    ));
                };
                Arc::new(LargeBinaryArray::new(
                    arrow_offsets(start, &ends),
                    bytes.into(),
                    None,
                ))
            }
            FieldKind::List(child) => {
                self.expect_columns(id, &cols, 1)?;
                let (start, ends) = self.read_offsets(cluster, cols[0], range, per_entry)?;
                let end = ends.last().copied().unwrap_or(start);
                let child_name = desc.field(child).name().to_string();
                let values = self.assemble(cluster, child, &child_name, start..end, None, keep)?;
                let item = arrow_field_kept(desc, child, &child_name, keep)?;
                Arc::new(LargeListArray::try_new(
                    Arc::new(item),
                    arrow_offsets(start, &ends),
                    values,
                    None,
                )?)
            }
            FieldKind::Map(child) => {
                self.expect_columns(id, &cols, 1)?;
                let (start, ends) = self.read_offsets(cluster, cols[0], range, per_entry)?;
                let end = ends.last().copied().unwrap_or(start);
                let pair = self.assemble(cluster, child, "entries", start..end, None, keep)?;
                let DataType::Map(entries_field, _) =
                    arrow_field_kept(desc, id, name, keep)?.data_type().clone()
                else {
                    return Err(Error::corrupt("schema", "map type expected"));
                };
                let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
                    return Err(Error::corrupt("schema", "map entries must be a struct"));
                };
                let pair = pair
                    .as_any()
                    .downcast_ref::<StructArray>()
                    .ok_or_else(|| Error::corrupt("schema", "map item is not a record"))?;
                let entries = StructArray::try_new(entry_fields, pair.columns().to_vec(), None)?;
                let offsets: Vec<i32> = std::iter::once(0)
                    .chain(ends.iter().map(|&e| e - start))
                    .map(|o| {
                        i32::try_from(o).map_err(|_| {
                            Error::Unsupported(
                                "a map column with more than 2^31 items in one read".into(),
                            )
                        })
                    })
                    .collect::<Result<_>>()?;
                Arc::new(MapArray::try_new(
                    entries_field,
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    entries,
                    None,
                    false,
                )?)
            }
            FieldKind::Optional(child) => {
                self.expect_columns(id, &cols, 1)?;
                let (start, ends) = self.read_offsets(cluster, cols[0], range, per_entry)?;
                let end = ends.last().copied().unwrap_or(start);
                let values = self.assemble(cluster, child, name, start..end, None, keep)?;
                let mut prev = start;
                let mut indices: Vec<Option<u64>> = Vec::with_capacity(len);
                for &e in &ends {
                    indices.push(match e - prev {
                        0 => None,
                        1 => Some(prev - start),
                        n => {
                            return Err(Error::corrupt(
                                "optional",
                                format!("an optional value holds {n} elements"),
                            ))
                        }
                    });
                    prev = e;
                }
                take_optional(values, &indices)?
            }
            FieldKind::Record(_, children) => {
                let DataType::Struct(fields) =
                    arrow_field_kept(desc, id, name, keep)?.data_type().clone()
                else {
                    return Err(Error::corrupt("schema", "record type expected"));
                };
                if children.is_empty() {
                    Arc::new(StructArray::new_empty_fields(len, None))
                } else {
                    let arrays = children
                        .iter()
                        .filter(|c| keep.is_none_or(|k| k.contains(c)))
                        .map(|&c| {
                            let n = desc.field(c).name().to_string();
                            self.assemble(cluster, c, &n, range.clone(), per_entry, keep)
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Arc::new(StructArray::try_new(fields, arrays, None)?)
                }
            }
            FieldKind::Array(child, n) => {
                let child_name = desc.field(child).name().to_string();
                let items = mul(range.start, n, "array size")?..mul(range.end, n, "array size")?;
                let values = self.assemble(
                    cluster,
                    child,
                    &child_name,
                    items,
                    scaled(per_entry, n, "array size")?,
                    keep,
                )?;
                let item = arrow_field_kept(desc, child, &child_name, keep)?;
                Arc::new(FixedSizeListArray::try_new(
                    Arc::new(item),
                    fixed(n)?,
                    values,
                    None,
                )?)
            }
            FieldKind::Bitset(n) => {
                self.expect_columns(id, &cols, 1)?;
                let bits = mul(range.start, n, "bitset size")?..mul(range.end, n, "bitset size")?;
                let values =
                    self.read_column(cluster, cols[0], bits, scaled(total, n, "bitset size")?)?;
                let bits = to_boolean(&values)?;
                Arc::new(FixedSizeListArray::try_new(
                    Arc::new(Field::new("_0", DataType::Boolean, false)),
                    fixed(n)?,
                    Arc::new(bits),
                    None,
                )?)
            }
            FieldKind::Variant(children) => {
                self.expect_columns(id, &cols, 1)?;
                let values = self.read_column(cluster, cols[0], range, total)?;
                let ColumnValues::Switch { index, tag } = values else {
                    return Err(Error::corrupt(
                        "schema",
                        "variant column is not a Switch column",
                    ));
                };
                self.variant_array(cluster, id, name, &children, (&index, &tag), keep)?
            }
            FieldKind::Wrapper(child) => {
                self.assemble(cluster, child, name, range, per_entry, keep)?
            }
            FieldKind::Cardinality(wide) => {
                self.expect_columns(id, &cols, 1)?;
                let (start, ends) = self.read_offsets(cluster, cols[0], range, per_entry)?;
                let mut prev = start;
                let sizes: Vec<u64> = ends
                    .iter()
                    .map(|&e| {
                        let s = e - prev;
                        prev = e;
                        s
                    })
                    .collect();
                if wide {
                    Arc::new(UInt64Array::from(sizes))
                } else {
                    let narrow = sizes
                        .into_iter()
                        .map(|s| {
                            u32::try_from(s).map_err(|_| {
                                Error::corrupt("cardinality", format!("size {s} exceeds 32 bits"))
                            })
                        })
                        .collect::<Result<Vec<u32>>>()?;
                    Arc::new(UInt32Array::from(narrow))
                }
            }
            FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
        })
    }

    fn variant_array(
        &self,
        cluster: &ClusterDescriptor,
        id: u32,
        name: &str,
        children: &[u32],
        (index, tag): (&[u64], &[u32]),
        keep: Keep<'_>,
    ) -> Result<ArrayRef> {
        let desc = self.descriptor();
        let DataType::Union(union_fields, _) =
            arrow_field_kept(desc, id, name, keep)?.data_type().clone()
        else {
            return Err(Error::corrupt("schema", "variant type expected"));
        };
        let n_alt = children.len();
        // Each alternative's elements referenced by this range.
        let mut lo = vec![u64::MAX; n_alt];
        let mut hi = vec![0u64; n_alt];
        let mut invalid = 0usize;
        for (&t, &i) in tag.iter().zip(index) {
            if t == 0 {
                invalid += 1;
                continue;
            }
            let k = t as usize - 1;
            if k >= n_alt {
                return Err(Error::corrupt(
                    "variant",
                    format!("dispatch tag {t} but only {n_alt} alternatives"),
                ));
            }
            lo[k] = lo[k].min(i);
            hi[k] = hi[k].max(i.saturating_add(1));
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(n_alt);
        for (k, &child) in children.iter().enumerate() {
            let child_name = desc.field(child).name().to_string();
            let range = if lo[k] == u64::MAX {
                0..0
            } else {
                lo[k]..hi[k]
            };
            let mut array = self.assemble(cluster, child, &child_name, range, None, keep)?;
            // The invalid state (tag 0) points at a null appended to the first alternative.
            if k == 0 && invalid > 0 {
                let null = arrow_array::new_null_array(array.data_type(), 1);
                array = arrow_select::concat::concat(&[array.as_ref(), null.as_ref()])?;
            }
            arrays.push(array);
        }
        let mut type_ids = Vec::with_capacity(tag.len());
        let mut offsets = Vec::with_capacity(tag.len());
        for (&t, &i) in tag.iter().zip(index) {
            if t == 0 {
                type_ids.push(0i8);
                offsets.push(arrays.first().map_or(0, |a| a.len() as i32 - 1));
            } else {
                let k = t as usize - 1;
                type_ids.push(k as i8);
                offsets.push(i32::try_from(i - lo[k]).map_err(|_| {
                    Error::Unsupported("a variant with more than 2^31 items in one read".into())
                })?);
            }
        }
        if n_alt == 0 {
            return Err(Error::corrupt("variant", "variant without alternatives"));
        }
        Ok(Arc::new(UnionArray::try_new(
            union_fields,
            type_ids.into(),
            Some(offsets.into()),
            arrays,
        )?))
    }
}

/// Picks `indices` of `values`, `None` giving a null. Dense unions have no validity of
/// their own, so there a null is a null slot appended to the first alternative.
fn take_optional(values: ArrayRef, indices: &[Option<u64>]) -> Result<ArrayRef> {
    let DataType::Union(fields, _) = values.data_type() else {
        let indices = UInt64Array::from(indices.to_vec());
        return Ok(arrow_select::take::take(values.as_ref(), &indices, None)?);
    };
    let union = values
        .as_any()
        .downcast_ref::<UnionArray>()
        .ok_or_else(|| Error::corrupt("variant", "union array expected"))?;
    let first_id = fields.iter().next().map(|(id, _)| id).unwrap_or(0);
    let mut children: Vec<ArrayRef> = Vec::new();
    let mut null_slot = 0i32;
    for (id, _) in fields.iter() {
        let child = union.child(id).clone();
        if id == first_id {
            null_slot = child.len() as i32;
            let null = arrow_array::new_null_array(child.data_type(), 1);
            children.push(arrow_select::concat::concat(&[
                child.as_ref(),
                null.as_ref(),
            ])?);
        } else {
            children.push(child);
        }
    }
    let mut type_ids = Vec::with_capacity(indices.len());
    let mut offsets = Vec::with_capacity(indices.len());
    for idx in indices {
        match idx {
            Some(i) => {
                type_ids.push(union.type_id(*i as usize));
                offsets.push(union.value_offset(*i as usize) as i32);
            }
            None => {
                type_ids.push(first_id);
                offsets.push(null_slot);
            }
        }
    }
    Ok(Arc::new(UnionArray::try_new(
        fields.clone(),
        type_ids.into(),
        Some(offsets.into()),
        children,
    )?))
}

/// `a * b`, or an error naming what overflowed (sizes come from the file).
fn mul(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_mul(b)
        .ok_or_else(|| Error::corrupt(what, format!("{a} × {b} overflows 64 bits")))
}

/// `per_entry × n`, checked.
fn scaled(per_entry: PerEntry, n: u64, what: &str) -> Result<PerEntry> {
    per_entry.map(|k| mul(k, n, what)).transpose()
}

fn fixed(n: u64) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::corrupt("schema", format!("array size {n} too large")))
}

/// Arrow offsets (leading zero, then each end) from cluster-local collection ends.
fn arrow_offsets(start: u64, ends: &[u64]) -> OffsetBuffer<i64> {
    let offsets: Vec<i64> = std::iter::once(0)
        .chain(ends.iter().map(|&e| (e - start) as i64))
        .collect();
    OffsetBuffer::new(ScalarBuffer::from(offsets))
}

/// An Arrow integer array of type `T` from integer column values, range-checked.
fn int_array<T: ArrowPrimitiveType>(values: &ColumnValues) -> Result<ArrayRef>
where
    T::Native: TryFrom<i128>,
{
    let ints = to_ints::<T::Native>(values)?;
    Ok(Arc::new(PrimitiveArray::<T>::new(ints.into(), None)))
}

/// The Arrow array of a primitive field from its column's values.
fn primitive_array(p: PrimitiveType, values: &ColumnValues) -> Result<ArrayRef> {
    match p {
        PrimitiveType::Bool => Ok(Arc::new(to_boolean(values)?)),
        // A Char column holds the bytes of C++ `char`, which is signed here: reinterpret.
        PrimitiveType::Char => match values {
            ColumnValues::U8(bytes) => Ok(Arc::new(Int8Array::from(
                bytes.iter().map(|&b| b as i8).collect::<Vec<_>>(),
            ))),
            other => int_array::<Int8Type>(other),
        },
        PrimitiveType::Int8 => int_array::<Int8Type>(values),
        PrimitiveType::Byte | PrimitiveType::UInt8 => int_array::<UInt8Type>(values),
        PrimitiveType::Int16 => int_array::<Int16Type>(values),
        PrimitiveType::UInt16 => int_array::<UInt16Type>(values),
        PrimitiveType::Int32 => int_array::<Int32Type>(values),
        PrimitiveType::UInt32 => int_array::<UInt32Type>(values),
        PrimitiveType::Int64 => int_array::<Int64Type>(values),
        PrimitiveType::UInt64 => int_array::<UInt64Type>(values),
        PrimitiveType::Float32 => Ok(Arc::new(Float32Array::from(to_f32(values)?))),
        PrimitiveType::Float64 => Ok(Arc::new(Float64Array::from(to_f64(values)?))),
    }
}
