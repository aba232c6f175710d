//! The writer's pipeline seen from outside: pages planned in bulk as ROOT plans them
//! entry by entry, pages written in runs and merged across runs, all read back.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::builder::{
    Float32Builder, Float64Builder, Int32Builder, LargeListBuilder, StringBuilder, UInt8Builder,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use rntuple::format::{Anchor, ColumnPages};
use rntuple::read::RNTupleReader;
use rntuple::schema::{ColumnDefaults, SchemaBuilder};
use rntuple::write::{RNTupleWriter, WriteOptions};
use rntuple_io::MemorySource;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Entries with scalars, vectors of random lengths, strings, nested vectors and
/// optionals, from a fixed pseudo-random sequence.
fn batch(n: usize, seed: u64) -> RecordBatch {
    let mut state = seed;
    let mut next = move |m: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    let mut scalar = Int32Builder::new();
    let mut list = LargeListBuilder::new(Float32Builder::new());
    let mut text = StringBuilder::new();
    let mut nested = LargeListBuilder::new(LargeListBuilder::new(UInt8Builder::new()));
    let mut optional = Float64Builder::new();
    for i in 0..n {
        scalar.append_value(i as i32);
        for _ in 0..next(13) {
            list.values().append_value(next(1000) as f32);
        }
        list.append(true);
        text.append_value("x".repeat(next(40) as usize));
        for _ in 0..next(4) {
            for _ in 0..next(30) {
                nested.values().values().append_value(next(256) as u8);
            }
            nested.values().append(true);
        }
        nested.append(true);
        if next(3) == 0 {
            optional.append_null();
        } else {
            optional.append_value(next(100) as f64);
        }
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("scalar", Arc::new(scalar.finish())),
        ("list", Arc::new(list.finish())),
        ("text", Arc::new(text.finish())),
        ("nested", Arc::new(nested.finish())),
        ("optional", Arc::new(optional.finish())),
    ];
    RecordBatch::try_from_iter(columns).expect("a valid batch")
}

/// Writes `batches` into memory with `options`, each batch handed to the writer in
/// slices of `rows_per_call` entries; returns the bytes and the anchor.
fn write_in_slices(
    batches: &[RecordBatch],
    options: &WriteOptions,
    rows_per_call: usize,
) -> (Vec<u8>, Anchor) {
    let mut builder =
        SchemaBuilder::new(ColumnDefaults { compressed: true }).nullable_as_optional(true);
    for f in batches[0].schema().fields() {
        builder.add_arrow_field(f).expect("a supported field");
    }
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let mut writer =
            RNTupleWriter::new(&mut sink, "t", builder.finish(), options.clone()).expect("writer");
        for b in batches {
            let mut start = 0;
            while start < b.num_rows() {
                let len = rows_per_call.min(b.num_rows() - start);
                writer.write_batch(&b.slice(start, len)).expect("written");
                start += len;
            }
        }
        writer.finish().expect("finished")
    };
    (sink, anchor)
}

/// Writes `batches` into memory with `options`, a batch at a time.
fn write_batches(batches: &[RecordBatch], options: &WriteOptions) -> (Vec<u8>, Anchor) {
    write_in_slices(batches, options, usize::MAX)
}

fn read_back(bytes: Vec<u8>, anchor: Anchor) -> RNTupleReader {
    let source = Arc::new(MemorySource::new("mem", bytes));
    RNTupleReader::from_anchor(source, anchor, "t".into()).expect("readable")
}

#[test]
fn pages_written_in_runs_read_back_and_merge_across_runs() {
    // Small pages and runs: every cluster is written in many runs. A column of zeros
    // gives identical pages, which must be stored once per cluster however many runs
    // they fall in.
    let mut batches: Vec<RecordBatch> = (0..4).map(|k| batch(3000, k)).collect();
    for b in &mut batches {
        let zeros: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![0i64; b.num_rows()]));
        let mut columns: Vec<(&str, ArrayRef)> = Vec::new();
        let schema = b.schema();
        for (f, a) in schema.fields().iter().zip(b.columns()) {
            columns.push((f.name().as_str(), a.clone()));
        }
        columns.push(("zeros", zeros));
        *b = RecordBatch::try_from_iter(columns).expect("a valid batch");
    }
    let base = WriteOptions::builder()
        .initial_page_size(64)
        .page_size(2048)
        .cluster_size(64 << 10);
    let in_runs = base
        .clone()
        .page_run_size(Some(4096))
        .build()
        .expect("valid");
    let one_run = base.page_run_size(None).build().expect("valid");
    let (bytes, anchor) = write_batches(&batches, &in_runs);
    let (again, _) = write_batches(&batches, &in_runs);
    assert!(
        bytes == again,
        "the layout must not depend on thread timing"
    );
    let (single, single_anchor) = write_batches(&batches, &one_run);
    let runs = read_back(bytes, anchor);
    let whole = read_back(single, single_anchor);

    let n = runs.num_entries();
    assert_eq!(n, 12_000);
    // The same values as the file with one run per cluster, and as the input where
    // the types read back are the types written.
    let read = runs.read(None, 0..n).expect("read");
    let read_whole = whole.read(None, 0..n).expect("read");
    for f in read.schema().fields() {
        let (a, b) = (
            read.column_by_name(f.name()),
            read_whole.column_by_name(f.name()),
        );
        assert!(
            a.map(|a| a.to_data()) == b.map(|b| b.to_data()),
            "field {}",
            f.name()
        );
    }
    for name in ["scalar", "zeros"] {
        let input: Vec<ArrayRef> = batches
            .iter()
            .map(|b| b.column_by_name(name).expect("input column").clone())
            .collect();
        let input: Vec<&dyn Array> = input.iter().map(|a| a.as_ref()).collect();
        let expected = arrow_select::concat::concat(&input).expect("concatenated");
        let got = read.column_by_name(name).expect("a column");
        assert!(got.to_data() == expected.to_data(), "field {name}");
    }

    // The same clusters and pages (elements per page), in other places.
    let (d_runs, d_whole) = (runs.descriptor(), whole.descriptor());
    assert!(d_runs.clusters.len() > 2, "several clusters");
    assert_eq!(d_runs.clusters.len(), d_whole.clusters.len());
    let zeros_column = d_runs
        .written_columns(d_runs.find_field("zeros").expect("the zeros field"))
        .first()
        .copied()
        .expect("a column");
    let mut located_apart = false;
    let mut zero_pages = 0;
    let mut merged = 0;
    for (a, b) in d_runs.clusters.iter().zip(&d_whole.clusters) {
        assert_eq!((a.first_entry, a.n_entries), (b.first_entry, b.n_entries));
        for (ca, cb) in a.columns.iter().zip(&b.columns) {
            let counts = |c: &ColumnPages| c.pages.iter().map(|p| p.n_elements).collect::<Vec<_>>();
            assert_eq!(counts(ca), counts(cb));
        }
        let zeros = a.column(zeros_column).expect("zeros pages");
        // Pages of zeros of the same length are identical: one place per length.
        let mut places: HashMap<u32, HashSet<u64>> = HashMap::new();
        for p in &zeros.pages {
            places
                .entry(p.n_elements)
                .or_default()
                .insert(p.locator.offset);
        }
        zero_pages += zeros.pages.len();
        assert!(
            places.values().all(|offsets| offsets.len() == 1),
            "identical pages stored once per cluster: {places:?}"
        );
        let stored = |pages: &ColumnPages| {
            pages
                .pages
                .iter()
                .map(|p| p.locator.offset)
                .collect::<HashSet<_>>()
                .len()
        };
        let whole_zeros = b.column(zeros_column).expect("zeros pages");
        assert_eq!(stored(zeros), stored(whole_zeros), "merged as in one run");
        merged += zeros.pages.len() - stored(zeros);
        // A column's pages lie together in one run per cluster, not in many runs.
        let list = a.column(0).expect("column 0");
        let gaps = list
            .pages
            .windows(2)
            .filter(|w| w[0].locator.offset + w[0].locator.size + 8 != w[1].locator.offset)
            .count();
        located_apart |= gaps > 0;
    }
    assert!(located_apart, "runs interleave the columns' pages");
    assert!(merged > 0, "pages of zeros merged");
    assert!(
        zero_pages > 4 * d_runs.clusters.len(),
        "{zero_pages} pages of zeros in {} clusters: too few to span runs",
        d_runs.clusters.len()
    );
}

#[test]
fn bulk_page_plan_matches_the_entry_by_entry_plan() {
    // Small pages and budgets: many page overflows, growths and evictions. Batches of
    // 3000 entries are planned in bulk (counts between the entries where a page
    // overflows); batches of one entry are planned append by append, as ROOT plans
    // them. The files must be the same, byte for byte (the data, about 1.5 MB, stays
    // below one run of pages, so that the batches' sizes do not move run boundaries).
    let batches: Vec<RecordBatch> = (0..4).map(|k| batch(3000, k)).collect();
    for (initial, max, budget, cluster) in [
        (64, 4096, None, 20_000),
        (16, 1024, Some(12 * 1024), 50_000),
        (256, 1 << 20, None, 128 << 20),
        (8, 512, Some(4 * 1024), 7_000),
    ] {
        let options = WriteOptions::builder()
            .initial_page_size(initial)
            .page_size(max)
            .page_buffer_budget(budget)
            .cluster_size(cluster)
            .build()
            .expect("valid");
        let (bulk, _) = write_batches(&batches, &options);
        let (per_entry, _) = write_in_slices(&batches, &options, 1);
        assert!(
            bulk == per_entry,
            "pages {initial}..{max}, budget {budget:?}, cluster {cluster}"
        );
    }
}
