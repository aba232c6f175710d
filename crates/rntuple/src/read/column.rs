//! The bottom of the decoder: reading a range of a column's elements over clusters (find
//! the pages, get them from the page source, open, decompress and decode them in
//! parallel, and add the synthetic zeros of deferred columns), and a collection's
//! offsets from its index column. It does no I/O: page bytes come from the
//! [`PageSource`] it is given.

use super::column_cast::to_offsets;
use super::source::{PageBytes, PageSource};
use crate::encoding::{ColumnEncoding, ColumnValues};
use crate::error::{to_usize, Error, Location, Result};
use crate::format::{open_page, stored_page_len, unseal_page_into, PageInfo};
use crate::memory::into_arrow_buffer;
use crate::schema::{ClusterDescriptor, Descriptor};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

/// Reads the columns of an RNTuple (its descriptor) from the pages a page source gives.
pub(crate) struct ColumnReader<'a> {
    descriptor: &'a Descriptor,
    pub(super) pages: &'a dyn PageSource,
    carry: Option<&'a PageCarry>,
}

/// A page as decoded: where it is stored (offset and size) and its column's type and
/// bits on storage. Columns whose page lists point to the same stored page (same-page
/// merging) find it decoded under the same key.
type PageKey = (u64, u64, u16, u16);

/// Where a field's elements live: `Some(k)` when the field has exactly `k` elements per
/// entry (top-level fields, record members, fixed-size array items), `None` inside
/// collections and variants.
pub(crate) type PerEntry = Option<u64>;

/// One cluster's part of a read: the cluster and the field's elements wanted there
/// (local to the cluster). A field is assembled over several clusters' parts at once,
/// into one array.
pub(crate) type Seg<'a> = (&'a ClusterDescriptor, Range<u64>);

/// The pages a read over consecutive entry ranges shares between neighbouring ranges: a
/// page that goes on past the end of a range is decoded whole once, its part copied out,
/// and kept for the next range, which copies its own part out of it instead of reading
/// and decompressing the page again. The last page of an index column's read is kept
/// too: the next range's offsets start one element early, at its last element. Only the
/// pages the last range kept or used are held: about one page per column. A range sees only
/// the pages earlier ranges kept, so what it reads does not depend on the order its
/// fields run in (two fields that list the same page read it each, as without it).
#[derive(Default)]
pub(crate) struct PageCarry {
    state: Mutex<CarryState>,
}

#[derive(Default)]
struct CarryState {
    pages: HashMap<PageKey, Carried>,
    /// The range being decoded.
    range: u64,
}

/// A decoded page kept, with the ranges that kept it and that last needed it kept.
struct Carried {
    values: Arc<ColumnValues>,
    kept_in: u64,
    needed_in: u64,
}

impl PageCarry {
    fn state(&self) -> std::sync::MutexGuard<'_, CarryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The decoded page `key`, if an earlier range kept it; it is kept for the next
    /// range unless this one reads it `to_the_end`.
    fn get(&self, key: PageKey, to_the_end: bool) -> Option<Arc<ColumnValues>> {
        let mut state = self.state();
        let range = state.range;
        let page = state.pages.get_mut(&key).filter(|p| p.kept_in < range)?;
        if !to_the_end {
            page.needed_in = range;
        }
        Some(page.values.clone())
    }

    /// Keeps the decoded page `key` for the next range.
    fn keep(&self, key: PageKey, values: Arc<ColumnValues>) {
        let mut state = self.state();
        let range = state.range;
        state.pages.insert(
            key,
            Carried {
                values,
                kept_in: range,
                needed_in: range,
            },
        );
    }

    /// A range is decoded: the pages the next range cannot need are dropped.
    pub(crate) fn end_range(&self) {
        let mut state = self.state();
        let range = state.range;
        state.pages.retain(|_, page| page.needed_in == range);
        state.range += 1;
    }
}

/// Output bytes per stored page byte up to which a column's pages are decoded as they are
/// fetched ([`ColumnReader::decodes_as_fetched`]): well above what compression gives real
/// data, but for near-constant columns.
const AS_FETCHED_MAX_EXPANSION: u64 = 64;

/// A page's bytes as the decoder gets them: stored (checked), or already decoded whole
/// by the previous range.
enum Got {
    Stored(PageBytes),
    Carried(Arc<ColumnValues>),
}

/// One cluster's part of a column read: the cluster, the elements wanted (local to the
/// cluster), and the element count the column must have there when that follows from
/// the entry count (fields outside collections), which tells the leading zeros of a
/// deferred column apart from a corrupt page list.
pub(crate) struct ColumnPart<'a> {
    pub cluster: &'a ClusterDescriptor,
    pub range: Range<u64>,
    pub expected_total: Option<u64>,
}

/// A page to decode into the output: its elements `first..first + len` go to output
/// position `dest`.
struct PageJob<'a> {
    page: &'a PageInfo,
    index: usize,
    cluster: u64,
    first: usize,
    len: usize,
    dest: usize,
}

impl<'a> ColumnReader<'a> {
    /// A reader of `descriptor`'s columns, from `pages`.
    pub(crate) fn new(descriptor: &'a Descriptor, pages: &'a dyn PageSource) -> ColumnReader<'a> {
        ColumnReader {
            descriptor,
            pages,
            carry: None,
        }
    }

    /// The same reader, sharing the pages across the ends of consecutive ranges through
    /// `carry`.
    pub(crate) fn with_carry(self, carry: &'a PageCarry) -> ColumnReader<'a> {
        ColumnReader {
            carry: Some(carry),
            ..self
        }
    }

    /// The descriptor of the columns it reads.
    pub(crate) fn descriptor(&self) -> &'a Descriptor {
        self.descriptor
    }

    /// Reads column `id` over several clusters' parts, in order, into one buffer: its
    /// size is known from the page lists up front, and every page (of every cluster, in
    /// parallel) decompresses into a per-thread scratch and decodes straight into its
    /// slice of the buffer.
    ///
    /// The buffer starts with `lead` zero elements (the leading 0 of offsets built in
    /// place), then the values. Also returns the stored bytes taken from the page source
    /// (pages carried over from the previous range are not taken again).
    pub(crate) fn read_column_parts(
        &self,
        id: u32,
        parts: &[ColumnPart<'_>],
        lead: usize,
    ) -> Result<(ColumnValues, u64)> {
        let encoding = self.descriptor.column_encoding(id)?;
        let column = self.descriptor().column(id);
        let deferred = column.record.first_element_index.is_some();
        let mut jobs = Vec::new();
        let mut total = lead;
        for part in parts {
            let cluster = part.cluster;
            let range = part.range.clone();
            let at = |e: Error| {
                e.at(Location {
                    column: Some(id as u64),
                    cluster: Some(cluster.id),
                    ..Default::default()
                })
            };
            let pages: &[PageInfo] = match cluster.column(id) {
                Some(cp) => &cp.pages,
                None => &[],
            };
            let stored: u64 = pages.iter().map(|p| p.n_elements as u64).sum();
            let zeros = match part.expected_total {
                Some(total) if stored > total || (stored < total && !deferred) => {
                    return Err(at(Error::corrupt(
                        "page list",
                        format!("column has {stored} elements, the cluster needs {total}"),
                    )))
                }
                Some(total) => total - stored,
                None => 0,
            };
            if range.start > range.end || range.end > zeros + stored {
                return Err(at(Error::corrupt(
                    "page list",
                    format!(
                        "elements {}..{} requested but the column has {} in this cluster",
                        range.start,
                        range.end,
                        zeros + stored
                    ),
                )));
            }
            // The leading zeros of a deferred column are the buffer's initial zeros.
            let zero_end = range.end.min(zeros);
            let base = total as u64 + zero_end.saturating_sub(range.start);
            let start = range.start.max(zeros) - zeros;
            let end = range.end.saturating_sub(zeros);
            let mut first = 0u64;
            for (i, p) in pages.iter().enumerate() {
                let n = p.n_elements as u64;
                if first < end && first + n > start && n > 0 {
                    let lo = start.max(first);
                    let hi = end.min(first + n);
                    jobs.push(PageJob {
                        page: p,
                        index: i,
                        cluster: cluster.id,
                        first: to_usize(lo - first, "elements of a page")?,
                        len: to_usize(hi - lo, "elements of a page")?,
                        dest: to_usize(base + (lo - start), "elements of a column read")?,
                    });
                }
                first += n;
            }
            total = total
                .checked_add(to_usize(
                    range.end - range.start,
                    "elements of a column read",
                )?)
                .ok_or_else(|| Error::corrupt("page list", "too many elements"))?;
        }
        let at = |job: &PageJob<'_>| page_location(id, job.cluster, job.index);
        // The last page of an index column's read: the next range's offsets start one
        // element early, at its last element, so it is kept for the next range too.
        let last_dest = jobs.last().map(|job| job.dest);
        let kept_for_next =
            |job: &PageJob<'_>| encoding.column_type.is_index() && Some(job.dest) == last_dest;
        // A page the previous range decoded whole is not read again; any other is taken
        // from the page source and checked (checksum, and that the compressed chunks
        // announce exactly the page's size): the decoder trusts only checked pages.
        let fetch = |job: &PageJob<'_>| -> Result<Got> {
            if let Some(values) = self.carried(id, job, kept_for_next(job)) {
                return Ok(Got::Carried(values));
            }
            self.fetch_page(job.page, &encoding)
                .map(Got::Stored)
                .map_err(at(job))
        };
        // Pages are fetched first, all of them, when their claim on the output is more
        // than the stored bytes could plausibly back: the output is then allocated only
        // for sizes checked pages announce. Otherwise each page is fetched just before it
        // is decoded, and its buffer is free for the next page right after.
        let fetched: Vec<Option<Got>> = if self.decodes_as_fetched(&jobs, &encoding, total) {
            jobs.iter().map(|_| None).collect()
        } else {
            jobs.par_iter()
                .map(|job| fetch(job).map(Some))
                .collect::<Result<_>>()?
        };
        // Every page writes all of its slice; what lies between them is zeroed (the
        // buffer may be one kept from an earlier batch, holding its values).
        let mut out = ColumnValues::for_decoding(encoding.column_type, total);
        // Hand every page its disjoint slice of the output.
        let mut slices = Vec::with_capacity(jobs.len());
        let mut rest = out.as_values_mut();
        let mut cursor = 0usize;
        for (job, got) in jobs.iter().zip(fetched) {
            let (gap, tail) = rest.split_at(job.dest - cursor)?;
            gap.zero();
            let (mine, tail) = tail.split_at(job.len)?;
            slices.push((job, got, mine));
            rest = tail;
            cursor = job.dest + job.len;
        }
        rest.zero();
        // The stored bytes taken from the page source.
        let taken = slices
            .into_par_iter()
            .map(
                |(job, got, slice)| match got.map_or_else(|| fetch(job), Ok)? {
                    Got::Carried(values) => slice
                        .copy_from(&values, job.first)
                        .map(|()| 0)
                        .map_err(at(job)),
                    Got::Stored(raw) => {
                        // Checked when fetched: the page's data is what precedes its checksum.
                        let size = usize::try_from(job.page.locator.size).unwrap_or(usize::MAX);
                        let data = raw.as_slice();
                        let data = data.get(..size).unwrap_or(data);
                        self.decode_job(id, job, data, &encoding, slice, kept_for_next(job))
                            .map(|()| raw.as_slice().len() as u64)
                            .map_err(at(job))
                    }
                },
            )
            .try_reduce(|| 0, |a, b| Ok(a + b))?;
        Ok((out, taken))
    }

    /// Whether the pages of `jobs` may be decoded as they are fetched, into an output of
    /// `total` values allocated before any of them is checked: when every page lies
    /// within the storage and the output is at most [`AS_FETCHED_MAX_EXPANSION`] times the
    /// bytes the pages take there. Then a corrupt page list cannot make the output larger
    /// than that many times the storage its pages claim; otherwise (near-constant
    /// columns, whose few stored bytes are cheap to fetch first) the pages are checked
    /// before the output is allocated.
    fn decodes_as_fetched(
        &self,
        jobs: &[PageJob<'_>],
        encoding: &ColumnEncoding,
        total: usize,
    ) -> bool {
        let storage = self.pages.storage_size();
        let mut stored = 0u64;
        for job in jobs {
            let len = stored_page_len(job.page);
            if len > storage {
                return false;
            }
            stored = stored.saturating_add(len);
        }
        let value_size = ColumnValues::value_size(encoding.column_type) as u64;
        (total as u64).saturating_mul(value_size) <= stored.saturating_mul(AS_FETCHED_MAX_EXPANSION)
    }

    /// The key under which the page of `job` (of column `id`) is carried.
    fn page_key(&self, id: u32, job: &PageJob<'_>) -> PageKey {
        let record = &self.descriptor.column(id).record;
        let locator = &job.page.locator;
        (
            locator.offset,
            locator.size,
            record.column_type,
            record.bits_on_storage,
        )
    }

    /// The page of `job` as the previous range decoded it, if it was kept; it stays kept
    /// for the next range if this one does not read it to its end or `next_needs_it`.
    fn carried(
        &self,
        id: u32,
        job: &PageJob<'_>,
        next_needs_it: bool,
    ) -> Option<Arc<ColumnValues>> {
        // A page this range reads whole may have been kept by the previous one, which
        // needed only its first elements.
        let carry = self.carry?;
        let n = usize::try_from(job.page.n_elements).ok()?;
        carry.get(
            self.page_key(id, job),
            job.first + job.len == n && !next_needs_it,
        )
    }

    /// Decodes `job`'s part of its page (`data`, checked) into `slice`; a page that goes on
    /// past the range is decoded whole and kept for the next range, when there is a carry.
    /// So is a page the next range reads again (`next_needs_it`).
    fn decode_job(
        &self,
        id: u32,
        job: &PageJob<'_>,
        data: &[u8],
        encoding: &ColumnEncoding,
        slice: crate::encoding::ValuesMut<'_>,
        next_needs_it: bool,
    ) -> Result<()> {
        let n = usize::try_from(job.page.n_elements).unwrap_or(usize::MAX);
        match self.carry {
            Some(carry) if job.first + job.len < n || next_needs_it => {
                let mut values = ColumnValues::zeros(encoding.column_type, n);
                decode_into(job.page, data, encoding, 0, values.as_values_mut())?;
                slice.copy_from(&values, job.first)?;
                carry.keep(self.page_key(id, job), Arc::new(values));
                Ok(())
            }
            _ => decode_into(job.page, data, encoding, job.first, slice),
        }
    }

    /// Gets one page's stored bytes from the page source and checks them (length,
    /// checksum, compressed chunk sizes): the decoder trusts only checked pages.
    fn fetch_page(&self, page: &PageInfo, encoding: &ColumnEncoding) -> Result<PageBytes> {
        let stored = self.pages.page(page)?;
        open_page(stored.as_slice(), page, encoding)?;
        Ok(stored)
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

    /// Reads column `column` over `segs` (ranges scaled by `scale` elements per field
    /// element, a field with `per_entry` elements per entry).
    pub(super) fn read_segs(
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

    /// Decodes a collection's offsets for the entries of `segs`: the items' ranges in
    /// each cluster and the Arrow offsets over all of them (from 0), checked to never
    /// decrease; also returns the stored bytes taken from the page source.
    pub(super) fn decode_offsets<'s>(
        &self,
        segs: &[Seg<'s>],
        column: u32,
        per_entry: PerEntry,
    ) -> Result<(Vec<Seg<'s>>, Offsets, u64)> {
        // Each range starts one element early for the start of its first item.
        let early: Vec<Seg<'s>> = segs
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
}

/// Wraps an error with the page it was found in.
fn page_location(column: u32, cluster: u64, page: usize) -> impl Fn(Error) -> Error {
    move |e: Error| {
        e.at(Location {
            column: Some(u64::from(column)),
            cluster: Some(cluster),
            page: Some(page as u64),
            ..Default::default()
        })
    }
}

thread_local! {
    /// Per-thread scratch for uncompressed page bytes, reused across pages.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Decompresses (into a per-thread scratch) and decodes elements
/// `first..first + out.len()` of a checked page's data into `out`.
fn decode_into(
    page: &PageInfo,
    data: &[u8],
    encoding: &ColumnEncoding,
    first: usize,
    out: crate::encoding::ValuesMut<'_>,
) -> Result<()> {
    SCRATCH.with(|scratch| {
        unseal_page_into(data, page, encoding, first, out, &mut scratch.borrow_mut())
    })
}

/// `a * b`, or an error naming what overflowed (sizes come from the file).
pub(super) fn mul(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_mul(b)
        .ok_or_else(|| Error::corrupt(what, format!("{a} × {b} overflows 64 bits")))
}

/// `per_entry × n`, checked.
pub(super) fn scaled(per_entry: PerEntry, n: u64, what: &str) -> Result<PerEntry> {
    per_entry.map(|k| mul(k, n, what)).transpose()
}

/// Arrow offsets over a read's items, only made by `decode_offsets`, which checks that they
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
pub(super) fn arrow_offsets(offsets: Offsets) -> OffsetBuffer<i64> {
    let buffer = offsets.0;
    // SAFETY: `Offsets` are only built by `decode_offsets`, which starts them with 0, checks
    // that they never decrease, and that the last (largest) fits `i64`: exactly what
    // `OffsetBuffer::new` would check (non-empty, first >= 0, monotonic). Any inconsistency
    // with the child's length is still caught by the arrays' `try_new`.
    unsafe { OffsetBuffer::new_unchecked(buffer) }
}
