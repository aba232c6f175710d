//! The decoder: assembling one field's Arrow array for entry ranges of clusters,
//! recursively through its subfields, from the columns a [`ColumnReader`] reads and the
//! offsets several fields share ([`SharedOffsets`]).

use super::column::{arrow_offsets, mul, scaled, ColumnReader, Offsets, PageCarry, PerEntry, Seg};
use super::column_cast::{bool_array, to_boolean, to_f32, to_f64, to_ints};
use super::shared_offsets::SharedOffsets;
use super::source::PageSource;
use crate::arrow_map::{dense_union, map_array};
use crate::encoding::ColumnValues;
use crate::error::{to_usize, Error, Location, Result};
use crate::memory::into_arrow_buffer;
use crate::schema::arrow_field_kept;
use crate::schema::{ClusterDescriptor, Descriptor, FieldKind, PrimitiveType};
use arrow_array::types::*;
use arrow_array::*;
use arrow_schema::{DataType, Field};
use std::sync::Arc;

/// The record members to assemble (all when `None`): the fields on the paths of a
/// projection such as `Jet.pt`, and everything below the selected members.
pub(crate) type Keep<'a> = Option<&'a std::collections::HashSet<u32>>;

/// Decodes fields of an RNTuple (its descriptor) from the pages a page source gives.
pub(crate) struct Decoder<'a> {
    columns: ColumnReader<'a>,
    /// Offsets several fields of the read being assembled share.
    shared: SharedOffsets,
}

/// One field's part of a read, as [`Decoder::assemble`] is asked for it.
#[derive(Clone, Copy)]
struct FieldRead<'r, 's> {
    segs: &'r [Seg<'s>],
    id: u32,
    name: &'r str,
    per_entry: PerEntry,
    keep: Keep<'r>,
}

impl FieldRead<'_, '_> {
    /// The number of the field's elements read.
    fn len(&self) -> Result<usize> {
        let len = self
            .segs
            .iter()
            .try_fold(0u64, |n, (_, r)| n.checked_add(r.end - r.start))
            .ok_or_else(|| Error::corrupt("entry ranges", "more than 2^64 elements in one read"))?;
        to_usize(len, "elements of one read")
    }
}

impl<'a> Decoder<'a> {
    /// A decoder of `descriptor`'s fields, from `pages`.
    pub(crate) fn new(descriptor: &'a Descriptor, pages: &'a dyn PageSource) -> Decoder<'a> {
        Decoder {
            columns: ColumnReader::new(descriptor, pages),
            shared: SharedOffsets::default(),
        }
    }

    /// The same decoder, sharing the pages across the ends of consecutive ranges through
    /// `carry`.
    pub(crate) fn with_carry(self, carry: &'a PageCarry) -> Decoder<'a> {
        Decoder {
            columns: self.columns.with_carry(carry),
            ..self
        }
    }

    /// The descriptor of the fields it decodes.
    pub(crate) fn descriptor(&self) -> &'a Descriptor {
        self.columns.descriptor()
    }

    /// Before the top-level `fields` are assembled over `segs` (in parallel): decodes
    /// once the offsets that several of them would each decode, for their assembly to
    /// take (see [`SharedOffsets`]).
    pub(crate) fn share_offsets(&self, segs: &[Seg<'_>], fields: &[u32]) {
        self.shared.share(&self.columns, segs, fields);
    }

    /// Drops the shared offsets of the read just assembled (its arrays keep them).
    pub(crate) fn forget_shared_offsets(&self) {
        self.shared.forget();
    }

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
        let read = FieldRead {
            segs,
            id,
            name,
            per_entry,
            keep,
        };
        self.assemble_inner(read).map_err(|e| match e {
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

    /// Reads a collection's offsets for the entries of `segs`: the items' ranges in each
    /// cluster and the Arrow offsets over all of them (from 0), checked to never decrease.
    /// Offsets decoded once for several columns ([`Decoder::share_offsets`]) are taken
    /// from there.
    fn read_offsets<'s>(
        &self,
        segs: &[Seg<'s>],
        column: u32,
        per_entry: PerEntry,
    ) -> Result<(Vec<Seg<'s>>, Offsets)> {
        if let Some(shared) = self.shared.get(&self.columns, segs, column, per_entry) {
            return Ok(shared);
        }
        self.columns
            .decode_offsets(segs, column, per_entry)
            .map(|(items, offsets, _)| (items, offsets))
    }

    /// The Arrow array of one field's part of a read: by its kind, from its columns or
    /// from its subfields' arrays.
    fn assemble_inner(&self, f: FieldRead<'_, '_>) -> Result<ArrayRef> {
        let desc = self.descriptor();
        let kind = desc.field_kind(f.id);
        let Some((first, _)) = f.segs.first() else {
            return Ok(arrow_array::new_empty_array(
                arrow_field_kept(desc, f.id, f.name, f.keep)?.data_type(),
            ));
        };
        let cols = self.columns.active_columns(first, f.id);
        // Variants index per cluster, and a field may switch representation between
        // clusters: assemble those cluster by cluster and concatenate.
        if f.segs.len() > 1
            && (matches!(kind, FieldKind::Variant(_))
                || f.segs
                    .iter()
                    .any(|(c, _)| self.columns.active_columns(c, f.id) != cols))
        {
            return self.assemble_by_cluster(f);
        }
        let len = f.len()?;
        Ok(match kind {
            FieldKind::Primitive(p) => {
                self.expect_columns(f.id, &cols, 1)?;
                let values = self.columns.read_segs(f.segs, cols[0], f.per_entry, 1)?;
                primitive_array(p, values)?
            }
            FieldKind::String => self.assemble_string(f, &cols)?,
            FieldKind::Streamer => self.assemble_streamer(f, &cols)?,
            FieldKind::List(child) => self.assemble_list(f, &cols, child)?,
            FieldKind::Map(child) => self.assemble_map(f, &cols, child)?,
            FieldKind::Optional(child) => self.assemble_optional(f, &cols, child, len)?,
            FieldKind::Record(_, children) => self.assemble_record(f, &children, len)?,
            FieldKind::Array(child, n) => self.assemble_array(f, child, n)?,
            FieldKind::Bitset(n) => self.assemble_bitset(f, &cols, n)?,
            FieldKind::Variant(children) => {
                self.expect_columns(f.id, &cols, 1)?;
                let values = self.columns.read_segs(f.segs, cols[0], f.per_entry, 1)?;
                let ColumnValues::Switch { index, tag } = values else {
                    return Err(Error::corrupt(
                        "schema",
                        "variant column is not a Switch column",
                    ));
                };
                self.variant_array(first, f.id, f.name, &children, (&index, &tag), f.keep)?
            }
            FieldKind::Wrapper(child) => {
                self.assemble(f.segs, child, f.name, f.per_entry, f.keep)?
            }
            FieldKind::Cardinality(wide) => self.assemble_cardinality(f, &cols, wide)?,
            FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
        })
    }

    /// A field assembled cluster by cluster, the parts concatenated.
    fn assemble_by_cluster(&self, f: FieldRead<'_, '_>) -> Result<ArrayRef> {
        let parts = f
            .segs
            .iter()
            .map(|seg| self.assemble(std::slice::from_ref(seg), f.id, f.name, f.per_entry, f.keep))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        Ok(arrow_select::concat::concat(&refs)?)
    }

    /// A string: its offsets, then its characters.
    fn assemble_string(&self, f: FieldRead<'_, '_>, cols: &[u32]) -> Result<ArrayRef> {
        self.expect_columns(f.id, cols, 2)?;
        let (items, offsets) = self.read_offsets(f.segs, cols[0], f.per_entry)?;
        let chars = self.columns.read_segs(&items, cols[1], None, 1)?;
        let ColumnValues::U8(bytes) = chars else {
            return Err(Error::corrupt(
                "schema",
                "string characters are not a Char column",
            ));
        };
        let array = LargeStringArray::try_new(arrow_offsets(offsets), bytes.into(), None)
            .map_err(|e| Error::corrupt("string data", format!("not valid UTF-8: {e}")))?;
        Ok(Arc::new(array))
    }

    /// A streamer field: its offsets, then its bytes.
    fn assemble_streamer(&self, f: FieldRead<'_, '_>, cols: &[u32]) -> Result<ArrayRef> {
        self.expect_columns(f.id, cols, 2)?;
        let (items, offsets) = self.read_offsets(f.segs, cols[0], f.per_entry)?;
        let ColumnValues::U8(bytes) = self.columns.read_segs(&items, cols[1], None, 1)? else {
            return Err(Error::corrupt(
                "schema",
                "streamer bytes are not a Byte column",
            ));
        };
        Ok(Arc::new(LargeBinaryArray::new(
            arrow_offsets(offsets),
            bytes.into(),
            None,
        )))
    }

    /// A collection: its offsets, then its items.
    fn assemble_list(&self, f: FieldRead<'_, '_>, cols: &[u32], child: u32) -> Result<ArrayRef> {
        let desc = self.descriptor();
        self.expect_columns(f.id, cols, 1)?;
        let (items, offsets) = self.read_offsets(f.segs, cols[0], f.per_entry)?;
        let child_name = desc.field(child).name().to_string();
        let values = self.assemble(&items, child, &child_name, None, f.keep)?;
        let item = arrow_field_kept(desc, child, &child_name, f.keep)?;
        Ok(Arc::new(LargeListArray::try_new(
            Arc::new(item),
            arrow_offsets(offsets),
            values,
            None,
        )?))
    }

    /// A map: its offsets, then its key-value records.
    fn assemble_map(&self, f: FieldRead<'_, '_>, cols: &[u32], child: u32) -> Result<ArrayRef> {
        self.expect_columns(f.id, cols, 1)?;
        let (items, offsets) = self.read_offsets(f.segs, cols[0], f.per_entry)?;
        let pair = self.assemble(&items, child, "entries", None, f.keep)?;
        let DataType::Map(entries_field, _) =
            arrow_field_kept(self.descriptor(), f.id, f.name, f.keep)?
                .data_type()
                .clone()
        else {
            return Err(Error::corrupt("schema", "map type expected"));
        };
        map_array(&entries_field, &pair, &offsets, false)
    }

    /// An optional value: a collection of zero or one item, as a nullable array.
    fn assemble_optional(
        &self,
        f: FieldRead<'_, '_>,
        cols: &[u32],
        child: u32,
        len: usize,
    ) -> Result<ArrayRef> {
        self.expect_columns(f.id, cols, 1)?;
        let (items, offsets) = self.read_offsets(f.segs, cols[0], f.per_entry)?;
        let values = self.assemble(&items, child, f.name, None, f.keep)?;
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
        take_optional(values, &indices)
    }

    /// A record of `len` elements: its kept members' arrays.
    fn assemble_record(
        &self,
        f: FieldRead<'_, '_>,
        children: &[u32],
        len: usize,
    ) -> Result<ArrayRef> {
        let desc = self.descriptor();
        let DataType::Struct(fields) = arrow_field_kept(desc, f.id, f.name, f.keep)?
            .data_type()
            .clone()
        else {
            return Err(Error::corrupt("schema", "record type expected"));
        };
        if children.is_empty() {
            return Ok(Arc::new(StructArray::new_empty_fields(len, None)));
        }
        let arrays = children
            .iter()
            .filter(|c| f.keep.is_none_or(|k| k.contains(c)))
            .map(|&c| {
                let n = desc.field(c).name().to_string();
                self.assemble(f.segs, c, &n, f.per_entry, f.keep)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(StructArray::try_new(fields, arrays, None)?))
    }

    /// A fixed-size array: `n` items per element.
    fn assemble_array(&self, f: FieldRead<'_, '_>, child: u32, n: u64) -> Result<ArrayRef> {
        let desc = self.descriptor();
        let child_name = desc.field(child).name().to_string();
        let items = f
            .segs
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
            scaled(f.per_entry, n, "array size")?,
            f.keep,
        )?;
        let item = arrow_field_kept(desc, child, &child_name, f.keep)?;
        Ok(Arc::new(FixedSizeListArray::try_new(
            Arc::new(item),
            fixed(n)?,
            values,
            None,
        )?))
    }

    /// A bitset of `n` bits: `n` bools per element.
    fn assemble_bitset(&self, f: FieldRead<'_, '_>, cols: &[u32], n: u64) -> Result<ArrayRef> {
        self.expect_columns(f.id, cols, 1)?;
        let values = self.columns.read_segs(f.segs, cols[0], f.per_entry, n)?;
        let bits = to_boolean(&values)?;
        Ok(Arc::new(FixedSizeListArray::try_new(
            Arc::new(Field::new("_0", DataType::Boolean, false)),
            fixed(n)?,
            Arc::new(bits),
            None,
        )?))
    }

    /// A collection's size (32 or 64 bits wide), from its offsets.
    fn assemble_cardinality(
        &self,
        f: FieldRead<'_, '_>,
        cols: &[u32],
        wide: bool,
    ) -> Result<ArrayRef> {
        self.expect_columns(f.id, cols, 1)?;
        let (_, offsets) = self.read_offsets(f.segs, cols[0], f.per_entry)?;
        let sizes = offsets.windows(2).map(|w| (w[1] - w[0]) as u64);
        if wide {
            return Ok(Arc::new(UInt64Array::from_iter_values(sizes)));
        }
        let narrow = sizes
            .map(|s| {
                u32::try_from(s)
                    .map_err(|_| Error::corrupt("cardinality", format!("size {s} exceeds 32 bits")))
            })
            .collect::<Result<Vec<u32>>>()?;
        Ok(Arc::new(UInt32Array::from(narrow)))
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
        dense_union(union_fields, type_ids, offsets, arrays)
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
    dense_union(fields.clone(), type_ids, offsets, children)
}

fn fixed(n: u64) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::corrupt("schema", format!("array size {n} too large")))
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
