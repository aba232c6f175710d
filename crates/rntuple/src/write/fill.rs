//! Filling: what one filler (a writer, or one fill context of the parallel writer) does
//! with the entries it is given. It shreds each batch's values into column buffers, cuts
//! them into pages where the page plan says ([`super::page_plan`]), hands full pages to
//! the sealing pipeline ([`super::sealing`]), and when its cluster is due (its own
//! [`ClusterSizer`]) hands the cluster's page locations to its [`FillTarget`], which
//! records it.

use super::cluster::{new_header, ClusterBook, ClusterSizer, FORMAT_VERSION};
use super::entry_counts::{count_entries, item_ops, EntryCounts};
use super::options::WriteOptions;
use super::page_plan::{memory_size, PagePlanner};
use super::sealing::{ChunkedValues, SealingPipeline};
use super::shred::{shred, ColumnSink};
use super::sink::BlobSink;
use crate::encoding::{ColumnEncoding, ColumnValues};
use crate::error::{to_usize, Error, Result};
use crate::format::{ColumnRecord, Footer, Header, PageInfo, SchemaDescription};
use crate::schema::Descriptor;
use arrow_array::{ArrayRef, RecordBatch};
use std::collections::HashMap;

/// Where a filler's pages go (the sink) and who records its clusters.
pub(crate) trait FillTarget: BlobSink {
    /// Records a cluster of `n_entries` entries whose pages were written at `pages` (per
    /// column, in order).
    fn commit_cluster(
        &mut self,
        n_entries: u64,
        pages: Vec<Vec<PageInfo>>,
        options: &WriteOptions,
    ) -> Result<()>;
}

/// Entries are shredded a slice of about this many uncompressed bytes at a time.
const SHRED_SLICE_BYTES: u64 = 4 << 20;

/// Entries counted at first, before their size is known.
const FIRST_WINDOW_ENTRIES: usize = 1024;

/// A column's values not yet sealed.
struct ColumnBuffer {
    /// Values appended but not yet cut into pages (the write page and, until the page
    /// plan is applied, the values of the entries just shredded).
    page: ChunkedValues,
    /// Full pages not yet sent for sealing.
    full: Vec<ChunkedValues>,
}

/// A new column: its encoding, and the bytes one element takes in memory (by which
/// pages are sized) and packed on disk (by which ROOT counts a cluster's size).
struct NewColumn {
    encoding: ColumnEncoding,
    memory_size: u64,
    packed_size: u64,
}

impl NewColumn {
    fn of(descriptor: &Descriptor, rec: &ColumnRecord) -> Result<Self> {
        let encoding =
            ColumnEncoding::from_record(rec.column_type, rec.bits_on_storage, rec.value_range)?;
        let is_double = matches!(
            descriptor.field(rec.field_id).type_name(),
            "double" | "Double32_t"
        );
        Ok(NewColumn {
            encoding,
            memory_size: memory_size(encoding.column_type, is_double),
            packed_size: encoding.page_bytes(1).unwrap_or(8),
        })
    }
}

/// Refuses a schema with a field this writer cannot write.
pub(crate) fn check_writable(descriptor: &Descriptor) -> Result<()> {
    match descriptor
        .top_level
        .iter()
        .find_map(|&id| descriptor.unreadable_reason(id))
    {
        Some(why) => Err(Error::InvalidArgument(format!("cannot write {why}"))),
        None => Ok(()),
    }
}

/// Top-level fields with data (projected fields have none), in schema order.
fn data_fields(descriptor: &Descriptor) -> Vec<u32> {
    descriptor
        .top_level
        .iter()
        .copied()
        .filter(|&id| !descriptor.field(id).is_projected())
        .collect()
}

/// The entries of one filler not yet committed: column buffers, page plan, pages being
/// sealed, and the open cluster's size.
pub(crate) struct Filler {
    options: WriteOptions,
    descriptor: Descriptor,
    /// Top-level fields with data (projected fields have none), in schema order.
    data_fields: Vec<u32>,
    columns: Vec<ColumnBuffer>,
    /// Bytes one element of each column takes packed on disk.
    packed_sizes: Vec<u64>,
    /// Cluster-local item counters per collection field.
    items: Vec<u64>,
    /// Cluster-local entry counters per variant alternative field.
    alternatives: Vec<u64>,
    /// Where ROOT would cut pages.
    planner: PagePlanner,
    /// Pages being sealed on the thread pool while the caller goes on filling, and
    /// written in runs.
    sealing: SealingPipeline,
    /// The open cluster, and when it is due.
    sizer: ClusterSizer,
    /// The average uncompressed bytes of the entries counted last (to size the next
    /// count), `None` before any.
    entry_bytes: Option<u64>,
    /// Whether offset pages equal to another column's take copies of its sealed bytes
    /// (always, but for the tests that compare with sealing them all).
    copy_identical_offsets: bool,
}

impl Filler {
    /// A filler of the fields and columns of `descriptor` (no entries yet); an error if
    /// a field cannot be written or the page buffer budget cannot hold the first pages.
    pub(crate) fn new(descriptor: Descriptor, options: WriteOptions) -> Result<Self> {
        check_writable(&descriptor)?;
        let mut filler = Filler {
            sizer: ClusterSizer::new(&options),
            planner: PagePlanner::new(&options),
            options,
            data_fields: Vec::new(),
            descriptor,
            columns: Vec::new(),
            packed_sizes: Vec::new(),
            items: Vec::new(),
            alternatives: Vec::new(),
            sealing: SealingPipeline::new(),
            entry_bytes: None,
            copy_identical_offsets: true,
        };
        filler.add_new_columns()?;
        Ok(filler)
    }

    /// Starts the RNTuple `name` with `schema` in `sink`: checks that it can be filled,
    /// writes its header, and returns the header, a filler for its entries and the book
    /// of its clusters (its columns starting at element 0).
    pub(crate) fn start<S: BlobSink>(
        sink: &mut S,
        name: &str,
        schema: SchemaDescription,
        options: &WriteOptions,
    ) -> Result<(Header, Filler, ClusterBook)> {
        let header = new_header(name, schema);
        let descriptor = Descriptor::build(
            FORMAT_VERSION,
            header.clone(),
            Footer::default(),
            Vec::new(),
        )?;
        let filler = Filler::new(descriptor, options.clone())?;
        let mut book = ClusterBook::start(sink, &header, options)?;
        for _ in &filler.descriptor.columns {
            book.add_column(0);
        }
        Ok((header, filler, book))
    }

    /// The schema as a descriptor (fields and columns, no clusters).
    pub(crate) fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// Entries of the open cluster.
    pub(crate) fn open_entries(&self) -> u64 {
        self.sizer.open_entries()
    }

    /// Takes `extended` (the schema with fields added after the current ones, same ids
    /// for those) as the schema and adds its new columns; on an error the filler stays
    /// as it was.
    pub(crate) fn extend(&mut self, extended: Descriptor) -> Result<()> {
        check_writable(&extended)?;
        let previous = std::mem::replace(&mut self.descriptor, extended);
        self.add_new_columns()
            .inspect_err(|_| self.descriptor = previous)
    }

    /// Adds the columns of the descriptor that the filler does not have yet.
    fn add_new_columns(&mut self) -> Result<()> {
        let desc = &self.descriptor;
        let new_columns = desc
            .columns
            .get(self.columns.len()..)
            .unwrap_or_default()
            .iter()
            .map(|c| NewColumn::of(desc, &c.record))
            .collect::<Result<Vec<_>>>()?;
        let memory_sizes: Vec<u64> = new_columns.iter().map(|c| c.memory_size).collect();
        self.planner.add_columns(&memory_sizes, &self.options)?;
        for column in new_columns {
            self.columns.push(ColumnBuffer {
                page: ChunkedValues::default(),
                full: Vec::new(),
            });
            self.packed_sizes.push(column.packed_size);
            self.sealing.add_column(column.encoding);
        }
        self.items.resize(desc.fields.len(), 0);
        self.alternatives.resize(desc.fields.len(), 0);
        self.data_fields = data_fields(desc);
        Ok(())
    }

    /// Appends the entries of `batch`, whose columns are the top-level data fields in
    /// schema order (by name). Clusters are committed as they reach their size.
    ///
    /// The batch is walked twice: once to count what each entry appends to each column
    /// (the slices and the page plan need it before the values exist), once to shred
    /// the values. Counting goes ahead of shredding a window at a time, so that only a
    /// few slices' counts are held.
    pub(crate) fn write_batch<T: FillTarget>(
        &mut self,
        target: &mut T,
        batch: &RecordBatch,
    ) -> Result<()> {
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
        // What entries `start..start + counted.len()` append; counting even no entries
        // checks that the arrays match the fields.
        let first_window = self.window_entries(SHRED_SLICE_BYTES, rows);
        let mut counted = self.count_entries(&arrays, 0, first_window)?;
        let mut start = 0usize;
        while start < rows {
            // Write entries up to the one that brings the cluster to its estimated size,
            // as ROOT's fill context checks after every entry; at most a few MiB at a time,
            // since shredding holds a slice's values twice for a moment.
            let threshold = self.sizer.cluster_threshold(&self.options);
            let filled = self.sizer.unzipped_cluster_bytes();
            let mut acc = 0u64;
            let mut scanned = 0usize;
            let end = loop {
                let reached = counted.sizes()[scanned..].iter().position(|s| {
                    acc += s;
                    filled + acc >= threshold || acc >= SHRED_SLICE_BYTES
                });
                if let Some(i) = reached {
                    break start + scanned + i + 1;
                }
                scanned = counted.len();
                let next = start + scanned;
                if next >= rows {
                    break rows;
                }
                let wanted = threshold
                    .saturating_sub(filled + acc)
                    .min(SHRED_SLICE_BYTES - acc);
                let window = self.window_entries(wanted, rows - next);
                counted.append(self.count_entries(&arrays, next, window)?)?;
            };
            let later = counted.split_off(end - start);
            let slice = std::mem::replace(&mut counted, later);
            self.shred_slice(&arrays, start, end).map_err(|e| {
                if start == 0 {
                    e
                } else {
                    Error::InvalidArgument(format!(
                        "{e} (the batch's first {start} entries were written before)"
                    ))
                }
            })?;
            self.plan_pages(&arrays, start, &slice)?;
            self.sizer.add_entries((end - start) as u64, acc);
            self.cut_pages()?;
            self.seal_full_pages(target)?;
            if self.sizer.unzipped_cluster_bytes() >= threshold {
                self.commit_cluster(target)?;
            }
            start = end;
        }
        Ok(())
    }

    /// What entries `start..start + len` append to each column.
    fn count_entries(
        &mut self,
        arrays: &[ArrayRef],
        start: usize,
        len: usize,
    ) -> Result<EntryCounts> {
        let counts = count_entries(
            &self.descriptor,
            &self.packed_sizes,
            &self.data_fields,
            arrays,
            start,
            len,
        )?;
        if len > 0 {
            self.entry_bytes = Some(counts.sizes().iter().sum::<u64>() / len as u64);
        }
        Ok(counts)
    }

    /// How many of the `available` entries to count next, for about `bytes` bytes: by
    /// the size of the entries counted last, with a margin (entries counted beyond the
    /// slice are kept for the next one); a first guess when none were counted yet.
    fn window_entries(&self, bytes: u64, available: usize) -> usize {
        let entries = match self.entry_bytes {
            None => FIRST_WINDOW_ENTRIES,
            // Entries that add no bytes never end a slice.
            Some(0) => available,
            Some(per_entry) => {
                let entries = bytes.div_ceil(per_entry).saturating_mul(5) / 4 + 16;
                usize::try_from(entries).unwrap_or(usize::MAX)
            }
        };
        entries.max(1).min(available)
    }

    /// Runs the page plan over the column appends of the entries from row `start` on
    /// that `counts` counted.
    fn plan_pages(
        &mut self,
        arrays: &[ArrayRef],
        start: usize,
        counts: &EntryCounts,
    ) -> Result<()> {
        let (desc, fields) = (&self.descriptor, &self.data_fields);
        // The appends of an entry where a page overflows, in order.
        let entry_ops = |e: usize| -> Result<Vec<(u32, u64)>> {
            let mut ops = Vec::new();
            for (&id, array) in fields.iter().zip(arrays) {
                let part = array.slice(start + e, 1);
                ops.extend(item_ops(desc, id, part.as_ref())?.ops);
            }
            Ok(ops)
        };
        self.planner.plan(counts.columns(), counts.len(), entry_ops)
    }

    /// Cuts the pages the plan sealed off the values appended, into `full`.
    fn cut_pages(&mut self) -> Result<()> {
        for (i, c) in self.columns.iter_mut().enumerate() {
            for n in self.planner.take_cuts(i) {
                let page = c.page.take_front(to_usize(n, "elements of a page")?)?;
                c.full.push(page);
            }
        }
        Ok(())
    }

    /// Shreds entries `start..end` of every data field into the columns: all fields
    /// first into a staging area, then into the columns only if every one succeeded, so
    /// that refused data (nulls in a field that is not optional, a value out of range)
    /// leaves the columns as they were and later entries stay aligned.
    fn shred_slice(&mut self, arrays: &[ArrayRef], start: usize, end: usize) -> Result<()> {
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

    /// Appends shredded values to column `id`'s write page (pages are cut later, where
    /// the page plan says).
    fn append_values(&mut self, id: u32, values: ColumnValues) -> Result<()> {
        let c = self
            .columns
            .get_mut(id as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {id}")))?;
        c.page.push(values);
        Ok(())
    }

    /// Starts sealing the pages that filled up on the thread pool, one job per column,
    /// and returns without waiting for them unless the values being sealed exceed the
    /// page buffer budget: then it waits until they are back under it.
    ///
    /// Collections stored as separate vectors of equal lengths (NanoAOD's `Jet_pt`,
    /// `Jet_eta`, ...) fill their offset columns with the same values, page for page:
    /// such a column's pages are sealed once, and the columns with the same values take
    /// copies of the sealed bytes (which same-page merging then stores once, as it
    /// would the same bytes compressed again). The 2M-event benchmark table has 64 offset
    /// columns in 6 such groups: a third of its pages.
    fn seal_full_pages<T: FillTarget>(&mut self, target: &mut T) -> Result<()> {
        let round: Vec<(usize, Vec<ChunkedValues>)> = self
            .columns
            .iter_mut()
            .enumerate()
            .filter(|(_, c)| !c.full.is_empty())
            .map(|(i, c)| (i, std::mem::take(&mut c.full)))
            .collect();
        let copy_of = self.identical_index_jobs(&round);
        for ((i, pages), original) in round.into_iter().zip(copy_of) {
            let elements: u64 = pages.iter().map(|p| p.len() as u64).sum();
            let bytes = elements * self.planner.element_size(i);
            match original {
                Some(of) => self.sealing.submit_copy(i, of, bytes)?,
                None => self.sealing.submit(i, pages, bytes, &self.options)?,
            }
        }
        self.sealing.pace(target, &self.options)
    }

    /// For each job of `round` (a column and its full pages), the column of an earlier
    /// job of the round whose pages hold the same values with the same encoding, if it
    /// is an offset column and there is one.
    fn identical_index_jobs(&self, round: &[(usize, Vec<ChunkedValues>)]) -> Vec<Option<usize>> {
        let mut copy_of = vec![None; round.len()];
        if !self.copy_identical_offsets {
            return copy_of;
        }
        // Candidates by a cheap summary: page count, elements per page, last value.
        let mut seen: HashMap<(usize, Vec<usize>, Option<u64>), Vec<usize>> = HashMap::new();
        for (k, (i, pages)) in round.iter().enumerate() {
            if !self.sealing.is_index_column(*i) {
                continue;
            }
            let summary = (
                pages.len(),
                pages.iter().map(ChunkedValues::len).collect::<Vec<_>>(),
                pages.last().and_then(ChunkedValues::last_index),
            );
            let candidates = seen.entry(summary).or_default();
            let original = candidates.iter().copied().find(|&o| {
                let (oi, opages) = &round[o];
                self.sealing.same_encoding(*oi, *i)
                    && opages
                        .iter()
                        .zip(pages)
                        .all(|(a, b)| a.same_index_values(b))
            });
            match original {
                Some(o) => copy_of[k] = Some(round[o].0),
                None => candidates.push(k),
            }
        }
        copy_of
    }

    /// Seals every page, also offset pages equal to another column's (tests compare the
    /// bytes with those of the copies).
    #[cfg(test)]
    pub(crate) fn seal_every_page(&mut self) {
        self.copy_identical_offsets = false;
    }

    /// Jobs that took copies of another column's sealed pages so far.
    #[cfg(test)]
    pub(crate) fn copied_jobs(&self) -> usize {
        self.sealing.copied_jobs
    }

    /// Commits the open cluster: seals the last pages, writes them, and hands the page
    /// locations to `target`.
    pub(crate) fn commit_cluster<T: FillTarget>(&mut self, target: &mut T) -> Result<()> {
        if self.sizer.open_entries() == 0 {
            return Ok(());
        }
        // Every column's write page is sealed, however full.
        self.planner.flush_all();
        self.cut_pages()?;
        self.seal_full_pages(target)?;
        let (pages, zipped_bytes) = self.sealing.finish_cluster(target, &self.options)?;
        let n_entries = self.sizer.close_cluster(zipped_bytes, &self.options);
        target.commit_cluster(n_entries, pages, &self.options)?;
        self.items.iter_mut().for_each(|v| *v = 0);
        self.alternatives.iter_mut().for_each(|v| *v = 0);
        Ok(())
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
