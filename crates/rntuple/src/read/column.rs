//! Reading a range of a column's elements within one cluster: find the pages, fetch,
//! verify, decompress and decode them (in parallel), and add the synthetic zeros of
//! deferred columns.

use super::RNTupleReader;
use crate::compression;
use crate::container;
use crate::encoding::{decode_page_into, ColumnEncoding, ColumnType, ColumnValues, ValuesMut};
use crate::error::{Error, Location, Result};
use crate::format::PageInfo;
use crate::schema::ClusterDescriptor;
use rayon::prelude::*;
use std::ops::Range;
use xxhash_rust::xxh3::xxh3_64;

/// The encoding of physical column `id`, checked.
pub(crate) fn column_encoding(reader: &RNTupleReader, id: u32) -> Result<ColumnEncoding> {
    let rec = &reader.descriptor().column(id).record;
    let column_type = ColumnType::from_u16(rec.column_type).ok_or_else(|| {
        Error::Unsupported(format!("column type {:#x} of column {id}", rec.column_type))
    })?;
    ColumnEncoding::new(column_type, rec.bits_on_storage, rec.value_range)
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

thread_local! {
    /// Per-thread scratch for uncompressed page bytes, reused across pages.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl RNTupleReader {
    /// Reads column `id` over several clusters' parts, in order, into one buffer: its
    /// size is known from the page lists up front, and every page (of every cluster, in
    /// parallel) decompresses into a per-thread scratch and decodes straight into its
    /// slice of the buffer.
    pub(crate) fn read_column_parts(
        &self,
        id: u32,
        parts: &[ColumnPart<'_>],
    ) -> Result<ColumnValues> {
        let encoding = column_encoding(self, id).map_err(|e| {
            e.at(Location {
                column: Some(id as u64),
                ..Default::default()
            })
        })?;
        let column = self.descriptor().column(id);
        let deferred = column.record.first_element_index.is_some();
        let mut jobs = Vec::new();
        let mut total = 0usize;
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
                        first: to_usize(lo - first)?,
                        len: to_usize(hi - lo)?,
                        dest: to_usize(base + (lo - start))?,
                    });
                }
                first += n;
            }
            total = total
                .checked_add(to_usize(range.end - range.start)?)
                .ok_or_else(|| Error::corrupt("page list", "too many elements"))?;
        }
        // Fetch and check every page first (checksums, and that the compressed chunks
        // announce exactly the page's size): the output is allocated only for sizes the
        // data backs, never for what a corrupt page list alone claims.
        let raws: Vec<super::prefetch::PageBytes> = jobs
            .par_iter()
            .map(|job| {
                self.fetch_page(job.page, &encoding).map_err(|e| {
                    e.at(Location {
                        column: Some(id as u64),
                        cluster: Some(job.cluster),
                        page: Some(job.index as u64),
                        ..Default::default()
                    })
                })
            })
            .collect::<Result<_>>()?;
        let mut out = ColumnValues::zeros(encoding.column_type, total);
        // Hand every page its disjoint slice of the output.
        let mut slices = Vec::with_capacity(jobs.len());
        let mut rest = out.as_values_mut();
        let mut cursor = 0usize;
        for (job, raw) in jobs.iter().zip(&raws) {
            let (_, tail) = rest.split_at(job.dest - cursor)?;
            let (mine, tail) = tail.split_at(job.len)?;
            slices.push((job, raw.as_slice(), mine));
            rest = tail;
            cursor = job.dest + job.len;
        }
        slices.into_par_iter().try_for_each(|(job, raw, slice)| {
            decode_into(job.page, raw, &encoding, job.first, slice).map_err(|e| {
                e.at(Location {
                    column: Some(id as u64),
                    cluster: Some(job.cluster),
                    page: Some(job.index as u64),
                    ..Default::default()
                })
            })
        })?;
        Ok(out)
    }

    /// Fetches one page's stored bytes and verifies them: checksum, and for a compressed
    /// page, that its chunk headers announce exactly the uncompressed size.
    fn fetch_page(
        &self,
        page: &PageInfo,
        encoding: &ColumnEncoding,
    ) -> Result<super::prefetch::PageBytes> {
        let n = page.n_elements as u64;
        let unzipped = encoding.page_bytes(n).ok_or_else(|| {
            Error::corrupt("page list", format!("page of {n} elements is too large"))
        })?;
        let size = page.locator.size;
        let offset = page.locator.offset;
        let with_sum = size + if page.has_checksum { 8 } else { 0 };
        let key = super::plan::PageKey {
            offset,
            len: with_sum,
        };
        let prefetched = match &self.pages {
            Some(cache) => cache.take(key)?,
            None => None,
        };
        let mut raw = match prefetched {
            Some(bytes) => bytes,
            None => {
                let bytes = container::read_blob(
                    self.source().as_ref(),
                    offset,
                    with_sum,
                    self.anchor().max_key_size,
                )
                .map_err(|e| {
                    e.at(Location {
                        offset: Some(offset),
                        ..Default::default()
                    })
                })?;
                self.counters
                    .bytes_used
                    .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
                super::prefetch::PageBytes::Owned(bytes)
            }
        };
        if raw.as_slice().len() as u64 != with_sum {
            return Err(Error::Truncated {
                what: format!("page at byte offset {offset}"),
                offset,
                needed: with_sum,
                available: raw.as_slice().len() as u64,
            });
        }
        let size_usize = usize::try_from(size)
            .map_err(|_| Error::corrupt("page list", "page too large for memory"))?;
        if page.has_checksum {
            let (data, sum) = raw.as_slice().split_at(size_usize);
            let mut b = [0u8; 8];
            b.copy_from_slice(sum);
            let stored = u64::from_le_bytes(b);
            let computed = xxh3_64(data);
            if stored != computed {
                return Err(Error::ChecksumMismatch {
                    what: format!("page at byte offset {offset}"),
                    stored,
                    computed,
                });
            }
            raw.truncate(size_usize);
        }
        if size != unzipped {
            let claimed = compression::claimed_uncompressed_len(raw.as_slice());
            if claimed.map(|c| c as u64) != Some(unzipped) {
                return Err(Error::corrupt(
                    format!("page at byte offset {offset}"),
                    match claimed {
                        Some(c) => {
                            format!("compressed chunks hold {c} bytes, {unzipped} were expected")
                        }
                        None => "malformed compressed chunk headers".to_string(),
                    },
                ));
            }
        }
        Ok(raw)
    }
}

/// Decompresses (into a per-thread scratch) and decodes a fetched page's elements
/// `first..first + out.len()` into `out`.
fn decode_into(
    page: &PageInfo,
    raw: &[u8],
    encoding: &ColumnEncoding,
    first: usize,
    out: ValuesMut<'_>,
) -> Result<()> {
    let n = page.n_elements as u64;
    let unzipped = encoding
        .page_bytes(n)
        .and_then(|u| usize::try_from(u).ok())
        .ok_or_else(|| Error::corrupt("page list", format!("page of {n} elements is too large")))?;
    if raw.len() == unzipped {
        return decode_page_into(encoding, raw, n, first, out);
    }
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        // Grown, never cleared: decompression overwrites every byte it hands on.
        if scratch.len() < unzipped {
            scratch.resize(unzipped, 0);
        }
        let buf = &mut scratch[..unzipped];
        compression::decompress_into(
            raw,
            buf,
            &format!("page at byte offset {}", page.locator.offset),
        )?;
        decode_page_into(encoding, buf, n, first, out)
    })
}

fn to_usize(x: u64) -> Result<usize> {
    usize::try_from(x).map_err(|_| Error::corrupt("page list", "too many elements for memory"))
}
