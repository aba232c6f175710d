//! Reads of a local file that bypass the page cache (direct I/O, `RNTUPLE_DIRECT_IO`):
//! the same values as reads of the same bytes in memory, fetched in few planned requests
//! when the file is not cached, page by page through the page cache when it is.
//!
//! One test in this binary: it sets the process's `RNTUPLE_DIRECT_IO`, which every
//! `LocalFile::open` reads.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(target_os = "linux")]

mod common;

use rntuple::read::RNTupleReader;
use rntuple_io::{LocalFile, MemorySource, DIRECT_IO_VARIABLE};
use std::sync::Arc;

/// Evicts the file's (written back, clean) pages from the page cache.
fn drop_from_page_cache(file: &std::fs::File) {
    file.sync_all().unwrap();
    rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
}

fn open_local(path: &str, anchor: &rntuple::format::Anchor) -> RNTupleReader {
    let source: rntuple_io::Source = Arc::new(LocalFile::open(path).unwrap());
    RNTupleReader::from_anchor(source, *anchor, "t".into()).unwrap()
}

#[test]
fn direct_reads_give_the_values_of_the_bytes_and_only_when_the_file_is_not_cached() {
    // 40 fields, 60k entries, small clusters and pages: hundreds of pages.
    let batch = common::scalars_and_vectors(60_000, 40);
    let (bytes, anchor) = common::write_in_memory(
        common::schema_builder_of(&batch).finish(),
        &batch,
        256 << 10,
        16 << 10,
    );
    // On the target directory's file system: tmpfs has no direct I/O.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut file = tempfile::NamedTempFile::new_in(dir).unwrap();
    std::io::Write::write_all(&mut file, &bytes).unwrap();
    let path = file.path().to_str().unwrap().to_string();

    let memory: rntuple_io::Source = Arc::new(MemorySource::new("mem", bytes.clone()));
    let expected_reader = RNTupleReader::from_anchor(memory, anchor, "t".into()).unwrap();
    let n = expected_reader.num_entries();
    let subset: Vec<String> = ["s0", "v1", "s10", "v21", "v39"].map(String::from).to_vec();

    // A bad value is an error that names the variable, not a silent default.
    std::env::set_var(DIRECT_IO_VARIABLE, "sometimes");
    let refused = LocalFile::open(&path).unwrap_err().to_string();
    assert!(refused.contains(DIRECT_IO_VARIABLE), "{refused}");

    for names in [None, Some(subset.as_slice())] {
        let expected = expected_reader.read(names, 0..n).unwrap();

        // Through the page cache, page by page (one request per page).
        std::env::set_var(DIRECT_IO_VARIABLE, "never");
        drop_from_page_cache(file.as_file());
        let buffered = open_local(&path, &anchor);
        assert_eq!(buffered.read(names, 0..n).unwrap(), expected, "{names:?}");
        let page_reads = buffered.metrics().io.requests;
        assert!(page_reads > 100, "{page_reads} page reads");

        // Not cached: direct reads, planned into few requests.
        std::env::set_var(DIRECT_IO_VARIABLE, "always");
        drop_from_page_cache(file.as_file());
        let direct = open_local(&path, &anchor);
        assert_eq!(direct.read(names, 0..n).unwrap(), expected, "{names:?}");
        let m = direct.metrics();
        assert!(
            m.io.requests * 10 < page_reads,
            "{} direct requests against {page_reads} page reads ({names:?})",
            m.io.requests
        );
        assert_eq!(m.unplanned_pages, 0);

        // Cached (by a read through the page cache): page by page again.
        std::fs::read(&path).unwrap();
        let warm = open_local(&path, &anchor);
        assert_eq!(warm.read(names, 0..n).unwrap(), expected, "{names:?}");
        assert_eq!(warm.metrics().io.requests, page_reads, "{names:?}");
    }
    std::env::remove_var(DIRECT_IO_VARIABLE);
}
