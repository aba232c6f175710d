//! An input cluster copied into an output cluster: per output column the input's pages
//! checked and copied, sealed again, or zero pages made; the input's pages read near each
//! other in one request, into read buffers reused once their pages are written.

use super::schema_match::OutputSchema;
use crate::compression::CompressionSettings;
use crate::container::read_blob;
use crate::encoding::ColumnEncoding;
use crate::error::{Error, Result};
use crate::format::{open_page, reseal_page, stored_page_len, zero_page, ColumnPages, PageInfo};
use crate::io::{ByteRange, ReadHints};
use crate::read::source::plan::{merge_pages, PageKey};
use crate::read::source::BufferPool;
use crate::schema::Descriptor;
use crate::write::{SharedBuffer, StoredBytes, StoredCluster, StoredColumn, StoredPage};
use rayon::prelude::*;
use std::sync::Arc;

/// How a merge reads a local input's pages: pages closer than 64 KiB are read in one
/// request (the gap read with them), a request is cut at 64 MiB.
const MERGE_READS: ReadHints = ReadHints {
    merge_gap: 64 << 10,
    max_waste: f64::INFINITY,
    max_range_bytes: 64 << 20,
    ..ReadHints::LOCAL
};

/// For every cluster of `input`, the pages of the input columns that `column_of` maps to
/// output columns: what merging the cluster reads.
pub(super) fn cluster_pages(input: &Descriptor, column_of: &[Option<u32>]) -> Vec<Vec<PageInfo>> {
    input
        .clusters
        .iter()
        .map(|cluster| {
            column_of
                .iter()
                .flatten()
                .filter_map(|&ic| cluster.column(ic))
                .filter(|cp| !cp.is_suppressed())
                .flat_map(|cp| cp.pages.iter().copied())
                .collect()
        })
        .collect()
}

/// A prefetched page's bytes as the page-copying writer takes them (a slice of a fetched
/// range is shared, not copied).
pub(super) fn copied_bytes(bytes: crate::read::source::PageBytes) -> StoredBytes {
    use crate::read::source::PageBytes as Fetched;
    match bytes {
        Fetched::Shared { buffer, start, len } => StoredBytes::Shared(buffer, start..start + len),
        Fetched::Owned(bytes) => StoredBytes::Owned(bytes),
        Fetched::Pooled(buffer) => {
            let len = buffer.as_slice().len();
            StoredBytes::Shared(Arc::new(buffer), 0..len)
        }
    }
}

/// What building a cluster did with its pages.
#[derive(Default)]
pub(super) struct PageCounts {
    pub(super) copied: u64,
    pub(super) resealed: u64,
    pub(super) zeros: u64,
    pub(super) bytes_read: u64,
}

/// How one input cluster becomes an output cluster.
pub(super) struct ClusterPlan<'a> {
    pub(super) out: &'a OutputSchema,
    pub(super) input: &'a Descriptor,
    /// Per output column, the input column that fills it.
    pub(super) column_of: &'a [Option<u32>],
    /// The first input's clusters list the columns it lists (the output's deferred
    /// columns are its own); later inputs' list every output column.
    pub(super) first_input: bool,
    /// Output entries before this cluster.
    pub(super) entries_before: u64,
    pub(super) n_entries: u64,
    pub(super) keep_compression: bool,
    pub(super) compression: u32,
    pub(super) checksums: bool,
    pub(super) max_page_bytes: u64,
}

/// What fills one output column in a cluster.
pub(super) struct ColumnJob<'a> {
    /// Zero elements before the input's pages (the input's own deferred column, or a
    /// column the input lacks).
    zeros: u64,
    /// The input's pages and their encoding.
    pages: Option<(&'a ColumnPages, ColumnEncoding)>,
    compression: u32,
}

impl ClusterPlan<'_> {
    /// Elements of output column `c` this cluster must store: those of its entries
    /// (for a column at entry level) past the column's deferred start; `None` when they
    /// depend on the items (inside collections), then as many as the input has.
    pub(super) fn stored_elements(&self, c: u32) -> Result<Option<u64>> {
        let d = &self.out.descriptor;
        let column = d.column(c);
        let field = column.record.field_id;
        let principal = d.field(field).columns.first() == Some(&c);
        let Some(mult) = d.elements_per_entry(field).filter(|_| principal) else {
            return Ok(None);
        };
        let overflow = || Error::InvalidArgument("merge: element count overflows".into());
        let start = self.entries_before.checked_mul(mult).ok_or_else(overflow)?;
        let end = (self.entries_before + self.n_entries)
            .checked_mul(mult)
            .ok_or_else(overflow)?;
        let deferred_to = column
            .record
            .first_element_index
            .map_or(0, |f| f.unsigned_abs());
        Ok(Some(end.saturating_sub(start.max(deferred_to))))
    }

    /// The output cluster of input cluster `cluster`: every page read (through `read`)
    /// and verified, sealed again where the output's encoding or compression differs,
    /// zeros where the input has no values.
    pub(super) fn build(
        &self,
        cluster: &crate::schema::ClusterDescriptor,
        read: impl Fn(&[PageInfo]) -> Result<Vec<StoredBytes>>,
    ) -> Result<(StoredCluster, PageCounts)> {
        let n_out = self.out.descriptor.columns.len();
        let mut jobs = Vec::with_capacity(n_out);
        let mut listed = 0usize;
        for c in 0..n_out {
            let id = u32::try_from(c).map_err(|_| Error::InvalidArgument("columns".into()))?;
            let input_pages = self.column_of[c].and_then(|ic| {
                let cp = cluster.column(ic)?;
                Some((cp, self.input.column_encoding(ic)))
            });
            let input_pages = match input_pages {
                Some((cp, _)) if cp.is_suppressed() => {
                    return Err(Error::Unsupported(format!(
                        "column {} is suppressed in this cluster (several representations)",
                        self.column_of[c].unwrap_or_default()
                    )))
                }
                Some((cp, enc)) => Some((cp, enc?)),
                None => None,
            };
            let stored = input_pages.map_or(0, |(cp, _)| cp.n_elements());
            let needed = self.stored_elements(id)?;
            let zeros = match needed {
                Some(n) if n < stored => {
                    return Err(Error::corrupt(
                        "page list",
                        format!(
                            "column {} holds {stored} elements, its {} entries need {n}",
                            self.column_of[c].unwrap_or_default(),
                            self.n_entries
                        ),
                    ))
                }
                Some(n) => n - stored,
                None => 0,
            };
            if input_pages.is_some() || zeros > 0 || !self.first_input {
                listed = c + 1;
            }
            let compression = match (self.keep_compression, input_pages) {
                (true, Some((cp, _))) => cp.compression.unwrap_or(self.compression),
                _ => self.compression,
            };
            jobs.push(ColumnJob {
                zeros,
                pages: input_pages,
                compression,
            });
        }
        jobs.truncate(listed);
        // Read every page the cluster takes from the input, nearby ones together.
        let wanted: Vec<PageInfo> = jobs
            .iter()
            .filter_map(|j| j.pages)
            .flat_map(|(cp, _)| cp.pages.iter().copied())
            .collect();
        let mut bytes = read(&wanted)?.into_iter();
        let mut counts = PageCounts {
            bytes_read: wanted.iter().map(stored_page_len).sum(),
            ..PageCounts::default()
        };
        // Then check and (where needed) seal again every page, in parallel.
        let mut tasks = Vec::new();
        for (c, job) in jobs.iter().enumerate() {
            let to = self.out.encodings[c];
            if job.zeros > 0 {
                tasks.push(PageTask::Zeros {
                    column: c,
                    n: job.zeros,
                    encoding: to,
                    compression: job.compression,
                });
            }
            if let Some((cp, from)) = job.pages {
                let same = from == to && cp.compression == Some(job.compression);
                for page in &cp.pages {
                    let stored = bytes.next().ok_or_else(|| {
                        Error::InvalidArgument("merge: a page was not read".into())
                    })?;
                    tasks.push(PageTask::Page {
                        column: c,
                        page: *page,
                        stored,
                        from,
                        to,
                        copy: same,
                        compression: job.compression,
                    });
                }
            }
        }
        let done: Vec<(usize, Vec<StoredPage>, Kind)> = tasks
            .into_par_iter()
            .map(|t| t.run(self.checksums, self.max_page_bytes))
            .collect::<Result<_>>()?;
        let mut columns: Vec<StoredColumn> = jobs
            .iter()
            .map(|j| StoredColumn {
                pages: Vec::new(),
                compression: j.compression,
            })
            .collect();
        for (c, pages, kind) in done {
            let n = pages.len() as u64;
            match kind {
                Kind::Copied => counts.copied += n,
                Kind::Resealed => counts.resealed += n,
                Kind::Zeros => counts.zeros += n,
            }
            columns[c].pages.extend(pages);
        }
        Ok((
            StoredCluster {
                n_entries: self.n_entries,
                columns,
            },
            counts,
        ))
    }
}

/// What became of a page.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Copied,
    Resealed,
    Zeros,
}

/// One page's work: check and copy or seal again, or make zero pages.
pub(super) enum PageTask {
    Page {
        column: usize,
        page: PageInfo,
        stored: StoredBytes,
        from: ColumnEncoding,
        to: ColumnEncoding,
        copy: bool,
        compression: u32,
    },
    Zeros {
        column: usize,
        n: u64,
        encoding: ColumnEncoding,
        compression: u32,
    },
}

impl PageTask {
    fn run(self, checksums: bool, max_page_bytes: u64) -> Result<(usize, Vec<StoredPage>, Kind)> {
        match self {
            PageTask::Page {
                column,
                page,
                stored,
                from,
                to,
                copy,
                compression,
            } => {
                let data = open_page(stored.as_slice(), &page, &from)?;
                if copy {
                    let page = StoredPage {
                        n_elements: page.n_elements,
                        has_checksum: page.has_checksum,
                        bytes: stored,
                    };
                    return Ok((column, vec![page], Kind::Copied));
                }
                let settings = CompressionSettings::from_u32(compression)?;
                let sealed = reseal_page(data, &page, &from, &to, settings, checksums)?;
                let page = StoredPage {
                    n_elements: sealed.n_elements,
                    has_checksum: sealed.has_checksum,
                    bytes: StoredBytes::Owned(sealed.bytes),
                };
                Ok((column, vec![page], Kind::Resealed))
            }
            PageTask::Zeros {
                column,
                n,
                encoding,
                compression,
            } => {
                let settings = CompressionSettings::from_u32(compression)?;
                let per_page = (max_page_bytes * 8 / u64::from(encoding.bits_on_storage.max(1)))
                    .clamp(1, i32::MAX as u64);
                let mut pages = Vec::new();
                let mut left = n;
                while left > 0 {
                    let k = left.min(per_page);
                    // At most i32::MAX by the clamp above.
                    #[allow(clippy::cast_possible_truncation)]
                    let sealed = zero_page(&encoding, k as u32, settings, checksums)?;
                    pages.push(StoredPage {
                        n_elements: sealed.n_elements,
                        has_checksum: sealed.has_checksum,
                        bytes: StoredBytes::Owned(sealed.bytes),
                    });
                    left -= k;
                }
                Ok((column, pages, Kind::Zeros))
            }
        }
    }
}

/// Reads the stored bytes of `pages` (checksums included) from `source`, a local file:
/// pages near each other in one read (ranges merged by the read planner's
/// [`merge_pages`]), into buffers of `pool`; a page larger than a key through the keys
/// holding it.
pub(super) fn read_pages(
    source: &crate::io::Source,
    max_key_size: u64,
    pages: &[PageInfo],
    pool: &Arc<BufferPool>,
) -> Result<Vec<StoredBytes>> {
    let mut keys = Vec::with_capacity(pages.len());
    for page in pages {
        let (offset, len) = (page.locator.offset, stored_page_len(page));
        if len > max_key_size {
            // Read through the keys holding it, below.
            continue;
        }
        if offset.checked_add(len).is_none() {
            return Err(Error::corrupt(
                "page list",
                format!("page at {offset} ends past 2^64"),
            ));
        }
        keys.push(PageKey { offset, len });
    }
    keys.sort_unstable();
    keys.dedup();
    let ranges = merge_pages(&keys, &MERGE_READS);
    let requests: Vec<ByteRange> = ranges.iter().map(|r| r.range).collect();
    // A local file's (a remote input's pages come planned and fetched ahead by the
    // reader's planner, `RNTupleReader::prefetch_pages`).
    let buffers: Vec<SharedBuffer> = requests
        .iter()
        .map(|r| {
            let mut buffer = pool.take(usize::try_from(r.len).unwrap_or(usize::MAX));
            source.read_at_into(r.offset, buffer.as_mut_slice())?;
            Ok(Arc::new(buffer) as SharedBuffer)
        })
        .collect::<Result<_>>()?;
    for (range, buffer) in requests.iter().zip(&buffers) {
        let read = (**buffer).as_ref().len() as u64;
        if read != range.len {
            return Err(Error::Truncated {
                what: format!("pages at byte offset {}", range.offset),
                offset: range.offset,
                needed: range.len,
                available: read,
            });
        }
    }
    let mut out = Vec::with_capacity(pages.len());
    for page in pages {
        let (offset, len) = (page.locator.offset, stored_page_len(page));
        if len > max_key_size {
            let bytes = read_blob(source.as_ref(), offset, len, max_key_size)?;
            out.push(StoredBytes::Owned(bytes));
            continue;
        }
        // The range holding the page: the last one starting at or before it.
        let i = requests
            .partition_point(|r| r.offset <= offset)
            .checked_sub(1)
            .ok_or_else(|| Error::InvalidArgument("merge: a page was not read".into()))?;
        let at = usize::try_from(offset - requests[i].offset)
            .map_err(|_| Error::corrupt("page list", "page offset"))?;
        let len = usize::try_from(len).map_err(|_| Error::corrupt("page list", "page size"))?;
        out.push(StoredBytes::Shared(Arc::clone(&buffers[i]), at..at + len));
    }
    Ok(out)
}
