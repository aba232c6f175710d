//! `rntuple cache`: the directory comes from --cache-dir or RNTUPLE_CACHE_DIR, an empty
//! one is reported and never created, and verify finds (exit 1) and repairs (exit 0)
//! what is planted in a cache.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
}

/// Runs `rntuple cache ARGS` with RNTUPLE_CACHE_DIR set to `env_dir` (or unset).
fn cache(args: &[&str], env_dir: Option<&Path>) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rntuple"));
    command.arg("cache").args(args);
    command.env_remove("RNTUPLE_CACHE_MAX_BYTES");
    match env_dir {
        Some(dir) => command.env("RNTUPLE_CACHE_DIR", dir),
        None => command.env_remove("RNTUPLE_CACHE_DIR"),
    };
    let out = command.output().expect("run rntuple");
    Outcome {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(out: &Outcome) -> Value {
    assert_eq!(out.status, 0, "{}", out.stderr);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Runs `rntuple cache ARGS` without a cache directory, with XDG_CACHE_HOME and HOME as
/// given (unset for `None`).
fn cache_by_default(args: &[&str], xdg: Option<&Path>, home: Option<&Path>) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rntuple"));
    command.arg("cache").args(args);
    command.env_remove("RNTUPLE_CACHE_MAX_BYTES");
    command.env_remove("RNTUPLE_CACHE_DIR");
    for (name, value) in [("XDG_CACHE_HOME", xdg), ("HOME", home)] {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    let out = command.output().expect("run rntuple");
    Outcome {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn without_a_directory_the_per_user_default_is_used() {
    let xdg = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // $XDG_CACHE_HOME/rntuple, else ~/.cache/rntuple: reported, never created.
    for (x, expected) in [
        (Some(xdg.path()), xdg.path().join("rntuple")),
        (None, home.path().join(".cache").join("rntuple")),
    ] {
        let stats = json(&cache_by_default(
            &["stats", "--json"],
            x,
            Some(home.path()),
        ));
        assert_eq!(stats["dir"], expected.to_str().unwrap(), "{stats}");
        assert_eq!(stats["exists"], false);
        assert!(!expected.exists());
    }
    // Neither: a usage error that says how to name one.
    for sub in ["stats", "ls", "verify", "clear", "purge"] {
        let out = cache_by_default(&[sub], None, None);
        assert_eq!(out.status, 2, "{sub}: {}", out.stderr);
        assert!(
            out.stderr.contains("RNTUPLE_CACHE_DIR") && out.stderr.contains("--cache-dir"),
            "{sub}: {}",
            out.stderr
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = cache(&["purge", "--cache-dir", d, "--target", "lots"], None);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--target"), "{}", out.stderr);
}

#[test]
fn an_empty_directory_is_an_empty_cache_and_stays_uncreated() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-cache-yet");
    let m = missing.to_str().unwrap();
    let stats = json(&cache(&["stats", "--json", "--cache-dir", m], None));
    assert_eq!(stats["exists"], false);
    assert_eq!(stats["entries"], 0);
    assert_eq!(stats["counters"]["hits"], 0);
    assert_eq!(stats["rows"].as_array().unwrap().len(), 0);
    // RNTUPLE_CACHE_DIR is the default; the flags go before or after the subcommand.
    let ls = json(&cache(&["--json", "ls"], Some(&missing)));
    assert_eq!(ls["rows"].as_array().unwrap().len(), 0);
    let verify = json(&cache(&["verify", "--json"], Some(&missing)));
    assert_eq!(verify["problems"].as_array().unwrap().len(), 0);
    assert_eq!(verify["remaining"], 0);
    let text = cache(&["stats"], Some(&missing));
    assert_eq!(text.status, 0);
    assert!(text.stdout.contains("no cache"), "{}", text.stdout);
    let purge = json(&cache(
        &["purge", "--json", "--target", "1 MB"],
        Some(&missing),
    ));
    assert_eq!(purge["evicted_extents"], 0);
    let clear = json(&cache(&["clear", "--json"], Some(&missing)));
    assert_eq!(clear["deleted_bytes"], 0);
    assert!(!missing.exists(), "no command created the cache");
}

fn old(path: &Path) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
}

#[test]
fn verify_finds_planted_problems_and_repair_fixes_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("rntuple-cache-v1");
    let key = "0123456789abcdef0123456789abcdef";
    let version = "00000000000000000000000000000001";
    let entry = root.join("e").join("01").join(key);
    let extents = entry.join(version).join("x");
    for d in ["tmp", "trash", "stats"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::create_dir_all(&extents).unwrap();
    std::fs::write(entry.join("url"), "https://h/f.root\n").unwrap();
    std::fs::write(entry.join("current"), format!("{version}\n")).unwrap();
    std::fs::write(entry.join(version).join("meta"), "not json").unwrap();
    // An extent file that is not one.
    std::fs::write(extents.join("0-100"), vec![7u8; 300]).unwrap();
    // A temporary file left over an hour ago.
    let stale = root.join("tmp").join("host.1.token.tmp");
    std::fs::write(&stale, b"partial").unwrap();
    old(&stale);
    let found = cache(&["verify", "--json"], Some(dir.path()));
    assert_eq!(found.status, 1, "{}", found.stderr);
    let report: Value = serde_json::from_str(found.stdout.trim()).unwrap();
    assert_eq!(report["broken_metadata"], 1, "{report}");
    assert_eq!(report["stale_temp_files"], 1, "{report}");
    assert_eq!(report["remaining"], 2, "{report}");
    assert!(found.stderr.contains("--repair"), "{}", found.stderr);
    let text = cache(&["verify"], Some(dir.path()));
    assert_eq!(text.status, 1);
    assert!(text.stdout.contains("meta"), "{}", text.stdout);
    assert!(text.stdout.contains("host.1.token.tmp"), "{}", text.stdout);

    let repaired = cache(&["verify", "--repair"], Some(dir.path()));
    assert_eq!(
        repaired.status, 0,
        "{}\n{}",
        repaired.stdout, repaired.stderr
    );
    assert!(
        repaired.stdout.contains("(repaired)"),
        "{}",
        repaired.stdout
    );
    assert!(!stale.exists() && !entry.join(version).exists());
    assert_eq!(cache(&["verify"], Some(dir.path())).status, 0);

    // What is left is an entry whose `current` names nothing: ls shows its URL.
    let ls = cache(&["ls"], Some(dir.path()));
    assert_eq!(ls.status, 0, "{}", ls.stderr);
    assert!(ls.stdout.contains("https://h/f.root"), "{}", ls.stdout);
    let stats = json(&cache(&["stats", "--json"], Some(dir.path())));
    assert_eq!(
        (stats["entries"].as_u64(), stats["extents"].as_u64()),
        (Some(1), Some(0))
    );
    // Clear leaves the user's other files alone.
    std::fs::write(dir.path().join("mine.txt"), b"keep").unwrap();
    let clear = cache(&["clear"], Some(dir.path()));
    assert_eq!(clear.status, 0, "{}", clear.stderr);
    assert!(cache_is_empty(dir.path()));
    assert!(dir.path().join("mine.txt").exists());
}

fn cache_is_empty(dir: &Path) -> bool {
    let stats = json(&cache(&["stats", "--json"], Some(dir)));
    stats["entries"] == 0 && stats["disk_bytes"] == 0
}
