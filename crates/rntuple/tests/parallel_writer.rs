//! One RNTuple filled from several threads through `ParallelWriter`: every entry reads
//! back, each thread's entries in the order it wrote them, clusters of the threads
//! interleaved in the file; bad input is refused with a typed error, and a write that
//! fails or is abandoned leaves no file.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::builder::{Float32Builder, LargeListBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
use rntuple::compression::CompressionSettings;
use rntuple::container::{FileWriter, RootFile};
use rntuple::format::SchemaDescription;
use rntuple::read::RNTupleReader;
use rntuple::schema::{ColumnDefaults, SchemaBuilder};
use rntuple::write::{FillContext, ParallelWriter, WriteOptions};
use rntuple::Error;
use rntuple_io::MemorySource;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

/// Entries `first..first + n` of thread `thread`: the thread, the entry's number in the
/// thread (`seq`), a double and a vector of `seq % 7` floats.
fn batch(thread: i32, first: i64, n: i64) -> RecordBatch {
    let seqs = first..first + n;
    let mut list = LargeListBuilder::new(Float32Builder::new());
    for s in seqs.clone() {
        for k in 0..s % 7 {
            list.values().append_value(value(thread, s, k));
        }
        list.append(true);
    }
    let columns: [(&str, ArrayRef); 4] = [
        (
            "thread",
            Arc::new(Int32Array::from(vec![thread; n as usize])),
        ),
        ("seq", Arc::new(Int64Array::from_iter_values(seqs.clone()))),
        (
            "x",
            Arc::new(Float64Array::from_iter_values(
                seqs.map(|s| f64::from(thread) * 0.5 + s as f64),
            )),
        ),
        ("values", Arc::new(list.finish())),
    ];
    RecordBatch::try_from_iter(columns).expect("a batch")
}

/// Element `k` of the vector of entry `seq` of `thread`.
fn value(thread: i32, seq: i64, k: i64) -> f32 {
    (thread as f32) * 1000.0 + (seq % 1000) as f32 + k as f32 * 0.25
}

fn schema() -> SchemaDescription {
    let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: true });
    builder.add_cpp_field("thread", "std::int32_t").unwrap();
    builder.add_cpp_field("seq", "std::int64_t").unwrap();
    builder.add_cpp_field("x", "double").unwrap();
    builder
        .add_cpp_field("values", "std::vector<float>")
        .unwrap();
    builder.finish()
}

/// Small clusters (a few hundred entries), so that every thread commits several.
fn small_clusters() -> WriteOptions {
    WriteOptions::builder()
        .cluster_size(2 << 10)
        .build()
        .expect("valid options")
}

fn memory_writer(options: WriteOptions) -> ParallelWriter<Cursor<Vec<u8>>> {
    let file = FileWriter::new(
        Cursor::new(Vec::new()),
        "parallel.root",
        CompressionSettings::DEFAULT_RNTUPLE,
    )
    .expect("a file");
    ParallelWriter::new(file, "Events", schema(), options).expect("a writer")
}

fn read_back(bytes: Vec<u8>) -> RNTupleReader {
    let root = RootFile::open(Arc::new(MemorySource::new("parallel.root", bytes))).expect("file");
    RNTupleReader::open(&root, Some("Events")).expect("the RNTuple")
}

/// Fills with `threads` threads, each `batches` batches of `per_batch` entries, all
/// threads passing a barrier after each batch (so that their clusters interleave).
fn fill_in_parallel(threads: i32, batches: i64, per_batch: i64) -> Vec<u8> {
    let writer = memory_writer(small_clusters());
    let barrier = Barrier::new(threads as usize);
    std::thread::scope(|s| {
        let jobs: Vec<_> = (0..threads)
            .map(|t| {
                let mut context = writer.fill_context().expect("a context");
                let barrier = &barrier;
                s.spawn(move || {
                    for b in 0..batches {
                        context
                            .write_batch(&batch(t, b * per_batch, per_batch))
                            .expect("written");
                        barrier.wait();
                    }
                    context.finish().expect("finished");
                })
            })
            .collect();
        for job in jobs {
            job.join().expect("a filling thread");
        }
    });
    assert_eq!(
        writer.num_entries().unwrap(),
        (i64::from(threads) * batches * per_batch) as u64
    );
    writer.finish().expect("finished").into_inner()
}

/// Reads every entry back and checks it: per thread, the entries `0..n` in order, each
/// with its values; every cluster holds one thread's entries; the threads' clusters
/// interleave.
fn check(reader: &RNTupleReader, threads: i32, per_thread: i64) {
    let n = reader.num_entries();
    assert_eq!(n, (i64::from(threads) * per_thread) as u64);
    let data = reader.read(None, 0..n).expect("read");
    let thread = data
        .column_by_name("thread")
        .unwrap()
        .as_primitive::<Int32Type>();
    let seq = data
        .column_by_name("seq")
        .unwrap()
        .as_primitive::<Int64Type>();
    let x = data
        .column_by_name("x")
        .unwrap()
        .as_primitive::<Float64Type>();
    let values = data.column_by_name("values").unwrap().as_list::<i64>();
    let mut next = vec![0i64; threads as usize];
    for i in 0..n as usize {
        let (t, s) = (thread.value(i), seq.value(i));
        assert_eq!(s, next[t as usize], "entry {i}: thread {t} out of order");
        next[t as usize] += 1;
        assert_eq!(x.value(i), f64::from(t) * 0.5 + s as f64);
        let row = values.value(i);
        let got = row.as_primitive::<Float32Type>().values().to_vec();
        let expected: Vec<f32> = (0..s % 7).map(|k| value(t, s, k)).collect();
        assert_eq!(got, expected, "entry {i}: thread {t}, seq {s}");
    }
    assert_eq!(next, vec![per_thread; threads as usize]);
    // Each cluster holds the entries of one context; the contexts' clusters interleave.
    let clusters = &reader.descriptor().clusters;
    let owner: Vec<i32> = clusters
        .iter()
        .map(|c| {
            let range = c.first_entry as usize..(c.first_entry + c.n_entries) as usize;
            let t = thread.value(range.start);
            assert!(
                range.clone().all(|i| thread.value(i) == t),
                "cluster {}",
                c.id
            );
            t
        })
        .collect();
    for t in 0..threads {
        let mine = owner.iter().filter(|&&o| o == t).count();
        assert!(mine >= 3, "thread {t} committed {mine} clusters: {owner:?}");
    }
    let switches = owner.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        switches >= threads as usize,
        "clusters not interleaved: {owner:?}"
    );
}

#[test]
fn two_and_four_threads_fill_one_rntuple() {
    for threads in [2, 4] {
        let bytes = fill_in_parallel(threads, 6, 500);
        let reader = read_back(bytes);
        check(&reader, threads, 3000);
    }
}

#[test]
fn contexts_are_send() {
    fn send<T: Send>() {}
    send::<FillContext<Cursor<Vec<u8>>>>();
    send::<FillContext>();
    fn sync<T: Sync>() {}
    sync::<ParallelWriter>();
}

#[test]
fn a_context_dropped_unfinished_commits_its_entries_and_flush_cuts_a_cluster() {
    let writer = memory_writer(WriteOptions::default());
    let mut first = writer.fill_context().unwrap();
    first.write_batch(&batch(0, 0, 10)).unwrap();
    first.flush_cluster().unwrap();
    assert_eq!(first.open_entries(), 0);
    assert_eq!(writer.num_entries().unwrap(), 10);
    first.write_batch(&batch(0, 10, 5)).unwrap();
    assert_eq!(first.open_entries(), 5);
    drop(first);
    assert_eq!(writer.num_entries().unwrap(), 15);
    // A context that writes nothing adds nothing.
    drop(writer.fill_context().unwrap());
    let reader = read_back(writer.finish().unwrap().into_inner());
    let clusters: Vec<u64> = reader
        .descriptor()
        .clusters
        .iter()
        .map(|c| c.n_entries)
        .collect();
    assert_eq!(clusters, [10, 5]);
    check_sequence(&reader, 15);
}

/// The entries are thread 0's `0..n`.
fn check_sequence(reader: &RNTupleReader, n: i64) {
    let data = reader.read(None, 0..reader.num_entries()).unwrap();
    let seq = data
        .column_by_name("seq")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(seq.values().to_vec(), (0..n).collect::<Vec<_>>());
}

#[test]
fn a_batch_that_does_not_fit_the_schema_is_refused_and_the_context_goes_on() {
    let writer = memory_writer(WriteOptions::default());
    let mut context = writer.fill_context().unwrap();
    context.write_batch(&batch(0, 0, 4)).unwrap();
    let good = batch(0, 4, 4);
    // A column missing.
    let missing = good.project(&[0, 1, 2]).unwrap();
    let err = context.write_batch(&missing).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("no column \"values\"")),
        "{err}"
    );
    // A column of another type.
    let mut columns: Vec<ArrayRef> = good.columns().to_vec();
    columns[1] = Arc::new(arrow_array::StringArray::from(vec!["a"; 4]));
    let fields: Vec<(&str, ArrayRef)> = ["thread", "seq", "x", "values"]
        .into_iter()
        .zip(columns)
        .collect();
    let wrong = RecordBatch::try_from_iter(fields).unwrap();
    let err = context.write_batch(&wrong).unwrap_err();
    assert!(!matches!(err, Error::Io(_)), "{err}");
    // Refused batches wrote nothing; the context and the writer go on.
    context.write_batch(&good).unwrap();
    context.finish().unwrap();
    let reader = read_back(writer.finish().unwrap().into_inner());
    assert_eq!(reader.num_entries(), 8);
    check_sequence(&reader, 8);
}

/// A fresh path in the temporary directory (nothing there).
fn temp_path(what: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "rntuple-parallel-{what}-{}.root",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// No file at `path`, and no temporary file beside it.
fn assert_no_output(path: &Path) {
    assert!(!path.exists(), "{} exists", path.display());
    let stem = path.file_name().unwrap().to_string_lossy().into_owned();
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&stem))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_file_appears_only_when_finished() {
    let path = temp_path("complete");
    let writer =
        ParallelWriter::recreate(&path, "Events", schema(), WriteOptions::default()).unwrap();
    let mut context = writer.fill_context().unwrap();
    context.write_batch(&batch(0, 0, 100)).unwrap();
    context.finish().unwrap();
    assert!(!path.exists());
    writer.finish().unwrap();
    let reader = RNTupleReader::open_path(path.to_str().unwrap(), Some("Events")).unwrap();
    check_sequence(&reader, 100);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn finishing_with_a_context_open_fails_and_leaves_no_file() {
    let path = temp_path("open-context");
    let writer =
        ParallelWriter::recreate(&path, "Events", schema(), WriteOptions::default()).unwrap();
    let mut context = writer.fill_context().unwrap();
    context.write_batch(&batch(0, 0, 100)).unwrap();
    let err = writer.finish().unwrap_err();
    assert!(err.to_string().contains("1 fill context(s)"), "{err}");
    // The file is abandoned: the context's writes fail, and the file goes with it.
    let err = context.flush_cluster().unwrap_err();
    assert!(err.to_string().contains("still open"), "{err}");
    drop(context);
    assert_no_output(&path);
}

#[test]
fn an_abandoned_writer_leaves_no_file() {
    let path = temp_path("abandoned");
    let writer =
        ParallelWriter::recreate(&path, "Events", schema(), WriteOptions::default()).unwrap();
    let mut context = writer.fill_context().unwrap();
    context.write_batch(&batch(0, 0, 100)).unwrap();
    context.finish().unwrap();
    let mut open = writer.fill_context().unwrap();
    open.write_batch(&batch(1, 0, 100)).unwrap();
    drop(writer);
    // A context still open fails from then on; the file goes with it.
    let err = open.flush_cluster().unwrap_err();
    assert!(err.to_string().contains("dropped unfinished"), "{err}");
    assert!(path.parent().unwrap().read_dir().unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".partial")));
    drop(open);
    assert_no_output(&path);
}

#[test]
fn an_abandoned_context_commits_nothing_more() {
    let writer = memory_writer(WriteOptions::default());
    let mut kept = writer.fill_context().unwrap();
    kept.write_batch(&batch(0, 0, 10)).unwrap();
    let mut dropped = writer.fill_context().unwrap();
    dropped.write_batch(&batch(1, 0, 10)).unwrap();
    dropped.abandon();
    kept.finish().unwrap();
    let reader = read_back(writer.finish().unwrap().into_inner());
    check_sequence(&reader, 10);
}

#[test]
fn a_filling_thread_that_panics_fails_the_write_and_leaves_no_file() {
    let path = temp_path("panic");
    let writer =
        ParallelWriter::recreate(&path, "Events", schema(), WriteOptions::default()).unwrap();
    let mut good = writer.fill_context().unwrap();
    good.write_batch(&batch(0, 0, 100)).unwrap();
    good.finish().unwrap();
    let mut bad = writer.fill_context().unwrap();
    let joined = std::thread::spawn(move || {
        bad.write_batch(&batch(1, 0, 100)).unwrap();
        panic!("the filling thread fails");
    })
    .join();
    assert!(joined.is_err());
    let err = writer.finish().unwrap_err();
    assert!(err.to_string().contains("panicked"), "{err}");
    assert_no_output(&path);
}
