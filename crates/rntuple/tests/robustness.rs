//! Bad input: truncated files and flipped bytes in every metadata envelope and in a page
//! must end in a clean error or in values equal to the original, never a panic, a hang,
//! or an allocation out of proportion to the file.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use arrow_array::RecordBatch;
use rntuple::container::RootFile;
use rntuple::read::RNTupleReader;
use rntuple::Error;
use rntuple_io::MemorySource;
use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::xxh3_64;

/// Records the largest single allocation the test process makes.
struct LargestAllocation;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call unchanged to the system allocator; only records sizes.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// No single allocation may exceed this while reading a corrupted file of a few tens of
/// KB: ROOT's largest compression block (16 MiB) plus room for the decoded data.
const ALLOCATION_LIMIT: usize = 32 << 20;
/// A read of these small files takes milliseconds; anything near this is a hang.
const READ_TIME_LIMIT: Duration = Duration::from_secs(5);

fn data_file(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Opens the only RNTuple of `bytes` and reads every field of every entry.
fn read_all(bytes: Vec<u8>) -> Result<RecordBatch, Error> {
    let file = RootFile::open(Arc::new(MemorySource::new("test.root", bytes)))?;
    let reader = RNTupleReader::open(&file, None)?;
    reader.read(None, 0..reader.num_entries())
}

#[derive(Default, Debug)]
struct Tally {
    errors: usize,
    equal: usize,
    problems: Vec<String>,
}

impl Tally {
    /// Reads `bytes`, which must give an error or exactly `original`.
    fn check(&mut self, label: &str, bytes: Vec<u8>, original: &RecordBatch) {
        LARGEST.store(0, Ordering::Relaxed);
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| read_all(bytes)));
        let elapsed = start.elapsed();
        let largest = LARGEST.load(Ordering::Relaxed);
        if elapsed > READ_TIME_LIMIT {
            self.problems.push(format!("{label}: took {elapsed:?}"));
        }
        if largest > ALLOCATION_LIMIT {
            self.problems
                .push(format!("{label}: allocated {largest} bytes at once"));
        }
        match outcome {
            Err(_) => self.problems.push(format!("{label}: panicked")),
            Ok(Err(e)) => {
                if let Error::ChecksumMismatch { what, .. } = e.root_cause() {
                    if !(what.contains("envelope")
                        || what.contains("page")
                        || what.contains("anchor"))
                    {
                        self.problems
                            .push(format!("{label}: checksum error does not say where: {e}"));
                    }
                }
                self.errors += 1;
            }
            Ok(Ok(batch)) if &batch == original => self.equal += 1,
            Ok(Ok(_)) => self
                .problems
                .push(format!("{label}: read different values without an error")),
        }
    }
}

fn original(bytes: &[u8]) -> RecordBatch {
    let batch = read_all(bytes.to_vec()).unwrap();
    assert!(batch.num_rows() > 100 && batch.num_columns() >= 8);
    batch
}

fn truncations(name: &str) {
    let bytes = data_file(name);
    let original = original(&bytes);
    let mut tally = Tally::default();
    for i in 0..200 {
        let len = bytes.len() * i / 200;
        tally.check(
            &format!("{name} cut at {len}"),
            bytes[..len].to_vec(),
            &original,
        );
    }
    assert!(tally.problems.is_empty(), "{:#?}", tally.problems);
    assert_eq!(tally.errors, 200, "every truncation is an error");
}

#[test]
fn truncated_files_give_errors_compressed() {
    truncations("../../examples/events.root");
}

#[test]
fn truncated_files_give_errors_uncompressed() {
    truncations("tests/data/events_uncompressed.root");
}

/// Flips every byte of each region in turn (checksums left as they are).
fn flips(name: &str) {
    let bytes = data_file(name);
    let original = original(&bytes);
    let mut tally = Tally::default();
    for (region, offset, size) in common::regions(&bytes) {
        for at in offset..offset + size {
            let mut bad = bytes.clone();
            bad[at as usize] ^= 0xff;
            tally.check(&format!("{name}: {region} byte {at}"), bad, &original);
        }
    }
    assert!(
        tally.problems.is_empty(),
        "{} problems:\n{:#?}",
        tally.problems.len(),
        tally.problems
    );
    assert!(tally.errors > 0);
    eprintln!(
        "{name}: {} flipped bytes: {} errors, {} reads equal to the original",
        tally.errors + tally.equal,
        tally.errors,
        tally.equal
    );
}

#[test]
fn flipped_bytes_give_errors_or_the_same_values_compressed() {
    flips("../../examples/events.root");
}

#[test]
fn flipped_bytes_give_errors_or_the_same_values_uncompressed() {
    flips("tests/data/events_uncompressed.root");
}

#[test]
fn checksum_errors_name_the_envelope_or_page() {
    let bytes = data_file("tests/data/events_uncompressed.root");
    for (region, offset, size) in common::regions(&bytes) {
        let mut bad = bytes.clone();
        bad[(offset + size / 2) as usize] ^= 0x01;
        let err = read_all(bad).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err.root_cause(), Error::ChecksumMismatch { .. }),
            "{region}: {text}"
        );
        let wanted = if region == "page" {
            "page at byte offset"
        } else {
            region.as_str()
        };
        assert!(text.contains(wanted), "{region}: {text}");
    }
}

/// Flips bytes of the uncompressed envelopes and then fixes their checksums, so that the
/// parsers themselves meet the garbage: they may return anything but must not panic,
/// hang or allocate without bound.
#[test]
fn corrupt_metadata_behind_valid_checksums_never_panics() {
    let bytes = data_file("tests/data/events_uncompressed.root");
    let original = original(&bytes);
    let mut panics = Vec::new();
    let mut mutations = 0usize;
    for (region, offset, size) in common::regions(&bytes) {
        if region == "page" {
            continue;
        }
        let (start, end) = (offset as usize, (offset + size) as usize);
        for at in start + 8..end - 8 {
            for mask in [0xffu8, 0x80, 0x01] {
                let mut bad = bytes.clone();
                bad[at] ^= mask;
                let sum = xxh3_64(&bad[start..end - 8]);
                bad[end - 8..end].copy_from_slice(&sum.to_le_bytes());
                let mut tally = Tally::default();
                tally.check(&format!("{region} byte {at} ^ {mask:#x}"), bad, &original);
                mutations += 1;
                panics.extend(
                    tally
                        .problems
                        .into_iter()
                        .filter(|p| !p.ends_with("read different values without an error")),
                );
            }
        }
    }
    eprintln!(
        "{mutations} metadata mutations behind valid checksums: no panic, hang or huge allocation"
    );
    assert!(
        panics.is_empty(),
        "{} problems:\n{:#?}",
        panics.len(),
        &panics[..panics.len().min(40)]
    );
}
