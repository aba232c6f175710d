//! Micro-benchmarks of the read kernels (divan): zstd page decompression in ROOT's chunk
//! format, byte unsplit of 4- and 8-byte types, zigzag + unsplit, delta index → offsets and
//! bit unpacking, each over one 64 Ki-element page, reported in bytes of output per
//! second (of output). `cargo bench -p rntuple --bench kernels`.

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use divan::counter::BytesCount;
use divan::{black_box, Bencher};
use rntuple::compression::{compress, decompress_into, Algorithm, CompressionSettings};
use rntuple::encoding::{decode_page_into, ColumnEncoding, ColumnType, ColumnValues};

fn main() {
    divan::main();
}

/// Elements per page.
const N: usize = 64 * 1024;

/// Deterministic pseudo-random bytes (xorshift), with a skew towards small values in the
/// high bytes like real split pages.
fn page_bytes(len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 4 == 3 {
                (x & 0x3) as u8
            } else {
                x as u8
            }
        })
        .collect()
}

fn decode(bencher: Bencher, t: ColumnType) {
    let enc = ColumnEncoding::of_type(t);
    let len = enc.page_bytes(N as u64).expect("page size") as usize;
    let data = page_bytes(len);
    let mut out = ColumnValues::zeros(t, N);
    // Output bytes: booleans are one byte each, 32-bit indexes widen to 64-bit offsets.
    let out_bytes = match t {
        ColumnType::Bit => N,
        ColumnType::SplitIndex32 => 8 * N,
        _ => len,
    };
    bencher
        .counter(BytesCount::new(out_bytes))
        .bench_local(|| decode_page_into(&enc, black_box(&data), N as u64, 0, out.as_values_mut()));
}

#[divan::bench]
fn unsplit_real32(b: Bencher) {
    decode(b, ColumnType::SplitReal32)
}

#[divan::bench]
fn unsplit_real64(b: Bencher) {
    decode(b, ColumnType::SplitReal64)
}

#[divan::bench]
fn unsplit_zigzag_int32(b: Bencher) {
    decode(b, ColumnType::SplitInt32)
}

#[divan::bench]
fn unsplit_zigzag_int64(b: Bencher) {
    decode(b, ColumnType::SplitInt64)
}

#[divan::bench]
fn delta_index64_to_offsets(b: Bencher) {
    decode(b, ColumnType::SplitIndex64)
}

#[divan::bench]
fn delta_index32_to_offsets(b: Bencher) {
    decode(b, ColumnType::SplitIndex32)
}

#[divan::bench]
fn plain_real32(b: Bencher) {
    decode(b, ColumnType::Real32)
}

#[divan::bench]
fn bit_unpack(b: Bencher) {
    decode(b, ColumnType::Bit)
}

#[divan::bench]
fn zstd_page(bencher: Bencher) {
    // A split float page: what ROOT's default zstd 505 mostly decompresses.
    let enc = ColumnEncoding::of_type(ColumnType::SplitReal32);
    let len = enc.page_bytes(N as u64).expect("page size") as usize;
    let raw = page_bytes(len);
    let packed = compress(&raw, CompressionSettings::new(Algorithm::Zstd, 5)).expect("zstd");
    let mut out = vec![0u8; len];
    bencher
        .counter(BytesCount::new(len))
        .bench_local(|| decompress_into(black_box(&packed), &mut out, "page"));
}
