//! A dataset of objects (ROOT's S3 layout) read through the cache of remote reads: each
//! object is cached as a file of its own, under its URL (`DATASET/<id>`) and its version.
//!
//! An object's version is its ETag, which S3 derives from its content, so that the
//! rules of the caching byte source (`io/cached.rs`) hold per object: the dataset is
//! listed when it is opened (one request per thousand objects, beside the anchor's),
//! which gives every object's current ETag and size; an object is served from the cache
//! only under the version the listing names; what the cache lacks is fetched on the
//! condition that the object still has that version (`If-Match`), so every byte stored
//! under a version came in a response of that version, and an object rewritten since
//! the listing fails the read as changed at its origin. A store that does not tell its
//! objects' versions (a local directory: nothing to cache) is read without the cache.
//!
//! `RNTUPLE_CACHE_VALIDATE=never` lists the dataset too: an object store has no one
//! identity for a dataset, so the listing is what keeps a read from mixing the objects
//! of two writes. The anchor, which names the dataset's objects, is always read from
//! the store.

use super::cache::{open_store, CacheConfig, CacheStore, Version, VersionMeta};
use super::objects::VersionedGet;
use super::{redact_url, ByteRange, IoMetricsSnapshot, ObjectDataset, ObjectFetcher};
use crate::error::{Error, RemoteKind, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A dataset's objects read through the cache (see the module documentation).
pub struct CachedObjects {
    dataset: ObjectDataset,
    store: Arc<CacheStore>,
    /// Every numbered object's size and version, as listed at opening.
    listed: HashMap<u64, (u64, String)>,
    /// The cached version of each object used so far.
    versions: Mutex<HashMap<u64, Version>>,
}

impl std::fmt::Debug for CachedObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedObjects")
            .field("dataset", &self.dataset.url())
            .field("objects", &self.listed.len())
            .finish_non_exhaustive()
    }
}

impl CachedObjects {
    /// The objects of `dataset` through the cache `config` describes, listed now; `None`
    /// when its store does not tell versions (counted as an uncacheable opening) or the
    /// cache has a fault of its own (a directory that cannot be made or written). A
    /// cache directory that others control is an error, as for files.
    pub fn open(dataset: &ObjectDataset, config: &CacheConfig) -> Result<Option<CachedObjects>> {
        let Some(store) = open_store(config)? else {
            return Ok(None);
        };
        let prefix = format!("{}/", dataset.anchor_key());
        let Some(listing) = dataset.store().list_versions(&prefix)? else {
            store.counters().uncacheable();
            return Ok(None);
        };
        store.counters().validation(0);
        let listed = listing
            .into_iter()
            .filter_map(|object| {
                let id = object.key.strip_prefix(&prefix)?;
                let canonical = !id.is_empty()
                    && id.bytes().all(|b| b.is_ascii_digit())
                    && (id == "0" || !id.starts_with('0'));
                let n: u64 = id.parse().ok().filter(|_| canonical)?;
                Some((n, (object.size, object.etag)))
            })
            .collect();
        Ok(Some(CachedObjects {
            dataset: dataset.clone(),
            store,
            listed,
            versions: Mutex::default(),
        }))
    }

    /// The URL object `n` is cached under.
    fn object_url(&self, n: u64) -> String {
        format!("{}/{n}", self.dataset.url())
    }

    /// The cached version of object `n` as listed, installed if the cache has another
    /// or none; `None` for an object the listing did not have (it is read from the
    /// store, and its absence reported there), or when the cache cannot hold it.
    fn version_of(&self, n: u64) -> Option<Version> {
        let (size, etag) = self.listed.get(&n)?;
        if let Some(version) = self.lock().get(&n) {
            return Some(version.clone());
        }
        let url = self.object_url(n);
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&size.to_le_bytes());
        hasher.update(etag.as_bytes());
        let identity = hasher.digest128();
        let Ok(entry) = self.store.url_entry(&url) else {
            self.store.counters().write_error();
            return None;
        };
        let version = match entry.current() {
            Some(version) if version.meta().identity == identity => version,
            current => {
                if current.is_some() {
                    self.store.counters().stale();
                }
                let meta = VersionMeta {
                    identity,
                    size: *size,
                    etag: Some(etag.clone()),
                    last_modified: None,
                    mtime: None,
                    probe: Vec::new(),
                    url: redact_url(&url),
                };
                match entry.install(meta) {
                    Ok(version) => version,
                    Err(_) => {
                        self.store.counters().write_error();
                        return None;
                    }
                }
            }
        };
        self.lock().insert(n, version.clone());
        Some(version)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Version>> {
        self.versions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the cache of remote reads did for this process so far.
    pub fn cache_stats(&self) -> super::cache::CacheStats {
        self.store.counters().snapshot()
    }
}

impl Drop for CachedObjects {
    fn drop(&mut self) {
        self.store.flush_stats();
    }
}

impl ObjectFetcher for CachedObjects {
    fn name(&self) -> &str {
        self.dataset.url()
    }

    fn fetch(&self, requests: &[(u64, ByteRange)]) -> Result<Vec<Vec<u8>>> {
        let counters = self.store.counters();
        counters.request(requests.len() > 1, requests.len() as u64);
        let mut out: Vec<Vec<u8>> = Vec::with_capacity(requests.len());
        // (index in `out`, the get, the version to store its bytes under).
        let mut missing: Vec<(usize, VersionedGet, Option<Version>)> = Vec::new();
        for (i, &(n, range)) in requests.iter().enumerate() {
            if range.len == 0 {
                out.push(Vec::new());
                continue;
            }
            let version = self.version_of(n);
            let mut bytes = vec![0u8; crate::error::to_usize(range.len, "a cached object read")?];
            if let Some(version) = &version {
                if version.read_into(range, &mut bytes) {
                    counters.hit(range.len);
                    out.push(bytes);
                    continue;
                }
            }
            counters.miss(range.len);
            let if_match = self.listed.get(&n).map(|(_, etag)| etag.clone());
            let get = VersionedGet {
                key: self.dataset.object_key(n),
                range: Some(range),
                if_match,
            };
            missing.push((i, get, version));
            out.push(Vec::new());
        }
        if missing.is_empty() {
            return Ok(out);
        }
        counters.origin_request();
        let gets: Vec<VersionedGet> = missing.iter().map(|(_, get, _)| get.clone()).collect();
        let fetched = self.dataset.store().get_versioned(&gets)?;
        if fetched.len() != gets.len() {
            return Err(Error::remote(
                RemoteKind::Other,
                self.dataset.url(),
                "a read of many objects returned fewer than asked",
            ));
        }
        for ((i, get, version), (bytes, _etag)) in missing.into_iter().zip(fetched) {
            // The store checked the version (If-Match): these bytes are the listed ones'.
            if let (Some(version), Some(range)) = (version, get.range) {
                version.store(range.offset, &bytes);
            }
            out[i] = bytes;
        }
        Ok(out)
    }

    fn fetch_object(&self, n: u64) -> Result<Vec<u8>> {
        match self.listed.get(&n) {
            Some(&(size, _)) => {
                let whole = ByteRange {
                    offset: 0,
                    len: size,
                };
                let mut got = self.fetch(&[(n, whole)])?;
                got.pop().ok_or_else(|| {
                    Error::remote(
                        RemoteKind::Other,
                        self.dataset.url(),
                        "an object came back empty",
                    )
                })
            }
            // Not listed: read from the store, which says what is wrong.
            None => self.dataset.fetch_object(n),
        }
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.dataset.metrics()
    }
}
