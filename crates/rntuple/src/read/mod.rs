//! Reading: open an RNTuple (anchor → header, footer, page lists → descriptor), then
//! decode any selection of fields over any entry range into Arrow arrays, clusters and
//! pages in parallel, reading only the pages the selection needs.

mod ahead;
mod assemble;
mod column;
mod column_cast;
mod evolve;
mod shared_offsets;
pub(crate) mod source;
mod steps;
mod stream;
mod summary;

pub use ahead::DecodeAhead;
pub use evolve::{unification, unify, FieldOf, Inexact, Unification};
pub use evolve::{DefaultValue, OnOverflow, ReadAs, ReadTypes};
pub use source::{daos_extent, dataset_objects, DatasetObjects, ReadMetrics};
pub use steps::StepSize;
pub use stream::RangeBatches;
pub use summary::{describe, schema_tree, uncompressed_bytes};

pub use crate::schema::{arrow_field, arrow_field_kept, primitive_data_type, TYPE_NAME_KEY};

use crate::error::{Error, Location, Result};
use crate::format::{Anchor, Footer, Header, LinkedAttributeSet, PageList};
use crate::schema::Descriptor;
use ::arrow_schema::{Schema, SchemaRef};
use arrow_array::{new_empty_array, ArrayRef, RecordBatch};
use assemble::Decoder;
use rayon::prelude::*;
use source::Storage;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

/// The attribute schema major version this reader understands.
const ATTRIBUTE_SCHEMA_MAJOR: u16 = 1;

/// One output column of a read: a field, named as selected, with only the record
/// members in `keep` for a projection into collections (all members for `None`). See
/// [`RNTupleReader::selection`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The field read (a top-level field, or a field reached through records only).
    pub id: u32,
    /// The output column's name: the name selected, or the top-level field's for a
    /// projection into collections.
    pub name: String,
    /// For a projection into collections, the fields kept below `id` (the paths to the
    /// selected members and everything below them); `None` keeps everything.
    pub keep: Option<HashSet<u32>>,
}

/// How a selection makes output columns of dotted paths that run through records only
/// (`"a.b"` for a member `b` of a top-level record `a`). Paths into collections
/// (`"Jet._0.pt"`) are always projections: one column per top-level field, named after
/// it, holding only the selected members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordPaths {
    /// `"a.b"` is an output column of its own, named `"a.b"` (`rntuple dump --fields`).
    #[default]
    Columns,
    /// `"a.b"` stays a member of its top-level record: the column `"a"` holds only the
    /// selected members (the shape uproot and Awkward users expect; Python's reading).
    Members,
}

/// What a read produces: the output columns of a selection and their Arrow schema
/// (see [`RNTupleReader::projection`]).
#[derive(Debug, Clone)]
pub struct Projection {
    selection: Vec<Selection>,
    schema: SchemaRef,
    /// The columns as decoded, before the conversions (the same as `schema` without).
    decoded: SchemaRef,
    /// Per column, its conversion to the type asked for (`None`: as on disk); empty
    /// when nothing is converted.
    conversions: Arc<[Option<evolve::Conversion>]>,
    /// Columns decoded further after their conversion, by a feature above the reader
    /// (`streamer_fields`: streamed objects into records), by column index.
    further: Vec<(usize, Arc<dyn FurtherDecoding>)>,
}

/// A column's values decoded further once read, by a feature the reader does not know
/// (the objects of streamer fields decoded by the file's streamer infos): part of the
/// read, so every front end gets the same values from the same call.
pub(crate) trait FurtherDecoding: Send + Sync + std::fmt::Debug {
    /// `array`, whose first value is entry `first_entry`, decoded.
    fn decode(&self, array: &ArrayRef, first_entry: u64) -> Result<ArrayRef>;
}

impl Projection {
    /// The output columns, in order.
    pub fn selection(&self) -> &[Selection] {
        &self.selection
    }

    /// The Arrow schema of the record batches a read of this projection makes.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Column `i` as decoded from its first entry `first_entry`, converted to the type
    /// asked for, then decoded further where a feature asked.
    fn convert(&self, i: usize, array: ArrayRef, first_entry: u64) -> Result<ArrayRef> {
        let array = match self.conversions.get(i) {
            Some(Some(c)) => c.apply(&array, first_entry)?,
            _ => array,
        };
        match self.further.iter().find(|(k, _)| *k == i) {
            Some((_, decoding)) => decoding.decode(&array, first_entry),
            None => Ok(array),
        }
    }

    /// This projection with column `i` decoded further by `decoding` into values of
    /// `field` (named as the column); a column index past the end is left alone.
    pub(crate) fn decoded_further(
        mut self,
        i: usize,
        field: arrow_schema::Field,
        decoding: Arc<dyn FurtherDecoding>,
    ) -> Projection {
        let Some(old) = self.schema.fields().get(i) else {
            return self;
        };
        let mut fields: Vec<arrow_schema::FieldRef> =
            self.schema.fields().iter().cloned().collect();
        fields[i] = Arc::new(field.with_name(old.name()));
        self.schema = Arc::new(Schema::new_with_metadata(
            fields,
            self.schema.metadata().clone(),
        ));
        self.further.retain(|(k, _)| *k != i);
        self.further.push((i, decoding));
        self
    }
}

/// An open RNTuple: its anchor, its descriptor, and the storage its pages are read from.
#[derive(Clone)]
pub struct RNTupleReader {
    storage: Storage,
    anchor: Anchor,
    descriptor: Arc<Descriptor>,
    path: String,
}

impl std::fmt::Debug for RNTupleReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RNTupleReader")
            .field("source", &self.source().name())
            .field("path", &self.path)
            .field("entries", &self.descriptor.n_entries)
            .finish()
    }
}

impl RNTupleReader {
    /// An RNTuple from its parsed envelopes, with no I/O: the footer's cluster groups
    /// and their page lists, in order, become the descriptor (they may have been put
    /// together from the page lists found in a file whose writer died); pages are read
    /// from `storage`.
    pub(crate) fn from_metadata(
        storage: Storage,
        anchor: Anchor,
        path: String,
        header: Header,
        footer: Footer,
        page_lists: Vec<PageList>,
    ) -> Result<RNTupleReader> {
        let version = (
            anchor.version_epoch,
            anchor.version_major,
            anchor.version_minor,
            anchor.version_patch,
        );
        let mut descriptor = Descriptor::build(version, header, footer, page_lists)
            .map_err(storage.locate_in(&path))?;
        let warnings: Vec<String> = descriptor
            .top_level
            .iter()
            .filter_map(|&id| descriptor.unreadable_reason(id))
            .map(|why| format!("skipping {why}"))
            .collect();
        descriptor.warnings.extend(warnings);
        Ok(RNTupleReader {
            storage,
            anchor,
            descriptor: Arc::new(descriptor),
            path,
        })
    }

    /// The linked attribute set `name`, checked to be of a schema version this reader
    /// understands.
    fn attribute_link(&self, name: &str) -> Result<&LinkedAttributeSet> {
        let link = self
            .descriptor
            .attribute_sets
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self
                    .descriptor
                    .attribute_sets
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect();
                Error::NotFound(format!(
                    "RNTuple \"{}\" has no attribute set \"{name}\" (it has: {})",
                    self.path,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            })?;
        if link.schema_version_major != ATTRIBUTE_SCHEMA_MAJOR {
            return Err(Error::Unsupported(format!(
                "attribute schema version {}.{} of attribute set \"{name}\"",
                link.schema_version_major, link.schema_version_minor
            )));
        }
        Ok(link)
    }

    /// The descriptor: schema, columns, clusters.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The descriptor, shared: it outlives the reader (and its open file).
    pub fn shared_descriptor(&self) -> Arc<Descriptor> {
        self.descriptor.clone()
    }

    /// The anchor.
    pub fn anchor(&self) -> &Anchor {
        &self.anchor
    }

    /// The RNTuple's path in its file.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Number of entries.
    pub fn num_entries(&self) -> u64 {
        self.descriptor.n_entries
    }

    /// Top-level fields this reader can decode, in schema order (others are skipped;
    /// [`Descriptor::warnings`] says why).
    pub fn readable_fields(&self) -> Vec<u32> {
        self.descriptor
            .top_level
            .iter()
            .copied()
            .filter(|&id| self.descriptor.unreadable_reason(id).is_none())
            .collect()
    }

    /// Every field's dotted path (`Jet`, `Jet._0`, `Jet._0.pt`), parents first.
    pub fn field_paths(&self) -> Vec<String> {
        let d = &self.descriptor;
        let mut paths = Vec::new();
        let mut stack: Vec<(u32, String)> = d
            .top_level
            .iter()
            .rev()
            .map(|&id| (id, d.field(id).name().to_string()))
            .collect();
        while let Some((id, path)) = stack.pop() {
            for &child in d.field(id).children.iter().rev() {
                stack.push((child, format!("{path}.{}", d.field(child).name())));
            }
            paths.push(path);
        }
        paths
    }

    /// The error for a field `name` the RNTuple does not have, with the names close to
    /// it.
    fn no_field(&self, name: &str) -> Error {
        let paths = self.field_paths();
        let hint = crate::error::did_you_mean(name, paths.iter().map(String::as_str))
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        Error::InvalidArgument(format!(
            "no field \"{name}\" in RNTuple \"{}\" of {}{hint}",
            self.path,
            self.source().name()
        ))
    }

    /// The field names `patterns` select, in order, each once: a name or dotted path as
    /// it is, a glob pattern (`Jet_*`, `Jet.*`) every top-level field (with a dot:
    /// every path) it matches. A name the RNTuple does not have, or a pattern that
    /// matches nothing, is an error with the names close to it.
    pub fn resolve_fields(&self, patterns: &[String]) -> Result<Vec<String>> {
        let paths = self.field_paths();
        let mut names: Vec<String> = Vec::new();
        for text in patterns {
            let matched: Vec<String> = if text.contains(['*', '?', '[']) {
                let pattern = glob::Pattern::new(text).map_err(|e| {
                    Error::InvalidArgument(format!("field pattern \"{text}\": {e}"))
                })?;
                let matched: Vec<String> = paths
                    .iter()
                    .filter(|p| text.contains('.') || !p.contains('.'))
                    .filter(|p| pattern.matches(p))
                    .cloned()
                    .collect();
                if matched.is_empty() {
                    return Err(Error::InvalidArgument(format!(
                        "field pattern \"{text}\" matches no field of RNTuple \"{}\" of {}",
                        self.path,
                        self.source().name()
                    )));
                }
                matched
            } else if self.descriptor.find_field(text).is_some() {
                vec![text.clone()]
            } else {
                return Err(self.no_field(text));
            };
            for name in matched {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        Ok(names)
    }

    /// Resolves field names to the output columns they make: `None` means every
    /// readable top-level field; a top-level name or a dotted path through records
    /// (`"a.b"`) is a column of its own, named as given; paths into collections of
    /// records (`"Jet.pt"` of a collection `Jet`) are projections, gathered into one
    /// column per top-level field (named after it) that holds only the selected members.
    pub fn select_fields(&self, names: Option<&[String]>) -> Result<Vec<(u32, String)>> {
        Ok(self
            .selection(names)?
            .into_iter()
            .map(|s| (s.id, s.name))
            .collect())
    }

    /// The output columns `names` make (see [`RNTupleReader::select_fields`]), with the
    /// members each keeps.
    pub fn selection(&self, names: Option<&[String]>) -> Result<Vec<Selection>> {
        self.selection_with(names, RecordPaths::Columns)
    }

    /// The projection `names` make, paths through records treated as `record_paths`
    /// says: the output columns and their schema, ready to read.
    pub fn projection(
        &self,
        names: Option<&[String]>,
        record_paths: RecordPaths,
    ) -> Result<Projection> {
        let selection = self.selection_with(names, record_paths)?;
        let fields = selection
            .iter()
            .map(|s| arrow_field_kept(&self.descriptor, s.id, &s.name, s.keep.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        let schema = Arc::new(Schema::new(fields));
        Ok(Projection {
            selection,
            decoded: schema.clone(),
            schema,
            conversions: Arc::new([]),
            further: Vec::new(),
        })
    }

    /// The projection `names` make (as [`RNTupleReader::projection`]), each field read as
    /// `types` asks: checked now, before any page is read (a conversion the rules refuse
    /// is an [`Error::IncompatibleType`] naming the field and both types); values that do
    /// not fit are found as they are read ([`Error::OutOfRange`], naming the field, the
    /// entry and the value) or read as nulls ([`OnOverflow::Mask`]).
    pub fn projection_as(
        &self,
        names: Option<&[String]>,
        record_paths: RecordPaths,
        types: &ReadTypes,
    ) -> Result<Projection> {
        let mut projection = self.projection(names, record_paths)?;
        if types.is_empty() {
            return Ok(projection);
        }
        let columns: Vec<(u32, arrow_schema::FieldRef)> = projection
            .selection
            .iter()
            .zip(projection.decoded.fields().iter())
            .map(|(s, f)| (s.id, f.clone()))
            .collect();
        let conversions = evolve::plan(&self.descriptor, &columns, types, |n| self.no_field(n))?;
        if conversions.iter().all(Option::is_none) {
            return Ok(projection);
        }
        let fields: Vec<arrow_schema::FieldRef> = conversions
            .iter()
            .zip(projection.decoded.fields().iter())
            .map(|(c, f)| c.as_ref().map_or_else(|| f.clone(), |c| c.field.clone()))
            .collect();
        projection.schema = Arc::new(Schema::new(fields));
        projection.conversions = conversions.into();
        Ok(projection)
    }

    /// Reads the selected fields over `entries` into one record batch, each as `types`
    /// asks (see [`RNTupleReader::projection_as`]).
    pub fn read_as(
        &self,
        names: Option<&[String]>,
        entries: Range<u64>,
        types: &ReadTypes,
    ) -> Result<RecordBatch> {
        self.read_projection(
            &self.projection_as(names, RecordPaths::Columns, types)?,
            entries,
        )
    }

    fn selection_with(
        &self,
        names: Option<&[String]>,
        record_paths: RecordPaths,
    ) -> Result<Vec<Selection>> {
        let d = &self.descriptor;
        let Some(names) = names else {
            return Ok(self
                .readable_fields()
                .into_iter()
                .map(|id| Selection {
                    id,
                    name: d.field(id).name().to_string(),
                    keep: None,
                })
                .collect());
        };
        // Each name's field and its path from the top-level field down.
        let mut chains = Vec::with_capacity(names.len());
        for n in names {
            let id = d.find_field(n).ok_or_else(|| self.no_field(n))?;
            if let Some(why) = d.unreadable_reason(id) {
                return Err(Error::Unsupported(why));
            }
            let mut chain = vec![id];
            while let Some(p) = chain.last().and_then(|&f| d.field(f).parent) {
                chain.push(p);
            }
            chain.reverse();
            chains.push(chain);
        }
        let through_records = |chain: &[u32]| {
            chain[..chain.len() - 1]
                .iter()
                .all(|&p| matches!(d.field_kind(p), crate::schema::FieldKind::Record(..)))
        };
        // Top-level fields projected into (a path runs through a collection, or through
        // records when they keep their members): all their selected members go into one
        // column.
        let projected: HashSet<u32> = chains
            .iter()
            .filter(|c| match record_paths {
                RecordPaths::Columns => !through_records(c),
                RecordPaths::Members => c.len() > 1,
            })
            .map(|c| c[0])
            .collect();
        let mut out: Vec<Selection> = Vec::new();
        for (n, chain) in names.iter().zip(&chains) {
            let (top, id) = (chain[0], chain[chain.len() - 1]);
            if !projected.contains(&top) || id == top {
                if let Some(s) = out.iter_mut().find(|s| s.id == top && id == top) {
                    s.keep = None;
                } else {
                    out.push(Selection {
                        id,
                        name: n.clone(),
                        keep: None,
                    });
                }
                continue;
            }
            let mut kept: HashSet<u32> = chain.iter().copied().collect();
            let mut below = vec![id];
            // An Arrow map holds keys and values together: a path into a map's key or
            // value keeps the whole (key, value) pair.
            for &f in chain {
                if let crate::schema::FieldKind::Map(pair) = d.field_kind(f) {
                    if kept.contains(&pair) {
                        below.push(pair);
                    }
                }
            }
            while let Some(f) = below.pop() {
                kept.insert(f);
                below.extend(d.field(f).children.iter().copied());
            }
            match out.iter_mut().find(|s| s.id == top) {
                Some(Selection { keep: Some(k), .. }) => k.extend(kept),
                Some(Selection { keep: None, .. }) => {}
                None => out.push(Selection {
                    id: top,
                    name: d.field(top).name().to_string(),
                    keep: Some(kept),
                }),
            }
        }
        Ok(out)
    }

    /// The Arrow schema of a selection (see [`RNTupleReader::select_fields`]).
    pub fn arrow_schema(&self, names: Option<&[String]>) -> Result<SchemaRef> {
        Ok(self.projection(names, RecordPaths::Columns)?.schema)
    }

    /// The uncompressed bytes (elements times bits on storage) of the selected fields'
    /// columns in each cluster, in cluster order: what reading that cluster produces,
    /// to size batches by memory.
    pub fn selection_bytes_per_cluster(&self, names: Option<&[String]>) -> Result<Vec<u64>> {
        let projection = self.projection(names, RecordPaths::Columns)?;
        Ok(self.projection_bytes_per_cluster(&projection))
    }

    /// The uncompressed bytes of a projection's columns in each cluster, in order.
    pub fn projection_bytes_per_cluster(&self, projection: &Projection) -> Vec<u64> {
        let d = &self.descriptor;
        let columns = self.columns_of(&projection.selection.iter().collect::<Vec<_>>());
        d.clusters
            .iter()
            .map(|c| columns.iter().map(|&col| d.column_bytes(c, col)).sum())
            .collect()
    }

    /// The columns the selected fields read (every representation's), sorted.
    fn columns_of(&self, selected: &[&Selection]) -> Vec<u32> {
        let d = &self.descriptor;
        let mut columns = Vec::new();
        let mut stack: Vec<(u32, Option<&HashSet<u32>>)> =
            selected.iter().map(|s| (s.id, s.keep.as_ref())).collect();
        while let Some((id, keep)) = stack.pop() {
            if keep.is_some_and(|k| !k.contains(&id)) {
                continue;
            }
            let f = d.field(id);
            columns.extend(f.columns.iter().copied());
            stack.extend(f.children.iter().map(|&c| (c, keep)));
            if let Some(src) = f.record.source_field_id {
                stack.push((src, None));
            }
        }
        columns.sort_unstable();
        columns.dedup();
        columns
    }

    /// Reads entries as rows of [`Value`](crate::schema::Value)s, one per selected field
    /// (the typed row API; [`RNTupleReader::read`] is the fast columnar path).
    pub fn read_entries(
        &self,
        names: Option<&[String]>,
        entries: Range<u64>,
    ) -> Result<Vec<Vec<crate::schema::Value>>> {
        let batch = self.read(names, entries)?;
        Ok((0..batch.num_rows())
            .map(|row| {
                batch
                    .columns()
                    .iter()
                    .map(|c| crate::schema::array_value(c.as_ref(), row))
                    .collect()
            })
            .collect())
    }

    /// Reads the selected fields (all readable ones for `None`) over `entries` into one
    /// record batch.
    ///
    /// From a remote source the read is planned: the pages needed are listed up front,
    /// merged into few ranges and fetched bunch by bunch of clusters as vectored reads, a
    /// window of bunches ahead of the decoding. From a local file pages are read as the
    /// decoder needs them, in parallel.
    pub fn read(&self, names: Option<&[String]>, entries: Range<u64>) -> Result<RecordBatch> {
        self.read_projection(&self.projection(names, RecordPaths::Columns)?, entries)
    }

    /// Reads a projection over `entries` into one record batch (see
    /// [`RNTupleReader::read`]).
    pub fn read_projection(
        &self,
        projection: &Projection,
        entries: Range<u64>,
    ) -> Result<RecordBatch> {
        let mut batches = self.read_projection_batches(projection, entries)?;
        match batches.len() {
            1 => Ok(batches.remove(0)),
            _ => Ok(arrow_select::concat::concat_batches(
                &projection.schema,
                &batches,
            )?),
        }
    }

    /// Like [`RNTupleReader::read`], as consecutive record batches without concatenating
    /// them: one from a local file, one per bunch of clusters from a remote source.
    pub fn read_batches(
        &self,
        names: Option<&[String]>,
        entries: Range<u64>,
    ) -> Result<Vec<RecordBatch>> {
        self.read_projection_batches(&self.projection(names, RecordPaths::Columns)?, entries)
    }

    fn read_projection_batches(
        &self,
        projection: &Projection,
        entries: Range<u64>,
    ) -> Result<Vec<RecordBatch>> {
        let start = std::time::Instant::now();
        let result = stream::Planned::start(self, projection.clone(), vec![entries])
            .and_then(|mut planned| planned.next_pieces().unwrap_or_else(|| Ok(Vec::new())));
        self.storage.count_read_time(elapsed_nanos(start));
        result
    }

    /// The selected fields over each of `ranges` in turn, one record batch per range,
    /// read as the iterator is advanced. From a remote source every range is planned up
    /// front and pages are fetched a window ahead across ranges, so a loop over batches
    /// does not wait for each batch's first bytes. [`RangeBatches::decode_ahead`] also
    /// decodes the next batch while the caller uses the current one.
    pub fn read_ranges(
        &self,
        names: Option<&[String]>,
        ranges: Vec<Range<u64>>,
    ) -> Result<RangeBatches> {
        self.read_projection_ranges(&self.projection(names, RecordPaths::Columns)?, ranges)
    }

    /// A projection over each of `ranges` in turn (see [`RNTupleReader::read_ranges`]).
    pub fn read_projection_ranges(
        &self,
        projection: &Projection,
        ranges: Vec<Range<u64>>,
    ) -> Result<RangeBatches> {
        RangeBatches::new(self, projection.clone(), ranges)
    }

    fn check_entries(&self, entries: &Range<u64>) -> Result<()> {
        let n = self.descriptor.n_entries;
        if entries.start > entries.end || entries.end > n {
            return Err(Error::InvalidArgument(format!(
                "entry range {}..{} is outside 0..{n}: RNTuple \"{}\" of {} has {n} entries",
                entries.start,
                entries.end,
                self.path,
                self.source().name()
            )));
        }
        Ok(())
    }

    /// Wraps an error with the file and the RNTuple it was found in.
    fn locate(&self, e: Error) -> Error {
        e.at(Location {
            file: Some(self.source().name().to_string()),
            rntuple: Some(self.path.clone()),
            ..Default::default()
        })
    }
}

/// Nanoseconds since `start`.
fn elapsed_nanos(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The arrays of the selected fields `which` (indices into `selected` and `fields`) over
/// `entries`, decoded from `decoder`'s pages: each field over all the clusters at once,
/// into one array (its columns' buffers are sized from the page lists and every page
/// decodes into its slice), the fields in parallel. `fields_start` runs once the offsets
/// that several fields share are decoded, before the fields: a local read asks the
/// kernel for its pages ahead there, so that the few pages of the shared offsets are not
/// queued behind the whole read-ahead (a cold read of a one-cluster file waited 50 ms
/// for them).
fn decode_fields(
    decoder: &Decoder<'_>,
    selected: &[Selection],
    fields: &arrow_schema::Fields,
    which: &[usize],
    entries: &Range<u64>,
    fields_start: impl FnOnce(),
) -> Result<Vec<ArrayRef>> {
    let segs: Vec<column::Seg<'_>> = decoder
        .descriptor()
        .clusters
        .iter()
        .filter(|c| c.first_entry < entries.end && c.first_entry + c.n_entries > entries.start)
        .map(|c| {
            let lo = entries.start.max(c.first_entry) - c.first_entry;
            let hi = entries.end.min(c.first_entry + c.n_entries) - c.first_entry;
            (c, lo..hi)
        })
        .collect();
    let ids: Vec<u32> = which.iter().map(|&i| selected[i].id).collect();
    decoder.share_offsets(&segs, &ids);
    fields_start();
    // The fields are handed to the threads in order (not split in halves, where the
    // second thread would start in the middle of the clusters): the pages are stored
    // field by field, so a cold read's threads decode near where the disk is reading.
    let arrays: Result<Vec<(usize, ArrayRef)>> = which
        .iter()
        .enumerate()
        .par_bridge()
        .map(|(k, &i)| {
            let (s, field) = (&selected[i], &fields[i]);
            if segs.is_empty() {
                return Ok((k, new_empty_array(field.data_type())));
            }
            let array = decoder.assemble(&segs, s.id, &s.name, Some(1), s.keep.as_ref())?;
            Ok((k, array))
        })
        .collect();
    decoder.forget_shared_offsets();
    let mut arrays = arrays?;
    arrays.sort_unstable_by_key(|(k, _)| *k);
    Ok(arrays.into_iter().map(|(_, array)| array).collect())
}
