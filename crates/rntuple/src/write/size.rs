//! The uncompressed bytes each entry adds to a cluster, summed over its columns: ROOT
//! commits a cluster when that sum reaches its estimate of the cluster's size.

use super::shred::{item_span, list_values, offsets_of};
use crate::error::{Error, Result};
use crate::schema::{Descriptor, FieldKind};
use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;

fn mismatch(field: &str) -> Error {
    Error::InvalidArgument(format!("field \"{field}\" does not match its Arrow array"))
}

/// Bytes one element of column `id` takes packed on disk (`packed_sizes[id]`), as ROOT
/// counts a cluster's uncompressed size.
fn packed_size(packed_sizes: &[u64], id: u32) -> u64 {
    packed_sizes.get(id as usize).copied().unwrap_or(8)
}

/// Adds to `sizes[i]` the bytes item `i` of `array` (field `id`) adds to the columns,
/// whose elements take `packed_sizes` bytes each.
pub(crate) fn add_item_sizes(
    desc: &Descriptor,
    packed_sizes: &[u64],
    id: u32,
    array: &dyn Array,
    sizes: &mut [u64],
) -> Result<()> {
    let cols = desc.written_columns(id);
    let own: u64 = cols.iter().map(|&c| packed_size(packed_sizes, c)).sum();
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
            let index = cols.first().map_or(0, |&c| packed_size(packed_sizes, c));
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
                desc,
                packed_sizes,
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
            add_item_sizes(desc, packed_sizes, child, array, &mut child_sizes)?;
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
                add_item_sizes(desc, packed_sizes, c, column.as_ref(), sizes)?;
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
            add_item_sizes(desc, packed_sizes, child, items.as_ref(), &mut child_sizes)?;
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
                add_item_sizes(desc, packed_sizes, c, child.as_ref(), &mut cs)?;
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
        FieldKind::Wrapper(child) => add_item_sizes(desc, packed_sizes, child, array, sizes)?,
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
pub(crate) fn item_ops(desc: &Descriptor, id: u32, array: &dyn Array) -> Result<ItemOps> {
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
            let items = item_ops(desc, child, values.slice(first, last - first).as_ref())?;
            for (a, b) in r {
                out.extend_items(&items, a - first, b - first);
                if let Some(c) = own {
                    out.push(c, 1);
                }
                out.end_item();
            }
        }
        FieldKind::Optional(child) => {
            let items = item_ops(desc, child, array)?;
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
                per_child.push(item_ops(desc, c, column.as_ref())?);
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
            let items = item_ops(desc, child, values.as_ref())?;
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
                per_alt.push((type_id, item_ops(desc, c, union.child(type_id).as_ref())?));
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
        FieldKind::Wrapper(child) => return item_ops(desc, child, array),
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
pub(crate) fn item_counts(
    desc: &Descriptor,
    id: u32,
    array: &dyn Array,
    out: &mut Vec<(u32, Counts)>,
) -> Result<Option<()>> {
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
            if item_counts(desc, child, items.as_ref(), &mut inner)?.is_none() {
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
            if item_counts(desc, child, array, &mut inner)?.is_none() {
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
                if item_counts(desc, c, column.as_ref(), out)?.is_none() {
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
            if item_counts(desc, child, values.as_ref(), &mut inner)?.is_none() {
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
        FieldKind::Wrapper(child) => return item_counts(desc, child, array, out),
        FieldKind::Cardinality(_) => {}
        FieldKind::Variant(_) => return Ok(None),
        FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
    }
    Ok(Some(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Footer, Header};
    use crate::schema::{arrow_field, values_to_array, ColumnDefaults, SchemaBuilder, Value};
    use arrow_array::ArrayRef;
    use std::collections::HashSet;

    /// A schema of every kind of field the walks know, and `n` entries of pseudo-random
    /// values for it: the descriptor, its top-level fields and their arrays.
    fn sample(n: usize) -> (Descriptor, Vec<u32>, Vec<ArrayRef>) {
        let types = [
            ("i", "std::int32_t"),
            ("v", "std::vector<float>"),
            ("s", "std::string"),
            ("vv", "std::vector<std::vector<std::uint8_t>>"),
            ("o", "std::optional<double>"),
            ("a", "std::array<float,3>"),
            ("b", "std::bitset<5>"),
            ("p", "std::pair<std::int16_t,std::vector<std::string>>"),
            ("m", "std::map<std::string,std::int32_t>"),
            ("ov", "std::optional<std::vector<std::int64_t>>"),
        ];
        let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: true });
        for (name, type_name) in types {
            builder
                .add_cpp_field(name, type_name)
                .expect("a supported type");
        }
        let header = Header {
            name: "t".into(),
            description: String::new(),
            writer: String::new(),
            schema: builder.finish(),
        };
        let desc = Descriptor::build(
            super::super::cluster::FORMAT_VERSION,
            header,
            Footer::default(),
            Vec::new(),
        )
        .expect("a descriptor");
        let mut state = 7u64;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let text = |next: &mut dyn FnMut(u64) -> u64| Value::String("x".repeat(next(12) as usize));
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for i in 0..n {
            let floats = |k: u64| Value::List((0..k).map(|x| Value::Float(x as f64)).collect());
            let row = vec![
                Value::Int(i as i64),
                floats(next(7)),
                text(&mut next),
                Value::List(
                    (0..next(4))
                        .map(|_| Value::List((0..next(9)).map(Value::UInt).collect()))
                        .collect(),
                ),
                if next(3) == 0 {
                    Value::Null
                } else {
                    Value::Float(1.5)
                },
                floats(3),
                Value::List((0..5).map(|b| Value::Bool(b % 2 == 0)).collect()),
                Value::Record(vec![
                    Value::Int(-3),
                    Value::List((0..next(3)).map(|_| text(&mut next)).collect()),
                ]),
                Value::Map(
                    (0..next(4))
                        .map(|k| (Value::String(format!("k{k}")), Value::Int(k as i64)))
                        .collect(),
                ),
                if next(2) == 0 {
                    Value::Null
                } else {
                    Value::List((0..next(5)).map(|x| Value::Int(x as i64)).collect())
                },
            ];
            rows.push(row);
        }
        let fields = desc.top_level.clone();
        let arrays = fields
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let field = arrow_field(&desc, id, desc.field(id).name()).expect("a field");
                let values: Vec<&Value> = rows.iter().map(|r| &r[k]).collect();
                values_to_array(&field, &values).expect("an array")
            })
            .collect();
        (desc, fields, arrays)
    }

    #[test]
    fn counts_are_the_totals_of_each_entrys_appends() {
        let (desc, fields, arrays) = sample(300);
        let mut total = 0u64;
        for (&id, array) in fields.iter().zip(&arrays) {
            let name = desc.field(id).name();
            let ops = item_ops(&desc, id, array.as_ref()).expect("appends");
            let mut counts = Vec::new();
            item_counts(&desc, id, array.as_ref(), &mut counts)
                .expect("counts")
                .expect("counted in bulk");
            let counted: HashSet<u32> = counts.iter().map(|(c, _)| *c).collect();
            for (column, _) in &ops.ops {
                assert!(
                    counted.contains(column),
                    "field {name}: column {column} uncounted"
                );
            }
            for (column, per_entry) in &counts {
                for i in 0..array.len() {
                    let appends = &ops.ops[ops.bounds[i]..ops.bounds[i + 1]];
                    let expected: u64 = appends
                        .iter()
                        .filter(|(c, _)| c == column)
                        .map(|(_, k)| k)
                        .sum();
                    assert_eq!(
                        per_entry.get(i),
                        expected,
                        "field {name}, column {column}, entry {i}"
                    );
                    total += expected;
                }
            }
        }
        assert!(total > 10_000, "{total} elements: too few to test");
    }
}
