//! Concurrent readers: ONE `RNTupleReader` shared by 8 threads, each reading a different
//! selection of fields over a different entry range through a different API (`read`,
//! `read_entries`, `read_ranges`), gives exactly what the same reads give one after the
//! other; 100 rounds, no deadlock (a round that takes minutes fails the test naming the
//! tasks in flight).
//!
//! The file is written by the crate's own writer into a temporary directory: many small
//! clusters and pages; scalars, strings, vectors, vectors of vectors, records (a pair
//! holding a vector), collections of records, optionals, variants and maps. The same
//! file is also read through a source that behaves like a remote one (planned reads,
//! pages fetched ahead by a prefetcher) to cover the planned path with shared readers.
//! The test tool `concurrent_read` (`crates/rntuple-testkit`) does the same for any file or URL (over http:// and
//! root:// in `tests/test_concurrent_readers.py`).

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::read_task::{run_task, Api, Task};
use common::RemoteLike;

use rntuple::compression::CompressionSettings;
use rntuple::container::{FileWriter, RootFile};
use rntuple::read::RNTupleReader;
use rntuple::schema::{ColumnDefaults, SchemaBuilder, Value};
use rntuple::write::{EntryWriter, RNTupleWriter, WriteOptions};
use rntuple_io::{IoMetrics, LocalFile, ReadHints};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ENTRIES: u64 = 2500;
const THREADS: usize = 8;
const REPETITIONS: usize = 100;
/// A round taking longer than this is taken for a deadlock.
const ROUND_TIMEOUT: Duration = Duration::from_secs(180);

/// The fields and their C++ types.
const FIELDS: [(&str, &str); 10] = [
    ("event", "std::uint64_t"),
    ("x", "double"),
    ("flag", "bool"),
    ("label", "std::string"),
    ("pt", "std::vector<float>"),
    ("hits", "std::vector<std::vector<std::int32_t>>"),
    ("track", "std::pair<std::string,std::vector<float>>"),
    ("jets", "std::vector<std::pair<float,std::int32_t>>"),
    ("maybe", "std::optional<std::int64_t>"),
    ("choice", "std::variant<std::int32_t,std::string>"),
];

/// Entry `i`'s values, a deterministic function of `i`.
fn entry(i: u64) -> Vec<Value> {
    use Value::*;
    let n = (i % 7) as usize;
    vec![
        UInt(i),
        Float(i as f64 * 0.25 - 100.0),
        Bool(i % 3 == 0),
        String(format!("entry-{i}-{}", "x".repeat(n))),
        List(
            (0..n)
                .map(|k| Float((i * 10 + k as u64) as f32 as f64))
                .collect(),
        ),
        List(
            (0..i % 4)
                .map(|k| List((0..k).map(|m| Int((i + m) as i64 - 5)).collect()))
                .collect(),
        ),
        Record(vec![
            String(format!("t{}", i % 11)),
            List((0..i % 3).map(|k| Float(k as f64 + 0.5)).collect()),
        ]),
        List(
            (0..(i % 5))
                .map(|k| Record(vec![Float((i + k) as f32 as f64), Int(k as i64 - 2)]))
                .collect(),
        ),
        if i % 4 == 0 { Null } else { Int(-(i as i64)) },
        if i % 2 == 0 {
            Variant(0, Box::new(Int(i as i64)))
        } else {
            Variant(1, Box::new(String(format!("v{i}"))))
        },
    ]
}

/// Writes the test file (RNTuple `events`) once per test binary run, into cargo's
/// temporary directory for tests, named after the process (files of earlier runs whose
/// process is gone are removed).
fn test_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        for old in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = old.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("concurrent_readers-")
                .and_then(|n| n.strip_suffix(".root"));
            if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
                let _ = std::fs::remove_file(old.path());
            }
        }
        let path = dir.join(format!("concurrent_readers-{}.root", std::process::id()));
        write_file(&path);
        path
    })
    .clone()
}

fn write_file(path: &Path) {
    let mut b = SchemaBuilder::new(ColumnDefaults { compressed: true });
    for (name, ty) in FIELDS {
        b.add_cpp_field(name, ty).unwrap();
    }
    let options = WriteOptions::builder()
        .cluster_size(6 << 10)
        .page_size(2 << 10)
        .initial_page_size(256)
        .build()
        .unwrap();
    let mut file = FileWriter::create(path, CompressionSettings::DEFAULT_RNTUPLE).unwrap();
    let anchor = {
        let writer = RNTupleWriter::new(&mut file, "events", b.finish(), options).unwrap();
        let mut rows = EntryWriter::new(writer).unwrap();
        for i in 0..ENTRIES {
            rows.fill(entry(i)).unwrap();
        }
        rows.finish().unwrap()
    };
    file.write_anchor("events", &anchor.to_object()).unwrap();
    file.finish().unwrap();
}

/// 24 tasks: every API with every kind of selection and range (within a cluster, across
/// one and several cluster boundaries, starting on one, the last entries, empty, all).
fn tasks(reader: &RNTupleReader) -> Vec<Task> {
    let clusters: Vec<Range<u64>> = reader
        .descriptor()
        .clusters
        .iter()
        .map(|c| c.first_entry..c.first_entry + c.n_entries)
        .collect();
    assert!(clusters.len() >= 10, "{} clusters", clusters.len());
    let c = |i: usize| clusters[i].clone();
    let mid = |r: Range<u64>| (r.start + r.end) / 2;
    let n = reader.num_entries();
    let ranges: Vec<Vec<Range<u64>>> = vec![
        vec![0..n],
        vec![c(2).start + 1..c(2).end - 1],
        vec![mid(c(3))..mid(c(4))],
        vec![mid(c(1))..mid(c(7))],
        vec![c(5).start..c(8).start],
        vec![n - 37..n],
        vec![mid(c(6))..mid(c(6))],
        vec![mid(c(0))..mid(c(2)), mid(c(2))..c(5).end, 0..3],
        vec![c(9).start..n, mid(c(4))..mid(c(5))],
        vec![10..n / 3, n / 3 - 100..2 * n / 3, 2 * n / 3 - 1..n],
    ];
    let s = |v: &[&str]| Some(v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    let selections = [
        None,
        s(&["event"]),
        s(&["label", "pt"]),
        s(&["hits", "x", "flag"]),
        s(&["track"]),
        s(&["track._1", "event"]),
        s(&["jets", "maybe"]),
        s(&["jets._0._0", "choice"]),
        s(&["choice", "maybe", "label", "hits"]),
        s(&["track._0", "jets._0._1", "pt"]),
        s(&["x"]),
        s(&["hits", "jets"]),
    ];
    (0..24)
        .map(|i| {
            let api = [Api::Read, Api::Rows, Api::Stream][i % 3];
            let mut r = ranges[(i * 7) % ranges.len()].clone();
            if api != Api::Stream {
                r.truncate(1);
            }
            Task {
                api,
                fields: selections[(i * 5) % selections.len()].clone(),
                ranges: r,
            }
        })
        .collect()
}

/// Reads every task serially, then `REPETITIONS` rounds of `THREADS` threads sharing
/// `reader`, each on a different task (rotating), comparing with the serial results.
fn hammer(reader: RNTupleReader) {
    let tasks = Arc::new(tasks(&reader));
    let expected: Arc<Vec<common::read_task::Output>> = Arc::new(
        tasks
            .iter()
            .map(|t| run_task(&reader, t).unwrap_or_else(|e| panic!("serial {t:?}: {e}")))
            .collect(),
    );
    // The serial results are what was written.
    let all = reader.read_entries(None, 0..ENTRIES).unwrap();
    let written: Vec<Vec<Value>> = (0..ENTRIES).map(entry).collect();
    assert!(all == written, "the file does not read back as written");

    let reader = Arc::new(reader);
    let start = Instant::now();
    let mut mismatches = Vec::new();
    for round in 0..REPETITIONS {
        let (tx, rx) = mpsc::channel();
        let first = round * 7; // 7 is coprime with 24: every round groups other tasks
        let mut running: Vec<usize> = Vec::new();
        for thread in 0..THREADS {
            let i = (first + thread) % tasks.len();
            running.push(i);
            let (reader, tasks, expected, tx) =
                (reader.clone(), tasks.clone(), expected.clone(), tx.clone());
            std::thread::spawn(move || {
                let result = match run_task(&reader, &tasks[i]) {
                    Ok(got) if got == expected[i] => Ok(()),
                    Ok(_) => Err(format!(
                        "round {round} task {i} {:?}: values differ",
                        tasks[i]
                    )),
                    Err(e) => Err(format!("round {round} task {i} {:?}: {e}", tasks[i])),
                };
                let _ = tx.send((i, result));
            });
        }
        drop(tx);
        for _ in 0..THREADS {
            match rx.recv_timeout(ROUND_TIMEOUT) {
                Ok((i, result)) => {
                    running.retain(|&r| r != i);
                    if let Err(e) = result {
                        mismatches.push(e);
                    }
                }
                Err(_) => panic!(
                    "deadlock? round {round} still runs after {ROUND_TIMEOUT:?}; tasks in flight: {:?}",
                    running.iter().map(|&i| &tasks[i]).collect::<Vec<_>>()
                ),
            }
        }
    }
    eprintln!(
        "{} rounds x {THREADS} threads sharing one reader of {} ({} clusters): {} reads in {:.2} s, {} mismatches",
        REPETITIONS,
        reader.source().name(),
        reader.descriptor().clusters.len(),
        REPETITIONS * THREADS,
        start.elapsed().as_secs_f64(),
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn eight_threads_sharing_one_reader_of_a_local_file_read_what_serial_reads_read() {
    let path = test_file();
    let reader = RNTupleReader::open_path(path.to_str().unwrap(), Some("events")).unwrap();
    assert!(!reader.source_profile().hints.remote);
    hammer(reader);
}

#[test]
fn eight_threads_sharing_one_planned_reader_read_what_serial_reads_read() {
    let path = test_file();
    // A local file presenting itself as remote: reads through it are planned and
    // prefetched, as from http:// or root://, in small bunches (a read is several
    // bunches, fetched ahead of the decoding).
    let source = Arc::new(RemoteLike {
        inner: LocalFile::open(path.to_str().unwrap()).unwrap(),
        metrics: IoMetrics::default(),
        hints: ReadHints {
            bunch_bytes: 16 << 10,
            max_request_bytes: 64 << 10,
            ..ReadHints::REMOTE
        },
    });
    let file = RootFile::open(source).unwrap();
    let reader = RNTupleReader::open(&file, Some("events")).unwrap();
    assert!(reader.source_profile().hints.remote);
    hammer(reader);
    assert!(reader_metrics_used_vectored_reads(&file));
}

/// Planned reads went through vectored requests.
fn reader_metrics_used_vectored_reads(file: &RootFile) -> bool {
    file.source().metrics().vector_requests > 0
}
