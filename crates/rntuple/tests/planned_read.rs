//! Planned reads (what remote sources get): the same values as page-by-page reads, only
//! the pages of the selection fetched, in few vectored requests.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use arrow_array::builder::{Float32Builder, LargeListBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use common::RemoteLike;
use rntuple::read::RNTupleReader;
use rntuple::Result;
use rntuple_io::{
    IoMetrics, IoMetricsSnapshot, MemorySource, RangeBuffer, ReadAhead, ReadAt, ReadHints,
    ReadRequest, SourceOptions, SourceProfile,
};
use std::sync::Arc;

/// 40 fields (scalars and vectors), 60k entries, small clusters: many clusters and pages.
fn written() -> (Vec<u8>, rntuple::format::Anchor) {
    let batch = common::scalars_and_vectors(60_000, 40);
    common::write_in_memory(
        common::schema_builder_of(&batch).finish(),
        &batch,
        256 << 10,
        16 << 10,
    )
}

fn open(bytes: &[u8], anchor: &rntuple::format::Anchor, remote: bool) -> RNTupleReader {
    open_with(bytes, anchor, remote, ReadHints::REMOTE.bunch_bytes)
}

/// `bunch_bytes` below a cluster's size splits clusters into groups of fields.
fn open_with(
    bytes: &[u8],
    anchor: &rntuple::format::Anchor,
    remote: bool,
    bunch_bytes: u64,
) -> RNTupleReader {
    let inner = MemorySource::new("mem", bytes.to_vec());
    let source: rntuple_io::Source = if remote {
        Arc::new(RemoteLike {
            inner,
            metrics: IoMetrics::default(),
            hints: ReadHints {
                max_request_bytes: 1 << 20,
                bunch_bytes,
                ..ReadHints::REMOTE
            },
        })
    } else {
        Arc::new(inner)
    };
    RNTupleReader::from_anchor(source, *anchor, "t".into()).unwrap()
}

#[test]
fn planned_reads_equal_direct_reads_and_fetch_only_the_selection() {
    let (bytes, anchor) = written();
    let local = open(&bytes, &anchor, false);
    assert!(local.descriptor().clusters.len() >= 8, "many clusters");
    let n = local.num_entries();
    let selections: [Option<Vec<String>>; 2] = [
        None,
        Some(["s0", "v1", "s10", "v21", "v39"].map(String::from).to_vec()),
    ];
    for names in &selections {
        // Bunches of several clusters (32 MiB), of one cluster's field groups (16 KiB).
        for (range, bunch_bytes) in [
            (0..n, 32 << 20),
            (0..n, 16 << 10),
            (1234..n - 999, 32 << 20),
            (1234..n - 999, 16 << 10),
            (5..6, 16 << 10),
        ] {
            let remote = open_with(&bytes, &anchor, true, bunch_bytes);
            let before = remote.metrics();
            let expected = local.read(names.as_deref(), range.clone()).unwrap();
            let got = remote.read(names.as_deref(), range.clone()).unwrap();
            assert_eq!(
                got, expected,
                "{names:?} {range:?} bunches of {bunch_bytes}"
            );
            let m = remote.metrics();
            let io_bytes = m.io.bytes_read - before.io.bytes_read;
            assert_eq!(m.unplanned_pages, 0, "every page was planned");
            if range == (0..n) {
                // Whole clusters: the needed pages are exactly what the decoder used.
                let needed: u64 = local_page_bytes(&local, names.as_deref());
                assert_eq!(m.bytes_used, needed);
                assert!(
                    io_bytes as f64 <= 1.1 * needed as f64,
                    "{io_bytes} bytes read for {needed} needed"
                );
                let vector = m.io.vector_requests - before.io.vector_requests;
                assert!(vector >= 1, "vectored reads");
                // Large bunches: requests of up to 1 MiB each (the hints' cap).
                assert!(
                    bunch_bytes < 1 << 20 || vector <= 2 + io_bytes / (1 << 20),
                    "{vector} vector requests for {io_bytes} bytes"
                );
            }
        }
    }
}

/// The stored bytes (with checksums) of the pages of the selection's columns.
fn local_page_bytes(reader: &RNTupleReader, names: Option<&[String]>) -> u64 {
    let d = reader.descriptor();
    let selected: Vec<u32> = reader
        .select_fields(names)
        .unwrap()
        .iter()
        .map(|(id, _)| *id)
        .collect();
    let mut columns = Vec::new();
    let mut stack = selected;
    while let Some(id) = stack.pop() {
        let f = d.field(id);
        columns.extend(f.columns.iter().copied());
        stack.extend(f.children.iter().copied());
    }
    // A page stored once for several columns (same-page merging) counts once per column:
    // the decoder uses it for each.
    let mut bytes = 0;
    for c in &d.clusters {
        for &col in &columns {
            if let Some(cp) = c.column(col) {
                for p in &cp.pages {
                    bytes += p.locator.size + 8 * p.has_checksum as u64;
                }
            }
        }
    }
    bytes
}

#[test]
fn a_stream_of_ranges_equals_reading_each_range_and_plans_every_page() {
    let (bytes, anchor) = written();
    let local = open(&bytes, &anchor, false);
    let n = local.num_entries();
    let clusters: Vec<(u64, u64)> = local
        .descriptor()
        .clusters
        .iter()
        .map(|c| (c.first_entry, c.n_entries))
        .collect();
    // Cluster-aligned batches, a batch inside one cluster, an empty one, the rest.
    let (first, n0) = clusters[0];
    let (second, n1) = clusters[1];
    let ranges = vec![
        first..first + n0,
        second..second + n1 / 2,
        second + n1 / 2..second + n1 / 2,
        second + n1 / 2..n - 7,
        n - 7..n,
    ];
    let names: Option<Vec<String>> = Some(["s0", "v1", "v21"].map(String::from).to_vec());
    for bunch_bytes in [32 << 20, 16 << 10] {
        let remote = open_with(&bytes, &anchor, true, bunch_bytes);
        let got: Vec<_> = remote
            .read_ranges(names.as_deref(), ranges.clone())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got.len(), ranges.len());
        for (batch, range) in got.iter().zip(&ranges) {
            let expected = local.read(names.as_deref(), range.clone()).unwrap();
            assert_eq!(batch, &expected, "{range:?} bunches of {bunch_bytes}");
        }
        let m = remote.metrics();
        assert_eq!(
            m.unplanned_pages, 0,
            "every page of every range was planned"
        );
        // The ranges cover every entry; a cluster two ranges share is fetched once: the
        // stream moves what one read of everything moves.
        let whole = open_with(&bytes, &anchor, true, bunch_bytes);
        let opened = whole.metrics().io.bytes_read;
        whole.read(names.as_deref(), 0..n).unwrap();
        let once = whole.metrics().io.bytes_read - opened;
        let streamed = m.io.bytes_read - opened;
        assert!(
            streamed <= once + once / 20,
            "{streamed} bytes for the stream, {once} for one read"
        );
        // The same stream from the local file, read range by range.
        let direct: Vec<_> = local
            .read_ranges(names.as_deref(), ranges.clone())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(direct, got);
    }
    // A range outside the entries fails before anything is read.
    let remote = open(&bytes, &anchor, true);
    let opened = remote.metrics().io.requests;
    assert!(remote.read_ranges(None, vec![0..1, 0..n + 1]).is_err());
    assert_eq!(remote.metrics().io.requests, opened);
}

#[test]
fn consecutive_ranges_read_and_decompress_each_page_once() {
    let (bytes, anchor) = written();
    let local = open(&bytes, &anchor, false);
    let n = local.num_entries();
    let names: Option<Vec<String>> = Some(["s0", "v1", "s10", "v21"].map(String::from).to_vec());
    for names in [None, names] {
        // Steps of 997 entries: most end inside a page, which the next step goes on with.
        let steps: Vec<std::ops::Range<u64>> =
            (0..n).step_by(997).map(|a| a..(a + 997).min(n)).collect();
        for remote in [false, true] {
            let reader = open(&bytes, &anchor, remote);
            let whole = open(&bytes, &anchor, remote);
            let before = whole.metrics().bytes_used;
            whole.read(names.as_deref(), 0..n).unwrap();
            let once = whole.metrics().bytes_used - before;
            let before = reader.metrics().bytes_used;
            let got: Vec<RecordBatch> = reader
                .read_ranges(names.as_deref(), steps.clone())
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            for (batch, range) in got.iter().zip(&steps) {
                let expected = local.read(names.as_deref(), range.clone()).unwrap();
                assert_eq!(batch, &expected, "{range:?}, remote {remote}");
            }
            // A page across a step's end is decoded once, kept, and the next step takes
            // its part from it: the stream uses each page's bytes once, as one read does.
            let used = reader.metrics().bytes_used - before;
            assert_eq!(used, once, "remote {remote}, fields {names:?}");
        }
        // Ranges out of order, overlapping, inside one page, repeated, jumping: each
        // batch is still the read of its range.
        let ranges = vec![
            0..10,
            5..50,
            50..51,
            51..52,
            30_000..30_100,
            30_100..31_000,
            0..n,
            10..20,
            10..20,
            n - 1..n,
        ];
        for remote in [false, true] {
            let reader = open(&bytes, &anchor, remote);
            let got: Vec<RecordBatch> = reader
                .read_ranges(names.as_deref(), ranges.clone())
                .unwrap()
                .decode_ahead()
                .collect::<Result<_>>()
                .unwrap();
            for (batch, range) in got.iter().zip(&ranges) {
                let expected = local.read(names.as_deref(), range.clone()).unwrap();
                assert_eq!(batch, &expected, "{range:?}, remote {remote}");
            }
        }
    }
}

#[test]
fn fields_sharing_columns_read_them_each_in_a_range_whatever_their_order() {
    // `v` and two projections of it, `a` and `b`, read the same columns: within a range
    // each field reads its own pages (kept pages come only from earlier ranges), so a
    // stream over consecutive ranges uses each page's bytes once per field, every time.
    let n = 50_000usize;
    let mut b = LargeListBuilder::new(Float32Builder::new());
    for i in 0..n {
        for k in 0..i % 7 {
            b.values().append_value((i * 3 + k) as f32);
        }
        b.append(true);
    }
    let column: ArrayRef = Arc::new(b.finish());
    let batch = RecordBatch::try_from_iter([("v", column)]).unwrap();
    let mut builder = common::schema_builder_of(&batch);
    builder
        .add_projected_field("a", "std::vector<float>", "v")
        .unwrap();
    builder
        .add_projected_field("b", "std::vector<float>", "v")
        .unwrap();
    let (sink, anchor) = common::write_in_memory(builder.finish(), &batch, 128 << 10, 16 << 10);
    let steps: Vec<std::ops::Range<u64>> = (0..n as u64)
        .step_by(1999)
        .map(|a| a..(a + 1999).min(n as u64))
        .collect();
    let used = |names: &[&str]| {
        let reader = open(&sink, &anchor, false);
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let before = reader.metrics().bytes_used;
        let got: Vec<RecordBatch> = reader
            .read_ranges(Some(&names), steps.clone())
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        let used = reader.metrics().bytes_used - before;
        for (batch, range) in got.iter().zip(&steps) {
            let expected = reader.read(Some(&names[..1]), range.clone()).unwrap();
            for c in batch.columns() {
                assert_eq!(c, expected.column(0));
            }
        }
        used
    };
    let one = used(&["v"]);
    for _ in 0..5 {
        assert_eq!(used(&["v", "a", "b"]), 3 * one);
    }
}

/// Two readers in one process, each with its own settings: the bunch size each was
/// opened with is the one its planned reads use (more, smaller requests for the
/// smaller bunch), whatever the environment says.
#[test]
fn two_readers_read_with_their_own_bunch_sizes() {
    let (bytes, anchor) = written();
    let requests_with = |bunch_bytes: Option<u64>| {
        let reader = open(&bytes, &anchor, true).with_settings(&SourceOptions {
            read_ahead: ReadAhead {
                bunch_bytes,
                ..ReadAhead::default()
            },
            ..SourceOptions::default()
        });
        let before = reader.metrics().io.vector_requests;
        let n = reader.num_entries();
        reader.read(None, 0..n).unwrap();
        reader.metrics().io.vector_requests - before
    };
    let small = open(&bytes, &anchor, true).with_settings(&SourceOptions {
        read_ahead: ReadAhead {
            bunch_bytes: Some(16 << 10),
            ..ReadAhead::default()
        },
        ..SourceOptions::default()
    });
    let large = open(&bytes, &anchor, true);
    let n = large.num_entries();
    // Interleaved in one process: neither setting leaks into the other reader.
    assert_eq!(
        small.read(None, 0..n).unwrap(),
        large.read(None, 0..n).unwrap()
    );
    let (small_requests, large_requests) = (requests_with(Some(16 << 10)), requests_with(None));
    assert!(
        small_requests > 2 * large_requests,
        "16 KiB bunches: {small_requests} requests, the source's 32 MiB: {large_requests}"
    );
}

#[test]
fn a_columns_values_from_a_remote_source_come_in_one_planned_request() {
    let (bytes, anchor) = written();
    let local = open(&bytes, &anchor, false);
    let remote = open(&bytes, &anchor, true);
    let d = local.descriptor();
    // The column of cluster 0 stored in the most pages.
    let cluster = &d.clusters[0];
    let (column, pages) = (0..d.columns.len() as u32)
        .filter_map(|c| cluster.column(c).map(|p| (c, p.pages.len())))
        .max_by_key(|&(_, n)| n)
        .unwrap();
    assert!(pages >= 2, "{pages} pages: too few to tell");
    let stored: u64 = cluster
        .column(column)
        .unwrap()
        .pages
        .iter()
        .map(|p| p.locator.size)
        .sum();
    assert!(stored < 1 << 20, "fits one request of the hints'");
    let before = remote.metrics().io;
    let got = remote.column_values(0, column).unwrap();
    let after = remote.metrics().io;
    assert_eq!(got, local.column_values(0, column).unwrap());
    // Page by page, that was one request per page.
    assert_eq!(
        (
            after.requests - before.requests,
            after.vector_requests - before.vector_requests
        ),
        (1, 1),
        "{pages} pages"
    );
}

/// A source that counts how often it is asked what it is.
struct Profiled {
    inner: RemoteLike,
    asked: std::sync::atomic::AtomicUsize,
}

impl ReadAt for Profiled {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_at(&self, offset: u64, len: u64) -> rntuple_io::Result<Vec<u8>> {
        self.inner.read_at(offset, len)
    }
    fn read(&self, request: ReadRequest<'_>) -> rntuple_io::Result<Vec<RangeBuffer>> {
        self.inner.read(request)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.inner.metrics()
    }
    fn profile(&self) -> SourceProfile {
        self.asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.profile()
    }
}

#[test]
fn a_reader_asks_its_source_what_it_is_once_at_open() {
    let (bytes, anchor) = written();
    let source = Arc::new(Profiled {
        inner: RemoteLike {
            inner: MemorySource::new("mem", bytes.clone()),
            metrics: IoMetrics::default(),
            hints: ReadHints::REMOTE,
        },
        asked: Default::default(),
    });
    let reader = RNTupleReader::from_anchor(source.clone(), anchor, "t".into()).unwrap();
    let asked = || source.asked.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(asked(), 1, "at open");
    let n = reader.num_entries();
    let local = open(&bytes, &anchor, false);
    assert_eq!(
        reader.read(None, 0..n).unwrap(),
        local.read(None, 0..n).unwrap()
    );
    reader.read(Some(&["v3".to_string()]), 10..n / 2).unwrap();
    reader.column_values(1, 0).unwrap();
    assert!(
        reader.metrics().io.vector_requests > 0,
        "planned, remote reads"
    );
    assert_eq!(asked(), 1, "planning asked the profile kept from open");
}
