//! The rule on skipped tests, for Rust tests. One source, compiled into the library's unit
//! tests and (by `#[path]`) into the integration tests' `tests/common`: a test that
//! cannot run here may end early only when it is on the repository's allow-list,
//! `tests/allowed_skips.txt` (a test id, or a prefix ending in `*`, then `|` and the
//! reason); any other skip is a failure. `tests/skip_policy.py` applies the same list to
//! pytest. Allowed skips are appended to `$RNTUPLE_SKIP_LOG` when set, for CI's summary.

// Test code: a failed test is a panic.
#![allow(clippy::panic, dead_code)]

use std::io::Write;

/// The allow-list, found from this crate's directory (never an absolute path).
const ALLOW_LIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/allowed_skips.txt");

/// The reason the allow-list gives for skipping `test`, if it lists it.
pub(crate) fn allowed(test: &str) -> Option<String> {
    let list = std::fs::read_to_string(ALLOW_LIST)
        .unwrap_or_else(|e| panic!("cannot read the allow-list of skips {ALLOW_LIST}: {e}"));
    list.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('|'))
        .find(|(pattern, _)| matches(pattern.trim(), test))
        .map(|(_, reason)| reason.trim().to_string())
}

/// `test` is `pattern`, or starts with it where it ends in `*`.
pub(crate) fn matches(pattern: &str, test: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => test.starts_with(prefix),
        None => pattern == test,
    }
}

/// Skips `test` (the caller returns right after) because `why`: allowed only when the
/// allow-list names it, else the test fails here.
pub(crate) fn skip(test: &str, why: &str) {
    let Some(reason) = allowed(test) else {
        panic!(
            "{test} cannot run here ({why}), and a skip fails unless tests/allowed_skips.txt \
             lists the test with its reason"
        );
    };
    eprintln!("SKIPPED {test}: {why} (allowed: {reason})");
    if let Some(log) = std::env::var_os("RNTUPLE_SKIP_LOG") {
        let line = format!("rust {test}: {why}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            panic!("cannot record the skip in {}: {e}", log.to_string_lossy());
        }
    }
}

/// Whether a test's comparisons with ROOT run: always, but for a developer without ROOT
/// who sets `RNTUPLE_NO_ROOT` (then they are skipped); refused under `CI=true`, where
/// ROOT is always installed.
pub(crate) fn root_checks_wanted(test: &str) -> bool {
    if std::env::var_os("RNTUPLE_NO_ROOT").is_none() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("RNTUPLE_NO_ROOT is refused under CI=true: CI compares with ROOT ({test})");
    }
    eprintln!("RNTUPLE_NO_ROOT is set: {test} leaves out its checks against ROOT");
    false
}
