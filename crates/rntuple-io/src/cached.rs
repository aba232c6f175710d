//! A byte source that keeps what it reads from a remote origin in a cache on local disk
//! (a [`CacheStore`]), shared by every process that names the same cache directory.
//!
//! Opening finds the URL's current cached version. With no version, the origin is
//! opened as without a cache (its two ends in one request) and a version is made: its
//! identity hashes the file's size, its first [`PROBE_HEAD`] and last [`PROBE_TAIL`]
//! bytes (the TFile header with its random UUID, the keys list and the anchors'
//! neighbourhood) and the origin's validators, which its meta keeps. With a version:
//!
//! - [`CacheValidate::Open`]: one request to the origin reads the probe ranges (and
//!   learns the validators); the same bytes and the same validators mean the same
//!   file, else a new version replaces the old one (counted as stale);
//! - [`CacheValidate::Never`]: no request at all; the origin is opened only if a read
//!   needs bytes the cache lacks, and then it must still be the cached file (else the
//!   read fails, saying so: versions never mix).
//!
//! Only a version the validators tell apart from every rewrite is cached
//! ([`Freshness::Identified`](super::Freshness): a content ETag, or a modification time
//! more than a second old by the origin's clock). The origin source checks every
//! response against the validators it was opened with, so every byte stored under a
//! version came in a response that named it. A file modified within the last second
//! (a rewrite in that second would keep its validators) or without validators is read
//! from the origin and nothing of it is stored or served from the cache
//! (`uncacheable_opens`).
//!
//! A read is cut into the pieces the cache holds and the pieces it lacks; the lacking
//! ones go to the origin in one vectored read, and each is stored as an extent. Every
//! cached byte is checked (the store's block checksums) before it is used; a cache
//! fault (a bad extent, a full disk, an unwritable directory) is counted and the bytes
//! come from the origin instead, so the cache never fails a read.

use super::cache::{CacheConfig, CacheStore, CacheValidate, Piece, Version, VersionMeta};
use super::version::now_unix;
use super::{
    open_with_edges, redact_url, url_scheme, ByteRange, CacheHoldings, EdgeCached, Edges,
    Freshness, IoMetricsSnapshot, RangeBuffer, ReadAt, ReadHints, ReadRequest, Source,
    SourceOptions, SourceProfile, Validators,
};
use crate::error::{Error, RemoteKind, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Bytes at the start of a file that identify its version: the TFile header (fEND,
/// fSeekKeys, the UUID at byte 45 or 57) and the top directory's record.
pub(crate) const PROBE_HEAD: u64 = 256;
/// Bytes at the end of a file that identify its version: the keys list and the free
/// segments, next to the anchors and the footer.
pub(crate) const PROBE_TAIL: u64 = 4096;

/// How often (milliseconds) a source lists its version's extents again, to find what
/// other processes stored since.
const REFRESH_EVERY_MS: u64 = 2000;

/// Opens `location` (a remote URL) through the cache `config` describes. A fault of the
/// cache itself (a directory that cannot be made or written) opens the origin without
/// the cache; a fault of the origin (not found, refused) is an error as without it.
pub(crate) fn open_cached(
    location: &str,
    options: &SourceOptions,
    config: &CacheConfig,
) -> Result<Source> {
    // A cache directory that others control is an error, not passed over; a fault of
    // the cache itself (a directory that cannot be made or written) reads without it.
    let Some(store) = super::cache::open_store(config)? else {
        return open_uncached(location, options);
    };
    let Ok(entry) = store.url_entry(location) else {
        store.counters().write_error();
        return open_uncached(location, options);
    };
    let name = redact_url(location);
    // The origin alone, for a version the cache must not keep.
    let uncached = |origin: Source, edges: Edges| -> Source {
        store.counters().uncacheable();
        Arc::new(EdgeCached::with_edges(origin, edges))
    };
    // A source of `version`, reading from `origin` (when open) what the cache lacks.
    let cached = |version: Version, origin: Option<Source>| {
        let hints = origin
            .as_ref()
            .map_or_else(|| default_hints(location), |o| o.profile().hints);
        CachedSource::new(
            location,
            &name,
            options,
            store.clone(),
            version,
            origin,
            hints,
        )
    };
    if let Some(version) = entry.current() {
        match config.validate {
            CacheValidate::Never => return Ok(Arc::new(cached(version, None))),
            CacheValidate::Open => {
                let (origin, probe) = probe_origin(location, options)?;
                store
                    .counters()
                    .validation(probe.head.len() as u64 + probe.tail.len() as u64);
                if !identified(origin.as_ref()) {
                    return Ok(uncached(origin, probe));
                }
                let fresh = version_meta(origin.as_ref(), &probe, &name);
                if same_file(version.meta(), &fresh) {
                    return Ok(Arc::new(cached(version, Some(origin))));
                }
                store.counters().stale();
                return Ok(match entry.install(fresh) {
                    Ok(version) => {
                        store_edges(&version, &probe);
                        Arc::new(cached(version, Some(origin)))
                    }
                    Err(_) => {
                        store.counters().write_error();
                        Arc::new(EdgeCached::with_edges(origin, probe))
                    }
                });
            }
        }
    }
    // Not cached yet: opened as without a cache, its two ends the first extents.
    let (origin, edges) = open_origin(location, options)?;
    if !identified(origin.as_ref()) {
        return Ok(uncached(origin, edges));
    }
    let meta = version_meta(origin.as_ref(), &edges, &name);
    match entry.install(meta) {
        Ok(version) => {
            store_edges(&version, &edges);
            // Read from the origin: the opening's bytes are the origin's, not hits.
            let bytes = edges.head.len() as u64 + edges.tail.len() as u64;
            store.counters().origin_request();
            store.counters().miss(bytes);
            Ok(Arc::new(
                cached(version, Some(origin)).keeping(edges, EdgesFrom::Origin),
            ))
        }
        Err(_) => {
            store.counters().write_error();
            Ok(Arc::new(EdgeCached::with_edges(origin, edges)))
        }
    }
}

/// The origin without a cache, as [`super::open_source_with`] opens it.
fn open_uncached(location: &str, options: &SourceOptions) -> Result<Source> {
    let (origin, edges) = open_origin(location, options)?;
    Ok(Arc::new(EdgeCached::with_edges(origin, edges)))
}

/// Opens the origin and reads its two ends, as an open without a cache does.
fn open_origin(location: &str, options: &SourceOptions) -> Result<(Source, Edges)> {
    open_with_edges(
        location,
        options,
        super::file_ends::HEAD_BYTES,
        super::file_ends::TAIL_BYTES,
    )
}

/// Opens the origin and reads the probe ranges of the file as it is now: one request
/// over HTTP.
fn probe_origin(location: &str, options: &SourceOptions) -> Result<(Source, Edges)> {
    open_with_edges(location, options, PROBE_HEAD, PROBE_TAIL)
}

/// The probe ranges of a file of `size` bytes.
fn probe_ranges(size: u64) -> [ByteRange; 2] {
    let head = PROBE_HEAD.min(size);
    let tail = PROBE_TAIL.min(size);
    [
        ByteRange {
            offset: 0,
            len: head,
        },
        ByteRange {
            offset: size - tail,
            len: tail,
        },
    ]
}

/// Whether what `origin` serves is told apart from every rewrite by its validators, so
/// that its bytes may be kept under them.
fn identified(origin: &dyn ReadAt) -> bool {
    origin.profile().validators.freshness(now_unix()) == Freshness::Identified
}

/// What identifies the file `origin` serves, from its size, validators and `edges`
/// (which hold at least the probe ranges).
fn version_meta(origin: &dyn ReadAt, edges: &Edges, name: &str) -> VersionMeta {
    let size = origin.size();
    let validators = origin.profile().validators;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&size.to_le_bytes());
    // The validators are part of the identity: a version is its bytes as named by them.
    for validator in [&validators.etag, &validators.last_modified] {
        let text = validator.as_deref().unwrap_or("");
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    let probe: Vec<(ByteRange, u64)> = probe_ranges(size)
        .into_iter()
        .map(|range| {
            let bytes = edges.kept(range.offset, range.len).unwrap_or_default();
            hasher.update(&range.offset.to_le_bytes());
            hasher.update(bytes);
            // A probe range the edges lack (cannot happen: they are read with the
            // probe's lengths or more) hashes as empty and never matches a real file.
            (range, xxhash_rust::xxh3::xxh3_64(bytes))
        })
        .collect();
    VersionMeta {
        identity: hasher.digest128(),
        size,
        etag: validators.etag,
        last_modified: validators.last_modified,
        mtime: validators.modified,
        probe,
        url: name.to_string(),
    }
}

/// Whether `fresh` (the origin now) is the file `cached` describes: the same size,
/// probe bytes and validators.
fn same_file(cached: &VersionMeta, fresh: &VersionMeta) -> bool {
    cached.identity == fresh.identity
        && cached.size == fresh.size
        && cached.probe == fresh.probe
        && cached.etag == fresh.etag
        && cached.last_modified == fresh.last_modified
        && cached.mtime == fresh.mtime
}

/// Stores the two ends read at opening as extents of `version`.
fn store_edges(version: &Version, edges: &Edges) {
    if !edges.head.is_empty() {
        version.store(0, &edges.head);
    }
    if !edges.tail.is_empty() {
        version.store(edges.tail_offset, &edges.tail);
    }
}

/// How reads of `location` should be shaped before its origin is open.
fn default_hints(location: &str) -> ReadHints {
    match url_scheme(location).as_deref() {
        #[cfg(feature = "s3")]
        Some("s3") => super::s3::S3_HINTS,
        _ => ReadHints::REMOTE,
    }
}

/// Where a [`CachedSource`]'s edges came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgesFrom {
    Cache,
    Origin,
}

/// A remote file read through a cache of its bytes on local disk.
pub struct CachedSource {
    /// The URL as given (credentials included: never printed), to open the origin.
    location: String,
    /// The URL without credentials.
    name: String,
    options: SourceOptions,
    store: Arc<CacheStore>,
    version: Version,
    size: u64,
    /// The file's two ends, when they were read at opening (from the origin or the
    /// cache).
    edges: Edges,
    /// Where `edges` came from: reads of them are cache hits only if from the cache.
    edges_from: EdgesFrom,
    /// The origin, once open.
    origin: Mutex<Option<Source>>,
    hints: ReadHints,
    /// Buffers the reader gave back, for the next reads (fresh memory costs page
    /// faults).
    spare: super::spare_buffers::SpareBuffers,
    /// Buffers the origin read into, their bytes copied out and stored: given back to
    /// it with its next read, to reuse (fresh memory costs page faults).
    origin_spare: Mutex<Vec<Vec<u8>>>,
    /// When the extents were last listed (milliseconds since `opened`).
    listed_at: AtomicU64,
    opened: Instant,
}

impl std::fmt::Debug for CachedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedSource")
            .field("name", &self.name)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl CachedSource {
    fn new(
        location: &str,
        name: &str,
        options: &SourceOptions,
        store: Arc<CacheStore>,
        version: Version,
        origin: Option<Source>,
        hints: ReadHints,
    ) -> CachedSource {
        let size = version.meta().size;
        let source = CachedSource {
            location: location.to_string(),
            name: name.to_string(),
            options: options.clone(),
            store,
            version,
            size,
            edges: Edges::default(),
            edges_from: EdgesFrom::Cache,
            origin: Mutex::new(origin),
            hints,
            spare: super::spare_buffers::SpareBuffers::default(),
            origin_spare: Mutex::default(),
            listed_at: AtomicU64::new(0),
            opened: Instant::now(),
        };
        // What opening a ROOT file reads, from the cache into memory.
        let edges = source.cached_edges();
        source.keeping(edges, EdgesFrom::Cache)
    }

    /// This source, keeping `edges` (read from `from`) in memory.
    fn keeping(mut self, edges: Edges, from: EdgesFrom) -> CachedSource {
        self.edges = edges;
        self.edges_from = from;
        self
    }

    /// Counts a read of `bytes` served from the edges kept in memory: a hit when they
    /// came from the cache (those read from the origin were counted when opening).
    fn edges_read(&self, bytes: u64) {
        if self.edges_from == EdgesFrom::Cache {
            self.store.counters().hit(bytes);
        }
    }

    /// The file's two ends as opening reads them, from the cache (empty where it lacks
    /// them).
    fn cached_edges(&self) -> Edges {
        let read = |range: ByteRange| -> Vec<u8> {
            let Ok(len) = usize::try_from(range.len) else {
                return Vec::new();
            };
            let mut bytes = vec![0u8; len];
            if self.version.read_into(range, &mut bytes) {
                bytes
            } else {
                Vec::new()
            }
        };
        let head_len = super::file_ends::HEAD_BYTES.min(self.size);
        let tail_offset = self
            .size
            .saturating_sub(super::file_ends::TAIL_BYTES)
            .max(head_len);
        let head = read(ByteRange {
            offset: 0,
            len: head_len,
        });
        let tail = read(ByteRange {
            offset: tail_offset,
            len: self.size - tail_offset,
        });
        let tail_offset = if tail.is_empty() {
            self.size
        } else {
            tail_offset
        };
        Edges {
            head,
            tail_offset,
            tail,
        }
    }

    /// What the cache did for this process so far.
    pub fn cache_stats(&self) -> super::cache::CacheStats {
        self.store.counters().snapshot()
    }

    /// The origin: open, or opened now (then it must still be the cached file).
    fn origin(&self) -> Result<Source> {
        let mut origin = self.origin.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(source) = origin.as_ref() {
            return Ok(source.clone());
        }
        let (source, probe) = probe_origin(&self.location, &self.options)?;
        self.store
            .counters()
            .validation(probe.head.len() as u64 + probe.tail.len() as u64);
        let fresh = version_meta(source.as_ref(), &probe, &self.name);
        if !identified(source.as_ref()) || !same_file(self.version.meta(), &fresh) {
            self.store.counters().stale();
            return Err(Error::Remote {
                kind: RemoteKind::Changed,
                what: self.name.clone(),
                detail: "the file changed at its origin since it was cached, and this read \
                         needs bytes the cache does not hold (RNTUPLE_CACHE_VALIDATE=never \
                         serves the cached version only): read it again with \
                         RNTUPLE_CACHE_VALIDATE=open to cache the new version"
                    .to_string(),
            });
        }
        *origin = Some(source.clone());
        Ok(source)
    }

    /// Lists the version's extents again if the last listing is old: other processes
    /// may have stored what this one lacks.
    fn refresh_if_due(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.listed_at.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= REFRESH_EVERY_MS
            && self
                .listed_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.version.refresh();
        }
    }

    fn check_range(&self, range: &ByteRange) -> Result<()> {
        match range.offset.checked_add(range.len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::Truncated {
                what: self.name.clone(),
                offset: range.offset,
                needed: range.len,
                available: self.size.saturating_sub(range.offset),
            }),
        }
    }
}

impl Drop for CachedSource {
    fn drop(&mut self) {
        self.store.flush_stats();
    }
}

/// What a [`CachedSource`] holds, for the read planner: the extents of its version (a
/// live view: they grow as reads store what they fetched) and the two ends it keeps in
/// memory.
struct Holdings {
    version: Version,
    /// The first bytes kept in memory (empty: none).
    head: ByteRange,
    /// The last bytes kept in memory (empty: none).
    tail: ByteRange,
}

impl CacheHoldings for Holdings {
    fn extent_holding(&self, range: ByteRange) -> Option<ByteRange> {
        let end = range.offset.checked_add(range.len)?;
        let within = |edge: ByteRange| {
            edge.len > 0 && range.offset >= edge.offset && end <= edge.offset + edge.len
        };
        // The head is checked first, as the edges' own lookup does.
        if end <= self.head.len {
            return Some(self.head);
        }
        if within(self.tail) {
            return Some(self.tail);
        }
        if let Some(extent) = self.version.extent_containing(range) {
            return Some(extent);
        }
        // Held by several extents in a row (a page across the end of the bytes read at
        // opening): cached, read in pieces.
        let pieces = self.version.pieces(range);
        let held = !pieces.is_empty() && pieces.iter().all(|p| matches!(p, Piece::Cached { .. }));
        held.then_some(range)
    }
}

impl CachedSource {
    /// Reads `ranges`: what the cache holds from it, the rest from the origin in one
    /// vectored read, stored in the cache.
    fn read_vectored(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        for range in ranges {
            self.check_range(range)?;
        }
        let counters = self.store.counters();
        counters.request(ranges.len() > 1, ranges.len() as u64);
        let mut out: Vec<Vec<u8>> = Vec::with_capacity(ranges.len());
        // (output, offset in it, the file's range) of every piece the cache lacks.
        let mut missing: Vec<(usize, usize, ByteRange)> = Vec::new();
        let mut lacking = Vec::with_capacity(ranges.len());
        for (i, range) in ranges.iter().enumerate() {
            if let Some(bytes) = self.edges.kept(range.offset, range.len) {
                self.edges_read(range.len);
                out.push(bytes.to_vec());
                lacking.push(0);
                continue;
            }
            let len = crate::error::to_usize(range.len, "a cached read")?;
            // Every byte is written below: cached pieces by the cache, the others by the
            // origin's.
            let mut bytes = self.spare.take_filled(len);
            let mut lacked = 0u64;
            for piece in self.version.pieces(*range) {
                let (part, cached) = match piece {
                    Piece::Cached { range } => (range, true),
                    Piece::Missing { range } => (range, false),
                };
                // Inside `range`, whose length is a usize.
                #[allow(clippy::cast_possible_truncation)]
                let (at, n) = ((part.offset - range.offset) as usize, part.len as usize);
                if !(cached && self.version.read_into(part, &mut bytes[at..at + n])) {
                    missing.push((i, at, part));
                    lacked += part.len;
                }
            }
            match lacked {
                0 => counters.hit(range.len),
                n if n == range.len => counters.miss(n),
                n => counters.partial_hit(range.len - n, n),
            }
            lacking.push(lacked);
            out.push(bytes);
        }
        if missing.is_empty() {
            return Ok(out);
        }
        self.refresh_if_due();
        let origin = self.origin()?;
        let wanted: Vec<ByteRange> = missing.iter().map(|&(_, _, r)| r).collect();
        counters.origin_request();
        // The origin's buffers of the last reads go back to it with this one.
        let given_back = std::mem::take(&mut *self.lock_origin_spare());
        let fetched = origin.read(ReadRequest::new(&wanted).spare(given_back))?;
        if fetched.len() != wanted.len() {
            return Err(Error::Remote {
                kind: RemoteKind::Other,
                what: self.name.clone(),
                detail: format!("{} of {} ranges came back", fetched.len(), wanted.len()),
            });
        }
        for ((i, at, part), read) in missing.into_iter().zip(fetched) {
            let data = read.into_bytes();
            if data.len() as u64 != part.len {
                return Err(Error::Truncated {
                    what: self.name.clone(),
                    offset: part.offset,
                    needed: part.len,
                    available: data.len() as u64,
                });
            }
            out[i][at..at + data.len()].copy_from_slice(&data);
            self.version.store(part.offset, &data);
            self.lock_origin_spare().push(data);
        }
        Ok(out)
    }

    /// The origin's buffers whose bytes are in the cache now, for its next read.
    fn lock_origin_spare(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.origin_spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl ReadAt for CachedSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut read = self.read_vectored(&[ByteRange { offset, len }])?;
        Ok(read.pop().unwrap_or_default())
    }

    fn read_at_into(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let range = ByteRange {
            offset,
            len: buf.len() as u64,
        };
        self.check_range(&range)?;
        // A page in one extent (a read planned on cached pages): straight into `buf`.
        if let Some(bytes) = self.edges.kept(offset, range.len) {
            buf.copy_from_slice(bytes);
            self.store.counters().request(false, 1);
            self.edges_read(range.len);
            return Ok(());
        }
        if self.version.read_into(range, buf) {
            self.store.counters().request(false, 1);
            self.store.counters().hit(range.len);
            return Ok(());
        }
        let bytes = self.read_at(offset, range.len)?;
        buf.copy_from_slice(&bytes);
        self.spare.put_filled(bytes);
        Ok(())
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        request.serve(|b| self.spare.put_filled(b), |r| self.read_vectored(r))
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        // What went to the origin: the cache's own counters are cache_stats().
        self.origin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|o| o.metrics())
            .unwrap_or_default()
    }

    fn profile(&self) -> SourceProfile {
        let meta = self.version.meta();
        let edge = |offset: u64, len: usize| ByteRange {
            offset,
            len: len as u64,
        };
        SourceProfile {
            validators: Validators {
                etag: meta.etag.clone(),
                last_modified: meta.last_modified.clone(),
                modified: meta.mtime,
                ..Validators::default()
            },
            cached: Some(Arc::new(Holdings {
                version: self.version.clone(),
                head: edge(0, self.edges.head.len()),
                tail: edge(self.edges.tail_offset, self.edges.tail.len()),
            })),
            ..SourceProfile::with_hints(self.hints)
        }
    }
}
