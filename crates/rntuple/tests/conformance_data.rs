//! The conformance data is found relative to the repository (`../shared`) or through
//! `$RNTUPLE_CONFORMANCE_DIR`, and a missing or empty folder makes the tests that need it
//! FAIL with a message naming the folder (see `common/mod.rs`), never skip.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use std::path::PathBuf;
use std::process::Command;

/// The panic message of `f`, which must panic.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("expected a panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("conformance_data-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_conformance_data_is_found_beside_the_repository() {
    let files = common::conformance_files();
    assert_eq!(files.len(), 51, "{files:?}");
    if std::env::var_os(common::CONFORMANCE_ENV).is_none() {
        let expected = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/rntuple-validation-1.0/write")
            .canonicalize()
            .unwrap();
        assert_eq!(files[0].parent().unwrap().canonicalize().unwrap(), expected);
    }
    assert_eq!(
        common::conformance_read_dir().read_dir().unwrap().count(),
        51
    );
}

#[test]
fn a_missing_folder_is_an_error_naming_it() {
    let dir = scratch("missing").join("write");
    let message = panic_message(|| {
        common::conformance_files_in(&dir);
    });
    assert!(message.contains("conformance data missing"), "{message}");
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(message.contains("../shared/conformance"), "{message}");
    assert!(message.contains("RNTUPLE_CONFORMANCE_DIR"), "{message}");
}

#[test]
fn an_empty_folder_is_an_error_naming_it() {
    let dir = scratch("empty");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "not a ROOT file").unwrap();
    let message = panic_message(|| {
        common::conformance_files_in(&dir);
    });
    assert!(message.contains("holds no .root files"), "{message}");
    assert!(message.contains(&dir.display().to_string()), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run by [`a_test_needing_missing_data_fails`] in a child process, with
/// `$RNTUPLE_CONFORMANCE_DIR` pointing at a folder that does not exist.
#[test]
#[ignore = "run in a child process by a_test_needing_missing_data_fails"]
fn needs_the_conformance_data() {
    assert!(!common::conformance_files().is_empty());
}

#[test]
fn a_test_needing_missing_data_fails() {
    let nowhere = scratch("nowhere");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "needs_the_conformance_data",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(common::CONFORMANCE_ENV, &nowhere)
        .output()
        .unwrap();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "the test passed:\n{output}");
    assert!(output.contains("1 failed"), "{output}");
    assert!(output.contains("conformance data missing"), "{output}");
    assert!(
        output.contains(&nowhere.join("write").display().to_string()),
        "{output}"
    );
}
