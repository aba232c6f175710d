//! Reads by default (`RNTUPLE_HUGE_PAGES` unset, `never`): the decoded columns are not
//! advised for transparent huge pages, which on a virtual machine that hands freed memory
//! back to its host made a one-shot read 3.6x slower (`bench/RESULTS.md`).
//!
//! One test in this binary: the variable is read once per process, and this one must not
//! have it set. `huge_pages.rs` is the opt-in's counterpart.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(target_os = "linux")]

mod common;

use rntuple_io::HUGE_PAGES_VARIABLE;

#[test]
fn columns_are_not_advised_for_huge_pages_by_default() {
    std::env::remove_var(HUGE_PAGES_VARIABLE);
    let flags = common::flags_of_a_decoded_column();
    assert!(!flags.iter().any(|f| f == "hg"), "VmFlags {flags:?}");
}
