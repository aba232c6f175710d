//! Where a read's bytes come from: the only part of the reader that does I/O (ROOT's
//! `RPageSource`). Opening an RNTuple reads its anchor, header, footer and page lists
//! through the container; a read gets its pages through a [`PageSource`]: direct reads
//! for a local file ([`direct`]), or pages fetched ahead by a plan of vectored reads for a
//! remote one ([`plan`], [`prefetch`]). The decoder above sees only the trait.

mod daos;
pub use daos::daos_extent;
mod direct;
mod not_found;
mod objects;
pub use objects::{dataset_objects, DatasetObjects};
pub(crate) mod plan;
mod pool;
mod prefetch;

use super::RNTupleReader;
use crate::compression;
use crate::container::{self, RootFile};
use crate::encoding::{decode_page, ColumnEncoding, ColumnValues};
use crate::error::{Error, Location, Result};
use crate::format::{
    open_page, page_encoded, stored_page_len, unpack_envelope, Anchor, EnvelopeLink, EnvelopeType,
    Footer, Header, Locator, LocatorKind, PageInfo, PageList, OBJECT_ADDRESS_BITS,
};
use crate::io::RemoteKind;
use crate::io::{
    open_source, open_source_with, Access, IoMetricsSnapshot, ReadAhead, ReadAt, ReadHints,
    ReadRequest, Source, SourceOptions, SourceProfile,
};
use crate::schema::Descriptor;
use plan::Bunch;
use rayon::prelude::*;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) use pool::BufferPool;
pub(crate) use prefetch::PageBytes;

/// Bunches a planned read fetches ahead of the one being decoded.
const PREFETCH_WINDOW: usize = 3;

/// Bunches a local read past the page cache fetches ahead (512 MiB of 32 MiB bunches).
/// The disk costs no round trip, but it delivers less than the decoder takes (direct
/// reads at 1.2-1.5 GB/s on the benchmark's machine) and the decoder's pace varies with
/// the caller's work between batches, so the disk must never idle. Cold reads of the 20M
/// file: read-all 6.8 s and `iterate()` 10.2 s with 3 bunches ahead, 5.4 s and 7.1 s with
/// 16, at peaks of 1.6 GB and 0.7 GB.
const UNCACHED_WINDOW: usize = 16;

/// What the decoder gets page bytes from.
pub(crate) trait PageSource: Sync {
    /// The stored bytes of `page` (its checksum included), unchecked.
    fn page(&self, page: &PageInfo) -> Result<PageBytes>;

    /// The decoder used `bytes` of stored pages without taking them from this source:
    /// pages it decoded once for several columns that list the same pages (the offsets
    /// of one collection's fields), counted for each of them as if read.
    fn count_shared(&self, bytes: u64);

    /// The size of the file or object the pages are stored in: no page's stored bytes
    /// are more.
    fn storage_size(&self) -> u64;

    /// The decoder is done with bunch `k` of the plan: its pages may be dropped.
    fn done_with(&self, _k: usize) {}

    /// The decoder starts the fields of bunch `k` of the plan (the offsets they share
    /// are decoded already): a source may start reading what comes next.
    fn starting(&self, _k: usize) {}
}

/// What reading through an [`RNTupleReader`] has cost so far: the source's counters and
/// how the reads used them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadMetrics {
    /// The source's counters (requests, vector requests, ranges, bytes read, wait time).
    pub io: IoMetricsSnapshot,
    /// Stored page bytes (checksums included) the decoder used.
    pub bytes_used: u64,
    /// Time the decoder waited for prefetched pages, in nanoseconds.
    pub prefetch_wait_nanos: u64,
    /// Time spent in [`RNTupleReader::read`] calls, in nanoseconds.
    pub read_nanos: u64,
    /// Pages a planned read needed but had not fetched (read on demand).
    pub unplanned_pages: u64,
}

/// What a reader's reads cost (shared by its clones), for [`ReadMetrics`].
#[derive(Debug, Default)]
pub(crate) struct ReadCounters {
    /// Bytes of pages the decoder took.
    pub bytes_used: AtomicU64,
    /// Time the decoder waited for pages, in nanoseconds.
    pub wait_nanos: AtomicU64,
    /// Pages the decoder needed that the plan did not fetch (read on demand).
    pub misses: AtomicU64,
    /// Time spent in reads, in nanoseconds.
    pub read_nanos: AtomicU64,
}

/// An RNTuple's storage: the byte source and what it is (its profile, asked once when
/// the storage is made), the file's MaxKeySize (pages larger than a key are split over
/// several) and the counters of what reading cost.
#[derive(Clone)]
pub(crate) struct Storage {
    source: Source,
    /// What the source is: the planner's input (hints, cache holdings, objects or file).
    profile: SourceProfile,
    max_key_size: u64,
    counters: Arc<ReadCounters>,
    /// How far planned reads fetch ahead (the reader's settings).
    read_ahead: ReadAhead,
}

/// A read's plan, ready to decode: its bunches (entries and selected fields, decoded in
/// order), the entry range each belongs to, and the pages they need.
pub(crate) struct PlannedRead {
    /// The units of decoding, in order.
    pub bunches: Arc<Vec<Bunch>>,
    /// For every bunch, the index of the range it belongs to.
    pub range_of: Vec<usize>,
    /// The pages: prefetched for a remote source, read on demand for a local one.
    pub pages: Box<dyn PageSource + Send>,
}

impl Storage {
    /// Storage of pages in `source`, in keys of at most `max_key_size` bytes.
    pub(crate) fn new(source: Source, max_key_size: u64) -> Storage {
        let profile = source.profile();
        Storage {
            source,
            profile,
            max_key_size,
            counters: Arc::default(),
            read_ahead: ReadAhead::default(),
        }
    }

    /// Plans the read of the selected fields (`field_columns`: each field's columns) over
    /// each of `ranges` in turn. From a remote source the pages needed are listed up
    /// front, merged into few ranges and fetched bunch by bunch of clusters as vectored
    /// reads, a window of bunches ahead of the decoding; a bunch is several small
    /// clusters, or some of the fields of a large cluster (so that decoding starts after
    /// the first tens of MB). From a local file each range is one bunch whose pages are
    /// read as the decoder needs them, in parallel.
    pub(crate) fn plan(
        &self,
        descriptor: &Descriptor,
        field_columns: &[Vec<u32>],
        ranges: &[Range<u64>],
    ) -> PlannedRead {
        let mut hints = self.profile.hints;
        let mut columns: Vec<u32> = field_columns.iter().flatten().copied().collect();
        columns.sort_unstable();
        columns.dedup();
        // A local file mostly not in the page cache is read as a remote one is, ahead of
        // the decoder in planned requests, but past the page cache.
        let uncached = match &self.profile.page_cache {
            Some(page_cache) if !hints.remote => {
                page_cache.uncached_hints(&selected_pages(descriptor, &columns, ranges))
            }
            _ => None,
        };
        // A remote file whose selected pages are all in a cache on local disk is read as
        // a local one is: each page straight from the cache into a pooled buffer as the
        // decoder asks, with no request to plan and no range buffers to fill.
        if hints.remote {
            let selected = selected_pages(descriptor, &columns, ranges);
            let cached = |r: &crate::io::ByteRange| self.profile.cached_extent(*r).is_some();
            if !selected.is_empty() && selected.iter().all(cached) {
                hints.remote = false;
            }
        }
        if let Some(cold) = uncached {
            hints = cold;
        }
        let hints = self.with_bunch_bytes(hints);
        if uncached.is_none() && !hints.remote {
            let (range_of, bunches): (Vec<usize>, Vec<Bunch>) = ranges
                .iter()
                .enumerate()
                .filter(|(_, r)| r.start < r.end)
                .map(|(i, r)| (i, Bunch::whole(r.clone())))
                .unzip();
            let entries: Vec<Range<u64>> = bunches.iter().map(|b| b.entries.clone()).collect();
            let pages =
                direct::DirectPages::reading_ahead(self.clone(), descriptor, &columns, &entries);
            return PlannedRead {
                bunches: Arc::new(bunches),
                range_of,
                pages: Box::new(pages),
            };
        }
        let mut bunches = Vec::new();
        let mut range_of = Vec::new();
        // A cluster that several ranges share is fetched once, kept until its last range.
        let mut fetched = HashSet::new();
        for (i, range) in ranges.iter().enumerate() {
            let planned = plan::plan_read(
                descriptor,
                field_columns,
                range.clone(),
                &hints,
                self.max_key_size,
                &mut fetched,
                &|r| self.profile.cached_extent(r),
            );
            range_of.extend(std::iter::repeat_n(i, planned.len()));
            bunches.extend(planned);
        }
        let (bunches, pages) = self.fetch_ahead(bunches, &hints, uncached.is_some());
        PlannedRead {
            bunches,
            range_of,
            pages: Box::new(pages),
        }
    }

    /// `hints` with the bunch size of this reader's settings, if they set one.
    fn with_bunch_bytes(&self, hints: ReadHints) -> ReadHints {
        match self.read_ahead.bunch_bytes {
            Some(bunch_bytes) => ReadHints {
                bunch_bytes,
                ..hints
            },
            None => hints,
        }
    }

    /// Starts fetching the pages of `bunches` ahead of their use, as `hints` say (small
    /// consecutive bunches fetched together; `uncached`: past the page cache, further
    /// ahead): the one fetcher of planned pages, for reads, merge's page copy and
    /// `column_values`. The pages a bunch lacks are read on demand.
    fn fetch_ahead(
        &self,
        mut bunches: Vec<Bunch>,
        hints: &ReadHints,
        uncached: bool,
    ) -> (Arc<Vec<Bunch>>, prefetch::PrefetchedPages) {
        plan::coalesce_fetches(&mut bunches, hints, &|r| self.profile.cached_extent(r));
        let bunches = Arc::new(bunches);
        let window = if uncached {
            UNCACHED_WINDOW
        } else {
            PREFETCH_WINDOW
        };
        let limits = prefetch::Limits {
            window,
            max_window: Self::max_window(hints, self.read_ahead.max_bytes).max(window),
            round_trip: self.round_trip(),
            parallel: hints.parallel_requests,
            bunch_bytes: hints.bunch_bytes,
            uncached,
        };
        let prefetcher = prefetch::Prefetcher::start(
            self.source.clone(),
            bunches.clone(),
            limits,
            self.counters.clone(),
        );
        let direct = direct::DirectPages::new(self.clone());
        (bunches, prefetch::PrefetchedPages::new(prefetcher, direct))
    }

    /// The most bunches a planned read fetches ahead: `max_ahead` bytes of them.
    fn max_window(hints: &ReadHints, max_ahead: u64) -> usize {
        usize::try_from(max_ahead / hints.bunch_bytes.max(1)).unwrap_or(usize::MAX)
    }

    /// The source's round-trip time, as its shortest request took (zero: unknown).
    fn round_trip(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.source.metrics().shortest_nanos)
    }

    /// Wraps an error with the file and the RNTuple (at `path`) it was found in.
    pub(crate) fn locate_in(&self, path: &str) -> impl Fn(Error) -> Error {
        in_rntuple(&self.source, path)
    }

    /// Asks the source to read `ranges` ahead (a hint: nothing is read now, and a
    /// failure changes nothing).
    fn will_need(&self, ranges: &[crate::io::ByteRange]) {
        let hint = ReadRequest::new(ranges).access(Access::WillNeed);
        let _ = self.source.read(hint);
    }

    /// Adds `nanos` to the time spent in reads.
    pub(crate) fn count_read_time(&self, nanos: u64) {
        self.counters.read_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Reads a blob the file's keys hold (`nbytes` at `offset`, in keys of at most the
    /// file's MaxKeySize).
    fn read_blob(&self, offset: u64, nbytes: u64) -> Result<Vec<u8>> {
        container::read_blob(self.source.as_ref(), offset, nbytes, self.max_key_size)
    }

    /// Reads and checks (possibly compressed) envelopes through the file's keys, all in
    /// one vectored read of the source: `(link, type, what)` each, the payload and its
    /// checksum back for each, in order.
    fn read_envelopes(
        &self,
        wanted: &[(EnvelopeLink, EnvelopeType, String)],
    ) -> Result<Vec<(Vec<u8>, u64)>> {
        let blobs: Vec<(u64, u64)> = wanted
            .iter()
            .map(|(link, _, _)| (link.locator.offset, link.locator.size))
            .collect();
        let at = |offset: u64, what: &str, e: Error| {
            e.at(Location {
                structure: Some(what.to_string()),
                ..self.place(offset)
            })
        };
        let stored = container::read_blobs(self.source.as_ref(), &blobs, self.max_key_size)
            .map_err(|e| match wanted {
                [(link, _, what)] => at(link.locator.offset, what, e),
                _ => e.at(Location {
                    structure: Some(format!("{} envelopes read together", wanted.len())),
                    ..Default::default()
                }),
            })?;
        // An envelope cannot decompress to more than the file could plausibly hold; this
        // bounds the allocation by the input's real size (zstd's best ratio is far below).
        let max_length = self.source.size().saturating_mul(1024).max(1 << 20);
        let unpacked: Vec<Result<(Vec<u8>, u64)>> = stored
            .into_par_iter()
            .zip(wanted.par_iter())
            .map(|(stored, (link, kind, what))| {
                stored
                    .and_then(|stored| {
                        unpack_envelope(&stored, link.length, max_length, *kind, what)
                    })
                    .map_err(|e| at(link.locator.offset, what, e))
            })
            .collect();
        // The first bad envelope in order, whichever thread found it first.
        unpacked.into_iter().collect()
    }

    /// Reads the page lists of `footer`'s cluster groups (one vectored read, however many
    /// groups: opening costs no round trip per group), each checked to belong to the
    /// header of checksum `header_checksum`.
    fn read_page_lists(&self, footer: &Footer, header_checksum: u64) -> Result<Vec<PageList>> {
        let wanted: Vec<(EnvelopeLink, EnvelopeType, String)> = footer
            .cluster_groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let what = format!("page list envelope of cluster group {g}");
                (group.page_list, EnvelopeType::PageList, what)
            })
            .collect();
        let envelopes = self.read_envelopes(&wanted)?;
        let lists: Vec<Result<PageList>> = envelopes
            .into_par_iter()
            .zip(wanted.par_iter())
            .map(|((bytes, _), (_, _, what))| {
                let list = PageList::read(&bytes).map_err(|e| {
                    e.at(Location {
                        structure: Some(what.clone()),
                        ..Default::default()
                    })
                })?;
                check_header_reference(what, list.header_checksum, header_checksum)?;
                Ok(list)
            })
            .collect();
        lists.into_iter().collect()
    }

    /// Checks that `locator` says where its bytes are in this storage: a file locator in
    /// a file, an object locator in a store's objects; an unknown type anywhere is an
    /// error naming it (its page list reads, its pages cannot be found).
    pub(crate) fn check_locator(&self, locator: &Locator) -> Result<()> {
        let objects = self.profile.holds_objects;
        match locator.kind {
            LocatorKind::File if !objects => Ok(()),
            LocatorKind::Object64 { location } if objects => {
                if locator.offset == u64::MAX {
                    Err(Error::Unsupported(format!(
                        "object {location}: object numbers of 2^28 and more cannot be read"
                    )))
                } else {
                    Ok(())
                }
            }
            LocatorKind::Unknown { .. } => Err(Error::Unsupported(format!(
                "a page stored at a {}, which this reader does not know: its bytes cannot be found",
                locator.describe()
            ))),
            _ => Err(Error::corrupt(
                "page list",
                format!(
                    "a page at {} in {}: {} locators belong in {}",
                    locator.describe(),
                    if objects { "an object store" } else { "a file" },
                    if objects { "file" } else { "object" },
                    if objects { "files" } else { "object stores" },
                ),
            )),
        }
    }

    /// Checks the locators of every page of `columns` that a read of `ranges` reads
    /// ([`Storage::check_locator`]), before anything is read.
    pub(crate) fn check_pages(
        &self,
        descriptor: &Descriptor,
        columns: &[u32],
        ranges: &[Range<u64>],
    ) -> Result<()> {
        selected_page_infos(descriptor, columns, ranges)
            .try_for_each(|p| self.check_locator(&p.locator))
    }

    /// The stored bytes of `page`, read at its locator (through the keys of a multi-key
    /// blob if it is larger than a key).
    fn read_page(&self, page: &PageInfo) -> Result<Vec<u8>> {
        self.check_locator(&page.locator)?;
        let offset = page.locator.offset;
        let bytes = self
            .read_blob(offset, stored_page_len(page))
            .map_err(|e| e.at(self.place(offset)))?;
        self.counters
            .bytes_used
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    /// Where `address` is, for messages: a byte offset of a file, or in a store's
    /// objects the object (`format::object_address`) and the byte in it.
    fn place(&self, address: u64) -> Location {
        if !self.profile.holds_objects {
            return Location {
                offset: Some(address),
                ..Default::default()
            };
        }
        let within = address & ((1 << OBJECT_ADDRESS_BITS) - 1);
        Location {
            object: Some(address >> OBJECT_ADDRESS_BITS),
            offset: (within != 0).then_some(within),
            ..Default::default()
        }
    }

    /// The size of the file or object.
    fn size(&self) -> u64 {
        self.source.size()
    }

    /// Counts `bytes` of stored pages as used (see [`PageSource::count_shared`]).
    fn count_shared(&self, bytes: u64) {
        self.counters.bytes_used.fetch_add(bytes, Ordering::Relaxed);
    }

    /// As [`Storage::read_page`], into a buffer of `pool` when the page is one key's
    /// payload (the common case).
    fn read_page_pooled(&self, page: &PageInfo, pool: &Arc<pool::BufferPool>) -> Result<PageBytes> {
        self.check_locator(&page.locator)?;
        let offset = page.locator.offset;
        let len = stored_page_len(page);
        let one_key = self.max_key_size == 0 || len <= self.max_key_size;
        let fits = offset
            .checked_add(len)
            .is_some_and(|end| end <= self.source.size());
        if !(one_key && fits) {
            // Multi-key blobs, and the truncation error, as for any blob.
            return self.read_page(page).map(PageBytes::Owned);
        }
        let mut buffer = pool.take(crate::error::to_usize(len, "a page")?);
        self.source
            .read_at_into(offset, buffer.as_mut_slice())
            .map_err(|e| Error::from(e).at(self.place(offset)))?;
        self.counters.bytes_used.fetch_add(len, Ordering::Relaxed);
        Ok(PageBytes::Pooled(buffer))
    }
}

/// Stored pages fetched ahead of their user, group by group (a merge's input clusters):
/// from a remote source the groups' pages are planned as a read's bunches are (merged
/// ranges, vectored requests, small groups fetched together) and fetched a window ahead
/// by the prefetcher.
pub(crate) struct PagePrefetch {
    pages: prefetch::PrefetchedPages,
}

impl PagePrefetch {
    /// The stored bytes of `page` (of the group being used), waiting while it arrives.
    pub(crate) fn page(&self, page: &PageInfo) -> Result<PageBytes> {
        self.pages.page(page)
    }

    /// The user is done with group `k`: its pages are dropped, and the fetcher may go
    /// further ahead.
    pub(crate) fn done_with(&self, k: usize) {
        self.pages.done_with(k);
    }
}

impl Storage {
    /// Starts fetching `groups` of pages ahead of their use, when the source is remote
    /// (`None` for a local file, whose pages are best read as they are needed).
    fn prefetch_groups(&self, groups: &[Vec<PageInfo>]) -> Option<PagePrefetch> {
        if !self.profile.hints.remote {
            return None;
        }
        let hints = self.with_bunch_bytes(self.profile.hints);
        let mut fetched = HashSet::new();
        let bunches: Vec<Bunch> = groups
            .iter()
            .map(|pages| {
                let keys: Vec<plan::PageKey> = pages
                    .iter()
                    .map(|p| plan::PageKey {
                        offset: p.locator.offset,
                        len: stored_page_len(p),
                    })
                    .filter(|k| plan::contiguous_page(k.len, self.max_key_size))
                    .collect();
                plan::make_bunch(0..0, None, keys, &hints, &mut fetched, &|r| {
                    self.profile.cached_extent(r)
                })
            })
            .collect();
        let (_, pages) = self.fetch_ahead(bunches, &hints, false);
        Some(PagePrefetch { pages })
    }
}

impl RNTupleReader {
    /// Starts fetching the stored pages of `groups` (used in this order, each group's
    /// pages then released with [`PagePrefetch::done_with`]) ahead of their use, from a
    /// remote source; `None` for a local file.
    pub(crate) fn prefetch_pages(&self, groups: &[Vec<PageInfo>]) -> Option<PagePrefetch> {
        self.storage.prefetch_groups(groups)
    }
}

/// The stored bytes of the pages of `columns` in the clusters that hold entries of
/// `ranges`: what a read of them will read.
fn selected_pages(
    descriptor: &Descriptor,
    columns: &[u32],
    ranges: &[Range<u64>],
) -> Vec<crate::io::ByteRange> {
    selected_page_infos(descriptor, columns, ranges)
        .map(|p| crate::io::ByteRange {
            offset: p.locator.offset,
            len: stored_page_len(p),
        })
        .collect()
}

/// The pages of `columns` in the clusters that hold entries of `ranges`.
fn selected_page_infos<'a>(
    descriptor: &'a Descriptor,
    columns: &'a [u32],
    ranges: &'a [Range<u64>],
) -> impl Iterator<Item = &'a PageInfo> + 'a {
    descriptor
        .clusters
        .iter()
        .filter(|c| {
            let end = c.first_entry.saturating_add(c.n_entries);
            ranges
                .iter()
                .any(|r| c.first_entry < r.end && r.start < end)
        })
        .flat_map(|c| columns.iter().filter_map(|&col| c.column(col)))
        .flat_map(|cp| cp.pages.iter())
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

/// Opening: the reader's constructors that read the file.
impl RNTupleReader {
    /// Opens the RNTuple `name` (or the only one) of the ROOT file at `path` (a
    /// `daos://POOL/CONTAINER` path: the RNTuple `name` of that DAOS container,
    /// [`RNTupleReader::open_daos_uri`]).
    pub fn open_path(path: &str, name: Option<&str>) -> Result<RNTupleReader> {
        if crate::io::is_daos(path) {
            return Self::open_daos_uri(path, name);
        }
        if crate::io::is_object_layout(path) {
            return Self::open_objects_url(path, name, &SourceOptions::current()?);
        }
        let source = open_source(path)?;
        let file = RootFile::open(source)?;
        Self::open(&file, name)
    }

    /// [`RNTupleReader::open_path`] with `options` (network settings of a remote file).
    pub fn open_path_with(
        path: &str,
        name: Option<&str>,
        options: &SourceOptions,
    ) -> Result<RNTupleReader> {
        if crate::io::is_daos(path) {
            return Self::open_daos_uri_with(path, name, options);
        }
        if crate::io::is_object_layout(path) {
            return Ok(Self::open_objects_url(path, name, options)?.with_settings(options));
        }
        let source = open_source_with(path, options)?;
        let file = RootFile::open(source)?;
        Ok(Self::open(&file, name)?.with_settings(options))
    }

    /// The reader with the read settings of `options`: how far planned reads fetch
    /// ahead ([`SourceOptions::read_ahead`]), and huge pages for large decoded columns
    /// ([`SourceOptions::huge_pages`], a setting of the process's memory: the last
    /// reader opened sets it).
    pub fn with_settings(mut self, options: &SourceOptions) -> RNTupleReader {
        self.storage.read_ahead = options.read_ahead;
        crate::memory::set_huge_pages(options.huge_pages);
        self
    }

    /// How far this reader's planned reads fetch ahead (the settings it opened with).
    pub fn read_ahead(&self) -> ReadAhead {
        self.storage.read_ahead
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
                .ok_or_else(|| not_found::no_rntuple_named(file, n))?,
            None => {
                let mut anchors = anchors;
                match anchors.len() {
                    0 => return Err(not_found::no_rntuple(file)),
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
        // The process's settings (a program's, else the environment's): a mistyped
        // RNTUPLE_HUGE_PAGES, RNTUPLE_BUNCH_BYTES or RNTUPLE_READ_AHEAD_BYTES is refused
        // here, before any column is decoded.
        let settings = SourceOptions::current()?;
        let in_file = in_rntuple(&source, &path);
        let storage = Storage::new(source, anchor.max_key_size);
        // Header and footer in one read: a single request when they are not among the
        // bytes a remote source read when it was opened.
        let mut envelopes = storage
            .read_envelopes(&[
                (
                    anchor.header_link(),
                    EnvelopeType::Header,
                    "header envelope".to_string(),
                ),
                (
                    anchor.footer_link(),
                    EnvelopeType::Footer,
                    "footer envelope".to_string(),
                ),
            ])
            .map_err(&in_file)?
            .into_iter();
        let (Some((header_bytes, header_checksum)), Some((footer_bytes, _))) =
            (envelopes.next(), envelopes.next())
        else {
            return Err(in_file(Error::Io(crate::io::Error::Remote {
                kind: RemoteKind::Other,
                what: storage.source.name().to_string(),
                detail: "a read of the header and footer envelopes came back short".into(),
            })));
        };
        let header = Header::read(&header_bytes).map_err(&in_file)?;
        let footer = Footer::read(&footer_bytes).map_err(&in_file)?;
        check_header_reference("footer envelope", footer.header_checksum, header_checksum)
            .map_err(&in_file)?;
        let page_lists = storage
            .read_page_lists(&footer, header_checksum)
            .map_err(&in_file)?;
        Self::from_metadata(storage, anchor, path, header, footer, page_lists)
            .map(|reader| reader.with_settings(&settings))
    }

    /// Opens the linked attribute set `name` (format 1.0.1+): an RNTuple of its own,
    /// found through the anchor the footer links to.
    pub fn attribute_set(&self, name: &str) -> Result<RNTupleReader> {
        let link = self.attribute_link(name)?;
        let what = format!("anchor of attribute set \"{name}\"");
        let loc = link.anchor_locator;
        let raw = self.storage.read_blob(loc.offset, loc.size)?;
        let object = if loc.size == u64::from(link.anchor_length) {
            raw
        } else {
            compression::decompress(&raw, link.anchor_length as usize, &what)?
        };
        let anchor = Anchor::from_object(&object, &what)?;
        Self::from_anchor(
            self.storage.source.clone(),
            anchor,
            format!("{}/{name}", self.path()),
        )
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.storage.source
    }

    /// What the byte source is, as it said when this reader opened it.
    pub fn source_profile(&self) -> &SourceProfile {
        &self.storage.profile
    }

    /// This RNTuple's metadata without its file: a reader that plans and describes reads
    /// (selections, projections, types) as this one does, and reads no page (a read
    /// fails, naming the file). It keeps no file or connection open, for holding the
    /// schemas of many files at once.
    pub fn detached(&self) -> RNTupleReader {
        let source: Source = Arc::new(Detached {
            name: self.source().name().to_string(),
            size: self.source().size(),
        });
        RNTupleReader {
            storage: Storage::new(source, self.storage.max_key_size),
            anchor: self.anchor,
            descriptor: self.descriptor.clone(),
            path: self.path.clone(),
        }
    }

    /// The decoded elements of physical column `column` in cluster `cluster`, page after
    /// page, each page read and checked (an offset column's elements count from the
    /// cluster's start): one column as stored, for tools that look at columns rather
    /// than fields. A column the cluster lists no pages for has no elements.
    pub fn column_values(&self, cluster: usize, column: u32) -> Result<ColumnValues> {
        let d = &self.descriptor;
        let c = d.clusters.get(cluster).ok_or_else(|| {
            Error::NotFound(format!(
                "RNTuple \"{}\" has {} clusters, no cluster {cluster}",
                self.path,
                d.clusters.len()
            ))
        })?;
        let record = &d
            .columns
            .get(column as usize)
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "RNTuple \"{}\" has {} columns, no column {column}",
                    self.path,
                    d.columns.len()
                ))
            })?
            .record;
        let enc = ColumnEncoding::from_record(
            record.column_type,
            record.bits_on_storage,
            record.value_range,
        )?;
        let mut out = ColumnValues::empty(enc.column_type);
        let Some(pages) = c.column(column) else {
            return Ok(out);
        };
        // From a remote source the column's pages come as any read's do: planned into
        // few vectored requests, fetched ahead (none for a local file).
        let ahead = self
            .storage
            .prefetch_groups(std::slice::from_ref(&pages.pages));
        let mut scratch = Vec::new();
        for page in &pages.pages {
            self.storage.check_locator(&page.locator)?;
            let stored = match &ahead {
                Some(ahead) => ahead.page(page)?,
                None => PageBytes::Owned(
                    self.storage
                        .read_blob(page.locator.offset, stored_page_len(page))?,
                ),
            };
            let data = open_page(stored.as_slice(), page, &enc)?;
            let encoded = page_encoded(data, page, &enc, &mut scratch)?;
            out.append(decode_page(&enc, encoded, u64::from(page.n_elements))?)?;
        }
        Ok(out)
    }

    /// What reading has cost so far (see [`ReadMetrics`]).
    pub fn metrics(&self) -> ReadMetrics {
        let counters = &self.storage.counters;
        ReadMetrics {
            io: self.storage.source.metrics(),
            bytes_used: counters.bytes_used.load(Ordering::Relaxed),
            prefetch_wait_nanos: counters.wait_nanos.load(Ordering::Relaxed),
            read_nanos: counters.read_nanos.load(Ordering::Relaxed),
            unplanned_pages: counters.misses.load(Ordering::Relaxed),
        }
    }

    /// Opens an RNTuple from the payloads of its header, footer and page list envelopes
    /// (no envelope, no checksum), its pages read from `source`: the metadata parsers and
    /// the page decoding, for fuzzing, without the checksums that stop most mutations.
    #[cfg(any(all(test, feature = "http", feature = "xrootd"), feature = "fuzzing"))]
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
        Self::from_metadata(
            Storage::new(source, anchor.max_key_size),
            anchor,
            "fuzz".to_string(),
            header,
            footer,
            page_lists,
        )
    }
}

/// The source of a [`RNTupleReader::detached`] reader: its file's name and size, no bytes.
#[derive(Debug)]
struct Detached {
    name: String,
    size: u64,
}

impl ReadAt for Detached {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read_at(&self, offset: u64, len: u64) -> crate::io::Result<Vec<u8>> {
        Err(crate::io::Error::InvalidArgument(format!(
            "{}: {len} bytes at offset {offset} asked of the RNTuple's metadata alone \
             (the file is not open here): open the file to read its pages",
            self.name
        )))
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        IoMetricsSnapshot::default()
    }
}

/// Fails with [`Error::ChecksumMismatch`] unless `envelope` (a footer or page list)
/// refers to the header envelope read: `stored` is the header checksum it holds,
/// `header_checksum` the one of the header envelope.
fn check_header_reference(envelope: &str, stored: u64, header_checksum: u64) -> Result<()> {
    if stored == header_checksum {
        return Ok(());
    }
    Err(Error::ChecksumMismatch {
        what: format!("{envelope}'s reference to the header envelope"),
        stored,
        computed: header_checksum,
    })
}
