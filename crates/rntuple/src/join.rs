//! Joins of RNTuples ("friends"): a primary RNTuple (or chain of them) drives, and each
//! of its entries is paired with entries of a friend, either by entry number (an
//! aligned friend) or by equal values of key fields.
//!
//! The pieces compose for every front end: [`ReaderChain`] numbers the entries of
//! several readers globally; [`KeyIndex`] maps key tuples to friend entries, built from
//! the friend's key columns only; [`Matches`] says which friend entries each primary
//! entry of a range pairs with; [`ReaderChain::gather`] reads the friend's fields for
//! those entries (only the clusters holding them) and [`friend_column`] makes the
//! friend's record column of the result. [`Join`] puts them together for the CLI.
//!
//! Semantics, which ROOT 6.40's `RNTupleProcessor` shares where it is right: the primary
//! decides the rows (`how = left`: every primary entry once, in order; `inner`: only
//! those with a match); a duplicated friend key gives its lowest entry (`first`), an
//! error (`error`) or a list of every match (`all`). Unlike ROOT, keys compare by value
//! (an `int32` 5 matches a `uint64` 5, a negative `int32` matches the same `int64`), a
//! match in any file of a friend chain is found, and an aligned friend of another
//! length is an error unless `how = left` (missing entries then have no friend).

use crate::error::{did_you_mean, Error, Result};
use crate::read::{Projection, RNTupleReader, ReadTypes, RecordPaths, StepSize};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ListArray, RecordBatch, RecordBatchOptions, StructArray, UInt64Array,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// Which primary entries a join keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum How {
    /// Every primary entry, once, in primary order; no friend where there is no match.
    #[default]
    Left,
    /// Only the primary entries with a match, in primary order.
    Inner,
}

impl How {
    /// `"left"` or `"inner"`; anything else is an invalid argument naming it.
    pub fn parse(text: &str) -> Result<How> {
        match text {
            "left" => Ok(How::Left),
            "inner" => Ok(How::Inner),
            other => Err(Error::InvalidArgument(format!(
                "how=\"{other}\": a join is \"left\" or \"inner\""
            ))),
        }
    }
}

/// What a join does with a key that several friend entries share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Duplicates {
    /// The lowest friend entry (the first file of a chain first), as ROOT.
    #[default]
    First,
    /// An error naming the key and two of its entries.
    Error,
    /// Every matching friend entry, in entry order: the friend is a list of records.
    All,
}

impl Duplicates {
    /// `"first"`, `"error"` or `"all"`; anything else is an invalid argument.
    pub fn parse(text: &str) -> Result<Duplicates> {
        match text {
            "first" => Ok(Duplicates::First),
            "error" => Ok(Duplicates::Error),
            "all" => Ok(Duplicates::All),
            other => Err(Error::InvalidArgument(format!(
                "duplicates=\"{other}\": duplicates are \"first\", \"error\" or \"all\""
            ))),
        }
    }
}

/// Readers read one after the other, their entries numbered globally (0 to the sum of
/// their entries, in order): a chain of files. Members may have different RNTuple names;
/// fields are selected by the first member's schema and must read the same in the others
/// (each member read with its types, [`ReaderChain::with_types`], to make them so).
#[derive(Debug, Clone)]
pub struct ReaderChain {
    members: Vec<Arc<RNTupleReader>>,
    /// The global number of each member's first entry, and the total at the end.
    starts: Vec<u64>,
    /// The types each member's fields are read as (none: as on disk).
    types: Vec<ReadTypes>,
}

impl ReaderChain {
    /// A chain of `members`, in order; an empty list is an invalid argument.
    pub fn new(members: Vec<Arc<RNTupleReader>>) -> Result<ReaderChain> {
        if members.is_empty() {
            return Err(Error::InvalidArgument(
                "a chain needs at least one RNTuple".into(),
            ));
        }
        let mut starts = Vec::with_capacity(members.len() + 1);
        let mut total = 0u64;
        for m in &members {
            starts.push(total);
            total += m.num_entries();
        }
        starts.push(total);
        Ok(ReaderChain {
            members,
            starts,
            types: Vec::new(),
        })
    }

    /// The chain with each member's fields read as `types` asks (one per member, in
    /// order: the types that make the files' schemas one, as `rntuple::read::unify`
    /// gives them).
    pub fn with_types(mut self, types: Vec<ReadTypes>) -> Result<ReaderChain> {
        if types.len() != self.members.len() {
            return Err(Error::InvalidArgument(format!(
                "{} types for a chain of {} files",
                types.len(),
                self.members.len()
            )));
        }
        self.types = types;
        Ok(self)
    }

    /// The members, in order.
    pub fn members(&self) -> &[Arc<RNTupleReader>] {
        &self.members
    }

    /// The global entry number of each member's first entry.
    pub fn member_starts(&self) -> &[u64] {
        &self.starts[..self.members.len()]
    }

    /// Entries over all members.
    pub fn num_entries(&self) -> u64 {
        self.starts[self.members.len()]
    }

    /// The files and RNTuple names, for messages: `f.root:Events`, or the first one and
    /// how many follow.
    pub fn describe(&self) -> String {
        let one = |r: &RNTupleReader| format!("{}:{}", r.source().name(), r.path());
        match self.members.as_slice() {
            [only] => one(only),
            [first, rest @ ..] => format!("{} (and {} more files)", one(first), rest.len()),
            [] => String::new(),
        }
    }

    /// The first member's field paths.
    pub fn field_paths(&self) -> Vec<String> {
        self.members
            .first()
            .map(|m| m.field_paths())
            .unwrap_or_default()
    }

    /// The projection of `names` in every member; the first member's schema is the
    /// chain's, and a member whose schema differs is an error naming it.
    fn projections(
        &self,
        names: Option<&[String]>,
        record_paths: RecordPaths,
    ) -> Result<Vec<Projection>> {
        let none = ReadTypes::new();
        let projections = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| m.projection_as(names, record_paths, self.types.get(i).unwrap_or(&none)))
            .collect::<Result<Vec<_>>>()?;
        let first = projections[0].schema();
        for (p, m) in projections.iter().zip(&self.members).skip(1) {
            if p.schema().fields() != first.fields() {
                return Err(Error::InvalidArgument(format!(
                    "the chain's files differ in the fields read: {}:{} does not match {}",
                    m.source().name(),
                    m.path(),
                    self.describe()
                )));
            }
        }
        Ok(projections)
    }

    /// The Arrow schema a read of `names` gives.
    pub fn schema(&self, names: Option<&[String]>, record_paths: RecordPaths) -> Result<SchemaRef> {
        Ok(self.projections(names, record_paths)?[0].schema().clone())
    }

    /// The selected fields over the global entries `entries`, in one batch.
    pub fn read(
        &self,
        names: Option<&[String]>,
        record_paths: RecordPaths,
        entries: Range<u64>,
    ) -> Result<RecordBatch> {
        if entries.start > entries.end || entries.end > self.num_entries() {
            return Err(Error::InvalidArgument(format!(
                "entry range {}..{} is outside 0..{} of {}",
                entries.start,
                entries.end,
                self.num_entries(),
                self.describe()
            )));
        }
        if names.is_some_and(<[String]>::is_empty) {
            // No field: only the rows (a join whose fields are all the friend's).
            let options = RecordBatchOptions::new()
                .with_row_count(Some(usize::try_from(entries.end - entries.start).map_err(
                    |_| Error::InvalidArgument("too many entries for one batch".into()),
                )?));
            return Ok(RecordBatch::try_new_with_options(
                Arc::new(Schema::empty()),
                Vec::new(),
                &options,
            )?);
        }
        let projections = self.projections(names, record_paths)?;
        let schema = projections[0].schema().clone();
        let mut batches = Vec::new();
        for (i, (member, projection)) in self.members.iter().zip(&projections).enumerate() {
            let (lo, hi) = (self.starts[i], self.starts[i + 1]);
            let (a, b) = (entries.start.max(lo), entries.end.min(hi));
            if a < b {
                let batch = member.read_projection(projection, a - lo..b - lo)?;
                batches.push(RecordBatch::try_new(
                    schema.clone(),
                    batch.columns().to_vec(),
                )?);
            }
        }
        concat(&schema, batches)
    }

    /// The selected fields of the global entries `entries` (any order, repeats allowed),
    /// one row per element: only the clusters holding them are read (from the first to
    /// the last wanted entry of each run of adjacent clusters), then the rows are taken.
    pub fn gather(
        &self,
        names: Option<&[String]>,
        record_paths: RecordPaths,
        entries: &[u64],
    ) -> Result<RecordBatch> {
        let projections = self.projections(names, record_paths)?;
        let schema = projections[0].schema().clone();
        let total = self.num_entries();
        if let Some(bad) = entries.iter().find(|&&e| e >= total) {
            return Err(Error::InvalidArgument(format!(
                "entry {bad} is outside 0..{total} of {}",
                self.describe()
            )));
        }
        let mut wanted: Vec<u64> = entries.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        // The row of each wanted entry in the concatenation of the ranges read.
        let mut row_of: HashMap<u64, u64, foldhash::fast::RandomState> =
            HashMap::with_capacity_and_hasher(wanted.len(), Default::default());
        let mut batches = Vec::new();
        let mut rows_before = 0u64;
        for (i, (member, projection)) in self.members.iter().zip(&projections).enumerate() {
            let (lo, hi) = (self.starts[i], self.starts[i + 1]);
            let first = wanted.partition_point(|&e| e < lo);
            let last = wanted.partition_point(|&e| e < hi);
            let local: Vec<u64> = wanted[first..last].iter().map(|e| e - lo).collect();
            if local.is_empty() {
                continue;
            }
            let ranges = cluster_runs(member, &local);
            let mut range_start = rows_before;
            let mut next = 0usize;
            for range in &ranges {
                while next < local.len() && local[next] < range.end {
                    row_of.insert(local[next] + lo, range_start + local[next] - range.start);
                    next += 1;
                }
                range_start += range.end - range.start;
            }
            rows_before = range_start;
            for batch in member.read_projection_ranges(projection, ranges)? {
                batches.push(RecordBatch::try_new(
                    schema.clone(),
                    batch?.columns().to_vec(),
                )?);
            }
        }
        let read = concat(&schema, batches)?;
        let indices: UInt64Array = entries
            .iter()
            .map(|e| row_of.get(e).copied())
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| Error::InvalidArgument("an entry was not gathered".into()))?
            .into();
        Ok(arrow_select::take::take_record_batch(&read, &indices)?)
    }
}

/// Concatenates batches of one schema (an empty list gives an empty batch).
fn concat(schema: &SchemaRef, mut batches: Vec<RecordBatch>) -> Result<RecordBatch> {
    match batches.len() {
        0 => Ok(RecordBatch::new_empty(schema.clone())),
        1 => Ok(batches.remove(0)),
        _ => Ok(arrow_select::concat::concat_batches(schema, &batches)?),
    }
}

/// Entry ranges covering the sorted local entries `wanted` of `reader`: one per run of
/// adjacent clusters holding wanted entries, from its first to its last wanted entry.
fn cluster_runs(reader: &RNTupleReader, wanted: &[u64]) -> Vec<Range<u64>> {
    let clusters = &reader.descriptor().clusters;
    let cluster_of = |e: u64| {
        clusters
            .partition_point(|c| c.first_entry + c.n_entries <= e)
            .min(clusters.len().saturating_sub(1))
    };
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let mut last_cluster = usize::MAX;
    for &e in wanted {
        let c = cluster_of(e);
        match ranges.last_mut() {
            Some(r) if c <= last_cluster.saturating_add(1) => r.end = e + 1,
            _ => ranges.push(e..e + 1),
        }
        last_cluster = c;
    }
    ranges
}

/// A key tuple, each key's value widened to 128 bits: keys compare by value, whatever
/// their width and sign. A single key (the common case: an event number) is held
/// inline, so that indexing and looking up a row allocates nothing; an index holds
/// tuples of one form only (its number of keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum KeyTuple {
    /// The value of a single key.
    One(i128),
    /// The values of two or more keys, in the index's key order.
    Many(Box<[i128]>),
}

impl KeyTuple {
    /// The tuple of `values` (one per key).
    fn new(values: Vec<i128>) -> KeyTuple {
        match values.as_slice() {
            [one] => KeyTuple::One(*one),
            _ => KeyTuple::Many(values.into_boxed_slice()),
        }
    }

    /// The key values, in the index's key order.
    fn values(&self) -> &[i128] {
        match self {
            KeyTuple::One(v) => std::slice::from_ref(v),
            KeyTuple::Many(vs) => vs,
        }
    }
}

/// A map from key tuples, hashed by foldhash: several times faster than the standard
/// library's SipHash on integer keys, still seeded per process.
type KeyMap<V> = HashMap<KeyTuple, V, foldhash::fast::RandomState>;

/// Friend entries by key tuple, built from the friend's key columns only.
#[derive(Debug, Clone, Default)]
pub struct KeyIndex {
    keys: Vec<String>,
    /// The lowest entry of each key tuple.
    first: KeyMap<u64>,
    /// The further entries of key tuples found more than once, ascending.
    more: KeyMap<Vec<u64>>,
}

/// Checks that `data_type` can be a join key (integers of any width and sign, bool),
/// naming the field and where it is.
pub fn check_key_type(name: &str, data_type: &DataType, what: &str) -> Result<()> {
    if data_type.is_integer() || matches!(data_type, DataType::Boolean) {
        return Ok(());
    }
    let hint = if data_type.is_floating() {
        ": floating-point keys are refused, as equality of floats is unreliable"
    } else {
        ""
    };
    Err(Error::InvalidArgument(format!(
        "cannot join on field \"{name}\" of {what}: its type is {data_type}, and join keys \
         must be integers or bool{hint}"
    )))
}

/// Calls `f(row, value)` for every row of a key column, its value widened (None for a
/// null), straight from the column's buffer.
fn each_key_value(
    name: &str,
    column: &dyn Array,
    what: &str,
    mut f: impl FnMut(usize, Option<i128>),
) -> Result<()> {
    fn each<T: arrow_array::ArrowPrimitiveType>(
        a: &dyn Array,
        f: &mut impl FnMut(usize, Option<i128>),
    ) where
        T::Native: Into<i128>,
    {
        for (row, v) in a.as_primitive::<T>().iter().enumerate() {
            f(row, v.map(Into::into));
        }
    }
    match column.data_type() {
        DataType::Int8 => each::<Int8Type>(column, &mut f),
        DataType::Int16 => each::<Int16Type>(column, &mut f),
        DataType::Int32 => each::<Int32Type>(column, &mut f),
        DataType::Int64 => each::<Int64Type>(column, &mut f),
        DataType::UInt8 => each::<UInt8Type>(column, &mut f),
        DataType::UInt16 => each::<UInt16Type>(column, &mut f),
        DataType::UInt32 => each::<UInt32Type>(column, &mut f),
        DataType::UInt64 => each::<UInt64Type>(column, &mut f),
        DataType::Boolean => {
            for (row, v) in column.as_boolean().iter().enumerate() {
                f(row, v.map(i128::from));
            }
        }
        other => check_key_type(name, other, what)?,
    }
    Ok(())
}

/// The values of a key column, widened (None for a null).
fn key_values(name: &str, column: &dyn Array, what: &str) -> Result<Vec<Option<i128>>> {
    let mut values = Vec::with_capacity(column.len());
    each_key_value(name, column, what, |_, v| values.push(v))?;
    Ok(values)
}

/// The key tuple of each row of `columns`, handed to `f` with the row (None where a key
/// is null: no match); a single key goes straight from its column.
fn each_key_tuple(
    keys: &[String],
    columns: &[ArrayRef],
    what: &str,
    mut f: impl FnMut(usize, Option<KeyTuple>),
) -> Result<()> {
    if let ([key], [column]) = (keys, columns) {
        return each_key_value(key, column.as_ref(), what, |row, v| {
            f(row, v.map(KeyTuple::One));
        });
    }
    for (row, tuple) in key_tuples(keys, columns, what)?.into_iter().enumerate() {
        f(row, tuple);
    }
    Ok(())
}

/// The key tuple of each row of `columns` (None where a key is null: no match).
fn key_tuples(keys: &[String], columns: &[ArrayRef], what: &str) -> Result<Vec<Option<KeyTuple>>> {
    if columns.len() != keys.len() {
        return Err(Error::InvalidArgument(format!(
            "{} key columns given for the {} keys {}",
            columns.len(),
            keys.len(),
            keys.join(", ")
        )));
    }
    let rows = columns.first().map_or(0, |c| c.len());
    let values = keys
        .iter()
        .zip(columns)
        .map(|(k, c)| key_values(k, c.as_ref(), what))
        .collect::<Result<Vec<_>>>()?;
    Ok((0..rows)
        .map(|row| {
            values
                .iter()
                .map(|v| v.get(row).copied().flatten())
                .collect::<Option<Vec<i128>>>()
                .map(KeyTuple::new)
        })
        .collect())
}

/// A key tuple as `run=1, event=2`.
fn show_key(keys: &[String], tuple: &[i128]) -> String {
    keys.iter()
        .zip(tuple)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves join keys in a chain: each must be a field (or a path through records) of
/// the first member, of an integer or bool type; else an error naming the field, the
/// files and the close names.
fn key_schema(chain: &ReaderChain, keys: &[String], side: &str) -> Result<SchemaRef> {
    check_keys(keys)?;
    let paths = chain.field_paths();
    for k in keys {
        if !paths.iter().any(|p| p == k) {
            let hint = did_you_mean(k, paths.iter().map(String::as_str))
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            return Err(Error::NotFound(format!(
                "join key \"{k}\" is not a field of the {side} {}{hint}",
                chain.describe()
            )));
        }
    }
    let schema = chain.schema(Some(keys), RecordPaths::Columns)?;
    for f in schema.fields() {
        check_key_type(
            f.name(),
            f.data_type(),
            &format!("the {side} {}", chain.describe()),
        )?;
    }
    Ok(schema)
}

/// Checks a list of join keys: at least one, each once.
pub fn check_keys(keys: &[String]) -> Result<()> {
    if keys.is_empty() {
        return Err(Error::InvalidArgument(
            "a key join needs at least one key field".into(),
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        if keys[..i].contains(k) {
            return Err(Error::InvalidArgument(format!(
                "join key \"{k}\" is given twice"
            )));
        }
    }
    Ok(())
}

impl KeyIndex {
    /// The index of `friend` on `keys`: its key columns (and nothing else) read in
    /// steps of about 64 MiB, each row's key tuple mapped to its global entry.
    pub fn build(friend: &ReaderChain, keys: &[String]) -> Result<KeyIndex> {
        key_schema(friend, keys, "friend")?;
        let what = format!("the friend {}", friend.describe());
        let mut index = KeyIndex {
            keys: keys.to_vec(),
            ..Default::default()
        };
        for (member, &start) in friend.members().iter().zip(friend.member_starts()) {
            let projection = member.projection(Some(keys), RecordPaths::Columns)?;
            let ranges = member.batch_ranges(
                &projection,
                0..member.num_entries(),
                StepSize::Bytes(64 << 20),
            )?;
            let starts: Vec<u64> = ranges.iter().map(|r| r.start).collect();
            for (batch, first) in member
                .read_projection_ranges(&projection, ranges)?
                .zip(starts)
            {
                let batch = batch?;
                each_key_tuple(keys, batch.columns(), &what, |row, tuple| {
                    if let Some(tuple) = tuple {
                        index.insert(tuple, start + first + row as u64);
                    }
                })?;
            }
        }
        Ok(index)
    }

    fn insert(&mut self, tuple: KeyTuple, entry: u64) {
        use std::collections::hash_map::Entry;
        match self.first.entry(tuple) {
            Entry::Vacant(v) => {
                v.insert(entry);
            }
            Entry::Occupied(o) => self.more.entry(o.key().clone()).or_default().push(entry),
        }
    }

    /// The key field names.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Number of distinct key tuples.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// Whether the friend had no entry with all keys set.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// An error if a key tuple has several friend entries, naming the tuple and its two
    /// lowest entries (the lowest such second entry, so the message is reproducible).
    pub fn check_unique(&self, friend: &str) -> Result<()> {
        let duplicate = self
            .more
            .iter()
            .filter_map(|(k, more)| more.first().map(|&second| (second, k)))
            .min();
        match duplicate {
            None => Ok(()),
            Some((second, tuple)) => Err(Error::InvalidArgument(format!(
                "duplicates=\"error\": the key ({}) is at friend entries {} and {second} of {friend}",
                show_key(&self.keys, tuple.values()),
                self.first.get(tuple).copied().unwrap_or_default(),
            ))),
        }
    }

    /// The friend entries each row of the primary's key `columns` (in the index's key
    /// order) matches: the first, or all of them.
    pub fn lookup(
        &self,
        columns: &[ArrayRef],
        duplicates: Duplicates,
        primary: &str,
    ) -> Result<Matches> {
        let rows = columns.first().map_or(0, |c| c.len());
        let mut offsets = Vec::with_capacity(rows + 1);
        let mut entries = Vec::with_capacity(rows);
        offsets.push(0u64);
        let what = format!("the primary {primary}");
        each_key_tuple(&self.keys, columns, &what, |_, tuple| {
            if let Some(t) = tuple {
                if let Some(&first) = self.first.get(&t) {
                    entries.push(first);
                    if duplicates == Duplicates::All {
                        if let Some(more) = self.more.get(&t) {
                            entries.extend_from_slice(more);
                        }
                    }
                }
            }
            offsets.push(entries.len() as u64);
        })?;
        Ok(Matches { offsets, entries })
    }

    /// The index as bytes (to ship it to other processes): the keys, then each tuple's
    /// values and entries, little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let put = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
        put(&mut out, self.keys.len() as u64);
        for k in &self.keys {
            put(&mut out, k.len() as u64);
            out.extend_from_slice(k.as_bytes());
        }
        put(&mut out, self.first.len() as u64);
        for (tuple, &first) in &self.first {
            for v in tuple.values() {
                out.extend_from_slice(&v.to_le_bytes());
            }
            let more = self.more.get(tuple).map_or(&[][..], Vec::as_slice);
            put(&mut out, 1 + more.len() as u64);
            put(&mut out, first);
            for &e in more {
                put(&mut out, e);
            }
        }
        out
    }

    /// An index from [`KeyIndex::to_bytes`]; bytes that do not parse are corrupt data.
    pub fn from_bytes(bytes: &[u8]) -> Result<KeyIndex> {
        let mut cursor = ByteCursor { bytes, at: 0 };
        let n_keys = cursor.u64()?;
        let mut index = KeyIndex::default();
        for _ in 0..n_keys {
            let len = usize::try_from(cursor.u64()?).map_err(|_| ByteCursor::bad())?;
            let name =
                String::from_utf8(cursor.take(len)?.to_vec()).map_err(|_| ByteCursor::bad())?;
            index.keys.push(name);
        }
        let n_tuples = cursor.u64()?;
        for _ in 0..n_tuples {
            let mut tuple = Vec::with_capacity(index.keys.len());
            for _ in 0..index.keys.len() {
                let b: [u8; 16] = cursor.take(16)?.try_into().map_err(|_| ByteCursor::bad())?;
                tuple.push(i128::from_le_bytes(b));
            }
            let tuple = KeyTuple::new(tuple);
            for _ in 0..cursor.u64()? {
                let entry = cursor.u64()?;
                index.insert(tuple.clone(), entry);
            }
        }
        Ok(index)
    }
}

/// Reads [`KeyIndex::to_bytes`]'s output.
struct ByteCursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> ByteCursor<'a> {
    fn bad() -> Error {
        Error::corrupt("a join key index", "the bytes end early or do not parse")
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(Self::bad)?;
        let piece = self.bytes.get(self.at..end).ok_or_else(Self::bad)?;
        self.at = end;
        Ok(piece)
    }

    fn u64(&mut self) -> Result<u64> {
        let b: [u8; 8] = self.take(8)?.try_into().map_err(|_| Self::bad())?;
        Ok(u64::from_le_bytes(b))
    }
}

/// The friend entries each primary row of a range pairs with: row `i` has
/// `entries[offsets[i]..offsets[i + 1]]` (none, one, or with [`Duplicates::All`] any
/// number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matches {
    /// `rows + 1` offsets into `entries`, from 0.
    pub offsets: Vec<u64>,
    /// Global friend entry numbers.
    pub entries: Vec<u64>,
}

impl Matches {
    /// An aligned friend of `friend_entries` entries over the primary's global entries
    /// `rows`: entry `i` pairs with friend entry `i` where the friend has one.
    pub fn aligned(rows: Range<u64>, friend_entries: u64) -> Matches {
        Matches::aligned_entries(rows, friend_entries)
    }

    /// An aligned friend of `friend_entries` entries for primary rows of the given
    /// global entry numbers (rows an inner join kept need not be contiguous).
    pub fn aligned_entries(rows: impl IntoIterator<Item = u64>, friend_entries: u64) -> Matches {
        let mut offsets = vec![0u64];
        let mut entries = Vec::new();
        for e in rows {
            if e < friend_entries {
                entries.push(e);
            }
            offsets.push(entries.len() as u64);
        }
        Matches { offsets, entries }
    }

    /// Number of primary rows.
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The rows with at least one match (for an inner join), and the matches of those
    /// rows only.
    pub fn inner(&self) -> (Vec<u64>, Matches) {
        let mut rows = Vec::new();
        let mut offsets = vec![0u64];
        for (i, w) in self.offsets.windows(2).enumerate() {
            if w[1] > w[0] {
                rows.push(i as u64);
                offsets.push(w[1]);
            }
        }
        // Offsets of kept rows are still into `entries`: rows without matches add none.
        (
            rows,
            Matches {
                offsets,
                entries: self.entries.clone(),
            },
        )
    }
}

/// The friend's record column of a join result named `name`: from `friend_rows` (one row
/// per element of `matches.entries`, as [`ReaderChain::gather`] gives them), a nullable
/// record per primary row (null without a match; the first match), or with `all` a list
/// of records (empty without a match).
pub fn friend_column(
    friend_rows: &RecordBatch,
    matches: &Matches,
    all: bool,
    name: &str,
) -> Result<(Field, ArrayRef)> {
    let records = StructArray::from(friend_rows.clone());
    let record_type = records.data_type().clone();
    if all {
        let offsets: Vec<i32> = matches
            .offsets
            .iter()
            .map(|&o| i32::try_from(o))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                Error::InvalidArgument("more than 2^31 friend matches in one read".into())
            })?;
        let item = Arc::new(Field::new("item", record_type, false));
        let list = ListArray::try_new(
            item.clone(),
            OffsetBuffer::new(offsets.into()),
            Arc::new(records),
            None,
        )?;
        return Ok((
            Field::new(name, DataType::List(item), false),
            Arc::new(list),
        ));
    }
    let indices: UInt64Array = matches
        .offsets
        .windows(2)
        .map(|w| (w[1] > w[0]).then_some(w[0]))
        .collect();
    let column = arrow_select::take::take(&records, &indices, None)?;
    Ok((Field::new(name, record_type, true), column))
}

/// A join's definition: keys (none for an aligned friend), which rows, what to do with
/// duplicated keys, and the name of the friend's record.
#[derive(Debug, Clone, Default)]
pub struct JoinSpec {
    /// Key fields, compared by value; empty: aligned by entry number.
    pub on: Vec<String>,
    /// Which primary entries are kept; `None` is a left join that, for an aligned
    /// friend, also requires equal lengths.
    pub how: Option<How>,
    /// What a duplicated friend key does.
    pub duplicates: Duplicates,
    /// The name of the friend's record in the result.
    pub name: String,
}

/// A primary chain joined with a friend chain: [`Join::read`] gives the primary's
/// fields and the friend's record.
#[derive(Debug)]
pub struct Join {
    primary: ReaderChain,
    friend: ReaderChain,
    spec: JoinSpec,
    index: Option<KeyIndex>,
}

impl Join {
    /// Checks the join and builds the friend's key index (the key columns only): an
    /// aligned friend of another length is an error unless `how` is left; keys must be
    /// integer fields of both sides; a primary field named as the friend's record is a
    /// collision.
    pub fn new(primary: ReaderChain, friend: ReaderChain, spec: JoinSpec) -> Result<Join> {
        if spec.name.is_empty() {
            return Err(Error::InvalidArgument(
                "the friend's record needs a name".into(),
            ));
        }
        if primary.field_paths().iter().any(|p| p == &spec.name) {
            return Err(Error::InvalidArgument(format!(
                "the primary {} has a field \"{}\", the name of the friend's record: \
                 choose another name for the friend",
                primary.describe(),
                spec.name
            )));
        }
        let index = if spec.on.is_empty() {
            check_aligned(
                primary.num_entries(),
                friend.num_entries(),
                spec.how,
                &primary.describe(),
                &friend.describe(),
            )?;
            None
        } else {
            key_schema(&primary, &spec.on, "primary")?;
            let index = KeyIndex::build(&friend, &spec.on)?;
            if spec.duplicates == Duplicates::Error {
                index.check_unique(&friend.describe())?;
            }
            Some(index)
        };
        Ok(Join {
            primary,
            friend,
            spec,
            index,
        })
    }

    /// The primary chain.
    pub fn primary(&self) -> &ReaderChain {
        &self.primary
    }

    /// The friend chain.
    pub fn friend(&self) -> &ReaderChain {
        &self.friend
    }

    /// The join's definition.
    pub fn spec(&self) -> &JoinSpec {
        &self.spec
    }

    /// The friend entries the primary's global entries `entries` pair with, the primary
    /// batch (which holds the key columns of a key join) given.
    pub fn matches(&self, primary_keys: &[ArrayRef], entries: Range<u64>) -> Result<Matches> {
        match &self.index {
            None => Ok(Matches::aligned(entries, self.friend.num_entries())),
            Some(index) => {
                index.lookup(primary_keys, self.spec.duplicates, &self.primary.describe())
            }
        }
    }

    /// The primary's fields `primary_fields` (every field for None) with the friend's
    /// record (of `friend_fields`, every field for None) over the primary's entries
    /// `entries`; dotted paths through records are columns of their own (as the CLI's
    /// `dump --fields`). An empty list of friend fields leaves the friend's record out.
    pub fn read(
        &self,
        primary_fields: Option<&[String]>,
        friend_fields: Option<&[String]>,
        entries: Range<u64>,
    ) -> Result<RecordBatch> {
        let mut names: Vec<String> = match primary_fields {
            Some(f) => f.to_vec(),
            None => self
                .primary
                .members()
                .first()
                .map(|m| {
                    let d = m.descriptor();
                    m.readable_fields()
                        .into_iter()
                        .map(|id| d.field(id).name().to_string())
                        .collect()
                })
                .unwrap_or_default(),
        };
        let shown = names.len();
        for k in &self.spec.on {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
        let batch = self
            .primary
            .read(Some(&names), RecordPaths::Columns, entries.clone())?;
        let keys: Vec<ArrayRef> = self
            .spec
            .on
            .iter()
            .map(|k| {
                batch
                    .column_by_name(k)
                    .cloned()
                    .ok_or_else(|| Error::NotFound(format!("join key \"{k}\" was not read")))
            })
            .collect::<Result<_>>()?;
        let mut matches = self.matches(&keys, entries)?;
        let mut batch = batch.project(&(0..shown).collect::<Vec<_>>())?;
        if self.spec.how == Some(How::Inner) {
            let (rows, kept) = matches.inner();
            batch = arrow_select::take::take_record_batch(&batch, &UInt64Array::from(rows))?;
            matches = kept;
        }
        if friend_fields.is_some_and(<[String]>::is_empty) {
            // No friend field asked for: the join only decides the rows.
            return Ok(batch);
        }
        let friend_rows =
            self.friend
                .gather(friend_fields, RecordPaths::Columns, &matches.entries)?;
        let (field, column) = friend_column(
            &friend_rows,
            &matches,
            self.spec.duplicates == Duplicates::All,
            &self.spec.name,
        )?;
        let mut fields: Vec<Field> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(field);
        let mut columns = batch.columns().to_vec();
        columns.push(column);
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }
}

/// An aligned friend must have the primary's length, unless the join is explicitly left
/// (a longer friend's extra entries are then never read; a shorter friend's missing ones
/// are none).
pub fn check_aligned(
    primary_entries: u64,
    friend_entries: u64,
    how: Option<How>,
    primary: &str,
    friend: &str,
) -> Result<()> {
    if primary_entries != friend_entries && how != Some(How::Left) {
        return Err(Error::InvalidArgument(format!(
            "friends not aligned: the primary {primary} has {primary_entries} entries and \
             the friend {friend} has {friend_entries}; join on keys, or use how=\"left\" \
             (entries without a friend entry get none)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, UInt64Array as U64};

    fn index(keys: &[(i128, u64)]) -> KeyIndex {
        let mut index = KeyIndex {
            keys: vec!["event".into()],
            ..Default::default()
        };
        for &(k, e) in keys {
            index.insert(KeyTuple::One(k), e);
        }
        index
    }

    #[test]
    fn keys_match_by_value_whatever_their_width() {
        let idx = index(&[(5, 0), (-1, 1), (5, 2), (7, 3)]);
        let int32: ArrayRef = Arc::new(Int32Array::from(vec![Some(-1), Some(5), None, Some(8)]));
        let m = idx.lookup(&[int32], Duplicates::First, "p").unwrap();
        assert_eq!(m.offsets, vec![0, 1, 2, 2, 2]);
        assert_eq!(m.entries, vec![1, 0]);
        let uint64: ArrayRef = Arc::new(U64::from(vec![5u64, 7]));
        let all = idx.lookup(&[uint64], Duplicates::All, "p").unwrap();
        assert_eq!(all.offsets, vec![0, 2, 3]);
        assert_eq!(all.entries, vec![0, 2, 3]);
        let err = idx.check_unique("f.root").unwrap_err().to_string();
        assert!(
            err.contains("(event=5) is at friend entries 0 and 2 of f.root"),
            "{err}"
        );
        let copy = KeyIndex::from_bytes(&idx.to_bytes()).unwrap();
        assert_eq!(copy.first, idx.first);
        assert_eq!(copy.more, idx.more);
        assert!(KeyIndex::from_bytes(&idx.to_bytes()[..20]).is_err());
    }

    #[test]
    fn aligned_and_inner_matches() {
        let m = Matches::aligned(3..7, 5);
        assert_eq!(m.offsets, vec![0, 1, 2, 2, 2]);
        assert_eq!(m.entries, vec![3, 4]);
        let (rows, kept) = m.inner();
        assert_eq!(rows, vec![0, 1]);
        assert_eq!(kept.offsets, vec![0, 1, 2]);
        assert!(check_aligned(3, 5, None, "p", "f").is_err());
        assert!(check_aligned(3, 5, Some(How::Inner), "p", "f").is_err());
        assert!(check_aligned(3, 5, Some(How::Left), "p", "f").is_ok());
        let float = check_key_type("x", &DataType::Float32, "p").unwrap_err();
        assert!(float
            .to_string()
            .contains("floating-point keys are refused"));
    }
}
