//! Assembling one field's Arrow array for an entry range of one cluster, recursively
//! through its subfields.

use super::column::{ColumnPart, Decoder};
use super::convert::{bool_array, to_boolean, to_f32, to_f64, to_ints, to_offsets};
use crate::arrow_map::map_array;
use crate::encoding::ColumnValues;
use crate::error::{to_usize, Error, Location, Result};
use crate::memory::into_arrow_buffer;
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
pub(crate) type PerEntry = Option<u64>;

/// The record members to assemble (all when `None`): the fields on the paths of a
/// projection such as `Jet.pt`, and everything below the selected members.
pub(crate) type Keep<'a> = Option<&'a std::collections::HashSet<u32>>;

/// One cluster's part of a read: the cluster and the field's elements wanted there
/// (local to the cluster). A field is assembled over several clusters' parts at once,
/// into one array.
pub(crate) type Seg<'a> = (&'a ClusterDescriptor, Range<u64>);

impl Decoder<'_> {
    /// The Arrow array of field `id` for its elements in `segs` (one range per cluster,
    /// concatenated in order).
    pub(crate) fn assemble(
        &self,
        segs: &[Seg<'_>],
        id: u32,
        name: &str,
        per_entry: PerEntry,
        keep: Keep<'_>,
    ) -> Result<ArrayRef> {
        self.assemble_inner(segs, id, name, per_entry, keep)
            .map_err(|e| match e {
                Error::At { .. } => e,
                other => other.at(Location {
                    field: Some(self.descriptor().qualified_name(id)),
                    cluster: match segs {
                        [(c, _)] => Some(c.id),
                        _ => None,
                    },
                    ..Default::default()
                }),
            })
    }

    /// The columns of field `id` used in `cluster`: the representation that is not
    /// suppressed there (the first one when the field has a single representation or
    /// none is listed, as for deferred columns).
    pub(super) fn active_columns(&self, cluster: &ClusterDescriptor, id: u32) -> Vec<u32> {
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

    /// Reads column `column` over `segs` (ranges scaled by `scale` elements per field
    /// element, a field with `per_entry` elements per entry).
    fn read_segs(
        &self,
        segs: &[Seg<'_>],
        column: u32,
        per_entry: PerEntry,
        scale: u64,
    ) -> Result<ColumnValues> {
        self.read_segs_after(segs, column, per_entry, scale, 0)
            .map(|(values, _)| values)
    }

    /// As `read_segs`, with `lead` zero elements before the values; also returns the
    /// stored bytes taken from the page source.
    fn read_segs_after(
        &self,
        segs: &[Seg<'_>],
        column: u32,
        per_entry: PerEntry,
        scale: u64,
        lead: usize,
    ) -> Result<(ColumnValues, u64)> {
        let parts = segs
            .iter()
            .map(|(c, r)| {
                let total = scaled(per_entry, c.n_entries, "cluster entry count")?;
                Ok(ColumnPart {
                    cluster: c,
                    range: mul(r.start, scale, "array size")?..mul(r.end, scale, "array size")?,
                    expected_total: scaled(total, scale, "array size")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.read_column_parts(column, &parts, lead)
    }

    /// Reads a collection's offsets for the entries of `segs`: the items' ranges in each
    /// cluster and the Arrow offsets over all of them (from 0), checked to never decrease.
    /// Offsets decoded once for several columns ([`Decoder::share_offsets`]) are taken
    /// from there.
    fn read_offsets<'a>(
        &self,
        segs: &[Seg<'a>],
        column: u32,
        per_entry: PerEntry,
    ) -> Result<(Vec<Seg<'a>>, Offsets)> {
        if let Some(shared) = self.shared_offsets(segs, column, per_entry) {
            return Ok(shared);
        }
        self.decode_offsets(segs, column, per_entry)
            .map(|(items, offsets, _)| (items, offsets))
    }

    /// Decodes a collection's offsets (see [`Decoder::read_offsets`]); also returns the
    /// stored bytes taken from the page source.
    pub(super) fn decode_offsets<'a>(
        &self,
        segs: &[Seg<'a>],
        column: u32,
        per_entry: PerEntry,
    ) -> Result<(Vec<Seg<'a>>, Offsets, u64)> {
        // Each range starts one element early for the start of its first item.
        let early: Vec<Seg<'a>> = segs
            .iter()
            .map(|(c, r)| (*c, r.start.saturating_sub(1)..r.end))
            .collect();
        // Read after one leading 0 and turned into the Arrow offsets in place: every
        // offset is written at or before the element it comes from (each cluster after
        // a range's start drops one element), so no second buffer is needed.
        let (values, taken) = self.read_segs_after(&early, column, per_entry, 1, 1)?;
        let mut all = to_offsets(values)?;
        let mut items = Vec::with_capacity(segs.len());
        let mut read = 1usize;
        let mut written = 1usize;
        let mut base = 0u64;
        for ((c, r), (_, e)) in segs.iter().zip(&early) {
            let len = to_usize(e.end - e.start, "collection offsets of one cluster")?;
            if read.checked_add(len).is_none_or(|end| end > all.len()) {
                return Err(Error::corrupt("collection offsets", "offsets out of range"));
            }
            let (start, first_end) = match r.start {
                0 => (0, read),
                _ if len > 0 => (all[read], read + 1),
                _ => return Err(Error::corrupt("collection offsets", "offsets out of range")),
            };
            let ends = first_end..read + len;
            read += len;
            // Offsets never decrease (checked branch-free over the page, the culprit
            // looked up only on failure), so the last one is the largest: one range check.
            let shift = base.wrapping_sub(start);
            let mut prev = start;
            let mut bad = false;
            for i in ends.clone() {
                let e = all[i];
                bad |= e < prev;
                prev = e;
                all[written] = e.wrapping_add(shift);
                written += 1;
            }
            if bad {
                // The ends were overwritten in place: the wrapping shift gives them back.
                let mut p = start;
                for &shifted in &all[written - ends.len()..written] {
                    let e = shifted.wrapping_sub(shift);
                    if e < p {
                        return Err(Error::corrupt(
                            "collection offsets",
                            format!("offset {e} follows {p} in column {column}"),
                        ));
                    }
                    p = e;
                }
            }
            base = base
                .checked_add(prev - start)
                .filter(|&b| i64::try_from(b).is_ok())
                .ok_or_else(|| {
                    Error::corrupt("collection offsets", format!("offset {prev} too large"))
                })?;
            items.push((*c, start..prev));
        }
        all.truncate(written);
        // Checked above to stay within i64; the same allocation, reinterpreted.
        let offsets: Vec<i64> = all.into_iter().map(|o| o as i64).collect();
        Ok((items, Offsets(into_arrow_buffer(offsets)), taken))
    }

    fn assemble_inner(
        &self,
        segs: &[Seg<'_>],
        id: u32,
        name: &str,
        per_entry: PerEntry,
        keep: Keep<'_>,
    ) -> Result<ArrayRef> {
        let desc = self.descriptor();
        let kind = desc.field_kind(id);
        let Some((first, _)) = segs.first() else {
            return Ok(arrow_array::new_empty_array(
                arrow_field_kept(desc, id, name, keep)?.data_type(),
            ));
        };
        let cols = self.active_columns(first, id);
        // Variants index per cluster, and a field may switch representation between
        // clusters: assemble those cluster by cluster and concatenate.
        if segs.len() > 1
            && (matches!(kind, FieldKind::Variant(_))
                || segs.iter().any(|(c, _)| self.active_columns(c, id) != cols))
        {
            let parts = segs
                .iter()
                .map(|seg| self.assemble(std::slice::from_ref(seg), id, name, per_entry, keep))
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            return Ok(arrow_select::concat::concat(&refs)?);
        }
        let len = segs
            .iter()
            .try_fold(0u64, |n, (_, r)| n.checked_add(r.end - r.start))
            .ok_or_else(|| Error::corrupt("entry ranges", "more than 2^64 elements in one read"))?;
        let len = to_usize(len, "elements of one read")?;
        Ok(match kind {
            FieldKind::Primitive(p) => {
                self.expect_columns(id, &cols, 1)?;
                let values = self.read_segs(segs, cols[0], per_entry, 1)?;
                primitive_array(p, values)?
            }
            FieldKind::String => {
                self.expect_columns(id, &cols, 2)?;
                let (items, offsets) = self.read_offsets(segs, cols[0], per_entry)?;
                let chars = self.read_segs(&items, cols[1], None, 1)?;
                let ColumnValues::U8(bytes) = chars else {
                    return Err(Error::corrupt(
                        "schema",
                        "string characters are not a Char column",
                    ));
                };
                let array = LargeStringArray::try_new(arrow_offsets(offsets), bytes.into(), None)
                    .map_err(|e| {
                    Error::corrupt("string data", format!("not valid UTF-8: {e}"))
                })?;
                Arc::new(array)
            }
            FieldKind::Streamer => {
                self.expect_columns(id, &cols, 2)?;
                let (items, offsets) = self.read_offsets(segs, cols[0], per_entry)?;
                let ColumnValues::U8(bytes) = self.read_segs(&items, cols[1], None, 1)? else {
                    return Err(Error::corrupt(
                        "schema",
                        "streamer bytes are not a Byte column",
                    ));
                };
                Arc::new(LargeBinaryArray::new(
                    arrow_offsets(offsets),
                    bytes.into(),
                    None,
                ))
            }
            FieldKind::List(child) => {
                self.expect_columns(id, &cols, 1)?;
                let (items, offsets) = self.read_offsets(segs, cols[0], per_entry)?;
                let child_name = desc.field(child).name().to_string();
                let values = self.assemble(&items, child, &child_name, None, keep)?;
                let item = arrow_field_kept(desc, child, &child_name, keep)?;
                Arc::new(LargeListArray::try_new(
                    Arc::new(item),
                    arrow_offsets(offsets),
                    values,
                    None,
                )?)
            }
            FieldKind::Map(child) => {
                self.expect_columns(id, &cols, 1)?;
                let (items, offsets) = self.read_offsets(segs, cols[0], per_entry)?;
                let pair = self.assemble(&items, child, "entries", None, keep)?;
                let DataType::Map(entries_field, _) =
                    arrow_field_kept(desc, id, name, keep)?.data_type().clone()
                else {
                    return Err(Error::corrupt("schema", "map type expected"));
                };
                map_array(&entries_field, &pair, &offsets, false)?
            }
            FieldKind::Optional(child) => {
                self.expect_columns(id, &cols, 1)?;
                let (items, offsets) = self.read_offsets(segs, cols[0], per_entry)?;
                let values = self.assemble(&items, child, name, None, keep)?;
                let mut indices: Vec<Option<u64>> = Vec::with_capacity(len);
                for w in offsets.windows(2) {
                    indices.push(match w[1] - w[0] {
                        0 => None,
                        1 => Some(w[0] as u64),
                        n => {
                            return Err(Error::corrupt(
                                "optional",
                                format!("an optional value holds {n} elements"),
                            ))
                        }
                    });
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
                            self.assemble(segs, c, &n, per_entry, keep)
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Arc::new(StructArray::try_new(fields, arrays, None)?)
                }
            }
            FieldKind::Array(child, n) => {
                let child_name = desc.field(child).name().to_string();
                let items = segs
                    .iter()
                    .map(|(c, r)| {
                        Ok((
                            *c,
                            mul(r.start, n, "array size")?..mul(r.end, n, "array size")?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let values = self.assemble(
                    &items,
                    child,
                    &child_name,
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
                let values = self.read_segs(segs, cols[0], per_entry, n)?;
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
                let values = self.read_segs(segs, cols[0], per_entry, 1)?;
                let ColumnValues::Switch { index, tag } = values else {
                    return Err(Error::corrupt(
                        "schema",
                        "variant column is not a Switch column",
                    ));
                };
                self.variant_array(first, id, name, &children, (&index, &tag), keep)?
            }
            FieldKind::Wrapper(child) => self.assemble(segs, child, name, per_entry, keep)?,
            FieldKind::Cardinality(wide) => {
                self.expect_columns(id, &cols, 1)?;
                let (_, offsets) = self.read_offsets(segs, cols[0], per_entry)?;
                let sizes = offsets.windows(2).map(|w| (w[1] - w[0]) as u64);
                if wide {
                    Arc::new(UInt64Array::from_iter_values(sizes))
                } else {
                    let narrow = sizes
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
            let mut array = self.assemble(&[(cluster, range)], child, &child_name, None, keep)?;
            // The invalid state (tag 0) points at a null appended to the first alternative.
            if k == 0 && invalid > 0 {
                let null = arrow_array::new_null_array(array.data_type(), 1);
                array = arrow_select::concat::concat(&[array.as_ref(), null.as_ref()])?;
            }
            arrays.push(array);
        }
        // The invalid state points at the null appended to the first alternative.
        let null_slot = match arrays.first() {
            Some(a) if invalid > 0 => i32::try_from(a.len() - 1).map_err(|_| {
                Error::Unsupported("a variant with more than 2^31 items in one read".into())
            })?,
            _ => 0,
        };
        let mut type_ids = Vec::with_capacity(tag.len());
        let mut offsets = Vec::with_capacity(tag.len());
        for (&t, &i) in tag.iter().zip(index) {
            if t == 0 {
                type_ids.push(0i8);
                offsets.push(null_slot);
            } else {
                let k = t as usize - 1;
                // k < n_alt <= 125: arrow_field_kept refused larger variants above.
                #[allow(clippy::cast_possible_truncation)]
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
            null_slot = i32::try_from(child.len()).map_err(|_| {
                Error::Unsupported("a variant with more than 2^31 items in one read".into())
            })?;
            let null = arrow_array::new_null_array(child.data_type(), 1);
            children.push(arrow_select::concat::concat(&[
                child.as_ref(),
                null.as_ref(),
            ])?);
        } else {
            children.push(child);
        }
    }
    let (child_types, child_offsets) = match union.offsets() {
        Some(offsets) => (union.type_ids(), offsets),
        None => return Err(Error::corrupt("variant", "dense union expected")),
    };
    let mut type_ids = Vec::with_capacity(indices.len());
    let mut offsets = Vec::with_capacity(indices.len());
    for idx in indices {
        match idx {
            Some(i) => {
                // An index below the length of `values` (made from its offsets).
                #[allow(clippy::cast_possible_truncation)]
                let i = *i as usize;
                type_ids.push(child_types[i]);
                offsets.push(child_offsets[i]);
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

/// Arrow offsets over a read's items, only made by `read_offsets`, which checks that they
/// start at 0, never decrease and stay within `i64`.
#[derive(Clone)]
pub(crate) struct Offsets(ScalarBuffer<i64>);

impl std::ops::Deref for Offsets {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        &self.0
    }
}

/// The Arrow offset buffer of checked offsets, without Arrow validating them again.
fn arrow_offsets(offsets: Offsets) -> OffsetBuffer<i64> {
    let buffer = offsets.0;
    // SAFETY: `Offsets` are only built by `read_offsets`, which starts them with 0, checks
    // that they never decrease, and that the last (largest) fits `i64`: exactly what
    // `OffsetBuffer::new` would check (non-empty, first >= 0, monotonic). Any inconsistency
    // with the child's length is still caught by the arrays' `try_new`.
    unsafe { OffsetBuffer::new_unchecked(buffer) }
}

/// An Arrow integer array of type `T` from integer column values, range-checked.
fn int_array<T: ArrowPrimitiveType>(values: &ColumnValues) -> Result<ArrayRef>
where
    T::Native: TryFrom<i128>,
{
    let ints = to_ints::<T::Native>(values)?;
    Ok(Arc::new(PrimitiveArray::<T>::new(ints.into(), None)))
}

/// The Arrow array of a primitive field from its column's values: the column's buffer
/// itself when its kind is the field's type (the common case), else converted.
fn primitive_array(p: PrimitiveType, values: ColumnValues) -> Result<ArrayRef> {
    use ColumnValues as V;
    use PrimitiveType as P;
    Ok(match (p, values) {
        (P::Int8, V::I8(v)) => Arc::new(Int8Array::new(into_arrow_buffer(v), None)),
        (P::Byte | P::UInt8, V::U8(v)) => Arc::new(UInt8Array::new(into_arrow_buffer(v), None)),
        (P::Int16, V::I16(v)) => Arc::new(Int16Array::new(into_arrow_buffer(v), None)),
        (P::UInt16, V::U16(v)) => Arc::new(UInt16Array::new(into_arrow_buffer(v), None)),
        (P::Int32, V::I32(v)) => Arc::new(Int32Array::new(into_arrow_buffer(v), None)),
        (P::UInt32, V::U32(v)) => Arc::new(UInt32Array::new(into_arrow_buffer(v), None)),
        (P::Int64, V::I64(v)) => Arc::new(Int64Array::new(into_arrow_buffer(v), None)),
        (P::UInt64, V::U64(v)) => Arc::new(UInt64Array::new(into_arrow_buffer(v), None)),
        (P::Float32, V::F32(v)) => Arc::new(Float32Array::new(into_arrow_buffer(v), None)),
        (P::Float64, V::F64(v)) => Arc::new(Float64Array::new(into_arrow_buffer(v), None)),
        (P::Bool, V::Bool(v)) => Arc::new(bool_array(&v)),
        // A Char column holds the bytes of C++ `char`, which is signed here: reinterpret.
        (P::Char, V::U8(bytes)) => Arc::new(Int8Array::from_iter_values(
            bytes.into_iter().map(|b| b as i8),
        )),
        (P::Bool, values) => Arc::new(to_boolean(&values)?),
        (P::Char | P::Int8, values) => int_array::<Int8Type>(&values)?,
        (P::Byte | P::UInt8, values) => int_array::<UInt8Type>(&values)?,
        (P::Int16, values) => int_array::<Int16Type>(&values)?,
        (P::UInt16, values) => int_array::<UInt16Type>(&values)?,
        (P::Int32, values) => int_array::<Int32Type>(&values)?,
        (P::UInt32, values) => int_array::<UInt32Type>(&values)?,
        (P::Int64, values) => int_array::<Int64Type>(&values)?,
        (P::UInt64, values) => int_array::<UInt64Type>(&values)?,
        (P::Float32, values) => Arc::new(Float32Array::from(to_f32(&values)?)),
        (P::Float64, values) => Arc::new(Float64Array::from(to_f64(&values)?)),
    })
}
