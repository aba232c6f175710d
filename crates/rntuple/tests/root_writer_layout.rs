//! Our writer cuts clusters and pages where ROOT 6.40 does: files ROOT writes (through
//! PyROOT) with several option sets are copied with the same options, and the copy must
//! have the same entries per cluster, the same elements per page of every column, and a
//! size within 1% of ROOT's. Fails when `import ROOT` fails, unless RNTUPLE_NO_ROOT is set.
//!
//! Where a cluster ends follows our model of the bytes ROOT counts per entry
//! (`write/size.rs`: a variant's switch 16 B, an optional's index 8 B, a byte per bitset
//! bit and per character, ...); where a page ends follows the elements per column. The
//! example schema (`examples/make_example.py`) checks the option sets; the schemas of
//! `tests/layoutgen.py` (variants, optionals and unique_ptrs, bitsets, strings, nested
//! vectors, records holding collections, a NanoAOD-like mix, maps, sets, RVec,
//! vector<bool>, non-default column representations) check each part of the model, with
//! and without compression. Both match ROOT exactly: no tolerance is needed
//! on clusters or pages (ROOT's estimate is a deterministic function of those bytes and,
//! with compression, of the compressed sizes, which our zstd reproduces).
//!
//! Compression here is zstd or none: cluster sizes follow the compression factor, and our
//! zlib (flate2) and lz4 (lz4_flex, no LZ4-HC) give other sizes than ROOT's libraries
//! (2.8% and 0.35-3.7% larger), so clusters after the first differ with them.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use rntuple::compression::CompressionSettings;
use rntuple::container::FileWriter;
use rntuple::merge::copy_rntuple;
use rntuple::read::RNTupleReader;
use rntuple::write::WriteOptions;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Case {
    name: String,
    n_events: u64,
    compression: u32,
    /// 0: ROOT's default.
    cluster: u64,
    max_page: u64,
    initial_page: u64,
}

fn root_available() -> bool {
    if !common::test_skips::root_checks_wanted("rust: root_writer_layout") {
        return false;
    }
    let ok = Command::new("python3")
        .args(["-c", "import ROOT"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "`import ROOT` failed (set RNTUPLE_NO_ROOT to skip)");
    true
}

fn work_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rntuple-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_with_root(case: &Case, path: &Path) {
    // The example's own generator, with the case's options.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/make_example.py");
    let status = Command::new("python3")
        .arg(script)
        .arg(path)
        .args(
            [
                case.n_events,
                case.compression as u64,
                case.cluster,
                case.max_page,
                case.initial_page,
            ]
            .map(|v| v.to_string()),
        )
        .status()
        .unwrap();
    assert!(status.success(), "ROOT failed to write {}", case.name);
}

/// The schemas `tests/layoutgen.py` writes (its `SCHEMAS`, asked of it), each stressing
/// one part of the entry-size model (`write/size.rs`): variants, optionals and
/// unique_ptrs, bitsets, strings, nested collections, records holding collections, a
/// NanoAOD-like mix, other containers (maps, sets, RVec, vector<bool>) and non-default
/// column representations.
fn schemas() -> Vec<String> {
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let out = Command::new("python3")
        .args([
            "-c",
            "import layoutgen; print('\\n'.join(layoutgen.SCHEMAS))",
        ])
        .current_dir(&tests)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tests/layoutgen.py's schemas: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schemas: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(schemas.len() >= 9, "{schemas:?}");
    schemas
}

/// Has ROOT write each `(schema, case)` into `dir`, all in one run of
/// `tests/layoutgen.py` (ROOT starts once); returns the paths, in order.
fn write_schemas_with_root(cases: &[(&str, Case)], dir: &Path) -> Vec<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/layoutgen.py");
    let mut command = Command::new("python3");
    command.arg(script);
    let mut paths = Vec::new();
    for (schema, case) in cases {
        let path = dir.join(format!("{}.root.root", case.name));
        command.arg("--file").arg(schema).arg(&path).args(
            [
                case.n_events,
                u64::from(case.compression),
                case.cluster,
                case.max_page,
                case.initial_page,
            ]
            .map(|v| v.to_string()),
        );
        paths.push(path);
    }
    let status = command.status().unwrap();
    assert!(status.success(), "ROOT failed to write the schema files");
    paths
}

/// Entries per cluster and, per cluster and column, the elements of each page.
type Layout = (Vec<u64>, Vec<Vec<Vec<u32>>>);

fn layout(reader: &RNTupleReader) -> Layout {
    let d = reader.descriptor();
    let entries = d.clusters.iter().map(|c| c.n_entries).collect();
    let pages = d
        .clusters
        .iter()
        .map(|c| {
            c.columns
                .iter()
                .map(|col| col.pages.iter().map(|p| p.n_elements).collect())
                .collect()
        })
        .collect();
    (entries, pages)
}

fn check(case: &Case) -> String {
    let root_path = work_dir().join(format!("{}.root.root", case.name));
    write_with_root(case, &root_path);
    compare(case, &root_path)
        .unwrap_or_else(|why| panic!("{why}"))
        .line
}

/// A case whose layout is ROOT's.
struct Compared {
    /// Its line in the table: clusters, pages and bytes, ours and ROOT's.
    line: String,
    clusters: usize,
    /// The most pages one column has in one cluster.
    most_pages: usize,
}

/// Copies ROOT's file at `root_path` with our writer under the case's options and
/// compares the two layouts: the entries of each cluster, the elements of each page of
/// each column in each cluster (so also the number of clusters and of pages per column),
/// exactly, and the file sizes within 1%. What was compared, or what differs.
fn compare(case: &Case, root_path: &Path) -> Result<Compared, String> {
    let ours_path = work_dir().join(format!("{}.ours.root", case.name));
    let source = RNTupleReader::open_path(root_path.to_str().unwrap(), None).unwrap();
    // ROOT commits one cluster group at the end; a checkpoint per cluster would add a
    // page list (about 170 bytes) per cluster to the size compared.
    let mut options = WriteOptions::builder()
        .compression(CompressionSettings::from_u32(case.compression).unwrap())
        .checkpoint_every(0);
    if case.cluster > 0 {
        options = options.cluster_size(case.cluster);
    }
    if case.max_page > 0 {
        options = options.page_size(case.max_page);
    }
    if case.initial_page > 0 {
        options = options.initial_page_size(case.initial_page);
    }
    let options = options.build().unwrap();
    {
        let mut file = FileWriter::create(&ours_path, options.compression()).unwrap();
        copy_rntuple(&source, &mut file, "Events", options, |_| {}).unwrap();
        file.finish().unwrap();
    }
    let copy = RNTupleReader::open_path(ours_path.to_str().unwrap(), None).unwrap();
    let (root_entries, root_pages) = layout(&source);
    let (our_entries, our_pages) = layout(&copy);
    let root_bytes = std::fs::metadata(root_path).unwrap().len();
    let our_bytes = std::fs::metadata(&ours_path).unwrap().len();
    let n_pages = |p: &Vec<Vec<Vec<u32>>>| p.iter().flatten().map(Vec::len).sum::<usize>();
    let diff = 100.0 * (our_bytes as f64 - root_bytes as f64) / root_bytes as f64;
    let line = format!(
        "| {} | {} / {} | {} / {} | {} / {} ({diff:+.3}%) |",
        case.name,
        our_entries.len(),
        root_entries.len(),
        n_pages(&our_pages),
        n_pages(&root_pages),
        our_bytes,
        root_bytes,
    );
    println!("{line}");
    let _ = std::fs::remove_file(root_path);
    let _ = std::fs::remove_file(&ours_path);
    if our_entries != root_entries {
        return Err(format!(
            "{line}\n  entries per cluster: ours {our_entries:?}, ROOT's {root_entries:?}"
        ));
    }
    for (k, (ours, root)) in our_pages.iter().zip(&root_pages).enumerate() {
        if let Some((c, (o, r))) = ours.iter().zip(root).enumerate().find(|(_, (o, r))| o != r) {
            return Err(format!(
                "{line}\n  cluster {k}, column {c}: page elements ours {o:?}, ROOT's {r:?}"
            ));
        }
        if ours.len() != root.len() {
            return Err(format!("{line}\n  cluster {k}: columns differ in number"));
        }
    }
    if diff.abs() >= 1.0 {
        return Err(format!("{line}\n  file sizes differ by 1% or more"));
    }
    Ok(Compared {
        line,
        clusters: root_entries.len(),
        most_pages: root_pages.iter().flatten().map(Vec::len).max().unwrap_or(0),
    })
}

#[test]
fn clusters_and_pages_match_root_for_several_option_sets() {
    if !root_available() {
        return;
    }
    let cases = [
        Case {
            name: "c16k_zstd5".into(),
            n_events: 2000,
            compression: 505,
            cluster: 16 << 10,
            max_page: 0,
            initial_page: 0,
        },
        Case {
            name: "c256k_zstd5".into(),
            n_events: 60_000,
            compression: 505,
            cluster: 256 << 10,
            max_page: 0,
            initial_page: 0,
        },
        Case {
            name: "c16k_none_p1k_i64".into(),
            n_events: 20_000,
            compression: 0,
            cluster: 16 << 10,
            max_page: 1 << 10,
            initial_page: 64,
        },
        Case {
            name: "c16k_none_p64k".into(),
            n_events: 5000,
            compression: 0,
            cluster: 16 << 10,
            max_page: 64 << 10,
            initial_page: 256,
        },
        Case {
            name: "c256k_zstd5_p64k_i64".into(),
            n_events: 100_000,
            compression: 505,
            cluster: 256 << 10,
            max_page: 64 << 10,
            initial_page: 64,
        },
        Case {
            name: "c256k_zstd5_p1k".into(),
            n_events: 30_000,
            compression: 505,
            cluster: 256 << 10,
            max_page: 1 << 10,
            initial_page: 256,
        },
    ];
    for case in &cases {
        check(case);
    }
}

#[test]
fn clusters_and_pages_match_root_for_other_algorithms() {
    if !root_available() {
        return;
    }
    let cases = [
        Case {
            name: "c16k_zlib1".into(),
            n_events: 20_000,
            compression: 101,
            cluster: 16 << 10,
            max_page: 0,
            initial_page: 0,
        },
        Case {
            name: "c64k_zlib5".into(),
            n_events: 20_000,
            compression: 105,
            cluster: 64 << 10,
            max_page: 0,
            initial_page: 0,
        },
        Case {
            name: "c16k_lzma7".into(),
            n_events: 20_000,
            compression: 207,
            cluster: 16 << 10,
            max_page: 0,
            initial_page: 0,
        },
        Case {
            name: "c16k_lz4_1".into(),
            n_events: 20_000,
            compression: 401,
            cluster: 16 << 10,
            max_page: 0,
            initial_page: 0,
        },
        Case {
            name: "c16k_lz4_4".into(),
            n_events: 20_000,
            compression: 404,
            cluster: 16 << 10,
            max_page: 0,
            initial_page: 0,
        },
    ];
    for case in &cases {
        check(case);
    }
}

/// ROOT's default options (128 MiB clusters, 1 MiB pages) on a ~40 MB file.
#[test]
fn clusters_and_pages_match_root_with_default_options() {
    if !root_available() {
        return;
    }
    check(&Case {
        name: "default_1M".into(),
        n_events: 1_000_000,
        compression: 505,
        cluster: 0,
        max_page: 0,
        initial_page: 0,
    });
}

/// Each schema of `tests/layoutgen.py` under three option sets: uncompressed with small
/// growing pages (ROOT's cluster estimate is then the bytes the model counts, with no
/// compression factor), zstd with 16 KiB pages, and zstd with ROOT's default pages.
/// Every cluster boundary and every page's elements must be ROOT's.
#[test]
fn clusters_and_pages_match_root_for_each_schema() {
    if !root_available() {
        return;
    }
    let options = [
        ("none_c32k_p4k_i256", 5000, 0, 32 << 10, 4 << 10, 256),
        ("zstd5_c64k_p16k", 8000, 505, 64 << 10, 16 << 10, 0),
        ("zstd5_c256k", 20_000, 505, 256 << 10, 0, 0),
    ];
    let mut cases = Vec::new();
    let schemas = schemas();
    for schema in &schemas {
        for (suffix, n_events, compression, cluster, max_page, initial_page) in options {
            let case = Case {
                name: format!("{schema}_{suffix}"),
                n_events,
                compression,
                cluster,
                max_page,
                initial_page,
            };
            cases.push((schema.as_str(), case));
        }
    }
    let paths = write_schemas_with_root(&cases, &work_dir());
    println!("| case | clusters ours / ROOT | pages ours / ROOT | bytes ours / ROOT |");
    let results: Vec<Result<Compared, String>> = cases
        .iter()
        .zip(&paths)
        .map(|((_, case), path)| compare(case, path))
        .collect();
    let mut failures: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().cloned())
        .collect();
    // Each case must cut clusters and, in some column, pages: else it would compare little.
    for compared in results.iter().flatten() {
        if compared.clusters < 2 || compared.most_pages < 2 {
            failures.push(format!("{}\n  too few clusters or pages", compared.line));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from ROOT's layout:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
}
