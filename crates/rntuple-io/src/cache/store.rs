//! The store: one per cache directory and process, shared by every cached source that
//! reads through it. A URL's entry ([`UrlEntry`]) knows its current version; a
//! [`Version`] lists its extents, reads and verifies them, and stores new ones.

use super::extent::{self, Fault, OpenExtent};
use super::layout::{
    self, Access, Current, MetaState, Root, CURRENT_FILE, EXTENTS_DIR, META_FILE, URL_FILE,
};
use super::meta::identity_hex;
pub(crate) use super::meta::VersionMeta;
use super::purge::{self, PurgeReport};
use super::stats::{CacheCounters, CacheStats};
use super::stats_files;
use super::sys;
use super::url::normalize_url;
use super::{low_mark, CacheConfig};
use crate::dirfd::{file_id, refusal};
use crate::error::{Error, Result};
use crate::{redact_url, ByteRange};
use std::cell::RefCell;
use std::fs;
use std::io;
#[cfg(test)]
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::time::SystemTime;

/// A directory by its device and inode.
type DirId = (u64, u64);

/// The stores open in this process, by the device and inode of `rntuple-cache-v1/`.
static REGISTRY: Mutex<Vec<(DirId, Weak<CacheStore>)>> = Mutex::new(Vec::new());

/// A store writes its counters to its stats file at most this often while it is used
/// (and when it is dropped), so that other processes see them.
const FLUSH_EVERY_MS: u64 = 5_000;

/// After ENOSPC (or EDQUOT) a store writes nothing for this long.
const PAUSE_WHEN_FULL_MS: u64 = 60_000;
/// A read touches its extent (its mtime: the last use) at most this often.
const TOUCH_EVERY_MS: u64 = 60_000;
/// Extent files a version keeps open (least recently used closed first).
const OPEN_EXTENTS: usize = 16;
/// `limit` when there is none.
const NO_LIMIT: u64 = u64::MAX;

/// The cache of one directory in this process.
#[derive(Debug)]
pub(crate) struct CacheStore {
    /// This store, for the entries and versions it hands out.
    me: Weak<CacheStore>,
    /// The cache's handle; its counters are this store's.
    root: Root,
    /// The canonical cache directory.
    #[cfg(test)]
    dir: PathBuf,
    /// The smallest `max_bytes` any opener asked for ([`NO_LIMIT`]: none).
    limit: AtomicU64,
    /// This store's stats file in `stats/`.
    stats_name: String,
    stats_written: AtomicBool,
    /// When the stats file was last written (`sys::now_ms`).
    flushed_at: AtomicU64,
    /// The directory's size as this process believes it: a scan, plus what it stored.
    estimate: AtomicU64,
    scanned: OnceLock<()>,
    /// Bytes this store wrote since the estimate was last scanned.
    since_scan: AtomicU64,
    /// No writes until this time (`sys::now_ms`), after ENOSPC.
    paused_until: AtomicU64,
    /// A purge thread of this store runs.
    purging: AtomicBool,
    /// Tests: an errno that every extent write fails with, after writing half its bytes.
    #[cfg(test)]
    pub(super) fail_writes: std::sync::atomic::AtomicI32,
}

impl CacheStore {
    /// The store of `config.dir`: the one this process has open for that directory (its
    /// size limit lowered to `config.max_bytes` if that is smaller), or a new one. The
    /// directory is created (mode 0700) if missing, and `rntuple-cache-v1/` in it. A
    /// directory of another user's, or one that others may write, is refused (an
    /// [`Error::Io`] of kind `PermissionDenied` saying why: see `layout::is_refusal`).
    pub(crate) fn open(config: &CacheConfig) -> Result<Arc<CacheStore>> {
        let root = Root::open(&config.dir, Access::Create)?;
        let id = root.id().ok_or_else(|| Error::Write {
            what: format!("the cache directory {}", config.dir.display()),
            source: io::Error::from(io::ErrorKind::NotFound),
        })?;
        let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        registry.retain(|(_, store)| store.strong_count() > 0);
        let open = registry
            .iter()
            .find(|(d, _)| *d == id)
            .and_then(|(_, store)| store.upgrade());
        if let Some(store) = open {
            if let Some(max) = config.max_bytes {
                store.limit.fetch_min(max, Ordering::Relaxed);
            }
            // What opening found (links removed) is the store's to count.
            store.counters().add(&root.counters().snapshot());
            return Ok(store);
        }
        let store = Arc::new_cyclic(|me| CacheStore {
            me: me.clone(),
            root,
            #[cfg(test)]
            dir: fs::canonicalize(&config.dir).unwrap_or_else(|_| config.dir.clone()),
            limit: AtomicU64::new(config.max_bytes.unwrap_or(NO_LIMIT)),
            stats_name: sys::own_name("stats"),
            stats_written: AtomicBool::new(false),
            flushed_at: AtomicU64::new(sys::now_ms()),
            estimate: AtomicU64::new(0),
            scanned: OnceLock::new(),
            since_scan: AtomicU64::new(0),
            paused_until: AtomicU64::new(0),
            purging: AtomicBool::new(false),
            #[cfg(test)]
            fail_writes: std::sync::atomic::AtomicI32::new(0),
        });
        registry.push((id, Arc::downgrade(&store)));
        Ok(store)
    }

    #[cfg(test)]
    /// The canonical cache directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry of `url` (the full URL as the user gave it), its directory created.
    pub(crate) fn url_entry(&self, url: &str) -> Result<UrlEntry> {
        let key = identity_hex(xxhash_rust::xxh3::xxh3_128(normalize_url(url).as_bytes()));
        let dir = layout::entry_rel(&key);
        self.root.dir(&dir, true).map_err(|source| Error::Write {
            what: format!("the cache entry {}", self.root.path().join(&dir).display()),
            source,
        })?;
        let store = self
            .me
            .upgrade()
            .ok_or_else(|| Error::InvalidArgument("the cache store is being closed".to_string()))?;
        let entry = UrlEntry {
            store,
            dir,
            key,
            url_text: format!("{}\n", redact_url(url)),
        };
        entry.write_url();
        Ok(entry)
    }

    /// This store's counters.
    pub(crate) fn counters(&self) -> &CacheCounters {
        self.root.counters()
    }

    /// Writes this process's cumulative counters to its own stats file (nothing if it
    /// never counted anything). Best effort.
    pub(crate) fn flush_stats(&self) {
        let stats = self.counters().snapshot();
        self.flushed_at.store(sys::now_ms(), Ordering::Relaxed);
        if stats.is_zero() && !self.stats_written.load(Ordering::Relaxed) {
            return;
        }
        if stats_files::write_file(&self.root, &self.stats_name, &stats).is_ok() {
            self.stats_written.store(true, Ordering::Relaxed);
        }
    }

    /// [`CacheStore::flush_stats`] if the file was last written more than
    /// [`FLUSH_EVERY_MS`] ago.
    fn flush_if_due(&self) {
        let last = self.flushed_at.load(Ordering::Relaxed);
        let now = sys::now_ms();
        if now.saturating_sub(last) >= FLUSH_EVERY_MS
            && self
                .flushed_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.flush_stats();
        }
    }

    /// The size limit, if any.
    fn limit(&self) -> Option<u64> {
        let limit = self.limit.load(Ordering::Relaxed);
        (limit != NO_LIMIT).then_some(limit)
    }

    /// Whether writes are paused after ENOSPC.
    fn paused(&self) -> bool {
        sys::now_ms() < self.paused_until.load(Ordering::Relaxed)
    }

    /// The size estimate, from a scan the first time it is needed.
    fn estimate(&self) -> u64 {
        self.scanned.get_or_init(|| {
            self.estimate
                .fetch_add(self.root.tree_bytes(), Ordering::Relaxed);
        });
        self.estimate.load(Ordering::Relaxed)
    }

    /// Counts `bytes` this store wrote into the estimate. Other processes write too:
    /// after every tenth of the limit written, the directory is scanned again.
    fn wrote(&self, bytes: u64) {
        self.estimate.fetch_add(bytes, Ordering::Relaxed);
        let since = self.since_scan.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if self.limit().is_some_and(|limit| since > limit / 10) {
            self.since_scan.store(0, Ordering::Relaxed);
            self.estimate
                .store(self.root.tree_bytes(), Ordering::Relaxed);
        }
    }

    /// Whether the size estimate is over the limit.
    fn over_limit(&self) -> bool {
        self.limit().is_some_and(|limit| self.estimate() > limit)
    }

    /// Starts a purge in the background when the estimate is over the limit (or `full`:
    /// the disk was full), unless this store purges already or another process holds
    /// the purge lock (that one purges).
    fn purge_if_needed(&self, full: bool) {
        if !(full || self.over_limit()) || self.purging.swap(true, Ordering::AcqRel) {
            return;
        }
        let lock = match self.root.lock_purge(false) {
            Ok(Some(lock)) => lock,
            _ => {
                self.purging.store(false, Ordering::Release);
                return;
            }
        };
        let Some(me) = self.me.upgrade() else {
            self.purging.store(false, Ordering::Release);
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("rntuple-cache-purge".to_string())
            .spawn(move || {
                me.purge_locked(lock, full);
                me.purging.store(false, Ordering::Release);
                // Stores while the lock was let go.
                me.purge_if_needed(false);
            });
        if spawned.is_err() {
            self.purging.store(false, Ordering::Release);
        }
    }

    #[cfg(test)]
    /// Purges now if the purge lock is free: least recently used extents down to 90%
    /// of the limit (after ENOSPC, `full`: also down to 90% of what is there), and the
    /// cleanups. `None` when another process holds the lock.
    pub(crate) fn purge_now(&self, full: bool) -> Option<PurgeReport> {
        let lock = self.root.lock_purge(false).ok().flatten()?;
        Some(self.purge_locked(lock, full))
    }

    /// Purges holding the purge lock `lock`, again while what was stored meanwhile
    /// keeps the estimate over the limit (and an eviction can bring it down).
    fn purge_locked(&self, lock: fs::File, full: bool) -> PurgeReport {
        let limit = self.limit();
        let target = move |total: u64| match (limit.map(low_mark), full) {
            (Some(low), true) => Some(low.min(low_mark(total))),
            (Some(low), false) => Some(low),
            (None, true) => Some(low_mark(total)),
            (None, false) => None,
        };
        loop {
            let before = self.estimate.load(Ordering::Relaxed);
            let report = purge::run(&self.root, &target, Some(self.counters()));
            // What was stored while the purge ran stays counted.
            let added = self.estimate.load(Ordering::Relaxed).saturating_sub(before);
            self.estimate
                .store(report.after_bytes.saturating_add(added), Ordering::Relaxed);
            let _ = self.scanned.set(());
            self.since_scan.store(0, Ordering::Relaxed);
            if !self.over_limit() || report.evicted_extents == 0 {
                drop(lock);
                return report;
            }
        }
    }
}

impl Drop for CacheStore {
    fn drop(&mut self) {
        self.flush_stats();
    }
}

/// The stores of this process open on the cache whose `rntuple-cache-v1/` is `id`
/// (device, inode): each one's stats file name and counters now.
pub(super) fn live_stats(id: DirId) -> Vec<(String, CacheStats)> {
    let stores: Vec<Arc<CacheStore>> = REGISTRY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(d, _)| *d == id)
        .filter_map(|(_, store)| store.upgrade())
        .collect();
    // Dropped outside the registry's lock (a last reference flushes its stats).
    stores
        .iter()
        .map(|store| (store.stats_name.clone(), store.counters().snapshot()))
        .collect()
}

/// Whether a write failed because the disk (or the quota) is full.
fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

/// The cached versions of one URL.
#[derive(Debug)]
pub(crate) struct UrlEntry {
    store: Arc<CacheStore>,
    /// The entry's directory, relative to `rntuple-cache-v1/`.
    dir: String,
    /// The `url` file's text (the redacted URL).
    url_text: String,
    /// The normalized URL's xxh3-128, in hex.
    key: String,
}

impl UrlEntry {
    #[cfg(test)]
    /// The key of this entry (the xxh3-128 of the normalized URL, in hex).
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Writes the `url` file if it is missing (for `cache ls` only: best effort).
    fn write_url(&self) {
        let path = format!("{}/{URL_FILE}", self.dir);
        if self
            .store
            .root
            .stat(&path)
            .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
        {
            let _ = self.store.root.write_new(&path, self.url_text.as_bytes());
        }
    }

    /// The directory of the version `identity`, relative to `rntuple-cache-v1/`.
    fn version_dir(&self, identity: u128) -> String {
        format!("{}/{}", self.dir, identity_hex(identity))
    }

    /// The version `current` names, with a readable meta of that identity. `None` when
    /// there is none; a `current` or `meta` that cannot be read is counted
    /// (`broken_metadata`) and, for a meta, its version removed.
    pub(crate) fn current(&self) -> Option<Version> {
        let identity = match layout::read_current(&self.store.root, &self.dir) {
            Current::Is(identity) => identity,
            Current::Missing => return None,
            Current::Broken => {
                self.store.counters().broken_metadata();
                return None;
            }
        };
        let dir = self.version_dir(identity);
        match layout::read_meta(&self.store.root, &dir, identity) {
            MetaState::Valid(meta) => Some(Version::new(self.store.clone(), &dir, *meta)),
            // Cleared or purged, or being installed by another process.
            MetaState::Missing => None,
            MetaState::Broken => {
                self.store.counters().broken_metadata();
                self.trash_version(identity);
                None
            }
        }
    }

    /// Makes `meta.identity` the current version: its directory created (or reused, if
    /// another process made it), its meta written once, then `current` replaced to name
    /// it. The version `current` named before, if another, is moved to the trash and
    /// deleted; readers that hold its extents open keep reading them.
    pub(crate) fn install(&self, meta: VersionMeta) -> Result<Version> {
        let root = &self.store.root;
        let hex = identity_hex(meta.identity);
        let dir = self.version_dir(meta.identity);
        let failed = |path: &str, source| Error::Write {
            what: format!("the cache version {}", root.path().join(path).display()),
            source,
        };
        root.dir(&format!("{dir}/{EXTENTS_DIR}"), true)
            .map_err(|e| failed(&dir, e))?;
        // A purge or clear may have removed the entry since it was opened.
        self.write_url();
        let meta_path = format!("{dir}/{META_FILE}");
        match layout::read_meta(root, &dir, meta.identity) {
            MetaState::Valid(_) => {}
            state => {
                if matches!(state, MetaState::Broken) {
                    self.store.counters().broken_metadata();
                    let _ = root.unlink(&meta_path);
                }
                root.write_new(&meta_path, meta.to_json().as_bytes())
                    .map_err(|e| failed(&meta_path, e))?;
            }
        }
        let before = layout::read_current(root, &self.dir);
        let current = format!("{}/{CURRENT_FILE}", self.dir);
        root.replace_file(&current, format!("{hex}\n").as_bytes())
            .map_err(|e| failed(&current, e))?;
        if let Current::Is(old) = before {
            if old != meta.identity {
                self.trash_version(old);
            }
        }
        Ok(Version::new(self.store.clone(), &dir, meta))
    }

    /// Moves the version directory of `identity` to the trash and deletes it.
    fn trash_version(&self, identity: u128) {
        let label = format!("{}.{}", self.key, identity_hex(identity));
        self.store
            .root
            .trash_and_remove(&self.version_dir(identity), &label);
    }
}

/// A part of a range: in one cached extent, or not cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Bytes that one extent holds.
    Cached {
        /// The bytes.
        range: ByteRange,
    },
    /// Bytes no extent holds.
    Missing {
        /// The bytes.
        range: ByteRange,
    },
}

/// One version of a URL's file in the cache: its meta and its extents. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    inner: Arc<VersionInner>,
}

#[derive(Debug)]
struct VersionInner {
    store: Arc<CacheStore>,
    /// `<entry>/<identity>/x`, relative to `rntuple-cache-v1/`.
    extents_dir: String,
    meta: VersionMeta,
    map: RwLock<ExtentMap>,
    open: Mutex<OpenExtents>,
}

/// An extent the version knows of.
#[derive(Debug)]
struct Slot {
    range: ByteRange,
    /// When this process last touched the file (`sys::now_ms`; `u64::MAX`: never).
    touched: AtomicU64,
}

impl Slot {
    fn end(&self) -> u64 {
        self.range.offset + self.range.len
    }
}

/// The extents of a version, sorted by offset, with the one reaching furthest among
/// each prefix (so the extent covering a position is one binary search away).
#[derive(Debug, Default)]
struct ExtentMap {
    slots: Vec<Arc<Slot>>,
    /// `furthest[i]`: the index of the slot with the largest end among `slots[..=i]`.
    furthest: Vec<usize>,
}

impl ExtentMap {
    /// The map of `ranges`, keeping the slots `old` has for them.
    fn build(mut ranges: Vec<ByteRange>, old: &ExtentMap) -> ExtentMap {
        ranges.sort_by_key(|r| (r.offset, r.len));
        ranges.dedup();
        let slots = ranges
            .into_iter()
            .map(|range| {
                old.find(range).unwrap_or_else(|| {
                    Arc::new(Slot {
                        range,
                        touched: AtomicU64::new(u64::MAX),
                    })
                })
            })
            .collect();
        let mut map = ExtentMap {
            slots,
            furthest: Vec::new(),
        };
        map.index();
        map
    }

    fn position(&self, range: ByteRange) -> std::result::Result<usize, usize> {
        self.slots
            .binary_search_by_key(&(range.offset, range.len), |s| {
                (s.range.offset, s.range.len)
            })
    }

    fn find(&self, range: ByteRange) -> Option<Arc<Slot>> {
        self.position(range).ok().map(|i| self.slots[i].clone())
    }

    fn index(&mut self) {
        self.furthest.clear();
        let mut best = 0;
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.end() > self.slots[best].end() {
                best = i;
            }
            self.furthest.push(best);
        }
    }

    fn insert(&mut self, range: ByteRange) {
        if let Err(at) = self.position(range) {
            let slot = Arc::new(Slot {
                range,
                touched: AtomicU64::new(u64::MAX),
            });
            self.slots.insert(at, slot);
            self.index();
        }
    }

    fn remove(&mut self, range: ByteRange) {
        if let Ok(at) = self.position(range) {
            self.slots.remove(at);
            self.index();
        }
    }

    /// The extent holding byte `pos` that reaches furthest, if any.
    fn covering(&self, pos: u64) -> Option<&Arc<Slot>> {
        let n = self.slots.partition_point(|s| s.range.offset <= pos);
        let best = &self.slots[*self.furthest.get(n.checked_sub(1)?)?];
        (best.end() > pos).then_some(best)
    }

    /// The first extent start after `pos`.
    fn next_start_after(&self, pos: u64) -> Option<u64> {
        let n = self.slots.partition_point(|s| s.range.offset <= pos);
        self.slots.get(n).map(|s| s.range.offset)
    }
}

/// The extent files a version holds open, least recently used first out.
#[derive(Debug, Default)]
struct OpenExtents {
    files: Vec<(ByteRange, Arc<OpenExtent>, u64)>,
    tick: u64,
}

thread_local! {
    /// The buffer partly read blocks are read into, kept per thread.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// What became of an extent write.
enum Written {
    /// It is in the cache.
    Published,
    /// Another writer's file of the same extent was there first.
    Existed,
    /// The version's directory is gone (replaced, purged or cleared).
    VersionGone,
}

impl Version {
    fn new(store: Arc<CacheStore>, dir: &str, meta: VersionMeta) -> Version {
        let version = Version {
            inner: Arc::new(VersionInner {
                store,
                extents_dir: format!("{dir}/{EXTENTS_DIR}"),
                meta,
                map: RwLock::new(ExtentMap::default()),
                open: Mutex::new(OpenExtents::default()),
            }),
        };
        version.refresh();
        version
    }

    /// The version's meta.
    pub(crate) fn meta(&self) -> &VersionMeta {
        &self.inner.meta
    }

    /// Lists the extent directory again (other processes add extents).
    pub(crate) fn refresh(&self) {
        let listed = self
            .inner
            .store
            .root
            .dir(&self.inner.extents_dir, false)
            .and_then(|dir| dir.list());
        let ranges: Vec<ByteRange> = match listed {
            Ok(entries) => entries
                .into_iter()
                .filter_map(|(name, _)| extent::parse_name(name.to_str()?))
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound || refusal(&e).is_some() => Vec::new(),
            // Keep what is known (too many open files, ...).
            Err(_) => return,
        };
        let mut map = self
            .inner
            .map
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        *map = ExtentMap::build(ranges, &map);
    }

    #[cfg(test)]
    /// The extents known, in order.
    pub(crate) fn extents(&self) -> Vec<ByteRange> {
        let map = self
            .inner
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        map.slots.iter().map(|s| s.range).collect()
    }

    /// The slot of the extent holding all of `range` (not empty).
    fn slot_containing(&self, range: ByteRange) -> Option<Arc<Slot>> {
        let end = range.offset.checked_add(range.len)?;
        if range.len == 0 {
            return None;
        }
        let map = self
            .inner
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        map.covering(range.offset)
            .filter(|slot| slot.end() >= end)
            .cloned()
    }

    /// The cached extent holding all of `range`, if any (`None` for an empty range).
    pub(crate) fn extent_containing(&self, range: ByteRange) -> Option<ByteRange> {
        self.slot_containing(range).map(|slot| slot.range)
    }

    /// `range` cut into pieces, in order: [`Piece::Cached`] (each inside one extent)
    /// and [`Piece::Missing`], as few as can be (at each position the extent that
    /// reaches furthest).
    pub(crate) fn pieces(&self, range: ByteRange) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let end = range.offset.saturating_add(range.len);
        let map = self
            .inner
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut pos = range.offset;
        while pos < end {
            let (next, cached) = match map.covering(pos) {
                Some(slot) => (slot.end().min(end), true),
                None => (map.next_start_after(pos).map_or(end, |s| s.min(end)), false),
            };
            let part = ByteRange {
                offset: pos,
                len: next - pos,
            };
            pieces.push(if cached {
                Piece::Cached { range: part }
            } else {
                Piece::Missing { range: part }
            });
            pos = next;
        }
        pieces
    }

    /// The extent file of `range`, relative to `rntuple-cache-v1/`.
    fn extent_path(&self, range: ByteRange) -> String {
        format!("{}/{}", self.inner.extents_dir, extent::file_name(range))
    }

    /// The open file of extent `range`, opened (and its header checked) if needed.
    fn open_extent(&self, range: ByteRange) -> std::result::Result<Arc<OpenExtent>, Fault> {
        let lock = || {
            self.inner
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        {
            let mut open = lock();
            open.tick += 1;
            let tick = open.tick;
            if let Some(entry) = open.files.iter_mut().find(|(r, _, _)| *r == range) {
                entry.2 = tick;
                return Ok(entry.1.clone());
            }
        }
        let file = match self.inner.store.root.open_file(&self.extent_path(range)) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Fault::Missing),
            // A link or special file: handled (noted, counted and removed) by the root.
            Err(e) if refusal(&e).is_some() => return Err(Fault::Unsafe),
            Err(e) => return Err(Fault::Unreadable(e)),
        };
        let file = Arc::new(OpenExtent::from_file(
            file,
            self.inner.meta.identity,
            range,
        )?);
        let mut open = lock();
        if let Some((_, other, _)) = open.files.iter().find(|(r, _, _)| *r == range) {
            return Ok(other.clone());
        }
        if open.files.len() >= OPEN_EXTENTS {
            if let Some(oldest) = (0..open.files.len()).min_by_key(|&i| open.files[i].2) {
                open.files.swap_remove(oldest);
            }
        }
        let tick = open.tick;
        open.files.push((range, file.clone(), tick));
        Ok(file)
    }

    /// Reads `range`, which one extent must hold, into `out` (exactly its length),
    /// verifying the checksums of the blocks it overlaps. False when it cannot: no such
    /// extent, or its file is missing, short, corrupt or unreadable (then the file is
    /// deleted when it is bad, the extent forgotten and the fault counted; the caller
    /// reads the origin). Never hands out an unverified byte (`out` is zeroed then).
    pub(crate) fn read_into(&self, range: ByteRange, out: &mut [u8]) -> bool {
        if out.len() as u64 != range.len {
            return false;
        }
        if range.len == 0 {
            return true;
        }
        let Some(slot) = self.slot_containing(range) else {
            return false;
        };
        let file = match self.open_extent(slot.range) {
            Ok(file) => file,
            Err(fault) => {
                self.fault(slot.range, &fault, None);
                return false;
            }
        };
        let read = SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => file.read(range, out, &mut scratch),
            Err(_) => file.read(range, out, &mut Vec::new()),
        });
        self.inner.store.flush_if_due();
        match read {
            Ok(()) => {
                self.touch(&slot, &file);
                true
            }
            Err(fault) => {
                self.fault(slot.range, &fault, Some(&file));
                false
            }
        }
    }

    /// Marks the extent used now (its mtime), at most once a minute.
    fn touch(&self, slot: &Slot, file: &OpenExtent) {
        let now = sys::now_ms();
        let last = slot.touched.load(Ordering::Relaxed);
        let due = last == u64::MAX || now.saturating_sub(last) >= TOUCH_EVERY_MS;
        if due
            && slot
                .touched
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // Fails on a file of another user (a shared cache): its age stays.
            let _ = file.file().set_modified(SystemTime::now());
        }
    }

    /// Counts a fault of extent `range`, deletes its file when bad (the one `file` has
    /// open, if given: not a good copy another process stored since), and forgets it.
    fn fault(&self, range: ByteRange, fault: &Fault, file: Option<&OpenExtent>) {
        let store = &self.inner.store;
        match fault {
            Fault::Missing => store.counters().missing(),
            // Counted and removed when it was found.
            Fault::Unsafe => {}
            Fault::Corrupt(_) | Fault::Unreadable(_) => {
                store.counters().corrupt();
                let path = self.extent_path(range);
                let same = match file {
                    Some(file) => match (file_id(file.file()), store.root.stat(&path)) {
                        (Ok(a), Ok(b)) => a == b.id,
                        _ => false,
                    },
                    None => true,
                };
                if same {
                    let _ = store.root.unlink(&path);
                }
            }
        }
        self.forget(range);
    }

    /// Drops extent `range` from the map and closes its file.
    fn forget(&self, range: ByteRange) {
        self.inner
            .map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(range);
        self.inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .files
            .retain(|(r, _, _)| *r != range);
    }

    /// Stores `data`, the bytes at `offset`, as an extent. Best effort, never fails:
    /// a write error (ENOSPC, EACCES, EIO, ...) is counted (`write_errors`,
    /// `bypass_bytes`) and swallowed; after ENOSPC the store writes nothing for 60 s and
    /// purges. An extent already held whole, or larger than the cache's limit, is not
    /// stored (the latter counted as bypass).
    pub(crate) fn store(&self, offset: u64, data: &[u8]) {
        let store = &self.inner.store;
        let len = data.len() as u64;
        if len == 0 {
            return;
        }
        let range = ByteRange { offset, len };
        store.flush_if_due();
        if offset.checked_add(len).is_none() {
            store.counters().bypass(len);
            return;
        }
        if self.extent_containing(range).is_some() {
            return;
        }
        let file_len = extent::file_len(len);
        if store.paused() || store.limit().is_some_and(|limit| file_len > limit) {
            store.counters().bypass(len);
            return;
        }
        if store.limit().is_some() {
            // The first write scans the directory: the estimate's base.
            store.estimate();
        }
        match self.write_extent(range, data) {
            Ok(Written::Published) => {
                store.counters().stored(len);
                store.wrote(file_len);
                self.inner
                    .map
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(range);
                store.purge_if_needed(false);
            }
            Ok(Written::Existed) => self
                .inner
                .map
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(range),
            Ok(Written::VersionGone) => store.counters().bypass(len),
            Err(e) => {
                store.counters().write_error();
                store.counters().bypass(len);
                if is_full(&e) {
                    store
                        .paused_until
                        .store(sys::now_ms() + PAUSE_WHEN_FULL_MS, Ordering::Relaxed);
                    store.purge_if_needed(true);
                }
            }
        }
    }

    /// Writes the extent file into `tmp/` and publishes it.
    fn write_extent(&self, range: ByteRange, data: &[u8]) -> io::Result<Written> {
        let root = &self.inner.store.root;
        let (tmp, temp) = root.write_temp(|file| self.write_payload(file, range, data))?;
        match root.publish_new(&tmp, &temp, &self.extent_path(range)) {
            Ok(true) => Ok(Written::Published),
            Ok(false) => Ok(Written::Existed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Written::VersionGone),
            Err(e) => Err(e),
        }
    }

    fn write_payload(&self, file: &mut fs::File, range: ByteRange, data: &[u8]) -> io::Result<()> {
        #[cfg(test)]
        {
            let errno = self.inner.store.fail_writes.load(Ordering::Relaxed);
            if errno != 0 {
                use std::io::Write;
                file.write_all(&data[..data.len() / 2])?;
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        extent::write(file, self.inner.meta.identity, range.offset, data)
    }
}
