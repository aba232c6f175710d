//! The maintenance commands (`rntuple cache stats|ls|verify|clear|purge`): reports on a
//! cache directory, checks, repairs and deletions, safe while other processes use it.
//! A directory without `rntuple-cache-v1/` is an empty cache; the read-only commands
//! never create it.

use super::extent::OpenExtent;
use super::layout::{self, Current, EntryDir, MetaState, Root, CURRENT_FILE, ORPHAN_GRACE};
pub use super::purge::PurgeReport;
use super::purge::{self, stale_temp};
use super::stats::{self, CacheStats};
use super::sys;
use super::{low_mark, max_bytes_value, CACHE_MAX_BYTES_VARIABLE};
use crate::error::{Error, Result};
use crate::io::ByteRange;
use std::fs;
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
    /// Processes whose counters are in their own stats files (not yet compacted).
    pub processes: u64,
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
    /// One line per problem, naming the file (relative to `rntuple-cache-v1/`); those
    /// fixed end with "(repaired)".
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

/// One row per URL cached in `dir` (the directory holding `rntuple-cache-v1/`), in
/// key order. Empty when there is no cache there.
pub fn cache_ls(dir: &Path) -> Result<Vec<EntryReport>> {
    let root = Root::of(dir);
    Ok(layout::scan_entries(&root).iter().map(entry_row).collect())
}

/// The cache in `dir` summed up: entries, versions, extents, bytes on disk, one row per
/// URL, and the counters of every process that used it.
pub fn cache_stats(dir: &Path) -> Result<CacheReport> {
    let root = Root::of(dir);
    let entries = layout::scan_entries(&root);
    let (counters, processes) = stats::sum(&root);
    Ok(CacheReport {
        root: root.path().to_path_buf(),
        exists: root.exists(),
        entries: entries.len() as u64,
        versions: entries.iter().map(|e| e.versions.len() as u64).sum(),
        extents: entries
            .iter()
            .flat_map(|e| &e.versions)
            .map(|v| v.extents.len() as u64)
            .sum(),
        disk_bytes: layout::tree_bytes(root.path()),
        temp_files: layout::list(&root.tmp()).len() as u64,
        rows: entries.iter().map(entry_row).collect(),
        counters,
        processes,
    })
}

/// Records a problem, and with `repair` runs `fix` (true when it worked).
fn problem(report: &mut VerifyReport, line: String, repair: bool, fix: impl FnOnce() -> bool) {
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
/// of dead writers, leftovers in the trash, stray files. With `repair` it deletes what
/// is bad (a bad `current` is removed: the next open installs the version again).
/// Nothing is created; without `repair` nothing is changed.
pub fn cache_verify(dir: &Path, repair: bool) -> Result<VerifyReport> {
    let root = Root::of(dir);
    let mut report = VerifyReport {
        exists: root.exists(),
        ..VerifyReport::default()
    };
    if !report.exists {
        return Ok(report);
    }
    let rel = |p: &Path| {
        p.strip_prefix(root.path())
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut buf = Vec::new();
    for entry in layout::scan_entries(&root) {
        report.entries += 1;
        let name = format!(
            "{} ({})",
            rel(&entry.path),
            entry.url.as_deref().unwrap_or("url unknown")
        );
        let current_file = entry.path.join(CURRENT_FILE);
        match entry.current {
            Current::Broken => {
                report.broken_metadata += 1;
                problem(
                    &mut report,
                    format!("{name}: `current` cannot be read"),
                    repair,
                    || fs::remove_file(&current_file).is_ok(),
                );
            }
            Current::Is(id) if entry.current_version().is_none() => {
                report.broken_metadata += 1;
                let line = format!(
                    "{name}: `current` names version {} which is not there",
                    layout::version_name(id)
                );
                problem(&mut report, line, repair, || {
                    fs::remove_file(&current_file).is_ok()
                });
            }
            _ => {}
        }
        for version in &entry.versions {
            report.versions += 1;
            let vname = rel(&version.path);
            let label = format!("{}.{}", entry.key, layout::version_name(version.identity));
            let is_current = entry.current == Current::Is(version.identity);
            // A bad current version goes with its `current`: the next open installs it
            // again.
            let trash = || {
                root.trash_and_remove(&version.path, &label)
                    && (!is_current || fs::remove_file(&current_file).is_ok())
            };
            match &version.meta {
                MetaState::Broken => {
                    report.broken_metadata += 1;
                    problem(
                        &mut report,
                        format!("{vname}: `meta` cannot be read or names another identity"),
                        repair,
                        trash,
                    );
                    continue;
                }
                MetaState::Missing if layout::older_than(version.made, ORPHAN_GRACE) => {
                    report.broken_metadata += 1;
                    problem(&mut report, format!("{vname}: no `meta`"), repair, trash);
                    continue;
                }
                _ => {}
            }
            if !is_current && layout::older_than(version.made, ORPHAN_GRACE) {
                report.orphan_versions += 1;
                problem(
                    &mut report,
                    format!("{vname}: a version `current` does not name"),
                    repair,
                    trash,
                );
                continue;
            }
            for (range, file) in &version.extents {
                report.extents_checked += 1;
                let checked = OpenExtent::open(&file.path, version.identity, *range)
                    .and_then(|extent| extent.verify_all(&mut buf));
                match checked {
                    Ok(()) => report.bytes_checked += range.len,
                    Err(fault) => {
                        report.corrupt_extents += 1;
                        let line = format!("{}: {fault}", rel(&file.path));
                        problem(&mut report, line, repair, || {
                            fs::remove_file(&file.path).is_ok()
                        });
                    }
                }
            }
            for stray in version.strays() {
                report.stray_files += 1;
                let line = format!("{}: not a file of the cache", rel(&stray.path));
                problem(&mut report, line, repair, || {
                    layout::remove_any(&stray.path).is_ok()
                });
            }
        }
    }
    for (name, info) in layout::files_in(&root.tmp()) {
        if stale_temp(&name, &info) {
            report.stale_temp_files += 1;
            let line = format!(
                "{}: a temporary file of a dead writer, or over an hour old",
                rel(&info.path)
            );
            problem(&mut report, line, repair, || {
                fs::remove_file(&info.path).is_ok()
            });
        }
    }
    for (_, path) in layout::list(&root.trash()) {
        report.trash_entries += 1;
        let line = format!("{}: left in the trash", rel(&path));
        problem(&mut report, line, repair, || {
            layout::remove_any(&path).is_ok()
        });
    }
    for (_, path) in layout::list(&root.stats()) {
        if stats::read_file(&path).is_none() {
            report.stray_files += 1;
            let line = format!("{}: not a stats file", rel(&path));
            problem(&mut report, line, repair, || {
                layout::remove_any(&path).is_ok()
            });
        }
    }
    Ok(report)
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
/// stay readable. Waits for the purge lock. Returns the bytes deleted.
pub fn cache_clear(dir: &Path) -> Result<u64> {
    let root = Root::of(dir);
    if !root.exists() {
        return Ok(0);
    }
    let before = layout::tree_bytes(root.path());
    let _lock = root
        .lock_purge(true)
        .map_err(|e| failed("the purge lock", &root.purge_lock(), e))?;
    let entries = root.entries();
    let away = root.trash().join(sys::own_name("cleared"));
    match fs::rename(&entries, &away) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed("the cache's entries", &entries, e)),
    }
    layout::create_dirs(&entries).map_err(|e| failed("the cache's entries", &entries, e))?;
    for (_, path) in layout::list(&root.trash()) {
        let _ = layout::remove_any(&path);
    }
    for (_, path) in layout::list(&root.stats()) {
        let _ = fs::remove_file(&path);
    }
    for (name, info) in layout::files_in(&root.tmp()) {
        if stale_temp(&name, &info) {
            let _ = fs::remove_file(&info.path);
        }
    }
    Ok(before.saturating_sub(layout::tree_bytes(root.path())))
}

/// Purges the cache in `dir`: least recently used extents deleted until its files take
/// at most `target_bytes` (default: 90% of `RNTUPLE_CACHE_MAX_BYTES`; neither: no
/// eviction), and the cleanups: temporary files of dead writers or older than an hour,
/// the trash, version directories `current` does not name, entries without versions,
/// the stats files of finished processes compacted. Waits for the purge lock.
pub fn cache_purge(dir: &Path, target_bytes: Option<u64>) -> Result<PurgeReport> {
    let target = match target_bytes {
        Some(bytes) => Some(bytes),
        None => match std::env::var(CACHE_MAX_BYTES_VARIABLE) {
            Ok(v) if !v.is_empty() => Some(low_mark(max_bytes_value(&v)?)),
            _ => None,
        },
    };
    let root = Root::of(dir);
    if !root.exists() {
        return Ok(PurgeReport::default());
    }
    let _lock = root
        .lock_purge(true)
        .map_err(|e| failed("the purge lock", &root.purge_lock(), e))?;
    Ok(purge::run(&root, &|_| target, None))
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
