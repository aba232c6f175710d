//! The purge: least recently used extents deleted down to a target size, and what is
//! left behind by crashes and replaced versions cleaned up. Under the purge lock.

use super::layout::{
    self, Current, FileInfo, MetaState, Root, ORPHAN_GRACE, TEMP_MAX_AGE, TMP_DIR,
};
use super::stats::{CacheCounters, CacheStats};
use super::stats_files;
use super::sys::Writer;

/// What a purge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeReport {
    /// Bytes of the cache's files before.
    pub before_bytes: u64,
    /// Bytes of the cache's files after.
    pub after_bytes: u64,
    /// The size extents were deleted down to (`None`: no eviction, only cleanups).
    pub target_bytes: Option<u64>,
    /// Extents deleted, least recently used first.
    pub evicted_extents: u64,
    /// Bytes of those extents.
    pub evicted_bytes: u64,
    /// Temporary files of dead writers, or older than an hour, deleted.
    pub temp_files_removed: u64,
    /// Things in `trash/` deleted (left by an interrupted deletion).
    pub trash_removed: u64,
    /// Version directories deleted that `current` does not name (or whose meta is
    /// missing or broken), made more than 10 minutes before.
    pub orphan_versions_removed: u64,
    /// Entry directories deleted that had no version left.
    pub entries_removed: u64,
    /// Stats files of finished processes added into `stats/total`.
    pub stats_compacted: u64,
    /// Things found where the cache keeps its own that were not what it keeps there
    /// (symbolic links, special files, other users' files), one line each naming it
    /// (relative to the cache directory) and saying what it was: removed by name,
    /// never followed.
    pub unsafe_files: Vec<String>,
}

/// Whether a temporary file is left over: its writer, on this host, is dead, or it is
/// older than an hour.
pub(super) fn stale_temp(name: &str, info: &FileInfo) -> bool {
    Writer::from_name(name, "tmp").is_some_and(|w| w.is_dead())
        || layout::older_than(info.modified, TEMP_MAX_AGE)
}

/// Purges the cache at `root`; the caller holds the purge lock. `target` gives the size
/// to evict down to from the size after the cleanups (`None`: no eviction). The counts
/// go to `counters` (a store's, flushed with its stats), or else into `stats/total`.
/// Every deletion is by name relative to the cache's handles: a link is removed, never
/// followed (see `io/dirfd.rs`).
pub(super) fn run(
    root: &Root,
    target: &dyn Fn(u64) -> Option<u64>,
    counters: Option<&CacheCounters>,
) -> PurgeReport {
    let mut report = PurgeReport {
        before_bytes: root.tree_bytes(),
        ..PurgeReport::default()
    };
    for (name, info) in root.files_in(TMP_DIR) {
        if stale_temp(&name, &info) && root.unlink(&info.rel).is_ok() {
            report.temp_files_removed += 1;
        }
    }
    for name in root.trash_names() {
        if root.remove_from_trash(&name).is_ok() {
            report.trash_removed += 1;
        }
    }
    let mut extents: Vec<FileInfo> = Vec::new();
    for entry in layout::scan_entries(root) {
        let mut kept = 0;
        for version in entry.versions {
            let usable = entry.current == Current::Is(version.identity)
                && matches!(version.meta, MetaState::Valid(_));
            if !usable && layout::older_than(version.made, ORPHAN_GRACE) {
                let label = format!("{}.{}", entry.key, layout::version_name(version.identity));
                if root.trash_and_remove(&version.rel, &label) {
                    report.orphan_versions_removed += 1;
                    continue;
                }
            }
            kept += 1;
            extents.extend(version.extents.into_iter().map(|(_, file)| file));
        }
        if kept == 0
            && layout::older_than(entry.modified, ORPHAN_GRACE)
            && root.trash_and_remove(&entry.rel, &entry.key)
        {
            report.entries_removed += 1;
        }
    }
    report.stats_compacted = stats_files::compact(root, &CacheStats::default());
    let mut total = root.tree_bytes();
    report.target_bytes = target(total);
    if let Some(goal) = report.target_bytes {
        // Oldest use first; the name breaks ties, so the order is the same every time.
        extents.sort_by(|a, b| a.modified.cmp(&b.modified).then(a.rel.cmp(&b.rel)));
        for file in extents {
            if total <= goal {
                break;
            }
            match root.unlink(&file.rel) {
                Ok(()) => {
                    total = total.saturating_sub(file.size);
                    report.evicted_extents += 1;
                    report.evicted_bytes += file.size;
                }
                // Deleted meanwhile (by a reader that found it bad, or a clear).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    total = total.saturating_sub(file.size);
                }
                Err(_) => {}
            }
        }
    }
    report.unsafe_files = root.take_notes().iter().map(ToString::to_string).collect();
    match counters {
        Some(counters) => {
            counters.evicted(report.evicted_extents, report.evicted_bytes);
            counters.temp_files_removed(report.temp_files_removed);
        }
        None => {
            // No store counts this purge: its counts go into the total (a few bytes
            // more in `stats/total`).
            let extra = CacheStats {
                evicted_extents: report.evicted_extents,
                evicted_bytes: report.evicted_bytes,
                temp_files_removed: report.temp_files_removed,
                // A maintenance root's counters are this purge's alone.
                unsafe_files: root.counters().snapshot().unsafe_files,
                ..CacheStats::default()
            };
            stats_files::add_to_total(root, &extra);
        }
    }
    report.after_bytes = root.tree_bytes();
    report
}
