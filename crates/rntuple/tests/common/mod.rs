//! Helpers shared by the integration tests (`mod common;` in a test file).
//!
//! The conformance data (the RNTuple Validation Suite files written by ROOT 6.40 and
//! ROOT's reading of them) lives in `../shared/conformance/rntuple-validation-1.0`
//! relative to the repository, or where `$RNTUPLE_CONFORMANCE_DIR` says. A test that
//! needs it and does not find it FAILS, naming the path it looked at: it never skips.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]
// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

pub(crate) mod objects;
pub(crate) mod read_task;
pub(crate) mod test_bytes;
#[path = "../../src/test_skips.rs"]
pub(crate) mod test_skips;
pub(crate) mod tried;

use rntuple::container::RootFile;
use rntuple::format::{unpack_envelope, Anchor, EnvelopeType, Footer, LocatorKind, PageList};
use rntuple::merge::{merge_files, merge_to_dataset, MergeOptions};
use rntuple::read::RNTupleReader;
use rntuple_io::{
    Access, IoMetrics, IoMetricsSnapshot, MemorySource, ObjectDataset, RangeBuffer, ReadAt,
    ReadHints, ReadRanges, ReadRequest, SourceProfile,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment variable that overrides where the conformance data is.
pub(crate) const CONFORMANCE_ENV: &str = "RNTUPLE_CONFORMANCE_DIR";

/// Where the conformance data is expected: `$RNTUPLE_CONFORMANCE_DIR`, else
/// `../shared/conformance/rntuple-validation-1.0` beside the repository (found from this
/// crate's manifest directory, never from an absolute path).
pub(crate) fn conformance_root() -> PathBuf {
    match std::env::var_os(CONFORMANCE_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/rntuple-validation-1.0"),
    }
}

/// The conformance data's `write/` folder (the `.root` files); panics with a clear
/// message when it is missing or holds no `.root` files.
pub(crate) fn conformance_write_dir() -> PathBuf {
    let dir = conformance_root().join("write");
    conformance_files_in(&dir);
    dir
}

/// The conformance data's `read/` folder (ROOT's reading, one `.json` per case); panics
/// when it is missing or holds no `.json` files.
pub(crate) fn conformance_read_dir() -> PathBuf {
    let dir = conformance_root().join("read");
    files_with_extension(&dir, "json");
    dir
}

/// Every conformance `.root` file, sorted; panics when there are none.
pub(crate) fn conformance_files() -> Vec<PathBuf> {
    conformance_files_in(&conformance_root().join("write"))
}

/// The `.root` files of `dir`, sorted; panics with a message naming `dir` when it is
/// missing or holds none.
pub(crate) fn conformance_files_in(dir: &Path) -> Vec<PathBuf> {
    files_with_extension(dir, "root")
}

/// The conformance file of `case` (e.g. `"types.string"`); panics when the data is
/// missing or the case is not there.
pub(crate) fn conformance_file(case: &str) -> PathBuf {
    let path = conformance_write_dir().join(format!("{case}.root"));
    assert!(
        path.is_file(),
        "conformance case {case} missing: {} does not exist",
        path.display()
    );
    path
}

fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let hint = format!(
        "the conformance data (the RNTuple Validation Suite) is expected in \
         ../shared/conformance/rntuple-validation-1.0 beside the repository, or where \
         ${CONFORMANCE_ENV} points"
    );
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
        panic!(
            "conformance data missing: cannot read {}: {e}; {hint}",
            dir.display()
        )
    });
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("reading a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    assert!(
        !files.is_empty(),
        "conformance data missing: {} holds no .{extension} files; {hint}",
        dir.display()
    );
    files.sort();
    files
}

/// Byte ranges of the header, footer and first page list envelopes and of the largest
/// page of the first cluster, as (name, offset, size).
pub(crate) fn regions(bytes: &[u8]) -> Vec<(String, u64, u64)> {
    let file = RootFile::open(Arc::new(MemorySource::new("test.root", bytes.to_vec()))).unwrap();
    let key = file.rntuple_anchors().unwrap().remove(0);
    let anchor = Anchor::from_object(&key.object, "anchor").unwrap();
    let reader = RNTupleReader::open(&file, None).unwrap();
    let page = reader.descriptor().clusters[0]
        .columns
        .iter()
        .flat_map(|c| c.pages.iter())
        .max_by_key(|p| p.locator.size)
        .unwrap()
        .locator;
    let footer_raw =
        &bytes[anchor.seek_footer as usize..(anchor.seek_footer + anchor.nbytes_footer) as usize];
    let footer_env = if anchor.nbytes_footer == anchor.len_footer {
        footer_raw.to_vec()
    } else {
        rntuple::compression::decompress(footer_raw, anchor.len_footer as usize, "footer").unwrap()
    };
    let footer = Footer::read(&footer_env[8..footer_env.len() - 8]).unwrap();
    let page_list = footer.cluster_groups[0].page_list.locator;
    vec![
        (
            "header envelope".into(),
            anchor.seek_header,
            anchor.nbytes_header,
        ),
        (
            "footer envelope".into(),
            anchor.seek_footer,
            anchor.nbytes_footer,
        ),
        (
            "page list envelope".into(),
            page_list.offset,
            page_list.size,
        ),
        ("page".into(), page.offset, page.size),
    ]
}

/// `fields` fields of `entries` entries, alternating `Int64` scalars (`s0`, `s2`, ...)
/// and `std::vector<float>` (`v1`, `v3`, ...) of 0 to 4 items: values that differ per
/// field and entry, so that a page read for the wrong field or range shows.
pub(crate) fn scalars_and_vectors(entries: usize, fields: usize) -> arrow_array::RecordBatch {
    use arrow_array::builder::{Float32Builder, Int64Builder, LargeListBuilder};
    use arrow_array::ArrayRef;
    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    for f in 0..fields {
        if f % 2 == 0 {
            let mut b = Int64Builder::new();
            for i in 0..entries {
                b.append_value((i * 7 + f) as i64 % 1000);
            }
            columns.push((format!("s{f}"), Arc::new(b.finish())));
        } else {
            let mut b = LargeListBuilder::new(Float32Builder::new());
            for i in 0..entries {
                for k in 0..(i + f) % 5 {
                    b.values().append_value((i * k + f) as f32 * 0.5);
                }
                b.append(true);
            }
            columns.push((format!("v{f}"), Arc::new(b.finish())));
        }
    }
    arrow_array::RecordBatch::try_from_iter(columns).unwrap()
}

/// The schema of `batch`'s fields, compressed columns.
pub(crate) fn schema_builder_of(
    batch: &arrow_array::RecordBatch,
) -> rntuple::schema::SchemaBuilder {
    use rntuple::schema::{ColumnDefaults, SchemaBuilder};
    let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: true });
    for f in batch.schema().fields() {
        builder.add_arrow_field(f).unwrap();
    }
    builder
}

/// `batch` written with `schema` as the RNTuple `t` into a ROOT file in memory, with
/// clusters of `cluster_size` and pages of `page_size` bytes; the file and its anchor.
pub(crate) fn write_in_memory(
    schema: rntuple::format::SchemaDescription,
    batch: &arrow_array::RecordBatch,
    cluster_size: u64,
    page_size: u64,
) -> (Vec<u8>, Anchor) {
    use rntuple::write::{RNTupleWriter, WriteOptions};
    let options = WriteOptions::builder()
        .cluster_size(cluster_size)
        .page_size(page_size)
        .build()
        .unwrap();
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let mut w = RNTupleWriter::new(&mut sink, "t", schema, options).unwrap();
        w.write_batch(batch).unwrap();
        w.finish().unwrap()
    };
    (sink, anchor)
}

/// `batches` written as the RNTuple `t` in memory, one cluster per batch (the schema
/// of the first), uncompressed; its reader.
pub(crate) fn reader_of_clusters(batches: &[arrow_array::RecordBatch]) -> RNTupleReader {
    use rntuple::schema::{ColumnDefaults, SchemaBuilder};
    use rntuple::write::{RNTupleWriter, WriteOptions};
    let mut schema = SchemaBuilder::new(ColumnDefaults { compressed: false });
    for f in batches[0].schema().fields() {
        schema.add_arrow_field(f).unwrap();
    }
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let mut writer =
            RNTupleWriter::new(&mut sink, "t", schema.finish(), WriteOptions::default()).unwrap();
        for batch in batches {
            writer.write_batch(batch).unwrap();
            writer.commit_cluster().unwrap();
        }
        writer.finish().unwrap()
    };
    reader_in_memory("mem", sink, anchor, "t")
}

/// The reader of the RNTuple `name` of `anchor` in `bytes`, held in memory as the source
/// `source`.
pub(crate) fn reader_in_memory(
    source: &str,
    bytes: Vec<u8>,
    anchor: Anchor,
    name: &str,
) -> RNTupleReader {
    RNTupleReader::from_anchor(
        Arc::new(MemorySource::new(source, bytes)),
        anchor,
        name.into(),
    )
    .unwrap()
}

/// The strings of `list`, owned.
pub(crate) fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A source (memory by default, or a local file) that behaves like a remote one: the
/// given hints, vectored reads counted as one request each.
pub(crate) struct RemoteLike<R: ReadAt = MemorySource> {
    pub inner: R,
    pub metrics: IoMetrics,
    pub hints: ReadHints,
}

impl<R: ReadAt> ReadAt for RemoteLike<R> {
    fn name(&self) -> &str {
        "remote-like"
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_at(&self, offset: u64, len: u64) -> rntuple_io::Result<Vec<u8>> {
        let t = std::time::Instant::now();
        let out = self.inner.read_at(offset, len)?;
        self.metrics.record(false, 1, len, t);
        Ok(out)
    }
    fn read(&self, request: ReadRequest<'_>) -> rntuple_io::Result<Vec<RangeBuffer>> {
        // A hint is no request; the buffers given back are dropped.
        if request.access == Access::WillNeed {
            return Ok(Vec::new());
        }
        let (t, ranges) = (std::time::Instant::now(), request.ranges);
        let out = self.inner.read_ranges(ranges)?;
        let bytes = ranges.iter().map(|r| r.len).sum();
        self.metrics.record(true, ranges.len() as u64, bytes, t);
        Ok(out.into_iter().map(RangeBuffer::whole).collect())
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
    fn profile(&self) -> SourceProfile {
        SourceProfile::with_hints(self.hints)
    }
}

/// The `VmFlags` of this process's mapping that holds `address` (Linux's
/// `/proc/self/smaps`): "hg" marks a range advised for transparent huge pages.
pub(crate) fn vm_flags(address: usize) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) {
                inside = (start..end).contains(&address);
                continue;
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.split_whitespace().map(String::from).collect();
            }
        }
    }
    panic!("no mapping holds {address:#x}");
}

/// Writes columns large enough that the reader maps their pages at once (600k entries:
/// 4.8 MB per `Int64` column), reads them back, checks the values, and returns the
/// `VmFlags` of the mapping of the decoded column `s0`: the reader's memory as the
/// process's `RNTUPLE_HUGE_PAGES` makes it.
pub(crate) fn flags_of_a_decoded_column() -> Vec<String> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    let batch = scalars_and_vectors(600_000, 4);
    let (bytes, anchor) = write_in_memory(
        schema_builder_of(&batch).finish(),
        &batch,
        64 << 20,
        1 << 20,
    );
    let reader = reader_in_memory("mem", bytes, anchor, "t");
    let read = reader.read(None, 0..reader.num_entries()).unwrap();
    assert_eq!(read.num_rows(), batch.num_rows());
    for (field, expected) in batch.schema().fields().iter().zip(batch.columns()) {
        let name = field.name();
        let got = read.column_by_name(name).unwrap();
        // Lists are compared by their offsets and items (the read's item field carries
        // the RNTuple type as metadata, which the written batch's does not).
        let same = match (got.as_list_opt::<i64>(), expected.as_list_opt::<i64>()) {
            (Some(g), Some(e)) => {
                g.value_offsets() == e.value_offsets()
                    && g.values().to_data() == e.values().to_data()
            }
            _ => got.to_data() == expected.to_data(),
        };
        assert!(same, "field {name} differs from the written values");
    }
    let s0 = read
        .column_by_name("s0")
        .unwrap()
        .as_primitive::<Int64Type>();
    vm_flags(s0.values().as_ptr() as usize + s0.len() * 8 / 2)
}

/// A fresh, empty directory `<test>-<pid>-<name>` under cargo's temporary directory for
/// integration tests.
pub(crate) fn scratch_dir(test: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{test}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every entry of every field of `reader`, as one Arrow batch.
pub(crate) fn all_values(reader: &RNTupleReader) -> arrow_array::RecordBatch {
    reader.read(None, 0..reader.num_entries()).unwrap()
}

/// The payload of the envelope of `kind` (named `what` in errors) stored as `bytes`, of
/// `length` bytes unpacked.
pub(crate) fn envelope_payload(
    bytes: &[u8],
    length: u64,
    kind: EnvelopeType,
    what: &str,
) -> Vec<u8> {
    unpack_envelope(bytes, length, 1 << 30, kind, what)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .0
}

/// The footer stored as `bytes`, of `length` bytes unpacked.
pub(crate) fn footer_of(bytes: &[u8], length: u64) -> Footer {
    Footer::read(&envelope_payload(
        bytes,
        length,
        EnvelopeType::Footer,
        "footer",
    ))
    .unwrap()
}

/// The page list stored as `bytes`, of `length` bytes unpacked.
pub(crate) fn page_list_of(bytes: &[u8], length: u64) -> PageList {
    PageList::read(&envelope_payload(
        bytes,
        length,
        EnvelopeType::PageList,
        "page list",
    ))
    .unwrap()
}

/// Copies the RNTuple at `location` (a path or URI) into the file `back`, pages copied
/// again, and checks that it reads as `original` (`case` names the test case).
pub(crate) fn back_to_a_file(location: &str, back: &Path, original: &RNTupleReader, case: &str) {
    merge_files(
        &[location.to_string()],
        back,
        &MergeOptions::default(),
        false,
        |_| {},
    )
    .unwrap_or_else(|e| panic!("{case}: back to a file: {e}"));
    let again = RNTupleReader::open_path(back.to_str().unwrap(), None).unwrap();
    assert_eq!(
        all_values(&again),
        all_values(original),
        "{case}: back in a file"
    );
}

/// Copies the RNTuple file `file` into `dataset` (replacing one there if `replace`).
pub(crate) fn copy_to_dataset(
    file: &str,
    dataset: ObjectDataset,
    replace: bool,
) -> rntuple::Result<()> {
    merge_to_dataset(
        &[file.to_string()],
        dataset,
        &MergeOptions::default(),
        replace,
        |_| {},
    )
    .map(|_| ())
}

/// Checks that `stored`, an RNTuple stored as objects, reads as `original` under its
/// name, and that every page of it has an object locator (`what` names it in messages).
pub(crate) fn assert_stored_as_objects(
    stored: &RNTupleReader,
    original: &RNTupleReader,
    what: &str,
) {
    assert_eq!(stored.path(), original.descriptor().name, "{what}");
    assert_eq!(stored.num_entries(), original.num_entries(), "{what}");
    assert_eq!(all_values(stored), all_values(original), "{what}");
    for c in &stored.descriptor().clusters {
        for p in c.columns.iter().flat_map(|cp| cp.pages.iter()) {
            assert!(
                matches!(p.locator.kind, LocatorKind::Object64 { .. }),
                "{what}: {:?}",
                p.locator
            );
        }
    }
}
