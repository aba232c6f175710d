//! Fields this reader cannot understand are skipped with a warning while the others
//! still read; and a selection reads only the pages it needs.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::RecordBatch;
use rntuple::container::RootFile;
use rntuple::format::{
    open_envelope, seal_envelope, Anchor, EnvelopeType, Footer, Header, PageList,
};
use rntuple::read::RNTupleReader;
use rntuple_io::{MemorySource, ReadAt};
use std::path::PathBuf;
use std::sync::Arc;

fn data_file(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

fn open(bytes: Vec<u8>) -> RNTupleReader {
    let file = RootFile::open(Arc::new(MemorySource::new("test.root", bytes))).unwrap();
    RNTupleReader::open(&file, None).unwrap()
}

fn span(bytes: &[u8], offset: u64, n: u64) -> Vec<u8> {
    bytes[offset as usize..(offset + n) as usize].to_vec()
}

/// Replaces the envelope at `offset` (uncompressed, same length) by `new_payload`.
fn replace_envelope(bytes: &mut [u8], offset: u64, kind: EnvelopeType, new_payload: &[u8]) -> u64 {
    let env = seal_envelope(kind, new_payload);
    let at = offset as usize;
    bytes[at..at + env.len()].copy_from_slice(&env);
    u64::from_le_bytes(env[env.len() - 8..].try_into().unwrap())
}

/// The uncompressed test file (written by ROOT 6.40) with its header changed by
/// `mutate`, and the header checksum references in footer and page lists updated.
fn patched_file(mutate: impl FnOnce(&mut Header)) -> Vec<u8> {
    let mut bytes = data_file("tests/data/events_uncompressed.root");
    let file = RootFile::open(Arc::new(MemorySource::new("t", bytes.clone()))).unwrap();
    let anchor = Anchor::from_object(&file.rntuple_anchors().unwrap()[0].object, "anchor").unwrap();
    assert_eq!(
        anchor.nbytes_header, anchor.len_header,
        "test file is uncompressed"
    );

    let header_env = span(&bytes, anchor.seek_header, anchor.nbytes_header);
    let (payload, _) = open_envelope(&header_env, EnvelopeType::Header, "header").unwrap();
    let mut header = Header::read(payload).unwrap();
    assert_eq!(
        header.write(),
        payload,
        "our header writer reproduces ROOT's bytes"
    );
    mutate(&mut header);
    let new_sum = replace_envelope(
        &mut bytes,
        anchor.seek_header,
        EnvelopeType::Header,
        &header.write(),
    );

    let footer_env = span(&bytes, anchor.seek_footer, anchor.nbytes_footer);
    let (payload, _) = open_envelope(&footer_env, EnvelopeType::Footer, "footer").unwrap();
    let mut footer = Footer::read(payload).unwrap();
    assert_eq!(
        footer.write(),
        payload,
        "our footer writer reproduces ROOT's bytes"
    );
    footer.header_checksum = new_sum;
    replace_envelope(
        &mut bytes,
        anchor.seek_footer,
        EnvelopeType::Footer,
        &footer.write(),
    );

    for group in &footer.cluster_groups {
        let loc = group.page_list.locator;
        let env = span(&bytes, loc.offset, loc.size);
        let (payload, _) = open_envelope(&env, EnvelopeType::PageList, "page list").unwrap();
        let mut list = PageList::read(payload).unwrap();
        assert_eq!(
            list.write().unwrap(),
            payload,
            "our page list writer reproduces ROOT's bytes"
        );
        list.header_checksum = new_sum;
        replace_envelope(
            &mut bytes,
            loc.offset,
            EnvelopeType::PageList,
            &list.write().unwrap(),
        );
    }
    bytes
}

fn field_id(header: &Header, name: &str) -> usize {
    header
        .schema
        .fields
        .iter()
        .position(|f| f.name == name)
        .unwrap()
}

/// Reads everything and checks the other fields equal the unpatched file's.
fn assert_skipped(bytes: Vec<u8>, skipped: &str) {
    let original: RecordBatch = {
        let r = open(data_file("tests/data/events_uncompressed.root"));
        r.read(None, 0..r.num_entries()).unwrap()
    };
    let reader = open(bytes);
    let warnings = reader.descriptor().warnings.join("\n");
    assert!(warnings.contains(skipped), "warnings: {warnings}");
    let batch = reader.read(None, 0..reader.num_entries()).unwrap();
    assert!(batch.schema().field_with_name(skipped).is_err());
    assert_eq!(batch.num_columns(), original.num_columns() - 1);
    for field in batch.schema().fields() {
        assert_eq!(
            batch.column_by_name(field.name()).unwrap(),
            original.column_by_name(field.name()).unwrap(),
            "{}",
            field.name()
        );
    }
}

#[test]
fn unknown_column_type_skips_only_its_top_level_field() {
    let bytes = patched_file(|h| {
        // The float column of Jet_eta's item field gets a column type from the future.
        let item = h
            .schema
            .fields
            .iter()
            .position(|f| f.name == "_0" && f.parent_id as usize == field_id(h, "Jet_eta"))
            .unwrap();
        let col = h
            .schema
            .columns
            .iter_mut()
            .find(|c| c.field_id as usize == item)
            .unwrap();
        col.column_type = 0x55;
    });
    assert_skipped(bytes, "Jet_eta");
}

#[test]
fn unknown_structural_role_skips_only_that_field() {
    let bytes = patched_file(|h| {
        let id = field_id(h, "MET_pt");
        h.schema.fields[id].role = 9;
    });
    assert_skipped(bytes, "MET_pt");
}

#[test]
fn a_selection_reads_only_its_own_pages() {
    let bytes = data_file("../../examples/events.root");
    let source = Arc::new(MemorySource::new("events.root", bytes));
    let file = RootFile::open(source.clone()).unwrap();
    let reader = RNTupleReader::open(&file, None).unwrap();
    let d = reader.descriptor();
    // Entries 334..1163 are exactly clusters 1 and 2 of the example file.
    assert_eq!(
        (d.clusters[1].first_entry, d.clusters[3].first_entry),
        (334, 1163)
    );
    let jet_pt = d.find_field("Jet_pt").unwrap();
    let item = d.field(jet_pt).children[0];
    let columns: Vec<u32> = [jet_pt, item]
        .iter()
        .flat_map(|&f| d.field(f).columns.clone())
        .collect();
    let expected: u64 = d.clusters[1..3]
        .iter()
        .flat_map(|c| {
            columns
                .iter()
                .flat_map(move |&col| c.column(col).unwrap().pages.iter())
        })
        .map(|p| p.locator.size + if p.has_checksum { 8 } else { 0 })
        .sum();
    let before = source.metrics();
    let batch = reader
        .read(Some(&["Jet_pt".to_string()]), 334..1163)
        .unwrap();
    let after = source.metrics();
    assert_eq!(batch.num_rows(), 829);
    assert_eq!(after.bytes_read - before.bytes_read, expected);
    assert!(
        expected < source.size() / 5,
        "the selection is a small part of the file"
    );
}

#[test]
fn entry_ranges_match_slices_of_the_full_read() {
    let reader = open(data_file("../../examples/events.root"));
    let n = reader.num_entries();
    let full = reader.read(None, 0..n).unwrap();
    let starts: Vec<u64> = reader
        .descriptor()
        .clusters
        .iter()
        .map(|c| c.first_entry)
        .collect();
    let mut ranges = vec![(0, 1), (1, 2), (n - 1, n), (5, n - 3), (3, 3)];
    for &s in starts.iter().skip(1) {
        ranges.push((s - 1, s + 1));
        ranges.push((s, (s + 7).min(n)));
        ranges.push((s.saturating_sub(100), (s + 250).min(n)));
    }
    for (a, b) in ranges {
        let part = reader.read(None, a..b).unwrap();
        let want = full.slice(a as usize, (b - a) as usize);
        assert_eq!(part.num_rows(), want.num_rows(), "{a}..{b}");
        for (i, (x, y)) in part.columns().iter().zip(want.columns()).enumerate() {
            assert_eq!(x.to_data(), y.to_data(), "{a}..{b} column {i}");
        }
    }
}
