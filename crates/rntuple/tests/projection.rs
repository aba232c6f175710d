//! Projections (what a selection of field paths reads, and how paths through records
//! become output columns) and the batch ranges of an iteration, on an RNTuple of three
//! clusters (10, 20 and 30 entries) written in memory.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StructArray,
};
use arrow_schema::{DataType, Field, Fields};
use rntuple::read::{RNTupleReader, RecordPaths, StepSize};
use std::sync::Arc;

/// Entries `first..first + n`: `n` = entry number, `rec` = {x: entry, y: entry / 2}.
fn batch(first: i64, n: i64) -> RecordBatch {
    let entries: Vec<i64> = (first..first + n).collect();
    let x: ArrayRef = Arc::new(Int32Array::from_iter_values(
        entries.iter().map(|&e| e as i32),
    ));
    let y: ArrayRef = Arc::new(Float64Array::from_iter_values(
        entries.iter().map(|&e| e as f64 / 2.0),
    ));
    let rec = StructArray::from(vec![
        (Arc::new(Field::new("x", DataType::Int32, false)), x),
        (Arc::new(Field::new("y", DataType::Float64, false)), y),
    ]);
    RecordBatch::try_from_iter(vec![
        ("n", Arc::new(Int64Array::from(entries)) as ArrayRef),
        ("rec", Arc::new(rec) as ArrayRef),
    ])
    .unwrap()
}

fn reader() -> RNTupleReader {
    common::reader_of_clusters(&[batch(0, 10), batch(10, 20), batch(30, 30)])
}

#[test]
fn paths_through_records_are_columns_or_members_as_asked() {
    let reader = reader();
    assert_eq!(reader.descriptor().clusters.len(), 3);
    let wanted = common::strings(&["rec.x"]);

    let columns = reader
        .projection(Some(&wanted), RecordPaths::Columns)
        .unwrap();
    assert_eq!(columns.schema().field(0).name(), "rec.x");
    let batch = reader.read_projection(&columns, 5..40).unwrap();
    let x = batch
        .column(0)
        .as_any()
        .downcast_ref::<Int32Array>()
        .unwrap();
    assert_eq!(x.values().to_vec(), (5..40).collect::<Vec<i32>>());

    let members = reader
        .projection(Some(&wanted), RecordPaths::Members)
        .unwrap();
    assert_eq!(members.selection().len(), 1);
    assert_eq!(members.schema().field(0).name(), "rec");
    let DataType::Struct(kept) = members.schema().field(0).data_type() else {
        panic!("rec is a struct: {:?}", members.schema());
    };
    assert_eq!(
        kept.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
        vec!["x"],
        "only the selected member"
    );
    let batch = reader.read_projection(&members, 5..40).unwrap();
    let rec = batch
        .column(0)
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let x = rec.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
    assert_eq!(x.values().to_vec(), (5..40).collect::<Vec<i32>>());

    // The whole record and one of its members: the whole record, once.
    let both = reader
        .projection(
            Some(&common::strings(&["rec.y", "rec"])),
            RecordPaths::Members,
        )
        .unwrap();
    assert_eq!(both.selection().len(), 1);
    assert_eq!(both.selection()[0].keep, None);
    let fields: &Fields = match both.schema().field(0).data_type() {
        DataType::Struct(f) => f,
        other => panic!("{other:?}"),
    };
    assert_eq!(fields.len(), 2);
    // Streaming gives the same values, one batch per range.
    let batches: Vec<RecordBatch> = reader
        .read_projection_ranges(&members, vec![0..10, 10..60])
        .unwrap()
        .collect::<rntuple::Result<_>>()
        .unwrap();
    assert_eq!(
        batches
            .iter()
            .map(RecordBatch::num_rows)
            .collect::<Vec<_>>(),
        vec![10, 50]
    );
    let last = batches[1]
        .column(0)
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    assert_eq!(last.column(0).len(), 50);
}

#[test]
fn batch_ranges_follow_cluster_boundaries_and_the_step() {
    let reader = reader();
    let all = reader.projection(None, RecordPaths::Members).unwrap();
    let n_only = reader
        .projection(Some(&common::strings(&["n"])), RecordPaths::Members)
        .unwrap();
    let ranges = |p, entries, step| reader.batch_ranges(p, entries, step).unwrap();

    // Clusters 0..10, 10..30, 30..60. Steps of 25 entries: 10 alone (10 + 20 > 25),
    // 10..30, and the 30-entry cluster cut in two equal parts.
    assert_eq!(
        ranges(&all, 0..60, StepSize::Entries(25)),
        vec![0..10, 10..30, 30..45, 45..60]
    );
    // From entry 5, steps of 35: 5..30 (5 + 20 entries), then the last cluster whole.
    assert_eq!(
        ranges(&all, 5..60, StepSize::Entries(35)),
        vec![5..30, 30..60]
    );
    // A range inside one cluster stays one batch.
    assert_eq!(ranges(&all, 31..33, StepSize::Entries(1000)), vec![31..33]);

    // By bytes: the 64-bit column `n` holds 8 bytes per entry, uncompressed.
    assert_eq!(
        reader.projection_bytes_per_cluster(&n_only),
        vec![80, 160, 240]
    );
    assert_eq!(
        ranges(&n_only, 0..60, StepSize::Bytes(200)),
        vec![0..10, 10..30, 30..45, 45..60]
    );
    // Half of the first cluster weighs 40 bytes: it joins the second (40 + 160 = 200).
    assert_eq!(
        ranges(&n_only, 5..60, StepSize::Bytes(200)),
        vec![5..30, 30..45, 45..60]
    );

    let zero = reader
        .batch_ranges(&all, 0..60, StepSize::Entries(0))
        .unwrap_err();
    assert!(
        zero.to_string().contains("step size must be positive"),
        "{zero}"
    );
    let outside = reader
        .batch_ranges(&all, 0..61, StepSize::Entries(10))
        .unwrap_err();
    assert!(outside.to_string().contains("outside 0..60"), "{outside}");
}
