//! Fields of one collection written as separate vectors (as NanoAOD's `Jet_pt`,
//! `Jet_eta`) have offsets columns whose page lists point to the same stored pages
//! (same-page merging): a read decodes those offsets once and the fields' arrays share
//! one offsets buffer. Checked against the written data, with the decoder's page bytes
//! counted per column as before, whole reads and streamed steps, local and remote.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

mod common;

use arrow_array::builder::{Float32Builder, Int32Builder, LargeListBuilder};
use arrow_array::{Array, ArrayRef, LargeListArray, RecordBatch};
use common::{schema_builder_of, write_in_memory, RemoteLike};
use rntuple::read::RNTupleReader;
use rntuple_io::{IoMetrics, MemorySource, ReadHints};
use std::sync::Arc;

/// Entries of the test data: several clusters of several pages each.
const ENTRIES: usize = 20_000;

/// `Jet_pt` and `Jet_eta` (i % 4 items), `Muon_pt` (another count), `nothing` (a
/// vector as long as the jets' in one entry of 7, so its offsets differ).
fn events() -> RecordBatch {
    let mut jet_pt = LargeListBuilder::new(Float32Builder::new());
    let mut jet_eta = LargeListBuilder::new(Int32Builder::new());
    let mut muon_pt = LargeListBuilder::new(Float32Builder::new());
    let mut nearly = LargeListBuilder::new(Float32Builder::new());
    for i in 0..ENTRIES {
        let jets = i % 4;
        for k in 0..jets {
            jet_pt.values().append_value((i * 10 + k) as f32);
            jet_eta.values().append_value((i as i32) - (k as i32));
        }
        for k in 0..(i * 7 + 3) % 5 {
            muon_pt.values().append_value(k as f32 + 0.25);
        }
        let n = if i % 7 == 0 { jets + 1 } else { jets };
        for k in 0..n {
            nearly.values().append_value(k as f32);
        }
        jet_pt.append(true);
        jet_eta.append(true);
        muon_pt.append(true);
        nearly.append(true);
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("Jet_pt", Arc::new(jet_pt.finish())),
        ("Jet_eta", Arc::new(jet_eta.finish())),
        ("Muon_pt", Arc::new(muon_pt.finish())),
        ("nearly", Arc::new(nearly.finish())),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

fn open(bytes: &[u8], anchor: &rntuple::format::Anchor, remote: bool) -> RNTupleReader {
    let inner = MemorySource::new("mem", bytes.to_vec());
    let source: rntuple_io::Source = if remote {
        Arc::new(RemoteLike {
            inner,
            metrics: IoMetrics::default(),
            hints: ReadHints::REMOTE,
        })
    } else {
        Arc::new(inner)
    };
    RNTupleReader::from_anchor(source, *anchor, "t".into()).unwrap()
}

fn list<'a>(batch: &'a RecordBatch, name: &str) -> &'a LargeListArray {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<LargeListArray>()
        .unwrap()
}

/// `got` holds the values of `expected`, field by field (the read's schema names the
/// items as RNTuple does, so the batches' types differ).
fn assert_same_values(got: &RecordBatch, expected: &RecordBatch, context: &str) {
    assert_eq!(got.num_columns(), expected.num_columns(), "{context}");
    for field in expected.schema().fields() {
        let (g, e) = (list(got, field.name()), list(expected, field.name()));
        let base = e.value_offsets()[0];
        let rebased: Vec<i64> = e.value_offsets().iter().map(|o| o - base).collect();
        assert_eq!(
            g.value_offsets(),
            &rebased[..],
            "{context}: {}",
            field.name()
        );
        let values = e
            .values()
            .slice(base as usize, e.values().len() - base as usize);
        let values = values.slice(0, g.values().len());
        assert_eq!(g.values(), &values, "{context}: {}", field.name());
    }
}

/// Where an array's offsets live in memory.
fn offsets_at(batch: &RecordBatch, name: &str) -> *const i64 {
    list(batch, name).value_offsets().as_ptr()
}

/// The stored bytes (checksums included) of every page of every column over all
/// clusters: a page stored once for several columns counts for each.
fn page_bytes_per_column(reader: &RNTupleReader) -> u64 {
    let d = reader.descriptor();
    d.clusters
        .iter()
        .flat_map(|c| (0..d.columns.len() as u32).filter_map(|id| c.column(id)))
        .flat_map(|cp| &cp.pages)
        .map(|p| p.locator.size + 8 * u64::from(p.has_checksum))
        .sum()
}

/// Whether a stored page is listed twice (in two clusters, or twice in one) for the
/// columns of field `name` (and its subfields): pages merged by the writer.
fn pages_listed_twice(reader: &RNTupleReader, name: &str) -> bool {
    let d = reader.descriptor();
    let mut fields = vec![d.find_field(name).unwrap()];
    let mut columns = Vec::new();
    while let Some(id) = fields.pop() {
        columns.extend(d.field(id).columns.iter().copied());
        fields.extend(d.field(id).children.iter().copied());
    }
    let mut seen = std::collections::HashSet::new();
    d.clusters.iter().any(|c| {
        columns
            .iter()
            .filter_map(|&id| c.column(id).map(|cp| (id, cp)))
            .any(|(id, cp)| {
                cp.pages
                    .iter()
                    .any(|p| !seen.insert((id, p.locator.offset, p.locator.size)))
            })
    })
}

#[test]
fn fields_of_one_collection_share_their_decoded_offsets() {
    let batch = events();
    let schema = schema_builder_of(&batch).finish();
    // 8 KiB clusters (compressed), 1 KiB pages: several clusters of several pages.
    let (bytes, anchor) = write_in_memory(schema, &batch, 8 << 10, 1 << 10);
    for remote in [false, true] {
        let reader = open(&bytes, &anchor, remote);
        let clusters = reader.descriptor().clusters.len();
        assert!(clusters > 2, "{clusters} clusters");
        let d = reader.descriptor();
        // The writer merged the identical offsets pages: the precondition of sharing.
        let offsets_column = |name: &str| {
            let id = d.find_field(name).unwrap();
            d.field(id).columns[0]
        };
        let (pt, eta) = (offsets_column("Jet_pt"), offsets_column("Jet_eta"));
        let c0 = &d.clusters[0];
        assert_eq!(c0.column(pt).unwrap().pages, c0.column(eta).unwrap().pages);

        let before = reader.metrics().bytes_used;
        let whole = reader.read(None, 0..ENTRIES as u64).unwrap();
        assert_same_values(&whole, &batch, &format!("remote {remote}"));
        assert_eq!(
            offsets_at(&whole, "Jet_pt"),
            offsets_at(&whole, "Jet_eta"),
            "one offsets buffer for the jets"
        );
        assert_ne!(offsets_at(&whole, "Jet_pt"), offsets_at(&whole, "Muon_pt"));
        assert_ne!(offsets_at(&whole, "Jet_pt"), offsets_at(&whole, "nearly"));
        // Every column's pages count as used, shared or not: the figure is the same as
        // when each field decoded its own offsets.
        let used = reader.metrics().bytes_used - before;
        assert_eq!(used, page_bytes_per_column(&reader), "remote {remote}");

        // Streamed in steps that cut pages: each step's jets share their offsets, the
        // values are the written ones, and the pages count as without sharing.
        let steps: Vec<_> = (0..ENTRIES as u64)
            .step_by(1234)
            .map(|s| s..(s + 1234).min(ENTRIES as u64))
            .collect();
        let stream = |names: Option<&[String]>| {
            let reader = open(&bytes, &anchor, remote);
            let got: Vec<RecordBatch> = reader
                .read_ranges(names, steps.clone())
                .unwrap()
                .collect::<rntuple::error::Result<_>>()
                .unwrap();
            (got, reader.metrics().bytes_used)
        };
        let (got, streamed) = stream(None);
        for (part, range) in got.iter().zip(&steps) {
            let expected = batch.slice(range.start as usize, (range.end - range.start) as usize);
            assert_same_values(part, &expected, &format!("remote {remote}, {range:?}"));
            assert_eq!(offsets_at(part, "Jet_pt"), offsets_at(part, "Jet_eta"));
        }
        assert_eq!(got.len(), steps.len());
        // The stream counts what the fields streamed one by one (nothing shared) count.
        let one_by_one: u64 = ["Jet_pt", "Jet_eta", "Muon_pt", "nearly"]
            .iter()
            .map(|name| stream(Some(&[name.to_string()])).1)
            .sum();
        assert_eq!(streamed, one_by_one, "remote {remote}");
        // A stream reads each listed page once, as a whole read does: a page cut by a
        // range's end is kept for the next range, and so is the last page of an offsets
        // column (the next range starts one element early). Only a page listed twice
        // (same stored bytes, merged by the writer) can be taken from the
        // carry instead of read again (a whole read takes it for each listing).
        assert!(
            !pages_listed_twice(&reader, "Jet_pt"),
            "the jets' pages differ"
        );
        for name in ["Jet_pt", "Jet_eta", "Muon_pt", "nearly"] {
            let one = [name.to_string()];
            let whole_reader = open(&bytes, &anchor, remote);
            whole_reader.read(Some(&one), 0..ENTRIES as u64).unwrap();
            let whole = whole_reader.metrics().bytes_used;
            let streamed = stream(Some(&one)).1;
            if pages_listed_twice(&whole_reader, name) {
                assert!(streamed <= whole, "{name}: {streamed} > {whole}");
            } else {
                assert_eq!(streamed, whole, "{name}, remote {remote}");
            }
        }

        // One field alone reads its own offsets (nothing to share with).
        let alone = reader
            .read(Some(&["Jet_eta".to_string()]), 0..ENTRIES as u64)
            .unwrap();
        let only_eta = batch.project(&[1]).unwrap();
        assert_same_values(
            &alone,
            &only_eta,
            &format!("remote {remote}, Jet_eta alone"),
        );
    }
}
