//! Reading: open an RNTuple (anchor → header, footer, page lists → descriptor), then
//! decode any selection of fields over any entry range into Arrow arrays, clusters and
//! pages in parallel, reading only the pages the selection needs.

mod assemble;
mod column;
mod convert;
mod plan;
mod prefetch;
mod stream;
mod summary;

pub use stream::RangeBatches;
pub use summary::{describe, schema_tree, uncompressed_bytes};

pub use crate::schema::{arrow_field, arrow_field_kept, primitive_data_type, TYPE_NAME_KEY};

use crate::compression;
use crate::container::{self, RootFile};
use crate::error::{Error, Location, Result};
use crate::format::{open_envelope, Anchor, EnvelopeType, Footer, Header, PageList};
use crate::io::{open_source, Source};
use crate::schema::Descriptor;
use ::arrow_schema::{Schema, SchemaRef};
use arrow_array::{new_empty_array, ArrayRef, RecordBatch, RecordBatchOptions};
use rayon::prelude::*;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

/// The attribute schema major version this reader understands.
const ATTRIBUTE_SCHEMA_MAJOR: u16 = 1;

/// One output column of a read: a field, named as selected, with only the record
/// members in `keep` for a projection into collections (all members for `None`).
struct Selection {
    id: u32,
    name: String,
    keep: Option<HashSet<u32>>,
}

/// Bunches a planned read fetches ahead of the one being decoded.
const PREFETCH_WINDOW: usize = 3;

/// An open RNTuple: its anchor, its descriptor, and the source to read pages from.
#[derive(Clone)]
pub struct RNTupleReader {
    source: Source,
    anchor: Anchor,
    descriptor: Arc<Descriptor>,
    path: String,
    /// The prefetched pages of the planned read in progress (a read's own view).
    pages: Option<Arc<prefetch::PageCache>>,
    counters: Arc<prefetch::ReadCounters>,
}

/// What reading through an [`RNTupleReader`] has cost so far: the source's counters and
/// how the reads used them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadMetrics {
    /// The source's counters (requests, vector requests, ranges, bytes read, wait time).
    pub io: crate::io::IoMetricsSnapshot,
    /// Stored page bytes (checksums included) the decoder used.
    pub bytes_used: u64,
    /// Time the decoder waited for prefetched pages, in nanoseconds.
    pub prefetch_wait_nanos: u64,
    /// Time spent in [`RNTupleReader::read`] calls, in nanoseconds.
    pub read_nanos: u64,
    /// Pages a planned read needed but had not fetched (read on demand).
    pub unplanned_pages: u64,
}

impl std::fmt::Debug for RNTupleReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RNTupleReader")
            .field("source", &self.source.name())
            .field("path", &self.path)
            .field("entries", &self.descriptor.n_entries)
            .finish()
    }
}

/// Reads a (possibly compressed) envelope through the file's keys and checks it.
fn read_envelope(
    source: &Source,
    anchor: &Anchor,
    offset: u64,
    nbytes: u64,
    length: u64,
    kind: EnvelopeType,
    what: &str,
) -> Result<(Vec<u8>, u64)> {
    let located = |e: Error| {
        e.at(Location {
            structure: Some(what.to_string()),
            offset: Some(offset),
            ..Default::default()
        })
    };
    // An envelope cannot decompress to more than the file could plausibly hold; this
    // bounds the allocation by the input's real size (zstd's best ratio is far below).
    let max_len = source.size().saturating_mul(1024).max(1 << 20);
    if length > max_len || length < 16 {
        return Err(located(Error::corrupt(
            what,
            format!("implausible envelope length {length}"),
        )));
    }
    let raw = container::read_blob(source.as_ref(), offset, nbytes, anchor.max_key_size)
        .map_err(located)?;
    let bytes = if nbytes == length {
        raw
    } else {
        compression::decompress(&raw, length as usize, what).map_err(located)?
    };
    let (payload, checksum) = open_envelope(&bytes, kind, what).map_err(located)?;
    Ok((payload.to_vec(), checksum))
}

/// Wraps an error with the file and the RNTuple it was found in.
fn in_rntuple(source: &Source, path: &str) -> impl Fn(Error) -> Error {
    let (file, rntuple) = (source.name().to_string(), path.to_string());
    move |e: Error| {
        e.at(Location {
            file: Some(file.clone()),
            rntuple: Some(rntuple.clone()),
            ..Default::default()
        })
    }
}

impl RNTupleReader {
    /// Opens the RNTuple `name` (or the only one) of the ROOT file at `path`.
    pub fn open_path(path: &str, name: Option<&str>) -> Result<RNTupleReader> {
        let source = open_source(path)?;
        let file = RootFile::open(source)?;
        Self::open(&file, name)
    }

    /// Opens the RNTuple `name` of `file`; without a name, the file's only RNTuple.
    pub fn open(file: &RootFile, name: Option<&str>) -> Result<RNTupleReader> {
        let anchors = file.rntuple_anchors()?;
        let key = match name {
            Some(n) => anchors
                .into_iter()
                .find(|a| {
                    a.path == n || a.path.trim_start_matches('/') == n.trim_start_matches('/')
                })
                .ok_or_else(|| {
                    Error::NotFound(format!(
                        "no RNTuple named \"{n}\" in {}",
                        file.source().name()
                    ))
                })?,
            None => {
                let mut anchors = anchors;
                match anchors.len() {
                    0 => {
                        return Err(Error::NotFound(format!(
                            "{} holds no RNTuple",
                            file.source().name()
                        )))
                    }
                    1 => anchors.remove(0),
                    _ => {
                        let names: Vec<String> = anchors.iter().map(|a| a.path.clone()).collect();
                        return Err(Error::InvalidArgument(format!(
                            "{} holds several RNTuples ({}); name one as FILE:NAME",
                            file.source().name(),
                            names.join(", ")
                        )));
                    }
                }
            }
        };
        let anchor =
            Anchor::from_object(&key.object, &format!("anchor of RNTuple \"{}\"", key.path))?;
        Self::from_anchor(file.source().clone(), anchor, key.path)
    }

    /// Opens an RNTuple from its anchor: reads header, footer and every page list.
    pub fn from_anchor(source: Source, anchor: Anchor, path: String) -> Result<RNTupleReader> {
        let in_file = in_rntuple(&source, &path);
        let (header_bytes, header_checksum) = read_envelope(
            &source,
            &anchor,
            anchor.seek_header,
            anchor.nbytes_header,
            anchor.len_header,
            EnvelopeType::Header,
            "header envelope",
        )
        .map_err(&in_file)?;
        let header = Header::read(&header_bytes).map_err(&in_file)?;
        let (footer_bytes, _) = read_envelope(
            &source,
            &anchor,
            anchor.seek_footer,
            anchor.nbytes_footer,
            anchor.len_footer,
            EnvelopeType::Footer,
            "footer envelope",
        )
        .map_err(&in_file)?;
        let footer = Footer::read(&footer_bytes).map_err(&in_file)?;
        if footer.header_checksum != header_checksum {
            return Err(in_file(Error::ChecksumMismatch {
                what: "footer envelope's reference to the header envelope".into(),
                stored: footer.header_checksum,
                computed: header_checksum,
            }));
        }
        Self::from_envelopes(source, anchor, path, header, header_checksum, footer)
    }

    /// Opens an RNTuple from its parsed header and footer (the footer's cluster groups
    /// may also be put together from page lists found in a file whose writer died):
    /// reads every page list the footer links and builds the descriptor. `anchor` gives
    /// the format version and the MaxKeySize to read pages with.
    pub(crate) fn from_envelopes(
        source: Source,
        anchor: Anchor,
        path: String,
        header: Header,
        header_checksum: u64,
        footer: Footer,
    ) -> Result<RNTupleReader> {
        let in_file = in_rntuple(&source, &path);
        let page_lists = footer
            .cluster_groups
            .par_iter()
            .enumerate()
            .map(|(g, group)| {
                let what = format!("page list envelope of cluster group {g}");
                let link = group.page_list;
                let (bytes, _) = read_envelope(
                    &source,
                    &anchor,
                    link.locator.offset,
                    link.locator.size,
                    link.length,
                    EnvelopeType::PageList,
                    &what,
                )?;
                let list = PageList::read(&bytes).map_err(|e| {
                    e.at(Location {
                        structure: Some(what.clone()),
                        ..Default::default()
                    })
                })?;
                if list.header_checksum != header_checksum {
                    return Err(Error::ChecksumMismatch {
                        what: format!("{what}'s reference to the header envelope"),
                        stored: list.header_checksum,
                        computed: header_checksum,
                    });
                }
                Ok(list)
            })
            .collect::<Result<Vec<_>>>()
            .map_err(&in_file)?;
        Self::from_parts(source, anchor, path, header, footer, page_lists)
    }

    /// Opens an RNTuple from its parsed envelopes, with no I/O: the footer's cluster
    /// groups and their page lists, in order. See [`RNTupleReader::from_envelopes`].
    pub(crate) fn from_parts(
        source: Source,
        anchor: Anchor,
        path: String,
        header: Header,
        footer: Footer,
        page_lists: Vec<PageList>,
    ) -> Result<RNTupleReader> {
        let in_file = in_rntuple(&source, &path);
        let version = (
            anchor.version_epoch,
            anchor.version_major,
            anchor.version_minor,
            anchor.version_patch,
        );
        let mut descriptor =
            Descriptor::build(version, header, footer, page_lists).map_err(&in_file)?;
        let warnings: Vec<String> = descriptor
            .top_level
            .iter()
            .filter_map(|&id| descriptor.unreadable_reason(id))
            .map(|why| format!("skipping {why}"))
            .collect();
        descriptor.warnings.extend(warnings);
        Ok(RNTupleReader {
            source,
            anchor,
            descriptor: Arc::new(descriptor),
            path,
            pages: None,
            counters: Arc::default(),
        })
    }

    /// Opens an RNTuple from the payloads of its header, footer and page list envelopes
    /// (no envelope, no checksum), its pages read from `source`: the metadata parsers and
    /// the page decoding, for fuzzing, without the checksums that stop most mutations.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn from_payloads(
        source: Source,
        header: &[u8],
        footer: &[u8],
        page_lists: &[&[u8]],
    ) -> Result<RNTupleReader> {
        let header = Header::read(header)?;
        let footer = Footer::read(footer)?;
        let page_lists = page_lists
            .iter()
            .map(|p| PageList::read(p))
            .collect::<Result<Vec<_>>>()?;
        let anchor = Anchor {
            version_epoch: 1,
            max_key_size: 1 << 30,
            ..Anchor::default()
        };
        Self::from_parts(
            source,
            anchor,
            "fuzz".to_string(),
            header,
            footer,
            page_lists,
        )
    }

    /// Opens the linked attribute set `name` (format 1.0.1+): an RNTuple of its own,
    /// found through the anchor the footer links to.
    pub fn attribute_set(&self, name: &str) -> Result<RNTupleReader> {
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
        let what = format!("anchor of attribute set \"{name}\"");
        let loc = link.anchor_locator;
        let raw = container::read_blob(
            self.source.as_ref(),
            loc.offset,
            loc.size,
            self.anchor.max_key_size,
        )?;
        let object = if loc.size == link.anchor_length as u64 {
            raw
        } else {
            compression::decompress(&raw, link.anchor_length as usize, &what)?
        };
        let anchor = Anchor::from_object(&object, &what)?;
        Self::from_anchor(self.source.clone(), anchor, format!("{}/{name}", self.path))
    }

    /// The descriptor: schema, columns, clusters.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The anchor.
    pub fn anchor(&self) -> &Anchor {
        &self.anchor
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.source
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

    /// Resolves field names to the output columns they make: `None` means every
    /// readable top-level field; a top-level name or a dotted path through records
    /// (`"a.b"`) is a column of its own, named as given; paths into collections of
    /// records (`"Jet.pt"` of a collection `Jet`) are projections, gathered into one
    /// column per top-level field (named after it) that holds only the selected members.
    pub fn select_fields(&self, names: Option<&[String]>) -> Result<Vec<(u32, String)>> {
        Ok(self
            .resolve_selection(names)?
            .into_iter()
            .map(|s| (s.id, s.name))
            .collect())
    }

    fn resolve_selection(&self, names: Option<&[String]>) -> Result<Vec<Selection>> {
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
            let id = d.find_field(n).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "no field \"{n}\" in RNTuple \"{}\" of {}",
                    self.path,
                    self.source.name()
                ))
            })?;
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
        // Top-level fields projected into (a path runs through a collection): all their
        // selected members go into one column.
        let projected: HashSet<u32> = chains
            .iter()
            .filter(|c| !through_records(c))
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
        let selected = self.resolve_selection(names)?;
        let fields = selected
            .iter()
            .map(|s| arrow_field_kept(&self.descriptor, s.id, &s.name, s.keep.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(Schema::new(fields)))
    }

    /// The uncompressed bytes (elements times bits on storage) of the selected fields'
    /// columns in each cluster, in cluster order: what reading that cluster produces,
    /// to size batches by memory.
    pub fn selection_bytes_per_cluster(&self, names: Option<&[String]>) -> Result<Vec<u64>> {
        let d = &self.descriptor;
        let columns = self.selection_columns(names)?;
        Ok(d.clusters
            .iter()
            .map(|c| columns.iter().map(|&col| d.column_bytes(c, col)).sum())
            .collect())
    }

    /// The columns a selection reads (every representation's), sorted.
    fn selection_columns(&self, names: Option<&[String]>) -> Result<Vec<u32>> {
        let selected = self.resolve_selection(names)?;
        Ok(self.columns_of(&selected.iter().collect::<Vec<_>>()))
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

    /// What reading has cost so far (see [`ReadMetrics`]).
    pub fn metrics(&self) -> ReadMetrics {
        use std::sync::atomic::Ordering::Relaxed;
        ReadMetrics {
            io: self.source.metrics(),
            bytes_used: self.counters.bytes_used.load(Relaxed),
            prefetch_wait_nanos: self.counters.wait_nanos.load(Relaxed),
            read_nanos: self.counters.read_nanos.load(Relaxed),
            unplanned_pages: self.counters.misses.load(Relaxed),
        }
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
        let mut batches = self.read_batches(names, entries)?;
        match batches.len() {
            1 => Ok(batches.remove(0)),
            _ => Ok(arrow_select::concat::concat_batches(
                &self.arrow_schema(names)?,
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
        let start = std::time::Instant::now();
        let result = if self.plans_reads() {
            self.read_planned(names, entries)
        } else {
            self.read_direct(names, entries).map(|b| vec![b])
        };
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counters
            .read_nanos
            .fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
        result
    }

    /// A planned read: bunches fetched ahead, each decoded as it arrives. A bunch is
    /// several small clusters, or some of the fields of a large cluster (so that decoding
    /// starts after the first tens of MB, not after a whole cluster).
    fn read_planned(
        &self,
        names: Option<&[String]>,
        entries: Range<u64>,
    ) -> Result<Vec<RecordBatch>> {
        self.check_entries(&entries)?;
        let mut planned = stream::Planned::start(self, names, vec![entries])?;
        planned.next_pieces().unwrap_or_else(|| Ok(Vec::new()))
    }

    /// The selected fields over each of `ranges` in turn, one record batch per range,
    /// read as the iterator is advanced. From a remote source every range is planned up
    /// front and pages are fetched a window ahead across ranges, so a loop over batches
    /// does not wait for each batch's first bytes.
    pub fn read_ranges(
        &self,
        names: Option<&[String]>,
        ranges: Vec<Range<u64>>,
    ) -> Result<RangeBatches> {
        RangeBatches::new(self, names, ranges)
    }

    /// Whether reads are planned and prefetched: from a remote source, unless this is
    /// already a view on a planned read's pages.
    fn plans_reads(&self) -> bool {
        self.source.hints().remote && self.pages.is_none()
    }

    fn check_entries(&self, entries: &Range<u64>) -> Result<()> {
        let n = self.descriptor.n_entries;
        if entries.start > entries.end || entries.end > n {
            return Err(Error::InvalidArgument(format!(
                "entry range {}..{} is outside 0..{n}: RNTuple \"{}\" of {} has {n} entries",
                entries.start,
                entries.end,
                self.path,
                self.source.name()
            )));
        }
        Ok(())
    }

    /// Reads with pages fetched as the decoder needs them (from the prefetched pages of
    /// this view, if any).
    fn read_direct(&self, names: Option<&[String]>, entries: Range<u64>) -> Result<RecordBatch> {
        self.check_entries(&entries)?;
        let selected = self.resolve_selection(names)?;
        let schema = self.arrow_schema(names)?;
        let all: Vec<usize> = (0..selected.len()).collect();
        let columns = self.decode_fields(&selected, schema.fields(), &all, &entries)?;
        let options =
            RecordBatchOptions::new().with_row_count(Some((entries.end - entries.start) as usize));
        Ok(RecordBatch::try_new_with_options(
            schema, columns, &options,
        )?)
    }

    /// The arrays of the selected fields `which` (indices into `selected` and `fields`)
    /// over `entries`.
    fn decode_fields(
        &self,
        selected: &[Selection],
        fields: &arrow_schema::Fields,
        which: &[usize],
        entries: &Range<u64>,
    ) -> Result<Vec<ArrayRef>> {
        // Each field over all the clusters at once, into one array: its columns'
        // buffers are sized from the page lists and every page decodes into its slice.
        let segs: Vec<assemble::Seg<'_>> = self
            .descriptor
            .clusters
            .iter()
            .filter(|c| c.first_entry < entries.end && c.first_entry + c.n_entries > entries.start)
            .map(|c| {
                let lo = entries.start.max(c.first_entry) - c.first_entry;
                let hi = entries.end.min(c.first_entry + c.n_entries) - c.first_entry;
                (c, lo..hi)
            })
            .collect();
        which
            .par_iter()
            .map(|&i| {
                let (s, field) = (&selected[i], &fields[i]);
                if segs.is_empty() {
                    return Ok(new_empty_array(field.data_type()));
                }
                self.assemble(&segs, s.id, &s.name, Some(1), s.keep.as_ref())
            })
            .collect::<Result<_>>()
            .map_err(|e| {
                e.at(Location {
                    file: Some(self.source.name().to_string()),
                    rntuple: Some(self.path.clone()),
                    ..Default::default()
                })
            })
    }
}
