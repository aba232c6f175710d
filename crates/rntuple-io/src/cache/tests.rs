//! The store against real directories: bytes back exactly, faults found and never
//! handed out, concurrent writers (threads and processes), versions that never mix,
//! eviction, a full disk, and the maintenance commands.

#![allow(clippy::cast_possible_truncation)]

use super::extent::{self, BLOCK};
use super::layout::{self, Access, Root};
use super::url::normalize_url;
use super::*;
use crate::ByteRange;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const URL: &str = "https://alice:PASSWORD@example.org/data/f.root?X-Amz-Signature=SIGNATURE";

/// The byte at `pos` of the test file of version `seed`.
fn byte_at(seed: u64, pos: u64) -> u8 {
    let x = pos.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (x >> 29) as u8 ^ (pos as u8)
}

/// The bytes `range` of the test file of version `seed`.
fn bytes(seed: u64, range: ByteRange) -> Vec<u8> {
    (range.offset..range.offset + range.len)
        .map(|p| byte_at(seed, p))
        .collect()
}

fn r(offset: u64, len: u64) -> ByteRange {
    ByteRange { offset, len }
}

fn meta(identity: u128) -> VersionMeta {
    VersionMeta {
        identity,
        size: 1 << 30,
        etag: Some("\"e1\"".to_string()),
        last_modified: None,
        mtime: Some(1_700_000_000),
        probe: vec![(r(0, 100), 42)],
        url: crate::redact_url(URL),
    }
}

fn open(dir: &Path) -> Arc<CacheStore> {
    CacheStore::open(&CacheConfig::new(dir)).unwrap()
}

/// A fresh store, URL entry and installed version of identity 1.
fn version_in(dir: &Path) -> (Arc<CacheStore>, Version) {
    let store = open(dir);
    let version = store.url_entry(URL).unwrap().install(meta(1)).unwrap();
    (store, version)
}

/// Reads `range` through `version`, or `None` when it returns false.
fn read(version: &Version, range: ByteRange) -> Option<Vec<u8>> {
    let mut out = vec![0xEE; range.len as usize];
    if version.read_into(range, &mut out) {
        Some(out)
    } else {
        assert!(
            out.iter().all(|&b| b == 0 || b == 0xEE),
            "failed reads hand out nothing"
        );
        None
    }
}

/// Every file below `dir`.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The bytes of the cache's regular files below `dir`.
fn tree_bytes(dir: &Path) -> u64 {
    files_below(dir)
        .iter()
        .map(|p| fs::symlink_metadata(p).unwrap().len())
        .sum()
}

fn extent_file(dir: &Path, identity: u128, range: ByteRange) -> PathBuf {
    let key = layout::version_name(xxhash_rust::xxh3::xxh3_128(normalize_url(URL).as_bytes()));
    fs::canonicalize(dir)
        .unwrap()
        .join(layout::ROOT_NAME)
        .join(layout::entry_rel(&key))
        .join(layout::version_name(identity))
        .join("x")
        .join(extent::file_name(range))
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    files_below(&dir.join(layout::ROOT_NAME).join("tmp"))
}

#[test]
fn stored_bytes_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    // Three whole blocks and a short one, at an offset that is not a multiple of one.
    let extent = r(1_000_003, 3 * BLOCK + 1000);
    version.store(extent.offset, &bytes(1, extent));
    assert_eq!(version.extents(), vec![extent]);
    assert_eq!(store.counters().snapshot().stored_extents, 1);
    assert_eq!(store.counters().snapshot().stored_bytes, extent.len);
    let file = extent_file(dir.path(), 1, extent);
    assert_eq!(
        fs::metadata(&file).unwrap().len(),
        extent::file_len(extent.len)
    );
    assert_eq!(extent::file_len(extent.len), 64 + 4 * 8 + extent.len);
    // The whole extent, and ranges at and around every block boundary.
    assert_eq!(read(&version, extent).unwrap(), bytes(1, extent));
    let end = extent.offset + extent.len;
    let mut cases = vec![
        r(extent.offset, 1),
        r(end - 1, 1),
        r(extent.offset + 5, 1),
        r(end - 1000, 1000),
        r(end - 1001, 1001),
        r(extent.offset + BLOCK - 1, 2),
        r(extent.offset + 10, 3 * BLOCK),
        r(extent.offset + 1, extent.len - 2),
        r(extent.offset + BLOCK, BLOCK),
        r(extent.offset + BLOCK, 2 * BLOCK + 1000),
        r(extent.offset + 3, BLOCK),
    ];
    for b in 1..=3 {
        let at = extent.offset + b * BLOCK;
        for (before, after) in [(1, 1), (1, 0), (0, 1), (100, 70_000), (BLOCK, BLOCK)] {
            let start = at - before;
            let stop = (at + after).min(end);
            if stop > start {
                cases.push(r(start, stop - start));
            }
        }
    }
    for case in cases {
        assert_eq!(read(&version, case).unwrap(), bytes(1, case), "{case:?}");
    }
    // Outside the extent, or straddling its end, or a wrong buffer: refused.
    assert_eq!(read(&version, r(end - 1, 2)), None);
    assert_eq!(read(&version, r(extent.offset - 1, 1)), None);
    assert!(!version.read_into(r(extent.offset, 4), &mut [0u8; 3]));
    assert!(version.read_into(r(extent.offset, 0), &mut []));
    let c = store.counters().snapshot();
    assert_eq!(c.corrupt_extents + c.missing_extents, 0, "{c:?}");
    // A second store of the same bytes, or of bytes inside, writes nothing.
    version.store(extent.offset + 5, &bytes(1, r(extent.offset + 5, 10)));
    assert_eq!(store.counters().snapshot().stored_extents, 1);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn pieces_take_the_fewest_extents_and_name_the_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, version) = version_in(dir.path());
    for e in [
        r(100, 100),
        r(150, 100),
        r(200, 50),
        r(250, 50),
        r(400, 10),
        r(120, 10),
    ] {
        version.store(e.offset, &bytes(1, e));
    }
    let cached = |o, l| Piece::Cached { range: r(o, l) };
    let missing = |o, l| Piece::Missing { range: r(o, l) };
    assert_eq!(
        version.pieces(r(0, 500)),
        vec![
            missing(0, 100),
            cached(100, 100),
            cached(200, 50),
            cached(250, 50),
            missing(300, 100),
            cached(400, 10),
            missing(410, 90),
        ]
    );
    // [200, 250) and [120, 130) lie inside extents stored before: not stored.
    assert_eq!(
        version.extents(),
        vec![r(100, 100), r(150, 100), r(250, 50), r(400, 10)]
    );
    assert_eq!(
        version.pieces(r(130, 150)),
        vec![cached(130, 70), cached(200, 50), cached(250, 30)]
    );
    // Of two extents at one offset the longer one is taken: one piece, not two.
    version.store(500, &bytes(1, r(500, 50)));
    version.store(500, &bytes(1, r(500, 200)));
    assert_eq!(version.pieces(r(500, 200)), vec![cached(500, 200)]);
    assert_eq!(
        version.pieces(r(510, 300)),
        vec![cached(510, 190), missing(700, 110)]
    );
    assert_eq!(version.pieces(r(120, 5)), vec![cached(120, 5)]);
    assert_eq!(version.pieces(r(0, 0)), vec![]);
    assert_eq!(version.pieces(r(310, 20)), vec![missing(310, 20)]);
    assert_eq!(version.extent_containing(r(160, 90)), Some(r(150, 100)));
    assert_eq!(version.extent_containing(r(199, 2)), Some(r(150, 100)));
    assert_eq!(version.extent_containing(r(290, 20)), None);
    assert_eq!(version.extent_containing(r(100, 0)), None);
    // Every cached piece reads back its bytes.
    for piece in version.pieces(r(0, 500)) {
        if let Piece::Cached { range } = piece {
            assert_eq!(read(&version, range).unwrap(), bytes(1, range));
        }
    }
}

/// Stores an extent in a fresh directory, damages its file with `damage`, and checks
/// that a read refuses it, counts it as `corrupt` (else missing), deletes the file,
/// forgets the extent, and that a store after works again.
fn damaged_extent_is_refused(damage: impl Fn(&Path), corrupt: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    let extent = r(4096, 2 * BLOCK + 17);
    version.store(extent.offset, &bytes(1, extent));
    let file = extent_file(dir.path(), 1, extent);
    damage(&file);
    assert_eq!(version.extent_containing(extent), Some(extent));
    assert_eq!(read(&version, extent), None);
    assert_eq!(version.extent_containing(extent), None, "forgotten");
    version.refresh();
    assert_eq!(version.extent_containing(extent), None, "and gone");
    let c = store.counters().snapshot();
    if corrupt {
        assert_eq!((c.corrupt_extents, c.missing_extents), (1, 0), "{c:?}");
    } else {
        assert_eq!((c.corrupt_extents, c.missing_extents), (0, 1), "{c:?}");
    }
    assert!(!file.exists(), "the bad file is deleted");
    version.store(extent.offset, &bytes(1, extent));
    assert_eq!(read(&version, extent).unwrap(), bytes(1, extent));
}

fn flip_byte(path: &Path, at: u64) {
    let mut data = fs::read(path).unwrap();
    data[at as usize] ^= 0x40;
    fs::write(path, data).unwrap();
}

#[test]
fn a_corrupt_payload_byte_is_found_and_never_handed_out() {
    // In the second block: a read of it fails, a read of the first block alone not.
    damaged_extent_is_refused(
        |f| flip_byte(f, extent::payload_start(2 * BLOCK + 17) + BLOCK + 5),
        true,
    );
    // In the short last block.
    damaged_extent_is_refused(
        |f| flip_byte(f, extent::payload_start(2 * BLOCK + 17) + 2 * BLOCK + 16),
        true,
    );
}

#[test]
fn a_corrupt_header_or_table_byte_is_found() {
    for at in [0, 9, 13, 17, 25, 40, 50, 58, 64, 64 + 8 + 3, 64 + 23] {
        damaged_extent_is_refused(|f| flip_byte(f, at), true);
    }
}

#[test]
fn a_truncated_or_extended_or_deleted_extent_is_found() {
    damaged_extent_is_refused(
        |f| {
            let file = fs::OpenOptions::new().write(true).open(f).unwrap();
            file.set_len(file.metadata().unwrap().len() - 1).unwrap();
        },
        true,
    );
    damaged_extent_is_refused(
        |f| {
            let file = fs::OpenOptions::new().write(true).open(f).unwrap();
            file.set_len(100).unwrap();
        },
        true,
    );
    damaged_extent_is_refused(
        |f| {
            let file = fs::OpenOptions::new().write(true).open(f).unwrap();
            file.set_len(file.metadata().unwrap().len() + 1).unwrap();
        },
        true,
    );
    damaged_extent_is_refused(|f| fs::remove_file(f).unwrap(), false);
    // The file of another extent under this one's name.
    damaged_extent_is_refused(
        |f| {
            let dir = tempfile::tempdir().unwrap();
            let (_s, v) = version_in(dir.path());
            v.store(0, &bytes(1, r(0, 2 * BLOCK + 17)));
            fs::copy(extent_file(dir.path(), 1, r(0, 2 * BLOCK + 17)), f).unwrap();
        },
        true,
    );
}

#[test]
fn corruption_after_the_file_was_opened_is_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    let extent = r(0, 3 * BLOCK);
    version.store(0, &bytes(1, extent));
    assert_eq!(read(&version, r(10, 10)).unwrap(), bytes(1, r(10, 10)));
    // The file is open now; a byte of its third block changes in place.
    let file = extent_file(dir.path(), 1, extent);
    let f = fs::OpenOptions::new().write(true).open(&file).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(
        &[0xFF ^ byte_at(1, 2 * BLOCK + 7)],
        extent::payload_start(extent.len) + 2 * BLOCK + 7,
    )
    .unwrap();
    // A read of the intact first block still succeeds; the third fails.
    assert_eq!(read(&version, r(0, BLOCK)).unwrap(), bytes(1, r(0, BLOCK)));
    assert_eq!(read(&version, r(2 * BLOCK, 8)), None);
    assert_eq!(store.counters().snapshot().corrupt_extents, 1);
    assert!(!file.exists());
    assert_eq!(read(&version, r(0, 1)), None, "the extent is forgotten");
}

#[test]
fn threads_storing_the_same_and_overlapping_extents_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    let extents: Vec<ByteRange> = (0..24u64)
        .map(|i| r((i % 6) * 50_000, 80_000 + (i % 4) * 30_000))
        .collect();
    std::thread::scope(|s| {
        for t in 0..4 {
            let version = version.clone();
            let extents = &extents;
            s.spawn(move || {
                for (i, e) in extents.iter().enumerate() {
                    if (i + t) % 2 == 0 {
                        version.store(e.offset, &bytes(1, *e));
                    }
                    // A fresh view of the same version, as another source would have.
                    for piece in version.pieces(r(0, 500_000)) {
                        if let Piece::Cached { range } = piece {
                            if let Some(got) = read(&version, range) {
                                assert_eq!(got, bytes(1, range), "{range:?}");
                            }
                        }
                    }
                }
            });
        }
    });
    version.refresh();
    for piece in version.pieces(r(0, 500_000)) {
        if let Piece::Cached { range } = piece {
            assert_eq!(read(&version, range).unwrap(), bytes(1, range));
        }
    }
    let c = store.counters().snapshot();
    assert_eq!(
        c.corrupt_extents + c.missing_extents + c.write_errors,
        0,
        "{c:?}"
    );
    assert!(temp_files(dir.path()).is_empty());
}

/// The environment variable that makes `helper_process` a writer of the
/// two-process test (its value: the cache directory, then a comma and the seed).
const HELPER: &str = "RNTUPLE_CACHE_TEST_HELPER";

/// Not a test on its own: a child process of `two_processes_share_a_directory`.
#[test]
fn helper_process() {
    let Ok(spec) = std::env::var(HELPER) else {
        return;
    };
    let (dir, seed) = spec.split_once(',').unwrap();
    let seed: u64 = seed.parse().unwrap();
    let store = open(Path::new(dir));
    let entry = store.url_entry(URL).unwrap();
    let version = match entry.current() {
        Some(v) => v,
        None => entry.install(meta(1)).unwrap(),
    };
    // A range of its own first: each child stores at least one extent (and so writes a
    // stats file) even if the other one finished before it began and stored the rest.
    let own = r(800_000 + seed * 100_000, 50_000);
    version.store(own.offset, &bytes(1, own));
    for round in 0..40u64 {
        let i = (round * 7 + seed * 3) % 13;
        let e = r(i * 40_000, 70_000 + (round % 3) * 50_000);
        version.store(e.offset, &bytes(1, e));
        version.refresh();
        for piece in version.pieces(r(0, 700_000)) {
            if let Piece::Cached { range } = piece {
                if let Some(got) = read(&version, range) {
                    assert_eq!(got, bytes(1, range), "{range:?}");
                }
            }
        }
    }
    store.flush_stats();
}

#[test]
fn two_processes_share_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|seed| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "cache::tests::helper_process",
                    "--test-threads=1",
                ])
                .env(HELPER, format!("{},{seed}", dir.path().display()))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (store, _) = version_in(dir.path());
    let version = store.url_entry(URL).unwrap().current().unwrap();
    let mut cached = 0;
    for piece in version.pieces(r(0, 700_000)) {
        if let Piece::Cached { range } = piece {
            assert_eq!(read(&version, range).unwrap(), bytes(1, range));
            cached += range.len;
        }
    }
    assert!(cached > 500_000, "{cached}");
    assert_eq!(store.counters().snapshot().corrupt_extents, 0);
    assert!(temp_files(dir.path()).is_empty());
    // Both children's counters are there, and verify finds nothing wrong.
    let report = cache_stats(dir.path()).unwrap();
    assert_eq!(report.processes, 2);
    // Each file on disk was published by exactly one of them.
    assert_eq!(
        report.counters.stored_extents, report.extents,
        "{:?}",
        report.counters
    );
    assert!(report.extents >= 5, "{report:?}");
    let verify = cache_verify(dir.path(), false).unwrap();
    assert!(verify.problems.is_empty(), "{:?}", verify.problems);
    assert_eq!(verify.extents_checked, report.extents);
}

#[test]
fn a_new_identity_replaces_the_version_and_versions_never_mix() {
    let dir = tempfile::tempdir().unwrap();
    let (store, old) = version_in(dir.path());
    let a = r(0, BLOCK + 10);
    let b = r(200_000, 1000);
    old.store(a.offset, &bytes(1, a));
    old.store(b.offset, &bytes(1, b));
    // Only [0, BLOCK+10) is open (read once) when the origin changes.
    assert_eq!(read(&old, a).unwrap(), bytes(1, a));
    let entry = store.url_entry(URL).unwrap();
    let new = entry.install(meta(2)).unwrap();
    assert_eq!(entry.current().unwrap().meta().identity, 2);
    assert!(new.extents().is_empty());
    new.store(a.offset, &bytes(2, a));
    new.store(b.offset, &bytes(2, b));
    let root = dir.path().join(layout::ROOT_NAME);
    let entry_dir = extent_file(dir.path(), 1, a)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(
        !entry_dir.join(layout::version_name(1)).exists(),
        "old version deleted"
    );
    assert!(files_below(&root.join("trash")).is_empty(), "trash emptied");
    // The old handle reads its own bytes (the open file) or nothing, never version 2's.
    for range in [a, r(5, 10), b, r(b.offset + 1, 5)] {
        if let Some(got) = read(&old, range) {
            assert_eq!(got, bytes(1, range), "{range:?}");
        }
    }
    assert_eq!(
        read(&old, a).unwrap(),
        bytes(1, a),
        "the open extent stays readable"
    );
    assert_eq!(read(&old, b), None, "the deleted one is a miss");
    // And storing through the old handle writes nothing into version 2.
    let c0 = store.counters().snapshot();
    old.store(300_000, &bytes(1, r(300_000, 100)));
    let c1 = store.counters().snapshot();
    assert_eq!(c1.stored_extents, c0.stored_extents);
    assert_eq!(c1.bypass_bytes, c0.bypass_bytes + 100);
    new.refresh();
    assert_eq!(new.extents(), vec![a, b]);
    assert_eq!(read(&new, a).unwrap(), bytes(2, a));
    // A fresh look after another install of version 2 reuses its directory.
    let again = entry.install(meta(2)).unwrap();
    assert_eq!(again.extents(), vec![a, b]);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn broken_current_and_meta_count_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    version.store(0, &bytes(1, r(0, 10)));
    let entry = store.url_entry(URL).unwrap();
    let version_dir = extent_file(dir.path(), 1, r(0, 10))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let current = version_dir.parent().unwrap().join("current");
    fs::write(&current, "not hex\n").unwrap();
    assert!(entry.current().is_none());
    assert_eq!(store.counters().snapshot().broken_metadata, 1);
    entry.install(meta(1)).unwrap();
    assert!(entry.current().is_some());
    fs::write(version_dir.join("meta"), "{\"format\":1,").unwrap();
    assert!(entry.current().is_none());
    assert_eq!(store.counters().snapshot().broken_metadata, 2);
    assert!(
        !version_dir.exists(),
        "a version with a broken meta is removed"
    );
    let v = entry.install(meta(1)).unwrap();
    assert!(v.extents().is_empty());
    assert_eq!(entry.current().unwrap().meta(), &meta(1));
}

#[test]
fn one_store_per_directory_and_nothing_secret_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("new").join("cache");
    let a = open(&cache);
    let b = open(&cache.join("..").join("cache"));
    assert!(Arc::ptr_eq(&a, &b));
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert_eq!(a.dir(), fs::canonicalize(&cache).unwrap());
    let limited = CacheStore::open(&CacheConfig {
        max_bytes: Some(5000),
        ..CacheConfig::new(&cache)
    })
    .unwrap();
    assert!(Arc::ptr_eq(&a, &limited));
    drop((a, b, limited));
    let c = open(&cache);
    let entry = c.url_entry(URL).unwrap();
    let version = entry.install(meta(7)).unwrap();
    version.store(0, b"0123456789");
    c.counters().hit(10);
    c.flush_stats();
    let files = files_below(&cache);
    assert!(files.len() >= 5, "{files:?}");
    for f in &files {
        let text = String::from_utf8_lossy(&fs::read(f).unwrap()).into_owned();
        let name = f.display().to_string();
        for secret in ["PASSWORD", "SIGNATURE", "alice"] {
            assert!(
                !text.contains(secret) && !name.contains(secret),
                "{name}: {text}"
            );
        }
    }
    let rows = cache_ls(&cache).unwrap().rows;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].url.as_deref(),
        Some("https://***@example.org/data/f.root?***")
    );
    assert_eq!(rows[0].key, entry.key());
    assert_eq!(
        rows[0].identity.as_deref(),
        Some(layout::version_name(7).as_str())
    );
    assert_eq!((rows[0].cached_bytes, rows[0].extents), (10, 1));
    // Another spelling of the URL is the same entry.
    let other = c
        .url_entry("HTTPS://example.org:443/data/f.root?token=x")
        .unwrap();
    assert_eq!(other.key(), entry.key());
    assert_eq!(other.current().unwrap().extents(), vec![r(0, 10)]);
}

/// Sets the modification time of `path`.
fn set_mtime(path: &Path, time: SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// Waits until `store` runs no purge thread.
fn wait_for_purge(dir: &Path) {
    // The background purge holds the lock while it works.
    let root = Root::open(dir, Access::Repair).unwrap();
    drop(root.lock_purge(true).unwrap());
}

#[test]
fn stores_keep_the_directory_under_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 1 << 20;
    let store = CacheStore::open(&CacheConfig {
        max_bytes: Some(limit),
        ..CacheConfig::new(dir.path())
    })
    .unwrap();
    let version = store.url_entry(URL).unwrap().install(meta(1)).unwrap();
    let size = 128 << 10;
    for i in 0..32 {
        version.store(i * size, &bytes(1, r(i * size, size)));
    }
    wait_for_purge(dir.path());
    let total = tree_bytes(&dir.path().join(layout::ROOT_NAME));
    assert!(total <= limit, "{total} > {limit}");
    let c = store.counters().snapshot();
    assert_eq!(c.stored_extents, 32);
    assert!(c.evicted_extents >= 24, "{c:?}");
    version.refresh();
    assert_eq!(version.extents().len() as u64, 32 - c.evicted_extents);
    for e in version.extents() {
        assert_eq!(read(&version, e).unwrap(), bytes(1, e));
    }
    // An extent larger than the limit is not stored.
    let before = store.counters().snapshot();
    version.store(50 << 20, &vec![1u8; (limit + 1) as usize]);
    let after = store.counters().snapshot();
    assert_eq!(after.stored_extents, before.stored_extents);
    assert_eq!(after.bypass_bytes, before.bypass_bytes + limit + 1);
}

#[test]
fn eviction_keeps_the_most_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    // 4 MiB in 16 extents, no limit yet.
    let size = 256 << 10;
    let extents: Vec<ByteRange> = (0..16).map(|i| r(i * size, size)).collect();
    for e in &extents {
        version.store(e.offset, &bytes(1, *e));
    }
    // Distinct last uses, in an order unlike the offsets': extent i used 100 * k(i)
    // seconds ago.
    let now = SystemTime::now();
    let ago = |i: u64| (i * 7) % 16 + 1;
    for (i, e) in extents.iter().enumerate() {
        set_mtime(
            &extent_file(dir.path(), 1, *e),
            now - Duration::from_secs(100 * ago(i as u64)),
        );
    }
    // A read makes the least recently used one the most recent.
    let oldest = (0..16u64).max_by_key(|&i| ago(i)).unwrap();
    let touched = extents[oldest as usize];
    assert_eq!(read(&version, touched).unwrap(), bytes(1, touched));
    // The same store with a limit of 1 MiB, purged to 90% of it.
    let limit = 1 << 20;
    let limited = CacheStore::open(&CacheConfig {
        max_bytes: Some(limit),
        ..CacheConfig::new(dir.path())
    })
    .unwrap();
    assert!(Arc::ptr_eq(&store, &limited));
    let report = store.purge_now(false).unwrap();
    assert_eq!(report.target_bytes, Some(low_mark(limit)));
    assert!(report.after_bytes <= low_mark(limit), "{report:?}");
    assert!(tree_bytes(&dir.path().join(layout::ROOT_NAME)) <= low_mark(limit));
    // Three extents fit (4 x 262,240 bytes would not): the touched one and the two
    // used last.
    let mut by_use: Vec<u64> = (0..16).filter(|&i| i != oldest).collect();
    by_use.sort_by_key(|&i| ago(i));
    let mut expected = vec![
        touched,
        extents[by_use[0] as usize],
        extents[by_use[1] as usize],
    ];
    expected.sort_by_key(|e| e.offset);
    version.refresh();
    assert_eq!(version.extents(), expected);
    assert_eq!(report.evicted_extents, 13);
    assert_eq!(store.counters().snapshot().evicted_extents, 13);
    for e in expected {
        assert_eq!(read(&version, e).unwrap(), bytes(1, e));
    }
}

#[test]
fn failing_writes_never_fail_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    store.fail_writes.store(libc::EIO, Ordering::Relaxed);
    version.store(0, &bytes(1, r(0, 100_000)));
    let c = store.counters().snapshot();
    assert_eq!(
        (c.write_errors, c.bypass_bytes, c.stored_extents),
        (1, 100_000, 0)
    );
    assert!(temp_files(dir.path()).is_empty());
    assert!(version.extents().is_empty());
    assert!(!extent_file(dir.path(), 1, r(0, 100_000)).exists());
    // EIO does not pause: the next write is tried (and fails again).
    version.store(0, &bytes(1, r(0, 10)));
    assert_eq!(store.counters().snapshot().write_errors, 2);
    // ENOSPC pauses writing: the next store is passed by without a try.
    store.fail_writes.store(libc::ENOSPC, Ordering::Relaxed);
    version.store(0, &bytes(1, r(0, 10)));
    store.fail_writes.store(0, Ordering::Relaxed);
    version.store(0, &bytes(1, r(0, 10)));
    let c = store.counters().snapshot();
    assert_eq!((c.write_errors, c.stored_extents), (3, 0), "{c:?}");
    assert_eq!(c.bypass_bytes, 100_000 + 30);
    assert!(temp_files(dir.path()).is_empty());
    wait_for_purge(dir.path());
}

/// Unmounts a tmpfs when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_full_disk_is_passed_by_and_leaves_no_partial_extent() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("small");
    fs::create_dir(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        // The cache directory must be the user's alone (a tmpfs root is 1777).
        .args(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs"])
        .arg(&mount)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        crate::test_skips::skip(
            concat!(
                "rust: ",
                module_path!(),
                "::a_full_disk_is_passed_by_and_leaves_no_partial_extent"
            ),
            "cannot mount a tmpfs here",
        );
        return;
    }
    let _unmount = Mounted(mount.clone());
    let (store, version) = version_in(&mount);
    let size = 200_000;
    for i in 0..10 {
        version.store(i * size, &bytes(1, r(i * size, size)));
    }
    let c = store.counters().snapshot();
    assert!(c.write_errors >= 1, "{c:?}");
    assert!(c.stored_extents >= 3 && c.stored_extents < 10, "{c:?}");
    assert_eq!(c.bypass_bytes, (10 - c.stored_extents) * size, "{c:?}");
    wait_for_purge(&mount);
    assert!(temp_files(&mount).is_empty());
    // Every extent file there is whole and verifies.
    let verify = cache_verify(&mount, false).unwrap();
    assert!(verify.problems.is_empty(), "{:?}", verify.problems);
    version.refresh();
    for e in version.extents() {
        assert_eq!(read(&version, e).unwrap(), bytes(1, e));
    }
    drop(version);
    drop(store);
}

#[test]
fn verify_finds_and_repairs_planted_problems() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    let good = r(0, 100_000);
    let bad = r(200_000, 100_000);
    version.store(good.offset, &bytes(1, good));
    version.store(bad.offset, &bytes(1, bad));
    let clean = cache_verify(dir.path(), false).unwrap();
    assert!(clean.problems.is_empty(), "{:?}", clean.problems);
    assert_eq!((clean.extents_checked, clean.bytes_checked), (2, 200_000));
    // A corrupt extent.
    let bad_file = extent_file(dir.path(), 1, bad);
    flip_byte(&bad_file, extent::payload_start(bad.len) + 99_999);
    // A temporary file of a dead writer.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let root = dir.path().join(layout::ROOT_NAME);
    let stale = root
        .join("tmp")
        .join(format!("{}.{dead}.abc.tmp", super::sys::host_name()));
    fs::write(&stale, b"partial").unwrap();
    // A live writer's, which must stay.
    let live = root.join("tmp").join(format!(
        "{}.{}.abc.tmp",
        super::sys::host_name(),
        std::process::id()
    ));
    fs::write(&live, b"in progress").unwrap();
    // An orphan version, made long ago.
    let entry_dir = bad_file
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let orphan = entry_dir.join(layout::version_name(9));
    fs::create_dir_all(orphan.join("x")).unwrap();
    fs::write(orphan.join("meta"), meta(9).to_json()).unwrap();
    set_mtime(
        &orphan.join("meta"),
        SystemTime::now() - Duration::from_secs(3600),
    );
    // A young one (an install under way) is no problem.
    let young = entry_dir.join(layout::version_name(10));
    fs::create_dir_all(young.join("x")).unwrap();
    // A leftover in the trash, and a stray file among the extents.
    fs::create_dir_all(root.join("trash").join("left").join("x")).unwrap();
    fs::write(bad_file.with_file_name("notes.txt"), b"?").unwrap();

    let found = cache_verify(dir.path(), false).unwrap();
    assert_eq!(found.corrupt_extents, 1, "{:?}", found.problems);
    assert_eq!(found.stale_temp_files, 1, "{:?}", found.problems);
    assert_eq!(found.orphan_versions, 1, "{:?}", found.problems);
    assert_eq!(found.trash_entries, 1, "{:?}", found.problems);
    assert_eq!(found.stray_files, 1, "{:?}", found.problems);
    assert_eq!(found.remaining(), 5, "{:?}", found.problems);
    assert!(
        found
            .problems
            .iter()
            .any(|p| p.contains("200000-100000") && p.contains("checksum")),
        "{:?}",
        found.problems
    );
    assert!(
        bad_file.exists() && stale.exists() && orphan.exists(),
        "verify alone changes nothing"
    );

    let repaired = cache_verify(dir.path(), true).unwrap();
    assert_eq!(
        (repaired.repaired, repaired.remaining()),
        (5, 0),
        "{:?}",
        repaired.problems
    );
    assert!(!bad_file.exists() && !stale.exists() && !orphan.exists());
    assert!(live.exists() && young.exists());
    let after = cache_verify(dir.path(), false).unwrap();
    assert!(after.problems.is_empty(), "{:?}", after.problems);
    assert_eq!(after.extents_checked, 1);
    // The reader's version misses the deleted extent and still reads the good one.
    assert_eq!(read(&version, bad), None);
    assert_eq!(read(&version, good).unwrap(), bytes(1, good));
    drop(store);
}

#[test]
fn purge_cleans_up_and_compacts_finished_processes_stats() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    version.store(0, &bytes(1, r(0, 1000)));
    store.counters().miss(1000);
    store.flush_stats();
    let root = dir.path().join(layout::ROOT_NAME);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let finished = CacheStats {
        hits: 5,
        bytes_from_cache: 500,
        ..CacheStats::default()
    };
    let dead_name = format!("{}.{dead}.tok.stats", super::sys::host_name());
    let maintenance = Root::open(dir.path(), Access::Repair).unwrap();
    super::stats_files::write_file(&maintenance, &dead_name, &finished).unwrap();
    let old_tmp = root.join("tmp").join("whatever.tmp");
    fs::write(&old_tmp, b"x").unwrap();
    set_mtime(&old_tmp, SystemTime::now() - Duration::from_secs(7200));
    let report = cache_purge(dir.path(), None).unwrap();
    assert_eq!(report.stats_compacted, 1, "{report:?}");
    assert_eq!(report.temp_files_removed, 1, "{report:?}");
    assert_eq!(report.evicted_extents, 0);
    assert!(!old_tmp.exists());
    assert!(!root.join("stats").join(&dead_name).exists());
    let stats = cache_stats(dir.path()).unwrap();
    assert_eq!(stats.processes, 1, "this process's own file stays");
    assert_eq!(stats.counters.hits, 5);
    assert_eq!(stats.counters.misses, 1);
    assert_eq!(stats.counters.stored_extents, 1);
    assert_eq!(
        stats.counters.temp_files_removed, 1,
        "a CLI purge counts into the total"
    );
    assert_eq!((stats.entries, stats.versions, stats.extents), (1, 1, 1));
    // A target evicts.
    let report = cache_purge(dir.path(), Some(0)).unwrap();
    assert_eq!(report.evicted_extents, 1);
    assert_eq!(cache_stats(dir.path()).unwrap().counters.evicted_extents, 1);
    assert_eq!(read(&version, r(0, 1000)), None);
}

#[test]
fn clear_deletes_everything_while_readers_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = version_in(dir.path());
    let e = r(0, 300_000);
    version.store(e.offset, &bytes(1, e));
    assert_eq!(read(&version, r(0, 10)).unwrap(), bytes(1, r(0, 10)));
    store.flush_stats();
    let removed = cache_clear(dir.path()).unwrap().deleted_bytes;
    assert!(removed >= e.len, "{removed}");
    assert!(cache_ls(dir.path()).unwrap().rows.is_empty());
    assert_eq!(cache_stats(dir.path()).unwrap().extents, 0);
    // The open extent is still read; a store into the cleared version is passed by.
    assert_eq!(read(&version, e).unwrap(), bytes(1, e));
    version.store(400_000, &bytes(1, r(400_000, 10)));
    assert_eq!(store.counters().snapshot().write_errors, 0);
    // And the store goes on with a new install.
    let v = store.url_entry(URL).unwrap().install(meta(1)).unwrap();
    v.store(0, &bytes(1, r(0, 10)));
    assert_eq!(read(&v, r(0, 10)).unwrap(), bytes(1, r(0, 10)));
    assert!(dir
        .path()
        .join(layout::ROOT_NAME)
        .join("purge.lock")
        .exists());
}

#[test]
fn read_only_commands_never_create_a_cache() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    assert!(cache_ls(&missing).unwrap().rows.is_empty());
    let stats = cache_stats(&missing).unwrap();
    assert!(!stats.exists && stats.entries == 0 && stats.counters.is_zero());
    let verify = cache_verify(&missing, true).unwrap();
    assert!(!verify.exists && verify.problems.is_empty());
    assert_eq!(cache_clear(&missing).unwrap(), ClearReport::default());
    assert_eq!(
        cache_purge(&missing, Some(0)).unwrap(),
        PurgeReport::default()
    );
    assert!(!missing.exists());
    // A directory of the user's with other things in it: they are never touched.
    fs::write(dir.path().join("mine.txt"), b"keep").unwrap();
    let (_store, version) = version_in(dir.path());
    version.store(0, b"abc");
    cache_clear(dir.path()).unwrap();
    cache_purge(dir.path(), Some(0)).unwrap();
    assert_eq!(fs::read(dir.path().join("mine.txt")).unwrap(), b"keep");
}

#[test]
fn counters_add_up_and_survive_their_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.counters();
    c.request(true, 3);
    c.request(false, 1);
    c.hit(100);
    c.partial_hit(30, 70);
    c.miss(50);
    c.origin_request();
    c.validation(4096);
    c.stale();
    c.bypass(9);
    let s = c.snapshot();
    let expected = CacheStats {
        requests: 2,
        vector_requests: 1,
        ranges: 4,
        hits: 1,
        partial_hits: 1,
        misses: 1,
        bytes_from_cache: 130,
        bytes_from_origin: 120,
        origin_requests: 1,
        validation_requests: 1,
        validation_bytes: 4096,
        stale_versions: 1,
        bypass_bytes: 9,
        ..CacheStats::default()
    };
    assert_eq!(s, expected);
    assert_eq!(CacheStats::from_json(&s.to_json()), Some(s));
    assert_eq!(s.pairs().len(), 24);
    store.flush_stats();
    let report = cache_stats(dir.path()).unwrap();
    assert_eq!((report.counters, report.processes), (expected, 1));
    let mut twice = expected;
    twice.add(&expected);
    assert_eq!(twice.bytes_from_cache, 260);
}

#[test]
fn extent_names_are_canonical() {
    assert_eq!(extent::parse_name("0-1"), Some(r(0, 1)));
    assert_eq!(extent::parse_name("123-456"), Some(r(123, 456)));
    for bad in [
        "0-0",
        "01-5",
        "1-05",
        "-5",
        "5-",
        "a-1",
        "1-2-3",
        "+1-2",
        "18446744073709551615-1",
    ] {
        assert_eq!(extent::parse_name(bad), None, "{bad}");
    }
    assert_eq!(
        extent::parse_name(&extent::file_name(r(7, 9))),
        Some(r(7, 9))
    );
}

/// `cargo test --release -p rntuple-io --lib cache::tests::read_throughput -- --ignored
/// --nocapture`: warm reads of a 16 MiB extent (page cache), whole and in 64 KiB and
/// 1 MiB pieces.
#[test]
#[ignore = "a measurement: run it in release mode"]
fn read_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, version) = version_in(dir.path());
    let len = 16u64 << 20;
    let data: Vec<u8> = (0..len).map(|p| byte_at(1, p)).collect();
    version.store(0, &data);
    let mut out = vec![0u8; len as usize];
    assert!(version.read_into(r(0, len), &mut out));
    assert!(out == data);
    let rounds = 50;
    // Best of 7 trials of 10 reads each, alternating (other work shares the machine).
    let mut plain = vec![0u8; len as usize];
    let file = fs::File::open(extent_file(dir.path(), 1, r(0, len))).unwrap();
    use std::os::unix::fs::FileExt;
    let (mut whole, mut pread) = (0f64, 0f64);
    for _ in 0..7 {
        let start = std::time::Instant::now();
        for _ in 0..10 {
            assert!(version.read_into(r(0, len), &mut out));
        }
        whole = whole.max((10 * len) as f64 / start.elapsed().as_secs_f64() / 1e9);
        let start = std::time::Instant::now();
        for _ in 0..10 {
            file.read_exact_at(&mut plain, extent::payload_start(len))
                .unwrap();
        }
        pread = pread.max((10 * len) as f64 / start.elapsed().as_secs_f64() / 1e9);
    }
    let mut rates = Vec::new();
    for piece in [64u64 << 10, 1 << 20, 4096] {
        let mut buf = vec![0u8; piece as usize];
        let start = std::time::Instant::now();
        let mut n = 0u64;
        for _ in 0..(rounds / 5).max(1) {
            let mut at = 7; // unaligned: partial blocks at both ends
            while at + piece <= len {
                assert!(version.read_into(r(at, piece), &mut buf));
                at += piece;
                n += piece;
            }
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push((
            piece,
            n as f64 / secs / 1e9,
            secs / (n / piece) as f64 * 1e6,
        ));
    }
    // The same 64 KiB reads, the file opened and its header checked every time (no
    // open-file cache).
    let path = extent_file(dir.path(), 1, r(0, len));
    let mut buf = vec![0u8; 64 << 10];
    let mut scratch = Vec::new();
    let start = std::time::Instant::now();
    let mut reads = 0u64;
    for _ in 0..(rounds / 5).max(1) {
        let mut at = 7;
        while at + (64 << 10) <= len {
            let e =
                super::extent::OpenExtent::from_file(fs::File::open(&path).unwrap(), 1, r(0, len))
                    .unwrap();
            e.read(r(at, 64 << 10), &mut buf, &mut scratch).unwrap();
            at += 64 << 10;
            reads += 1;
        }
    }
    let reopen = start.elapsed().as_secs_f64() / reads as f64 * 1e6;
    eprintln!("read_into of a whole 16 MiB extent: {whole:.2} GB/s (plain pread of its payload: {pread:.2} GB/s)");
    eprintln!("64 KiB reads opening the file each time: {reopen:.1} us a read");
    for (piece, rate, micros) in rates {
        eprintln!("read_into in {piece}-byte pieces at unaligned offsets: {rate:.2} GB/s, {micros:.1} us a read");
    }
}
