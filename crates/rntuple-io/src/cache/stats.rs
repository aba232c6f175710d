//! What a cache did, counted in JCache's and XCache's terms, per process and summed.
//!
//! A store counts in memory ([`CacheCounters`]) and writes its cumulative counters to
//! its own file `stats/<host>.<pid>.<token>.stats` (a temporary file renamed over it);
//! no process rewrites another's file. A purge adds the files of finished processes
//! into `stats/total` and deletes them, under the purge lock.

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
