//! Byte sources for `rntuple`: where the bytes come from. Knows nothing of ROOT or
//! RNTuple (the compiler holds it to that: this crate does not depend on the format).
//!
//! A source is chosen by the URL scheme ([`open_source`]): a local path (or `file://`),
//! `http://`/`https://`, `root://`/`roots://` (XRootD) or `s3://`. Every source reads
//! many ranges in one call ([`ReadAt::read`]), in as few requests as its protocol
//! allows, and counts what it did ([`IoMetrics`]).
//!
//! The remote sources are cargo features of the crate, all on by default: `http`
//! (`HttpSource`), `xrootd` (`XRootDSource`) and `s3` (`S3Source`), or `remote` for the
//! three. Without one, opening a URL of its schemes is an [`Error::Unsupported`] that
//! names the feature.

#![forbid(unsafe_op_in_unsafe_fn)]
// The workspace's lints hold library code to no silent narrowing; the unit tests may
// cast freely (clippy.toml lets them unwrap and panic).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub(crate) mod cache;
mod cached;
mod cached_objects;
mod credentials;
mod daos;
mod daos_directory;
mod dataset;
mod dirfd;
mod error;
mod file_ends;
#[cfg(any(all(test, feature = "http", feature = "xrootd"), feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz;
#[cfg(feature = "http")]
pub(crate) mod http;
mod local;
/// A multipart reply's body for the HTTP reply parser's tests (one file with the
/// integration tests' helper).
#[cfg(all(test, feature = "http"))]
#[path = "../../rntuple/tests/common/multipart_body.rs"]
pub(crate) mod multipart_body;
#[cfg(any(feature = "http", feature = "s3"))]
mod net;
mod object_space;
pub mod objects;
mod options;
mod output;
#[cfg(any(feature = "http", feature = "s3"))]
mod range_spans;
mod retry;
#[cfg(feature = "s3")]
mod s3;
mod settings;
mod spare_buffers;
#[cfg(any(feature = "http", feature = "s3", feature = "xrootd"))]
mod speed;
/// The test bytes of the sources' tests (one file with the integration tests' helper).
#[cfg(all(test, any(feature = "s3", feature = "xrootd")))]
#[path = "../../rntuple/tests/common/test_bytes.rs"]
pub(crate) mod test_bytes;
/// The rule on skipped tests: the core's one source, shared (not copied).
#[cfg(test)]
#[path = "../../rntuple/src/test_skips.rs"]
mod test_skips;
/// What a retried failure's message says was tried, for the tests (one file with the
/// integration tests' helper).
#[cfg(test)]
#[path = "../../rntuple/tests/common/tried.rs"]
pub(crate) mod tried;
mod version;
#[cfg(feature = "xrootd")]
pub(crate) mod xrootd;

pub use cache::{
    cache_clear, cache_ls, cache_purge, cache_stats, cache_verify, default_cache_dir,
    parse_byte_size, CacheConfig, CacheListing, CacheReport, CacheStats, CacheValidate,
    ClearReport, EntryReport, PurgeReport, VerifyReport, CACHE_DIR_VARIABLE,
    CACHE_MAX_BYTES_VARIABLE, CACHE_VALIDATE_VARIABLE,
};
pub use cached::CachedSource;
pub use cached_objects::CachedObjects;
pub use daos::{
    check_label, is_daos, is_valid_label, DaosContainer, DaosContainerId, DaosExtent, DaosKey,
    DaosOid, DaosStore, Fetched, MemoryDaos, DAOS_DIR_VARIABLE, DAOS_LABEL_MAX_LEN,
};
pub use daos_directory::{open_daos_uri, open_daos_uri_in, DirectoryDaos};
pub use dataset::{check_layout_url, is_object_layout, ObjectDataset, OBJECT_LAYOUT_SCHEMES};
pub use error::{to_usize, Error, RemoteKind, Result};
pub use file_ends::{EdgeCached, Edges};
#[cfg(feature = "http")]
pub use http::{HttpOptions, HttpSource};
pub use local::LocalFile;
pub use object_space::{ObjectFetcher, ObjectSpace, OBJECT_BITS, OBJECT_HINTS};
pub use options::{
    format_seconds, parse_huge_pages, parse_positive_size, parse_seconds, parse_speed_limit,
    NetworkOptions, Observer, ReadAhead, SourceOptions, TimeoutKind, Transfer, TransferObserver,
    BUNCH_BYTES_VARIABLE, CONNECT_TIMEOUT_VARIABLE, DAOS_MAPPING_VARIABLE,
    FIRST_BYTE_TIMEOUT_VARIABLE, HUGE_PAGES_VARIABLE, IDLE_TIMEOUT_VARIABLE,
    READ_AHEAD_BYTES_VARIABLE, RETRIES_VARIABLE, SPEED_LIMIT_VARIABLE, SPEED_TIME_VARIABLE,
};
pub use options::{DirectIo, DIRECT_IO_VARIABLE};
pub use output::{ensure_distinct, refuse_existing, AtomicFile, Existing};
pub use retry::{redact_url, RetryPolicy};
#[cfg(feature = "s3")]
pub use s3::S3Source;
pub use version::Freshness;
#[cfg(feature = "xrootd")]
pub use xrootd::{XRootDOptions, XRootDSource};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One byte range to read: offset and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// Offset from the start of the source.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

/// Counters of what a source was asked for, to check every claim about I/O.
#[derive(Debug, Default)]
pub struct IoMetrics {
    requests: AtomicU64,
    vector_requests: AtomicU64,
    ranges: AtomicU64,
    bytes_read: AtomicU64,
    wait_nanos: AtomicU64,
    /// The shortest call plus one (0: none yet), an estimate of the round-trip time.
    shortest_plus_one: AtomicU64,
}

/// A copy of the counters of an [`IoMetrics`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoMetricsSnapshot {
    /// Calls to the source (single or vectored).
    pub requests: u64,
    /// Of those, vectored calls.
    pub vector_requests: u64,
    /// Byte ranges asked for in all calls.
    pub ranges: u64,
    /// Bytes delivered.
    pub bytes_read: u64,
    /// Wall time spent waiting for the source, in nanoseconds.
    pub wait_nanos: u64,
    /// The shortest call, in nanoseconds (0 before any): about one round trip for a
    /// remote source, whose small requests (opening) take little more than one.
    pub shortest_nanos: u64,
}

impl IoMetrics {
    /// Records one call that read `ranges` ranges with `bytes` bytes in total, started at `start`.
    pub fn record(&self, vectored: bool, ranges: u64, bytes: u64, start: Instant) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if vectored {
            self.vector_requests.fetch_add(1, Ordering::Relaxed);
        }
        self.ranges.fetch_add(ranges, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.wait_nanos.fetch_add(nanos, Ordering::Relaxed);
        let plus_one = nanos.saturating_add(1);
        let _ = self
            .shortest_plus_one
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                (old == 0 || plus_one < old).then_some(plus_one)
            });
    }

    /// The counters now.
    pub fn snapshot(&self) -> IoMetricsSnapshot {
        IoMetricsSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            vector_requests: self.vector_requests.load(Ordering::Relaxed),
            ranges: self.ranges.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            wait_nanos: self.wait_nanos.load(Ordering::Relaxed),
            shortest_nanos: self
                .shortest_plus_one
                .load(Ordering::Relaxed)
                .saturating_sub(1),
        }
    }
}

/// How a source wants its reads shaped; the read planner follows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadHints {
    /// Neighbouring ranges closer than this are read as one range (the bytes between
    /// them are read and dropped).
    pub merge_gap: u64,
    /// Merging never makes the bytes read exceed the bytes needed by more than this
    /// share (0.25: at most 25% extra).
    pub max_waste: f64,
    /// Merging stops growing a range at this many bytes.
    pub max_range_bytes: u64,
    /// At most this many ranges go in one vectored request.
    pub max_ranges_per_request: usize,
    /// At most this many bytes go in one vectored request.
    pub max_request_bytes: u64,
    /// Requests this source serves well at the same time.
    pub parallel_requests: usize,
    /// Whether requests cost a network round trip (then reads are planned, merged and
    /// issued ahead of decoding; local files are read page by page as decoding goes).
    pub remote: bool,
    /// A planned read fetches and decodes about this many page bytes at a time (a bunch:
    /// small clusters together, or some fields of a large cluster), a few bunches ahead.
    pub bunch_bytes: u64,
}

impl ReadHints {
    /// Hints for a local file: no merging, reads as the decoder asks.
    pub const LOCAL: ReadHints = ReadHints {
        merge_gap: 0,
        max_waste: 0.0,
        max_range_bytes: 64 << 20,
        max_ranges_per_request: 1024,
        max_request_bytes: 256 << 20,
        parallel_requests: 1,
        remote: false,
        bunch_bytes: 32 << 20,
    };

    /// Hints for a local file read past the page cache ([`PageCacheHoldings::uncached_hints`]):
    /// pages merged into ranges of up to 8 MiB across gaps of up to 128 KiB (at most 25%
    /// extra bytes), read ahead of the decoder 4 at a time, as a remote file's are. The
    /// planned path's fetcher keeps the disk busy while the decoder's threads decode.
    pub const LOCAL_UNCACHED: ReadHints = ReadHints {
        merge_gap: 128 << 10,
        max_waste: 0.25,
        max_range_bytes: 8 << 20,
        max_ranges_per_request: 64,
        max_request_bytes: 8 << 20,
        parallel_requests: 4,
        remote: false,
        bunch_bytes: 32 << 20,
    };

    /// Hints for a remote source with round trips: merge gaps up to 64 KiB (at most 5%
    /// extra bytes: a vectored read carries many ranges anyway, and a selective read must
    /// not move much more than it needs), requests of at most 1024 ranges and 16 MiB, 8
    /// in flight.
    pub const REMOTE: ReadHints = ReadHints {
        merge_gap: 64 << 10,
        max_waste: 0.05,
        max_range_bytes: 16 << 20,
        max_ranges_per_request: 1024,
        max_request_bytes: 16 << 20,
        parallel_requests: 8,
        remote: true,
        bunch_bytes: 32 << 20,
    };
}

/// A range's bytes as read for a planned read: `buffer[start..]`. A direct read fills
/// whole aligned blocks at an aligned address, so the range may start past the buffer's
/// first byte.
#[derive(Debug)]
pub struct RangeBuffer {
    /// The bytes read, the range's among them.
    pub buffer: Vec<u8>,
    /// Where the range's first byte is in `buffer`.
    pub start: usize,
}

impl RangeBuffer {
    /// A buffer that holds exactly a range's bytes.
    pub fn whole(buffer: Vec<u8>) -> RangeBuffer {
        RangeBuffer { buffer, start: 0 }
    }

    /// The range's bytes alone (moved to the buffer's start when they start past it).
    pub fn into_bytes(self) -> Vec<u8> {
        let RangeBuffer { mut buffer, start } = self;
        if start > 0 {
            buffer.drain(..start.min(buffer.len()));
        }
        buffer
    }
}

/// What a server says identifies the version of a file it serves: a file replaced on
/// the server gets other validators (when the server notices: same-size rewrites within
/// a second keep nginx's ETag and Last-Modified; see [`Validators::freshness`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The HTTP or S3 `ETag` (XRootD: the file's stat id and modification time).
    pub etag: Option<String>,
    /// The HTTP `Last-Modified` date, as the server wrote it.
    pub last_modified: Option<String>,
    /// When the file was last modified, in seconds since 1970 (HTTP's `Last-Modified`,
    /// XRootD's stat), where the origin said.
    pub modified: Option<i64>,
    /// The origin's clock when it answered (HTTP's `Date`), in seconds since 1970; `None`:
    /// this machine's clock stands in for it.
    pub answered: Option<i64>,
    /// Whether the ETag changes with every change of the content (S3's hashes it); an
    /// HTTP server's may not (nginx's is the modification second and the size).
    pub etag_follows_content: bool,
}

/// What a source is, reported once when a reader opens it ([`ReadAt::profile`]): how its
/// reads are best shaped, which version of a file it serves, whether it holds a store's
/// objects, and, for a cache, what the cache holds. The read planner takes this value
/// as an input; it asks the source nothing else.
#[derive(Clone)]
pub struct SourceProfile {
    /// How reads should be shaped (the source's latency class: local or remote).
    pub hints: ReadHints,
    /// The server's validators of the file (none for a local file).
    pub validators: Validators,
    /// Whether the source is a store's objects in one byte space (object `n` at
    /// `format::object_address(n)`), whose pages have object locators, rather than a
    /// file, whose pages have file locators.
    pub holds_objects: bool,
    /// What a cache of remote reads holds on local disk (`None`: not a cache): the read
    /// planner reads cached pages by extent and merges only the others into requests.
    pub cached: Option<Arc<dyn CacheHoldings>>,
    /// What the kernel's page cache holds of a local file that can be read past it
    /// (`None`: a source that cannot): a planned read of pages mostly not in it reads
    /// them with [`Access::Uncached`].
    pub page_cache: Option<Arc<dyn PageCacheHoldings>>,
}

impl Default for SourceProfile {
    /// A local file's profile: read as the decoder asks, no validators, no cache.
    fn default() -> Self {
        SourceProfile {
            hints: ReadHints::LOCAL,
            validators: Validators::default(),
            holds_objects: false,
            cached: None,
            page_cache: None,
        }
    }
}

impl std::fmt::Debug for SourceProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceProfile")
            .field("hints", &self.hints)
            .field("validators", &self.validators)
            .field("holds_objects", &self.holds_objects)
            .field("cached", &self.cached.is_some())
            .field("page_cache", &self.page_cache.is_some())
            .finish()
    }
}

impl SourceProfile {
    /// The profile of a source read with `hints`, otherwise a local file's.
    pub fn with_hints(hints: ReadHints) -> SourceProfile {
        SourceProfile {
            hints,
            ..SourceProfile::default()
        }
    }

    /// The cached extent that holds all of `range`, when the source is a cache that
    /// holds it ([`SourceProfile::cached`]).
    pub fn cached_extent(&self, range: ByteRange) -> Option<ByteRange> {
        self.cached.as_ref()?.extent_holding(range)
    }
}

/// What a cache of remote reads holds on local disk, as the read planner sees it: a
/// live view (the cache grows as reads store what they fetched), shared with the cache.
pub trait CacheHoldings: Send + Sync {
    /// The cached extent that holds all of `range`, if the cache holds it.
    fn extent_holding(&self, range: ByteRange) -> Option<ByteRange>;
}

/// How a vectored read ([`ReadAt::read`]) reads its ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Access {
    /// As any read (a local file's through the page cache).
    #[default]
    Normal,
    /// Past the page cache where the source can: a planned read of a local file whose
    /// pages are mostly not in it ([`PageCacheHoldings::uncached_hints`]); a range still
    /// in the page cache is read from it. The ranges' bytes may start past the first
    /// byte of their buffers ([`RangeBuffer::start`]). Other sources read as usual.
    Uncached,
    /// Nothing read now, and nothing returned: the ranges will be read soon. A local
    /// file asks the kernel to read them into the page cache in the background
    /// (`POSIX_FADV_WILLNEED`), so that reading from the disk overlaps decoding; other
    /// sources ignore it (a remote read plans its requests instead). A hint: it does not
    /// fail.
    WillNeed,
}

/// A vectored read: the ranges, how to read them, and buffers the caller is done with.
#[derive(Debug)]
pub struct ReadRequest<'a> {
    /// The ranges, each read exactly (reading past the end is an error).
    pub ranges: &'a [ByteRange],
    /// How to read them.
    pub access: Access,
    /// Buffers of earlier reads of this source whose bytes the caller no longer needs,
    /// given back: a source that reads into buffers of its own reuses them, saving the
    /// page faults of fresh allocations (a planned read's range buffers are hundreds of
    /// MB that live only until their pages are decoded). Others drop them.
    pub spare: Vec<Vec<u8>>,
}

impl<'a> ReadRequest<'a> {
    /// A read of `ranges` as any read.
    pub fn new(ranges: &'a [ByteRange]) -> ReadRequest<'a> {
        ReadRequest {
            ranges,
            access: Access::Normal,
            spare: Vec::new(),
        }
    }

    /// The same request, its ranges read as `access` says.
    #[must_use]
    pub fn access(self, access: Access) -> ReadRequest<'a> {
        ReadRequest { access, ..self }
    }

    /// Serves this request for a source whose vectored read (`read`) returns one `Vec`
    /// per range and reads every access alike: the spare buffers go to `keep` (its
    /// buffers for reuse), nothing is read for [`Access::WillNeed`].
    pub fn serve(
        self,
        keep: impl FnMut(Vec<u8>),
        read: impl FnOnce(&[ByteRange]) -> Result<Vec<Vec<u8>>>,
    ) -> Result<Vec<RangeBuffer>> {
        self.spare.into_iter().for_each(keep);
        if self.access == Access::WillNeed {
            return Ok(Vec::new());
        }
        Ok(read(self.ranges)?
            .into_iter()
            .map(RangeBuffer::whole)
            .collect())
    }

    /// The same request, giving back `spare` buffers.
    #[must_use]
    pub fn spare(self, spare: Vec<Vec<u8>>) -> ReadRequest<'a> {
        ReadRequest { spare, ..self }
    }
}

/// What the kernel's page cache holds of a local file, as the read planner sees it.
pub trait PageCacheHoldings: Send + Sync {
    /// Hints for a planned read of `ranges` past the page cache ([`Access::Uncached`]),
    /// when the file reads them faster so: they are mostly not in the page cache (the
    /// kernel's copies into it and out of it take CPU the decoder needs), the read is
    /// large enough for the file's direct-I/O setting, and its file system allows
    /// direct reads. `None`: read as the profile's hints say.
    fn uncached_hints(&self, ranges: &[ByteRange]) -> Option<ReadHints>;
}

/// A random-access source of bytes: a local file, HTTP(S), XRootD, S3, a store's
/// objects, or a cache of a remote file. It reads, counts what it read, and says once
/// what it is ([`ReadAt::profile`]); how reads are planned is the reader's business.
pub trait ReadAt: Send + Sync {
    /// A name for messages: the path or URL.
    fn name(&self) -> &str;
    /// The size of the source in bytes.
    fn size(&self) -> u64;
    /// Reads exactly `len` bytes at `offset`; reading past the end is an error.
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>>;
    /// Reads exactly `buf.len()` bytes at `offset` into `buf` (a caller's buffer, reused
    /// across reads: no fresh allocation and its page faults per read).
    fn read_at_into(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let bytes = self.read_at(offset, buf.len() as u64)?;
        buf.copy_from_slice(&bytes);
        Ok(())
    }
    /// Reads the ranges of `request` in one call (sources that can, in one request), a
    /// buffer for each in order; none for [`Access::WillNeed`]. By default: each range
    /// with [`ReadAt::read_at`], the spare buffers dropped.
    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        read_each(self, &request)
    }
    /// The counters of this source.
    fn metrics(&self) -> IoMetricsSnapshot;
    /// What this source is ([`SourceProfile`]): asked once, when a reader opens it.
    fn profile(&self) -> SourceProfile {
        SourceProfile::default()
    }
}

/// [`ReadAt::read`] as a source without a vectored read does it: each range of
/// `request` with [`ReadAt::read_at`] (none for [`Access::WillNeed`]).
pub fn read_each<S: ReadAt + ?Sized>(
    source: &S,
    request: &ReadRequest<'_>,
) -> Result<Vec<RangeBuffer>> {
    if request.access == Access::WillNeed {
        return Ok(Vec::new());
    }
    request
        .ranges
        .iter()
        .map(|r| source.read_at(r.offset, r.len).map(RangeBuffer::whole))
        .collect()
}

/// Vectored reads for callers that want each range's bytes alone (opening a file, the
/// container, tests): [`ReadAt::read`] as any read, one `Vec` per range.
pub trait ReadRanges {
    /// Reads `ranges` in one call; sources that can, do it in one request.
    fn read_ranges(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>>;
}

impl<S: ReadAt + ?Sized> ReadRanges for S {
    fn read_ranges(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        let buffers = self.read(ReadRequest::new(ranges))?;
        Ok(buffers.into_iter().map(RangeBuffer::into_bytes).collect())
    }
}

/// A shared byte source.
pub type Source = Arc<dyn ReadAt>;

/// The URL scheme of `location` (lower case), or `None` for a plain path.
pub fn url_scheme(location: &str) -> Option<String> {
    let (scheme, rest) = location.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (valid && !rest.is_empty()).then(|| scheme.to_ascii_lowercase())
}

/// Splits a `FILE[:NAME]` target into the file (a path or URL) and the RNTuple's name:
/// the whole string is the file if it exists locally; in a URL only a colon after the
/// start of the path can begin a NAME (not the one of `host:port`); else the part before
/// the last colon.
pub fn split_target(target: &str) -> (String, Option<String>) {
    if std::path::Path::new(target).exists() {
        return (target.to_string(), None);
    }
    if let Some(scheme_end) = target.find("://") {
        // In a URL, only a colon after the start of the path can begin a NAME (the one
        // in host:port cannot).
        let after = scheme_end + 3;
        let path_start = target[after..]
            .find('/')
            .map_or(target.len(), |i| after + i);
        return match target.rfind(':') {
            Some(i) if i > path_start && i + 1 < target.len() => {
                (target[..i].to_string(), Some(target[i + 1..].to_string()))
            }
            _ => (target.to_string(), None),
        };
    }
    match target.rsplit_once(':') {
        Some((file, name)) if !file.is_empty() && !name.is_empty() => {
            (file.to_string(), Some(name.to_string()))
        }
        _ => (target.to_string(), None),
    }
}

/// Opens a byte source: a local path or `file://` URL, `http(s)://`, `root(s)://` or
/// `s3://`, with the options of [`SourceOptions::current`] (a program's defaults, else
/// the environment's). A remote source comes with its first and last bytes already read
/// (one request), where a ROOT file keeps what opening it needs. A URL whose source the
/// library was built without (see the module's features) is an
/// [`Error::Unsupported`].
pub fn open_source(location: &str) -> Result<Source> {
    open_source_with(location, &SourceOptions::current()?)
}

/// [`open_source`] with `options`.
pub fn open_source_with(location: &str, options: &SourceOptions) -> Result<Source> {
    if url_scheme(location).is_none_or(|scheme| scheme == "file") {
        return open_raw_source_with(location, options);
    }
    if let Some(cache) = &options.cache {
        return cached::open_cached(location, options, cache);
    }
    let (source, edges) = open_with_edges(
        location,
        options,
        file_ends::HEAD_BYTES,
        file_ends::TAIL_BYTES,
    )?;
    Ok(Arc::new(EdgeCached::with_edges(source, edges)))
}

/// Opens the remote file at `location` and reads its first `head` and last `tail`
/// bytes, in as few requests as its protocol allows: one over HTTP (a multi-range
/// request that also tells the size and validators), the open and one vectored read
/// over XRootD, and concurrent ranged reads over S3.
///
/// A file modified within the last second at its origin (so that a rewrite in the same
/// second would keep its validators) is opened again once that second has passed, up to
/// twice ([`Freshness`]): every byte read later then belongs to the version opened.
pub fn open_with_edges(
    location: &str,
    options: &SourceOptions,
    head: u64,
    tail: u64,
) -> Result<(Source, Edges)> {
    version::open_settled(
        &redact_url(location),
        || open_remote_with_edges(location, options, head, tail),
        version::now_unix,
        std::thread::sleep,
    )
}

/// [`open_with_edges`], once.
fn open_remote_with_edges(
    location: &str,
    options: &SourceOptions,
    head: u64,
    tail: u64,
) -> Result<(Source, Edges)> {
    #[cfg(feature = "http")]
    if matches!(url_scheme(location).as_deref(), Some("http" | "https")) {
        let http = http::HttpOptions {
            retry: RetryPolicy::new(options.network),
            observer: options.observer.clone(),
            ..http::HttpOptions::from_env()?
        };
        let (source, edges) = http::HttpSource::open_with_edges_using(location, http, head, tail)?;
        return Ok((Arc::new(source), edges));
    }
    #[cfg(feature = "s3")]
    if url_scheme(location).as_deref() == Some("s3") {
        let aws_vars = crate::credentials::aws_variables();
        let policy = RetryPolicy::new(options.network);
        let (source, edges) = S3Source::open_with_edges(location, aws_vars, policy, head, tail)?;
        return Ok((Arc::new(source), edges));
    }
    let source = open_raw_source_with(location, options)?;
    let edges = Edges::read(source.as_ref(), head, tail)?;
    Ok((source, edges))
}

/// [`open_source`] without reading anything up front.
pub fn open_raw_source(location: &str) -> Result<Source> {
    open_raw_source_with(location, &SourceOptions::current()?)
}

/// [`open_raw_source`] with `options`.
pub fn open_raw_source_with(location: &str, options: &SourceOptions) -> Result<Source> {
    let Some(scheme) = url_scheme(location) else {
        return Ok(Arc::new(LocalFile::open_with(location, options.direct_io)?));
    };
    // Unused without the remote sources.
    let _ = options;
    match scheme.as_str() {
        "file" => {
            let path = &location["file://".len()..];
            Ok(Arc::new(LocalFile::open_with(path, options.direct_io)?))
        }
        #[cfg(feature = "s3")]
        "s3" => {
            let aws_vars = crate::credentials::aws_variables();
            let policy = RetryPolicy::new(options.network);
            Ok(Arc::new(S3Source::open_with(location, aws_vars, policy)?))
        }
        #[cfg(feature = "http")]
        "http" | "https" => {
            let http = http::HttpOptions {
                retry: RetryPolicy::new(options.network),
                observer: options.observer.clone(),
                ..http::HttpOptions::from_env()?
            };
            Ok(Arc::new(http::HttpSource::open_with(location, http)?))
        }
        #[cfg(feature = "xrootd")]
        "root" | "xroot" | "roots" | "xroots" => {
            let xrootd = XRootDOptions {
                retry: RetryPolicy::new(options.network),
                ..XRootDOptions::default()
            };
            Ok(Arc::new(XRootDSource::open_with(location, xrootd)?))
        }
        other => Err(crate::error::Error::Unsupported(
            match scheme_feature(other) {
                // A scheme this library reads, but not as built.
                Some(feature) => format!(
                    "reading {other}:// URLs needs the rntuple library built with its \
                     `{feature}` feature ({})",
                    redact_url(location)
                ),
                None => format!(
                    "URL scheme \"{other}\" ({}): use a path, file://, http(s)://, root(s):// \
                     or s3://",
                    redact_url(location)
                ),
            },
        )),
    }
}

/// The cargo feature of this crate that reads URLs of `scheme` (lower case), if any.
fn scheme_feature(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" | "https" => Some("http"),
        "root" | "xroot" | "roots" | "xroots" => Some("xrootd"),
        "s3" => Some("s3"),
        _ => None,
    }
}

/// An in-memory source, for tests and for data already in memory.
#[derive(Debug)]
pub struct MemorySource {
    name: String,
    data: Vec<u8>,
    metrics: IoMetrics,
}

impl MemorySource {
    /// Wraps `data` as a source called `name`.
    pub fn new(name: impl Into<String>, data: Vec<u8>) -> Self {
        MemorySource {
            name: name.into(),
            data,
            metrics: IoMetrics::default(),
        }
    }
}

impl ReadAt for MemorySource {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> u64 {
        self.data.len() as u64
    }
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let start = Instant::now();
        let slice = checked_slice(&self.data, offset, len, &self.name)?;
        let out = slice.to_vec();
        self.metrics.record(false, 1, len, start);
        Ok(out)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}

/// The bytes `[offset, offset + len)` of `data`, or a truncation error naming `what`.
pub fn checked_slice<'a>(data: &'a [u8], offset: u64, len: u64, what: &str) -> Result<&'a [u8]> {
    let size = data.len() as u64;
    let end = offset.checked_add(len);
    match end {
        // `end` is within `data`, whose length is a usize: neither bound truncates.
        #[allow(clippy::cast_possible_truncation)]
        Some(end) if end <= size => Ok(&data[offset as usize..end as usize]),
        _ => Err(crate::error::Error::Truncated {
            what: what.to_string(),
            offset,
            needed: len,
            available: size.saturating_sub(offset),
        }),
    }
}

#[cfg(test)]
mod split_target_tests {
    use super::split_target;

    #[test]
    fn targets_split_at_the_name_not_at_a_port() {
        let s = |t: &str| split_target(t);
        assert_eq!(
            s("root://host:1094//eos/f.root"),
            ("root://host:1094//eos/f.root".into(), None)
        );
        assert_eq!(
            s("root://host:1094//eos/f.root:Events"),
            ("root://host:1094//eos/f.root".into(), Some("Events".into()))
        );
        assert_eq!(s("https://h/f.root"), ("https://h/f.root".into(), None));
        assert_eq!(
            s("s3://b/k.root:dir/nt"),
            ("s3://b/k.root".into(), Some("dir/nt".into()))
        );
        assert_eq!(
            s("nonexistent.root:T"),
            ("nonexistent.root".into(), Some("T".into()))
        );
    }

    /// `TARGET[:NAME]` for every URL kind: (target, file or URL, name). The Python
    /// package calls this same function (`_core.split_target`).
    const TARGETS: &[(&str, &str, Option<&str>)] = &[
        (
            "ntpl+file:///tmp/store/nano:Events",
            "ntpl+file:///tmp/store/nano",
            Some("Events"),
        ),
        (
            "ntpl+file:///tmp/store/nano",
            "ntpl+file:///tmp/store/nano",
            None,
        ),
        (
            "ntpl+file://localhost/tmp/s/nano:Events",
            "ntpl+file://localhost/tmp/s/nano",
            Some("Events"),
        ),
        (
            "ntpl+s3+http://host/bkt/nano:Events",
            "ntpl+s3+http://host/bkt/nano",
            Some("Events"),
        ),
        (
            "ntpl+s3+http://host:8333/bkt/nano:Events",
            "ntpl+s3+http://host:8333/bkt/nano",
            Some("Events"),
        ),
        (
            "ntpl+s3+http://host:8333/bkt/nano",
            "ntpl+s3+http://host:8333/bkt/nano",
            None,
        ),
        (
            "ntpl+s3+https://[::1]:9000/bkt/a/b:E",
            "ntpl+s3+https://[::1]:9000/bkt/a/b",
            Some("E"),
        ),
        (
            "http://host:8080/f.root:Events",
            "http://host:8080/f.root",
            Some("Events"),
        ),
        ("http://host:8080/f.root", "http://host:8080/f.root", None),
        ("http://host:8080", "http://host:8080", None),
        (
            "root://host:1094//eos/f.root:dir/Events",
            "root://host:1094//eos/f.root",
            Some("dir/Events"),
        ),
        ("s3://bkt/k.root:Events", "s3://bkt/k.root", Some("Events")),
        (
            "daos://pool/cont:Events",
            "daos://pool/cont",
            Some("Events"),
        ),
        (
            "ntpl+file:///tmp/store/nano:",
            "ntpl+file:///tmp/store/nano:",
            None,
        ),
        ("f.root:Events", "f.root", Some("Events")),
        ("f.root", "f.root", None),
    ];

    #[test]
    fn every_url_kind_takes_a_name_after_a_colon() {
        for (target, file, name) in TARGETS {
            assert_eq!(
                split_target(target),
                (file.to_string(), name.map(str::to_string)),
                "{target}"
            );
        }
    }
}

#[cfg(test)]
mod scheme_tests {
    use super::{open_raw_source, open_source, Source};
    use crate::error::{Error, Result};

    /// The message of the error that opening `location` gives, through both
    /// `open_source` and `open_raw_source`; it must be an `Error::Unsupported` (returned
    /// before any network access).
    fn unsupported(location: &str) -> String {
        let message = |result: Result<Source>| match result {
            Err(e @ Error::Unsupported(_)) => e.to_string(),
            Err(other) => panic!("{location}: expected Error::Unsupported, got {other}"),
            Ok(_) => panic!("{location}: opened, expected Error::Unsupported"),
        };
        let opened = message(open_source(location));
        assert_eq!(opened, message(open_raw_source(location)));
        opened
    }

    #[test]
    fn unknown_schemes_are_unsupported() {
        assert_eq!(
            unsupported("ftp://user:pw@host/f.root"),
            "unsupported: URL scheme \"ftp\" (ftp://***@host/f.root): use a path, file://, \
             http(s)://, root(s):// or s3://"
        );
    }

    #[cfg(not(feature = "http"))]
    #[test]
    fn http_urls_need_the_http_feature() {
        assert_eq!(
            unsupported("http://host:8080/data/f.root"),
            "unsupported: reading http:// URLs needs the rntuple library built with its \
             `http` feature (http://host:8080/data/f.root)"
        );
        // No credential in the message.
        assert_eq!(
            unsupported("HTTPS://alice:s3cret@host/f.root?authz=tok"),
            "unsupported: reading https:// URLs needs the rntuple library built with its \
             `http` feature (HTTPS://***@host/f.root?***)"
        );
    }

    #[cfg(not(feature = "xrootd"))]
    #[test]
    fn root_urls_need_the_xrootd_feature() {
        assert_eq!(
            unsupported("root://host:1094//eos/f.root"),
            "unsupported: reading root:// URLs needs the rntuple library built with its \
             `xrootd` feature (root://host:1094//eos/f.root)"
        );
        assert_eq!(
            unsupported("roots://host//eos/f.root"),
            "unsupported: reading roots:// URLs needs the rntuple library built with its \
             `xrootd` feature (roots://host//eos/f.root)"
        );
    }

    #[cfg(not(feature = "s3"))]
    #[test]
    fn s3_urls_need_the_s3_feature() {
        assert_eq!(
            unsupported("s3://bucket/key.root"),
            "unsupported: reading s3:// URLs needs the rntuple library built with its \
             `s3` feature (s3://bucket/key.root)"
        );
    }
}
