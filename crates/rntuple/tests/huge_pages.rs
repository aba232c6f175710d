//! Reads that ask for transparent huge pages (`RNTUPLE_HUGE_PAGES=always`): the decoded
//! columns hold the written values, and their memory is advised for huge pages.
//!
//! One test in this binary: it sets the process's `RNTUPLE_HUGE_PAGES`, which is read
//! once per process, before the first reader is opened. `huge_pages_off.rs` is the
//! default's counterpart.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(target_os = "linux")]

mod common;

use rntuple_io::HUGE_PAGES_VARIABLE;

#[test]
fn columns_decoded_into_huge_pages_hold_the_written_values() {
    std::env::set_var(HUGE_PAGES_VARIABLE, "always");
    let flags = common::flags_of_a_decoded_column();
    // A kernel with transparent huge pages marks the mapping "hg" (MADV_HUGEPAGE); one
    // without them refuses the advice.
    let kernel_has_them = std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists();
    assert_eq!(
        flags.iter().any(|f| f == "hg"),
        kernel_has_them,
        "VmFlags {flags:?}"
    );
}
