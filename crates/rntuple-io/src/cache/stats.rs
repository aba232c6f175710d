//! What a cache did, counted in JCache's and XCache's terms, per process and summed.
//!
//! A store counts in memory ([`CacheCounters`]) and writes its cumulative counters to
//! its own file `stats/<host>.<pid>.<token>.stats` (a temporary file renamed over it);
//! no process rewrites another's file. A purge adds the files of finished processes
//! into `stats/total` and deletes them, under the purge lock.

use super::layout::{self, Root, STATS_DIR};
use super::sys::{self, Writer};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! counters {
    ($( $(#[doc = $doc:expr])* $name:ident, )*) => {
        /// What a cache did: the counters of one process, or summed over every process
        /// that used a cache directory ([`cache_stats`](crate::cache_stats)).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct CacheStats {
            $( $(#[doc = $doc])* pub $name: u64, )*
        }

        /// The live counters of a store (atomics, shared by its users' threads).
        #[derive(Debug, Default)]
        pub(crate) struct CacheCounters {
            $( $name: AtomicU64, )*
        }

        impl CacheCounters {
            /// The counters now.
            pub(crate) fn snapshot(&self) -> CacheStats {
                CacheStats { $( $name: self.$name.load(Relaxed), )* }
            }

            /// Adds `stats` to the counters.
            pub(super) fn add(&self, stats: &CacheStats) {
                $( self.$name.fetch_add(stats.$name, Relaxed); )*
            }
        }

        impl CacheStats {
            /// Every counter with its name (the names of the JSON forms), in a fixed
            /// order.
            pub fn pairs(&self) -> Vec<(&'static str, u64)> {
                vec![ $( (stringify!($name), self.$name), )* ]
            }

            /// Adds `other`'s counters to these (saturating).
            pub fn add(&mut self, other: &CacheStats) {
                $( self.$name = self.$name.saturating_add(other.$name); )*
            }

            /// Sets the counter called `name`; false when there is none.
            fn set(&mut self, name: &str, value: u64) -> bool {
                match name {
                    $( stringify!($name) => { self.$name = value; true } )*
                    _ => false,
                }
            }
        }
    };
}

counters! {
    /// Read calls the cache served or passed on.
    requests,
    /// Of those, vectored calls (many ranges at once).
    vector_requests,
    /// Byte ranges asked for in all calls.
    ranges,
    /// Ranges read wholly from the cache.
    hits,
    /// Ranges read partly from the cache, partly from the origin.
    partial_hits,
    /// Ranges read wholly from the origin.
    misses,
    /// Bytes of the ranges read from the cache.
    bytes_from_cache,
    /// Bytes of the ranges read from the origin.
    bytes_from_origin,
    /// Requests sent to the origin for data.
    origin_requests,
    /// Requests sent to the origin to check that a cached version is current.
    validation_requests,
    /// Bytes those requests read.
    validation_bytes,
    /// Bytes read from the origin and not stored (cache full, failing, or an extent
    /// larger than the cache).
    bypass_bytes,
    /// Extents written into the cache.
    stored_extents,
    /// Payload bytes of those extents.
    stored_bytes,
    /// Extents found bad (checksum, truncated, bad header, unreadable) and deleted.
    corrupt_extents,
    /// Extents listed and gone when read (evicted or cleared meanwhile).
    missing_extents,
    /// Writes into the cache that failed (ENOSPC, EACCES, EIO, ...).
    write_errors,
    /// Validations that found the origin changed (a new version started).
    stale_versions,
    /// `current` or `meta` files that could not be read (torn, garbage).
    broken_metadata,
    /// Extents deleted by eviction.
    evicted_extents,
    /// Bytes on disk of those extents.
    evicted_bytes,
    /// Temporary files of dead or stalled writers removed.
    temp_files_removed,
    /// Files opened whose version could not be told apart from a rewrite (modified
    /// within the last second at their origin, or without validators): read from the
    /// origin, nothing of them stored or served from the cache.
    uncacheable_opens,
    /// Things found where the cache keeps its own files that were not what it keeps
    /// there (symbolic links, FIFOs, sockets, devices, other users' files, files
    /// writable by others): never followed nor opened, removed by name (never what a
    /// link points to), and their bytes read from the origin.
    unsafe_files,
}

impl CacheStats {
    /// Whether every counter is zero.
    pub fn is_zero(&self) -> bool {
        *self == CacheStats::default()
    }

    /// The counters as a JSON object (names as [`CacheStats::pairs`]).
    pub(crate) fn to_json(self) -> Value {
        Value::Object(
            self.pairs()
                .into_iter()
                .map(|(name, value)| (name.to_string(), json!(value)))
                .collect::<Map<String, Value>>(),
        )
    }

    /// The counters of a JSON object; unknown names are left out (a later format may
    /// count more), a value that is not a whole number makes it `None`.
    pub(crate) fn from_json(value: &Value) -> Option<CacheStats> {
        let mut stats = CacheStats::default();
        for (name, value) in value.as_object()? {
            stats.set(name, value.as_u64()?);
        }
        Some(stats)
    }
}

// What the caching byte source counts; until it lands only the tests call these.
#[cfg_attr(not(test), allow(dead_code))]
impl CacheCounters {
    /// One read call of `ranges` ranges (`vectored`: many at once).
    pub(crate) fn request(&self, vectored: bool, ranges: u64) {
        Self::bump(&self.requests, 1);
        if vectored {
            Self::bump(&self.vector_requests, 1);
        }
        Self::bump(&self.ranges, ranges);
    }

    /// A range of `bytes` read wholly from the cache.
    pub(crate) fn hit(&self, bytes: u64) {
        Self::bump(&self.hits, 1);
        Self::bump(&self.bytes_from_cache, bytes);
    }

    /// A range read partly from the cache (`cached` bytes), partly from the origin
    /// (`fetched` bytes).
    pub(crate) fn partial_hit(&self, cached: u64, fetched: u64) {
        Self::bump(&self.partial_hits, 1);
        Self::bump(&self.bytes_from_cache, cached);
        Self::bump(&self.bytes_from_origin, fetched);
    }

    /// A range of `bytes` read wholly from the origin.
    pub(crate) fn miss(&self, bytes: u64) {
        Self::bump(&self.misses, 1);
        Self::bump(&self.bytes_from_origin, bytes);
    }

    /// One request to the origin for data.
    pub(crate) fn origin_request(&self) {
        Self::bump(&self.origin_requests, 1);
    }

    /// One request to the origin that validated a version, reading `bytes`.
    pub(crate) fn validation(&self, bytes: u64) {
        Self::bump(&self.validation_requests, 1);
        Self::bump(&self.validation_bytes, bytes);
    }

    /// A validation found the origin changed.
    pub(crate) fn stale(&self) {
        Self::bump(&self.stale_versions, 1);
    }

    /// `bytes` read from the origin and not stored.
    pub(crate) fn bypass(&self, bytes: u64) {
        Self::bump(&self.bypass_bytes, bytes);
    }

    /// A file opened whose version cannot be told apart from a rewrite: not cached.
    pub(crate) fn uncacheable(&self) {
        Self::bump(&self.uncacheable_opens, 1);
    }
}

impl CacheCounters {
    fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Relaxed);
    }

    /// An extent of `bytes` payload bytes written.
    pub(super) fn stored(&self, bytes: u64) {
        Self::bump(&self.stored_extents, 1);
        Self::bump(&self.stored_bytes, bytes);
    }

    /// An extent found bad and deleted.
    pub(super) fn corrupt(&self) {
        Self::bump(&self.corrupt_extents, 1);
    }

    /// An extent listed and gone.
    pub(super) fn missing(&self) {
        Self::bump(&self.missing_extents, 1);
    }

    /// A failed write into the cache.
    pub(crate) fn write_error(&self) {
        Self::bump(&self.write_errors, 1);
    }

    /// A `current` or `meta` file that could not be read.
    pub(super) fn broken_metadata(&self) {
        Self::bump(&self.broken_metadata, 1);
    }

    /// Extents deleted by eviction, and their bytes on disk.
    pub(super) fn evicted(&self, extents: u64, bytes: u64) {
        Self::bump(&self.evicted_extents, extents);
        Self::bump(&self.evicted_bytes, bytes);
    }

    /// Temporary files of dead or stalled writers removed.
    pub(super) fn temp_files_removed(&self, files: u64) {
        Self::bump(&self.temp_files_removed, files);
    }

    /// An unsafe thing found (and removed, unless only looked at).
    pub(super) fn unsafe_file(&self) {
        Self::bump(&self.unsafe_files, 1);
    }
}

/// The counters the stats file `stats/<name>` holds, or `None` when it cannot be read
/// as one (a link or special file there is handled as unsafe).
pub(super) fn read_file(root: &Root, name: &str) -> Option<CacheStats> {
    let text = root.read_small(&format!("{STATS_DIR}/{name}")).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    CacheStats::from_json(value.get("counters")?)
}

/// Writes `stats` to `stats/<name>` (a temporary file renamed over it).
pub(super) fn write_file(root: &Root, name: &str, stats: &CacheStats) -> std::io::Result<()> {
    let text = json!({
        "host": sys::host_name(),
        "pid": std::process::id(),
        "updated": sys::unix_seconds(std::time::SystemTime::now()),
        "counters": stats.to_json(),
    })
    .to_string();
    root.replace_file(&format!("{STATS_DIR}/{name}"), text.as_bytes())
}

/// The counters of every stats file of `root`, summed, and how many processes they
/// are of (not `total`). `live`: the stores of this process that use this cache, by
/// their stats files' names, with their counters now: counted instead of their files
/// (which hold what they counted when last written).
pub(super) fn sum(root: &Root, live: &[(String, CacheStats)]) -> (CacheStats, u64) {
    let mut total = CacheStats::default();
    let mut processes = 0;
    for (name, _) in root.files_in(STATS_DIR) {
        if live.iter().any(|(own, _)| *own == name) {
            continue;
        }
        if let Some(stats) = read_file(root, &name) {
            total.add(&stats);
            if name != layout::TOTAL_STATS {
                processes += 1;
            }
        }
    }
    for (_, stats) in live {
        if !stats.is_zero() {
            total.add(stats);
            processes += 1;
        }
    }
    (total, processes)
}

/// Adds `extra` (the counts of a purge no store made) into `stats/total`. Under the
/// purge lock.
pub(super) fn add_to_total(root: &Root, extra: &CacheStats) {
    if extra.is_zero() {
        return;
    }
    let mut total = read_file(root, layout::TOTAL_STATS).unwrap_or_default();
    total.add(extra);
    let _ = write_file(root, layout::TOTAL_STATS, &total);
}

/// Adds the stats files of finished processes into `stats/total` (and `extra`), then
/// deletes them. Files of another host count as finished when not updated for a day.
/// Under the purge lock. Returns the files compacted.
pub(super) fn compact(root: &Root, extra: &CacheStats) -> u64 {
    let mut total = read_file(root, layout::TOTAL_STATS).unwrap_or_default();
    let mut done = Vec::new();
    for (name, info) in root.files_in(STATS_DIR) {
        let Some(writer) = Writer::from_name(&name, "stats") else {
            continue;
        };
        let finished = writer.is_dead()
            || (writer.host != sys::host_name()
                && layout::older_than(info.modified, std::time::Duration::from_secs(86_400)));
        if !finished {
            continue;
        }
        if let Some(stats) = read_file(root, &name) {
            total.add(&stats);
        }
        done.push(info.rel);
    }
    if done.is_empty() && extra.is_zero() {
        return 0;
    }
    total.add(extra);
    if write_file(root, layout::TOTAL_STATS, &total).is_err() {
        return 0;
    }
    for rel in &done {
        let _ = root.unlink(rel);
    }
    done.len() as u64
}
