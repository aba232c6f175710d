//! Deterministic test bytes, each a function of its offset alone (splitmix64's mixing of
//! the offset): a byte read from the wrong place, at any distance, differs from the one
//! expected, and any range can be computed without the bytes before it.
//!
//! One file for the byte sources' unit tests (`rntuple-io`'s `lib.rs` includes it, for
//! `xrootd/tests.rs` and `s3/tests.rs`) and the integration tests (`tests/common`).

/// `len` test bytes from offset 0.
pub(crate) fn test_bytes(len: usize) -> Vec<u8> {
    (0..len as u64).map(byte_at).collect()
}

/// The test byte at `offset`.
fn byte_at(offset: u64) -> u8 {
    let mut z = offset.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u8
}
