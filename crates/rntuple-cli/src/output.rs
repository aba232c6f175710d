//! What commands that write files share: the output started under a temporary name,
//! and the progress bar.

use super::Failure;
use rntuple_io::{ensure_distinct, AtomicFile, Existing};

/// Starts the output file `output` (written under a temporary name, renamed when
/// complete), refusing one of the `inputs` whatever the path's spelling, and an
/// existing file unless `force`.
pub(crate) fn open_output(
    output: &str,
    inputs: &[&str],
    force: bool,
) -> Result<AtomicFile, Failure> {
    let path = std::path::Path::new(output);
    ensure_distinct(path, inputs)?;
    if !force {
        rntuple_io::refuse_existing(path)?;
    }
    let existing = if force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    Ok(AtomicFile::create(path, existing)?)
}

/// A progress bar over `entries` on standard error, drawn only when standard error is a
/// terminal and (when `to_stdout`) standard output is not, so it never mixes with output.
pub(crate) fn progress(entries: u64, to_stdout: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || (to_stdout && std::io::stdout().is_terminal()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(entries);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} entries ({per_sec}, {eta} left)",
    ) {
        bar.set_style(style);
    }
    bar
}
