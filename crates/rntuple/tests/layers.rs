//! The layering of `docs/architecture.md`, checked on the sources: the decoder does no
//! I/O (under `read/`, only the page sources in `read/source/` name `io` or
//! `container`), the writer does not read (nothing under `write/` names `read`), the
//! bottom layers name nothing above them, and the TTree reader stands beside the RNTuple
//! reader (on the container, below the features that compose them).

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir` (or `dir` itself, a module of one file), with its path
/// relative to `src/`.
fn rust_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if dir.is_file() {
        let rel = dir.strip_prefix(src()).unwrap().display().to_string();
        out.push((rel, std::fs::read_to_string(dir).unwrap()));
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src()).unwrap().display().to_string();
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(!out.is_empty(), "no sources under {}", dir.display());
    out
}

/// The lines of the files below `src/<dir>` (except those whose path starts with one of
/// `allowed`) that name one of the `modules` of the crate.
fn naming(dir: &str, allowed: &[&str], modules: &[&str]) -> Vec<String> {
    let mut hits = Vec::new();
    for (file, text) in rust_files(&src().join(dir)) {
        if allowed.iter().any(|a| file.starts_with(a)) {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for m in modules {
                let uses = code.contains(&format!("crate::{m}"))
                    || code.contains(&format!("super::super::{m}"))
                    || code.trim_start().starts_with(&format!("use {m}::"));
                if uses {
                    hits.push(format!("{file}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    hits
}

#[test]
fn the_decoder_gets_bytes_only_from_page_sources() {
    let hits = naming("read", &["read/source/"], &["io", "container"]);
    assert!(
        hits.is_empty(),
        "I/O outside the page sources:\n{}",
        hits.join("\n")
    );
    // The page sources do name them: the check looks at the right thing.
    assert!(!naming("read/source", &[], &["io", "container"]).is_empty());
}

#[test]
fn the_writer_does_not_read() {
    let hits = naming("write", &[], &["read"]);
    assert!(
        hits.is_empty(),
        "the writer names the reader:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_bottom_layers_name_nothing_above_them() {
    let above = [
        "container",
        "schema",
        "read",
        "write",
        "import",
        "merge",
        "join",
        "inspect",
        "recover",
        "streamer_fields",
        "ttree",
    ];
    for layer in ["format", "encoding", "io", "arrow_map.rs"] {
        let hits = naming(layer, &[], &above);
        assert!(
            hits.is_empty(),
            "{layer} names a layer above it:\n{}",
            hits.join("\n")
        );
    }
    let hits = naming(
        "schema",
        &[],
        &[
            "read",
            "write",
            "import",
            "merge",
            "join",
            "inspect",
            "recover",
            "streamer_fields",
            "io",
            "container",
            "ttree",
        ],
    );
    assert!(
        hits.is_empty(),
        "schema names a layer above it:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_ttree_reader_stands_beside_the_rntuple_reader() {
    // It reads the container, and knows nothing of RNTuple's reader, writer or the features.
    let hits = naming(
        "ttree",
        &[],
        &[
            "read",
            "write",
            "import",
            "merge",
            "join",
            "inspect",
            "recover",
            "streamer_fields",
            "format",
            "schema",
        ],
    );
    assert!(
        hits.is_empty(),
        "the TTree reader names a layer it must not:\n{}",
        hits.join("\n")
    );
    assert!(!naming("ttree", &[], &["container"]).is_empty());
    // And neither RNTuple reader nor writer names it: only the features compose the two.
    for layer in ["read", "write", "container"] {
        let hits = naming(layer, &[], &["ttree"]);
        assert!(hits.is_empty(), "{layer} names ttree:\n{}", hits.join("\n"));
    }
}
