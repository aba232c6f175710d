//! Times the writer alone: reads an RNTuple into memory (untimed), then writes it again
//! in batches of `BATCH` entries into a ROOT file (zstd level 5 unless `COMPRESSION`).
//!
//! `cargo run --release --example write_bench -- IN.root OUT.root [BATCH] [THREADS] [COMPRESSION]`

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rntuple::compression::CompressionSettings;
use rntuple::container::FileWriter;
use rntuple::read::RNTupleReader;
use rntuple::write::{schema_for_copy, RNTupleWriter, WriteOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The system allocator, counting the bytes live on the Rust heap and their peak, so that
/// the writer's own buffers can be told apart from what the allocator keeps.
struct CountingAllocator;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator unchanged; the counters are
// bookkeeping only. Exercised by every run of this example.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let now = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(now, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() -> rntuple::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(input), Some(output)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: write_bench IN.root OUT.root [BATCH] [THREADS] [COMPRESSION]");
        std::process::exit(2);
    };
    let batch: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    if let Some(threads) = args.get(4).and_then(|s| s.parse().ok()) {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .map_err(|e| rntuple::Error::InvalidArgument(e.to_string()))?;
    }
    let reader = RNTupleReader::open_path(input, None)?;
    let n = reader.num_entries();
    let mut batches = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + batch).min(n);
        batches.push(reader.read(None, start..end)?);
        start = end;
    }
    let bytes: usize = batches.iter().map(|b| b.get_array_memory_size()).sum();
    let spec = args.get(5).map_or("zstd:5", String::as_str);
    let compression = CompressionSettings::parse(spec)?;
    let options = WriteOptions::default().with_compression(compression);
    // Peak memory of the writing alone: reset the high-water mark (Linux), note the base.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss0 = status_kb("VmRSS:");
    let live0 = LIVE.load(Ordering::Relaxed);
    PEAK.store(live0, Ordering::Relaxed);
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let mut file = FileWriter::create(std::path::Path::new(output), compression)?;
    let schema = schema_for_copy(reader.descriptor())?;
    let mut writer = RNTupleWriter::new(&mut file, "Events", schema, options)?;
    for b in &batches {
        writer.write_batch(b)?;
    }
    let anchor = writer.finish()?;
    file.write_anchor("Events", &anchor.to_object())?;
    file.finish()?;
    let secs = t.elapsed().as_secs_f64();
    let (user, sys) = cpu_seconds();
    println!(
        "{n} entries, {:.0} MB in Arrow, written in {secs:.3} s ({:.0} MB/s), cpu {:.2} user {:.2} sys",
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs,
        user - cpu0.0,
        sys - cpu0.1
    );
    println!(
        "peak memory above the input while writing: {} MB",
        (status_kb("VmHWM:") - rss0) / 1024
    );
    println!(
        "of which the writer's own buffers (Rust heap, live at the peak): {} MB",
        (PEAK.load(Ordering::Relaxed) - live0) >> 20
    );
    Ok(())
}

/// User and system CPU seconds of this process so far (all threads), from /proc.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 100.0
    };
    // After the command name: state is field 0, utime 11, stime 12.
    (tick(11), tick(12))
}

/// A kB field of /proc/self/status.
fn status_kb(key: &str) -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
