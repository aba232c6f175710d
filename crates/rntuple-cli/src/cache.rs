//! `rntuple cache`: the on-disk cache of remote reads: what it holds, its counters, a
//! check of every checksum, and deletions.

use super::Failure;
use rntuple_io::{
    cache_clear, cache_ls, cache_purge, cache_stats, cache_verify, default_cache_dir,
    parse_byte_size, CacheConfig, EntryReport, CACHE_DIR_VARIABLE, CACHE_MAX_BYTES_VARIABLE,
};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The cache of remote reads (--cache-dir, else RNTUPLE_CACHE_DIR, else the per-user
/// default $XDG_CACHE_HOME/rntuple or ~/.cache/rntuple): stats, ls, verify, clear,
/// purge.
#[derive(clap::Args)]
pub(crate) struct Job {
    #[command(subcommand)]
    action: Action,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Action {
    /// What the cache holds (URLs, versions, extents, bytes on disk) and the counters
    /// of every process that used it: hits, misses, bytes from the cache and from the
    /// origin, faults, evictions.
    Stats,
    /// One line per cached URL: last use, file size, bytes cached, extents, URL
    /// (credentials removed).
    Ls,
    /// Check every extent's checksums, every version's metadata, and look for what
    /// crashes leave behind; exit status 1 if a problem remains.
    Verify {
        /// Delete what is bad (the next read fetches it again).
        #[arg(long)]
        repair: bool,
    },
    /// Delete everything cached (safe while other processes read: they fetch again).
    Clear,
    /// Delete least recently used extents down to a size, and what crashes and
    /// replaced versions left behind.
    Purge {
        /// The size to go down to: bytes, or a number with a unit (500 MB, 2GiB, 10G);
        /// default: 90% of RNTUPLE_CACHE_MAX_BYTES (without either, only the cleanups).
        #[arg(long, value_name = "SIZE")]
        target: Option<String>,
    },
}

/// `bytes` for people: decimal units, as the rest of the command prints sizes.
fn size(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1000 {
        format!("{bytes} B")
    } else if b < 1e6 {
        format!("{:.1} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

/// How long ago `unix_seconds` was, for people.
fn ago(unix_seconds: Option<u64>) -> String {
    let Some(then) = unix_seconds else {
        return "never".to_string();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let s = now.saturating_sub(then);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

fn row_json(row: &EntryReport) -> Value {
    json!({
        "url": row.url,
        "key": row.key,
        "identity": row.identity,
        "size": row.size,
        "cached_bytes": row.cached_bytes,
        "extents": row.extents,
        "versions": row.versions,
        "disk_bytes": row.disk_bytes,
        "last_use": row.last_use,
    })
}

/// The cache directory `rntuple cache` works on: `cache_dir` (the `--cache-dir`
/// option), else the environment's `RNTUPLE_CACHE_DIR`, else the per-user default.
fn cache_dir(cache_dir: Option<PathBuf>) -> Result<PathBuf, Failure> {
    if let Some(dir) = cache_dir {
        return Ok(dir);
    }
    if let Some(dir) = std::env::var_os(CACHE_DIR_VARIABLE).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let xdg = std::env::var_os("XDG_CACHE_HOME");
    let home = std::env::var_os("HOME");
    default_cache_dir(xdg.as_deref(), home.as_deref()).ok_or_else(|| {
        Failure::Usage(format!(
            "no cache directory: pass --cache-dir DIR or set {CACHE_DIR_VARIABLE} (the \
             default, $XDG_CACHE_HOME/rntuple or ~/.cache/rntuple, needs an absolute \
             XDG_CACHE_HOME or HOME)"
        ))
    })
}

/// The default target of `cache purge` on `dir`: 90% of `RNTUPLE_CACHE_MAX_BYTES`, if
/// set.
fn default_target(dir: &std::path::Path) -> Result<Option<u64>, Failure> {
    let config = CacheConfig::from_env_in(dir).map_err(|e| Failure::Usage(e.to_string()))?;
    Ok(config.low_mark())
}

/// Says on stderr what was found unsafe in the cache (links, special files, other
/// users' files where the cache keeps its own) and what became of it.
fn warn_unsafe(lines: &[String], removed: bool) {
    for line in lines {
        eprintln!("rntuple: cache: {line}");
    }
    if !lines.is_empty() && !removed {
        eprintln!(
            "rntuple: cache: never followed nor opened; `rntuple cache verify --repair` removes \
             them (never what a link points to)"
        );
    }
}

/// `rntuple cache stats`.
fn stats(dir: &Path, shown: &str, json_out: bool, out: &mut impl Write) -> Result<(), Failure> {
    let report = cache_stats(dir)?;
    warn_unsafe(&report.unsafe_files, false);
    if json_out {
        let counters: serde_json::Map<String, Value> = report
            .counters
            .pairs()
            .into_iter()
            .map(|(name, value)| (name.to_string(), json!(value)))
            .collect();
        let value = json!({
            "dir": shown,
            "exists": report.exists,
            "entries": report.entries,
            "versions": report.versions,
            "extents": report.extents,
            "disk_bytes": report.disk_bytes,
            "temp_files": report.temp_files,
            "processes": report.processes,
            "unsafe_files": report.unsafe_files,
            "counters": counters,
            "rows": report.rows.iter().map(row_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{value}")?;
        return Ok(());
    }
    if !report.exists {
        writeln!(out, "no cache in {shown} yet")?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: {} URLs, {} versions, {} extents, {} on disk ({} temporary files)",
        report.root.display(),
        report.entries,
        report.versions,
        report.extents,
        size(report.disk_bytes),
        report.temp_files
    )?;
    let c = &report.counters;
    let read = c.bytes_from_cache + c.bytes_from_origin;
    if read > 0 {
        writeln!(
            out,
            "read {} from the cache and {} from the origin ({:.1}% from the cache)",
            size(c.bytes_from_cache),
            size(c.bytes_from_origin),
            100.0 * c.bytes_from_cache as f64 / read as f64
        )?;
    }
    if c.uncacheable_opens > 0 {
        writeln!(
            out,
            "{} files opened could not be told apart from a rewrite (modified within the last \
             second at their origin, or without validators): read from the origin, not cached",
            c.uncacheable_opens
        )?;
    }
    writeln!(
        out,
        "counters (summed over every process; {} not yet compacted):",
        report.processes
    )?;
    for (name, value) in c.pairs() {
        writeln!(out, "  {name:<22}{value:>16}")?;
    }
    Ok(())
}

/// `rntuple cache ls`.
fn ls(dir: &Path, shown: &str, json_out: bool, out: &mut impl Write) -> Result<(), Failure> {
    let listing = cache_ls(dir)?;
    warn_unsafe(&listing.unsafe_files, false);
    let rows = listing.rows;
    if json_out {
        let value = json!({
            "dir": shown,
            "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
            "unsafe_files": listing.unsafe_files,
        });
        writeln!(out, "{value}")?;
        return Ok(());
    }
    for row in &rows {
        let cached = match row.size {
            Some(total) if total > 0 => format!(
                "{} of {} ({:.0}%)",
                size(row.cached_bytes),
                size(total),
                100.0 * row.cached_bytes as f64 / total as f64
            ),
            _ => "no current version".to_string(),
        };
        writeln!(
            out,
            "{:<10} {:<30} {:>6} extents  {}",
            ago(row.last_use),
            cached,
            row.extents,
            row.url.as_deref().unwrap_or(&row.key)
        )?;
    }
    Ok(())
}

/// `rntuple cache verify [--repair]`.
fn verify(
    dir: &Path,
    shown: &str,
    json_out: bool,
    repair: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let report = cache_verify(dir, repair)?;
    let remaining = report.remaining();
    if json_out {
        let value = json!({
            "dir": shown,
            "exists": report.exists,
            "entries": report.entries,
            "versions": report.versions,
            "extents_checked": report.extents_checked,
            "bytes_checked": report.bytes_checked,
            "corrupt_extents": report.corrupt_extents,
            "broken_metadata": report.broken_metadata,
            "orphan_versions": report.orphan_versions,
            "stale_temp_files": report.stale_temp_files,
            "trash_entries": report.trash_entries,
            "stray_files": report.stray_files,
            "unsafe_files": report.unsafe_files,
            "problems": report.problems,
            "repaired": report.repaired,
            "remaining": remaining,
        });
        writeln!(out, "{value}")?;
    } else {
        for line in &report.problems {
            writeln!(out, "{line}")?;
        }
        writeln!(
            out,
            "checked {} extents ({}) of {} versions in {} entries: {} problems, {} repaired",
            report.extents_checked,
            size(report.bytes_checked),
            report.versions,
            report.entries,
            report.problems.len(),
            report.repaired
        )?;
    }
    if remaining > 0 {
        out.flush()?;
        return Err(Failure::Input(rntuple::Error::corrupt(
            format!("the cache in {shown}"),
            format!(
                "{remaining} problems remain{}",
                if repair {
                    ""
                } else {
                    " (rntuple cache verify --repair deletes what is bad)"
                }
            ),
        )));
    }
    Ok(())
}

/// `rntuple cache clear`.
fn clear(dir: &Path, shown: &str, json_out: bool, out: &mut impl Write) -> Result<(), Failure> {
    let report = cache_clear(dir)?;
    warn_unsafe(&report.unsafe_files, true);
    if json_out {
        let value = json!({
            "dir": shown,
            "deleted_bytes": report.deleted_bytes,
            "unsafe_files": report.unsafe_files,
        });
        writeln!(out, "{value}")?;
    } else {
        writeln!(out, "deleted {} from {shown}", size(report.deleted_bytes))?;
    }
    Ok(())
}

/// `rntuple cache purge [--target SIZE]`.
fn purge(
    dir: &Path,
    shown: &str,
    json_out: bool,
    target: Option<String>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let target = match target {
        Some(t) => Some(parse_byte_size(&t).map_err(|e| Failure::Usage(format!("--target: {e}")))?),
        None => default_target(dir)?,
    };
    let report = cache_purge(dir, target)?;
    warn_unsafe(&report.unsafe_files, true);
    if json_out {
        let value = json!({
            "dir": shown,
            "before_bytes": report.before_bytes,
            "after_bytes": report.after_bytes,
            "target_bytes": report.target_bytes,
            "evicted_extents": report.evicted_extents,
            "evicted_bytes": report.evicted_bytes,
            "temp_files_removed": report.temp_files_removed,
            "trash_removed": report.trash_removed,
            "orphan_versions_removed": report.orphan_versions_removed,
            "entries_removed": report.entries_removed,
            "stats_compacted": report.stats_compacted,
            "unsafe_files": report.unsafe_files,
        });
        writeln!(out, "{value}")?;
    } else {
        let target = match report.target_bytes {
            Some(bytes) => format!("target {}", size(bytes)),
            None => format!("no target: pass --target or set {CACHE_MAX_BYTES_VARIABLE}"),
        };
        writeln!(
            out,
            "{shown}: {} -> {} ({target}); evicted {} extents ({}); removed {} temporary files, {} trash entries, {} orphan versions, {} empty entries",
            size(report.before_bytes),
            size(report.after_bytes),
            report.evicted_extents,
            size(report.evicted_bytes),
            report.temp_files_removed,
            report.trash_removed,
            report.orphan_versions_removed,
            report.entries_removed
        )?;
    }
    Ok(())
}

/// Runs `rntuple cache ...` on `cache_dir` (the `--cache-dir` option, else the
/// environment's, else the default).
pub(crate) fn run(
    job: Job,
    cache_dir_option: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let dir = cache_dir(cache_dir_option)?;
    let shown = dir.display().to_string();
    match job.action {
        Action::Stats => stats(&dir, &shown, job.json, out),
        Action::Ls => ls(&dir, &shown, job.json, out),
        Action::Verify { repair } => verify(&dir, &shown, job.json, repair, out),
        Action::Clear => clear(&dir, &shown, job.json, out),
        Action::Purge { target } => purge(&dir, &shown, job.json, target, out),
    }
}
