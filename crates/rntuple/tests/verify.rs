//! `inspect::verify` (`rntuple verify`): good files pass, every corruption of the
//! robustness sweeps (truncations, byte flips in the envelopes and in a page) is found.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use rntuple::inspect::verify::{verify_file, verify_files};
use std::path::{Path, PathBuf};

fn data_file(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verify");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn every_conformance_file_passes_but_the_unknown_feature() {
    let files: Vec<String> = common::conformance_files()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(files.len(), 51);
    for check in verify_files(&files) {
        if check.file.contains("structure.feature_flag") {
            // Readers must refuse an RNTuple with a feature flag they do not know.
            let problems = check.all_problems().join("; ");
            assert!(
                problems.contains("unsupported format feature"),
                "{problems}"
            );
        } else {
            assert!(
                check.is_good(),
                "{}: {:?}",
                check.file,
                check.all_problems()
            );
            assert!(check.rntuples.iter().all(|r| r.pages > 0 || r.entries == 0));
        }
    }
}

fn sweep(name: &str) {
    let bytes = data_file(name);
    let good = scratch("good.root");
    std::fs::write(&good, &bytes).unwrap();
    assert!(verify_file(good.to_str().unwrap()).is_good());
    let path = scratch(&format!("bad-{}.root", name.replace('/', "_")));
    let location = path.to_str().unwrap().to_string();
    let mut missed = Vec::new();
    let mut checked = 0;
    for i in 1..100 {
        let len = bytes.len() * i / 100;
        std::fs::write(&path, &bytes[..len]).unwrap();
        checked += 1;
        if verify_file(&location).is_good() {
            missed.push(format!("cut at {len}"));
        }
    }
    for (region, offset, size) in common::regions(&bytes) {
        for at in offset..offset + size {
            let mut bad = bytes.clone();
            bad[at as usize] ^= 0xff;
            std::fs::write(&path, &bad).unwrap();
            checked += 1;
            if verify_file(&location).is_good() {
                missed.push(format!("{region} byte {at}"));
            }
        }
    }
    eprintln!("{name}: {checked} corruptions, {} missed", missed.len());
    assert!(missed.is_empty(), "{} missed: {missed:?}", missed.len());
}

#[test]
fn finds_every_corruption_compressed() {
    sweep("../../examples/events.root");
}

#[test]
fn finds_every_corruption_uncompressed() {
    sweep("tests/data/events_uncompressed.root");
}

/// The fault probe: a footer whose cluster group claims 2^50 entries (ROOT takes
/// the entries from the groups' spans and aborts reading) is reported, naming the group
/// and both counts; the same file with the true span passes.
#[test]
fn a_cluster_group_span_that_is_not_its_clusters_is_found() {
    use rntuple::container::RootFile;
    use rntuple::format::{seal_envelope, Anchor, EnvelopeType, Footer};
    use rntuple_io::MemorySource;
    use std::sync::Arc;

    let bytes = data_file("tests/data/events_uncompressed.root");
    let file = RootFile::open(Arc::new(MemorySource::new("x.root", bytes.clone()))).unwrap();
    let key = file.rntuple_anchors().unwrap().remove(0);
    let anchor = Anchor::from_object(&key.object, "anchor").unwrap();
    // Uncompressed: the envelope is stored as it is, its checksum in its last 8 bytes.
    assert_eq!(anchor.nbytes_footer, anchor.len_footer);
    let at = anchor.seek_footer as usize..(anchor.seek_footer + anchor.nbytes_footer) as usize;
    let envelope = &bytes[at.clone()];
    let footer = Footer::read(&envelope[8..envelope.len() - 8]).unwrap();
    let rewritten = |span: u64| {
        let mut footer = footer.clone();
        footer.cluster_groups[0].entry_span = span;
        let sealed = seal_envelope(EnvelopeType::Footer, &footer.write());
        assert_eq!(sealed.len(), envelope.len());
        let mut out = bytes.clone();
        out[at.clone()].copy_from_slice(&sealed);
        let path = scratch(&format!("span-{span}.root"));
        std::fs::write(&path, out).unwrap();
        verify_file(path.to_str().unwrap())
    };
    let true_span = footer.cluster_groups[0].entry_span;
    assert!(rewritten(true_span).is_good());
    let check = rewritten(1 << 50);
    assert!(!check.is_good());
    let problems = check.all_problems().join("; ");
    assert!(
        problems.contains(&format!(
            "cluster group 0: the footer gives entries 0..{0} ({0} entries), its clusters hold {true_span} from entry 0",
            1u64 << 50
        )),
        "{problems}"
    );
}
