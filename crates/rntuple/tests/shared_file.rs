//! Several RNTuples written into one file through `SharedFile`, filled in turns: each
//! reads back with its own values, and the anchors come in creation order.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::builder::{Float32Builder, LargeListBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, RecordBatch, StringArray};
use rntuple::compression::CompressionSettings;
use rntuple::container::{FileWriter, RootFile};
use rntuple::read::RNTupleReader;
use rntuple::schema::{ColumnDefaults, SchemaBuilder};
use rntuple::write::{SharedFile, WriteOptions};
use rntuple_io::MemorySource;
use std::io::Cursor;
use std::sync::Arc;

/// Entries `first..first + n` of "A": an int (the entry number) and a vector of
/// `entry % 5` floats.
fn batch_a(first: usize, n: usize) -> RecordBatch {
    let mut list = LargeListBuilder::new(Float32Builder::new());
    for i in first..first + n {
        for k in 0..i % 5 {
            list.values().append_value((i * 10 + k) as f32);
        }
        list.append(true);
    }
    let id: ArrayRef = Arc::new(Int32Array::from_iter_values(
        (first..first + n).map(|i| i as i32),
    ));
    let list: ArrayRef = Arc::new(list.finish());
    RecordBatch::try_from_iter([("id", id), ("values", list)]).expect("a batch")
}

/// Entries `first..first + n` of "B": a name and a double.
fn batch_b(first: usize, n: usize) -> RecordBatch {
    let names: ArrayRef = Arc::new(StringArray::from_iter_values(
        (first..first + n).map(|i| format!("run-{i}")),
    ));
    let x: ArrayRef = Arc::new(Float64Array::from_iter_values(
        (first..first + n).map(|i| i as f64 / 4.0),
    ));
    RecordBatch::try_from_iter([("name", names), ("x", x)]).expect("a batch")
}

fn schema_of(batch: &RecordBatch) -> rntuple::format::SchemaDescription {
    let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: false });
    for f in batch.schema().fields() {
        builder.add_arrow_field(f).expect("a supported field");
    }
    builder.finish()
}

#[test]
fn two_rntuples_filled_in_turns_read_back() {
    let file = FileWriter::new(
        Cursor::new(Vec::new()),
        "shared.root",
        CompressionSettings::DEFAULT_RNTUPLE,
    )
    .expect("a file");
    let mut shared = SharedFile::new(file);
    // Small uncompressed clusters, so that the two RNTuples' clusters alternate in the
    // file.
    let options = WriteOptions::builder()
        .compression(CompressionSettings::UNCOMPRESSED)
        .cluster_size(4096)
        .build()
        .expect("valid options");
    shared
        .create("A", schema_of(&batch_a(0, 1)), options.clone())
        .expect("A created");
    shared
        .create("B", schema_of(&batch_b(0, 1)), options.clone())
        .expect("B created");
    let again = shared.create("A", schema_of(&batch_a(0, 1)), options.clone());
    assert_eq!(
        again.err().map(|e| e.to_string()),
        Some("invalid argument: the file already has an RNTuple named \"A\"".to_string())
    );
    // A third RNTuple, left out again: no anchor, and its name is free.
    shared
        .create("C", schema_of(&batch_b(0, 1)), options)
        .expect("C created");
    assert!(shared.discard("C"));
    assert!(!shared.discard("C"));
    assert_eq!(shared.names().collect::<Vec<_>>(), ["A", "B"]);

    let (n_a, n_b) = (3000, 2000);
    let (mut done_a, mut done_b) = (0, 0);
    while done_a < n_a || done_b < n_b {
        let k = 700.min(n_a - done_a);
        if k > 0 {
            let writer = shared.writer_mut("A").expect("A");
            writer.write_batch(&batch_a(done_a, k)).expect("A written");
            done_a += k;
        }
        let k = 450.min(n_b - done_b);
        if k > 0 {
            let writer = shared.writer_mut("B").expect("B");
            writer.write_batch(&batch_b(done_b, k)).expect("B written");
            done_b += k;
        }
    }
    assert_eq!(shared.writer("A").map(|w| w.num_entries()), Some(3000));
    assert_eq!(shared.writer("B").map(|w| w.num_entries()), Some(2000));
    let bytes = shared.close().expect("closed").into_inner();

    let root = RootFile::open(Arc::new(MemorySource::new("shared.root", bytes))).expect("a file");
    let anchors: Vec<String> = root
        .rntuple_anchors()
        .expect("anchors")
        .into_iter()
        .map(|a| a.path)
        .collect();
    assert_eq!(anchors, ["A", "B"]);
    let a = RNTupleReader::open(&root, Some("A")).expect("A");
    let b = RNTupleReader::open(&root, Some("B")).expect("B");
    assert_eq!((a.num_entries(), b.num_entries()), (3000, 2000));
    let read_a = a.read(None, 0..3000).expect("A read");
    let read_b = b.read(None, 0..2000).expect("B read");
    let ids = read_a.column_by_name("id").expect("id");
    assert!(ids.to_data() == batch_a(0, 3000).column(0).to_data());
    let values = read_a.column_by_name("values").expect("values");
    let values = values.as_list::<i64>();
    for i in [0usize, 1, 4, 699, 700, 2999] {
        let row = values.value(i);
        let got: Vec<f32> = row.as_primitive::<Float32Type>().values().to_vec();
        let expected: Vec<f32> = (0..i % 5).map(|k| (i * 10 + k) as f32).collect();
        assert_eq!(got, expected, "A.values[{i}]");
    }
    let total: usize = (0..3000).map(|i| i % 5).sum();
    assert_eq!(values.values().len(), total);
    let expected_b = batch_b(0, 2000);
    let names = read_b.column_by_name("name").expect("name");
    let names = names.as_string::<i64>();
    for i in [0, 1, 999, 1999] {
        assert_eq!(names.value(i), format!("run-{i}"));
    }
    assert!(
        read_b.column_by_name("x").map(|c| c.to_data()) == Some(expected_b.column(1).to_data())
    );
    // The RNTuples were filled in turns: their clusters alternate in the file, turn by
    // turn (five turns of each: nine switches at least; the open clusters committed on
    // closing, A's then B's, add two).
    let mut clusters: Vec<(u64, &str)> = Vec::new();
    for (reader, name) in [(&a, "A"), (&b, "B")] {
        for c in &reader.descriptor().clusters {
            clusters.push((c.columns[0].pages[0].locator.offset, name));
        }
    }
    clusters.sort_unstable();
    let switches = clusters.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert_eq!(switches, 11, "{clusters:?}");
}
