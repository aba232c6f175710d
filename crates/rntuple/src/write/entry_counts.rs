//! What each entry of a batch appends to each column, found in one walk of its arrays
//! before they are shredded: per column, the elements each entry appends (the page plan
//! cuts pages by them) and, from those, the uncompressed bytes each entry adds to its
//! cluster (ROOT commits a cluster when their sum reaches its estimate of the cluster's
//! size). For the few entries where a write page overflows, the page plan also needs
//! the order of the entry's appends: [`item_ops`] walks just those entries.

use super::shred::{item_span, list_values, offsets_of};
use crate::error::{to_usize, Error, Result};
use crate::schema::{Descriptor, FieldKind};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, UnionArray};
use arrow_schema::DataType;

/// The bytes ROOT counts for an optional field's index element, whatever its column
/// type: the in-memory index.
const OPTIONAL_INDEX_BYTES: u64 = 8;
/// The bytes ROOT counts for a variant's switch element: the in-memory switch.
const SWITCH_BYTES: u64 = 16;
/// The bytes ROOT counts for a character of a string (or a byte of a streamer field).
const CHARACTER_BYTES: u64 = 1;

fn mismatch(field: &str) -> Error {
    Error::InvalidArgument(format!("field \"{field}\" does not match its Arrow array"))
}

/// The elements each item of an array appends to one column: the same number for every
/// item, or one number per item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Counts {
    Const(u64),
    PerItem(Vec<u64>),
}

impl Counts {
    /// The elements item `i` appends.
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self {
            Counts::Const(k) => *k,
            Counts::PerItem(v) => v.get(i).copied().unwrap_or(0),
        }
    }

    /// Per item of a collection whose items are the children in `ranges` (relative to
    /// the first child), the sum of the children's counts.
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

    /// The counts of `len` items, one per item.
    fn into_per_item(self, len: usize) -> Vec<u64> {
        match self {
            Counts::Const(k) => vec![k; len],
            Counts::PerItem(v) => v,
        }
    }

    /// The counts of items `len_a` items of `a` followed by `len_b` items of `b`.
    fn concat(a: Counts, len_a: usize, b: Counts, len_b: usize) -> Counts {
        match (a, b) {
            (Counts::Const(x), Counts::Const(y)) if x == y => Counts::Const(x),
            (a, b) => {
                let mut items = a.into_per_item(len_a);
                items.extend(b.into_per_item(len_b));
                Counts::PerItem(items)
            }
        }
    }

    /// Splits off the counts of the items from `at` on (`len` items in all).
    fn split_off(&mut self, at: usize, len: usize) -> Counts {
        match self {
            Counts::Const(k) => Counts::Const(*k),
            Counts::PerItem(v) => Counts::PerItem(v.split_off(at.min(len).min(v.len()))),
        }
    }
}

/// One column's counts, and the bytes ROOT counts per element of it for a cluster's
/// size.
#[derive(Debug, Clone)]
struct ColumnCounts {
    column: u32,
    element_bytes: u64,
    counts: Counts,
}

/// What a run of consecutive entries appends to the columns.
#[derive(Debug, Default)]
pub(crate) struct EntryCounts {
    /// Every column of the fields walked, in walk order.
    columns: Vec<ColumnCounts>,
    /// The uncompressed bytes each entry adds to its cluster, summed over its columns.
    sizes: Vec<u64>,
}

impl EntryCounts {
    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.sizes.len()
    }

    /// The uncompressed bytes each entry adds to its cluster.
    pub(crate) fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Per column, the elements each entry appends to it.
    pub(crate) fn columns(&self) -> impl Iterator<Item = (u32, &Counts)> {
        self.columns.iter().map(|c| (c.column, &c.counts))
    }

    /// Appends the counts of the entries that follow (walked from the same fields).
    pub(crate) fn append(&mut self, later: EntryCounts) -> Result<()> {
        if self.columns.len() != later.columns.len() {
            return Err(Error::InvalidArgument(
                "entry counts of different columns cannot be joined".into(),
            ));
        }
        let (len, later_len) = (self.len(), later.len());
        for (mine, theirs) in self.columns.iter_mut().zip(later.columns) {
            if mine.column != theirs.column {
                return Err(Error::InvalidArgument(
                    "entry counts of different columns cannot be joined".into(),
                ));
            }
            let counts = std::mem::replace(&mut mine.counts, Counts::Const(0));
            mine.counts = Counts::concat(counts, len, theirs.counts, later_len);
        }
        self.sizes.extend(later.sizes);
        Ok(())
    }

    /// Splits off the entries from `at` on; these keep the first `at`.
    pub(crate) fn split_off(&mut self, at: usize) -> EntryCounts {
        let len = self.len();
        let columns = self
            .columns
            .iter_mut()
            .map(|c| ColumnCounts {
                column: c.column,
                element_bytes: c.element_bytes,
                counts: c.counts.split_off(at, len),
            })
            .collect();
        let sizes = self.sizes.split_off(at.min(len));
        EntryCounts { columns, sizes }
    }
}

/// Walks entries `start..start + len` of the top-level `fields` (with their `arrays`):
/// what each entry appends to each column, with columns whose elements take
/// `packed_sizes` bytes on disk (indexed by column id).
pub(crate) fn count_entries(
    desc: &Descriptor,
    packed_sizes: &[u64],
    fields: &[u32],
    arrays: &[ArrayRef],
    start: usize,
    len: usize,
) -> Result<EntryCounts> {
    let walk = CountWalk { desc, packed_sizes };
    let mut columns = Vec::new();
    for (&id, array) in fields.iter().zip(arrays) {
        let part = array.slice(start, len);
        walk.count(id, part.as_ref(), &mut columns)?;
    }
    let mut sizes = vec![0u64; len];
    let mut every_entry = 0u64;
    for c in &columns {
        match &c.counts {
            Counts::Const(k) => every_entry += k * c.element_bytes,
            Counts::PerItem(per) => {
                for (size, k) in sizes.iter_mut().zip(per) {
                    *size += k * c.element_bytes;
                }
            }
        }
    }
    if every_entry > 0 {
        sizes.iter_mut().for_each(|s| *s += every_entry);
    }
    Ok(EntryCounts { columns, sizes })
}

/// The schema the counting walk follows.
struct CountWalk<'a> {
    desc: &'a Descriptor,
    /// Bytes one element of each column takes packed on disk.
    packed_sizes: &'a [u64],
}

impl CountWalk<'_> {
    /// Bytes one element of column `id` takes packed on disk, as ROOT counts a cluster's
    /// uncompressed size.
    fn packed_size(&self, id: u32) -> u64 {
        self.packed_sizes.get(id as usize).copied().unwrap_or(8)
    }

    /// `counts` for column `column` (if the field has one), whose elements ROOT counts
    /// as their packed size.
    fn packed(&self, column: Option<u32>, counts: Counts) -> Option<ColumnCounts> {
        column.map(|column| ColumnCounts {
            column,
            element_bytes: self.packed_size(column),
            counts,
        })
    }

    /// Appends to `out`, per column of field `id` and its subfields, the elements each
    /// item of `array` appends to it.
    fn count(&self, id: u32, array: &dyn Array, out: &mut Vec<ColumnCounts>) -> Result<()> {
        let desc = self.desc;
        let cols = desc.written_columns(id);
        let name = || desc.qualified_name(id);
        let own = cols.first().copied();
        let n = array.len();
        match desc.field_kind(id) {
            FieldKind::Primitive(_) => out.extend(self.packed(own, Counts::Const(1))),
            FieldKind::Bitset(bits) => out.extend(self.packed(own, Counts::Const(bits))),
            FieldKind::String | FieldKind::Streamer => {
                let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
                out.extend(self.packed(own, Counts::Const(1)));
                if let Some(&chars) = cols.get(1) {
                    out.push(ColumnCounts {
                        column: chars,
                        element_bytes: CHARACTER_BYTES,
                        counts: Counts::PerItem(r.iter().map(|&(a, b)| (b - a) as u64).collect()),
                    });
                }
            }
            FieldKind::List(child) | FieldKind::Map(child) => {
                let r = offsets_of(array).ok_or_else(|| mismatch(&name()))?;
                let values = list_values(array).ok_or_else(|| mismatch(&name()))?;
                let (first, last) = item_span(&r);
                let mut inner = Vec::new();
                self.count(
                    child,
                    values.slice(first, last - first).as_ref(),
                    &mut inner,
                )?;
                out.extend(self.packed(own, Counts::Const(1)));
                for c in inner {
                    let ranges = r.iter().map(|&(a, b)| (a - first, b - first));
                    out.push(ColumnCounts {
                        counts: c.counts.gather(ranges),
                        ..c
                    });
                }
            }
            FieldKind::Optional(child) => {
                let mut inner = Vec::new();
                self.count(child, array, &mut inner)?;
                out.extend(own.map(|column| ColumnCounts {
                    column,
                    element_bytes: OPTIONAL_INDEX_BYTES,
                    counts: Counts::Const(1),
                }));
                let nulls = array.logical_nulls();
                for c in inner {
                    let counts = match &nulls {
                        None => c.counts,
                        Some(valid) => Counts::PerItem(
                            (0..n)
                                .map(|i| {
                                    if valid.is_valid(i) {
                                        c.counts.get(i)
                                    } else {
                                        0
                                    }
                                })
                                .collect(),
                        ),
                    };
                    out.push(ColumnCounts { counts, ..c });
                }
            }
            FieldKind::Record(_, children) => {
                let DataType::Struct(_) = array.data_type() else {
                    return Err(mismatch(&name()));
                };
                let s = array.as_struct();
                for (k, &c) in children.iter().enumerate() {
                    let column = s.columns().get(k).ok_or_else(|| mismatch(&name()))?;
                    self.count(c, column.as_ref(), out)?;
                }
            }
            FieldKind::Array(child, len) => {
                let len = to_usize(len, "items of a fixed-size array")?;
                let values = fixed_size_items(array, len).ok_or_else(|| mismatch(&name()))?;
                let mut inner = Vec::new();
                self.count(child, values.as_ref(), &mut inner)?;
                for c in inner {
                    let counts = match c.counts {
                        Counts::Const(k) => Counts::Const(k * len as u64),
                        other => other.gather((0..n).map(|i| (i * len, (i + 1) * len))),
                    };
                    out.push(ColumnCounts { counts, ..c });
                }
            }
            FieldKind::Variant(children) => {
                let DataType::Union(fields, _) = array.data_type() else {
                    return Err(mismatch(&name()));
                };
                let union = array.as_union();
                out.extend(own.map(|column| ColumnCounts {
                    column,
                    element_bytes: SWITCH_BYTES,
                    counts: Counts::Const(1),
                }));
                for ((type_id, _), &child) in fields.iter().zip(&children) {
                    // Only the alternative's values these entries hold.
                    let (lo, hi) = alternative_span(union, type_id);
                    let values = union.child(type_id).slice(lo, hi - lo);
                    let mut inner = Vec::new();
                    self.count(child, values.as_ref(), &mut inner)?;
                    for c in inner {
                        let per = (0..n)
                            .map(|i| {
                                chosen_offset(union, type_id, i)
                                    .map_or(0, |off| c.counts.get(off - lo))
                            })
                            .collect();
                        out.push(ColumnCounts {
                            counts: Counts::PerItem(per),
                            ..c
                        });
                    }
                }
            }
            FieldKind::Wrapper(child) => self.count(child, array, out)?,
            FieldKind::Cardinality(_) => {}
            FieldKind::Unknown(why) => return Err(Error::Unsupported(why)),
        }
        Ok(())
    }
}

/// The items of a fixed-size list array (a `std::array` of `len` items per element).
fn fixed_size_items(array: &dyn Array, len: usize) -> Option<ArrayRef> {
    let DataType::FixedSizeList(_, _) = array.data_type() else {
        return None;
    };
    let list = array.as_fixed_size_list();
    Some(list.values().slice(list.offset() * len, list.len() * len))
}

/// The offset in alternative `type_id`'s values of the value item `i` of `union` holds,
/// if it holds one of that alternative (a null alternative is the invalid state: no
/// value).
fn chosen_offset(union: &UnionArray, type_id: i8, i: usize) -> Option<usize> {
    if union.type_id(i) != type_id {
        return None;
    }
    let off = union.value_offset(i);
    (!union.child(type_id).is_null(off)).then_some(off)
}

/// The values of alternative `type_id` that the items of `union` hold: from the first
/// to the last one, `(0, 0)` for none. A dense union's alternatives may hold more values
/// than a slice of it uses.
fn alternative_span(union: &UnionArray, type_id: i8) -> (usize, usize) {
    let mut span: Option<(usize, usize)> = None;
    for i in 0..union.len() {
        if let Some(off) = chosen_offset(union, type_id, i) {
            span = Some(span.map_or((off, off + 1), |(lo, hi)| (lo.min(off), hi.max(off + 1))));
        }
    }
    span.unwrap_or((0, 0))
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
            let len = to_usize(len, "items of a fixed-size array")?;
            let values = fixed_size_items(array, len).ok_or_else(|| mismatch(&name()))?;
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
                let (lo, hi) = alternative_span(union, type_id);
                let values = union.child(type_id).slice(lo, hi - lo);
                per_alt.push((type_id, lo, item_ops(desc, c, values.as_ref())?));
            }
            for i in 0..n {
                let t = union.type_id(i);
                if let Some(off) = chosen_offset(union, t, i) {
                    if let Some((_, lo, items)) = per_alt.iter().find(|(id, _, _)| *id == t) {
                        out.extend_items(items, off - lo, off - lo + 1);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Footer, Header};
    use crate::schema::{arrow_field, values_to_array, ColumnDefaults, SchemaBuilder, Value};
    use std::collections::HashSet;

    /// The descriptor of a schema of top-level fields (name, C++ type).
    fn descriptor_of(types: &[(&str, &str)]) -> Descriptor {
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
        Descriptor::build(
            super::super::cluster::FORMAT_VERSION,
            header,
            Footer::default(),
            Vec::new(),
        )
        .expect("a descriptor")
    }

    /// The arrays of the top-level fields of `desc` holding `rows` (a value per field).
    fn arrays_of(desc: &Descriptor, rows: &[Vec<Value>]) -> Vec<ArrayRef> {
        desc.top_level
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let field = arrow_field(desc, id, desc.field(id).name()).expect("a field");
                let values: Vec<&Value> = rows.iter().map(|r| &r[k]).collect();
                values_to_array(&field, &values).expect("an array")
            })
            .collect()
    }

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
            (
                "var",
                "std::variant<std::int32_t,std::string,std::vector<float>>",
            ),
        ];
        let desc = descriptor_of(&types);
        let mut next = crate::write::pseudo_random(7);
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
                match next(4) {
                    0 => Value::Null,
                    1 => Value::Variant(0, Box::new(Value::Int(4))),
                    2 => Value::Variant(1, Box::new(text(&mut next))),
                    _ => Value::Variant(2, Box::new(floats(next(6)))),
                },
            ];
            rows.push(row);
        }
        let arrays = arrays_of(&desc, &rows);
        let fields = desc.top_level.clone();
        (desc, fields, arrays)
    }

    /// Packed sizes of the descriptor's columns (as the writer finds them).
    fn packed_sizes(desc: &Descriptor) -> Vec<u64> {
        desc.columns
            .iter()
            .map(|c| {
                let r = &c.record;
                crate::encoding::ColumnEncoding::from_record(
                    r.column_type,
                    r.bits_on_storage,
                    r.value_range,
                )
                .ok()
                .and_then(|e| e.page_bytes(1))
                .unwrap_or(8)
            })
            .collect()
    }

    #[test]
    fn counts_are_the_totals_of_each_entrys_appends() {
        let (desc, fields, arrays) = sample(300);
        let packed = packed_sizes(&desc);
        let mut total = 0u64;
        for (&id, array) in fields.iter().zip(&arrays) {
            let name = desc.field(id).name();
            let ops = item_ops(&desc, id, array.as_ref()).expect("appends");
            let counts = count_entries(
                &desc,
                &packed,
                &[id],
                std::slice::from_ref(array),
                0,
                array.len(),
            )
            .expect("counts");
            let counted: HashSet<u32> = counts.columns().map(|(c, _)| c).collect();
            for (column, _) in &ops.ops {
                assert!(
                    counted.contains(column),
                    "field {name}: column {column} uncounted"
                );
            }
            for (column, per_entry) in counts.columns() {
                for i in 0..array.len() {
                    let appends = &ops.ops[ops.bounds[i]..ops.bounds[i + 1]];
                    let expected: u64 = appends
                        .iter()
                        .filter(|(c, _)| *c == column)
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

    #[test]
    fn counted_in_windows_as_all_at_once() {
        let (desc, fields, arrays) = sample(300);
        let packed = packed_sizes(&desc);
        let whole = count_entries(&desc, &packed, &fields, &arrays, 0, 300).expect("counts");
        // Counted in three windows, joined, then split where a slice would end.
        let mut joined = count_entries(&desc, &packed, &fields, &arrays, 0, 0).expect("none");
        for (start, len) in [(0, 120), (120, 1), (121, 179)] {
            let part = count_entries(&desc, &packed, &fields, &arrays, start, len).expect("part");
            joined.append(part).expect("joined");
        }
        let rest = joined.split_off(200);
        assert_eq!((joined.len(), rest.len()), (200, 100));
        assert_eq!(joined.sizes(), &whole.sizes()[..200]);
        assert_eq!(rest.sizes(), &whole.sizes()[200..]);
        let whole_columns: Vec<(u32, &Counts)> = whole.columns().collect();
        for (part, first) in [(&joined, 0), (&rest, 200)] {
            let columns: Vec<(u32, &Counts)> = part.columns().collect();
            assert_eq!(columns.len(), whole_columns.len());
            for ((c, counts), (wc, whole_counts)) in columns.iter().zip(&whole_columns) {
                assert_eq!(c, wc);
                for i in 0..part.len() {
                    assert_eq!(counts.get(i), whole_counts.get(first + i), "column {c}");
                }
            }
        }
    }

    #[test]
    fn entry_sizes_are_the_bytes_root_counts() {
        // Two entries: a float (4 bytes), a vector of floats (an 8-byte index element and
        // 4 bytes per item), a string (8-byte index, a byte per character), an optional
        // int (8 bytes, as ROOT counts its in-memory index, plus 4 when present), a
        // variant (16 bytes for the switch, plus the value held) and a bitset of 5 bits (a
        // byte per bit).
        let desc = descriptor_of(&[
            ("f", "float"),
            ("v", "std::vector<float>"),
            ("s", "std::string"),
            ("o", "std::optional<std::int32_t>"),
            ("var", "std::variant<std::int64_t,std::string>"),
            ("b", "std::bitset<5>"),
        ]);
        let bits = || Value::List((0..5).map(|_| Value::Bool(true)).collect());
        let rows = [
            vec![
                Value::Float(1.0),
                Value::List(vec![Value::Float(1.0); 3]),
                Value::String("abcde".into()),
                Value::Int(7),
                Value::Variant(0, Box::new(Value::Int(1))),
                bits(),
            ],
            vec![
                Value::Float(2.0),
                Value::List(Vec::new()),
                Value::String(String::new()),
                Value::Null,
                Value::Variant(1, Box::new(Value::String("xyz".into()))),
                bits(),
            ],
        ];
        let arrays = arrays_of(&desc, &rows);
        let fields = desc.top_level.clone();
        let counts =
            count_entries(&desc, &packed_sizes(&desc), &fields, &arrays, 0, 2).expect("counts");
        let first = 4 + (8 + 3 * 4) + (8 + 5) + (8 + 4) + (16 + 8) + 5;
        let second = 4 + 8 + 8 + 8 + (16 + (8 + 3)) + 5;
        assert_eq!(counts.sizes(), &[first, second]);
    }
}
