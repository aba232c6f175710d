//! `rntuple verify`: every page of every RNTuple read and checked; `--repair` first
//! removes the objects of object-store datasets that no anchor references.

use super::Failure;
use rntuple::inspect::verify::{repair_dataset, verify_files, FileCheck};
use std::io::Write;

/// Check files: every RNTuple opened, its structure checked, every page read, its
/// checksum checked and every value decoded.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// The files (paths or URLs; object-store datasets ntpl+s3+http(s)://...,
    /// ntpl+file://...).
    #[arg(required = true)]
    pub(crate) files: Vec<String>,
    /// Print one JSON object per file instead of text.
    #[arg(long)]
    json: bool,
    /// For object-store datasets: first remove the objects under the prefix that the
    /// anchor does not reference (left by writers that did not finish; every object
    /// when there is no anchor). Do not run it while a write to the same dataset is in
    /// progress (that write would then fail, leaving the dataset as it was). Files
    /// have nothing to repair.
    #[arg(long)]
    repair: bool,
}

/// Verifies (and with `--repair` first repairs) every file, one line (or JSON object)
/// each; a bad file makes the command fail after all were checked.
pub(crate) fn run(job: &Job, out: &mut impl Write) -> Result<(), Failure> {
    let mut repair_failures = Vec::new();
    if job.repair {
        for file in &job.files {
            if !rntuple_io::is_object_layout(&rntuple_io::split_target(file).0) {
                continue;
            }
            match repair_dataset(file) {
                Ok(done) if !job.json => {
                    let n = done.removed.len();
                    let files = match done.unfinished {
                        0 => String::new(),
                        1 => ", and 1 unfinished temporary file".to_string(),
                        k => format!(", and {k} unfinished temporary files"),
                    };
                    writeln!(
                        out,
                        "REPAIRED {file}: {n} leftover object{} removed{files}{}",
                        if n == 1 { "" } else { "s" },
                        if done.anchored {
                            ""
                        } else {
                            " (there is no anchor: no dataset is there)"
                        }
                    )?;
                }
                Ok(_) => {}
                // A malformed URL is a usage error (exit status 2), as for any command.
                Err(e) if matches!(e.root_cause(), rntuple::Error::InvalidArgument(_)) => {
                    return Err(Failure::Input(e));
                }
                Err(e) => {
                    writeln!(out, "BAD  {file}: repair: {}", super::failure::describe(&e))?;
                    repair_failures.push(file.as_str());
                }
            }
        }
    }
    let checks = verify_files(&job.files);
    for c in &checks {
        write_check(c, job.json, out)?;
    }
    out.flush()?;
    let mut bad: Vec<&str> = checks
        .iter()
        .filter(|c| !c.is_good())
        .map(|c| c.file.as_str())
        .collect();
    for file in repair_failures {
        if !bad.contains(&file) {
            bad.push(file);
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    Err(Failure::Bad(format!(
        "{} of {} files are bad: {}",
        bad.len(),
        checks.len(),
        bad.join(", ")
    )))
}

/// One file's line (or JSON object).
fn write_check(c: &FileCheck, json: bool, out: &mut impl Write) -> std::io::Result<()> {
    if json {
        let value = serde_json::json!({
            "file": c.file,
            "good": c.is_good(),
            "problems": c.all_problems(),
            "rntuples": c.rntuples.iter().map(|r| serde_json::json!({
                "name": r.name,
                "entries": r.entries,
                "clusters": r.clusters,
                "pages": r.pages,
                "page_bytes": r.page_bytes,
                "problems": r.problems,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{value}")
    } else if c.is_good() {
        let entries: u64 = c.rntuples.iter().map(|r| r.entries).sum();
        let pages: u64 = c.rntuples.iter().map(|r| r.pages).sum();
        let bytes: u64 = c.rntuples.iter().map(|r| r.page_bytes).sum();
        writeln!(
            out,
            "OK   {}: {} RNTuple(s), {entries} entries, {pages} pages ({:.1} MB) read and checked",
            c.file,
            c.rntuples.len(),
            bytes as f64 / 1e6
        )
    } else {
        writeln!(out, "BAD  {}: {}", c.file, c.all_problems().join("; "))
    }
}
