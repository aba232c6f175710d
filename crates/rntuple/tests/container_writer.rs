//! Tests of the TFile writer (`container::FileWriter`): RNTuples written by ROOT 6.40 are
//! re-embedded (envelopes and pages copied, locators rewritten) into new files, which our
//! reader, ROOT 6.40 and uproot must read with every value unchanged.
//!
//! The ROOT and uproot checks run `tests/container/check_written.py`. They need
//! `python3 -c "import ROOT"` to work; when it does not, the tests FAIL, unless the
//! environment variable `RNTUPLE_NO_ROOT` is set (then only the Rust-side checks run).

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use rntuple::compression::{compress, decompress, CompressionSettings};
use rntuple::container::{read_blob, FileHeader, FileWriter, KeyHeader, RootFile};
use rntuple::format::{
    open_envelope, seal_envelope, Anchor, EnvelopeType, Footer, Locator, PageList,
};
use rntuple::read::RNTupleReader;
use rntuple_io::{open_source, MemorySource, ReadAt};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn original() -> PathBuf {
    data_dir().join("events_uncompressed.root")
}

fn compressed_original() -> PathBuf {
    repo_root().join("examples/events.root")
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("container_writer");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn open(path: &Path) -> RootFile {
    RootFile::open(open_source(path.to_str().unwrap()).unwrap()).unwrap()
}

/// Copies the RNTuple `name` of the ROOT file `src` into `w` under `new_name`: the header
/// envelope as is, the pages of each cluster packed into blobs of at most `max_key_size`
/// bytes (a page larger than that gets a multi-key blob of its own), new page lists and a
/// new footer with the new locators (compressed as in the original), and the anchor
/// (with `max_key_size`). `before_blob(w, i)` runs before the `i`-th blob is written.
fn embed(
    w: &mut FileWriter,
    src: &Path,
    name: &str,
    new_name: &str,
    max_key_size: u64,
    before_blob: &mut dyn FnMut(&mut FileWriter, usize),
) {
    let file = open(src);
    let settings = CompressionSettings::from_u32(file.header().compress).unwrap();
    let anchor = Anchor::from_object(&file.find_anchor(name).unwrap().object, "anchor").unwrap();
    let mks = anchor.max_key_size;
    let read = |loc: Locator| file.read_blob(loc.offset, loc.size, mks).unwrap();
    let open_env = |raw: &[u8], len: u64, kind: EnvelopeType| -> Vec<u8> {
        let env = decompress(raw, len as usize, "envelope").unwrap();
        open_envelope(&env, kind, "envelope").unwrap().0.to_vec()
    };
    let seal = |kind: EnvelopeType, payload: &[u8], was_compressed: bool| -> (Vec<u8>, u64) {
        let env = seal_envelope(kind, payload);
        let len = env.len() as u64;
        let out = if was_compressed {
            compress(&env, settings).unwrap()
        } else {
            env
        };
        (out, len)
    };
    let mut n_blob = 0;
    let mut blob = |w: &mut FileWriter, payload: &[u8]| -> u64 {
        before_blob(w, n_blob);
        n_blob += 1;
        w.write_blob(payload, max_key_size).unwrap()
    };

    let header_raw = read(Locator::file(anchor.nbytes_header, anchor.seek_header));
    let footer_raw = read(Locator::file(anchor.nbytes_footer, anchor.seek_footer));
    let mut footer = Footer::read(&open_env(
        &footer_raw,
        anchor.len_footer,
        EnvelopeType::Footer,
    ))
    .unwrap();

    let seek_header = blob(w, &header_raw);
    let mut page_lists = Vec::new();
    for group in &footer.cluster_groups {
        let link = group.page_list;
        let mut pl = PageList::read(&open_env(
            &read(link.locator),
            link.length,
            EnvelopeType::PageList,
        ))
        .unwrap();
        for cluster in pl.columns.iter_mut() {
            // Pages in file order, packed into blobs of at most max_key_size bytes.
            let mut pages: Vec<&mut rntuple::format::PageInfo> = cluster
                .iter_mut()
                .flat_map(|c| c.pages.iter_mut())
                .collect();
            pages.sort_by_key(|p| p.locator.offset);
            // ROOT writes identical pages of a cluster once ("same page merging"): pages
            // sharing a locator keep sharing it.
            let orig: Vec<u64> = pages.iter().map(|p| p.locator.offset).collect();
            let mut pending: Vec<(Vec<usize>, Vec<u8>)> = Vec::new();
            let mut pending_len = 0u64;
            let mut flush =
                |w: &mut FileWriter,
                 pending: &mut Vec<(Vec<usize>, Vec<u8>)>,
                 pending_len: &mut u64,
                 pages: &mut Vec<&mut rntuple::format::PageInfo>| {
                    if pending.is_empty() {
                        return;
                    }
                    let payload: Vec<u8> = pending.iter().flat_map(|(_, b)| b.clone()).collect();
                    let mut off = blob(w, &payload);
                    for (ids, bytes) in pending.drain(..) {
                        for i in ids {
                            pages[i].locator.offset = off;
                        }
                        off += bytes.len() as u64;
                    }
                    *pending_len = 0;
                };
            for i in 0..pages.len() {
                if i > 0 && orig[i] == orig[i - 1] {
                    if let Some(last) = pending.last_mut() {
                        last.0.push(i);
                        continue;
                    }
                }
                let p = &pages[i];
                let with_sum = p.locator.size + if p.has_checksum { 8 } else { 0 };
                let bytes = file.read_blob(p.locator.offset, with_sum, mks).unwrap();
                if pending_len + with_sum > max_key_size && !pending.is_empty() {
                    flush(w, &mut pending, &mut pending_len, &mut pages);
                }
                pending.push((vec![i], bytes));
                pending_len += with_sum;
            }
            flush(w, &mut pending, &mut pending_len, &mut pages);
        }
        page_lists.push((pl, link.locator.size < link.length));
    }
    for (group, (pl, was_compressed)) in footer.cluster_groups.iter_mut().zip(&page_lists) {
        let (bytes, len) = seal(
            EnvelopeType::PageList,
            &pl.write().unwrap(),
            *was_compressed,
        );
        let offset = blob(w, &bytes);
        group.page_list.length = len;
        group.page_list.locator = Locator::file(bytes.len() as u64, offset);
    }
    let (footer_bytes, len_footer) = seal(
        EnvelopeType::Footer,
        &footer.write(),
        anchor.nbytes_footer < anchor.len_footer,
    );
    let seek_footer = blob(w, &footer_bytes);
    let new_anchor = Anchor {
        seek_header,
        seek_footer,
        nbytes_footer: footer_bytes.len() as u64,
        len_footer,
        max_key_size,
        ..anchor
    };
    w.write_anchor(new_name, &new_anchor.to_object()).unwrap();
}

/// The paths of the file's RNTuple anchors, depth-first.
fn anchor_paths(file: &RootFile) -> Vec<String> {
    file.rntuple_anchors()
        .unwrap()
        .into_iter()
        .map(|a| a.path)
        .collect()
}

/// Our reader reads every value of `name` in `new` equal to `orig_name` in `orig`.
fn assert_same_values(new: &Path, name: &str, orig: &Path, orig_name: &str) {
    let a = RNTupleReader::open(&open(new), Some(name)).unwrap();
    let b = RNTupleReader::open(&open(orig), Some(orig_name)).unwrap();
    assert_eq!(a.num_entries(), b.num_entries());
    let n = a.num_entries();
    assert!(n > 0);
    let ra = a.read(None, 0..n).unwrap();
    let rb = b.read(None, 0..n).unwrap();
    assert_eq!(
        ra,
        rb,
        "{name} in {} differs from the original",
        new.display()
    );
}

/// Runs `tests/container/check_written.py` (ROOT and uproot) on `new`; `expect` lists
/// `(name, original file, original name)`; uproot's reading of the RNTuples named in
/// `multikey` is not checked (uproot does not read multi-key payloads).
fn check_with_root(new: &Path, expect: &[(&str, &Path, &str)], multikey: &[&str]) {
    let have_root = Command::new("python3")
        .args(["-c", "import ROOT"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !common::test_skips::root_checks_wanted("rust: container_writer::check_with_root") {
        return;
    }
    if !have_root {
        panic!(
            "python3 cannot import ROOT (pip install root), which this test needs; set \
             RNTUPLE_NO_ROOT=1 to run only the Rust-side checks"
        );
    }
    let mut cmd = Command::new("python3");
    cmd.arg(repo_root().join("tests/container/check_written.py"))
        .arg(new);
    for (name, orig, orig_name) in expect {
        cmd.arg(format!("{name}={}:{orig_name}", orig.display()));
    }
    if !multikey.is_empty() {
        cmd.arg(format!("--multikey={}", multikey.join(",")));
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "ROOT/uproot checks of {} failed:\n{stdout}\n{}",
        new.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn key_at(data: &[u8], offset: u64) -> KeyHeader {
    KeyHeader::parse(&data[offset as usize..], offset).unwrap()
}

/// Re-embeds ROOT's `events_uncompressed.root` with the same name and file name length:
/// every value reads back equal (ours, ROOT, uproot) and the file has ROOT's size.
#[test]
fn reembed_root_file() {
    let orig = original();
    let new = out_dir().join("events_uncompressed.root");
    let mut w = FileWriter::create(&new, CompressionSettings::UNCOMPRESSED).unwrap();
    embed(&mut w, &orig, "Events", "Events", 1 << 30, &mut |_, _| {});
    w.finish().unwrap();

    assert_same_values(&new, "Events", &orig, "Events");

    // Same record sequence and sizes as ROOT's file.
    let ours = std::fs::read(&new).unwrap();
    let theirs = std::fs::read(&orig).unwrap();
    let (ho, ht) = (
        FileHeader::parse(&ours).unwrap(),
        FileHeader::parse(&theirs).unwrap(),
    );
    assert_eq!(ours.len(), theirs.len(), "file size differs from ROOT's");
    assert_eq!(ho.end, ht.end);
    assert_eq!(ho.seek_info, ht.seek_info);
    assert_eq!(ho.nbytes_info, ht.nbytes_info);
    assert_eq!(ho.seek_free, ht.seek_free);
    assert_eq!(ho.nbytes_free, ht.nbytes_free);
    assert_eq!(ho.nbytes_name, ht.nbytes_name);
    assert_eq!(ho.version, ht.version);
    let mut off = u64::from(ho.begin);
    while off < ho.end {
        let (ko, kt) = (key_at(&ours, off), key_at(&theirs, off));
        assert_eq!(
            (ko.nbytes, ko.key_len, &ko.class_name, &ko.name),
            (kt.nbytes, kt.key_len, &kt.class_name, &kt.name),
            "key at {off}"
        );
        // Everything but the RBlob keys' ObjLen (ROOT records uncompressed page sizes).
        if ko.class_name != "RBlob" {
            assert_eq!(ko.obj_len, kt.obj_len, "ObjLen of key at {off}");
        }
        off += u64::from(ko.nbytes);
    }
    // The streamer info record and the free segments are byte for byte ROOT's (the
    // datime in their key headers aside).
    let si = (ho.seek_info + 72) as usize..(ho.seek_info + u64::from(ho.nbytes_info)) as usize;
    assert_eq!(ours[si.clone()], theirs[si]);
    let fr = (ho.end - 10) as usize..ho.end as usize;
    assert_eq!(ours[fr.clone()], theirs[fr]);

    check_with_root(&new, &[("Events", &orig, "Events")], &[]);
}

/// A compressed original (zstd 505) re-embedded into a file with the same settings:
/// compressed envelopes, a compressed StreamerInfo record, sizes within a few bytes.
#[test]
fn reembed_compressed_root_file() {
    let orig = compressed_original();
    let new = out_dir().join("events.root");
    let mut w = FileWriter::create(&new, CompressionSettings::DEFAULT_RNTUPLE).unwrap();
    embed(&mut w, &orig, "Events", "Events", 1 << 30, &mut |_, _| {});
    w.finish().unwrap();
    assert_same_values(&new, "Events", &orig, "Events");
    let (ours, theirs) = (std::fs::read(&new).unwrap(), std::fs::read(&orig).unwrap());
    let diff = ours.len() as i64 - theirs.len() as i64;
    eprintln!(
        "compressed re-embedding: {} bytes, ROOT's {} ({diff:+})",
        ours.len(),
        theirs.len()
    );
    assert!(diff.abs() <= 16, "size differs from ROOT's by {diff} bytes");
    check_with_root(&new, &[("Events", &orig, "Events")], &[]);
}

/// Several RNTuples in one file, listed by ROOT and uproot.
#[test]
fn several_rntuples() {
    let orig = original();
    let orig_z = compressed_original();
    let new = out_dir().join("several.root");
    let mut w = FileWriter::create(&new, CompressionSettings::DEFAULT_RNTUPLE).unwrap();
    embed(&mut w, &orig, "Events", "Events", 1 << 30, &mut |_, _| {});
    embed(&mut w, &orig_z, "Events", "Zipped", 1 << 30, &mut |_, _| {});
    embed(&mut w, &orig, "Events", "Small_keys", 1024, &mut |_, _| {});
    w.finish().unwrap();

    let file = open(&new);
    let names = anchor_paths(&file);
    assert_eq!(names, ["Events", "Zipped", "Small_keys"]);
    assert_same_values(&new, "Events", &orig, "Events");
    assert_same_values(&new, "Zipped", &orig_z, "Events");
    assert_same_values(&new, "Small_keys", &orig, "Events");
    check_with_root(
        &new,
        &[
            ("Events", &orig, "Events"),
            ("Zipped", &orig_z, "Events"),
            ("Small_keys", &orig, "Events"),
        ],
        &["Small_keys"],
    );
}

/// Anchors at paths go into sub-directories created as ROOT's `mkdir` does: keys of class
/// `TDirectory` (what ROOT stores and its RNTuple reader looks for) whose records point to
/// their parents and keys lists; ROOT reads them (`tests/test_convert.py`, the `subdir`
/// case, through `RNTupleReader::Open("a/b/t", ...)`).
#[test]
fn anchors_in_sub_directories() {
    let orig = original();
    let new = out_dir().join("subdirs.root");
    let mut w = FileWriter::create(&new, CompressionSettings::DEFAULT_RNTUPLE).unwrap();
    embed(
        &mut w,
        &orig,
        "Events",
        "a/b/Events",
        1 << 30,
        &mut |_, _| {},
    );
    embed(&mut w, &orig, "Events", "Top", 1 << 30, &mut |_, _| {});
    embed(&mut w, &orig, "Events", "a/Other", 1 << 30, &mut |_, _| {});
    w.finish().unwrap();

    let file = open(&new);
    let names = anchor_paths(&file);
    assert_eq!(names, ["a/b/Events", "a/Other", "Top"]);
    for name in ["a/b/Events", "a/Other", "Top"] {
        assert_same_values(&new, name, &orig, "Events");
    }
    let top: Vec<(String, String)> = file
        .keys("")
        .unwrap()
        .into_iter()
        .map(|k| (k.class_name, k.name))
        .collect();
    assert_eq!(
        top,
        [
            ("TDirectory".to_string(), "a".to_string()),
            ("ROOT::RNTuple".to_string(), "Top".to_string())
        ]
    );
    let a_key = file.keys("").unwrap().remove(0);
    let a = file.directory("a").unwrap();
    let b = file.directory("a/b").unwrap();
    assert_eq!((a.seek_dir, a.seek_parent), (a_key.seek_key, 100));
    assert_eq!(b.seek_parent, a.seek_dir);
    let in_a: Vec<String> = file
        .keys("a")
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(in_a, ["b", "Other"]);
    let in_b = file.keys("a/b").unwrap();
    assert_eq!(in_b.len(), 1);
    assert_eq!(in_b[0].seek_pdir, b.seek_dir);
}

/// A 20000-byte payload with MaxKeySize 4096 is split over several keys and reads back;
/// an RNTuple written with MaxKeySize 4096 (multi-key envelopes and pages) is read by
/// ROOT.
#[test]
fn multi_key_blobs() {
    let payload: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let mut w = FileWriter::new(
        std::io::Cursor::new(Vec::new()),
        "mem.root",
        CompressionSettings::UNCOMPRESSED,
    )
    .unwrap();
    let predicted = w.next_blob_payload_offset(20_000, 4096).unwrap();
    let at = w.write_blob(&payload, 4096).unwrap();
    assert_eq!(at, predicted);
    let bytes = w.finish_into_inner().unwrap().into_inner();
    let src = MemorySource::new("mem.root", bytes.clone());
    assert_eq!(read_blob(&src, at, 20_000, 4096).unwrap(), payload);
    // Five RBlob keys (20000 = 4 x 4096 + 3616; the 4 chunk offsets fit into the last
    // chunk's slack), the first chunk (with the offsets) written last.
    let file = RootFile::open(Arc::new(MemorySource::new("mem.root", bytes.clone()))).unwrap();
    let mut off = u64::from(file.header().begin);
    off += u64::from(key_at(&bytes, off).nbytes); // top directory
    let mut blobs = Vec::new();
    loop {
        let k = key_at(&bytes, off);
        if k.class_name != "RBlob" {
            break;
        }
        blobs.push((
            k.seek_key + u64::from(k.key_len),
            k.nbytes - u32::from(k.key_len),
        ));
        off += u64::from(k.nbytes);
    }
    assert_eq!(blobs.len(), 5);
    assert_eq!(blobs.last().unwrap(), &(at, 4096));
    assert_eq!(
        blobs[..4].iter().map(|b| b.1).collect::<Vec<_>>(),
        [4096, 4096, 4096, 20_000 - 4064 - 3 * 4096]
    );
    assert!(src.size() > 20_000);

    // MaxKeySize 1024: the header (1133 bytes) and page list (1320) envelopes and the
    // larger pages are split over several keys.
    let orig = original();
    let new = out_dir().join("multikey.root");
    let mut w = FileWriter::create(&new, CompressionSettings::UNCOMPRESSED).unwrap();
    let mut n_blobs = 0;
    embed(&mut w, &orig, "Events", "Events", 1024, &mut |_, _| {
        n_blobs += 1
    });
    w.finish().unwrap();
    let anchor =
        Anchor::from_object(&open(&new).find_anchor("Events").unwrap().object, "a").unwrap();
    assert_eq!(anchor.max_key_size, 1024);
    let bytes = std::fs::read(&new).unwrap();
    let (mut off, mut n_keys) = (u64::from(FileHeader::parse(&bytes).unwrap().begin), 0);
    while off < bytes.len() as u64 {
        let k = key_at(&bytes, off);
        if k.class_name == "RBlob" {
            assert!(k.nbytes - u32::from(k.key_len) <= 1024);
            n_keys += 1;
        }
        off += u64::from(k.nbytes);
    }
    assert!(
        n_keys > n_blobs,
        "{n_blobs} payloads in {n_keys} keys: nothing was split"
    );
    eprintln!("multi-key: {n_blobs} payloads in {n_keys} RBlob keys");
    assert_same_values(&new, "Events", &orig, "Events");
    check_with_root(&new, &[("Events", &orig, "Events")], &["Events"]);
}

/// A sparse file larger than 4 GiB: the header envelope below 2 GiB, a cluster beyond
/// 2 GiB, the rest (and so the keys list, streamer info, free segments) beyond 4 GiB.
#[test]
fn large_sparse_file() {
    let orig = original();
    let new = out_dir().join("large.root");
    let mut w = FileWriter::create(&new, CompressionSettings::UNCOMPRESSED).unwrap();
    embed(
        &mut w,
        &orig,
        "Events",
        "Events",
        1 << 30,
        &mut |w, i| match i {
            1 => w.skip_to((1 << 31) + 1000).unwrap(),
            2 => w.skip_to((1 << 32) + 1000).unwrap(),
            _ => {}
        },
    );
    w.finish().unwrap();
    let len = std::fs::metadata(&new).unwrap().len();
    assert!(len > 1 << 32);

    let file = open(&new);
    let header = file.header().clone();
    assert!(header.is_large(), "{header:?}");
    assert_eq!(header.version, 1_064_000);
    assert_eq!(header.units, 8);
    assert_eq!(header.end, len);
    assert!(file.top_directory().is_large());
    assert!(file.top_directory().seek_keys > 1 << 32);
    let anchor = Anchor::from_object(&file.find_anchor("Events").unwrap().object, "a").unwrap();
    assert!(anchor.seek_footer > 1 << 32);
    // The free segment is the 64-bit variant: version 1001, first = end.
    let data = {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = File::open(&new).unwrap();
        f.seek(SeekFrom::Start(header.seek_free)).unwrap();
        let mut b = Vec::new();
        f.read_to_end(&mut b).unwrap();
        b
    };
    let k = key_at(&data, 0);
    let seg = &data[usize::from(k.key_len)..];
    assert_eq!(seg.len(), 18);
    assert_eq!(u16::from_be_bytes([seg[0], seg[1]]), 1001);
    assert_eq!(u64::from_be_bytes(seg[2..10].try_into().unwrap()), len);
    assert_same_values(&new, "Events", &orig, "Events");
    check_with_root(&new, &[("Events", &orig, "Events")], &[]);
    // Sparse here, but not on every file system: do not leave 4 GiB behind.
    std::fs::remove_file(&new).ok();
}
