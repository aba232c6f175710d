//! The RNTuple writer: buffers shredded values into column pages, seals pages
//! (encode, compress, checksum) in parallel, commits clusters (one blob of pages each),
//! cluster groups (page lists), and finally the footer; the caller's container writes
//! the anchor it returns.

use super::options::WriteOptions;
use super::shred::{shred, ColumnSink};
use crate::encoding::{ColumnEncoding, ColumnType, ColumnValues};
use crate::error::{Error, Result};
use crate::format::{
    pack_envelope, seal_page, Anchor, ClusterGroupRecord, ClusterSummary, ColumnPages,
    EnvelopeLink, EnvelopeType, Footer, Header, LinkedAttributeSet, Locator, PageInfo, PageList,
    SchemaDescription, SealedPage,
};
use crate::schema::Descriptor;
use arrow_array::{Array, RecordBatch};

/// Where the writer puts its payloads: a ROOT file's RBlob keys, or memory in tests.
pub trait BlobSink {
    /// Stores `payload` (split over several keys when longer than `max_key_size`) and
    /// returns the offset of its first byte, as locators record it.
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64>;

    /// Stores the concatenation of `parts` as [`BlobSink::write_blob`] does; a sink that
    /// can write them one after the other need not concatenate them.
    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        self.write_blob(&parts.concat(), max_key_size)
    }

    /// Hands what was stored so far to the operating system (called after each page
    /// list, so that a committed cluster group survives the process being killed).
    fn checkpoint(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Memory as a sink: payloads appended to the bytes, offsets counted from the start (for
/// tests and in-memory RNTuples read back through a `MemorySource`).
impl BlobSink for Vec<u8> {
    fn write_blob(&mut self, payload: &[u8], _max_key_size: u64) -> Result<u64> {
        let at = self.len() as u64;
        self.extend_from_slice(payload);
        Ok(at)
    }
}

/// A writer may borrow its sink (the usual case: several RNTuples into one file, one
/// after the other) or own it.
impl<S: BlobSink + ?Sized> BlobSink for &mut S {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        (**self).write_blob(payload, max_key_size)
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        (**self).write_blob_parts(parts, max_key_size)
    }

    fn checkpoint(&mut self) -> Result<()> {
        (**self).checkpoint()
    }
}

/// The format version written in the anchor: 1.0.2.0, as ROOT 6.40.
const FORMAT_VERSION: (u16, u16, u16, u16) = (1, 0, 2, 0);

/// Entries are shredded a slice of about this many uncompressed bytes at a time.
const SHRED_SLICE_BYTES: u64 = 4 << 20;

/// Written pages up to this size (compressed) stay candidates for same-page merging with
/// the later runs of their cluster. Identical pages are, in practice, pages of constant
/// values, which compress to a few bytes.
const MERGE_ACROSS_RUNS_BYTES: usize = 4096;

/// Packs an envelope and stores it: its link, and its checksum.
fn write_envelope<S: BlobSink>(
    sink: &mut S,
    kind: EnvelopeType,
    payload: &[u8],
    options: &WriteOptions,
) -> Result<(EnvelopeLink, u64)> {
    let packed = pack_envelope(kind, payload, options.compression)?;
    let offset = sink.write_blob(&packed.stored, options.max_key_size)?;
    let link = EnvelopeLink {
        length: packed.length,
        locator: Locator {
            size: packed.stored.len() as u64,
            offset,
        },
    };
    Ok((link, packed.checksum))
}

/// A column being written.
struct ColumnState {
    encoding: ColumnEncoding,
    /// Values appended but not yet cut into pages (the write page and, until the page
    /// plan is applied, the values of the entries just shredded).
    page: ChunkedValues,
    /// Full pages not yet sealed.
    full: Vec<ChunkedValues>,
    /// Sealed pages of the open cluster waiting to be written (the next run).
    sealed: Vec<SealedPage>,
    /// Pages of the open cluster already written (in earlier runs), in order.
    placed: Vec<PageInfo>,
    /// The open cluster's sealing jobs, in the order they were started: their pages once
    /// sealed (they become `sealed` when the cluster is committed).
    jobs: Vec<Option<Vec<SealedPage>>>,
    /// Jobs of this column moved out of `jobs` so far: job number `k` is at
    /// `jobs[k - jobs_taken]`.
    jobs_taken: usize,
    /// Elements appended to the open cluster.
    cluster_elements: u64,
    /// Global index of the open cluster's first element.
    first_element: u64,
}

/// The state of a new column whose first element has global index `first_element`, and
/// the bytes one of its elements takes in memory.
fn column_state(
    descriptor: &Descriptor,
    rec: &crate::format::ColumnRecord,
    first_element: u64,
) -> Result<(ColumnState, u64)> {
    let encoding =
        ColumnEncoding::from_record(rec.column_type, rec.bits_on_storage, rec.value_range)?;
    let column_type = encoding.column_type;
    let is_double = matches!(
        descriptor.field(rec.field_id).type_name(),
        "double" | "Double32_t"
    );
    let memory = memory_size(column_type, is_double);
    let state = ColumnState {
        encoding,
        page: ChunkedValues::default(),
        full: Vec::new(),
        sealed: Vec::new(),
        placed: Vec::new(),
        jobs: Vec::new(),
        jobs_taken: 0,
        cluster_elements: 0,
        first_element,
    };
    Ok((state, memory))
}

/// Bytes one element of `column_type` takes in memory (ROOT sizes pages by it).
fn memory_size(column_type: ColumnType, field_is_double: bool) -> u64 {
    use ColumnType as C;
    match column_type {
        C::Bit | C::Byte | C::Char | C::Int8 | C::UInt8 => 1,
        C::Int16 | C::UInt16 | C::SplitInt16 | C::SplitUInt16 => 2,
        C::Int32 | C::UInt32 | C::SplitInt32 | C::SplitUInt32 => 4,
        C::Real16
        | C::SplitReal16
        | C::Real32
        | C::SplitReal32
        | C::Real32Trunc
        | C::Real32Quant => {
            if field_is_double {
                8
            } else {
                4
            }
        }
        C::Int64 | C::UInt64 | C::SplitInt64 | C::SplitUInt64 | C::Real64 | C::SplitReal64 => 8,
        C::Index32 | C::Index64 | C::SplitIndex32 | C::SplitIndex64 => 8,
        C::Switch => 16,
    }
}

/// Writes one RNTuple into a [`BlobSink`].
pub struct RNTupleWriter<S: BlobSink> {
    sink: S,
    options: WriteOptions,
    header: Header,
    /// Fields and columns added after the header (late model extension).
    extension: SchemaDescription,
    descriptor: Descriptor,
    /// Top-level fields with data (projected fields have none), in schema order.
    data_fields: Vec<u32>,
    columns: Vec<ColumnState>,
    /// Cluster-local item counters per collection field.
    items: Vec<u64>,
    /// Cluster-local entry counters per variant alternative field.
    alternatives: Vec<u64>,
    /// Where the header envelope went.
    header_link: EnvelopeLink,
    header_checksum: u64,
    n_entries: u64,
    cluster_first_entry: u64,
    /// Uncompressed bytes of the open cluster, as ROOT's fields count them.
    unzipped_cluster_bytes: u64,
    /// The size at which the open cluster is committed: the zipped target size times
    /// the compression factor so far (2 before the first cluster when compressing).
    unzipped_cluster_estimate: u64,
    /// Uncompressed bytes of all committed clusters.
    bytes_filled: u64,
    /// Bytes written for all committed clusters (pages with checksums, merged pages once).
    bytes_flushed: u64,
    /// Where ROOT would cut pages.
    planner: PagePlanner,
    /// Pages being sealed on the thread pool while the caller goes on filling.
    sealing: Sealing,
    /// Uncompressed bytes of the pages sent for sealing since the last run mark.
    run_bytes: u64,
    /// The last run mark: per column, the number of its sealing jobs started before it.
    /// The pages of the jobs before a mark are written (as a run) at the next mark, by
    /// when they are sealed.
    run_mark: Option<Vec<usize>>,
    /// Bytes written for the open cluster so far.
    cluster_zipped_bytes: u64,
    /// Small pages of the open cluster already written, by checksum: their locator and
    /// bytes, so that identical pages of later runs point to them.
    written_pages: std::collections::HashMap<u64, (Locator, Vec<u8>)>,
    open_group: Vec<(ClusterSummary, Vec<ColumnPages>)>,
    groups: Vec<ClusterGroupRecord>,
    attribute_sets: Vec<LinkedAttributeSet>,
}

impl<S: BlobSink> RNTupleWriter<S> {
    /// Starts an RNTuple named `name` with the given schema; writes the header.
    pub fn new(
        mut sink: S,
        name: &str,
        schema: SchemaDescription,
        options: WriteOptions,
    ) -> Result<Self> {
        let header = Header {
            name: name.to_string(),
            description: String::new(),
            writer: format!("rntuple v{}", env!("CARGO_PKG_VERSION")),
            schema,
        };
        let descriptor = Descriptor::build(
            FORMAT_VERSION,
            header.clone(),
            Footer::default(),
            Vec::new(),
        )?;
        if let Some(why) = descriptor
            .top_level
            .iter()
            .find_map(|&id| descriptor.unreadable_reason(id))
        {
            return Err(Error::InvalidArgument(format!("cannot write {why}")));
        }
        let mut columns = Vec::with_capacity(descriptor.columns.len());
        let mut planner = PagePlanner::new(&options);
        let mut element_sizes = Vec::with_capacity(descriptor.columns.len());
        for c in &descriptor.columns {
            let (state, memory) = column_state(&descriptor, &c.record, 0)?;
            element_sizes.push(memory);
            columns.push(state);
        }
        for &size in &element_sizes {
            if planner.add_column(size).is_err() {
                return Err(budget_too_small(&options, &planner, &element_sizes));
            }
        }
        let data_fields = descriptor
            .top_level
            .iter()
            .copied()
            .filter(|&id| !descriptor.field(id).is_projected())
            .collect();
        let (header_link, header_checksum) =
            write_envelope(&mut sink, EnvelopeType::Header, &header.write(), &options)?;
        let n_fields = descriptor.fields.len();
        let estimate = options.initial_cluster_size_estimate();
        Ok(RNTupleWriter {
            sink,
            header,
            extension: SchemaDescription::default(),
            header_link,
            header_checksum,
            options,
            descriptor,
            data_fields,
            columns,
            items: vec![0; n_fields],
            alternatives: vec![0; n_fields],
            n_entries: 0,
            cluster_first_entry: 0,
            unzipped_cluster_bytes: 0,
            unzipped_cluster_estimate: estimate,
            bytes_filled: 0,
            bytes_flushed: 0,
            planner,
            sealing: Sealing::new(),
            run_bytes: 0,
            run_mark: None,
            cluster_zipped_bytes: 0,
            written_pages: std::collections::HashMap::new(),
            open_group: Vec::new(),
            groups: Vec::new(),
            attribute_sets: Vec::new(),
        })
    }

    /// The schema as a descriptor (fields and columns, no clusters).
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// Entries written so far.
    pub fn num_entries(&self) -> u64 {
        self.n_entries
    }

    /// Adds fields after entries were written (late model extension, as ROOT's model
    /// updater): `extra` is a schema of its own (ids from 0), appended to the current one.
    /// The new fields' entry-level columns are deferred: the entries written so far read
    /// as zero values. Batches written afterwards must carry the new fields too.
    pub fn extend_schema(&mut self, extra: SchemaDescription) -> Result<()> {
        use crate::format::header::COLUMN_FLAG_DEFERRED;
        let field_base = self.descriptor.fields.len() as u32;
        let column_base = self.descriptor.columns.len() as u32;
        let mut extra = extra;
        for (i, f) in extra.fields.iter_mut().enumerate() {
            let own = i as u32;
            f.parent_id = if f.parent_id == own {
                own + field_base
            } else {
                f.parent_id + field_base
            };
            if let Some(src) = f.source_field_id.as_mut() {
                *src += field_base;
            }
        }
        for c in &mut extra.columns {
            c.field_id += field_base;
        }
        for a in &mut extra.alias_columns {
            a.field_id += field_base;
            a.physical_column_id += column_base;
        }
        let mut extension = self.extension.clone();
        extension.fields.extend(extra.fields.iter().cloned());
        extension
            .alias_columns
            .extend(extra.alias_columns.iter().cloned());
        extension.columns.extend(extra.columns.iter().cloned());
        // Rebuild the descriptor to learn the new fields' kinds and places.
        let footer = Footer {
            extension: extension.clone(),
            ..Footer::default()
        };
        let descriptor =
            Descriptor::build(FORMAT_VERSION, self.header.clone(), footer, Vec::new())?;
        if let Some(why) = descriptor
            .top_level
            .iter()
            .find_map(|&id| descriptor.unreadable_reason(id))
        {
            return Err(Error::InvalidArgument(format!("cannot write {why}")));
        }
        // Deferred columns start at the element the current entry count corresponds to.
        let first_ext_column = self.extension.columns.len();
        for (k, rec) in extension.columns[first_ext_column..].iter_mut().enumerate() {
            let id = column_base + k as u32;
            // Only a field's principal column counts elements per entry; the others (a
            // string's characters, a streamer field's bytes) belong to its items, which
            // start empty: ROOT defers just the principal column.
            let principal = descriptor.field(rec.field_id).columns.first() == Some(&id);
            let first = match per_entry(&descriptor, rec.field_id) {
                Some(mult) if principal => self.n_entries * mult,
                _ => 0,
            };
            if first > 0 {
                rec.flags |= COLUMN_FLAG_DEFERRED;
                rec.first_element_index = Some(first as i64);
            }
            let (state, memory) = column_state(&descriptor, rec, first)?;
            self.planner.add_column(memory)?;
            debug_assert_eq!(self.columns.len() as u32, id);
            self.columns.push(state);
        }
        let footer = Footer {
            extension: extension.clone(),
            ..Footer::default()
        };
        self.descriptor =
            Descriptor::build(FORMAT_VERSION, self.header.clone(), footer, Vec::new())?;
        self.extension = extension;
        self.items.resize(self.descriptor.fields.len(), 0);
        self.alternatives.resize(self.descriptor.fields.len(), 0);
        self.data_fields = self
            .descriptor
            .top_level
            .iter()
            .copied()
            .filter(|&id| !self.descriptor.field(id).is_projected())
            .collect();
        Ok(())
    }

    /// Appends the entries of `batch`, whose columns are the top-level data fields in
    /// schema order (by name). Clusters are committed as they reach their size.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let arrays = self
            .data_fields
            .iter()
            .map(|&id| {
                let name = self.descriptor.field(id).name();
                batch.column_by_name(name).cloned().ok_or_else(|| {
                    Error::InvalidArgument(format!("the batch has no column \"{name}\""))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = batch.num_rows();
        let sizes = self.entry_sizes(&arrays, 0, rows)?;
        let mut start = 0usize;
        while start < rows {
            // Write entries up to the one that brings the cluster to its estimated size,
            // as ROOT's fill context checks after every entry; at most a few MiB at a time,
            // since shredding holds a slice's values twice for a moment.
            let threshold = self.cluster_threshold();
            let mut end = rows;
            let mut acc = 0u64;
            for (i, s) in sizes[start..].iter().enumerate() {
                acc += s;
                if self.unzipped_cluster_bytes + acc >= threshold || acc >= SHRED_SLICE_BYTES {
                    end = start + i + 1;
                    break;
                }
            }
            self.shred_slice(&arrays, start, end).map_err(|e| {
                if start == 0 {
                    e
                } else {
                    Error::InvalidArgument(format!(
                        "{e} (the batch's first {start} entries were written before)"
                    ))
                }
            })?;
            self.plan_pages(&arrays, start, end)?;
            self.unzipped_cluster_bytes += acc;
            self.n_entries += (end - start) as u64;
            self.cut_pages()?;
            self.seal_full_pages()?;
            if self.unzipped_cluster_bytes >= threshold {
                self.commit_cluster()?;
            }
            start = end;
        }
        Ok(())
    }

    /// The uncompressed size at which the open cluster is committed.
    fn cluster_threshold(&self) -> u64 {
        self.unzipped_cluster_estimate
            .min(self.options.max_unzipped_cluster_size)
    }

    /// Runs the page plan over the column appends of rows `start..end`. Between the
    /// entries where some column's write page overflows, nothing but element counts
    /// change: those stretches are added in bulk, and only the overflowing entries are
    /// planned append by append, as ROOT makes them.
    fn plan_pages(
        &mut self,
        arrays: &[arrow_array::ArrayRef],
        start: usize,
        end: usize,
    ) -> Result<()> {
        let n = end - start;
        #[cfg(test)]
        if tests::PER_ENTRY_PLAN.with(|f| f.get()) {
            return self.plan_pages_per_entry(arrays, start, end);
        }
        let mut counts = Vec::new();
        for (&id, array) in self.data_fields.iter().zip(arrays) {
            let part = array.slice(start, n);
            if super::size::item_counts(self, id, part.as_ref(), &mut counts)?.is_none() {
                return self.plan_pages_per_entry(arrays, start, end);
            }
        }
        let prefixes: Vec<(usize, Prefix)> = counts
            .into_iter()
            .map(|(c, k)| (c as usize, Prefix::new(k)))
            .collect();
        let mut next: Vec<usize> = prefixes
            .iter()
            .map(|(c, p)| p.first_overflow(0, self.planner.room(*c), n))
            .collect();
        let mut s = 0usize;
        loop {
            let first = next.iter().copied().min().unwrap_or(n).min(n);
            for (c, p) in &prefixes {
                self.planner.add(*c, p.at(first) - p.at(s));
            }
            if first >= n {
                break;
            }
            let before: Vec<(u64, u64)> = prefixes
                .iter()
                .map(|(c, _)| self.planner.state(*c))
                .collect();
            let mut ops = Vec::new();
            for (&id, array) in self.data_fields.iter().zip(arrays) {
                let part = array.slice(start + first, 1);
                ops.push(super::size::item_ops(self, id, part.as_ref())?);
            }
            for f in &ops {
                for &(column, count) in &f.ops {
                    self.planner.append(column as usize, count);
                }
            }
            s = first + 1;
            for (j, (c, p)) in prefixes.iter().enumerate() {
                let (n0, max0) = before[j];
                let expected = (n0 + p.at(s) - p.at(first), max0);
                if next[j] <= first || self.planner.state(*c) != expected {
                    next[j] = p.first_overflow(s, self.planner.room(*c), n);
                }
            }
        }
        Ok(())
    }

    /// Runs the page plan over the column appends of rows `start..end`, entry by entry.
    fn plan_pages_per_entry(
        &mut self,
        arrays: &[arrow_array::ArrayRef],
        start: usize,
        end: usize,
    ) -> Result<()> {
        let mut per_field = Vec::with_capacity(arrays.len());
        for (&id, array) in self.data_fields.iter().zip(arrays) {
            let part = array.slice(start, end - start);
            per_field.push(super::size::item_ops(self, id, part.as_ref())?);
        }
        for i in 0..end - start {
            for f in &per_field {
                let (Some(&a), Some(&b)) = (f.bounds.get(i), f.bounds.get(i + 1)) else {
                    continue;
                };
                for &(column, count) in f.ops.get(a..b).unwrap_or_default() {
                    self.planner.append(column as usize, count);
                }
            }
        }
        Ok(())
    }

    /// Cuts the pages the plan sealed off the values appended, into `full`.
    fn cut_pages(&mut self) -> Result<()> {
        for (i, c) in self.columns.iter_mut().enumerate() {
            let cuts = self.planner.take_cuts(i);
            if cuts.is_empty() {
                continue;
            }
            for n in cuts {
                let page = c.page.take_front(n as usize)?;
                c.full.push(page);
            }
        }
        Ok(())
    }

    /// Uncompressed bytes each entry of rows `start..end` adds, summed over all columns.
    fn entry_sizes(
        &self,
        arrays: &[arrow_array::ArrayRef],
        start: usize,
        end: usize,
    ) -> Result<Vec<u64>> {
        let mut sizes = vec![0u64; end - start];
        for (&id, array) in self.data_fields.iter().zip(arrays) {
            let part = array.slice(start, end - start);
            super::size::add_item_sizes(self, id, part.as_ref(), &mut sizes)?;
        }
        Ok(sizes)
    }

    /// Bytes one element of column `id` takes packed on disk, as ROOT counts a cluster's
    /// uncompressed size.
    pub(crate) fn column_packed_size(&self, id: u32) -> u64 {
        let enc = &self.columns[id as usize].encoding;
        enc.page_bytes(1).unwrap_or(8)
    }

    /// Appends shredded values to column `id`'s write page (pages are cut later, where
    /// the page plan says).
    fn append_values(&mut self, id: u32, values: ColumnValues) -> Result<()> {
        let c = self
            .columns
            .get_mut(id as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {id}")))?;
        c.cluster_elements += values.len() as u64;
        c.page.push(values);
        Ok(())
    }

    /// Shreds entries `start..end` of every data field into the columns: all fields
    /// first into a staging area, then into the columns only if every one succeeded, so
    /// that refused data (nulls in a field that is not optional, a value out of range)
    /// leaves the columns as they were and later entries stay aligned.
    fn shred_slice(
        &mut self,
        arrays: &[arrow_array::ArrayRef],
        start: usize,
        end: usize,
    ) -> Result<()> {
        let desc = &self.descriptor;
        let columns_of = |f: u32| desc.written_columns(f);
        let mut staged = StagedColumns {
            items: self.items.clone(),
            alternatives: self.alternatives.clone(),
            appends: Vec::new(),
        };
        for (&id, array) in self.data_fields.iter().zip(arrays) {
            let part = array.slice(start, end - start);
            shred(desc, &columns_of, &mut staged, id, part.as_ref())?;
        }
        self.items = staged.items;
        self.alternatives = staged.alternatives;
        for (column, values) in staged.appends {
            self.append_values(column, values)?;
        }
        Ok(())
    }

    /// Starts sealing the pages that filled up on the thread pool, one job per column,
    /// and returns without waiting for them unless the values being sealed exceed the
    /// page buffer budget: then it waits until they are back under it.
    fn seal_full_pages(&mut self) -> Result<()> {
        let checksums = self.options.enable_page_checksums;
        let compression = self.options.compression;
        for (i, c) in self.columns.iter_mut().enumerate() {
            if c.full.is_empty() {
                continue;
            }
            let pages = std::mem::take(&mut c.full);
            let elements: u64 = pages.iter().map(|p| p.len() as u64).sum();
            let bytes = elements * self.planner.element_size(i);
            let job = c.jobs_taken + c.jobs.len();
            c.jobs.push(None);
            let enc = c.encoding;
            let tx = self.sealing.tx.clone();
            self.sealing.outstanding += 1;
            self.sealing.bytes += bytes;
            self.run_bytes += bytes;
            rayon::spawn(move || {
                let sealed = pages
                    .into_iter()
                    .map(|p| seal_page(&enc, &p.join()?, compression, checksums))
                    .collect::<Result<Vec<_>>>();
                // The writer may be gone (dropped after an error): nobody waits then.
                let _ = tx.send(Sealed {
                    column: i,
                    job,
                    bytes,
                    pages: sealed,
                });
            });
        }
        // Enough values in flight to keep every thread busy, and no more: the rest of the
        // page buffer budget is the caller's.
        let busy = (4 * rayon::current_num_threads() as u64)
            .saturating_mul(self.options.max_unzipped_page_size)
            .max(4 << 20);
        let limit = self.options.effective_page_buffer_budget().min(busy);
        while self.sealing.outstanding > 0 && self.sealing.bytes > limit {
            self.receive_sealed()?;
        }
        // Runs are cut by the bytes sent for sealing, never by what happens to be sealed
        // already, so that the file's layout does not depend on thread timing.
        if let Some(run) = self.options.page_run_size {
            if self.run_bytes >= run {
                self.run_bytes = 0;
                let mark = self
                    .columns
                    .iter()
                    .map(|c| c.jobs_taken + c.jobs.len())
                    .collect();
                if let Some(previous) = self.run_mark.replace(mark) {
                    self.write_run_before(&previous)?;
                }
            }
        }
        Ok(())
    }

    /// Waits for one sealing job and files its pages.
    fn receive_sealed(&mut self) -> Result<()> {
        let done = self
            .sealing
            .rx
            .lock()
            .map_err(|_| Error::InvalidArgument("a page sealing job panicked".into()))?
            .recv()
            .map_err(|_| Error::InvalidArgument("a page sealing job was lost".into()))?;
        self.sealing.outstanding -= 1;
        self.sealing.bytes -= done.bytes;
        let pages = done.pages?;
        let slot = self
            .columns
            .get_mut(done.column)
            .and_then(|c| c.jobs.get_mut(done.job.checked_sub(c.jobs_taken)?))
            .ok_or_else(|| Error::InvalidArgument("a page sealing job of no column".into()))?;
        *slot = Some(pages);
        Ok(())
    }

    /// Waits for every sealing job and moves their pages, in order, to the columns'
    /// sealed pages.
    fn collect_sealed(&mut self) -> Result<()> {
        while self.sealing.outstanding > 0 {
            self.receive_sealed()?;
        }
        for c in &mut self.columns {
            c.jobs_taken += c.jobs.len();
            for job in c.jobs.drain(..) {
                let pages =
                    job.ok_or_else(|| Error::InvalidArgument("a page sealing job lost".into()))?;
                c.sealed.extend(pages);
            }
        }
        Ok(())
    }

    /// Writes the pages of the sealing jobs started before `mark` (per column, a job
    /// count) as one run, waiting for those still being sealed.
    fn write_run_before(&mut self, mark: &[usize]) -> Result<()> {
        let pending = |c: &ColumnState, before: usize| {
            c.jobs
                .iter()
                .take(before.saturating_sub(c.jobs_taken))
                .any(Option::is_none)
        };
        while self.sealing.outstanding > 0
            && self
                .columns
                .iter()
                .zip(mark)
                .any(|(c, &before)| pending(c, before))
        {
            self.receive_sealed()?;
        }
        for (c, &before) in self.columns.iter_mut().zip(mark) {
            let n = before.saturating_sub(c.jobs_taken).min(c.jobs.len());
            c.jobs_taken += n;
            for job in c.jobs.drain(..n) {
                let pages =
                    job.ok_or_else(|| Error::InvalidArgument("a page sealing job lost".into()))?;
                c.sealed.extend(pages);
            }
        }
        self.write_sealed_run()
    }

    /// Commits the open cluster: seals the last pages, writes its pages as one blob
    /// (several when larger than a key), records the page locations.
    pub fn commit_cluster(&mut self) -> Result<()> {
        let n = self.n_entries - self.cluster_first_entry;
        if n == 0 {
            return Ok(());
        }
        // Every column's write page is sealed, however full.
        self.planner.flush_all();
        self.cut_pages()?;
        self.seal_full_pages()?;
        self.collect_sealed()?;
        self.write_sealed_run()?;
        self.run_mark = None;
        self.run_bytes = 0;
        let mut cluster_columns = Vec::with_capacity(self.columns.len());
        for c in &mut self.columns {
            cluster_columns.push(ColumnPages {
                pages: std::mem::take(&mut c.placed),
                element_offset: Some(c.first_element),
                compression: Some(self.options.compression.as_u32()),
            });
            c.first_element += c.cluster_elements;
            c.cluster_elements = 0;
        }
        self.open_group.push((
            ClusterSummary {
                first_entry: self.cluster_first_entry,
                n_entries: n,
            },
            cluster_columns,
        ));
        // The next cluster's size estimate follows the compression factor of all clusters
        // so far (in single precision, capped at 1000, as ROOT's fill context).
        self.bytes_filled += self.unzipped_cluster_bytes;
        self.bytes_flushed += std::mem::take(&mut self.cluster_zipped_bytes);
        self.written_pages.clear();
        let factor = (self.bytes_filled as f32 / self.bytes_flushed as f32).min(1000.0);
        self.unzipped_cluster_estimate =
            (factor * self.options.approx_zipped_cluster_size as f32) as u64;
        self.unzipped_cluster_bytes = 0;
        self.cluster_first_entry = self.n_entries;
        self.items.iter_mut().for_each(|v| *v = 0);
        self.alternatives.iter_mut().for_each(|v| *v = 0);
        if let Some(per_group) = self.options.checkpoint_every {
            if self.open_group.len() as u64 >= per_group {
                self.commit_cluster_group()?;
            }
        }
        Ok(())
    }

    /// Writes the columns' sealed pages as one run: column by column, each column's pages
    /// in order, in blobs of at most one key each. Identical pages of the
    /// cluster (same checksum, same bytes) are written once; across runs only small ones,
    /// whose bytes are kept for the comparison.
    fn write_sealed_run(&mut self) -> Result<()> {
        let merge = self.options.enable_same_page_merging && self.options.enable_page_checksums;
        // Where each page goes: written in this run, or pointing to an identical page
        // written before (`Earlier`) or in this run (`InRun`).
        enum Place {
            Write,
            Earlier(Locator),
            InRun(usize, usize),
        }
        let mut first_seen: std::collections::HashMap<u64, (usize, usize)> =
            std::collections::HashMap::new();
        let mut places: Vec<Vec<Place>> = Vec::with_capacity(self.columns.len());
        for (ci, c) in self.columns.iter().enumerate() {
            let mut column_places = Vec::with_capacity(c.sealed.len());
            for (pi, p) in c.sealed.iter().enumerate() {
                let key = if merge { p.checksum() } else { None };
                let place = match key {
                    None => Place::Write,
                    Some(key) => match (self.written_pages.get(&key), first_seen.get(&key)) {
                        (Some((loc, bytes)), _) if *bytes == p.bytes => Place::Earlier(*loc),
                        (_, Some(&(cj, pj))) if self.columns[cj].sealed[pj].bytes == p.bytes => {
                            Place::InRun(cj, pj)
                        }
                        (_, Some(_)) => Place::Write,
                        (_, None) => {
                            first_seen.insert(key, (ci, pi));
                            Place::Write
                        }
                    },
                };
                column_places.push(place);
            }
            places.push(column_places);
        }
        // Lay the pages out in blobs of at most one key each.
        let max_blob = self.options.max_key_size;
        let mut blob_len = 0usize;
        let mut pending: Vec<(usize, usize, usize, usize)> = Vec::new(); // (column, page, offset in blob, length)
        let mut locators: Vec<Vec<Locator>> = self
            .columns
            .iter()
            .map(|c| vec![Locator::default(); c.sealed.len()])
            .collect();
        for (ci, column_places) in places.iter().enumerate() {
            for (pi, place) in column_places.iter().enumerate() {
                if !matches!(place, Place::Write) {
                    continue;
                }
                let len = self.columns[ci].sealed[pi].bytes.len();
                if blob_len > 0 && (blob_len + len) as u64 > max_blob {
                    self.flush_blob(&mut pending, &mut locators)?;
                    blob_len = 0;
                }
                pending.push((ci, pi, blob_len, len));
                blob_len += len;
                self.cluster_zipped_bytes += len as u64;
            }
        }
        self.flush_blob(&mut pending, &mut locators)?;
        for (ci, column_places) in places.into_iter().enumerate() {
            for (pi, place) in column_places.into_iter().enumerate() {
                let locator = match place {
                    Place::Write => locators[ci][pi],
                    Place::Earlier(loc) => loc,
                    Place::InRun(cj, pj) => locators[cj][pj],
                };
                let page = &mut self.columns[ci].sealed[pi];
                let key = page.checksum();
                let bytes = std::mem::take(&mut page.bytes);
                if merge && matches!(place, Place::Write) && bytes.len() <= MERGE_ACROSS_RUNS_BYTES
                {
                    if let Some(key) = key {
                        self.written_pages.entry(key).or_insert((locator, bytes));
                    }
                }
                let page = &self.columns[ci].sealed[pi];
                let info = PageInfo {
                    n_elements: page.n_elements,
                    has_checksum: page.has_checksum,
                    locator,
                };
                self.columns[ci].placed.push(info);
            }
            self.columns[ci].sealed.clear();
        }
        Ok(())
    }

    /// Writes the pending pages (column, page, offset in the blob, length) as one blob and
    /// records their locators.
    fn flush_blob(
        &mut self,
        pending: &mut Vec<(usize, usize, usize, usize)>,
        locators: &mut [Vec<Locator>],
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let parts: Vec<&[u8]> = pending
            .iter()
            .map(|&(ci, pi, _, _)| self.columns[ci].sealed[pi].bytes.as_slice())
            .collect();
        let offset = self
            .sink
            .write_blob_parts(&parts, self.options.max_key_size)?;
        for &(ci, pi, at, len) in pending.iter() {
            let page = &mut self.columns[ci].sealed[pi];
            let checksum = if page.has_checksum { 8 } else { 0 };
            locators[ci][pi] = Locator {
                size: (len - checksum) as u64,
                offset: offset + at as u64,
            };
        }
        pending.clear();
        Ok(())
    }

    /// Commits the open cluster group: writes the page list of its clusters.
    pub fn commit_cluster_group(&mut self) -> Result<()> {
        if self.open_group.is_empty() {
            return Ok(());
        }
        let (clusters, columns): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.open_group).into_iter().unzip();
        let min_entry = clusters
            .first()
            .map_or(0, |c: &ClusterSummary| c.first_entry);
        let span = clusters.iter().map(|c| c.n_entries).sum();
        let list = PageList {
            header_checksum: self.header_checksum,
            clusters,
            columns,
        };
        let n_clusters = list.clusters.len() as u32;
        let (page_list, _) = write_envelope(
            &mut self.sink,
            EnvelopeType::PageList,
            &list.write()?,
            &self.options,
        )?;
        // The group is committed once its page list is out of this process.
        self.sink.checkpoint()?;
        self.groups.push(ClusterGroupRecord {
            min_entry,
            entry_span: span,
            n_clusters,
            page_list,
        });
        Ok(())
    }

    /// Links an attribute set (an RNTuple of its own, already written, whose anchor
    /// object lies at `anchor_locator`) into this RNTuple's footer under `name`.
    pub fn link_attribute_set(
        &mut self,
        name: &str,
        schema_version: (u16, u16),
        anchor_locator: Locator,
        anchor_length: u32,
    ) {
        self.attribute_sets.push(LinkedAttributeSet {
            schema_version_major: schema_version.0,
            schema_version_minor: schema_version.1,
            anchor_length,
            anchor_locator,
            name: name.to_string(),
        });
    }

    /// Commits what is open, writes the footer, and returns the anchor to store.
    pub fn finish(mut self) -> Result<Anchor> {
        self.commit_cluster()?;
        self.commit_cluster_group()?;
        let footer = Footer {
            header_checksum: self.header_checksum,
            extension: std::mem::take(&mut self.extension),
            cluster_groups: std::mem::take(&mut self.groups),
            attribute_sets: std::mem::take(&mut self.attribute_sets),
        };
        let (footer_link, _) = write_envelope(
            &mut self.sink,
            EnvelopeType::Footer,
            &footer.write(),
            &self.options,
        )?;
        Ok(Anchor {
            version_epoch: FORMAT_VERSION.0,
            version_major: FORMAT_VERSION.1,
            version_minor: FORMAT_VERSION.2,
            version_patch: FORMAT_VERSION.3,
            seek_header: self.header_link.locator.offset,
            nbytes_header: self.header_link.locator.size,
            len_header: self.header_link.length,
            seek_footer: footer_link.locator.offset,
            nbytes_footer: footer_link.locator.size,
            len_footer: footer_link.length,
            max_key_size: self.options.max_key_size,
        })
    }
}

/// A column's values as the chunks they were appended in: a page grows without
/// reallocating and copying, and is joined into one buffer only when it is sealed.
#[derive(Default)]
struct ChunkedValues {
    chunks: std::collections::VecDeque<ColumnValues>,
    len: usize,
}

impl ChunkedValues {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, values: ColumnValues) {
        if !values.is_empty() {
            self.len += values.len();
            self.chunks.push_back(values);
        }
    }

    /// Splits off the first `n` values.
    fn take_front(&mut self, n: usize) -> Result<ChunkedValues> {
        if n > self.len {
            return Err(Error::InvalidArgument("page plan beyond the values".into()));
        }
        let mut front = ChunkedValues::default();
        while front.len < n {
            let Some(chunk) = self.chunks.pop_front() else {
                break;
            };
            let want = n - front.len;
            if chunk.len() <= want {
                self.len -= chunk.len();
                front.push(chunk);
            } else {
                let split = || Error::InvalidArgument("page plan beyond the values".into());
                let head = chunk.slice(0, want).ok_or_else(split)?;
                let tail = chunk.slice(want, chunk.len() - want).ok_or_else(split)?;
                self.chunks.push_front(tail);
                self.len -= want;
                front.push(head);
            }
        }
        Ok(front)
    }

    /// The values as one buffer (of the first chunk's variant: a quantized column takes
    /// the field's floats or doubles).
    fn join(mut self) -> Result<ColumnValues> {
        let Some(mut joined) = self.chunks.pop_front() else {
            return Err(Error::InvalidArgument("an empty page to seal".into()));
        };
        joined.reserve(self.len - joined.len());
        for chunk in self.chunks {
            joined.append(chunk)?;
        }
        Ok(joined)
    }
}

/// The values and counters of a slice being shredded, applied to the writer's columns
/// once the whole slice shredded without error.
struct StagedColumns {
    items: Vec<u64>,
    alternatives: Vec<u64>,
    appends: Vec<(u32, ColumnValues)>,
}

impl ColumnSink for StagedColumns {
    fn append(&mut self, id: u32, values: ColumnValues) -> Result<()> {
        self.appends.push((id, values));
        Ok(())
    }

    fn advance_items(&mut self, id: u32, by: u64) -> u64 {
        advance(&mut self.items, id, by)
    }

    fn advance_alternative(&mut self, id: u32, by: u64) -> u64 {
        advance(&mut self.alternatives, id, by)
    }
}

/// Adds `by` to counter `id`, returning its value before.
fn advance(counters: &mut [u64], id: u32, by: u64) -> u64 {
    let slot = &mut counters[id as usize];
    let before = *slot;
    *slot += by;
    before
}

/// Elements per entry of field `id`: `Some(k)` outside collections and variants (the
/// product of the array sizes above it), `None` inside them.
fn per_entry(desc: &Descriptor, id: u32) -> Option<u64> {
    use crate::schema::FieldKind;
    let mut mult = 1u64;
    let mut cur = id;
    while let Some(parent) = desc.field(cur).parent {
        match desc.field_kind(parent) {
            FieldKind::Record(..) | FieldKind::Wrapper(_) => {}
            FieldKind::Array(_, n) => mult = mult.checked_mul(n)?,
            _ => return None,
        }
        cur = parent;
    }
    if let FieldKind::Bitset(n) = desc.field_kind(id) {
        mult = mult.checked_mul(n)?;
    }
    Some(mult)
}

/// A sealing job's result.
struct Sealed {
    column: usize,
    job: usize,
    /// The bytes its values took in memory.
    bytes: u64,
    pages: Result<Vec<SealedPage>>,
}

/// The sealing jobs on the thread pool.
struct Sealing {
    tx: std::sync::mpsc::Sender<Sealed>,
    /// Behind a mutex only so that the writer is `Sync`; only the writer receives.
    rx: std::sync::Mutex<std::sync::mpsc::Receiver<Sealed>>,
    /// Jobs started and not yet received.
    outstanding: usize,
    /// The bytes in memory of their values.
    bytes: u64,
}

impl Sealing {
    fn new() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        Sealing {
            tx,
            rx: std::sync::Mutex::new(rx),
            outstanding: 0,
            bytes: 0,
        }
    }
}

/// Cumulative element counts of one column over the entries of a slice.
enum Prefix {
    /// The same count for every entry.
    Const(u64),
    /// `sums[e]`: the elements of entries `0..e`.
    Sums(Vec<u64>),
}

impl Prefix {
    fn new(counts: super::size::Counts) -> Self {
        match counts {
            super::size::Counts::Const(k) => Prefix::Const(k),
            super::size::Counts::PerItem(v) => {
                let mut sums = Vec::with_capacity(v.len() + 1);
                let mut acc = 0u64;
                sums.push(0);
                for x in v {
                    acc += x;
                    sums.push(acc);
                }
                Prefix::Sums(sums)
            }
        }
    }

    /// The elements of entries `0..e`.
    fn at(&self, e: usize) -> u64 {
        match self {
            Prefix::Const(k) => k * e as u64,
            Prefix::Sums(sums) => sums.get(e).or(sums.last()).copied().unwrap_or(0),
        }
    }

    /// The first entry at or after `s` (before `n`) whose elements no longer fit in
    /// `room` counted from `s`: the entry where the column's write page overflows.
    fn first_overflow(&self, s: usize, room: u64, n: usize) -> usize {
        match self {
            Prefix::Const(0) => n,
            Prefix::Const(k) => s
                .saturating_add((room / k).try_into().unwrap_or(usize::MAX))
                .min(n),
            Prefix::Sums(sums) => {
                let limit = self.at(s) + room;
                let tail = sums.get(s + 1..).unwrap_or_default();
                (s + tail.partition_point(|&p| p <= limit)).min(n)
            }
        }
    }
}

/// ROOT's write pages on element counts alone: where it would cut each column's pages.
///
/// Every column has one write page, starting at the initial page size. When it is full
/// it doubles (up to the maximum page size) if the page buffer budget allows, after
/// sealing the pages of other columns that are larger than it, largest first (ties: the
/// higher column id first), until enough is free; pages at their initial size are never
/// sealed early. If that is not enough, or the page is at its maximum size, the page is
/// sealed and the column starts again with a page of the initial size.
struct PagePlanner {
    budget: u64,
    initial_page_size: u64,
    max_page_size: u64,
    /// Sum of the capacities (bytes) of all write pages.
    allocated: u64,
    columns: Vec<PlannedColumn>,
    /// The columns by write page capacity, largest first, then by id, highest first.
    by_size: std::collections::BTreeSet<(std::cmp::Reverse<u64>, std::cmp::Reverse<usize>)>,
}

struct PlannedColumn {
    element_size: u64,
    initial_elements: u64,
    max_elements: u64,
    n_elements: u64,
    /// Element counts of the pages sealed and not yet cut.
    cuts: Vec<u64>,
}

impl PlannedColumn {
    fn capacity(&self) -> u64 {
        self.max_elements * self.element_size
    }
}

/// The error for a page buffer budget that cannot hold the first pages of all columns,
/// in the user's terms: the cluster size it comes from, and the smallest that works.
fn budget_too_small(options: &WriteOptions, planner: &PagePlanner, element_sizes: &[u64]) -> Error {
    // Each column takes its first page from the budget twice (see `add_column`).
    let needed: u64 = element_sizes
        .iter()
        .map(|&size| 2 * planner.initial_page_bytes(size))
        .sum();
    let n = element_sizes.len();
    match options.page_buffer_budget {
        Some(budget) => Error::InvalidArgument(format!(
            "the page buffer budget of {budget} bytes is too small for the {n} columns of this schema: their first pages need {needed} bytes"
        )),
        None => {
            let factor = if options.compression.as_u32() != 0 { 2 } else { 1 };
            Error::InvalidArgument(format!(
                "the cluster size of {} bytes is too small for the {n} columns of this schema: the cluster size must be at least {} bytes (their first pages need {needed} bytes of page buffers, {factor}x the cluster size)",
                options.approx_zipped_cluster_size,
                needed.div_ceil(factor)
            ))
        }
    }
}

impl PagePlanner {
    /// Bytes of a column's first write page, for elements of `element_size` bytes.
    fn initial_page_bytes(&self, element_size: u64) -> u64 {
        let element_size = element_size.max(1);
        let initial = self.initial_page_size.min(self.max_page_size);
        (initial / element_size).max(1) * element_size
    }

    fn new(options: &WriteOptions) -> Self {
        PagePlanner {
            budget: options.effective_page_buffer_budget(),
            initial_page_size: options.initial_unzipped_page_size,
            max_page_size: options.max_unzipped_page_size,
            allocated: 0,
            columns: Vec::new(),
            by_size: std::collections::BTreeSet::new(),
        }
    }

    /// Adds a column whose elements take `element_size` bytes in memory and reserves its
    /// first write page.
    fn add_column(&mut self, element_size: u64) -> Result<()> {
        let element_size = element_size.max(1);
        // ROOT refuses an initial page larger than the maximum page, or too small for one
        // element; here the initial page is capped at the maximum and holds at least one.
        let initial = self.initial_page_size.min(self.max_page_size);
        let initial_elements = (initial / element_size).max(1);
        let id = self.columns.len();
        let bytes = initial_elements * element_size;
        self.columns.push(PlannedColumn {
            element_size,
            initial_elements,
            max_elements: initial_elements,
            n_elements: 0,
            cuts: Vec::new(),
        });
        // ROOT's buffered sink reserves the write page from its inner (file) sink, which
        // connects a copy of every column as well: each column takes its initial page
        // from the budget twice, and the copy's is never given back.
        for _ in 0..2 {
            if !self.try_evict(bytes, 0) {
                return Err(Error::InvalidArgument(format!(
                    "page buffer budget {} too small for the initial pages of all columns",
                    self.budget
                )));
            }
            self.allocated += bytes;
        }
        self.by_size
            .insert((std::cmp::Reverse(bytes), std::cmp::Reverse(id)));
        Ok(())
    }

    /// Bytes one element of column `id` takes in memory.
    fn element_size(&self, id: usize) -> u64 {
        self.columns.get(id).map_or(8, |c| c.element_size)
    }

    /// Elements column `id`'s write page has room for.
    fn room(&self, id: usize) -> u64 {
        self.columns
            .get(id)
            .map_or(0, |c| c.max_elements - c.n_elements)
    }

    /// The elements and capacity of column `id`'s write page.
    fn state(&self, id: usize) -> (u64, u64) {
        self.columns
            .get(id)
            .map_or((0, 0), |c| (c.n_elements, c.max_elements))
    }

    /// `count` elements appended to column `id`, which has room for them.
    fn add(&mut self, id: usize, count: u64) {
        if let Some(c) = self.columns.get_mut(id) {
            debug_assert!(c.n_elements + count <= c.max_elements);
            c.n_elements += count;
        }
    }

    /// `count` elements appended to column `id`.
    fn append(&mut self, id: usize, mut count: u64) {
        while count > 0 {
            let c = &self.columns[id];
            let mut room = c.max_elements - c.n_elements;
            if room == 0 {
                self.grow_or_flush(id);
                let c = &self.columns[id];
                room = c.max_elements - c.n_elements;
            }
            let batch = count.min(room);
            self.columns[id].n_elements += batch;
            count -= batch;
        }
    }

    fn grow_or_flush(&mut self, id: usize) {
        let c = &self.columns[id];
        let mut grown = c.max_elements * 2;
        if grown * c.element_size > self.max_page_size {
            grown = (self.max_page_size / c.element_size).max(c.initial_elements);
        }
        if grown <= c.max_elements {
            self.flush(id);
        } else if self.try_resize(id, grown) {
            self.columns[id].max_elements = grown;
        } else {
            self.flush(id);
        }
    }

    /// Seals column `id`'s write page (if it has elements) and starts a new one at the
    /// initial size.
    fn flush(&mut self, id: usize) {
        let c = &mut self.columns[id];
        if c.n_elements == 0 {
            return;
        }
        c.cuts.push(c.n_elements);
        c.n_elements = 0;
        let initial = c.initial_elements;
        // Shrinking always succeeds.
        self.try_resize(id, initial);
        self.columns[id].max_elements = initial;
    }

    /// Seals every write page (a cluster is committed).
    fn flush_all(&mut self) {
        for id in 0..self.columns.len() {
            self.flush(id);
        }
    }

    /// Registers `elements` as column `id`'s new write page capacity, making room by
    /// sealing larger pages of other columns if it grows; false if it does not fit.
    fn try_resize(&mut self, id: usize, elements: u64) -> bool {
        let current = self.columns[id].capacity();
        let new = elements * self.columns[id].element_size;
        if new == current {
            return true;
        }
        let key = (std::cmp::Reverse(current), std::cmp::Reverse(id));
        self.by_size.remove(&key);
        if new < current {
            self.allocated -= current - new;
        } else if self.try_evict(new - current, current) {
            self.allocated += new - current;
        } else {
            self.by_size.insert(key);
            return false;
        }
        self.by_size
            .insert((std::cmp::Reverse(new), std::cmp::Reverse(id)));
        true
    }

    /// Seals write pages larger than `limit` bytes, largest first, until `target` bytes
    /// of the budget are free; false if they cannot be.
    fn try_evict(&mut self, target: u64, limit: u64) -> bool {
        if self.budget.saturating_sub(self.allocated) >= target {
            return true;
        }
        let candidates: Vec<usize> = self
            .by_size
            .iter()
            .take_while(|(size, _)| size.0 > limit)
            .map(|(_, id)| id.0)
            .collect();
        for other in candidates {
            let c = &self.columns[other];
            if c.max_elements == c.initial_elements {
                continue;
            }
            self.flush(other);
            if self.budget.saturating_sub(self.allocated) >= target {
                return true;
            }
        }
        false
    }

    /// The page sizes (elements) sealed for column `id` since the last call.
    fn take_cuts(&mut self, id: usize) -> Vec<u64> {
        self.columns
            .get_mut(id)
            .map(|c| std::mem::take(&mut c.cuts))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ColumnDefaults, SchemaBuilder};
    use arrow_array::builder::{
        Float32Builder, Float64Builder, Int32Builder, LargeListBuilder, StringBuilder, UInt8Builder,
    };
    use arrow_array::ArrayRef;
    use std::cell::Cell;
    use std::sync::Arc;

    thread_local! {
        /// Makes the writer plan pages entry by entry (the reference the bulk plan must match).
        pub(super) static PER_ENTRY_PLAN: Cell<bool> = const { Cell::new(false) };
    }

    /// Entries with scalars, vectors of random lengths, strings, nested vectors and
    /// optionals, from a fixed pseudo-random sequence.
    fn batch(n: usize, seed: u64) -> RecordBatch {
        let mut state = seed;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let mut scalar = Int32Builder::new();
        let mut list = LargeListBuilder::new(Float32Builder::new());
        let mut text = StringBuilder::new();
        let mut nested = LargeListBuilder::new(LargeListBuilder::new(UInt8Builder::new()));
        let mut optional = Float64Builder::new();
        for i in 0..n {
            scalar.append_value(i as i32);
            for _ in 0..next(13) {
                list.values().append_value(next(1000) as f32);
            }
            list.append(true);
            text.append_value("x".repeat(next(40) as usize));
            for _ in 0..next(4) {
                for _ in 0..next(30) {
                    nested.values().values().append_value(next(256) as u8);
                }
                nested.values().append(true);
            }
            nested.append(true);
            if next(3) == 0 {
                optional.append_null();
            } else {
                optional.append_value(next(100) as f64);
            }
        }
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("scalar", Arc::new(scalar.finish())),
            ("list", Arc::new(list.finish())),
            ("text", Arc::new(text.finish())),
            ("nested", Arc::new(nested.finish())),
            ("optional", Arc::new(optional.finish())),
        ];
        RecordBatch::try_from_iter(columns).expect("a valid batch")
    }

    fn write(per_entry: bool, options: &WriteOptions) -> Vec<u8> {
        PER_ENTRY_PLAN.with(|f| f.set(per_entry));
        let batches: Vec<RecordBatch> = (0..4).map(|k| batch(3000, k)).collect();
        let mut builder =
            SchemaBuilder::new(ColumnDefaults { compressed: true }).nullable_as_optional(true);
        for f in batches[0].schema().fields() {
            builder.add_arrow_field(f).expect("a supported field");
        }
        let mut sink: Vec<u8> = Vec::new();
        let mut writer =
            RNTupleWriter::new(&mut sink, "t", builder.finish(), options.clone()).expect("writer");
        for b in &batches {
            writer.write_batch(b).expect("written");
        }
        writer.finish().expect("finished");
        PER_ENTRY_PLAN.with(|f| f.set(false));
        sink
    }

    /// Writes `batches` into memory with `options`; returns the bytes and the anchor.
    fn write_batches(
        batches: &[RecordBatch],
        options: &WriteOptions,
    ) -> (Vec<u8>, crate::format::Anchor) {
        let mut builder =
            SchemaBuilder::new(ColumnDefaults { compressed: true }).nullable_as_optional(true);
        for f in batches[0].schema().fields() {
            builder.add_arrow_field(f).expect("a supported field");
        }
        let mut sink: Vec<u8> = Vec::new();
        let anchor = {
            let mut writer = RNTupleWriter::new(&mut sink, "t", builder.finish(), options.clone())
                .expect("writer");
            for b in batches {
                writer.write_batch(b).expect("written");
            }
            writer.finish().expect("finished")
        };
        (sink, anchor)
    }

    fn read_back(bytes: Vec<u8>, anchor: crate::format::Anchor) -> crate::read::RNTupleReader {
        let source = Arc::new(crate::io::MemorySource::new("mem", bytes));
        crate::read::RNTupleReader::from_anchor(source, anchor, "t".into()).expect("readable")
    }

    #[test]
    fn pages_written_in_runs_read_back_and_merge_across_runs() {
        // Small pages and runs: every cluster is written in many runs. A column of zeros
        // gives identical pages, which must be stored once per cluster however many runs
        // they fall in.
        let mut batches: Vec<RecordBatch> = (0..4).map(|k| batch(3000, k)).collect();
        for b in &mut batches {
            let zeros: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![0i64; b.num_rows()]));
            let mut columns: Vec<(&str, ArrayRef)> = Vec::new();
            let schema = b.schema();
            for (f, a) in schema.fields().iter().zip(b.columns()) {
                columns.push((f.name().as_str(), a.clone()));
            }
            columns.push(("zeros", zeros));
            *b = RecordBatch::try_from_iter(columns).expect("a valid batch");
        }
        let base = WriteOptions {
            initial_unzipped_page_size: 64,
            max_unzipped_page_size: 2048,
            approx_zipped_cluster_size: 64 << 10,
            ..WriteOptions::default()
        };
        let in_runs = WriteOptions {
            page_run_size: Some(4096),
            ..base.clone()
        };
        let one_run = WriteOptions {
            page_run_size: None,
            ..base
        };
        let (bytes, anchor) = write_batches(&batches, &in_runs);
        let (again, _) = write_batches(&batches, &in_runs);
        assert!(
            bytes == again,
            "the layout must not depend on thread timing"
        );
        let (single, single_anchor) = write_batches(&batches, &one_run);
        let runs = read_back(bytes, anchor);
        let whole = read_back(single, single_anchor);

        let n = runs.num_entries();
        assert_eq!(n, 12_000);
        // The same values as the file with one run per cluster, and as the input where
        // the types read back are the types written.
        let read = runs.read(None, 0..n).expect("read");
        let read_whole = whole.read(None, 0..n).expect("read");
        for f in read.schema().fields() {
            let (a, b) = (
                read.column_by_name(f.name()),
                read_whole.column_by_name(f.name()),
            );
            assert!(
                a.map(|a| a.to_data()) == b.map(|b| b.to_data()),
                "field {}",
                f.name()
            );
        }
        for name in ["scalar", "zeros"] {
            let input: Vec<ArrayRef> = batches
                .iter()
                .map(|b| b.column_by_name(name).expect("input column").clone())
                .collect();
            let input: Vec<&dyn arrow_array::Array> = input.iter().map(|a| a.as_ref()).collect();
            let expected = arrow_select::concat::concat(&input).expect("concatenated");
            let got = read.column_by_name(name).expect("a column");
            assert!(got.to_data() == expected.to_data(), "field {name}");
        }

        // The same clusters and pages (elements per page), in other places.
        let (d_runs, d_whole) = (runs.descriptor(), whole.descriptor());
        assert!(d_runs.clusters.len() > 2, "several clusters");
        assert_eq!(d_runs.clusters.len(), d_whole.clusters.len());
        let zeros_column = d_runs
            .written_columns(d_runs.find_field("zeros").expect("the zeros field"))
            .first()
            .copied()
            .expect("a column");
        let mut located_apart = false;
        let mut zero_pages = 0;
        let mut merged = 0;
        for (a, b) in d_runs.clusters.iter().zip(&d_whole.clusters) {
            assert_eq!((a.first_entry, a.n_entries), (b.first_entry, b.n_entries));
            for (ca, cb) in a.columns.iter().zip(&b.columns) {
                let counts = |c: &crate::format::ColumnPages| {
                    c.pages.iter().map(|p| p.n_elements).collect::<Vec<_>>()
                };
                assert_eq!(counts(ca), counts(cb));
            }
            let zeros = a.column(zeros_column).expect("zeros pages");
            // Pages of zeros of the same length are identical: one place per length.
            let mut places: std::collections::HashMap<u32, std::collections::HashSet<u64>> =
                std::collections::HashMap::new();
            for p in &zeros.pages {
                places
                    .entry(p.n_elements)
                    .or_default()
                    .insert(p.locator.offset);
            }
            zero_pages += zeros.pages.len();
            assert!(
                places.values().all(|offsets| offsets.len() == 1),
                "identical pages stored once per cluster: {places:?}"
            );
            let stored = |pages: &crate::format::ColumnPages| {
                pages
                    .pages
                    .iter()
                    .map(|p| p.locator.offset)
                    .collect::<std::collections::HashSet<_>>()
                    .len()
            };
            let whole_zeros = b.column(zeros_column).expect("zeros pages");
            assert_eq!(stored(zeros), stored(whole_zeros), "merged as in one run");
            merged += zeros.pages.len() - stored(zeros);
            // A column's pages lie together in one run per cluster, not in many runs.
            let list = a.column(0).expect("column 0");
            let gaps = list
                .pages
                .windows(2)
                .filter(|w| w[0].locator.offset + w[0].locator.size + 8 != w[1].locator.offset)
                .count();
            located_apart |= gaps > 0;
        }
        assert!(located_apart, "runs interleave the columns' pages");
        assert!(merged > 0, "pages of zeros merged");
        assert!(
            zero_pages > 4 * d_runs.clusters.len(),
            "{zero_pages} pages of zeros in {} clusters: too few to span runs",
            d_runs.clusters.len()
        );
    }

    #[test]
    fn bulk_page_plan_matches_the_entry_by_entry_plan() {
        // Small pages and budgets: many page overflows, growths and evictions.
        for (initial, max, budget, cluster) in [
            (64, 4096, None, 20_000),
            (16, 1024, Some(12 * 1024), 50_000),
            (256, 1 << 20, None, 128 << 20),
            (8, 512, Some(4 * 1024), 7_000),
        ] {
            let options = WriteOptions {
                initial_unzipped_page_size: initial,
                max_unzipped_page_size: max,
                page_buffer_budget: budget,
                approx_zipped_cluster_size: cluster,
                ..WriteOptions::default()
            };
            assert!(
                write(false, &options) == write(true, &options),
                "pages {initial}..{max}, budget {budget:?}, cluster {cluster}"
            );
        }
    }
}
