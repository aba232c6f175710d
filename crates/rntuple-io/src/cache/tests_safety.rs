//! The cache touches only what it owns: links, FIFOs, sockets and other users' files
//! where it keeps its own are never followed nor opened (nothing outside changes), a
//! cache directory of another user's or writable by others is refused, and the
//! counters of a live store are seen without double counting.

#![allow(clippy::cast_possible_truncation)]

use super::extent;
use super::layout;
use super::url::normalize_url;
use super::*;
use crate::dirfd::{Dir, Policy};
use crate::ByteRange;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

const URL: &str = "https://example.org/data/safety.root";

fn r(offset: u64, len: u64) -> ByteRange {
    ByteRange { offset, len }
}

fn data(range: ByteRange) -> Vec<u8> {
    (range.offset..range.offset + range.len)
        .map(|p| (p.wrapping_mul(131) >> 3) as u8)
        .collect()
}

fn meta(identity: u128) -> VersionMeta {
    VersionMeta {
        identity,
        size: 1 << 30,
        etag: None,
        last_modified: None,
        mtime: None,
        probe: vec![(r(0, 10), 1)],
        url: URL.to_string(),
    }
}

/// A cache in `dir` holding two extents of one version of [`URL`].
fn filled(dir: &Path) -> (Arc<CacheStore>, Version) {
    let store = CacheStore::open(&CacheConfig::new(dir)).unwrap();
    let version = store.url_entry(URL).unwrap().install(meta(1)).unwrap();
    for range in [r(0, 70_000), r(100_000, 50_000)] {
        version.store(range.offset, &data(range));
    }
    (store, version)
}

/// The entry directory of [`URL`], relative to `rntuple-cache-v1/`.
fn entry_rel() -> String {
    let key = layout::version_name(xxhash_rust::xxh3::xxh3_128(normalize_url(URL).as_bytes()));
    layout::entry_rel(&key)
}

/// Every file and directory below `dir` (not following links), with what it is, its
/// mode, owner, size, modification time and, for files, its bytes' hash.
fn digest(dir: &Path) -> BTreeMap<PathBuf, (u32, u32, u64, i64, i64, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let sum = if m.is_file() {
                xxhash_rust::xxh3::xxh3_64(&fs::read(&p).unwrap())
            } else {
                0
            };
            if m.is_dir() {
                stack.push(p.clone());
            }
            out.insert(
                p,
                (m.mode(), m.uid(), m.len(), m.mtime(), m.mtime_nsec(), sum),
            );
        }
    }
    out
}

/// A directory outside the cache that looks like what the cache keeps in the place a
/// link to it takes: a copy of `like` (if given), plus files an hour and more old.
fn bait(at: &Path, like: Option<&Path>) {
    fs::create_dir_all(at).unwrap();
    if let Some(like) = like {
        copy_tree(like, at);
    }
    let dead = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let host = super::sys::host_name();
    for name in [
        "precious.txt".to_string(),
        format!("{host}.{dead}.tok.tmp"),
        format!("{host}.{dead}.tok.stats"),
        "0-100".to_string(),
    ] {
        fs::write(at.join(&name), format!("{{\"counters\":{{}}}} {name}")).unwrap();
    }
    let old = SystemTime::now() - Duration::from_secs(7200);
    for path in digest(at).keys() {
        if !path.is_symlink() {
            fs::File::options()
                .write(true)
                .open(path)
                .or_else(|_| fs::File::open(path))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            fs::create_dir_all(&target).unwrap();
            copy_tree(&e.path(), &target);
        } else if e.file_type().unwrap().is_file() {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The places a link may take, relative to `rntuple-cache-v1/` ("" is itself).
fn places() -> Vec<String> {
    let entry = entry_rel();
    vec![
        "trash".into(),
        "stats".into(),
        "tmp".into(),
        format!("{entry}/{}/x/0-70000", layout::version_name(1)),
        entry.rsplit_once('/').unwrap().0.to_string(),
        entry,
        String::new(),
    ]
}

/// Replaces `place` of the cache in `dir` by a link to a bait outside (in `outside`).
fn plant_link(dir: &Path, place: &str, outside: &Path) {
    let root = dir.join(layout::ROOT_NAME);
    let at = if place.is_empty() {
        root.clone()
    } else {
        root.join(place)
    };
    let target = outside.join(format!("bait-{}", place.replace('/', "_")));
    if at.is_dir() {
        bait(&target, Some(&at));
        fs::remove_dir_all(&at).unwrap();
    } else {
        bait(&target, None);
        let file = target.join("extent");
        fs::copy(&at, &file).unwrap();
        fs::remove_file(&at).unwrap();
        symlink(&file, &at).unwrap();
        return;
    }
    symlink(&target, &at).unwrap();
}

/// Runs `f` in a thread and fails when it does not end within a minute (a FIFO opened
/// blocking would never end).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not end within 60 s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} failed (above)"),
    }
}

/// What a maintenance step says it found unsafe.
fn said(lines: &[String], place: &str) -> bool {
    let path = if place.is_empty() {
        layout::ROOT_NAME.to_string()
    } else {
        format!("{}/{place}", layout::ROOT_NAME)
    };
    lines
        .iter()
        .any(|l| l.starts_with(&format!("{path}: a symbolic link (never followed)")))
}

#[test]
fn links_in_every_place_are_never_followed_by_any_step() {
    type Step = (&'static str, fn(&Path, &str) -> String);
    let steps: [Step; 7] = [
        ("purge", |dir, place| {
            let report = cache_purge(dir, Some(0)).unwrap();
            assert!(said(&report.unsafe_files, place), "{report:?}");
            "removed".into()
        }),
        ("clear", |dir, place| {
            let report = cache_clear(dir).unwrap();
            assert!(said(&report.unsafe_files, place), "{report:?}");
            "removed".into()
        }),
        ("verify", |dir, place| {
            let report = cache_verify(dir, false).unwrap();
            assert!(said(&report.problems, place), "{report:?}");
            assert_eq!(report.unsafe_files, 1, "{report:?}");
            "kept".into()
        }),
        ("verify --repair", |dir, place| {
            let report = cache_verify(dir, true).unwrap();
            assert!(said(&report.problems, place), "{report:?}");
            assert!(report.problems.iter().any(|p| p.ends_with("(repaired)")));
            assert_eq!(report.remaining(), 0, "{report:?}");
            "removed".into()
        }),
        ("ls", |dir, place| {
            let listing = cache_ls(dir).unwrap();
            assert!(said(&listing.unsafe_files, place), "{listing:?}");
            "kept".into()
        }),
        ("stats", |dir, place| {
            let report = cache_stats(dir).unwrap();
            assert!(said(&report.unsafe_files, place), "{report:?}");
            "kept".into()
        }),
        ("a store's reads and writes, and its purge", |dir, _| {
            let mut config = CacheConfig::new(dir);
            config.max_bytes = Some(60_000);
            let store = CacheStore::open(&config).unwrap();
            let entry = store.url_entry(URL).unwrap();
            let version = match entry.current() {
                Some(v) => v,
                None => entry.install(meta(1)).unwrap(),
            };
            let mut out = vec![0; 70_000];
            if version.read_into(r(0, 70_000), &mut out) {
                assert_eq!(out, data(r(0, 70_000)));
            }
            version.store(200_000, &data(r(200_000, 30_000)));
            let _ = store.purge_now(false);
            store.flush_stats();
            assert!(store.counters().snapshot().unsafe_files >= 1);
            "removed".into()
        }),
    ];
    for place in places() {
        for (name, step) in steps {
            let top = tempfile::tempdir().unwrap();
            let dir = top.path().join("cache");
            let outside = top.path().join("outside");
            drop(filled(&dir));
            plant_link(&dir, &place, &outside);
            let link = match place.as_str() {
                "" => dir.join(layout::ROOT_NAME),
                place => dir.join(layout::ROOT_NAME).join(place),
            };
            let before = digest(&outside);
            assert!(!before.is_empty());
            let dir2 = dir.clone();
            let place2 = place.clone();
            let outcome = bounded(name, move || step(&dir2, &place2));
            assert_eq!(
                digest(&outside),
                before,
                "{name} with {place:?} a link changed what is outside the cache"
            );
            let still = fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink());
            assert_eq!(still, outcome == "kept", "{name}, {place:?}: the link");
        }
    }
}

#[test]
fn fifos_and_sockets_never_block_and_are_reported() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("cache");
    drop(filled(&dir));
    let root = dir.join(layout::ROOT_NAME);
    let version_dir = root.join(entry_rel()).join(layout::version_name(1));
    let mkfifo = |p: &Path| {
        let _ = fs::remove_file(p);
        assert!(std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap()
            .success());
    };
    mkfifo(&version_dir.join("x").join("0-70000"));
    let socket_at = version_dir.join("x").join("100000-50000");
    fs::remove_file(&socket_at).unwrap();
    // Bound where the path is short enough for a socket's address, then moved in.
    let _socket = std::os::unix::net::UnixListener::bind(top.path().join("s")).unwrap();
    fs::rename(top.path().join("s"), &socket_at).unwrap();
    mkfifo(&root.join("purge.lock"));
    let verify_dir = dir.clone();
    let report = bounded("verify", move || cache_verify(&verify_dir, false).unwrap());
    let problems = report.problems.join("\n");
    assert!(
        problems.contains("x/0-70000: a FIFO (never opened)")
            && problems.contains("x/100000-50000: a socket (never opened)")
            && problems.contains("purge.lock: a FIFO (never opened)"),
        "{problems}"
    );
    // A store reads around them (the origin's turn), and removes them.
    let store_dir = dir.clone();
    let counted = bounded("reads", move || {
        let store = CacheStore::open(&CacheConfig::new(&store_dir)).unwrap();
        let version = store.url_entry(URL).unwrap().current().unwrap();
        let mut out = vec![0; 10];
        assert!(!version.read_into(r(0, 10), &mut out));
        assert!(!version.read_into(r(100_000, 10), &mut out));
        assert!(store.root_lock_for_test());
        store.counters().snapshot().unsafe_files
    });
    assert_eq!(counted, 3);
    // The meta and current as FIFOs: the version is absent, and made again.
    mkfifo(&version_dir.join("meta"));
    mkfifo(&root.join(entry_rel()).join("current"));
    let store_dir = dir.clone();
    bounded("install", move || {
        let store = CacheStore::open(&CacheConfig::new(&store_dir)).unwrap();
        let entry = store.url_entry(URL).unwrap();
        assert!(entry.current().is_none());
        let version = entry.install(meta(1)).unwrap();
        version.store(0, &data(r(0, 10)));
        let mut out = vec![0; 10];
        assert!(version.read_into(r(0, 10), &mut out));
        assert_eq!(out, data(r(0, 10)));
    });
    let clean = cache_verify(&dir, false).unwrap();
    assert!(clean.problems.is_empty(), "{:?}", clean.problems);
}

impl CacheStore {
    /// Tests: whether the purge lock can be taken now.
    fn root_lock_for_test(&self) -> bool {
        self.purge_now(false).is_some()
    }
}

/// Whether `result` refuses the cache with a message holding every one of `words`.
fn refused<T: std::fmt::Debug>(result: crate::error::Result<T>, words: &[&str]) {
    let err = result.unwrap_err();
    assert!(layout::is_refusal(&err), "{err}");
    assert_eq!(
        err.io_error_kind(),
        Some(std::io::ErrorKind::PermissionDenied)
    );
    let text = err.to_string();
    for word in words {
        assert!(text.contains(word), "{word:?} not in: {text}");
    }
}

#[test]
fn directories_others_control_are_refused_by_every_step() {
    let top = tempfile::tempdir().unwrap();
    // Another user's (nobody's), and ours open to the group or to all.
    let theirs = top.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65_534), Some(65_534))
        .expect("the tests run as root: chown to another user");
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (theirs.clone(), vec!["owned by", "uid 65534", "not by you"]),
        (
            top.path().join("group"),
            vec!["writable by its group (mode 0770)"],
        ),
        (
            top.path().join("all"),
            vec!["writable by others (mode 0777)"],
        ),
        (
            top.path().join("sticky"),
            vec!["writable by others (mode 1777)"],
        ),
    ];
    for (dir, mode) in [("group", 0o770), ("all", 0o777), ("sticky", 0o1777)] {
        let dir = top.path().join(dir);
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
    }
    for (dir, words) in &cases {
        let before = digest(dir);
        let mut words = words.clone();
        words.extend(["refused", "use a directory of your own"]);
        refused(CacheStore::open(&CacheConfig::new(dir)), &words);
        refused(open_store(&CacheConfig::new(dir)), &words);
        refused(cache_stats(dir), &words);
        refused(cache_ls(dir), &words);
        refused(cache_verify(dir, true), &words);
        refused(cache_purge(dir, Some(0)), &words);
        refused(cache_clear(dir), &words);
        assert_eq!(digest(dir), before, "{}", dir.display());
    }
    // rntuple-cache-v1 of another user's, in a directory of ours.
    let ours = top.path().join("ours");
    drop(filled(&ours));
    let root = ours.join(layout::ROOT_NAME);
    std::os::unix::fs::chown(&root, Some(65_534), None).unwrap();
    refused(
        CacheStore::open(&CacheConfig::new(&ours)),
        &["rntuple-cache-v1 in it is owned by", "uid 65534"],
    );
    refused(cache_stats(&ours), &["rntuple-cache-v1 in it is owned by"]);
    std::os::unix::fs::chown(&root, Some(0), None).unwrap();
    // An entry of another user's inside: never read, removed by a store.
    let entry = root.join(entry_rel());
    std::os::unix::fs::chown(&entry, Some(65_534), None).unwrap();
    let report = cache_verify(&ours, false).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(&entry_rel()) && p.contains("uid 65534")),
        "{:?}",
        report.problems
    );
    let store = CacheStore::open(&CacheConfig::new(&ours)).unwrap();
    assert!(store.url_entry(URL).unwrap().current().is_none());
    assert_eq!(fs::metadata(&entry).unwrap().uid(), 0, "made anew, ours");
    assert_eq!(store.counters().snapshot().unsafe_files, 1);
}

#[test]
fn a_fault_of_the_disk_is_not_a_refusal_and_a_link_in_the_named_path_is_the_users() {
    let top = tempfile::tempdir().unwrap();
    let file = top.path().join("a-file");
    fs::write(&file, b"x").unwrap();
    assert!(CacheStore::open(&CacheConfig::new(&file)).is_err());
    assert!(open_store(&CacheConfig::new(&file)).unwrap().is_none());
    // The directory the user names may be reached through a link of theirs.
    let real = top.path().join("real");
    fs::create_dir(&real).unwrap();
    let named = top.path().join("named");
    symlink(&real, &named).unwrap();
    drop(filled(&named));
    assert!(real.join(layout::ROOT_NAME).is_dir());
    assert_eq!(cache_ls(&named).unwrap().rows.len(), 1);
    // The default is per user: created 0700.
    let dir = default_cache_dir(Some(top.path().join("xdg").as_os_str()), None).unwrap();
    drop(filled(&dir));
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
}

#[test]
fn deletions_walk_by_handle_and_never_leave_their_tree() {
    let top = tempfile::tempdir().unwrap();
    let outside = top.path().join("outside");
    bait(&outside, None);
    let before = digest(&outside);
    let tree = top.path().join("tree");
    fs::create_dir_all(tree.join("a/b/c")).unwrap();
    symlink(&outside, tree.join("a/b/link")).unwrap();
    symlink(&outside, tree.join("a/b/c/link")).unwrap();
    fs::write(tree.join("a/b/c/file"), b"1").unwrap();
    let handle = Dir::open_path(top.path(), Policy::Private).unwrap();
    handle.remove_tree("tree").unwrap();
    assert!(!tree.exists());
    assert_eq!(digest(&outside), before);
    // Too deep a tree is left, not walked without end.
    let mut deep = top.path().join("deep");
    for _ in 0..40 {
        deep = deep.join("d");
    }
    fs::create_dir_all(&deep).unwrap();
    assert!(handle.remove_tree("deep").is_err());
    assert!(deep.exists());
}

#[test]
fn a_live_store_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, version) = filled(dir.path());
    let mut out = vec![0; 100];
    assert!(version.read_into(r(0, 100), &mut out));
    store.counters().hit(100);
    let live = cache_stats(dir.path()).unwrap();
    assert_eq!(live.counters.stored_extents, 2);
    assert_eq!(live.counters.bytes_from_cache, 100);
    assert_eq!(live.processes, 1);
    // Its file written, then counted instead of it (not beside it).
    store.flush_stats();
    assert_eq!(cache_stats(dir.path()).unwrap().counters, live.counters);
    store.counters().hit(50);
    assert_eq!(
        cache_stats(dir.path()).unwrap().counters.bytes_from_cache,
        150
    );
    drop(version);
    drop(store);
    let after = cache_stats(dir.path()).unwrap();
    assert_eq!(after.counters.bytes_from_cache, 150);
    assert_eq!(after.counters.stored_extents, 2);
    assert_eq!(after.processes, 1);
    assert_eq!(extent::file_name(r(0, 1)), "0-1");
}
