//! The allow-list of skips (`test_skips.rs`, whose own tests would run again in every
//! integration test that includes it).

// Test code: a failed test is a panic.
#![allow(clippy::panic)]

use crate::test_skips::{allowed, matches, skip};

#[test]
fn only_listed_tests_may_skip() {
    assert!(matches("rust: a::b*", "rust: a::b::c"));
    assert!(!matches("rust: a::b", "rust: a::b::c"));
    assert!(allowed("rust: no::such::test").is_none());
    let listed = allowed(
        "rust: rntuple_io::cache::tests::a_full_disk_is_passed_by_and_leaves_no_partial_extent",
    );
    assert!(listed.is_some_and(|r| r.contains("tmpfs")));
    let refused = std::panic::catch_unwind(|| skip("rust: no::such::test", "no reason"));
    assert!(refused.is_err());
}
