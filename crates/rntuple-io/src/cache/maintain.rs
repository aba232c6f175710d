//! The maintenance commands (`rntuple cache stats|ls|verify|clear|purge`): reports on a
//! cache directory, checks, repairs and deletions, safe while other processes use it.
//! A directory without `rntuple-cache-v1/` is an empty cache; the read-only commands
//! never create it.

use super::extent::OpenExtent;
use super::layout::{
    self, Access, Current, EntryDir, MetaState, Note, Root, VersionDir, CURRENT_FILE, ORPHAN_GRACE,
    STATS_DIR, TMP_DIR,
};
pub use super::purge::PurgeReport;
use super::purge::{self, stale_temp};
use super::stats::CacheStats;
use super::stats_files;
use super::{store, sys};
use crate::error::{Error, Result};
use crate::ByteRange;
use std::path::{Path, PathBuf};

/// One URL in a cache, as `cache ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryReport {
    /// The URL, credentials removed (`None` if its `url` file is missing).
    pub url: Option<String>,
    /// The entry's key: the xxh3-128 of the normalized URL, in hex.
    pub key: String,
    /// The identity of the current version, in hex (`None`: no usable version).
    pub identity: Option<String>,
    /// The size of the file the current version caches.
    pub size: Option<u64>,
    /// Bytes of the file the current version's extents cover (overlaps counted once).
    pub cached_bytes: u64,
    /// Extents of the current version.
    pub extents: u64,
    /// Version directories (the current one and any left over).
    pub versions: u64,
    /// Bytes of all the entry's files on disk.
    pub disk_bytes: u64,
    /// When an extent of the current version was last used (seconds since the epoch).
    pub last_use: Option<u64>,
}

/// A cache directory summed up, as `cache stats` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheReport {
    /// The cache's files: `<dir>/rntuple-cache-v1`.
    pub root: PathBuf,
    /// Whether that directory exists (when not, every count is 0).
    pub exists: bool,
    /// URLs cached.
    pub entries: u64,
    /// Version directories.
    pub versions: u64,
    /// Extent files.
    pub extents: u64,
    /// Bytes of all the cache's files.
    pub disk_bytes: u64,
    /// Temporary files (writes under way, or left by crashes).
    pub temp_files: u64,
    /// Per URL.
    pub rows: Vec<EntryReport>,
    /// The counters of every process that used the cache, summed.
    pub counters: CacheStats,
    /// Processes whose counters are in their own stats files (not yet compacted), and
    /// the stores of this process that use the cache.
    pub processes: u64,
    /// Things found where the cache keeps its own that are not what it keeps there
    /// (symbolic links, special files, other users' files), one line each naming it:
    /// never followed nor opened, left as they are (`cache_verify` with `repair`
    /// removes them).
    pub unsafe_files: Vec<String>,
}

/// What `cache ls` shows: one row per URL, and what was found unsafe.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheListing {
    /// Per URL, in key order.
    pub rows: Vec<EntryReport>,
    /// As [`CacheReport::unsafe_files`].
    pub unsafe_files: Vec<String>,
}

/// What `cache clear` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClearReport {
    /// Bytes deleted.
    pub deleted_bytes: u64,
    /// Things found where the cache keeps its own that were not what it keeps there,
    /// one line each naming it: removed by name, never followed.
    pub unsafe_files: Vec<String>,
}

/// What `cache verify` found (and with `repair`, fixed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Whether the cache exists (when not, there is nothing to check).
    pub exists: bool,
    /// Entries checked.
    pub entries: u64,
    /// Versions checked.
    pub versions: u64,
    /// Extents whose header and every block's checksum were checked.
    pub extents_checked: u64,
    /// Payload bytes of those.
    pub bytes_checked: u64,
    /// Extents that failed (size, header, table or a block).
    pub corrupt_extents: u64,
    /// `current` or `meta` files that cannot be read, or name what is not there.
    pub broken_metadata: u64,
    /// Version directories `current` does not name, made more than 10 minutes ago.
    pub orphan_versions: u64,
    /// Temporary files of dead writers, or older than an hour.
    pub stale_temp_files: u64,
    /// Things in `trash/` (a deletion was interrupted).
    pub trash_entries: u64,
    /// Files that have no place in the layout (in a version's directory or `x/`) and
    /// stats files that cannot be read.
    pub stray_files: u64,
    /// Things where the cache keeps its own that are not what it keeps there: symbolic
    /// links, FIFOs, sockets, devices, directories where a file belongs (or the
    /// reverse), other users' files, files writable by others. Never followed nor
    /// opened; with `repair`, removed by name (a link, never what it points to).
    pub unsafe_files: u64,
    /// One line per problem, naming the file (from the cache directory:
    /// `rntuple-cache-v1/...`); those fixed end with "(repaired)".
    pub problems: Vec<String>,
    /// Problems fixed (with `repair`).
    pub repaired: u64,
}

impl VerifyReport {
    /// Problems found and not fixed.
    pub fn remaining(&self) -> u64 {
        (self.problems.len() as u64).saturating_sub(self.repaired)
    }
}

/// The union of `ranges`' bytes (sorted by offset).
fn covered_bytes(ranges: impl Iterator<Item = ByteRange>) -> u64 {
    let mut total = 0;
    let mut reach = 0;
    for r in ranges {
        let end = r.offset.saturating_add(r.len);
        let start = r.offset.max(reach);
        if end > start {
            total += end - start;
        }
        reach = reach.max(end);
    }
    total
}

fn entry_row(entry: &EntryDir) -> EntryReport {
    let current = entry.current_version();
    let valid = current.and_then(|v| match &v.meta {
        MetaState::Valid(meta) => Some((v, meta)),
        _ => None,
    });
    EntryReport {
        url: entry.url.clone(),
        key: entry.key.clone(),
        identity: valid.map(|(v, _)| layout::version_name(v.identity)),
        size: valid.map(|(_, meta)| meta.size),
        cached_bytes: valid.map_or(0, |(v, _)| covered_bytes(v.extents.iter().map(|(r, _)| *r))),
        extents: valid.map_or(0, |(v, _)| v.extents.len() as u64),
        versions: entry.versions.len() as u64,
        disk_bytes: entry.bytes(),
        last_use: valid.and_then(|(v, _)| {
            v.extents
                .iter()
                .map(|(_, f)| sys::unix_seconds(f.modified))
                .max()
        }),
    }
}

/// The lines of notes (with "(removed)" on those removed).
fn lines(notes: Vec<Note>) -> Vec<String> {
    notes.iter().map(Note::to_string).collect()
}

/// One row per URL cached in `dir` (the directory holding `rntuple-cache-v1/`), in
/// key order, and what was found unsafe (left as it is). Empty when there is no cache
/// there. A directory of another user's or writable by others is refused (see
/// [`cache_stats`]).
pub fn cache_ls(dir: &Path) -> Result<CacheListing> {
    let root = Root::open(dir, Access::Read)?;
    let rows = layout::scan_entries(&root).iter().map(entry_row).collect();
    Ok(CacheListing {
        rows,
        unsafe_files: lines(root.take_notes()),
    })
}

/// The cache in `dir` summed up: entries, versions, extents, bytes on disk, one row per
/// URL, the counters of every process that used it (this process's stores counted as
/// they are now), and what was found unsafe. Nothing is changed. A cache directory
/// (or its `rntuple-cache-v1/`) of another user's, or writable by others, is refused:
/// an [`Error::Io`] of kind `PermissionDenied` saying why.
pub fn cache_stats(dir: &Path) -> Result<CacheReport> {
    let root = Root::open(dir, Access::Read)?;
    let entries = layout::scan_entries(&root);
    let live = root.id().map(store::live_stats).unwrap_or_default();
    let (counters, processes) = stats_files::sum(&root, &live);
    let temp_files = root.files_in(TMP_DIR).len() as u64;
    Ok(CacheReport {
        root: root.path(),
        exists: root.exists(),
        entries: entries.len() as u64,
        versions: entries.iter().map(|e| e.versions.len() as u64).sum(),
        extents: entries
            .iter()
            .flat_map(|e| &e.versions)
            .map(|v| v.extents.len() as u64)
            .sum(),
        disk_bytes: root.tree_bytes(),
        temp_files,
        rows: entries.iter().map(entry_row).collect(),
        counters,
        processes,
        unsafe_files: lines(root.take_notes()),
    })
}

/// Records a problem (`line` starts with a path relative to `rntuple-cache-v1/`), and
/// with `repair` runs `fix` (true when it worked).
fn problem(report: &mut VerifyReport, line: String, repair: bool, fix: impl FnOnce() -> bool) {
    let line = format!("{}/{line}", layout::ROOT_NAME);
    let fixed = repair && fix();
    if fixed {
        report.repaired += 1;
        report.problems.push(format!("{line} (repaired)"));
    } else {
        report.problems.push(line);
    }
}

/// Checks the cache in `dir`: every extent's size, header and block checksums, every
/// `current` and `meta`, version directories `current` does not name, temporary files
/// of dead writers, leftovers in the trash, stray files, and things that are not what
/// the cache keeps where they are (links, special files, other users' files). With
/// `repair` it deletes what is bad (a bad `current` is removed: the next open installs
/// the version again; a link is removed, never what it points to). Nothing is created;
/// without `repair` nothing is changed. A cache directory of another user's, or
/// writable by others, is refused (see [`cache_stats`]).
pub fn cache_verify(dir: &Path, repair: bool) -> Result<VerifyReport> {
    let access = if repair { Access::Repair } else { Access::Read };
    let root = Root::open(dir, access)?;
    let mut report = VerifyReport {
        exists: root.exists(),
        ..VerifyReport::default()
    };
    if report.exists {
        let mut buf = Vec::new();
        for entry in layout::scan_entries(&root) {
            verify_entry(&root, &entry, &mut report, repair, &mut buf);
        }
        verify_leftovers(&root, &mut report, repair);
    }
    for note in root.take_notes() {
        report.unsafe_files += 1;
        if note.removed {
            report.repaired += 1;
            report.problems.push(format!("{} (repaired)", note.line));
        } else {
            report.problems.push(note.line);
        }
    }
    Ok(report)
}

/// Checks one entry: its `current`, its versions and their extents.
fn verify_entry(
    root: &Root,
    entry: &EntryDir,
    report: &mut VerifyReport,
    repair: bool,
    buf: &mut Vec<u8>,
) {
    report.entries += 1;
    let name = format!(
        "{} ({})",
        entry.rel,
        entry.url.as_deref().unwrap_or("url unknown")
    );
    let current_file = format!("{}/{CURRENT_FILE}", entry.rel);
    match entry.current {
        Current::Broken => {
            report.broken_metadata += 1;
            problem(
                report,
                format!("{name}: `current` cannot be read"),
                repair,
                || root.unlink(&current_file).is_ok(),
            );
        }
        Current::Is(id) if entry.current_version().is_none() => {
            report.broken_metadata += 1;
            let line = format!(
                "{name}: `current` names version {} which is not there",
                layout::version_name(id)
            );
            problem(report, line, repair, || root.unlink(&current_file).is_ok());
        }
        _ => {}
    }
    for version in &entry.versions {
        report.versions += 1;
        let is_current = entry.current == Current::Is(version.identity);
        // A bad current version goes with its `current`: the next open installs it
        // again.
        let trash = || {
            let label = format!("{}.{}", entry.key, layout::version_name(version.identity));
            root.trash_and_remove(&version.rel, &label)
                && (!is_current || root.unlink(&current_file).is_ok())
        };
        let vname = &version.rel;
        let line = match &version.meta {
            MetaState::Broken => {
                report.broken_metadata += 1;
                Some(format!(
                    "{vname}: `meta` cannot be read or names another identity"
                ))
            }
            MetaState::Missing if layout::older_than(version.made, ORPHAN_GRACE) => {
                report.broken_metadata += 1;
                Some(format!("{vname}: no `meta`"))
            }
            _ if !is_current && layout::older_than(version.made, ORPHAN_GRACE) => {
                report.orphan_versions += 1;
                Some(format!("{vname}: a version `current` does not name"))
            }
            _ => None,
        };
        if let Some(line) = line {
            problem(report, line, repair, trash);
            continue;
        }
        verify_version(root, version, report, repair, buf);
    }
}

/// Checks a version's extents, and finds its strays.
fn verify_version(
    root: &Root,
    version: &VersionDir,
    report: &mut VerifyReport,
    repair: bool,
    buf: &mut Vec<u8>,
) {
    for (range, file) in &version.extents {
        report.extents_checked += 1;
        let checked = match root.open_file(&file.rel) {
            Ok(opened) => OpenExtent::from_file(opened, version.identity, *range)
                .and_then(|extent| extent.verify_all(buf)),
            // Found unsafe since the scan: noted by the root.
            Err(e) if crate::dirfd::refusal(&e).is_some() => continue,
            Err(e) => Err(super::extent::Fault::Unreadable(e)),
        };
        match checked {
            Ok(()) => report.bytes_checked += range.len,
            Err(fault) => {
                report.corrupt_extents += 1;
                let line = format!("{}: {fault}", file.rel);
                problem(report, line, repair, || root.unlink(&file.rel).is_ok());
            }
        }
    }
    for stray in version.strays() {
        report.stray_files += 1;
        let line = format!("{}: not a file of the cache", stray.rel);
        problem(report, line, repair, || root.remove_any(&stray.rel).is_ok());
    }
}

/// Finds temporary files of dead writers, leftovers in the trash and unreadable stats
/// files.
fn verify_leftovers(root: &Root, report: &mut VerifyReport, repair: bool) {
    for (name, info) in root.files_in(TMP_DIR) {
        if stale_temp(&name, &info) {
            report.stale_temp_files += 1;
            let line = format!(
                "{}: a temporary file of a dead writer, or over an hour old",
                info.rel
            );
            problem(report, line, repair, || root.unlink(&info.rel).is_ok());
        }
    }
    for name in root.trash_names() {
        report.trash_entries += 1;
        let line = format!(
            "{}/{}: left in the trash",
            layout::TRASH_DIR,
            name.to_string_lossy()
        );
        problem(report, line, repair, || {
            root.remove_from_trash(&name).is_ok()
        });
    }
    for (name, info) in root.files_in(STATS_DIR) {
        if stats_files::read_file(root, &name).is_none() {
            report.stray_files += 1;
            let line = format!("{}: not a stats file", info.rel);
            problem(report, line, repair, || root.remove_any(&info.rel).is_ok());
        }
    }
}

/// The error of a failed maintenance step on `path`.
fn failed(what: &str, path: &Path, source: std::io::Error) -> Error {
    Error::Write {
        what: format!("{what} {}", path.display()),
        source,
    }
}

/// Deletes everything the cache in `dir` holds: entries, the trash, stats files and
/// temporary files of dead writers (those of live writers are theirs to publish or
/// delete: a publish into a cleared entry fails and is counted by its writer). Safe
/// while others read: the entries are renamed away in one step, and files already open
/// stay readable. Waits for the purge lock. Links and special files found where the
/// cache keeps its own are removed by name, never followed. A cache directory of
/// another user's, or writable by others, is refused (see [`cache_stats`]).
pub fn cache_clear(dir: &Path) -> Result<ClearReport> {
    let root = Root::open(dir, Access::Repair)?;
    let mut report = ClearReport::default();
    if root.exists() {
        let before = root.tree_bytes();
        let _lock = root
            .lock_purge(true)
            .map_err(|e| failed("the purge lock in", &root.path(), e))?;
        // A walk first, to report the links and special files among the entries (which
        // the deletion would remove by name, unreported).
        let _ = layout::scan_entries(&root);
        root.clear_entries()
            .map_err(|e| failed("the cache's entries in", &root.path(), e))?;
        for name in root.trash_names() {
            let _ = root.remove_from_trash(&name);
        }
        for (_, info) in root.files_in(STATS_DIR) {
            let _ = root.unlink(&info.rel);
        }
        for (name, info) in root.files_in(TMP_DIR) {
            if stale_temp(&name, &info) {
                let _ = root.unlink(&info.rel);
            }
        }
        report.deleted_bytes = before.saturating_sub(root.tree_bytes());
    }
    report.unsafe_files = lines(root.take_notes());
    Ok(report)
}

/// Purges the cache in `dir`: least recently used extents deleted until its files take
/// at most `target_bytes` (`None`: no eviction), and the cleanups: temporary files of
/// dead writers or older than an hour, the trash, version directories `current` does
/// not name, entries without versions, the stats files of finished processes
/// compacted, links and special files where the cache keeps its own (removed by name,
/// never followed). Waits for the purge lock. A cache directory of another user's, or
/// writable by others, is refused (see [`cache_stats`]).
pub fn cache_purge(dir: &Path, target_bytes: Option<u64>) -> Result<PurgeReport> {
    let root = Root::open(dir, Access::Repair)?;
    if !root.exists() {
        return Ok(PurgeReport {
            unsafe_files: lines(root.take_notes()),
            ..PurgeReport::default()
        });
    }
    let _lock = root
        .lock_purge(true)
        .map_err(|e| failed("the purge lock in", &root.path(), e))?;
    Ok(purge::run(&root, &|_| target_bytes, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covered_bytes_counts_overlaps_once() {
        let r = |offset, len| ByteRange { offset, len };
        assert_eq!(covered_bytes([].into_iter()), 0);
        assert_eq!(
            covered_bytes([r(0, 10), r(5, 10), r(20, 5)].into_iter()),
            20
        );
        assert_eq!(covered_bytes([r(0, 100), r(10, 5)].into_iter()), 100);
        assert_eq!(covered_bytes([r(0, 10), r(10, 10)].into_iter()), 20);
    }
}
