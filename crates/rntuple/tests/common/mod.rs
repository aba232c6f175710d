//! Helpers shared by the integration tests (`mod common;` in a test file).
//!
//! The conformance data (the RNTuple Validation Suite files written by ROOT 6.40 and
//! ROOT's reading of them) lives in `../shared/conformance/rntuple-validation-1.0`
//! relative to the repository, or where `$RNTUPLE_CONFORMANCE_DIR` says. A test that
//! needs it and does not find it FAILS, naming the path it looked at: it never skips.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]
// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use rntuple::container::RootFile;
use rntuple::format::{Anchor, Footer};
use rntuple::io::MemorySource;
use rntuple::read::RNTupleReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment variable that overrides where the conformance data is.
pub(crate) const CONFORMANCE_ENV: &str = "RNTUPLE_CONFORMANCE_DIR";

/// Where the conformance data is expected: `$RNTUPLE_CONFORMANCE_DIR`, else
/// `../shared/conformance/rntuple-validation-1.0` beside the repository (found from this
/// crate's manifest directory, never from an absolute path).
pub(crate) fn conformance_root() -> PathBuf {
    match std::env::var_os(CONFORMANCE_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/rntuple-validation-1.0"),
    }
}

/// The conformance data's `write/` folder (the `.root` files); panics with a clear
/// message when it is missing or holds no `.root` files.
pub(crate) fn conformance_write_dir() -> PathBuf {
    let dir = conformance_root().join("write");
    conformance_files_in(&dir);
    dir
}

/// The conformance data's `read/` folder (ROOT's reading, one `.json` per case); panics
/// when it is missing or holds no `.json` files.
pub(crate) fn conformance_read_dir() -> PathBuf {
    let dir = conformance_root().join("read");
    files_with_extension(&dir, "json");
    dir
}

/// Every conformance `.root` file, sorted; panics when there are none.
pub(crate) fn conformance_files() -> Vec<PathBuf> {
    conformance_files_in(&conformance_root().join("write"))
}

/// The `.root` files of `dir`, sorted; panics with a message naming `dir` when it is
/// missing or holds none.
pub(crate) fn conformance_files_in(dir: &Path) -> Vec<PathBuf> {
    files_with_extension(dir, "root")
}

/// The conformance file of `case` (e.g. `"types.string"`); panics when the data is
/// missing or the case is not there.
pub(crate) fn conformance_file(case: &str) -> PathBuf {
    let path = conformance_write_dir().join(format!("{case}.root"));
    assert!(
        path.is_file(),
        "conformance case {case} missing: {} does not exist",
        path.display()
    );
    path
}

fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let hint = format!(
        "the conformance data (the RNTuple Validation Suite) is expected in \
         ../shared/conformance/rntuple-validation-1.0 beside the repository, or where \
         ${CONFORMANCE_ENV} points"
    );
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
        panic!(
            "conformance data missing: cannot read {}: {e}; {hint}",
            dir.display()
        )
    });
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("reading a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    assert!(
        !files.is_empty(),
        "conformance data missing: {} holds no .{extension} files; {hint}",
        dir.display()
    );
    files.sort();
    files
}

/// Byte ranges of the header, footer and first page list envelopes and of the largest
/// page of the first cluster, as (name, offset, size).
pub(crate) fn regions(bytes: &[u8]) -> Vec<(String, u64, u64)> {
    let file = RootFile::open(Arc::new(MemorySource::new("test.root", bytes.to_vec()))).unwrap();
    let key = file.rntuple_anchors().unwrap().remove(0);
    let anchor = Anchor::from_object(&key.object, "anchor").unwrap();
    let reader = RNTupleReader::open(&file, None).unwrap();
    let page = reader.descriptor().clusters[0]
        .columns
        .iter()
        .flat_map(|c| c.pages.iter())
        .max_by_key(|p| p.locator.size)
        .unwrap()
        .locator;
    let footer_raw =
        &bytes[anchor.seek_footer as usize..(anchor.seek_footer + anchor.nbytes_footer) as usize];
    let footer_env = if anchor.nbytes_footer == anchor.len_footer {
        footer_raw.to_vec()
    } else {
        rntuple::compression::decompress(footer_raw, anchor.len_footer as usize, "footer").unwrap()
    };
    let footer = Footer::read(&footer_env[8..footer_env.len() - 8]).unwrap();
    let page_list = footer.cluster_groups[0].page_list.locator;
    vec![
        (
            "header envelope".into(),
            anchor.seek_header,
            anchor.nbytes_header,
        ),
        (
            "footer envelope".into(),
            anchor.seek_footer,
            anchor.nbytes_footer,
        ),
        (
            "page list envelope".into(),
            page_list.offset,
            page_list.size,
        ),
        ("page".into(), page.offset, page.size),
    ]
}
