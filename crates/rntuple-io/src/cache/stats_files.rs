//! The stats directory of a cache: each process's cumulative counters in a file of its
//! own (`stats/<host>.<pid>.<token>.stats`, written by renaming a temporary file over it)
//! and the files of finished processes summed into `stats/total` by a purge.

use super::layout::{self, Root, STATS_DIR};
use super::stats::CacheStats;
use super::sys::{self, Writer};
use serde_json::{json, Value};

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
