//! `tools::verify` (`rntuple verify`): good files pass, every corruption of the
//! robustness sweeps (truncations, byte flips in the envelopes and in a page) is found.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use rntuple::tools::verify::{verify_file, verify_files};
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
