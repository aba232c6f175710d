//! Decoding ahead (`RangeBatches::decode_ahead`): the same batches and errors, in the
//! same order, as decoding when asked; exactly one batch decoded ahead of the caller;
//! dropping the iterator stops and joins its thread.
//!
//! What must happen is waited for (`wait_for`: counts of reads and hints, up to a minute);
//! what must not happen is watched for over a window scaled to how long the same work
//! just took (`watch_window`), so that a loaded machine neither fails a correct reader
//! nor hides a wrong one.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use arrow_array::RecordBatch;
use rntuple::read::RNTupleReader;
use rntuple::Result;
use rntuple_io::{
    read_each, Access, ByteRange, IoMetricsSnapshot, MemorySource, RangeBuffer, ReadAt, ReadHints,
    ReadRequest, Source, SourceProfile,
};
use std::collections::HashSet;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// 12 fields (scalars and vectors), 40k entries in small clusters.
fn written() -> (Vec<u8>, rntuple::format::Anchor) {
    let batch = common::scalars_and_vectors(40_000, 12);
    common::write_in_memory(
        common::schema_builder_of(&batch).finish(),
        &batch,
        64 << 10,
        8 << 10,
    )
}

/// Memory that records the offset of every read, can wait before each read, panics on a
/// read at `panic_at`, and says it is remote when asked to.
struct Recording {
    inner: MemorySource,
    offsets: Mutex<Vec<u64>>,
    delay: Duration,
    panic_at: Option<u64>,
    remote: bool,
    /// The ranges the reader said it will need (read-ahead hints).
    asked: Mutex<Vec<ByteRange>>,
    /// How many reads had completed when the first hint came.
    reads_before_hints: Mutex<Option<usize>>,
    /// Reads at these offsets wait (at most 30 s) for the first hint: whether the hints
    /// are given before those pages are read does not depend on how soon the thread
    /// that gives them runs.
    after_hints: Mutex<HashSet<u64>>,
}

impl Recording {
    /// Waits until the first hint came, at most 30 s.
    fn wait_for_hints(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.reads_before_hints.lock().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl ReadAt for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_at(&self, offset: u64, len: u64) -> rntuple_io::Result<Vec<u8>> {
        assert_ne!(Some(offset), self.panic_at, "the source breaks down");
        if self.after_hints.lock().unwrap().contains(&offset) {
            self.wait_for_hints();
        }
        std::thread::sleep(self.delay);
        self.offsets.lock().unwrap().push(offset);
        self.inner.read_at(offset, len)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.inner.metrics()
    }
    fn profile(&self) -> SourceProfile {
        if self.remote {
            SourceProfile::with_hints(ReadHints::REMOTE)
        } else {
            self.inner.profile()
        }
    }
    fn read(&self, request: ReadRequest<'_>) -> rntuple_io::Result<Vec<RangeBuffer>> {
        if request.access != Access::WillNeed {
            return read_each(self, &request);
        }
        // The hints the reader gave, and how many reads came before the first.
        let reads = self.offsets.lock().unwrap().len();
        self.reads_before_hints.lock().unwrap().get_or_insert(reads);
        self.asked.lock().unwrap().extend_from_slice(request.ranges);
        Ok(Vec::new())
    }
}

fn recording(bytes: &[u8]) -> Recording {
    Recording {
        inner: MemorySource::new("mem", bytes.to_vec()),
        offsets: Mutex::new(Vec::new()),
        delay: Duration::ZERO,
        panic_at: None,
        remote: false,
        asked: Mutex::new(Vec::new()),
        reads_before_hints: Mutex::new(None),
        after_hints: Mutex::new(HashSet::new()),
    }
}

fn open(source: &Arc<Recording>, anchor: &rntuple::format::Anchor) -> RNTupleReader {
    let source: Source = source.clone();
    RNTupleReader::from_anchor(source, *anchor, "t".into()).unwrap()
}

/// One entry range per cluster.
fn cluster_ranges(reader: &RNTupleReader) -> Vec<Range<u64>> {
    reader
        .descriptor()
        .clusters
        .iter()
        .map(|c| c.first_entry..c.first_entry + c.n_entries)
        .collect()
}

/// The offsets of the pages of cluster `k` (every column).
fn page_offsets(reader: &RNTupleReader, k: usize) -> HashSet<u64> {
    let d = reader.descriptor();
    let cluster = &d.clusters[k];
    (0..d.columns.len() as u32)
        .filter_map(|col| cluster.column(col))
        .flat_map(|cp| cp.pages.iter().map(|p| p.locator.offset))
        .collect()
}

/// Whether every page of cluster `k` has been read.
fn read_all_of(source: &Recording, reader: &RNTupleReader, k: usize) -> bool {
    let read: HashSet<u64> = source.offsets.lock().unwrap().iter().copied().collect();
    page_offsets(reader, k).is_subset(&read)
}

/// Whether any page of cluster `k` has been read.
fn read_any_of(source: &Recording, reader: &RNTupleReader, k: usize) -> bool {
    let pages = page_offsets(reader, k);
    source
        .offsets
        .lock()
        .unwrap()
        .iter()
        .any(|o| pages.contains(o))
}

/// Waits (up to 60 s) until `done` holds; how long that took.
fn wait_for(what: &str, done: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    start.elapsed()
}

/// How long to watch for a step that must not come (a batch or a hint too early), after
/// a step of the same work took `took`: three times that, at least `floor`. A thread that
/// wrongly went on would take about as long again to show it, and the window grows with
/// the machine's load as the step does. (Nothing is timed the other way: a correct
/// reader passes however long the window.)
fn watch_window(took: Duration, floor: Duration) -> Duration {
    (took * 3).max(floor)
}

#[test]
fn decoding_ahead_gives_the_same_batches() {
    let (bytes, anchor) = written();
    for remote in [false, true] {
        let source = Arc::new(Recording {
            remote,
            ..recording(&bytes)
        });
        let reader = open(&source, &anchor);
        let n = reader.num_entries();
        let mut ranges = cluster_ranges(&reader);
        assert!(ranges.len() >= 6, "{} clusters", ranges.len());
        // Ranges across cluster bounds, a repeated one, an empty one.
        ranges.extend([17..n - 5, 0..n, 100..100, 17..n - 5]);
        let names: Option<Vec<String>> = Some(["v1", "s4", "v9"].map(String::from).to_vec());
        for names in [None, names] {
            let plain: Vec<RecordBatch> = reader
                .read_ranges(names.as_deref(), ranges.clone())
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            let ahead: Vec<RecordBatch> = reader
                .read_ranges(names.as_deref(), ranges.clone())
                .unwrap()
                .decode_ahead()
                .collect::<Result<_>>()
                .unwrap();
            assert_eq!(plain.len(), ranges.len());
            assert_eq!(ahead, plain, "remote {remote}, fields {names:?}");
        }
    }
}

#[test]
fn an_error_comes_at_its_batch_after_the_batches_before_it() {
    let (mut bytes, anchor) = written();
    let reader = open(&Arc::new(recording(&bytes)), &anchor);
    let broken = 3;
    // A byte of a page of cluster 3 flipped: its checksum fails.
    let offset = *page_offsets(&reader, broken).iter().min().unwrap() as usize;
    bytes[offset + 2] ^= 0x5a;
    let source = Arc::new(recording(&bytes));
    let reader = open(&source, &anchor);
    let ranges = cluster_ranges(&reader);
    let plain: Vec<Result<RecordBatch>> =
        reader.read_ranges(None, ranges.clone()).unwrap().collect();
    let ahead: Vec<Result<RecordBatch>> = reader
        .read_ranges(None, ranges)
        .unwrap()
        .decode_ahead()
        .collect();
    for got in [&plain, &ahead] {
        // The batches before the broken one, then its error, then nothing.
        assert_eq!(got.len(), broken + 1);
        assert!(got[..broken].iter().all(Result::is_ok));
        let message = got[broken].as_ref().unwrap_err().to_string();
        assert!(message.contains("cluster 3"), "{message}");
    }
    for (a, b) in plain[..broken].iter().zip(&ahead[..broken]) {
        assert_eq!(a.as_ref().unwrap(), b.as_ref().unwrap());
    }
}

#[test]
fn a_panic_while_decoding_ahead_is_an_error_at_its_batch() {
    let (bytes, anchor) = written();
    let probe = open(&Arc::new(recording(&bytes)), &anchor);
    let source = Arc::new(Recording {
        panic_at: page_offsets(&probe, 2).iter().min().copied(),
        ..recording(&bytes)
    });
    let reader = open(&source, &anchor);
    let got: Vec<Result<RecordBatch>> = reader
        .read_ranges(None, cluster_ranges(&reader))
        .unwrap()
        .decode_ahead()
        .collect();
    assert_eq!(got.len(), 3);
    assert!(got[0].is_ok() && got[1].is_ok());
    let message = got[2].as_ref().unwrap_err().to_string();
    assert!(message.contains("panicked"), "{message}");
}

#[test]
fn exactly_one_batch_is_decoded_ahead() {
    let (bytes, anchor) = written();
    let source = Arc::new(recording(&bytes));
    let reader = open(&source, &anchor);
    let mut batches = reader
        .read_ranges(None, cluster_ranges(&reader))
        .unwrap()
        .decode_ahead();
    // Before anything is asked for, the first batch is decoded, and only it.
    let took = wait_for("batch 0 read", || read_all_of(&source, &reader, 0));
    std::thread::sleep(watch_window(took, Duration::from_millis(200)));
    assert!(!read_any_of(&source, &reader, 1), "batch 1 started early");
    for k in 0..4 {
        let batch = batches.next().unwrap().unwrap();
        assert_eq!(
            batch.num_rows() as u64,
            reader.descriptor().clusters[k].n_entries
        );
        // While the caller holds batch k, batch k + 1 is decoded; batch k + 2 is not
        // started until k + 1 is taken.
        let took = wait_for("the next batch read", || {
            read_all_of(&source, &reader, k + 1)
        });
        std::thread::sleep(watch_window(took, Duration::from_millis(200)));
        assert!(
            !read_any_of(&source, &reader, k + 2),
            "batch {} started while {k} is held",
            k + 2
        );
    }
}

#[test]
fn dropping_the_iterator_stops_its_thread() {
    let (bytes, anchor) = written();
    // Slow reads: a batch takes a while to decode, and the drop comes in the middle.
    let source = Arc::new(Recording {
        delay: Duration::from_millis(3),
        ..recording(&bytes)
    });
    let reader = open(&source, &anchor);
    let held = Arc::strong_count(&source);
    for taken in [0, 1, 2] {
        let mut batches = reader
            .read_ranges(None, cluster_ranges(&reader))
            .unwrap()
            .decode_ahead();
        for _ in 0..taken {
            batches.next().unwrap().unwrap();
        }
        assert!(
            Arc::strong_count(&source) > held,
            "the thread holds the reader"
        );
        let start = Instant::now();
        drop(batches);
        // The thread is joined: its reader (and the source it shares) is gone.
        assert_eq!(Arc::strong_count(&source), held, "after {taken} batches");
        assert!(start.elapsed() < Duration::from_secs(20));
        let reads = source.offsets.lock().unwrap().len();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            source.offsets.lock().unwrap().len(),
            reads,
            "no read after the drop"
        );
    }
    // Read to the end: the thread ends by itself, and the iterator stays at its end.
    let mut batches = reader
        .read_ranges(None, cluster_ranges(&reader))
        .unwrap()
        .decode_ahead();
    let n = batches
        .by_ref()
        .map(|b| b.unwrap().num_rows() as u64)
        .sum::<u64>();
    assert_eq!(n, reader.num_entries());
    assert!(batches.next().is_none());
    assert_eq!(Arc::strong_count(&source), held);
}

/// Whether every page of cluster `k` lies inside the ranges asked for ahead.
fn asked_all_of(source: &Recording, reader: &RNTupleReader, k: usize) -> bool {
    let asked = source.asked.lock().unwrap();
    page_offsets(reader, k)
        .iter()
        .all(|&o| asked.iter().any(|r| r.offset <= o && o < r.offset + r.len))
}

/// Whether any page of cluster `k` lies inside the ranges asked for ahead.
fn asked_any_of(source: &Recording, reader: &RNTupleReader, k: usize) -> bool {
    let asked = source.asked.lock().unwrap();
    page_offsets(reader, k)
        .iter()
        .any(|&o| asked.iter().any(|r| r.offset <= o && o < r.offset + r.len))
}

/// How many asked-for ranges hold the first page of cluster `k`.
fn times_asked(source: &Recording, reader: &RNTupleReader, k: usize) -> usize {
    let first = *page_offsets(reader, k).iter().min().unwrap();
    let asked = source.asked.lock().unwrap();
    asked
        .iter()
        .filter(|r| r.offset <= first && first < r.offset + r.len)
        .count()
}

#[test]
fn a_local_read_asks_for_the_next_clusters_ahead() {
    let (bytes, anchor) = written();
    let source = Arc::new(recording(&bytes));
    let reader = open(&source, &anchor);
    let ranges = cluster_ranges(&reader);
    let n = ranges.len();
    let mut batches = reader.read_ranges(None, ranges.clone()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        source.asked.lock().unwrap().is_empty(),
        "nothing before the first batch"
    );
    for k in 0..n {
        batches.next().unwrap().unwrap();
        // Decoding cluster k, the reader asked (on a thread of its own) for it and the
        // two after it, no further.
        let mut took = Duration::ZERO;
        for c in 0..=(k + 2).min(n - 1) {
            took += wait_for(&format!("cluster {c} asked for at batch {k}"), || {
                asked_all_of(&source, &reader, c)
            });
        }
        if k + 3 < n {
            std::thread::sleep(watch_window(took, Duration::from_millis(50)));
            assert!(
                !asked_any_of(&source, &reader, k + 3),
                "cluster {} at batch {k}",
                k + 3
            );
        }
    }
    assert!(batches.next().is_none());
    drop(batches);
    // Each cluster was asked for once.
    assert!((0..n).all(|c| times_asked(&source, &reader, c) == 1));
    // Ranges inside one cluster ask for it once, and for nothing the plan does not read.
    let inside: Vec<_> = (0..10).map(|i| i * 10..i * 10 + 10).collect();
    let fresh = Arc::new(recording(&bytes));
    let reader = open(&fresh, &anchor);
    let mut batches = reader.read_ranges(None, inside).unwrap();
    assert_eq!(batches.by_ref().count(), 10);
    // (The plan's read-ahead thread stops with it: keep it until the hint is given.)
    let took = wait_for("cluster 0 asked for", || asked_all_of(&fresh, &reader, 0));
    std::thread::sleep(watch_window(took, Duration::from_millis(50)));
    assert_eq!(times_asked(&fresh, &reader, 0), 1);
    assert!(!asked_any_of(&fresh, &reader, 1));
    drop(batches);
    // A remote source plans its own requests: no hints.
    let remote = Arc::new(Recording {
        remote: true,
        ..recording(&bytes)
    });
    let reader = open(&remote, &anchor);
    reader.read(None, 0..reader.num_entries()).unwrap();
    assert!(remote.asked.lock().unwrap().is_empty());
}

#[test]
fn offsets_that_fields_share_are_read_before_the_read_ahead_starts() {
    // Jet_pt and Jet_eta: one collection stored as two vectors. Their offsets columns
    // hold equal pages, stored once (same-page merging), and a read decodes them once,
    // before the fields. Those few pages come first: behind the read-ahead of whole
    // clusters, a cold read waited for them (50 ms for a 94 MB cluster).
    use arrow_array::builder::{Float32Builder, Int64Builder, LargeListBuilder};
    use arrow_array::cast::AsArray;
    use arrow_array::ArrayRef;
    let entries = 20_000usize;
    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    let mut scalar = Int64Builder::new();
    for i in 0..entries {
        scalar.append_value(i as i64 * 3);
    }
    columns.push(("run".into(), Arc::new(scalar.finish())));
    for (name, scale) in [("Jet_pt", 1.5f32), ("Jet_eta", -0.25)] {
        let mut b = LargeListBuilder::new(Float32Builder::new());
        for i in 0..entries {
            for k in 0..i % 5 {
                b.values().append_value((i + k) as f32 * scale);
            }
            b.append(true);
        }
        columns.push((name.into(), Arc::new(b.finish())));
    }
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let (bytes, anchor) = common::write_in_memory(
        common::schema_builder_of(&batch).finish(),
        &batch,
        64 << 10,
        8 << 10,
    );
    let source = Arc::new(Recording {
        delay: Duration::from_millis(5),
        ..recording(&bytes)
    });
    let reader = open(&source, &anchor);
    let d = reader.descriptor();
    let offsets_column = |name: &str| {
        let field = d.fields.iter().find(|f| f.name() == name).unwrap();
        field.columns[0]
    };
    let first = &d.clusters[0];
    let locators = |column: u32| -> Vec<u64> {
        first
            .column(column)
            .unwrap()
            .pages
            .iter()
            .map(|p| p.locator.offset)
            .collect()
    };
    let shared = locators(offsets_column("Jet_pt"));
    assert_eq!(
        shared,
        locators(offsets_column("Jet_eta")),
        "pages stored once"
    );
    // The fields' own pages wait for the first hint (a reader that gave it only after
    // reading them waits 30 s, then fails below).
    *source.after_hints.lock().unwrap() = page_offsets(&reader, 0)
        .into_iter()
        .filter(|o| !shared.contains(o))
        .collect();
    let mut batches = reader.read_ranges(None, cluster_ranges(&reader)).unwrap();
    let got = batches.next().unwrap().unwrap();
    // The same values (the field metadata differs: the read adds the C++ types).
    let want = batch.slice(0, got.num_rows());
    assert!(got.num_rows() > 0);
    assert_eq!(got.column(0).as_ref(), want.column(0).as_ref());
    for c in 1..3 {
        let (g, w) = (
            got.column(c).as_list::<i64>(),
            want.column(c).as_list::<i64>(),
        );
        assert_eq!(g.value_offsets(), w.value_offsets());
        // A slice's values are its parent's: the first ones are the batch's.
        let n = g.values().len();
        assert_eq!(g.values().as_ref(), w.values().slice(0, n).as_ref());
    }
    wait_for("the first hint", || {
        source.reads_before_hints.lock().unwrap().is_some()
    });
    let before = source.reads_before_hints.lock().unwrap().unwrap();
    let reads = source.offsets.lock().unwrap().clone();
    for page in &shared {
        let at = reads.iter().position(|o| o == page).unwrap();
        assert!(
            at < before,
            "shared offsets page {page} read {at}th, after the hints began at {before}"
        );
    }
    // The hints began before the fields' own pages were read (they were read, after
    // the hints).
    assert!(before < reads.len(), "{before} of {} reads", reads.len());
    let own = source.after_hints.lock().unwrap().clone();
    assert!(!own.is_empty());
    assert!(reads[before..].iter().any(|o| own.contains(o)));
}
