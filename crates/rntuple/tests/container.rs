//! Tests of the container layer (the ROOT file around RNTuples) against files written by
//! ROOT and against uproot's reading of them.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rntuple::container::{read_blob, split_blob, BlobLayout, RootFile};
use rntuple::Error;
use rntuple_io::{open_source, IoMetricsSnapshot, MemorySource, ReadAt, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

mod common;
use common::conformance_files;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn mem(name: &str, data: Vec<u8>) -> Source {
    Arc::new(MemorySource::new(name, data))
}

/// An anchor as uproot reports it: class and the seven anchor fields.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    class: String,
    fields: [u64; 7],
}

/// Parses the lines of `tests/container/uproot_anchors.py`: file name -> path -> anchor.
fn parse_uproot_tsv(text: &str) -> BTreeMap<String, BTreeMap<String, Expected>> {
    let mut out: BTreeMap<String, BTreeMap<String, Expected>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 10, "bad line from uproot helper: {line}");
        let file = Path::new(cols[0])
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut fields = [0u64; 7];
        for (i, f) in fields.iter_mut().enumerate() {
            *f = cols[3 + i].parse().unwrap();
        }
        out.entry(file).or_default().insert(
            cols[1].to_string(),
            Expected {
                class: cols[2].to_string(),
                fields,
            },
        );
    }
    out
}

/// Runs the uproot helper on `files`; `None` if python3 or uproot is missing.
fn uproot_anchors(files: &[PathBuf]) -> Option<BTreeMap<String, BTreeMap<String, Expected>>> {
    let script = repo_root().join("tests/container/uproot_anchors.py");
    let out = Command::new("python3")
        .arg(script)
        .args(files)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "uproot helper failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(parse_uproot_tsv(&String::from_utf8_lossy(&out.stdout)))
}

/// The anchor fields in an anchor object payload (big-endian, after the 4-byte byte count
/// and the 2-byte class version and four 2-byte version numbers).
fn anchor_fields(object: &[u8]) -> [u64; 7] {
    assert!(
        object.len() >= 78,
        "anchor object too short: {}",
        object.len()
    );
    let byte_count = u32::from_be_bytes(object[0..4].try_into().unwrap());
    // The byte count covers the streamed members, not the trailing checksum.
    assert_eq!(byte_count, 0x4000_0000 | (object.len() as u32 - 12));
    let mut fields = [0u64; 7];
    for (i, f) in fields.iter_mut().enumerate() {
        let at = 14 + 8 * i;
        *f = u64::from_be_bytes(object[at..at + 8].try_into().unwrap());
    }
    fields
}

/// Our view of a file: path -> (class, anchor fields if the object could be read). Objects
/// of compressed anchor keys cannot be read until the compression module lands; their
/// error must be `Unsupported`.
type Ours = BTreeMap<String, (String, Option<[u64; 7]>)>;

fn our_anchors(path: &Path) -> Ours {
    let file = RootFile::open(open_source(path.to_str().unwrap()).unwrap()).unwrap();
    let mut out = Ours::new();
    for e in file.anchor_entries().unwrap() {
        let fields = match file.load_anchor(&e) {
            Ok(a) => {
                assert_eq!(a.path, e.path);
                assert_eq!(a.object.len() as u64, u64::from(e.key.obj_len));
                Some(anchor_fields(&a.object))
            }
            Err(Error::Unsupported(msg)) => {
                assert!(msg.contains("compressed anchor key"), "{msg}");
                assert!(e.key.is_compressed().unwrap());
                None
            }
            Err(other) => panic!("{}: {other}", path.display()),
        };
        out.insert(e.path.clone(), (e.key.class_name.clone(), fields));
    }
    out
}

/// Compares our view with uproot's; returns how many anchors had their fields compared.
fn compare(ours: &Ours, theirs: &BTreeMap<String, Expected>, what: &str) -> usize {
    let our_paths: Vec<&String> = ours.keys().collect();
    let their_paths: Vec<&String> = theirs.keys().collect();
    assert_eq!(our_paths, their_paths, "{what}");
    let mut compared = 0;
    for (path, (class, fields)) in ours {
        assert_eq!(class, &theirs[path].class, "{what} {path}");
        if let Some(fields) = fields {
            assert_eq!(fields, &theirs[path].fields, "{what} {path}");
            compared += 1;
        }
    }
    compared
}

#[test]
fn conformance_files_match_uproot() {
    // Fails (does not skip) when the conformance data is missing.
    let files = conformance_files();
    assert_eq!(files.len(), 51);
    let expected = uproot_anchors(&files);
    let mut compared = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let ours = our_anchors(path);
        match &expected {
            Some(expected) => {
                let theirs = expected.get(&name).cloned().unwrap_or_default();
                compared += compare(&ours, &theirs, &name);
            }
            None => {
                // Without uproot at hand: uproot 5.7.7 reported {"ntpl;1": "ROOT::RNTuple"}
                // for every one of these files.
                eprintln!("uproot not available; comparing names only");
                let paths: Vec<&String> = ours.keys().collect();
                assert_eq!(paths, vec!["ntpl"], "{name}");
                assert_eq!(ours["ntpl"].0, "ROOT::RNTuple");
            }
        }
        let file = RootFile::open(open_source(path.to_str().unwrap()).unwrap()).unwrap();
        assert_eq!(file.find_anchor_entry("ntpl").unwrap().path, "ntpl");
        assert_eq!(file.find_anchor_entry("/ntpl").unwrap().path, "ntpl");
        assert!(matches!(file.find_anchor("nope"), Err(Error::NotFound(_))));
        assert_eq!(file.header().root_version(), 64000);
        assert!(!file.header().is_large());
    }
    // ROOT's RNTupleWriter::Recreate compresses the anchor key; until the compression
    // module lands the anchor fields of these files cannot be compared.
    eprintln!(
        "anchor fields compared with uproot for {compared} of {} files",
        files.len()
    );
}

/// The committed file made by `tests/container/make_container_files.py` (ROOT 6.40),
/// compared with the committed output of `tests/container/uproot_anchors.py` on it.
#[test]
fn subdirectories_written_by_root() {
    let path = data_dir().join("container_subdirs.root");
    let tsv = std::fs::read_to_string(data_dir().join("container_subdirs.uproot.tsv")).unwrap();
    let expected = parse_uproot_tsv(&tsv);
    let ours = our_anchors(&path);
    // Anchors written through a TFile (TKey) are not compressed: all fields compared.
    assert_eq!(
        compare(&ours, &expected["container_subdirs.root"], "subdirs"),
        4
    );
    let paths: Vec<&str> = ours.keys().map(String::as_str).collect();
    assert_eq!(paths, ["a/b/nt", "a/b/nt2", "a/nt", "top"]);

    let file = RootFile::open(open_source(path.to_str().unwrap()).unwrap()).unwrap();
    // Keys of each directory, as uproot lists them (names and classes, highest cycle).
    let summary = |dir: &str| -> Vec<(String, String, u16)> {
        let mut v: Vec<_> = file
            .keys(dir)
            .unwrap()
            .into_iter()
            .map(|k| (k.name, k.class_name, k.cycle))
            .collect();
        v.sort();
        v
    };
    let top = summary("");
    assert_eq!(top, summary("/"));
    assert!(top.contains(&("a".into(), "TDirectory".into(), 1)));
    assert!(top.contains(&("c".into(), "TDirectory".into(), 1)));
    assert!(top.contains(&("top".into(), "ROOT::RNTuple".into(), 1)));
    assert_eq!(top.iter().filter(|k| k.0 == "h").count(), 6);
    assert!(top.iter().filter(|k| k.0 == "h").all(|k| k.1 == "TH1F"));
    let a = summary("a");
    assert!(a.contains(&("b".into(), "TDirectory".into(), 1)));
    assert!(a.contains(&("nt".into(), "ROOT::RNTuple".into(), 1)));
    assert!(a.contains(&("ha".into(), "TH1F".into(), 5)));
    let ab: Vec<String> = summary("a/b").into_iter().map(|k| k.0).collect();
    assert_eq!(ab, ["nt", "nt2"]);
    assert_eq!(summary("a;1/b/"), summary("a/b"));
    assert!(summary("c").is_empty());
    assert!(matches!(file.keys("zzz"), Err(Error::NotFound(_))));
    assert!(matches!(file.keys("a/zzz"), Err(Error::NotFound(_))));
    assert!(matches!(file.keys("top"), Err(Error::NotFound(_))));

    // find_anchor by path and by unique name.
    assert_eq!(file.find_anchor("a/b/nt").unwrap().path, "a/b/nt");
    assert_eq!(file.find_anchor("nt2").unwrap().path, "a/b/nt2");
    assert_eq!(file.find_anchor("top").unwrap().path, "top");
    assert!(matches!(
        file.find_anchor("nt"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(file.find_anchor("b/nt"), Err(Error::NotFound(_))));
    assert!(matches!(file.find_anchor("h"), Err(Error::NotFound(_))));
    let sub = file.directory("a/b").unwrap();
    assert!(sub.seek_keys > 0);
}

/// Whether the checks against ROOT run: they fail, not skip, where ROOT or uproot is
/// missing (unless `RNTUPLE_NO_ROOT` says so, outside CI).
fn root_available() -> bool {
    if !common::test_skips::root_checks_wanted("rust: container::files_generated_by_root_now") {
        return false;
    }
    let imported = Command::new("python3")
        .args(["-c", "import ROOT, uproot"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        imported,
        "python3 cannot import ROOT and uproot (pip install root uproot)"
    );
    true
}

/// Generates fresh files with ROOT and compares with uproot, including multi-key blobs.
#[test]
fn files_generated_by_root_now() {
    if !root_available() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("container_files");
    let script = repo_root().join("tests/container/make_container_files.py");
    let status = Command::new("python3")
        .arg(script)
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let names = [
        "subdirs.root",
        "multikey_simple.root",
        "multikey_tfile.root",
    ];
    let files: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let expected = uproot_anchors(&files).expect("uproot helper");
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let n = compare(&our_anchors(path), &expected[&name], &name);
        assert_eq!(n, expected[&name].len(), "{name}: anchors not compared");
    }
    assert_eq!(
        expected["multikey_tfile.root"].keys().collect::<Vec<_>>(),
        ["d/wide"]
    );

    // Multi-key envelopes: the header envelope (7.5 kB) is split over RBlob keys of at
    // most 1024 bytes. Read it and verify the envelope's own xxh3 checksum.
    for path in &files[1..] {
        let source = open_source(path.to_str().unwrap()).unwrap();
        let file = RootFile::open(source.clone()).unwrap();
        let anchor = file.rntuple_anchors().unwrap().remove(0);
        let [seek_h, nbytes_h, len_h, seek_f, nbytes_f, len_f, max_key] =
            anchor_fields(&anchor.object);
        assert_eq!(max_key, 1024);
        assert!(nbytes_h > max_key, "the test needs a multi-key header");
        assert_eq!(nbytes_h, len_h, "written without compression");
        for (seek, nbytes, len) in [(seek_h, nbytes_h, len_h), (seek_f, nbytes_f, len_f)] {
            let env = file.read_blob(seek, nbytes, max_key).unwrap();
            assert_eq!(env.len() as u64, len);
            assert_envelope_checksum(&env);
            // The envelope's own length field (bits 16..64 of the first LE u64).
            let type_and_len = u64::from_le_bytes(env[0..8].try_into().unwrap());
            assert_eq!(type_and_len >> 16, len);
        }
        // Read as one contiguous range, the header's bytes are wrong (the chunk offsets
        // and other keys' headers are in the way): the checksum must fail.
        let flat = source.read_at(seek_h, nbytes_h).unwrap();
        assert!(!envelope_checksum_ok(&flat));
    }
}

fn envelope_checksum_ok(env: &[u8]) -> bool {
    let n = env.len();
    let stored = u64::from_le_bytes(env[n - 8..].try_into().unwrap());
    xxhash_rust::xxh3::xxh3_64(&env[..n - 8]) == stored
}

fn assert_envelope_checksum(env: &[u8]) {
    assert!(envelope_checksum_ok(env), "envelope checksum mismatch");
}

// ---------------------------------------------------------------------------------------
// Hand-crafted multi-key blobs.

/// Writes `payload` as ROOT does for MaxKeySize `max`: chunks after the first at
/// `base`, each preceded by a 70-byte stand-in for its key header, the first chunk last.
/// The layout arithmetic here is written out independently of the library.
fn craft_multikey(payload: &[u8], max: usize, base: usize) -> (Vec<u8>, u64) {
    let nbytes = payload.len();
    let mut n = nbytes.div_ceil(max);
    let tail = nbytes % max;
    let slack = if tail > 0 { max - tail } else { 0 };
    if (n - 1) * 8 > slack {
        n += 1;
    }
    let first_data = max - (n - 1) * 8;
    let mut file = vec![0xAAu8; base];
    let mut offsets = Vec::new();
    for chunk in payload[first_data..].chunks(max) {
        file.extend_from_slice(&[0x55u8; 70]);
        offsets.push(file.len() as u64);
        file.extend_from_slice(chunk);
    }
    assert_eq!(offsets.len(), n - 1);
    file.extend_from_slice(&[0x55u8; 70]);
    let first_offset = file.len() as u64;
    file.extend_from_slice(&payload[..first_data]);
    for o in &offsets {
        file.extend_from_slice(&o.to_le_bytes());
    }
    file.extend_from_slice(&[0xEEu8; 33]);
    (file, first_offset)
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn multikey_blob_layouts() {
    // 10000 bytes, max 1000: 10 chunks would need 72 bytes of offsets but the last chunk
    // has no slack, so 11 chunks; the first holds 1000 - 80 = 920 payload bytes.
    let l = BlobLayout::compute(10_000, 1000).unwrap();
    assert_eq!(
        (l.n_chunks, l.first_chunk_data, l.offsets_len),
        (11, 920, 80)
    );
    // 2500 bytes, max 1000: 3 chunks, 16 bytes of offsets fit into the 500 bytes of slack.
    let l = BlobLayout::compute(2500, 1000).unwrap();
    assert_eq!(
        (l.n_chunks, l.first_chunk_data, l.offsets_len),
        (3, 984, 16)
    );
    let l = BlobLayout::compute(1000, 1000).unwrap();
    assert_eq!(l.n_chunks, 1);
    let l = BlobLayout::compute(5, 0).unwrap();
    assert_eq!(l.n_chunks, 1);
    // Offsets that cannot fit into the first chunk.
    assert!(BlobLayout::compute(1000, 8).is_err());
    assert!(BlobLayout::compute(4096, 64).is_err());

    for (nbytes, max) in [
        (10_000, 1000),
        (2500, 1000),
        (1001, 1000),
        (4096, 512),
        (777, 100),
        (5000, 4999),
    ] {
        let payload = pattern(nbytes);
        let (file, offset) = craft_multikey(&payload, max, 100);
        let source = MemorySource::new("crafted", file);
        let got = read_blob(&source, offset, nbytes as u64, max as u64).unwrap();
        assert_eq!(got, payload, "nbytes {nbytes}, max {max}");
        // The library's splitter produces the same chunks.
        let l = BlobLayout::compute(nbytes as u64, max as u64).unwrap();
        let fake_offsets: Vec<u64> = (0..l.n_chunks - 1).map(|i| i * 1000).collect();
        let chunks = split_blob(&payload, max as u64, &fake_offsets).unwrap();
        assert_eq!(chunks.len() as u64, l.n_chunks);
        assert_eq!(chunks[0].len(), max);
        assert_eq!(chunks[1..].concat(), payload[l.first_chunk_data as usize..]);
    }
    // Single-key payloads.
    let source = MemorySource::new("flat", pattern(300));
    assert_eq!(
        read_blob(&source, 10, 200, 1000).unwrap(),
        pattern(300)[10..210]
    );
    assert_eq!(
        read_blob(&source, 10, 200, 0).unwrap(),
        pattern(300)[10..210]
    );
    assert!(read_blob(&source, 200, 200, 1000).is_err());
    assert!(read_blob(&source, u64::MAX, 2, 1000).is_err());
}

#[test]
fn multikey_blob_corruption() {
    let payload = pattern(10_000);
    let (file, offset) = craft_multikey(&payload, 1000, 100);
    let offsets_at = offset as usize + 920;
    // A chunk offset beyond the end of the file.
    let mut bad = file.clone();
    bad[offsets_at + 8..offsets_at + 16].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    let err = read_blob(&MemorySource::new("bad", bad), offset, 10_000, 1000).unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
    // A payload larger than the file.
    let err = read_blob(&MemorySource::new("f", file.clone()), offset, 1 << 40, 1000).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    // A first chunk cut off by the end of the file.
    let cut = file[..offsets_at + 20].to_vec();
    assert!(read_blob(&MemorySource::new("cut", cut), offset, 10_000, 1000).is_err());
    // Every byte of the offsets flipped: an error or the wrong bytes, never a panic.
    for i in offsets_at..offsets_at + 80 {
        let mut bad = file.clone();
        bad[i] ^= 0x80;
        if let Ok(got) = read_blob(&MemorySource::new("flip", bad), offset, 10_000, 1000) {
            assert_eq!(got.len(), 10_000);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Large files: 64-bit records, hand-crafted, placed above 4 GiB in a sparse source.

/// A source of `size` bytes that are zero except for the given regions.
struct SparseSource {
    size: u64,
    regions: Vec<(u64, Vec<u8>)>,
}

impl ReadAt for SparseSource {
    fn name(&self) -> &str {
        "sparse"
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read_at(&self, offset: u64, len: u64) -> rntuple_io::Result<Vec<u8>> {
        let end = offset.checked_add(len).filter(|&e| e <= self.size).ok_or(
            rntuple_io::Error::Truncated {
                what: "sparse".into(),
                offset,
                needed: len,
                available: self.size.saturating_sub(offset),
            },
        )?;
        assert!(len < 1 << 20, "test source asked for {len} bytes");
        let mut out = vec![0u8; len as usize];
        for (start, bytes) in &self.regions {
            let r_end = start + bytes.len() as u64;
            let lo = offset.max(*start);
            let hi = end.min(r_end);
            if lo < hi {
                out[(lo - offset) as usize..(hi - offset) as usize]
                    .copy_from_slice(&bytes[(lo - start) as usize..(hi - start) as usize]);
            }
        }
        Ok(out)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        IoMetricsSnapshot::default()
    }
}

fn tstr(out: &mut Vec<u8>, s: &str) {
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// A 64-bit key header (version 1004), byte by byte.
#[allow(clippy::too_many_arguments)]
fn big_key(
    nbytes: u32,
    obj_len: u32,
    cycle: u16,
    seek_key: u64,
    seek_pdir: u64,
    class: &str,
    name: &str,
    title: &str,
) -> Vec<u8> {
    let key_len = 34 + 3 + class.len() + name.len() + title.len();
    let mut k = Vec::new();
    k.extend_from_slice(&(nbytes + key_len as u32).to_be_bytes()); // Nbytes
    k.extend_from_slice(&1004u16.to_be_bytes()); // Version
    k.extend_from_slice(&obj_len.to_be_bytes()); // ObjLen
    k.extend_from_slice(&0x7654_3210u32.to_be_bytes()); // Datime
    k.extend_from_slice(&(key_len as u16).to_be_bytes()); // KeyLen
    k.extend_from_slice(&cycle.to_be_bytes()); // Cycle
    k.extend_from_slice(&seek_key.to_be_bytes());
    k.extend_from_slice(&seek_pdir.to_be_bytes());
    tstr(&mut k, class);
    tstr(&mut k, name);
    tstr(&mut k, title);
    assert_eq!(k.len(), key_len);
    k
}

/// A 64-bit directory record (version 1005), byte by byte.
fn big_dir(
    nbytes_keys: u32,
    nbytes_name: u32,
    seek_dir: u64,
    seek_parent: u64,
    seek_keys: u64,
) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&1005u16.to_be_bytes());
    d.extend_from_slice(&1u32.to_be_bytes());
    d.extend_from_slice(&2u32.to_be_bytes());
    d.extend_from_slice(&nbytes_keys.to_be_bytes());
    d.extend_from_slice(&nbytes_name.to_be_bytes());
    d.extend_from_slice(&seek_dir.to_be_bytes());
    d.extend_from_slice(&seek_parent.to_be_bytes());
    d.extend_from_slice(&seek_keys.to_be_bytes());
    d.extend_from_slice(&1u16.to_be_bytes());
    d.extend_from_slice(&[0x11; 16]);
    d
}

fn anchor_object(marker: u8) -> Vec<u8> {
    let mut o = Vec::new();
    o.extend_from_slice(&(0x4000_0000u32 | 66).to_be_bytes());
    o.extend_from_slice(&2u16.to_be_bytes());
    o.extend_from_slice(&[marker; 72]);
    o
}

fn large_file() -> SparseSource {
    const GB: u64 = 1 << 30;
    let size = 6 * GB;
    // Header: fVersion >= 1000000, 64-bit fEND, fSeekFree, fSeekInfo.
    let mut h = Vec::new();
    h.extend_from_slice(b"root");
    h.extend_from_slice(&1_064_000u32.to_be_bytes()); // fVersion
    h.extend_from_slice(&100u32.to_be_bytes()); // fBEGIN
    h.extend_from_slice(&size.to_be_bytes()); // fEND
    h.extend_from_slice(&(5 * GB + 900).to_be_bytes()); // fSeekFree
    h.extend_from_slice(&40u32.to_be_bytes()); // fNbytesFree
    h.extend_from_slice(&1u32.to_be_bytes()); // nfree
    let top_key = big_key(0, 60, 1, 100, 0, "TFile", "big.root", "");
    let nbytes_name = top_key.len() as u32 + 10; // key + TNamed name "big.root" + empty title
    h.extend_from_slice(&nbytes_name.to_be_bytes()); // fNbytesName
    h.push(8); // fUnits
    h.extend_from_slice(&505u32.to_be_bytes()); // fCompress
    h.extend_from_slice(&(5 * GB + 1000).to_be_bytes()); // fSeekInfo
    h.extend_from_slice(&100u32.to_be_bytes()); // fNbytesInfo
    h.extend_from_slice(&1u16.to_be_bytes());
    h.extend_from_slice(&[0x22; 16]);
    assert_eq!(h.len(), 75);
    h.resize(100, 0);
    h.extend_from_slice(&top_key);
    tstr(&mut h, "big.root");
    tstr(&mut h, "");

    // Keys list of the top directory at 4 GiB + 10: an anchor above 4 GiB (cycles 1 and 3,
    // plus a cycle 2 of another class), and a sub-directory "sub" whose record and keys
    // are above 5 GiB.
    let top_keys_at = 4 * GB + 10;
    let anchor1_at = 4 * GB + 5000;
    let anchor3_at = 4 * GB + 6000;
    let sub_at = 5 * GB;
    let sub_keys_at = 5 * GB + 300;
    let sub_anchor_at = 5 * GB + 2000;
    let k_anchor1 = big_key(78, 78, 1, anchor1_at, 100, "ROOT::RNTuple", "nt", "");
    let k_anchor3 = big_key(78, 78, 3, anchor3_at, 100, "ROOT::RNTuple", "nt", "");
    let k_other = big_key(10, 10, 2, 4 * GB + 7000, 100, "TH1F", "nt", "");
    let k_sub = big_key(60, 60, 1, sub_at, 100, "TDirectory", "sub", "");
    let mut body = Vec::new();
    body.extend_from_slice(&4i32.to_be_bytes());
    for k in [&k_anchor1, &k_other, &k_anchor3, &k_sub] {
        body.extend_from_slice(k);
    }
    let list_key = big_key(
        body.len() as u32,
        body.len() as u32,
        1,
        top_keys_at,
        100,
        "TFile",
        "big.root",
        "",
    );
    let mut top_list = list_key.clone();
    top_list.extend_from_slice(&body);
    let top_dir = big_dir(top_list.len() as u32, nbytes_name, 100, 0, top_keys_at);
    h.extend_from_slice(&top_dir);

    let k_sub_anchor = big_key(
        78,
        78,
        1,
        sub_anchor_at,
        sub_at,
        "ROOT::Experimental::RNTuple",
        "old",
        "t",
    );
    let mut sub_body = Vec::new();
    sub_body.extend_from_slice(&1i32.to_be_bytes());
    sub_body.extend_from_slice(&k_sub_anchor);
    let sub_list_key = big_key(
        sub_body.len() as u32,
        sub_body.len() as u32,
        1,
        sub_keys_at,
        sub_at,
        "TDirectory",
        "sub",
        "",
    );
    let mut sub_list = sub_list_key;
    sub_list.extend_from_slice(&sub_body);
    let mut sub_record = k_sub.clone();
    sub_record.extend_from_slice(&big_dir(
        sub_list.len() as u32,
        k_sub.len() as u32,
        sub_at,
        100,
        sub_keys_at,
    ));

    let with_object = |key: &[u8], marker: u8| {
        let mut v = key.to_vec();
        v.extend_from_slice(&anchor_object(marker));
        v
    };
    SparseSource {
        size,
        regions: vec![
            (0, h),
            (top_keys_at, top_list),
            (anchor1_at, with_object(&k_anchor1, 1)),
            (anchor3_at, with_object(&k_anchor3, 3)),
            (sub_at, sub_record),
            (sub_keys_at, sub_list),
            (sub_anchor_at, with_object(&k_sub_anchor, 9)),
        ],
    }
}

#[test]
fn large_file_with_64_bit_records() {
    let source: Source = Arc::new(large_file());
    let file = RootFile::open(source).unwrap();
    let h = file.header();
    assert!(h.is_large());
    assert_eq!(h.root_version(), 64000);
    assert_eq!(h.end, 6 << 30);
    assert_eq!(h.seek_info, (5 << 30) + 1000);
    assert_eq!(h.compress, 505);
    assert_eq!(h.units, 8);
    assert!(file.top_directory().is_large());
    assert_eq!(file.top_directory().seek_keys, (4 << 30) + 10);

    let keys = file.keys("").unwrap();
    assert_eq!(keys.len(), 4);
    assert!(keys.iter().all(|k| k.is_large()));
    assert_eq!(keys[2].seek_key, (4 << 30) + 6000);
    let sub = file.keys("sub").unwrap();
    assert_eq!(sub.len(), 1);
    assert_eq!(sub[0].title, "t");

    let anchors = file.rntuple_anchors().unwrap();
    assert_eq!(anchors.len(), 2);
    assert_eq!(anchors[0].path, "nt");
    assert_eq!(anchors[0].cycle, 3);
    assert_eq!(anchors[0].seek_key, (4 << 30) + 6000);
    assert_eq!(anchors[0].object, anchor_object(3));
    assert_eq!(anchors[1].path, "sub/old");
    assert_eq!(anchors[1].class_name, "ROOT::Experimental::RNTuple");
    assert_eq!(anchors[1].object, anchor_object(9));
    assert_eq!(file.find_anchor("old").unwrap().seek_key, (5 << 30) + 2000);
}

#[test]
fn large_file_corruption() {
    // A keys list that points back to an ancestor's keys list: a loop, reported.
    let mut src = large_file();
    let sub_at = 5u64 << 30;
    let (_, rec) = src
        .regions
        .iter_mut()
        .find(|(at, _)| *at == sub_at)
        .unwrap();
    // The directory record follows the sub-directory key; its SeekKeys is at +34 in it.
    let key_len = rec.len() - 60;
    let top_keys_at: u64 = (4 << 30) + 10;
    rec[key_len + 34..key_len + 42].copy_from_slice(&top_keys_at.to_be_bytes());
    let file = RootFile::open(Arc::new(src)).unwrap();
    let err = file.rntuple_anchors().unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");

    // fEND beyond the file: truncated.
    let mut src = large_file();
    src.size -= 1;
    assert!(matches!(
        RootFile::open(Arc::new(src)),
        Err(Error::Truncated { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// Corruption of real files: truncation and flipped bytes.

/// Opens and lists anchors, reads their objects; returns whether that succeeded (an
/// `Unsupported` compressed anchor object counts as success: the file's structure was
/// read). Never panics by contract.
fn try_all(data: Vec<u8>) -> bool {
    let source = mem("corrupt", data);
    let Ok(f) = RootFile::open(source) else {
        return false;
    };
    let _ = f.keys("a/b");
    let _ = f.find_anchor("ntpl");
    let Ok(entries) = f.anchor_entries() else {
        return false;
    };
    entries.iter().all(|e| match f.load_anchor(e) {
        Ok(_) | Err(Error::Unsupported(_)) => true,
        Err(_) => false,
    })
}

fn corruption_files() -> Vec<PathBuf> {
    let mut files = vec![data_dir().join("container_subdirs.root")];
    let conf = conformance_files();
    files.extend(
        conf.iter()
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("structure.empty")
                    || n.starts_with("types.string")
                    || n.starts_with("compression.block.big")
            })
            .cloned(),
    );
    files
}

#[test]
fn truncated_files_are_errors() {
    for path in corruption_files() {
        let data = std::fs::read(&path).unwrap();
        let n = data.len();
        let step = if n < 20_000 { 1 } else { n / 3000 };
        for cut in (0..n).step_by(step) {
            assert!(
                !try_all(data[..cut].to_vec()),
                "{} cut at {cut} opened",
                path.display()
            );
        }
    }
}

#[test]
fn truncated_files_with_patched_end() {
    // Truncate and also shrink fEND so that the header does not give the cut away: every
    // cut that reaches into the keys lists or anchors must be an error, none may panic.
    let path = data_dir().join("container_subdirs.root");
    let data = std::fs::read(&path).unwrap();
    let file = RootFile::open(mem("orig", data.clone())).unwrap();
    let mut needed = 0u64;
    for dir in ["", "a", "a/b", "c"] {
        let d = file.directory(dir).unwrap();
        needed = needed.max(d.seek_keys + u64::from(d.nbytes_keys));
    }
    for e in file.anchor_entries().unwrap() {
        needed = needed.max(e.key.seek_key + u64::from(e.key.nbytes));
    }
    assert!(file.header().end <= data.len() as u64);
    for cut in 0..data.len() {
        let mut d = data[..cut].to_vec();
        if d.len() >= 16 {
            d[12..16].copy_from_slice(&(cut as u32).to_be_bytes());
        }
        let ok = try_all(d);
        if (cut as u64) < needed {
            assert!(!ok, "cut at {cut} (< {needed}) opened");
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    for path in corruption_files() {
        let data = std::fs::read(&path).unwrap();
        let file = RootFile::open(mem("orig", data.clone())).unwrap();
        let top = file.top_directory().clone();
        // The header and top directory, and the top keys list.
        let mut positions: Vec<usize> = (0..400.min(data.len())).collect();
        let ks = top.seek_keys as usize;
        positions.extend(ks..(ks + top.nbytes_keys as usize).min(data.len()));
        for e in file.anchor_entries().unwrap() {
            let s = e.key.seek_key as usize;
            positions.extend(s..(s + 60).min(data.len()));
        }
        let mut errors = 0;
        for &i in &positions {
            for mask in [0x01u8, 0x80, 0xFF] {
                let mut d = data.clone();
                d[i] ^= mask;
                if !try_all(d) {
                    errors += 1;
                }
            }
        }
        eprintln!(
            "{}: {errors} of {} flips are errors",
            path.display(),
            positions.len() * 3
        );
        // The magic bytes are always checked.
        for i in 0..4 {
            let mut d = data.clone();
            d[i] ^= 0x20;
            assert!(!try_all(d));
        }
    }
}

#[test]
fn not_root_files() {
    // Bad data (not a missing RNTuple), naming the file.
    for (name, bytes) in [
        ("empty", vec![]),
        ("text", b"hello world, this is not ROOT".to_vec()),
    ] {
        let err = RootFile::open(mem(name, bytes)).unwrap_err();
        assert!(
            matches!(err.root_cause(), Error::Corrupt { .. }),
            "{name}: {err}"
        );
        assert!(err.to_string().contains("not a ROOT file"), "{err}");
        assert!(err.to_string().contains(name), "{err}");
    }
    let mut bare = b"rntuple".to_vec();
    bare.resize(200, 0);
    assert!(RootFile::open(mem("bare", bare)).is_err());
}
