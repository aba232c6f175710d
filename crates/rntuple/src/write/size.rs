//! The uncompressed bytes each entry adds to a cluster, summed over its columns: ROOT
//! commits a cluster when that sum reaches its estimate of the cluster's size.

use super::shred::{item_span, list_values, offsets_of};
use super::writer::{BlobSink, RNTupleWriter};
use crate::error::{Error, Result};
use crate::schema::FieldKind;
use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;

fn mismatch(field: &str) -> Error {
    Error::InvalidArgument(format!("field \"{field}\" does not match its Arrow array"))
}

/// Adds to `sizes[i]` the bytes item `i` of `array` (field `id`) adds to the columns.
pub(crate) fn add_item_sizes<S: BlobSink>(
    w: &RNTupleWriter<S>,
    id: u32,
    array: &dyn Array,
    sizes: &mut [u64],
) -> Result<()> {
    let desc = w.descriptor();
    let cols = desc.written_columns(id);
    let own: u64 = cols.iter().map(|&c| w.column_packed_size(c)).sum();
    let name = || desc.qualified_name(id);
    match desc.field_kind(id) {
        FieldKind::Primitive(_) | FieldKind::Bitset(_) => {
            let per_item = match desc.field_kind(id) {
                FieldKind::Bitset(n) => n * own,
                _ => own,
            };
            sizes.iter_mut().for_each(|s| *s += per_item);
        }
        FieldKind::String | FieldKind::Streamer => {
            let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
            // Index element plus one byte per character.
            let index = cols.first().map_or(0, |&c| w.column_packed_size(c));
            for (s, (a, b)) in sizes.iter_mut().zip(r) {
                *s += index + (b - a) as u64;
            }
        }
        FieldKind::List(child) | FieldKind::Map(child) => {
            let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
            let values = list_values(array).ok_or_else(|| mismatch(&name()))?;
            let (first, last) = item_span(&r);
            let mut child_sizes = vec![0u64; last - first];
            add_item_sizes(
                w,
                child,
                values.slice(first, last - first).as_ref(),
                &mut child_sizes,
            )?;
            for (s, (a, b)) in sizes.iter_mut().zip(r) {
                *s += own + child_sizes[a - first..b - first].iter().sum::<u64>();
            }
        }
        FieldKind::Optional(child) => {
            let mut child_sizes = vec![0u64; array.len()];
            add_item_sizes(w, child, array, &mut child_sizes)?;
            let nulls = array.logical_nulls();
            for (i, (s, c)) in sizes.iter_mut().zip(child_sizes).enumerate() {
                let present = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                // ROOT counts the in-memory index (8 bytes), whatever its column type.
                *s += 8 + if present { c } else { 0 };
            }
        }
        FieldKind::Record(_, children) => {
            let DataType::Struct(_) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let s = array.as_struct();
            for (k, &c) in children.iter().enumerate() {
                let column = s.columns().get(k).ok_or_else(|| mismatch(&name()))?;
                add_item_sizes(w, c, column.as_ref(), sizes)?;
            }
        }
        FieldKind::Array(child, n) => {
            let DataType::FixedSizeList(_, _) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let list = array.as_fixed_size_list();
            let n = n as usize;
            let items = list.values().slice(list.offset() * n, list.len() * n);
            let mut child_sizes = vec![0u64; items.len()];
            add_item_sizes(w, child, items.as_ref(), &mut child_sizes)?;
            for (s, chunk) in sizes.iter_mut().zip(child_sizes.chunks(n.max(1))) {
                *s += chunk.iter().sum::<u64>();
            }
        }
        FieldKind::Variant(children) => {
            let DataType::Union(fields, _) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let union = array.as_union();
            let mut per_alt = Vec::new();
            for ((type_id, _), &c) in fields.iter().zip(&children) {
                let child = union.child(type_id);
                let mut cs = vec![0u64; child.len()];
                add_item_sizes(w, c, child.as_ref(), &mut cs)?;
                per_alt.push((type_id, cs));
            }
            for (i, s) in sizes.iter_mut().enumerate() {
                let t = union.type_id(i);
                let off = union.value_offset(i);
                let alt = per_alt
                    .iter()
                    .find(|(id, _)| *id == t)
                    .filter(|_| !union.child(t).is_null(off))
                    .and_then(|(_, cs)| cs.get(off))
                    .copied()
                    .unwrap_or(0);
                // ROOT counts the in-memory switch element (16 bytes); the invalid state
                // (a null alternative) has no child value.
                *s += 16 + alt;
            }
        }
        FieldKind::Wrapper(child) => add_item_sizes(w, child, array, sizes)?,
        FieldKind::Cardinality(_) => {}
        FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
    }
    Ok(())
}

/// The column appends the items of one array make, in the order ROOT's fields make them
/// (a collection's items before its offset, a string's characters before its index, a
/// record's members in order): `ops[bounds[i]..bounds[i + 1]]` are item `i`'s, each a
/// column and a number of consecutive elements.
pub(crate) struct ItemOps {
    pub(crate) ops: Vec<(u32, u64)>,
    pub(crate) bounds: Vec<usize>,
}

impl ItemOps {
    fn with_items(n: usize) -> Self {
        let mut bounds = Vec::with_capacity(n + 1);
        bounds.push(0);
        ItemOps {
            ops: Vec::new(),
            bounds,
        }
    }

    /// Appends `count` elements of `column`, merged with the previous append when it is
    /// to the same column (ROOT's appends of consecutive elements are equivalent).
    fn push(&mut self, column: u32, count: u64) {
        if count == 0 {
            return;
        }
        // Merge only within the open item, so that each item keeps its own ops.
        let item_start = self.bounds.last().copied().unwrap_or(0);
        let in_item = self.ops.len() > item_start;
        match self.ops.last_mut() {
            Some((c, n)) if *c == column && in_item => *n += count,
            _ => self.ops.push((column, count)),
        }
    }

    /// Appends the ops of items `a..b` of `other`.
    fn extend_items(&mut self, other: &ItemOps, a: usize, b: usize) {
        let (Some(&from), Some(&to)) = (other.bounds.get(a), other.bounds.get(b)) else {
            return;
        };
        for &(c, n) in other.ops.get(from..to).unwrap_or_default() {
            self.push(c, n);
        }
    }

    fn end_item(&mut self) {
        self.bounds.push(self.ops.len());
    }
}

/// The column appends of each item of `array` (field `id`).
pub(crate) fn item_ops<S: BlobSink>(
    w: &RNTupleWriter<S>,
    id: u32,
    array: &dyn Array,
) -> Result<ItemOps> {
    let desc = w.descriptor();
    let cols = desc.written_columns(id);
    let name = || desc.qualified_name(id);
    let n = array.len();
    let mut out = ItemOps::with_items(n);
    let own = cols.first().copied();
    match desc.field_kind(id) {
        FieldKind::Primitive(_) | FieldKind::Bitset(_) => {
            let per_item = match desc.field_kind(id) {
                FieldKind::Bitset(bits) => bits,
                _ => 1,
            };
            for _ in 0..n {
                if let Some(c) = own {
                    out.push(c, per_item);
                }
                out.end_item();
            }
        }
        FieldKind::String | FieldKind::Streamer => {
            let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
            for (a, b) in r {
                if let Some(&chars) = cols.get(1) {
                    out.push(chars, (b - a) as u64);
                }
                if let Some(c) = own {
                    out.push(c, 1);
                }
                out.end_item();
            }
        }
        FieldKind::List(child) | FieldKind::Map(child) => {
            let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
            let values = list_values(array).ok_or_else(|| mismatch(&name()))?;
            let (first, last) = item_span(&r);
            let items = item_ops(w, child, values.slice(first, last - first).as_ref())?;
            for (a, b) in r {
                out.extend_items(&items, a - first, b - first);
                if let Some(c) = own {
                    out.push(c, 1);
                }
                out.end_item();
            }
        }
        FieldKind::Optional(child) => {
            let items = item_ops(w, child, array)?;
            let nulls = array.logical_nulls();
            for i in 0..n {
                if nulls.as_ref().is_none_or(|v| v.is_valid(i)) {
                    out.extend_items(&items, i, i + 1);
                }
                if let Some(c) = own {
                    out.push(c, 1);
                }
                out.end_item();
            }
        }
        FieldKind::Record(_, children) => {
            let DataType::Struct(_) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let s = array.as_struct();
            let mut per_child = Vec::with_capacity(children.len());
            for (k, &c) in children.iter().enumerate() {
                let column = s.columns().get(k).ok_or_else(|| mismatch(&name()))?;
                per_child.push(item_ops(w, c, column.as_ref())?);
            }
            for i in 0..n {
                for items in &per_child {
                    out.extend_items(items, i, i + 1);
                }
                out.end_item();
            }
        }
        FieldKind::Array(child, len) => {
            let DataType::FixedSizeList(_, _) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let list = array.as_fixed_size_list();
            let len = len as usize;
            let values = list.values().slice(list.offset() * len, n * len);
            let items = item_ops(w, child, values.as_ref())?;
            for i in 0..n {
                out.extend_items(&items, i * len, (i + 1) * len);
                out.end_item();
            }
        }
        FieldKind::Variant(children) => {
            let DataType::Union(fields, _) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let union = array.as_union();
            let mut per_alt = Vec::new();
            for ((type_id, _), &c) in fields.iter().zip(&children) {
                per_alt.push((type_id, item_ops(w, c, union.child(type_id).as_ref())?));
            }
            for i in 0..n {
                let t = union.type_id(i);
                let off = union.value_offset(i);
                // A variant in the invalid state (a null alternative) writes no child value.
                let valid = !union.child(t).is_null(off);
                if let Some((_, items)) = per_alt.iter().find(|(id, _)| *id == t).filter(|_| valid)
                {
                    out.extend_items(items, off, off + 1);
                }
                if let Some(c) = own {
                    out.push(c, 1);
                }
                out.end_item();
            }
        }
        FieldKind::Wrapper(child) => return item_ops(w, child, array),
        FieldKind::Cardinality(_) => {
            for _ in 0..n {
                out.end_item();
            }
        }
        FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
    }
    Ok(out)
}

/// The elements each item of an array appends to one column: the same number for every
/// item, or one number per item.
#[derive(Debug, Clone)]
pub(crate) enum Counts {
    Const(u64),
    PerItem(Vec<u64>),
}

impl Counts {
    fn get(&self, i: usize) -> u64 {
        match self {
            Counts::Const(k) => *k,
            Counts::PerItem(v) => v.get(i).copied().unwrap_or(0),
        }
    }

    /// Per item of a collection with `offsets` (relative to the first child item), the
    /// sum of the children's counts.
    fn gather(&self, ranges: impl Iterator<Item = (usize, usize)>) -> Counts {
        Counts::PerItem(match self {
            Counts::Const(k) => ranges.map(|(a, b)| k * (b - a) as u64).collect(),
            Counts::PerItem(v) => {
                let mut prefix = Vec::with_capacity(v.len() + 1);
                let mut acc = 0u64;
                prefix.push(0);
                for &x in v {
                    acc += x;
                    prefix.push(acc);
                }
                ranges
                    .map(|(a, b)| {
                        let hi = prefix.get(b).copied().unwrap_or(acc);
                        let lo = prefix.get(a).copied().unwrap_or(acc);
                        hi.saturating_sub(lo)
                    })
                    .collect()
            }
        })
    }
}

/// Per column of field `id` and its subfields, the elements each item of `array` appends
/// (the totals of [`item_ops`], without their order); `None` for fields whose counts are
/// not computed in bulk (variants), which take the entry-by-entry plan.
pub(crate) fn item_counts<S: BlobSink>(
    w: &RNTupleWriter<S>,
    id: u32,
    array: &dyn Array,
    out: &mut Vec<(u32, Counts)>,
) -> Result<Option<()>> {
    let desc = w.descriptor();
    let cols = desc.written_columns(id);
    let name = || desc.qualified_name(id);
    let own = cols.first().copied();
    let n = array.len();
    match desc.field_kind(id) {
        FieldKind::Primitive(_) => out.extend(own.map(|c| (c, Counts::Const(1)))),
        FieldKind::Bitset(bits) => out.extend(own.map(|c| (c, Counts::Const(bits)))),
        FieldKind::String | FieldKind::Streamer => {
            let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
            out.extend(own.map(|c| (c, Counts::Const(1))));
            if let Some(&chars) = cols.get(1) {
                let per = r.iter().map(|&(a, b)| (b - a) as u64).collect();
                out.push((chars, Counts::PerItem(per)));
            }
        }
        FieldKind::List(child) | FieldKind::Map(child) => {
            let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
            let values = list_values(array).ok_or_else(|| mismatch(&name()))?;
            let (first, last) = item_span(&r);
            let mut inner = Vec::new();
            let items = values.slice(first, last - first);
            if item_counts(w, child, items.as_ref(), &mut inner)?.is_none() {
                return Ok(None);
            }
            out.extend(own.map(|c| (c, Counts::Const(1))));
            for (c, counts) in inner {
                let ranges = r.iter().map(|&(a, b)| (a - first, b - first));
                out.push((c, counts.gather(ranges)));
            }
        }
        FieldKind::Optional(child) => {
            let mut inner = Vec::new();
            if item_counts(w, child, array, &mut inner)?.is_none() {
                return Ok(None);
            }
            out.extend(own.map(|c| (c, Counts::Const(1))));
            let nulls = array.logical_nulls();
            for (c, counts) in inner {
                let per = match &nulls {
                    None => counts,
                    Some(valid) => Counts::PerItem(
                        (0..n)
                            .map(|i| if valid.is_valid(i) { counts.get(i) } else { 0 })
                            .collect(),
                    ),
                };
                out.push((c, per));
            }
        }
        FieldKind::Record(_, children) => {
            let DataType::Struct(_) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let s = array.as_struct();
            for (k, &c) in children.iter().enumerate() {
                let column = s.columns().get(k).ok_or_else(|| mismatch(&name()))?;
                if item_counts(w, c, column.as_ref(), out)?.is_none() {
                    return Ok(None);
                }
            }
        }
        FieldKind::Array(child, len) => {
            let DataType::FixedSizeList(_, _) = array.data_type() else {
                return Err(mismatch(&name()));
            };
            let list = array.as_fixed_size_list();
            let len = len as usize;
            let values = list.values().slice(list.offset() * len, n * len);
            let mut inner = Vec::new();
            if item_counts(w, child, values.as_ref(), &mut inner)?.is_none() {
                return Ok(None);
            }
            for (c, counts) in inner {
                let per = match counts {
                    Counts::Const(k) => Counts::Const(k * len as u64),
                    other => other.gather((0..n).map(|i| (i * len, (i + 1) * len))),
                };
                out.push((c, per));
            }
        }
        FieldKind::Wrapper(child) => return item_counts(w, child, array, out),
        FieldKind::Cardinality(_) => {}
        FieldKind::Variant(_) => return Ok(None),
        FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
    }
    Ok(Some(()))
}
